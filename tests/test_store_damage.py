"""Sweep stores that notice damage (issue 27): every record, time series folder and table has its
sha256 in the store's index; a resume runs a damaged, cut, edited or missing run again (naming
it), ``load`` and ``airlink report`` refuse the store (naming it), and nothing is used silently."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from airlink import experiment_run, store
from conftest import AIRLINK_COMMAND, REPO

PIPE = REPO / "scenarios/transport/pipe.toml"


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A tiny finished sweep (2 configurations × 1 repetition, with time series) to copy."""
    tmp = tmp_path_factory.mktemp("sweep")
    exp = tmp / "exp.toml"
    exp.write_text(f'[experiment]\nscenario = "{PIPE}"\n[vary]\nstop = ["1 s"]\n'
                   '"downlink.pipe.loss" = [0.0, 0.01]\n[repetitions]\ncount = 1\n')
    out = experiment_run.run_experiment(exp, tmp / "store", jobs=2)
    return exp, out


@pytest.fixture
def sweep(finished: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    exp, out = finished
    shutil.copytree(out, tmp_path / "store")
    return exp, tmp_path / "store"


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The runs a sweep actually runs (by the seed and overrides they run with)."""
    ran: list[str] = []
    real = experiment_run._run

    def run(text, source, seed, overrides, cancel, series):  # type: ignore[no-untyped-def]
        ran.append(f"{seed} {overrides}")
        return real(text, source, seed, overrides, cancel, series)

    monkeypatch.setattr(experiment_run, "_run", run)
    return ran


def keys(root: Path) -> list[str]:
    return sorted(p.stem for p in (root / "runs").glob("*.json"))


def resume(exp: Path, root: Path, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    experiment_run.run_experiment(exp, root, jobs=2)
    return capsys.readouterr().err


def test_a_whole_store_resumes_without_running_anything(sweep: tuple[Path, Path], counted: list[str],
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    exp, root = sweep
    index = (root / store.INDEX).read_text().splitlines()
    assert {json.loads(line).get("run") for line in index} >= set(keys(root))
    assert resume(exp, root, capsys) == "" and counted == []
    store.load(root, "summary")


def test_a_record_without_summary_is_run_again(sweep: tuple[Path, Path], counted: list[str],
                                              capsys: pytest.CaptureFixture[str]) -> None:
    exp, root = sweep
    key = keys(root)[0]
    path = root / "runs" / f"{key}.json"
    record = json.loads(path.read_text())
    del record["summary"]
    path.write_text(json.dumps(record))
    with pytest.raises(store.StoreError, match=f"{key}.json: damaged or edited"):
        store.load(root, "summary")
    err = resume(exp, root, capsys)
    assert f"{path}: damaged or edited" in err and "running it again" in err and len(counted) == 1
    assert json.loads(path.read_text())["summary"]["flows"]
    store.load(root, "summary")  # whole again
    # Even without checksums to compare (an older store), a record without its summary is damage.
    path.write_text(json.dumps(record))  # the record above, without its summary
    (root / store.INDEX).unlink()
    err = resume(exp, root, capsys)
    assert "without checksums" in err and f"{path}: an ok run without its summary: running it again" in err
    assert len(counted) == 2


@pytest.mark.parametrize("damage", ["truncated", "edited", "deleted", "unindexed", "fifo"])
def test_a_damaged_record_is_named_refused_and_run_again(sweep: tuple[Path, Path], counted: list[str],
                                                        capsys: pytest.CaptureFixture[str], damage: str) -> None:
    exp, root = sweep
    key = keys(root)[1]
    path = root / "runs" / f"{key}.json"
    text = path.read_text()
    if damage == "truncated":
        path.write_text(text[: len(text) // 2])
    elif damage == "edited":  # plausible: still valid JSON, a goodput made larger
        record = json.loads(text)
        record["summary"]["flows"][0]["goodput_bps"] *= 2
        path.write_text(json.dumps(record))
    elif damage == "deleted":
        path.unlink()
    elif damage == "unindexed":  # written, then the sweep was killed before its index line
        index = root / store.INDEX
        index.write_text("".join(line + "\n" for line in index.read_text().splitlines() if key not in line))
    else:
        path.unlink()
        import os

        os.mkfifo(path)
    expected = {"truncated": "damaged or edited", "edited": "damaged or edited",
                "deleted": "missing, though the store's index lists it", "unindexed": "not in the store's index",
                "fifo": "not a regular file (a FIFO)"}[damage]
    with pytest.raises(store.StoreError) as e:
        store.load(root, "runs")
    assert f"{path}: {expected}" in str(e.value) and "run the sweep again" in str(e.value)
    if damage == "fifo":
        path.unlink()  # a resume writes the record again, beside and renamed
    err = resume(exp, root, capsys)
    if damage != "fifo":
        assert f"{path}: {expected}" in err and "running it again" in err, err
    assert len(counted) == 1
    store.load(root, "runs")


@pytest.mark.parametrize("damage", ["deleted", "truncated", "file removed", "file added"])
def test_a_damaged_series_folder_is_named_refused_and_run_again(sweep: tuple[Path, Path], counted: list[str],
                                                               capsys: pytest.CaptureFixture[str], damage: str) -> None:
    exp, root = sweep
    key = keys(root)[0]
    folder = root / "series" / key
    if damage == "deleted":
        shutil.rmtree(folder)
    elif damage == "truncated":
        flows = folder / "flows.parquet"
        flows.write_bytes(flows.read_bytes()[:100])
    elif damage == "file removed":
        (folder / "rtt.parquet").unlink()
    else:
        (folder / "extra.parquet").write_bytes(b"PAR1")
    with pytest.raises(store.StoreError) as e:
        store.load(root, "summary")
    assert str(folder) in str(e.value)
    with pytest.raises(store.StoreError, match=key):
        store.load_series(root, key)
    err = resume(exp, root, capsys)
    assert str(folder) in err and "running it again" in err and len(counted) == 1
    assert store.load_series(root, key).shape[0] > 0


def test_report_refuses_a_damaged_table_with_its_name(sweep: tuple[Path, Path], counted: list[str],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    exp, root = sweep
    table = root / "summary.parquet"
    table.write_bytes(table.read_bytes()[:50])
    r = subprocess.run([*AIRLINK_COMMAND, "report", str(root)], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert r.returncode == 1 and f"{table}: damaged or edited" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    # Without an index to compare with (an older store), pyarrow's refusal becomes the same kind of line.
    (root / store.INDEX).unlink()
    with pytest.raises(store.StoreError, match=f"{table}: damaged table"):
        store.load(root, "summary")
    # A resume rebuilds the tables from the records, running nothing.
    resume(exp, root, capsys)
    assert counted == []  # (its lack of checksums was said by the load above: once per store)
    assert len(store.load(root, "summary"))


def test_an_older_store_is_said_once_and_gets_an_index(sweep: tuple[Path, Path], counted: list[str],
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    exp, root = sweep
    (root / store.INDEX).unlink()
    capsys.readouterr()
    for table in store.TABLES:
        store.load(root, table)
    assert capsys.readouterr().err.count("without checksums") == 1
    err = resume(exp, root, capsys)
    assert "without checksums" not in err and counted == []  # said once
    assert (root / store.INDEX).exists()
    assert resume(exp, root, capsys) == ""  # now checked against its index


def test_a_damaged_index_line_only_costs_a_rerun(sweep: tuple[Path, Path], counted: list[str],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    exp, root = sweep
    index = root / store.INDEX
    lines = index.read_text().splitlines()
    index.write_text("\n".join([lines[0][:40], *lines[1:]]) + "\n")  # the first run's line cut short
    err = resume(exp, root, capsys)
    assert "not in the store's index" in err and len(counted) == 1
    store.load(root, "summary")
