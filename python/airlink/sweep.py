"""Many runs in parallel, summaries only.

``_core.run_summary`` releases the GIL for the whole run, so a thread pool keeps every core
busy without processes. When one run fails or the sweep is interrupted (Ctrl-C, SIGTERM), the
runs still going are cancelled through a shared event the core looks at every 50 ms. Each distinct (scenario, overrides, seed) runs once, however many
figures use it. Results come back in the order the runs were asked for, never in completion
order, so nothing downstream depends on thread timing.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from airlink import _core


@dataclass(frozen=True, order=True)
class RunSpec:
    """One run of a sweep: a scenario file, its overrides and a seed."""

    scenario: str
    overrides: tuple[str, ...]
    seed: int


def default_jobs() -> int:
    return os.cpu_count() or 1


def progress_wanted(quiet: bool) -> bool:
    """A progress bar only for a person watching a terminal."""
    return not quiet and sys.stderr.isatty()


def read_scenarios(specs: Iterable[RunSpec]) -> dict[str, str]:
    """The text of every scenario file, read once so that every run of a sweep sees the same."""
    return {path: Path(path).read_text(encoding="utf-8") for path in dict.fromkeys(s.scenario for s in specs)}


def resolve_all(specs: Iterable[RunSpec], texts: Mapping[str, str]) -> dict[tuple[str, tuple[str, ...]], str]:
    """Validates every distinct (scenario, overrides) before any run starts, so a bad override
    fails in a second rather than after minutes of runs; returns each one's resolved TOML."""
    keys = dict.fromkeys((s.scenario, s.overrides) for s in specs)
    return {(path, o): _core.check_scenario(texts[path], path, list(o)) for path, o in keys}


def run_many(
    specs: Iterable[RunSpec],
    *,
    texts: Mapping[str, str] | None = None,
    jobs: int | None = None,
    progress: bool = False,
    description: str = "runs",
) -> dict[RunSpec, dict[str, Any]]:
    """Runs every distinct spec once and returns {spec: summary dict}, in the order given.

    ``texts`` maps scenario paths to their contents (default: read them now).
    """
    unique = list(dict.fromkeys(specs))
    texts = texts if texts is not None else read_scenarios(unique)
    results: dict[RunSpec, dict[str, Any]] = {}
    executor = ThreadPoolExecutor(max_workers=jobs or default_jobs())
    cancel = threading.Event()
    try:
        futures: dict[Future[str], RunSpec] = {
            executor.submit(_core.run_summary, texts[s.scenario], s.scenario, s.seed, list(s.overrides), cancel): s
            for s in unique
        }
        with tqdm(total=len(unique), desc=description, file=sys.stderr, disable=not progress, unit="run") as bar:
            for future in as_completed(futures):
                results[futures[future]] = json.loads(future.result())
                bar.update()
    except BaseException:
        # Ctrl-C or a failed run: drop what has not started and stop what runs.
        cancel.set()
        executor.shutdown(wait=True, cancel_futures=True)
        raise
    executor.shutdown(wait=True)
    return {s: results[s] for s in unique}
