"""`airlink reproduce afc`: the TCP-AFC study's Table 2 trend, figures and congestion claim."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from airlink import experiment_run
from airlink.studies import afc


def test_stage_throughput_uses_the_first_sample_past_each_stage() -> None:
    samples = [(1_000_000_000, 400_000), (2_000_000_000, 1_000_000), (4_000_000_000, 2_500_000)]
    out = afc.stage_throughputs(samples, end_s=30.0, total=20_000_000)
    assert out[0.5] == 1_000_000 / 2.0
    assert out[1] == 1_000_000 / 2.0
    assert out[2] == 2_500_000 / 4.0
    assert out[5] != out[5]  # not reached: NaN
    assert out[20] == 20_000_000 / 30.0


def test_reproduce_afc_writes_its_report(airlink_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "afc"
    result = airlink_cli("reproduce", "afc", "--seeds", "2", "--out", out, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    effective = report["table2"]["effective"]
    assert [r["stage_mb"] for r in effective] == list(afc.STAGES_MB)
    # AFC ahead of SACK TCP at the end of the transfer, by about the study's factor.
    assert 1.5 < effective[-1]["ratio"] < 3.5
    assert {c["claim"]: c["status"] for c in report["claims"]} == {"afc-ahead": "PASS", "afc-like-tcp-when-congested": "PASS"}
    names = {p.name for p in out.iterdir()}
    assert {"table2_effective.csv", "table2_effective.png", "fig6.png", "fig7.png", "congestion.csv", "README.md",
            "index.html", "reproduction.json", "store"} <= names
    page = (out / "index.html").read_text()
    assert all(f'src="{png}"' in page for png in ("table2_effective.png", "table2_nominal.png", "fig6.png", "fig7.png"))
    assert "afc-ahead" in page and '<td class="pass">PASS</td>' in page
    assert result.stdout.count('"stage_mb"') == 2 * len(afc.STAGES_MB)
    # Again into the same folder: nothing runs (every run is in the stores), the same numbers.
    monkeypatch.setattr(experiment_run, "_run", lambda *a: pytest.fail(f"ran again: {a[3]}"))
    again = airlink_cli("reproduce", "afc", "--seeds", "2", "--out", out, "--json", "--only", "congestion")
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout) == report


def test_arq_limits_are_refused_outside_wipemu(airlink_cli, tmp_path: Path) -> None:
    result = airlink_cli("reproduce", "afc", "--arq-limits", "3,4", "--out", tmp_path / "x")
    assert result.exit_code == 2
    assert "no ARQ limits" in result.output
