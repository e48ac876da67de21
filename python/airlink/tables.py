"""Tables of results for people: a sweep's means as a wide table (one row per configuration, a
column per metric and flow class in an engineering unit, fixed decimals, no scientific
notation), the units and file names of metrics, and the HTML and Markdown tables of the study
reports.

>>> summary = pd.DataFrame({"config": [0, 0, 1, 1], "loss": [0.0, 0.0, 0.01, 0.01],
...     "metric": ["flows.*.goodput_bps", "flows.*.rtt_s"] * 2, "class": "tcp", "rule": "t", "n": 5,
...     "mean": [5.1087e6, 0.031, 4.1838e6, 0.0452], "ci95": [0.0, 0.0012, 4.07e5, 0.0031]})
>>> print(wide(summary, ["loss"]).to_string(index=False))
loss n goodput_bps tcp (Mbit/s) rtt_s tcp (ms)
   0 5              5.11 ± 0.00     31.0 ± 1.2
0.01 5              4.18 ± 0.41     45.2 ± 3.1
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

#: Decimal prefixes, largest first: a column is shown in the largest one its values reach.
PREFIXES = ((1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))
SIGNIFICANT = 3  # digits of a column's largest mean; its other cells get the same decimals


def _prefixed(magnitude: float, base: str, default: float) -> tuple[str, float]:
    scale = default
    if math.isfinite(magnitude) and magnitude > 0:
        scale = next((s for s, _ in PREFIXES if magnitude >= s), 1.0)
    prefix = dict(PREFIXES)[scale]
    return f"{prefix}{base}", 1 / scale


def unit(metric: str, magnitude: float = math.nan) -> tuple[str, float]:
    """The unit a metric is shown in and the factor from its stored value, for values of about
    ``magnitude`` (in the stored unit; NaN: the usual unit). "" for counts and indices.

    >>> unit("flows.*.goodput_bps", 988e3), unit("flows.*.goodput_bps"), unit("flows.0.duration_s", 0.2)
    (('kbit/s', 0.001), ('Mbit/s', 1e-06), ('ms', 1000.0))
    """
    name = metric.rsplit(".", 1)[-1]
    if name.endswith("_bps"):
        return _prefixed(magnitude, "bit/s", 1e6)
    if name.endswith("_bytes") or name.startswith("bytes"):
        return _prefixed(magnitude, "B", 1.0)
    if name.endswith("_s"):
        return ("ms", 1e3) if math.isfinite(magnitude) and 0 < magnitude < 1 else ("s", 1.0)
    if name.endswith("_ms"):
        return "ms", 1.0
    if name.endswith("_pct"):
        return "%", 1.0
    if name == "f_sys":
        return "mean ln(kbyte/s)", 1.0
    return "", 1.0


def magnitude(values: Iterable[float]) -> float:
    """The largest finite absolute value (NaN if none): what a column's unit and decimals follow."""
    finite = [abs(float(v)) for v in values if v is not None and math.isfinite(v)]
    return max(finite) if finite else math.nan


def decimals(largest: float) -> int:
    """Decimals that give the largest value of a column ``SIGNIFICANT`` digits (0 to 3)."""
    if not math.isfinite(largest) or largest == 0:
        return 0
    return min(3, max(0, SIGNIFICANT - 1 - math.floor(math.log10(largest))))


def number(value: float, places: int) -> str:
    """``value`` with ``places`` decimals, never in scientific notation; "—" for NaN."""
    if value is None or math.isnan(value):
        return "—"
    text = f"{value:.{places}f}"
    return text[1:] if re.fullmatch(r"-0\.?0*", text) else text  # no "-0.00"


def interval(mean: float, half: float, places: int) -> str:
    """``mean ± half``, both with ``places`` decimals (the mean alone when the half-width is undefined)."""
    if mean is None or math.isnan(mean):
        return "—"
    if half is None or math.isnan(half):
        return number(mean, places)
    return f"{number(mean, places)} ± {number(half, places)}"


def short_name(metric: str) -> str:
    """A metric as a column or figure names it: ``flows.*.goodput_bps`` is ``goodput_bps`` (the flow
    class says whose); other paths stay whole."""
    return metric.removeprefix("flows.*.")


def safe_name(text: str) -> str:
    """``text`` as a file name: letters, digits and ``. _ = -`` kept, anything else one ``_``."""
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", text.replace("*", "all")).strip("._")[:100] or "metric"


def file_stems(metrics: Sequence[str]) -> dict[str, str]:
    """A file name stem per metric: its short name, or its whole path where two short names meet."""
    shorts = [short_name(m) for m in metrics]
    return {m: safe_name(s if shorts.count(s) == 1 else m) for m, s in zip(metrics, shorts)}


def parameter_value(value: object) -> str:
    """A swept parameter's value as written: 0.01, not 1.000000e-02."""
    if isinstance(value, float | np.floating):
        return np.format_float_positional(float(value), trim="-")
    return str(value)


def column_label(metric: str, cls: str, unit_label: str) -> str:
    label = short_name(metric) + (f" {cls}" if cls != "all" else "")
    return f"{label} ({unit_label})" if unit_label else label


def wide(summary: pd.DataFrame, parameters: Sequence[str], metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """The summary (a row per configuration, metric and class) as text cells: a row per
    configuration with its parameters and n, then a column per metric and class, ``mean ± 95 %
    half-width`` in the column's unit. ``metrics``: which, in this order (default: all, as they
    come). A cell whose n differs from its row's says its own."""
    shown = list(dict.fromkeys(metrics if metrics is not None else summary["metric"]))
    rows = summary[summary["metric"].isin(shown)]
    configs = sorted(summary["config"].unique())
    first = summary.drop_duplicates("config").set_index("config").reindex(configs)
    out = pd.DataFrame({p: [parameter_value(v) for v in first[p]] for p in parameters}, index=configs)
    n = rows.groupby("config")["n"].max().reindex(configs)
    out["n"] = [str(int(v)) if v == v else "0" for v in n]
    for metric in shown:
        of_metric = rows[rows["metric"] == metric]
        for cls in sorted(of_metric["class"].unique()):
            g = of_metric[of_metric["class"] == cls].set_index("config").reindex(configs)
            label, factor = unit(metric, magnitude(g["mean"]))
            places = decimals(magnitude(g["mean"] * factor))
            cells = []
            for config, m, h, k in zip(configs, g["mean"], g["ci95"], g["n"]):
                text = interval(m * factor, h * factor, places)
                cells.append(text if k != k or k == n[config] else f"{text} (n={int(k)})")
            out[column_label(metric, cls, label)] = cells
    return out.reset_index(drop=True)


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]], align_right: Sequence[bool] | None = None) -> str:
    """A GitHub-flavoured Markdown table.

    >>> print(markdown_table(["k", "ratio"], [["1", "99.99 %"]], [True, True]))
    | k | ratio |
    |---:|---:|
    | 1 | 99.99 % |
    """
    right = align_right or [False] * len(header)
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---:" if r else "---" for r in right) + "|",
    ]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def html_table(header: Sequence[str], rows: Sequence[Sequence[str]], css_class: str = "") -> str:
    """An HTML table with escaped cells (``templates/table.html.j2``); a cell PASS or FAIL gets
    that class for colouring."""
    from airlink.templates import render

    return render("table.html.j2", header=header, rows=rows, css_class=css_class).rstrip("\n")
