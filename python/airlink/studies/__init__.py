"""Reproductions of the seed studies, by name. ``airlink reproduce NAME`` looks them up here.

A study runs its grid (``reproduce``), which returns an object whose ``to_json()`` is what
``--json`` prints, and writes its report folder (``write_report``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airlink.studies import afc, seawind, wipemu


@dataclass(frozen=True)
class Study:
    name: str
    title: str
    parts: tuple[str, ...]
    default_seeds: int
    reproduce: Callable[..., Any]
    write_report: Callable[[Any, Path], None]
    #: The report's main page, in its folder.
    index: str = "index.html"
    #: The results as terminal text (None: the CLI's WIPEMU layout).
    text: Callable[[Any], str] | None = None


def _write_wipemu_report(rep: Any, out: Path) -> None:
    from airlink.studies import wipemu_report  # matplotlib and pandas load only when a report is written

    wipemu_report.write_report(rep, out)


def _write_seawind_report(rep: Any, out: Path) -> None:
    from airlink.studies import seawind_report  # matplotlib loads only when a report is written

    seawind_report.write_report(rep, out)


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
        index="README.md",
        text=afc.text,
    ),
    "seawind": Study(
        name=seawind.NAME,
        title=seawind.TITLE,
        parts=seawind.PARTS,
        default_seeds=seawind.SEEDS,
        reproduce=seawind.reproduce,
        write_report=_write_seawind_report,
        text=seawind.text,
    ),
}

__all__ = ["STUDIES", "Study"]
