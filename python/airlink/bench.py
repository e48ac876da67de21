"""``airlink bench``: figures of speed on this machine. Reported, never asserted (style P9)."""

from __future__ import annotations

import itertools
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


def bench_reproduce(study: str = "wipemu", jobs: int | None = None) -> list[Measurement]:
    """The whole ``airlink reproduce STUDY`` (all parts, the study's seeds) into a throw-away
    folder, then again into the same folder, where every run is found in its store (the report
    is recomputed)."""
    from airlink.studies import STUDIES, reproduce_into

    seeds = STUDIES[study].default_seeds
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for what in ("all parts", "again, every run reused"):
            start = time.perf_counter()
            _, parts = reproduce_into(study, Path(tmp) / study, jobs=jobs, seeds=seeds, settings={"seeds": seeds})
            wall = time.perf_counter() - start
            runs = sum(1 for _ in (Path(tmp) / study / "store").glob("*/runs/*.json"))
            results.append(Measurement(f"reproduce {study} ({what})", wall, "s",
                                       f"{runs:,} runs in {len(parts)} parts, {jobs or os.cpu_count()} threads"))
    return results


def bench_dumbbell(seconds: int = 100, congestions: tuple[str, ...] = ("newreno",)) -> list[Measurement]:
    """The TCP dumbbell: link packet transmissions per wall second, 1 and 10 flows, over 10 Mbit/s,
    100 Mbit/s and 1 Gbit/s bottlenecks (``cargo bench --bench dumbbell`` also gives memory), for
    each of ``congestions`` (the dumbbell's own flows are NewReno; ``bbr`` paces)."""
    results = []
    for congestion, rate, flows in itertools.product(congestions, (10_000_000, 100_000_000, 1_000_000_000), (1, 10)):
        text = _core.dumbbell_scenario(rate, flows, seconds, 22)
        if congestion != "newreno":
            text = text.replace("[[flow]]\n", f'[[flow]]\ncongestion = "{congestion}"\n')
        # The run is on this thread: its CPU time is the simulator's cost, whatever else the
        # machine runs (wall time on a shared machine counts the others' time slices too).
        start, cpu_start = time.perf_counter(), time.thread_time()
        summary = json.loads(_core.run_summary(text, "dumbbell.toml"))
        wall, cpu = time.perf_counter() - start, time.thread_time() - cpu_start
        sent = sum(link["packets_out"] for link in summary["links"])
        goodput = sum(f["goodput_bps"] or 0 for f in summary["flows"])
        cc = "" if congestions == ("newreno",) else f", {congestion}"
        results.append(Measurement(
            f"dumbbell {rate // 1_000_000} Mbit/s, {flows} flow{'s' if flows > 1 else ''}{cc}", sent / wall, "pkts/s",
            f"{summary['sim_time_s'] / wall:,.1f} simulated s per wall s; {1e9 * cpu / sent:,.0f} ns of CPU per link "
            f"transmission; goodput {goodput / 1e6:,.1f} Mbit/s; target 2 M pkts/s",
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


def _timed_sweep(root: Path, scenario: Path, count: int, kind: str, n: int, series: bool) -> float:
    """The wall time of a sweep of ``count`` repetitions of ``scenario`` into a new store."""
    from airlink import experiment_run

    name = f"{scenario.stem}-{kind}-{n}-{series}-{count}"
    (root / f"{name}.toml").write_text(
        f'[experiment]\nscenario = "{scenario}"\nseries = {str(series).lower()}\n'
        f'metrics = ["flows.*.goodput_bps"]\n[repetitions]\ncount = {count}\n', encoding="utf-8")
    start = time.perf_counter()
    experiment_run.run_experiment(root / f"{name}.toml", root / name, jobs=n if kind == "threads" else None,
                                  dask=f"local:{n}" if kind == "dask" else None)
    return time.perf_counter() - start


def bench_sweep(runs: int = 2000, dask: bool = True) -> list[Measurement]:
    """``airlink sweep``'s overhead per run (records, resume look-ups, metrics, tables; with and
    without time series) over ``runs`` runs of a trivial scenario, and its scaling from 1 to 2
    local threads and (``dask``) Dask worker processes on ``runs // 40`` runs of a real one
    (scenarios/wipemu/adaptive.toml, about 0.1 s each). Fixed costs (start-up, a LocalCluster's start) are measured
    with a 1-run sweep and left out of the per-run figures."""
    from airlink import stats

    stats.t_quantile(3)  # imports scipy.stats (2 s): a cost of the process, not of a run
    results = []
    kinds = ["threads", "dask"] if dask else ["threads"]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        trivial = root / "trivial.toml"
        trivial.write_text(TRIVIAL_SCENARIO, encoding="utf-8")
        start = time.perf_counter()
        for seed in range(runs):
            _core.run_summary(TRIVIAL_SCENARIO, "trivial.toml", seed)
        bare = (time.perf_counter() - start) / runs
        results.append(Measurement("trivial run alone (core)", bare * 1e6, "us/run", f"{runs:,} runs, one thread"))

        def per_run(scenario: Path, count: int, kind: str, n: int, series: bool) -> tuple[float, str]:
            fixed = _timed_sweep(root, scenario, 1, kind, n, series)
            wall = _timed_sweep(root, scenario, count, kind, n, series)
            # too few runs to see past the fixed cost's noise: the whole wall per run instead
            each = (wall - fixed) / (count - 1) if wall > 2 * fixed else wall / count
            return each, f"{count:,} runs in {wall:.1f} s, {fixed:.1f} s of it fixed"

        for kind, series in [("threads", False), ("threads", True), *[(k, False) for k in kinds[1:]]]:
            each, detail = per_run(trivial, runs, kind, 1, series)
            results.append(Measurement(f"sweep overhead, {kind} ×1{', with time series' if series else ''}",
                                       (each - bare) * 1e6, "us/run", f"{detail}; {1 / each:,.0f} runs/s"))
        wipemu = scenario_dir() / "wipemu" / "adaptive.toml"
        count = max(runs // 40, 2)
        for kind in kinds:
            one, _ = per_run(wipemu, count, kind, 1, False)
            two, detail = per_run(wipemu, count, kind, 2, False)
            results.append(Measurement(f"sweep of WIPEMU runs, {kind} ×1 → ×2", one / two, "x faster",
                                       f"{1 / one:,.1f} → {1 / two:,.1f} runs/s; ×2: {detail}; {os.cpu_count()} CPUs"))
    return results


def run_benchmarks(*, full: bool = False, repeats: int = 5, jobs: int | None = None, dumbbell: bool = False,
                   sweep_runs: int = 0, studies: Sequence[str] = ()) -> list[Measurement]:
    results = [bench_event_queue(), *bench_wipemu_run(repeats)]
    if dumbbell:
        results.extend(bench_dumbbell())
    if sweep_runs:
        results.extend(bench_sweep(sweep_runs))
    for study in dict.fromkeys([*(["wipemu"] if full else []), *studies]):
        results.extend(bench_reproduce(study, jobs))
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
