"""The result store of a sweep: one small record per finished run, assembled into Parquet tables.

Layout of a store folder::

    manifest.json      format version, airlink version, the experiment, hashes of its input files,
                       the code that last wrote the tables (``code``: git commit, core build, date)
    index.jsonl        the sha256 of every record, time series folder and table, a line appended
                       as each is written (the last line of a key counts): what lets a resume or
                       a report notice a record or folder damaged, cut short, edited or removed
    runs/KEY.json      one per finished run (ok or failed), written atomically; KEY hashes the
                       run's resolved scenario, seed and input files, so a re-run finds what is done
    series/KEY/        the run's time series: a results folder as `airlink run --out` writes
                       (flows, links, events, rtt, intervals .parquet), written before its record
    runs.parquet       one row per run and flow, every swept parameter a column
    metrics.parquet    one row per run, metric and flow class: the per-run values the statistics
                       use, the derived metrics (derived.*) included
    summary.parquet    per configuration, metric and class: mean, 95 % interval, rule (t or z), n
    paired.parquet     with a reference: per run, metric and class, its value, the reference
                       configuration's value at the same repetition (same seed), their difference
    differences.parquet  per configuration, metric and class: the mean paired difference with its
                       95 % interval, and relative to the reference's mean

Records are the truth; the tables are rebuilt from them at the end of every sweep, each replaced
whole (written beside and renamed), so a kill at any moment leaves either the old table or the new.

Damage: a resume runs again every run whose record or series folder is not what the index says
(naming each on stderr); ``load`` and ``airlink report`` refuse a store with such a run or table,
naming it. A store written before the index (no index.jsonl) is said to be so once, its records
checked for their shape only; a sweep into it then adds their checksums to a new index.

Code: each record holds ``core``, the build of the simulation core that made it
(``airlink.version.core_build``), and the index repeats it, so a resume finds without reading every
record which runs another build made (``Store.stale``). Those are not mixed with this build's
silently: ``airlink.experiment_run.run_experiment`` refuses them unless told to run them again
or to reuse them. A record without ``core`` (an airlink from before it was kept) counts as made
by an unknown build.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from airlink import files, stats
from airlink.atomic import MARKER as OUTPUT_MARKER
from airlink.atomic import FolderExistsError, _pid_alive, check_output, write_marker
from airlink.results import SUMMARY, make_manifest, write_json
from airlink.results import MANIFEST as RUN_MANIFEST
from airlink.version import code_identity, core_build, version

FORMAT = 2  # 2: keys hash input files; derived metrics; time series; paired tables (index.jsonl optional)
MANIFEST = "manifest.json"
INDEX = "index.jsonl"
MAX_NAMED = 5  # damaged runs named in one refusal; the rest are counted


class StoreError(FolderExistsError):
    """A folder is not a store this airlink can use (the CLI refuses it with exit code 1)."""


def write_atomic(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Writes ``path`` whole or not at all: a temporary sibling, renamed. A killed process leaves
    the temporary at worst; ``durable`` (fsync) also covers a power cut, at about 4 ms a file."""
    tmp = path.parent / f".{path.name}.{os.getpid()}-{threading.get_ident()}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
        if durable:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)


def _write_parquet(df: pd.DataFrame, path: Path) -> None:
    tmp = path.parent / f".{path.name}.{os.getpid()}.tmp"
    df.to_parquet(tmp, index=False)
    os.replace(tmp, path)


def read_manifest(root: Path) -> dict[str, Any]:
    """The manifest of a store, refusing anything that is not a store of this format."""
    path = root / MANIFEST
    manifest = files.read_json(path, "sweep store manifest", error=StoreError, missing=None)
    if manifest is None:
        raise StoreError(f"{root}: not an airlink sweep store (no {MANIFEST})")
    if not isinstance(manifest, dict) or manifest.get("store") != "airlink-sweep":
        raise StoreError(f"{path}: not an airlink sweep store")
    if manifest.get("format") != FORMAT:
        raise StoreError(f"{path}: store format {manifest.get('format')!r}, written by airlink "
                         f"{manifest.get('airlink')}; this airlink ({version()}) reads format {FORMAT} only")
    return manifest


def _stderr(message: str) -> None:
    print(f"airlink: {message}", file=sys.stderr, flush=True)


def _sha256(path: Path, kind: str) -> str:
    """A file's sha256 (guarded: a regular file), remembered by the file's identity: a report
    loads several tables, and each load verifies the store."""
    try:
        st = os.stat(path, follow_symlinks=False)
        identity = (str(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    except OSError:
        return files.sha256(path, kind, error=StoreError)  # raises, naming the file
    if identity not in _digests:
        _digests[identity] = files.sha256(path, kind, error=StoreError)
    return _digests[identity]


_digests: dict[tuple[str, int, int, int, int], str] = {}
_told_legacy: set[str] = set()


def folder_digest(folder: Path) -> str:
    """The sha256 of a run's time series folder: of each file's name and sha256, by name. Anything
    in it that is not a regular file is damage (StoreError)."""
    h = hashlib.sha256()
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if not entry.is_file(follow_symlinks=False):
            raise StoreError(f"{entry.path}: not a regular file: expected a file of a run's time series")
        h.update(f"{entry.name}\0{_sha256(Path(entry.path), 'time series file')}\n".encode())
    return h.hexdigest()


def record_problem(record: Any, key: str) -> str | None:
    """What is wrong with the shape of a run record, or None: what a resume and the tables use."""
    if not isinstance(record, dict) or record.get("key") != key:
        return "not the record of this run"
    if record.get("status") not in ("ok", "failed"):
        return "no status ok or failed"
    if not isinstance(record.get("seed"), int) or not isinstance(record.get("params"), list):
        return "no seed or parameters"
    if record["status"] == "ok":
        summary = record.get("summary")
        if not isinstance(summary, dict) or not isinstance(summary.get("flows"), list) \
                or not all(isinstance(f, dict) for f in summary["flows"]):
            return "an ok run without its summary"
        if not isinstance(record.get("derived"), dict) or not isinstance(record.get("metrics"), dict):
            return "an ok run without its metrics"
    return None


class Store:
    """A store folder. ``notice`` says what a resume finds damaged and runs again (stderr)."""

    def __init__(self, root: Path, notice: Callable[[str], None] = _stderr) -> None:
        self.root = Path(root)
        self.runs = self.root / "runs"
        self.notice = notice
        self._lock = threading.Lock()
        self._index: dict[str, dict[str, Any]] | None = None  # loaded on first use
        self._unadopted: dict[str, str] = {}  # an older store's damaged records: what is wrong

    @classmethod
    def open(cls, root: str | Path, manifest: Mapping[str, Any], notice: Callable[[str], None] = _stderr) -> Store:
        """Opens (or creates) a store for a sweep. A store of another format, or a non-empty
        folder that is no store, is refused before anything runs. Runs of other code are found
        per run (``stale``), not by the version number, which stays the same across changes of
        the models. The manifest keeps the ``code`` of the sweep that last wrote the tables
        (``set_code``)."""
        root = Path(root)
        check_output(root, "store")  # a store is resumed; a folder airlink did not make is refused
        old: dict[str, Any] = {}
        if root.exists() and any(p for p in root.iterdir() if p.name != OUTPUT_MARKER):
            old = read_manifest(root)
        store = cls(root, notice)
        store.runs.mkdir(parents=True, exist_ok=True)
        store._sweep_temporaries()
        kept = {k: old[k] for k in ("code", "mixed_code") if k in old}
        body = {"store": "airlink-sweep", "format": FORMAT, "airlink": version(), **kept, **manifest}
        write_atomic(root / MANIFEST, json.dumps(body, indent=1).encode())
        write_marker(root, "store")
        store._adopt()
        return store

    # --- the index -------------------------------------------------------------------------

    @property
    def index_path(self) -> Path:
        return self.root / INDEX

    @property
    def legacy(self) -> bool:
        """A store of an airlink from before the index: nothing to check records against."""
        return not self.index_path.exists()

    def index(self) -> dict[str, dict[str, Any]]:
        """``{"run:KEY": {"record": sha, "series": sha | None}, "table:NAME": {"sha256": sha}}``:
        the last line of each key. A line that is not whole (a kill while appending) or not an
        entry is skipped: the run it names is then unchecked, and a resume runs it again."""
        if self._index is None:
            text = files.read_text(self.index_path, "store index", files.MAX_INDEX_BYTES, error=StoreError,
                                   missing="")
            index: dict[str, dict[str, Any]] = {}
            for number, line in enumerate(text.splitlines(), 1):
                try:
                    entry = files.parse_json(line, f"{self.index_path}:{number}", "store index line",
                                             error=StoreError, max_depth=2)
                except StoreError:
                    continue
                if isinstance(entry, dict) and isinstance(entry.get("run"), str) and isinstance(entry.get("record"), str):
                    index[f"run:{entry['run']}"] = entry
                elif isinstance(entry, dict) and isinstance(entry.get("table"), str) and isinstance(entry.get("sha256"), str):
                    index[f"table:{entry['table']}"] = entry
            self._index = index
        return self._index

    def _append(self, entry: Mapping[str, Any]) -> None:
        line = (json.dumps(entry, separators=(",", ":")) + "\n").encode()
        with self._lock:
            # One write() of one line with O_APPEND: lines of concurrent writers do not interleave.
            fd = os.open(self.index_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
            index = self.index()
            index[f"run:{entry['run']}" if "run" in entry else f"table:{entry['table']}"] = dict(entry)

    def _tell_legacy(self) -> None:
        if (root := str(self.root.resolve())) not in _told_legacy:  # once per store and process
            _told_legacy.add(root)
            self.notice(f"{self.root}: written by an airlink without checksums (no {INDEX}): its records "
                        "are checked for their shape only")

    def _adopt(self) -> None:
        """Gives an older store an index: its records that have the right shape, as they are now
        (said once: they cannot be checked against what was written)."""
        if not self.legacy:
            return
        keys = sorted(p.stem for p in self.runs.glob("*.json"))
        if keys:
            self._tell_legacy()
        entries = []
        for key in keys:
            record, problem = self._check(key)
            if problem:
                self._unadopted[key] = problem
            if record is not None:
                series = folder_digest(self.series_path(key)) if record.get("series") else None
                entries.append({"run": key, "record": _sha256(self.record_path(key), "run record"), "series": series,
                                "core": record.get("core")})
        write_atomic(self.index_path, "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in entries).encode())
        self._index = None

    # --- runs ------------------------------------------------------------------------------

    def _sweep_temporaries(self) -> None:
        """Removes temporary files of killed writers (their pid is part of the name)."""
        for tmp in [*self.runs.glob(".*.tmp"), *self.root.glob(".*.tmp"), *self.root.glob("series/.*.tmp")]:
            pid = tmp.name.rsplit(".", 2)[-2].split("-")[0]
            if pid.isdigit() and int(pid) != os.getpid() and not _pid_alive(int(pid)):
                if tmp.is_dir():
                    shutil.rmtree(tmp, ignore_errors=True)
                else:
                    tmp.unlink(missing_ok=True)

    def record_path(self, key: str) -> Path:
        return self.runs / f"{key}.json"

    def _check(self, key: str) -> tuple[dict[str, Any] | None, str | None]:
        """A run's record and None if it is whole; else None and what is wrong (None too for a
        run never stored). Whole: as the index says it was written (record and series folder),
        and of the shape a resume and the tables need."""
        path = self.record_path(key)
        legacy = self.legacy
        entry = None if legacy else self.index().get(f"run:{key}")
        try:
            data = files.read_bytes(path, "run record", files.MAX_JSON_BYTES, error=StoreError, missing=None)
            if data is None:
                return None, (f"{path}: missing, though the store's index lists it" if entry else None)
            if not legacy:
                if entry is None:
                    return None, self._unadopted.get(key) or \
                        f"{path}: not in the store's index (stored by a sweep that was stopped?)"
                if hashlib.sha256(data).hexdigest() != entry["record"]:
                    return None, f"{path}: damaged or edited (its sha256 is not the one in {INDEX})"
            text = files.decode_text(data, str(path), "run record", error=StoreError)
            record = files.parse_json(text, str(path), "run record", error=StoreError, allow_nan=True)
        except StoreError as e:
            return None, str(e)
        if problem := record_problem(record, key):
            return None, f"{path}: {problem}"
        if record.get("series"):
            folder = self.series_path(key)
            if not folder.is_dir():
                return None, f"{folder}: missing: the run's time series"
            if not legacy:
                try:
                    digest = folder_digest(folder)
                except StoreError as e:
                    return None, str(e)
                if digest != entry.get("series"):  # type: ignore[union-attr]
                    return None, f"{folder}: damaged, cut short or edited (its sha256 is not the one in {INDEX})"
        if legacy:
            self._tell_legacy()
        return record, None

    def get(self, key: str) -> dict[str, Any] | None:
        """A finished run's whole record; None if there is none or it is damaged (said through
        ``notice``: the sweep runs it again)."""
        record, problem = self._check(key)
        if problem:
            self.notice(f"{problem}: running it again")
        return record

    def put(self, record: Mapping[str, Any], series: str | None = None) -> None:
        """Stores a run's record (``series``: the digest ``put_series`` returned) and its checksums."""
        data = json.dumps(record).encode()
        # Not fsynced: a kill cannot tear a renamed file, and the index catches what a power cut did.
        write_atomic(self.record_path(record["key"]), data, durable=False)
        self._append({"run": record["key"], "record": hashlib.sha256(data).hexdigest(), "series": series,
                      "core": record.get("core")})

    def stale(self, keys: Iterable[str]) -> dict[str, str | None]:
        """Of ``keys``, the finished (ok) runs another build of the core made: key -> that build,
        or None when the record does not say (an airlink from before builds were recorded)."""
        ours = core_build()
        index = self.index()
        found = {}
        for key in keys:
            entry = index.get(f"run:{key}")
            if entry is not None and entry.get("core") != ours:
                record, _ = self._check(key)
                if record is not None and record["status"] == "ok":
                    found[key] = record.get("core")
        return found

    def set_code(self, code: Mapping[str, Any], mixed: int = 0) -> None:
        """Records in the manifest the code that wrote the tables, and how many of the runs they
        hold another build made (reused with ``allow_mixed``; 0 removes the note)."""
        manifest = read_manifest(self.root)
        manifest["code"] = dict(code)
        manifest.pop("mixed_code", None)
        if mixed:
            manifest["mixed_code"] = {"runs": mixed, "note": "made by another build of the core (or one not "
                                      "recorded), reused with --allow-mixed"}
        write_atomic(self.root / MANIFEST, json.dumps(manifest, indent=1).encode())

    def series_path(self, key: str) -> Path:
        return self.root / "series" / key

    def put_series(self, record: Mapping[str, Any], series: Mapping[str, bytes], resolved: str) -> str:
        """A run's time series as a results folder, whole or not at all; returns its digest for
        the index (see ``folder_digest``)."""
        summary = record["summary"]
        code = {**code_identity(), "core": record.get("core")}  # the build that ran it (a Dask worker's)
        manifest = make_manifest(version=version(), scenario_name=summary["scenario"], source="sweep",
                                 seed=record["seed"], overrides=[f"{k}={v}" for k, v in record["params"]],
                                 resolved_scenario=resolved, completed=summary["completed"], command=[],
                                 code=code)
        # Written beside and renamed, as a record: no lock (a key is written by one thread at a
        # time, and a lock costs more than the run of a small scenario).
        final = self.series_path(record["key"])
        tmp = final.parent / f".{final.name}.{os.getpid()}-{threading.get_ident()}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for name, data in series.items():
            (tmp / f"{name}.parquet").write_bytes(data)
        (tmp / SUMMARY).write_text(json.dumps(summary), encoding="utf-8")
        write_json(tmp / RUN_MANIFEST, manifest)
        digest = folder_digest(tmp)
        shutil.rmtree(final, ignore_errors=True)  # the series of a failed record's earlier attempt
        os.replace(tmp, final)
        return digest

    def write_tables(self, frames: Mapping[str, pd.DataFrame]) -> None:
        for name, frame in frames.items():
            path = self.root / f"{name}.parquet"
            _write_parquet(frame, path)
            self._append({"table": name, "sha256": _sha256(path, "table")})

    # --- checks of a finished store ---------------------------------------------------------

    def problems(self, tables: Iterable[str] = ()) -> list[str]:
        """What is damaged: every run (records and the index's), their series, and ``tables``."""
        keys = {p.stem for p in self.runs.glob("*.json")} if self.runs.is_dir() else set()
        if not self.legacy:
            keys |= {k.removeprefix("run:") for k in self.index() if k.startswith("run:")}
        found = [problem for key in sorted(keys) if (problem := self._check(key)[1])]
        for name in tables:
            path = self.root / f"{name}.parquet"
            entry = None if self.legacy else self.index().get(f"table:{name}")
            if entry is not None and path.exists():
                try:
                    if _sha256(path, "table") != entry["sha256"]:
                        found.append(f"{path}: damaged or edited (its sha256 is not the one in {INDEX})")
                except StoreError as e:
                    found.append(str(e))
        return found

    def verify(self, tables: Iterable[str] = ()) -> None:
        """Refuses (StoreError) a store with a damaged run or table, naming them."""
        found = self.problems(tables)
        if found:
            more = f"; and {len(found) - MAX_NAMED} more" if len(found) > MAX_NAMED else ""
            raise StoreError(f"{self.root}: {len(found)} damaged: " + "; ".join(found[:MAX_NAMED]) + more +
                             ": run the sweep again (it runs damaged runs again and rebuilds the tables)")


def _flat(prefix: str, node: Mapping[str, Any], out: dict[str, Any]) -> None:
    for k, v in node.items():
        if isinstance(v, dict):
            _flat(f"{prefix}{k}.", v, out)
        elif v is not None and not isinstance(v, list):  # absent stays NaN; a null table adds no column
            out[f"{prefix}{k}"] = v


def _column(values: list[Any]) -> list[Any]:
    """One type per parameter column: int, float or text."""
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return values
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return [float(v) for v in values]
    return [str(v) for v in values]


TABLES = ("runs", "metrics", "summary", "paired", "differences")


def tables(records: Iterable[Mapping[str, Any]], parameters: Iterable[str], interval: str,
           references: Mapping[int, int] | None = None) -> dict[str, pd.DataFrame]:
    """The tables of the records of one sweep, in (config, rep) order; ``references`` maps a
    configuration to the one it is paired with."""
    records = sorted(records, key=lambda r: (r["config"], r["rep"]))
    parameters = list(parameters)
    run_rows, metric_rows = [], []
    for r in records:
        head = {"config": r["config"], **dict(r["params"]), "rep": r["rep"], "seed": r["seed"],
                "key": r["key"], "status": r["status"], "error": r.get("error")}
        summary = r.get("summary") or {}
        run_level = {k: summary.get(k) for k in ("completed", "sim_time_s", "events")}
        for flow in summary.get("flows") or [None]:
            row = {**head, **run_level}
            if flow is not None:
                _flat("", flow, row)
                row["flow"] = row.pop("id")
            run_rows.append(row)
        for metric, by_class in (r.get("metrics") or {}).items():
            for cls, value in by_class.items():
                metric_rows.append({**head, "metric": metric, "class": cls, "value": value})
    runs = pd.DataFrame(run_rows)
    metrics = pd.DataFrame(metric_rows, columns=["config", *parameters, "rep", "seed", "key", "status", "error",
                                                 "metric", "class", "value"])
    for frame in (runs, metrics):
        for p in parameters:
            if len(frame):
                frame[p] = _column(list(frame[p]))
    paired = pair(metrics, parameters, references or {})
    return {"runs": runs, "metrics": metrics, "summary": summarize(metrics, parameters, interval),
            "paired": paired, "differences": differences(paired, parameters, interval)}


def pair(metrics: pd.DataFrame, parameters: list[str], references: Mapping[int, int]) -> pd.DataFrame:
    """Each run's value beside its reference configuration's at the same repetition (the same
    seed: common random numbers), for the repetitions both have."""
    columns = ["config", *parameters, "rep", "seed", "metric", "class", "value", "reference_config",
               "reference_value", "difference", "relative"]
    ok = metrics[metrics["status"] == "ok"]
    runs = ok[ok["config"].isin(list(references))].copy()
    runs["reference_config"] = runs["config"].map(references)
    refs = ok[["config", "rep", "metric", "class", "value"]].rename(
        columns={"config": "reference_config", "value": "reference_value"})
    paired = runs.merge(refs, on=["reference_config", "rep", "metric", "class"], how="inner")
    paired["difference"] = paired["value"] - paired["reference_value"]
    with np.errstate(divide="ignore", invalid="ignore"):
        paired["relative"] = np.where(paired["reference_value"] != 0,
                                      paired["value"] / paired["reference_value"] - 1, math.nan)
    return paired[columns].sort_values(["config", "rep", "metric", "class"], ignore_index=True)


def differences(paired: pd.DataFrame, parameters: list[str], interval: str) -> pd.DataFrame:
    """Per configuration, metric and class: the mean paired difference and its 95 % half-width
    (t, or [S3]'s z), and the same relative to the reference's mean (a ratio of means, as the
    TCP-PF study's +12 %; its interval treats the reference mean as exact)."""
    columns = ["config", *parameters, "reference_config", "metric", "class", "rule", "n", "reference_mean",
               "mean_difference", "ci95", "relative", "relative_ci95"]
    rows = []
    for (config, metric, cls), g in paired.groupby(["config", "metric", "class"], sort=True):
        keep = g[g["difference"].notna() & ~g["difference"].isin([math.inf, -math.inf])]
        d = keep["difference"].astype(float).tolist()
        half = stats.t_halfwidth(d) if interval == "t" else stats.z_halfwidth(d)
        ref_mean = stats.mean(keep["reference_value"].astype(float).tolist())
        scale = abs(ref_mean) if ref_mean and not math.isnan(ref_mean) else math.nan
        first = g.iloc[0]
        rows.append({"config": config, **{p: first[p] for p in parameters},
                     "reference_config": first["reference_config"], "metric": metric, "class": cls,
                     "rule": interval, "n": len(d), "reference_mean": ref_mean, "mean_difference": stats.mean(d),
                     "ci95": half, "relative": stats.mean(d) / ref_mean if scale == scale else math.nan,
                     "relative_ci95": half / scale})
    return pd.DataFrame(rows, columns=columns)


def summarize(metrics: pd.DataFrame, parameters: list[str], interval: str) -> pd.DataFrame:
    """Per configuration, metric and class: n, mean, s.d. and the 95 % half-width (t, or [S3]'s z)."""
    rows = []
    for (config, metric, cls), group in metrics.groupby(["config", "metric", "class"], sort=True):
        xs = [float(v) for v in group["value"] if v is not None and not math.isnan(v)]
        half = stats.t_halfwidth(xs) if interval == "t" else stats.z_halfwidth(xs)
        first = group.iloc[0]
        rows.append({"config": config, **{p: first[p] for p in parameters}, "metric": metric, "class": cls,
                     "rule": interval, "n": len(xs), "mean": stats.mean(xs), "sd": stats.sample_sd(xs),
                     "ci95": half})
    return pd.DataFrame(rows, columns=["config", *parameters, "metric", "class", "rule", "n", "mean", "sd", "ci95"])


def load(results: str | Path, table: str = "runs") -> pd.DataFrame:
    """A table of a finished sweep's store: ``runs`` (per run and flow), ``metrics``, ``summary``,
    ``paired`` or ``differences`` (see the module's layout)."""
    root = Path(results)
    read_manifest(root)
    if table not in TABLES:
        raise ValueError(f"table must be one of {', '.join(TABLES)}, not {table!r}")
    path = root / f"{table}.parquet"
    if not path.exists():
        raise StoreError(f"{root}: no {path.name}: the sweep has not finished; run it again to complete it")
    Store(root).verify([table])
    try:
        with files.open_regular(path, "table", error=StoreError) as f:
            return pd.read_parquet(f)
    except StoreError:
        raise
    except (OSError, ValueError, pa.ArrowException) as e:
        raise StoreError(f"{path}: damaged table ({type(e).__name__}): run the sweep again to rebuild it") from None


def load_series(results: str | Path, key: str, table: str = "flows") -> pd.DataFrame:
    """One run's time series table (``flows``, ``links``, ``events``, ``rtt``, ``intervals``; with the
    scenario's ``event_log``, ``segments`` and ``slots``)."""
    from airlink.results import read_results

    root = Path(results)
    read_manifest(root)
    folder = root / "series" / key
    if not folder.exists():
        raise StoreError(f"{folder}: no time series for run {key} (the experiment has series = false?)")
    _, problem = Store(root)._check(key)
    if problem:
        raise StoreError(f"{problem}: run the sweep again to run it again")
    return read_results(folder).table(table)


def format_summary(summary: pd.DataFrame, parameters: list[str], metrics: list[str] | None = None) -> str:
    """The summary as a wide text table (``airlink.tables.wide``): a row per configuration, a
    column per metric and flow class with its mean ± 95 % half-width, and n; ``metrics`` those
    shown (default: all), the derived metrics the experiment did not name are in summary.parquet."""
    from airlink.tables import wide

    if summary.empty:
        return "(no results)"
    rule = {"t": "Student t", "z": "z = 1.96 (the DCCP study's rule)"}
    how = " and ".join(rule.get(r, r) for r in summary["rule"].unique())
    table = wide(summary, parameters, metrics).to_string(index=False)
    return f"{table}\nmean ± 95 % half-width by {how}; n runs per configuration"
