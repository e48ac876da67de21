"""One table schema for both modes: the same scenario, run in simulation and in emulation,
writes `links` and `events` with the same columns, of the same Arrow types (those the core
defines once, `_core.table_schema()`). Root only; skipped elsewhere with the reason."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

import airlink
from airlink import _core, emulate as emulation
from airlink.results import SCHEMA

CHECKS = {c["name"]: c for c in _core.doctor()}
MISSING = [name for name, c in CHECKS.items() if c["required"] and not c["ok"]]
pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"emulation not possible here: {', '.join(MISSING)}")

# A rate step and its way back, with the flow of airlink's own stack: rows in both tables.
SETTINGS = ["stop=3 s", "change.0.at=1 s", "change.1.at=2 s", "flow.0.start=0.2 s", "flow.0.stop=2.5 s",
            "sample_interval=100 ms"]


def test_simulation_and_emulation_write_links_and_events_alike(tmp_path: Path) -> None:
    scenario = "scenarios/topology/rate-step.toml"
    airlink.run(scenario, overrides=SETTINGS, out=tmp_path / "sim")
    emulation.emulate(scenario, overrides=SETTINGS, out=tmp_path / "emu")
    for table in ("links", "events"):
        sim = pq.read_table(tmp_path / "sim" / f"{table}.parquet")
        emu = pq.read_table(tmp_path / "emu" / f"{table}.parquet")
        assert sim.num_rows > 0 and emu.num_rows > 0, table
        columns = [(f.name, f.type) for f in sim.schema]
        assert columns == [(f.name, f.type) for f in emu.schema], table
        assert columns == list(SCHEMA[table].items()), table
    sim_events = pq.read_table(tmp_path / "sim" / "events.parquet").to_pandas()
    emu_events = pq.read_table(tmp_path / "emu" / "events.parquet").to_pandas()
    # Simulation: nothing live, no wall clock; emulation: the wall clock of every row.
    assert (sim_events.live == 0).all() and (sim_events.wall_time_ns == 0).all()
    assert (emu_events.wall_time_ns > 1.7e18).all()
