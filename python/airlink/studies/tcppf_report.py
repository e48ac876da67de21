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
    _cdf_png(out / f"{grid}_fill.png",
             [(LABELS[s], [x for r in rs for x in r["user_slot_fill"] if x is not None]) for s, rs in part.runs.items()],
             "slot fill: bits delivered over rate × slot of the user's error-free served slots",
             f"Slot fill per user, users × placements ({what})", "fraction of users ≤ x")
    _cdf_png(out / f"{grid}_gaps.png",
             [(LABELS[s], [x for r in rs for x in r["interval_max_s"] if x is not None]) for s, rs in part.runs.items()],
             "longest interval between a user's turns (s)", f"The longest gap each user waited, users × placements ({what})",
             "fraction of users ≤ x")


def _fig1_fig2(path: Path, traces: Mapping[str, Mapping[str, Any]], setting: str, what: str) -> list[dict[str, Any]]:
    """Figs. 1-2 as the study draws them, from a traced run's event log; returns their data rows."""
    user = tcppf.trace_user(traces)
    fig, axes = plt.subplots(2, 1, figsize=(9, 7.5), dpi=100, sharex=True)
    rows: list[dict[str, Any]] = []
    for ax, s, name in zip(axes, tcppf.PAIR, ("Fig. 1", "Fig. 2")):
        t = tcppf.user_trace(traces, s, user)
        fresh = [(x, k) for x, k, r in zip(t["sent_s"], t["sent_segment"], t["retransmitted"]) if not r]
        again = [(x, k) for x, k, r in zip(t["sent_s"], t["sent_segment"], t["retransmitted"]) if r]
        ax.plot(*zip(*fresh) if fresh else ([], []), ".", markersize=2, color="tab:blue", label="segment sent")
        ax.plot(*zip(*again) if again else ([], []), "x", markersize=4, color="tab:purple", label="retransmitted")
        ax.step(t["ack_s"], t["acked_segments"], where="post", color="tab:green", linewidth=1, label="ACK (segments acknowledged)")
        top = max([*t["sent_segment"], 1])
        # The scheduling instants as a rug under the curves, frame errors in red above it.
        ax.plot(t["served_s"], [-0.04 * top] * len(t["served_s"]), "|", color="black", markersize=6, label="served slot")
        ax.plot(t["frame_error_s"], [-0.09 * top] * len(t["frame_error_s"]), "|", color="red", markersize=8,
                label="frame error")
        for x in t["timeout_s"]:
            ax.axvline(x, color="red", alpha=0.5, linewidth=1)
        right = ax.twinx()
        right.step(t["cwnd_s"], t["cwnd_segments"], where="post", color="tab:orange", linewidth=1)
        right.set_ylabel("cwnd (segments)", color="tab:orange")
        ax.set_title(f"{name}: user {user} under {LABELS[s]}, seed 1, {what} ({len(t['timeout_s'])} timeouts, red lines; "
                     f"{len(t['served_s']) + len(t['frame_error_s'])} slots served, {len(t['frame_error_s'])} frame errors)",
                     fontsize=9)
        ax.set_ylabel("segment number")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
        rows += [{"setting": setting, "scheduler": s, "user": user, "event": "sent", "time_s": x, "segment": k, "retransmitted": r}
                 for x, k, r in zip(t["sent_s"], t["sent_segment"], t["retransmitted"])]
        rows += [{"setting": setting, "scheduler": s, "user": user, "event": "ack", "time_s": x, "segment": k} for x, k in zip(t["ack_s"], t["acked_segments"])]
        rows += [{"setting": setting, "scheduler": s, "user": user, "event": "cwnd", "time_s": x, "cwnd_segments": c}
                 for x, c in zip(t["cwnd_s"], t["cwnd_segments"])]
        rows += [{"setting": setting, "scheduler": s, "user": user, "event": e, "time_s": x}
                 for e, key in (("timeout", "timeout_s"), ("served", "served_s"), ("frame_error", "frame_error_s")) for x in t[key]]
    axes[-1].set_xlabel("time (s)")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return rows


def _sensitivity_png(out: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(rows) + 1.2), dpi=100)
    y = list(range(len(rows)))[::-1]
    ax.errorbar([r["gain_pct"] for r in rows], y, xerr=[r["gain_ci95_pct"] for r in rows], fmt="o", capsize=3)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.axvline(100 * tcppf.STUDY_GAIN, color="tab:green", linestyle="--", linewidth=1, label="the study: about +12 %")
    ax.set_yticks(y, [r["label"] for r in rows], fontsize=8)
    ax.set_xlabel("TCP-PF − PF, system TCP throughput (% of PF's, paired, 95 % CI)")
    ax.set_title("TCP-PF − PF with one assumption changed", fontsize=10)
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(out / "sensitivity.png")
    plt.close(fig)


def moves_text(rows: Sequence[Mapping[str, Any]]) -> str:
    """Which assumption moves TCP-PF − PF, and by how much, from the sensitivity rows."""
    if len(rows) < 2:
        return ""
    base, rest = rows[0], sorted(rows[1:], key=lambda r: -r["shift_pct"])
    parts = [f"{r['label']} {r['shift_pct']:+.1f} points (to {r['gain_pct']:+.1f} % ± {r['gain_ci95_pct']:.1f} %; timeouts "
             f"per run PF {r['pf_timeouts']:.1f}, TCP-PF {r['tcp_pf_timeouts']:.1f})" for r in rest]
    return (f"Measured: TCP-PF − PF is {base['gain_pct']:+.1f} % ± {base['gain_ci95_pct']:.1f} % with the defaults; "
            "changing one assumption moves it by: " + "; ".join(parts) + ".")


def _gap_rows(traces: Mapping[str, Mapping[str, Any]], setting: str = "defaults") -> list[dict[str, Any]]:
    rows = []
    for s, t in traces.items():
        users = t["users"]
        gaps = [u["interval_max_s"] or 0.0 for u in users]
        rows.append({"setting": setting, "scheduler": LABELS[s], "median_srtt_s": stats.mean([u["srtt_median_s"] for u in users]),
                     "median_rto_s": stats.mean([u["rto_median_s"] for u in users]),
                     "smallest_rto_s": min(u["rto_median_s"] for u in users), "longest_gap_s": max(gaps),
                     "users_gap_over_rto": sum(1 for u, g in zip(users, gaps) if g > u["rto_median_s"]),
                     "timeouts": sum(u["timeouts"] for u in users),
                     "start_timeouts": sum(u["start_timeouts"] for u in users)})
    return rows


def _scheduler_cells(part: tcppf.Part) -> tuple[list[str], list[list[str]]]:
    header = ["scheduler", "TCP (kbit/s)", "MAC, delivered (kbit/s)", "TCP/MAC", "MAC, scheduled (kbit/s)",
              "TCP/scheduled", "slot fill", "users with fill < 0.9", "Jain", "F_sys (ln)", "runs with a starved user",
              "timeouts / run", "spurious retx / run", "interval mean (s)", "interval s.d. (s)", "longest gap, mean (s)",
              "users with a gap > 1 s"]
    rows = [[r["label"], f"{r['system_kbps']:,.0f} ± {r['system_ci95_kbps']:,.0f}", f"{r['mac_kbps']:,.0f} ± {r['mac_ci95_kbps']:,.0f}",
             f"{r['tcp_over_mac']:.3f}", f"{r['mac_scheduled_kbps']:,.0f} ± {r['mac_scheduled_ci95_kbps']:,.0f}",
             f"{r['tcp_over_scheduled']:.3f}", f"{r['slot_fill']:.3f}", f"{r['users_fill_below_90_pct']:.1f} %",
             f"{r['jain']:.3f} ± {r['jain_ci95']:.3f}", f"{r['f_sys_mean']:.3f}",
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


FINDINGS = """With every user starting at 0 (the defaults): what airlink finds, and why (read from the default grid, the gaps-against-RTO table and the
sensitivity table). TCP-PF does not gain over PF here: PF's turns are regular enough that no user
waits anywhere near its retransmission timeout. Each user's 64 kB window sits in its unbounded queue
at the base station, which drains at the user's share of the cell (about 100 kbit/s), so the RTT is
seconds and the RTO (seconds, from the RTT) is far above PF's longest gaps (tenths of a second), and
TCP-PF's extra term (eq. 19) only trades MAC throughput for regularity. Shortening the RTT does not
bring the study's timeouts back: bounded MAC queues (8 or 32 packets) cause drops, so timeouts of
real losses under every scheduler alike, and TCP-PF falls further behind PF (with bounded queues a
user's "gap" also counts the time its queue stood empty after losses); a window of 8 KiB keeps the
queue short without drops and TCP-PF still loses more. What does bring them back is slower fading:
at 3 km/h and 1 km/h a fade lasts hundreds of milliseconds, PF leaves a user in a fade unserved for
a second or more (Figs. 1-2 at 3 km/h), and PF's timeouts, with their spurious retransmissions,
outnumber TCP-PF's several times over, as the study says. That moves TCP-PF − PF towards zero, but
within these runs not above it: a timeout costs Reno little here (the queued originals arrive and
acknowledge the go-back), while TCP-PF's regularity costs MAC throughput at every speed. Reading the
study's 200 ms timer granularity as a timer tick instead of RFC 6298's G changes nothing measurable,
nor does the frame-error model; a weaker link budget makes timeouts more frequent under every
scheduler without reversing PF against TCP-PF. With the intervals in slots the first bracket term
dominates and TCP-PF moves towards round robin (shorter gaps, less throughput); in airlink, gaps of
seconds at 30 km/h occur only under MAX and TCP-MAX."""

def readings_text(rep: Reproduction) -> str:
    """What the arrivals grid changes against the all-at-zero one, and which reading reproduces
    which of the study's statements (from the claims of both grids)."""
    if not {"waterfall", "arrivals"} <= set(rep.grids):
        return ""
    zero, come = rep.grids["waterfall"], rep.grids["arrivals"]
    g0, g1 = tcppf._diff(zero, "tcp-pf"), tcppf._diff(come, "tcp-pf")
    pf, tpf = tcppf._row(come, "pf"), tcppf._row(come, "tcp-pf")
    status = {(c["name"], c["grid"]): c["status"] for c in rep.claims}
    names = list(dict.fromkeys(c["name"] for c in rep.claims))
    both = [n for n in names if status.get((n, "waterfall")) == status.get((n, "arrivals")) == "PASS"]
    only = [n for n in names if status.get((n, "arrivals")) == "PASS" and status.get((n, "waterfall")) != "PASS"]
    lost = [n for n in names if status.get((n, "waterfall")) == "PASS" and status.get((n, "arrivals")) != "PASS"]
    neither = [n for n in names if "PASS" not in (status.get((n, "waterfall")), status.get((n, "arrivals")))]
    say = lambda xs: ", ".join(xs) or "none"  # noqa: E731
    return (f"Users that arrive (each download starting uniform on 0-5 s, the same draws under every scheduler) against "
            f"all starting at 0: TCP-PF − PF moves from {g0['system_gain_pct']:+.1f} % ± {g0['system_gain_ci95_pct']:.1f} % "
            f"to {g1['system_gain_pct']:+.1f} % ± {g1['system_gain_ci95_pct']:.1f} %. Under PF a newcomer's average "
            "throughput is about 0, so it takes nearly every slot until it catches up; its RTT, so its RTO, is short "
            "then, and when the next user arrives it waits in turn, longer than that RTO: "
            f"PF's timeouts per run {pf['timeouts_per_run']:.2f} against TCP-PF's {tpf['timeouts_per_run']:.2f}, spurious "
            f"retransmissions {pf['spurious_per_run']:.0f} against {tpf['spurious_per_run']:.0f}, PF's users with a gap "
            f"over 1 s {pf['users_gap_over_1s_pct']:.1f} % (longest gap per user {pf['interval_max_s']:.2f} s on average): "
            "the study's Fig. 1 story (Figs. 1-2 with users that arrive, below). Which reading reproduces which "
            f"statement: both readings: {say(both)}; only users that arrive: {say(only)}; only all at 0: {say(lost)}; "
            f"neither: {say(neither)}.")


def mac_reading_text(rep: Reproduction) -> str:
    """Which reading of "MAC throughput" the study's MAC statements match, from the slot fill."""
    part = rep.grids.get("arrivals") or rep.grids.get("waterfall")
    if part is None:
        return ""
    rows = {r["scheduler"]: r for r in part.table}
    fills = ", ".join(f"{LABELS[s]} {rows[s]['slot_fill']:.3f}" for s in tcppf.STUDY_SCHEDULERS)
    top = {k: max(tcppf.STUDY_SCHEDULERS, key=lambda s: rows[s][k]) for k in ("mac_kbps", "mac_scheduled_kbps")}
    low = {k: min(tcppf.STUDY_SCHEDULERS, key=lambda s: rows[s][k]) for k in ("tcp_over_mac", "tcp_over_scheduled")}
    m, t = rows["max"], rows["tcp-pf"]
    gap = max(100 * (1 - rows[s]["mac_kbps"] / rows[s]["mac_scheduled_kbps"]) for s in tcppf.STUDY_SCHEDULERS)
    return (f"MAC throughput read two ways ({next(g for g, p in rep.grids.items() if p is part)} grid): as delivered "
            f"bits, the highest is {LABELS[top['mac_kbps']]}'s and the lowest TCP/MAC {LABELS[low['tcp_over_mac']]}'s; "
            f"as scheduled bits (rate × slot of every served slot), the highest is {LABELS[top['mac_scheduled_kbps']]}'s "
            f"and the lowest TCP/MAC {LABELS[low['tcp_over_scheduled']]}'s. Slot fill (delivered over what the "
            f"error-free served slots could carry): {fills}. The study's MAC figure (MAX highest) matches both readings; "
            f"the two differ by the fill and the frame errors only, at most {gap:.1f} % here, because each user's "
            "unbounded queue holds its window and almost never leaves a slot part empty. Neither reading gives the study's "
            f"\"severely degraded\" TCP under MAX: its TCP/MAC is {m['tcp_over_mac']:.2f} (delivered) and "
            f"{m['tcp_over_scheduled']:.2f} (scheduled), and its system TCP throughput {m['system_kbps']:,.0f} kbit/s "
            f"stays above TCP-PF's {t['system_kbps']:,.0f}. What MAX degrades here is fairness (a starved user in "
            f"{m['runs_with_starved_user']} of {m['runs']} placements, F_sys −∞), not the cell's sum.")


FIGS_NOTE = ("Figs. 1-2 are drawn from the traced run's event log (the scenario's event_log): every segment the "
             "server sent (retransmissions marked), every ACK it received, cwnd after each, the timeouts (red "
             "lines), and under the curves the slots the user was served (black) and those whose frame failed (red).")


def render_html(rep: Reproduction) -> str:
    esc = html.escape
    body = [f"<h1>Reproduction: {esc(tcppf.TITLE)}</h1>", "<ul>"]
    body += [f"<li>{esc(line)}</li>" for line in tcppf.setup_lines(rep)]
    body += ["</ul>", f"<p>{esc(' '.join((tcppf.__doc__ or '').split()))}</p>", f"<p>{esc(' '.join(FINDINGS.split()))}</p>"]
    sens = tcppf.sensitivity_rows(rep)
    if sens:
        body.append(f"<p>{esc(moves_text(sens))}</p>")
    body += [f"<p>{esc(t)}</p>" for t in (readings_text(rep), mac_reading_text(rep)) if t]
    if rep.claims:
        grids = list(rep.grids)
        body += ["<h2>Which reading reproduces which statement</h2>",
                 html_table(["claim", *grids], [[r["claim"], *(r.get(g, "—") for g in grids)] for r in tcppf.readings(rep)]),
                 "<h2>The study's claims, checked on these data</h2>",
                 html_table(["result", "claim", "data"], [[c["status"], c["claim"], c["detail"]] for c in rep.claims])]
    for grid, part in rep.grids.items():
        header, rows = _scheduler_cells(part)
        ph, prow = _paired_cells(part)
        body += [f"<h2>{esc(grid)}: {esc(GRID_TEXT[grid])}</h2>", html_table(header, rows, "num"),
                 "<h3>Paired differences against PF (same placements and fading)</h3>", html_table(ph, prow, "num")]
        body += [f'<img src="{grid}_{f}.png" alt="{grid} {f}">' for f in ("fig3", "fig4", "fig5", "fill", "gaps")]
        body.append("<p>Data: " + ", ".join(f'<a href="{grid}_{n}.csv">{grid}_{n}.csv</a>'
                                            for n in ("schedulers", "paired", "runs", "users")) + "</p>")
    if sens:
        body += ["<h2>Sensitivity: TCP-PF against PF under one changed assumption</h2>",
                 html_table(["assumption", "TCP-PF − PF", "shift from the defaults (points)", "MAC: TCP-PF − PF",
                             "PF (kbit/s)", "TCP-PF (kbit/s)", "timeouts / run, PF", "TCP-PF", "spurious retx / run, PF",
                             "TCP-PF", "TCP/MAC, PF", "TCP-PF", "PF longest gap, mean (s)", "PF users with a gap > 1 s"],
                            [[r["label"], f"{r['gain_pct']:+.1f} % ± {r['gain_ci95_pct']:.1f} %", f"{r['shift_pct']:+.1f}",
                              f"{r['mac_gain_pct']:+.1f} %", f"{r['pf_kbps']:,.0f}", f"{r['tcp_pf_kbps']:,.0f}",
                              f"{r['pf_timeouts']:.1f}", f"{r['tcp_pf_timeouts']:.1f}", f"{r['pf_spurious']:.0f}",
                              f"{r['tcp_pf_spurious']:.0f}", f"{r['pf_tcp_over_mac']:.3f}", f"{r['tcp_pf_tcp_over_mac']:.3f}",
                              f"{r['pf_longest_gap_s']:.2f}", f"{r['pf_gap_over_1s_pct']:.1f} %"] for r in sens], "num"),
                 '<img src="sensitivity.png" alt="sensitivity">',
                 "<p>Settings: " + esc("; ".join(f"{k}: {v}" for k, v in {**tcppf.GRID_TEXT, **tcppf.SENSITIVITY_TEXT}.items()))
                 + '. Data: <a href="sensitivity.csv">sensitivity.csv</a></p>']
    if rep.traces:
        rows = _gap_rows(rep.traces) + _gap_rows(rep.arrival_traces, "arrivals")
        body += ["<h2>Gaps against RTO (seed 1: default assumptions, and users that arrive)</h2>",
                 html_table(["setting", "scheduler", "SRTT, median (s)", "RTO, median (s)", "smallest user RTO (s)",
                             "longest gap (s)", "users whose longest gap exceeds their RTO", "timeouts",
                             f"of which in a user's first {tcppf.START_S:g} s"],
                            [[r["setting"], r["scheduler"], f"{r['median_srtt_s']:.2f}", f"{r['median_rto_s']:.2f}",
                              f"{r['smallest_rto_s']:.2f}", f"{r['longest_gap_s']:.2f}", str(r["users_gap_over_rto"]),
                              str(r["timeouts"]), str(r["start_timeouts"])] for r in rows], "num"),
                 f"<h2>Figs. 1 and 2: user {tcppf.trace_user(rep.traces)} under PF and TCP-PF (seed 1, the defaults)</h2>",
                 '<img src="fig1_fig2.png" alt="Figs. 1 and 2">', f"<p>{esc(FIGS_NOTE)}</p>",
                 f"<h2>Figs. 1 and 2 with users that arrive: user {tcppf.trace_user(rep.arrival_traces)} (seed 1 of the "
                 "arrivals grid), the reading the study's Fig. 1 implies</h2>",
                 '<img src="fig1_fig2_arrivals.png" alt="Figs. 1 and 2 with users that arrive">',
                 f"<h2>Figs. 1 and 2 at 3 km/h: user {tcppf.trace_user(rep.slow_traces)} (seed 1), where PF's gaps "
                 "outlast the RTO</h2>", '<img src="fig1_fig2_3kmh.png" alt="Figs. 1 and 2 at 3 km/h">',
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
        _csv(out / "gaps_vs_rto.csv", [{"setting": setting, "scheduler": s, **u}
                                       for setting, traces in (("defaults", rep.traces), ("arrivals", rep.arrival_traces))
                                       for s, t in traces.items() for u in t["users"]])
        _csv(out / "fig1_fig2.csv", [*_fig1_fig2(out / "fig1_fig2.png", rep.traces, "defaults", "30 km/h"),
                                     *_fig1_fig2(out / "fig1_fig2_3kmh.png", rep.slow_traces, tcppf.SLOW, "3 km/h"),
                                     *_fig1_fig2(out / "fig1_fig2_arrivals.png", rep.arrival_traces, "arrivals",
                                                 "users arriving over 0-5 s")])
    if sens := tcppf.sensitivity_rows(rep):
        _csv(out / "sensitivity.csv", sens)
        _sensitivity_png(out, sens)
    (out / "report.json").write_text(json.dumps(rep.to_json(), indent=2, default=float), encoding="utf-8")
    readme = [f"# {tcppf.TITLE}", "", tcppf.__doc__ or "", *(f"- {line}" for line in tcppf.setup_lines(rep)), "",
              FINDINGS, "", moves_text(tcppf.sensitivity_rows(rep)), "", readings_text(rep), "", mac_reading_text(rep), "", "```", tcppf.text(rep), "```", ""]
    (out / "README.md").write_text("\n".join(readme), encoding="utf-8")
    (out / "index.html").write_text(render_html(rep), encoding="utf-8")
