"""Regression: every shipped scenario gives the same figures as when its golden file was taken.

Each golden file holds a run's whole summary and a digest of every column of its Parquet
tables. A change that moves any figure fails here with the scenario, table and column named;
when the change is meant, refresh the files with ``python tests/test_golden.py --update
[SCENARIO...]`` (all, or only those named) and say in the commit which figures moved and why.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "tests" / "golden"
SEEDS = (1, 2)
TABLES = ("flows", "links", "events", "rtt", "intervals")


def scenarios() -> list[Path]:
    files = [
        *sorted((REPO / "scenarios").glob("*/*.toml")),
        *sorted((REPO / "examples").glob("*.toml")),
        *sorted((GOLDEN / "scenarios").glob("*.toml")),  # models and stacks the others leave out
    ]
    # An experiment file describes a sweep, not a run.
    return [f for f in files if "\n[experiment]" not in "\n" + f.read_text(encoding="utf-8")]


def golden_path(scenario: Path, seed: int) -> Path:
    return GOLDEN / f"{scenario.parent.name}-{scenario.stem}-s{seed}.json"


def column_digest(values: np.ndarray) -> str:
    """A digest of a column's values. Floats are rounded to 1e-9 so the digest names a change
    of figure, not of the last bit a different libm may give."""
    if values.dtype.kind == "f":
        values = np.round(values.astype(np.float64), 9)
        data = values.tobytes()
    elif values.dtype.kind in "iub":
        data = values.astype(np.int64).tobytes()
    else:
        data = "\0".join(map(str, values)).encode()
    return hashlib.sha256(data).hexdigest()[:16]


def fingerprint(results: Path) -> dict[str, Any]:
    tables = {}
    for name in TABLES:
        table = pq.read_table(results / f"{name}.parquet")
        tables[name] = {
            "rows": table.num_rows,
            "columns": {c: column_digest(table.column(c).to_numpy(zero_copy_only=False)) for c in table.column_names},
        }
    summary = json.loads((results / "summary.json").read_text(encoding="utf-8"))
    return {"summary": summary, "tables": tables}


def run_fingerprint(scenario: Path, seed: int, tmp: Path) -> dict[str, Any]:
    import airlink

    out = tmp / f"{scenario.stem}-{seed}"
    airlink.run(scenario, seed=seed, out=out)
    return fingerprint(out)


def assert_same(found: Any, expected: Any, where: str) -> None:
    if isinstance(expected, dict):
        assert isinstance(found, dict) and found.keys() == expected.keys(), f"{where}: keys differ"
        for k in expected:
            assert_same(found[k], expected[k], f"{where}.{k}")
    elif isinstance(expected, list):
        assert isinstance(found, list) and len(found) == len(expected), f"{where}: length differs"
        for i, (a, b) in enumerate(zip(found, expected)):
            assert_same(a, b, f"{where}[{i}]")
    elif isinstance(expected, float) and isinstance(found, float):
        assert math.isclose(found, expected, rel_tol=1e-9, abs_tol=1e-12), f"{where}: {found!r} != {expected!r}"
    else:
        assert found == expected, f"{where}: {found!r} != {expected!r}"


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("scenario", scenarios(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_same_figures_as_golden(scenario: Path, seed: int, tmp_path: Path) -> None:
    golden = golden_path(scenario, seed)
    assert golden.exists(), f"no golden file for {scenario} (run: python tests/test_golden.py --update)"
    expected = json.loads(golden.read_text(encoding="utf-8"))
    assert_same(run_fingerprint(scenario, seed, tmp_path), expected, golden.name)


def test_every_golden_file_has_a_scenario() -> None:
    wanted = {golden_path(s, seed).name for s in scenarios() for seed in SEEDS}
    stale = sorted(p.name for p in GOLDEN.glob("*.json") if p.name not in wanted)
    assert not stale, f"golden files without a scenario: {stale}"


def update(only: list[str]) -> None:
    import tempfile

    GOLDEN.mkdir(exist_ok=True)
    chosen = [s for s in scenarios() if not only or any(s.samefile(o) for o in only)]
    with tempfile.TemporaryDirectory() as tmp:
        for scenario in chosen:
            for seed in SEEDS:
                found = run_fingerprint(scenario, seed, Path(tmp))
                golden_path(scenario, seed).write_text(json.dumps(found, indent=1) + "\n", encoding="utf-8")
                print("wrote", golden_path(scenario, seed).relative_to(REPO))


if __name__ == "__main__":
    if sys.argv[1:2] != ["--update"]:
        sys.exit("usage: python tests/test_golden.py --update [SCENARIO...]")
    update(sys.argv[2:])
