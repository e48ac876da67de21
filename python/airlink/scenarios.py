"""Where the studies' scenario files are: ``$AIRLINK_SCENARIOS``, else the ``scenarios/`` folder
of the source tree this package runs from (editable installs), else ``./scenarios``."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from airlink import _core

#: The largest scenario file read (a scenario is a page of TOML).
MAX_SCENARIO_BYTES = 16 << 20


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
    for a file that is not a regular file, is too large, or is not UTF-8."""
    source = os.fspath(path)
    try:
        # Non-blocking: a FIFO is refused by the type check instead of waiting for a writer.
        fd = os.open(source, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        raise _core.ScenarioError(f"{source}: cannot read the scenario: {e.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _core.ScenarioError(f"{source}: not a regular file: expected a scenario file")
        data = f.read(MAX_SCENARIO_BYTES + 1)
    if len(data) > MAX_SCENARIO_BYTES:
        raise _core.ScenarioError(f"{source}: expected a scenario file of at most {MAX_SCENARIO_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line_start = data.rfind(b"\n", 0, e.start) + 1
        line = data.count(b"\n", 0, e.start) + 1
        column = len(data[line_start:e.start].decode("utf-8", "replace")) + 1
        raise _core.ScenarioError(
            f"{source}:{line}:{column}: byte 0x{data[e.start]:02x} is not UTF-8: expected a UTF-8 text file"
        ) from None
