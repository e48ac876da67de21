"""Runs an experiment into a store: rounds of runs on a thread pool until every configuration's
repetition rule is satisfied.

Each round runs what the rules ask for and is not in the store yet; a configuration's n is
decided from its runs in repetition order only, so the result does not depend on how many runs
were in flight, on thread timing, or on whether the sweep was interrupted and resumed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from airlink import _core
from airlink import experiment as ex
from airlink.results import MemorySink
from airlink.store import Store, load, tables, write_atomic

ATTEMPTS = 2  # a run that raises is retried once
CHUNK_NS = 10_000_000_000  # simulated time between two drains of a run's time series


def _simulate(text: str, source: str, seed: int, overrides: list[str], cancel: Any, series: bool
              ) -> tuple[str, dict[str, bytes] | None]:
    """One run: its summary JSON and, if ``series``, its time series as Parquet bytes per table
    (bytes, so that a Dask worker can hand them back without a shared filesystem)."""
    if not series:
        return _core.run_summary(text, source, seed, overrides, cancel), None
    sim = _core.Simulation(text, source, seed, overrides, True)
    memory = MemorySink()
    finished = False
    while not finished:
        finished = sim.run_until(sim.now_ns + CHUNK_NS, cancel)
        memory.write(sim.drain())
    tables = {}
    for name, table in memory.tables().items():
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink)
        tables[name] = sink.getvalue().to_pybytes()
    return sim.summary_json(), tables


# The run itself; a module attribute so that tests can make runs fail.
_run: Callable[[str, str, int, list[str], Any, bool], tuple[str, dict[str, bytes] | None]] = _simulate


@dataclass(frozen=True)
class Task:
    """Everything one run needs, so that it runs anywhere: a thread here, or a Dask worker on
    another machine with none of our files (``shipped``: the bytes of its inputs come with the
    batch, from one copy per worker and sweep)."""

    key: str
    config: int
    rep: int
    seed: int
    params: tuple[tuple[str, Any], ...]
    text: str
    source: str
    overrides: tuple[str, ...]
    inputs: tuple[ex.Input, ...]
    metrics: tuple[str, ...]
    flow_class: str
    series: bool
    shipped: bool = False  # runs where our files are not: its inputs' bytes come with it


def _task(exp: ex.Experiment, config: ex.Config, rep: int, ship: bool = False) -> Task:
    return Task(exp.run_key(config, rep), config.index, rep, exp.run_seed(rep), config.params, exp.scenario_text,
                str(exp.scenario_path), config.overrides, config.inputs, exp.table_metrics, exp.flow_class,
                exp.series, ship)


def _placed(task: Task, files: Mapping[str, bytes] | None) -> list[str]:
    """Overrides that point the scenario at this worker's copies of the shipped input files
    (``files``: path -> bytes), kept under their content hash in the temporary folder (written
    once per worker)."""
    if not task.shipped or not task.inputs:
        return []
    if files is None:
        raise ValueError(f"run {task.key}: its input files were not shipped with it")
    out = []
    for spec in task.inputs:
        data = files[spec.path]
        if hashlib.sha256(data).hexdigest() != spec.sha256:
            raise ValueError(f"{spec.path}: shipped bytes do not match their hash")
        folder = Path(tempfile.gettempdir()) / "airlink-inputs" / spec.sha256
        path = folder / Path(spec.path).name
        if not path.exists():
            folder.mkdir(parents=True, exist_ok=True)
            write_atomic(path, data, durable=False)
        out.append(f"{spec.key}={path}")
    return out


def run_task(task: Task, cancel: Any = None, files: Mapping[str, bytes] | None = None) -> dict[str, Any]:
    """One run, retried once if it raises: its record (status ok or failed), with its metrics and
    derived metrics, and its time series as bytes under ``series_bytes``. ``files`` holds the
    bytes of a shipped task's inputs."""
    record: dict[str, Any] = {"key": task.key, "config": task.config, "rep": task.rep, "seed": task.seed,
                              "params": [list(p) for p in task.params]}
    error = None
    for attempt in range(1, ATTEMPTS + 1):
        try:
            overrides = [*task.overrides, *_placed(task, files)]
            summary_json, series = _run(task.text, task.source, task.seed, overrides, cancel, task.series)
            summary = json.loads(summary_json)
        except Exception as e:  # noqa: BLE001 - any failure of a run is recorded, not fatal
            if cancel is not None and cancel.is_set():
                raise  # the sweep is stopping: the run did not fail, it is simply not done
            error = f"{type(e).__name__}: {e}"
            continue
        derived = ex.derived_metrics(summary)
        metrics = {m: ex.run_metrics(summary, m, task.flow_class, derived) for m in task.metrics}
        return {**record, "status": "ok", "error": None, "attempts": attempt, "summary": summary,
                "derived": derived, "metrics": metrics, "series": series is not None, "series_bytes": series}
    return {**record, "status": "failed", "error": error, "attempts": ATTEMPTS, "summary": None, "derived": None,
            "metrics": None, "series": False, "series_bytes": None}


def _keep(store: Store, config: ex.Config, record: dict[str, Any]) -> dict[str, Any]:
    """Stores a run: its time series folder first, then its record (which marks it done)."""
    series = record.pop("series_bytes", None)
    digest = store.put_series(record, series, config.resolved) if series is not None else None
    store.put(record, digest)
    return record


def _series(exp: ex.Experiment, records: dict[tuple[int, int], dict[str, Any]], config: int, reps: int
            ) -> list[list[float]]:
    """The driving metrics of one configuration, one series per (metric, class), indexed by repetition."""
    out = []
    for metric in exp.repetitions.metrics:
        rows = [(records[config, r].get("metrics") or {}).get(metric, {}) for r in range(reps)]
        for cls in sorted({c for row in rows for c in row}):
            out.append([float(row.get(cls, math.nan)) for row in rows])
    return out


def _replanned(exp: ex.Experiment, old: dict[str, Any], config: ex.Config, rep: int) -> dict[str, Any]:
    """A stored run placed in this experiment's grid, with this experiment's metrics."""
    return {**old, "config": config.index, "rep": rep, "params": [list(p) for p in config.params],
            "metrics": {m: ex.run_metrics(old["summary"], m, exp.flow_class, old["derived"]) for m in exp.table_metrics}}


class _Threads:
    """Runs on a local thread pool (the core releases the GIL for a whole run); each run is stored
    by its thread, so a run that ends after Ctrl-C is kept."""

    def __init__(self, jobs: int | None) -> None:
        self.pool = ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1)
        self.cancel = threading.Event()
        self.futures: list[Any] = []

    def run(self, exp: ex.Experiment, store: Store, todo: list[tuple[ex.Config, int]]) -> Iterator[dict[str, Any]]:
        """The records of ``todo``'s runs, stored, in the order they finish."""
        self.futures = [self.pool.submit(lambda c=c, r=r: _keep(store, c, run_task(_task(exp, c, r), self.cancel)))
                        for c, r in todo]
        for future in as_completed(self.futures):
            yield future.result()

    def stop(self) -> None:
        # Ctrl-C or SIGTERM: drop what has not started and stop what runs (the core looks at the
        # shared event every 50 ms).
        self.cancel.set()
        for f in self.futures:
            f.cancel()

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


def run_batch(tasks: list[Task], files: Mapping[str, bytes] | None = None) -> list[dict[str, Any]]:
    """Several runs in one Dask task: a scheduler round trip costs more than a small run.
    ``files``: the inputs' bytes, scattered to the workers once per sweep (Dask hands each
    worker its copy), not carried by every task."""
    return [run_task(t, files=files) for t in tasks]


class _Dask:
    """Runs on a Dask cluster: ``ADDRESS`` of a scheduler, or ``local:N`` for a LocalCluster of N
    worker processes started here. Tasks carry their inputs' bytes and return their time series,
    and this process writes the store: workers need no filesystem in common with it."""

    BATCHES_PER_WORKER = 4  # enough batches to balance the load, few enough to amortise the overhead
    MAX_BATCH = 64

    def __init__(self, address: str) -> None:
        from distributed import Client, LocalCluster

        self.cluster = None
        if address.startswith("local:"):
            n = int(address.removeprefix("local:"))
            self.cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                        dashboard_address=None)
            self.client = Client(self.cluster)
        else:
            self.client = Client(address)
        self.futures: list[Any] = []
        self.files: Any = None  # the experiment's input files on the workers, once per sweep

    def run(self, exp: ex.Experiment, store: Store, todo: list[tuple[ex.Config, int]]) -> Iterator[dict[str, Any]]:
        from distributed import as_completed as dask_completed

        if self.files is None and exp.files:
            [self.files] = self.client.scatter([exp.files], broadcast=True)

        workers = max(1, sum(w.get("nthreads", 1) for w in self.client.scheduler_info()["workers"].values()))
        size = max(1, min(self.MAX_BATCH, len(todo) // (workers * self.BATCHES_PER_WORKER)))
        configs = {c.index: c for c, _ in todo}
        self.futures = [self.client.submit(run_batch, [_task(exp, c, r, ship=True) for c, r in todo[i:i + size]],
                                           self.files, pure=False, key=f"airlink-runs-{uuid.uuid4().hex}")
                        for i in range(0, len(todo), size)]
        for future in dask_completed(self.futures):
            for record in future.result():
                yield _keep(store, configs[record["config"]], record)

    def stop(self) -> None:
        self.client.cancel(self.futures)

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def parse_dask(address: str) -> str:
    """Checks a ``--dask`` value: ``local:N`` (N ≥ 1) or a scheduler address."""
    if address.startswith("local:"):
        n = address.removeprefix("local:")
        if not n.isdigit() or int(n) < 1:
            raise ValueError(f"--dask local:N needs a number of workers N ≥ 1, got {address!r}")
    elif not address:
        raise ValueError("--dask needs a scheduler address such as tcp://host:8786, or local:N")
    return address


def run_experiment(experiment: ex.Experiment | str | Path, out: str | Path | None = None, *,
                   jobs: int | None = None, dask: str | None = None, progress: bool = False) -> Path:
    """Runs (or resumes) an experiment into the store ``out`` and writes its tables; returns ``out``.
    ``dask`` runs on a Dask cluster instead of local threads (see ``_Dask``)."""
    exp = experiment if isinstance(experiment, ex.Experiment) else ex.load_experiment(experiment)
    root = Path(out) if out is not None else Path(f"{exp.path.stem}.sweep")
    store = Store.open(root, {"experiment": ex.manifest_entry(exp), "inputs": exp.input_hashes})
    rule = exp.repetitions
    initial = rule.count if rule.rule == "fixed" else rule.min
    planned = {c.index: initial for c in exp.configs}
    decided: dict[int, int] = {}
    records: dict[tuple[int, int], dict[str, Any]] = {}
    runner = _Dask(parse_dask(dask)) if dask is not None else _Threads(jobs)
    with contextlib.closing(runner), \
            tqdm(total=0, desc="runs", unit="run", file=sys.stderr, disable=not progress) as bar:
        failed, first_round = 0, True
        while len(decided) < len(exp.configs):
            wanted = [(c, r) for c in exp.configs if c.index not in decided for r in range(planned[c.index])
                      if (c.index, r) not in records]
            todo = []
            for c, r in wanted:
                old = store.get(exp.run_key(c, r))
                # a failed run gets another chance; one stored without the time series now wanted runs again
                if old is None or old["status"] == "failed" or (exp.series and not old.get("series")):
                    todo.append((c, r))
                else:  # done by an earlier sweep: the same run, whatever its place in that grid
                    records[c.index, r] = _replanned(exp, old, c, r)
            bar.total += len(todo)
            try:
                for record in runner.run(exp, store, todo):
                    records[record["config"], record["rep"]] = record
                    failed += record["status"] == "failed"
                    bar.set_postfix_str(f"{failed} failed, {bar.total - bar.n - 1} to go", refresh=False)
                    bar.update()
            except BaseException:
                # Ctrl-C or SIGTERM: finished runs are already stored, so a re-run resumes from them.
                runner.stop()
                raise
            if first_round:
                ex.check_metrics_found(exp, list(records.values()))
                first_round = False
            for c in exp.configs:
                i = c.index
                if i in decided:
                    continue
                series = _series(exp, records, i, planned[i])
                if rule.rule == "fixed":
                    decided[i] = rule.count
                elif rule.rule == "dccp":
                    n = ex.dccp_n(series, rule)
                    if planned[i] >= n:
                        decided[i] = n
                    planned[i] = n
                else:
                    n = ex.t_stop(series, planned[i], rule)
                    if n is not None:
                        decided[i] = n
                    else:
                        planned[i] = ex.t_guess(series, planned[i], rule)
    chosen = [records[c.index, r] for c in exp.configs for r in range(decided[c.index])]
    store.write_tables(tables(chosen, exp.parameters, rule.interval, exp.references))
    return root


def sweep(experiment: str | Path, out: str | Path | None = None, *, jobs: int | None = None,
          dask: str | None = None, table: str = "runs", progress: bool = False) -> pd.DataFrame:
    """Runs (or resumes) an experiment and returns one of its tables (see ``airlink.load``)."""
    return load(run_experiment(experiment, out, jobs=jobs, dask=dask, progress=progress), table)
