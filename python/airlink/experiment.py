"""Experiment files: a base scenario, parameters to vary, metrics and a repetition rule.

An experiment is a TOML file (parsed with the standard library's ``tomllib``), or the same as
TOML text or a dict (``airlink.sources`` tells them apart; errors then name ``<string>`` or
``<dict>``). Its ``scenario`` is a path (relative to the experiment's file, or to the working
directory for one given in code), TOML text or a table::

    [experiment]
    scenario = "../scenarios/transport/pipe.toml"   # relative to this file
    seed = 1                                         # seeds of repetition i are common to all configurations
    metrics = ["flows.*.goodput_bps"]                # summary paths; flows.* is averaged per flow class
    flow_class = "protocol"                          # the flow field that names a class
    reference = { "flow.0.congestion" = "reno" }     # paired differences against this configuration
    series = true                                    # keep each run's time series (flows, links, ...)

    [vary]                                           # crossed: every combination
    "downlink.pipe.loss" = [0.0, 0.01]
    "downlink.pipe.delay" = { start = 5, stop = 15, step = 5, unit = "ms" }

    [vary.zip]                                       # zipped: element by element, crossed with the rest
    "downlink.pipe.rate" = ["5 Mbit/s", "10 Mbit/s"]
    "downlink.pipe.queue" = ["31250 B", "62500 B"]

    [repetitions]
    rule = "t"            # "fixed" (count), "t" (Student-t until ±precision), "dccp" ([S3] eq. 15)
    precision = 0.05
    min = 3
    max = 30
    metrics = ["flows.*.goodput_bps"]                # which metrics drive n (default: all)

Every run also gets the derived metrics of ``DERIVED`` (system throughput, Jain's index, F_sys),
computed once from its summary and stored with it. With a ``reference``, each configuration is
paired with the one that differs only in the reference's parameters, repetition by repetition
(common random numbers), and the store holds the differences with their intervals.

Everything is validated before a run starts; errors name the file, line and column, and say
what was expected. Files are read through ``airlink.files`` (regular files only, size caps, UTF-8
checked) and a file the experiment names is never quoted in an error: only its path and place.

Bounds, checked before any list is built (a range's length is computed, not enumerated):

* ``MAX_VALUES`` values per parameter (a list or a range), ``MAX_CONFIGURATIONS`` points in the
  grid (the product of the crossed parameters' counts and the zipped count);
* ``MAX_REPETITIONS`` for ``count`` and ``max``, and ``MAX_RUNS`` runs in all (configurations ×
  ``count``, or × ``max`` for the t and dccp rules);
* ``precision`` at least ``MIN_PRECISION`` (a relative half-width of 10⁻⁶ already needs far more
  runs than ``max`` allows: a smaller one would only run every configuration to its maximum);
* values nested at most ``MAX_DEPTH`` levels (tables and arrays);
* range bounds and steps are finite numbers, the step not zero and pointing from start to stop.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import itertools
import json
import math
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from airlink import _core, sources, stats
from airlink import files as files_
from airlink.scenarios import MAX_SCENARIO_BYTES, display_path, read_scenario_text

RULES = ("fixed", "t", "dccp")
DCCP_PILOT = 3  # [S3] n_base

#: Upper bounds of an experiment (see the module's documentation).
MAX_VALUES = 10_000
MAX_CONFIGURATIONS = 10_000
MAX_REPETITIONS = 10_000
MAX_RUNS = 1_000_000
MIN_PRECISION = 1e-6
MAX_DEPTH = 16


class ExperimentError(_core.ScenarioError):
    """An experiment file is invalid; the message is ``path:line:col: what``. A kind of scenario
    error, so the CLI reports it the same way (one line, exit code 2)."""


@dataclass(frozen=True)
class Repetitions:
    rule: str  # one of RULES
    count: int = 0  # fixed
    precision: float = 0.05  # t and dccp: the interval's half-width as a fraction of the mean
    min: int = 3
    max: int = 30
    metrics: tuple[str, ...] = ()  # which metrics drive n

    @property
    def interval(self) -> str:
        """The quantile the reported intervals use: [S3]'s z = 1.96 for its rule, else Student-t."""
        return "z" if self.rule == "dccp" else "t"


@dataclass(frozen=True)
class Config:
    """One point of the grid: its parameter values, the overrides they make, the resolved scenario."""

    index: int
    params: tuple[tuple[str, Any], ...]
    overrides: tuple[str, ...]
    resolved: str
    inputs: tuple[Input, ...] = ()


@dataclass(frozen=True)
class Input:
    """A file a run reads (a trace): the scenario key naming it, its path and content hash."""

    key: str
    path: str
    sha256: str


@dataclass(frozen=True)
class Experiment:
    path: Path
    text: str
    scenario_path: Path
    scenario_text: str
    seed: int
    metrics: tuple[str, ...]
    flow_class: str
    parameters: tuple[str, ...]
    configs: tuple[Config, ...]
    repetitions: Repetitions
    input_hashes: dict[str, str] = field(default_factory=dict)
    references: dict[int, int] = field(default_factory=dict)  # config -> its reference config
    reference: tuple[tuple[str, Any], ...] = ()
    series: bool = True
    files: dict[str, bytes] = field(default_factory=dict, repr=False)  # the inputs' bytes, read once
    #: The seeds of repetitions 0, 1, ... when given explicitly (a study's seeds 1..N); else derived.
    seeds: tuple[int, ...] = ()

    def run_seed(self, repetition: int) -> int:
        return self.seeds[repetition] if self.seeds else run_seed(self.seed, repetition)

    def run_key(self, config: Config, repetition: int) -> str:
        return run_key(config.resolved, self.run_seed(repetition), config.inputs)

    @property
    def table_metrics(self) -> tuple[str, ...]:
        """The metrics the tables hold: the experiment's, then the derived ones it did not name."""
        return (*self.metrics, *(m for m in DERIVED if m not in self.metrics))


@functools.lru_cache(maxsize=4096)  # asked once per run and configuration; SeedSequence costs 0.1 ms
def run_seed(experiment_seed: int, repetition: int) -> int:
    """The seed of repetition ``repetition``: the same for every configuration (common random
    numbers), independent streams across repetitions (numpy's SeedSequence hashing)."""
    state = np.random.SeedSequence([experiment_seed, repetition]).generate_state(1, np.uint64)[0]
    return int(state) >> 1  # 63 bits: a signed 64-bit column in Parquet holds it


def run_key(resolved: str, seed: int, inputs: Sequence[Input] = ()) -> str:
    """The store key of a run: a hash of its full resolved scenario, its seed and the content of
    the files it reads (a changed trace is another run, though its path is the same)."""
    files = "".join(f"# {i.key} sha256 = {i.sha256}\n" for i in inputs)
    return hashlib.sha256(f"{resolved}\n# seed = {seed}\n{files}".encode()).hexdigest()[:24]


def sha256_file(path: Path) -> str:
    return hashlib.sha256(files_.read_bytes(path, "input file", files_.MAX_TRACE_BYTES)).hexdigest()


def _sha256_text(text: str) -> str:
    """The hash of a file read as ``text`` (UTF-8 decoding and encoding give back its bytes)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------------------------------------
# Parsing and validation


class _Where:
    """Error positions in the experiment text: tomllib's own, or the first line naming a key."""

    def __init__(self, path: Path, text: str) -> None:
        self.path, self.lines = path, text.splitlines()

    def error(self, what: str, *keys: str) -> ExperimentError:
        for key in keys:
            # `key = ...`, `"key" = ...`, `[key]` or `[table.key]`
            pattern = re.compile(rf'^\s*(\[+[^\]"]*?)?"?{re.escape(key)}"?\s*(=|\]|$)')
            for number, line in enumerate(self.lines, 1):
                if pattern.search(line):
                    return ExperimentError(f"{self.path}:{number}:{len(line) - len(line.lstrip()) + 1}: {what}")
        return ExperimentError(f"{self.path}: {what}")


def _kind(value: Any) -> str:
    """What a TOML value is, for messages that should not quote it."""
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array",
             dict: "a table"}
    return next((n for t, n in names.items() if isinstance(value, t)), "a date or time")


def _too_deep(doc: Any) -> list[str]:
    """The keys leading to a value nested more than MAX_DEPTH levels deep, or [] (iterative:
    the document may be nested as deep as tomllib allows)."""
    stack: list[tuple[Any, list[str]]] = [(doc, [])]
    while stack:
        node, keys = stack.pop()
        if len(keys) > MAX_DEPTH:
            return keys
        if isinstance(node, dict):
            stack += [(v, [*keys, str(k)]) for k, v in node.items()]
        elif isinstance(node, list):
            stack += [(v, [*keys, f"[{i}]"]) for i, v in enumerate(node)]
    return []


def _override_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if isinstance(value, str) else repr(value)


def _expand(name: str, spec: Any, where: _Where) -> list[Any]:
    """A parameter's values: a list, or a range table {start, stop, step[, unit]} with ``stop`` included."""
    count = _count(name, spec, where)
    if isinstance(spec, list):
        return spec
    if isinstance(spec, dict):
        start, stop, step = spec["start"], spec["stop"], spec["step"]
        integral = all(isinstance(v, int) for v in (start, stop, step))
        values: list[Any] = [start + i * step if integral else round(start + i * step, 12) for i in range(count)]
        unit = spec.get("unit")
        return [f"{v} {unit}" for v in values] if unit else values
    raise where.error(f"parameter {name!r}: expected a list of values or a range table", name)


def _count(name: str, spec: Any, where: _Where) -> int:
    """How many values a parameter has, without building them; checks the spec and its bound."""
    if isinstance(spec, list):
        count = len(spec)
        if not spec:
            raise where.error(f"parameter {name!r} has no values: expected a non-empty list", name)
    elif isinstance(spec, dict):
        unknown = set(spec) - {"start", "stop", "step", "unit"}
        missing = {"start", "stop", "step"} - set(spec)
        if unknown or missing:
            raise where.error(f"range {name!r} takes start, stop, step and optionally unit "
                              f"(missing {sorted(missing)}, unknown {sorted(unknown)})", name)
        start, stop, step = spec["start"], spec["stop"], spec["step"]
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (start, stop, step)):
            raise where.error(f"range {name!r}: expected numbers for start, stop and step", name)
        if not all(abs(v) < 2**63 and math.isfinite(v) for v in (start, stop, step)):  # NaN, inf, 1e400
            raise where.error(f"range {name!r}: expected finite numbers (below 2^63 in size) for start, stop "
                              "and step", name)
        if "unit" in spec and not isinstance(spec["unit"], str):
            raise where.error(f"range {name!r}: expected a unit such as \"ms\" (a string)", name)
        span = (stop - start) / step if step else math.nan
        if not span >= 0:  # a zero step, or one pointing away from stop
            raise where.error(f"range {name!r}: the step never gets from start to stop: expected a step "
                              "that is not zero and has the sign of stop - start", name)
        if span + 1 > MAX_VALUES + 1:  # decided before floor(): span may be 1e300
            raise where.error(f"range {name!r} has about {span + 1:.3g} values: expected at most {MAX_VALUES} "
                              "(a larger step)", name)
        count = math.floor(span + 1e-9) + 1
    else:
        raise where.error(f"parameter {name!r}: expected a list of values or a range table "
                          "{ start, stop, step[, unit] }", name)
    if count > MAX_VALUES:
        raise where.error(f"parameter {name!r} has {count} values: expected at most {MAX_VALUES}", name)
    return count


def _grid(vary: Mapping[str, Any], where: _Where) -> list[tuple[tuple[str, Any], ...]]:
    zipped = vary.get("zip", {})
    if not isinstance(zipped, dict):
        raise where.error("[vary.zip] must be a table of equally long lists", "zip")
    # The grid's size from the counts alone, before any value list or point is built.
    counts = {k: _count(k, v, where) for k, v in vary.items() if k != "zip"}
    lengths = {k: _count(k, v, where) for k, v in zipped.items()}
    if len(set(lengths.values())) > 1:
        raise where.error(f"zipped parameters must have equally many values, got {lengths}", "zip")
    size = math.prod([*counts.values(), *set(lengths.values())])
    if size > MAX_CONFIGURATIONS:
        raise where.error(f"the grid has {size} configurations: expected at most {MAX_CONFIGURATIONS}", "vary")
    crossed = {k: _expand(k, v, where) for k, v in vary.items() if k != "zip"}
    axes: list[list[tuple[tuple[str, Any], ...]]] = [[((k, v),) for v in vs] for k, vs in crossed.items()]
    if zipped:
        columns = {k: _expand(k, v, where) for k, v in zipped.items()}
        axes.append([tuple(zip(columns, row)) for row in zip(*columns.values())])
    return [tuple(itertools.chain.from_iterable(point)) for point in itertools.product(*axes)]


def _int(table: Mapping[str, Any], key: str, default: int, lowest: int, where: _Where) -> int:
    value = table.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or not lowest <= value <= MAX_REPETITIONS:
        raise where.error(f"repetitions.{key} must be an integer from {lowest} to {MAX_REPETITIONS}, got {value!r}", key)
    return value


def _repetitions(table: Mapping[str, Any], metrics: Sequence[str], where: _Where) -> Repetitions:
    known = {"rule", "count", "precision", "min", "max", "metrics"}
    if unknown := sorted(set(table) - known):
        raise where.error(f"unknown key {unknown[0]!r} in [repetitions], expected one of {sorted(known)}", unknown[0])
    rule = table.get("rule", "fixed")
    if rule not in RULES:
        raise where.error(f"repetitions.rule must be one of {', '.join(RULES)}, got {rule!r}", "rule")
    if rule == "fixed":
        return Repetitions(rule, count=_int(table, "count", 1, 1, where))
    precision = table.get("precision", 0.05)
    if not isinstance(precision, int | float) or isinstance(precision, bool) or not MIN_PRECISION <= precision < 1:
        raise where.error(f"repetitions.precision is the half-width as a fraction of the mean, "
                          f"{MIN_PRECISION:g} ≤ precision < 1, got {precision!r}", "precision")
    low = _int(table, "min", DCCP_PILOT if rule == "dccp" else 3, 2, where)
    high = _int(table, "max", 30 if rule == "t" else 1000, low, where)
    if rule == "dccp" and low != DCCP_PILOT:
        raise where.error(f"the dccp rule runs a pilot of {DCCP_PILOT}; repetitions.min cannot change it", "min")
    driving = table.get("metrics", list(metrics))
    if not isinstance(driving, list) or not driving or any(m not in metrics for m in driving):
        raise where.error(f"repetitions.metrics must name metrics of experiment.metrics {list(metrics)}, "
                          f"got {driving!r}", "metrics")
    return Repetitions(rule, precision=float(precision), min=low, max=high, metrics=tuple(driving))


METRIC = re.compile(r"^(flows\.(\*|\d+)|links\.[^.]+)(\.[A-Za-z0-9_]+)+$|^[A-Za-z_][A-Za-z0-9_]*$"
                    r"|^derived\.(system_goodput_bps|jain_index|f_sys)$")


def _inputs(resolved: str, files: dict[str, bytes]) -> tuple[Input, ...]:
    """The files a resolved scenario reads: every ``file = "path"`` (the trace of a trace link).
    Each is read once, into ``files``: the bytes hashed are the bytes shipped to workers."""
    found: list[Input] = []

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k == "file" and isinstance(v, str):
                    if v not in files:
                        files[v] = files_.read_bytes(v, "trace file", files_.MAX_TRACE_BYTES,
                                                     error=_core.ScenarioError)
                    found.append(Input(f"{prefix}{k}", v, hashlib.sha256(files[v]).hexdigest()))
                else:
                    walk(v, f"{prefix}{k}.")

    walk(tomllib.loads(resolved), "")
    return tuple(found)


def _reference(head: Mapping[str, Any], points: Sequence[tuple[tuple[str, Any], ...]], where: _Where
               ) -> tuple[tuple[tuple[str, Any], ...], dict[int, int]]:
    """The reference's parameter values and, for every other configuration, the index of the
    configuration that differs from it only in those parameters."""
    ref = head.get("reference")
    if ref is None:
        return (), {}
    values = {k: [v for p in points for kk, v in p if kk == k] for k, _ in points[0]}
    if not isinstance(ref, dict) or not ref:
        raise where.error("experiment.reference is a table of swept parameters and their reference values, "
                          'such as { "flow.0.congestion" = "reno" }', "reference")
    for k, v in ref.items():
        if k not in values:
            raise where.error(f"experiment.reference: {k!r} is not a swept parameter; those are "
                              f"{', '.join(values) or 'none'}", "reference")
        if v not in values[k]:
            raise where.error(f"experiment.reference: {k} = {v!r} is not one of its values {sorted(set(map(str, values[k])))}",
                              "reference")
    index = {p: i for i, p in enumerate(points)}
    pairs = {}
    for i, p in enumerate(points):
        target = tuple((k, ref.get(k, v)) for k, v in p)
        if target != p and target in index:
            pairs[i] = index[target]
    return tuple(ref.items()), pairs


def load_experiment(experiment: sources.Source) -> Experiment:
    """Parses and validates an experiment (a file's path, TOML text or a dict), and resolves every
    configuration of its grid."""
    given = sources.read(experiment, "experiment file", files_.MAX_EXPERIMENT_BYTES, ExperimentError)
    path, text = Path(given.name), given.text
    try:
        doc = tomllib.loads(text)
    except RecursionError:  # tomllib recurses into nested arrays and inline tables
        raise ExperimentError(f"{path}: arrays or tables nested too deeply: expected at most {MAX_DEPTH} "
                              "levels") from None
    except tomllib.TOMLDecodeError as e:
        # tomllib's message ends with "(at line L, column C)" or "(at end of document)"
        m = re.search(r"\(at line (\d+), column (\d+)\)$", str(e))
        line, column = (m[1], m[2]) if m else (len(text.splitlines()) or 1, len((text.splitlines() or [""])[-1]) + 1)
        what = re.sub(r"\s*\(at (line|end).*\)$", "", str(e))
        raise ExperimentError(f"{path}:{line}:{column}: {what}, expected valid TOML") from None
    where = _Where(path, text)
    if deep := _too_deep(doc):
        place = "".join(k if k.startswith("[") else f".{k}" for k in deep[:MAX_DEPTH + 1]).lstrip(".")
        raise where.error(f"{place}: nested more than {MAX_DEPTH} levels deep: expected at most "
                          f"{MAX_DEPTH} levels of tables and arrays", *reversed(deep))
    if unknown := sorted(set(doc) - {"experiment", "vary", "repetitions"}):
        raise where.error(f"unknown table [{unknown[0]}], expected [experiment], [vary] and [repetitions]", unknown[0])
    head = doc.get("experiment")
    if not isinstance(head, dict) or "scenario" not in head:
        raise where.error("[experiment] with a scenario = \"path\" is required", "experiment")
    if unknown := sorted(set(head) - {"scenario", "seed", "metrics", "flow_class", "reference", "series"}):
        raise where.error(f"unknown key {unknown[0]!r} in [experiment]", unknown[0])
    scenario = head["scenario"]
    if isinstance(scenario, dict) or sources.is_toml_text(scenario):  # a scenario given in the experiment
        inline = sources.read(scenario, "scenario", MAX_SCENARIO_BYTES, lambda what: where.error(what, "scenario"))
        scenario_path, scenario_text = Path(inline.name), inline.text
    else:
        if not isinstance(scenario, str) or not scenario or "\0" in scenario:
            raise where.error("experiment.scenario: expected the path of a scenario file (a non-empty string), "
                              f"TOML text or a table, got {_kind(scenario)}", "scenario")
        base = path.parent if given.path is not None else Path.cwd()
        scenario_path = (base / scenario).resolve()
        scenario_text = files_.read_text(scenario_path, "scenario file", MAX_SCENARIO_BYTES,
                                         error=lambda what: where.error(what, "scenario"))
    seed = head.get("seed", 1)
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**63:
        raise where.error(f"experiment.seed must be a non-negative integer, got {seed!r}", "seed")
    metrics = head.get("metrics", ["flows.*.goodput_bps"])
    if not isinstance(metrics, list) or not metrics or not all(isinstance(m, str) and METRIC.match(m) for m in metrics):
        raise where.error("experiment.metrics must be a non-empty list of summary paths such as "
                          f"\"flows.*.goodput_bps\", \"flows.0.retransmissions\", \"links.downlink.loss_drops\"; "
                          f"got {metrics!r}", "metrics")
    flow_class = head.get("flow_class", "protocol")
    if not isinstance(flow_class, str):
        raise where.error(f"experiment.flow_class names a flow field such as \"protocol\", got {flow_class!r}",
                          "flow_class")
    vary = doc.get("vary", {})
    if not isinstance(vary, dict):
        raise where.error("[vary] must be a table of parameter = [values]", "vary")
    if not isinstance(doc.get("repetitions", {}), dict):
        raise where.error("[repetitions] must be a table", "repetitions")
    repetitions = _repetitions(doc.get("repetitions", {}), metrics, where)
    points = _grid(vary, where)
    if not points:
        raise where.error("the grid is empty", "vary")
    per_config = repetitions.count if repetitions.rule == "fixed" else repetitions.max
    if len(points) * per_config > MAX_RUNS:
        raise where.error(f"{len(points)} configurations × {per_config} repetitions are {len(points) * per_config} "
                          f"runs: expected at most {MAX_RUNS}", "count", "max", "repetitions")
    reference, references = _reference(head, points, where)
    series = head.get("series", True)
    if not isinstance(series, bool):
        raise where.error(f"experiment.series is true or false, got {series!r}", "series")

    configs, files = [], {}
    for index, params in enumerate(points):
        overrides = tuple(f"{k}={_override_value(v)}" for k, v in params)
        try:
            configs.append(_config(index, params, overrides, scenario_text, str(scenario_path), files))
        except _core.ScenarioError as e:
            # An override's error points at its parameter, any other at the scenario.
            names = [k for k, _ in params if f"--set {k}=" in str(e)] or ["scenario"]
            # Only the core's first line (file:line:col: what): the lines after it quote the
            # scenario, and the file an experiment names may be no scenario at all.
            raise where.error(str(e).split("\n", 1)[0], *names) from None
    _check_metric_names(metrics, scenario_text, str(scenario_path), configs, where)
    parameters = tuple(k for k, _ in points[0])
    hashes = {str(path.resolve()) if given.path else path.name: _sha256_text(text),
              str(scenario_path): _sha256_text(scenario_text)}
    hashes.update({i.path: i.sha256 for c in configs for i in c.inputs})
    return Experiment(
        path=path, text=text, scenario_path=scenario_path, scenario_text=scenario_text, seed=seed,
        metrics=tuple(metrics), flow_class=flow_class, parameters=parameters, configs=tuple(configs),
        repetitions=repetitions, input_hashes=hashes, references=references, reference=reference,
        series=series, files=files,
    )


def _config(index: int, params: tuple[tuple[str, Any], ...], overrides: tuple[str, ...], scenario_text: str,
            source: str, files: dict[str, bytes]) -> Config:
    """One configuration, resolved (raises the core's ScenarioError, or OSError for an input file)."""
    resolved = _core.check_scenario(scenario_text, source, list(overrides))
    return Config(index, params, overrides, resolved, _inputs(resolved, files))


def build_experiment(name: str, description: str, scenario: Path,
                     points: Sequence[tuple[tuple[tuple[str, Any], ...], tuple[str, ...]]], seeds: Sequence[int], *,
                     metrics: Sequence[str], series: bool = False, repetitions: Repetitions | None = None) -> Experiment:
    """An experiment built in code rather than read from a file (a part of a reproduction): each
    point is its parameters (labels, such as a figure's curve) and the overrides they stand for,
    and every configuration runs once per seed of ``seeds``, or as ``repetitions`` decides (its
    runs then take seeds from ``seeds`` in order, as many as its maximum). ``description`` takes
    the place of the experiment file's text in the store's manifest and reports."""
    text = read_scenario_text(scenario)
    source = display_path(scenario)
    files: dict[str, bytes] = {}
    configs = tuple(_config(i, params, tuple(overrides), text, source, files)
                    for i, (params, overrides) in enumerate(points))
    if not configs or not seeds:
        raise ValueError(f"{name}: an experiment needs at least one configuration and one seed")
    hashes = {str(scenario.resolve()): _sha256_text(text), **{i.path: i.sha256 for c in configs for i in c.inputs}}
    return Experiment(
        path=Path(name), text=description, scenario_path=Path(source), scenario_text=text, seed=seeds[0],
        metrics=tuple(metrics), flow_class="protocol", parameters=tuple(k for k, _ in configs[0].params),
        configs=configs, repetitions=repetitions or Repetitions("fixed", count=len(seeds)), input_hashes=hashes, series=series,
        files=files, seeds=tuple(seeds),
    )


# ---------------------------------------------------------------------------------------------
# Metrics of one run


def _dig(node: Any, parts: Sequence[str]) -> float:
    for part in parts:
        if not isinstance(node, dict) or node.get(part) is None:
            return math.nan
        node = node[part]
    return float(node) if isinstance(node, int | float) and not isinstance(node, bool) else math.nan


#: Per-run metrics derived from all flows' goodput: their sum, Jain's fairness index and the
#: TCP-PF study's F_sys = (1/M)·Σ ln Γ_i, Γ_i in kbyte/s ([S2] eq. 21; -inf if a flow got nothing).
DERIVED = ("derived.system_goodput_bps", "derived.jain_index", "derived.f_sys")


def derived_metrics(summary: Mapping[str, Any]) -> dict[str, float]:
    goodputs = [float(f["goodput_bps"]) for f in summary.get("flows", []) if f.get("goodput_bps") is not None]
    if not goodputs:
        return dict.fromkeys((m.split(".")[1] for m in DERIVED), math.nan)
    return {"system_goodput_bps": math.fsum(goodputs), "jain_index": stats.jain_index(goodputs),
            "f_sys": stats.proportional_fairness([g / 8000 for g in goodputs]).ln}


def run_metrics(summary: Mapping[str, Any], metric: str, flow_class: str = "protocol",
                derived: Mapping[str, float] | None = None) -> dict[str, float]:
    """One run's values of ``metric``: {class: value}. ``flows.*.X`` gives the mean of X over the
    flows of each class; ``derived.X`` one of ``derived`` (computed once per run); any other
    path gives one value under the class ``"all"``."""
    parts = metric.split(".")
    if parts[0] == "derived":
        return {"all": (derived if derived is not None else derived_metrics(summary))[parts[1]]}
    if parts[0] == "flows" and parts[1] == "*":
        groups: dict[str, list[float]] = {}
        for flow in summary.get("flows", []):
            value = _dig(flow, parts[2:])
            if not math.isnan(value):
                groups.setdefault(str(flow.get(flow_class)), []).append(value)
        return {k: stats.mean(v) for k, v in groups.items()}
    if parts[0] == "flows":
        flows = [f for f in summary.get("flows", []) if str(f.get("id")) == parts[1]]
        return {"all": _dig(flows[0], parts[2:]) if flows else math.nan}
    if parts[0] == "links":
        links = [link for link in summary.get("links", []) if link.get("name") == parts[1]]
        return {"all": _dig(links[0], parts[2:]) if links else math.nan}
    return {"all": _dig(summary, parts)}


# ---------------------------------------------------------------------------------------------
# Repetition rules


def _values(xs: Sequence[float]) -> list[float]:
    """The samples of a series indexed by repetition: failed runs and missing values are NaN."""
    return [x for x in xs if not math.isnan(x)]


def t_satisfied(xs: Sequence[float], precision: float) -> bool:
    """Student-t: the 95 % half-width is within ±precision of the mean (a constant sample is)."""
    xs = _values(xs)
    if len(xs) < 2:
        return False
    sd = stats.sample_sd(xs)
    return sd == 0 or stats.t_halfwidth_of(sd, len(xs)) <= precision * abs(stats.mean(xs))


def t_stop(series: Sequence[Sequence[float]], done: int, rep: Repetitions) -> int | None:
    """The t rule's n: the smallest n in [min, max] at which the first n repetitions of every
    driving series satisfy it, or ``max``; ``None`` while the ``done`` repetitions at hand do not
    decide. Checking every prefix makes n independent of how many runs were started at once."""
    for n in range(rep.min, min(done, rep.max) + 1):
        if all(t_satisfied(s[:n], rep.precision) for s in series):
            return n
    return rep.max if done >= rep.max else None


def t_guess(series: Sequence[Sequence[float]], done: int, rep: Repetitions) -> int:
    """How many repetitions to have before checking again: the t rule's estimate from the
    current spread (at least one more), so a configuration needs few rounds."""
    guess = done + 1
    for s in series:
        xs = _values(s[:done])
        sd, m = stats.sample_sd(xs), stats.mean(xs)
        if len(xs) >= 2 and sd > 0 and m != 0:
            try:
                guess = max(guess, stats.replications_needed_t(sd, m, rep.precision, done + 1, rep.max))
            except ValueError:  # more than max
                guess = rep.max
    return min(guess, rep.max)


def dccp_n(series: Sequence[Sequence[float]], rep: Repetitions) -> int:
    """[S3] eq. 15 from the 3 pilot runs: n = max(3, ⌈(1.96·s/(precision·x̄))²⌉), the maximum over
    the driving series, at most ``max``."""
    needed = DCCP_PILOT
    for s in series:
        pilot = _values(s[:DCCP_PILOT])
        sd, m = stats.sample_sd(pilot), stats.mean(pilot)
        if math.isnan(sd) or sd == 0:
            continue
        needed = max(needed, rep.max if m == 0 else stats.replications_needed(sd, m, rep.precision))
    return min(needed, rep.max)


DRY_RUN = "stop=1 ms"  # long enough for a summary with every flow and link, too short to cost anything
MAX_DRY_RUNS = 100  # configurations looked at before a metric that the first lacks is refused
OPEN_TABLES = ("time_in_modulation_s",)  # tables keyed by data (modulations used), not by fields


def _check_metric_names(metrics: Sequence[str], text: str, source: str, configs: Sequence[Config],
                        where: _Where) -> None:
    """Refuses, before the first run, a metric that names no field of a run's summary, with the
    names close to it. The summary's shape comes from a dry run (``DRY_RUN``) of the first
    configuration, and of the next ones before refusing (another may add the flow or field). A
    scenario that cannot run so short is not checked here; the sweep then finds a metric without
    values after its first runs (``check_metrics_found``)."""
    summaries: dict[int, Any] = {}

    def dry(config: Config) -> Any:
        if config.index not in summaries:
            try:
                summaries[config.index] = json.loads(
                    _core.run_summary(text, source, 1, [*config.overrides, DRY_RUN], None))
            except Exception:  # noqa: BLE001 - the sweep's own runs will say what is wrong with the scenario
                summaries[config.index] = None
        return summaries[config.index]

    for metric in metrics:
        first = dry(configs[0])
        if first is None or (problem := metric_problem(first, metric)) is None:
            continue
        others = (dry(c) for c in configs[1:MAX_DRY_RUNS])
        if len(configs) > MAX_DRY_RUNS or any(s is None or metric_problem(s, metric) is None for s in others):
            continue
        raise where.error(f"metric {metric!r} {problem}", "metrics")


def metric_problem(summary: Mapping[str, Any], metric: str) -> str | None:
    """What is wrong with ``metric`` as a path into runs' summaries shaped like ``summary`` (None:
    it names a number, or the summary cannot tell: a null on the way, which a longer run may fill).
    The message suggests the valid names nearest the misspelt part."""
    parts = metric.split(".")
    if parts[0] == "derived":
        return None  # METRIC admits only the derived names that exist
    if parts[0] in ("flows", "links"):
        field, key = ("id", "flows") if parts[0] == "flows" else ("name", "links")
        items = summary.get(key) or []
        names = [str(item.get(field)) for item in items]
        nodes = items if parts[1] == "*" else [i for i, n in zip(items, names) if n == parts[1]]
        if not nodes:
            return _suggest(f"{key}.{parts[1]}", [f"{key}.{n}" for n in names], f"has no {key[:-1]} {parts[1]!r}")
        prefix, rest = f"{key}.{parts[1]}.", parts[2:]
    else:
        nodes, prefix, rest = [summary], "", parts
    found, valid, unknown = [], set(), False
    for node in nodes:  # every flow of a class has the same fields: one that lacks a field decides
        for depth, part in enumerate(rest):
            if node is None or (depth and rest[depth - 1] in OPEN_TABLES):
                unknown = True
                break
            if not isinstance(node, dict) or part not in node:
                valid |= {prefix + ".".join([*rest[:depth], k]) for k in (node if isinstance(node, dict) else ())}
                break
            node = node[part]
        else:
            found.append(node)
    if found:
        if any(isinstance(v, dict) and v for v in found):
            fields = sorted({prefix + ".".join([*rest, k]) for v in found if isinstance(v, dict) for k in v})
            return f"is a table, not a number: name one of its fields, {', '.join(fields)}"
        if all(isinstance(v, str | bool) for v in found):
            return f"is {_kind(found[0])}, not a number"
        return None
    if unknown and not valid:
        return None
    return _suggest(metric, sorted(valid), "names no field of a run's summary")


def _suggest(wrong: str, valid: Sequence[str], what: str) -> str:
    near = difflib.get_close_matches(wrong, valid, n=3, cutoff=0.6)
    hint = f": did you mean {' or '.join(repr(n) for n in near)}?" if near else ""
    return f"{what}{hint} Valid here: {', '.join(valid) or 'none'}"


def check_metrics_found(exp: Experiment, runs: Sequence[Mapping[str, Any]]) -> None:
    """After the first runs: a metric no run has a value for is a typo, not a noisy metric (the
    rules would otherwise run every configuration to its maximum)."""
    ok = [r["metrics"] for r in runs if r["status"] == "ok"]
    for metric in exp.metrics if ok else ():
        if all(math.isnan(v) for m in ok for v in m[metric].values()):
            flows = sorted({k for r in runs if r["summary"] for f in r["summary"]["flows"] for k in f})
            raise _Where(exp.path, exp.text).error(
                f"metric {metric!r} has no value in any run; flow fields are {', '.join(flows)}", "metrics")


def describe(exp: Experiment) -> str:
    """One line about what an experiment runs."""
    r = exp.repetitions
    how = f"{r.count} repetitions" if r.rule == "fixed" else f"rule {r.rule}, ±{r.precision:.0%}, n ≤ {r.max}"
    return f"{len(exp.configs)} configurations × ({how}) of {exp.scenario_path.name}"


def manifest_entry(exp: Experiment) -> dict[str, Any]:
    """The experiment as a store's manifest records it."""
    return {"file": str(exp.path.resolve()) if exp.path.is_file() else str(exp.path), "text": exp.text, "seed": exp.seed, "metrics": list(exp.metrics),
            "flow_class": exp.flow_class, "parameters": list(exp.parameters), "rule": exp.repetitions.rule,
            "interval": exp.repetitions.interval, "configurations": len(exp.configs),
            "reference": [list(p) for p in exp.reference], "series": exp.series}
