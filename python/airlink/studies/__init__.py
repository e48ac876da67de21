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

from airlink.studies import afc, dccp, reproduction, seawind, tcppf, wipemu


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
    #: The fewest seeds a reproduction can run with (dccp: its rule's pilot runs).
    min_seeds: int = 1


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
    "tcp-pf": Study(
        name=tcppf.NAME,
        title=tcppf.TITLE,
        parts=tcppf.PARTS,
        default_seeds=tcppf.SEEDS,
        reproduce=tcppf.reproduce,
        write_report=tcppf.write_report,
        text=tcppf.text,
    ),
    "dccp": Study(
        name=dccp.NAME,
        title=dccp.TITLE,
        parts=dccp.PARTS,
        default_seeds=dccp.SEEDS,
        reproduce=dccp.reproduce,
        write_report=dccp.write_report,
        text=dccp.text,
        min_seeds=dccp.PILOT,
    ),
}


def reproduce_into(study: str, out: Path, *, only: str | None = None, settings: dict[str, Any], force: bool = False,
                   **options: Any) -> tuple[Any, tuple[str, ...]]:
    """Reproduces ``study`` (or its part ``only``, merged into what ``out`` holds) into the report
    folder ``out``; ``settings`` are what must match for a merge (seeds, --set, ...), ``options``
    go to the study's ``reproduce``. Returns the reproduction and the parts its report shows."""
    chosen = STUDIES[study]
    with reproduction.report_folder(out, force=force):
        parts = reproduction.plan(out, study, chosen.parts, [only] if only else chosen.parts, settings, force)
        rep = chosen.reproduce(parts=parts, out=out, **options)
        reproduction.write_report(out, lambda folder: chosen.write_report(rep, folder),
                                  {"study": study, "parts": list(parts), "settings": settings})
    return rep, parts


__all__ = ["STUDIES", "Study", "reproduce_into"]
