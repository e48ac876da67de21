"""`airlink reproduce wipemu`: Table II against theory (the acceptance check of the core) and a
reduced reproduction that must produce every file."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from airlink.atomic import FolderExistsError
from airlink.cli import cli
from airlink.studies import wipemu
from conftest import REPO, partial_folders

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_table2_matches_theory_within_a_tenth_of_a_percent(airlink_cli, tmp_path: Path) -> None:
    result = airlink_cli("reproduce", "wipemu", "--only", "table2", "--json", "--out", tmp_path / "report")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [row["k"] for row in rows] == list(range(1, 9))
    for row in rows:
        assert list(row) == ["k", "theoretical_bps", "measured_bps", "header_bps", "truncation_bps", "compensated_bps", "ratio",
                             "study_measured_bps", "measured_over_study"]
        assert row["theoretical_bps"] == 162_000 * row["k"]
        # The study's own measured column beside airlink's.
        assert row["study_measured_bps"] == wipemu.STUDY_TABLE2_MEASURED[row["k"]]
        assert row["measured_over_study"] == pytest.approx(row["measured_bps"] / row["study_measured_bps"])
    report = "\n".join(
        f"k={r['k']}: measured {r['measured_bps']:.1f}, compensated {r['compensated_bps']:.1f} of {r['theoretical_bps']:.0f} bit/s, ratio {r['ratio']:.6f}"
        for r in rows
    )
    assert all(abs(r["ratio"] - 1) <= 0.001 for r in rows), "Table II drifts from theory:\n" + report
    folder = tmp_path / "report"
    assert {"table2.csv", "index.html", "README.md", "runs.csv", "report.json"} <= {p.name for p in folder.iterdir()}
    with (folder / "table2.csv").open() as f:
        assert len(list(csv.DictReader(f))) == 8


@pytest.fixture(scope="module")
def reduced_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """3 seeds, ARQ limits 3 and 30, 300 kB transfers: every part, in seconds instead of an hour."""
    out = tmp_path_factory.mktemp("reproduce") / "wipemu"
    args = ["reproduce", "wipemu", "--seeds", "3", "--arq-limits", "3,30", "--set", "flow.0.bytes=300 kB", "--out", str(out), "--jobs", "2"]
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(REPO)
        result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return out, result.stdout


def test_reduced_reproduction_writes_every_file(reduced_report: tuple[Path, str]) -> None:
    out, stdout = reduced_report
    names = {p.name for p in out.iterdir()}
    expected = {"table2.csv", "runs.csv", "claims.csv", "readings.csv", "report.json", "index.html", "README.md"}
    expected |= {f"{f}.{ext}" for f in wipemu.FIGURES for ext in ("csv", "png")}
    assert expected <= names, expected - names
    for figure in wipemu.FIGURES:
        assert (out / f"{figure}.png").read_bytes()[:8] == PNG_MAGIC
        with (out / f"{figure}.csv").open() as f:
            rows = list(csv.DictReader(f))
        assert len(rows) == 3 * 2  # three curves, two ARQ limits
        assert {"throughput_kbps_mean", "throughput_kbps_ci95", "n", "frame_error_share_mean", "time_share_bpsk_mean"} <= set(rows[0])
        assert all(row["n"] == "3" for row in rows)
    with (out / "runs.csv").open() as f:
        runs = list(csv.DictReader(f))
    # 8 Table II runs + 7 distinct curves x 2 limits x 3 seeds (figures share runs) + the readings' own.
    assert len(runs) == 8 + 7 * 2 * 3 + len(wipemu.READINGS) * len(wipemu.READING_CURVES) * 2 * 3
    assert {"flow0.goodput_bps", "downlink.frame_errors", "overrides", "run_seed"} <= set(runs[0])
    assert partial_folders(out.parent) == [] and not list(out.glob(".report.partial-*"))
    assert "report:" in stdout and "Table II" in stdout
    # Every run is in the part's result store, which `airlink report` and `airlink.load` read.
    import airlink

    stored = airlink.load(out / "store" / "figures")
    assert len(stored) == 7 * 2 * 3 and set(stored["key"]) <= {r["run_key"] for r in runs}


def test_reduced_report_pages_show_table_figures_and_claims(reduced_report: tuple[Path, str]) -> None:
    out, _ = reduced_report
    page = (out / "index.html").read_text()
    readme = (out / "README.md").read_text()
    for figure in wipemu.FIGURES:
        assert f'src="{figure}.png"' in page and f"]({figure}.png)" in readme
    assert "Table II" in page and "Table II" in readme
    for claim in wipemu.CLAIMS:
        assert claim.statement in readme
    assert "Deviation from the study: 3 seeds per point" in readme
    report = json.loads((out / "report.json").read_text())
    assert set(report) == {"table2", "fig4", "fig5", "fig6", "fig7", "claims", "readings"}
    assert [r["reading"] for r in report["readings"]] == list(wipemu.READINGS)
    assert all(r[c.key] in ("PASS", "FAIL", "not checked") for r in report["readings"] for c in wipemu.CLAIMS)
    assert "The study's open readings" in readme and 'href="readings.csv"' in page
    assert all(c["status"] in ("PASS", "FAIL", "not checked") for c in report["claims"])
    assert len(report["fig6"]) == 6 and report["fig6"][0]["figure"] == "fig6"


def test_only_one_figure_prints_its_points(airlink_cli, tmp_path: Path) -> None:
    result = airlink_cli(
        "reproduce", "wipemu", "--only", "fig4", "--seeds", "2", "--arq-limits", "30",
        "--set", "flow.0.bytes=100 kB", "--json", "--out", tmp_path / "r",
    )
    assert result.exit_code == 0, result.output
    points = json.loads(result.stdout)
    assert [(p["curve"], p["arq_limit"], p["n"]) for p in points] == [("4qam", 30, 2), ("bpsk", 30, 2), ("8qam", 30, 2)]
    assert {p.name for p in (tmp_path / "r").iterdir()} >= {"fig4.csv", "fig4.png", "index.html"}


def test_a_rerun_reuses_the_stored_runs_and_only_merges(reduced_report: tuple[Path, str], tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """--only into a report of the same settings runs nothing (every run is in its store) and keeps
    every other part; the report is the same as before."""
    from airlink import experiment_run

    out = tmp_path / "wipemu"
    shutil.copytree(reduced_report[0], out)
    before = {name: (out / name).read_bytes() for name in ("report.json", "table2.csv", "fig5.csv", "claims.csv")}
    runs = []
    real = experiment_run._run
    monkeypatch.setattr(experiment_run, "_run", lambda *a: runs.append(a) or real(*a))
    monkeypatch.chdir(REPO)
    args = ["reproduce", "wipemu", "--only", "fig4", "--seeds", "3", "--arq-limits", "3,30", "--set", "flow.0.bytes=300 kB",
            "--out", str(out), "--json"]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert runs == []
    assert [(p["curve"], p["arq_limit"]) for p in json.loads(result.stdout)] == [(c, x) for c in ("4qam", "bpsk", "8qam") for x in (3, 30)]
    assert {name: (out / name).read_bytes() for name in before} == before
    assert json.loads((out / "reproduction.json").read_text())["parts"] == list(wipemu.PARTS)
    assert "merged fig4 into" in result.stderr


def test_only_with_other_settings_is_refused_without_force(reduced_report: tuple[Path, str], tmp_path: Path) -> None:
    out = tmp_path / "wipemu"
    shutil.copytree(reduced_report[0], out)
    names = sorted(p.name for p in out.iterdir())
    args = ["reproduce", "wipemu", "--only", "table2", "--set", "flow.0.bytes=200 kB", "--out", str(out)]
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(REPO)
        refused = CliRunner().invoke(cli, args, catch_exceptions=False)
        assert refused.exit_code == 1, refused.output
        assert "other settings" in refused.stderr and "--force" in refused.stderr
        assert sorted(p.name for p in out.iterdir()) == names
        forced = CliRunner().invoke(cli, [*args, "--force"], catch_exceptions=False)
    assert forced.exit_code == 0, forced.output
    assert not (out / "fig4.png").exists() and (out / "table2.csv").exists()
    assert json.loads((out / "reproduction.json").read_text())["parts"] == ["table2"]


def test_a_folder_that_is_no_report_is_not_deleted(airlink_cli, tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    result = airlink_cli("reproduce", "wipemu", "--only", "table2", "--out", out)
    assert result.exit_code == 1
    assert "not an airlink reproduction report" in result.output
    assert (out / "notes.txt").read_text() == "keep me"
    forced = airlink_cli("reproduce", "wipemu", "--only", "table2", "--out", out, "--force")
    assert forced.exit_code == 1 and sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def test_plan_merges_replaces_or_refuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from airlink.studies import reproduction as rp

    parts, same = wipemu.PARTS, {"seeds": 3}

    def report(name: str, marker: dict | None) -> Path:
        out = tmp_path / name
        out.mkdir()
        (out / "report.json").write_text("{}")
        if marker is not None:
            (out / rp.MARKER).write_text(json.dumps({"study": "wipemu", "airlink": rp.version(), "core": rp.core_build(),
                                                     **marker}))
        return out

    assert rp.plan(tmp_path / "new", "wipemu", parts, ["fig5"], same, False) == ("fig5",)
    merged = report("merged", {"parts": ["fig6", "table2"], "settings": same})
    assert rp.plan(merged, "wipemu", parts, ["fig4"], same, False) == ("table2", "fig4", "fig6")
    covered = report("covered", {"parts": ["fig4"], "settings": {"seeds": 5}})
    assert rp.plan(covered, "wipemu", parts, parts, same, False) == parts  # nothing of it is lost
    # a folder with report.json but no airlink marker is never taken, even for a whole reproduction
    old = report("old", None)
    for force in (False, True):
        with pytest.raises(FolderExistsError, match="not an airlink reproduction report"), \
                rp.report_folder(old, force=force):
            pass
    assert sorted(p.name for p in old.iterdir()) == ["report.json"]
    # a claimed folder without reproduction.json is a killed reproduction: its store is resumed
    assert rp.plan(old, "wipemu", parts, ["fig4"], same, False) == ("fig4",) and old.exists()
    other = report("other", {"parts": ["table2"], "settings": same})
    with pytest.raises(rp.ReproductionError, match="reproduction of wipemu, not afc"):
        rp.plan(other, "afc", ("table2",), ["table2"], same, False)
    rebuilt = report("rebuilt", {"parts": ["fig4"], "settings": same})
    # another build of the core: its runs may differ, so they are not reused
    monkeypatch.setattr(rp, "core_build", lambda: "another build")
    with pytest.raises(rp.ReproductionError, match="another build of airlink"):
        rp.plan(merged, "wipemu", parts, ["fig4"], same, False)
    # --force: the report is replaced when written; the stored runs stay, and those of the other
    # build are run again when a part needs them (run_part, the sweeps' rule)
    (merged / rp.STORE / "fig4").mkdir(parents=True)
    assert rp.plan(merged, "wipemu", parts, ["fig4"], same, True) == ("fig4",)
    assert (merged / rp.STORE / "fig4").exists() and (merged / "report.json").exists()
    assert rp.plan(rebuilt, "wipemu", parts, ["fig4", "fig5"], same, False) == ("fig4", "fig5") and rebuilt.exists()
