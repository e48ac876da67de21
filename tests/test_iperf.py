"""iperf3's JSON reports read into an emulation's results (airlink.iperf), on reports recorded
over loopback by tests/data/iperf3/record.sh (iperf3 3.12): no namespaces needed."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from airlink import iperf, plots
from airlink.results import TABLE_COLUMNS

DATA = Path(__file__).parent / "data" / "iperf3"


def read(case: str, sides: tuple[str, ...] = ("client", "server")) -> tuple[list[dict], list[dict], list[str]]:
    reports, problems = [], []
    for side in sides:
        path = DATA / f"{case}.{side}.json"
        if path.exists():
            found, why = iperf.parse(side, path.read_text(encoding="utf-8"))
            reports += found
            problems += why
    flows, rows = iperf.flows(reports, offset_s=0.5)
    return flows, rows, problems


def test_tcp_upload_the_server_measures_delivery_the_client_retransmissions() -> None:
    flows, rows, problems = read("tcp")
    assert problems == []
    [f] = flows
    assert (f["protocol"], f["sender"], f["receiver"], f["completed"]) == ("tcp", "client", "server", True)
    assert f["bytes_delivered"] == 5111808 and f["retransmissions"] == 0
    assert f["goodput_bps"] == pytest.approx(5111808 * 8 / f["duration_s"])
    assert f["measured_by"] == {"bytes_delivered": "server", "retransmissions": "client", "intervals": "server"}
    assert [r["flow"] for r in rows] == [0, 0]
    # Interval times are the intervals' ends on the run's clock (offset by the client's start).
    assert rows[0]["time_ns"] == pytest.approx(1.5e9, abs=1e6) and rows[0]["interval_s"] == pytest.approx(1, abs=1e-3)
    assert sum(r["bytes"] for r in rows) == 5111808
    # The sender's TCP state, merged into the receiver's rows interval by interval.
    assert all(r["cwnd_bytes"] > 0 and r["srtt_us"] > 0 and r["retransmissions"] == 0 for r in rows)
    assert set(rows[0]) == set(iperf.INTERVAL_COLUMNS)


def test_tcp_reverse_the_client_receives() -> None:
    flows, rows, problems = read("tcp-reverse")
    assert problems == []
    [f] = flows
    assert (f["sender"], f["receiver"]) == ("server", "client")
    assert f["measured_by"] == {"bytes_delivered": "client", "retransmissions": "server", "intervals": "client"}
    assert f["bytes_delivered"] == 5111808 and f["congestion"] == "bbr"
    assert all(r["cwnd_bytes"] for r in rows)  # from the server's report


def test_the_clients_report_alone_holds_both_ends_totals() -> None:
    flows, rows, problems = read("tcp-reverse", ("client",))
    [f] = flows
    assert f["bytes_delivered"] == 5111808 and f["retransmissions"] == 0
    assert f["measured_by"]["retransmissions"] == "server (in the client's report)"
    assert all(r["cwnd_bytes"] is None for r in rows)  # the receiver reports no TCP state


def test_udp_loss_jitter_and_datagrams_as_the_simulators_iperf_block() -> None:
    flows, rows, problems = read("udp")
    assert problems == []
    [f] = flows
    i = f["iperf"]
    assert set(i) == {"datagrams", "received", "lost", "loss_pct", "out_of_order", "jitter_ms", "throughput_bps"}
    assert i["received"] + i["lost"] == i["datagrams"] > 0 and i["jitter_ms"] >= 0
    assert f["bytes_delivered"] == i["received"] * 1200  # -l 1200
    assert 1.8e6 < f["goodput_bps"] < 2.2e6 and i["throughput_bps"] == f["goodput_bps"]
    assert all(r["received"] is not None and r["jitter_ms"] is not None and r["retransmissions"] is None for r in rows)


def test_parallel_streams_are_flows() -> None:
    flows, rows, problems = read("tcp-parallel")
    assert problems == []
    assert [f["id"] for f in flows] == [0, 1]
    assert len({f["client_port"] for f in flows}) == 2
    assert sorted({r["flow"] for r in rows}) == [0, 1]
    assert sum(f["bytes_delivered"] for f in flows) == 5242880  # the test's sum_received


def test_a_cut_off_report_keeps_its_intervals_and_says_so() -> None:
    flows, rows, problems = read("truncated")
    assert len(rows) == 1 and rows[0]["bytes"] > 0
    [f] = flows
    assert f["completed"] is False and f["goodput_bps"] is None
    assert any("cut off" in p for p in problems)


@pytest.mark.parametrize("text", ["", "iperf3: error - unable to connect to server", "{\"start\": [1, 2",
                                  "[" * 100_000, "\xff\x00 not json {}", '{"error": "interrupt - the client has terminated"}'])
def test_garbage_never_raises(text: str) -> None:
    reports, problems = iperf.parse("client", text)
    flows, rows = iperf.flows(reports)
    assert problems and flows == [] and rows == []
    if text.startswith("{\"error"):
        assert any("interrupt - the client has terminated" in p for p in problems)
    iperf.render_text(reports)


def test_airlink_adds_json_only_to_a_plain_iperf3_command(tmp_path: Path) -> None:
    inv = iperf.invocation("client", "iperf3 -c $AIRLINK_SERVER -R -t 3", tmp_path)
    assert inv.added and inv.json_in == "client.iperf3.json"
    # exec: a timeout's SIGTERM reaches iperf3 (which then writes its report), not only sh.
    assert inv.command == f"exec iperf3 -c $AIRLINK_SERVER -R -t 3 -J --logfile {tmp_path / 'client.iperf3.json'}"
    for asked, ran in (("iperf3 -c x --json", "exec iperf3 -c x --json"), ("exec iperf3 -c x -RJ", "exec iperf3 -c x -RJ"),
                       ("A=1 /usr/bin/iperf3 -c x -J -P 2", "A=1 /usr/bin/iperf3 -c x -J -P 2")):
        inv = iperf.invocation("client", asked, tmp_path)
        assert (inv.command, inv.json_in, inv.added) == (ran, "stdout", False)
    assert iperf.invocation("server", "ping -c 1 x", tmp_path) is None
    assert iperf.invocation("server", "iperf3 --version", tmp_path) is None
    for compound in ("iperf3 -s -1 & iperf3 -s -p 5202 -1 & wait", "iperf3 -c x > /dev/null"):
        inv = iperf.invocation("server", compound, tmp_path)
        assert inv.command == compound and inv.json_in is None and "compound" in inv.note
    inv = iperf.invocation("client", "iperf3 -c x --logfile mine.txt", tmp_path)
    assert inv.json_in is None and "logfile" in inv.note


def test_the_text_report_reads_like_iperf3s() -> None:
    reports, _ = iperf.parse("client", (DATA / "tcp-reverse.client.json").read_text(encoding="utf-8"))
    text = iperf.render_text(reports)
    assert "[ ID] Interval           Transfer     Bitrate" in text
    assert "  0.00-1.00   sec  2.50 MBytes  21.0 Mbits/sec" in text
    assert text.rstrip().endswith("iperf Done.")


def test_the_schema_columns_are_the_simulators(run_pipe) -> None:
    for name, columns in TABLE_COLUMNS.items():
        assert tuple(run_pipe.table(name).columns) == columns, name


@pytest.fixture(scope="module")
def run_pipe():
    import airlink

    return airlink.run("scenarios/transport/pipe.toml", seed=1)


def test_plot_draws_a_kernel_emulation_from_its_intervals(tmp_path: Path) -> None:
    """A kernel-TCP emulation: empty flows, iperf3's intervals, pipes (no SNR)."""
    flows, rows, _ = read("tcp-reverse")
    empty = lambda name: pd.DataFrame(columns=list(TABLE_COLUMNS[name]))  # noqa: E731
    links = pd.DataFrame({"time_ns": [0, 10**9], "link": ["downlink"] * 2, "queue_packets": [0, 3],
                          "snr_db": [float("nan")] * 2, "modulation_bits": [-1, -1]})
    tables = {"flows": empty("flows"), "intervals": pd.DataFrame(rows), "links": links}
    run = SimpleNamespace(summary={"flows": [], "iperf3": {"flows": flows}}, manifest={"endpoints": "kernel"},
                          path=None, table=lambda name: tables[name])
    said: list[str] = []
    plots.runs_png(tmp_path / "p.png", [("emu", run)], "t", notice=said.append)
    assert (tmp_path / "p.png").stat().st_size > 0
    assert said == ["panel state: no data: no SNR samples, the links have no channel model"]
    series = plots.interval_series(pd.DataFrame(rows))
    assert series["throughput_mbps"].between(19, 22).all() and series["cwnd_kb"].notna().all()
    json.dumps(flows)  # the summary entries are plain JSON
