"""A `[[change]]` that moves a flow onto a cell: `airlink check` accepts it and `airlink run`
runs it cleanly (the cell's users are the flows that cross it at any time of the run)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

SCENARIO = Path(__file__).parent / "scenarios" / "cell-path-change.toml"


def test_a_flow_moved_onto_a_cell_checks_and_runs(airlink_cli, tmp_path: Path) -> None:
    checked = airlink_cli("check", SCENARIO)
    assert checked.exit_code == 0, checked.output
    out = tmp_path / "r"
    result = airlink_cli("run", SCENARIO, "--out", out)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert all(f["bytes_delivered"] > 0 for f in summary["flows"])
    flows = pd.read_parquet(out / "flows.parquet")
    a = flows[flows.flow == 0]
    after = a[a.time_ns >= 3_000_000_000].delivered_bytes
    assert after.iloc[-1] > after.iloc[0], "flow a goes on through the cell after the change"
    events = pd.read_parquet(out / "events.parquet")
    change = events[events.kind == "path_change"]
    assert list(change.flow) == [0]
