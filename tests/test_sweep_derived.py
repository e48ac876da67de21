"""Derived per-run metrics, paired differences against a reference, and time series in the store."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

import airlink
from airlink import experiment as ex
from airlink import store
from test_sweep import PIPE, write_experiment


def test_derived_metrics_match_an_independent_computation(tmp_path: Path) -> None:
    path = write_experiment(tmp_path, '[vary]\n"downlink.pipe.loss" = [0.0, 0.02]\n[repetitions]\ncount = 3\n')
    runs = airlink.sweep(path, tmp_path / "out", jobs=2)
    metrics = airlink.load(tmp_path / "out", "metrics").set_index(["key", "metric"])["value"]
    for key, flows in runs.groupby("key"):
        g = flows["goodput_bps"].to_numpy(dtype=float)
        assert len(g) == 2 and (g > 0).all()
        assert metrics[key, "derived.system_goodput_bps"] == pytest.approx(g.sum(), rel=1e-12)
        assert metrics[key, "derived.jain_index"] == pytest.approx(g.sum() ** 2 / (2 * (g**2).sum()), rel=1e-12)
        # [S2] eq. 21: the mean natural log of each user's throughput in kbyte/s
        assert metrics[key, "derived.f_sys"] == pytest.approx(np.log(g / 8000).mean(), rel=1e-12)
        record = json.loads((tmp_path / "out/runs" / f"{key}.json").read_text())
        assert record["derived"]["f_sys"] == metrics[key, "derived.f_sys"]  # stored with the run
    summary = airlink.load(tmp_path / "out", "summary")
    assert set(ex.DERIVED) <= set(summary["metric"])


def test_paired_differences_against_a_reference_under_common_random_numbers(tmp_path: Path) -> None:
    path = write_experiment(tmp_path, """metrics = ["flows.*.goodput_bps", "derived.jain_index"]
reference = { "flow.0.congestion" = "reno" }
[vary]
"downlink.pipe.loss" = [0.005, 0.02]
"flow.0.congestion" = ["cubic", "reno"]
[repetitions]
count = 5
""")
    airlink.sweep(path, tmp_path / "out", jobs=2)
    metrics = airlink.load(tmp_path / "out", "metrics")
    paired = airlink.load(tmp_path / "out", "paired")
    diffs = airlink.load(tmp_path / "out", "differences")
    # cubic at each loss against reno at the same loss: configs 0 -> 1 and 2 -> 3
    assert sorted(set(zip(paired["config"], paired["reference_config"]))) == [(0, 1), (2, 3)]
    tcp = metrics[(metrics["metric"] == "flows.*.goodput_bps") & (metrics["class"] == "tcp")]
    by = tcp.set_index(["config", "rep"])
    for config, ref in [(0, 1), (2, 3)]:
        d = [by.loc[(config, r), "value"] - by.loc[(ref, r), "value"] for r in range(5)]
        assert [by.loc[(config, r), "seed"] for r in range(5)] == [by.loc[(ref, r), "seed"] for r in range(5)]
        row = diffs[(diffs["config"] == config) & (diffs["metric"] == "flows.*.goodput_bps")
                    & (diffs["class"] == "tcp")].iloc[0]
        assert row["n"] == 5 and row["rule"] == "t"
        assert row["mean_difference"] == pytest.approx(np.mean(d), rel=1e-12)
        half = scipy_stats.t.ppf(0.975, 4) * np.std(d, ddof=1) / math.sqrt(5)
        assert row["ci95"] == pytest.approx(half, rel=1e-9)
        ref_mean = np.mean([by.loc[(ref, r), "value"] for r in range(5)])
        assert row["relative"] == pytest.approx(np.mean(d) / ref_mean, rel=1e-12)
        assert row["relative_ci95"] == pytest.approx(half / ref_mean, rel=1e-9)
    assert set(diffs["metric"]) == {"flows.*.goodput_bps", "derived.jain_index", *ex.DERIVED}


@pytest.mark.parametrize(("body", "what"), [
    ('reference = { "downlink.pipe.rate" = "1 Mbit/s" }\n[vary]\n"downlink.pipe.loss" = [0.0, 0.01]\n',
     "'downlink.pipe.rate' is not a swept parameter"),
    ('reference = { "downlink.pipe.loss" = 0.5 }\n[vary]\n"downlink.pipe.loss" = [0.0, 0.01]\n',
     "is not one of its values"),
    ('reference = "reno"\n[vary]\n"downlink.pipe.loss" = [0.0, 0.01]\n', "a table of swept parameters"),
    ('series = "yes"\n', "experiment.series is true or false"),
])
def test_bad_references_are_refused_with_position(tmp_path: Path, body: str, what: str) -> None:
    path = write_experiment(tmp_path, body)
    with pytest.raises(ex.ExperimentError) as e:
        ex.load_experiment(path)
    assert str(e.value).startswith(f"{path}:3:1:") and what in str(e.value), str(e.value)


def test_time_series_in_the_store_are_those_of_the_same_single_run(tmp_path: Path) -> None:
    path = write_experiment(tmp_path, '[vary]\n"downlink.pipe.loss" = [0.01]\n[repetitions]\ncount = 2\n')
    runs = airlink.sweep(path, tmp_path / "out", jobs=2)
    for key, seed in runs.groupby("key")["seed"].first().items():
        single = airlink.run(PIPE, seed=int(seed), overrides=["downlink.pipe.loss=0.01"])
        for table in ("flows", "links", "events", "rtt"):
            stored = store.load_series(tmp_path / "out", key, table)
            assert len(stored) > 0
            pd.testing.assert_frame_equal(stored, single.table(table))
        folder = airlink.read_results(tmp_path / "out/series" / key)  # a results folder like any other
        assert folder.summary == single.summary


def test_series_false_keeps_none_and_a_later_sweep_that_wants_them_runs_again(tmp_path: Path) -> None:
    body = '[vary]\n"downlink.pipe.loss" = [0.01]\n[repetitions]\ncount = 2\n'
    path = write_experiment(tmp_path, "series = false\n" + body, "bare.toml")
    bare = airlink.sweep(path, tmp_path / "out")
    assert not (tmp_path / "out/series").exists() or not any((tmp_path / "out/series").iterdir())
    full = airlink.sweep(write_experiment(tmp_path, body), tmp_path / "out")
    pd.testing.assert_frame_equal(bare, full)  # the same runs (same keys), now with their series
    assert sorted(p.name for p in (tmp_path / "out/series").iterdir()) == sorted(full["key"].unique())
