"""`airlink report STORE` and `airlink plot RUN...`."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

import airlink
from airlink import plots, report
from test_sweep import write_experiment


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("report")
    path = write_experiment(tmp, """reference = { "flow.0.congestion" = "reno" }
[vary]
"downlink.pipe.loss" = [0.005, 0.02]
"flow.0.congestion" = ["cubic", "reno"]
[repetitions]
count = 4
""")
    airlink.sweep(path, tmp / "out", jobs=2)
    return tmp / "out"


def test_report_page_figures_and_tables(store: Path, airlink_cli) -> None:
    result = airlink_cli("report", str(store))
    assert result.exit_code == 0, result.output
    page = (store / "report/index.html").read_text()
    images = re.findall(r'<img src="([^"]+)"', page)
    # per metric (goodput, and the 3 derived): against loss, min/max, CDF, paired; the pooled CDF;
    # per chosen run (rep 0 of the 4 configurations) and pointwise means of those configurations
    assert len(images) == 4 * 4 + 1 + 4 + 4
    for name in images:
        with Image.open(store / "report" / name) as im:
            assert im.format == "PNG" and im.size[0] > 400 and im.size[1] > 300
    summary = airlink.load(store, "summary")
    csv = pd.read_csv(store / "report/summary.csv")
    np.testing.assert_allclose(csv["mean"], summary["mean"], rtol=1e-12)
    # every mean is in the page, in the unit shown (goodput in Mbit/s)
    for m, h in zip(summary["mean"], summary["ci95"]):
        assert report._fmt(m * 1e-6, h * 1e-6) in page or report._fmt(m, h) in page
    diffs = airlink.load(store, "differences")
    tcp = diffs[(diffs["metric"] == "flows.*.goodput_bps") & (diffs["class"] == "tcp")]
    for r, h in zip(tcp["relative"], tcp["relative_ci95"]):
        assert f"{r:+.1%} ± {h:.1%}" in page
    assert "loss=0.02, congestion=cubic" in page and "Student t" in page


def test_report_of_chosen_runs_and_a_refused_folder(store: Path, tmp_path: Path, airlink_cli) -> None:
    key = airlink.load(store)["key"].iloc[-1]
    result = airlink_cli("report", str(store), "--out", str(tmp_path / "r"), "--run", key)
    assert result.exit_code == 0, result.output
    assert f"run {key}" in (tmp_path / "r/index.html").read_text()
    result = airlink_cli("report", str(store), "--out", str(tmp_path / "r"), "--run", key)
    assert result.exit_code == 1 and "exists" in result.output  # refused without --force
    (tmp_path / "plain").mkdir()
    result = airlink_cli("report", str(tmp_path / "plain"))
    assert result.exit_code == 1 and "not an airlink sweep store" in result.output


def test_flow_series_throughput_is_the_delivered_bytes_rate() -> None:
    flows = pd.DataFrame({"time_ns": [0, 100_000_000, 200_000_000] * 2, "flow": [0, 0, 0, 1, 1, 1],
                          "delivered_bytes": [0, 125_000, 375_000, 0, 0, 12_500],
                          "cwnd_bytes": [2920.0] * 6, "rate_bps": [np.nan] * 6, "srtt_us": [30_000.0] * 6,
                          "link_losses": [0, 1, 2, -1, -1, -1]})
    s = plots.flow_series(flows)
    assert s[s["flow"] == 0]["throughput_mbps"].tolist()[1:] == pytest.approx([10.0, 20.0])
    assert s[s["flow"] == 1]["throughput_mbps"].tolist()[1:] == pytest.approx([0.0, 1.0])
    assert s["rtt_ms"].eq(30.0).all() and s["cwnd_kb"].eq(2.92).all()
    assert s[s["flow"] == 1]["losses"].isna().all()  # -1: not known, not drawn as a value


def test_plot_draws_single_and_several_runs(tmp_path: Path, store: Path, airlink_cli) -> None:
    airlink.run("examples/udp-dccp.toml", overrides=["stop=3 s"], out=tmp_path / "a")
    airlink.run("scenarios/wipemu/adaptive.toml", overrides=["stop=3 s"], out=tmp_path / "b")
    result = airlink_cli("plot", str(tmp_path / "a"))
    assert result.exit_code == 0, result.output
    assert Image.open(tmp_path / "a/timeseries.png").size[1] > 1000
    series = store / "series" / airlink.load(store)["key"].iloc[0]  # a sweep's run folder
    result = airlink_cli("plot", str(tmp_path / "a"), str(tmp_path / "b"), str(series), "--out",
                         str(tmp_path / "three.png"))
    assert result.exit_code == 0, result.output
    assert Image.open(tmp_path / "three.png").format == "PNG"
    result = airlink_cli("plot", str(tmp_path))
    assert result.exit_code == 1 and "manifest.json" in result.output
