"""`airlink report STORE` and `airlink plot RUN...`."""

from __future__ import annotations

import html
import re
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

import airlink
from airlink import plots, report, tables
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


def first_table(page: str) -> pd.DataFrame:
    """The first HTML table of a page, cells unescaped (pandas' read_html needs lxml)."""
    table = page[page.index("<table"):page.index("</table>")]
    header = [html.unescape(h) for h in re.findall(r"<th>(.*?)</th>", table)]
    rows = [[html.unescape(c) for c in re.findall(r"<td>(.*?)</td>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", table, re.S) if "<td>" in row]
    return pd.DataFrame(rows, columns=header)


def test_report_page_figures_and_tables(store: Path, airlink_cli) -> None:
    result = airlink_cli("report", str(store))
    assert result.exit_code == 0, result.output
    page = (store / "report/index.html").read_text()
    images = re.findall(r'<img src="([^"]+)"', page)
    # the metric asked for (goodput; the derived ones are not): against loss, box plot, min/max,
    # CDF, paired; the pooled CDF; per chosen run (rep 0 of the 4 configurations) and pointwise
    # means of those configurations
    assert len(images) == 5 + 1 + 4 + 4
    for name in ["goodput_bps-vs-downlink.pipe.loss.png", "goodput_bps-box.png", "goodput_bps-minmax.png",
                 "goodput_bps-cdf.png", "goodput_bps-paired.png", "goodput_bps-cdf-pooled.png"]:
        assert name in images
    for name in images:
        assert re.fullmatch(r"[A-Za-z0-9._=-]+\.png", name)
        with Image.open(store / "report" / name) as im:
            assert im.format == "PNG" and im.size[0] > 400 and im.size[1] > 300
    summary = airlink.load(store, "summary")
    csv = pd.read_csv(store / "report/summary.csv")
    np.testing.assert_allclose(csv["mean"], summary["mean"], rtol=1e-12)
    # the wide table: a row per configuration, goodput in Mbit/s with 2 decimals, no exponent
    wide = first_table(page)
    assert len(wide) == 4 and "goodput_bps tcp (Mbit/s)" in wide.columns and "n" in wide.columns
    assert not any("derived" in c for c in wide.columns) and "derived.jain_index" in page  # named as not shown
    goodput = summary[(summary["metric"] == "flows.*.goodput_bps") & (summary["class"] == "tcp")].sort_values("config")
    for cell, m, h in zip(wide["goodput_bps tcp (Mbit/s)"], goodput["mean"], goodput["ci95"]):
        assert cell == f"{m / 1e6:.2f} ± {h / 1e6:.2f}"
    assert "e+" not in page and "e-0" not in page
    means = pd.read_csv(store / "report/means.csv")
    assert len(means) == 4
    np.testing.assert_allclose(means["flows.*.goodput_bps tcp mean"], goodput["mean"], rtol=1e-12)
    diffs = airlink.load(store, "differences")
    tcp = diffs[(diffs["metric"] == "flows.*.goodput_bps") & (diffs["class"] == "tcp")]
    for r, h in zip(tcp["relative"], tcp["relative_ci95"]):
        assert f"{r:+.1%} ± {h:.1%}" in page
    assert "loss=0.02, congestion=cubic" in page and "Student t" in page


def test_report_page_comes_from_the_templates() -> None:
    # The templates are package data, found through the package (importlib.resources).
    names = {p.name for p in (resources.files("airlink") / "templates").iterdir()}
    assert {"page.html.j2", "report.html.j2", "table.html.j2", "style.css"} <= names
    text = report.page("a <title>", ["<p>body</p>"])
    assert "<title>a &lt;title&gt;</title>" in text and "<p>body</p>" in text and "border-collapse" in text
    assert tables.html_table(["k", "v"], [["PASS", "<b>"]], "num") == (
        '<table class="num">\n<thead><tr><th>k</th><th>v</th></tr></thead>\n<tbody>\n'
        '<tr><td class="pass">PASS</td><td>&lt;b&gt;</td></tr>\n</tbody>\n</table>')


def test_wide_table_units_and_precision() -> None:
    assert tables.unit("flows.*.goodput_bps", 2.5e9) == ("Gbit/s", 1e-9)
    assert tables.unit("flows.*.duration_s", 2.5) == ("s", 1.0)
    assert tables.unit("flows.*.bytes_delivered", 3e5) == ("kB", 1e-3)
    assert tables.unit("flows.*.retransmissions", 12) == ("", 1.0)
    assert tables.interval(-1e-9, 0.004, 2) == "0.00 ± 0.00" and tables.interval(float("nan"), 1, 2) == "—"
    assert tables.parameter_value(1e-5) == "0.00001" and tables.safe_name("flows.*.a b/c") == "flows.all.a_b_c"
    assert tables.file_stems(["flows.*.goodput_bps", "flows.0.goodput_bps", "links.up.loss_drops"]) == {
        "flows.*.goodput_bps": "goodput_bps", "flows.0.goodput_bps": "flows.0.goodput_bps",
        "links.up.loss_drops": "links.up.loss_drops"}
    summary = pd.DataFrame({"config": [0, 0, 1, 1], "rate": ["1 Mbit/s", "1 Mbit/s", "2 Mbit/s", "2 Mbit/s"],
                            "metric": ["m.x_bps", "derived.jain_index"] * 2, "class": "all", "rule": "t",
                            "n": [5, 5, 5, 4], "mean": [950e3, 0.5, 1.9e6, 0.75], "ci95": [1e4, 0.01, 2e4, float("nan")]})
    wide = tables.wide(summary, ["rate"], ["derived.jain_index", "m.x_bps"])
    assert list(wide.columns) == ["rate", "n", "derived.jain_index", "m.x_bps (Mbit/s)"]  # the order asked for
    assert wide.iloc[0].tolist() == ["1 Mbit/s", "5", "0.500 ± 0.010", "0.95 ± 0.01"]
    assert wide.iloc[1].tolist() == ["2 Mbit/s", "5", "0.750 (n=4)", "1.90 ± 0.02"]


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
