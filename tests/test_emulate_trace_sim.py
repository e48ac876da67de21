"""The trace-driven downlink in simulation (no privileges needed): the same scenario file that
emulation runs, in virtual time."""

from __future__ import annotations

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
    with pytest.raises(airlink.ScenarioError, match=r"cut\.trace:3: timestamp 1 ms is before the previous one \(10 ms\)"):
        airlink.run(s)
