"""Every file airlink reads goes through one guarded reader (issue 27): regular files only, a size
cap per kind, UTF-8 and JSON checked with a place, and nothing of a file's content in an error.
Experiment files have typed errors and upper bounds for every value."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import airlink
from airlink import experiment as ex
from airlink import files
from airlink.results import ResultsError
from conftest import AIRLINK_COMMAND, REPO

PIPE = REPO / "scenarios/transport/pipe.toml"
SECRET = "s3cr3t-hash-4711"


def experiment(tmp_path: Path, body: str, scenario: str | Path = PIPE) -> Path:
    path = tmp_path / "exp.toml"
    path.write_text(f'[experiment]\nscenario = "{scenario}"\n{body}', encoding="utf-8")
    return path


def refused(path: Path) -> str:
    with pytest.raises(ex.ExperimentError) as e:
        ex.load_experiment(path)
    return str(e.value)


def cli(*args: str | Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    # A subprocess with a timeout: a FIFO used to block for ever.
    return subprocess.run([*AIRLINK_COMMAND, *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          cwd=REPO)


# --- the reader itself -------------------------------------------------------------------------

def test_the_reader_refuses_what_is_not_a_regular_file(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path, what in [(fifo, "a FIFO"), (Path("/dev/zero"), "a character device"), (tmp_path, "a folder")]:
        with pytest.raises(files.FileError, match=f"not a regular file \\({what}\\): expected a thing"):
            files.read_bytes(path, "thing", 100)
    with pytest.raises(files.FileError, match="no such file"):
        files.read_bytes(tmp_path / "none", "thing", 100)
    assert files.read_bytes(tmp_path / "none", "thing", 100, missing=None) is None


def test_the_reader_caps_sizes_and_says_where_utf8_breaks(tmp_path: Path) -> None:
    big = tmp_path / "big"
    with open(big, "wb") as f:
        f.truncate(1000)  # sparse: its size is what counts
    with pytest.raises(files.FileError, match="1000 bytes: expected a thing of at most 999 bytes"):
        files.read_bytes(big, "thing", 999)
    bad = tmp_path / "bad"
    bad.write_bytes(b"ok\nab\xff " + SECRET.encode())
    with pytest.raises(files.FileError) as e:
        files.read_text(bad, "thing", 100)
    assert f"{bad}:2:3: byte 0xff is not UTF-8" in str(e.value) and SECRET not in str(e.value)


@pytest.mark.parametrize(("text", "what"), [
    ("[" * 100 + "]" * 100, "nested deeper than 64 levels at line 1, column 65"),
    ('{"a": NaN}', "NaN is not a JSON number"),
    ('{"a": "' + SECRET + '"', "expecting ',' delimiter at line 1"),
    (SECRET, "expecting value at line 1, column 1"),
])
def test_json_is_checked_without_quoting_it(tmp_path: Path, text: str, what: str) -> None:
    path = tmp_path / "x.json"
    path.write_text(text)
    with pytest.raises(files.FileError) as e:
        files.read_json(path, "thing")
    assert what in str(e.value) and str(path) in str(e.value) and SECRET not in str(e.value)
    # Brackets inside strings are no nesting.
    path.write_text(json.dumps({"a": "[" * 200}))
    assert files.read_json(path, "thing") == {"a": "[" * 200}


# --- experiment files: the files they name ---------------------------------------------------------

def test_a_scenario_that_is_no_scenario_is_not_echoed(tmp_path: Path) -> None:
    # The audit's /etc/shadow: its first line used to be printed with a caret under it.
    secret = tmp_path / "shadow"
    secret.write_text(f"root:$6${SECRET}:19000:0:99999:7:::\nbin:*:19000:0:99999:7:::\n")
    r = cli("sweep", experiment(tmp_path, "", secret), "--out", tmp_path / "out")
    assert r.returncode == 2, r.stderr
    assert f"{secret}:1:" in r.stderr and SECRET not in r.stderr + r.stdout and "99999" not in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("kind", ["fifo", "dev/zero", "non-utf8", "folder", "huge"])
def test_a_scenario_that_cannot_be_read_is_refused_at_once(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "scenario"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "dev/zero":
        target = Path("/dev/zero")
    elif kind == "non-utf8":
        target.write_bytes(b'name = "\xff' + SECRET.encode() + b'"\n')
    elif kind == "folder":
        target.mkdir()
    else:
        with open(target, "wb") as f:
            f.truncate(files.MAX_SCENARIO_BYTES + 1)
    r = cli("sweep", experiment(tmp_path, "", target), "--out", tmp_path / "out")
    assert r.returncode == 2 and r.stderr.startswith(f"{tmp_path / 'exp.toml'}:2:1: {target}"), r.stderr
    expected = {"fifo": "not a regular file (a FIFO)", "dev/zero": "not a regular file (a character device)",
                "non-utf8": ":1:9: byte 0xff is not UTF-8", "folder": "not a regular file (a folder)",
                "huge": f"expected a scenario file of at most {files.MAX_SCENARIO_BYTES} bytes"}[kind]
    assert expected in r.stderr and SECRET not in r.stderr and "Traceback" not in r.stderr


def test_an_experiment_file_itself_is_guarded(tmp_path: Path) -> None:
    fifo = tmp_path / "exp.toml"
    os.mkfifo(fifo)
    r = cli("sweep", fifo, "--out", tmp_path / "out")
    assert r.returncode == 2 and "not a regular file (a FIFO): expected an experiment file" in r.stderr, r.stderr
    with pytest.raises(ex.ExperimentError, match="not a regular file \\(a FIFO\\): expected an experiment file"):
        ex.load_experiment(fifo)
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b"[experiment]\nscenario = \"x\xfe\"\n")
    with pytest.raises(ex.ExperimentError, match=r"bad\.toml:2:14: byte 0xfe is not UTF-8"):
        ex.load_experiment(bad)


@pytest.mark.parametrize("kind", ["fifo", "dev/zero", "secret", "decreasing"])
def test_a_trace_file_an_experiment_reads_is_guarded(tmp_path: Path, kind: str) -> None:
    trace = tmp_path / "t.trace"
    if kind == "fifo":
        os.mkfifo(trace)
    elif kind == "dev/zero":
        trace = Path("/dev/zero")
    elif kind == "secret":
        trace.write_text(f"root:{SECRET}\n")
    else:
        trace.write_text("1\n4711\n815\n")  # a timestamp going back: neither number is shown
    scenario = tmp_path / "s.toml"
    scenario.write_text(f'stop = "1 s"\n[downlink.trace]\nfile = "{trace}"\n[[flow]]\n')
    path = experiment(tmp_path, "", scenario)
    r = cli("sweep", path, "--out", tmp_path / "out")
    assert r.returncode in (1, 2) and "Traceback" not in r.stderr, r.stderr
    assert SECRET not in r.stderr and "4711" not in r.stderr and "815" not in r.stderr, r.stderr
    assert str(trace) in r.stderr


# --- experiment files: values and bounds -----------------------------------------------------------

@pytest.mark.parametrize(("body", "where", "what"), [
    # the audit's reproducers
    ("[repetitions]\ncount = 1000000000000\n", ":4:1:", f"from 1 to {ex.MAX_REPETITIONS}"),
    ('[vary]\n"downlink.pipe.loss" = { start = 0, stop = 1, step = 1e-9 }\n', ":4:1:",
     f"about 1e+09 values: expected at most {ex.MAX_VALUES}"),
    ('[vary]\n"downlink.pipe.loss" = { start = 0, stop = 1, step = 1e-6 }\n', ":4:1:", "about 1e+06 values"),
    ('[repetitions]\nrule = "t"\nprecision = 1e-300\n', ":5:1:", "1e-06 ≤ precision < 1"),
    ('[vary]\n"downlink.pipe.loss" = { start = 0, stop = 1, step = nan }\n', ":4:1:", "expected finite numbers"),
    ('[vary]\n"downlink.pipe.loss" = { start = 0, stop = 1, step = inf }\n', ":4:1:", "expected finite numbers"),
    ('[vary]\n"downlink.pipe.loss" = { start = 0, stop = inf, step = 1 }\n', ":4:1:", "expected finite numbers"),
    ('[vary]\n"downlink.pipe.loss" = { start = 0, stop = 1, step = 0 }\n', ":4:1:", "never gets from start to stop"),
    ('[vary]\n"downlink.pipe.loss" = { start = 0, stop = 1, step = -0.1 }\n', ":4:1:", "never gets from start"),
    ('[vary]\n"downlink.pipe.loss" = { start = 0, stop = 1, step = "0.1" }\n', ":4:1:", "expected numbers"),
    ('[vary]\n"downlink.pipe.delay" = { start = 1, stop = 2, step = 1, unit = 5 }\n', ":4:1:", "expected a unit"),
    ('[vary]\n"downlink.pipe.loss" = 0.1\n', ":4:1:", "expected a list of values or a range table"),
    # bounds of the grid and of the runs
    ('[vary]\n"downlink.pipe.loss" = { start = 0, stop = 0.5, step = 0.01 }\n'
     '"downlink.pipe.delay" = { start = 1, stop = 300, step = 1, unit = "ms" }\n', ":3:1:",
     f"the grid has 15300 configurations: expected at most {ex.MAX_CONFIGURATIONS}"),
    ('[vary]\n"downlink.pipe.loss" = { start = 0, stop = 1, step = 0.01 }\n[repetitions]\ncount = 10000\n',
     ":6:1:", f"101 configurations × 10000 repetitions are 1010000 runs: expected at most {ex.MAX_RUNS}"),
    ('[vary]\n"downlink.pipe.loss" = { start = 0, stop = 1, step = 0.01 }\n[repetitions]\nrule = "t"\nmax = 10000\n',
     ":7:1:", f"expected at most {ex.MAX_RUNS}"),
    ('[repetitions]\nrule = "t"\nmax = 10001\n', ":5:1:", "repetitions.max must be an integer from 3 to 10000"),
    ('[repetitions]\nrule = "t"\nprecision = nan\n', ":5:1:", "1e-06 ≤ precision < 1"),
    ('[repetitions]\nrule = "t"\nprecision = inf\n', ":5:1:", "1e-06 ≤ precision < 1"),
    ("[repetitions]\ncount = 0\n", ":4:1:", "from 1 to"),
    ("[repetitions]\ncount = -3\n", ":4:1:", "from 1 to"),
    ("[repetitions]\nbogus = 1\n", ":4:1:", "unknown key 'bogus' in [repetitions]"),
    ("bogus = 1\n", ":3:1:", "unknown key 'bogus' in [experiment]"),
    ("[bogus]\n", ":3:1:", "unknown table [bogus]"),
])
def test_bad_values_and_bounds_are_refused_with_a_place(tmp_path: Path, body: str, where: str, what: str) -> None:
    path = experiment(tmp_path, body)
    message = refused(path)
    assert message.startswith(f"{path}{where}"), message
    assert what in message, message


@pytest.mark.parametrize(("scenario", "what"), [
    ("5", "an integer"), ("true", "a boolean"), ('""', "a string"), ("[1]", "an array"),
])
def test_a_scenario_that_is_not_a_path_is_refused(tmp_path: Path, scenario: str, what: str) -> None:
    # (a table is a scenario written in the experiment: tests/test_api.py)
    path = tmp_path / "exp.toml"
    path.write_text(f"[experiment]\nscenario = {scenario}\n")
    assert refused(path) == (f"{path}:2:1: experiment.scenario: expected the path of a scenario file "
                             f"(a non-empty string), TOML text or a table, got {what}")


def test_deep_nesting_is_refused_without_a_traceback(tmp_path: Path) -> None:
    for depth in (20, 100_000):  # past the limit; past what tomllib can parse
        path = experiment(tmp_path, '[vary]\n"downlink.pipe.loss" = ' + "[" * depth + "]" * depth + "\n")
        message = refused(path)
        assert f"expected at most {ex.MAX_DEPTH} levels" in message, message
    r = cli("sweep", path, "--out", tmp_path / "out")
    assert r.returncode == 2 and "nested too deeply" in r.stderr and "Traceback" not in r.stderr


def test_bounds_are_checked_before_lists_are_built(tmp_path: Path) -> None:
    # 9·10^18 values: enumerating them would never end; 10^300 is no size a range can have.
    path = experiment(tmp_path, '[vary]\n"downlink.pipe.loss" = { start = 0, stop = 9e18, step = 1 }\n')
    assert "about 9e+18 values: expected at most" in refused(path)
    path = experiment(tmp_path, '[vary]\n"downlink.pipe.loss" = { start = 0, stop = 1e300, step = 1 }\n')
    assert "expected finite numbers (below 2^63 in size)" in refused(path)
    # A range within the bounds still works, its stop included.
    ok = experiment(tmp_path, '[vary]\n"downlink.pipe.loss" = { start = 0, stop = 0.02, step = 0.01 }\n')
    assert [c.params[0][1] for c in ex.load_experiment(ok).configs] == [0.0, 0.01, 0.02]


# --- readers of results folders -------------------------------------------------------------------

@pytest.fixture(scope="module")
def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("run") / "r"
    airlink.run(PIPE, seed=1, overrides=["stop=1 s"], out=out)
    return out


@pytest.mark.parametrize("kind", ["fifo", "dev/zero", "huge", "deep", "not json"])
@pytest.mark.parametrize("name", ["manifest.json", "summary.json"])
def test_a_damaged_manifest_or_summary_is_named(tmp_path: Path, run_folder: Path, name: str, kind: str) -> None:
    folder = tmp_path / "r"
    shutil.copytree(run_folder, folder)
    target = folder / name
    target.unlink()
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "dev/zero":
        target.symlink_to("/dev/zero")
    elif kind == "huge":
        with open(target, "wb") as f:
            f.truncate(files.MAX_JSON_BYTES + 1)
    elif kind == "deep":
        target.write_text("[" * 10_000 + "]" * 10_000)
    else:
        target.write_text(f"root:{SECRET}\n")
    with pytest.raises(ResultsError) as e:
        airlink.read_results(folder)
    assert str(e.value).startswith(f"{target}: ") and SECRET not in str(e.value)
    r = cli("plot", folder)
    assert r.returncode == 1 and str(target) in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (folder / "timeseries.png").exists()


def test_plot_without_tables_fails_and_names_what_is_missing(tmp_path: Path, run_folder: Path) -> None:
    gone = tmp_path / "gone"
    shutil.copytree(run_folder, gone)
    for table in gone.glob("*.parquet"):
        table.unlink()
    r = cli("plot", gone)
    assert r.returncode == 1 and "nothing to draw" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert f"{gone / 'flows.parquet'}: missing" in r.stderr and "panels throughput, window, rtt, losses" in r.stderr
    assert not (gone / "timeseries.png").exists()


def test_plot_names_a_foreign_column(tmp_path: Path, run_folder: Path) -> None:
    import pandas as pd

    folder = tmp_path / "foreign"
    shutil.copytree(run_folder, folder)
    flows = pd.read_parquet(folder / "flows.parquet").rename(columns={"srtt_us": "rtt"})
    flows.to_parquet(folder / "flows.parquet")
    # The links still draw: the figure is written, and the flows' panels are said to be empty.
    r = cli("plot", folder)
    assert r.returncode == 0 and (folder / "timeseries.png").exists(), r.stderr
    assert f"{folder / 'flows.parquet'}: no column srtt_us" in r.stderr and "Traceback" not in r.stderr
    # Nothing left to draw (iperf's interval reports would stand in for the flows): refused.
    links = pd.read_parquet(folder / "links.parquet").drop(columns=["queue_packets"])
    links.to_parquet(folder / "links.parquet")
    (folder / "intervals.parquet").unlink()
    (folder / "timeseries.png").unlink()
    r = cli("plot", folder)
    assert r.returncode == 1 and "no column queue_packets" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (folder / "timeseries.png").exists()
