"""Two sweep stores side by side, as Flent compares its data files: `airlink compare A B`.

Configurations are matched by the values of the parameters both stores swept (the same grid run
by another build, scenario or experiment); for each metric and flow class, both means with their
95 % half-widths and n, the difference B − A, B relative to A, and whether the two intervals
overlap (no overlap: a difference beyond the runs' noise; overlap alone proves no equality).
``airlink.compare`` is ``compare`` here (this module is not named compare: importing it would
then replace that function on the package with the module).
"""

from __future__ import annotations

import difflib
import math
import textwrap
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from airlink import tables
from airlink.store import load, read_manifest

COLUMNS = ("mean", "ci95", "n")


def _requested(root: Path) -> tuple[list[str], list[str]]:
    head = read_manifest(root)["experiment"]
    return list(head["parameters"]), list(head.get("metrics", []))


def _pick(metric: str, available: Sequence[str]) -> str:
    """``metric`` as one of ``available``: its whole path or its short name (``goodput_bps``)."""
    if metric in available:
        return metric
    by_short = [m for m in available if tables.short_name(m) == metric]
    if len(by_short) == 1:
        return by_short[0]
    near = difflib.get_close_matches(metric, list(available), n=3, cutoff=0.5)
    hint = f"; did you mean {' or '.join(near)}?" if near else ""
    raise ValueError(f"metric {metric!r} is not in both stores{hint} Both have: {', '.join(available)}")


def compare(a: str | Path, b: str | Path, metric: str | None = None) -> pd.DataFrame:
    """The summaries of stores ``a`` and ``b`` side by side: a row per configuration (the
    parameters both swept), metric and class, with ``mean_a``, ``ci95_a``, ``n_a``, the same for
    b, ``difference`` (b − a), ``relative`` (b / a − 1) and ``overlap`` (the 95 % intervals meet;
    NA where one is undefined). ``metric``: one metric (a path or its short name); default: those
    both experiments named. A configuration only one store has keeps NaN for the other."""
    roots = Path(a), Path(b)
    (params_a, wanted_a), (params_b, wanted_b) = (_requested(r) for r in roots)
    common = [p for p in params_a if p in params_b]
    summaries = [load(r, "summary") for r in roots]
    present = [m for m in dict.fromkeys(summaries[0]["metric"]) if m in set(summaries[1]["metric"])]
    if metric is not None:
        metrics = [_pick(metric, present)]
    else:
        metrics = [m for m in wanted_a if m in wanted_b and m in present] or present
    key = [*common, "metric", "class"]
    frames = []
    for root, summary, suffix in zip(roots, summaries, ("_a", "_b")):
        rows = summary[summary["metric"].isin(metrics)]
        if rows.duplicated(key).any():
            others = [p for p in (params_a if suffix == "_a" else params_b) if p not in common]
            raise ValueError(f"{root} sweeps {', '.join(others)} too, which the other store does not: "
                             "compare stores of the same grid")
        frames.append(rows[[*key, *COLUMNS]].rename(columns={c: c + suffix for c in COLUMNS}))
    both = frames[0].merge(frames[1], on=key, how="outer", sort=False)
    both["metric"] = pd.Categorical(both["metric"], metrics, ordered=True)  # the metrics' order, then the grid's
    both = both.sort_values(["metric", *common, "class"], kind="stable", ignore_index=True)
    both["metric"] = both["metric"].astype(str)
    both["difference"] = both["mean_b"] - both["mean_a"]
    with np.errstate(divide="ignore", invalid="ignore"):
        both["relative"] = np.where(both["mean_a"] != 0, both["mean_b"] / both["mean_a"] - 1, math.nan)
    gap = both["difference"].abs()
    reach = both["ci95_a"] + both["ci95_b"]
    both["overlap"] = pd.array([pd.NA if math.isnan(g) or math.isnan(r) else bool(g <= r)
                                for g, r in zip(gap, reach)], dtype="boolean")
    return both


def format_comparison(frame: pd.DataFrame, a: str, b: str) -> str:
    """The comparison as text: a block per metric and flow class, a row per configuration, both
    means ± 95 % in the block's unit, the difference and whether the intervals overlap."""
    if frame.empty:
        return "(no metric in both stores)"
    parameters = list(frame.columns[:list(frame.columns).index("metric")])
    blocks = [f"A: {a}\nB: {b}"]
    for (metric, cls), g in frame.groupby(["metric", "class"], sort=False):
        label, factor = tables.unit(metric, tables.magnitude([*g["mean_a"], *g["mean_b"]]))
        places = tables.decimals(tables.magnitude([*g["mean_a"] * factor, *g["mean_b"] * factor]))
        shown = pd.DataFrame({p: [tables.parameter_value(v) for v in g[p]] for p in parameters})
        for side in ("a", "b"):
            shown[side.upper()] = [tables.interval(m * factor, h * factor, places)
                                   for m, h in zip(g[f"mean_{side}"], g[f"ci95_{side}"])]
        shown["n"] = [_count(na) if na == nb else f"{_count(na)} / {_count(nb)}" for na, nb in zip(g["n_a"], g["n_b"])]
        shown["B − A"] = [tables.number(d * factor, places) for d in g["difference"]]
        shown["B/A − 1"] = ["—" if math.isnan(r) else f"{r:+.1%}" for r in g["relative"]]
        shown["intervals overlap"] = ["?" if o is pd.NA else ("yes" if o else "NO") for o in g["overlap"]]
        blocks.append(f"{metric} {cls}".removesuffix(" all") + (f" ({label})" if label else "") + "\n"
                      + shown.to_string(index=False))
    return "\n\n".join(blocks) + "\n\nmean ± 95 % half-width; n runs (of A / of B where they differ); NO: the " \
        "intervals do not overlap"


def _count(n: float) -> str:
    return "—" if n != n else str(int(n))


def compare_png(path: Path, frame: pd.DataFrame, a: str, b: str) -> None:
    """A panel per metric and class: each configuration's mean ± 95 % of A and of B side by side."""
    from airlink.plots import plt

    parameters = list(frame.columns[:list(frame.columns).index("metric")])
    panels = list(frame.groupby(["metric", "class"], sort=False))
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, 3.4 * len(panels) + 0.6), dpi=100, squeeze=False)
    for ax, ((metric, cls), g) in zip(axes[:, 0], panels):
        label, factor = tables.unit(metric, tables.magnitude([*g["mean_a"], *g["mean_b"]]))
        xs = np.arange(len(g))
        for shift, side, name in ((-0.12, "a", f"A: {a}"), (0.12, "b", f"B: {b}")):
            err = (g[f"ci95_{side}"] * factor).fillna(0)
            ax.errorbar(xs + shift, g[f"mean_{side}"] * factor, yerr=err, fmt="o", capsize=4, label=name)
        ticks = [", ".join(f"{p.rsplit('.', 1)[-1]}={tables.parameter_value(row[p])}" for p in parameters) or "base"
                 for _, row in g.iterrows()]
        ax.set_xticks(xs, [textwrap.fill(t, 18) for t in ticks], fontsize=8)
        what = f"{metric}" + (f" {cls}" if cls != "all" else "")
        ax.set_ylabel(textwrap.fill(what + (f" ({label})" if label else ""), 30), fontsize=9)
        ax.grid(True, alpha=0.3)
    axes[0, 0].set_title("mean and 95 % interval per configuration", fontsize=11)
    axes[0, 0].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.tight_layout()
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)
