"""`airlink report STORE`: one HTML page of a sweep's store, with PNG figures and CSV tables.

Sections, as the seed studies present their results: means with 95 % intervals and the rule that
gave them (the DCCP study's Tables 3-4), as a wide table (a row per configuration, a column per
metric and flow class); each metric against a swept parameter with interval bars (WIPEMU Figs.
4-7); box plots of the runs of each configuration; min/max/mean bars (AFC Figs. 3-5); CDFs
across runs and pooled over flows × runs (TCP-PF Figs. 3-5); paired differences against the
reference configuration (TCP-PF's +12 %); time series of chosen runs and pointwise means across
repetitions (DCCP Figs. 2-3).

The metrics shown are those the experiment names; the derived ones (``derived.*``) it does not
name are in summary.csv only. Figures are named after the metric and what they show
(``goodput_bps-vs-downlink.pipe.loss.png``, ``goodput_bps-box.png``). The page is the Jinja2
template ``templates/report.html.j2``; ``page`` is the shared page of the study reports.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from markupsafe import Markup

from airlink import plots, tables
from airlink.atomic import atomic_folder
from airlink.plots import plt
from airlink.results import read_results
from airlink.store import load, read_manifest
from airlink.templates import render

MAX_SERIES_CONFIGS = 4  # time-series figures for at most this many configurations by default


def unit(metric: str, values: Sequence[float] = ()) -> tuple[str, float]:
    """The unit a metric's figures use, for ``values`` (stored unit) and the factor to it."""
    return tables.unit(metric, tables.magnitude(values))


def axis_label(metric: str, values: Sequence[float] = ()) -> str:
    u, _ = unit(metric, values)
    return f"{metric} ({u})" if u else metric


def config_labels(summary: pd.DataFrame, parameters: Sequence[str]) -> dict[int, str]:
    """``loss=0.01, congestion=cubic`` per configuration: each parameter by its last name part,
    unless two parameters share it."""
    short = [p.rsplit(".", 1)[-1] for p in parameters]
    names = short if len(set(short)) == len(short) else list(parameters)
    firsts = summary.drop_duplicates("config").set_index("config")
    return {int(c): ", ".join(f"{n}={tables.parameter_value(row[p])}" for n, p in zip(names, parameters)) or "base"
            for c, row in firsts.iterrows()}


def html(frame: pd.DataFrame) -> Markup:
    """A DataFrame as an HTML table of numbers (cells escaped by pandas)."""
    return Markup(frame.to_html(index=False, classes="num", border=0, na_rep="—"))


def _finish(fig: Any, ax: Any, path: Path, legend: bool = True) -> None:
    ax.grid(True, alpha=0.3)
    if legend and ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.tight_layout()
    fig.savefig(path, bbox_inches="tight")  # the legend beside the axes is kept whole
    plt.close(fig)


def _config_ticks(ax: Any, configs: Sequence[int], labels: dict[int, str]) -> None:
    ax.set_xticks(np.arange(len(configs)), [textwrap.fill(labels[c], 18) for c in configs], fontsize=8)
    ax.set_xlabel("configuration")


def _against_png(path: Path, summary: pd.DataFrame, metric: str, x: str, others: Sequence[str]) -> None:
    """The metric's mean with 95 % interval bars against parameter ``x``, a line per class and
    value of the other parameters."""
    rows = summary[summary["metric"] == metric]
    _, factor = unit(metric, rows["mean"])
    fig, ax = plt.subplots(figsize=(8, 4.4), dpi=100)
    for key, g in rows.groupby([*others, "class"], sort=True):
        key = key if isinstance(key, tuple) else (key,)
        label = ", ".join([*(f"{o.rsplit('.', 1)[-1]}={v}" for o, v in zip(others, key[:-1])), str(key[-1])])
        g = g.sort_values(x)
        err = [0.0 if math.isnan(h) else h * factor for h in g["ci95"]]
        ax.errorbar(g[x], g["mean"] * factor, yerr=err, marker="o", capsize=3, label=label)
    values = sorted(rows[x].unique())
    if len(values) <= 12:
        ax.set_xticks(values, [tables.parameter_value(v) for v in values])
    ax.set_xlabel(x)
    ax.set_ylabel(textwrap.fill(axis_label(metric, rows["mean"]), 40))
    ax.set_title(textwrap.fill(f"{metric}: mean and 95 % interval against {x}", 70), fontsize=11)
    _finish(fig, ax, path)


def _box_png(path: Path, metrics: pd.DataFrame, metric: str, labels: dict[int, str]) -> None:
    """Per configuration and class, a box of its runs' values: quartiles, whiskers to the furthest
    run within 1.5 interquartile ranges, runs beyond as points, the mean as a triangle."""
    rows = metrics[(metrics["metric"] == metric) & (metrics["status"] == "ok")]
    rows = rows[np.isfinite(rows["value"].astype(float))]
    _, factor = unit(metric, rows["value"])
    classes = sorted(rows["class"].unique())
    configs = sorted(rows["config"].unique())
    width = 0.8 / max(len(classes), 1)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(configs) + 3), 4.6), dpi=100)
    for k, cls in enumerate(classes):
        of_class = rows[rows["class"] == cls]
        data = [(of_class[of_class["config"] == c]["value"] * factor).to_numpy() for c in configs]
        xs = np.arange(len(configs)) + (k - (len(classes) - 1) / 2) * width
        colour = f"C{k}"
        ax.boxplot(data, positions=xs, widths=width * 0.8, patch_artist=True, showmeans=True, manage_ticks=False,
                   boxprops={"facecolor": colour, "alpha": 0.45}, medianprops={"color": "black"},
                   meanprops={"marker": "^", "markerfacecolor": "white", "markeredgecolor": "black"},
                   flierprops={"marker": ".", "markersize": 4})
        ax.plot([], [], "s", color=colour, alpha=0.6, label=f"{cls} (n={len(of_class)} runs)")
    ax.plot([], [], "^", markerfacecolor="white", markeredgecolor="black", linestyle="none", label="mean")
    _config_ticks(ax, configs, labels)
    ax.set_ylabel(textwrap.fill(axis_label(metric, rows["value"]), 40))
    ax.set_title(textwrap.fill(f"{metric}: runs of each configuration (box: quartiles and median)", 70),
                 fontsize=11)
    _finish(fig, ax, path)


def _minmax_png(path: Path, metrics: pd.DataFrame, metric: str, labels: dict[int, str]) -> None:
    """Per configuration and class: the mean as a bar, the smallest and largest run as whiskers."""
    rows = metrics[(metrics["metric"] == metric) & (metrics["status"] == "ok")]
    _, factor = unit(metric, rows["value"])
    classes = sorted(rows["class"].unique())
    configs = sorted(rows["config"].unique())
    width = 0.8 / max(len(classes), 1)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(configs) + 3), 4.6), dpi=100)
    for k, cls in enumerate(classes):
        g = rows[rows["class"] == cls].groupby("config")["value"]
        mean, low, high = (g.mean() * factor).reindex(configs), (g.min() * factor).reindex(configs), \
            (g.max() * factor).reindex(configs)
        xs = np.arange(len(configs)) + (k - (len(classes) - 1) / 2) * width
        ax.bar(xs, mean, width=width * 0.9, label=f"{cls}: mean")
        ax.errorbar(xs, mean, yerr=[(mean - low).clip(lower=0), (high - mean).clip(lower=0)], fmt="none", ecolor="black", capsize=4,
                    label="min to max" if k == 0 else None)
    _config_ticks(ax, configs, labels)
    ax.set_ylabel(textwrap.fill(axis_label(metric, rows["value"]), 40))
    ax.set_title(textwrap.fill(f"{metric}: mean, min and max over runs", 70), fontsize=11)
    _finish(fig, ax, path)


def _cdf(ax: Any, values: Sequence[float], label: str) -> None:
    xs = np.sort(np.asarray([v for v in values if not math.isnan(v)], dtype=float))
    if len(xs):  # from 0 at the smallest value up to 1 at the largest
        ax.step(np.concatenate([xs[:1], xs]), np.arange(len(xs) + 1) / len(xs), where="post",
                label=f"{label} (n={len(xs)})")


def _cdf_png(path: Path, groups: Sequence[tuple[str, Sequence[float]]], x_label: str, title: str,
             y_label: str = "fraction of runs ≤ x") -> None:
    fig, ax = plt.subplots(figsize=(8, 4.4), dpi=100)
    for label, values in groups:
        _cdf(ax, values, label)
    ax.set_xlabel(textwrap.fill(x_label, 60))
    ax.set_ylabel(y_label)
    ax.set_ylim(0, 1.02)
    ax.set_title(textwrap.fill(title, 70), fontsize=11)
    _finish(fig, ax, path)


def _differences_png(path: Path, diffs: pd.DataFrame, metric: str, labels: dict[int, str]) -> None:
    rows = diffs[diffs["metric"] == metric]
    fig, ax = plt.subplots(figsize=(8, 4.4), dpi=100)
    classes = sorted(rows["class"].unique())
    width = 0.8 / max(len(classes), 1)
    configs = sorted(rows["config"].unique())
    for k, cls in enumerate(classes):
        g = rows[rows["class"] == cls].set_index("config").reindex(configs)
        xs = np.arange(len(configs)) + (k - (len(classes) - 1) / 2) * width
        ax.bar(xs, g["relative"] * 100, width=width * 0.9, yerr=(g["relative_ci95"] * 100).fillna(0), capsize=4,
               label=str(cls))
    ax.axhline(0, color="black", linewidth=0.8)
    ticks = [textwrap.fill(f"{labels[c]} vs {labels[int(rows[rows['config'] == c]['reference_config'].iloc[0])]}", 22)
             for c in configs]
    ax.set_xticks(np.arange(len(configs)), ticks, fontsize=7)
    ax.set_ylabel("paired difference relative\nto the reference (%)")
    ax.set_title(textwrap.fill(f"{metric}: paired difference with 95 % interval (same seeds)", 70), fontsize=11)
    _finish(fig, ax, path)


def write_report(results: str | Path, out: str | Path | None = None, *, runs: Sequence[str] = (),
                 replace: bool = False) -> Path:
    """Writes the report of the store ``results`` into ``out`` (default ``RESULTS/report``, replaced
    on every call); ``runs`` are the keys of runs to draw time series of (default: repetition 0
    of the first configurations). Returns the path of index.html."""
    root = Path(results)
    manifest = read_manifest(root)
    head = manifest["experiment"]
    parameters: list[str] = head["parameters"]
    summary, metrics, table = load(root, "summary"), load(root, "metrics"), load(root, "runs")
    differences = load(root, "differences")
    labels = config_labels(summary, parameters)
    present = list(dict.fromkeys(summary["metric"]))
    shown = [m for m in head.get("metrics", present) if m in present] or present
    stems = tables.file_stems(shown)
    out = Path(out) if out is not None else root / "report"
    # The default folder is redrawn on every call; any other is replaced only with --force.
    with atomic_folder(out, replace=replace or out == root / "report", kind="report") as tmp:
        sections = [_means(tmp, summary, parameters, shown, present),
                    _against(tmp, summary, parameters, shown, stems),
                    _boxes(tmp, metrics, labels, shown, stems),
                    _minmax(tmp, metrics, labels, shown, stems),
                    _cdfs(tmp, metrics, table, labels, shown, stems)]
        if len(differences):
            sections.append(_paired(tmp, differences, labels, shown, stems))
        if head.get("series", True):
            sections.append(_series(tmp, root, table, labels, runs))
        page_text = render("report.html.j2", title="airlink sweep report", name=Path(head["file"]).name,
                           configurations=len(labels), parameters=parameters, rule=head["rule"],
                           interval="z = 1.96" if head["interval"] == "z" else "Student t",
                           version=manifest["airlink"], store=str(root),
                           sections=[s for s in sections if s is not None], experiment_text=head["text"])
        (tmp / "index.html").write_text(page_text, encoding="utf-8")
    return out / "index.html"


def _part(heading: str = "", table: Markup | None = None, figures: Sequence[tuple[str, str]] = ()) -> dict[str, Any]:
    """A part of a section: a heading, a table, figures (file name, caption); each may be absent."""
    return {"heading": heading, "table": table, "figures": list(figures)}


def _section(title: str, text: str = "", csv: Sequence[str] = (), parts: Sequence[dict[str, Any]] = (),
             figures: Sequence[tuple[str, str]] = ()) -> dict[str, Any]:
    return {"title": title, "text": text, "csv": list(csv), "parts": [*parts, _part(figures=figures)]}


def means_wide(summary: pd.DataFrame, parameters: Sequence[str], first: Sequence[str] = ()) -> pd.DataFrame:
    """The summary in numbers, wide: a row per configuration, for each metric and class its
    mean, 95 % half-width and n in the stored unit (columns ``METRIC CLASS mean`` ...), the
    metrics ``first`` first."""
    wide = summary.pivot(index=["config", *parameters], columns=["metric", "class"], values=["mean", "ci95", "n"])
    wide = wide.reorder_levels([1, 2, 0], axis=1)
    pairs = sorted(dict.fromkeys(zip(summary["metric"], summary["class"])),
                   key=lambda mc: list(first).index(mc[0]) if mc[0] in first else len(first))
    order = [(m, c, v) for m, c in pairs for v in ("mean", "ci95", "n")]
    wide = wide.reindex(columns=order)
    wide.columns = [f"{m} {c} {v}" for m, c, v in wide.columns]
    return wide.reset_index()


def _means(tmp: Path, summary: pd.DataFrame, parameters: list[str], shown: list[str], present: list[str]
           ) -> dict[str, Any]:
    summary.to_csv(tmp / "summary.csv", index=False)
    means_wide(summary, parameters, shown).to_csv(tmp / "means.csv", index=False)
    hidden = [m for m in present if m not in shown]
    text = ("A row per configuration, a column per metric and flow class: mean ± 95 % half-width, n runs "
            "(rule t: Student-t interval, z: the DCCP study's z = 1.96)."
            + (f" Not shown, in the CSV files: {', '.join(hidden)} (name them in the experiment's metrics "
               "to see them here)." if hidden else ""))
    return _section("Means with 95 % intervals", text, ["means.csv", "summary.csv"],
                    [_part(table=html(tables.wide(summary, parameters, shown)))])


def _against(tmp: Path, summary: pd.DataFrame, parameters: list[str], shown: list[str], stems: dict[str, str]
             ) -> dict[str, Any] | None:
    numeric = [p for p in parameters if pd.api.types.is_numeric_dtype(summary[p]) and summary[p].nunique() > 1]
    if not numeric:
        return None
    x = numeric[0]
    others = [p for p in parameters if p != x]
    figures = []
    for metric in shown:
        name = f"{stems[metric]}-vs-{tables.safe_name(x)}.png"
        _against_png(tmp / name, summary, metric, x, others)
        figures.append((name, f"{metric} against {x}: mean with its 95 % interval"))
    return _section(f"Against {x}", figures=figures)


def _boxes(tmp: Path, metrics: pd.DataFrame, labels: dict[int, str], shown: list[str], stems: dict[str, str]
           ) -> dict[str, Any]:
    figures = []
    for metric in shown:
        name = f"{stems[metric]}-box.png"
        _box_png(tmp / name, metrics, metric, labels)
        figures.append((name, f"{metric}: the runs of each configuration as a box plot"))
    return _section("Runs per configuration", "Boxes span the middle half of the runs, the line is the median, "
                    "the triangle the mean; whiskers reach the furthest run within 1.5 box lengths, runs "
                    "beyond are dots.", figures=figures)


def _minmax(tmp: Path, metrics: pd.DataFrame, labels: dict[int, str], shown: list[str], stems: dict[str, str]
            ) -> dict[str, Any]:
    figures = []
    for metric in shown:
        name = f"{stems[metric]}-minmax.png"
        _minmax_png(tmp / name, metrics, metric, labels)
        figures.append((name, f"{metric}: bars are means, whiskers the smallest and largest run"))
    return _section("Mean, minimum and maximum over runs", figures=figures)


def _cdfs(tmp: Path, metrics: pd.DataFrame, table: pd.DataFrame, labels: dict[int, str], shown: list[str],
          stems: dict[str, str]) -> dict[str, Any]:
    ok = metrics[metrics["status"] == "ok"]
    figures = []
    for metric in shown:
        rows = ok[ok["metric"] == metric]
        _, factor = unit(metric, rows["value"])
        groups = [(f"{labels[c]}, {cls}", (g["value"] * factor).tolist())
                  for (c, cls), g in rows.groupby(["config", "class"], sort=True)]
        name = f"{stems[metric]}-cdf.png"
        _cdf_png(tmp / name, groups, axis_label(metric, rows["value"]), f"{metric}: CDF across runs")
        figures.append((name, f"{metric}: empirical CDF across runs, per configuration and class"))
    if "goodput_bps" in table:
        done = table[table["status"] == "ok"]
        label, factor = tables.unit("goodput_bps", tables.magnitude(done["goodput_bps"]))
        groups = [(labels[c], (g["goodput_bps"] * factor).tolist()) for c, g in done.groupby("config", sort=True)]
        _cdf_png(tmp / "goodput_bps-cdf-pooled.png", groups, f"goodput of one flow in one run ({label})",
                 "Per-flow goodput: CDF pooled over flows × runs", "fraction of flows × runs ≤ x")
        figures.append(("goodput_bps-cdf-pooled.png", "per-flow goodput, pooled over every flow of every run"))
    return _section("Distributions", figures=figures)


def _paired(tmp: Path, diffs: pd.DataFrame, labels: dict[int, str], shown: list[str], stems: dict[str, str]
            ) -> dict[str, Any]:
    diffs.to_csv(tmp / "differences.csv", index=False)
    parts = []
    for metric in [m for m in shown if m in set(diffs["metric"])]:
        g = diffs[diffs["metric"] == metric]
        u, factor = unit(metric, g["mean_difference"])
        places = tables.decimals(tables.magnitude(g["mean_difference"] * factor))
        frame = pd.DataFrame({
            "configuration": [labels[c] for c in g["config"]],
            "reference": [labels[int(c)] for c in g["reference_config"]], "class": g["class"],
            f"difference ± 95 % ({u})" if u else "difference ± 95 %":
                [tables.interval(m * factor, h * factor, places) for m, h in zip(g["mean_difference"], g["ci95"])],
            "relative ± 95 %": [f"{r:+.1%} ± {h:.1%}" if not math.isnan(r) else "—"
                                for r, h in zip(g["relative"], g["relative_ci95"])],
            "rule": g["rule"], "n": g["n"]})
        name = f"{stems[metric]}-paired.png"
        _differences_png(tmp / name, diffs, metric, labels)
        parts.append(_part(metric, html(frame), [(name, f"{metric}: relative paired difference with its 95 % "
                                                        "interval")]))
    return _section("Paired differences against the reference",
                    "Each run minus the reference configuration's run of the same repetition (the same seed: "
                    "common random numbers); relative = mean difference / reference mean.",
                    ["differences.csv"], parts)


def _series(tmp: Path, root: Path, table: pd.DataFrame, labels: dict[int, str], chosen: Sequence[str]
            ) -> dict[str, Any]:
    ok = table[table["status"] == "ok"].drop_duplicates("key")
    if not chosen:
        chosen = ok[(ok["rep"] == 0) & (ok["config"] < MAX_SERIES_CONFIGS)]["key"].tolist()
    by_key = ok.set_index("key")
    figures = []
    for key in chosen:
        if key not in by_key.index or not (root / "series" / key).exists():
            continue
        row = by_key.loc[key]
        name = f"series-{tables.safe_name(key)}.png"
        title = f"{labels[int(row['config'])]}, repetition {row['rep']} (run {key})"
        plots.runs_png(tmp / name, [(key, read_results(root / "series" / key))], title)
        figures.append((name, f"time series of {title}"))
    configs = sorted({int(by_key.loc[k, "config"]) for k in chosen if k in by_key.index})
    for c in configs:
        keys = [k for k in ok[ok["config"] == c]["key"] if (root / "series" / k).exists()]
        name = f"series-mean-{c}-{tables.safe_name(labels[c])}.png"
        plots.pointwise_mean_png(tmp / name, [(labels[c], [read_results(root / "series" / k) for k in keys])],
                                 "throughput_mbps", "throughput (Mbit/s)",
                                 f"{labels[c]}: throughput of each flow, {len(keys)} repetitions and their mean")
        figures.append((name, f"{labels[c]}: throughput per flow, repetitions and pointwise mean"))
    return _section("Time series", "Chosen runs (airlink report --run KEY picks others), then every repetition "
                    "of a configuration (thin) with their pointwise mean (thick). Dotted vertical lines mark link "
                    "state changes where there are few.", figures=figures)


def page(title: str, body: Sequence[str]) -> str:
    """The HTML page every report shares (``templates/page.html.j2``: its figures are PNG files
    beside it, its style is inline) around ``body``, HTML the caller wrote and escaped. A new
    report can instead extend the template and fill its ``content`` block (``templates.render``)."""
    return render("page.html.j2", title=title, body=Markup("\n".join(body)))
