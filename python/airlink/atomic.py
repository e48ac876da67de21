"""Every folder (and plot file) airlink writes, under one rule, and folders that appear whole or
not at all.

The rule (``check_output``): airlink writes only into a folder that does not exist, is empty, or
that airlink itself made for the same kind of output ("results", "store", "report",
"reproduction", "validation"). Such a folder is recognised by its hidden marker ``.airlink``
(JSON: the kind and a random id), which only airlink writes; a common file name such as
manifest.json or report.json proves nothing. ``--force`` replaces only a marked folder of the
same kind. Never written, with or without ``--force``: a device, FIFO, socket or other non-folder,
a symbolic link, anything under /dev, /proc or /sys. A folder of an airlink from before the
markers is not replaced either (the message says to move it aside); only a sweep store, which is
resumed and never deleted, is still recognised by its manifest. A plot file is replaced only if
it is a PNG carrying airlink's own text chunk (``claim_file``).

Everything is written into a hidden sibling ``.<name>.partial-<pid>`` and renamed to its final
name only once complete, so a crash, a kill or Ctrl-C never leaves a half-written folder under
the final name. An exception (including KeyboardInterrupt) removes the partial folder; a
``kill -9`` cannot, so partial folders of dead processes are swept the next time the same
folder is written.

The final name is taken at the start: a lock on the sibling ``.<name>.lock`` (``flock``,
released by the kernel even after ``kill -9``) makes a second run with the same folder fail at
once instead of after all its work.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import stat
import struct
import uuid
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from airlink import files


class OutputError(OSError):
    """An output path airlink will not write; the message says why (the CLI: one line, exit 1)."""


class FolderExistsError(OutputError, FileExistsError):
    """The destination folder exists and replacing it was not asked for (or is not allowed)."""


class FolderBusyError(FolderExistsError):
    """Another process is writing the same destination folder."""


def lock_name(final: Path) -> Path:
    return final.parent / f".{final.name}.lock"


@contextmanager
def folder_lock(final: Path) -> Iterator[None]:
    """Holds the exclusive right to write ``final``; raises FolderBusyError at once if another
    process holds it."""
    path = lock_name(final)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            holder = ""
            try:
                holder = f" (process {int(path.read_text())})"
            except (OSError, ValueError):
                pass
            raise FolderBusyError(f"{final} is being written by another run{holder}: choose another folder") from None
        # The holder before us may have removed the file after we opened it: lock the file
        # that is there now, not an orphan.
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        yield
    finally:
        path.unlink(missing_ok=True)  # while still locked, so nobody locks a file about to vanish
        os.close(fd)


def partial_name(final: Path, pid: int | None = None) -> Path:
    """The temporary sibling a process writes ``final`` into."""
    return final.parent / f".{final.name}.partial-{os.getpid() if pid is None else pid}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True


def sweep_stale_partials(final: Path) -> list[Path]:
    """Removes partial folders of ``final`` left by processes that no longer run."""
    removed: list[Path] = []
    prefix = f".{final.name}.partial-"
    if not final.parent.is_dir():
        return removed
    for candidate in final.parent.glob(prefix + "*"):
        pid_text = candidate.name[len(prefix):]
        if pid_text.isdigit() and int(pid_text) != os.getpid() and not _pid_alive(int(pid_text)):
            shutil.rmtree(candidate, ignore_errors=True)
            removed.append(candidate)
    return removed


MARKER = ".airlink"
KINDS = ("results", "store", "report", "reproduction", "validation", "plot")
#: Kinds a run continues into (a resumed sweep or reproduction), without --force.
RESUMABLE = ("store", "reproduction")
NOUNS = {"results": "results folder", "store": "sweep store", "report": "report folder",
         "reproduction": "reproduction report", "validation": "validation report", "plot": "plot"}
SYSTEM = (Path("/dev"), Path("/proc"), Path("/sys"))
NAME_MAX = 255
#: What the longest sibling name adds to a folder's name while it is written (".NAME.partial-PID").
SUFFIX_MAX = len("..partial-") + 7


def _describe(mode: int) -> str:
    for test, what in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link"),
                       (stat.S_ISREG, "a file")):
        if test(mode):
            return what
    return "not a folder"


def _usable_path(final: Path, *, suffix: int) -> None:
    """Refuses paths no output may take: names too long, symbolic links, system trees, a file
    where a folder must be, a parent that cannot be written. ``suffix``: bytes a sibling name adds."""
    for part in final.parts:
        size = len(os.fsencode(part))
        limit = NAME_MAX - suffix if part == final.name else NAME_MAX
        if size > limit:
            raise OutputError(f"{str(final)[:60]}...: a name of {size} bytes; at most {limit} (the file system "
                              f"allows {NAME_MAX}{', and airlink adds a suffix while writing' if suffix else ''})")
    if final.is_symlink():
        raise OutputError(f"{final} is a symbolic link: airlink writes only to a real path; give the folder it points to")
    real = Path(os.path.realpath(final))
    for system in SYSTEM:
        if real == system or system in real.parents:
            raise OutputError(f"{final} is under {system}: airlink writes no output there")
    # The first ancestor that exists must be a folder we may write into.
    ancestor = final.parent
    while not os.path.lexists(ancestor) and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    try:
        mode = os.stat(ancestor).st_mode
    except OSError as e:
        raise OutputError(f"{final}: cannot use {ancestor}: {e.strerror}") from None
    if not stat.S_ISDIR(mode):
        raise OutputError(f"{final}: {ancestor} is {_describe(mode)}, not a folder")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise OutputError(f"{final}: {ancestor} is not writable")


def read_marker(folder: Path) -> dict[str, object] | None:
    """The marker airlink wrote into ``folder``, or None (no marker, or not one of ours)."""
    path = folder / MARKER
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        marker = files.read_json(path, "output marker", 4096, error=ValueError)
    except (OSError, ValueError):
        return None
    if not isinstance(marker, dict) or marker.get("kind") not in KINDS or not isinstance(marker.get("id"), str):
        return None
    return marker


def write_marker(folder: Path, kind: str) -> None:
    """Marks ``folder`` as airlink's output of ``kind`` (kept if it is marked so already)."""
    if kind not in KINDS:
        raise ValueError(f"unknown output kind {kind!r}")
    old = read_marker(folder)
    if old is not None and old["kind"] == kind:
        return
    from airlink.version import version

    body = json.dumps({"airlink": version(), "kind": kind, "id": uuid.uuid4().hex}) + "\n"
    tmp = folder / f"{MARKER}.{os.getpid()}.tmp"
    tmp.write_text(body, encoding="utf-8")
    os.replace(tmp, folder / MARKER)


def _json_field(path: Path, field: str) -> object:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value.get(field) if isinstance(value, dict) else None


def _legacy(folder: Path, kind: str) -> bool:
    """Whether ``folder`` looks like ``kind`` output of an airlink from before the markers (by
    content, not by a file name): such a folder is refused with advice, never replaced."""
    if kind == "results":
        return _json_field(folder / "manifest.json", "results_format") is not None
    if kind == "reproduction":
        return _json_field(folder / "reproduction.json", "study") is not None
    if kind in ("report", "validation"):
        try:
            return "airlink" in (folder / "index.html").read_text(encoding="utf-8", errors="replace")[:4096]
        except OSError:
            return False
    return False


def legacy_store(folder: Path) -> bool:
    """A sweep store of an airlink from before the markers: resumed (never deleted), so a sweep
    killed before it could mark its store resumes as well."""
    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and manifest.get("store") == "airlink-sweep"


def check_output(final: str | os.PathLike[str], kind: str, *, replace: bool = False) -> None:
    """Refuses, before any work, an output folder ``final`` that airlink may not write ``kind``
    into (see the module's rule). ``replace``: --force was given. A resumable kind's own folder
    passes without it."""
    final = Path(final)
    _usable_path(final, suffix=SUFFIX_MAX)
    try:
        mode = os.lstat(final).st_mode
    except FileNotFoundError:
        return
    except OSError as e:
        raise OutputError(f"{final}: {e.strerror}") from None
    if not stat.S_ISDIR(mode):
        raise OutputError(f"{final} is {_describe(mode)}, not a folder: airlink writes output folders only "
                          "into new or empty folders (or its own); choose another --out")
    try:
        empty = not any(os.scandir(final))
    except OSError as e:
        raise OutputError(f"{final}: {e.strerror}") from None
    if empty:
        return
    noun = NOUNS[kind]
    marker = read_marker(final)
    if marker is None:
        if kind == "store" and legacy_store(final):
            return
        if _legacy(final, kind):
            raise FolderExistsError(
                f"{final} looks like a {noun} of an older airlink (it has no {MARKER} marker), and airlink "
                f"replaces only folders it can tell it made: move it aside or delete it yourself, or choose another --out")
        raise FolderExistsError(f"{final} exists and is not an airlink {noun} (no {MARKER} marker): airlink writes only "
                                "into a new or empty folder or one it made; choose another --out")
    if marker["kind"] != kind:
        raise FolderExistsError(f"{final} holds airlink {NOUNS[str(marker['kind'])]}, not a {noun}: "
                                f"--force replaces only a {noun}; choose another --out")
    if kind not in RESUMABLE and not replace:
        raise FolderExistsError(f"{final} exists: choose another folder or replace it (--force)")


def ensure_writable(final: Path, *, replace: bool, kind: str | None = None) -> None:
    """Refuses early (before any work) what ``atomic_folder`` would refuse. Without a ``kind``
    only a new or empty folder may be written."""
    if kind is None:
        _usable_path(final, suffix=SUFFIX_MAX)
        if os.path.lexists(final) and not (final.is_dir() and not any(final.iterdir())):
            raise FolderExistsError(f"{final} exists: choose another folder")
    else:
        check_output(final, kind, replace=replace)


def claim_output(final: str | os.PathLike[str], kind: str, *, force: bool = False) -> Path:
    """Takes the folder ``final`` for output that is written into it over time (a store, a
    reproduction): refuses what the rule refuses, creates it if need be and marks it."""
    final = Path(final)
    check_output(final, kind, replace=force)
    try:
        final.mkdir(parents=True, exist_ok=True)
        write_marker(final, kind)
    except OSError as e:
        raise OutputError(f"{final}: {e.strerror or e}") from None
    return final


@contextmanager
def atomic_folder(final: str | os.PathLike[str], *, replace: bool = False, kind: str | None = None) -> Iterator[Path]:
    """Yields an empty temporary folder that becomes ``final`` when the block ends normally.
    With a ``kind`` the folder is marked as airlink's output of that kind, and ``replace`` (--force)
    may replace a folder so marked.

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> with atomic_folder(root / "out", kind="results") as tmp:
    ...     _ = (tmp / "a.txt").write_text("done")
    >>> (root / "out" / "a.txt").read_text()
    'done'
    >>> with atomic_folder(root / "out", kind="results"):
    ...     pass
    Traceback (most recent call last):
    ...
    airlink.atomic.FolderExistsError: ... exists: choose another folder or replace it (--force)
    """
    final = Path(final)
    ensure_writable(final, replace=replace, kind=kind)
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(f"{final}: cannot create {final.parent}: {e.strerror or e}") from None
    with folder_lock(final):
        ensure_writable(final, replace=replace, kind=kind)  # it may have appeared before we held the lock
        sweep_stale_partials(final)
        tmp = partial_name(final)
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        try:
            if kind is not None:
                write_marker(tmp, kind)
            yield tmp
            _commit(tmp, final, replace=replace, kind=kind)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise


def _commit(tmp: Path, final: Path, *, replace: bool, kind: str | None) -> None:
    ensure_writable(final, replace=replace, kind=kind)  # checked again: the rule holds at the rename too
    if not os.path.lexists(final) or not any(final.iterdir()):
        os.replace(tmp, final)  # over an empty folder, or none
        return
    # Two renames: the old folder stays whole until the new one is in place.
    old = final.parent / f".{final.name}.old-{os.getpid()}"
    os.rename(final, old)
    os.rename(tmp, final)
    shutil.rmtree(old, ignore_errors=True)


# --- plot files -------------------------------------------------------------------------------

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PNG_KEYWORD = b"airlink"


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def mark_png(path: Path) -> None:
    """Adds airlink's marker (a tEXt chunk after the header) to the PNG file ``path``."""
    data = path.read_bytes()
    if not data.startswith(PNG_SIGNATURE):
        raise ValueError(f"{path}: not a PNG file")
    end_of_header = len(PNG_SIGNATURE) + 8 + struct.unpack(">I", data[8:12])[0] + 4
    text = PNG_KEYWORD + b"\0" + json.dumps({"kind": "plot", "id": uuid.uuid4().hex}).encode()
    path.write_bytes(data[:end_of_header] + _png_chunk(b"tEXt", text) + data[end_of_header:])


def png_marked(path: Path) -> bool:
    """Whether the file ``path`` is a PNG that airlink wrote (it has airlink's tEXt chunk)."""
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 16)
    except OSError:
        return False
    if not head.startswith(PNG_SIGNATURE):
        return False
    at = len(PNG_SIGNATURE)
    while at + 8 <= len(head):
        size, kind = struct.unpack(">I", head[at:at + 4])[0], head[at + 4:at + 8]
        if kind == b"tEXt" and head[at + 8:at + 8 + size].startswith(PNG_KEYWORD + b"\0"):
            return True
        if kind == b"IDAT":
            return False
        at += 12 + size
    return False


def claim_file(path: str | os.PathLike[str], *, force: bool = False) -> Path:
    """Refuses a plot file ``path`` that airlink may not write: a non-regular file, a symbolic
    link, a system path; an existing file without ``force``, or one airlink did not write."""
    path = Path(path)
    _usable_path(path, suffix=SUFFIX_MAX)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return path
    if not stat.S_ISREG(mode):
        raise OutputError(f"{path} is {_describe(mode)}, not a regular file: choose another --out")
    if not force:
        raise FolderExistsError(f"{path} exists: choose another file or replace it (--force)")
    if not png_marked(path):
        raise FolderExistsError(f"{path} is not a plot airlink wrote (no airlink PNG marker): "
                                "--force replaces only airlink's plots; choose another --out")
    return path


def write_file(path: Path, write: Callable[[Path], None], *, force: bool = False) -> None:
    """Writes a plot file whole or not at all: ``write`` draws into a temporary sibling, which is
    marked, flushed to disk (so a full disk is an error here, not a silently short file) and
    renamed over ``path``."""
    claim_file(path, force=force)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(f"{path}: cannot create {path.parent}: {e.strerror or e}") from None
    tmp = path.parent / f".{path.name}.partial-{os.getpid()}{path.suffix}"
    try:
        write(tmp)
        mark_png(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        claim_file(path, force=force)  # still so at the rename
        os.replace(tmp, path)
    except OSError as e:
        raise OutputError(f"{path}: cannot write: {e.strerror or e}") from None
    finally:
        if os.path.lexists(tmp):
            tmp.unlink()
