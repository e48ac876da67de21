"""The DCCP reproduction's report: index.html (the shared page), README.md, CSVs and PNGs."""

from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from airlink.report import page
from airlink.studies import dccp
from airlink.studies.dccp import Part, Reproduction
from airlink.studies.reproduction import store_lines, write_csv
from airlink.tables import html_table, markdown_table

HEADER = ["#", "confront", "protocol", "throughput (kbit/s)", "study", "transmitted / lost (KByte)", "study",
          "jitter (ms)", "study", "n", "study n"]
VERSUS_HEADER = ["#", "confront", "protocol", "cell", "airlink", "study (interval)", "airlink / study", "intervals overlap",
                 "why they differ"]


def _pm(mean: float, half: float, digits: int = 0) -> str:
    return f"{mean:,.{digits}f}" + ("" if math.isnan(half) else f" ± {half:,.{digits}f}")


def table_cells(part: Part) -> list[list[str]]:
    """airlink's table beside the study's, in the study's layout."""
    rows = []
    for r, s in dccp.study_pairs(part):
        datagrams = not r["protocol"].startswith("TCP")
        # As the study prints it: a datagram flow's interval is that of transmitted − lost.
        sent = (f"{r['transmitted_kB']:,.0f} / {r['lost_kB']:,.0f} (T − L {_pm(r['effective_kB'], r['effective_kB_ci95'])})"
                if datagrams else _pm(r["transmitted_kB"], r["transmitted_kB_ci95"]))
        theirs = (f"{s['transmitted_kB']:,.0f} / {s['lost_kB']:,.0f} ({s['effective_kB_low']:,.0f} – {s['effective_kB_high']:,.0f})"
                  if "lost_kB" in s else f"{s['transmitted_kB']:,.0f} ({s['transmitted_kB_low']:,.0f} – {s['transmitted_kB_high']:,.0f})")
        rows.append([str(r["row"]), r["confront"], r["protocol"], _pm(r["throughput_kbps"], r["throughput_kbps_ci95"]),
                     f"{s['throughput_kbps']:,.0f} ({s['throughput_kbps_low']:,.0f} – {s['throughput_kbps_high']:,.0f})", sent,
                     theirs, _pm(r["jitter_ms"], r["jitter_ms_ci95"], 2),
                     f"{s['jitter_ms']:.2f} ({s['jitter_ms_low']:.2f} – {s['jitter_ms_high']:.2f})", str(r["n"]), str(s["n"])])
    return rows


def versus_cells(part: Part) -> list[list[str]]:
    rows = []
    for v in dccp.versus_study(part):
        interval = "" if v["study_low"] is None else f" ({v['study_low']:,.2f} – {v['study_high']:,.2f})"
        rows.append([str(v["row"]), v["confront"], v["protocol"], v["cell"], _pm(v["airlink"], v["airlink_ci95"], 2),
                     f"{v['study']:,.2f}{interval}", f"{v['ratio']:.2f}", "yes" if v["overlap"] else "no",
                     "" if v["overlap"] else dccp.explain(v["cell"], v["protocol"])])
    return rows


def _figure(path: Path, rep: Reproduction, part: Part, row: dccp.Row, number: int) -> list[dict[str, Any]]:
    """Figs. 2 and 3: (a) each protocol's goodput per second, averaged over the row's
    repetitions; (b) the second protocol's sent and lost data per second; hand-offs marked."""
    first, second = dccp.protocol_label(row.first), dccp.protocol_label(row.second)
    a = {first: row.mean_seconds([0]), f"{second} (mean of its two flows)": row.mean_seconds([1, 2])}
    sent, lost = row.mean_reports([1, 2], rep.stop_s)
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
    for label, ys in a.items():
        ax1.plot(range(1, len(ys) + 1), ys, label=label)
    ax2.plot(range(len(sent)), sent, label=f"{second}: sent")
    ax2.plot(range(len(lost)), lost, label=f"{second}: lost")
    for ax in (ax1, ax2):
        for h in rep.handoffs_s:
            ax.axvline(h, color="grey", linestyle="--", linewidth=0.8)
        ax.legend(loc="best", fontsize=8)
        ax.grid(alpha=0.3)
    ax1.set_ylabel("throughput (kbit/s)")
    ax2.set_ylabel("KByte per second")
    ax2.set_xlabel("time (s); hand-offs dashed")
    ax1.set_title(f"Fig. {number}: {row.label}, {part.size}-byte datagrams, mean of {row.n} repetitions second by second")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    out = [{"figure": number, "part": part.name, "second": t + 1, "series": label, "value": y}
           for label, ys in a.items() for t, y in enumerate(ys)]
    out += [{"figure": number, "part": part.name, "second": t, "series": f"{second} {what} KByte", "value": y}
            for what, ys in (("sent", sent), ("lost", lost)) for t, y in enumerate(ys)]
    return out


def _contradiction_cells(rows: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    return [[str(c["row"]), c["confront"], c["protocol"], c["cell"], c["why"]] for c in rows]


def setup_lines(rep: Reproduction) -> list[str]:
    how = "quick form: 60 s runs, hand-offs at 30 s and 45 s" if rep.quick else "300 s runs, hand-offs at 100 s and 200 s"
    lines = [f"{how}; the second protocol's flows start at {dccp.START_S:g} s",
             f"repetitions: the study's rule, {dccp.PILOT} pilot runs then n = ⌈(1.96·s/(0.05·x̄))²⌉ on each protocol's "
             f"throughput, at most {rep.seeds}; seeds 1, 2, ...",
             f"service budget of every sending tablet ([host.tabN] device, shared by its flows, each packet it "
             f"receives costing a sent packet's work): {dccp.DEVICE} (calibrated on Table 3); the receiving "
             f"tablet has none; UDP offers "
             f"{dccp.UDP_RATE[512]} at 512 B and {dccp.UDP_RATE[1424]} at 1424 B (the Transmitted columns)",
             "tab1 (the first protocol's sender) and tab2 (the second's first) hand off to ap2 and back; outage "
             f"{dccp.outage_ran('table3', rep.extra_overrides)} (the outage part: "
             f"{dccp.outage_ran('outage', rep.extra_overrides)}), what ap1 queued for them is lost"]
    if rep.extra_overrides:
        lines.append(f"every run also: {'; '.join(rep.extra_overrides)}")
    return lines + store_lines(rep.stores)


def write_report(rep: Reproduction, out: Path) -> None:
    esc = html.escape
    body = [f"<h1>Reproduction: {esc(dccp.TITLE)}</h1>", "<ul>", *(f"<li>{esc(line)}</li>" for line in setup_lines(rep)),
            "</ul>", f"<p>{esc(' '.join((dccp.__doc__ or '').split()))}</p>"]
    readme = [f"# {dccp.TITLE}", "", dccp.__doc__ or "", *(f"- {line}" for line in setup_lines(rep)), ""]
    body += ["<h2>What the model shows</h2>", "<ul>", *(f"<li>{esc(line)}</li>" for line in dccp.findings(rep)), "</ul>"]
    readme += ["## What the model shows", "", *(f"- {line}" for line in dccp.findings(rep)), ""]
    if rep.claims:
        body += ["<h2>The study's findings, checked on these data</h2>",
                 html_table(["result", "claim", "data"], [[c["status"], c["claim"], c["detail"]] for c in rep.claims])]
        readme += ["## The study's findings", "", *(f"- **{c['status']}** {c['claim']}: {c['detail']}" for c in rep.claims), ""]
    figures: list[dict[str, Any]] = []
    for name, part in rep.tables.items():
        title = {"table3": "Table 3 (512-byte datagrams)", "table4": "Table 4 (1424-byte datagrams)",
                 "unlimited": "Table 3's confronts without device limits (512-byte datagrams)",
                 "outage": f"TCP CUBIC against each datagram protocol with hand-off outages of {dccp.outage_ran('outage', rep.extra_overrides)} "
                           "(512-byte datagrams)"}[name]
        cells = table_cells(part)
        write_csv(out / f"{name}.csv", part.table())
        write_csv(out / f"{name}_versus_study.csv", dccp.versus_study(part))
        write_csv(out / f"{name}_handoffs.csv", dccp.handoff_dips(part, rep.handoffs_s))
        write_csv(out / f"{name}_runs.csv", [{"row": row.index, "repetition": i + 1, **f}
                                             for row in part.rows for i, run in enumerate(row.runs) for f in run])
        body += [f"<h2>{esc(title)}</h2>", "<p>airlink's mean ± its 95 % interval (z = 1.96) beside the study's value. "
                 "Datagram flows: transmitted / lost; the second protocol's values are the mean of its two flows.</p>",
                 html_table(HEADER, cells, "num")]
        readme += [f"## {title}", "", markdown_table(HEADER, cells, [False, False, False, *[True] * 8]), ""]
        if name in ("table3", "table4"):
            body += ["<h3>Cell by cell against the study</h3>", html_table(VERSUS_HEADER, versus_cells(part))]
        plots = []
        for number, index in dccp.FIGURES.items():
            for row in (r for r in part.rows if r.index == index):
                png = f"{name}_fig{number}.png"
                figures += _figure(out / png, rep, part, row, number)
                plots.append(png)
        body += [f'<img src="{p}" alt="{p}">' for p in plots]
        body.append("<p>Data: " + ", ".join(f'<a href="{name}{s}.csv">{name}{s}.csv</a>'
                                            for s in ("", "_versus_study", "_handoffs", "_runs")) + "</p>")
    write_csv(out / "figures.csv", figures)
    if trend := dccp.trends(rep):
        header = ["#", "confront", "protocol", "study 512 → 1424 B (kbit/s)", "study", "airlink 512 → 1424 B", "airlink", "agree"]
        cells = [[str(t["row"]), t["confront"], t["protocol"], f"{t['study_512_kbps']:,.0f} → {t['study_1424_kbps']:,.0f}",
                  t["study"], f"{t['airlink_512_kbps']:,.0f} → {t['airlink_1424_kbps']:,.0f}", t["airlink"],
                  "yes" if t["agree"] else "no"] for t in trend]
        write_csv(out / "trends.csv", trend)
        body += ["<h2>Table 4 for trends: throughput from 512 to 1424 bytes</h2>", html_table(header, cells)]
        readme += ["## Table 4 for trends: throughput from 512 to 1424 bytes", "", markdown_table(header, cells), ""]
    for name, label in (("table3", "Table 3"), ("table4", "Table 4")):
        rows = dccp.contradictions(name)
        body += [f"<h2>Where the study's {label} contradicts itself</h2>",
                 "<p>A value outside its own interval, a throughput that is not its transmitted (or transmitted − lost) "
                 "data over the flow's active seconds within 5 %, an effective load outside its interval.</p>",
                 html_table(["#", "confront", "protocol", "cell", "why"], _contradiction_cells(rows))]
        readme += [f"## Where the study's {label} contradicts itself", "",
                   markdown_table(["#", "confront", "protocol", "cell", "why"], _contradiction_cells(rows)), ""]
    body.append('<p>Also: <a href="README.md">README.md</a>; machine-readable: <a href="report.json">report.json</a>; '
                'the figures\' data: <a href="figures.csv">figures.csv</a>.</p>')
    (out / "report.json").write_text(json.dumps(rep.to_json(), indent=2, default=float), encoding="utf-8")
    (out / "README.md").write_text("\n".join([*readme, "```", dccp.text(rep), "```", ""]), encoding="utf-8")
    (out / "index.html").write_text(page("airlink: DCCP reproduction", body), encoding="utf-8")
