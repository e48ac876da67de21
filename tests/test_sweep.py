"""Experiment files, repetition rules, the result store and `airlink sweep`."""

from __future__ import annotations

import json
import math
import os
import signal
import statistics
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
from scipy import stats as scipy_stats

import airlink
from airlink import experiment as ex
from airlink import experiment_run, store
from airlink.atomic import FolderExistsError
from conftest import AIRLINK_COMMAND, REPO

PIPE = REPO / "scenarios/transport/pipe.toml"


def write_experiment(tmp_path: Path, body: str, name: str = "exp.toml") -> Path:
    path = tmp_path / name
    path.write_text(f'[experiment]\nscenario = "{PIPE}"\n' + body, encoding="utf-8")
    return path


# --- repetition rules on synthetic series (spec test vectors E) --------------------------------


@pytest.mark.parametrize(("spread", "n"), [(0.1, 16), (0.05, 4), (0.2, 62), (0.01, 3)])
def test_dccp_rule_matches_test_vectors(spread: float, n: int) -> None:
    # A pilot of mean 1 and s.d. `spread`: s/x̄ = spread, so n = ⌈(1.96·spread/0.05)²⌉, at least 3.
    pilot = [1 - spread, 1.0, 1 + spread]
    assert statistics.stdev(pilot) == pytest.approx(spread)
    rule = ex.Repetitions("dccp", precision=0.05, min=3, max=1000, metrics=("m",))
    assert ex.dccp_n([pilot], rule) == n
    # Only the 3 pilot runs count, and the largest n over the driving series wins.
    assert ex.dccp_n([[*pilot, 5.0, -7.0], [0.95, 1.0, 1.05]], rule) == n if n > 4 else 4
    assert ex.dccp_n([pilot], ex.Repetitions("dccp", precision=0.05, min=3, max=10, metrics=("m",))) == min(n, 10)


def test_t_rule_stops_where_the_t_table_says() -> None:
    # Prefixes of [1-a, 1+a, 1, 1, ...] have mean 1 and s = a·√(2/(n-1)), so the half-width is
    # t_{n-1}·a·√2/√(n(n-1)): with the spec's t table, 2.48·a (n=3), 1.30·a (4), 0.878·a (5).
    a = 0.05 / 0.9
    series = [1 - a, 1 + a] + [1.0] * 20
    rule = ex.Repetitions("t", precision=0.05, min=3, max=30, metrics=("m",))
    for n, t in [(3, 4.3027), (4, 3.1824), (5, 2.7764)]:
        half = t * a * math.sqrt(2) / math.sqrt(n * (n - 1))
        assert (half <= 0.05) == (n == 5)
    assert ex.t_stop([series], 4, rule) is None  # undecided with 4 runs at hand
    assert ex.t_stop([series], 5, rule) == 5
    assert ex.t_stop([series], 20, rule) == 5  # more runs at hand do not move n
    # A second, noisier series drives n further (the maximum over series counts); the cap ends it.
    noisy = [1 - 2.8 * a, 1 + 2.8 * a] + [1.0] * 20
    for n, t in [(10, 2.2622), (11, 2.2281)]:
        assert (t * 2.8 * a * math.sqrt(2) / math.sqrt(n * (n - 1)) <= 0.05) == (n == 11)
    assert ex.t_stop([series, noisy], 20, rule) == ex.t_stop([noisy, series], 20, rule) == 11
    assert ex.t_stop([noisy], 8, ex.Repetitions("t", precision=0.05, min=3, max=8, metrics=("m",))) == 8


def test_intervals_match_test_vectors() -> None:
    x = [3359, 3202, 3516, 3300, 3400]
    metrics = pd.DataFrame({"config": 0, "rep": range(5), "metric": "m", "class": "all", "value": x})
    t = store.summarize(metrics, [], "t").iloc[0]
    z = store.summarize(metrics, [], "z").iloc[0]
    assert (t["n"], t["mean"], t["rule"], z["rule"]) == (5, pytest.approx(3355.4), "t", "z")
    assert t["sd"] == pytest.approx(116.614, abs=5e-4)
    assert t["ci95"] == pytest.approx(144.795, abs=5e-4)
    assert z["ci95"] == pytest.approx(102.217, abs=5e-4)


# --- experiment files --------------------------------------------------------------------------


def test_grid_crossed_zipped_and_ranges(tmp_path: Path) -> None:
    path = write_experiment(tmp_path, """
[vary]
"downlink.pipe.loss" = { start = 0.0, stop = 0.03, step = 0.01 }
"flow.0.congestion" = ["cubic", "reno"]
[vary.zip]
"downlink.pipe.rate" = ["5 Mbit/s", "10 Mbit/s"]
"downlink.pipe.delay" = { start = 5, stop = 10, step = 5, unit = "ms" }
""")
    exp = ex.load_experiment(path)
    assert len(exp.configs) == 4 * 2 * 2
    assert exp.parameters == ("downlink.pipe.loss", "flow.0.congestion", "downlink.pipe.rate", "downlink.pipe.delay")
    assert [v for _, v in exp.configs[0].params] == [0.0, "cubic", "5 Mbit/s", "5 ms"]
    assert [v for _, v in exp.configs[-1].params] == [0.03, "reno", "10 Mbit/s", "10 ms"]
    assert 'delay = "10 ms"' in exp.configs[-1].resolved and "loss = 0.03" in exp.configs[-1].resolved
    # Common random numbers: repetition i has one seed in every configuration, distinct across i.
    assert len({exp.run_seed(i) for i in range(100)}) == 100
    assert exp.run_seed(3) == ex.run_seed(1, 3) != ex.run_seed(2, 3)


@pytest.mark.parametrize(("body", "where", "what"), [
    ('[vary]\n"downlink.pipe.bogus" = [1, 2]\n', ":4:1:", "unknown field `bogus`"),
    ('[vary]\n"downlink.pipe.loss" = []\n', ":4:1:", "has no values"),
    ('[vary]\n"downlink.pipe.loss" = { start = 0.1, stop = 0.0, step = 0.05 }\n', ":4:1:", "never gets from"),
    ('[vary.zip]\n"downlink.pipe.loss" = [0.1]\n"downlink.pipe.rate" = ["1 Mbit/s", "2 Mbit/s"]\n', ":3:1:",
     "equally many values"),
    ('[repetitions]\nrule = "t"\nprecision = 0\n', ":5:1:", "1e-06 ≤ precision < 1"),
    ('[repetitions]\nrule = "t"\nprecision = 5\n', ":5:1:", "1e-06 ≤ precision < 1"),
    ('[repetitions]\nrule = "t"\nmin = 10\nmax = 5\n', ":6:1:", "repetitions.max must be an integer from 10 to 10000"),
    ('[repetitions]\nrule = "dccp"\nmin = 5\n', ":5:1:", "pilot of 3"),
    ('[repetitions]\nrule = "bayes"\n', ":4:1:", "must be one of fixed, t, dccp"),
    ('[repetitions]\nrule = "t"\nmetrics = ["flows.*.rtt"]\n', ":5:1:", "must name metrics of experiment.metrics"),
    ('metrics = ["goodput bps"]\n', ":3:1:", "summary paths"),
    ('seed = -1\n', ":3:1:", "non-negative"),
    ('[vary]\n"downlink.pipe.loss" = [0.1 0.2]\n', ":4:29:", "Unclosed array"),
    ('[vary]\n"downlink.pipe.loss" = [0.1\n', ":4:28:", "Unclosed array"),
])
def test_bad_experiment_files_are_refused_with_position(tmp_path: Path, body: str, where: str, what: str) -> None:
    path = write_experiment(tmp_path, body)
    with pytest.raises(ex.ExperimentError) as e:
        ex.load_experiment(path)
    assert str(e.value).startswith(f"{path}{where}"), str(e.value)
    assert what in str(e.value)


def test_bad_experiment_exits_2_before_any_run(tmp_path: Path, airlink_cli) -> None:
    path = write_experiment(tmp_path, '[vary]\n"flow.0.bytes" = [100000]\n')
    result = airlink_cli("sweep", str(path), "--out", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert f"{path}:4:1:" in result.output and "expected an amount of data" in result.output
    assert not (tmp_path / "out").exists()


def test_a_misspelt_metric_is_refused_before_any_run(tmp_path: Path, airlink_cli) -> None:
    path = write_experiment(tmp_path, 'metrics = ["flows.*.goodput"]\n[repetitions]\nrule = "t"\nmax = 50\n')
    with pytest.raises(ex.ExperimentError, match=r"exp.toml:3:1: metric 'flows.\*.goodput' names no field of a "
                                                  r"run's summary: did you mean 'flows.\*.goodput_bps'"):
        airlink.sweep(path, tmp_path / "out")
    assert not (tmp_path / "out").exists()  # no store, no run record
    path = write_experiment(tmp_path, 'metrics = ["links.downlnk.loss_drops"]\n')
    result = airlink_cli("sweep", str(path), "--out", str(tmp_path / "out"))
    assert result.exit_code == 2 and "did you mean 'links.downlink'" in result.output
    assert not (tmp_path / "out").exists()
    path = write_experiment(tmp_path, 'metrics = ["flows.*.iperf"]\n')
    with pytest.raises(ex.ExperimentError, match=r"is a table, not a number: .*flows.\*.iperf.loss_pct"):
        ex.load_experiment(path)


def test_a_metric_without_values_stops_after_the_first_round(tmp_path: Path) -> None:
    # A field the dry run cannot judge (null there) and no run fills: the first round finds it.
    path = write_experiment(tmp_path, 'metrics = ["flows.0.iperf.loss_pct"]\n[repetitions]\nrule = "t"\nmax = 50\n')
    with pytest.raises(ex.ExperimentError, match=r"exp.toml:3:1: metric 'flows.0.iperf.loss_pct' has no value in "
                                                  r"any run"):
        airlink.sweep(path, tmp_path / "out")
    assert len(list((tmp_path / "out/runs").glob("*.json"))) == 3


# --- sweeps on a real scenario ----------------------------------------------------------------


def test_adaptive_rules_on_a_real_scenario(tmp_path: Path) -> None:
    body = """metrics = ["flows.*.goodput_bps"]
[vary]
"downlink.pipe.loss" = [0.002, 0.01]
[repetitions]
rule = "{rule}"
precision = 0.1
max = 60
"""
    for rule in ("dccp", "t"):
        path = write_experiment(tmp_path, body.format(rule=rule), f"{rule}.toml")
        summary = airlink.sweep(path, tmp_path / rule, table="summary")
        values = airlink.load(tmp_path / rule, "metrics")
        ns = []
        for config, group in values.groupby("config"):
            tcp = group[group["class"] == "tcp"].sort_values("rep")["value"].tolist()
            n = int(summary[(summary["config"] == config) & (summary["class"] == "tcp")]["n"].iloc[0])
            assert len(tcp) == n and sorted(group["rep"].unique()) == list(range(n))
            if rule == "dccp":  # n from the 3 pilot runs, the largest over tcp and udp
                expected = max(max(3, math.ceil((1.96 * statistics.stdev(v[:3]) / (0.1 * statistics.mean(v[:3]))) ** 2))
                               for cls in ("tcp", "udp")
                               for v in [group[group["class"] == cls].sort_values("rep")["value"].tolist()])
                assert n == min(expected, 60)
            else:  # the first n ≥ 3 where every class's t half-width is within ±10 %
                def ok(v: list[float]) -> bool:
                    q = scipy_stats.t.ppf(0.975, len(v) - 1)
                    return q * statistics.stdev(v) / math.sqrt(len(v)) <= 0.1 * statistics.mean(v)
                by_class = [group[group["class"] == c].sort_values("rep")["value"].tolist() for c in ("tcp", "udp")]
                assert all(ok(v[:n]) for v in by_class)
                assert not any(all(ok(v[:k]) for v in by_class) for k in range(3, n))
            ns.append(n)
        assert ns[0] < ns[1]  # the lossier link needs more runs
        assert 3 < ns[1] < 60, ns  # and the rule, not a bound, stopped it


def test_rerun_skips_done_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_experiment(tmp_path, '[vary]\n"downlink.pipe.loss" = [0.0, 0.01]\n[repetitions]\ncount = 3\n')
    real = experiment_run._run
    first = airlink.sweep(path, tmp_path / "out", jobs=2)
    assert len(first) == 2 * 3 * 2  # configurations × repetitions × flows
    calls = []
    monkeypatch.setattr(experiment_run, "_run", lambda *a: calls.append(a))
    pd.testing.assert_frame_equal(airlink.sweep(path, tmp_path / "out"), first)
    assert calls == []
    # A record a power cut emptied is not misread: that run alone runs again.
    emptied = tmp_path / "out/runs" / f"{first['key'].iloc[0]}.json"
    emptied.write_bytes(b"")
    monkeypatch.setattr(experiment_run, "_run", lambda *a: calls.append(a) or real(*a))
    pd.testing.assert_frame_equal(airlink.sweep(path, tmp_path / "out"), first)
    assert [c[2] for c in calls] == [first["seed"].iloc[0]]


def test_a_run_that_raises_is_retried_then_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_experiment(tmp_path, '[vary]\n"downlink.pipe.loss" = [0.0, 0.01]\n[repetitions]\ncount = 3\n')
    exp = ex.load_experiment(path)
    flaky, broken = exp.run_seed(0), exp.run_seed(1)  # fails once; always fails (at loss 0.01)
    attempts: dict[tuple[int, str], int] = {}
    real = experiment_run._run

    def run(text: str, source: str, seed: int, overrides: list[str], cancel: object, series: bool):
        key = (seed, overrides[0])
        attempts[key] = attempts.get(key, 0) + 1
        if (seed == flaky and attempts[key] == 1) or (seed == broken and overrides[0].endswith("0.01")):
            raise RuntimeError(f"injected failure {attempts[key]}")
        return real(text, source, seed, overrides, cancel, series)

    monkeypatch.setattr(experiment_run, "_run", run)
    runs = airlink.sweep(path, tmp_path / "out", jobs=2)
    assert attempts[broken, "downlink.pipe.loss=0.01"] == 2
    failed = runs[runs["status"] == "failed"]
    assert failed[["config", "rep"]].values.tolist() == [[1, 1]]
    assert failed["error"].iloc[0] == "RuntimeError: injected failure 2"
    records = [json.loads(p.read_text()) for p in (tmp_path / "out/runs").glob("*.json")]
    assert sorted(r["attempts"] for r in records) == [1, 1, 1, 2, 2, 2]  # rep 0 of both configurations and the broken run
    summary = airlink.load(tmp_path / "out", "summary")
    assert summary.groupby("config")["n"].max().tolist() == [3, 2]
    # A re-run gives the failed run another chance.
    monkeypatch.setattr(experiment_run, "_run", real)
    assert (airlink.sweep(path, tmp_path / "out")["status"] == "ok").all()


def test_kill_9_halfway_then_resume_gives_the_uninterrupted_table(tmp_path: Path) -> None:
    # 30 s of simulated UDP per run and one job: slow enough to be killed halfway.
    path = write_experiment(tmp_path, '[vary]\nstop = ["30 s"]\n"downlink.pipe.loss" = [0.0, 0.01]\n'
                                      '[repetitions]\ncount = 15\n')
    killed = tmp_path / "killed"
    proc = subprocess.Popen([*AIRLINK_COMMAND, "sweep", str(path), "--out", str(killed), "--jobs", "1"],
                            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while len(list((killed / "runs").glob("*.json"))) < 8 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done_at_kill = len(list((killed / "runs").glob("*.json")))
    assert 8 <= done_at_kill < 30 and not (killed / "runs.parquet").exists()

    resumed = airlink.sweep(path, killed, jobs=2)
    whole = airlink.sweep(path, tmp_path / "whole", jobs=2)
    pd.testing.assert_frame_equal(resumed, whole)
    pd.testing.assert_frame_equal(airlink.load(killed, "summary"), airlink.load(tmp_path / "whole", "summary"))
    assert len(list((killed / "runs").glob("*.json"))) == 30
    assert not resumed.duplicated(["config", "rep", "flow"]).any() and resumed["key"].nunique() == 30
    assert not list((killed / "runs").glob(".*"))  # the killed writer's temporary, if any, is gone
    assert not list((killed / "series").glob(".*"))  # and so is a half-written time series folder
    assert sorted(p.name for p in (killed / "series").iterdir()) == sorted(resumed["key"].unique())


# --- the store refuses what it cannot read -----------------------------------------------------


def test_foreign_and_old_stores_are_refused(tmp_path: Path) -> None:
    path = write_experiment(tmp_path, "[repetitions]\ncount = 1\n")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(FolderExistsError, match="not an airlink sweep store"):
        airlink.sweep(path, foreign)
    assert [p.name for p in foreign.iterdir()] == ["notes.txt"]

    out = tmp_path / "out"
    airlink.sweep(path, out)
    manifest = json.loads((out / "manifest.json").read_text())
    (out / "manifest.json").write_text(json.dumps({**manifest, "format": 0}))
    with pytest.raises(store.StoreError, match="store format 0"):
        airlink.sweep(path, out)
    # Another version number alone refuses nothing: runs are judged by the build that made each
    # (tests/test_code_identity.py), as the number stays the same across changes of the models.
    (out / "manifest.json").write_text(json.dumps({**manifest, "airlink": "0.0.1"}))
    airlink.sweep(path, out)
    (out / "manifest.json").write_text(json.dumps({**manifest, "format": 99}))
    with pytest.raises(store.StoreError, match="reads format 2 only"):
        airlink.load(out)


def test_cli_sweep_prints_intervals(tmp_path: Path, airlink_cli) -> None:
    path = write_experiment(tmp_path, '[vary]\n"downlink.pipe.loss" = [0.01]\n[repetitions]\nrule = "dccp"\nmax = 5\n')
    result = airlink_cli("sweep", str(path), "--out", str(tmp_path / "out"), "--jobs", "2")
    assert result.exit_code == 0, result.output
    assert "goodput_bps tcp (Mbit/s)" in result.output and " z " in result.output and "±" in result.output
    assert "e+0" not in result.output and "derived" not in result.output  # the metrics asked for, no exponents
    assert f"results: {tmp_path / 'out'}" in result.output


def test_an_interrupted_sweep_stops_its_running_runs_and_stores_no_failure(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # One run is interrupted (as Ctrl-C would be); the others are still inside the core. They
    # must be told to stop (the cancel event), not left to finish, and must not be stored as failed.
    path = write_experiment(tmp_path, '[vary]\n"downlink.pipe.loss" = [0.0, 0.01]\n[repetitions]\ncount = 2\n')
    saw_cancel: list[bool] = []

    def run(text: str, source: str, seed: int, overrides: list[str], cancel, series: bool) -> str:
        if overrides[0].endswith("=0.0") and seed == ex.load_experiment(path).run_seed(0):
            time.sleep(0.2)  # let the other worker enter its run
            raise KeyboardInterrupt
        saw_cancel.append(cancel.wait(30))
        raise airlink._core.Cancelled("run cancelled")

    monkeypatch.setattr(experiment_run, "_run", run)
    with pytest.raises(KeyboardInterrupt):
        airlink.sweep(path, tmp_path / "out", jobs=2)
    assert saw_cancel and all(saw_cancel)
    assert not list((tmp_path / "out" / "runs").glob("*.json"))
