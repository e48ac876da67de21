"""`airlink report STORE`: one HTML page of a sweep's store, with PNG figures and CSV tables.

Sections, as the seed studies present their results: means with 95 % intervals and the rule that
gave them (the DCCP study's Tables 3-4); each metric against a swept parameter with interval bars
(WIPEMU Figs. 4-7); min/max/mean bars (AFC Figs. 3-5); CDFs across runs and pooled over flows ×
runs (TCP-PF Figs. 3-5); paired differences against the reference configuration (TCP-PF's
+12 %); time series of chosen runs and pointwise means across repetitions (DCCP Figs. 2-3).
"""

from __future__ import annotations

import html
import math
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from airlink import plots
from airlink.atomic import atomic_folder
from airlink.plots import plt
from airlink.results import read_results
from airlink.store import load, read_manifest

MAX_SERIES_CONFIGS = 4  # time-series figures for at most this many configurations by default


def unit(metric: str) -> tuple[str, float]:
    """The unit a metric is shown in and the factor from its stored value."""
    name = metric.rsplit(".", 1)[-1]
    if name.endswith("_bps"):
        return "Mbit/s", 1e-6
    if name == "f_sys":
        return "mean ln(kbyte/s)", 1.0
    if name == "jain_index":
        return "Jain's index, 1 = fair", 1.0
    if name.endswith("_pct"):
        return "%", 1.0
    if name.endswith("_s"):
        return "s", 1.0
    if name.endswith("_bytes") or name.startswith("bytes"):
        return "bytes", 1.0
    return "count", 1.0


def axis_label(metric: str) -> str:
    u, _ = unit(metric)
    return f"{metric} ({u})"


def config_labels(summary: pd.DataFrame, parameters: Sequence[str]) -> dict[int, str]:
    """``loss=0.01, congestion=cubic`` per configuration: each parameter by its last name part,
    unless two parameters share it."""
    short = [p.rsplit(".", 1)[-1] for p in parameters]
    names = short if len(set(short)) == len(short) else list(parameters)
    firsts = summary.drop_duplicates("config").set_index("config")
    return {int(c): ", ".join(f"{n}={row[p]}" for n, p in zip(names, parameters)) or "base"
            for c, row in firsts.iterrows()}


def _numeric(values: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(values)


def _fmt(mean: float, half: float) -> str:
    if math.isnan(mean):
        return "—"
    if abs(half) <= 1e-9 * abs(mean):  # rounding noise of a constant sample
        half = 0.0
    return f"{mean:.5g} ± {half:.2g}" if not math.isnan(half) else f"{mean:.5g}"


def _table_html(frame: pd.DataFrame) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    rows = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>"
                   for row in frame.itertuples(index=False))
    return f'<table class="num"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'


def _figure(name: str, caption: str) -> str:
    return (f'<figure><img src="{html.escape(name)}" alt="{html.escape(caption)}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def _finish(fig: Any, ax: Any, path: Path, legend: bool = True) -> None:
    ax.grid(True, alpha=0.3)
    if legend and ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.tight_layout()
    fig.savefig(path, bbox_inches="tight")  # the legend beside the axes is kept whole
    plt.close(fig)


def _against_png(path: Path, summary: pd.DataFrame, metric: str, x: str, others: Sequence[str]) -> None:
    """The metric's mean with 95 % interval bars against parameter ``x``, a line per class and
    value of the other parameters."""
    _, factor = unit(metric)
    fig, ax = plt.subplots(figsize=(8, 4.4), dpi=100)
    rows = summary[summary["metric"] == metric]
    for key, g in rows.groupby([*others, "class"], sort=True):
        key = key if isinstance(key, tuple) else (key,)
        label = ", ".join([*(f"{o.rsplit('.', 1)[-1]}={v}" for o, v in zip(others, key[:-1])), str(key[-1])])
        g = g.sort_values(x)
        err = [0.0 if math.isnan(h) else h * factor for h in g["ci95"]]
        ax.errorbar(g[x], g["mean"] * factor, yerr=err, marker="o", capsize=3, label=label)
    values = sorted(rows[x].unique())
    if len(values) <= 12:
        ax.set_xticks(values, [f"{v:g}" for v in values])
    ax.set_xlabel(x)
    ax.set_ylabel(textwrap.fill(axis_label(metric), 40))
    ax.set_title(textwrap.fill(f"{metric}: mean and 95 % interval against {x}", 70), fontsize=11)
    _finish(fig, ax, path)


def _minmax_png(path: Path, metrics: pd.DataFrame, metric: str, labels: dict[int, str]) -> None:
    """Per configuration and class: the mean as a bar, the smallest and largest run as whiskers."""
    _, factor = unit(metric)
    rows = metrics[(metrics["metric"] == metric) & (metrics["status"] == "ok")]
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
    ax.set_xticks(np.arange(len(configs)), [textwrap.fill(labels[c], 18) for c in configs], fontsize=8)
    ax.set_xlabel("configuration")
    ax.set_ylabel(textwrap.fill(axis_label(metric), 40))
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
    out = Path(out) if out is not None else root / "report"
    # The default folder is redrawn on every call; any other is replaced only with --force.
    with atomic_folder(out, replace=replace or out == root / "report", kind="report") as tmp:
        body = [f"<h1>Sweep report: {html.escape(Path(head['file']).name)}</h1>",
                f"<p>{len(labels)} configurations of {len(parameters)} swept parameters "
                f"({html.escape(', '.join(parameters) or 'none')}), rule {html.escape(head['rule'])}, "
                f"intervals by {'z = 1.96' if head['interval'] == 'z' else 'Student t'}; airlink "
                f"{html.escape(manifest['airlink'])}; store <code>{html.escape(str(root))}</code>.</p>"]
        body += _means(tmp, summary, parameters)
        body += _against(tmp, summary, parameters)
        body += _minmax(tmp, metrics, labels)
        body += _cdfs(tmp, metrics, table, labels)
        if len(differences):
            body += _paired(tmp, differences, parameters, labels)
        if head.get("series", True):
            body += _series(tmp, root, table, labels, runs)
        (tmp / "index.html").write_text(_page(head, body), encoding="utf-8")
    return out / "index.html"


def _means(tmp: Path, summary: pd.DataFrame, parameters: list[str]) -> list[str]:
    summary.to_csv(tmp / "summary.csv", index=False)
    out = ["<h2>Means with 95 % intervals</h2>",
           '<p>Per configuration, metric and flow class (<a href="summary.csv">summary.csv</a>); '
           "rule t: Student-t interval, z: the DCCP study's z = 1.96.</p>"]
    for metric, g in summary.groupby("metric", sort=False):
        shown = g[[*parameters, "class"]].copy()
        shown[f"mean ± 95 % ({unit(metric)[0]})"] = [_fmt(m * unit(metric)[1], h * unit(metric)[1])
                                                     for m, h in zip(g["mean"], g["ci95"])]
        shown["rule"], shown["n"] = g["rule"], g["n"]
        out += [f"<h3>{html.escape(metric)}</h3>", _table_html(shown)]
    return out


def _against(tmp: Path, summary: pd.DataFrame, parameters: list[str]) -> list[str]:
    numeric = [p for p in parameters if _numeric(summary[p]) and summary[p].nunique() > 1]
    if not numeric:
        return []
    x = numeric[0]
    others = [p for p in parameters if p != x]
    out = [f"<h2>Against {html.escape(x)}</h2>"]
    for i, metric in enumerate(summary["metric"].unique()):
        name = f"against_{i}.png"
        _against_png(tmp / name, summary, metric, x, others)
        out.append(_figure(name, f"{metric} against {x}: mean with its 95 % interval"))
    return out


def _minmax(tmp: Path, metrics: pd.DataFrame, labels: dict[int, str]) -> list[str]:
    out = ["<h2>Mean, minimum and maximum over runs</h2>"]
    for i, metric in enumerate(metrics["metric"].unique()):
        name = f"minmax_{i}.png"
        _minmax_png(tmp / name, metrics, metric, labels)
        out.append(_figure(name, f"{metric}: bars are means, whiskers the smallest and largest run"))
    return out


def _cdfs(tmp: Path, metrics: pd.DataFrame, table: pd.DataFrame, labels: dict[int, str]) -> list[str]:
    out = ["<h2>Distributions</h2>"]
    ok = metrics[metrics["status"] == "ok"]
    for i, metric in enumerate(ok["metric"].unique()):
        _, factor = unit(metric)
        rows = ok[ok["metric"] == metric]
        groups = [(f"{labels[c]}, {cls}", (g["value"] * factor).tolist())
                  for (c, cls), g in rows.groupby(["config", "class"], sort=True)]
        name = f"cdf_{i}.png"
        _cdf_png(tmp / name, groups, axis_label(metric), f"{metric}: CDF across runs")
        out.append(_figure(name, f"{metric}: empirical CDF across runs, per configuration and class"))
    if "goodput_bps" in table:
        done = table[table["status"] == "ok"]
        groups = [(labels[c], (g["goodput_bps"] * 1e-6).tolist()) for c, g in done.groupby("config", sort=True)]
        _cdf_png(tmp / "cdf_pooled_goodput.png", groups, "goodput of one flow in one run (Mbit/s)",
                 "Per-flow goodput: CDF pooled over flows × runs", "fraction of flows × runs ≤ x")
        out.append(_figure("cdf_pooled_goodput.png", "per-flow goodput, pooled over every flow of every run"))
    return out


def _paired(tmp: Path, diffs: pd.DataFrame, parameters: list[str], labels: dict[int, str]) -> list[str]:
    diffs.to_csv(tmp / "differences.csv", index=False)
    out = ["<h2>Paired differences against the reference</h2>",
           "<p>Each run minus the reference configuration's run of the same repetition (the same seed: "
           "common random numbers); relative = mean difference / reference mean "
           '(<a href="differences.csv">differences.csv</a>).</p>']
    for i, (metric, g) in enumerate(diffs.groupby("metric", sort=False)):
        u, factor = unit(metric)
        shown = pd.DataFrame({"configuration": [labels[c] for c in g["config"]],
                              "reference": [labels[int(c)] for c in g["reference_config"]], "class": g["class"],
                              f"difference ± 95 % ({u})": [_fmt(m * factor, h * factor)
                                                           for m, h in zip(g["mean_difference"], g["ci95"])],
                              "relative ± 95 %": [f"{r:+.1%} ± {h:.1%}" if not math.isnan(r) else "—"
                                                  for r, h in zip(g["relative"], g["relative_ci95"])],
                              "rule": g["rule"], "n": g["n"]})
        name = f"paired_{i}.png"
        _differences_png(tmp / name, diffs, metric, labels)
        out += [f"<h3>{html.escape(metric)}</h3>", _table_html(shown),
                _figure(name, f"{metric}: relative paired difference with its 95 % interval")]
    return out


def _series(tmp: Path, root: Path, table: pd.DataFrame, labels: dict[int, str], chosen: Sequence[str]) -> list[str]:
    ok = table[table["status"] == "ok"].drop_duplicates("key")
    if not chosen:
        chosen = ok[(ok["rep"] == 0) & (ok["config"] < MAX_SERIES_CONFIGS)]["key"].tolist()
    out = ["<h2>Time series</h2>",
           "<p>Chosen runs (<code>airlink report --run KEY</code> picks others), then every repetition of a "
           "configuration (thin) with their pointwise mean (thick). Dotted vertical lines mark link state "
           "changes where there are few.</p>"]
    by_key = ok.set_index("key")
    for i, key in enumerate(chosen):
        if key not in by_key.index or not (root / "series" / key).exists():
            continue
        row = by_key.loc[key]
        name = f"run_{i}.png"
        title = f"{labels[int(row['config'])]}, repetition {row['rep']} (run {key})"
        plots.runs_png(tmp / name, [(key, read_results(root / "series" / key))], title)
        out.append(_figure(name, f"time series of {title}"))
    configs = sorted({int(by_key.loc[k, "config"]) for k in chosen if k in by_key.index})
    for c in configs:
        keys = [k for k in ok[ok["config"] == c]["key"] if (root / "series" / k).exists()]
        name = f"mean_{c}.png"
        plots.pointwise_mean_png(tmp / name, [(labels[c], [read_results(root / "series" / k) for k in keys])],
                                 "throughput_mbps", "throughput (Mbit/s)",
                                 f"{labels[c]}: throughput of each flow, {len(keys)} repetitions and their mean")
        out.append(_figure(name, f"{labels[c]}: throughput per flow, repetitions and pointwise mean"))
    return out


STYLE = """body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222;line-height:1.4}
table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:.9em}
th,td{border:1px solid #ccc;padding:.25em .6em;vertical-align:top;text-align:left}th{background:#f2f2f2}
table.num td{text-align:right}td.pass{color:#060;font-weight:bold}td.fail{color:#a00;font-weight:bold}
figure{margin:1em 0 2em}img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:.9em;color:#555}pre{background:#f7f7f7;padding:.5em;overflow-x:auto}"""


def page(title: str, body: Sequence[str]) -> str:
    """The HTML page every report shares (sweeps and the studies' reproductions): its figures are
    PNG files beside it, its style is inline."""
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{html.escape(title)}</title>\n'
            f"<style>{STYLE}</style>\n</head>\n<body>\n" + "\n".join(body) + "\n</body>\n</html>\n")


def _page(head: dict[str, Any], body: list[str]) -> str:
    experiment = f"<h2>Experiment file</h2><pre>{html.escape(head['text'])}</pre>"
    return page("airlink sweep report", [*body, experiment])
