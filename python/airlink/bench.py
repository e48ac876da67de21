"""``airlink bench``: figures of speed on this machine. Reported, never asserted (style P9)."""

from __future__ import annotations

import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from airlink import _core
from airlink.scenarios import display_path, scenario_dir
from airlink.version import version


@dataclass(frozen=True)
class Measurement:
    name: str
    value: float
    unit: str
    detail: str = ""


def bench_event_queue(population: int = 10_000, pops: int = 2_000_000) -> Measurement:
    """The engine's event queue alone: a hold model of ``population`` pending events."""
    start = time.perf_counter()
    processed = _core.bench_event_queue(population, pops)
    wall = time.perf_counter() - start
    return Measurement(f"event queue, {population:,} pending", processed / wall, "events/s", f"{processed:,} events in {wall:.3f} s")


def bench_wipemu_run(repeats: int = 5) -> list[Measurement]:
    """One WIPEMU run (adaptive.toml, the study's defaults): median wall time and event rate."""
    path = scenario_dir() / "wipemu" / "adaptive.toml"
    text, source = path.read_text(encoding="utf-8"), display_path(path)
    walls, events = [], 0
    for _ in range(repeats):
        start = time.perf_counter()
        summary = json.loads(_core.run_summary(text, source))
        walls.append(time.perf_counter() - start)
        events = summary["events"]
    median = statistics.median(walls)
    spread = f"median of {repeats}, {min(walls) * 1e3:.1f} to {max(walls) * 1e3:.1f} ms; {summary['sim_time_s']:.1f} s simulated"
    return [
        Measurement("WIPEMU run (adaptive.toml), wall time", median * 1e3, "ms", spread + "; target well under 100 ms"),
        Measurement("WIPEMU run (adaptive.toml), event rate", events / median, "events/s", f"{events:,} events per run"),
    ]


def bench_reproduce(jobs: int | None = None) -> Measurement:
    """The whole ``airlink reproduce wipemu`` (all parts, 30 seeds), into a throw-away folder."""
    from airlink.studies import STUDIES

    study = STUDIES["wipemu"]
    start = time.perf_counter()
    rep = study.reproduce(jobs=jobs)
    with tempfile.TemporaryDirectory() as tmp:
        study.write_report(rep, Path(tmp) / "wipemu")
    wall = time.perf_counter() - start
    return Measurement("reproduce wipemu (all parts)", wall, "s", f"{len(rep.runs):,} runs, {jobs or os.cpu_count()} threads")


def bench_dumbbell(seconds: int = 100) -> list[Measurement]:
    """The TCP dumbbell: link packet transmissions per wall second, 1 and 10 flows, over 10 Mbit/s,
    100 Mbit/s and 1 Gbit/s bottlenecks (``cargo bench --bench dumbbell`` also gives memory)."""
    results = []
    for rate in (10_000_000, 100_000_000, 1_000_000_000):
        for flows in (1, 10):
            text = _core.dumbbell_scenario(rate, flows, seconds, 22)
            start = time.perf_counter()
            summary = json.loads(_core.run_summary(text, "dumbbell.toml"))
            wall = time.perf_counter() - start
            sent = sum(link["packets_out"] for link in summary["links"])
            goodput = sum(f["goodput_bps"] or 0 for f in summary["flows"])
            results.append(Measurement(
                f"dumbbell {rate // 1_000_000} Mbit/s, {flows} flow{'s' if flows > 1 else ''}", sent / wall, "pkts/s",
                f"{summary['sim_time_s'] / wall:,.1f} simulated s per wall s; goodput {goodput / 1e6:,.1f} Mbit/s; target 2 M pkts/s",
            ))
    return results


#: A run that does almost nothing (one small UDP stream for 100 ms): what a sweep costs beyond it
#: is the machinery's overhead per run.
TRIVIAL_SCENARIO = """name = "trivial"
stop = "100 ms"
[downlink.pipe]
rate = "10 Mbit/s"
delay = "5 ms"
[[flow]]
protocol = "udp"
rate = "1 Mbit/s"
"""


def bench_sweep(runs: int = 2000, dask: bool = True) -> list[Measurement]:
    """``airlink sweep``'s overhead per run on a trivial scenario over ``runs`` runs (records,
    resume look-ups, metrics, tables), with and without time series, and its scaling from 1 to 2
    local threads and (``dask``) 1 to 2 Dask worker processes."""
    from airlink import experiment_run, stats

    stats.t_quantile(3)  # imports scipy.stats (2 s): a cost of the process, not of a run
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "trivial.toml").write_text(TRIVIAL_SCENARIO, encoding="utf-8")
        for series in (False, True):
            for count in (1, runs):
                (root / f"{series}-{count}.toml").write_text(
                    f'[experiment]\nscenario = "trivial.toml"\nseries = {str(series).lower()}\n'
                    f'metrics = ["flows.*.goodput_bps"]\n[repetitions]\ncount = {count}\n', encoding="utf-8")
        start = time.perf_counter()
        for seed in range(runs):
            _core.run_summary(TRIVIAL_SCENARIO, "trivial.toml", seed)
        bare = (time.perf_counter() - start) / runs
        results.append(Measurement("trivial run alone (core)", bare * 1e6, "us/run", f"{runs:,} runs, one thread"))
        setups = [("threads", 1, False), ("threads", 1, True), ("threads", 2, False)]
        if dask:
            setups += [("dask local", 1, False), ("dask local", 2, False)]
        for kind, n, series in setups:
            walls = []
            for count in (1, runs):  # the 1-run sweep's wall is the fixed cost (start-up, tables)
                start = time.perf_counter()
                experiment_run.run_experiment(root / f"{series}-{count}.toml", root / f"{kind}-{n}-{series}-{count}",
                                              jobs=n if kind == "threads" else None,
                                              dask=f"local:{n}" if kind != "threads" else None)
                walls.append(time.perf_counter() - start)
            # too few runs to see past the fixed cost's noise: the whole wall per run instead
            per_run = (walls[1] - walls[0]) / (runs - 1) if walls[1] > 2 * walls[0] else walls[1] / runs
            what = f"sweep, {kind} ×{n}{', with time series' if series else ''}"
            detail = (f"{runs:,} runs in {walls[1]:.1f} s, {walls[0]:.1f} s of it fixed; "
                      + (f"overhead {(per_run - bare) * 1e6:,.0f} us/run over the core alone" if n == 1
                         else "2 workers on a machine of " + str(os.cpu_count()) + " CPUs"))
            results.append(Measurement(what, 1 / per_run, "runs/s", detail))
    return results


def run_benchmarks(*, full: bool = False, repeats: int = 5, jobs: int | None = None, dumbbell: bool = False,
                   sweep_runs: int = 0) -> list[Measurement]:
    results = [bench_event_queue(), *bench_wipemu_run(repeats)]
    if dumbbell:
        results.extend(bench_dumbbell())
    if sweep_runs:
        results.extend(bench_sweep(sweep_runs))
    if full:
        results.append(bench_reproduce(jobs))
    return results


def to_json(results: Sequence[Measurement]) -> str:
    return json.dumps(
        {
            "airlink_version": version(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "results": [asdict(m) for m in results],
        },
        indent=2,
    )


def format_table(results: Sequence[Measurement]) -> str:
    width = max(len(m.name) for m in results)
    lines = [f"{'benchmark':<{width}}  {'value':>14}  unit       detail"]
    for m in results:
        lines.append(f"{m.name:<{width}}  {m.value:>14,.1f}  {m.unit:<9}  {m.detail}")
    return "\n".join(lines)
