"""Runs an experiment into a store: rounds of runs on a thread pool until every configuration's
repetition rule is satisfied.

Each round runs what the rules ask for and is not in the store yet; a configuration's n is
decided from its runs in repetition order only, so the result does not depend on how many runs
were in flight, on thread timing, or on whether the sweep was interrupted and resumed.
"""

from __future__ import annotations

import json
import math
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm import tqdm

from airlink import _core
from airlink import experiment as ex
from airlink.store import Store, load, tables
from airlink.sweep import default_jobs

# The run itself; a module attribute so that tests can make runs fail.
_run: Callable[[str, str, int, list[str], threading.Event], str] = _core.run_summary
ATTEMPTS = 2  # a run that raises is retried once


def default_out(experiment_path: str | Path) -> Path:
    return Path(f"{Path(experiment_path).stem}.sweep")


def _execute(exp: ex.Experiment, store: Store, config: ex.Config, rep: int, cancel: threading.Event) -> dict[str, Any]:
    """One run, retried once if it raises; stores and returns its record (status ok or failed)."""
    record = _attempt(exp, config, rep, cancel)
    store.put(record)  # here rather than in the caller: a run that ends after Ctrl-C is kept
    return record


def _attempt(exp: ex.Experiment, config: ex.Config, rep: int, cancel: threading.Event) -> dict[str, Any]:
    seed = exp.run_seed(rep)
    record: dict[str, Any] = {"key": ex.run_key(config.resolved, seed), "config": config.index, "rep": rep,
                              "seed": seed, "params": [list(p) for p in config.params]}
    error = None
    for attempt in range(1, ATTEMPTS + 1):
        try:
            summary = json.loads(_run(exp.scenario_text, str(exp.scenario_path), seed, list(config.overrides), cancel))
        except Exception as e:  # noqa: BLE001 - any failure of a run is recorded, not fatal
            if cancel.is_set():
                raise  # the sweep is stopping: the run did not fail, it is simply not done
            error = f"{type(e).__name__}: {e}"
            continue
        metrics = {m: ex.run_metrics(summary, m, exp.flow_class) for m in exp.metrics}
        return {**record, "status": "ok", "error": None, "attempts": attempt, "summary": summary, "metrics": metrics}
    return {**record, "status": "failed", "error": error, "attempts": ATTEMPTS, "summary": None, "metrics": None}


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
            "metrics": {m: ex.run_metrics(old["summary"], m, exp.flow_class) for m in exp.metrics}}


def run_experiment(experiment: ex.Experiment | str | Path, out: str | Path | None = None, *,
                   jobs: int | None = None, progress: bool = False) -> Path:
    """Runs (or resumes) an experiment into the store ``out`` and writes its tables; returns ``out``."""
    exp = experiment if isinstance(experiment, ex.Experiment) else ex.load_experiment(experiment)
    root = Path(out) if out is not None else default_out(exp.path)
    store = Store.open(root, {"experiment": ex.manifest_entry(exp), "inputs": exp.input_hashes})
    rule = exp.repetitions
    initial = rule.count if rule.rule == "fixed" else rule.min
    planned = {c.index: initial for c in exp.configs}
    decided: dict[int, int] = {}
    records: dict[tuple[int, int], dict[str, Any]] = {}
    cancel = threading.Event()
    with ThreadPoolExecutor(max_workers=jobs or default_jobs()) as pool, \
            tqdm(total=0, desc="runs", unit="run", file=sys.stderr, disable=not progress) as bar:
        failed, first_round = 0, True
        while len(decided) < len(exp.configs):
            wanted = [(c, r) for c in exp.configs if c.index not in decided for r in range(planned[c.index])
                      if (c.index, r) not in records]
            todo = []
            for c, r in wanted:
                old = store.get(ex.run_key(c.resolved, exp.run_seed(r)))
                if old is None or old["status"] == "failed":  # a failed run gets another chance
                    todo.append((c, r))
                else:  # done by an earlier sweep: the same run, whatever its place in that grid
                    records[c.index, r] = _replanned(exp, old, c, r)
            bar.total += len(todo)
            futures = {pool.submit(_execute, exp, store, c, r, cancel): (c.index, r) for c, r in todo}
            try:
                for future in as_completed(futures):
                    record = future.result()
                    records[futures[future]] = record
                    failed += record["status"] == "failed"
                    bar.set_postfix_str(f"{failed} failed, {bar.total - bar.n - 1} to go", refresh=False)
                    bar.update()
            except BaseException:
                # Ctrl-C or SIGTERM: drop what has not started and stop what runs (as sweep.run_many);
                # finished runs are already stored, so a re-run resumes from them.
                cancel.set()
                for f in futures:
                    f.cancel()
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
    store.write_tables(*tables(chosen, exp.parameters, rule.interval))
    return root


def sweep(experiment: str | Path, out: str | Path | None = None, *, jobs: int | None = None,
          table: str = "runs", progress: bool = False) -> pd.DataFrame:
    """Runs (or resumes) an experiment and returns one of its tables (see ``airlink.load``)."""
    return load(run_experiment(experiment, out, jobs=jobs, progress=progress), table)
