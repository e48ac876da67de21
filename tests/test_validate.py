"""``airlink validate tcp``: the measurements it takes (pcap reading, ss parsing, scenarios) on
known inputs, and the quick matrix in emulation against the agreement bounds (root only)."""

from __future__ import annotations

import csv
import struct
from pathlib import Path

import pytest

from airlink import _core
from airlink import validate as v

# --- without root: the measurements on inputs with known answers ------------------------------


def write_pcap(path: Path, packets: list[tuple[float, int, int, int]], snap: int = 40) -> None:
    """A pcap (microsecond, little-endian) of IPv4/TCP packets (time s, source port, seq, payload
    bytes), cut to ``snap`` bytes as the emulator's snaplen cuts them."""
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 101)]
    for t, sport, seq, n in packets:
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 40 + n, 0, 0, 64, 6, 0, bytes([10, 77, 0, 1]), bytes([10, 77, 0, 2]))
        tcp = struct.pack("!HHIIBBHHH", sport, 40000, seq % (1 << 32), 0, 5 << 4, 0x18, 65535, 0, 0)
        pkt = (ip + tcp + b"x" * n)[:snap]
        sec = int(t)
        out.append(struct.pack("<IIII", sec, round((t - sec) * 1e6), len(pkt), 40 + n))
        out.append(pkt)
    path.write_bytes(b"".join(out))


def test_receiver_and_sender_views_of_a_known_trace(tmp_path: Path) -> None:
    base = 4_294_960_000  # the sequence numbers wrap inside the trace
    m = 1000
    # Receiver side: 0, 2 (1 lost), 3, 1 (its retransmission), 2 again (spurious), 4, then a
    # segment re-sent in two halves that had both arrived (two spurious), 5 after 10 s.
    recv = [(1.0, 0), (1.1, 2), (1.2, 3), (1.5, 1), (1.6, 2), (1.7, 4), (1.8, 4.5), (1.9, 3.0), (11.5, 5)]
    write_pcap(tmp_path / "client.pcap", [(t, 5201, base + int(i * m), m // 2 if i % 1 else m)
                                          for t, i in recv] + [(1.3, 9999, 7, 10)])
    flows = v.tcp_data_flows(tmp_path / "client.pcap")
    assert len(flows) == 2
    [segs] = v.largest_flows(flows, 1)
    assert [s.seq for s in segs][:4] == [0, 2000, 3000, 1000]
    view = v.receiver_view(segs, seconds=10.0)
    # In order by t0 + 10 s: segments 0-4 (5000 B); 5 comes later.
    assert view.goodput_bps == pytest.approx(5000 * 8 / 10.0)
    assert view.duplicates == 3
    assert view.segments == len(recv)
    # Sender side: 0 1 2 3 4, then 1 and 3 again, then 5: two retransmissions.
    sent = [(0.0, 0), (0.1, 1), (0.2, 2), (0.3, 3), (0.4, 4), (0.6, 1), (0.7, 3), (0.8, 5)]
    write_pcap(tmp_path / "server.pcap", [(t, 5201, base + i * m, m) for t, i in sent])
    [segs] = v.largest_flows(v.tcp_data_flows(tmp_path / "server.pcap"), 1)
    assert v.sender_retransmissions(segs) == 2


def test_interval_set_merges_and_reports_the_in_order_prefix() -> None:
    s = v.IntervalSet()
    s.add(1000, 2000)
    assert s.in_order() == 0 and not s.covers(0, 1000)
    s.add(3000, 4000)
    s.add(0, 1000)
    assert s.in_order() == 2000 and s.covers(1500, 2000) and not s.covers(1500, 3500)
    s.add(2000, 3000)
    assert s.ranges == [[0, 4000]] and s.in_order() == 4000


SS_SAMPLE = """@ 100.0
0      0      [::ffff:10.77.0.1]:5201 [::ffff:10.77.0.2]:52576
\t cubic wscale:10,10 rto:248 rtt:44.4/14.7 mss:1448 cwnd:10 bytes_acked:4 retrans:0/0
0      52128  [::ffff:10.77.0.1]:5201 [::ffff:10.77.0.2]:52588
\t cubic wscale:10,10 rto:244 rtt:41.8/0.47 mss:1448 cwnd:16 ssthresh:14 bytes_acked:147696 retrans:1/3
@ 100.1
"""


def test_ss_samples_are_parsed_per_socket(tmp_path: Path) -> None:
    (tmp_path / "ss.txt").write_text(SS_SAMPLE)
    rows = v.parse_ss(tmp_path / "ss.txt")
    assert [(r["peer"][-5:], r["cwnd"]) for r in rows] == [("52576", 10.0), ("52588", 16.0)]
    assert rows[1]["ssthresh"] == 14 and rows[1]["retrans_total"] == 3 and rows[1]["rto_ms"] == 244
    assert rows[0]["ssthresh"] != rows[0]["ssthresh"]  # NaN: still in slow start


@pytest.mark.parametrize("point", v.quick_matrix() + v.full_matrix(), ids=lambda p: p.name)
def test_every_matrix_scenario_is_valid_and_explicit(point: v.Point) -> None:
    text = v.scenario_text(point, "default", 7)
    resolved = _core.check_scenario(text, point.name)
    assert "[uplink.pipe]" in text  # never the uplink's default
    assert text.count("[[flow]]") == point.flows
    # The flows' congestion is the kernel's too: airlink's name of the kernel's control.
    assert f'congestion = "{v.AIRLINK_CONGESTION[point.congestion]}"' in text
    assert "[emulation]\ncongestion" not in text
    if not point.wipemu:
        assert point.queue_packets == max(2, round(point.queue_bdp * point.rate_bps * 2 * point.delay_ms / 1e3 / 12000))
        assert f"queue = {point.queue_packets}" in text
    assert resolved


def test_the_full_matrix_covers_the_issue_ranges() -> None:
    pts = v.full_matrix()
    pipes = [p for p in pts if not p.wipemu]
    assert {p.congestion for p in pts} == {"cubic", "reno"}
    assert min(p.loss for p in pipes) == 0 and max(p.loss for p in pipes) == 0.03
    assert min(p.delay_ms for p in pipes) == 5 and max(p.delay_ms for p in pipes) == 300
    assert min(p.rate_bps for p in pipes) == 1_000_000 and max(p.rate_bps for p in pipes) == 100_000_000
    assert min(p.queue_bdp for p in pipes) == 0.25 and max(p.queue_bdp for p in pipes) == 4
    assert {p.flows for p in pts} == {1, 2} and any(p.wipemu for p in pts)
    assert len({p.name for p in pts}) == len(pts)


def synthetic_row(stack: str, goodput: float, losses: float, retrans: float, timeouts: float) -> v.Row:
    r = v._row(v.Point("cubic", 10_000_000, 20, 0.01, 1.0, 1, 50.0), stack, "default", 1)
    r.goodput_bps, r.link_losses, r.retransmissions, r.timeouts = goodput, losses, retrans, timeouts
    r.pcap_retransmissions = r.spurious_retransmissions = r.mean_cwnd_segments = 1.0
    return r


@pytest.mark.parametrize("air,verdicts", [
    ((1.09e6, 100, 110, 1), ["pass", "pass", "pass"]),      # +9 %, 1.10x, +2 per 100 s
    ((0.89e6, 100, 125, 0), ["FAIL", "FAIL", "pass"]),      # -11 %, 1.25x, 0
    ((1.0e6, 100, 80, 3), ["pass", "FAIL", "FAIL"]),        # 0.8x (below 1/1.2), +4 per 100 s
    ((1.0e6, 5, 50, 0), ["pass", "n/a", "pass"]),           # too few losses for a ratio
])
def test_the_issue_bounds_are_applied_as_written(air: tuple, verdicts: list[str], tmp_path: Path) -> None:
    k = synthetic_row("kernel", 1.0e6, 100, 100, 0)
    a = synthetic_row("airlink-emu", *air)
    assert [c.verdict for c in v.compare(k, a)] == verdicts
    report = v.Report("default", 1, [k, a, synthetic_row("airlink-sim", *air)], {})
    v.write_report(report, tmp_path)
    rows = list(csv.DictReader((tmp_path / "comparison.csv").open()))
    assert [r["verdict"] for r in rows if r["stack"] == "airlink-emu"] == verdicts
    assert (tmp_path / "goodput_bps.png").exists() and "airlink-emu" in (tmp_path / "README.md").read_text()


def test_an_unknown_preset_is_refused(airlink_cli) -> None:
    r = airlink_cli("validate", "tcp", "--preset", "bogus")
    assert r.exit_code == 2 and "bogus" in r.output


# --- as root: the quick matrix in emulation --------------------------------------------------

WHY_NOT = v.emulation_unavailable()
emulated = pytest.mark.skipif(bool(WHY_NOT), reason=WHY_NOT or "")
QUICK = {p.name: p for p in v.quick_matrix()}


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> v.Report:
    out = tmp_path_factory.mktemp("validate")
    return v.run(v.quick_matrix(), out, preset=v.default_preset(), seed=1)


@emulated
def test_quick_report_has_every_point_and_stack(quick: v.Report, tmp_path_factory: pytest.TempPathFactory) -> None:
    assert [(r.point, r.stack) for r in quick.rows] == [(p, s) for p in QUICK for s in v.STACKS]
    for r in quick.rows:
        # A busy machine may not hold a point (reported with the reason); nothing fails.
        assert r.status == "ok" or (r.status == "skipped" and "cannot hold" in r.reason), (r.point, r.stack, r.reason)
    assert all(r.status == "ok" for r in quick.rows if r.stack == "airlink-sim")
    folder = next(tmp_path_factory.getbasetemp().glob("validate*"))
    rows = list(csv.DictReader((folder / "runs.csv").open()))
    assert len(rows) == 3 * len(QUICK)
    for metric, _, _ in v.PLOTS:
        assert (folder / f"{metric}.png").stat().st_size > 1000
    assert "<table>" in (folder / "index.html").read_text()
    assert list(folder.glob("cwnd-*.png"))


def skip_unless_held(*rows: v.Row) -> None:
    for r in rows:
        if r.status != "ok":
            pytest.skip(f"{r.stack}: {r.reason}")


@emulated
@pytest.mark.parametrize("name", QUICK)
def test_the_measurements_agree_with_each_stacks_own_counts(quick: v.Report, name: str) -> None:
    """Independent readings of the same run agree: the pcaps against nstat and airlink's own
    counters, the receiver pcap's goodput against airlink's delivered-bytes series."""
    k, a = quick.row(name, "kernel"), quick.row(name, "airlink-emu")
    skip_unless_held(k, a)
    # The sender's pcap sees every retransmitted segment the kernel counts (TLP probes of new
    # data are not retransmissions in either count).
    assert abs(k.pcap_retransmissions - k.retransmissions) <= max(2, 0.05 * k.retransmissions), k
    assert abs(a.pcap_retransmissions - a.retransmissions) <= max(2, 0.05 * a.retransmissions), a
    # The series samples every 100 ms: its start is up to one sample early.
    assert a.goodput_bps == pytest.approx(a.series_goodput_bps, rel=0.04)
    for r in (k, a):
        assert r.goodput_bps > 0.2 * QUICK[name].rate_bps
        # Random loss and queue overflow are the only drops; a spurious retransmission is
        # always a retransmission.
        assert r.spurious_retransmissions <= r.pcap_retransmissions
    if QUICK[name].loss:
        assert k.link_losses > 0 and a.link_losses > 0


# The agreement bounds on the quick points, with the tolerance each needs. The kernel's goodput
# repeats to 0.1 % on one-flow points (same seed, same losses) but two competing flows shared
# the link differently from run to run (3.34 and 3.53 Mbit/s at the two-flow point): 10 % there
# would test the kernel's noise, so that point gets 15 %. Timeouts are counted events: a 12 s
# run turns 2 per 100 s into 0.24 events, so one event more or less is allowed. Retransmissions
# per link loss keep 1.2x.
def goodput_tolerance(point: v.Point) -> float:
    return v.GOODPUT_REL if point.flows == 1 else 0.15


# Where airlink's TCP misses the bounds today with the `linux` preset, with the measured cause.
# None on the quick points since the preset counts delivered segments as Linux does and
# follows its CUBIC update (the full matrix's remaining misses are in the README's report).
XFAIL: dict[tuple[str, str], str] = {}


def bound_params() -> list:
    out = []
    for name in QUICK:
        for metric in ("goodput", "retransmissions per link loss", "timeouts"):
            reason = XFAIL.get((name, metric))
            marks = [pytest.mark.xfail(reason=reason, strict=False)] if reason else []
            out.append(pytest.param(name, metric, marks=marks, id=f"{name}-{metric.replace(' ', '_')}"))
    return out


@emulated
@pytest.mark.parametrize("name,metric", bound_params())
def test_airlink_tcp_within_the_bounds_of_the_kernels(quick: v.Report, name: str, metric: str) -> None:
    k = quick.row(name, "kernel")
    skip_unless_held(k)
    for stack in ("airlink-emu", "airlink-sim"):
        a = quick.row(name, stack)
        if a.status != "ok":
            continue  # airlink's real-time stack fell behind: the simulation still compares
        if metric == "goodput":
            assert a.goodput_bps == pytest.approx(k.goodput_bps, rel=goodput_tolerance(QUICK[name])), (stack, a.goodput_bps, k.goodput_bps)
        elif metric == "timeouts":
            assert abs(a.timeouts - k.timeouts) <= max(1, v.TIMEOUTS_PER_100S * k.seconds / 100), (stack, a.timeouts, k.timeouts)
        elif min(a.link_losses, k.link_losses) >= v.MIN_LOSSES:
            f = a.retrans_per_loss / k.retrans_per_loss
            assert 1 / v.RETRANS_FACTOR <= f <= v.RETRANS_FACTOR, (stack, a.retransmissions, a.link_losses,
                                                                   k.retransmissions, k.link_losses)
        else:
            # Too few losses for a ratio: no more retransmissions than losses plus a few.
            assert a.retransmissions <= a.link_losses + 3, (stack, a.retransmissions, a.link_losses)


@emulated
def test_a_congestion_control_the_kernel_lacks_is_skipped_naming_the_available_ones(tmp_path: Path,
                                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # The flow's congestion is the kernel's: airlink's afc has no kernel counterpart.
    monkeypatch.setitem(v.AIRLINK_CONGESTION, "nosuchcc", "afc")
    p = v.Point("nosuchcc", 1_000_000, 5, 0.0, 1.0, 1, 2.0)
    text = tmp_path / "scenario.toml"
    text.write_text(v.scenario_text(p, "default", 1))
    row, samples = v.run_kernel(p, tmp_path, text, 1, "default")
    assert row.status == "skipped" and samples == []
    assert '"afc"' in row.reason and "available here" in row.reason and "reno" in row.reason
