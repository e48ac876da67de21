"""Uploads in the shorthand, the kernel-like default TCP, and the warnings about choices that
cannot matter (issue 24, items 4 and 6). Simulation only; the emulation of an upload is in
test_emulate_stack.py."""

from __future__ import annotations

from pathlib import Path

import pytest

import airlink
from airlink import _core, window_limited

REPO = Path(__file__).resolve().parents[1]

ASYMMETRIC = (REPO / "tests/scenarios/asymmetric.toml").read_text(encoding="utf-8")  # ends with its [[flow]]


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "s.toml"
    p.write_text(text, encoding="utf-8")
    return p


@pytest.mark.parametrize("direction", ["down", "up"])
def test_a_flow_goes_the_way_it_says(tmp_path: Path, direction: str) -> None:
    s = _write(tmp_path, ASYMMETRIC + f'direction = "{direction}"\n')
    summary = airlink.run(s).summary
    flow = summary["flows"][0]
    links = {link["name"]: link for link in summary["links"]}
    assert flow["completed"] and flow["bytes_delivered"] == 500_000
    data, acks = ("uplink", "downlink") if direction == "up" else ("downlink", "uplink")
    # Every data segment crossed the data's link; the other way only headers (ACKs, the
    # handshake): 20 B of IP and at most 60 B of TCP header with its options each.
    assert links[data]["packets_in"] >= flow["data_segments_sent"]
    assert links[acks]["packets_out"] > 0 and links[acks]["bytes_out"] <= 80 * links[acks]["packets_out"]
    # The goodput is below the data link's rate and, for an upload, far below the downlink's.
    rate = 2e6 if direction == "up" else 10e6
    assert 0.5 * rate < flow["goodput_bps"] < rate


def test_the_upload_example_uploads_through_its_uplink_trace() -> None:
    summary = airlink.run(REPO / "examples" / "upload.toml").summary
    upload, download = summary["flows"]
    assert upload["completed"] and upload["bytes_delivered"] == 5_000_000
    links = {link["name"]: link for link in summary["links"]}
    # The uplink trace averages 2 Mbit/s: the upload cannot go faster.
    assert upload["goodput_bps"] < 2.0e6 < download["goodput_bps"]
    assert links["uplink"]["packets_in"] >= upload["data_segments_sent"]


def test_the_default_preset_is_linux_and_the_studies_pin_theirs() -> None:
    def preset(path: Path | str, flow: int = 0) -> str:
        text = path.read_text(encoding="utf-8") if isinstance(path, Path) else path
        rows = dict(_core.transport_parameters(text, "s.toml", []))[flow]
        return dict(rows)["preset"]

    assert preset("[downlink.pipe]\nrate = '1 Mbit/s'\n[[flow]]\n") == "linux"
    for study in ("seawind/gprs.toml", "seawind/gsm.toml", "seawind/hscsd.toml", "wlan/dccp-handoff.toml"):
        assert preset(REPO / "scenarios" / study) == "classic", study


def test_emulation_congestion_is_refused_with_the_key_to_use(tmp_path: Path) -> None:
    s = _write(tmp_path, ASYMMETRIC + '[emulation]\ncongestion = "cubic"\n')
    with pytest.raises(ValueError, match=r"s.toml:\d+:\d+: emulation.congestion: removed: each \[\[flow\]\]'s `congestion`"):
        airlink.run(s)


def test_check_warns_when_reno_is_newreno_and_when_the_window_decides(tmp_path: Path) -> None:
    adaptive = REPO / "scenarios" / "wipemu" / "adaptive.toml"
    text = adaptive.read_text(encoding="utf-8")
    warnings = _core.scenario_warnings(text, str(adaptive), ["flow.0.congestion=reno"])
    assert any(w.startswith('flow 0: congestion = "reno" runs as "newreno" while tcp.sack is on') for w in warnings)
    assert any(w.startswith("flow 0: tcp.rwnd = 65536 B fits in what the path holds") and "flow.0.tcp.rwnd above" in w
               for w in warnings)
    # Without SACK, Reno is Reno: no warning about it.
    quiet = _core.scenario_warnings(text, str(adaptive), ["flow.0.congestion=reno", "flow.0.tcp.sack=false"])
    assert not any("runs as" in w for w in quiet)


def test_a_run_limited_by_its_window_says_so() -> None:
    # 64 KiB over 10 Mbit/s with 200 ms of round trip (250 kB in flight) and a 1000-packet
    # queue: the path could take more, but the window never gets there.
    text = ('stop = "20 s"\n[wired]\ndelay = "95 ms"\n[downlink.pipe]\nrate = "10 Mbit/s"\ndelay = "5 ms"\n'
            '[[flow]]\ncongestion = "cubic"\n[flow.tcp]\nrwnd = "64 KiB"\n')
    r = airlink.run(text)
    found = window_limited.measured_warnings(r.manifest["resolved_scenario"], r.flows)
    assert len(found) == 1 and found[0].startswith("flow 0: cwnd was at or above the receive window (tcp.rwnd = 65536 B)")
    # With the default window, never.
    r = airlink.run(text.replace('rwnd = "64 KiB"\n', ""))
    assert window_limited.measured_warnings(r.manifest["resolved_scenario"], r.flows) == []
