"""airlink's queue disciplines against ns-3's (issue 28: validated against ns-3 and the RFCs).

ns-3 implements CoDel, FQ-CoDel, PIE and RED from the same references, independently. The
comparison needs the `ns3` wheel, an optional validation dependency that `make test` does not
install (`airlink validate aqm` installs it into a cached virtual environment on first use, or
AIRLINK_NS3_PYTHON names an interpreter that has it); without it the test says so and is skipped.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from airlink import _core
from airlink import validate_aqm as v


def test_every_point_is_a_scenario_airlink_runs(tmp_path: Path) -> None:
    for p in v.matrix(seconds=5):
        _core.check_scenario(v.scenario(p), f"{p.name}.toml")  # raises on a scenario airlink refuses
    short = v.Point("codel", 1, seconds=5)
    r = v.run_airlink(short, tmp_path)
    # CoDel holds the standing queue near its 5 ms target: about 4 packets of 1500 B at 10 Mbit/s.
    assert 0 < r["queue_mean_packets"] < 10, r


@pytest.fixture(scope="module")
def ns3() -> Path:
    python = v.installed_ns3_python()
    if python is None:
        pytest.skip("ns-3 is not installed: `airlink validate aqm` installs it (about 5 minutes)")
    return python


def test_codel_red_and_droptail_agree_with_ns3(ns3: Path, tmp_path: Path) -> None:
    # The points where both stacks' behaviour is the same by construction: one flow (no flow
    # hashing), and RED and drop-tail with four. The others are reported by `airlink validate
    # aqm` with their differences (see the module's README table in the closing notes).
    points = [v.Point("droptail", 1, seconds=20), v.Point("codel", 1, seconds=20), v.Point("fq_codel", 1, seconds=20),
              v.Point("red", 1, seconds=20), v.Point("red", 4, seconds=20)]
    df = v.compare(points, tmp_path, ns3)
    assert df.goodput_ok.all() and df.queue_ok.all(), v.format_table(df)
    # Without a discipline the 1000-packet buffer fills; with one, the queue is a few packets.
    queue = dict(zip(df.point, df.queue_ns3_packets, strict=True))
    assert queue["droptail-1"] > 300 and queue["codel-1"] < 10


def test_a_foreign_folder_in_the_ns3_cache_is_not_cleared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AIRLINK_NS3_PYTHON", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    mine = tmp_path / "airlink" / "ns3-venv" / "notes.txt"
    mine.parent.mkdir(parents=True)
    mine.write_text("not airlink's")
    assert v.installed_ns3_python() is None
    with pytest.raises(RuntimeError, match="not airlink's ns-3 environment"):
        v.ns3_python()
    assert mine.read_text() == "not airlink's"
