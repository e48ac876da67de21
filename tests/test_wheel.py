"""airlink installed as a Python tool: the wheel `pip wheel .` builds (maturin), installed into a
fresh virtual environment and used from a folder far from the source tree; and the core built
without the emulator, which must still simulate and say clearly that it cannot emulate.

Slow (marked `slow`; `pytest -m 'not slow'` leaves it out): both builds use the repository's
`target/`, so after `make setup` (or the Rust tests) only the binding is compiled again, and the
fresh environment's dependencies come from pip's cache.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow

SCENARIO = """\
name = "wheel-check"
stop = "6 s"
[downlink.pipe]
rate = "2 Mbit/s"
delay = "20 ms"
loss = 0.01
[[flow]]
protocol = "tcp"
congestion = "reno"
"""

EXPERIMENT = """\
[experiment]
scenario = "pipe.toml"
seed = 1
metrics = ["flows.*.goodput_bps"]
[vary]
"downlink.pipe.loss" = [0.0, 0.02]
[repetitions]
rule = "fixed"
count = 2
"""

NO_EMULATION = "this build has no emulation"


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of a user's shell: no virtual environment, no source-tree hints."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "AIRLINK_SCENARIOS", "PYTHONHOME")}
    env["CARGO_TARGET_DIR"] = str(REPO / "target")  # the repository's build, reused
    env.update(extra)
    return env


def sh(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    started = time.monotonic()
    p = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env or clean_env(), capture_output=True, text=True, timeout=timeout)
    print(f"$ {' '.join(map(str, cmd))}  ({time.monotonic() - started:.1f} s, exit {p.returncode})")
    return p


def ok(p: subprocess.CompletedProcess[str]) -> str:
    assert p.returncode == 0, f"exit {p.returncode}\nstdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-3000:]}"
    return p.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with the wheel `pip wheel .` built; returns its bin folder."""
    base = tmp_path_factory.mktemp("wheel")
    wheels = base / "wheels"
    ok(sh([sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "-q", "-w", wheels], cwd=REPO))
    (wheel,) = wheels.glob("airlink-*.whl")
    print(f"wheel: {wheel.name}, {wheel.stat().st_size / 1e6:.1f} MB")
    ok(sh([sys.executable, "-m", "venv", base / "venv"], cwd=base))
    bin_dir = base / "venv" / "bin"
    ok(sh([bin_dir / "python", "-m", "pip", "install", "-q", wheel], cwd=base))
    return bin_dir


def test_wheel_runs_a_scenario_and_a_sweep_outside_the_source_tree(installed: Path, tmp_path: Path) -> None:
    work = tmp_path / "study"  # nothing of the source tree here: no scenarios/ folder
    work.mkdir()
    (work / "pipe.toml").write_text(SCENARIO)
    (work / "loss.toml").write_text(EXPERIMENT)
    airlink = installed / "airlink"

    assert ok(sh([airlink, "--version"], cwd=work)).strip()
    run = json.loads(ok(sh([airlink, "run", "pipe.toml", "--seed", "2", "--out", "run", "--json"], cwd=work)))
    assert run["completed"] and run["flows"][0]["goodput_bps"] > 0, run
    ok(sh([airlink, "sweep", "loss.toml", "--out", "loss.sweep", "--jobs", "2"], cwd=work))
    ok(sh([airlink, "report", "loss.sweep", "--out", "report"], cwd=work))
    assert (work / "report" / "index.html").is_file()

    # The Python API of the installed package, reading what the CLI wrote; a scenario as a dict.
    code = """
import airlink, airlink._core as core, pathlib, pandas as pd
assert not pathlib.Path(airlink.__file__).is_relative_to(pathlib.Path(REPO)), airlink.__file__
assert core.EMULATION, "a Linux wheel emulates"
try:
    from airlink.scenarios import scenario_dir
    scenario_dir()
    raise SystemExit("found a scenarios folder: " + str(scenario_dir()))
except FileNotFoundError:
    pass
r = airlink.read_results("run")
assert r.summary["flows"][0]["goodput_bps"] > 0 and len(r.flows) > 0
runs = pd.read_parquet("loss.sweep/runs.parquet")
assert len(runs) == 4, runs
pipe = {"stop": "3 s", "downlink": {"pipe": {"rate": "2 Mbit/s", "delay": "20 ms"}}, "flow": [{"protocol": "tcp"}]}
many = airlink.run(pipe, seeds=range(2))
print("goodput", many.summary["goodput_bps"].round().tolist())
""".replace("REPO", repr(str(REPO)))
    print(ok(sh([installed / "python", "-c", code], cwd=work)))


def test_core_without_the_emulator_simulates_and_says_it_cannot_emulate(tmp_path: Path) -> None:
    """`cargo build -p airlink-py --no-default-features`: the simulator's crate graph alone."""
    p = ok(sh(["cargo", "build", "--release", "-p", "airlink-py", "--no-default-features", "--message-format=json"], cwd=REPO))
    libs = [f for line in p.splitlines() if line.startswith("{")
            for msg in [json.loads(line)] if msg.get("reason") == "compiler-artifact" and msg["target"]["name"] == "_core"
            for f in msg["filenames"] if f.endswith((".so", ".dylib"))]
    assert libs, "cargo built no _core library"
    tree = ok(sh(["cargo", "tree", "-p", "airlink-py", "--no-default-features", "-e", "normal", "--prefix", "none"], cwd=REPO))
    assert "airlink-emu" not in tree

    # The Python package from the source tree with that core, used from elsewhere.
    pkg = tmp_path / "site"
    shutil.copytree(REPO / "python" / "airlink", pkg / "airlink", ignore=shutil.ignore_patterns("_core*.so", "__pycache__"))
    shutil.copy(libs[0], pkg / "airlink" / "_core.abi3.so")
    work = tmp_path / "work"
    work.mkdir()
    (work / "pipe.toml").write_text(SCENARIO)
    env = clean_env(PYTHONPATH=str(pkg))
    code = """
import airlink, airlink._core as core
assert not core.EMULATION
r = airlink.run("pipe.toml", seed=1)
assert r.summary["flows"][0]["goodput_bps"] > 0
try:
    from airlink.emulate import emulate
    emulate("pipe.toml", out="emu")
    raise SystemExit("emulated without an emulator")
except core.EmulationError as e:
    print(e)
"""
    out = ok(sh([sys.executable, "-c", code], cwd=work, env=env))
    assert NO_EMULATION in out and "`emulation` feature" in out

    cli = [sys.executable, "-m", "airlink"]
    emu = sh([*cli, "emulate", "pipe.toml", "--out", "emu"], cwd=work, env=env)
    assert emu.returncode == 1 and NO_EMULATION in emu.stderr, emu.stderr
    assert "Traceback" not in emu.stderr
    doctor = sh([*cli, "doctor"], cwd=work, env=env)
    assert doctor.returncode != 0 and NO_EMULATION in doctor.stdout, doctor.stdout
    assert not (work / "emu").exists()
