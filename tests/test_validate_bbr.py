"""``airlink validate tcp --bbr``: its points are valid scenarios and its measures read the
kernel's sampled rows and airlink's rows alike (the runs themselves are real-time: not here)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from airlink import _core
from airlink import validate_bbr as b
from airlink import validate_multiflow as m


def test_the_grid_spans_the_issue_ranges_and_every_point_is_a_bbr_scenario() -> None:
    points = b.matrix(seconds=5.0)
    assert len({p.name for p in points}) == len(points) == 9
    assert {p.rate_bps for p in points} == {2_000_000, 10_000_000, 100_000_000}
    assert {2 * p.delay_ms for p in points} == {20.0, 40.0, 200.0}
    assert {p.loss for p in points} == {0.0, 0.005, 0.02}
    assert {p.queue_bdp for p in points} == {0.25, 1.0, 4.0}
    for p in points:
        text = b.scenario_text(p, "linux", 1)
        _core.check_scenario(text, f"{p.name}.toml")
        assert 'congestion = "bbr"' in text and 'sample_interval = "10 ms"' in text


def _series(delivered_per_s: float, srtt_ms: list[float], start_s: float = 1.0, dt: float = 0.01) -> pd.DataFrame:
    n = len(srtt_ms)
    t = start_s + dt * np.arange(n)
    return pd.DataFrame({"time_ns": (t * 1e9).astype(np.uint64), "flow": 0,
                         "delivered_bytes": (delivered_per_s * (t - start_s)).astype(np.uint64),
                         "srtt_us": np.array(srtt_ms) * 1e3, "retransmissions": np.arange(n) // 100,
                         "cwnd_bytes": 1e4, "pacing_rate_bps": 8e6})


def test_window_metrics_are_the_goodput_and_rtt_quantiles_of_the_first_seconds() -> None:
    rtts = [40.0] * 900 + [100.0] * 100 + [500.0] * 500  # the last 5 s lie outside a 10 s window
    got = b.window_metrics(_series(1e6, rtts), seconds=10.0)
    assert got["goodput_bps"] == pytest.approx(8e6, rel=1e-3)
    assert got["rtt_median_ms"] == 40.0 and got["rtt_p95_ms"] == 100.0
    assert got["retransmissions"] == 14  # the sender's count at the end of its series


def test_the_kernels_rows_reduce_to_the_bulk_connections_sender() -> None:
    bulk = _series(1e6, [50.0] * 1001).assign(connection=40000, side="server")
    bulk["bytes_acked"] = bulk["delivered_bytes"]
    control = _series(10.0, [50.0] * 1001).assign(connection=39999, side="client", srtt_us=1e6)
    control["bytes_acked"] = control["delivered_bytes"]
    got = b.window_metrics(pd.concat([control, bulk], ignore_index=True), seconds=10.0)
    assert got["goodput_bps"] == pytest.approx(8e6, rel=1e-3) and got["rtt_median_ms"] == 50.0


def test_compare_applies_the_targets() -> None:
    p = b.matrix()[0]
    k, a = b._row(p, "kernel"), b._row(p, "airlink-sim")
    k.goodput_bps, a.goodput_bps = 9e6, 9.8e6
    k.rtt_median_ms, a.rtt_median_ms = 40.0, 47.0
    verdicts = {c.metric: c.verdict for c in b.compare(k, a)}
    assert verdicts["goodput_bps"] == "pass" and verdicts["rtt_median_ms"] == "FAIL"
    a.rtt_median_ms = 45.9
    assert {c.metric: c.verdict for c in b.compare(k, a)}["rtt_median_ms"] == "pass"
    assert math.isnan(b.compare(b._row(p, "kernel"), a)[0].kernel)


def test_the_multiflow_dumbbell_is_the_benchmarks_with_the_asked_congestion() -> None:
    text = m.dumbbell(10, "cubic", "linux")
    _core.check_scenario(text, "dumbbell.toml")
    assert text.count('congestion = "cubic"') == m.FLOWS and text.count('preset = "linux"') == m.FLOWS
    assert 'queue = "27500 B"' in text  # 18 packets of 1500 B: one BDP at 10 Mbit/s and 22 ms


@pytest.mark.parametrize("congestion", ["cubic", "reno"])
def test_the_kernel_runs_scenario_is_accepted_and_names_its_congestion_on_the_flows(congestion: str) -> None:
    text = m.kernel_scenario(10, congestion)
    _core.check_scenario(text, "kernel.toml")
    assert text.count(f'congestion = "{congestion}"') == m.FLOWS
