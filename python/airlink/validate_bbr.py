"""``airlink validate tcp --bbr``: airlink's BBR in simulation against the kernel's ``bbr``
through the emulator, on the same links and seed.

For each point (a pipe downlink with rate, one-way delay, random loss and a queue sized in
bandwidth-delay products, as :mod:`airlink.validate` builds it) two runs:

``kernel``       emulation, the kernel's BBR: ``iperf3 -R -C bbr`` (the server sends); its cwnd,
                 RTT and pacing rate are the emulator's own TCP_INFO samples (the ``flows``
                 table, see ``crates/airlink-emu/src/kernel_tcp.rs``).
``airlink-sim``  simulation of the same scenario, ``congestion = "bbr"``.

Both are measured from their ``flows`` tables the same way: goodput over the first ``seconds``
after the first delivery (``delivered_bytes``), the median and 95th percentile of the smoothed
RTT samples in that window, retransmissions per link loss (the link models' drops on the way
down). The agreement targets: goodput within 10 %, median RTT within 15 %.

The report folder holds ``bbr.csv`` (a row per point and stack), ``bbr-comparison.csv``,
``README.md`` with the table, ``bbr-series-POINT.png`` (cwnd and pacing rate, airlink's over the
kernel's) and every run's results folder.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from airlink import emulate as emulation
from airlink import validate as v

GOODPUT_REL = 0.10
RTT_REL = 0.15
IPERF_PORT = v.IPERF_PORT


def matrix(seconds: float = 20.0) -> list[v.Point]:
    """One dimension at a time around 10 Mbit/s, 20 ms one way (40 ms RTT), no loss, one BDP of
    queue: rate 2 and 100 Mbit/s, RTT 20 and 200 ms, loss 0.5 and 2 %, a shallow (0.25 BDP)
    and a deep (4 BDP) buffer. 9 points, about 5 minutes with 20 s transfers."""
    base = v.Point("bbr", 10_000_000, 20.0, 0.0, 1.0, 1, seconds)
    variants: list[dict[str, Any]] = [{}]
    variants += [{"rate_bps": x} for x in (2_000_000, 100_000_000)]
    variants += [{"delay_ms": x} for x in (10.0, 100.0)]
    variants += [{"loss": x} for x in (0.005, 0.02)]
    variants += [{"queue_bdp": x} for x in (0.25, 4.0)]
    return [replace(base, **d) for d in variants]


@dataclass
class BbrRow:
    """One point x stack."""

    point: str
    stack: str
    rate_bps: float
    rtt_ms: float
    loss: float
    queue_bdp: float
    queue_packets: int
    seconds: float
    status: str = "ok"
    reason: str = ""
    goodput_bps: float = math.nan
    rtt_median_ms: float = math.nan
    rtt_p95_ms: float = math.nan
    retransmissions: float = math.nan
    link_losses: float = math.nan
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def retrans_per_loss(self) -> float:
        return self.retransmissions / self.link_losses if self.link_losses else math.nan


def _row(p: v.Point, stack: str) -> BbrRow:
    return BbrRow(point=p.name, stack=stack, rate_bps=float(p.rate_bps or math.nan), rtt_ms=2 * p.delay_ms,
                  loss=p.loss, queue_bdp=p.queue_bdp, queue_packets=p.queue_packets, seconds=p.seconds)


def sender_series(flows: Any) -> Any:
    """One series per flow: airlink's rows as they are; the kernel's (with a ``connection``
    column) reduced to the sending end of the connection that acknowledged the most."""
    from airlink.plots import kernel_flows

    flows = kernel_flows(flows) if "connection" in flows else flows
    return flows.sort_values("time_ns")


def window_metrics(flows: Any, seconds: float) -> dict[str, float]:
    """Goodput over the first ``seconds`` after the first delivery (linear between samples),
    median and 95th percentile of the smoothed RTT in that window (ms), and the
    retransmissions counted by its end; summed or pooled over flows."""
    import numpy as np

    goodput, rtts, retrans = 0.0, [], 0.0
    for _, f in sender_series(flows).groupby("flow"):
        t = f["time_ns"].to_numpy(dtype=float) / 1e9
        d = f["delivered_bytes"].to_numpy(dtype=float)
        started = np.nonzero(d > 0)[0]
        if len(started) == 0:
            continue
        t0 = t[max(started[0] - 1, 0)]
        goodput += float(np.interp(t0 + seconds, t, d) - np.interp(t0, t, d)) * 8 / seconds
        inside = (t >= t0) & (t <= t0 + seconds)
        srtt = f["srtt_us"].to_numpy(dtype=float)[inside] / 1e3
        rtts.append(srtt[~np.isnan(srtt)])
        retrans += float(f["retransmissions"].max())
    pooled = np.concatenate(rtts) if rtts else np.array([])
    return {"goodput_bps": goodput if rtts else math.nan,
            "rtt_median_ms": float(np.median(pooled)) if len(pooled) else math.nan,
            "rtt_p95_ms": float(np.percentile(pooled, 95)) if len(pooled) else math.nan,
            "retransmissions": retrans if rtts else math.nan}


def _fill(row: BbrRow, flows: Any, summary: Mapping[str, Any]) -> None:
    for k, x in window_metrics(flows, row.seconds).items():
        setattr(row, k, x)
    row.link_losses = v.link_losses(summary)


def run_kernel(p: v.Point, folder: Path, text: Path, seed: int) -> tuple[BbrRow, Any]:
    import airlink

    row = _row(p, "kernel")
    client = f"iperf3 -c $AIRLINK_SERVER -p {IPERF_PORT} -R -t {p.seconds + 1:g} -C bbr --json"
    try:
        res = emulation.emulate(text, seed=seed, out=folder / "kernel", force=True,
                                server=f"iperf3 -s -1 -p {IPERF_PORT}", client=client, timeout=p.seconds + 60,
                                server_delay=1.0)
    except emulation.EmulationError as e:
        row.status, row.reason = ("skipped" if "congestion" in str(e) else "failed"), str(e)
        return row, None
    if not res.completed:
        row.status, row.reason = "failed", f"iperf3 did not complete: {res.output('client')[-300:]}"
        return row, None
    if why := v._emulator_held(res.summary):
        row.status, row.reason = "skipped", why
    flows = airlink.read_results(folder / "kernel").flows
    if flows.empty:
        row.status, row.reason = "failed", "no TCP_INFO samples of the kernel's connection"
        return row, None
    _fill(row, flows, res.summary)
    return row, sender_series(flows)


def run_sim(p: v.Point, folder: Path, text: Path, seed: int) -> tuple[BbrRow, Any]:
    import airlink

    row = _row(p, "airlink-sim")
    r = airlink.run(text, seed=seed, out=folder / "airlink-sim", force=True)
    _fill(row, r.flows, r.summary)
    return row, r.flows


def scenario_text(p: v.Point, preset: str, seed: int) -> str:
    """The validation scenario with airlink's flows sampled every 10 ms, as the kernel's are."""
    return v.scenario_text(p, preset, seed).replace('sample_interval = "100 ms"', 'sample_interval = "10 ms"')


@dataclass(frozen=True)
class Check:
    metric: str
    kernel: float
    airlink: float
    verdict: str
    detail: str


def compare(k: BbrRow, a: BbrRow) -> list[Check]:
    """The targets for airlink's row ``a`` against the kernel's ``k``."""
    out = []
    for metric, rel in (("goodput_bps", GOODPUT_REL), ("rtt_median_ms", RTT_REL)):
        x, y = getattr(k, metric), getattr(a, metric)
        d = y / x - 1 if x else math.nan
        out.append(Check(metric, x, y, "n/a" if math.isnan(d) else ("pass" if abs(d) <= rel else "FAIL"), f"{d:+.1%}"))
    out.append(Check("rtt_p95_ms", k.rtt_p95_ms, a.rtt_p95_ms, "info", f"{a.rtt_p95_ms / k.rtt_p95_ms - 1:+.1%}"
                     if k.rtt_p95_ms else ""))
    out.append(Check("retrans_per_loss", k.retrans_per_loss, a.retrans_per_loss, "info",
                     f"{k.link_losses:g} and {a.link_losses:g} link losses"))
    return out


def run(points: Sequence[v.Point], out: Path, *, preset: str, seed: int = 1,
        progress: Callable[[str], None] | None = None) -> list[BbrRow]:
    """Runs every point on both stacks and writes the report into ``out``."""
    say = progress or (lambda s: None)
    out.mkdir(parents=True, exist_ok=True)
    why_not = v.emulation_unavailable()
    rows: list[BbrRow] = []
    series: dict[str, dict[str, Any]] = {}
    for i, p in enumerate(points):
        folder = out / "runs" / p.name
        folder.mkdir(parents=True, exist_ok=True)
        text = folder / "scenario.toml"
        text.write_text(scenario_text(p, preset, seed), encoding="utf-8")
        say(f"[{i + 1}/{len(points)}] {p.name}")
        if why_not:
            k, kf = _row(p, "kernel"), None
            k.status, k.reason = "skipped", why_not
        else:
            k, kf = run_kernel(p, folder, text, seed)
        a, af = run_sim(p, folder, text, seed)
        rows += [k, a]
        series[p.name] = {"kernel": kf, "airlink-sim": af}
    write_report(rows, series, out)
    return rows


def comparisons(rows: Sequence[BbrRow]) -> list[dict[str, Any]]:
    by = {(r.point, r.stack): r for r in rows}
    out = []
    for point in dict.fromkeys(r.point for r in rows):
        k, a = by.get((point, "kernel")), by.get((point, "airlink-sim"))
        if k is None or a is None:
            continue
        if k.status != "ok" or a.status != "ok":
            out.append({"point": point, "metric": "all", "verdict": "skipped", "detail": k.reason or a.reason})
            continue
        out += [{"point": point, **asdict(c)} for c in compare(k, a)]
    return out


FIELDS = ("point", "stack", "status", "reason", "rate_bps", "rtt_ms", "loss", "queue_bdp", "queue_packets", "seconds",
          "goodput_bps", "rtt_median_ms", "rtt_p95_ms", "retransmissions", "link_losses", "retrans_per_loss")


def table(rows: Sequence[BbrRow]) -> list[list[str]]:
    """The Markdown table: a line per point, kernel and airlink side by side."""
    by = {(r.point, r.stack): r for r in rows}
    lines = [["point", "goodput kernel / airlink (Mbit/s)", "median RTT (ms)", "p95 RTT (ms)",
              "retrans per link loss", "verdict"]]
    for point in dict.fromkeys(r.point for r in rows):
        k, a = by[(point, "kernel")], by[(point, "airlink-sim")]
        if k.status != "ok":
            lines.append([point, "", "", "", "", f"kernel {k.status}: {k.reason[:80]}"])
            continue
        verdicts = [c for c in compare(k, a) if c.verdict in ("pass", "FAIL")]
        lines.append([point, f"{k.goodput_bps / 1e6:.2f} / {a.goodput_bps / 1e6:.2f}",
                      f"{k.rtt_median_ms:.1f} / {a.rtt_median_ms:.1f}", f"{k.rtt_p95_ms:.1f} / {a.rtt_p95_ms:.1f}",
                      f"{k.retrans_per_loss:.2f} / {a.retrans_per_loss:.2f}",
                      ", ".join(f"{c.metric.split('_')[0]} {c.detail} {c.verdict}" for c in verdicts)])
    return lines


def series_png(path: Path, point: str, kernel: Any, sim: Any) -> None:
    """cwnd and pacing rate over time: airlink's BBR (simulation) over the kernel's (emulation)."""
    from airlink.plots import plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 7), dpi=100, sharex=True)
    for label, df, style in (("kernel bbr (emulation, TCP_INFO)", kernel, "-"), ("airlink bbr (simulation)", sim, "--")):
        if df is None or df.empty:
            continue
        # Each from its connection's start: the kernel's begins when iperf3 connects.
        t = df["time_ns"].to_numpy(dtype=float) / 1e9
        started = (df["delivered_bytes"].to_numpy() > 0).nonzero()[0]
        t = t - (t[max(started[0] - 1, 0)] if len(started) else t[0])
        top.plot(t, df["cwnd_bytes"] / 1e3, style, label=label)
        if "pacing_rate_bps" in df:
            bottom.plot(t, df["pacing_rate_bps"] / 1e6, style, label=label)
    top.set_ylabel("cwnd (kB)")
    bottom.set_ylabel("pacing rate (Mbit/s)")
    bottom.set_yscale("log")  # airlink paces its first window at the 1 ms default RTT
    bottom.set_xlabel("time since the first data (s)")
    top.set_title(point)
    for ax in (top, bottom):
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def write_report(rows: Sequence[BbrRow], series: dict[str, dict[str, Any]], out: Path) -> None:
    v.write_csv(out / "bbr.csv", [dict(asdict(r), retrans_per_loss=r.retrans_per_loss) for r in rows], FIELDS)
    v.write_csv(out / "bbr-comparison.csv", comparisons(rows), ("point", "metric", "kernel", "airlink", "verdict", "detail"))
    for point, s in series.items():
        if s.get("kernel") is not None or s.get("airlink-sim") is not None:
            series_png(out / f"bbr-series-{point}.png", point, s.get("kernel"), s.get("airlink-sim"))
    lines = table(rows)
    md = ["# airlink's BBR against the kernel's bbr", "",
          f"Targets: goodput within {GOODPUT_REL:.0%}, median RTT within {RTT_REL:.0%}.", "",
          "| " + " | ".join(lines[0]) + " |", "|" + "---|" * len(lines[0])]
    md += ["| " + " | ".join(line) + " |" for line in lines[1:]]
    (out / "README.md").write_text("\n".join(md) + "\n", encoding="utf-8")


def format_text(rows: Sequence[BbrRow]) -> str:
    lines = table(rows)
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths)) for line in lines)
