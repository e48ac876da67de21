"""Bounded memory in simulation: a run over its memory budget stops with an error naming what
grew, heavy drop logging streams to disk in parts, and 1,000 copies of a small flow run."""

from pathlib import Path

import pyarrow.parquet as pq
import pytest

import airlink
from airlink import _core

OVERLOAD = """
stop = "2 s"
{budget}
[downlink.pipe]
rate = "10 Mbit/s"
delay = "5 ms"
queue = 50
[uplink.pipe]
delay = "5 ms"
[[flow]]
protocol = "udp"
rate = "200 Mbit/s"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "s.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_run_over_its_memory_budget_stops_naming_what_grew(tmp_path: Path) -> None:
    # The core run without drains: the drop rows pile up until the run passes 10 MB.
    text = OVERLOAD.format(budget='memory_budget = "10 MB"').replace('"2 s"', '"60 s"')
    sim = _core.Simulation(text, "over.toml")
    with pytest.raises(_core.ScenarioError) as e:
        while not sim.run_until(10**18):
            pass  # no drain: the rows pile up
    message = str(e.value)
    assert message.startswith("over.toml: run stopped at ")
    assert 'over memory_budget = "10 MB"' in message
    assert "time-series rows not yet written (most in events: " in message


def test_heavy_drop_logging_is_drained_in_parts_with_the_same_rows(tmp_path: Path) -> None:
    # 2 Gbit/s into 10 Mbit/s: over 300,000 drop rows in one 10 s chunk, more than one drain's
    # worth (2**18 rows), so the runner writes them in parts, within a 50 MB budget.
    text = OVERLOAD.format(budget='memory_budget = "50 MB"').replace('"200 Mbit/s"', '"2 Gbit/s"')
    result = airlink.run(write(tmp_path, text), out=tmp_path / "out")
    events = result.events
    assert len(events) > 1 << 18
    assert events["time_ns"].is_monotonic_increasing
    parquet = pq.ParquetFile(tmp_path / "out" / "events.parquet")
    assert parquet.metadata.num_rows == len(events)
    assert parquet.metadata.num_row_groups >= 2


def test_a_thousand_copies_of_a_small_flow_run(tmp_path: Path) -> None:
    text = """
stop = "1 s"
[downlink.pipe]
rate = "100 Mbit/s"
delay = "5 ms"
[uplink.pipe]
delay = "5 ms"
[[flow]]
protocol = "udp"
rate = "10 kbit/s"
copies = 1000
"""
    result = airlink.run(write(tmp_path, text))
    assert len(result.summary["flows"]) == 1000
    assert result.summary["completed"]
