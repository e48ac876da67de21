"""The Python API for code, not only files (issue 24): a scenario or experiment as a path, TOML
text or a dict; many seeds at once as DataFrames; a dict written back as TOML."""

from __future__ import annotations

import doctest
import importlib
import tomllib
from pathlib import Path

import pandas as pd
import pytest

import airlink
from airlink import sources
from airlink.experiment import ExperimentError
from conftest import REPO

PIPE = REPO / "scenarios/transport/pipe.toml"
# A small scenario in code: one TCP flow over a lossy pipe for two simulated seconds.
SCENARIO = {"name": "pipe", "stop": "2 s", "downlink": {"pipe": {"rate": "2 Mbit/s", "delay": "20 ms", "loss": 0.01}},
            "flow": [{"protocol": "tcp", "congestion": "reno"}]}


def test_the_rule_that_tells_toml_text_from_a_path() -> None:
    assert not sources.is_toml_text("scenarios/transport/pipe.toml")
    assert not sources.is_toml_text("pipe")  # a file name, even without a suffix
    for text in ('stop = "2 s"', "[downlink.pipe]", "# a comment\n"):
        assert sources.is_toml_text(text)
    assert not sources.is_toml_text(Path("odd=[name].toml"))  # a Path is always a path


def test_a_dict_toml_text_and_a_file_give_the_same_run(tmp_path: Path) -> None:
    text = airlink.to_toml(SCENARIO)
    assert tomllib.loads(text) == SCENARIO
    (tmp_path / "pipe.toml").write_text(text)
    runs = [airlink.run(given, seed=4) for given in (SCENARIO, text, tmp_path / "pipe.toml",
                                                     str(tmp_path / "pipe.toml"))]
    assert len({r.summary_json for r in runs}) == 1
    assert [r.manifest["source"] for r in runs[:2]] == ["<dict>", "<string>"]
    assert isinstance(runs[0].flows, pd.DataFrame) and len(runs[0].flows)


def test_many_seeds_give_a_list_with_dataframes_of_all() -> None:
    runs = airlink.run(SCENARIO, seeds=range(3), overrides=["stop=1 s"])
    assert isinstance(runs, airlink.RunResults) and len(runs) == 3
    assert [r.summary["seed"] for r in runs] == [0, 1, 2]
    summary = runs.summary
    assert list(summary["seed"]) == [0, 1, 2] and list(summary["flow"]) == [0, 0, 0]
    assert summary["goodput_bps"].gt(0).all() and set(summary["protocol"]) == {"tcp"}
    flows = runs.flows
    assert flows.columns[0] == "seed" and set(flows["seed"]) == {0, 1, 2}
    assert len(flows) == sum(len(r.flows) for r in runs)
    assert set(runs.table("rtt")["seed"]) == {0, 1, 2}
    with pytest.raises(ValueError, match="seed= or seeds="):
        airlink.run(SCENARIO, seed=1, seeds=[2])
    with pytest.raises(ValueError, match="airlink.sweep"):
        airlink.run(SCENARIO, seeds=[1], out="x")


def test_errors_name_the_dict_or_string_with_a_place() -> None:
    with pytest.raises(airlink.ScenarioError, match=r"^<dict>:2:8: invalid value \"soon\""):
        airlink.run({**SCENARIO, "stop": "soon"})
    with pytest.raises(airlink.ScenarioError, match=r"^<string>:2:1: unknown field `bogus`"):
        airlink.run('stop = "1 s"\nbogus = 1\n')
    with pytest.raises(airlink.ScenarioError, match=r"^<dict>: not a TOML document"):
        airlink.run({**SCENARIO, "stop": None})
    with pytest.raises(airlink.ScenarioError, match="no such file"):
        airlink.run(Path("stop = 1"))  # a Path is a path, whatever it looks like
    with pytest.raises(airlink.ScenarioError, match="expected a path, TOML text or a dict"):
        airlink.run(42)  # type: ignore[arg-type]


EXPERIMENT = {"experiment": {"scenario": SCENARIO, "metrics": ["flows.*.goodput_bps"]},
              "vary": {"downlink.pipe.loss": [0.0, 0.02]}, "repetitions": {"count": 2}}


def test_an_experiment_in_code_with_its_scenario_in_it(tmp_path: Path) -> None:
    summary = airlink.sweep(EXPERIMENT, tmp_path / "a.sweep", table="summary", progress=False)
    goodput = summary[summary["metric"] == "flows.*.goodput_bps"]
    assert list(goodput["downlink.pipe.loss"]) == [0.0, 0.02] and list(goodput["n"]) == [2, 2]
    # the same as TOML text, its scenario a path: the same runs (keys hash the resolved scenario)
    path = tmp_path / "pipe.toml"
    path.write_text(airlink.to_toml(SCENARIO))
    text = airlink.to_toml({**EXPERIMENT, "experiment": {**EXPERIMENT["experiment"], "scenario": str(path)}})
    again = airlink.sweep(text, tmp_path / "b.sweep", table="runs", progress=False)
    first = airlink.load(tmp_path / "a.sweep", "runs")
    assert list(again["key"]) == list(first["key"])


def test_an_experiment_in_code_without_out_resumes_one_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    airlink.sweep(EXPERIMENT, progress=False)
    [store] = list(tmp_path.glob("experiment-*.sweep"))
    airlink.sweep(EXPERIMENT, progress=False)
    assert list(tmp_path.glob("experiment-*.sweep")) == [store]


def test_experiment_errors_name_the_dict_or_string(tmp_path: Path) -> None:
    bad = {**EXPERIMENT, "repetitions": {"count": 0}}
    with pytest.raises(ExperimentError, match=r"^<dict>:\d+:1: repetitions.count must be"):
        airlink.sweep(bad, tmp_path / "s", progress=False)
    with pytest.raises(ExperimentError, match=r"^<string>:1:12: Expected .*, expected valid TOML"):
        airlink.sweep("[experiment\n", tmp_path / "s", progress=False)
    # an error of the scenario written in the experiment: the experiment's place, then the scenario's
    wrong = {**EXPERIMENT, "experiment": {"scenario": {**SCENARIO, "stop": "soon"}}}
    with pytest.raises(ExperimentError, match=r"^<dict>:\d+:1: <dict>:\d+:8: invalid value \"soon\""):
        airlink.sweep(wrong, tmp_path / "s", progress=False)


@pytest.mark.parametrize("module", ["airlink.sources", "airlink.version", "airlink.experiment_run"])
def test_docstring_examples_run(module: str) -> None:
    # (airlink and airlink.runner are run by tests/test_misc.py)
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
