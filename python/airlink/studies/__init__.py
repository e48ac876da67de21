"""Reproductions of the seed studies, by name. ``airlink reproduce NAME`` looks them up here.

A study runs its grid (``reproduce``) through the sweep machinery into result stores inside its
report folder, which returns an object whose ``to_json(only)`` is what ``--json`` prints, and
writes its report files (``write_report``); ``reproduction`` holds what they share.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airlink.studies import afc, wipemu


@dataclass(frozen=True)
class Study:
    name: str
    title: str
    parts: tuple[str, ...]
    default_seeds: int
    reproduce: Callable[..., Any]
    write_report: Callable[[Any, Path], None]
    #: The results as terminal text (None: the CLI's WIPEMU layout).
    text: Callable[[Any], str] | None = None


def _write_wipemu_report(rep: Any, out: Path) -> None:
    from airlink.studies import wipemu_report  # matplotlib and pandas load only when a report is written

    wipemu_report.write_report(rep, out)


STUDIES: dict[str, Study] = {
    "wipemu": Study(
        name=wipemu.NAME,
        title=wipemu.TITLE,
        parts=wipemu.PARTS,
        default_seeds=wipemu.SEEDS,
        reproduce=wipemu.reproduce,
        write_report=_write_wipemu_report,
    ),
    "afc": Study(
        name=afc.NAME,
        title=afc.TITLE,
        parts=afc.PARTS,
        default_seeds=afc.SEEDS,
        reproduce=afc.reproduce,
        write_report=afc.write_report,
        text=afc.text,
    ),
}

__all__ = ["STUDIES", "Study"]
