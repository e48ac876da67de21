"""One rule for every output folder (airlink.atomic): airlink writes only into a new or empty
folder or one it marked for the same kind of output; --force replaces only such a folder; no
device, FIFO, symbolic link or system path is ever written. Reproductions and sweeps resume
after kill -9, and Ctrl-C says what was kept."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import airlink
from airlink import atomic
from airlink.cli import cli
from conftest import AIRLINK_COMMAND, REPO

PIPE = "scenarios/transport/pipe.toml"
QUICK = ("--set", "stop=1 s")
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")


def run_cli(*args: object) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def refused(result: Result, *words: str) -> None:
    """Refused with one line and exit code 1 or 2, no traceback."""
    assert result.exit_code in (1, 2), result.output
    assert "Traceback" not in result.output
    for word in words:
        assert word in result.stderr, result.stderr


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# --- run --------------------------------------------------------------------------------------


@root_only
def test_force_never_replaces_a_device(tmp_path: Path) -> None:
    device = tmp_path / "d"
    os.mknod(device, 0o644 | 0o020000, os.makedev(1, 3))  # a character device, as /dev/null
    refused(run_cli("run", PIPE, *QUICK, "--out", device, "--force"), "character device")
    assert device.is_char_device()
    refused(run_cli("run", PIPE, *QUICK, "--out", "/dev/null", "--force"), "under /dev")
    assert Path("/dev/null").is_char_device()


def test_force_never_replaces_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    refused(run_cli("run", PIPE, *QUICK, "--out", fifo, "--force"), "FIFO")
    assert fifo.is_fifo()


def test_force_never_follows_a_symlink_to_an_outside_folder(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("mine")
    (tmp_path / "link").symlink_to(outside)
    refused(run_cli("run", PIPE, *QUICK, "--out", tmp_path / "link", "--force"), "symbolic link")
    assert listing(outside) == ["keep"] and (tmp_path / "link").is_symlink()


@pytest.mark.parametrize("name", ["manifest.json", "report.json"])
def test_a_foreign_folder_with_a_common_file_name_is_not_replaced(tmp_path: Path, name: str) -> None:
    web = tmp_path / "web"
    web.mkdir()
    (web / name).write_text("{}")
    (web / "index.html").write_text("<p>a web application</p>")
    refused(run_cli("run", PIPE, *QUICK, "--out", web, "--force"), "not an airlink results folder", ".airlink")
    assert listing(web) == sorted([name, "index.html"])


def test_a_results_folder_from_before_markers_is_refused_with_advice(tmp_path: Path) -> None:
    out = tmp_path / "r"
    assert run_cli("run", PIPE, *QUICK, "--out", out).exit_code == 0
    (out / atomic.MARKER).unlink()  # as an older airlink wrote it
    refused(run_cli("run", PIPE, *QUICK, "--out", out, "--force"), "older airlink", "move it aside")
    assert (out / "manifest.json").is_file()


def test_marked_results_are_replaced_with_force_and_an_empty_folder_is_used(tmp_path: Path) -> None:
    out = tmp_path / "r"
    out.mkdir()  # empty: used without --force
    assert run_cli("run", PIPE, *QUICK, "--out", out).exit_code == 0
    marker = json.loads((out / atomic.MARKER).read_text())
    assert marker["kind"] == "results" and len(marker["id"]) == 32
    refused(run_cli("run", PIPE, *QUICK, "--out", out), "exists", "--force")
    assert run_cli("run", PIPE, *QUICK, "--out", out, "--force").exit_code == 0
    # another kind of airlink output is not a results folder, even with --force
    store = tmp_path / "store"
    store.mkdir()
    atomic.write_marker(store, "store")
    (store / "runs").mkdir()
    refused(run_cli("run", PIPE, *QUICK, "--out", store, "--force"), "sweep store, not a results folder")


@pytest.mark.parametrize(("out", "words"), [
    ("/sys/x", ["under /sys"]),
    ("/proc/x", ["under /proc"]),
    ("a" * 300, ["300 bytes"]),
    ("file/sub", ["is a file, not a folder"]),
])
def test_unusable_paths_are_one_line_errors(tmp_path: Path, out: str, words: list[str]) -> None:
    (tmp_path / "file").write_text("x")
    path = out if out.startswith("/") else tmp_path / out
    result = run_cli("run", PIPE, *QUICK, "--out", path)
    refused(result, *words)
    assert len(result.stderr.strip().splitlines()) == 1
    assert listing(tmp_path) == ["file"]


def test_emulate_refuses_before_it_starts(tmp_path: Path) -> None:
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    refused(run_cli("emulate", PIPE, "--out", fifo, "--force"), "FIFO")


# --- sweep and report ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("store")
    experiment = folder / "exp.toml"
    experiment.write_text(f'[experiment]\nscenario = "{REPO / PIPE}"\n[vary]\nstop = ["1 s"]\n'
                          '[repetitions]\ncount = 2\n', encoding="utf-8")
    result = run_cli("sweep", experiment, "--out", folder / "s.sweep", "--jobs", "1")
    assert result.exit_code == 0, result.output
    return folder / "s.sweep"


def test_a_sweep_store_is_marked_and_only_a_store_is_swept_into(small_store: Path, tmp_path: Path) -> None:
    assert atomic.read_marker(small_store)["kind"] == "store"
    results = tmp_path / "r"
    assert run_cli("run", PIPE, *QUICK, "--out", results).exit_code == 0
    refused(run_cli("sweep", small_store.parent / "exp.toml", "--out", results), "results folder, not a sweep store")
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    refused(run_cli("sweep", small_store.parent / "exp.toml", "--out", fifo), "FIFO")


def test_report_force_never_deletes_a_foreign_folder(small_store: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "thesis.tex").write_text("years of work")
    refused(run_cli("report", small_store, "--out", victim, "--force"), "not an airlink report folder")
    assert listing(victim) == ["thesis.tex"]
    out = tmp_path / "rep"
    assert run_cli("report", small_store, "--out", out).exit_code == 0
    refused(run_cli("report", small_store, "--out", out), "exists")
    assert run_cli("report", small_store, "--out", out, "--force").exit_code == 0
    assert atomic.read_marker(out)["kind"] == "report"


# --- plot ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def one_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("run") / "r"
    airlink.run(REPO / PIPE, overrides=["stop=1 s"], out=out)
    return out


def test_plot_refuses_to_overwrite_without_force_and_a_file_it_did_not_draw(one_run: Path, tmp_path: Path) -> None:
    png = tmp_path / "p.png"
    assert run_cli("plot", one_run, "--out", png).exit_code == 0
    assert atomic.png_marked(png)
    before = png.read_bytes()
    refused(run_cli("plot", one_run, "--out", png), "exists", "--force")
    assert png.read_bytes() == before
    assert run_cli("plot", one_run, "--out", png, "--force").exit_code == 0
    mine = tmp_path / "photo.png"
    mine.write_bytes(b"\x89PNG\r\n\x1a\n not airlink's")
    refused(run_cli("plot", one_run, "--out", mine, "--force"), "not a plot airlink wrote")
    assert mine.read_bytes() == b"\x89PNG\r\n\x1a\n not airlink's"


def test_plot_refuses_other_names_and_non_regular_targets(one_run: Path, tmp_path: Path) -> None:
    refused(run_cli("plot", one_run, "--out", tmp_path / "x.txt"), ".png")
    refused(run_cli("plot", one_run, "--out", "/dev/full.png"), "under /dev")
    fifo = tmp_path / "f.png"
    os.mkfifo(fifo)
    refused(run_cli("plot", one_run, "--out", fifo, "--force"), "FIFO")
    assert listing(tmp_path) == ["f.png"]


def test_plot_to_dev_full_fails(one_run: Path) -> None:
    # /dev/full itself (not a .png name) is refused as a bad name; its write error path is
    # covered by write_file refusing any non-regular target.
    result = run_cli("plot", one_run, "--out", "/dev/full")
    assert result.exit_code != 0 and "Traceback" not in result.output


def test_write_errors_of_a_plot_are_reported(tmp_path: Path) -> None:
    def full(path: Path) -> None:
        raise OSError(28, "No space left on device", str(path))

    with pytest.raises(atomic.OutputError, match="No space left on device"):
        atomic.write_file(tmp_path / "p.png", full)
    assert listing(tmp_path) == []


# --- reproductions ------------------------------------------------------------------------------

REPRODUCE = ["reproduce", "wipemu", "--only", "fig4", "--seeds", "10", "--arq-limits", "3,30", "--jobs", "1"]


def records(out: Path) -> dict[str, int]:
    """The finished runs of a reproduction's stores: record file -> inode (a rewrite changes it)."""
    return {str(p.relative_to(out)): p.stat().st_ino for p in (out / "store").glob("*/runs/*.json")}


def test_reproduce_never_deletes_a_folder_with_report_json(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "report.json").write_text("{}")
    (victim / "notes").write_text("mine")
    for force in ((), ("--force",)):
        refused(run_cli("reproduce", "wipemu", "--seeds", "1", "--arq-limits", "3", "--out", victim, *force),
                "not an airlink reproduction report")
        assert listing(victim) == ["notes", "report.json"]


def test_a_reproduction_killed_with_sigkill_resumes_without_redoing_finished_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from airlink import experiment_run

    out = tmp_path / "rep"
    proc = subprocess.Popen([*AIRLINK_COMMAND, *REPRODUCE, "--out", str(out)], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while len(records(out)) < 5 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    at_kill = records(out)
    assert 5 <= len(at_kill) < 60, len(at_kill)
    assert atomic.read_marker(out)["kind"] == "reproduction"

    redone: list[object] = []
    real = experiment_run._run
    monkeypatch.setattr(experiment_run, "_run", lambda *a: redone.append(a) or real(*a))
    result = run_cli(*REPRODUCE, "--out", out)
    assert result.exit_code == 0, result.output
    after = records(out)
    assert len(after) == 60 and len(redone) == 60 - len(at_kill)
    assert {k: after[k] for k in at_kill} == at_kill  # no finished run was written again
    # --force with the same settings keeps the runs too: nothing runs again
    redone.clear()
    assert run_cli(*REPRODUCE, "--out", out, "--force").exit_code == 0
    assert redone == [] and records(out) == after


# --- Ctrl-C -------------------------------------------------------------------------------------


def _interrupt(args: list[str], until: callable, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.Popen([*AIRLINK_COMMAND, *args], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 120
    while not until() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(args, proc.returncode, "", err)


def test_sigint_on_a_reproduction_says_what_was_kept(tmp_path: Path) -> None:
    out = tmp_path / "rep"
    done = _interrupt([*REPRODUCE, "--out", str(out)], lambda: len(records(out)) >= 3, tmp_path)
    assert done.returncode == 130, done.stderr
    kept = len(records(out))
    assert done.stderr.strip() == (f"airlink: interrupted: {kept} finished runs kept in {out / 'store'}; "
                                   "run the same command again to resume")


def test_sigint_on_a_sweep_says_what_was_kept(tmp_path: Path) -> None:
    experiment = tmp_path / "exp.toml"
    experiment.write_text(f'[experiment]\nscenario = "{REPO / PIPE}"\n[vary]\nstop = ["20 s"]\n'
                          '[repetitions]\ncount = 40\n', encoding="utf-8")
    out = tmp_path / "s.sweep"
    done = _interrupt(["sweep", str(experiment), "--out", str(out), "--jobs", "1"],
                      lambda: len(list((out / "runs").glob("*.json"))) >= 2, tmp_path)
    assert done.returncode == 130, done.stderr
    kept = len(list((out / "runs").glob("*.json")))
    assert done.stderr.strip().endswith(f"airlink: interrupted: {kept} of 40 runs kept in {out}; "
                                        "run the same command again to resume")
    assert atomic.read_marker(out)["kind"] == "store"


def _loaded_core(pid: int) -> bool:
    try:
        return "_core" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


@pytest.mark.parametrize("delay", [0.0, 0.05, 0.15, 0.3, 0.6])
def test_ctrl_c_while_loading_is_one_line_and_130(tmp_path: Path, delay: float) -> None:
    # From the moment airlink's command module runs (it loads the core first thing after taking
    # Ctrl-C), through the imports of pandas and the rest, and into the sweep. The interpreter's
    # own start-up before that (a few tens of ms) is not airlink's to handle.
    experiment = tmp_path / "exp.toml"
    experiment.write_text(f'[experiment]\nscenario = "{REPO / PIPE}"\n[vary]\nstop = ["60 s"]\n'
                          '[repetitions]\ncount = 40\n', encoding="utf-8")
    proc = subprocess.Popen([*AIRLINK_COMMAND, "sweep", str(experiment), "--out", str(tmp_path / "s"), "--jobs", "1"],
                            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not _loaded_core(proc.pid) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.001)
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("airlink:")]
    assert len(lines) == 1, err
