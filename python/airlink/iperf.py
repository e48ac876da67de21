"""iperf3's JSON reports, read into an emulation's results: its ``intervals`` table and a
summary per flow.

iperf3 writes JSON only instead of its text (``-J``), at the end of a test (3.17 adds
``--json-stream``, a line per event, but this machine's Debian iperf3 is older). So when a
command runs iperf3 without ``-J``, airlink adds ``-J --logfile SIDE.iperf3.json`` and, after the
run, writes iperf3's usual text report, rendered from that JSON, to ``SIDE.stdout``; a command
that already asks for ``-J`` (or ``--json-stream``) runs unchanged and its stdout is read.
Only a plain ``iperf3 ...`` command (optionally after ``exec`` or variable assignments) is
changed: a pipeline or compound command is left alone and, unless it prints JSON, not parsed.

Both ends' reports are used when there are two: each end measures what it sees (the receiver
the bytes delivered and UDP's loss and jitter, the sender TCP's retransmissions, cwnd and RTT),
and the client also holds the server's totals (exchanged at the end of the test). A report cut
off by a killed iperf3 still gives its interval reports; nothing here raises on bad input:
what could not be read becomes a warning.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Options of iperf3 that take no value and may be grouped (``-RJ``).
_FLAGS = set("sD1uRN46ZVJvhd")
_FLAG_CHARS = "".join(sorted(_FLAGS))
_JSON = re.compile(rf"^-[{_FLAG_CHARS}]*J[{_FLAG_CHARS}]*$")

#: The intervals table's columns: the simulator's (crates/airlink-net/src/metrics.rs) and what
#: only a kernel's TCP sender reports (null where the end that measured them did not).
INTERVAL_COLUMNS = ("time_ns", "flow", "interval_s", "bytes", "throughput_bps", "received", "lost", "out_of_order",
                    "jitter_ms", "retransmissions", "cwnd_bytes", "srtt_us")


@dataclass
class Invocation:
    """How one side's command runs iperf3 and where its JSON is."""

    side: str
    command: str  # what runs (the user's, or with -J --logfile added)
    json_in: str | None = None  # "stdout" or the log file's name in the results folder
    added: bool = False  # airlink added -J --logfile (so it renders the text report)
    note: str | None = None  # why nothing will be parsed although iperf3 runs


def _words(command: str) -> list[str] | None:
    """The words of a simple command, or None for a pipeline, list, redirection or bad quoting."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:
        return None
    return None if any(w and set(w) <= set("();<>|&") for w in words) else words


def _program(words: list[str]) -> list[str]:
    """The words from the program name on (after ``exec`` and ``VAR=value`` assignments)."""
    i = 0
    while i < len(words) and (words[i] == "exec" or re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[i])):
        i += 1
    return words[i:]


def invocation(side: str, command: str, folder: Path) -> Invocation | None:
    """How ``command`` runs iperf3 (None when it does not), adding ``-J --logfile`` when it
    prints text, so that its report can be read."""
    if "iperf3" not in command:
        return None
    words = _words(command)
    if words is None:
        if re.search(r"(^|\s)(-J|--json)(\s|$)", command):
            return Invocation(side, command, json_in="stdout")
        return Invocation(side, command, note=f"the {side} command runs iperf3 inside a pipeline or compound command: "
                                              f"airlink adds no -J to it and parses no report")
    args = _program(words)
    if not args or Path(args[0]).name != "iperf3":
        return None
    if any(a in ("-v", "--version", "-h", "--help") for a in args[1:]):
        return None
    logfile = any(a == "--logfile" or a.startswith("--logfile=") for a in args)
    asks_json = any(a in ("--json", "--json-stream") or _JSON.match(a) for a in args[1:])
    if logfile:
        return Invocation(side, command, note=f"the {side}'s iperf3 writes to a --logfile of its own: airlink parses no report")
    # exec: iperf3 itself gets the SIGTERM of a timeout (sh may not pass it on), and writes its report
    run = command if words[0] != "iperf3" and Path(words[0]).name != "iperf3" else f"exec {command}"
    if asks_json:
        return Invocation(side, run, json_in="stdout")
    name = f"{side}.iperf3.json"
    return Invocation(side, f"{run} -J --logfile {shlex.quote(str(folder / name))}", json_in=name, added=True)


# ---------------------------------------------------------------------------------------------
# Reading reports


@dataclass
class Report:
    """One test as one end reported it."""

    side: str
    doc: dict[str, Any]
    truncated: bool = False

    @property
    def start(self) -> dict[str, Any]:
        return _dict(self.doc.get("start"))

    @property
    def test(self) -> dict[str, Any]:
        return _dict(self.start.get("test_start"))

    @property
    def end(self) -> dict[str, Any]:
        return _dict(self.doc.get("end"))

    @property
    def error(self) -> str | None:
        e = self.doc.get("error")
        return str(e) if e else None

    def ports(self) -> dict[int, int]:
        """Socket -> the client's port of the stream (the same at both ends)."""
        out = {}
        for c in _list(self.start.get("connected")):
            c = _dict(c)
            port = c.get("local_port") if self.side == "client" else c.get("remote_port")
            if isinstance(c.get("socket"), int) and isinstance(port, int):
                out[c["socket"]] = port
        return out


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _salvage(text: str) -> dict[str, Any] | None:
    """What a report cut off part-way holds: its start and every complete interval."""
    doc: dict[str, Any] = {}
    decoder = json.JSONDecoder()
    m = re.search(r'"start"\s*:\s*', text)
    if m:
        try:
            doc["start"] = decoder.raw_decode(text, m.end())[0]
        except (ValueError, RecursionError):
            pass
    m = re.search(r'"intervals"\s*:\s*\[', text)
    if m:
        intervals, at = [], m.end()
        while True:
            at = len(text) - len(text[at:].lstrip(" \t\r\n,"))
            try:
                item, at = decoder.raw_decode(text, at)
            except (ValueError, RecursionError):
                break
            intervals.append(item)
        doc["intervals"] = intervals
    return doc or None


def _from_stream(events: list[dict[str, Any]]) -> dict[str, Any]:
    """A ``--json-stream`` report (a line per event) as the document ``-J`` writes."""
    doc: dict[str, Any] = {"intervals": []}
    for e in events:
        kind, data = e.get("event"), e.get("data")
        if kind == "interval":
            doc["intervals"].append(data)
        elif kind in ("start", "end"):
            doc[kind] = data
        elif kind == "error":
            doc["error"] = data
    return doc


def parse(side: str, text: str) -> tuple[list[Report], list[str]]:
    """The tests in one end's output (one JSON document per test, as ``iperf3 -s`` writes them
    one after another, or a ``--json-stream``) and what could not be read."""
    decoder = json.JSONDecoder()
    docs: list[dict[str, Any]] = []
    problems: list[str] = []
    truncated = False
    at = 0
    while True:
        at = len(text) - len(text[at:].lstrip())
        if at >= len(text):
            break
        try:
            item, at = decoder.raw_decode(text, at)
        except (ValueError, RecursionError):
            partial = _salvage(text[at:])
            if partial is not None:
                docs.append(partial)
                truncated = True
                problems.append(f"the {side}'s iperf3 report is cut off (was iperf3 killed?): "
                                f"{len(_list(partial.get('intervals')))} interval reports and no totals were read")
            else:
                problems.append(f"the {side}'s iperf3 output is not JSON from byte {at}")
            break
        if isinstance(item, dict):
            docs.append(item)
    if docs and all("event" in d for d in docs):
        docs = [_from_stream(docs)]
    reports = [Report(side, d) for d in docs if isinstance(d.get("start"), dict) or d.get("intervals")]
    problems += [f"the {side}'s iperf3 reported an error: {d['error']}" for d in docs
                 if d.get("error") and not (isinstance(d.get("start"), dict) or d.get("intervals"))]
    if truncated and reports:
        reports[-1].truncated = True
    for r in reports:
        if r.error:
            problems.append(f"the {side}'s iperf3 reported an error: {r.error}")
    if not reports and not problems:
        problems.append(f"the {side}'s iperf3 wrote no report")
    return reports, problems


# ---------------------------------------------------------------------------------------------
# Flows


@dataclass
class _Stream:
    port: int | None
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # side -> interval reports
    totals: dict[str, dict[str, Any]] = field(default_factory=dict)  # side -> its end.streams item
    sender: str | None = None  # the side that sent the data


def _streams(reports: list[Report]) -> list[_Stream]:
    """The streams of one test, matched across ends by the client's port."""
    streams: dict[Any, _Stream] = {}
    order: list[Any] = []

    def get(key: Any, port: int | None) -> _Stream:
        if key not in streams:
            streams[key] = _Stream(port)
            order.append(key)
        return streams[key]

    for r in sorted(reports, key=lambda r: r.side != "client"):  # the client's order of streams
        ports = r.ports()
        key_of = lambda sock: ports.get(sock, ("socket", r.side, sock))  # noqa: E731
        for sock in ports:
            get(key_of(sock), ports[sock])
        for interval in _list(r.doc.get("intervals")):
            for s in _list(_dict(interval).get("streams")):
                s = _dict(s)
                if s.get("omitted"):
                    continue  # iperf3 -O: the start it was told to leave out
                st = get(key_of(s.get("socket")), ports.get(s.get("socket")))
                st.rows.setdefault(r.side, []).append(s)
                if isinstance(s.get("sender"), bool):
                    st.sender = r.side if s["sender"] else ("server" if r.side == "client" else "client")
        for s in _list(r.end.get("streams")):
            s = _dict(s)
            inner = _dict(s.get("udp")) or _dict(s.get("sender")) or _dict(s.get("receiver"))
            st = get(key_of(inner.get("socket")), ports.get(inner.get("socket")))
            st.totals[r.side] = s
            if st.sender is None and isinstance(inner.get("sender"), bool):
                st.sender = r.side if inner["sender"] else ("server" if r.side == "client" else "client")
    return [streams[k] for k in order]


def _tests(reports: list[Report]) -> list[list[Report]]:
    """Reports grouped by test: the client's and server's of the same test share a cookie."""
    groups: dict[Any, list[Report]] = {}
    for i, r in enumerate(reports):
        cookie = r.start.get("cookie") or ("no cookie", i)
        groups.setdefault(cookie, []).append(r)
    return list(groups.values())


def _other(side: str) -> str:
    return "server" if side == "client" else "client"


def flows(reports: list[Report], *, offset_s: float = 0.0) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Per flow (an iperf3 stream), the summary entry and the interval rows.

    ``offset_s`` is when the test started on the run's clock (the client command's start), so
    interval times line up with the links table."""
    summaries: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    for test in _tests(reports):
        by_side = {r.side: r for r in test}
        client = by_side.get("client")
        some = client or test[0]
        protocol = str(some.test.get("protocol") or "?").lower()
        for st in _streams(test):
            flow = len(summaries)
            sender = st.sender or ("server" if some.test.get("reverse") else "client")
            receiver = _other(sender)
            summary, measured = _summary(flow, protocol, st, sender, by_side)
            # Goodput over time as the receiver saw it; the sender's rows only without it.
            side = receiver if st.rows.get(receiver) else sender
            own = st.rows.get(side, [])
            sent = st.rows.get(sender, []) if side != sender else []
            for i, s in enumerate(own):
                tx = _dict(sent[i]) if i < len(sent) else {}
                sender_row = s if side == sender else tx
                end = _num(s.get("end")) or 0.0
                packets, lost = _num(s.get("packets")), _num(s.get("lost_packets"))
                udp_rx = protocol == "udp" and side == receiver
                rows.append({
                    "time_ns": int(round((offset_s + end) * 1e9)),
                    "flow": flow,
                    "interval_s": _num(s.get("seconds")),
                    "bytes": int(_num(s.get("bytes")) or 0),
                    "throughput_bps": _num(s.get("bits_per_second")),
                    "received": int(max(packets - (lost or 0), 0)) if udp_rx and packets is not None else None,
                    "lost": int(lost) if udp_rx and lost is not None else None,
                    "out_of_order": None,  # iperf3 counts it for the whole test only
                    "jitter_ms": _num(s.get("jitter_ms")) if udp_rx else None,
                    "retransmissions": _int(sender_row.get("retransmits")),
                    "cwnd_bytes": _num(sender_row.get("snd_cwnd")),
                    "srtt_us": _num(sender_row.get("rtt")),
                })
            if own:
                measured["intervals"] = side
            summary["measured_by"] = measured
            summary["start_s"] = offset_s
            summary["end_s"] = offset_s + summary["duration_s"] if summary["duration_s"] is not None else None
            summaries.append(summary)
    return summaries, rows


def _int(v: Any) -> int | None:
    n = _num(v)
    return None if n is None else int(n)


def _summary(flow: int, protocol: str, st: _Stream, sender: str, by_side: dict[str, Report]
             ) -> tuple[dict[str, Any], dict[str, str]]:
    """The simulator's per-flow names where iperf3 measures the same thing; ``measured`` says
    which end's report each came from."""
    receiver = _other(sender)
    measured: dict[str, str] = {}

    def total(part: str, measuring: str) -> dict[str, Any]:
        """``part`` (sender, receiver, udp) of the stream's totals as ``measuring`` counted them:
        from its own report, else from the client's (which holds the server's numbers too)."""
        for side in (measuring, "client"):
            t = _dict(st.totals.get(side, {}).get(part))
            if t:
                return {**t, "_from": side}
        return {}

    def by(source: str, measuring: str) -> str:
        return measuring if source == measuring else f"{measuring} (in the client's report)"

    report = by_side.get("client") or next(iter(by_side.values()))
    congestion = "none"
    if protocol == "tcp":
        congestion = report.end.get("sender_tcp_congestion") or _dict(
            by_side[sender].end if sender in by_side else {}).get("sender_tcp_congestion") or "?"
    out: dict[str, Any] = {
        "id": flow, "protocol": protocol, "congestion": congestion, "source": "iperf3",
        "sender": sender, "receiver": receiver, "client_port": st.port,
        "bytes_requested": _int(report.test.get("bytes")) or None,
        "bytes_sent": None, "bytes_delivered": None, "completed": False, "duration_s": None,
        "goodput_bps": None, "retransmissions": None, "iperf": None,
    }
    errors = [r.error for r in by_side.values() if r.error]
    finished = all(r.end for r in by_side.values()) and not errors
    if protocol == "udp":
        # Loss and jitter are the receiver's (the client's report has them from the server);
        # its byte count is not kept by every end, so delivered = datagrams received x size.
        u = total("udp", receiver)
        if u:
            packets, lost = _int(u.get("packets")) or 0, _int(u.get("lost_packets")) or 0
            out["iperf"] = {"datagrams": packets, "received": max(packets - lost, 0), "lost": lost,
                            "loss_pct": _num(u.get("lost_percent")), "out_of_order": _int(u.get("out_of_order")) or 0,
                            "jitter_ms": _num(u.get("jitter_ms")), "throughput_bps": None}
            measured["iperf"] = by(u["_from"], receiver)
            size = _int(report.test.get("blksize"))
            if size:
                out["bytes_delivered"] = out["iperf"]["received"] * size
                out["duration_s"] = _num(u.get("seconds"))
                measured["bytes_delivered"] = f"{measured['iperf']}: datagrams received x {size} B"
        sent = st.rows.get(sender) or []
        if sent:
            out["bytes_sent"] = int(sum(_num(r.get("bytes")) or 0 for r in sent))
    else:
        tx, rx = total("sender", sender), total("receiver", receiver)
        if tx:
            out["bytes_sent"] = _int(tx.get("bytes"))
            out["retransmissions"] = _int(tx.get("retransmits"))
            if out["retransmissions"] is not None:
                measured["retransmissions"] = by(tx["_from"], sender)
        if rx:
            out["bytes_delivered"] = _int(rx.get("bytes"))
            out["duration_s"] = _num(rx.get("seconds"))
            measured["bytes_delivered"] = by(rx["_from"], receiver)
    if out["bytes_delivered"] is None:
        # No totals (a report cut off): the receiver's interval reports, summed.
        got = st.rows.get(receiver) or []
        if got:
            out["bytes_delivered"] = int(sum(_num(r.get("bytes")) or 0 for r in got))
            out["duration_s"] = _num(got[-1].get("end"))
            measured["bytes_delivered"] = f"{receiver} (its interval reports, no totals)"
    if out["bytes_delivered"] is not None and out["duration_s"]:
        out["goodput_bps"] = out["bytes_delivered"] * 8 / out["duration_s"]
        if out["iperf"] is not None:  # the receiver's rate (its report's own is 0 at some ends)
            out["iperf"]["throughput_bps"] = out["goodput_bps"]
    out["completed"] = finished and out["bytes_delivered"] is not None
    if errors:
        out["error"] = "; ".join(errors)
    return out, measured


# ---------------------------------------------------------------------------------------------
# The text report iperf3 would have printed


def _units(value: float, base: float, names: tuple[str, ...]) -> str:
    """iperf3's adaptive units: three significant digits."""
    i = 0
    while value >= base and i < len(names) - 1:
        value /= base
        i += 1
    digits = "%4.2f" if value < 9.995 else "%4.1f" if value < 99.95 else "%4.0f"
    return f"{digits % value} {names[i]}"


def _bytes(v: float) -> str:
    return _units(v, 1024, ("Bytes", "KBytes", "MBytes", "GBytes", "TBytes"))


def _bits(v: float) -> str:
    return _units(v, 1000, ("bits/sec", "Kbits/sec", "Mbits/sec", "Gbits/sec", "Tbits/sec"))


def render_text(reports: list[Report]) -> str:
    """A text report in iperf3's layout from its JSON (what ``SIDE.stdout`` gets when airlink
    added ``-J``): interval lines, the totals of both ends, the error if any."""
    lines: list[str] = []
    for r in reports:
        for c in _list(r.start.get("connected")):
            c = _dict(c)
            lines.append(f"[{c.get('socket', '?'):>3}] local {c.get('local_host')} port {c.get('local_port')} "
                         f"connected to {c.get('remote_host')} port {c.get('remote_port')}")
        udp = str(r.test.get("protocol", "")).upper() == "UDP"
        lines.append("[ ID] Interval           Transfer     Bitrate")
        for interval in _list(r.doc.get("intervals")):
            for s in _list(_dict(interval).get("streams")):
                s = _dict(s)
                extra = ""
                if s.get("sender") and "retransmits" in s:
                    extra = f"  {s.get('retransmits', 0):>3}   {_bytes(_num(s.get('snd_cwnd')) or 0)}"
                elif udp and not s.get("sender"):
                    extra = (f"  {_num(s.get('jitter_ms')) or 0:.3f} ms  {s.get('lost_packets', 0)}/{s.get('packets', 0)} "
                             f"({_num(s.get('lost_percent')) or 0:.2g}%)")
                elif udp:
                    extra = f"  {s.get('packets', 0)}"
                lines.append(f"[{s.get('socket', '?'):>3}] {_num(s.get('start')) or 0:6.2f}-{_num(s.get('end')) or 0:<6.2f} sec  "
                             f"{_bytes(_num(s.get('bytes')) or 0)}  {_bits(_num(s.get('bits_per_second')) or 0)}{extra}")
        if r.end:
            lines.append("- - - - - - - - - - - - - - - - - - - - - - - - -")
            lines.append("[ ID] Interval           Transfer     Bitrate")
            for s in _list(r.end.get("streams")):
                s = _dict(s)
                for part in ("sender", "receiver", "udp"):
                    t = _dict(s.get(part))
                    if not t:
                        continue
                    extra = f"  {t['retransmits']:>3}" if "retransmits" in t else ""
                    if part == "udp":
                        extra = (f"  {_num(t.get('jitter_ms')) or 0:.3f} ms  {t.get('lost_packets', 0)}/{t.get('packets', 0)} "
                                 f"({_num(t.get('lost_percent')) or 0:.2g}%)")
                    lines.append(f"[{t.get('socket', '?'):>3}] {_num(t.get('start')) or 0:6.2f}-{_num(t.get('end')) or 0:<6.2f} sec  "
                                 f"{_bytes(_num(t.get('bytes')) or 0)}  {_bits(_num(t.get('bits_per_second')) or 0)}{extra}"
                                 f"  {part if part != 'udp' else 'receiver'}")
        if r.error:
            pass  # iperf3 prints it to stderr, and so does the emulation
        elif r.end:
            lines.append("")
            lines.append("iperf Done.")
        else:
            lines.append("(the report ends here: iperf3 did not finish)")
    return "\n".join(lines) + "\n" if lines else ""
