"""The TCP-AFC study over a GEO satellite link (seed 004): Table 2 (throughput at each stage of
a 20 MB transfer, TCP-AFC against SACK TCP), Figs. 6 and 7 (sequence number and throughput
against time), and AFC against a competing TCP flow without bit errors (its Fig. 9 claim).

The study's nominal bit error rate 1e-5 would corrupt 11.3 % of 1500-byte packets, yet it
counted 90 (TCP) and 93 (AFC) losses in 20 MB, 0.65 % of packets: a bit error rate of about
5.4e-7. Table 2 is run at that effective rate and, for comparison, at the nominal one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from airlink import runner, stats
from airlink.scenarios import scenario_dir

NAME = "afc"
TITLE = "TCP-AFC over a 2 Mbit/s GEO satellite link (20 MB file, bit errors)"
PARTS = ("table2", "fig6", "fig7", "congestion")
SEEDS = 10

STAGES_MB = (0.5, 1, 2, 5, 10, 15, 20)
EFFECTIVE_BER = 5.4e-7
NOMINAL_BER = 1e-5
# The study's Table 2, bytes/s: (TCP, TCP-AFC) at each stage.
STUDY_TABLE2 = {
    0.5: (74341.79, 78112.54), 1: (94513.89, 109082.8), 2: (56827.51, 138250.0), 5: (49865.72, 147836.2),
    10: (37525.68, 99671.12), 15: (36900.66, 86212.58), 20: (36081.95, 81554.97),
}
PROTOCOLS = {"newreno": "SACK TCP", "afc": "TCP-AFC"}


def _scenario(name: str = "geo") -> str:
    return str(scenario_dir() / "afc" / f"{name}.toml")


# Runs one scenario with a seed and the study's overrides (the reproduction's --set after them).
Run = Callable[[str, int, Sequence[str]], Any]


def _ber(ber: float) -> list[str]:
    return [f"downlink.pipe.bit_error_rate={ber}", f"uplink.pipe.bit_error_rate={ber}"]


def stage_throughputs(delivered: Sequence[tuple[int, int]], end_s: float, total: int) -> dict[float, float]:
    """Bytes/s from the start to the first sample where delivery reached each stage; the
    last stage (the whole file) uses the run's end, which may fall between samples.

    >>> stage_throughputs([(1_000_000_000, 600_000), (2_000_000_000, 1_100_000)], 2.5, 2_000_000)[1]
    550000.0
    """
    out: dict[float, float] = {}
    for mb in STAGES_MB:
        goal = mb * 1e6
        if goal >= total:
            out[mb] = total / end_s
            continue
        hit = next(((t, d) for t, d in delivered if d >= goal), None)
        out[mb] = hit[1] / (hit[0] / 1e9) if hit else float("nan")
    return out


@dataclass
class Reproduction:
    seeds: int
    table2: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    traces: dict[str, list[dict[str, float]]] = field(default_factory=dict)
    congestion: list[dict[str, Any]] = field(default_factory=list)
    claims: list[dict[str, str]] = field(default_factory=list)

    def to_json(self) -> Any:
        return {"study": NAME, "seeds": self.seeds, "table2": self.table2, "congestion": self.congestion,
                "claims": self.claims}


def _table2(run: Run, seeds: int, ber: float, tick: Callable[[], None]) -> list[dict[str, Any]]:
    per: dict[str, dict[float, list[float]]] = {p: {mb: [] for mb in STAGES_MB} for p in PROTOCOLS}
    for proto in PROTOCOLS:
        for seed in range(1, seeds + 1):
            r = run(_scenario(), seed, [f"flow.0.congestion={proto}", *_ber(ber)])
            f = r.summary["flows"][0]
            flows = r.flows
            delivered = list(zip(flows["time_ns"].tolist(), flows["delivered_bytes"].tolist()))
            for mb, v in stage_throughputs(delivered, f["end_s"] or r.summary["sim_time_s"], f["bytes_delivered"]).items():
                per[proto][mb].append(v)
            tick()
    rows = []
    for mb in STAGES_MB:
        tcp, afc = stats.estimate(per["newreno"][mb]), stats.estimate(per["afc"][mb])
        paper_tcp, paper_afc = STUDY_TABLE2[mb]
        rows.append({
            "stage_mb": mb, "tcp_Bps": tcp.mean, "tcp_ci95": tcp.ci95, "afc_Bps": afc.mean, "afc_ci95": afc.ci95,
            "ratio": afc.mean / tcp.mean, "study_tcp_Bps": paper_tcp, "study_afc_Bps": paper_afc,
            "study_ratio": paper_afc / paper_tcp,
        })
    return rows


def _traces(run: Run, tick: Callable[[], None]) -> dict[str, list[dict[str, float]]]:
    """Delivered bytes (the sequence number) and 1-s throughput against time, seed 1."""
    out = {}
    for proto in PROTOCOLS:
        r = run(_scenario(), 1, [f"flow.0.congestion={proto}", *_ber(EFFECTIVE_BER)])
        rows, last = [], (0.0, 0)
        for t, d in zip(r.flows["time_ns"].tolist(), r.flows["delivered_bytes"].tolist()):
            t_s = t / 1e9
            row = {"time_s": t_s, "delivered_bytes": float(d)}
            if t_s - last[0] >= 1.0 - 1e-9:
                row["throughput_Bps"] = (d - last[1]) / (t_s - last[0])
                last = (t_s, d)
            rows.append(row)
        out[proto] = rows
        tick()
    return out


def _congestion(run: Run, seeds: int, tick: Callable[[], None]) -> list[dict[str, Any]]:
    """No bit errors, a competing SACK TCP 20 MB transfer: the flow under test as AFC or TCP."""
    rows = []
    for queue in (50, 100, 200):
        result: dict[str, list[float]] = {p: [] for p in PROTOCOLS}
        for proto in PROTOCOLS:
            for seed in range(1, seeds + 1):
                r = run(_scenario("geo-competing"), seed, [f"flow.0.congestion={proto}", f"downlink.pipe.queue={queue}"])
                result[proto].append(r.summary["flows"][0]["goodput_bps"])
                tick()
        tcp, afc = stats.estimate(result["newreno"]), stats.estimate(result["afc"])
        rows.append({"queue_packets": queue, "tcp_bps": tcp.mean, "afc_bps": afc.mean, "ratio": afc.mean / tcp.mean})
    return rows


def _claims(rep: Reproduction) -> list[dict[str, str]]:
    claims = []
    if "effective" in rep.table2:
        rows = rep.table2["effective"]
        final = rows[-1]["ratio"]
        ahead = [r["stage_mb"] for r in rows if r["ratio"] > 1.0]
        claims.append({
            "claim": "afc-ahead", "status": "PASS" if 1.5 <= final <= 3.5 and len(ahead) >= len(rows) - 1 else "FAIL",
            "detail": f"AFC/TCP at 20 MB {final:.2f} (study 2.26); AFC ahead at {', '.join(f'{m:g}' for m in ahead)} MB",
        })
    if rep.congestion:
        worst = max(abs(r["ratio"] - 1) for r in rep.congestion if r["queue_packets"] >= 100)
        detail = "; ".join(f"queue {r['queue_packets']}: AFC/TCP {r['ratio']:.2f}" for r in rep.congestion)
        claims.append({"claim": "afc-like-tcp-when-congested", "status": "PASS" if worst < 0.25 else "FAIL",
                       "detail": detail + " (buffers of one BDP or more judged; see the note on smaller ones)"})
    return claims


def reproduce(*, seeds: int = SEEDS, only: str | None = None, progress: bool = False, jobs: int | None = None,
              extra_overrides: Sequence[str] = ()) -> Reproduction:
    """Runs the study's parts (``only`` one of them), sequentially (a few dozen short runs;
    ``jobs`` is accepted for the CLI's sake), with ``extra_overrides`` applied to every run."""
    def run(scenario: str, seed: int, overrides: Sequence[str]) -> Any:
        return runner.run(scenario, seed=seed, overrides=[*overrides, *extra_overrides])

    from tqdm import tqdm

    parts = (only,) if only else PARTS
    total = (4 * seeds if "table2" in parts else 0) + (2 if {"fig6", "fig7"} & set(parts) else 0) \
        + (6 * seeds if "congestion" in parts else 0)
    bar = tqdm(total=total, disable=not progress, unit="run")
    rep = Reproduction(seeds=seeds)
    if "table2" in parts:
        rep.table2["effective"] = _table2(run, seeds, EFFECTIVE_BER, bar.update)
        rep.table2["nominal"] = _table2(run, seeds, NOMINAL_BER, bar.update)
    if {"fig6", "fig7"} & set(parts):
        rep.traces = _traces(run, bar.update)
    if "congestion" in parts:
        rep.congestion = _congestion(run, seeds, bar.update)
    bar.close()
    rep.claims = _claims(rep)
    return rep


def text(rep: Reproduction) -> str:
    """The tables as text for the terminal."""
    lines: list[str] = []
    for which, rows in rep.table2.items():
        ber = EFFECTIVE_BER if which == "effective" else NOMINAL_BER
        lines.append(f"Table 2 at BER {ber:g} ({which}), bytes/s, mean of {rep.seeds} seeds; study in brackets")
        for r in rows:
            lines.append(f"  {r['stage_mb']:>4g} MB  TCP {r['tcp_Bps']:>8,.0f} [{r['study_tcp_Bps']:>7,.0f}]  "
                         f"AFC {r['afc_Bps']:>8,.0f} [{r['study_afc_Bps']:>7,.0f}]  ratio {r['ratio']:.2f} [{r['study_ratio']:.2f}]")
    for r in rep.congestion:
        lines.append(f"congestion, queue {r['queue_packets']}: TCP {r['tcp_bps'] / 1e3:,.0f} kbit/s, AFC {r['afc_bps'] / 1e3:,.0f} kbit/s, "
                     f"ratio {r['ratio']:.2f}")
    lines += [f"{c['status']:<11} {c['claim']}: {c['detail']}" for c in rep.claims]
    return "\n".join(lines)


def write_report(rep: Reproduction, out: Any) -> None:
    """CSV and PNG per part, README.md, report.json; replaced whole once complete."""
    import csv
    import json

    from airlink.atomic import atomic_folder
    from airlink.plots import Series, errorbar_png

    def write_csv(path: Any, rows: Sequence[Mapping[str, Any]]) -> None:
        keys = list(dict.fromkeys(k for r in rows for k in r))
        with open(path, "w", newline="") as fh:
            w = csv.DictWriter(fh, keys)
            w.writeheader()
            w.writerows(rows)

    with atomic_folder(out, replace=True) as tmp:
        for which, rows in rep.table2.items():
            write_csv(tmp / f"table2_{which}.csv", rows)
            errorbar_png(tmp / f"table2_{which}.png", [
                Series("SACK TCP", [r["stage_mb"] for r in rows], [r["tcp_Bps"] / 1e3 for r in rows], [r["tcp_ci95"] / 1e3 for r in rows]),
                Series("TCP-AFC", [r["stage_mb"] for r in rows], [r["afc_Bps"] / 1e3 for r in rows], [r["afc_ci95"] / 1e3 for r in rows]),
                Series("study: SACK TCP", list(STUDY_TABLE2), [v[0] / 1e3 for v in STUDY_TABLE2.values()], [0.0] * 7),
                Series("study: TCP-AFC", list(STUDY_TABLE2), [v[1] / 1e3 for v in STUDY_TABLE2.values()], [0.0] * 7),
            ], title=f"Table 2: throughput at each stage of a 20 MB transfer ({which} BER)",
                x_label="data transferred (MB)", y_label="throughput (kB/s)")
        for proto, rows in rep.traces.items():
            write_csv(tmp / f"fig6_fig7_{proto}.csv", rows)
        if rep.traces:
            for fig, key, label, scale in (("fig6", "delivered_bytes", "sequence number (MB)", 1e6),
                                           ("fig7", "throughput_Bps", "throughput (kB/s)", 1e3)):
                series = []
                for proto, rows in rep.traces.items():
                    pts = [r for r in rows if key in r]
                    series.append(Series(PROTOCOLS[proto], [r["time_s"] for r in pts], [r[key] / scale for r in pts], [0.0] * len(pts)))
                errorbar_png(tmp / f"{fig}.png", series, title=f"{'Sequence number' if fig == 'fig6' else 'Throughput'} vs time, 20 MB, seed 1",
                             x_label="time (s)", y_label=label, markers=False)
        if rep.congestion:
            write_csv(tmp / "congestion.csv", rep.congestion)
        (tmp / "report.json").write_text(json.dumps(rep.to_json(), indent=2), encoding="utf-8")
        readme = [f"# {TITLE}", "", __doc__ or "", "```", text(rep), "```", ""]
        (tmp / "README.md").write_text("\n".join(readme), encoding="utf-8")
