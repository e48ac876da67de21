"""Bench prints parseable JSON; the docstring examples run."""

from __future__ import annotations

import doctest
import importlib
import json

import pytest

DOCTESTED = [
    "airlink", "airlink.runner", "airlink.stats", "airlink.units", "airlink.atomic", "airlink.tables",
    "airlink.summary_text", "airlink.studies.wipemu",
]


@pytest.mark.parametrize("module", DOCTESTED)
def test_docstring_examples_run(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_bench_json_reports_figures_without_judging_them(airlink_cli) -> None:
    result = airlink_cli("bench", "--json", "--repeats", "1")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    names = [r["name"] for r in report["results"]]
    assert any("event queue" in n for n in names) and any("WIPEMU run" in n for n in names)
    assert all(r["value"] > 0 for r in report["results"])

