"""The TCP-AFC study over a GEO satellite link (seed 004): TCP-AFC against SACK TCP on a
point-to-point link with bit errors (Figs. 3-8, Table 2), against a competing TCP transfer
(Figs. 9-10) and against UDP video and audio (Figs. 11-12).

The study's nominal bit error rate 1e-5, applied bit by bit, would corrupt 11.3 % of 1500-byte
packets, yet it counted 90 (TCP) and 93 (TCP-AFC) losses in 20 MB: 0.65 % of packets. The
reproduction reads its rates as *effective* ones (scenarios/afc/geo-effective.toml): what reached
IP was the nominal rate times 0.054, so 1e-5 is run as 5.4e-7 and 1e-6 as 5.4e-8. Table 2 is also
run under two other readings: the nominal rate in 36-bit bursts (geo-burst.toml, a
Gilbert-Elliott channel with the same packet loss) and the nominal rate bit by bit (geo.toml).
A 5 or 10 MB file is read from the first 5 or 10 MB of the 20 MB transfer of the same seed: the
sender does not know the file's size until its last segment, so the runs are the same until then.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from airlink import stats
from airlink.experiment import Experiment, build_experiment
from airlink.scenarios import scenario_dir
from airlink.store import load_series
from airlink.studies.reproduction import run_part, store_lines, store_of
from airlink.version import version

NAME = "afc"
TITLE = "TCP-AFC over a GEO satellite link (1 and 2 Mbit/s, bit errors, competing TCP and UDP)"
PARTS = ("p2p", "readings", "fig9", "fig10", "utilisation")
SEEDS = 10
QUICK_SEEDS = 2  # the quick form (the test suite's): a check of the machinery, not figures to quote

PROTOCOLS = {"newreno": "SACK TCP", "afc": "TCP-AFC"}
NOMINAL_BERS = (1e-6, 1e-5)
EFFECTIVE_SCALE = 0.054  # 1e-5 → 5.4e-7: 0.65 % of 1500-byte packets, the study's 90-93 losses in 20 MB
# Each reading of the study's nominal rates: its scenario and the factor on the nominal rate.
READINGS = {"effective": ("geo-effective", EFFECTIVE_SCALE), "burst": ("geo-burst", 1.0), "independent": ("geo", 1.0)}
READING_TEXT = {"effective": "effective: nominal × 0.054, independent bit errors",
                "burst": "nominal, in 36-bit bursts (Gilbert-Elliott)", "independent": "nominal, bit by bit"}
RATES_KBPS = (1024, 2048)  # the point-to-point and Fig. 10 data rates
FILES_MB = (5, 10, 20)
STAGES_MB = (0.5, 1, 2, 5, 10, 15, 20)
#: Table 2's early stages, where the study's single transfer had lost at most 6 segments: judged
#: against airlink's per-seed range (one transfer against ten), not against a ten-seed mean.
EARLY_STAGES_MB = (0.5, 1)
FIG9_RATES_KBPS = (512, 1024, 2048)
BUFFERS = (20, 50, 100, 200)  # the modem's buffer, packets (the study does not give it)
FIG10_BUFFER = 100
COMPETITOR_STEP_S = 0.2  # Figs. 9-10: the competing transfer's start, one step later per repetition
WIRED_DELAY = "10 ms"  # Fig. 10's wired reference: the same rate and buffer, no satellite, no errors
# Figs. 11 and 12: link rate (kbit/s) and video frames (bytes, 8 frames at 25 frames/s).
UTILISATION = {"fig11": (1024, 512, (7680, 1600, 1600, 1600, 3200, 1600, 1600, 1600)),
               "fig12": (2048, 128, (1920, 400, 400, 400, 800, 400, 400, 400))}

# The study's numbers.
STUDY_TABLE2 = {  # bytes/s (TCP, TCP-AFC) and losses (TCP, TCP-AFC) at each stage of 20 MB
    0.5: (74341.79, 78112.54, 2, 4), 1: (94513.89, 109082.8, 6, 5), 2: (56827.51, 138250.0, 11, 6),
    5: (49865.72, 147836.2, 18, 19), 10: (37525.68, 99671.12, 48, 40), 15: (36900.66, 86212.58, 66, 68),
    20: (36081.95, 81554.97, 90, 93),
}
STUDY_FIG6 = {"newreno": (554.0, 90), "afc": (245.0, 93)}  # 20 MB: seconds, losses
STUDY_UDP_KBPS = {"fig11": 83.0, "fig12": 29.0}  # kB/s of UDP the study observed
STUDY_DEGRADATION = {"newreno": 63.1, "afc": 25.2}  # per cent

Records = Mapping[tuple[int, int], Mapping[str, Any]]


def _scenario(name: str) -> Path:
    return scenario_dir() / "afc" / f"{name}.toml"


def _rate(kbps: int) -> tuple[str, ...]:
    return (f"downlink.pipe.rate={kbps} kbit/s", f"uplink.pipe.rate={kbps} kbit/s")


def _ber(ber: float) -> tuple[str, ...]:
    return (f"downlink.pipe.bit_error_rate={ber:.3g}", f"uplink.pipe.bit_error_rate={ber:.3g}")


def _proto(proto: str) -> str:
    return f"flow.0.congestion={proto}"


def stage_throughputs(delivered: Sequence[tuple[int, int]], end_s: float, total: int,
                      stages: Sequence[float] = STAGES_MB) -> dict[float, float]:
    """Bytes/s from the start to the first sample where delivery reached each stage; the
    last stage (the whole file) uses the run's end, which may fall between samples.

    >>> stage_throughputs([(1_000_000_000, 600_000), (2_000_000_000, 1_100_000)], 2.5, 2_000_000)[1]
    550000.0
    """
    out: dict[float, float] = {}
    for mb in stages:
        goal = mb * 1e6
        if goal >= total:
            out[mb] = total / end_s
            continue
        hit = next(((t, d) for t, d in delivered if d >= goal), None)
        out[mb] = hit[1] / (hit[0] / 1e9) if hit else float("nan")
    return out


def stage_counts(samples: Sequence[tuple[int, int, int]], stages: Sequence[float] = STAGES_MB) -> dict[float, int]:
    """A cumulative count (retransmissions) at the first sample where delivery reached each
    stage, from (time_ns, delivered_bytes, count) samples; the last sample's for stages beyond.

    >>> stage_counts([(1, 400_000, 1), (2, 1_000_000, 3), (3, 2_000_000, 7)], (0.5, 1, 5))
    {0.5: 3, 1: 3, 5: 7}
    """
    return {mb: next((n for _, d, n in samples if d >= mb * 1e6), samples[-1][2]) for mb in stages}


@dataclass
class Reproduction:
    seeds: int
    parts: tuple[str, ...] = PARTS
    quick: bool = False
    extra_overrides: tuple[str, ...] = ()
    p2p: list[dict[str, Any]] = field(default_factory=list)  # one row per run
    table2: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # reading → stages
    traces: dict[str, dict[str, Any]] = field(default_factory=dict)  # protocol → Figs. 6-8
    fig9: list[dict[str, Any]] = field(default_factory=list)
    fig10: list[dict[str, Any]] = field(default_factory=list)
    utilisation: list[dict[str, Any]] = field(default_factory=list)
    claims: list[dict[str, str]] = field(default_factory=list)
    stores: dict[str, Path] = field(default_factory=dict)  # each part's result store

    def to_json(self, only: str | None = None) -> Any:
        """Every part computed (``only`` is accepted for the CLI's sake: AFC's parts print together)."""
        return {"study": NAME, "seeds": self.seeds, "quick": self.quick, "p2p": self.p2p, "table2": self.table2,
                "fig9": self.fig9, "fig10": self.fig10, "utilisation": self.utilisation, "claims": self.claims,
                "traces": {p: {k: v for k, v in t.items() if not k.endswith("rows")} for p, t in self.traces.items()}}

    def bars(self, rate_kbps: int, ber: float, file_mb: float) -> dict[str, stats.Estimate]:
        """Figs. 4-5: each protocol's throughput (B/s) over the seeds for one file size."""
        return {p: stats.estimate([r["files_Bps"][file_mb] for r in self.p2p
                                   if (r["rate_kbps"], r["nominal_ber"], r["congestion"]) == (rate_kbps, ber, p)])
                for p in PROTOCOLS}


# ---------------------------------------------------------------------------------------------
# The experiments

def p2p_experiment(seeds: int, extra: Sequence[str]) -> Experiment:
    """Figs. 3-8 and Table 2: a 20 MB transfer per protocol, data rate and nominal BER (the
    effective reading), with the time series."""
    scale = READINGS["effective"][1]
    points = [((("rate_kbps", k), ("nominal_ber", b), ("congestion", p)), (_proto(p), *_rate(k), *_ber(b * scale), *extra))
              for k in RATES_KBPS for b in NOMINAL_BERS for p in PROTOCOLS]
    return build_experiment("afc-p2p", "airlink reproduce afc: point to point, geo-effective.toml per data rate, "
                            "nominal BER and protocol", _scenario("geo-effective"), points, range(1, seeds + 1),
                            metrics=("flows.0.goodput_bps",), series=True)


def readings_experiment(reading: str, seeds: int, extra: Sequence[str]) -> Experiment:
    """Table 2 under another reading of the bit error rate: 2 Mbit/s, nominal BER 1e-5."""
    name, scale = READINGS[reading]
    points = [((("congestion", p),), (_proto(p), *_ber(1e-5 * scale), *extra)) for p in PROTOCOLS]
    return build_experiment(f"afc-{reading}", f"airlink reproduce afc: Table 2, {name}.toml per protocol",
                            _scenario(name), points, range(1, seeds + 1), metrics=("flows.0.goodput_bps",), series=True)


def _offsets(seeds: int) -> list[tuple[tuple[str, float], str]]:
    """The repetitions of a competing-TCP point: the competitor starts 0, 0.2, 0.4, ... s after
    the flow under test (a clear-sky run has no random element, so seeds alone would repeat it)."""
    return [(("competitor_start_s", round(COMPETITOR_STEP_S * i, 3)), f"flow.1.start={COMPETITOR_STEP_S * i:.3f} s")
            for i in range(seeds)]


def fig9_experiment(seeds: int, extra: Sequence[str], buffers: Sequence[int] = BUFFERS,
                    rates: Sequence[int] = FIG9_RATES_KBPS) -> Experiment:
    """Fig. 9: clear sky, a competing SACK TCP 20 MB transfer; the flow under test as AFC or
    TCP, per data rate and modem buffer, repeated over the competitor's start."""
    points = [((("rate_kbps", k), ("buffer_packets", q), ("congestion", p), start),
               (_proto(p), *_rate(k), f"downlink.pipe.queue={q}", begin, *extra))
              for k in rates for q in buffers for p in PROTOCOLS for start, begin in _offsets(seeds)]
    return build_experiment("afc-fig9", "airlink reproduce afc: Fig. 9, geo-competing.toml per data rate, buffer, "
                            "protocol and competitor's start", _scenario("geo-competing"), points, (1,),
                            metrics=("flows.0.goodput_bps",), series=True)


def _fig10_conditions() -> list[tuple[str, int, float | None]]:
    """(label, rate, nominal BER or None for the wired reference)."""
    out = [(f"{k // 1024} Mbit/s, BER {b:g}", k, b) for k in RATES_KBPS for b in NOMINAL_BERS]
    return out + [(f"{k // 1024} Mbit/s, wired", k, None) for k in RATES_KBPS]


def fig10_experiment(seeds: int, extra: Sequence[str]) -> Experiment:
    """Fig. 10: a competing SACK TCP transfer with bit errors (effective reading), and a wired
    reference at the same rate and buffer (10 ms each way, no errors)."""
    points = []
    for label, k, b in _fig10_conditions():
        link = _ber(b * EFFECTIVE_SCALE) if b is not None else (f"downlink.pipe.delay={WIRED_DELAY}",
                                                                f"uplink.pipe.delay={WIRED_DELAY}")
        points += [((("condition", label), ("congestion", p), start),
                    (_proto(p), *_rate(k), f"downlink.pipe.queue={FIG10_BUFFER}", *link, begin, *extra))
                   for p in PROTOCOLS for start, begin in _offsets(seeds)]
    return build_experiment("afc-fig10", "airlink reproduce afc: Fig. 10, geo-competing.toml per condition, "
                            "protocol and competitor's start", _scenario("geo-competing"), points, (1,),
                            metrics=("flows.0.goodput_bps",), series=True)


def utilisation_experiment(seeds: int, extra: Sequence[str]) -> Experiment:
    """Figs. 11-12: bulk TCP or AFC against UDP video and audio, clear sky and the nominal BERs
    (effective reading)."""
    points = []
    for fig, (k, _video, frames) in UTILISATION.items():
        sizes = "[" + ", ".join(f'"{f} B"' for f in frames) + "]"
        for b in (0.0, *NOMINAL_BERS):
            points += [((("figure", fig), ("nominal_ber", b), ("congestion", p)),
                        (_proto(p), *_rate(k), f"flow.1.frame_sizes={sizes}", *_ber(b * EFFECTIVE_SCALE), *extra))
                       for p in PROTOCOLS]
    return build_experiment("afc-utilisation", "airlink reproduce afc: Figs. 11-12, geo-multimedia.toml per figure, "
                            "nominal BER and protocol", _scenario("geo-multimedia"), points, range(1, seeds + 1),
                            metrics=("flows.0.goodput_bps",))


# ---------------------------------------------------------------------------------------------
# From runs to figures

def _samples(store: Path, key: str) -> list[tuple[int, int, int]]:
    """(time_ns, delivered_bytes, retransmissions) of flow 0."""
    flows = load_series(store, key, "flows")
    flows = flows[flows["flow"] == 0]
    return list(zip(flows["time_ns"].tolist(), flows["delivered_bytes"].tolist(), flows["retransmissions"].tolist()))


def _each(exp: Experiment, records: Records) -> Any:
    """(parameters, seed, record) of every run."""
    for c in exp.configs:
        for r in range(exp.repetitions.count):
            yield dict(c.params), exp.run_seed(r), records[c.index, r]


def _transfer(store: Path, record: Mapping[str, Any]) -> dict[str, Any]:
    f, sim_time = record["summary"]["flows"][0], record["summary"]["sim_time_s"]
    samples = _samples(store, record["key"])
    end = f["end_s"] or sim_time
    delivered = [(t, d) for t, d, _ in samples]
    return {"time_s": end, "bytes": f["bytes_delivered"], "retransmissions": f["retransmissions"], "timeouts": f["timeouts"],
            "stages_Bps": stage_throughputs(delivered, end, f["bytes_delivered"]),
            "stage_losses": stage_counts([*samples, (0, f["bytes_delivered"], f["retransmissions"])]),
            "files_Bps": stage_throughputs(delivered, end, f["bytes_delivered"], FILES_MB)}


def _p2p_rows(exp: Experiment, store: Path, records: Records) -> list[dict[str, Any]]:
    return [{**params, "seed": seed, "key": record["key"], **_transfer(store, record)}
            for params, seed, record in _each(exp, records)]


def _table2(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Table 2 from the 20 MB transfers in ``rows`` (one reading, 2 Mbit/s, nominal 1e-5)."""
    out = []
    for mb in STAGES_MB:
        per_seed = {p: [r["stages_Bps"][mb] for r in rows if r["congestion"] == p] for p in PROTOCOLS}
        est = {p: stats.estimate(v) for p, v in per_seed.items()}
        losses = {p: stats.mean([r["stage_losses"][mb] for r in rows if r["congestion"] == p]) for p in PROTOCOLS}
        s_tcp, s_afc, l_tcp, l_afc = STUDY_TABLE2[mb]
        out.append({"stage_mb": mb, "tcp_Bps": est["newreno"].mean, "tcp_ci95": est["newreno"].ci95,
                    "afc_Bps": est["afc"].mean, "afc_ci95": est["afc"].ci95, "ratio": est["afc"].mean / est["newreno"].mean,
                    "tcp_losses": losses["newreno"], "afc_losses": losses["afc"], "study_tcp_Bps": s_tcp,
                    "study_afc_Bps": s_afc, "study_ratio": s_afc / s_tcp, "study_tcp_losses": l_tcp,
                    "study_afc_losses": l_afc, "tcp_min_Bps": min(per_seed["newreno"]), "tcp_max_Bps": max(per_seed["newreno"]),
                    "afc_min_Bps": min(per_seed["afc"]), "afc_max_Bps": max(per_seed["afc"])})
    return out


def _traces(store: Path, rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Figs. 6-8 at 2 Mbit/s and nominal 1e-5. Figs. 6-7 take, like the study, the run of each
    protocol whose losses come closest to the study's sample (90 and 93); Fig. 8 compares both
    protocols on seed 1, the same bit errors until their first loss."""
    out = {}
    for proto, (_, study_losses) in STUDY_FIG6.items():
        mine = [r for r in rows if r["congestion"] == proto]
        pick = min(mine, key=lambda r: (abs(r["retransmissions"] - study_losses), r["seed"]))
        first = next(r for r in mine if r["seed"] == min(x["seed"] for x in mine))
        out[proto] = {"seed": pick["seed"], "time_s": pick["time_s"], "retransmissions": pick["retransmissions"],
                      "Bps": pick["bytes"] / pick["time_s"],
                      "rows": _trace_rows([*_samples(store, pick["key"]),  # and the transfer's end, between samples
                                           (round(pick["time_s"] * 1e9), pick["bytes"], pick["retransmissions"])]),
                      "fig8_seed": first["seed"], "fig8_rows": _trace_rows(_samples(store, first["key"]), until=1e6)}
        out[proto]["first_loss_s"] = next((r["time_s"] for r in out[proto]["fig8_rows"] if r.get("loss")), math.nan)
    return out


def _trace_rows(samples: Sequence[tuple[int, int, int]], until: float = math.inf, window_s: float = 1.0) -> list[dict[str, Any]]:
    """Delivered bytes (the sequence number), throughput over ``window_s`` and the samples where
    the retransmissions grew (the study's R marks), up to the first sample past ``until`` bytes."""
    rows: list[dict[str, Any]] = []
    last, prev_retx = (0.0, 0), 0
    for t, d, n in samples:
        t_s = t / 1e9
        row: dict[str, Any] = {"time_s": t_s, "delivered_bytes": d, "retransmissions": n, "loss": n > prev_retx}
        if t_s - last[0] >= window_s - 1e-9:
            row["throughput_Bps"] = (d - last[1]) / (t_s - last[0])
            last = (t_s, d)
        rows.append(row)
        prev_retx = n
        if d >= until:
            break
    return rows


def share_while_both_ran(flows: Any) -> float:
    """Flow 0's share of the bytes both flows delivered until the first of them finished, from
    a run's ``flows`` time series (cumulative delivered bytes per flow).

    >>> import pandas as pd
    >>> share_while_both_ran(pd.DataFrame({"time_ns": [1, 1, 2, 2, 3, 3], "flow": [0, 1] * 3,
    ...                                    "delivered_bytes": [10, 5, 20, 10, 20, 30]}))
    0.6666666666666666
    """
    a, b = (flows[flows["flow"] == f].set_index("time_ns")["delivered_bytes"] for f in (0, 1))
    both = a.index.intersection(b.index)
    a, b = a.loc[both], b.loc[both]
    # The first sample at which either flow has all it will deliver.
    t = next(t for t in both if a[t] == a.iloc[-1] or b[t] == b.iloc[-1])
    return float(a[t] / (a[t] + b[t]))


def _pair_rows(exp: Experiment, store: Path, records: Records, keys: Sequence[str],
               rate_of: Callable[[dict[str, Any]], int]) -> list[dict[str, Any]]:
    """Per configuration (``keys`` without the protocol): both protocols' flow-0 and competing
    flow-1 goodput (B/s, means over the repetitions), flow 0's share of the link while both ran
    and the link's use."""
    groups: dict[tuple[Any, ...], dict[str, list[Mapping[str, Any]]]] = {}
    for params, _, record in _each(exp, records):
        groups.setdefault(tuple(params[k] for k in keys), {p: [] for p in PROTOCOLS})[params["congestion"]].append(
            {**params, "summary": record["summary"], "share": share_while_both_ran(load_series(store, record["key"], "flows"))})
    out = []
    for group, by_proto in groups.items():
        row: dict[str, Any] = dict(zip(keys, group))
        rate = rate_of(by_proto["afc"][0]) * 1000 / 8  # B/s
        for p, tag in (("newreno", "tcp"), ("afc", "afc")):
            flows = [r["summary"]["flows"] for r in by_proto[p]]
            row[f"{tag}_Bps"] = stats.mean([f[0]["goodput_bps"] / 8 for f in flows])
            row[f"{tag}_ci95"] = stats.estimate([f[0]["goodput_bps"] / 8 for f in flows]).ci95
            row[f"competitor_with_{tag}_Bps"] = stats.mean([f[1]["goodput_bps"] / 8 for f in flows])
            row[f"{tag}_share"] = stats.mean([r["share"] for r in by_proto[p]])
            row[f"{tag}_retransmissions"] = stats.mean([f[0]["retransmissions"] for f in flows])
            row[f"{tag}_timeouts"] = stats.mean([f[0]["timeouts"] for f in flows])
            # Losses per recovery episode: about 1 when overflows drop one segment of a window.
            row[f"{tag}_retx_per_recovery"] = (sum(f[0]["retransmissions"] for f in flows)
                                               / max(1, sum(f[0]["fast_recoveries"] for f in flows)))
            # Both 20 MB transfers over the time the later one took: the share of the link used.
            row[f"link_use_with_{tag}"] = stats.mean([(f[0]["bytes_delivered"] + f[1]["bytes_delivered"])
                                                      / max(f[0]["end_s"] or 0, f[1]["end_s"] or 0) / rate for f in flows])
        row["ratio"] = row["afc_Bps"] / row["tcp_Bps"]
        out.append(row)
    return out


def _fig9(exp: Experiment, store: Path, records: Records) -> list[dict[str, Any]]:
    rows = _pair_rows(exp, store, records, ("rate_kbps", "buffer_packets"), lambda r: r["rate_kbps"])
    for r in rows:  # the buffer against the path's bandwidth-delay product (1500-byte packets, 510 ms RTT)
        r["buffer_bdp"] = r["buffer_packets"] / (r["rate_kbps"] * 1000 * 0.51 / 8 / 1500)
    return rows


def _fig10(exp: Experiment, store: Path, records: Records) -> list[dict[str, Any]]:
    rates = {label: k for label, k, _ in _fig10_conditions()}
    rows = _pair_rows(exp, store, records, ("condition",), lambda r: rates[r["condition"]])
    for r in rows:
        _, r["rate_kbps"], r["nominal_ber"] = next(c for c in _fig10_conditions() if c[0] == r["condition"])
    return rows


def _utilisation(exp: Experiment, records: Records) -> list[dict[str, Any]]:
    """Each protocol's goodput as a share of its own clear-sky goodput (same UDP load), and the
    UDP streams' throughput on the wire (payload and IP/UDP headers)."""
    per: dict[tuple[str, float, str], list[Mapping[str, Any]]] = {}
    for params, _, record in _each(exp, records):
        per.setdefault((params["figure"], params["nominal_ber"], params["congestion"]), []).append(record["summary"])
    out = []
    for fig, (k, video, _) in UTILISATION.items():
        clear = {p: stats.mean([s["flows"][0]["goodput_bps"] / 8 for s in per[fig, 0.0, p]]) for p in PROTOCOLS}
        for b in (0.0, *NOMINAL_BERS):
            row: dict[str, Any] = {"figure": fig, "rate_kbps": k, "video_kbps": video, "nominal_ber": b}
            for p, tag in (("newreno", "tcp"), ("afc", "afc")):
                got = [s["flows"][0]["goodput_bps"] / 8 for s in per[fig, b, p]]
                row[f"{tag}_Bps"] = stats.mean(got)
                row[f"{tag}_pct"] = 100 * stats.mean(got) / clear[p]
                row[f"{tag}_of_tcp_clear_pct"] = 100 * stats.mean(got) / clear["newreno"]
            row["udp_wire_Bps"] = stats.mean([_udp_wire_Bps(s) for ps in PROTOCOLS for s in per[fig, b, ps]])
            out.append(row)
    return out


def _udp_wire_Bps(summary: Mapping[str, Any]) -> float:
    """The UDP flows' delivered bytes with their IP and UDP headers (28 B a datagram), per second."""
    total = 0.0
    for f in summary["flows"][1:]:
        total += (f["bytes_delivered"] + 28 * f["iperf"]["received"]) / f["duration_s"]
    return total


# ---------------------------------------------------------------------------------------------
# The claims

def _claims(rep: Reproduction) -> list[dict[str, str]]:
    claims: list[dict[str, str]] = []

    def claim(name: str, ok: bool, detail: str) -> None:
        claims.append({"claim": name, "status": "PASS" if ok else "FAIL", "detail": detail})

    if rep.p2p:
        b6 = rep.bars(2048, 1e-6, 20)
        hi = {b: (min(_vals(rep, 2048, b, "afc")) >= min(_vals(rep, 2048, b, "newreno"))
                  and max(_vals(rep, 2048, b, "afc")) >= max(_vals(rep, 2048, b, "newreno"))
                  and rep.bars(2048, b, 20)["afc"].mean > rep.bars(2048, b, 20)["newreno"].mean) for b in NOMINAL_BERS}
        claim("fig4-fig5-min-max-mean-higher", all(hi.values()),
              "20 MB at 2 Mbit/s, AFC's minimum, maximum and mean above TCP's: "
              + "; ".join(f"BER {b:g} {'yes' if ok else 'no'}" for b, ok in hi.items()))
        cv = {p: b6[p].sd / b6[p].mean for p in PROTOCOLS}
        claim("fig3-afc-steadier", cv["afc"] < cv["newreno"],
              f"coefficient of variation over the series at BER 1e-6, 2 Mbit/s: AFC {cv['afc']:.3f}, TCP {cv['newreno']:.3f}")
        gaps = {k: (rep.bars(k, 1e-6, 20)["afc"].mean / rep.bars(k, 1e-6, 20)["newreno"].mean,
                    rep.bars(k, 1e-5, 20)["afc"].mean / rep.bars(k, 1e-5, 20)["newreno"].mean) for k in RATES_KBPS}
        claim("fig5-gap-grows-with-ber", all(g5 > g6 for g6, g5 in gaps.values()),
              "AFC/TCP, 20 MB, at BER 1e-6 → 1e-5: " + "; ".join(f"{k // 1024} Mbit/s {g6:.2f} → {g5:.2f}"
                                                                  for k, (g6, g5) in gaps.items()))
    if "effective" in rep.table2:
        rows = rep.table2["effective"]
        final, first = rows[-1]["ratio"], rows[0]["ratio"]
        ahead = [r["stage_mb"] for r in rows if r["ratio"] > 1.0]
        claim("table2-afc-ahead", 1.5 <= final <= 3.5 and len(ahead) >= len(rows) - 1,
              f"AFC/TCP at 20 MB {final:.2f} (study 2.26); AFC ahead at {', '.join(f'{m:g}' for m in ahead)} MB")
        early = [r for r in rows if r["stage_mb"] in EARLY_STAGES_MB]
        inside = {(r["stage_mb"], p): r[f"{p}_min_Bps"] <= r[f"study_{p}_Bps"] <= r[f"{p}_max_Bps"]
                  for r in early for p in ("tcp", "afc")}
        claim("table2-early-stages-in-seed-range", all(inside.values()),
              f"the study's single transfer against airlink's {rep.seeds} seeds, bytes/s: "
              + "; ".join(f"{r['stage_mb']:g} MB TCP {r['study_tcp_Bps']:,.0f} in [{r['tcp_min_Bps']:,.0f}, {r['tcp_max_Bps']:,.0f}] "
                          f"{'yes' if inside[r['stage_mb'], 'tcp'] else 'no'}, AFC {r['study_afc_Bps']:,.0f} in "
                          f"[{r['afc_min_Bps']:,.0f}, {r['afc_max_Bps']:,.0f}] {'yes' if inside[r['stage_mb'], 'afc'] else 'no'}"
                          for r in early) + f" (AFC/TCP at 0.5 MB: {first:.2f}, study 1.05)")
    if rep.traces:
        t, a = rep.traces["newreno"], rep.traces["afc"]
        claim("fig6-afc-finishes-sooner", t["time_s"] / a["time_s"] >= 1.5,
              f"20 MB in {a['time_s']:.0f} s (AFC, {a['retransmissions']} losses) against {t['time_s']:.0f} s (TCP, "
              f"{t['retransmissions']} losses); study 245 s and 554 s (93 and 90 losses)")
        same = _same_until_first_loss(t["fig8_rows"], a["fig8_rows"])
        claim("fig8-alike-until-the-first-loss", same,
              f"seed {a['fig8_seed']}: delivery identical until the first loss at {min(t['first_loss_s'], a['first_loss_s']):.1f} s "
              f"(study: about 4 s); first loss TCP {t['first_loss_s']:.1f} s, AFC {a['first_loss_s']:.1f} s" if same else
              "delivery differs before the first loss")
    if rep.fig9:
        big = [r for r in rep.fig9 if r["buffer_bdp"] >= 1.0]
        worst = max(big, key=lambda r: abs(r["ratio"] - 1))
        claim("fig9-like-tcp-without-errors", abs(worst["ratio"] - 1) < 0.25,
              f"clear sky, buffer of one bandwidth-delay product or more: AFC/TCP {min(r['ratio'] for r in big):.2f} to "
              f"{max(r['ratio'] for r in big):.2f} (worst at {worst['rate_kbps']} kbit/s, {worst['buffer_packets']} packets); "
              "smaller buffers are reported apart")
    if rep.fig10:
        by = {r["condition"]: r for r in rep.fig10}
        grows = {k: (by[f"{k // 1024} Mbit/s, BER 1e-06"]["ratio"], by[f"{k // 1024} Mbit/s, BER 1e-05"]["ratio"]) for k in RATES_KBPS}
        claim("fig10-gain-grows-with-ber", all(g5 > g6 for g6, g5 in grows.values()),
              "AFC/TCP against a competing TCP, BER 1e-6 → 1e-5: " + "; ".join(f"{k // 1024} Mbit/s {g6:.2f} → {g5:.2f}"
                                                                             for k, (g6, g5) in grows.items()))
        near = {k: by[f"{k // 1024} Mbit/s, BER 1e-06"]["afc_Bps"] / by[f"{k // 1024} Mbit/s, wired"]["tcp_Bps"] for k in RATES_KBPS}
        claim("fig10-afc-near-wired-at-1e-6", all(v >= 0.85 for v in near.values()),
              "AFC at BER 1e-6 over TCP on the wired reference: " + "; ".join(f"{k // 1024} Mbit/s {v:.2f}" for k, v in near.items())
              + " (judged: at least 0.85)")
    if rep.utilisation:
        at5 = {r["figure"]: r for r in rep.utilisation if r["nominal_ber"] == 1e-5}
        claim("fig11-fig12-afc-uses-more", all(r["afc_pct"] > r["tcp_pct"] for r in at5.values()),
              "share of clear-sky goodput at BER 1e-5: " + "; ".join(f"{f} TCP {r['tcp_pct']:.1f} %, AFC {r['afc_pct']:.1f} %"
                                                                    for f, r in at5.items()))
        deg = {p: stats.mean([100 - r[f"{t}_pct"] for r in at5.values()]) for p, t in (("newreno", "tcp"), ("afc", "afc"))}
        each = "; ".join(f"{f} TCP {100 - r['tcp_pct']:.1f} %, AFC {100 - r['afc_pct']:.1f} %" for f, r in at5.items())
        claim("headline-degradation", deg["newreno"] >= 2 * deg["afc"] and deg["newreno"] >= 30,
              f"read as the mean over Figs. 11 and 12 of the BER-1e-5 loss against each protocol's own clear sky: TCP "
              f"degrades {deg['newreno']:.1f} % (study 63.1 %), AFC {deg['afc']:.1f} % (study 25.2 %); judged: TCP's at "
              f"least twice AFC's and at least 30 %. Per figure: {each}")
        udp = {r["figure"]: r["udp_wire_Bps"] / 1e3 for r in rep.utilisation if r["nominal_ber"] == 0.0}
        claim("udp-throughput", all(abs(udp[f] / STUDY_UDP_KBPS[f] - 1) < 0.15 for f in udp),
              "UDP video and audio on the wire, clear sky: " + "; ".join(f"{f} {v:.1f} kB/s (study {STUDY_UDP_KBPS[f]:g})"
                                                                          for f, v in udp.items()) + " (judged: within 15 %)")
    return claims


def _vals(rep: Reproduction, rate: int, ber: float, proto: str) -> list[float]:
    return [r["files_Bps"][20] for r in rep.p2p if (r["rate_kbps"], r["nominal_ber"], r["congestion"]) == (rate, ber, proto)]


def _same_until_first_loss(a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]]) -> bool:
    """Both protocols' deliveries agree at every sample before either's first loss."""
    for x, y in zip(a, b):
        if x["loss"] or y["loss"]:
            return True
        if x["delivered_bytes"] != y["delivered_bytes"]:
            return False
    return True


# ---------------------------------------------------------------------------------------------

def reproduce(*, seeds: int = SEEDS, parts: Sequence[str] = PARTS, progress: bool = False, jobs: int | None = None,
              extra_overrides: Sequence[str] = (), out: Path | None = None, quick: bool = False) -> Reproduction:
    """Runs the study's ``parts`` through the sweep machinery, with ``extra_overrides`` applied to
    every run. The runs go to result stores under ``out/store`` (default: a temporary folder),
    where a later reproduction into the same ``out`` finds them. ``quick``: Fig. 9 at 2 Mbit/s
    with buffers of 20 and 100 packets only (the test suite's form)."""
    if unknown := [p for p in parts if p not in PARTS]:
        raise ValueError(f"unknown part {unknown[0]!r}: expected one of {', '.join(PARTS)}")
    if out is None:
        with tempfile.TemporaryDirectory() as tmp:
            return reproduce(seeds=seeds, parts=parts, progress=progress, jobs=jobs, extra_overrides=extra_overrides,
                             out=Path(tmp), quick=quick)
    extra = tuple(extra_overrides)
    rep = Reproduction(seeds=seeds, quick=quick, parts=tuple(p for p in PARTS if p in parts), extra_overrides=extra)
    run = {"jobs": jobs, "progress": progress}
    if "p2p" in parts:
        exp, store = p2p_experiment(seeds, extra), store_of(out, "p2p")
        rep.stores["p2p"] = store
        rep.p2p = _p2p_rows(exp, store, run_part(exp, store, **run))
        main = [r for r in rep.p2p if r["rate_kbps"] == 2048 and r["nominal_ber"] == 1e-5]
        rep.table2["effective"] = _table2(main)
        rep.traces = _traces(store, main)
        for r in rep.p2p:
            del r["key"]
    if "readings" in parts:
        for reading in ("burst", "independent"):
            exp, store = readings_experiment(reading, seeds, extra), store_of(out, f"readings-{reading}")
            rep.stores[f"readings-{reading}"] = store
            rep.table2[reading] = _table2(_p2p_rows(exp, store, run_part(exp, store, **run)))
    if "fig9" in parts:
        exp = fig9_experiment(seeds, extra, *(((20, 100), (2048,)) if quick else ()))
        rep.stores["fig9"] = store_of(out, "fig9")
        rep.fig9 = _fig9(exp, rep.stores["fig9"], run_part(exp, rep.stores["fig9"], **run))
    if "fig10" in parts:
        exp, rep.stores["fig10"] = fig10_experiment(seeds, extra), store_of(out, "fig10")
        rep.fig10 = _fig10(exp, rep.stores["fig10"], run_part(exp, rep.stores["fig10"], **run))
    if "utilisation" in parts:
        exp, rep.stores["utilisation"] = utilisation_experiment(seeds, extra), store_of(out, "utilisation")
        rep.utilisation = _utilisation(exp, run_part(exp, rep.stores["utilisation"], **run))
    rep.claims = _claims(rep)
    return rep


def text(rep: Reproduction) -> str:
    """The main tables as text for the terminal."""
    lines: list[str] = []
    for k in RATES_KBPS if rep.p2p else ():
        for b in NOMINAL_BERS:
            for mb in FILES_MB:
                e = rep.bars(k, b, mb)
                lines.append(f"p2p {k // 1024} Mbit/s, BER {b:g}, {mb:>2} MB: " + ", ".join(
                    f"{PROTOCOLS[p]} {e[p].mean / 1e3:.1f} kB/s" for p in PROTOCOLS))
    for which, rows in rep.table2.items():
        lines.append(f"Table 2, {READING_TEXT[which]}: bytes/s, mean of {rep.seeds} seeds; study in brackets")
        for r in rows:
            lines.append(f"  {r['stage_mb']:>4g} MB  TCP {r['tcp_Bps']:>8,.0f} [{r['study_tcp_Bps']:>7,.0f}]  "
                         f"AFC {r['afc_Bps']:>8,.0f} [{r['study_afc_Bps']:>7,.0f}]  ratio {r['ratio']:.2f} [{r['study_ratio']:.2f}]")
    for r in rep.fig9:
        lines.append(f"Fig. 9 {r['rate_kbps']} kbit/s, buffer {r['buffer_packets']}: TCP {r['tcp_Bps'] / 1e3:.1f} kB/s, "
                     f"AFC {r['afc_Bps'] / 1e3:.1f} kB/s, ratio {r['ratio']:.2f}")
    for r in rep.fig10:
        lines.append(f"Fig. 10 {r['condition']}: TCP {r['tcp_Bps'] / 1e3:.1f} kB/s, AFC {r['afc_Bps'] / 1e3:.1f} kB/s")
    for r in rep.utilisation:
        lines.append(f"{r['figure']} BER {r['nominal_ber']:g}: TCP {r['tcp_pct']:.1f} %, AFC {r['afc_pct']:.1f} %, "
                     f"UDP {r['udp_wire_Bps'] / 1e3:.1f} kB/s")
    lines += [f"{c['status']:<5} {c['claim']}: {c['detail']}" for c in rep.claims]
    return "\n".join(lines)


def setup_lines(rep: Reproduction) -> list[str]:
    lines = [f"airlink {version()}; scenarios afc/geo-effective.toml (point to point), geo-burst.toml and geo.toml "
             f"(Table 2's other readings), geo-competing.toml (Figs. 9-10), geo-multimedia.toml (Figs. 11-12); seeds 1 "
             f"to {rep.seeds} per point, means with 95 % Student-t intervals; Figs. 9-10 instead repeat each point "
             f"{rep.seeds} times on seed 1 with the competitor starting {COMPETITOR_STEP_S:g} s later each time (a "
             "clear-sky run has no random element)."]
    if rep.seeds != SEEDS:
        lines.append(f"Deviation from the study's reproduction: {rep.seeds} seeds per point instead of {SEEDS}.")
    if rep.quick:
        lines.append("Deviation: quick form, Fig. 9 at 2 Mbit/s with buffers of 20 and 100 packets only "
                     "(a check, not figures to quote).")
    if rep.extra_overrides:
        lines.append("Deviation: extra overrides on every run: " + ", ".join(rep.extra_overrides) + ".")
    return lines + store_lines(rep.stores)


def write_report(rep: Reproduction, out: Path) -> None:
    from airlink.studies import afc_report  # matplotlib loads only when a report is written

    afc_report.write_report(rep, out)
