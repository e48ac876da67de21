"""Results tied to the code that made them (issue 24): manifests record the git commit, the core's
build and the date; a store refuses to mix runs of different builds unless told what to do."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import airlink
from airlink import experiment_run, store, version
from airlink.experiment import build_experiment
from airlink.studies import reproduction
from conftest import AIRLINK_COMMAND, REPO

PIPE = REPO / "scenarios/transport/pipe.toml"
OLD_BUILD = "0123456789abcdef"


def test_code_identity_names_the_commit_the_build_and_the_date() -> None:
    code = version.code_identity()
    assert code["core"] == version.core_build() and len(code["core"]) == 16
    assert code["date"].endswith("+00:00")  # UTC
    if (REPO / ".git").exists():
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True)
        if head.returncode == 0:
            assert code["commit"] == head.stdout.strip() and isinstance(code["dirty"], bool)


def test_without_git_the_commit_is_unknown_not_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_git(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise FileNotFoundError("git")

    monkeypatch.setattr(version.subprocess, "run", no_git)
    assert version.git_commit.__wrapped__() == (None, None)

    def hangs(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise subprocess.TimeoutExpired("git", version.GIT_TIMEOUT_S)

    monkeypatch.setattr(version.subprocess, "run", hangs)
    assert version.git_commit.__wrapped__() == (None, None)


def test_a_results_folder_and_a_reproduction_record_the_code(tmp_path: Path) -> None:
    r = airlink.run("scenarios/wipemu/validation.toml", overrides=["flow.0.bytes=50 kB"], out=tmp_path / "r")
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["code"]["core"] == version.core_build() and "commit" in manifest["code"]
    assert r.manifest["code"] == manifest["code"]
    out = tmp_path / "rep"
    out.mkdir()
    reproduction.write_report(out, lambda folder: None, {"study": "wipemu", "parts": [], "settings": {}})
    marker = json.loads((out / reproduction.MARKER).read_text())
    assert marker["core"] == marker["code"]["core"] == version.core_build()


def experiment(tmp_path: Path) -> Path:
    path = tmp_path / "exp.toml"
    path.write_text(f'[experiment]\nscenario = "{PIPE}"\n[vary]\nstop = ["1 s"]\n'
                    '"downlink.pipe.loss" = [0.0, 0.01]\n[repetitions]\ncount = 1\n')
    return path


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The seeds of the runs a sweep actually runs."""
    ran: list[int] = []
    real = experiment_run._run

    def run(text, source, seed, overrides, cancel, series):  # type: ignore[no-untyped-def]
        ran.append(seed)
        return real(text, source, seed, overrides, cancel, series)

    monkeypatch.setattr(experiment_run, "_run", run)
    return ran


def made_by(build: str | None, exp: Path, out: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sweep whose runs say they were made by ``build`` (None: an airlink that did not say)."""
    with monkeypatch.context() as m:
        m.setattr(experiment_run, "core_build", lambda: build)
        experiment_run.run_experiment(exp, out, jobs=2)


def test_a_store_records_each_runs_build(tmp_path: Path) -> None:
    out = experiment_run.run_experiment(experiment(tmp_path), tmp_path / "s", jobs=2)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["code"]["core"] == version.core_build() and "mixed_code" not in manifest
    records = [json.loads(p.read_text()) for p in (out / "runs").glob("*.json")]
    assert len(records) == 2 and {r["core"] for r in records} == {version.core_build()}
    index = [json.loads(line) for line in (out / store.INDEX).read_text().splitlines()]
    assert {e["core"] for e in index if "run" in e} == {version.core_build()}
    assert json.loads(next((out / "series").glob("*/manifest.json")).read_text())["code"]["core"] == version.core_build()


def test_runs_of_another_build_are_refused_then_rerun_or_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               counted: list[int]) -> None:
    exp = experiment(tmp_path)
    for flags in ({"rerun_stale": True}, {"allow_mixed": True}):
        out = tmp_path / f"s-{next(iter(flags))}"
        made_by(OLD_BUILD, exp, out, monkeypatch)
        counted.clear()
        with pytest.raises(store.StoreError) as refused:
            airlink.sweep(exp, out, progress=False)
        message = str(refused.value)
        assert f"2 stored runs this experiment uses come from other code (2 from another build of the core, " \
               f"{OLD_BUILD}; this is {version.core_build()})" in message, message
        assert "--rerun-stale" in message and "--allow-mixed" in message
        assert counted == []  # refused before anything ran
        airlink.sweep(exp, out, progress=False, **flags)
        manifest = json.loads((out / "manifest.json").read_text())
        if "rerun_stale" in flags:
            assert len(counted) == 2 and "mixed_code" not in manifest
            airlink.sweep(exp, out, progress=False)  # all of this build now: nothing refused
        else:
            assert counted == [] and manifest["mixed_code"]["runs"] == 2
    with pytest.raises(ValueError, match="exclude each other"):
        airlink.sweep(exp, out, allow_mixed=True, rerun_stale=True)


def test_runs_that_do_not_say_their_build_are_stale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exp, out = experiment(tmp_path), tmp_path / "s"
    made_by(None, exp, out, monkeypatch)  # as an airlink from before builds were recorded
    with pytest.raises(store.StoreError, match="2 stored runs .* \\(2 from an airlink that did not record its build of the core\\)"):
        airlink.sweep(exp, out, progress=False)


def test_the_cli_refuses_a_stale_store_and_says_how_to_proceed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exp, out = experiment(tmp_path), tmp_path / "s"
    made_by(OLD_BUILD, exp, out, monkeypatch)
    refused = subprocess.run([*AIRLINK_COMMAND, "sweep", str(exp), "--out", str(out)], capture_output=True, text=True)
    assert refused.returncode == 1 and "--rerun-stale" in refused.stderr and "Traceback" not in refused.stderr
    done = subprocess.run([*AIRLINK_COMMAND, "sweep", str(exp), "--out", str(out), "--rerun-stale"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "exp.toml: 0 reused, 2 new, 2 of them made by another build and run again" in done.stderr
    both = subprocess.run([*AIRLINK_COMMAND, "sweep", str(exp), "--out", str(out), "--rerun-stale", "--allow-mixed"],
                          capture_output=True, text=True)
    assert both.returncode == 2 and "choose one" in both.stderr


def test_a_reproduction_runs_again_what_another_build_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          counted: list[int]) -> None:
    points = [((("loss", loss),), ("stop=1 s", f"downlink.pipe.loss={loss}")) for loss in (0.0, 0.01)]
    exp = build_experiment("pipe-part", "a part", PIPE, points, (1, 2), metrics=("flows.*.goodput_bps",))
    part = tmp_path / "store" / "part"
    with monkeypatch.context() as m:
        m.setattr(experiment_run, "core_build", lambda: OLD_BUILD)
        reproduction.run_part(exp, part, jobs=2, progress=False)
    counted.clear()
    records = reproduction.run_part(exp, part, jobs=2, progress=False)
    assert len(counted) == 4 and {r["core"] for r in records.values()} == {version.core_build()}
    counted.clear()
    reproduction.run_part(exp, part, jobs=2, progress=False)
    assert counted == []  # this build's runs are reused
