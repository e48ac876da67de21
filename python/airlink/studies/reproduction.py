"""What every reproduction shares: its runs go through the sweep machinery into a result store
inside the report folder, and its report files are written beside that store.

A report folder ``OUT`` holds::

    store/PART/          a sweep store per part of the study (see ``airlink.store``): a re-run
                         into the same OUT finds its finished runs by their keys and runs only
                         what is missing; ``airlink report OUT/store/PART`` draws the generic report
    reproduction.json    which study, airlink version, parts and settings (seeds, --set, ...) the
                         report shows, the files it wrote, and the code that made it (``code``:
                         git commit, core build, date; ``airlink.version.code_identity``)
    index.html, ...      the study's report

The folder is taken (``airlink.atomic.claim_output``, kind "reproduction") and marked before the
first run, so a reproduction killed at any moment (``kill -9``) is resumed by the same command: its
stored runs are found, only the missing ones run. Nothing in a folder airlink did not mark is ever
deleted or written.

``--only X`` into a folder holding other parts merges: when the settings are the same, every part
already there is computed again from its stored runs (nothing runs again) together with X, so
the report stays one consistent whole. With other settings the parts would not belong together,
so that is refused unless ``--force``, which replaces the report's files and keeps the stored runs
(they are found by their keys, whatever the settings). A stored run is reused only by the build
of the core that made it, the rule of every sweep store (``airlink.experiment_run``); a
reproduction runs the others again (``rerun_stale``) and says how many.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airlink.atomic import MARKER as OUTPUT_MARKER
from airlink.atomic import FolderExistsError, _pid_alive, claim_output, folder_lock
from airlink.experiment import Experiment
from airlink.experiment_run import run_experiment
from airlink.store import Store, load, write_atomic
from airlink.version import code_identity, core_build, version

MARKER = "reproduction.json"
STORE = "store"


class ReproductionError(FolderExistsError):
    """A report folder cannot take this reproduction (the CLI refuses it with exit code 1)."""


def read_marker(out: Path) -> dict[str, Any] | None:
    try:
        marker = json.loads((out / MARKER).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None
    return marker if isinstance(marker, dict) and "study" in marker else None


def plan(out: Path, study: str, all_parts: Sequence[str], parts: Sequence[str], settings: Mapping[str, Any],
         force: bool) -> tuple[str, ...]:
    """The parts to compute into the claimed folder ``out`` when ``parts`` are asked for: those,
    and the parts already there with the same settings (a merge). Refuses, unless ``force``,
    whatever would drop or mix parts of an existing report. Deletes nothing: stored runs of
    another build of the core are run again as a part needs them (``run_part``), and the old
    report's files go when the new report is written (``write_report``)."""
    order = {p: i for i, p in enumerate(all_parts)}
    asked = tuple(sorted(set(parts), key=order.__getitem__))
    old = read_marker(out)
    if old is None:
        return asked  # no report yet (a new folder, or a killed reproduction): its stored runs are reused
    problem = None
    if old["study"] != study:
        problem = f"{out} holds a reproduction of {old['study']}, not {study}"
    elif (old.get("airlink"), old.get("core")) != (version(), core_build()):
        if set(old.get("parts", [])) <= set(asked) or force:
            return asked  # its stored runs are run again by this build (run_part)
        problem = (f"{out} was written by another build of airlink ({old.get('airlink')}); its runs are not "
                   "reused, so the report's other parts cannot be kept")
    else:
        had = [p for p in old.get("parts", []) if p in order]
        if old.get("settings") == dict(settings):
            return tuple(sorted({*had, *asked}, key=order.__getitem__))
        if set(had) <= set(asked):
            return asked  # nothing of the old report is lost
        problem = (f"{out} holds {', '.join(had)} with other settings ({_settings_text(old.get('settings', {}))}) "
                   f"than these ({_settings_text(settings)}); a report of both would mix them")
    if not force:
        raise ReproductionError(f"{problem}: choose another --out, or --force to replace its report (its stored "
                                "runs are kept and reused)")
    return asked


def _settings_text(settings: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in settings.items() if v not in (None, [], ())) or "none"


@contextmanager
def report_folder(out: Path, *, force: bool = False) -> Iterator[Path]:
    """Holds the right to write ``out`` for a whole reproduction (a second one fails at once),
    and takes the folder under airlink's one rule for output folders: new, empty, or a
    reproduction airlink marked (resumed without --force)."""
    from airlink.atomic import check_output

    check_output(out, "reproduction", replace=force)  # before creating anything for a path we refuse
    out.parent.mkdir(parents=True, exist_ok=True)
    with folder_lock(out):
        claim_output(out, "reproduction", force=force)
        yield out


def runs_kept(out: Path) -> int:
    """How many finished runs the stores of the report folder ``out`` hold."""
    return sum(1 for _ in (out / STORE).glob("*/runs/*.json"))


def store_of(out: Path, part: str) -> Path:
    return out / STORE / part


@dataclass(frozen=True)
class Run:
    """One finished run of a reproduction, as its report lists it."""

    scenario: str
    overrides: tuple[str, ...]
    seed: int
    key: str
    summary: dict[str, Any]


def runs_of(exp: Experiment, records: Mapping[tuple[int, int], Mapping[str, Any]]) -> list[Run]:
    """The runs of ``exp`` in grid order (configuration, then repetition)."""
    return [Run(str(exp.scenario_path), c.overrides, exp.run_seed(r), exp.run_key(c, r), records[c.index, r]["summary"])
            for c in exp.configs for r in range(repetitions(records, c.index))]


def repetitions(records: Mapping[tuple[int, int], Any], config: int) -> int:
    """How many repetitions of configuration ``config`` its repetition rule chose."""
    return sum(1 for c, _ in records if c == config)


def run_part(exp: Experiment, store: Path, *, jobs: int | None, progress: bool) -> dict[tuple[int, int], dict[str, Any]]:
    """Runs (or finds in ``store``) every run of ``exp``, as many per configuration as its
    repetition rule decides; returns each chosen run's record by (configuration, repetition).
    A run that failed twice fails the reproduction. Stored runs of another build of the core are
    run again (the sweeps' rule: results of different code are not mixed)."""
    run_experiment(exp, store, jobs=jobs, progress=progress, rerun_stale=True)
    done = Store(store)
    chosen = load(store, "runs")[["config", "rep"]].drop_duplicates()
    records = {}
    for c, r in chosen.itertuples(index=False):
        config = exp.configs[c]
        record = done.get(exp.run_key(config, r))
        if record is None or record["status"] != "ok":
            raise RuntimeError(f"{exp.path}: the run with {'; '.join(config.overrides) or 'no overrides'} and seed "
                               f"{exp.run_seed(r)} failed: {record and record['error']}")
        records[c, r] = record
    return records


def write_report(out: Path, write: Callable[[Path], None], marker: Mapping[str, Any]) -> None:
    """Writes the report files into a temporary folder with ``write``, then moves each into
    ``out`` (each file appears whole); files of the previous report that this one no longer has
    are removed, and ``reproduction.json`` comes last."""
    for stale in out.glob(".report.partial-*"):  # of a killed reproduction
        pid = stale.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not _pid_alive(int(pid)):
            shutil.rmtree(stale, ignore_errors=True)
    tmp = out / f".report.partial-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        write(tmp)
        # A study's writer may mark its folder too; the reproduction's own marker stays.
        names = sorted(p.name for p in tmp.iterdir() if p.name != OUTPUT_MARKER)
        if STORE in names or MARKER in names:
            raise ValueError(f"a report may not write {STORE} or {MARKER}")
        for name in names:
            os.replace(tmp / name, out / name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    old = read_marker(out) or {}
    for name in set(old.get("files", [])) - set(names):
        if "/" not in name and name not in (STORE, MARKER, OUTPUT_MARKER):  # only a file the old report wrote
            (out / name).unlink(missing_ok=True)
    body = {**marker, "airlink": version(), "core": core_build(), "code": code_identity(), "files": names}
    write_atomic(out / MARKER, (json.dumps(body, indent=1) + "\n").encode())


def store_lines(stores: Mapping[str, Path]) -> list[str]:
    """What a report says about where its runs are kept."""
    if not stores:
        return []
    names = ", ".join(f"{STORE}/{part}" for part in stores)
    return [f"Runs are kept in the result store(s) {names} of this folder: a reproduction into it again reuses "
            f"them, and `airlink report {STORE}/PART` draws a part's generic sweep report (means, CDFs, min/max)."]


def write_csv(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    """A report's CSV file: one column per key of any row, in first-seen order."""
    keys = list(dict.fromkeys(k for r in rows for k in r))
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, keys)
        w.writeheader()
        w.writerows(rows)
