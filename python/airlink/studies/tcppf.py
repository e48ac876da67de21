"""The TCP-PF study (seed 002, Klein, Leung and Zheng): 21 TCP Reno downloads in one cell under
the schedulers RR, MAX, PF, TCP-PF and TCP-MAX (and TCP-PF with its intervals in slots, the
study's literal eq. 13), 25 s per placement, every scheduler on the same placements, fading and
frame-error draws (common random numbers: seed s is the same cell for every scheduler).

Its Figs. 3-5 (CDFs of system TCP throughput, per-user throughput and F_sys), TCP-PF's gain over
PF as a paired difference (the study: about +12 %), Jain's index, timeouts, and the intervals
between a user's turns beside each user's retransmission timeout, which say whether PF's gaps
can cause the spurious timeouts the study describes. The study gives no link budget and no
frame-error model: both frame-error readings of spec C.1 (waterfall, and a fixed 1 %) are run,
and the default link budget (edge SINR 0 dB) beside a weaker one (−5 dB). Two more grids test what
keeps PF's gaps from causing timeouts here: bounded MAC queues (a short RTT, so a short RTO) and
pedestrian speed (slower fading, so longer gaps); PF and TCP-PF alone run over further settings
of these (the sensitivity part). Figs. 1-2 come from a traced run's event log: every segment sent,
ACK received and timeout, and every slot the user was served, with its frame errors.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from airlink import stats
from airlink.experiment import Experiment, build_experiment
from airlink.scenarios import scenario_dir
from airlink.store import load_series
from airlink.studies.reproduction import run_part, store_lines, store_of
from airlink.version import version

NAME = "tcp-pf"
TITLE = "TCP-PF: opportunistic schedulers and TCP Reno in a 21-user cell (700 kB downloads, 25 s)"
PARTS = ("waterfall", "arrivals", "fixed-fer", "edge-5db", "queue-8", "speed-3", "sensitivity", "traces")
SEEDS = 50
QUICK_STOP = "8 s"  # the quick form's run length (the test suite's)

#: Scheduler label -> its overrides; "tcp-pf-slots" is TCP-PF with φ in slots (spec C.2).
SCHEDULERS: dict[str, tuple[str, ...]] = {
    "rr": ("downlink.cell.scheduler=rr",),
    "max": ("downlink.cell.scheduler=max",),
    "pf": ("downlink.cell.scheduler=pf",),
    "tcp-pf": ("downlink.cell.scheduler=tcp-pf",),
    "tcp-max": ("downlink.cell.scheduler=tcp-max",),
    "tcp-pf-slots": ("downlink.cell.scheduler=tcp-pf", "downlink.cell.phi_in_slots=true"),
}
LABELS = {"rr": "RR", "max": "MAX", "pf": "PF", "tcp-pf": "TCP-PF", "tcp-max": "TCP-MAX",
          "tcp-pf-slots": "TCP-PF (φ in slots)"}
STUDY_SCHEDULERS = ("rr", "max", "pf", "tcp-pf", "tcp-max")  # the study's five
REFERENCE = "pf"  # paired differences are against PF
USERS = 21  # the scenario's copies of the download
SEGMENT = 536  # bytes of payload per segment (MTU 576)
#: Each grid's assumptions: the frame-error model and the link budget (spec C.1 (A)), and two
#: changes to what the diagnosis names: the MAC queues (unbounded in the study) and the speed.
#: A user's share of PF's cell is about 100 kbit/s and its RTT without queueing about 0.15 s
#: (40 ms wired, the ACK's 5 ms on 64 kbit/s, a turn every 0.1 s): a bandwidth-delay product of
#: about 1.9 kB, 3.5 segments. 8 packets is about 2.5 of them, 32 packets about 10.
WATERFALL = ("downlink.cell.frame_errors=waterfall",)
#: Users that arrive: each download starts at a time uniform on [0 s, 5 s], drawn from the seed and
#: the user's index (the same arrivals under every scheduler). The study gives no start times, but
#: its Fig. 1 cannot come from a cell whose 21 users all start at 0: its user had 270 segments out
#: by 4.6 s (about 2.5 times a 1/21 share) and then timed out on a gap of about 2 s with an RTO under
#: 2 s. OPNET's application profiles start their sessions at offsets; 5 s is a reading (a fifth of
#: the run), not a figure of the paper.
ARRIVALS_SPREAD = ("0 s", "5 s")
ARRIVALS = tuple(f'flow.{i}.start={{uniform=["{ARRIVALS_SPREAD[0]}", "{ARRIVALS_SPREAD[1]}"]}}' for i in range(USERS))
GRIDS = {"waterfall": WATERFALL,
         "arrivals": (*WATERFALL, *ARRIVALS),
         "fixed-fer": ("downlink.cell.frame_errors=fixed", "downlink.cell.frame_error_rate=0.01"),
         "edge-5db": (*WATERFALL, "downlink.cell.edge_snr=-5 dB"),
         "queue-8": (*WATERFALL, "downlink.cell.queue=8"),
         "speed-3": (*WATERFALL, "downlink.cell.speed=3 km/h")}
GRID_TEXT = {"waterfall": "waterfall frame errors, edge SINR 0 dB (the defaults)",
             "arrivals": f"the defaults with each user's download starting at a time uniform on {ARRIVALS_SPREAD[0]} to "
                         f"{ARRIVALS_SPREAD[1]} (drawn per user from the seed, the same under every scheduler): users "
                         "that arrive",
             "fixed-fer": "a fixed 1 % frame error rate, edge SINR 0 dB",
             "edge-5db": "waterfall frame errors, edge SINR −5 dB (a weaker link budget)",
             "queue-8": "the defaults with each user's MAC queue bounded at 8 packets (about 2.5 bandwidth-delay "
                        "products of a user), drop-tail",
             "speed-3": "the defaults at 3 km/h instead of 30 (Doppler 5.6 Hz: fades ten times longer)"}
#: PF and TCP-PF over further one-factor changes of the defaults (the sensitivity part).
SENSITIVITY = {"queue-32": ("downlink.cell.queue=32",),
               "rwnd-8k": tuple(f"flow.{i}.tcp.rwnd=8 KiB" for i in range(USERS)),
               "tick-200": tuple(f"flow.{i}.tcp.{k}" for i in range(USERS) for k in ("tick=200 ms", "clock_granularity=0 s")),
               "speed-10": ("downlink.cell.speed=10 km/h",),
               "speed-1": ("downlink.cell.speed=1 km/h",)}
SENSITIVITY_TEXT = {"queue-32": "MAC queue 32 packets (about 10 bandwidth-delay products)",
                    "rwnd-8k": "window 8 KiB instead of 64 (15 segments: a short queue without drops)",
                    "tick-200": "the study's 200 ms timer granularity read as a timer tick (expiries rounded up to "
                                "200 ms, G = 0) instead of RFC 6298's G", "speed-10": "10 km/h", "speed-1": "1 km/h"}
#: The rows of the sensitivity table: (label, grid or sensitivity setting), the defaults first.
SENSITIVITY_ROWS = (("the defaults (30 km/h, unbounded queues, 64 KiB window)", "waterfall"),
                    ("users arriving over 0-5 s", "arrivals"),
                    ("a fixed 1 % frame error rate", "fixed-fer"), ("edge SINR −5 dB", "edge-5db"),
                    ("MAC queue 8 packets", "queue-8"), ("MAC queue 32 packets", "queue-32"),
                    ("window 8 KiB", "rwnd-8k"), ("200 ms timer tick instead of G = 200 ms", "tick-200"), ("10 km/h", "speed-10"), ("3 km/h", "speed-3"), ("1 km/h", "speed-1"))
PAIR = ("pf", "tcp-pf")
#: Figs. 1-2 come from this traced run's event log (scheduling instants and segments).
EVENT_LOG = ("event_log=true",)
STUDY_GAIN = 0.12  # TCP-PF over PF, mean system TCP throughput
#: Timeouts this early are the start-up's (the initial RTO of 1 s, before an RTT sample), not a gap's.
START_S = 3.0
GAP_S = 1.0  # a turn gap this long is the study's Fig. 1 kind (it shows one of about 2 s)

Records = Mapping[tuple[int, int], Mapping[str, Any]]


def _scenario() -> Path:
    return scenario_dir() / "cell" / "tcp-pf.toml"


def run_figures(summary: Mapping[str, Any]) -> dict[str, Any]:
    """One run's figures: system TCP throughput (the study's: bytes each user received in the run
    over the run's length, whether or not its file completed) and MAC throughput, Jain's index, F_sys
    (ln, Γ in kB/s; -inf when a user got nothing), TCP timeouts and retransmissions, and each
    user's goodput and interval statistics (the cell lists users in flow order)."""
    flows = summary["flows"]
    users = next(link for link in summary["links"] if link.get("users") is not None)["users"]
    goodput = [8.0 * f["bytes_delivered"] / summary["sim_time_s"] for f in flows]
    # The cell's slot fill: delivered over what the error-free served slots could carry, summed over
    # users (a user's carried bits are its delivered bits over its fill; both per active second).
    filled = [u for u in users if u["slot_fill"]]
    carried = math.fsum(u["mac_throughput_bps"] / u["slot_fill"] for u in filled)
    fairness = stats.proportional_fairness([g / 8000 for g in goodput])
    return {
        "system_bps": math.fsum(goodput), "mac_bps": math.fsum(u["mac_throughput_bps"] for u in users),
        "mac_scheduled_bps": math.fsum(u["mac_scheduled_bps"] for u in users),
        "slot_fill": math.fsum(u["mac_throughput_bps"] for u in filled) / carried if carried else math.nan,
        "user_slot_fill": [u["slot_fill"] for u in users],
        "jain": stats.jain_index(goodput), "f_sys": fairness.ln, "starved": fairness.starved,
        "timeouts": sum(f["timeouts"] for f in flows), "retransmissions": sum(f["retransmissions"] for f in flows),
        "spurious": sum(f["spurious_retransmissions"] for f in flows),
        "users_with_timeouts": sum(1 for f in flows if f["timeouts"]),
        "user_bps": goodput, "user_timeouts": [f["timeouts"] for f in flows],
        "interval_mean_s": [u["interval_mean_s"] for u in users], "interval_std_s": [u["interval_std_s"] for u in users],
        "interval_max_s": [u["interval_max_s"] for u in users], "mean_sinr_db": [u["mean_sinr_db"] for u in users],
        "user_start_s": [f["start_s"] for f in flows],
    }


def paired(xs: Sequence[float], refs: Sequence[float]) -> dict[str, float]:
    """The mean of the differences x_s − ref_s over the same seeds s, its 95 % t interval, and
    both as a fraction of the reference's mean (NaN when that mean is 0, as timeouts can be).

    >>> d = paired([11, 12, 13], [10, 10, 10])
    >>> d["mean"], round(d["relative"], 2)
    (2.0, 0.2)
    """
    if len(xs) != len(refs):
        raise ValueError("paired differences need the same seeds on both sides")
    diff = stats.estimate([x - r for x, r in zip(xs, refs)])
    ref = stats.mean(refs)
    scale = 1 / ref if ref else math.nan
    return {"mean": diff.mean, "ci95": diff.ci95, "relative": diff.mean * scale, "relative_ci95": diff.ci95 * scale}


def _finite_mean(xs: Sequence[float]) -> float:
    finite = [x for x in xs if math.isfinite(x)]
    return stats.mean(finite)


@dataclass
class Part:
    """One grid (one set of assumptions): each scheduler's runs (seed order) and what they give."""

    runs: dict[str, list[dict[str, Any]]]
    table: list[dict[str, Any]] = field(default_factory=list)
    differences: list[dict[str, Any]] = field(default_factory=list)

    def series(self, scheduler: str, key: str) -> list[float]:
        return [float(r[key]) for r in self.runs[scheduler]]


def summarise(runs: dict[str, list[dict[str, Any]]]) -> Part:
    part = Part(runs)
    for s, rs in runs.items():
        system, mac, jain, scheduled = (stats.estimate([r[k] for r in rs])
                                        for k in ("system_bps", "mac_bps", "jain", "mac_scheduled_bps"))
        fills = [x for r in rs for x in r["user_slot_fill"] if x is not None]
        f_sys = [r["f_sys"] for r in rs]
        intervals = [x for r in rs for x in r["interval_mean_s"] if x is not None]
        stds = [x for r in rs for x in r["interval_std_s"] if x is not None]
        gaps = [x for r in rs for x in r["interval_max_s"] if x is not None]
        part.table.append({
            "scheduler": s, "label": LABELS[s], "runs": len(rs),
            "system_kbps": system.mean / 1e3, "system_ci95_kbps": system.ci95 / 1e3,
            "mac_kbps": mac.mean / 1e3, "mac_ci95_kbps": mac.ci95 / 1e3, "tcp_over_mac": system.mean / mac.mean,
            "mac_scheduled_kbps": scheduled.mean / 1e3, "mac_scheduled_ci95_kbps": scheduled.ci95 / 1e3,
            "tcp_over_scheduled": system.mean / scheduled.mean, "slot_fill": stats.mean([r["slot_fill"] for r in rs]),
            "users_fill_below_90_pct": 100 * sum(1 for x in fills if x < 0.9) / max(len(fills), 1),
            "jain": jain.mean, "jain_ci95": jain.ci95,
            "f_sys_mean": stats.mean(f_sys), "f_sys_finite_mean": _finite_mean(f_sys),
            "runs_with_starved_user": sum(1 for r in rs if r["starved"]),
            "timeouts_per_run": stats.mean([r["timeouts"] for r in rs]),
            "users_with_timeouts_per_run": stats.mean([r["users_with_timeouts"] for r in rs]),
            "spurious_per_run": stats.mean([r["spurious"] for r in rs]),
            "retransmissions_per_run": stats.mean([r["retransmissions"] for r in rs]),
            "interval_mean_s": stats.mean(intervals), "interval_std_s": stats.mean(stds),
            "interval_max_s": stats.mean(gaps), "largest_gap_s": max(gaps, default=math.nan),
            "users_gap_over_1s_pct": 100 * sum(1 for g in gaps if g > GAP_S) / max(len(gaps), 1),
        })
    if REFERENCE in runs:
        ref = part.series(REFERENCE, "system_bps")
        for s in runs:
            if s == REFERENCE:
                continue
            d, t = paired(part.series(s, "system_bps"), ref), paired(part.series(s, "timeouts"), part.series(REFERENCE, "timeouts"))
            part.differences.append({"scheduler": s, "label": LABELS[s], "against": LABELS[REFERENCE],
                                     "system_diff_kbps": d["mean"] / 1e3, "system_diff_ci95_kbps": d["ci95"] / 1e3,
                                     "system_gain_pct": 100 * d["relative"], "system_gain_ci95_pct": 100 * d["relative_ci95"],
                                     "timeouts_diff": t["mean"], "timeouts_diff_ci95": t["ci95"]})
    return part


@dataclass
class Reproduction:
    seeds: int
    quick: bool = False
    parts: tuple[str, ...] = PARTS
    extra_overrides: tuple[str, ...] = ()
    grids: dict[str, Part] = field(default_factory=dict)  # by grid (GRIDS)
    sensitivity: dict[str, Part] = field(default_factory=dict)  # by setting (SENSITIVITY): PF and TCP-PF
    #: Seed 1 with time series: per scheduler, each user's cwnd/delivered trace and its RTO.
    traces: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The same for PF and TCP-PF at 3 km/h, where PF's gaps do cause timeouts (Figs. 1-2 again).
    slow_traces: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: And for PF and TCP-PF with users that arrive (the arrivals grid's seed 1: Figs. 1-2 once more).
    arrival_traces: dict[str, dict[str, Any]] = field(default_factory=dict)
    claims: list[dict[str, str]] = field(default_factory=list)
    stores: dict[str, Path] = field(default_factory=dict)

    def to_json(self, only: str | None = None) -> Any:
        return {"study": NAME, "seeds": self.seeds, "quick": self.quick,
                "grids": {k: {"schedulers": p.table, "paired_vs_pf": p.differences} for k, p in self.grids.items()},
                "sensitivity": sensitivity_rows(self),
                "gaps_vs_rto": {s: t["users"] for s, t in self.traces.items()}, "claims": self.claims}


def grid_experiment(grid: str, seeds: int, extra: Sequence[str]) -> Experiment:
    points = [((("scheduler", s),), (*over, *GRIDS[grid], *extra)) for s, over in SCHEDULERS.items()]
    return build_experiment(f"tcp-pf-{grid}", f"airlink reproduce tcp-pf: cell/tcp-pf.toml per scheduler, {GRID_TEXT[grid]}",
                            _scenario(), points, range(1, seeds + 1), metrics=("flows.*.goodput_bps",))


def sensitivity_experiment(seeds: int, extra: Sequence[str]) -> Experiment:
    points = [((("setting", k), ("scheduler", s)), (*SCHEDULERS[s], *WATERFALL, *over, *extra))
              for k, over in SENSITIVITY.items() for s in PAIR]
    return build_experiment("tcp-pf-sensitivity", "airlink reproduce tcp-pf: cell/tcp-pf.toml, PF and TCP-PF, one "
                            "assumption changed per setting", _scenario(), points, range(1, seeds + 1),
                            metrics=("flows.*.goodput_bps",))


#: The traced runs: every scheduler with the defaults, and PF and TCP-PF at 3 km/h.
SLOW = "speed-3"
SLOW_OVERRIDES = tuple(o for o in GRIDS[SLOW] if o not in WATERFALL)


def traces_experiment(extra: Sequence[str]) -> Experiment:
    points = [((("setting", "defaults"), ("scheduler", s)), (*over, *EVENT_LOG, *extra)) for s, over in SCHEDULERS.items()]
    points += [(((("setting", SLOW), ("scheduler", s))), (*SCHEDULERS[s], *SLOW_OVERRIDES, *EVENT_LOG, *extra)) for s in PAIR]
    points += [(((("setting", "arrivals"), ("scheduler", s))), (*SCHEDULERS[s], *ARRIVALS, *EVENT_LOG, *extra)) for s in PAIR]
    return build_experiment("tcp-pf-traces", "airlink reproduce tcp-pf: cell/tcp-pf.toml per scheduler, seed 1, "
                            "time series and event log", _scenario(), points, (1,), metrics=("flows.*.goodput_bps",),
                            series=True)


def _grid(exp: Experiment, records: Records) -> Part:
    runs = {dict(c.params)["scheduler"]: [run_figures(records[c.index, r]["summary"]) for r in range(exp.repetitions.count)]
            for c in exp.configs}
    return summarise(runs)


def _sensitivity(exp: Experiment, records: Records) -> dict[str, Part]:
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for c in exp.configs:
        p = dict(c.params)
        runs.setdefault(p["setting"], {})[p["scheduler"]] = [run_figures(records[c.index, r]["summary"])
                                                             for r in range(exp.repetitions.count)]
    return {k: summarise(v) for k, v in runs.items()}


def sensitivity_rows(rep: Reproduction) -> list[dict[str, Any]]:
    """TCP-PF against PF under each assumption (the rows whose runs this report holds): the paired
    gain, timeouts and spurious retransmissions per run, PF's gaps, and what TCP carried of the MAC."""
    rows = []
    base = rep.grids.get("waterfall")
    for label, key in SENSITIVITY_ROWS:
        part = rep.grids.get(key) or rep.sensitivity.get(key)
        if part is None:
            continue
        pf, tcp = _row(part, "pf"), _row(part, "tcp-pf")
        d = _diff(part, "tcp-pf")
        mac = paired(part.series("tcp-pf", "mac_bps"), part.series("pf", "mac_bps"))
        rows.append({"setting": key, "label": label, "gain_pct": d["system_gain_pct"], "gain_ci95_pct": d["system_gain_ci95_pct"],
                     "shift_pct": d["system_gain_pct"] - _diff(base, "tcp-pf")["system_gain_pct"] if base else math.nan,
                     "mac_gain_pct": 100 * mac["relative"], "pf_kbps": pf["system_kbps"], "tcp_pf_kbps": tcp["system_kbps"],
                     "pf_timeouts": pf["timeouts_per_run"], "tcp_pf_timeouts": tcp["timeouts_per_run"],
                     "pf_spurious": pf["spurious_per_run"], "tcp_pf_spurious": tcp["spurious_per_run"],
                     "pf_tcp_over_mac": pf["tcp_over_mac"], "tcp_pf_tcp_over_mac": tcp["tcp_over_mac"],
                     "pf_longest_gap_s": pf["interval_max_s"], "pf_gap_over_1s_pct": pf["users_gap_over_1s_pct"]})
    return rows


def _traces(exp: Experiment, store: Path, records: Records) -> dict[str, dict[str, dict[str, Any]]]:
    """Per setting and scheduler (seed 1): each user's turn gaps beside its retransmission timeout
    (median of the sampled RTO after the first second), and for PF and TCP-PF the event log."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for c in exp.configs:
        record = records[c.index, 0]
        flows = load_series(store, record["key"], "flows")
        fig = run_figures(record["summary"])
        users = []
        for i in range(len(fig["user_bps"])):
            f = flows[flows["flow"] == i]
            begun = fig["user_start_s"][i]  # a user that arrives starts up at its arrival
            settled = f[(f["time_ns"] >= (begun + 1) * 1e9) & f["rto_us"].notna()]
            start = f[f["time_ns"] <= (begun + START_S) * 1e9]["timeouts"]
            users.append({"user": i, "start_s": begun, "goodput_kbps": fig["user_bps"][i] / 1e3, "timeouts": fig["user_timeouts"][i],
                          "start_timeouts": int(start.max()) if len(start) else 0, "mean_sinr_db": fig["mean_sinr_db"][i], "interval_mean_s": fig["interval_mean_s"][i],
                          "interval_max_s": fig["interval_max_s"][i],
                          "srtt_median_s": float(settled["srtt_us"].median()) / 1e6 if len(settled) else math.nan,
                          "rto_median_s": float(settled["rto_us"].median()) / 1e6 if len(settled) else math.nan})
        params = dict(c.params)
        trace = out.setdefault(params["setting"], {})[params["scheduler"]] = {"users": users}
        if params["scheduler"] in PAIR:  # Figs. 1-2: the event log, every user (the one to show is chosen from PF's)
            trace["segments"] = load_series(store, record["key"], "segments")
            trace["slots"] = load_series(store, record["key"], "slots")
    return out


def trace_user(traces: Mapping[str, Mapping[str, Any]]) -> int:
    """The user Figs. 1-2 follow: PF's user with the most timeouts after the start-up, then the
    longest gap."""
    users = traces["pf"]["users"]
    return max(users, key=lambda u: (u["timeouts"] - u["start_timeouts"], u["timeouts"], u["interval_max_s"] or 0))["user"]


def user_trace(traces: Mapping[str, Mapping[str, Any]], scheduler: str, user: int) -> dict[str, list[float]]:
    """One user's run as the study's Figs. 1-2 draw it: each segment sent (segment number, from
    1; a retransmission is one below the highest sent before), each ACK (segments acknowledged),
    cwnd (segments) after each of them, the timeouts, and the slots the user was served (frame
    errors apart)."""
    t = traces[scheduler]
    seg = t["segments"][t["segments"]["flow"] == user]
    slots = t["slots"][t["slots"]["user"] == user]
    sent = seg[seg["kind"] == "sent"]
    acks = seg[seg["kind"] == "ack"]
    index = ((sent["seq"] - 1) // SEGMENT + 1).tolist()
    highest = 0
    retransmitted = []
    for k in index:
        retransmitted.append(k <= highest)
        highest = max(highest, k)
    seconds = lambda df: (df["time_ns"] / 1e9).tolist()  # noqa: E731
    return {"sent_s": seconds(sent), "sent_segment": index, "retransmitted": retransmitted,
            "ack_s": seconds(acks), "acked_segments": ((acks["seq"] - 1) // SEGMENT).tolist(),
            "cwnd_s": seconds(seg[seg["kind"] != "timeout"]),
            "cwnd_segments": (seg[seg["kind"] != "timeout"]["cwnd_bytes"] / SEGMENT).tolist(),
            "timeout_s": seconds(seg[seg["kind"] == "timeout"]),
            "served_s": seconds(slots[slots["frame_error"] == 0]), "frame_error_s": seconds(slots[slots["frame_error"] == 1])}


def _row(part: Part, s: str) -> dict[str, Any]:
    return next(r for r in part.table if r["scheduler"] == s)


def _diff(part: Part, s: str) -> dict[str, Any]:
    return next(d for d in part.differences if d["scheduler"] == s)


def claims_of(part: Part, grid: str) -> list[dict[str, str]]:
    """The study's statements, checked on one grid."""
    def claim(name: str, ok: bool, detail: str) -> dict[str, str]:
        return {"claim": f"{name} ({grid})", "status": "PASS" if ok else "FAIL", "detail": detail, "name": name, "grid": grid}

    rows = {s: _row(part, s) for s in STUDY_SCHEDULERS}
    gain = _diff(part, "tcp-pf")
    low = gain["system_gain_pct"] - gain["system_gain_ci95_pct"]
    out = [claim("tcp-pf-above-pf", low > 0,
                 f"TCP-PF − PF, paired: {gain['system_gain_pct']:+.1f} % ± {gain['system_gain_ci95_pct']:.1f} % of PF's "
                 f"system TCP throughput (study: about +{100 * STUDY_GAIN:.0f} %)")]
    tcp_max = paired(part.series("tcp-max", "system_bps"), part.series("tcp-pf", "system_bps"))
    # "At or slightly above": not below, and within 5 % ("the difference is not that significant").
    out.append(claim("tcp-max-at-or-slightly-above-tcp-pf",
                     tcp_max["relative"] + tcp_max["relative_ci95"] >= 0 and tcp_max["relative"] <= 0.05,
                     f"TCP-MAX − TCP-PF, paired: {100 * tcp_max['relative']:+.1f} % ± {100 * tcp_max['relative_ci95']:.1f} %"))
    # MAX's MAC statement read two ways: MAC throughput as the bits delivered, and as the bits the
    # served slots were scheduled to carry (rate × slot, whether or not the queue filled them).
    for name, mac_key, ratio_key, reading in (
            ("max-highest-mac-degraded-tcp", "mac_kbps", "tcp_over_mac", "MAC as delivered bits"),
            ("max-highest-scheduled-mac-degraded-tcp", "mac_scheduled_kbps", "tcp_over_scheduled", "MAC as scheduled bits")):
        mac_top = max(rows, key=lambda s: rows[s][mac_key])
        ratio_low = min(rows, key=lambda s: rows[s][ratio_key])
        out.append(claim(name, mac_top == "max" and ratio_low == "max"
                         and rows["max"]["system_kbps"] < rows["tcp-pf"]["system_kbps"],
                         f"{reading}: highest {LABELS[mac_top]} ({rows[mac_top][mac_key]:,.0f} kbit/s); TCP/MAC: MAX "
                         f"{rows['max'][ratio_key]:.2f}, lowest {LABELS[ratio_low]}; TCP: MAX "
                         f"{rows['max']['system_kbps']:,.0f} vs TCP-PF {rows['tcp-pf']['system_kbps']:,.0f} kbit/s; slot fill: "
                         + ", ".join(f"{LABELS[s]} {rows[s]['slot_fill']:.3f}" for s in rows)))
    over_rr = paired(part.series("tcp-pf", "system_bps"), part.series("rr", "system_bps"))
    out.append(claim("tcp-pf-well-above-rr", over_rr["relative"] - over_rr["relative_ci95"] > 0.05,
                     f"TCP-PF − RR, paired: {100 * over_rr['relative']:+.1f} % ± {100 * over_rr['relative_ci95']:.1f} %"))
    f_top = max(rows, key=lambda s: rows[s]["f_sys_mean"])
    out.append(claim("tcp-pf-highest-f-sys", f_top == "tcp-pf",
                     "mean F_sys (ln kB/s): " + ", ".join(f"{LABELS[s]} {rows[s]['f_sys_mean']:.3f}" for s in rows)))
    out.append(claim("fewer-timeouts-tcp-pf-than-pf", rows["tcp-pf"]["timeouts_per_run"] < rows["pf"]["timeouts_per_run"],
                     f"timeouts per run (21 users): PF {rows['pf']['timeouts_per_run']:.2f}, TCP-PF "
                     f"{rows['tcp-pf']['timeouts_per_run']:.2f}; users with a turn gap > {GAP_S:g} s: PF "
                     f"{rows['pf']['users_gap_over_1s_pct']:.1f} %, TCP-PF {rows['tcp-pf']['users_gap_over_1s_pct']:.1f} %"))
    return out


def readings(rep: Reproduction) -> list[dict[str, str]]:
    """Which reading reproduces which statement: each claim's status per grid (one row a claim)."""
    rows: dict[str, dict[str, str]] = {}
    for c in rep.claims:
        rows.setdefault(c["name"], {"claim": c["name"]})[c["grid"]] = c["status"]
    return list(rows.values())


def reproduce(*, seeds: int = SEEDS, parts: Sequence[str] = PARTS, progress: bool = False, jobs: int | None = None,
              extra_overrides: Sequence[str] = (), out: Path | None = None, quick: bool = False) -> Reproduction:
    """Runs the study's ``parts``: each frame-error model's grid (six schedulers × seeds 1..``seeds``)
    and the seed-1 traces. ``quick``: runs of 8 s instead of 25 s (the test suite's form: a check,
    not figures to quote). The runs go to result stores under ``out/store``."""
    if unknown := [p for p in parts if p not in PARTS]:
        raise ValueError(f"unknown part {unknown[0]!r}: expected one of {', '.join(PARTS)}")
    if out is None:
        with tempfile.TemporaryDirectory() as tmp:
            return reproduce(seeds=seeds, parts=parts, progress=progress, jobs=jobs, extra_overrides=extra_overrides,
                             out=Path(tmp), quick=quick)
    extra = (*([f"stop={QUICK_STOP}"] if quick else []), *extra_overrides)
    rep = Reproduction(seeds=seeds, quick=quick, parts=tuple(p for p in PARTS if p in parts), extra_overrides=tuple(extra_overrides))
    run = {"jobs": jobs, "progress": progress}
    for grid in GRIDS:
        if grid in parts:
            exp, rep.stores[grid] = grid_experiment(grid, seeds, extra), store_of(out, grid)
            rep.grids[grid] = _grid(exp, run_part(exp, rep.stores[grid], **run))
            rep.claims += claims_of(rep.grids[grid], grid)
    if "sensitivity" in parts:
        exp, rep.stores["sensitivity"] = sensitivity_experiment(seeds, extra), store_of(out, "sensitivity")
        rep.sensitivity = _sensitivity(exp, run_part(exp, rep.stores["sensitivity"], **run))
    if "traces" in parts:
        exp, rep.stores["traces"] = traces_experiment(extra), store_of(out, "traces")
        traces = _traces(exp, rep.stores["traces"], run_part(exp, rep.stores["traces"], **run))
        rep.traces, rep.slow_traces, rep.arrival_traces = traces["defaults"], traces[SLOW], traces["arrivals"]
    return rep


def text(rep: Reproduction) -> str:
    lines: list[str] = []
    for grid, part in rep.grids.items():
        lines.append(f"{grid}: {GRID_TEXT[grid]}, {rep.seeds} placements per scheduler (mean ± 95 % CI):")
        lines.append(f"  {'scheduler':<20} {'TCP kbit/s':>16} {'MAC kbit/s':>16} {'sched. MAC':>10} {'fill':>6} {'Jain':>6} "
                     f"{'F_sys':>7} {'timeouts':>8} {'gap>1s %':>8} {'max gap s':>9}")
        for r in part.table:
            lines.append(f"  {r['label']:<20} {r['system_kbps']:>8,.0f} ± {r['system_ci95_kbps']:>5,.0f} "
                         f"{r['mac_kbps']:>8,.0f} ± {r['mac_ci95_kbps']:>5,.0f} {r['mac_scheduled_kbps']:>10,.0f} "
                         f"{r['slot_fill']:>6.3f} {r['jain']:>6.3f} {r['f_sys_mean']:>7.3f} "
                         f"{r['timeouts_per_run']:>8.2f} {r['users_gap_over_1s_pct']:>8.1f} {r['interval_max_s']:>9.3f}")
        for d in part.differences:
            lines.append(f"  {d['label']} − PF: {d['system_gain_pct']:+.1f} % ± {d['system_gain_ci95_pct']:.1f} %, "
                         f"timeouts {d['timeouts_diff']:+.2f} ± {d['timeouts_diff_ci95']:.2f} per run")
    if sens := sensitivity_rows(rep):
        lines.append(f"TCP-PF − PF under one changed assumption, {rep.seeds} placements (paired, 95 % CI):")
        lines.append(f"  {'assumption':<58} {'TCP-PF − PF':>15} {'shift':>7} {'MAC':>7} {'timeouts PF/TCP-PF':>18} "
                     f"{'spurious PF/TCP-PF':>18} {'PF gap>1s %':>11}")
        for r in sens:
            lines.append(f"  {r['label']:<58} {r['gain_pct']:>+7.1f} ± {r['gain_ci95_pct']:>4.1f} % {r['shift_pct']:>+6.1f} "
                         f"{r['mac_gain_pct']:>+6.1f} {r['pf_timeouts']:>8.1f} / {r['tcp_pf_timeouts']:<7.1f} "
                         f"{r['pf_spurious']:>8.0f} / {r['tcp_pf_spurious']:<7.0f} {r['pf_gap_over_1s_pct']:>11.1f}")
    for setting, s, t in [*(("defaults", s, t) for s, t in rep.traces.items()),
                          *(("arrivals", s, t) for s, t in rep.arrival_traces.items())]:
        users = t["users"]
        beyond = sum(1 for u in users if u["interval_max_s"] is not None and u["interval_max_s"] > u["rto_median_s"])
        lines.append(f"seed 1, {setting}, {LABELS[s]}: median RTO {stats.mean([u['rto_median_s'] for u in users]):.2f} s (mean over users), "
                     f"longest gap {max(u['interval_max_s'] or 0 for u in users):.2f} s, {beyond} of {len(users)} users "
                     f"with a gap longer than their RTO, {sum(u['timeouts'] for u in users)} timeouts "
                     f"({sum(u['start_timeouts'] for u in users)} in a user's first {START_S:g} s)")
    if table := readings(rep):
        grids = list(rep.grids)
        lines.append("which reading reproduces which statement (claim: status per grid):")
        lines += [f"  {r['claim']:<38} " + "  ".join(f"{g} {r.get(g, '—')}" for g in grids) for r in table]
    lines += [f"{c['status']:<11} {c['claim']}: {c['detail']}" for c in rep.claims]
    return "\n".join(lines)


def setup_lines(rep: Reproduction) -> list[str]:
    lines = [f"airlink {version()}; scenario cell/tcp-pf.toml (the study's Section IV values; spec C.1 assumptions "
             f"where it gives none); seeds 1 to {rep.seeds}, each one placement and fading of the 21 users, common to "
             "every scheduler; means with 95 % Student-t intervals, differences paired by seed."]
    if rep.seeds != SEEDS:
        lines.append(f"Deviation from the study: {rep.seeds} placements per scheduler instead of {SEEDS}.")
    if rep.quick:
        lines.append(f"Deviation: quick form, runs of {QUICK_STOP} instead of 25 s (a check, not figures to quote).")
    if rep.extra_overrides:
        lines.append("Deviation: extra overrides on every run: " + ", ".join(rep.extra_overrides) + ".")
    return lines + store_lines(rep.stores)


def write_report(rep: Reproduction, out: Path) -> None:
    from airlink.studies import tcppf_report  # matplotlib loads only when a report is written

    tcppf_report.write_report(rep, out)
