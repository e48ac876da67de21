"""The result store of a sweep: one small record per finished run, assembled into Parquet tables.

Layout of a store folder::

    manifest.json      format version, airlink version, the experiment, hashes of its input files
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
"""

from __future__ import annotations

import json
import math
import os
import shutil
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from airlink import stats
from airlink.atomic import FolderExistsError, _pid_alive
from airlink.results import SUMMARY, make_manifest, write_json
from airlink.results import MANIFEST as RUN_MANIFEST
from airlink.version import version

FORMAT = 2  # 2: keys hash input files; derived metrics; time series; paired tables
MANIFEST = "manifest.json"


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
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise StoreError(f"{root}: not an airlink sweep store (no {MANIFEST})") from None
    except (OSError, ValueError) as e:
        raise StoreError(f"{path}: unreadable manifest: {e}") from None
    if not isinstance(manifest, dict) or manifest.get("store") != "airlink-sweep":
        raise StoreError(f"{path}: not an airlink sweep store")
    if manifest.get("format") != FORMAT:
        raise StoreError(f"{path}: store format {manifest.get('format')!r}, written by airlink "
                         f"{manifest.get('airlink')}; this airlink ({version()}) reads format {FORMAT} only")
    return manifest


class Store:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.runs = root / "runs"

    @classmethod
    def open(cls, root: str | Path, manifest: Mapping[str, Any]) -> Store:
        """Opens (or creates) a store for a sweep. A store of another format or airlink version,
        or a non-empty folder that is no store, is refused before anything runs."""
        root = Path(root)
        if root.exists() and any(root.iterdir()):
            old = read_manifest(root)
            if old.get("airlink") != version():
                raise StoreError(f"{root / MANIFEST}: written by airlink {old.get('airlink')}, this is "
                                 f"{version()}: its runs may differ; sweep into another folder")
        store = cls(root)
        store.runs.mkdir(parents=True, exist_ok=True)
        store._sweep_temporaries()
        body = {"store": "airlink-sweep", "format": FORMAT, "airlink": version(), **manifest}
        write_atomic(root / MANIFEST, json.dumps(body, indent=1).encode())
        return store

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

    def get(self, key: str) -> dict[str, Any] | None:
        """A finished run's record; None if there is none, or only what a power cut left of one."""
        try:
            record = json.loads(self.record_path(key).read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return None
        return record if isinstance(record, dict) and record.get("key") == key else None

    def put(self, record: Mapping[str, Any]) -> None:
        # Not fsynced: a kill cannot tear a renamed file, and get() re-runs a record a power cut emptied.
        write_atomic(self.record_path(record["key"]), json.dumps(record).encode(), durable=False)

    def series_path(self, key: str) -> Path:
        return self.root / "series" / key

    def put_series(self, record: Mapping[str, Any], series: Mapping[str, bytes], resolved: str) -> None:
        """A run's time series as a results folder, whole or not at all."""
        summary = record["summary"]
        manifest = make_manifest(version=version(), scenario_name=summary["scenario"], source="sweep",
                                 seed=record["seed"], overrides=[f"{k}={v}" for k, v in record["params"]],
                                 resolved_scenario=resolved, completed=summary["completed"], command=[])
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
        shutil.rmtree(final, ignore_errors=True)  # the series of a failed record's earlier attempt
        os.replace(tmp, final)

    def write_tables(self, frames: Mapping[str, pd.DataFrame]) -> None:
        for name, frame in frames.items():
            _write_parquet(frame, self.root / f"{name}.parquet")


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
    return pd.read_parquet(path)


def load_series(results: str | Path, key: str, table: str = "flows") -> pd.DataFrame:
    """One run's time series table (``flows``, ``links``, ``events``, ``rtt``, ``intervals``; with the
    scenario's ``event_log``, ``segments`` and ``slots``)."""
    from airlink.results import read_results

    root = Path(results)
    read_manifest(root)
    folder = root / "series" / key
    if not folder.exists():
        raise StoreError(f"{folder}: no time series for run {key} (the experiment has series = false?)")
    return read_results(folder).table(table)


def format_summary(summary: pd.DataFrame, parameters: list[str]) -> str:
    """The summary as a text table: each metric's mean ± its 95 % half-width, the rule and n."""
    if summary.empty:
        return "(no results)"
    shown = summary[[*parameters, "metric", "class", "rule", "n"]].copy()
    shown["mean ± 95 %"] = [f"{m:.6g} ± {h:.3g}" if not math.isnan(h) else f"{m:.6g}"
                            for m, h in zip(summary["mean"], summary["ci95"])]
    return shown.to_string(index=False)
