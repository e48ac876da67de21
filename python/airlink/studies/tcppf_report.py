"""The TCP-PF reproduction's report: index.html (the shared page), README.md, CSVs and PNGs."""

from __future__ import annotations

import csv
import html
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from airlink import stats
from airlink.report import _cdf_png, page
from airlink.studies import tcppf
from airlink.studies.tcppf import GRID_TEXT, LABELS, Reproduction
from airlink.tables import html_table


def _csv(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    keys = list(dict.fromkeys(k for r in rows for k in r))
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, keys)
        w.writeheader()
        w.writerows(rows)


def _runs_rows(part: tcppf.Part) -> list[dict[str, Any]]:
    keys = ("system_bps", "mac_bps", "jain", "f_sys", "starved", "timeouts", "users_with_timeouts", "spurious",
            "retransmissions")
    return [{"scheduler": s, "seed": i + 1, **{k: r[k] for k in keys}} for s, rs in part.runs.items() for i, r in enumerate(rs)]


def _users_rows(part: tcppf.Part) -> list[dict[str, Any]]:
    return [{"scheduler": s, "seed": i + 1, "user": u, "tcp_bps": r["user_bps"][u], "timeouts": r["user_timeouts"][u],
             "mean_sinr_db": r["mean_sinr_db"][u], "interval_mean_s": r["interval_mean_s"][u],
             "interval_std_s": r["interval_std_s"][u], "interval_max_s": r["interval_max_s"][u]}
            for s, rs in part.runs.items() for i, r in enumerate(rs) for u in range(len(r["user_bps"]))]


def _figures(out: Path, grid: str, part: tcppf.Part) -> None:
    what = GRID_TEXT[grid]
    _cdf_png(out / f"{grid}_fig3.png", [(LABELS[s], [x / 1e3 for x in part.series(s, "system_bps")]) for s in part.runs],
             "system TCP throughput (kbit/s)", f"Fig. 3: CDF of system TCP throughput over placements ({what})")
    _cdf_png(out / f"{grid}_fig4.png",
             [(LABELS[s], [x / 8e3 for r in rs for x in r["user_bps"]]) for s, rs in part.runs.items()],
             "user TCP throughput (kB/s)", f"Fig. 4: CDF of per-user TCP throughput, users × placements ({what})",
             "fraction of users ≤ x")
    groups = []
    for s in part.runs:
        f = part.series(s, "f_sys")
        starved = sum(1 for x in f if not math.isfinite(x))
        groups.append((LABELS[s] + (f", {starved} at −∞" if starved else ""), [x for x in f if math.isfinite(x)]))
    _cdf_png(out / f"{grid}_fig5.png", groups, "F_sys = mean ln(user TCP throughput in kB/s)",
             f"Fig. 5: CDF of F_sys over placements ({what}; a placement with a starved user is −∞)")
    _cdf_png(out / f"{grid}_gaps.png",
             [(LABELS[s], [x for r in rs for x in r["interval_max_s"] if x is not None]) for s, rs in part.runs.items()],
             "longest interval between a user's turns (s)", f"The longest gap each user waited, users × placements ({what})",
             "fraction of users ≤ x")


def _trace_user(rep: Reproduction) -> int:
    """The user Figs. 1-2 follow: PF's user with the most timeouts, else with the longest gap."""
    users = rep.traces["pf"]["users"]
    return max(users, key=lambda u: (u["timeouts"], u["interval_max_s"] or 0))["user"]


def _fig1_fig2(out: Path, rep: Reproduction, user: int) -> None:
    fig, axes = plt.subplots(2, 1, figsize=(8, 6.4), dpi=100, sharex=True)
    for ax, s, name in zip(axes, ("pf", "tcp-pf"), ("Fig. 1", "Fig. 2")):
        t = rep.traces[s]["series"][user]
        ax.plot(t["time_s"], t["delivered_segments"], label="segments delivered (ACK sequence)")
        right = ax.twinx()
        right.plot(t["time_s"], t["cwnd_segments"], color="tab:orange", label="cwnd")
        right.set_ylabel("cwnd (segments)", color="tab:orange")
        marks = [x for x, a, b in zip(t["time_s"][1:], t["timeouts"], t["timeouts"][1:]) if b > a]
        for x in marks:
            ax.axvline(x, color="red", alpha=0.5, linewidth=1)
        ax.set_title(f"{name}: user {user} under {LABELS[s]}, seed 1 ({len(marks)} timeouts, red lines)", fontsize=10)
        ax.set_ylabel("segments delivered")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
    axes[-1].set_xlabel("time (s)")
    fig.tight_layout()
    fig.savefig(out / "fig1_fig2.png")
    plt.close(fig)


def _gap_rows(rep: Reproduction) -> list[dict[str, Any]]:
    rows = []
    for s, t in rep.traces.items():
        users = t["users"]
        gaps = [u["interval_max_s"] or 0.0 for u in users]
        rows.append({"scheduler": LABELS[s], "median_srtt_s": stats.mean([u["srtt_median_s"] for u in users]),
                     "median_rto_s": stats.mean([u["rto_median_s"] for u in users]),
                     "smallest_rto_s": min(u["rto_median_s"] for u in users), "longest_gap_s": max(gaps),
                     "users_gap_over_rto": sum(1 for u, g in zip(users, gaps) if g > u["rto_median_s"]),
                     "timeouts": sum(u["timeouts"] for u in users),
                     "start_timeouts": sum(u["start_timeouts"] for u in users)})
    return rows


def _scheduler_cells(part: tcppf.Part) -> tuple[list[str], list[list[str]]]:
    header = ["scheduler", "TCP (kbit/s)", "MAC (kbit/s)", "TCP/MAC", "Jain", "F_sys (ln)", "runs with a starved user",
              "timeouts / run", "spurious retx / run", "interval mean (s)", "interval s.d. (s)", "longest gap, mean (s)",
              "users with a gap > 1 s"]
    rows = [[r["label"], f"{r['system_kbps']:,.0f} ± {r['system_ci95_kbps']:,.0f}", f"{r['mac_kbps']:,.0f} ± {r['mac_ci95_kbps']:,.0f}",
             f"{r['tcp_over_mac']:.3f}", f"{r['jain']:.3f} ± {r['jain_ci95']:.3f}", f"{r['f_sys_mean']:.3f}",
             str(r["runs_with_starved_user"]), f"{r['timeouts_per_run']:.2f}", f"{r['spurious_per_run']:.2f}",
             f"{r['interval_mean_s']:.3f}", f"{r['interval_std_s']:.3f}", f"{r['interval_max_s']:.3f}",
             f"{r['users_gap_over_1s_pct']:.1f} %"] for r in part.table]
    return header, rows


def _paired_cells(part: tcppf.Part) -> tuple[list[str], list[list[str]]]:
    header = ["scheduler − PF", "system TCP (kbit/s)", "relative to PF", "study", "timeouts / run"]
    study = {"tcp-pf": f"about +{100 * tcppf.STUDY_GAIN:.0f} %"}
    rows = [[d["label"], f"{d['system_diff_kbps']:+,.0f} ± {d['system_diff_ci95_kbps']:,.0f}",
             f"{d['system_gain_pct']:+.1f} % ± {d['system_gain_ci95_pct']:.1f} %", study.get(d["scheduler"], "—"),
             f"{d['timeouts_diff']:+.2f} ± {d['timeouts_diff_ci95']:.2f}"] for d in part.differences]
    return header, rows


FINDINGS = """What airlink finds, and why (read from the default grid and the gaps-against-RTO table). TCP-PF does not gain over PF here: PF's turns are regular enough
that no user waits anywhere near its retransmission timeout. Each user's 64 kB window sits in its
unbounded queue at the base station, which drains at the user's share of the cell (about
100 kbit/s), so the RTT is seconds and the RTO (seconds, from the RTT) is far above PF's longest
gaps (tenths of a second; the table "gaps against RTO" and the gap CDFs). In the traced
placement, PF's and RR's timeouts come at the start (the initial RTO of 1 s, before an RTT
sample), not after a gap, and TCP-PF's extra term (eq. 19) only trades MAC throughput for
regularity. The frame-error model changes nothing measurable; a weaker link budget makes timeouts
more frequent under every scheduler without reversing PF against TCP-PF. With the intervals in slots the
first bracket term dominates and TCP-PF moves towards round robin (shorter gaps, less
throughput). The study's PF gaps of about 2 s (its Fig. 1) need a fading process much slower
than Jakes fading at 30 km/h and 2 GHz (Doppler 56 Hz, coherence about 8 ms), or a user far
below the others' rates; in airlink, gaps of seconds occur only under MAX and TCP-MAX."""

LEFT_OUT = ("Figs. 1-2 show cwnd and the delivered (acknowledged) sequence from the flow samples (100 ms apart) "
            "with timeouts marked; the scheduling instants and frame errors are not marked, as a run's results hold "
            "no per-slot record of the cell.")


def render_html(rep: Reproduction) -> str:
    esc = html.escape
    body = [f"<h1>Reproduction: {esc(tcppf.TITLE)}</h1>", "<ul>"]
    body += [f"<li>{esc(line)}</li>" for line in tcppf.setup_lines(rep)]
    body += ["</ul>", f"<p>{esc(' '.join((tcppf.__doc__ or '').split()))}</p>", f"<p>{esc(' '.join(FINDINGS.split()))}</p>"]
    if rep.claims:
        body += ["<h2>The study's claims, checked on these data</h2>",
                 html_table(["result", "claim", "data"], [[c["status"], c["claim"], c["detail"]] for c in rep.claims])]
    for grid, part in rep.grids.items():
        header, rows = _scheduler_cells(part)
        ph, prow = _paired_cells(part)
        body += [f"<h2>{esc(grid)}: {esc(GRID_TEXT[grid])}</h2>", html_table(header, rows, "num"),
                 "<h3>Paired differences against PF (same placements and fading)</h3>", html_table(ph, prow, "num")]
        body += [f'<img src="{grid}_{f}.png" alt="{grid} {f}">' for f in ("fig3", "fig4", "fig5", "gaps")]
        body.append("<p>Data: " + ", ".join(f'<a href="{grid}_{n}.csv">{grid}_{n}.csv</a>'
                                            for n in ("schedulers", "paired", "runs", "users")) + "</p>")
    if rep.traces:
        rows = _gap_rows(rep)
        body += ["<h2>Gaps against RTO (seed 1, default assumptions)</h2>",
                 html_table(["scheduler", "SRTT, median (s)", "RTO, median (s)", "smallest user RTO (s)", "longest gap (s)",
                             "users whose longest gap exceeds their RTO", "timeouts",
                             f"of which in the first {tcppf.START_S:g} s"],
                            [[r["scheduler"], f"{r['median_srtt_s']:.2f}", f"{r['median_rto_s']:.2f}", f"{r['smallest_rto_s']:.2f}",
                              f"{r['longest_gap_s']:.2f}", str(r["users_gap_over_rto"]), str(r["timeouts"]),
                              str(r["start_timeouts"])] for r in rows], "num"),
                 f"<h2>Figs. 1 and 2: user {_trace_user(rep)} under PF and TCP-PF (seed 1)</h2>",
                 '<img src="fig1_fig2.png" alt="Figs. 1 and 2">', f"<p>{esc(LEFT_OUT)}</p>",
                 '<p>Data: <a href="gaps_vs_rto.csv">gaps_vs_rto.csv</a>, <a href="fig1_fig2.csv">fig1_fig2.csv</a></p>']
    body.append('<p>Also: <a href="README.md">README.md</a>; machine-readable: <a href="report.json">report.json</a>.</p>')
    return page("airlink: TCP-PF reproduction", body)


def write_report(rep: Reproduction, out: Path) -> None:
    for grid, part in rep.grids.items():
        _csv(out / f"{grid}_schedulers.csv", part.table)
        _csv(out / f"{grid}_paired.csv", part.differences)
        _csv(out / f"{grid}_runs.csv", _runs_rows(part))
        _csv(out / f"{grid}_users.csv", _users_rows(part))
        _figures(out, grid, part)
    if rep.traces:
        _csv(out / "gaps_vs_rto.csv", [{"scheduler": s, **u} for s, t in rep.traces.items() for u in t["users"]])
        user = _trace_user(rep)
        _csv(out / "fig1_fig2.csv", [{"scheduler": s, "user": user, "time_s": x, "cwnd_segments": c, "delivered_segments": d,
                                      "timeouts": k}
                                     for s in ("pf", "tcp-pf")
                                     for x, c, d, k in zip(*(rep.traces[s]["series"][user][key] for key in
                                                             ("time_s", "cwnd_segments", "delivered_segments", "timeouts")))])
        _fig1_fig2(out, rep, user)
    (out / "report.json").write_text(json.dumps(rep.to_json(), indent=2, default=float), encoding="utf-8")
    readme = [f"# {tcppf.TITLE}", "", tcppf.__doc__ or "", *(f"- {line}" for line in tcppf.setup_lines(rep)), "",
              FINDINGS, "", "```", tcppf.text(rep), "```", ""]
    (out / "README.md").write_text("\n".join(readme), encoding="utf-8")
    (out / "index.html").write_text(render_html(rep), encoding="utf-8")
