"""The TCP-AFC reproduction's report: index.html (the shared page), README.md, CSVs and PNGs."""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from airlink.plots import Series, errorbar_png
from airlink.report import page
from airlink.studies import afc
from airlink.studies.afc import FILES_MB, NOMINAL_BERS, PROTOCOLS, RATES_KBPS, READING_TEXT, Reproduction
from airlink.studies.reproduction import write_csv
from airlink.tables import html_table

COLOURS = {"newreno": "tab:blue", "afc": "tab:orange"}

FINDINGS = {
    "bit-errors": """The bit errors. Run bit by bit, the study's nominal 1e-5 corrupts 11.3 % of the segments and
    both protocols crawl (Table 2 under "nominal, bit by bit"); the study's own count of 90-93 losses in 20 MB
    fits either an effective rate 0.054 times the nominal one or the nominal rate in short bursts (36 bits on
    average, half of them wrong: the residual errors of a Viterbi decoder). Both readings lose the same share of
    packets, so they give nearly the same Table 2; the figures use the effective reading.""",
    "fig9": """Why AFC gains over TCP with small buffers (Fig. 9 table). The gain is not idle capacity taken up: the
    link is about as busy with TCP + TCP as with AFC + TCP. It is share: while both transfers run, AFC takes about
    70 % of the link with buffers of 20-100 packets, where a TCP in its place takes 50-60 %. A small drop-tail
    buffer overflows often, each time dropping a short run of consecutive segments (a recovery episode repairs
    about 2-4 segments at 20 packets): one hole in the window. AFC takes a lone hole for a random loss (SACK_OK
    stays true) and keeps its window while the competing TCP halves, so it stays ahead after every overflow. A
    200-packet buffer overflows rarely but with many drops at once (25-65 segments per episode: the slow-start
    overshoot and both flows' bursts interleaved in the queue), so AFC sees a second hole in the window and
    reduces as TCP does; the two then behave alike (AFC/TCP 1.01-1.09), as the study's Fig. 9 shows. The wired
    reference of Fig. 10 (10 ms each way, 100 packets) shows AFC ahead as well: what matters is how the
    overflow's drops fall in a window, not the buffer against the bandwidth-delay product alone.""",
    "headline": """The headline "TCP degrades 63.1 % against AFC's 25.2 %" names no figure. It is read here as the
    mean over both multimedia experiments (Figs. 11 and 12) of the BER-1e-5 loss, each protocol against its own
    clear-sky goodput under the same UDP load: the conclusion speaks of degradation "while competing with UDP
    traffic because of additional losses due to corruption on the satellite link having poor BER", of the
    multimedia experiments as a whole. The claims table gives each figure's value as well (the reading of Fig. 12
    alone, where the text says the weakness "is more apparent"); utilisation.csv also has each share against
    TCP's clear sky.""",
}


def _flat(row: Mapping[str, Any]) -> dict[str, Any]:
    """A p2p run's row with its per-stage dictionaries spread into columns."""
    out = {k: v for k, v in row.items() if not isinstance(v, dict)}
    for k in ("files_Bps", "stages_Bps", "stage_losses"):
        out.update({f"{k}_{mb:g}MB": v for mb, v in row[k].items()})
    return out


def _bar_rows(rep: Reproduction) -> list[dict[str, Any]]:
    rows = []
    for k in RATES_KBPS:
        for b in NOMINAL_BERS:
            for mb in FILES_MB:
                for p in PROTOCOLS:
                    xs = [r["files_Bps"][mb] for r in rep.p2p if (r["rate_kbps"], r["nominal_ber"], r["congestion"]) == (k, b, p)]
                    rows.append({"rate_kbps": k, "nominal_ber": b, "file_mb": mb, "protocol": PROTOCOLS[p], "runs": len(xs),
                                 "min_Bps": min(xs), "mean_Bps": sum(xs) / len(xs), "max_Bps": max(xs)})
    return rows


def _fig3(out: Path, rep: Reproduction) -> None:
    """The series of alternating transfers, 20 MB at 2 Mbit/s (attempt i: seed i of each)."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), dpi=100, sharey=True)
    for ax, b in zip(axes, NOMINAL_BERS):
        for p in PROTOCOLS:
            runs = sorted((r["seed"], r["files_Bps"][20] / 1e3) for r in rep.p2p
                          if (r["rate_kbps"], r["nominal_ber"], r["congestion"]) == (2048, b, p))
            ax.plot([2 * s - (p == "newreno") for s, _ in runs], [v for _, v in runs], "o-", color=COLOURS[p], label=PROTOCOLS[p])
        ax.set_title(f"BER {b:g} (effective reading)", fontsize=10)
        ax.set_xlabel("file transfer (TCP and AFC alternately)")
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("throughput (kB/s)")
    axes[0].set_ylim(bottom=0)
    axes[0].legend()
    fig.suptitle("Fig. 3: throughput in a series of 20 MB transfers, 2 Mbit/s", fontsize=11)
    fig.tight_layout()
    fig.savefig(out / "fig3.png")
    plt.close(fig)


def _bars_png(path: Path, groups: Sequence[str], values: Mapping[str, Sequence[tuple[float, float, float]]], title: str,
              y_label: str) -> None:
    """Grouped bars of the mean with min-max whiskers, one bar per protocol in each group."""
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    width = 0.8 / len(values)
    for i, (p, vals) in enumerate(values.items()):
        xs = [g + (i - (len(values) - 1) / 2) * width for g in range(len(groups))]
        means = [m for _, m, _ in vals]
        err = [[m - lo for lo, m, _ in vals], [hi - m for _, m, hi in vals]]
        ax.bar(xs, means, width, yerr=err, capsize=4, label=PROTOCOLS.get(p, p), color=COLOURS.get(p))
    ax.set_xticks(range(len(groups)), groups)
    ax.set_ylabel(y_label)
    ax.set_title(title, fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _p2p_figures(out: Path, rep: Reproduction) -> None:
    _fig3(out, rep)
    for name, b in (("fig4", 1e-6), ("fig5", 1e-5)):
        e = {p: [r for r in _bar_rows(rep) if (r["rate_kbps"], r["nominal_ber"], r["file_mb"], r["protocol"]) == (2048, b, 20, PROTOCOLS[p])][0]
             for p in PROTOCOLS}
        _bars_png(out / f"{name}.png", ["minimum", "maximum", "mean"],
                  {p: [(v["min_Bps"] / 1e3,) * 3, (v["max_Bps"] / 1e3,) * 3, (v["mean_Bps"] / 1e3,) * 3] for p, v in e.items()},
                  f"{'Fig. 4' if name == 'fig4' else 'Fig. 5'}: 20 MB transfers, 2 Mbit/s, BER {b:g} ({rep.seeds} each)",
                  "throughput (kB/s)")
    fig, axes = plt.subplots(2, 2, figsize=(10, 7), dpi=100)
    bars = _bar_rows(rep)
    for ax, (k, b) in zip(axes.flat, [(k, b) for k in RATES_KBPS for b in NOMINAL_BERS]):
        for i, p in enumerate(PROTOCOLS):
            rows = [r for r in bars if (r["rate_kbps"], r["nominal_ber"], r["protocol"]) == (k, b, PROTOCOLS[p])]
            xs = [j + (i - 0.5) * 0.4 for j in range(len(rows))]
            ax.bar(xs, [r["mean_Bps"] / 1e3 for r in rows], 0.4, color=COLOURS[p], label=PROTOCOLS[p],
                   yerr=[[(r["mean_Bps"] - r["min_Bps"]) / 1e3 for r in rows], [(r["max_Bps"] - r["mean_Bps"]) / 1e3 for r in rows]],
                   capsize=3)
        ax.set_xticks(range(len(FILES_MB)), [f"{mb} MB" for mb in FILES_MB])
        ax.set_title(f"{k // 1024} Mbit/s, BER {b:g}", fontsize=10)
        ax.set_ylabel("throughput (kB/s)")
        ax.grid(True, axis="y", alpha=0.3)
    axes[0, 0].legend()
    fig.suptitle("5, 10 and 20 MB files: mean, whiskers from minimum to maximum", fontsize=11)
    fig.tight_layout()
    fig.savefig(out / "files.png")
    plt.close(fig)


def _trace_figures(out: Path, rep: Reproduction) -> None:
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    for p, t in rep.traces.items():
        rows = t["rows"]
        ax.plot([r["time_s"] for r in rows], [r["delivered_bytes"] / 1e6 for r in rows], color=COLOURS[p],
                label=f"{PROTOCOLS[p]} (seed {t['seed']}, {t['retransmissions']} retransmissions)")
        marks = [r for r in rows if r["loss"]]
        ax.plot([r["time_s"] for r in marks], [r["delivered_bytes"] / 1e6 for r in marks], "|", color="red", markersize=8)
    ax.plot([], [], "|", color="red", label="R: a retransmission")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("sequence number (MB delivered)")
    ax.set_title("Fig. 6: sequence number against time, 20 MB, 2 Mbit/s, BER 1e-5 (effective)", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "fig6.png")
    plt.close(fig)
    for name, key, title in (("fig7", "rows", "Fig. 7: throughput against time, 20 MB (1-s windows)"),
                             ("fig8", "fig8_rows", "Fig. 8: the first megabyte, both on seed 1 (1-s windows; red: first loss)")):
        series = []
        for p, t in rep.traces.items():
            pts = [r for r in t[key] if "throughput_Bps" in r]
            series.append(Series(PROTOCOLS[p], [r["time_s"] for r in pts], [r["throughput_Bps"] / 1e3 for r in pts], [0.0] * len(pts)))
        errorbar_png(out / f"{name}.png", series, title=title, x_label="time (s)", y_label="throughput (kB/s)", markers=name == "fig8")
    write_csv(out / "fig6_fig7.csv", [{"protocol": PROTOCOLS[p], "seed": t["seed"], **r} for p, t in rep.traces.items() for r in t["rows"]])
    write_csv(out / "fig8.csv", [{"protocol": PROTOCOLS[p], "seed": t["fig8_seed"], **r} for p, t in rep.traces.items() for r in t["fig8_rows"]])


def _table2_png(path: Path, which: str, rows: Sequence[Mapping[str, Any]]) -> None:
    xs = [r["stage_mb"] for r in rows]
    errorbar_png(path, [
        Series("SACK TCP", xs, [r["tcp_Bps"] / 1e3 for r in rows], [r["tcp_ci95"] / 1e3 for r in rows]),
        Series("TCP-AFC", xs, [r["afc_Bps"] / 1e3 for r in rows], [r["afc_ci95"] / 1e3 for r in rows]),
        Series("study: SACK TCP", xs, [r["study_tcp_Bps"] / 1e3 for r in rows], [0.0] * len(rows)),
        Series("study: TCP-AFC", xs, [r["study_afc_Bps"] / 1e3 for r in rows], [0.0] * len(rows)),
    ], title=f"Table 2: throughput at each stage of a 20 MB transfer ({READING_TEXT[which]})",
        x_label="data transferred (MB)", y_label="throughput (kB/s)")


def _fig9_png(out: Path, rep: Reproduction) -> None:
    rates = sorted({r["rate_kbps"] for r in rep.fig9})
    fig, axes = plt.subplots(1, len(rates), figsize=(4 * len(rates), 4), dpi=100, squeeze=False)
    for ax, k in zip(axes[0], rates):
        rows = [r for r in rep.fig9 if r["rate_kbps"] == k]
        for p, tag in (("newreno", "tcp"), ("afc", "afc")):
            ax.errorbar([r["buffer_packets"] for r in rows], [r[f"{tag}_Bps"] / 1e3 for r in rows],
                        yerr=[r[f"{tag}_ci95"] / 1e3 for r in rows], marker="o", capsize=3, color=COLOURS[p], label=PROTOCOLS[p])
        ax.set_xscale("log")
        ax.set_xticks([r["buffer_packets"] for r in rows], [str(r["buffer_packets"]) for r in rows])
        ax.set_title(f"{k} kbit/s", fontsize=10)
        ax.set_xlabel("modem buffer (packets)")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
    axes[0][0].set_ylabel("throughput of the flow under test (kB/s)")
    axes[0][0].legend()
    fig.suptitle("Fig. 9: against a competing 20 MB SACK TCP transfer, clear sky", fontsize=11)
    fig.tight_layout()
    fig.savefig(out / "fig9.png")
    plt.close(fig)


def _shared_figures(out: Path, rep: Reproduction) -> None:
    if rep.fig9:
        _fig9_png(out, rep)
        write_csv(out / "fig9.csv", rep.fig9)
    if rep.fig10:
        _bars_png(out / "fig10.png", [r["condition"].replace(", ", "\n") for r in rep.fig10],
                  {p: [(r[f"{t}_Bps"] / 1e3,) * 3 for r in rep.fig10] for p, t in (("newreno", "tcp"), ("afc", "afc"))},
                  "Fig. 10: against a competing SACK TCP transfer (buffer 100 packets)", "throughput (kB/s)")
        write_csv(out / "fig10.csv", rep.fig10)
    if rep.utilisation:
        for fig_name in afc.UTILISATION:
            rows = [r for r in rep.utilisation if r["figure"] == fig_name]
            k, video, _ = afc.UTILISATION[fig_name]
            _bars_png(out / f"{fig_name}.png", ["clear sky" if r["nominal_ber"] == 0 else f"BER {r['nominal_ber']:g}" for r in rows],
                      {p: [(r[f"{t}_pct"],) * 3 for r in rows] for p, t in (("newreno", "tcp"), ("afc", "afc"))},
                      f"{'Fig. 11' if fig_name == 'fig11' else 'Fig. 12'}: bandwidth utilisation, {k // 1024} Mbit/s, "
                      f"{video} kbit/s video + 64 kbit/s audio", "share of its clear-sky goodput (%)")
        write_csv(out / "utilisation.csv", rep.utilisation)


def _table2_cells(rows: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[list[str]]]:
    header = ["stage (MB)", "SACK TCP (B/s)", "TCP-AFC (B/s)", "TCP, seed range", "AFC, seed range", "AFC/TCP",
              "losses TCP / AFC", "study: TCP (B/s)", "study: AFC (B/s)", "study: AFC/TCP", "study: losses"]
    return header, [[f"{r['stage_mb']:g}", f"{r['tcp_Bps']:,.0f} ± {r['tcp_ci95']:,.0f}", f"{r['afc_Bps']:,.0f} ± {r['afc_ci95']:,.0f}",
                     f"{r['tcp_min_Bps']:,.0f} to {r['tcp_max_Bps']:,.0f}", f"{r['afc_min_Bps']:,.0f} to {r['afc_max_Bps']:,.0f}",
                     f"{r['ratio']:.2f}", f"{r['tcp_losses']:.0f} / {r['afc_losses']:.0f}", f"{r['study_tcp_Bps']:,.0f}",
                     f"{r['study_afc_Bps']:,.0f}", f"{r['study_ratio']:.2f}", f"{r['study_tcp_losses']} / {r['study_afc_losses']}"]
                    for r in rows]


def _p2p_html(rep: Reproduction) -> list[str]:
    bars = _bar_rows(rep)
    cells = []
    for k in RATES_KBPS:
        for b in NOMINAL_BERS:
            for mb in FILES_MB:
                e = {r["protocol"]: r for r in bars if (r["rate_kbps"], r["nominal_ber"], r["file_mb"]) == (k, b, mb)}
                t, a = e["SACK TCP"], e["TCP-AFC"]
                cells.append([f"{k // 1024} Mbit/s", f"{b:g}", f"{mb}", *(f"{v[key] / 1e3:.1f}" for v in (t, a) for key in
                                                                         ("min_Bps", "mean_Bps", "max_Bps")),
                              f"{a['mean_Bps'] / t['mean_Bps']:.2f}"])
    t, a = rep.traces["newreno"], rep.traces["afc"]
    return ["<h2>Point to point: Figs. 3-5, and 5, 10 and 20 MB files at 1 and 2 Mbit/s</h2>",
            '<img src="fig3.png" alt="Fig. 3"> <img src="fig4.png" alt="Fig. 4"> <img src="fig5.png" alt="Fig. 5">',
            '<img src="files.png" alt="file sizes and rates">',
            html_table(["data rate", "nominal BER", "file (MB)", "TCP min (kB/s)", "TCP mean", "TCP max", "AFC min", "AFC mean",
                        "AFC max", "AFC/TCP"], cells, "num"),
            '<p>Data: <a href="p2p_bars.csv">p2p_bars.csv</a>, every run: <a href="p2p_runs.csv">p2p_runs.csv</a>. '
            "The study's Figs. 3-5 show 2 Mbit/s, 20 MB; it gives no numbers for them.</p>",
            "<h2>Figs. 6-8: one transfer of each, 2 Mbit/s, BER 1e-5</h2>",
            f"<p>20 MB: TCP-AFC in {a['time_s']:.0f} s ({a['Bps'] / 1e3:.1f} kB/s, {a['retransmissions']} retransmissions, seed "
            f"{a['seed']}), SACK TCP in {t['time_s']:.0f} s ({t['Bps'] / 1e3:.1f} kB/s, {t['retransmissions']}, seed {t['seed']}); "
            f"study: 245 s (82 kB/s, 93 losses) and 554 s (36 kB/s, 90). As the study did, each is the run whose loss count "
            f"comes closest to its sample's. First loss on seed {a['fig8_seed']}: TCP {t['first_loss_s']:.1f} s, AFC "
            f"{a['first_loss_s']:.1f} s (study: AFC 4 s, TCP 4.5 s).</p>",
            '<img src="fig6.png" alt="Fig. 6"> <img src="fig7.png" alt="Fig. 7"> <img src="fig8.png" alt="Fig. 8">',
            '<p>Data: <a href="fig6_fig7.csv">fig6_fig7.csv</a>, <a href="fig8.csv">fig8.csv</a></p>']


def _shared_html(rep: Reproduction) -> list[str]:
    esc = html.escape
    body = []
    if rep.fig9:
        body += ["<h2>Fig. 9: against a competing TCP transfer, clear sky, the modem buffer swept</h2>",
                 '<img src="fig9.png" alt="Fig. 9">',
                 html_table(["data rate (kbit/s)", "buffer (packets)", "buffer / BDP", "SACK TCP (kB/s)", "TCP-AFC (kB/s)", "AFC/TCP",
                             "share while both ran: TCP", "share: AFC", "losses per recovery: TCP", "losses per recovery: AFC",
                             "link use, TCP + TCP", "link use, AFC + TCP"],
                            [[str(r["rate_kbps"]), str(r["buffer_packets"]), f"{r['buffer_bdp']:.2f}",
                              f"{r['tcp_Bps'] / 1e3:.1f} ± {r['tcp_ci95'] / 1e3:.1f}", f"{r['afc_Bps'] / 1e3:.1f} ± {r['afc_ci95'] / 1e3:.1f}",
                              f"{r['ratio']:.2f}", f"{100 * r['tcp_share']:.0f} %", f"{100 * r['afc_share']:.0f} %",
                              f"{r['tcp_retx_per_recovery']:.1f}", f"{r['afc_retx_per_recovery']:.1f}",
                              f"{100 * r['link_use_with_tcp']:.0f} %", f"{100 * r['link_use_with_afc']:.0f} %"] for r in rep.fig9], "num"),
                 f"<p>{esc(' '.join(FINDINGS['fig9'].split()))}</p>", '<p>Data: <a href="fig9.csv">fig9.csv</a></p>']
    if rep.fig10:
        body += ["<h2>Fig. 10: against a competing TCP transfer with bit errors, and a wired reference</h2>",
                 '<img src="fig10.png" alt="Fig. 10">',
                 html_table(["condition", "SACK TCP (kB/s)", "TCP-AFC (kB/s)", "AFC/TCP", "competitor with TCP", "competitor with AFC"],
                            [[r["condition"], f"{r['tcp_Bps'] / 1e3:.1f} ± {r['tcp_ci95'] / 1e3:.1f}",
                              f"{r['afc_Bps'] / 1e3:.1f} ± {r['afc_ci95'] / 1e3:.1f}", f"{r['ratio']:.2f}",
                              f"{r['competitor_with_tcp_Bps'] / 1e3:.1f}", f"{r['competitor_with_afc_Bps'] / 1e3:.1f}"] for r in rep.fig10], "num"),
                 f"<p>BER: the effective reading. The wired reference: the same rate and buffer, {afc.WIRED_DELAY} each way "
                 "instead of 250 ms, no bit errors.</p>", '<p>Data: <a href="fig10.csv">fig10.csv</a></p>']
    if rep.utilisation:
        body += ["<h2>Figs. 11-12: bandwidth utilisation against UDP video and audio</h2>",
                 '<img src="fig11.png" alt="Fig. 11"> <img src="fig12.png" alt="Fig. 12">',
                 html_table(["figure", "BER", "SACK TCP (kB/s)", "TCP-AFC (kB/s)", "TCP, share of clear sky", "AFC, share of clear sky",
                             "UDP on the wire (kB/s)", "study: UDP (kB/s)"],
                            [[r["figure"], "clear sky" if r["nominal_ber"] == 0 else f"{r['nominal_ber']:g}", f"{r['tcp_Bps'] / 1e3:.1f}",
                              f"{r['afc_Bps'] / 1e3:.1f}", f"{r['tcp_pct']:.1f} %", f"{r['afc_pct']:.1f} %",
                              f"{r['udp_wire_Bps'] / 1e3:.1f}", f"{afc.STUDY_UDP_KBPS[r['figure']]:g}"] for r in rep.utilisation], "num"),
                 f"<p>{esc(' '.join(FINDINGS['headline'].split()))}</p>", '<p>Data: <a href="utilisation.csv">utilisation.csv</a></p>']
    return body


def render_html(rep: Reproduction) -> str:
    esc = html.escape
    body = [f"<h1>Reproduction of TCP-AFC: {esc(afc.TITLE)}</h1>", "<ul>"]
    body += [f"<li>{esc(line)}</li>" for line in afc.setup_lines(rep)]
    body += ["</ul>", f"<p>{esc(' '.join((afc.__doc__ or '').split()))}</p>"]
    if rep.claims:
        body += ["<h2>The study's claims, checked on these data</h2>",
                 html_table(["result", "claim", "data"], [[c["status"], c["claim"], c["detail"]] for c in rep.claims])]
    if rep.p2p:
        body += _p2p_html(rep)
    if rep.table2:
        body += [f"<p>{esc(' '.join(FINDINGS['bit-errors'].split()))}</p>"]
    for which, rows in rep.table2.items():
        header, cells = _table2_cells(rows)
        body += [f"<h2>Table 2: throughput at each stage of a 20 MB transfer, 2 Mbit/s, BER 1e-5 ({esc(READING_TEXT[which])})</h2>",
                 html_table(header, cells, "num"), f'<img src="table2_{which}.png" alt="Table 2, {which}">',
                 f'<p>Data: <a href="table2_{which}.csv">table2_{which}.csv</a>. Losses: retransmissions up to the stage, '
                 f"means over the seeds.</p>"]
    body += _shared_html(rep)
    body.append('<p>Also: <a href="README.md">README.md</a>; machine-readable: <a href="report.json">report.json</a>.</p>')
    return page("airlink: TCP-AFC reproduction", body)


def write_report(rep: Reproduction, out: Path) -> None:
    """CSV and PNG per part, index.html, README.md and report.json, into the folder ``out``."""
    if rep.p2p:
        write_csv(out / "p2p_runs.csv", [_flat(r) for r in rep.p2p])
        write_csv(out / "p2p_bars.csv", _bar_rows(rep))
        _p2p_figures(out, rep)
        _trace_figures(out, rep)
    for which, rows in rep.table2.items():
        write_csv(out / f"table2_{which}.csv", rows)
        _table2_png(out / f"table2_{which}.png", which, rows)
    _shared_figures(out, rep)
    (out / "report.json").write_text(json.dumps(rep.to_json(), indent=2, default=float), encoding="utf-8")
    readme = [f"# {afc.TITLE}", "", afc.__doc__ or "", *(f"- {line}" for line in afc.setup_lines(rep)), "",
              *(" ".join(v.split()) + "\n" for v in FINDINGS.values()), "```", afc.text(rep), "```", ""]
    (out / "README.md").write_text("\n".join(readme), encoding="utf-8")
    (out / "index.html").write_text(render_html(rep), encoding="utf-8")
