"""The TCP-AFC study over a GEO satellite link (seed 004): Table 2 (throughput at each stage of
a 20 MB transfer, TCP-AFC against SACK TCP), Figs. 6 and 7 (sequence number and throughput
against time), and AFC against a competing TCP flow without bit errors (its Fig. 9 claim).

The study's nominal bit error rate 1e-5 would corrupt 11.3 % of 1500-byte packets, yet it
counted 90 (TCP) and 93 (AFC) losses in 20 MB, 0.65 % of packets: a bit error rate of about
5.4e-7. Table 2 is run at that effective rate and, for comparison, at the nominal one.
"""

from __future__ import annotations

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

NAME = "afc"
TITLE = "TCP-AFC over a 2 Mbit/s GEO satellite link (20 MB file, bit errors)"
PARTS = ("table2", "fig6", "fig7", "congestion")
SEEDS = 10

STAGES_MB = (0.5, 1, 2, 5, 10, 15, 20)
EFFECTIVE_BER = 5.4e-7
NOMINAL_BER = 1e-5
BERS = {"effective": EFFECTIVE_BER, "nominal": NOMINAL_BER}
# The study's Table 2, bytes/s: (TCP, TCP-AFC) at each stage.
STUDY_TABLE2 = {
    0.5: (74341.79, 78112.54), 1: (94513.89, 109082.8), 2: (56827.51, 138250.0), 5: (49865.72, 147836.2),
    10: (37525.68, 99671.12), 15: (36900.66, 86212.58), 20: (36081.95, 81554.97),
}
PROTOCOLS = {"newreno": "SACK TCP", "afc": "TCP-AFC"}


def _scenario(name: str = "geo") -> Path:
    return scenario_dir() / "afc" / f"{name}.toml"


QUEUES = (50, 100, 200)  # downlink queue (packets) of the congestion part
Records = Mapping[tuple[int, int], Mapping[str, Any]]


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
    parts: tuple[str, ...] = PARTS
    extra_overrides: tuple[str, ...] = ()
    table2: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    traces: dict[str, list[dict[str, float]]] = field(default_factory=dict)
    congestion: list[dict[str, Any]] = field(default_factory=list)
    claims: list[dict[str, str]] = field(default_factory=list)
    stores: dict[str, Path] = field(default_factory=dict)  # each part's result store

    def to_json(self, only: str | None = None) -> Any:
        """Every part computed (``only`` is accepted for the CLI's sake: AFC's parts print together)."""
        return {"study": NAME, "seeds": self.seeds, "table2": self.table2, "congestion": self.congestion,
                "claims": self.claims}


def table2_experiment(seeds: int, extra: Sequence[str]) -> Experiment:
    """Table 2's runs: both protocols at both bit error rates, seeds 1..``seeds``, with the time
    series (a stage's throughput is read from the delivery curve)."""
    points = [((("bit_error_rate", ber), ("congestion", proto)), (f"flow.0.congestion={proto}", *_ber(ber), *extra))
              for ber in BERS.values() for proto in PROTOCOLS]
    return build_experiment("afc-table2", "airlink reproduce afc: Table 2, geo.toml per bit error rate and protocol",
                            _scenario(), points, range(1, seeds + 1), metrics=("flows.0.goodput_bps",), series=True)


def traces_experiment(extra: Sequence[str]) -> Experiment:
    """Figs. 6 and 7: one run (seed 1) per protocol at the effective bit error rate, with its time series."""
    points = [((("congestion", proto),), (f"flow.0.congestion={proto}", *_ber(EFFECTIVE_BER), *extra)) for proto in PROTOCOLS]
    return build_experiment("afc-traces", "airlink reproduce afc: Figs. 6-7, geo.toml per protocol, seed 1",
                            _scenario(), points, (1,), metrics=("flows.0.goodput_bps",), series=True)


def congestion_experiment(seeds: int, extra: Sequence[str]) -> Experiment:
    """No bit errors, a competing SACK TCP 20 MB transfer: the flow under test as AFC or TCP."""
    points = [((("queue_packets", q), ("congestion", proto)), (f"flow.0.congestion={proto}", f"downlink.pipe.queue={q}", *extra))
              for q in QUEUES for proto in PROTOCOLS]
    return build_experiment("afc-congestion", "airlink reproduce afc: competing flows, geo-competing.toml per queue "
                            "and protocol", _scenario("geo-competing"), points, range(1, seeds + 1),
                            metrics=("flows.0.goodput_bps",))


def _delivered(store: Path, key: str) -> list[tuple[int, int]]:
    flows = load_series(store, key, "flows")
    return list(zip(flows["time_ns"].tolist(), flows["delivered_bytes"].tolist()))


def _table2(exp: Experiment, store: Path, records: Records, seeds: int) -> dict[str, list[dict[str, Any]]]:
    out = {}
    for which, ber in BERS.items():
        per: dict[str, dict[float, list[float]]] = {p: {mb: [] for mb in STAGES_MB} for p in PROTOCOLS}
        for c in exp.configs:
            params = dict(c.params)
            if params["bit_error_rate"] != ber:
                continue
            for r in range(seeds):
                record = records[c.index, r]
                f, sim_time = record["summary"]["flows"][0], record["summary"]["sim_time_s"]
                stages = stage_throughputs(_delivered(store, record["key"]), f["end_s"] or sim_time, f["bytes_delivered"])
                for mb, v in stages.items():
                    per[params["congestion"]][mb].append(v)
        rows = []
        for mb in STAGES_MB:
            tcp, afc = stats.estimate(per["newreno"][mb]), stats.estimate(per["afc"][mb])
            paper_tcp, paper_afc = STUDY_TABLE2[mb]
            rows.append({
                "stage_mb": mb, "tcp_Bps": tcp.mean, "tcp_ci95": tcp.ci95, "afc_Bps": afc.mean, "afc_ci95": afc.ci95,
                "ratio": afc.mean / tcp.mean, "study_tcp_Bps": paper_tcp, "study_afc_Bps": paper_afc,
                "study_ratio": paper_afc / paper_tcp,
            })
        out[which] = rows
    return out


def _traces(exp: Experiment, store: Path, records: Records) -> dict[str, list[dict[str, float]]]:
    """Delivered bytes (the sequence number) and 1-s throughput against time, seed 1."""
    out = {}
    for c in exp.configs:
        rows, last = [], (0.0, 0)
        for t, d in _delivered(store, records[c.index, 0]["key"]):
            t_s = t / 1e9
            row = {"time_s": t_s, "delivered_bytes": float(d)}
            if t_s - last[0] >= 1.0 - 1e-9:
                row["throughput_Bps"] = (d - last[1]) / (t_s - last[0])
                last = (t_s, d)
            rows.append(row)
        out[dict(c.params)["congestion"]] = rows
    return out


def _congestion(exp: Experiment, records: Records, seeds: int) -> list[dict[str, Any]]:
    rows = []
    for queue in QUEUES:
        result: dict[str, list[float]] = {p: [] for p in PROTOCOLS}
        for c in exp.configs:
            params = dict(c.params)
            if params["queue_packets"] == queue:
                result[params["congestion"]] += [records[c.index, r]["summary"]["flows"][0]["goodput_bps"] for r in range(seeds)]
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


def reproduce(*, seeds: int = SEEDS, parts: Sequence[str] = PARTS, progress: bool = False, jobs: int | None = None,
              extra_overrides: Sequence[str] = (), out: Path | None = None) -> Reproduction:
    """Runs the study's ``parts`` through the sweep machinery, with ``extra_overrides`` applied to
    every run. The runs go to result stores under ``out/store`` (default: a temporary folder),
    where a later reproduction into the same ``out`` finds them."""
    if unknown := [p for p in parts if p not in PARTS]:
        raise ValueError(f"unknown part {unknown[0]!r}: expected one of {', '.join(PARTS)}")
    if out is None:
        with tempfile.TemporaryDirectory() as tmp:
            return reproduce(seeds=seeds, parts=parts, progress=progress, jobs=jobs, extra_overrides=extra_overrides,
                             out=Path(tmp))
    extra = tuple(extra_overrides)
    rep = Reproduction(seeds=seeds, parts=tuple(p for p in PARTS if p in parts), extra_overrides=extra)
    run = {"jobs": jobs, "progress": progress}
    if "table2" in parts:
        exp, rep.stores["table2"] = table2_experiment(seeds, extra), store_of(out, "table2")
        rep.table2 = _table2(exp, rep.stores["table2"], run_part(exp, rep.stores["table2"], **run), seeds)
    if {"fig6", "fig7"} & set(parts):
        exp, rep.stores["traces"] = traces_experiment(extra), store_of(out, "traces")
        rep.traces = _traces(exp, rep.stores["traces"], run_part(exp, rep.stores["traces"], **run))
    if "congestion" in parts:
        exp, rep.stores["congestion"] = congestion_experiment(seeds, extra), store_of(out, "congestion")
        rep.congestion = _congestion(exp, run_part(exp, rep.stores["congestion"], **run), seeds)
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


def _setup_lines(rep: Reproduction) -> list[str]:
    lines = [f"airlink {version()}; scenarios afc/geo.toml (Table 2, Figs. 6-7) and afc/geo-competing.toml "
             f"(congestion); seeds 1 to {rep.seeds} per point, means with 95 % Student-t intervals."]
    if rep.seeds != SEEDS:
        lines.append(f"Deviation from the study's reproduction: {rep.seeds} seeds per point instead of {SEEDS}.")
    if rep.extra_overrides:
        lines.append("Deviation: extra overrides on every run: " + ", ".join(rep.extra_overrides) + ".")
    return lines + store_lines(rep.stores)


def _table2_cells(rows: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[list[str]]]:
    header = ["stage (MB)", "SACK TCP (B/s)", "TCP-AFC (B/s)", "AFC/TCP", "study: TCP (B/s)", "study: AFC (B/s)",
              "study: AFC/TCP"]
    return header, [[f"{r['stage_mb']:g}", f"{r['tcp_Bps']:,.0f} ± {r['tcp_ci95']:,.0f}",
                     f"{r['afc_Bps']:,.0f} ± {r['afc_ci95']:,.0f}", f"{r['ratio']:.2f}", f"{r['study_tcp_Bps']:,.0f}",
                     f"{r['study_afc_Bps']:,.0f}", f"{r['study_ratio']:.2f}"] for r in rows]


def render_html(rep: Reproduction) -> str:
    """index.html: the same page as the other reproductions' (airlink.report.page)."""
    import html

    from airlink.report import page
    from airlink.tables import html_table

    esc = html.escape
    body = [f"<h1>Reproduction of TCP-AFC: {esc(TITLE)}</h1>", "<ul>"]
    body += [f"<li>{esc(line)}</li>" for line in _setup_lines(rep)]
    body += ["</ul>", f"<p>{esc(' '.join((__doc__ or '').split()))}</p>"]
    for which, rows in rep.table2.items():
        header, cells = _table2_cells(rows)
        body += [f"<h2>Table 2: throughput at each stage of a 20 MB transfer, BER {BERS[which]:g} ({which})</h2>",
                 html_table(header, cells, "num"), f'<img src="table2_{which}.png" alt="Table 2, {which} BER">',
                 f'<p>Data: <a href="table2_{which}.csv">table2_{which}.csv</a></p>']
    if rep.traces:
        body += ["<h2>Figs. 6 and 7: sequence number and throughput against time (seed 1)</h2>",
                 '<img src="fig6.png" alt="Fig. 6: sequence number against time">',
                 '<img src="fig7.png" alt="Fig. 7: throughput against time">',
                 "<p>Data: " + ", ".join(f'<a href="fig6_fig7_{p}.csv">fig6_fig7_{p}.csv</a>' for p in rep.traces) + "</p>"]
    if rep.congestion:
        body += ["<h2>Against a competing SACK TCP flow, no bit errors</h2>",
                 html_table(["queue (packets)", "SACK TCP (kbit/s)", "TCP-AFC (kbit/s)", "AFC/TCP"],
                            [[str(r["queue_packets"]), f"{r['tcp_bps'] / 1e3:,.0f}", f"{r['afc_bps'] / 1e3:,.0f}",
                              f"{r['ratio']:.2f}"] for r in rep.congestion], "num"),
                 '<p>Data: <a href="congestion.csv">congestion.csv</a></p>']
    if rep.claims:
        body += ["<h2>The study's claims, checked on these data</h2>",
                 html_table(["result", "claim", "data"], [[c["status"], c["claim"], c["detail"]] for c in rep.claims])]
    body.append('<p>Also: <a href="README.md">README.md</a>; machine-readable: <a href="report.json">report.json</a>.</p>')
    return page("airlink: TCP-AFC reproduction", body)


def write_report(rep: Reproduction, out: Path) -> None:
    """CSV and PNG per part, index.html, README.md and report.json, into the folder ``out``."""
    import csv
    import json

    from airlink.plots import Series, errorbar_png

    def write_csv(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
        keys = list(dict.fromkeys(k for r in rows for k in r))
        with open(path, "w", newline="") as fh:
            w = csv.DictWriter(fh, keys)
            w.writeheader()
            w.writerows(rows)

    for which, rows in rep.table2.items():
        write_csv(out / f"table2_{which}.csv", rows)
        errorbar_png(out / f"table2_{which}.png", [
            Series("SACK TCP", [r["stage_mb"] for r in rows], [r["tcp_Bps"] / 1e3 for r in rows], [r["tcp_ci95"] / 1e3 for r in rows]),
            Series("TCP-AFC", [r["stage_mb"] for r in rows], [r["afc_Bps"] / 1e3 for r in rows], [r["afc_ci95"] / 1e3 for r in rows]),
            Series("study: SACK TCP", list(STUDY_TABLE2), [v[0] / 1e3 for v in STUDY_TABLE2.values()], [0.0] * 7),
            Series("study: TCP-AFC", list(STUDY_TABLE2), [v[1] / 1e3 for v in STUDY_TABLE2.values()], [0.0] * 7),
        ], title=f"Table 2: throughput at each stage of a 20 MB transfer ({which} BER)",
            x_label="data transferred (MB)", y_label="throughput (kB/s)")
    for proto, rows in rep.traces.items():
        write_csv(out / f"fig6_fig7_{proto}.csv", rows)
    if rep.traces:
        for fig, key, label, scale in (("fig6", "delivered_bytes", "sequence number (MB)", 1e6),
                                       ("fig7", "throughput_Bps", "throughput (kB/s)", 1e3)):
            series = []
            for proto, rows in rep.traces.items():
                pts = [r for r in rows if key in r]
                series.append(Series(PROTOCOLS[proto], [r["time_s"] for r in pts], [r[key] / scale for r in pts], [0.0] * len(pts)))
            errorbar_png(out / f"{fig}.png", series, title=f"{'Sequence number' if fig == 'fig6' else 'Throughput'} vs time, 20 MB, seed 1",
                         x_label="time (s)", y_label=label, markers=False)
    if rep.congestion:
        write_csv(out / "congestion.csv", rep.congestion)
    (out / "report.json").write_text(json.dumps(rep.to_json(), indent=2), encoding="utf-8")
    readme = [f"# {TITLE}", "", __doc__ or "", *(f"- {line}" for line in _setup_lines(rep)), "", "```", text(rep), "```", ""]
    (out / "README.md").write_text("\n".join(readme), encoding="utf-8")
    (out / "index.html").write_text(render_html(rep), encoding="utf-8")
