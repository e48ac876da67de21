"""Progress and honesty about reuse (issue 24): with stderr a pipe (a log, CI) a sweep prints
plain progress lines, every sweep and reproduction part ends saying how many runs were reused and
how many were new, and ``--dask`` starts no cluster when nothing needs running."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from airlink import experiment_run
from conftest import REPO

PIPE = REPO / "scenarios/transport/pipe.toml"
# The CLI with progress lines every 10 ms instead of 10 s (the interval is internal).
FAST_PROGRESS = [sys.executable, "-c", "import sys; from airlink import experiment_run; "
                 "experiment_run.PROGRESS_INTERVAL_S = 0.01; from airlink.cli import main; "
                 "sys.argv[0] = 'airlink'; main()"]


def experiment(tmp_path: Path) -> Path:
    path = tmp_path / "exp.toml"
    path.write_text(f'[experiment]\nscenario = "{PIPE}"\n[vary]\nstop = ["2 s"]\n'
                    '"downlink.pipe.loss" = [0.0, 0.01]\n[repetitions]\ncount = 2\n')
    return path


def test_a_sweep_into_a_pipe_prints_progress_lines_and_what_it_reused(tmp_path: Path) -> None:
    exp, out = experiment(tmp_path), tmp_path / "s"
    first = subprocess.run([*FAST_PROGRESS, "sweep", str(exp), "--out", str(out), "--jobs", "1"],
                           capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    lines = first.stderr.splitlines()
    progress = [line for line in lines if " runs done (" in line]
    assert progress, first.stderr  # at least one line while it ran (the sweep takes longer than 10 ms)
    assert all(line.startswith("airlink: exp.toml: ") and " elapsed" in line for line in progress)
    assert "\r" not in first.stderr  # plain lines, not a bar redrawn
    assert lines[-1].startswith("airlink: exp.toml: 0 reused, 4 new (")
    again = subprocess.run([*FAST_PROGRESS, "sweep", str(exp), "--out", str(out)], capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert again.stderr.splitlines()[-1].startswith("airlink: exp.toml: 4 reused, 0 new (")


def test_progress_lines_say_the_part_the_counts_and_the_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    said: list[str] = []
    monkeypatch.setattr(experiment_run.Progress, "_say", lambda self, text: said.append(text))
    monkeypatch.setattr(experiment_run, "PROGRESS_INTERVAL_S", 0.001)
    real = experiment_run._run

    def after_a_line(*args):  # type: ignore[no-untyped-def]
        # each run starts once a progress line was said since it was handed out: every count
        # from 0 to 3 done is then said, however fast the machine
        before, deadline = len(said), time.monotonic() + 60
        while len(said) == before and time.monotonic() < deadline:
            time.sleep(0.001)
        return real(*args)

    monkeypatch.setattr(experiment_run, "_run", after_a_line)
    experiment_run.run_experiment(experiment(tmp_path), tmp_path / "s", jobs=1, progress=True)
    assert any(line.startswith("exp.toml: 0/4 runs done (0 reused, 0 new, 0 failed), ") for line in said), said
    assert any(line.startswith("exp.toml: 3/4 runs done (0 reused, 3 new, 0 failed), ") for line in said), said
    assert all(line.endswith(" elapsed") for line in said[:-1])
    assert said[-1].startswith("exp.toml: 0 reused, 4 new (")


def test_no_progress_asked_prints_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    experiment_run.run_experiment(experiment(tmp_path), tmp_path / "s", jobs=2)
    assert capsys.readouterr().err == ""


def test_dask_starts_no_cluster_when_nothing_needs_running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("distributed")
    exp, out = experiment(tmp_path), tmp_path / "s"
    experiment_run.run_experiment(exp, out, jobs=2)

    def connect(self):  # type: ignore[no-untyped-def]
        raise AssertionError("a cluster was started for a sweep with nothing to run")

    monkeypatch.setattr(experiment_run._Dask, "_connect", connect)
    experiment_run.run_experiment(exp, out, dask="local:2")


def test_a_reproduction_part_says_what_it_reused(tmp_path: Path, airlink_cli) -> None:
    args = ["reproduce", "wipemu", "--only", "fig4", "--seeds", "2", "--arq-limits", "3,30", "--jobs", "2",
            "--out", str(tmp_path / "rep")]
    first = airlink_cli(*args)
    assert first.exit_code == 0, first.output
    assert "airlink: wipemu-figures: 0 reused, 12 new (" in first.stderr
    again = airlink_cli(*args)
    assert "airlink: wipemu-figures: 12 reused, 0 new (" in again.stderr
    assert not experiment_run.progress_lines.get()  # plain lines only around the command's reproduction
