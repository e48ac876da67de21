"""The WIPEMU report: CSV and PNG per figure, Table II, every run, the claims checked, and
``index.html`` + ``README.md`` that show them (placed beside the runs' store by
``airlink.studies.reproduction.write_report``)."""

from __future__ import annotations

import csv
import html
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from airlink.plots import Series, errorbar_png
from airlink.report import page
from airlink.studies import wipemu as study
from airlink.studies.reproduction import Run, store_lines
from airlink.tables import html_table, markdown_table
from airlink.version import version


def flatten_summary(summary: Mapping[str, Any]) -> dict[str, Any]:
    """One row of a summary: top-level fields, then ``flow<id>.<field>`` and ``<link>.<field>``."""
    row: dict[str, Any] = {k: v for k, v in summary.items() if k not in ("flows", "links")}
    for flow in summary["flows"]:
        row.update({f"flow{flow['id']}.{k}": v for k, v in flow.items() if k != "id"})
    for link in summary["links"]:
        for k, v in link.items():
            if k == "time_in_modulation_s":
                row.update({f"{link['name']}.{k}.{m}": s for m, s in v.items()})
            elif k != "name":
                row[f"{link['name']}.{k}"] = v
    return row


def runs_frame(runs: Sequence[Run]) -> pd.DataFrame:
    rows = [
        {"scenario_file": run.scenario, "overrides": "; ".join(run.overrides), "run_seed": run.seed,
         "run_key": run.key, **flatten_summary(run.summary)}
        for run in runs
    ]
    return pd.DataFrame(rows)


def _write_csv(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    if not rows:
        path.write_text("", encoding="utf-8")
        return
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _fmt(x: float, digits: int = 1) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:,.{digits}f}"


def _table2_cells(rows: Sequence[Mapping[str, float]]) -> tuple[list[str], list[list[str]]]:
    header = ["bits/symbol k", "theoretical (bit/s)", "measured (bit/s)", "study: measured (bit/s)", "airlink/study",
              "header (bit/s)", "truncation (bit/s)", "compensated (bit/s)", "compensated/theoretical"]
    cells = [
        [str(r["k"]), _fmt(r["theoretical_bps"], 0), _fmt(r["measured_bps"], 0), _fmt(r["study_measured_bps"], 0),
         _fmt(100 * r["measured_over_study"], 2) + " %", _fmt(r["header_bps"], 0),
         _fmt(r["truncation_bps"], 0), _fmt(r["compensated_bps"], 0), _fmt(100 * r["ratio"], 3) + " %"]
        for r in rows
    ]
    return header, cells


def _claim_cells(claims: Sequence[Mapping[str, str]]) -> tuple[list[str], list[list[str]]]:
    return ["result", "claim of the study", "checked as", "data"], [
        [c["status"], c["statement"], c["criterion"], c["detail"]] for c in claims
    ]


#: The claims the readings can move (the others need the best-channel curves or do not move).
READING_CLAIMS = ("bpsk-flat", "4qam-above-bpsk", "8qam-collapses", "adaptive-above-fixed", "arq-helps", "loss-vs-throughput")
READINGS_MEANING = (
    "The study leaves three things open that move its Fig. 4-5 claims: whether its shadowing is σ = 4 dB (the text) "
    "or a variance of 4 dB (Table I: σ = 2 dB), which 8-point constellation its 8-QAM is, and whether the "
    "switching levels follow the local mean SNR (spec A.6(b)). Each reading runs the five Fig. 4-5 curves at "
    f"ARQ limits {', '.join(map(str, study.READING_LIMITS))} with up to {study.READING_SEEDS} seeds; the claims are "
    "checked on those points. The shipped scenario (first row) follows the text."
)


def _reading_cells(rows: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[list[str]]]:
    lo, hi = rows[0]["low_limit"], rows[0]["high_limit"]
    header = ["reading", "BPSK spread", f"BPSK / 4-QAM / 8-QAM at limit {lo} (kbit/s)",
              f"adaptive perfect / NMSE 0.1 at limit {lo}", f"all five at limit {hi}", *READING_CLAIMS]
    kbps = lambda r, c, end: _fmt(r[f"{c}_at_{end}_kbps"], 0)  # noqa: E731
    cells = [
        [r["text"], _fmt(r["bpsk_spread_pct"]) + " %", " / ".join(kbps(r, c, "low") for c in ("bpsk", "4qam", "8qam")),
         " / ".join(kbps(r, c, "low") for c in ("adaptive-perfect", "adaptive-nmse0.1")),
         " / ".join(kbps(r, c, "high") for c in ("bpsk", "4qam", "8qam", "adaptive-perfect", "adaptive-nmse0.1")),
         *(r.get(c, "n/a") for c in READING_CLAIMS)]
        for r in rows
    ]
    return header, cells


def _plot(rep: study.Reproduction, figure: str, path: Path) -> None:
    f = study.FIGURES[figure]
    series = [
        Series(
            study.CURVES[c].label,
            rep.arq_limits,
            [rep.points[(c, x)][f"{f.metric}_mean"] for x in rep.arq_limits],
            [rep.points[(c, x)][f"{f.metric}_ci95"] for x in rep.arq_limits],
        )
        for c in f.curves
    ]
    errorbar_png(
        path,
        series,
        title=f"WIPEMU Fig. {f.number}: {f.title}",
        x_label="maximum link-layer retransmissions (ARQ limit)",
        y_label=f.y_label,
        x_ticks=rep.arq_limits,
    )


def _setup_lines(rep: study.Reproduction) -> list[str]:
    lines = [f"airlink {version()}; study: {study.CITATION}."]
    if rep.table2 is not None:
        lines.append(
            f"Table II: `scenarios/{study.VALIDATION_SCENARIO}` (fixed modulation, no frame errors), seed {study.TABLE2_SEED}, "
            "measured = steady goodput of the transfer (`goodput_steady_bps`, 10 % to 90 % of the bytes)."
        )
    if rep.figures:
        lines.append(
            f"Figures: `scenarios/{study.FIGURE_SCENARIO}`, seeds 1 to {rep.seeds} per point, ARQ limits "
            f"{', '.join(map(str, rep.arq_limits))}; throughput = mean goodput of the whole transfer "
            "(`goodput_bps`), error bars = 95 % Student-t confidence intervals of the mean."
        )
    lines.append(f"{len(rep.runs)} distinct runs (runs shared by several figures ran once).")
    lines += store_lines(rep.stores)
    if rep.claims:
        counts = {status: sum(c["status"] == status for c in rep.claims) for status in ("PASS", "FAIL", "not checked")}
        lines.append("Claims of the study: " + ", ".join(f"{n} {status}" for status, n in counts.items() if n) + " (table at the end).")
    for note in rep.deviations():
        lines.append(f"Deviation from the study: {note}.")
    incomplete = sum(p["incomplete_runs"] for p in rep.points.values())
    if incomplete:
        lines.append(f"{incomplete} run(s) hit the stop time before finishing; their throughput is bytes delivered over the run time.")
    return lines


TABLE2_MEANING = (
    "Fixed modulation without frame errors: the measured application goodput, compensated for TCP/IP "
    "headers and for the unused part of each packet's last link frame, must equal bins/s x symbols/frame x k. "
    "The study reached 99.98 %; with the exact header factor 40/1460 the expected agreement is 99.99 %."
)


def render_markdown(rep: study.Reproduction) -> str:
    out = [f"# Reproduction of WIPEMU: {study.TITLE}", ""]
    out += [f"- {line}" for line in _setup_lines(rep)]
    if rep.table2 is not None:
        header, cells = _table2_cells(rep.table2)
        out += ["", "## Table II: theoretical and measured throughput", "", TABLE2_MEANING, "",
                markdown_table(header, cells, [True] * len(header)), "", "Data: [table2.csv](table2.csv)"]
    for figure in rep.figures:
        f = study.FIGURES[figure]
        out += ["", f"## Fig. {f.number}: {f.title}", "", f.meaning, "", f"![Fig. {f.number}]({figure}.png)", "",
                f"Data: [{figure}.csv]({figure}.csv)"]
    if rep.claims:
        header, cells = _claim_cells(rep.claims)
        out += ["", "## The study's claims, checked on these data", "", markdown_table(header, cells)]
    if rep.readings:
        header, cells = _reading_cells(rep.reading_rows())
        out += ["", "## The study's open readings", "", READINGS_MEANING, "", markdown_table(header, cells), "",
                *[f"- {line}" for line in rep.reading_findings()], "", "Data: [readings.csv](readings.csv)"]
    out += ["", "All runs, one row each with every summary field: [runs.csv](runs.csv). "
            "Machine-readable results: [report.json](report.json).", ""]
    return "\n".join(out)


def render_html(rep: study.Reproduction) -> str:
    esc = html.escape
    body = [f"<h1>Reproduction of WIPEMU: {esc(study.TITLE)}</h1>", "<ul>"]
    body += [f"<li>{esc(line)}</li>" for line in _setup_lines(rep)]
    body.append("</ul>")
    if rep.table2 is not None:
        header, cells = _table2_cells(rep.table2)
        body += ["<h2>Table II: theoretical and measured throughput</h2>", f"<p>{esc(TABLE2_MEANING)}</p>",
                 html_table(header, cells, "num"), '<p>Data: <a href="table2.csv">table2.csv</a></p>']
    for figure in rep.figures:
        f = study.FIGURES[figure]
        body += [f"<h2>Fig. {f.number}: {esc(f.title)}</h2>", f"<p>{esc(f.meaning)}</p>",
                 f'<img src="{figure}.png" alt="Fig. {f.number}: {esc(f.title)}">',
                 f'<p>Data: <a href="{figure}.csv">{figure}.csv</a></p>']
    if rep.claims:
        header, cells = _claim_cells(rep.claims)
        body += ["<h2>The study's claims, checked on these data</h2>", html_table(header, cells)]
    if rep.readings:
        header, cells = _reading_cells(rep.reading_rows())
        body += ["<h2>The study's open readings</h2>", f"<p>{esc(READINGS_MEANING)}</p>", html_table(header, cells),
                 "<ul>", *[f"<li>{esc(line)}</li>" for line in rep.reading_findings()], "</ul>",
                 '<p>Data: <a href="readings.csv">readings.csv</a></p>']
    body.append('<p>All runs: <a href="runs.csv">runs.csv</a>; machine-readable: <a href="report.json">report.json</a>.</p>')
    return page("airlink: WIPEMU reproduction", body)


def write_report(rep: study.Reproduction, out: Path) -> None:
    """Writes the report's files into the folder ``out``."""
    if rep.table2 is not None:
        rows = [
            dict(r, modulation=study.MODULATIONS[int(r["k"]) - 1], overrides="; ".join(run.overrides))
            for r, run in zip(rep.table2, rep.table2_runs)
        ]
        _write_csv(out / "table2.csv", rows)
    for figure in rep.figures:
        _write_csv(out / f"{figure}.csv", rep.figure_rows(figure))
        _plot(rep, figure, out / f"{figure}.png")
    if rep.claims:
        _write_csv(out / "claims.csv", rep.claims)
    if rep.readings:
        _write_csv(out / "readings.csv", rep.reading_rows())
    runs_frame(rep.runs).to_csv(out / "runs.csv", index=False)
    (out / "report.json").write_text(json.dumps(rep.to_json(), indent=2) + "\n", encoding="utf-8")
    (out / "README.md").write_text(render_markdown(rep), encoding="utf-8")
    (out / "index.html").write_text(render_html(rep), encoding="utf-8")
