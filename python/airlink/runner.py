"""One run of a scenario: advanced in chunks of simulated time, each chunk's time series drained
and written before the next, so memory stays bounded however long the run is."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airlink import _core
from airlink.atomic import atomic_folder
from airlink.results import (
    MANIFEST,
    SUMMARY,
    MemorySink,
    ParquetSink,
    RunResult,
    import_pandas_now,
    make_manifest,
    read_results,
    write_json,
)
from airlink.scenarios import read_scenario_text
from airlink.units import parse_duration_ns
from airlink.version import version

ScenarioPath = str | os.PathLike[str]


@dataclass
class LoadedScenario:
    """A validated scenario, built into a simulation that has not run yet."""

    sim: _core.Simulation
    source: str
    overrides: list[str]

    @property
    def name(self) -> str:
        return self.sim.name

    @property
    def seed(self) -> int:
        return self.sim.seed


def load(scenario: ScenarioPath, *, seed: int | None = None, overrides: Sequence[str] = ()) -> LoadedScenario:
    """Parses, validates and builds a scenario; raises ``ScenarioError`` before anything is written."""
    source = os.fspath(scenario)
    text = read_scenario_text(source)
    sim = _core.Simulation(text, source, seed, list(overrides), True)
    return LoadedScenario(sim=sim, source=source, overrides=list(overrides))


def _drive(sim: _core.Simulation, sink: MemorySink | ParquetSink, chunk_ns: int) -> None:
    finished = False
    while not finished:
        finished = sim.run_until(sim.now_ns + chunk_ns)
        sink.write(sim.drain())


def execute(
    loaded: LoadedScenario,
    *,
    out: ScenarioPath | None = None,
    chunk: str | float = "10 s",
    force: bool = False,
    command: Sequence[str] | None = None,
) -> RunResult:
    """Runs a loaded scenario to its end; writes a results folder when ``out`` is given."""
    chunk_ns = parse_duration_ns(chunk)
    sim = loaded.sim

    def manifest(completed: bool) -> dict[str, Any]:
        return make_manifest(
            version=version(),
            scenario_name=sim.name,
            source=loaded.source,
            seed=sim.seed,
            overrides=loaded.overrides,
            resolved_scenario=sim.resolved_scenario(),
            completed=completed,
            command=command,
        )

    if out is None:
        memory = MemorySink()
        _drive(sim, memory, chunk_ns)
        summary_json = sim.summary_json()
        completed = json.loads(summary_json)["completed"]
        return RunResult(summary_json, manifest(completed), tables=memory.tables())

    out = Path(out)
    import_pandas_now()  # before the folder exists: a signal from here on is never lost
    with atomic_folder(out, replace=force, kind="results") as tmp:
        sink = ParquetSink(tmp)
        try:
            _drive(sim, sink, chunk_ns)
        finally:
            sink.close()
        summary_json = sim.summary_json()
        (tmp / SUMMARY).write_text(summary_json, encoding="utf-8")
        write_json(tmp / MANIFEST, manifest(json.loads(summary_json)["completed"]))
    return read_results(out)


def run(
    scenario: ScenarioPath,
    *,
    seed: int | None = None,
    overrides: Sequence[str] = (),
    out: ScenarioPath | None = None,
    chunk: str | float = "10 s",
    force: bool = False,
) -> RunResult:
    """Runs one scenario in simulation and returns its summary and time series.

    ``seed`` replaces the scenario's seed; ``overrides`` are ``key.path=value`` strings (as the
    CLI's ``--set``); ``out`` writes a results folder (refused if it exists, unless ``force``)
    and the DataFrames are read back from it; ``chunk`` is the simulated time between two
    drains of the time series.

    >>> import airlink
    >>> r = airlink.run("scenarios/wipemu/validation.toml", seed=2,
    ...                 overrides=["flow.0.bytes=100 kB"])
    >>> r.summary["seed"], r.summary["flows"][0]["bytes_delivered"]
    (2, 100000)
    >>> sorted(r.rtt.columns)
    ['flow', 'rtt_us', 'time_ns']
    """
    loaded = load(scenario, seed=seed, overrides=overrides)
    return execute(loaded, out=out, chunk=chunk, force=force)
