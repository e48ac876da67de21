"""Figures as PNG files (matplotlib with the Agg backend: no display needed)."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import pandas as pd

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)


@dataclass(frozen=True)
class Series:
    """One curve with symmetric error bars."""

    label: str
    x: Sequence[float]
    y: Sequence[float]
    err: Sequence[float]


def errorbar_png(
    path: Path, series: Sequence[Series], *, title: str, x_label: str, y_label: str, x_ticks: Sequence[float] = (),
    markers: bool = True,
) -> None:
    """Writes a line plot of ``series`` with error bars (NaN bars are left out) to ``path``;
    ``markers=False`` for dense time series."""
    fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=120)
    shapes = "osD^v<>xp"
    for i, s in enumerate(series):
        err = [0.0 if e != e else e for e in s.err]  # NaN (one seed) draws no bar
        marker = shapes[i % len(shapes)] if markers else None
        ax.errorbar(s.x, s.y, yerr=err, label=s.label, marker=marker, capsize=3 if markers else 0, linewidth=1.4)
    ax.set_title(textwrap.fill(title, 60), fontsize=11)
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    if x_ticks:
        ax.set_xticks(list(x_ticks))
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# ---------------------------------------------------------------------------------------------
# Time series of runs (simulation and emulation results folders alike)

#: The panels of a run's figure: (name, y label with unit).
PANELS = (("throughput", "throughput (Mbit/s)"), ("window", "cwnd (kB) / rate (Mbit/s)"), ("rtt", "smoothed RTT (ms)"),
          ("queue", "queue (packets)"), ("losses", "losses (packets, cumulative)"),
          ("state", "SNR (dB) / modulation (bits)"))
MAX_MARKED_CHANGES = 20  # more link-state changes than this are a texture, not events to mark


class NothingToDraw(FileNotFoundError):
    """No panel of a figure has data because the runs' tables are missing, unreadable or lack
    the columns drawn. A FileNotFoundError: the CLI says it in one line, with exit code 1."""


#: The columns each drawn table needs, and the panels drawn from it.
COLUMNS = {"flows": ("time_ns", "flow", "delivered_bytes", "cwnd_bytes", "rate_bps", "srtt_us", "link_losses"),
           "links": ("time_ns", "link", "queue_packets", "snr_db", "modulation_bits")}
PANELS_OF = {"flows": ("throughput", "window", "rtt", "losses"), "links": ("queue", "state")}


def _stderr(message: str) -> None:
    print(f"airlink: {message}", file=sys.stderr, flush=True)


def _table(result: Any, name: str, problems: list[str] | None = None) -> pd.DataFrame:
    """A run's table, empty when the run did not write it (an emulation with iperf has no flows),
    cannot be read or lacks a column drawn from it; ``problems`` gets why."""
    from airlink.results import ResultsError

    try:
        table = result.table(name)
    except (ResultsError, KeyError) as e:
        if problems is not None:
            problems.append(str(e).strip("'\""))
        return pd.DataFrame()
    missing = [c for c in COLUMNS.get(name, ()) if c not in table]
    if missing and not (table.empty and len(table.columns) == 0):  # an in-memory run without the table
        if problems is not None:
            where = result.path / f"{name}.parquet" if getattr(result, "path", None) else name
            problems.append(f"{where}: no column {', '.join(missing)}: expected airlink's {name} table")
        return pd.DataFrame()
    return table


def flow_series(flows: pd.DataFrame) -> pd.DataFrame:
    """Per flow and sample: throughput over the last sample interval (Mbit/s, from delivered
    bytes), cwnd (kB), sending rate (Mbit/s), smoothed RTT (ms), cumulative link losses."""
    columns = ["time_s", "flow", "throughput_mbps", "cwnd_kb", "rate_mbps", "rtt_ms", "losses"]
    if flows.empty:
        return pd.DataFrame(columns=columns)
    if "connection" in flows:
        flows = kernel_flows(flows)
    out = []
    for flow, g in flows.sort_values("time_ns").groupby("flow", sort=True):
        t = g["time_ns"].to_numpy(dtype=float) / 1e9
        delivered = g["delivered_bytes"].to_numpy(dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            throughput = np.concatenate([[np.nan], np.diff(delivered) * 8 / np.diff(t) / 1e6])
        out.append(pd.DataFrame({"time_s": t, "flow": flow, "throughput_mbps": throughput,
                                 "cwnd_kb": g["cwnd_bytes"].to_numpy(dtype=float) / 1e3,
                                 "rate_mbps": _rate(g).to_numpy(dtype=float) / 1e6,
                                 "rtt_ms": g["srtt_us"].to_numpy(dtype=float) / 1e3,
                                 # negative: not known (an emulated flow the datapath cannot attribute)
                                 "losses": g["link_losses"].where(g["link_losses"] >= 0).to_numpy(dtype=float)}))
    return pd.concat(out, ignore_index=True)[columns]


def kernel_flows(flows: pd.DataFrame) -> pd.DataFrame:
    """The kernel's TCP sampled in emulation (rows per connection, see
    ``crates/airlink-emu/src/kernel_tcp.rs``): per flow, the rows of its sending end of the
    connection that acknowledged the most bytes (the bulk transfer, not iperf3's control
    connection)."""
    if flows.empty:
        return flows
    last = flows.groupby(["flow", "connection", "side"], sort=True)["bytes_acked"].max().reset_index()
    best = last.loc[last.groupby("flow")["bytes_acked"].idxmax(), ["flow", "connection", "side"]]
    return flows.merge(best, on=["flow", "connection", "side"])


def _rate(g: pd.DataFrame) -> pd.Series:
    """The sending rate a controller allows: CCID-3's rate, else TCP's pacing rate where known."""
    if "pacing_rate_bps" in g:
        return g["rate_bps"].fillna(g["pacing_rate_bps"])
    return g["rate_bps"]


def interval_series(intervals: pd.DataFrame, skip: Sequence[int] = ()) -> pd.DataFrame:
    """``flow_series``' columns from an intervals table (iperf's reports) for the flows not in
    ``skip``: throughput per interval and, where the sender reported them (the kernel's TCP
    through iperf3), cwnd, RTT and cumulative retransmissions; for UDP cumulative losses."""
    columns = ["time_s", "flow", "throughput_mbps", "cwnd_kb", "rate_mbps", "rtt_ms", "losses"]
    if intervals.empty or not {"time_ns", "flow", "throughput_bps"} <= set(intervals):
        return pd.DataFrame(columns=columns)
    out = []
    for flow, g in intervals.sort_values("time_ns").groupby("flow", sort=True):
        if flow in skip:
            continue
        n = len(g)
        col = lambda name: g[name].to_numpy(dtype=float) if name in g else np.full(n, np.nan)  # noqa: E731
        lost, retransmitted = col("lost"), col("retransmissions")
        counted = retransmitted if not np.isnan(retransmitted).all() else lost
        out.append(pd.DataFrame({"time_s": g["time_ns"].to_numpy(dtype=float) / 1e9, "flow": flow,
                                 "throughput_mbps": col("throughput_bps") / 1e6, "cwnd_kb": col("cwnd_bytes") / 1e3,
                                 "rate_mbps": np.full(n, np.nan), "rtt_ms": col("srtt_us") / 1e3,
                                 "losses": np.nancumsum(counted) if not np.isnan(counted).all() else counted,
                                 # interval means are drawn as steps; losses say what was counted
                                 "interval": True, "interval_s": col("interval_s"),
                                 "counted": "retransmissions" if counted is retransmitted else "lost"}))
    columns += ["interval", "interval_s", "counted"]
    return pd.concat(out, ignore_index=True)[columns] if out else pd.DataFrame(columns=columns)


def _why_empty(panel: str, kernel: bool, intervals: bool, links: bool) -> str:
    """Why a panel of a run's figure has nothing to draw."""
    if panel in ("queue", "state") and not links:
        return "no links table"
    if kernel and not intervals and panel in ("throughput", "window", "rtt", "losses"):
        return "no iperf3 reports in these runs (the kernel's transports are measured through iperf3)"
    return {
        "throughput": "no flow samples",
        "window": "no cwnd or rate samples" + (" (only iperf3's TCP sender reports cwnd)" if kernel else ""),
        "rtt": "no RTT samples" + (" (only iperf3's TCP sender reports RTT)" if kernel else ""),
        "queue": "the queues stayed empty",
        "losses": "no loss counts",
        "state": "no SNR samples, the links have no channel model",
    }[panel]


def flow_name(flow: dict[str, Any]) -> str:
    """``cubic``, ``ccid3`` or ``udp``: a flow's congestion control, else its protocol."""
    congestion = flow.get("congestion")
    return str(congestion) if congestion not in (None, "none") else str(flow.get("protocol", "?"))


def link_changes(links: pd.DataFrame) -> list[tuple[float, str]]:
    """Timed changes of link state worth a vertical line: a link's modulation switching (the
    adaptive downlink), when there are few enough to read."""
    if links.empty or "modulation_bits" not in links:
        return []
    marks = []
    for name, g in links[links["modulation_bits"] >= 0].sort_values("time_ns").groupby("link"):
        bits = g["modulation_bits"].to_numpy()
        for i in np.flatnonzero(bits[1:] != bits[:-1]) + 1:
            marks.append((g["time_ns"].iloc[i] / 1e9, f"{name}: {bits[i - 1]}→{bits[i]} bits"))
    return marks if len(marks) <= MAX_MARKED_CHANGES else []


def _mark(ax: Any, marks: Sequence[tuple[float, str]]) -> None:
    for i, (t, _) in enumerate(marks):
        ax.axvline(t, color="0.35", linestyle=":", linewidth=1, label="link state change" if i == 0 else None)


def _legend(ax: Any) -> None:
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)


def runs_png(path: Path, runs: Sequence[tuple[str, Any]], title: str,
             notice: Callable[[str], None] = _stderr) -> None:
    """One figure of one or several runs' time series, a panel per quantity (see ``PANELS``);
    ``runs`` are (label, RunResult) pairs, from simulation or emulation folders. A table that is
    missing or lacks a column is said through ``notice`` with the panels it leaves empty; when no
    panel can be drawn because of that, ``NothingToDraw`` is raised and no file written."""
    fig, axes = plt.subplots(len(PANELS), 1, figsize=(9, 13), dpi=100, sharex=True)
    panels = dict(zip((p for p, _ in PANELS), axes))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    marks: list[tuple[float, str]] = []
    problems: list[str] = []
    kernel = have_intervals = have_links = False
    for i, (label, result) in enumerate(runs):
        for name in ("flows", "links"):
            found: list[str] = []
            table = _table(result, name, found)
            problems += [f"{m} (panels {', '.join(PANELS_OF[name])} have no data from it)" for m in found]
            if name == "flows":
                flows = flow_series(table)
            else:
                links = table
        # Flows with no samples of their own (the kernel's, through iperf3) are drawn from
        # their interval reports.
        reports = interval_series(_table(result, "intervals"), skip=list(flows["flow"].unique()))
        flows = pd.concat([f for f in (flows, reports) if not f.empty] or [flows], ignore_index=True)
        kernel = kernel or result.manifest.get("endpoints") == "kernel"
        have_intervals = have_intervals or not reports.empty
        have_links = have_links or not links.empty
        summary_flows = result.summary.get("flows", []) + (result.summary.get("iperf3") or {}).get("flows", [])
        protocols = {f["id"]: flow_name(f) for f in summary_flows if isinstance(f, dict) and "id" in f}
        style = ["-", "--", ":", "-."][i % 4]
        for j, (flow, g) in enumerate(flows.groupby("flow")):
            name = f"{label} flow {flow} ({protocols.get(flow, '?')})" if len(runs) > 1 else f"flow {flow} ({protocols.get(flow, '?')})"
            colour = colours[(i * 3 + j) % len(colours)]
            reported = "interval" in g and g["interval"].eq(True).all()  # iperf's interval reports
            if reported:  # each interval's mean as a step over it (times are the intervals' ends)
                first = g["time_s"].iloc[0] - np.nan_to_num(g["interval_s"].iloc[0])
                panels["throughput"].plot(np.r_[first, g["time_s"]], np.r_[g["throughput_mbps"].iloc[:1], g["throughput_mbps"]],
                                          style, color=colour, drawstyle="steps-pre", label=f"{name}, iperf3 intervals")
            else:
                panels["throughput"].plot(g["time_s"], g["throughput_mbps"], style, color=colour, label=name)
            if g["cwnd_kb"].notna().any():
                panels["window"].plot(g["time_s"], g["cwnd_kb"], style, color=colour, label=f"{name} cwnd (kB)")
            if g["rate_mbps"].notna().any():
                panels["window"].plot(g["time_s"], g["rate_mbps"], style, color=colour, alpha=0.6,
                                      label=f"{name} rate (Mbit/s)")
            if g["rtt_ms"].notna().any():
                panels["rtt"].plot(g["time_s"], g["rtt_ms"], style, color=colour, label=name)
            if g["losses"].notna().any():
                panels["losses"].plot(g["time_s"], g["losses"], style, color=colour,
                                      label=f"{name} {g['counted'].iloc[0]}" if reported else f"{name} link losses")
        for _j, (link, g) in enumerate(links.sort_values("time_ns").groupby("link") if not links.empty else []):
            t = g["time_ns"] / 1e9
            prefix = f"{label} " if len(runs) > 1 else ""
            if g["queue_packets"].max() > 0:
                panels["queue"].plot(t, g["queue_packets"], style, label=f"{prefix}{link}")
            if g["snr_db"].notna().any():
                panels["state"].plot(t, g["snr_db"], style, label=f"{prefix}{link} SNR (dB)")
                panels["state"].step(t, g["modulation_bits"], style, where="post", label=f"{prefix}{link} modulation (bits)")
        if i == 0:
            marks = link_changes(links)
    if problems and not any(ax.lines for ax in axes):
        plt.close(fig)
        raise NothingToDraw("nothing to draw: " + "; ".join(problems))
    for problem in problems:
        notice(problem)
    empty = {name: _why_empty(name, kernel, have_intervals, have_links) for name, _ in PANELS if not panels[name].lines}
    for name, why in empty.items():
        notice(f"panel {name}: no data: {why}")
    for name, y_label in PANELS:
        ax = panels[name]
        ax.set_ylabel(textwrap.fill(y_label, 22), fontsize=9)
        ax.grid(True, alpha=0.3)
        if name == "throughput" and ax.lines:
            ax.set_ylim(0, ax.get_ylim()[1] * 1.05)
        if name in empty:
            ax.text(0.5, 0.5, textwrap.fill(f"no data: {empty[name]}", 70), transform=ax.transAxes, ha="center",
                    va="center", color="0.4")
        _mark(ax, marks)
        _legend(ax)
    axes[-1].set_xlabel("time (s)")
    axes[0].set_title(textwrap.fill(title, 80), fontsize=11)
    fig.tight_layout()
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)


def pointwise_mean_png(path: Path, label_runs: Sequence[tuple[str, Sequence[Any]]], quantity: str, y_label: str,
                       title: str) -> None:
    """A quantity of ``flow_series`` of each flow: every repetition thin, their pointwise mean thick
    (at the common sample times), one colour per (configuration, flow)."""
    fig, ax = plt.subplots(figsize=(9, 4.6), dpi=100)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    marks: list[tuple[float, str]] = []
    k = 0
    for label, results in label_runs:
        series = [flow_series(_table(r, "flows")) for r in results]
        names = {f["id"]: flow_name(f) for f in results[0].summary.get("flows", [])} if results else {}
        if results:
            marks = marks or link_changes(_table(results[0], "links"))
        pooled = pd.concat(series, ignore_index=True) if series else pd.DataFrame()
        for flow, g in pooled.groupby("flow") if not pooled.empty else []:
            colour = colours[k % len(colours)]
            k += 1
            for s in series:
                one = s[s["flow"] == flow]
                ax.plot(one["time_s"], one[quantity], color=colour, alpha=0.25, linewidth=0.8)
            mean = g.groupby("time_s")[quantity].mean()
            ax.plot(mean.index, mean.to_numpy(), color=colour, linewidth=2,
                    label=f"{label}, flow {flow} ({names.get(flow, '?')}): mean of {len(results)}")
    ax.plot([], [], color="0.5", alpha=0.4, linewidth=0.8, label="single repetitions")
    _mark(ax, marks)
    ax.set_xlabel("time (s)")
    ax.set_ylabel(y_label)
    ax.set_title(textwrap.fill(title, 70), fontsize=11)
    ax.grid(True, alpha=0.3)
    _legend(ax)
    fig.tight_layout()
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)
