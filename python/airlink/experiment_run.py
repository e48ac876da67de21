"""Runs an experiment into a store: rounds of runs on a thread pool until every configuration's
repetition rule is satisfied.

Each round runs what the rules ask for and is not in the store yet; a configuration's n is
decided from its runs in repetition order only, so the result does not depend on how many runs
were in flight, on thread timing, or on whether the sweep was interrupted and resumed.

A stored run is reused only if this build of the core made it (``airlink.version.core_build``):
runs of another build are refused with a count, unless ``rerun_stale`` (run them again) or
``allow_mixed`` (reuse them, noted in the store's manifest). Progress goes to stderr: a bar on a
terminal, else a plain line every ``PROGRESS_INTERVAL_S`` (a log, CI, a pipe), and at the end
how many runs were reused and how many were new.
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
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
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
from airlink.sources import Source
from airlink.store import Store, StoreError, load, tables, write_atomic
from airlink.version import code_identity, core_build

ATTEMPTS = 2  # a run that raises is retried once
CHUNK_NS = 10_000_000_000  # simulated time between two drains of a run's time series
#: Seconds between two plain progress lines (stderr not a terminal); a test sets it low.
PROGRESS_INTERVAL_S = 10.0
#: Plain progress lines even where the caller asks for no bar: the CLI sets it around a
#: reproduction, whose studies pass on only whether to draw a bar (stderr is a terminal).
progress_lines: ContextVar[bool] = ContextVar("progress_lines", default=False)


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
                              "params": [list(p) for p in task.params],
                              "core": core_build()}  # the build that ran it (a Dask worker's own)
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
        if not todo:
            return
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
        # Connected (a local cluster started) on the first run: a resumed sweep with nothing to
        # run costs no cluster start, nor even loading dask.
        self.address = address
        self.cluster: Any = None
        self.client: Any = None
        self.futures: list[Any] = []
        self.files: Any = None  # the experiment's input files on the workers, once per sweep

    def _connect(self) -> Any:
        if self.client is None:
            from distributed import Client, LocalCluster

            if self.address.startswith("local:"):
                n = int(self.address.removeprefix("local:"))
                self.cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                            dashboard_address=None)
                self.client = Client(self.cluster)
            else:
                self.client = Client(self.address)
        return self.client

    def run(self, exp: ex.Experiment, store: Store, todo: list[tuple[ex.Config, int]]) -> Iterator[dict[str, Any]]:
        if not todo:
            return
        from distributed import as_completed as dask_completed

        self._connect()
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
        if self.client is not None:
            self.client.cancel(self.futures)

    def close(self) -> None:
        if self.client is not None:
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


class Progress:
    """A sweep's progress on stderr: a tqdm bar on a terminal; anywhere else (a log file, CI, a
    pipe) a plain line every ``PROGRESS_INTERVAL_S`` seconds, from a timer thread so that a long
    run is no silence; and at the end, how many runs were reused and how many ran. ``label``
    names the sweep or the reproduction's part."""

    def __init__(self, label: str, enabled: bool, stream: Any = None) -> None:
        self.label, self.enabled = label, enabled
        self.stream = stream or sys.stderr
        self.new = self.done = self.reused = self.failed = self.stale = 0
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._bar: tqdm | None = None
        self._timer: threading.Thread | None = None
        if enabled and self.stream.isatty():
            self._bar = tqdm(total=0, desc=label, unit="run", file=self.stream)
        elif enabled:
            self._timer = threading.Thread(target=self._tick, name="airlink-progress", daemon=True)
            self._timer.start()

    def plan(self, new: int, reused: int) -> None:
        """A round of the sweep: ``new`` runs to run, ``reused`` found in the store."""
        self.new += new
        self.reused += reused
        if self._bar is not None:
            self._bar.total += new
            self._bar.refresh()

    def finished(self, record: Mapping[str, Any]) -> None:
        self.done += 1
        self.failed += record["status"] == "failed"
        if self._bar is not None:
            self._bar.set_postfix_str(f"{self.reused} reused, {self.failed} failed, {self.new - self.done} to go",
                                      refresh=False)
            self._bar.update()

    def line(self) -> str:
        """Where the sweep is: runs done of those it needs so far, reused, failed, time taken."""
        return (f"{self.label}: {self.reused + self.done}/{self.reused + self.new} runs done ({self.reused} reused, "
                f"{self.done} new, {self.failed} failed), {_elapsed(time.monotonic() - self.started)} elapsed")

    def _tick(self) -> None:
        while not self._stop.wait(PROGRESS_INTERVAL_S):
            self._say(self.line())

    def _say(self, text: str) -> None:
        print(f"airlink: {text}", file=self.stream, flush=True)

    def close(self, completed: bool) -> None:
        """Stops the bar or timer; a completed sweep says what it reused and what it ran."""
        self._stop.set()
        if self._timer is not None:
            self._timer.join()
        if self._bar is not None:
            self._bar.close()
        if completed and self.enabled:
            again = f", {self.stale} of them made by another build and run again" if self.stale else ""
            failed = f", {self.failed} failed" if self.failed else ""
            self._say(f"{self.label}: {self.reused} reused, {self.done} new{again}{failed} "
                      f"({_elapsed(time.monotonic() - self.started)})")


def _elapsed(seconds: float) -> str:
    minutes, s = divmod(round(seconds), 60)
    return f"{minutes} min {s} s" if minutes else f"{s} s"


def _stale_runs(exp: ex.Experiment, store: Store, *, allow_mixed: bool, rerun_stale: bool) -> set[str]:
    """The runs of ``exp`` in ``store`` that another build of the core made (or one that did not
    say: an older airlink); refuses them unless told what to do (see ``run_experiment``)."""
    ours = core_build()
    others = {k.removeprefix("run:") for k, e in store.index().items() if k.startswith("run:") and e.get("core") != ours}
    if not others:
        return set()
    rule = exp.repetitions
    per_config = rule.count if rule.rule == "fixed" else rule.max
    wanted = {exp.run_key(c, r) for c in exp.configs for r in range(per_config)}
    stale = store.stale(others & wanted)
    if stale and not (allow_mixed or rerun_stale):
        unknown = sum(1 for core in stale.values() if core is None)
        builds = sorted({core for core in stale.values() if core is not None})
        which = []
        if builds:
            which.append(f"{len(stale) - unknown} from another build of the core, "
                         f"{', '.join(builds[:3])}{', ...' if len(builds) > 3 else ''}; this is {ours}")
        if unknown:
            which.append(f"{unknown} from an airlink that did not record its build of the core")
        raise StoreError(f"{store.root}: {len(stale)} stored runs this experiment uses come from other code "
                         f"({'; and '.join(which)}); results of different code are not mixed: --rerun-stale runs "
                         "them again, --allow-mixed reuses them anyway (airlink.sweep(..., rerun_stale=True) or "
                         "allow_mixed=True), or sweep into another folder")
    return set(stale)


def default_store(exp: ex.Experiment) -> Path:
    """Where a sweep goes without ``out``: beside the experiment file's name, or, for one given
    in code, under a name from its text (the same experiment resumes the same store)."""
    if exp.path.name.startswith("<"):
        return Path(f"experiment-{hashlib.sha256(exp.text.encode()).hexdigest()[:8]}.sweep")
    return Path(f"{exp.path.stem}.sweep")


def run_experiment(experiment: ex.Experiment | Source, out: str | Path | None = None, *,
                   jobs: int | None = None, dask: str | None = None, progress: bool = False,
                   allow_mixed: bool = False, rerun_stale: bool = False) -> Path:
    """Runs (or resumes) an experiment into the store ``out`` and writes its tables; returns ``out``.
    ``experiment`` is an Experiment, or a path, TOML text or dict (``ex.load_experiment``).
    ``dask`` runs on a Dask cluster instead of local threads (see ``_Dask``; it starts only if
    there is something to run). ``progress`` shows progress on stderr (``Progress``).

    Stored runs made by another build of the core are refused (StoreError, with their count)
    unless ``rerun_stale`` runs them again or ``allow_mixed`` reuses them."""
    if allow_mixed and rerun_stale:
        raise ValueError("allow_mixed and rerun_stale exclude each other: reuse the stale runs, or run them again")
    exp = experiment if isinstance(experiment, ex.Experiment) else ex.load_experiment(experiment)
    root = Path(out) if out is not None else default_store(exp)
    store = Store.open(root, {"experiment": ex.manifest_entry(exp), "inputs": exp.input_hashes})
    stale = _stale_runs(exp, store, allow_mixed=allow_mixed, rerun_stale=rerun_stale)
    rule = exp.repetitions
    initial = rule.count if rule.rule == "fixed" else rule.min
    planned = {c.index: initial for c in exp.configs}
    decided: dict[int, int] = {}
    records: dict[tuple[int, int], dict[str, Any]] = {}
    runner = _Dask(parse_dask(dask)) if dask is not None else _Threads(jobs)
    report = Progress(exp.path.name, progress or progress_lines.get())
    completed = False
    try:
        with contextlib.closing(runner):
            first_round = True
            while len(decided) < len(exp.configs):
                wanted = [(c, r) for c in exp.configs if c.index not in decided for r in range(planned[c.index])
                          if (c.index, r) not in records]
                todo = []
                for c, r in wanted:
                    key = exp.run_key(c, r)
                    old = store.get(key)
                    # a failed run gets another chance; one stored without the time series now wanted
                    # runs again, as does one of another build when asked to
                    if old is None or old["status"] == "failed" or (exp.series and not old.get("series")) \
                            or (key in stale and rerun_stale):
                        todo.append((c, r))
                        report.stale += key in stale
                    else:  # done by an earlier sweep: the same run, whatever its place in that grid
                        records[c.index, r] = _replanned(exp, old, c, r)
                report.plan(len(todo), len(wanted) - len(todo))
                try:
                    for record in runner.run(exp, store, todo):
                        records[record["config"], record["rep"]] = record
                        report.finished(record)
                except BaseException:
                    # Ctrl-C or SIGTERM: finished runs are already stored, so a re-run resumes from them.
                    runner.stop()
                    raise
                if first_round:
                    ex.check_metrics_found(exp, list(records.values()))
                    first_round = False
                _decide(exp, records, planned, decided)
        chosen = [records[c.index, r] for c in exp.configs for r in range(decided[c.index])]
        store.write_tables(tables(chosen, exp.parameters, rule.interval, exp.references))
        store.set_code(code_identity(), mixed=sum(r.get("core") != core_build() for r in chosen))
        completed = True
    finally:
        report.close(completed)
    return root


def _decide(exp: ex.Experiment, records: dict[tuple[int, int], dict[str, Any]], planned: dict[int, int],
            decided: dict[int, int]) -> None:
    """After a round: each configuration's repetition rule decides its n, or how many runs to
    have before it is asked again."""
    rule = exp.repetitions
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


def sweep(experiment: Source, out: str | Path | None = None, *, jobs: int | None = None,
          dask: str | None = None, table: str = "runs", progress: bool = True, allow_mixed: bool = False,
          rerun_stale: bool = False) -> pd.DataFrame:
    """Runs (or resumes) an experiment and returns one of its tables (see ``airlink.load``).

    ``experiment`` is a file's path, TOML text or a dict (as ``airlink.run``'s scenario; its
    ``scenario`` may be a path, TOML text or a table too). ``out`` is the store (default: beside
    the experiment file's name, or ``experiment-HASH.sweep`` for one given in code, so the same
    experiment resumes). ``progress`` reports on stderr (a bar on a terminal, else a line every
    10 s) and ends with how many runs were reused and how many were new. Stored runs of another
    build of the core are refused unless ``rerun_stale=True`` (run again) or ``allow_mixed=True``.

    >>> import airlink
    >>> experiment = {"experiment": {"scenario": {"stop": "1 s", "downlink": {"pipe": {"rate": "1 Mbit/s"}},
    ...                                           "flow": [{"protocol": "tcp"}]}},
    ...               "vary": {"downlink.pipe.loss": [0.0, 0.02]}, "repetitions": {"count": 2}}
    >>> import tempfile; folder = tempfile.TemporaryDirectory()
    >>> summary = airlink.sweep(experiment, folder.name + "/loss.sweep", table="summary", progress=False)
    >>> print(summary[summary["metric"] == "flows.*.goodput_bps"][["downlink.pipe.loss", "n"]].to_string(index=False))
     downlink.pipe.loss  n
                   0.00  2
                   0.02  2
    >>> folder.cleanup()
    """
    return load(run_experiment(experiment, out, jobs=jobs, dask=dask, progress=progress, allow_mixed=allow_mixed,
                               rerun_stale=rerun_stale), table)
