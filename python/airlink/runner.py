"""One run of a scenario: advanced in chunks of simulated time, each chunk's time series drained
and written before the next, so memory stays bounded however long the run is."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airlink import _core, sources
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
from airlink.scenarios import MAX_SCENARIO_BYTES
from airlink.units import parse_duration_ns
from airlink.version import version

if TYPE_CHECKING:
    import pandas as pd

ScenarioPath = str | os.PathLike[str]
#: A scenario: a file's path, TOML text or a dict (told apart as ``airlink.sources`` says).
Scenario = sources.Source


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


def load(scenario: Scenario, *, seed: int | None = None, overrides: Sequence[str] = ()) -> LoadedScenario:
    """Parses, validates and builds a scenario (a path, TOML text or a dict); raises
    ``ScenarioError`` before anything is written, naming the file, or ``<dict>``/``<string>``,
    with line and column."""
    source = sources.read(scenario, "scenario file", MAX_SCENARIO_BYTES, _core.ScenarioError)
    sim = _core.Simulation(source.text, source.name, seed, list(overrides), True)
    return LoadedScenario(sim=sim, source=source.name, overrides=list(overrides))


def _drive(sim: _core.Simulation, sink: MemorySink | ParquetSink, chunk_ns: int) -> None:
    # run_until also returns early, before `until`, once the buffered series are large: they
    # are drained then too, so memory stays bounded however much a chunk records.
    finished = False
    until = sim.now_ns + chunk_ns
    while not finished:
        finished = sim.run_until(until)
        if sim.now_ns >= until:
            until = sim.now_ns + chunk_ns
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
    scenario: Scenario,
    *,
    seed: int | None = None,
    seeds: Iterable[int] | None = None,
    overrides: Sequence[str] = (),
    out: ScenarioPath | None = None,
    chunk: str | float = "10 s",
    force: bool = False,
) -> RunResult | RunResults:
    """Runs one scenario in simulation and returns its summary and time series.

    ``scenario`` is a file's path, TOML text or a dict: a ``str`` with a newline, ``=`` or ``[`` is
    TOML text, a ``pathlib.Path`` always a path (``airlink.sources``); errors name ``<dict>`` or
    ``<string>`` with line and column. ``seed`` replaces the scenario's seed; ``seeds`` runs it
    once per seed and returns a :class:`RunResults`, a list of the runs whose ``summary`` and
    tables are DataFrames of all of them with a ``seed`` column. ``overrides`` are
    ``key.path=value`` strings (as the CLI's ``--set``); ``out`` writes a results folder
    (refused if it exists, unless ``force``) and the DataFrames are read back from it (one run
    only: many seeds into files are a sweep, ``airlink.sweep``); ``chunk`` is the simulated time
    between two drains of the time series.

    >>> import airlink
    >>> r = airlink.run("scenarios/wipemu/validation.toml", seed=2,
    ...                 overrides=["flow.0.bytes=100 kB"])
    >>> r.summary["seed"], r.summary["flows"][0]["bytes_delivered"]
    (2, 100000)
    >>> sorted(r.rtt.columns)
    ['flow', 'rtt_us', 'time_ns']

    A scenario built in code, three seeds:

    >>> pipe = {"name": "pipe", "stop": "2 s",
    ...         "downlink": {"pipe": {"rate": "2 Mbit/s", "delay": "20 ms", "loss": 0.01}},
    ...         "flow": [{"protocol": "tcp", "congestion": "reno"}]}
    >>> runs = airlink.run(pipe, seeds=range(3))
    >>> len(runs), type(runs.summary).__name__
    (3, 'DataFrame')
    >>> print(runs.summary[["seed", "flow", "protocol", "retransmissions"]].to_string(index=False))
     seed  flow protocol  retransmissions
        0     0      tcp                4
        1     0      tcp                2
        2     0      tcp                2
    >>> sorted(set(runs.flows["seed"]))
    [0, 1, 2]
    >>> try:
    ...     airlink.run("stop = 'soon'")
    ... except airlink.ScenarioError as e:
    ...     print(str(e).splitlines()[0])
    <string>:1:8: invalid value "soon": expected a duration with a unit, like "200 ms" (units: ns, us, ms, s, min)
    """
    if seeds is not None:
        if seed is not None:
            raise ValueError("give seed= or seeds=, not both")
        if out is not None:
            raise ValueError("out= writes one run's folder; many seeds into files are a sweep (airlink.sweep)")
        return RunResults(run(scenario, seed=s, overrides=overrides, chunk=chunk) for s in seeds)
    loaded = load(scenario, seed=seed, overrides=overrides)
    return execute(loaded, out=out, chunk=chunk, force=force)


class RunResults(list[RunResult]):
    """The runs of ``airlink.run(..., seeds=...)``: a list of :class:`RunResult`, one per seed, in
    order, and, as DataFrames of all of them, ``summary`` (a row per seed and flow: the flow's
    summary fields, nested ones as ``a.b``) and the tables (``flows``, ``rtt``, ``links``,
    ``events``, ``intervals``, or ``table(name)``), each with a ``seed`` column first."""

    @property
    def summary(self) -> pd.DataFrame:
        import pandas as pd

        rows = []
        for r in self:
            head = {"seed": r.summary["seed"], "scenario": r.summary["scenario"], "completed": r.completed}
            for flow in r.summary.get("flows", []):
                rows.append({**head, **pd.json_normalize(flow).iloc[0].to_dict()})
        frame = pd.DataFrame(rows)
        return frame.rename(columns={"id": "flow"}) if "id" in frame else frame

    def table(self, name: str) -> pd.DataFrame:
        import pandas as pd

        frames = [r.table(name).assign(seed=r.summary["seed"]) for r in self]
        frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
        return frame[["seed", *(c for c in frame.columns if c != "seed")]] if "seed" in frame else frame

    @property
    def flows(self) -> pd.DataFrame:
        return self.table("flows")

    @property
    def rtt(self) -> pd.DataFrame:
        return self.table("rtt")

    @property
    def links(self) -> pd.DataFrame:
        return self.table("links")

    @property
    def events(self) -> pd.DataFrame:
        return self.table("events")

    @property
    def intervals(self) -> pd.DataFrame:
        return self.table("intervals")
