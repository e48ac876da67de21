"""`airlink run`, `airlink check` and `airlink.run`: results folders, determinism, overrides."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import airlink
from airlink.atomic import FolderBusyError, atomic_folder
from airlink.results import ResultsError
from conftest import ADAPTIVE, SHORT, VALIDATION, partial_folders

EXPECTED_COLUMNS = {
    "flows": {"time_ns", "flow", "cwnd_bytes", "ssthresh_bytes", "inflight_bytes", "delivered_bytes", "srtt_us", "rto_us",
              "rate_bps", "loss_event_rate", "retransmissions", "spurious_retransmissions", "timeouts",
              "fast_recoveries", "link_losses", "detected_losses", "sack_ok", "congestion_distance_segments", "backlog_segments",
              "pacing_rate_bps"},
    "intervals": {"time_ns", "flow", "interval_s", "bytes", "throughput_bps", "received", "lost", "out_of_order", "jitter_ms"},
    "rtt": {"time_ns", "flow", "rtt_us"},
    "links": {"time_ns", "link", "queue_packets", "queue_bytes", "snr_db", "predicted_snr_db", "modulation_bits", "subband"},
    "events": {"time_ns", "kind", "link", "flow", "bytes", "bit_errors"},
}


def test_run_writes_a_complete_results_folder(airlink_cli, tmp_path: Path) -> None:
    out = tmp_path / "r"
    result = airlink_cli("run", ADAPTIVE, "--seed", "4", *SHORT, "--out", out)
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [".airlink", "manifest.json", "summary.json", "flows.parquet", "intervals.parquet", "rtt.parquet", "links.parquet", "events.parquet"]
    )
    for table, columns in EXPECTED_COLUMNS.items():
        frame = pd.read_parquet(out / f"{table}.parquet")
        assert columns <= set(frame.columns), (table, list(frame.columns))
    flows = pd.read_parquet(out / "flows.parquet")
    assert len(flows) > 0 and flows["time_ns"].is_monotonic_increasing
    links = pd.read_parquet(out / "links.parquet")
    assert set(links["link"]) >= {"downlink", "uplink"}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["seed"] == 4 and manifest["completed"] is True
    assert manifest["airlink_version"] == airlink.__version__
    assert "[downlink.ofdm4g" in manifest["resolved_scenario"]
    assert manifest["command"][-2:] == ["--out", str(out)]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["flows"][0]["bytes_delivered"] == 300_000
    # The human summary names goodput, retransmissions, timeouts and the radio link's frames.
    for word in ("goodput", "retransmissions", "timeouts", "frame errors", "ARQ retransmissions"):
        assert word in result.stdout
    assert f"results: {out}" in result.stdout
    assert partial_folders(tmp_path) == []


def test_summary_is_byte_identical_for_a_seed_and_differs_for_another(airlink_cli, tmp_path: Path) -> None:
    for name, seed in (("a", "7"), ("b", "7"), ("c", "8")):
        assert airlink_cli("run", ADAPTIVE, "--seed", seed, *SHORT, "--out", tmp_path / name).exit_code == 0
    a, b, c = ((tmp_path / n / "summary.json").read_bytes() for n in "abc")
    assert a == b
    without_seed = [json.loads(x) for x in (a, c)]
    for s in without_seed:
        s.pop("seed")
    assert without_seed[0] != without_seed[1]
    # The time series are deterministic too.
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "a" / "rtt.parquet"), pd.read_parquet(tmp_path / "b" / "rtt.parquet"))


def test_json_prints_the_summary_and_where_the_results_are(airlink_cli, tmp_path: Path) -> None:
    result = airlink_cli("run", ADAPTIVE, *SHORT, "--out", tmp_path / "r", "--json")
    assert result.exit_code == 0
    printed = json.loads(result.stdout)
    assert printed.pop("results") == str(tmp_path / "r")
    assert printed == json.loads((tmp_path / "r" / "summary.json").read_text())


LOST_LINK = """
name = "lost"
stop = "5 s"
[downlink.pipe]
rate = "1 Mbit/s"
loss = 1
[uplink.pipe]
rate = "1 Mbit/s"
[[flow]]
bytes = "100 kB"
[[flow]]
protocol = "udp"
rate = "100 kbit/s"
[[flow]]
protocol = "udp"
rate = "100 kbit/s"
start = "1 s"
"""


def test_completed_is_per_flow_and_the_text_says_what_the_json_says(airlink_cli, tmp_path: Path) -> None:
    lost = tmp_path / "lost.toml"
    lost.write_text(LOST_LINK)
    as_json = json.loads(airlink_cli("run", lost, "--out", tmp_path / "a", "--json").stdout)
    # Nothing arrives: neither the sized TCP flow nor the UDP flows (no size: until the stop
    # time) completed anything.
    assert [f["completed"] for f in as_json["flows"]] == [False, False, False]
    assert as_json["completed"] is False
    text = airlink_cli("run", lost, "--out", tmp_path / "b").stdout
    flow_lines = [line for line in text.splitlines() if line.startswith("  flow ")]
    assert len(flow_lines) == 3 and all(": NOT completed, " in line for line in flow_lines), text
    # UDP flows are named by what they send, not by a congestion control they lack.
    assert flow_lines[1].startswith("  flow 1 udp cbr 100 kbit/s: "), text
    # A link that delivers: every flow completed, in both.
    ok = json.loads(airlink_cli("run", lost, "--set", "downlink.pipe.loss=0", "--out", tmp_path / "c", "--json").stdout)
    assert [f["completed"] for f in ok["flows"]] == [True, True, True] and ok["completed"] is True
    text = airlink_cli("run", lost, "--set", "downlink.pipe.loss=0", "--out", tmp_path / "d").stdout
    assert text.count(": completed, ") == 3 and "every flow completed" in text, text


def test_the_retransmission_share_keeps_its_digits(airlink_cli, tmp_path: Path) -> None:
    rare = tmp_path / "rare.toml"  # one loss in 500 packets: a share below 1 %
    rare.write_text(LOST_LINK.replace("loss = 1", "loss = 0.002").replace('stop = "5 s"', 'stop = "60 s"')
                    .replace('bytes = "100 kB"', 'bytes = "4 MB"'))
    result = airlink_cli("run", rare, "--out", tmp_path / "r", "--json")
    flow = json.loads(result.stdout)["flows"][0]
    assert 0 < flow["retransmissions"] and 100 * flow["retransmissions"] < flow["data_segments_sent"]
    share = 100 * flow["retransmissions"] / flow["data_segments_sent"]
    text = airlink_cli("run", rare, "--out", tmp_path / "t").stdout
    expected = (f"retransmitted {flow['retransmissions']:,} of {flow['data_segments_sent']:,} data segments "
                f"({share:.3g} %, spurious {flow['spurious_retransmissions']:,})")
    assert expected in text, text


def test_set_changes_the_scenario_and_is_recorded(airlink_cli, tmp_path: Path) -> None:
    out = tmp_path / "r"
    result = airlink_cli(
        "run", ADAPTIVE, *SHORT, "--set", "downlink.ofdm4g.arq_max_retransmissions=3",
        "--set", "downlink.ofdm4g.modulation=bpsk", "--out", out,
    )
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["overrides"] == ["flow.0.bytes=300 kB", "downlink.ofdm4g.arq_max_retransmissions=3", "downlink.ofdm4g.modulation=bpsk"]
    assert "arq_max_retransmissions = 3" in manifest["resolved_scenario"]
    assert 'modulation = "bpsk"' in manifest["resolved_scenario"]
    summary = json.loads((out / "summary.json").read_text())
    downlink = next(link for link in summary["links"] if link["name"] == "downlink")
    assert set(downlink["time_in_modulation_s"]) == {"bpsk"}


def test_default_folder_is_named_after_scenario_and_seed(airlink_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    scenario = Path(__file__).resolve().parents[1] / VALIDATION
    assert airlink_cli("run", scenario, "--seed", "5", "--set", "flow.0.bytes=50 kB").exit_code == 0
    assert (tmp_path / "results" / "wipemu-validation-seed5" / "summary.json").is_file()


def test_existing_folder_is_refused_unless_forced(airlink_cli, tmp_path: Path) -> None:
    out = tmp_path / "r"
    assert airlink_cli("run", VALIDATION, "--set", "flow.0.bytes=50 kB", "--out", out).exit_code == 0
    first = (out / "summary.json").read_bytes()
    refused = airlink_cli("run", VALIDATION, "--set", "flow.0.bytes=60 kB", "--out", out)
    assert refused.exit_code == 1
    assert "exists" in refused.stderr and "--force" in refused.stderr
    assert (out / "summary.json").read_bytes() == first
    forced = airlink_cli("run", VALIDATION, "--set", "flow.0.bytes=60 kB", "--out", out, "--force")
    assert forced.exit_code == 0
    assert json.loads((out / "summary.json").read_text())["flows"][0]["bytes_delivered"] == 60_000
    assert [p.name for p in tmp_path.iterdir()] == ["r"]


def test_parquet_is_written_one_row_group_per_chunk(tmp_path: Path) -> None:
    result = airlink.run(ADAPTIVE, overrides=["flow.0.bytes=300 kB"], out=tmp_path / "r", chunk="1 s")
    duration_s = result.summary["sim_time_s"]
    row_groups = pq.ParquetFile(tmp_path / "r" / "flows.parquet").num_row_groups
    assert row_groups >= int(duration_s) - 1 >= 2
    # The read-back frames are the files' contents.
    assert len(result.flows) == pq.ParquetFile(tmp_path / "r" / "flows.parquet").metadata.num_rows


def test_in_memory_run_equals_the_folder_run(tmp_path: Path) -> None:
    memory = airlink.run(ADAPTIVE, seed=3, overrides=["flow.0.bytes=300 kB"])
    folder = airlink.run(ADAPTIVE, seed=3, overrides=["flow.0.bytes=300 kB"], out=tmp_path / "r")
    assert memory.path is None and folder.path == tmp_path / "r"
    assert memory.summary_json == folder.summary_json
    for table in ("flows", "rtt", "links", "events"):
        pd.testing.assert_frame_equal(getattr(memory, table), getattr(folder, table), check_dtype=False)


def test_check_prints_the_resolved_scenario(airlink_cli) -> None:
    result = airlink_cli("check", VALIDATION, "--set", "downlink.ofdm4g.arq_max_retransmissions=7")
    assert result.exit_code == 0
    assert "arq_max_retransmissions = 7" in result.stdout
    assert "bins_per_second = 1500" in result.stdout  # a default, filled in
    as_json = json.loads(airlink_cli("check", VALIDATION, "--json").stdout)
    assert as_json["valid"] and as_json["resolved"]["downlink"]["ofdm4g"]["modulation"] == "4qam"


def test_version(airlink_cli) -> None:
    result = airlink_cli("--version")
    assert result.exit_code == 0 and result.stdout.strip() == f"airlink {airlink.__version__}"


def test_every_protocol_runs_side_by_side(tmp_path: Path) -> None:
    """TCP, DCCP CCID-3 (VBR), DCCP CCID-2 and UDP CBR share a bottleneck; UDP and DCCP report iperf's counters."""
    result = airlink.run(Path(__file__).parent.parent / "scenarios" / "transport" / "mixed.toml", out=tmp_path / "m",
                         overrides=["stop=40 s"])
    flows = result.summary["flows"]
    assert [(f["protocol"], f["congestion"]) for f in flows] == [("tcp", "cubic"), ("dccp", "ccid3"), ("dccp", "ccid2"), ("udp", "none")]
    assert flows[0]["iperf"] is None
    for f in flows[1:]:
        iperf = f["iperf"]
        assert iperf["received"] + iperf["lost"] == iperf["datagrams"] > 0
        assert f["retransmissions"] == 0
    # The 1 Mbit/s CBR stream gets through almost whole.
    assert 0.9e6 < flows[3]["goodput_bps"] < 1.01e6
    intervals = result.intervals
    assert set(intervals["flow"]) == {1, 2, 3}
    assert result.flows.query("flow == 1")["rate_bps"].dropna().gt(0).any()


def test_a_second_run_into_the_same_folder_fails_at_once(airlink_cli, tmp_path: Path) -> None:
    out = tmp_path / "r"
    with atomic_folder(out):
        # Another process (or thread) writing the same folder: refused before any work.
        with pytest.raises(FolderBusyError, match=f"{out} is being written by another run \\(process {os.getpid()}\\)"):
            with atomic_folder(out):
                pass
        result = airlink_cli("run", VALIDATION, *SHORT, "--out", out)
        assert result.exit_code == 1 and "is being written by another run" in result.stderr
    assert out.is_dir() and sorted(p.name for p in tmp_path.iterdir()) == ["r"]  # no lock file left
    with atomic_folder(tmp_path / "again"):  # the name is free again
        pass


def _copy_run(tmp_path: Path, name: str) -> Path:
    import shutil

    source = tmp_path / "good"
    if not source.exists():
        airlink.run(VALIDATION, overrides=["flow.0.bytes=50 kB"], out=source)
    shutil.copytree(source, tmp_path / name)
    return tmp_path / name


def _edit_json(path: Path, **changes: object) -> None:
    value = json.loads(path.read_text())
    value.update(changes)
    path.write_text(json.dumps(value))


def test_read_results_names_the_damaged_or_foreign_file(tmp_path: Path) -> None:
    assert airlink.read_results(_copy_run(tmp_path, "ok")).completed is True
    foreign = _copy_run(tmp_path, "foreign")
    _edit_json(foreign / "manifest.json", results_format=None, airlink_version="0.0.1")
    with pytest.raises(ResultsError, match=r"foreign/manifest\.json: results format null \(written by airlink 0\.0\.1\)"):
        airlink.read_results(foreign)
    nan = _copy_run(tmp_path, "nan")
    (nan / "summary.json").write_text((nan / "summary.json").read_text().replace('"completed": true', '"completed": NaN', 1))
    with pytest.raises(ResultsError, match=r"nan/summary\.json: damaged JSON: NaN is not a JSON number"):
        airlink.read_results(nan)
    text = _copy_run(tmp_path, "text")
    _edit_json(text / "summary.json", completed="yes")
    with pytest.raises(ResultsError, match=r'text/summary\.json: completed is "yes": expected true or false'):
        airlink.read_results(text)
    cut = _copy_run(tmp_path, "cut")
    (cut / "summary.json").write_text((cut / "summary.json").read_text()[:200])
    with pytest.raises(ResultsError, match=r"cut/summary\.json: damaged JSON"):
        airlink.read_results(cut)
    gone = _copy_run(tmp_path, "gone")
    (gone / "rtt.parquet").write_bytes(b"PAR1 cut")
    with pytest.raises(ResultsError, match=r"gone/rtt\.parquet: cannot read the rtt table"):
        _ = airlink.read_results(gone).rtt
