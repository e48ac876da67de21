"""``airlink timing``: how accurately this machine sleeps, by the method of the Seawind paper's
Table 1 ([S0]): a series of requested sleeps (1000 uniform on 1..100 ms by default, the same
series for every method), and the sample mean and variance of the absolute error (ms, ms²) and
of the relative error, the 99th percentile of the absolute error and the drift over the series
(elapsed minus requested: what an emulated link loses).

The measuring thread runs with SCHED_FIFO when permitted, like the datapath.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from airlink import _core
from airlink._types import TimingStats

METHODS = ("select-relative", "nanosleep-relative", "sleep-with-slack", "busy-wait", "absolute-sleep", "hybrid")

#: [S0] Table 1 (Linux 2.0, 1999): abs mean / var (ms, ms²), rel mean / var.
PAPER = {
    "standard select()": (14.50, 10.49, 0.85, 4.39),
    "interrupts RTC": (0.00, 0.00, 0.00, 0.00),
    "interrupts HZ": (0.41, 0.25, 0.04, 0.01),
    "slack variable": (0.01, 38.56, -0.09, 0.27),
    "busy waiting": (0.02, 0.11, 0.00, 0.00),
}


def measure(
    methods: Sequence[str] = METHODS,
    *,
    requests: int = 1000,
    min_ms: float = 1.0,
    max_ms: float = 100.0,
    seed: int = 1,
    realtime: bool = True,
    progress: Callable[[str], None] | None = None,
) -> list[TimingStats]:
    """Measures each method over the same request series; one dict of statistics per method."""
    rows = []
    for m in methods:
        if progress is not None:
            progress(m)
        rows.append(_core.timing_measure(m, requests, min_ms, max_ms, seed, realtime))
    return rows


def format_table(rows: Sequence[Mapping[str, Any]]) -> str:
    head = (f"{'method':<32} {'abs mean':>9} {'abs var':>9} {'rel mean':>9} {'rel var':>9} "
            f"{'abs p99':>9} {'drift':>9} {'cpu':>6}")
    units = f"{'':<32} {'ms':>9} {'ms^2':>9} {'':>9} {'':>9} {'ms':>9} {'ms':>9} {'%':>6}"
    lines = [head, units]
    for r in rows:
        lines.append(
            f"{r['name']:<32} {r['abs_mean_ms']:>9.4f} {r['abs_var_ms2']:>9.4f} {r['rel_mean']:>9.5f} "
            f"{r['rel_var']:>9.2e} {r['abs_p99_ms']:>9.4f} {r['drift_ms']:>+9.3f} {r['cpu_pct']:>6.1f}"
        )
    if rows:
        r = rows[0]
        rt = "SCHED_FIFO" if r.get("realtime") else "normal priority"
        lines.append(f"{r['requests']} requests per method, {rt}. [S0] Table 1 (1999): select 14.50/10.49, "
                     "RTC 0.00/0.00, HZ=1024 0.41/0.25, slack 0.01/38.56, busy 0.02/0.11 (abs mean/var).")
    return "\n".join(lines)
