"""One guarded reader for every file airlink reads: scenarios, experiments, trace files, results
folders' manifests and summaries, sweep stores' manifests, records and index.

airlink runs as root and reads paths that files name (an experiment names a scenario, a scenario
a trace), so a path may lead anywhere. Every read here:

* opens without blocking and refuses anything but a regular file (a FIFO would wait for a writer
  forever, ``/dev/zero`` never ends, a directory or socket is no file);
* reads at most a cap per kind of file, so memory stays bounded;
* checks UTF-8 (text) and JSON (nesting depth, no NaN constants unless asked) and says where,
  as ``file:line:col``;
* never puts the file's content in a message: a path may name a file that is not what it should
  be (``/etc/shadow`` as a scenario), and errors end up in logs.

Each function takes ``error``, the exception class its caller reports with (a scenario error, a
results error, a store error), so callers keep their own error types and exit codes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Callable
from typing import Any

#: Caps per kind of file (bytes). A scenario or experiment is a page of TOML; a trace is at most
#: the Rust core's limit (crates/airlink-link/src/trace.rs MAX_TRACE_BYTES); JSON files hold one
#: run's summary (or its manifest, with the resolved scenario); a store's index has a line per run.
MAX_SCENARIO_BYTES = 16 << 20
MAX_EXPERIMENT_BYTES = 4 << 20
MAX_TRACE_BYTES = 64 << 20
MAX_JSON_BYTES = 64 << 20
MAX_INDEX_BYTES = 1 << 30
#: The deepest JSON read: airlink's own files nest a few levels; Python's parser recurses.
MAX_JSON_DEPTH = 64


class FileError(ValueError):
    """A file could not be read as what it should be; the message names it, never its content."""


_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
          stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a folder"}
_MISSING: Any = object()


def _a(kind: str) -> str:
    return f"{'an' if kind[:1] in 'aeiou' else 'a'} {kind}"


def open_regular(path: str | os.PathLike[str], kind: str, *, error: Callable[[str], Exception] = FileError,
                 missing: Any = _MISSING) -> Any:
    """``path`` opened for reading in binary if it is a regular file (a ``kind`` such as "scenario
    file", for messages); ``missing`` is returned for a file that does not exist, if given."""
    source = os.fspath(path)
    try:
        # Non-blocking: a FIFO is refused by the type check instead of waiting for a writer.
        fd = os.open(source, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        if missing is not _MISSING:
            return missing
        raise error(f"{source}: no such file: expected {_a(kind)}") from None
    except OSError as e:
        raise error(f"{source}: cannot read the {kind}: {e.strerror}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        what = _KINDS.get(stat.S_IFMT(mode), "not a regular file")
        raise error(f"{source}: not a regular file ({what}): expected {_a(kind)}")
    return os.fdopen(fd, "rb")


def read_bytes(path: str | os.PathLike[str], kind: str, max_bytes: int, *,
               error: Callable[[str], Exception] = FileError, missing: Any = _MISSING) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes``; see :func:`open_regular`."""
    source = os.fspath(path)
    f = open_regular(path, kind, error=error, missing=missing)
    if f is missing:
        return missing
    with f:
        size = os.fstat(f.fileno()).st_size
        if size > max_bytes:
            raise error(f"{source}: {size} bytes: expected {_a(kind)} of at most {max_bytes} bytes")
        try:
            data = f.read(max_bytes + 1)  # a file that grows while read is still capped
        except OSError as e:
            raise error(f"{source}: cannot read the {kind}: {e.strerror}") from None
    if len(data) > max_bytes:
        raise error(f"{source}: expected {_a(kind)} of at most {max_bytes} bytes")
    return data


def sha256(path: str | os.PathLike[str], kind: str, *, error: Callable[[str], Exception] = FileError) -> str:
    """The sha256 of the regular file ``path``, read in pieces (any size)."""
    with open_regular(path, kind, error=error) as f:
        try:
            return hashlib.file_digest(f, "sha256").hexdigest()
        except OSError as e:
            raise error(f"{os.fspath(path)}: cannot read the {kind}: {e.strerror}") from None


def _place(data: bytes | str, offset: int) -> tuple[int, int]:
    """1-based line and column (in characters) of ``offset`` in ``data``."""
    newline = b"\n" if isinstance(data, bytes) else "\n"
    line = data.count(newline, 0, offset) + 1  # type: ignore[arg-type]
    start = data.rfind(newline, 0, offset) + 1  # type: ignore[arg-type]
    head = data[start:offset]
    return line, len(head.decode("utf-8", "replace") if isinstance(head, bytes) else head) + 1


def decode_text(data: bytes, source: str, kind: str, *, error: Callable[[str], Exception] = FileError) -> str:
    """``data`` as UTF-8; the first byte that is not gives ``file:line:col``."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line, column = _place(data, e.start)
        raise error(f"{source}:{line}:{column}: byte 0x{data[e.start]:02x} is not UTF-8: "
                    f"expected {_a(kind)} in UTF-8") from None


def read_text(path: str | os.PathLike[str], kind: str, max_bytes: int, *,
              error: Callable[[str], Exception] = FileError, missing: Any = _MISSING) -> str:
    """The UTF-8 text of the regular file ``path``; see :func:`read_bytes`."""
    data = read_bytes(path, kind, max_bytes, error=error, missing=missing)
    return data if data is missing else decode_text(data, os.fspath(path), kind, error=error)


# A JSON string (skipped: it may hold brackets) or a bracket.
_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


def _too_deep(text: str, max_depth: int) -> int | None:
    """The offset where ``text`` nests deeper than ``max_depth``, or None."""
    depth = 0
    for m in _JSON_TOKENS.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            if depth > max_depth:
                return m.start()
        elif c in "]}":
            depth -= 1
    return None


def parse_json(text: str, source: str, kind: str, *, error: Callable[[str], Exception] = FileError,
               allow_nan: bool = False, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``text`` as JSON, nested at most ``max_depth`` deep; NaN and Infinity refused unless
    ``allow_nan`` (a sweep's records hold NaN for a metric a run has no value of)."""
    if (at := _too_deep(text, max_depth)) is not None:
        line, column = _place(text, at)
        raise error(f"{source}: damaged JSON: nested deeper than {max_depth} levels at line {line}, column "
                    f"{column}: expected {_a(kind)}")

    def constant(name: str) -> Any:
        if allow_nan:
            return float(name)  # "NaN", "Infinity", "-Infinity"
        raise error(f"{source}: damaged JSON: {name} is not a JSON number: expected {_a(kind)}")

    try:
        return json.loads(text, parse_constant=constant)
    except json.JSONDecodeError as e:  # its msg names what was expected, not what was found
        raise error(f"{source}: damaged JSON: {e.msg.lower()} at line {e.lineno}, column {e.colno}: "
                    f"expected {_a(kind)}") from None
    except RecursionError:  # cannot happen below MAX_JSON_DEPTH; kept so that no input gives a traceback
        raise error(f"{source}: nested too deeply: expected {_a(kind)}") from None


def read_json(path: str | os.PathLike[str], kind: str, max_bytes: int = MAX_JSON_BYTES, *,
              error: Callable[[str], Exception] = FileError, missing: Any = _MISSING, allow_nan: bool = False,
              max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The JSON value of the regular file ``path``; see :func:`read_bytes` and :func:`parse_json`."""
    text = read_text(path, kind, max_bytes, error=error, missing=missing)
    if text is missing:
        return missing
    return parse_json(text, os.fspath(path), kind, error=error, allow_nan=allow_nan, max_depth=max_depth)
