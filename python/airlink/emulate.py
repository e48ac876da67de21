"""Real-time emulation: real commands in two network namespaces joined through a scenario's links.

``emulate`` runs one command on each side and writes a results folder — or, given no command,
runs the scenario's ``[[flow]]``s with airlink's own transports (TCP variants, DCCP, UDP media)
as sender/receiver pairs over UDP through the emulated links, for the protocols the kernel
lacks; ``shell`` runs a command (or an interactive shell) in the client namespace. In both, the server's address is in
``$AIRLINK_SERVER`` (the client's in ``$AIRLINK_CLIENT``), and everything — namespaces, TUN
devices, processes — is gone when the call returns, whatever happened (see
``crates/airlink-emu/src/ns.rs`` for why even ``kill -9`` leaves nothing behind).

Results folder (appears only when complete; ``completed`` in both JSON files says whether the
commands finished normally)::

    manifest.json     resolved scenario, seed, airlink version, kernel, sysctls of both namespaces
    summary.json      per-link counters (the simulator's fields), datapath report, commands;
                      with airlink's own transports also per-flow counters as in simulation
    links.parquet     per-link samples (queue, SNR, modulation)
    events.parquet    drops and malformed packets
    flows.parquet, intervals.parquet, rtt.parquet   with airlink's own transports, as in simulation;
                      with the kernel's transports flows holds each connection's TCP_INFO sampled
                      every emulation.tcp_info_interval (airlink's columns, then connection, side,
                      pacing and delivery rate), rtt is empty (the columns only) and intervals
                      holds iperf3's interval reports (see :mod:`airlink.iperf`)
    client.iperf3.json, server.iperf3.json   iperf3's JSON reports, when airlink added -J to a
                      command running iperf3 (its stdout then gets the text report rendered from it)
    client.pcap       packets at the client's application side (raw IP, ns timestamps); airlink's
                      own TCP and DCCP appear as real TCP and DCCP packets
    server.pcap       packets at the server's application side
    client.stdout, client.stderr, server.stdout, server.stderr

While it runs, the folder being written holds ``control.sock``: ``airlink ctl`` and ``airlink
top`` (:mod:`airlink.control`) change the run and read its state through it.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from airlink import _core, files, iperf
from airlink._types import EmulationSummary, Iperf3Results
from airlink.atomic import atomic_folder
from airlink.results import MANIFEST, SUMMARY, ParquetSink, make_manifest, write_empty_tables, write_json, write_table
from airlink.scenarios import read_scenario_text
from airlink.version import version

ScenarioPath = str | os.PathLike[str]

#: Seconds between two drains of the time series while commands run.
DRAIN_INTERVAL_S = 0.5
#: Seconds between two state reads for a live view.
LIVE_INTERVAL_S = 1.0
#: The control socket in the folder a run writes.
CONTROL_SOCKET = "control.sock"
#: Seconds a command the timeout stops gets after SIGTERM before SIGKILL (iperf3 writes its
#: JSON report on SIGTERM).
KILL_GRACE_S = 2.0
#: The most of an iperf3 report read (a day of 1 s intervals of 128 streams is less).
MAX_IPERF_BYTES = 256 << 20


#: Emulation could not start or run (privileges, namespaces, TUN devices, output files).
EmulationError = _core.EmulationError


@dataclass
class EmulationResult:
    """One emulation run: its folder, summary and manifest."""

    path: Path | None
    summary: EmulationSummary
    manifest: dict[str, Any]

    @property
    def completed(self) -> bool:
        return bool(self.summary.get("completed"))

    def output(self, side: str, stream: str = "stdout") -> str:
        """A command's captured output (``side`` client or server)."""
        if self.path is None:
            raise ValueError("this run has no results folder")
        return (self.path / f"{side}.{stream}").read_text(encoding="utf-8", errors="replace")


def default_out(scenario: ScenarioPath) -> Path:
    """The results folder when none is given: results/emulate-<scenario file name>."""
    return Path("results") / f"emulate-{Path(os.fspath(scenario)).stem}"


def interrupted_folder(out: Path) -> bool:
    """Whether ``out`` holds the results of an interrupted run (what a signal left)."""
    try:
        return json.loads((out / SUMMARY).read_text(encoding="utf-8")).get("interrupted") is not None
    except (OSError, ValueError):
        return False


def _descendants(pid: int) -> list[int]:
    """The processes below ``pid``, parents before children (from /proc; none when unreadable)."""
    out: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            for child in (task / "children").read_text().split():
                out += [int(child), *_descendants(int(child))]
    except (OSError, ValueError):
        pass
    return out


def _terminate(emu: _core.Emulation, handle: int) -> None:
    """SIGTERM to a spawned command and everything it started: the handle is ``nsenter``'s
    process, which does not pass the signal on to the command in the namespace."""
    for pid in reversed(_descendants(handle)):
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass  # gone already
    emu.kill(handle)


def _ran(command: str, ran: str) -> dict[str, str]:
    """The command as it ran, when airlink changed it (added iperf3's -J)."""
    return {} if ran == command else {"ran": ran}


def _kernel_results(folder: Path, invocations: dict[str, iperf.Invocation], commands: list[dict[str, Any]]
                    ) -> tuple[Iperf3Results | None, list[str]]:
    """The results of commands running the kernel's transports: iperf3's reports as the
    ``intervals`` table, and for the summary as its ``iperf3`` (None without iperf3) and
    warnings; ``flows`` (when sampling was off) and ``rtt`` empty with their columns, so every
    table reads as a DataFrame."""
    write_empty_tables(folder, ("flows", "rtt"))
    reports: list[iperf.Report] = []
    warnings: list[str] = []
    sources: dict[str, str] = {}
    for side, inv in invocations.items():
        if inv.note:
            warnings.append(inv.note)
            continue
        name = f"{side}.stdout" if inv.json_in == "stdout" else str(inv.json_in)
        sources[side] = name
        try:
            text = files.read_text(folder / name, f"{side}'s iperf3 report", MAX_IPERF_BYTES, missing="")
        except files.FileError as e:
            warnings.append(str(e))
            continue
        found, problems = iperf.parse(side, text)
        reports += found
        warnings += problems
        if inv.added:
            _write_report_text(folder, side, found)
    start = next((c["start_s"] for c in commands if c["side"] == "client"), 0.0)
    flows, rows = iperf.flows(reports, offset_s=start)
    write_table(folder, "intervals", rows, iperf.INTERVAL_COLUMNS)
    if invocations and not flows:
        warnings.append("no iperf3 results could be read: the intervals table is empty and the summary has no flows "
                        "(see " + ", ".join(f"{s}.stdout/.stderr" for s in invocations) + ")")
    elif invocations and not any(f["goodput_bps"] is not None for f in flows):
        warnings.append("iperf3 reported no totals: no goodput in the summary, only the interval reports it wrote")
    results = Iperf3Results(flows=flows, reports=sources, warnings=warnings) if invocations else None
    return results, warnings


def _write_report_text(folder: Path, side: str, reports: list[iperf.Report]) -> None:
    """The text report iperf3 would have printed, into the side's stdout (airlink had it write
    JSON to a log file instead); its error, as iperf3 prints it, into stderr."""
    with open(folder / f"{side}.stdout", "a", encoding="utf-8") as f:
        f.write(iperf.render_text(reports))
    errors = [r.error for r in reports if r.error]
    if errors:
        with open(folder / f"{side}.stderr", "a", encoding="utf-8") as f:
            f.writelines(f"iperf3: error - {e}\n" for e in errors)


def _kernel() -> dict[str, str]:
    u = os.uname()
    return {"release": u.release, "version": u.version, "machine": u.machine}


def _start(scenario: ScenarioPath, *, seed: int | None, overrides: Sequence[str], pcap_dir: Path | None,
           snaplen: int, realtime: bool, max_in_flight_bytes: int | None = None) -> tuple[_core.Emulation, str]:
    source = os.fspath(scenario)
    text = read_scenario_text(source)
    limit = {} if max_in_flight_bytes is None else {"max_in_flight_bytes": max_in_flight_bytes}
    emu = _core.Emulation(text, source, seed, list(overrides), None if pcap_dir is None else str(pcap_dir), snaplen, realtime,
                          **limit)
    return emu, source


def _wait(emu: _core.Emulation, done: Callable[[], int | None], deadline: float | None,
          sink: ParquetSink | None, tick: Callable[[], None] = lambda: None) -> int | None:
    """Waits until ``done()`` gives an exit code, draining the time series and calling
    ``tick`` meanwhile; None when the deadline passed."""
    last_drain = time.monotonic()
    while True:
        tick()
        code = done()
        if code is not None:
            return code
        now = time.monotonic()
        if deadline is not None and now >= deadline:
            return None
        if sink is not None and now - last_drain >= DRAIN_INTERVAL_S:
            sink.write(emu.drain())
            last_drain = now
        time.sleep(0.02)


def _ticker(bar: tqdm, started: float) -> Callable[[], None]:
    """Moves the progress bar to the elapsed time (capped at its total, when it has one)."""
    def tick() -> None:
        elapsed = time.monotonic() - started
        bar.update((elapsed if bar.total is None else min(elapsed, bar.total)) - bar.n)
    return tick


def _listen(emu: _core.Emulation, folder: Path) -> list[str]:
    """Opens live control in the run's folder; the warning when it cannot (the run goes on)."""
    try:
        emu.listen(str(folder / CONTROL_SOCKET))
    except EmulationError as e:
        return [f"live control is unavailable: {e}"]
    return []


def _stop_reason(e: SystemExit) -> str:
    return f"signal {int(e.code) - 128}" if isinstance(e.code, int) and e.code > 128 else "exit"


def _stop(emu: _core.Emulation, sink: ParquetSink) -> None:
    """Stops the emulation; writes the rest of its time series."""
    emu.stop()
    sink.write(emu.drain())
    sink.close()


def emulate(
    scenario: ScenarioPath,
    *,
    client: str | None = None,
    server: str | None = None,
    out: ScenarioPath | None = None,
    seed: int | None = None,
    overrides: Sequence[str] = (),
    force: bool = False,
    snaplen: int = 128,
    realtime: bool = True,
    server_delay: float = 0.5,
    server_grace: float = 5.0,
    timeout: float | None = None,
    command: Sequence[str] | None = None,
    progress: bool = False,
    max_in_flight_bytes: int | None = None,
    live: Callable[[dict[str, Any]], None] | None = None,
) -> EmulationResult:
    """Runs ``server`` in the server namespace, then ``client`` in the client namespace.

    The run ends when the client command ends (or after ``timeout`` seconds, then it is
    killed); the server gets ``server_grace`` seconds to exit by itself (``iperf3 -s -1``
    does), then everything is stopped. ``completed`` is true when the client exited with 0
    within the timeout and nothing interrupted the run.

    With no ``client``, the scenario's flows run with airlink's own transports until they
    have delivered their bytes or the scenario's stop time; ``completed`` then means what it
    means in simulation, and the summary has the simulator's per-flow counters.

    ``progress`` shows the elapsed time on stderr (against the stop time for airlink's flows).

    ``max_in_flight_bytes`` bounds the memory the packets held in the emulated links of each
    direction take at once, each counted at its allocation and queue slots (default 256 MiB);
    packets beyond are dropped on arrival and counted in the summary's ``drops``, with every other
    drop the scenario did not ask for (the kernels' at the TUN devices, records the writer lost).
    ``warnings`` lists each kind that happened.

    ``live`` is called about once a second with the run's state (what ``airlink ctl RUN state``
    reads: links and flows), e.g. to draw a live view. The run listens for live control on
    ``control.sock`` in the folder it writes whatever ``live`` is.
    """
    if client is None and server is not None:
        raise ValueError("a server command needs a client command (with neither, the scenario's flows run "
                         "with airlink's own transports)")
    out = Path(out) if out is not None else default_out(scenario)
    with atomic_folder(out, replace=force, kind="results") as tmp:
        emu, source = _start(scenario, seed=seed, overrides=overrides, pcap_dir=tmp, snaplen=snaplen, realtime=realtime,
                             max_in_flight_bytes=max_in_flight_bytes)
        invocations = {side: inv for side, cmd in (("server", server), ("client", client))
                       if cmd and (inv := iperf.invocation(side, cmd, tmp.resolve())) is not None}
        sink = ParquetSink(tmp)
        control_warnings = _listen(emu, tmp)
        commands: list[dict[str, Any]] = []
        interrupted: str | None = None
        timed_out = False
        started = time.monotonic()
        deadline = None if timeout is None else started + timeout
        bar = tqdm(total=round(emu.stop_s) if client is None else None, unit="s", desc=emu.name, file=sys.stderr,
                   disable=not progress, bar_format="{desc}: {n:.0f}/{total_fmt} s {bar}" if client is None else None)

        show_progress = _ticker(bar, started)
        next_view = started

        def tick() -> None:
            nonlocal next_view
            show_progress()
            now = time.monotonic()
            if live is not None and now >= next_view:
                next_view = now + LIVE_INTERVAL_S
                answer = emu.control({"op": "state"})
                if answer.get("ok"):
                    live(answer)

        try:
            hs = None
            if client is None:
                emu.start_flows()
                timed_out = _wait(emu, lambda: 0 if emu.flows_finished else None, deadline, sink, tick) is None
            else:
                if server:
                    ran = invocations["server"].command if "server" in invocations else server
                    hs = emu.spawn("server", ran, str(tmp / "server.stdout"), str(tmp / "server.stderr"))
                    commands.append({"side": "server", "command": server, "handle": hs,
                                     "start_s": time.monotonic() - started, **_ran(server, ran)})
                    time.sleep(server_delay)
                ran = invocations["client"].command if "client" in invocations else client
                hc = emu.spawn("client", ran, str(tmp / "client.stdout"), str(tmp / "client.stderr"))
                commands.append({"side": "client", "command": client, "handle": hc, "start_s": time.monotonic() - started,
                                 **_ran(client, ran)})
                code = _wait(emu, lambda: emu.poll(hc), deadline, sink, tick)
                if code is None:
                    timed_out = True
                    _terminate(emu, hc)  # SIGTERM first: iperf3 then still writes its report
                    if _wait(emu, lambda: emu.poll(hc), time.monotonic() + KILL_GRACE_S, sink) is None:
                        emu.kill(hc, True)
                commands[-1].update(exit_code=code, end_s=time.monotonic() - started)
            if hs is not None:
                scode = _wait(emu, lambda: emu.poll(hs), time.monotonic() + server_grace, sink)
                commands[0].update(exit_code=scode, end_s=time.monotonic() - started)
        except KeyboardInterrupt:
            interrupted = "SIGINT"
        except SystemExit as e:
            interrupted = _stop_reason(e)
        finally:
            bar.close()
            _stop(emu, sink)
        for c in commands:
            c.pop("handle", None)
            c.setdefault("exit_code", None)
        for side, cmd in (("server", server), ("client", client)):
            if not cmd:
                for stream in ("stdout", "stderr"):
                    (tmp / f"{side}.{stream}").write_text("", encoding="utf-8")
        (tmp / CONTROL_SOCKET).unlink(missing_ok=True)  # the run removed it, unless stopping failed
        iperf3, kernel_warnings = _kernel_results(tmp, invocations, commands) if client is not None else (None, [])
        summary = emu.summary(commands=commands, interrupted=interrupted, timed_out=timed_out,
                              warnings=control_warnings + kernel_warnings, iperf3=iperf3)
        completed = summary["completed"]
        manifest = make_manifest(
            version=version(), scenario_name=emu.name, source=source, seed=emu.seed, overrides=overrides,
            resolved_scenario=emu.resolved_scenario(), completed=completed, command=command,
        )
        manifest.update(mode="emulation", kernel=_kernel(), sysctls=emu.sysctls(), commands=commands,
                        endpoints="kernel" if client else "airlink",
                        realtime=summary.get("realtime"), snaplen=snaplen, server_address=emu.server_address,
                        client_address=emu.client_address,
                        host_changes=emu.host_changes)
        write_json(tmp / SUMMARY, summary)
        write_json(tmp / MANIFEST, manifest)
    result = EmulationResult(out, summary, manifest)
    if interrupted == "SIGINT":
        raise KeyboardInterrupt
    if interrupted is not None:
        raise SystemExit(128 + int(interrupted.split()[-1]) if interrupted.startswith("signal") else 1)
    return result


def gateway(
    scenario: ScenarioPath,
    *,
    client_side: str,
    server_side: str,
    out: ScenarioPath | None = None,
    seed: int | None = None,
    overrides: Sequence[str] = (),
    force: bool = False,
    snaplen: int = 128,
    realtime: bool = True,
    duration: float | None = None,
    progress: bool = False,
) -> EmulationResult:
    """Forwards between the interfaces ``client_side`` and ``server_side`` through the
    scenario's links (the server side's traffic takes the downlink) for ``duration`` seconds,
    or until Ctrl-C or SIGTERM, the normal ways to stop it (the summary's ``stopped_by``); takes
    live control (``airlink ctl``) as :func:`emulate` does and writes the same files (pcaps,
    time series, events, summary, manifest). See
    ``airlink_emu::gateway`` for what it needs and restores."""
    out = Path(out) if out is not None else default_out(scenario)
    source = os.fspath(scenario)
    text = read_scenario_text(source)
    with atomic_folder(out, replace=force, kind="results") as tmp:
        emu = _core.Emulation(text, source, seed, list(overrides), str(tmp), snaplen, realtime,
                              gateway=(client_side, server_side))
        sink = ParquetSink(tmp)
        control_warnings = _listen(emu, tmp)
        stopped_by = "duration"
        started = time.monotonic()
        deadline = None if duration is None else started + duration
        bar = tqdm(total=None if duration is None else round(duration), unit="s", desc=f"gateway {emu.name}",
                   file=sys.stderr, disable=not progress)

        tick = _ticker(bar, started)

        try:
            _wait(emu, lambda: None, deadline, sink, tick)
        except KeyboardInterrupt:
            stopped_by = "SIGINT"
        except SystemExit as e:
            stopped_by = _stop_reason(e)
        finally:
            bar.close()
            _stop(emu, sink)
        (tmp / CONTROL_SOCKET).unlink(missing_ok=True)
        summary = emu.summary(stopped_by=stopped_by, warnings=control_warnings)
        manifest = make_manifest(
            version=version(), scenario_name=emu.name, source=source, seed=emu.seed, overrides=overrides,
            resolved_scenario=emu.resolved_scenario(), completed=True, command=None,
        )
        manifest.update(mode="gateway", kernel=_kernel(), interfaces={"client_side": client_side, "server_side": server_side},
                        realtime=summary.get("realtime"), snaplen=snaplen)
        write_json(tmp / SUMMARY, summary)
        write_json(tmp / MANIFEST, manifest)
    return EmulationResult(out, summary, manifest)


def shell(
    scenario: ScenarioPath,
    command: str | None = None,
    *,
    seed: int | None = None,
    overrides: Sequence[str] = (),
    realtime: bool = True,
) -> int:
    """Runs ``command`` (default: an interactive shell) in the client namespace; returns its exit code.

    Output goes to the terminal. With an interactive shell, Ctrl-C belongs to the shell;
    otherwise it stops the command and the emulation.
    """
    emu, _ = _start(scenario, seed=seed, overrides=overrides, pcap_dir=None, snaplen=0, realtime=realtime)
    interactive = command is None
    if interactive:
        command = 'PS1="airlink-client$ " exec "${SHELL:-/bin/sh}" -i'
    previous = signal.getsignal(signal.SIGINT)
    try:
        if interactive:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        handle = emu.spawn("client", command, None, None, True)
        code = _wait(emu, lambda: emu.poll(handle), None, None)
        return 1 if code is None else (128 - code if code < 0 else code)
    finally:
        if interactive:
            signal.signal(signal.SIGINT, previous)
        emu.stop()


def read_pcap(path: ScenarioPath) -> list[tuple[int, int, bytes]]:
    """The records of a pcap file airlink wrote: (timestamp ns since the epoch, original length, bytes kept)."""
    import struct

    data = Path(path).read_bytes()
    if len(data) < 24:
        raise ValueError(f"{path}: not a pcap file (shorter than its header)")
    magic = data[:4]
    endian = {b"\x4d\x3c\xb2\xa1": "<", b"\xa1\xb2\x3c\x4d": ">", b"\xa1\xb2\xc3\xd4": ">", b"\xd4\xc3\xb2\xa1": "<"}.get(magic)
    if endian is None:
        raise ValueError(f"{path}: not a pcap file (magic {magic.hex()})")
    nano = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    out = []
    at = 24
    while at + 16 <= len(data):
        sec, frac, incl, orig = struct.unpack(endian + "IIII", data[at:at + 16])
        at += 16
        out.append((sec * 1_000_000_000 + (frac if nano else frac * 1000), orig, data[at:at + incl]))
        at += incl
    return out


def tcp_goodput_steady(path: ScenarioPath, *, lo: float = 0.1, hi: float = 0.9) -> float:
    """TCP goodput (bit/s) of the largest flow in a pcap taken at the receiver: payload delivered
    *in order* (what the application reads), between the packets that first bring it to ``lo``
    and to ``hi`` of the total — no connection set-up, no slow start."""
    import struct

    flows: dict[bytes, list[tuple[int, int, int]]] = {}
    for ts, orig, pkt in read_pcap(path):
        if len(pkt) < 20 or pkt[0] >> 4 != 4 or pkt[9] != 6:
            continue
        ihl = (pkt[0] & 0x0F) * 4
        if len(pkt) < ihl + 13:
            continue
        seq = struct.unpack("!I", pkt[ihl + 4:ihl + 8])[0]
        payload = orig - ihl - (pkt[ihl + 12] >> 4) * 4
        if payload > 0:
            flows.setdefault(pkt[12:20] + pkt[ihl:ihl + 4], []).append((ts, seq, payload))
    if not flows:
        return 0.0
    packets = max(flows.values(), key=lambda v: sum(p for _, _, p in v))
    base = packets[0][1]
    rcv_nxt = 0  # relative to the first sequence number seen
    held: dict[int, int] = {}  # out-of-order segments: start -> end
    marks: list[tuple[int, int]] = []
    for ts, seq, payload in packets:
        start = (seq - base) % (1 << 32)
        if start >= (1 << 31):
            continue  # before the first segment seen
        end = start + payload
        if end <= rcv_nxt:
            continue
        held[start] = max(held.get(start, 0), end)
        advanced = False
        while True:
            reach = [e for st, e in held.items() if st <= rcv_nxt and e > rcv_nxt]
            if not reach:
                break
            rcv_nxt = max(reach)
            advanced = True
        held = {st: e for st, e in held.items() if e > rcv_nxt}
        if advanced:
            marks.append((ts, rcv_nxt))
    total = rcv_nxt
    a = next(m for m in marks if m[1] >= lo * total)
    b = next(m for m in marks if m[1] >= hi * total)
    return (b[1] - a[1]) * 8 / ((b[0] - a[0]) * 1e-9) if b[0] > a[0] else 0.0
