"""Scenarios and experiments given in code: a path, TOML text or a dict.

The rule that tells them apart (``airlink.run``, ``airlink.sweep`` and an experiment's
``scenario`` follow it):

* a ``dict`` (any mapping) is the document itself; it is written out as TOML (``to_toml``) and
  named ``<dict>`` in error messages;
* a ``str`` that contains a newline, ``=`` or ``[`` is TOML text, named ``<string>`` (no file
  name of a scenario has those; a path that does is given as a ``pathlib.Path``);
* any other ``str`` and every ``os.PathLike`` (``pathlib.Path``) is the path of a file.

Files are read through ``airlink.files`` (regular files only, a size cap, UTF-8 checked); TOML
text is held to the same cap. Relative paths inside a ``<dict>`` or ``<string>`` scenario (a
trace file) are relative to the working directory.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airlink import files

Source = str | os.PathLike[str] | Mapping[str, Any]
DICT, STRING = "<dict>", "<string>"


@dataclass(frozen=True)
class Text:
    """A document's TOML text, the name errors give it, and its file (None when given in code)."""

    text: str
    name: str
    path: Path | None


def is_toml_text(value: object) -> bool:
    """Whether ``value`` is TOML text rather than a path (see the module's rule).

    >>> is_toml_text("scenarios/wipemu/adaptive.toml"), is_toml_text("stop = '5 s'")
    (False, True)
    >>> is_toml_text(Path("odd=name.toml"))
    False
    """
    return isinstance(value, str) and any(c in value for c in "\n=[")


def to_toml(document: Mapping[str, Any]) -> str:
    """A scenario or experiment given as a dict, written as TOML text (with ``tomli_w``), for a
    file or to read back. Values are TOML's: strings, numbers, booleans, lists, tables, dates;
    ``None`` has no TOML form and is refused (``TypeError``).

    >>> print(to_toml({"stop": "2 s", "downlink": {"pipe": {"rate": "1 Mbit/s", "loss": 0.01}}}), end="")
    stop = "2 s"
    <BLANKLINE>
    [downlink.pipe]
    rate = "1 Mbit/s"
    loss = 0.01
    """
    import tomli_w

    return tomli_w.dumps(dict(document))


def read(source: Source, kind: str, max_bytes: int, error: Callable[[str], Exception]) -> Text:
    """The TOML text of ``source`` (a path, TOML text or a dict; ``kind`` such as "scenario file"
    names it in errors, raised as ``error``)."""
    if isinstance(source, Mapping):
        try:
            text = to_toml(source)
        except (TypeError, ValueError) as e:
            raise error(f"{DICT}: not a TOML document: {e}") from None
        return Text(_capped(text, DICT, kind, max_bytes, error), DICT, None)
    if is_toml_text(source):
        return Text(_capped(str(source), STRING, kind, max_bytes, error), STRING, None)
    if not isinstance(source, str | os.PathLike):
        raise error(f"expected a path, TOML text or a dict as the {kind.removesuffix(' file')}, got "
                    f"{type(source).__name__}")
    path = Path(source)
    return Text(files.read_text(path, kind, max_bytes, error=error), os.fspath(source), path)


def _capped(text: str, name: str, kind: str, max_bytes: int, error: Callable[[str], Exception]) -> str:
    if len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        raise error(f"{name}: the {kind.removesuffix(' file')} is over {max_bytes} bytes")
    return text
