"""The Seawind report folder: Table 1 (paper, 1999 model, this machine), Figs. 1-3 as PNG and CSV,
the slow links and the granularity runs, the claims checked; ``index.html`` (self-contained but
for its PNG files) and ``README.md``. Written atomically."""

from __future__ import annotations

import csv
import html
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from airlink.atomic import atomic_folder
from airlink.plots import plt
from airlink.studies import seawind as study
from airlink.tables import html_table, markdown_table
from airlink.version import version


def _write_csv(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    keys = list(dict.fromkeys(k for r in rows for k in r))
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, keys)
        w.writeheader()
        w.writerows(rows)


def _save(fig: Any, ax: Any, path: Path, title: str) -> None:
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _fig1(rep: study.Reproduction, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(6.4, 4.6), dpi=110)
    x = [r["requested_bps"] / 1e3 for r in rep.fig1]
    ax.loglog(x, x, "k--", linewidth=1, label="requested (ideal)")
    ax.loglog(x, [r["delivered_bps"] / 1e3 for r in rep.fig1], "o-", label="airlink emulator (measured, pcap)")
    ax.loglog(x, [r["model_select_1999_bps"] / 1e3 for r in rep.fig1], "s:", label="1999 select() per packet (model)")
    ax.set_xlabel("requested line rate (kbit/s)")
    ax.set_ylabel("achieved line rate (kbit/s)")
    _save(fig, ax, path, "Fig. 1: actual vs requested line rate, 100-byte packets")


def _fig2(rep: study.Reproduction, path: Path) -> None:
    rows = rep.fig2_rows()
    fig, ax = plt.subplots(figsize=(6.4, 4.6), dpi=110)
    x = [r["rate_bps"] / 1e3 for r in rows]
    for g in study.GRANULARITIES:
        ax.loglog(x, [r[f"{g}_{study.STUDY_UNITS[g]}B_ms"] for r in rows], label=f"{g.upper()} ({study.STUDY_UNITS[g]} B)")
    ax.axhline(2 * study.JIFFY_1999_S * 1e3, color="0.3", linestyle="--", linewidth=1, label="1999 shortest select() (20 ms)")
    late = [r["lateness_p99_us"] / 1e3 for r in rep.datapath]
    if late:
        ax.axhline(max(late), color="tab:red", linestyle=":", linewidth=1, label="airlink datapath lateness p99 (worst run)")
    ax.set_xlabel("line rate (kbit/s)")
    ax.set_ylabel("delay per unit (ms)")
    _save(fig, ax, path, "Fig. 2: computed delay per unit of delivery vs line rate")


def _fig3(rep: study.Reproduction, path: Path) -> None:
    rows = rep.fig3_rows()
    methods = list(dict.fromkeys((r["source"], r["method"]) for r in rows))
    cols = 3
    n = max(1, len(methods))
    fig, axes = plt.subplots((n + cols - 1) // cols, cols, figsize=(11, 3.3 * ((n + cols - 1) // cols)), dpi=100, squeeze=False)
    for ax, (source, method) in zip(axes.flat, methods):
        pts = [r for r in rows if r["source"] == source and r["method"] == method]
        ax.plot([0, 100], [0, 100], "k--", linewidth=0.8)
        ax.scatter([r["requested_ms"] for r in pts], [r["actual_ms"] for r in pts], s=8)
        ax.set_title(f"{source}: {method}", fontsize=8)
        ax.set_xlabel("requested (ms)", fontsize=8)
        ax.set_ylabel("actual (ms)", fontsize=8)
        ax.grid(True, alpha=0.3)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.suptitle("Fig. 3: actual vs requested sleep, first 100 requests of Table 1's series", fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _sections(rep: study.Reproduction) -> list[tuple[str, str, tuple[list[str], list[list[str]]] | None, list[str]]]:
    """(title, text, table, files) per section, shared by the HTML and Markdown pages."""
    out = []
    if rep.measured or rep.modelled:
        out.append(("Table 1: sleep error statistics",
                    f"{len(rep.requests)} requests of whole milliseconds uniform on 0..99 ms (seeded; the same series for "
                    f"every method; measured over its first {rep.measured[0]['requests'] if rep.measured else 0}). Model: the 1999 kernel's select() sleeps j·⌈x/j⌉ + j (j = 10 ms at HZ = 100, "
                    "0.977 ms at HZ = 1024), exact for RTC and busy waiting, slack on the HZ = 100 timer. Measured: "
                    "today's nearest method on this machine (SCHED_FIFO when permitted; the machine is shared, so "
                    "the tails are rough). Busy waiting under SCHED_FIFO is descheduled by the kernel's real-time "
                    "throttling for about 50 ms a second (notes/timing.md), which its tail and drift show.", study.table1_cells(rep), ["table1.csv"]))
    if rep.fig1:
        out.append(("Fig. 1: requested vs achieved line rate",
                    "UDP with 100-byte IP packets offered at 1.2x a pipe's rate through the emulator; achieved = "
                    "datapath write times in the pcap (from 10 % of the stream to its end).",
                    (["requested (bit/s)", "achieved (bit/s)", "achieved / requested", "receiver / requested",
                      "lateness p99 (us)", "1999 select() model (bit/s)"],
                     [[f"{r['requested_bps']:,}", f"{r['delivered_bps']:,.0f}", f"{r['delivered_ratio']:.5f}",
                       f"{r['receiver_ratio']:.5f}", f"{r['lateness_p99_us']:.0f}", f"{r['model_select_1999_bps']:,.0f}"]
                      for r in rep.fig1]), ["fig1.png", "fig1.csv"]))
    out.append(("Fig. 2: delay per unit vs line rate",
                "t = 8·size/rate for the study's units: IP 1000 B, LLC 200 B, RLC 25 B (spec F).", None,
                ["fig2.png", "fig2.csv"]))
    if rep.measured or rep.modelled:
        out.append(("Fig. 3: actual vs requested sleeps", "The first 100 requests of Table 1's series.", None,
                    ["fig3.png", "fig3.csv"]))
    if rep.links:
        out.append(("Slow links: TCP over GSM data, HSCSD and GPRS (simulation)",
                    "Scenarios in scenarios/seawind/: rates and framing from the ETSI/3GPP figures cited there; delays "
                    "and buffers are marked assumptions.",
                    (["link", "scenario", "bytes", "goodput (kbit/s)", "time (s)", "retransmissions", "timeouts"],
                     [[r["link"], r["scenario"], str(r["bytes"]), f"{r['goodput_bps'] / 1e3:.2f}", f"{r['end_s']:.1f}",
                       str(r["retransmissions"]), str(r["timeouts"])] for r in rep.links]), ["links.csv"]))
    if rep.granularity:
        out.append((f"Granularity: TCP over GPRS {study.GPRS_CS} x {study.GPRS_TIMESLOTS} timeslots",
                    "The same link delivering whole IP packets, LLC frames (the whole number of RLC blocks nearest "
                    "200 B) or RLC blocks (the coding scheme's RLC data field), in simulation and in emulation "
                    "(airlink's own TCP in real time; lateness = datapath writes against their due instants).",
                    (["mode", "granularity", "unit (B)", "goodput (kbit/s)", "time (s)", "retransmissions",
                      "lateness p50 / p99 (us)", "wake-ups"],
                     [[r["mode"], r["granularity"], str(r["unit_bytes"] or "packet"), f"{r['goodput_bps'] / 1e3:.2f}",
                       f"{r['end_s']:.1f}" if r["end_s"] else "—", str(r["retransmissions"]),
                       f"{r['lateness_p50_us']:.0f} / {r['lateness_p99_us']:.0f}" if "lateness_p99_us" in r else "—",
                       str(r.get("wakeups", "—"))] for r in rep.granularity]), ["granularity.csv"]))
    if rep.datapath:
        out.append(("Granularity: what the emulator's datapath achieves",
                    "UDP, 1000-byte packets at 1.2x the rate through the GPRS-like pipe at each granularity.",
                    (["granularity", "unit (B)", "requested (bit/s)", "achieved / requested", "receiver / requested",
                      "lateness p50 / p99 (us)", "wake-ups"],
                     [[r["granularity"], str(r["unit_bytes"] or "packet"), f"{r['requested_bps']:,}",
                       f"{r['delivered_ratio']:.5f}", f"{r['receiver_ratio']:.5f}",
                       f"{r['lateness_p50_us']:.0f} / {r['lateness_p99_us']:.0f}", str(r["wakeups"])] for r in rep.datapath]),
                    ["datapath.csv"]))
    if rep.claims:
        out.append(("The study's claims, checked on these data", "", (["result", "claim", "statement", "data"],
                    [[c["status"], c["claim"], c["statement"], c["detail"]] for c in rep.claims]), ["claims.csv"]))
    return out


def _setup(rep: study.Reproduction) -> list[str]:
    lines = [f"airlink {version()}; study: A. Gurtov, Technical Issues of Real-Time Network Simulation in Linux (1999)."]
    if rep.quick:
        lines.append("Quick reproduction: a reduced series, fewer methods and rates, 20 kB transfers (a check, not figures to quote).")
    lines += [f"Skipped: {s}." for s in rep.skipped]
    return lines


def render_markdown(rep: study.Reproduction) -> str:
    out = [f"# Reproduction of {study.TITLE}", ""] + [f"- {line}" for line in _setup(rep)]
    for title, text, table, files in _sections(rep):
        out += ["", f"## {title}", ""] + ([text, ""] if text else [])
        if table:
            out += [markdown_table(*table), ""]
        for f in files:
            out += [f"![{title}]({f})" if f.endswith(".png") else f"Data: [{f}]({f})", ""]
    out += ["", "Machine-readable: [report.json](report.json).", ""]
    return "\n".join(out)


def render_html(rep: study.Reproduction) -> str:
    esc = html.escape
    body = [f"<h1>Reproduction of {esc(study.TITLE)}</h1>", "<ul>"] + [f"<li>{esc(x)}</li>" for x in _setup(rep)] + ["</ul>"]
    for title, text, table, files in _sections(rep):
        body.append(f"<h2>{esc(title)}</h2>")
        if text:
            body.append(f"<p>{esc(text)}</p>")
        if table:
            body.append(html_table(*table))
        for f in files:
            body.append(f'<img src="{f}" alt="{esc(title)}">' if f.endswith(".png") else f'<p>Data: <a href="{f}">{f}</a></p>')
    body.append('<p>Machine-readable: <a href="report.json">report.json</a>.</p>')
    style = ("body{font-family:sans-serif;max-width:70em;margin:2em auto;padding:0 1em;line-height:1.4}"
             "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .6em;vertical-align:top}"
             "td.pass{color:#060;font-weight:bold}td.fail{color:#a00;font-weight:bold}img{max-width:100%}")
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>airlink: Seawind reproduction</title>\n<style>{style}</style>\n</head>\n<body>\n"
            + "\n".join(body) + "\n</body>\n</html>\n")


def write_report(rep: study.Reproduction, out: Path) -> None:
    """Writes the report folder ``out``, replacing an older one only once the new one is whole."""
    with atomic_folder(out, replace=True) as tmp:
        if rep.measured or rep.modelled:
            _write_csv(tmp / "table1.csv", rep.table1())
            _write_csv(tmp / "fig3.csv", rep.fig3_rows())
            _fig3(rep, tmp / "fig3.png")
        if rep.fig1:
            _write_csv(tmp / "fig1.csv", rep.fig1)
            _fig1(rep, tmp / "fig1.png")
        _write_csv(tmp / "fig2.csv", rep.fig2_rows())
        _fig2(rep, tmp / "fig2.png")
        for name, rows in (("links", rep.links), ("granularity", rep.granularity), ("datapath", rep.datapath),
                           ("claims", rep.claims)):
            if rows:
                _write_csv(tmp / f"{name}.csv", rows)
        (tmp / "report.json").write_text(json.dumps(rep.to_json(), indent=2) + "\n", encoding="utf-8")
        (tmp / "README.md").write_text(render_markdown(rep), encoding="utf-8")
        (tmp / "index.html").write_text(render_html(rep), encoding="utf-8")
