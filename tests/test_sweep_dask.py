"""`airlink sweep --dask`: the same experiment on a LocalCluster of worker processes gives the
local run's tables, with the trace file scattered to the workers once per sweep."""

from __future__ import annotations

import pickle
import shutil
from pathlib import Path

import pandas as pd
import pytest

from airlink import experiment as ex
from airlink import experiment_run, store
from conftest import REPO

pytest.importorskip("distributed")


def test_localcluster_of_two_processes_gives_the_local_table(tmp_path: Path) -> None:
    # A private copy of the trace-driven example, whose trace is deleted before the Dask sweep:
    # the workers can only have it from the tasks.
    shutil.copy(REPO / "examples/trace-link.toml", tmp_path / "trace-link.toml")
    shutil.copy(REPO / "examples/cellular.trace", tmp_path / "cellular.trace")
    (tmp_path / "exp.toml").write_text("""[experiment]
scenario = "trace-link.toml"
metrics = ["flows.*.goodput_bps", "links.downlink.queue_drops"]
[vary]
stop = ["4 s"]
"downlink.trace.queue" = [30, 100]
[repetitions]
count = 3
""", encoding="utf-8")
    exp = ex.load_experiment(tmp_path / "exp.toml")
    trace = str((tmp_path / "cellular.trace").resolve())
    assert [i.path for i in exp.configs[0].inputs] == [trace]
    assert exp.input_hashes[trace] == ex.sha256_file(Path(trace))
    # A task does not carry the trace: the sweep scatters it to the workers once.
    assert exp.files[trace] not in pickle.dumps(experiment_run._task(exp, exp.configs[0], 0, ship=True))

    local = experiment_run.run_experiment(exp, tmp_path / "local", jobs=2)
    (tmp_path / "cellular.trace").unlink()
    remote = experiment_run.run_experiment(exp, tmp_path / "dask", dask="local:2")
    for table in store.TABLES:
        pd.testing.assert_frame_equal(store.load(remote, table), store.load(local, table))
    runs = store.load(remote)
    assert len(runs) == 2 * 3 and (runs["status"] == "ok").all() and runs["goodput_bps"].gt(0).all()
    # the workers' time series came back to this process and are the local run's
    key = runs["key"].iloc[0]
    pd.testing.assert_frame_equal(store.load_series(remote, key, "links"), store.load_series(local, key, "links"))
    assert store.read_manifest(remote)["inputs"][trace] == exp.input_hashes[trace]


def test_a_changed_trace_is_another_run(tmp_path: Path) -> None:
    shutil.copy(REPO / "examples/trace-link.toml", tmp_path / "trace-link.toml")
    shutil.copy(REPO / "examples/cellular.trace", tmp_path / "cellular.trace")
    (tmp_path / "exp.toml").write_text('[experiment]\nscenario = "trace-link.toml"\n', encoding="utf-8")
    before = ex.load_experiment(tmp_path / "exp.toml")
    # One delivery opportunity 1 ms later: the mean rate (in the resolved scenario) stays.
    lines = [int(x) for x in (tmp_path / "cellular.trace").read_text().split()]
    i = next(i for i in range(len(lines) - 1) if lines[i] + 1 < lines[i + 1])
    lines[i] += 1
    (tmp_path / "cellular.trace").write_text("".join(f"{x}\n" for x in lines))
    after = ex.load_experiment(tmp_path / "exp.toml")
    assert before.configs[0].resolved == after.configs[0].resolved  # the same path...
    assert before.run_key(before.configs[0], 0) != after.run_key(after.configs[0], 0)  # ...another run


@pytest.mark.parametrize("address", ["local:0", "local:x", ""])
def test_bad_dask_addresses_are_refused(address: str) -> None:
    with pytest.raises(ValueError, match="--dask"):
        experiment_run.parse_dask(address)


@pytest.mark.parametrize(("kind", "directive"), [("slurm", "#SBATCH --cpus-per-task=8"),
                                                 ("pbs", "#PBS -l select=1:ncpus=8")])
def test_the_jobqueue_example_renders_one_single_threaded_worker_per_core(kind: str, directive: str) -> None:
    pytest.importorskip("dask_jobqueue")
    import runpy

    cluster = runpy.run_path(str(REPO / "examples/dask-cluster.py"))["cluster"](kind)
    try:
        script = cluster.job_script()  # no batch system needed to render it
    finally:
        cluster.close()
    assert directive in script and "02:00:00" in script
    assert "--nthreads 1" in script and "--nworkers 8" in script and cluster.scheduler_address in script


def test_cli_refuses_jobs_with_dask_and_a_bad_address(tmp_path: Path, airlink_cli) -> None:
    exp = tmp_path / "exp.toml"
    exp.write_text(f'[experiment]\nscenario = "{REPO / "scenarios/transport/pipe.toml"}"\n', encoding="utf-8")
    result = airlink_cli("sweep", str(exp), "--dask", "local:2", "--jobs", "2")
    assert result.exit_code == 2 and "--jobs" in result.output
    result = airlink_cli("sweep", str(exp), "--dask", "local:none")
    assert result.exit_code == 2 and "local:N needs a number of workers" in result.output
    assert not (tmp_path / "exp.sweep").exists()


def test_sweep_benchmark_reports_each_setup() -> None:
    from airlink import bench

    rows = bench.bench_sweep(runs=5, dask=False)  # figures are reported, never judged
    assert [r.name for r in rows] == ["trivial run alone (core)", "sweep overhead, threads ×1",
                                      "sweep overhead, threads ×1, with time series",
                                      "sweep of WIPEMU runs, threads ×1 → ×2"]
    assert rows[0].value > 0 and rows[3].value > 0 and "5 runs in" in rows[1].detail
