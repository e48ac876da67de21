"""Shared helpers: the repository root, a CLI runner, and small scenarios."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

REPO = Path(__file__).resolve().parents[1]
ADAPTIVE = "scenarios/wipemu/adaptive.toml"
VALIDATION = "scenarios/wipemu/validation.toml"
# Short transfers keep the suite fast; the channel still fades and frames still fail.
SHORT = ("--set", "flow.0.bytes=300 kB")
# The command as a subprocess, with this interpreter (so it is the package under test).
AIRLINK_COMMAND = [sys.executable, "-m", "airlink"]


@pytest.fixture(autouse=True)
def in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    """Scenario paths in tests are relative to the repository, as a user would type them."""
    monkeypatch.chdir(REPO)


@pytest.fixture
def airlink_cli() -> Callable[..., Result]:
    from airlink.cli import cli

    def invoke(*args: str) -> Result:
        return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)

    return invoke


def partial_folders(parent: Path) -> list[Path]:
    return sorted(p for p in parent.iterdir() if ".partial-" in p.name)
