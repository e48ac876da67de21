"""WIPEMU [S1]: Alfredsson, Brunstrom, Sternad, "Transport protocol performance over 4G links:
emulation methodology and results". Reproduces Table II (validation against theory) and
Figs. 4-7 (TCP throughput and retransmissions against the link ARQ limit), and the claims under
the readings the study leaves open (its shadowing, its 8-QAM, the switching levels' refresh).

The grid, the curves, the figures and the study's claims are plain data at the top of this
module; the functions below only run the grid and compute from it. Every run's seed comes from
the grid (seeds 1..N), never from a clock.
"""

from __future__ import annotations

import math
import tempfile
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airlink.experiment import Experiment, build_experiment
from airlink.scenarios import scenario_dir
from airlink.stats import estimate
from airlink.studies.reproduction import Run, run_part, runs_of, store_of

NAME = "wipemu"
TITLE = "Transport protocol performance over 4G links (WIPEMU)"
CITATION = "S. Alfredsson, A. Brunstrom, M. Sternad: Transport Protocol Performance over 4G Links: Emulation Methodology and Results"
PARTS = ("table2", "fig4", "fig5", "fig6", "fig7", "readings")

# ---------------------------------------------------------------------------------------------
# The grid (Table I and Section III of the study)
# ---------------------------------------------------------------------------------------------

VALIDATION_SCENARIO = "wipemu/validation.toml"  # fixed modulation, no frame errors
FIGURE_SCENARIO = "wipemu/adaptive.toml"  # the fading channel of Table I
MODULATIONS = ("bpsk", "4qam", "8qam", "16qam", "32qam", "64qam", "128qam", "256qam")  # k = 1..8 bits/symbol
TABLE2_SEED = 1  # no frame errors: the seed does not change the measured rate
ARQ_LIMITS = (3, 4, 5, 6, 8, 10, 15, 20, 30)  # x axis of Figs. 4-7
SEEDS = 30  # "repeated 30 times with channel data generated with different random seeds"

MODULATION_KEY = "downlink.ofdm4g.modulation"
ARQ_KEY = "downlink.ofdm4g.arq_max_retransmissions"
NMSE_KEY = "downlink.ofdm4g.channel.prediction_nmse"
ALLOCATION_KEY = "downlink.ofdm4g.allocation"


@dataclass(frozen=True)
class Curve:
    """One line of a figure: the overrides of ``FIGURE_SCENARIO`` that define it."""

    key: str
    label: str
    overrides: tuple[str, ...]


CURVES: dict[str, Curve] = {
    c.key: c
    for c in (
        Curve("bpsk", "fixed BPSK", (f"{MODULATION_KEY}=bpsk",)),
        Curve("4qam", "fixed 4-QAM", (f"{MODULATION_KEY}=4qam",)),
        Curve("8qam", "fixed 8-QAM", (f"{MODULATION_KEY}=8qam",)),
        Curve("adaptive-perfect", "adaptive, perfect prediction", ()),
        Curve("adaptive-nmse0.1", "adaptive, prediction NMSE 0.1", (f"{NMSE_KEY}=0.1",)),
        Curve("best-perfect", "best channel, perfect prediction", (f"{ALLOCATION_KEY}=best",)),
        Curve("best-nmse0.1", "best channel, prediction NMSE 0.1", (f"{ALLOCATION_KEY}=best", f"{NMSE_KEY}=0.1")),
    )
}


@dataclass(frozen=True)
class Figure:
    key: str
    number: int
    title: str  # the study's caption
    metric: str  # a key of run_metrics()
    y_label: str
    curves: tuple[str, ...]
    meaning: str  # what the study's figure shows, for the report (the claims check it on our data)


THROUGHPUT = "throughput_kbps"
RETRANSMISSIONS = "retransmission_pct"

FIGURES: dict[str, Figure] = {
    f.key: f
    for f in (
        Figure(
            "fig4", 4, "Fix modulation, throughput", THROUGHPUT, "throughput (kbit/s)", ("4qam", "bpsk", "8qam"),
            "Fixed modulation on the static sub-band. In the study, BPSK is robust but slow and barely depends on the ARQ "
            "limit; 4-QAM carries more when the link layer is persistent; 8-QAM over-uses the channel, "
            "its frame errors outrun the retransmissions.",
        ),
        Figure(
            "fig5", 5, "Adaptive modulation, no channel scheduling, throughput", THROUGHPUT, "throughput (kbit/s)",
            ("adaptive-perfect", "adaptive-nmse0.1", "4qam"),
            "Adaptive modulation per frame from the predicted SNR. In the study, perfect prediction is best, a prediction "
            "error of NMSE 0.1 costs throughput, both beat the best fixed modulation (4-QAM). A less "
            "persistent link layer (small ARQ limit) costs much more than its residual loss suggests.",
        ),
        Figure(
            "fig6", 6, "Adaptive modulation, no channel scheduling, retransmissions", RETRANSMISSIONS,
            "TCP retransmissions (% of data segments)", ("adaptive-perfect", "adaptive-nmse0.1", "4qam"),
            "TCP retransmissions of the Fig. 5 runs. In the study, a few per cent of lost segments at small ARQ limits is "
            "enough to halve the throughput, because TCP reads each loss as congestion.",
        ),
        Figure(
            "fig7", 7, "Adaptive modulation, scheduled channel, throughput", THROUGHPUT, "throughput (kbit/s)",
            ("best-perfect", "best-nmse0.1", "adaptive-perfect"),
            "Best-channel scheduling (the best of 25 sub-bands in each slot) against the static sub-band "
            "with perfect prediction. In the study, scheduling on the channel's peaks adds throughput at every ARQ limit.",
        ),
    )
}



@dataclass(frozen=True)
class Reading:
    """One reading of what the study leaves open: overrides of ``FIGURE_SCENARIO`` on every curve."""

    key: str
    text: str
    overrides: tuple[str, ...]


#: The shipped scenario follows the study's text: shadowing σ = 4 dB ("the standard deviation,
#: σ, was set to 4 dB"), the compact 8-point 8-QAM (spec A.3 generic), switching levels of the
#: local mean SNR (spec A.6(b)). The other readings are run on a smaller grid beside it.
READINGS: dict[str, Reading] = {
    r.key: r
    for r in (
        Reading("text", "as shipped: shadowing σ = 4 dB (the text), compact 8-QAM, levels of the local mean", ()),
        Reading("sigma-2db", "shadowing σ = 2 dB (Table I's \"variance 4 dB\")",
                ("downlink.ofdm4g.channel.shadowing_sigma=2 dB",)),
        Reading("rect-8qam", "rectangular 4×2 8-QAM (1.09 dB worse than the compact one)",
                ("downlink.ofdm4g.odd_k_model=rect",)),
        Reading("one-table", "switching levels of the configured 16 dB only, whatever the shadowing",
                ("downlink.ofdm4g.switching_refresh=false",)),
    )
}
READING_CURVES = ("bpsk", "4qam", "8qam", "adaptive-perfect", "adaptive-nmse0.1")
READING_LIMITS = (3, 4, 10, 30)
READING_SEEDS = 10  # per point: the readings are a sensitivity check, not the figures

# ---------------------------------------------------------------------------------------------
# The study's claims, each with the criterion it is checked by (thresholds below)
# ---------------------------------------------------------------------------------------------

BPSK_FLAT_MAX_SPREAD = 0.10  # "almost regardless": at most 10 % between its lowest and highest mean
LOW_ARQ_MAX_THROUGHPUT_SHARE = 0.75  # study: "about a 50 % performance drop" at limit 3
LOW_ARQ_MAX_TCP_RETRANSMISSION_PCT = 10.0  # study: "only about 6 % TCP retransmissions"
ARQ_CURVES = ("4qam", "8qam", "adaptive-perfect", "adaptive-nmse0.1", "best-perfect", "best-nmse0.1")


@dataclass(frozen=True)
class Claim:
    key: str
    statement: str  # what the study says
    criterion: str  # how it is checked on the reproduced data
    curves: tuple[str, ...]  # the curves it needs
    any_curve: bool = False  # judged on whichever of its curves were run, not only on all of them


CLAIMS: tuple[Claim, ...] = (
    Claim(
        "bpsk-flat", "BPSK obtains the same throughput almost regardless of the number of link retransmissions (Fig. 4).",
        f"BPSK's mean throughput varies by at most {100 * BPSK_FLAT_MAX_SPREAD:.0f} % over the ARQ limits.", ("bpsk",),
    ),
    Claim(
        "4qam-above-bpsk", "Fixed 4-QAM makes a higher throughput possible than BPSK (Fig. 4).",
        "4-QAM's mean throughput is above BPSK's at the largest ARQ limit.", ("4qam", "bpsk"),
    ),
    Claim(
        "8qam-collapses", "8-QAM over-uses the radio resource: the retransmissions cannot compensate its frame errors (Fig. 4).",
        "8-QAM's mean throughput is below BPSK's at the smallest ARQ limit.", ("8qam", "bpsk"),
    ),
    Claim(
        "adaptive-above-fixed", "Adaptive modulation uses the channel better than the best fixed modulation, "
        "4-QAM, the reference curve of Fig. 5.",
        "Both adaptive curves (perfect, NMSE 0.1) are above 4-QAM at every ARQ limit, as the study compares them "
        "(its Fig. 5 shows 4-QAM only); where BPSK is higher it is said, but not judged.",
        ("adaptive-perfect", "adaptive-nmse0.1", "4qam"),
    ),
    Claim(
        "perfect-above-nmse", "Prediction errors (NMSE 0.1) degrade the throughput of perfect prediction (Figs. 5, 7).",
        "Perfect prediction is above NMSE 0.1 at every ARQ limit, on the static and on the best channel.",
        ("adaptive-perfect", "adaptive-nmse0.1", "best-perfect", "best-nmse0.1"),
    ),
    Claim(
        "best-above-static", "Best-channel scheduling improves on the static channel allocation (Fig. 7).",
        "Both best-channel curves are above the static perfect-prediction curve at every ARQ limit.",
        ("best-perfect", "best-nmse0.1", "adaptive-perfect"),
    ),
    Claim(
        "arq-helps", "A more persistent link layer (larger ARQ limit) gives a higher TCP throughput (Figs. 4, 5, 7).",
        "For every curve but BPSK, the mean at the largest limit is above the mean at the smallest, and no step "
        "to a larger limit drops by more than the two points' 95 % CI half-widths.",
        ARQ_CURVES, any_curve=True,
    ),
    Claim(
        "loss-vs-throughput",
        "With 3 link retransmissions adaptive perfect prediction loses about 50 % of its throughput while only "
        "about 6 % of TCP's segments are retransmitted: TCP reads the losses as congestion (Figs. 5, 6).",
        f"At the smallest limit: throughput at most {100 * LOW_ARQ_MAX_THROUGHPUT_SHARE:.0f} % of that at the largest "
        f"limit, and at most {LOW_ARQ_MAX_TCP_RETRANSMISSION_PCT:.0f} % TCP retransmissions.",
        ("adaptive-perfect",),
    ),
)


# ---------------------------------------------------------------------------------------------
# How each claim is checked
# ---------------------------------------------------------------------------------------------

Points = Mapping[tuple[str, int], Mapping[str, Any]]
Verdict = tuple[bool, str]


def _mean(points: Points, curve: str, limit: int, metric: str = THROUGHPUT) -> float:
    return float(points[(curve, limit)][f"{metric}_mean"])


def _above_everywhere(points: Points, limits: Sequence[int], upper: str, lowers: Sequence[str]) -> Verdict:
    failures = []
    for x in limits:
        top = _mean(points, upper, x)
        best_lower = max(_mean(points, lower, x) for lower in lowers)
        if not top > best_lower:
            failures.append(f"limit {x}: {top:.1f} <= {best_lower:.1f}")
    margins = [_mean(points, upper, x) - max(_mean(points, lo, x) for lo in lowers) for x in limits]
    detail = f"{CURVES[upper].label} leads by {min(margins):.1f} to {max(margins):.1f} kbit/s"
    return (not failures, detail if not failures else "; ".join(failures))


def _claim_4qam_above_bpsk(points: Points, limits: Sequence[int]) -> Verdict:
    x = max(limits)
    a, b = _mean(points, "4qam", x), _mean(points, "bpsk", x)
    above = [str(y) for y in limits if _mean(points, "4qam", y) > _mean(points, "bpsk", y)]
    return a > b, f"at limit {x}: 4-QAM {a:.1f} vs BPSK {b:.1f} kbit/s (4-QAM above at limits {', '.join(above) or 'none'})"


def _claim_bpsk_flat(points: Points, limits: Sequence[int]) -> Verdict:
    values = [_mean(points, "bpsk", x) for x in limits]
    spread = (max(values) - min(values)) / max(values)
    return spread <= BPSK_FLAT_MAX_SPREAD, f"BPSK from {min(values):.1f} to {max(values):.1f} kbit/s ({100 * spread:.1f} % spread)"


def _claim_8qam_collapses(points: Points, limits: Sequence[int]) -> Verdict:
    x = min(limits)
    a, b = _mean(points, "8qam", x), _mean(points, "bpsk", x)
    return a < b, f"at limit {x}: 8-QAM {a:.1f} vs BPSK {b:.1f} kbit/s"


def _claim_adaptive_above_fixed(points: Points, limits: Sequence[int]) -> Verdict:
    adaptive = ("adaptive-perfect", "adaptive-nmse0.1")
    verdicts = [_above_everywhere(points, limits, c, ("4qam",)) for c in adaptive]
    details = [d for _, d in verdicts]
    if ("bpsk", min(limits)) in points:
        below = [f"{c} at limit {x}" for c in adaptive for x in limits if _mean(points, c, x) <= _mean(points, "bpsk", x)]
        details.append("BPSK is higher than " + ", ".join(below) if below else "both are also above BPSK everywhere")
    return all(v for v, _ in verdicts), "; ".join(details)


def _claim_perfect_above_nmse(points: Points, limits: Sequence[int]) -> Verdict:
    verdicts = [
        _above_everywhere(points, limits, "adaptive-perfect", ("adaptive-nmse0.1",)),
        _above_everywhere(points, limits, "best-perfect", ("best-nmse0.1",)),
    ]
    return all(v for v, _ in verdicts), "; ".join(d for _, d in verdicts)


def _claim_best_above_static(points: Points, limits: Sequence[int]) -> Verdict:
    verdicts = [_above_everywhere(points, limits, c, ("adaptive-perfect",)) for c in ("best-perfect", "best-nmse0.1")]
    return all(v for v, _ in verdicts), "; ".join(d for _, d in verdicts)


def _claim_arq_helps(points: Points, limits: Sequence[int], curves: Sequence[str]) -> Verdict:
    lo, hi = min(limits), max(limits)
    problems, rises = [], []
    for c in curves:
        first, last = _mean(points, c, lo), _mean(points, c, hi)
        rises.append(f"{c} {first:.0f}→{last:.0f}")
        if not last > first:
            problems.append(f"{c}: {last:.1f} at limit {hi} is not above {first:.1f} at limit {lo}")
        ordered = sorted(limits)
        for prev, cur in zip(ordered, ordered[1:]):
            p, q = points[(c, prev)], points[(c, cur)]
            slack = p[f"{THROUGHPUT}_ci95"] + q[f"{THROUGHPUT}_ci95"]
            if q[f"{THROUGHPUT}_mean"] < p[f"{THROUGHPUT}_mean"] - (slack if math.isfinite(slack) else 0.0):
                problems.append(f"{c}: drops from limit {prev} to {cur} beyond the CIs")
    return not problems, "; ".join(problems) if problems else "kbit/s: " + ", ".join(rises)


def _claim_loss_vs_throughput(points: Points, limits: Sequence[int]) -> Verdict:
    lo, hi = min(limits), max(limits)
    low, high = _mean(points, "adaptive-perfect", lo), _mean(points, "adaptive-perfect", hi)
    retx = _mean(points, "adaptive-perfect", lo, RETRANSMISSIONS)
    ok = low <= LOW_ARQ_MAX_THROUGHPUT_SHARE * high and retx <= LOW_ARQ_MAX_TCP_RETRANSMISSION_PCT
    return ok, (
        f"limit {lo}: {low:.1f} kbit/s = {100 * low / high:.0f} % of the {high:.1f} kbit/s at limit {hi}, "
        f"with {retx:.2f} % TCP retransmissions (study: about 50 % and 6 %)"
    )


CLAIM_CHECKS: dict[str, Callable[[Points, Sequence[int]], Verdict]] = {
    "bpsk-flat": _claim_bpsk_flat,
    "4qam-above-bpsk": _claim_4qam_above_bpsk,
    "8qam-collapses": _claim_8qam_collapses,
    "adaptive-above-fixed": _claim_adaptive_above_fixed,
    "perfect-above-nmse": _claim_perfect_above_nmse,
    "best-above-static": _claim_best_above_static,
    "arq-helps": lambda points, limits: _claim_arq_helps(points, limits, [c for c in ARQ_CURVES if (c, min(limits)) in points]),
    "loss-vs-throughput": _claim_loss_vs_throughput,
}


def check_claims(points: Points, limits: Sequence[int]) -> list[dict[str, str]]:
    """Each claim with PASS, FAIL or "not checked" (its curves were not run)."""
    available = {curve for curve, _ in points}
    verdicts = []
    for claim in CLAIMS:
        row = {"claim": claim.key, "statement": claim.statement, "criterion": claim.criterion}
        present = [c for c in claim.curves if c in available]
        missing = [] if claim.any_curve and present else [c for c in claim.curves if c not in available]
        if missing or len(limits) < 2:
            row.update(status="not checked", detail="needs " + (", ".join(missing) if missing else "two ARQ limits"))
        else:
            ok, detail = CLAIM_CHECKS[claim.key](points, limits)
            row.update(status="PASS" if ok else "FAIL", detail=detail)
        verdicts.append(row)
    return verdicts


# ---------------------------------------------------------------------------------------------
# Table II: measured goodput against theory (spec G, exact factors)
# ---------------------------------------------------------------------------------------------

TABLE2_KEYS = ("k", "theoretical_bps", "measured_bps", "header_bps", "truncation_bps", "compensated_bps", "ratio")
#: The study's own measured column (3) of Table II, bit/s, by bits per symbol k (tcptrace on the
#: receiver's capture), shown beside airlink's measured goodput.
STUDY_TABLE2_MEASURED = {1: 156416, 2: 312832, 3: 460992, 4: 625656, 5: 761672, 6: 921984, 7: 1094904, 8: 1251320}
#: A reported Table II row: airlink's arithmetic, then the study's measured column beside it.
TABLE2_REPORT_KEYS = (*TABLE2_KEYS, "study_measured_bps", "measured_over_study")


@dataclass(frozen=True)
class LinkGeometry:
    """What Table II's arithmetic needs from the resolved scenario."""

    bins_per_second: int
    symbols_per_frame: int
    mtu: int
    header_bytes: int  # TCP/IP headers per packet: 40, 52 with timestamps


# Transport defaults the resolved scenario leaves out (crates/airlink-sim/src/build.rs).
DEFAULT_MTU = 1500


def geometry_of(resolved_toml: str) -> LinkGeometry:
    doc = tomllib.loads(resolved_toml)
    ofdm = doc["downlink"]["ofdm4g"]
    tcp = doc["flow"][0].get("tcp", {})
    return LinkGeometry(
        bins_per_second=int(ofdm["bins_per_second"]),
        symbols_per_frame=int(ofdm["symbols_per_frame"]),
        mtu=int(tcp.get("mtu", DEFAULT_MTU)),
        header_bytes=52 if tcp.get("timestamps", False) else 40,
    )


def table2_row(k: int, measured_bps: float, g: LinkGeometry) -> dict[str, float]:
    """Theory, measured goodput and its compensation for one modulation of k bits per symbol.

    theoretical = bins/s · symbols/frame · k; header = measured · h/(mtu − h);
    truncation = (measured + header) · f_k with f_k = frames · S·k / (8·mtu) − 1 and
    frames = ⌈8·mtu / (S·k)⌉, the frames one IP packet occupies (its last one part empty).

    >>> g = LinkGeometry(1500, 108, 1500, 40)
    >>> row = table2_row(1, 156416, g)
    >>> round(row["header_bps"], 1), round(row["compensated_bps"], 1), round(row["ratio"], 5)
    (4285.4, 161987.0, 0.99992)
    """
    frame_bits = g.symbols_per_frame * k
    packet_bits = 8 * g.mtu
    frames = math.ceil(packet_bits / frame_bits)
    truncation_factor = frames * frame_bits / packet_bits - 1.0
    theoretical = float(g.bins_per_second * g.symbols_per_frame * k)
    header = measured_bps * g.header_bytes / (g.mtu - g.header_bytes)
    truncation = (measured_bps + header) * truncation_factor
    compensated = measured_bps + header + truncation
    return {
        "k": k,
        "theoretical_bps": theoretical,
        "measured_bps": measured_bps,
        "header_bps": header,
        "truncation_bps": truncation,
        "compensated_bps": compensated,
        "ratio": compensated / theoretical,
    }


def table2_experiment(scenarios: Path, extra: Sequence[str]) -> Experiment:
    """Table II's runs: every modulation of the validation scenario, once (seed 1)."""
    points = [((("modulation", m),), (f"{MODULATION_KEY}={m}", *extra)) for m in MODULATIONS]
    return build_experiment("wipemu-table2", f"airlink reproduce wipemu: Table II, {VALIDATION_SCENARIO} per modulation",
                            scenarios / VALIDATION_SCENARIO, points, (TABLE2_SEED,),
                            metrics=("flows.0.goodput_steady_bps",))


def table2(runs: Sequence[Run], exp: Experiment) -> list[dict[str, float]]:
    rows = []
    for k, (run, config) in enumerate(zip(runs, exp.configs), start=1):
        measured = run.summary["flows"][0]["goodput_steady_bps"]
        row = table2_row(k, math.nan if measured is None else float(measured), geometry_of(config.resolved))
        study = STUDY_TABLE2_MEASURED[k]
        rows.append({**row, "study_measured_bps": float(study), "measured_over_study": row["measured_bps"] / study})
    return rows


# ---------------------------------------------------------------------------------------------
# Figures 4-7: per-run metrics, then mean and 95 % CI per (curve, ARQ limit)
# ---------------------------------------------------------------------------------------------


def figures_experiment(scenarios: Path, curves: Sequence[str], limits: Sequence[int], seeds: int,
                       extra: Sequence[str]) -> Experiment:
    """The figures' runs: every curve at every ARQ limit, seeds 1..``seeds`` (common to all points)."""
    points = [((("curve", c), ("arq_limit", x)), (*CURVES[c].overrides, f"{ARQ_KEY}={x}", *extra))
              for c in curves for x in limits]
    return build_experiment("wipemu-figures", f"airlink reproduce wipemu: Figs. 4-7, {FIGURE_SCENARIO} per curve "
                            "and ARQ limit", scenarios / FIGURE_SCENARIO, points, range(1, seeds + 1),
                            metrics=("flows.0.goodput_bps", "flows.0.retransmission_pct"))


def _link(summary: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    return next(link for link in summary["links"] if link["name"] == name)


def run_metrics(summary: Mapping[str, Any]) -> dict[str, float]:
    """The numbers one run contributes to a figure point.

    Throughput is the transfer's mean goodput (``goodput_bps``); a run cut by the stop time
    counts its delivered bytes over the time it had, and is counted as incomplete.
    """
    flow = summary["flows"][0]
    if flow["completed"] and flow["goodput_bps"] is not None:
        throughput_bps = float(flow["goodput_bps"])
    else:
        active_s = summary["sim_time_s"] - flow["start_s"]
        throughput_bps = flow["bytes_delivered"] * 8 / active_s if active_s > 0 else 0.0
    down = _link(summary, "downlink")
    frames = down["frames_sent"]
    radio_s = sum(down["time_in_modulation_s"].values())
    metrics = {
        THROUGHPUT: throughput_bps / 1e3,
        RETRANSMISSIONS: float(flow["retransmission_pct"]),
        "incomplete": 0.0 if flow["completed"] else 1.0,
        "timeouts": float(flow["timeouts"]),
        "fast_recoveries": float(flow["fast_recoveries"]),
        "frame_error_share": down["frame_errors"] / frames if frames else math.nan,
        "arq_retransmissions_per_frame": down["arq_retransmissions"] / frames if frames else math.nan,
        "packets_given_up": float(down["packets_given_up"]),
        "queue_drops": float(down["queue_drops"]),
        "checksum_drops": float(down["checksum_drops"]),
    }
    for m in MODULATIONS:
        metrics[f"time_share_{m}"] = down["time_in_modulation_s"].get(m, 0.0) / radio_s if radio_s else math.nan
    return metrics


def figure_point(curve: str, limit: int, summaries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Mean and 95 % t-CI of throughput and retransmissions, and mean link counters."""
    per_run = [run_metrics(s) for s in summaries]
    point: dict[str, Any] = {"curve": curve, "label": CURVES[curve].label, "arq_limit": limit, "n": len(per_run)}
    for metric in (THROUGHPUT, RETRANSMISSIONS):
        e = estimate([m[metric] for m in per_run])
        point.update({f"{metric}_mean": e.mean, f"{metric}_ci95": e.ci95, f"{metric}_sd": e.sd})
    point["incomplete_runs"] = int(sum(m["incomplete"] for m in per_run))
    for key in per_run[0] if per_run else ():
        if key not in (THROUGHPUT, RETRANSMISSIONS, "incomplete"):
            point[f"{key}_mean"] = estimate([m[key] for m in per_run]).mean
    return point


def figure_points(exp: Experiment, records: Mapping[tuple[int, int], Mapping[str, Any]]
                  ) -> dict[tuple[str, int], dict[str, Any]]:
    reps = range(exp.repetitions.count)
    points = {}
    for c in exp.configs:
        curve, limit = dict(c.params)["curve"], dict(c.params)["arq_limit"]
        points[(curve, limit)] = figure_point(curve, limit, [records[c.index, r]["summary"] for r in reps])
    return points


def readings_experiment(scenarios: Path, limits: Sequence[int], seeds: int, extra: Sequence[str]) -> Experiment:
    """Every reading × the Fig. 4-5 curves × ARQ ``limits``, seeds 1..``seeds``."""
    points = [((("reading", r.key), ("curve", c), ("arq_limit", x)), (*r.overrides, *CURVES[c].overrides, f"{ARQ_KEY}={x}", *extra))
              for r in READINGS.values() for c in READING_CURVES for x in limits]
    return build_experiment("wipemu-readings", f"airlink reproduce wipemu: the study's open readings, {FIGURE_SCENARIO} "
                            "per reading, curve and ARQ limit", scenarios / FIGURE_SCENARIO, points, range(1, seeds + 1),
                            metrics=("flows.0.goodput_bps", "flows.0.retransmission_pct"))


def reading_points(exp: Experiment, records: Mapping[tuple[int, int], Mapping[str, Any]]
                   ) -> dict[str, dict[tuple[str, int], dict[str, Any]]]:
    """Per reading, its figure points (as ``figure_points``)."""
    reps = range(exp.repetitions.count)
    out: dict[str, dict[tuple[str, int], dict[str, Any]]] = {r: {} for r in READINGS}
    for c in exp.configs:
        params = dict(c.params)
        curve, limit = params["curve"], params["arq_limit"]
        out[params["reading"]][(curve, limit)] = figure_point(curve, limit, [records[c.index, r]["summary"] for r in reps])
    return out


# ---------------------------------------------------------------------------------------------
# The whole reproduction
# ---------------------------------------------------------------------------------------------


@dataclass
class Reproduction:
    """Everything a reproduction computed; ``to_json`` is what ``--json`` prints."""

    parts: tuple[str, ...]
    seeds: int
    arq_limits: tuple[int, ...]
    extra_overrides: tuple[str, ...]
    table2: list[dict[str, float]] | None
    table2_runs: list[Run]
    points: dict[tuple[str, int], dict[str, Any]]
    figures: tuple[str, ...]
    claims: list[dict[str, str]]
    #: Per reading: its points and the claims checked on them ("readings" part).
    readings: dict[str, dict[str, Any]]
    runs: list[Run]
    stores: dict[str, Path]  # each part's result store

    def figure_rows(self, figure: str) -> list[dict[str, Any]]:
        f = FIGURES[figure]
        return [{"figure": figure, **self.points[(c, x)]} for c in f.curves for x in self.arq_limits]

    def reading_findings(self) -> list[str]:
        """For each claim that a reading moves: its status as shipped and under each other reading."""
        rows = {r["reading"]: r for r in self.reading_rows()}
        if "text" not in rows:
            return []
        findings = []
        for claim in CLAIMS:
            shipped = rows["text"].get(claim.key)
            moved = [f"{r['text']}: {r[claim.key]}" for k, r in rows.items() if k != "text" and r.get(claim.key) != shipped]
            if moved and shipped in ("PASS", "FAIL"):
                findings.append(f"{claim.key} is {shipped} as shipped; " + "; ".join(moved) + ".")
        return findings

    def to_json(self, only: str | None = None) -> Any:
        """Everything computed, or the part ``only`` alone."""
        if only == "table2":
            return [{k: row[k] for k in TABLE2_REPORT_KEYS} for row in self.table2 or []]
        if only in FIGURES:
            return self.figure_rows(only)
        if only == "readings":
            return self.reading_rows()
        return {
            "table2": [{k: row[k] for k in TABLE2_REPORT_KEYS} for row in self.table2 or []],
            **{f: self.figure_rows(f) for f in self.figures},
            "claims": self.claims,
            "readings": self.reading_rows(),
        }

    def reading_rows(self) -> list[dict[str, Any]]:
        """One row per reading: each claim's status, and the numbers the disputed ones turn on."""
        rows = []
        for key, r in self.readings.items():
            pts, lo, hi = r["points"], min(r["limits"]), max(r["limits"])
            bpsk = [_mean(pts, "bpsk", x) for x in r["limits"]]
            row: dict[str, Any] = {"reading": key, "text": READINGS[key].text, "low_limit": lo, "high_limit": hi,
                                   "bpsk_spread_pct": 100 * (max(bpsk) - min(bpsk)) / max(bpsk)}
            for curve in READING_CURVES:
                row[f"{curve}_at_low_kbps"] = _mean(pts, curve, lo)
                row[f"{curve}_at_high_kbps"] = _mean(pts, curve, hi)
            row.update({c["claim"]: c["status"] for c in r["claims"]})
            rows.append(row)
        return rows

    def deviations(self) -> list[str]:
        """Where this reproduction's grid differs from the study's."""
        notes = []
        if self.seeds != SEEDS and self.figures:
            notes.append(f"{self.seeds} seeds per point instead of the study's {SEEDS}")
        if self.arq_limits != ARQ_LIMITS and self.figures:
            notes.append(f"ARQ limits {', '.join(map(str, self.arq_limits))} instead of {', '.join(map(str, ARQ_LIMITS))}")
        if self.extra_overrides:
            notes.append("extra overrides on every run: " + ", ".join(self.extra_overrides))
        return notes


def reproduce(
    *,
    seeds: int = SEEDS,
    parts: Sequence[str] = PARTS,
    jobs: int | None = None,
    progress: bool = False,
    arq_limits: Sequence[int] = ARQ_LIMITS,
    extra_overrides: Sequence[str] = (),
    scenarios: Path | None = None,
    out: Path | None = None,
) -> Reproduction:
    """Runs the study's grid (or its ``parts``) through the sweep machinery and computes Table II,
    the figures' points and the claims. The runs go to result stores under ``out/store`` (default:
    a temporary folder), where a later reproduction into the same ``out`` finds them."""
    if unknown := [p for p in parts if p not in PARTS]:
        raise ValueError(f"unknown part {unknown[0]!r}: expected one of {', '.join(PARTS)}")
    if seeds < 1:
        raise ValueError("expected at least one seed")
    if out is None:
        with tempfile.TemporaryDirectory() as tmp:
            return reproduce(seeds=seeds, parts=parts, jobs=jobs, progress=progress, arq_limits=arq_limits,
                             extra_overrides=extra_overrides, scenarios=scenarios, out=Path(tmp))
    scenarios = scenarios or scenario_dir()
    limits = tuple(sorted(set(arq_limits)))
    extra = tuple(extra_overrides)
    figures = tuple(f for f in FIGURES if f in parts)
    curves = list(dict.fromkeys(c for f in figures for c in FIGURES[f].curves))
    rep = Reproduction(parts=tuple(p for p in PARTS if p in parts), seeds=seeds, arq_limits=limits,
                       extra_overrides=extra, table2=None, table2_runs=[], points={}, figures=figures, claims=[],
                       readings={}, runs=[], stores={})
    if "table2" in parts:
        exp = table2_experiment(scenarios, extra)
        rep.stores["table2"] = store_of(out, "table2")
        rep.table2_runs = runs_of(exp, run_part(exp, rep.stores["table2"], jobs=jobs, progress=progress))
        rep.table2 = table2(rep.table2_runs, exp)
        rep.runs += rep.table2_runs
    if figures:
        exp = figures_experiment(scenarios, curves, limits, seeds, extra)
        rep.stores["figures"] = store_of(out, "figures")
        records = run_part(exp, rep.stores["figures"], jobs=jobs, progress=progress)
        rep.runs += runs_of(exp, records)
        rep.points = figure_points(exp, records)
        rep.claims = check_claims(rep.points, limits)
    if "readings" in parts:
        # The readings' limits, within a reduced grid's.
        reading_limits = tuple(x for x in READING_LIMITS if x in limits) or limits
        exp = readings_experiment(scenarios, reading_limits, min(seeds, READING_SEEDS), extra)
        rep.stores["readings"] = store_of(out, "readings")
        records = run_part(exp, rep.stores["readings"], jobs=jobs, progress=progress)
        rep.runs += runs_of(exp, records)
        rep.readings = {key: {"points": pts, "limits": reading_limits, "claims": check_claims(pts, reading_limits)}
                        for key, pts in reading_points(exp, records).items()}
    return rep
