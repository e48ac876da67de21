"""The package version: the installed distribution's, else the core's (they are the same number)."""

from __future__ import annotations

from importlib import metadata


def version() -> str:
    try:
        return metadata.version("airlink")
    except metadata.PackageNotFoundError:
        from airlink import _core

        return _core.__version__
