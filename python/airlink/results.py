"""The results folder of one run, written incrementally and atomically.

Layout::

    manifest.json    results_format, resolved scenario (TOML text), seed, overrides, versions, command, completed
    summary.json     the core's summary, byte for byte (equal for equal seeds)
    flows.parquet    per-flow samples (time_ns, cwnd_bytes, rate_bps, srtt_us, retransmissions, link_losses, ...)
    intervals.parquet  iperf's interval reports of UDP and DCCP flows (throughput_bps, lost, jitter_ms)
                     or, in an emulation running iperf3, its reports (see airlink.iperf)
    rtt.parquet      every RTT sample (time_ns, flow, rtt_us)
    links.parquet    per-link samples (queue_packets, snr_db, modulation_bits, ...)
    events.parquet   drops and other events (kind, link, flow, bytes, bit_errors)
    segments.parquet with the scenario's ``event_log``: each TCP segment sent, ACK and timeout at
                     the server (kind, seq, bytes, cwnd_bytes)
    slots.parquet    with ``event_log``: each slot a cell served (slot, user, rate_bps, frame_error)

Column names carry their units, exactly as the core names them. Each drained chunk of the run
becomes one Parquet row group, so memory is bounded by the chunk, not by the run length.
"""

from __future__ import annotations

import json
import platform
import sys
from collections.abc import Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from airlink import files

if TYPE_CHECKING:
    import pandas as pd  # imported on first use: it takes a while and `airlink check` needs none of it

TABLES = ("flows", "intervals", "rtt", "links", "events", "segments", "slots")
EVENT_LOG_TABLES = ("segments", "slots")  # only with the scenario's event_log
MANIFEST = "manifest.json"
SUMMARY = "summary.json"
#: The layout of a results folder; raised when a file's meaning or shape changes, so that a
#: reader never takes another layout's fields for its own.
RESULTS_FORMAT = 1


class ResultsError(ValueError):
    """A results folder is damaged or of another format; the message names the file."""

# Arrow types of the core's columns (crates/airlink-sim/src/metrics.rs). The core hands over
# plain Python lists, which carry no type when a table stayed empty, so they are named here;
# a column the core adds later is typed from its values.
COLUMN_TYPES: dict[str, pa.DataType] = {
    "time_ns": pa.uint64(),
    "flow": pa.uint64(),
    "delivered_bytes": pa.uint64(),
    "cwnd_bytes": pa.float64(),
    "ssthresh_bytes": pa.float64(),
    "inflight_bytes": pa.float64(),
    "rate_bps": pa.float64(),
    "loss_event_rate": pa.float64(),
    "srtt_us": pa.float64(),
    "rto_us": pa.float64(),
    "retransmissions": pa.uint64(),
    "spurious_retransmissions": pa.uint64(),
    "timeouts": pa.uint64(),
    "fast_recoveries": pa.uint64(),
    "link_losses": pa.int64(),
    "detected_losses": pa.uint64(),
    "sack_ok": pa.int64(),
    "congestion_distance_segments": pa.float64(),
    "backlog_segments": pa.float64(),
    "pacing_rate_bps": pa.float64(),
    "interval_s": pa.float64(),
    "throughput_bps": pa.float64(),
    "received": pa.uint64(),
    "lost": pa.uint64(),
    "out_of_order": pa.uint64(),
    "jitter_ms": pa.float64(),
    "rtt_us": pa.float64(),
    "link": pa.string(),
    "queue_packets": pa.uint64(),
    "queue_bytes": pa.uint64(),
    "snr_db": pa.float64(),
    "predicted_snr_db": pa.float64(),
    "modulation_bits": pa.int64(),
    "subband": pa.int64(),
    "kind": pa.string(),
    "bytes": pa.uint64(),
    "bit_errors": pa.uint64(),
    "seq": pa.uint64(),
    "slot": pa.uint64(),
    "user": pa.uint64(),
    "frame_error": pa.uint64(),
}

#: The columns of the tables every run has, as the core writes them (crates/airlink-net/src/
#: metrics.rs; a test compares them with a simulation's). A table a run did not write reads as an
#: empty DataFrame with these columns. An emulation of iperf3 adds to ``intervals`` what the
#: kernel's TCP sender reports: retransmissions, cwnd_bytes, srtt_us.
TABLE_COLUMNS: dict[str, tuple[str, ...]] = {
    "flows": ("time_ns", "flow", "delivered_bytes", "cwnd_bytes", "ssthresh_bytes", "inflight_bytes", "rate_bps",
              "loss_event_rate", "srtt_us", "rto_us", "retransmissions", "spurious_retransmissions", "timeouts",
              "fast_recoveries", "link_losses", "detected_losses", "sack_ok", "congestion_distance_segments",
              "backlog_segments", "pacing_rate_bps"),
    "intervals": ("time_ns", "flow", "interval_s", "bytes", "throughput_bps", "received", "lost", "out_of_order",
                  "jitter_ms"),
    "rtt": ("time_ns", "flow", "rtt_us"),
}

Drained = Mapping[str, Mapping[str, Sequence[Any]]]


def import_pandas_now() -> None:
    """Imports pandas before a run, not in the middle of it.

    pyarrow imports pandas lazily on the first ``pa.array`` call, inside a Cython function
    that swallows exceptions: a Ctrl-C or SIGTERM arriving during that import (a second or
    so) would be lost and the run would go on. Imported here, the signal raises as usual.
    """
    import pandas  # noqa: F401


def to_arrow(columns: Mapping[str, Sequence[Any]]) -> pa.Table:
    """One drained table as an Arrow table with the core's column types."""
    return pa.table({name: pa.array(values, type=COLUMN_TYPES.get(name)) for name, values in columns.items()})


class ParquetSink:
    """Appends drained chunks to one Parquet file per table, a row group per chunk."""

    def __init__(self, folder: Path) -> None:
        import_pandas_now()
        self.folder = folder
        self._writers: dict[str, pq.ParquetWriter] = {}
        self._empty_schemas: dict[str, pa.Schema] = {}

    def write(self, drained: Drained) -> None:
        for name, columns in drained.items():
            table = to_arrow(columns)
            if table.num_rows == 0:
                self._empty_schemas.setdefault(name, table.schema)
                continue
            writer = self._writers.get(name)
            if writer is None:
                writer = pq.ParquetWriter(self.folder / f"{name}.parquet", table.schema)
                self._writers[name] = writer
            writer.write_table(table.cast(writer.schema), row_group_size=table.num_rows)

    def close(self) -> None:
        """Closes every file; a table that never had a row still gets a file with its columns."""
        for writer in self._writers.values():
            writer.close()
        for name, schema in self._empty_schemas.items():
            if name not in self._writers:
                pq.write_table(schema.empty_table(), self.folder / f"{name}.parquet")
        self._writers.clear()


class MemorySink:
    """Keeps drained chunks in memory (runs without a results folder)."""

    def __init__(self) -> None:
        import_pandas_now()
        self._chunks: dict[str, list[pa.Table]] = {}

    def write(self, drained: Drained) -> None:
        for name, columns in drained.items():
            table = to_arrow(columns)
            chunks = self._chunks.setdefault(name, [])
            if table.num_rows or not chunks:
                chunks.append(table)

    def close(self) -> None:
        pass

    def tables(self) -> dict[str, pa.Table]:
        return {
            name: pa.concat_tables([c.cast(chunks[0].schema) for c in chunks])
            for name, chunks in self._chunks.items()
        }


def _schema(columns: Sequence[str]) -> pa.Schema:
    return pa.schema([(c, COLUMN_TYPES.get(c, pa.float64())) for c in columns])


def write_table(folder: Path, name: str, rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> None:
    """``rows`` (dicts, None for a value not measured) as ``folder/name.parquet`` with the core's
    column types; with no rows, a file with the columns only."""
    schema = _schema(columns)
    pq.write_table(pa.Table.from_pylist(list(rows), schema=schema), folder / f"{name}.parquet")


def write_empty_tables(folder: Path, names: Sequence[str]) -> None:
    """Each of ``names`` (of ``TABLE_COLUMNS``) that the run did not write, with its columns only."""
    for name in names:
        if not (folder / f"{name}.parquet").exists():
            write_table(folder, name, [], TABLE_COLUMNS[name])


def python_description() -> str:
    return f"{platform.python_implementation()} {platform.python_version()}"


def make_manifest(
    *,
    version: str,
    scenario_name: str,
    source: str,
    seed: int,
    overrides: Sequence[str],
    resolved_scenario: str,
    completed: bool,
    command: Sequence[str] | None,
    code: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """What a reader needs to know how the run was made. ``code`` is the code that made it
    (``airlink.version.code_identity()``, the default: version, git commit and whether the
    checkout had changes, the core's build hash, the UTC date); the date is kept there only, so
    the rest of two manifests of the same run compare equal."""
    from airlink.version import code_identity

    return {
        "results_format": RESULTS_FORMAT,
        "airlink_version": version,
        "mode": "simulation",
        "scenario": scenario_name,
        "source": source,
        "seed": seed,
        "overrides": list(overrides),
        "completed": completed,
        "command": list(sys.argv if command is None else command),
        "python": python_description(),
        "platform": platform.platform(),
        "resolved_scenario": resolved_scenario,
        "code": dict(code_identity() if code is None else code),
    }


def write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")


class RunResult:
    """One run: its summary, manifest and time series as pandas DataFrames.

    ``path`` is the results folder the tables are read from (on first access), or ``None``
    for a run kept in memory.
    """

    def __init__(
        self,
        summary_json: str,
        manifest: dict[str, Any],
        path: Path | None = None,
        tables: Mapping[str, pa.Table] | None = None,
    ) -> None:
        self.summary_json = summary_json
        self.summary: dict[str, Any] = json.loads(summary_json)
        self.manifest = manifest
        self.path = path
        self._tables = dict(tables or {})

    def __repr__(self) -> str:
        where = f"path={str(self.path)!r}" if self.path else "in memory"
        return f"<RunResult {self.summary['scenario']} seed {self.summary['seed']}, {where}>"

    @property
    def completed(self) -> bool:
        """Every flow completed: a flow with a size delivered all its bytes before the stop
        time; one without (it runs to the stop time) delivered data."""
        return bool(self.summary["completed"])

    def table(self, name: str) -> pd.DataFrame:
        """One of ``flows``, ``intervals``, ``rtt``, ``links``, ``events`` (and with the scenario's
        ``event_log``, ``segments`` and ``slots``) as a DataFrame.

        An emulation of the kernel's transports (``--client``) samples no flow state: its
        ``flows`` and ``rtt`` are empty DataFrames with the columns (also in folders written
        before airlink wrote those files), and ``intervals`` holds iperf3's reports, if any."""
        import pandas as pd

        if name not in TABLES:
            raise KeyError(f"no table {name!r}: expected one of {', '.join(TABLES)}")
        if self.path is not None:
            path = self.path / f"{name}.parquet"
            if name in EVENT_LOG_TABLES and not path.exists():
                raise ResultsError(f"{path}: no {name} table: the run had no event log (event_log = true)")
            f = files.open_regular(path, f"{name} table", error=ResultsError, missing=None)
            if f is None and name in TABLE_COLUMNS and self.manifest.get("endpoints") == "kernel":
                return _schema(TABLE_COLUMNS[name]).empty_table().to_pandas()
            if f is None:
                raise ResultsError(f"{path}: missing: no {name} table in this results folder")
            try:
                with f:
                    return pd.read_parquet(f)
            except (OSError, ValueError, pa.ArrowException) as e:
                raise ResultsError(f"{path}: cannot read the {name} table ({type(e).__name__})") from None
        table = self._tables.get(name)
        return table.to_pandas() if table is not None else pd.DataFrame()

    @cached_property
    def flows(self) -> pd.DataFrame:
        """Per-flow samples every ``sample_interval``: cwnd_bytes, srtt_us, delivered_bytes, ..."""
        return self.table("flows")

    @cached_property
    def intervals(self) -> pd.DataFrame:
        """iperf's interval reports of UDP and DCCP flows: throughput_bps, lost, out_of_order, jitter_ms;
        in an emulation of iperf3, its reports of every stream (see :mod:`airlink.iperf`)."""
        return self.table("intervals")

    @cached_property
    def rtt(self) -> pd.DataFrame:
        """Every RTT sample of every flow (rtt_us)."""
        return self.table("rtt")

    @cached_property
    def links(self) -> pd.DataFrame:
        """Per-link samples: queue_packets, snr_db, predicted_snr_db, modulation_bits, subband, ..."""
        return self.table("links")

    @cached_property
    def events(self) -> pd.DataFrame:
        """Drops and other events with their kind (queue, channel, arq_gave_up, checksum_drop, ...)."""
        return self.table("events")


def _read_json(path: Path) -> tuple[str, Any]:
    """A results folder's JSON file, through the guarded reader: a regular file of bounded size,
    UTF-8, nested a few levels, no NaN; every refusal names the file."""
    kind = "results " + path.name
    text = files.read_text(path, kind, files.MAX_JSON_BYTES, error=ResultsError, missing=None)
    if text is None:
        raise ResultsError(f"{path}: missing: not a complete results folder")
    return text, files.parse_json(text, str(path), kind, error=ResultsError)


def _require_bool(path: Path, where: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise ResultsError(f"{path}: {where} is {json.dumps(value)}: expected true or false")


def read_results(folder: str | Path) -> RunResult:
    """Opens a results folder written by :func:`airlink.run`, ``airlink run`` or ``airlink emulate``.

    Raises :class:`ResultsError`, naming the file at fault, for a folder of another results
    format (another airlink version) or a damaged one (truncated JSON, a ``completed`` that is
    not true or false, NaN).
    """
    folder = Path(folder)
    _, manifest = _read_json(folder / MANIFEST)
    if not isinstance(manifest, dict):
        raise ResultsError(f"{folder / MANIFEST}: expected a JSON object")
    found = manifest.get("results_format")
    if found != RESULTS_FORMAT:
        by = manifest.get("airlink_version", "an unknown version")
        raise ResultsError(f"{folder / MANIFEST}: results format {json.dumps(found)} (written by airlink {by}); "
                           f"this airlink reads format {RESULTS_FORMAT}")
    _require_bool(folder / MANIFEST, "completed", manifest.get("completed"))
    summary_json, summary = _read_json(folder / SUMMARY)
    if not isinstance(summary, dict) or not isinstance(summary.get("flows", []), list):
        raise ResultsError(f"{folder / SUMMARY}: expected a JSON object with a list of flows")
    _require_bool(folder / SUMMARY, "completed", summary.get("completed"))
    for i, flow in enumerate(summary.get("flows", [])):
        if not isinstance(flow, dict):
            raise ResultsError(f"{folder / SUMMARY}: flows[{i}] is not an object")
        if "completed" in flow:
            _require_bool(folder / SUMMARY, f"flows[{i}].completed", flow["completed"])
    return RunResult(summary_json, manifest, path=folder)
