"""Where the studies' scenario files are: ``$AIRLINK_SCENARIOS``, else the ``scenarios/`` folder
of the source tree this package runs from (editable installs), else ``./scenarios``."""

from __future__ import annotations

import os
from pathlib import Path

from airlink import _core, files

#: The largest scenario file read (a scenario is a page of TOML).
MAX_SCENARIO_BYTES = files.MAX_SCENARIO_BYTES


def scenario_dir() -> Path:
    candidates = []
    if env := os.environ.get("AIRLINK_SCENARIOS"):
        candidates.append(Path(env))
    candidates.append(Path(__file__).resolve().parents[2] / "scenarios")
    candidates.append(Path.cwd() / "scenarios")
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        "cannot find the scenarios folder: run from the airlink source tree or set AIRLINK_SCENARIOS"
    )


def display_path(path: Path) -> str:
    """``path`` relative to the working directory when it is below it (shorter error messages)."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def read_scenario_text(path: str | os.PathLike[str]) -> str:
    """The text of a scenario file; ``ScenarioError`` (with file:line:col where there is a place)
    for a file that is not a regular file, is too large, or is not UTF-8 (see ``airlink.files``)."""
    return files.read_text(path, "scenario file", MAX_SCENARIO_BYTES, error=_core.ScenarioError)
