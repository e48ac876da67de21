"""``airlink validate tcp``: airlink's TCP against the kernel's on the same emulated link.

For each matrix point (a pipe downlink with rate, one-way delay, random loss and a queue sized
in bandwidth-delay products, an explicit symmetric uplink; or the WIPEMU adaptive downlink;
one or two flows) three runs with the same seed:

``kernel``       emulation, the kernel's TCP: ``iperf3 -R`` (the server sends) with ``-C reno|cubic``;
                 the server side also samples ``ss -tin`` and takes ``nstat`` before and after.
``airlink-emu``  emulation, airlink's own TCP (``emulate`` without commands), preset ``--preset``.
``airlink-sim``  simulation of the same scenario and seed.

Every stack is measured the same way where the data allow: goodput is the in-order bytes the
receiver got in the first ``seconds`` after its flow's first data segment (receiver-side pcap
in emulation, the ``delivered_bytes`` series in simulation); link losses are the link models'
drop counters on the way down; retransmissions and spurious retransmissions are counted from
the pcaps (sender side: segments starting below the highest sequence sent; receiver side:
segments whose every byte had already arrived), next to each stack's own counters
(``nstat`` for the kernel, the summary for airlink). The kernel's ``reno`` module is NewReno
loss recovery with SACK, so it is compared with airlink's ``newreno``.

The report folder holds ``runs.csv`` (every point x stack), ``comparison.csv`` (the agreement
bounds per point), one PNG per metric (kernel on x, airlink on y), cwnd trajectories of a few
points, ``README.md`` and ``index.html`` with the tables, and every run's results folder.
"""

from __future__ import annotations

import csv
import html
import json
import math
import re
import shutil
import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from airlink import _core
from airlink import emulate as emulation

STACKS = ("kernel", "airlink-emu", "airlink-sim")
CONGESTIONS = ("cubic", "reno")
#: The kernel's congestion control -> airlink's (the kernel's reno recovers as NewReno with SACK).
AIRLINK_CONGESTION = {"cubic": "cubic", "reno": "newreno", "bbr": "bbr"}
#: The agreement bounds: goodput within 10 %, retransmissions per link loss within 1.2x, timeouts
#: within 2 per 100 s of the kernel's.
GOODPUT_REL = 0.10
RETRANS_FACTOR = 1.2
TIMEOUTS_PER_100S = 2.0
#: Below this many link losses in either run, retransmissions per loss are not compared.
MIN_LOSSES = 10
#: ss sampling interval in the sender's namespace.
SS_INTERVAL_S = 0.1
#: Both namespaces: room for every window of the matrix (largest BDP + queue is under 4 MB),
#: so neither stack is limited by its buffers.
KERNEL_SYSCTLS = {"net.ipv4.tcp_rmem": "4096 131072 33554432", "net.ipv4.tcp_wmem": "4096 16384 33554432"}
AIRLINK_RWND = "16 MB"
WIPEMU = Path(__file__).resolve().parents[2] / "scenarios" / "wipemu" / "adaptive.toml"
IPERF_PORT = 5201
MTU = 1500


@dataclass(frozen=True)
class Point:
    """One matrix point. ``rate_bps`` None is the WIPEMU adaptive downlink (its own queue and
    uplink, timestamps off as in the study)."""

    congestion: str
    rate_bps: int | None
    delay_ms: float
    loss: float
    queue_bdp: float
    flows: int = 1
    seconds: float = 20.0

    @property
    def wipemu(self) -> bool:
        return self.rate_bps is None

    @property
    def name(self) -> str:
        if self.wipemu:
            return f"{self.congestion}-wipemu-{self.flows}f"
        rate = f"{self.rate_bps / 1e6:g}M"
        return f"{self.congestion}-{rate}-{self.delay_ms:g}ms-{100 * self.loss:g}pct-q{self.queue_bdp:g}-{self.flows}f"

    @property
    def bdp_packets(self) -> float:
        """Bandwidth-delay product in 1500-byte packets (round trip = twice the one-way delay)."""
        return 0.0 if self.rate_bps is None else self.rate_bps * 2 * self.delay_ms / 1e3 / (MTU * 8)

    @property
    def queue_packets(self) -> int:
        return max(2, round(self.queue_bdp * self.bdp_packets))

    @property
    def timestamps(self) -> bool:
        return not self.wipemu

    @property
    def rtt_s(self) -> float:
        return 0.2 if self.wipemu else 2 * self.delay_ms / 1e3


def quick_matrix() -> list[Point]:
    """The CI form: three points, 12 s transfers (about two and a half minutes in all)."""
    return [
        Point("cubic", 10_000_000, 20, 0.01, 1.0, 1, 12.0),
        Point("reno", 4_000_000, 50, 0.005, 1.0, 2, 12.0),
        Point("cubic", 2_000_000, 100, 0.0, 0.5, 1, 12.0),
    ]


def full_matrix(seconds: float = 20.0) -> list[Point]:
    """The matrix one dimension at a time around a base point (10 Mbit/s, 20 ms one
    way, 1 % loss, 1 BDP, one flow), for CUBIC and Reno: loss 0-3 %, delay 5-300 ms, rate
    1-100 Mbit/s (and 100 Mbit/s without loss), queue 0.25-4 BDP (without loss), two flows, and
    the WIPEMU downlink. 28 points, about 20-25 minutes with 20 s transfers."""
    points: list[Point] = []
    for cc in CONGESTIONS:
        base = dict(congestion=cc, rate_bps=10_000_000, delay_ms=20.0, loss=0.01, queue_bdp=1.0, flows=1, seconds=seconds)
        variants: list[dict[str, Any]] = [{}]
        variants += [{"loss": x} for x in (0.0, 0.001, 0.03)]
        variants += [{"delay_ms": x} for x in (5.0, 100.0, 300.0)]
        # 100 Mbit/s with 1 % loss is loss-bound (a few Mbit/s); without loss it fills the link.
        variants += [{"rate_bps": x} for x in (1_000_000, 100_000_000)] + [{"rate_bps": 100_000_000, "loss": 0.0}]
        # Without random loss: with 1 % the window stays below one BDP and the queue never fills.
        variants += [{"queue_bdp": x, "loss": 0.0} for x in (0.25, 4.0)]
        variants += [{"flows": 2}]
        variants += [{"rate_bps": None, "delay_ms": 0.0, "loss": 0.0, "queue_bdp": 0.0}]
        points += [Point(**{**base, **v}) for v in variants]
    return points


def matrix(*, quick: bool, seconds: float | None = None, only: Sequence[str] = ()) -> list[Point]:
    """The quick or full matrix, with another transfer time, or only points whose name contains
    one of ``only``."""
    points = quick_matrix() if quick else full_matrix()
    if seconds is not None:
        points = [replace(p, seconds=seconds) for p in points]
    return [p for p in points if not only or any(o in p.name for o in only)]


def default_preset() -> str:
    """``linux`` when this build knows it, else ``default``."""
    return "linux" if preset_known("linux") else "default"


def preset_known(preset: str) -> bool:
    try:
        _core.check_scenario(scenario_text(Point("cubic", 1_000_000, 10, 0, 1), preset, 1), "<preset check>")
    except _core.ScenarioError:
        return False
    return True


def scenario_text(p: Point, preset: str, seed: int) -> str:
    """The scenario of a point: the link, ``p.flows`` bulk TCP flows until the run stops at
    ``p.seconds`` + 1 s (goodput counts the first ``p.seconds``), whose ``congestion`` is the
    kernel's too, and the kernel's other settings in ``[emulation]``."""
    stop = p.seconds + 1
    flows = "".join(
        f'\n[[flow]]\nprotocol = "tcp"\ncongestion = "{AIRLINK_CONGESTION[p.congestion]}"\napp = "bulk"\n'
        f'[flow.tcp]\npreset = "{preset}"\ntimestamps = {str(p.timestamps).lower()}\n'
        f'rwnd = "{AIRLINK_RWND}"\n'
        for _ in range(p.flows)
    )
    sysctl = dict(KERNEL_SYSCTLS, **({} if p.timestamps else {"net.ipv4.tcp_timestamps": "0"}))
    # The flows' congestion is the kernel's too (newreno is the kernel's reno).
    emulation_table = ('\n[emulation]\nsysctl = { '
                       + ", ".join(f'"{k}" = "{v}"' for k, v in sysctl.items()) + " }\n")
    head = f'name = "validate-{p.name}"\nseed = {seed}\nstop = "{stop:g} s"\nsample_interval = "100 ms"\n'
    if p.wipemu:
        # The study's link as the file has it (downlink and its explicit uplink); our flows.
        text = WIPEMU.read_text(encoding="utf-8")
        link = text[text.index("[wired]"):text.index("[[flow]]")]
        return head + link + flows + emulation_table
    link = (f'[wired]\ndelay = "0 ms"\n'
            f'[downlink.pipe]\nrate = "{p.rate_bps} bit/s"\ndelay = "{p.delay_ms:g} ms"\nloss = {p.loss:g}\n'
            f'queue = {p.queue_packets}\n'
            # Symmetric and explicit: the ACKs' path never depends on the uplink's default.
            f'[uplink.pipe]\nrate = "{p.rate_bps} bit/s"\ndelay = "{p.delay_ms:g} ms"\nqueue = {max(p.queue_packets, 100)}\n')
    return head + link + flows + emulation_table


# --- pcap analysis -------------------------------------------------------------------------


@dataclass
class Segment:
    t_ns: int
    seq: int  # relative to the flow's first data segment, bytes
    length: int


def tcp_data_flows(path: Path) -> dict[tuple[bytes, int, int], list[Segment]]:
    """Data-carrying TCP segments of a pcap by (source address, source port, destination port),
    sequence numbers relative to each flow's first data segment (transfers under 2 GiB)."""
    raw: dict[tuple[bytes, int, int], list[tuple[int, int, int]]] = {}
    for ts, _orig, pkt in emulation.read_pcap(path):
        if len(pkt) < 20 or pkt[0] >> 4 != 4 or pkt[9] != 6:
            continue
        ihl = (pkt[0] & 0x0F) * 4
        if len(pkt) < ihl + 13:
            continue
        total = struct.unpack("!H", pkt[2:4])[0]  # IP total length: right even when the record is cut
        payload = total - ihl - (pkt[ihl + 12] >> 4) * 4
        if payload <= 0:
            continue
        sport, dport, seq = struct.unpack("!HHI", pkt[ihl:ihl + 8])
        raw.setdefault((pkt[12:16], sport, dport), []).append((ts, seq, payload))
    out = {}
    for key, segs in raw.items():
        base = segs[0][1]
        rel = []
        for ts, seq, n in segs:
            r = (seq - base) % (1 << 32)
            if r >= 1 << 31:
                r -= 1 << 32  # before the first data segment captured (a reordered packet)
            rel.append(Segment(ts, r, n))
        out[key] = rel
    return out


class IntervalSet:
    """Byte ranges received so far, as sorted disjoint [start, end) pairs."""

    def __init__(self) -> None:
        self.ranges: list[list[int]] = []

    def covers(self, start: int, end: int) -> bool:
        return any(a <= start and end <= b for a, b in self.ranges)

    def add(self, start: int, end: int) -> None:
        merged = []
        for a, b in self.ranges:
            if b < start or a > end:
                merged.append([a, b])
            else:
                start, end = min(a, start), max(b, end)
        merged.append([start, end])
        self.ranges = sorted(merged)

    def in_order(self) -> int:
        """Bytes from 0 with no hole."""
        return self.ranges[0][1] if self.ranges and self.ranges[0][0] <= 0 else 0


@dataclass
class ReceiverView:
    goodput_bps: float
    segments: int
    duplicates: int  # segments whose every byte had already arrived: spurious retransmissions
    t0_ns: int


def receiver_view(segs: Sequence[Segment], seconds: float) -> ReceiverView:
    """In-order bytes in the first ``seconds`` after the first data segment, and duplicates."""
    got = IntervalSet()
    dup = 0
    t0 = segs[0].t_ns
    end_ns = t0 + int(seconds * 1e9)
    delivered = 0
    for s in segs:
        if got.covers(s.seq, s.seq + s.length):
            dup += 1
            continue
        got.add(s.seq, s.seq + s.length)
        if s.t_ns <= end_ns:
            delivered = got.in_order()
    return ReceiverView(delivered * 8 / seconds, len(segs), dup, t0)


def sender_retransmissions(segs: Sequence[Segment]) -> int:
    """Segments that start below the highest sequence number sent before them."""
    high = -(1 << 62)
    n = 0
    for s in segs:
        if s.seq < high:
            n += 1
        high = max(high, s.seq + s.length)
    return n


def largest_flows(flows: dict[Any, list[Segment]], n: int) -> list[list[Segment]]:
    return sorted(flows.values(), key=lambda v: -sum(s.length for s in v))[:n]


# --- the kernel's own counters -----------------------------------------------------------------

PROBE = r"""# The sender's side of a kernel run (server namespace): iperf3 with ss and nstat around it.
d="$1"
nstat -asz --json > "$d/nstat-before.json"
( while :; do
    echo "@ $(date +%s.%N)"
    ss -tinH state established "( sport = :{port} )"
    sleep {interval}
  done ) > "$d/ss.txt" 2>/dev/null &
sampler=$!
iperf3 -s -1 -p {port} --json > "$d/iperf-server.json"
code=$?
kill $sampler
nstat -asz --json > "$d/nstat-after.json"
exit $code
"""

NSTAT_KEYS = ("TcpRetransSegs", "TcpExtTCPTimeouts", "TcpExtTCPLossProbes", "TcpExtTCPSpuriousRTOs",
              "TcpExtTCPDSACKRecv", "TcpExtTCPDSACKUndo", "TcpExtTCPDSACKOldSent", "TcpExtTCPLostRetransmit",
              "TcpExtTCPSackRecovery", "TcpExtTCPLossUndo", "TcpExtTCPFastRetrans", "TcpExtTCPSlowStartRetrans")


def nstat_delta(folder: Path) -> dict[str, int]:
    before = json.loads((folder / "nstat-before.json").read_text())["kernel"]
    after = json.loads((folder / "nstat-after.json").read_text())["kernel"]
    return {k: int(after.get(k, 0)) - int(before.get(k, 0)) for k in NSTAT_KEYS}


SS_FIELDS = {"cwnd": r"\bcwnd:(\d+)", "ssthresh": r"\bssthresh:(\d+)", "rto_ms": r"\brto:([\d.]+)",
             "mss": r"\bmss:(\d+)", "bytes_acked": r"\bbytes_acked:(\d+)", "retrans_total": r"\bretrans:\d+/(\d+)"}


def parse_ss(path: Path) -> list[dict[str, Any]]:
    """``ss -tinH`` samples: one dict per (time, socket) with the peer and the fields above."""
    rows: list[dict[str, Any]] = []
    t = None
    peer = None
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("@ "):
            t = float(line[2:])
            continue
        parts = line.split()
        if t is None or not parts:
            continue
        if not line[0].isspace() and len(parts) >= 4 and ":" in parts[-1]:
            peer = parts[-1]  # "ESTAB 0 0 10.77.0.1:5201 10.77.0.2:40000" (no state column with a state filter)
            continue
        if peer is None:
            continue
        row: dict[str, Any] = {"t": t, "peer": peer}
        for k, rx in SS_FIELDS.items():
            m = re.search(rx, line)
            row[k] = float(m.group(1)) if m else math.nan
        rows.append(row)
        peer = None
    return rows


# --- running a point --------------------------------------------------------------------------


@dataclass
class Row:
    """One point x stack."""

    point: str
    stack: str
    congestion: str
    preset: str
    seed: int
    rate_bps: float
    delay_ms: float
    loss: float
    queue_bdp: float
    queue_packets: int
    flows: int
    seconds: float
    status: str = "ok"  # ok, skipped, failed
    reason: str = ""
    goodput_bps: float = math.nan
    link_losses: float = math.nan
    retransmissions: float = math.nan  # the stack's own count (nstat; airlink's summary)
    pcap_retransmissions: float = math.nan  # sender-side pcap
    spurious_retransmissions: float = math.nan  # receiver-side pcap (simulation: its own count if any)
    timeouts: float = math.nan
    fast_recoveries: float = math.nan
    loss_probes: float = math.nan
    spurious_rtos: float = math.nan
    dsacks: float = math.nan
    mean_cwnd_segments: float = math.nan
    series_goodput_bps: float = math.nan  # airlink-emu: goodput from its own series (checks the pcap reading)
    lateness_p99_us: float = math.nan  # the emulator's datapath, against the links' schedule
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def retrans_per_loss(self) -> float:
        return self.retransmissions / self.link_losses if self.link_losses else math.nan

    @property
    def timeouts_per_100s(self) -> float:
        return self.timeouts * 100 / self.seconds


def _row(p: Point, stack: str, preset: str, seed: int) -> Row:
    return Row(point=p.name, stack=stack, congestion=p.congestion, preset=preset, seed=seed,
               rate_bps=math.nan if p.rate_bps is None else p.rate_bps, delay_ms=p.delay_ms, loss=p.loss,
               queue_bdp=p.queue_bdp, queue_packets=50 if p.wipemu else p.queue_packets, flows=p.flows, seconds=p.seconds)


def link_losses(summary: Mapping[str, Any]) -> int:
    """Packets the links on the way down dropped (queue, random loss, ARQ given up, bit errors)."""
    return sum(link[k] for link in summary["links"] if link["name"] in ("wired.down", "downlink")
               for k in ("queue_drops", "loss_drops", "packets_given_up", "checksum_drops"))


def _emulator_held(summary: Mapping[str, Any]) -> str:
    """Why the emulator could not hold the link's schedule, or "" when it did."""
    dl = summary["datapath"]["downlink"]
    sched, actual = dl.get("scheduled_rate_bps") or 0, dl.get("actual_rate_bps") or 0
    if sched and actual / sched < 0.97:
        return (f"the emulator delivered the downlink at {actual / sched:.1%} of its schedule "
                f"({actual / 1e6:.2f} of {sched / 1e6:.2f} Mbit/s): this machine cannot hold the rate")
    return ""


def _pcap_metrics(row: Row, folder: Path, p: Point) -> list[list[Segment]]:
    recv = largest_flows(tcp_data_flows(folder / "client.pcap"), p.flows)
    sent = largest_flows(tcp_data_flows(folder / "server.pcap"), p.flows)
    views = [receiver_view(s, p.seconds) for s in recv]
    row.goodput_bps = sum(v.goodput_bps for v in views)
    row.spurious_retransmissions = sum(v.duplicates for v in views)
    row.pcap_retransmissions = sum(sender_retransmissions(s) for s in sent)
    row.extra["t0_ns"] = [v.t0_ns for v in views]
    return recv


def run_kernel(p: Point, folder: Path, text: Path, seed: int, preset: str) -> tuple[Row, list[dict[str, Any]]]:
    row = _row(p, "kernel", preset, seed)
    probe = folder / "kernel-probe"
    probe.mkdir(parents=True, exist_ok=True)
    (probe / "probe.sh").write_text(PROBE.replace("{port}", str(IPERF_PORT)).replace("{interval}", str(SS_INTERVAL_S)))
    client = (f"iperf3 -c $AIRLINK_SERVER -p {IPERF_PORT} -R -t {p.seconds + 1:g} -P {p.flows} -C {p.congestion} "
              f"--json")
    try:
        res = emulation.emulate(text, seed=seed, out=folder / "kernel", force=True, server=f"sh {probe / 'probe.sh'} {probe}",
                                # nstat and the sampler start before iperf3 listens: room for a busy machine
                                client=client, timeout=p.seconds + 60, server_delay=2.0)
    except emulation.EmulationError as e:
        row.status, row.reason = ("skipped" if "congestion" in str(e) else "failed"), str(e)
        return row, []
    if not res.completed:
        row.status, row.reason = "failed", f"iperf3 did not complete: {res.output('client')[-300:]} {res.output('server', 'stderr')[-300:]}"
        return row, []
    if why := _emulator_held(res.summary):
        row.status, row.reason = "skipped", why
    row.lateness_p99_us = res.summary["datapath"]["lateness"]["p99_us"]
    row.link_losses = link_losses(res.summary)
    _pcap_metrics(row, folder / "kernel", p)
    n = nstat_delta(probe)
    row.retransmissions = n["TcpRetransSegs"]
    row.timeouts = n["TcpExtTCPTimeouts"]
    row.loss_probes = n["TcpExtTCPLossProbes"]
    row.spurious_rtos = n["TcpExtTCPSpuriousRTOs"]
    row.dsacks = n["TcpExtTCPDSACKRecv"]
    row.fast_recoveries = n["TcpExtTCPSackRecovery"]
    row.extra["nstat"] = n
    samples = parse_ss(probe / "ss.txt")
    # The data connections are the ones that sent most (the control connection stays small).
    acked: dict[str, float] = {}
    for s in samples:
        acked[s["peer"]] = max(acked.get(s["peer"], 0.0), 0.0 if math.isnan(s["bytes_acked"]) else s["bytes_acked"])
    data_peers = set(sorted(acked, key=lambda k: -acked[k])[:p.flows])
    samples = [s for s in samples if s["peer"] in data_peers]
    if samples:
        row.mean_cwnd_segments = sum(s["cwnd"] for s in samples) / len(samples)
    return row, samples


def _airlink_flow_metrics(row: Row, summary: Mapping[str, Any]) -> None:
    flows = summary["flows"]
    row.link_losses = link_losses(summary)
    row.retransmissions = sum(f["retransmissions"] for f in flows)
    row.timeouts = sum(f["timeouts"] for f in flows)
    row.fast_recoveries = sum(f.get("fast_recoveries", math.nan) for f in flows)
    if all("spurious_retransmissions" in f for f in flows):
        row.extra["own_spurious_retransmissions"] = sum(f["spurious_retransmissions"] for f in flows)


def _series_goodput(flows_df: Any, seconds: float) -> tuple[float, float]:
    """Goodput over the first ``seconds`` after each flow's first delivery, from the
    ``delivered_bytes`` series (linear between samples), summed; and the mean cwnd in segments."""
    import numpy as np

    total = 0.0
    cwnds = []
    for _, f in flows_df.groupby("flow"):
        t = f["time_ns"].to_numpy() / 1e9
        d = f["delivered_bytes"].to_numpy().astype(float)
        started = np.nonzero(d > 0)[0]
        if len(started) == 0:
            continue
        i = max(started[0] - 1, 0)
        t0 = t[i]  # the last sample before anything arrived
        total += float(np.interp(t0 + seconds, t, d)) * 8 / seconds
        cwnds.append(f["cwnd_bytes"].to_numpy(dtype=float) / 1448)
    mean_cwnd = float(np.mean(np.concatenate(cwnds))) if cwnds else math.nan
    return total, mean_cwnd


def run_airlink_emu(p: Point, folder: Path, text: Path, seed: int, preset: str) -> tuple[Row, Any]:
    import airlink

    row = _row(p, "airlink-emu", preset, seed)
    try:
        res = emulation.emulate(text, seed=seed, out=folder / "airlink-emu", force=True, timeout=p.seconds + 60)
    except emulation.EmulationError as e:
        row.status, row.reason = "failed", str(e)
        return row, None
    if why := _emulator_held(res.summary):
        row.status, row.reason = "skipped", why
    row.lateness_p99_us = res.summary["datapath"]["lateness"]["p99_us"]
    row.extra["timer_late_p99_us"] = res.summary.get("stack", {}).get("timer_late_p99_us", math.nan)
    _airlink_flow_metrics(row, res.summary)
    _pcap_metrics(row, folder / "airlink-emu", p)
    flows = airlink.read_results(folder / "airlink-emu").flows
    row.series_goodput_bps, row.mean_cwnd_segments = _series_goodput(flows, p.seconds)
    return row, flows


def run_sim(p: Point, folder: Path, text: Path, seed: int, preset: str) -> tuple[Row, Any]:
    import airlink

    row = _row(p, "airlink-sim", preset, seed)
    r = airlink.run(text, seed=seed, out=folder / "airlink-sim", force=True)
    _airlink_flow_metrics(row, r.summary)
    row.goodput_bps, row.mean_cwnd_segments = _series_goodput(r.flows, p.seconds)
    row.spurious_retransmissions = row.extra.get("own_spurious_retransmissions", math.nan)
    return row, r.flows


#: airlink's TCP in emulation below this share of the same seed's simulated goodput means the
#: real-time stack fell behind (the models are the same; only timing differs).
EMU_SIM_MIN = 0.9


def _check_realtime_stack(emu: Row, sim: Row) -> None:
    if emu.status == "ok" and sim.status == "ok" and emu.goodput_bps < EMU_SIM_MIN * sim.goodput_bps:
        emu.status = "skipped"
        emu.reason = (f"airlink's real-time stack reached {emu.goodput_bps / sim.goodput_bps:.0%} of the same seed's "
                      f"simulated goodput ({emu.link_losses:g} link losses against {sim.link_losses:g}; timers late by "
                      f"{emu.extra.get('timer_late_p99_us', math.nan):.0f} us at p99): this machine cannot hold the point "
                      "in real time")


def emulation_unavailable() -> str:
    """Why the emulated stacks cannot run here ("" when they can)."""
    checks = _core.doctor()
    missing = [c["name"] for c in checks if c["required"] and not c["ok"]]
    if missing:
        return "emulation not possible here: " + ", ".join(missing)
    if shutil.which("iperf3") is None or shutil.which("ss") is None or shutil.which("nstat") is None:
        return "iperf3, ss (iproute2) and nstat are needed for the kernel's runs"
    return ""


@dataclass
class Report:
    preset: str
    seed: int
    rows: list[Row]
    trajectories: dict[str, dict[str, Any]]  # point -> {"kernel": samples, "airlink-emu": df, "airlink-sim": df}

    def row(self, point: str, stack: str) -> Row | None:
        return next((r for r in self.rows if r.point == point and r.stack == stack), None)

    def points(self) -> list[str]:
        return list(dict.fromkeys(r.point for r in self.rows))


def run(points: Sequence[Point], out: Path, *, preset: str, seed: int = 1, progress: Callable[[str], None] | None = None,
        trajectories: int = 4) -> Report:
    """Runs every point on the three stacks and writes the report folder ``out``."""
    say = progress or (lambda s: None)
    out.mkdir(parents=True, exist_ok=True)
    why_not = emulation_unavailable()
    rows: list[Row] = []
    traj: dict[str, dict[str, Any]] = {}
    for i, p in enumerate(points):
        folder = out / "runs" / p.name
        folder.mkdir(parents=True, exist_ok=True)
        text = folder / "scenario.toml"
        text.write_text(scenario_text(p, preset, seed), encoding="utf-8")
        say(f"[{i + 1}/{len(points)}] {p.name}")
        keep = i < trajectories or p.wipemu
        t: dict[str, Any] = {}
        if why_not:
            r = _row(p, "kernel", preset, seed)
            r.status, r.reason = "skipped", why_not
            rows.append(r)
        else:
            r, samples = run_kernel(p, folder, text, seed, preset)
            rows.append(r)
            t["kernel"] = (samples, r.extra.get("t0_ns"))
        if why_not:
            r = _row(p, "airlink-emu", preset, seed)
            r.status, r.reason = "skipped", why_not
            rows.append(r)
        else:
            r, df = run_airlink_emu(p, folder, text, seed, preset)
            rows.append(r)
            t["airlink-emu"] = df
        r, df = run_sim(p, folder, text, seed, preset)
        rows.append(r)
        t["airlink-sim"] = df
        _check_realtime_stack(rows[-2], r)
        if keep:
            traj[p.name] = t
    report = Report(preset, seed, rows, traj)
    write_report(report, out)
    return report


# --- comparison and report ----------------------------------------------------------------------


@dataclass
class Check:
    metric: str
    kernel: float
    airlink: float
    verdict: str  # pass, FAIL, n/a
    detail: str


def compare(k: Row, a: Row) -> list[Check]:
    """The agreement bounds for airlink's row ``a`` against the kernel's ``k``."""
    out = []
    g = a.goodput_bps / k.goodput_bps - 1 if k.goodput_bps else math.nan
    out.append(Check("goodput", k.goodput_bps, a.goodput_bps,
                     "n/a" if math.isnan(g) else ("pass" if abs(g) <= GOODPUT_REL else "FAIL"), f"{g:+.1%}"))
    if min(k.link_losses, a.link_losses) < MIN_LOSSES:
        out.append(Check("retransmissions per link loss", k.retrans_per_loss, a.retrans_per_loss, "n/a",
                         f"fewer than {MIN_LOSSES} link losses ({k.link_losses:g}, {a.link_losses:g})"))
    else:
        f = a.retrans_per_loss / k.retrans_per_loss if k.retrans_per_loss else math.inf
        ok = 1 / RETRANS_FACTOR <= f <= RETRANS_FACTOR
        out.append(Check("retransmissions per link loss", k.retrans_per_loss, a.retrans_per_loss,
                         "pass" if ok else "FAIL", f"{f:.2f}x"))
    d = a.timeouts_per_100s - k.timeouts_per_100s
    out.append(Check("timeouts per 100 s", k.timeouts_per_100s, a.timeouts_per_100s,
                     "n/a" if math.isnan(d) else ("pass" if abs(d) <= TIMEOUTS_PER_100S else "FAIL"), f"{d:+.1f}"))
    return out


def comparisons(report: Report) -> list[dict[str, Any]]:
    """One row per point x airlink stack x metric (only where both runs are usable)."""
    out = []
    for name in report.points():
        k = report.row(name, "kernel")
        for stack in ("airlink-emu", "airlink-sim"):
            a = report.row(name, stack)
            if k is None or a is None:
                continue
            if k.status != "ok" or a.status != "ok":
                why = k.reason if k.status != "ok" else a.reason
                out.append({"point": name, "stack": stack, "metric": "all", "kernel": math.nan, "airlink": math.nan,
                            "verdict": "skipped", "detail": why})
                continue
            for c in compare(k, a):
                out.append({"point": name, "stack": stack, **asdict(c)})
    return out


CSV_FIELDS = ("point", "stack", "status", "reason", "congestion", "preset", "seed", "rate_bps", "delay_ms", "loss",
              "queue_bdp", "queue_packets", "flows", "seconds", "goodput_bps", "link_losses", "retransmissions",
              "retrans_per_loss", "pcap_retransmissions", "spurious_retransmissions", "timeouts", "timeouts_per_100s",
              "fast_recoveries", "loss_probes", "spurious_rtos", "dsacks", "mean_cwnd_segments", "series_goodput_bps",
              "lateness_p99_us")


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        if math.isnan(x):
            return ""
        return f"{x:.4g}" if abs(x) < 1e4 else f"{x:.0f}"
    return str(x)


def write_csv(path: Path, rows: Iterable[dict[str, Any]], fields: Sequence[str]) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(fields), extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: _fmt(r.get(k, "")) for k in fields})


def row_dict(r: Row) -> dict[str, Any]:
    d = asdict(r)
    d.update(retrans_per_loss=r.retrans_per_loss, timeouts_per_100s=r.timeouts_per_100s)
    return d


PLOTS = (("goodput_bps", "goodput (Mbit/s)", 1e-6), ("retrans_per_loss", "retransmissions per link loss", 1.0),
         ("timeouts_per_100s", "retransmission timeouts per 100 s", 1.0), ("link_losses", "link losses", 1.0),
         ("spurious_retransmissions", "spurious retransmissions (segments received twice)", 1.0),
         ("mean_cwnd_segments", "mean cwnd (segments)", 1.0))


def _plots(report: Report, out: Path) -> list[str]:
    from airlink.plots import plt

    files = []
    for metric, label, scale in PLOTS:
        fig, ax = plt.subplots(figsize=(6.0, 5.2), dpi=110)
        hi, lo = 0.0, math.inf
        for stack, marker in (("airlink-emu", "o"), ("airlink-sim", "x")):
            xs, ys = [], []
            for name in report.points():
                k, a = report.row(name, "kernel"), report.row(name, stack)
                if not k or not a or k.status != "ok" or a.status != "ok":
                    continue
                x, y = row_dict(k)[metric] * scale, row_dict(a)[metric] * scale
                if math.isnan(x) or math.isnan(y):
                    continue
                xs.append(x)
                ys.append(y)
            ax.scatter(xs, ys, marker=marker, label=stack)
            hi = max([hi, *xs, *ys])
            lo = min([lo, *xs, *ys])
        hi = hi * 1.1 or 1.0
        # Goodput and windows span two decades over the matrix: log axes keep every point readable.
        log = metric in ("goodput_bps", "mean_cwnd_segments") and lo > 0
        if log:
            ax.set_xscale("log")
            ax.set_yscale("log")
        x0 = lo / 1.5 if log else 0.0
        ax.plot([x0, hi], [x0, hi], color="grey", linewidth=0.8, label="airlink = kernel")
        if metric == "goodput_bps":
            for f in (1 - GOODPUT_REL, 1 + GOODPUT_REL):
                ax.plot([x0, hi], [x0 * f, hi * f], color="grey", linestyle=":", linewidth=0.8)
        if metric == "retrans_per_loss":
            for f in (1 / RETRANS_FACTOR, RETRANS_FACTOR):
                ax.plot([x0, hi], [x0 * f, hi * f], color="grey", linestyle=":", linewidth=0.8)
        if metric == "timeouts_per_100s":
            for d in (-TIMEOUTS_PER_100S, TIMEOUTS_PER_100S):
                ax.plot([0, hi], [d, hi + d], color="grey", linestyle=":", linewidth=0.8)
        ax.set_xlim(x0, hi)
        ax.set_ylim(x0, hi)
        ax.set_xlabel(f"kernel: {label}")
        ax.set_ylabel(f"airlink ({report.preset}): {label}")
        ax.set_title(f"{label}: airlink against the kernel", fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        name = f"{metric}.png"
        fig.savefig(out / name)
        plt.close(fig)
        files.append(name)
    for point, t in report.trajectories.items():
        fig, ax = plt.subplots(figsize=(7.0, 4.0), dpi=110)
        samples, t0s = t.get("kernel", ([], None))
        if samples:
            by_peer: dict[str, list[dict[str, Any]]] = {}
            for s in samples:
                by_peer.setdefault(s["peer"], []).append(s)
            for j, ss in enumerate(by_peer.values()):
                start = ss[0]["t"] if not t0s else min(t0s) / 1e9
                ax.step([s["t"] - start for s in ss], [s["cwnd"] for s in ss], where="post",
                        label=f"kernel flow {j}", linewidth=1.0)
        for stack in ("airlink-emu", "airlink-sim"):
            df = t.get(stack)
            if df is None or not len(df):
                continue
            for fl, f in df.groupby("flow"):
                ax.step(f["time_ns"] / 1e9, f["cwnd_bytes"] / 1448, where="post", label=f"{stack} flow {fl}", linewidth=1.0)
        ax.set_xlabel("time (s): airlink since its flow starts, the kernel since its first data segment")
        ax.set_ylabel("cwnd (segments)")
        ax.set_title(f"cwnd: {point}", fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        name = f"cwnd-{point}.png"
        fig.savefig(out / name)
        plt.close(fig)
        files.append(name)
    return files


def summary_table(report: Report) -> list[list[str]]:
    """Header and rows: per point, the three stacks' figures and the verdicts."""
    head = ["point", "stack", "goodput Mbit/s", "link losses", "retrans (pcap)", "retrans/loss", "spurious",
            "timeouts", "goodput", "retrans/loss", "timeouts", "note"]
    rows = [head]
    comp = comparisons(report)
    for name in report.points():
        for stack in STACKS:
            r = report.row(name, stack)
            if r is None:
                continue
            if r.status != "ok":
                rows.append([name, stack, r.status] + [""] * (len(head) - 4) + [r.reason])
                continue
            verdicts = {c["metric"]: f"{c['verdict']} ({c['detail']})" for c in comp
                        if c["point"] == name and c["stack"] == stack}
            if verdicts.get("all"):
                verdicts = {}
            rows.append([name, stack, f"{r.goodput_bps / 1e6:.3f}", _fmt(r.link_losses),
                         f"{_fmt(r.retransmissions)} ({_fmt(r.pcap_retransmissions)})", _fmt(r.retrans_per_loss),
                         _fmt(r.spurious_retransmissions), _fmt(r.timeouts),
                         verdicts.get("goodput", ""), verdicts.get("retransmissions per link loss", ""),
                         verdicts.get("timeouts per 100 s", ""), r.reason])
    return rows


def write_report(report: Report, out: Path) -> None:
    write_csv(out / "runs.csv", [row_dict(r) for r in report.rows], CSV_FIELDS)
    comp = comparisons(report)
    write_csv(out / "comparison.csv", comp, ("point", "stack", "metric", "kernel", "airlink", "verdict", "detail"))
    images = _plots(report, out)
    table = summary_table(report)
    counts = {v: sum(1 for c in comp if c["verdict"] == v) for v in ("pass", "FAIL", "n/a", "skipped")}
    intro = (f"airlink's TCP (preset `{report.preset}`, seed {report.seed}) against the kernel's "
             f"({' '.join(sorted({r.congestion for r in report.rows}))}) on the same emulated links. "
             f"Bounds: goodput within {GOODPUT_REL:.0%}, retransmissions per link loss within {RETRANS_FACTOR}x "
             f"(when both runs lost at least {MIN_LOSSES} packets), timeouts within {TIMEOUTS_PER_100S:g} per 100 s. "
             f"Checks: {counts['pass']} pass, {counts['FAIL']} fail, {counts['n/a']} n/a, {counts['skipped']} skipped. "
             "retrans = the stack's own count (nstat TcpRetransSegs; airlink's summary), in brackets the sender's pcap.")
    md = ["# airlink validate tcp", "", intro, "", "| " + " | ".join(table[0]) + " |",
          "|" + "---|" * len(table[0])]
    md += ["| " + " | ".join(c.replace("|", "/") for c in row) + " |" for row in table[1:]]
    md += [""] + [f"![{i}]({i})" for i in images]
    (out / "README.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    cells = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>\n" for row in table[1:])
    page = (f"<!doctype html><meta charset=utf-8><title>airlink validate tcp</title>"
            f"<style>td,th{{padding:2px 6px;border-bottom:1px solid #ddd;font:13px sans-serif}}</style>"
            f"<h1>airlink validate tcp</h1><p>{html.escape(intro)}</p><table><tr>"
            + "".join(f"<th>{html.escape(h)}</th>" for h in table[0]) + f"</tr>\n{cells}</table>"
            + "".join(f'<p><img src="{i}"></p>' for i in images))
    (out / "index.html").write_text(page, encoding="utf-8")


def format_text(report: Report) -> str:
    table = summary_table(report)
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in table)

