"""`airlink compare A B` and airlink.compare: two stores side by side."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

import airlink
from test_sweep import write_experiment

GRID = '[vary]\n"downlink.pipe.loss" = [0.0, 0.02]\n[repetitions]\ncount = 3\n'


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("compare")
    a = write_experiment(tmp, 'metrics = ["flows.*.goodput_bps", "flows.*.retransmissions"]\n' + GRID, "a.toml")
    b = write_experiment(tmp, 'metrics = ["flows.*.goodput_bps"]\nseed = 9\n' + GRID, "b.toml")
    airlink.sweep(a, tmp / "a.sweep", jobs=2, progress=False)
    airlink.sweep(b, tmp / "b.sweep", jobs=2, progress=False)
    return tmp / "a.sweep", tmp / "b.sweep"


def test_compare_returns_both_means_their_difference_and_overlap(stores: tuple[Path, Path]) -> None:
    a, b = stores
    frame = airlink.compare(a, b)
    assert set(frame["metric"]) == {"flows.*.goodput_bps"}  # the metrics both experiments named
    assert len(frame) == 2 * 2  # 2 configurations × classes tcp and udp
    sa, sb = airlink.load(a, "summary"), airlink.load(b, "summary")
    row = frame[(frame["downlink.pipe.loss"] == 0.02) & (frame["class"] == "tcp")].iloc[0]
    pick = lambda s: s[(s["downlink.pipe.loss"] == 0.02) & (s["class"] == "tcp")  # noqa: E731
                       & (s["metric"] == "flows.*.goodput_bps")].iloc[0]
    assert (row["mean_a"], row["mean_b"]) == (pick(sa)["mean"], pick(sb)["mean"])
    assert row["difference"] == pytest.approx(row["mean_b"] - row["mean_a"])
    assert row["relative"] == pytest.approx(row["mean_b"] / row["mean_a"] - 1)
    assert row["overlap"] == (abs(row["difference"]) <= row["ci95_a"] + row["ci95_b"])
    same = airlink.compare(a, a, metric="retransmissions")  # a short name; a store against itself
    assert set(same["metric"]) == {"flows.*.retransmissions"} and (same["difference"] == 0).all()
    assert same["overlap"].all()
    with pytest.raises(ValueError, match="did you mean flows.\\*.goodput_bps"):
        airlink.compare(a, b, metric="flows.*.goodput")


def test_cli_compare_prints_a_table_and_draws_a_figure(stores: tuple[Path, Path], tmp_path: Path, airlink_cli) -> None:
    a, b = stores
    out = tmp_path / "ab.png"
    result = airlink_cli("compare", str(a), str(b), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "flows.*.goodput_bps tcp (Mbit/s)" in result.output and "intervals overlap" in result.output
    assert "B − A" in result.output and "e+0" not in result.output
    with Image.open(out) as im:
        assert im.format == "PNG" and im.size[1] > 300
    result = airlink_cli("compare", str(a), str(b), "--out", str(out))
    assert result.exit_code == 1 and "exists" in result.output  # not replaced without --force
    result = airlink_cli("compare", str(a), str(b), "--metric", "goodput", "--out", str(tmp_path / "x.png"))
    assert result.exit_code == 2 and "did you mean flows.*.goodput_bps" in result.output
