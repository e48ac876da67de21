"""Trace-driven links in simulation (no privileges needed): the same scenario file that
emulation runs, in virtual time; and a trace pair in both modes (root only)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import airlink


def test_a_trace_downlink_simulates_at_the_traces_rate(tmp_path: Path) -> None:
    trace = tmp_path / "four-per-10ms.trace"
    trace.write_text("1\n4\n6\n9\n10\n", encoding="utf-8")  # 5 x 1500 B per 10 ms = 6 Mbit/s
    s = tmp_path / "trace.toml"
    s.write_text(f'[downlink.trace]\nfile = "{trace}"\ndelay = "10 ms"\nqueue = 100\n'
                 '[uplink.pipe]\ndelay = "10 ms"\n[[flow]]\nbytes = "3 MB"\ncongestion = "cubic"\n', encoding="utf-8")
    r = airlink.run(s)
    assert r.completed
    assert r.summary["links"][1]["model"] == "trace"
    # Steady goodput cannot exceed the trace's capacity less TCP/IP headers, and gets close to it.
    steady = r.summary["flows"][0]["goodput_steady_bps"]
    assert 0.8 * 6e6 * 1460 / 1500 < steady <= 6e6 * 1460 / 1500 * 1.001


def test_a_truncated_trace_is_refused_with_its_line(tmp_path: Path) -> None:
    trace = tmp_path / "cut.trace"
    trace.write_text("5\n10\n1", encoding="utf-8")
    s = tmp_path / "trace.toml"
    s.write_text(f'[downlink.trace]\nfile = "{trace}"\n[[flow]]\n', encoding="utf-8")
    with pytest.raises(airlink.ScenarioError, match=r"cut\.trace:3: its timestamp is before the previous one: expected"):
        airlink.run(s)



def emulate_trace_pair(tmp_path: Path) -> tuple[dict, dict]:
    """The trace pair in simulation and in emulation, airlink's own CUBIC in both (so the
    transports are the same code)."""
    from airlink import _core, emulate as emulation

    missing = [c["name"] for c in _core.doctor() if c["required"] and not c["ok"]]
    if missing:
        pytest.skip(f"emulation not possible here: {', '.join(missing)}")
    scenario = "scenarios/topology/trace-pair.toml"
    settings = ["stop=8 s", "flow.0.bytes=6 MB"]
    sim = airlink.run(scenario, overrides=settings).summary
    emulation.emulate(scenario, overrides=settings, out=tmp_path / "emu")
    return sim, json.loads((tmp_path / "emu" / "summary.json").read_text())


def test_a_trace_pair_runs_in_emulation_too(tmp_path: Path) -> None:
    sim, emu = emulate_trace_pair(tmp_path)
    models = {link["name"]: link["model"] for link in emu["links"]}
    assert models["downlink"] == models["uplink"] == "trace"
    assert emu["flows"][0]["bytes_delivered"] == sim["flows"][0]["bytes_delivered"] == 6_000_000
    # The uplink trace carried the ACKs in both modes.
    assert min(link["packets_out"] for link in [*emu["links"], *sim["links"]] if link["name"] == "uplink") > 1000
