"""Folders that appear whole or not at all.

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
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class FolderExistsError(FileExistsError):
    """The destination folder exists and replacing it was not asked for."""


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


def ensure_writable(final: Path, *, replace: bool) -> None:
    """Refuses early (before any work) when ``final`` exists and may not be replaced."""
    if final.exists() and not replace:
        raise FolderExistsError(f"{final} exists: choose another folder or replace it (--force)")


@contextmanager
def atomic_folder(final: str | os.PathLike[str], *, replace: bool = False) -> Iterator[Path]:
    """Yields an empty temporary folder that becomes ``final`` when the block ends normally.

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> with atomic_folder(root / "out") as tmp:
    ...     _ = (tmp / "a.txt").write_text("done")
    >>> (root / "out" / "a.txt").read_text()
    'done'
    >>> with atomic_folder(root / "out"):
    ...     pass
    Traceback (most recent call last):
    ...
    airlink.atomic.FolderExistsError: ... exists: choose another folder or replace it (--force)
    """
    final = Path(final)
    ensure_writable(final, replace=replace)
    final.parent.mkdir(parents=True, exist_ok=True)
    with folder_lock(final):
        ensure_writable(final, replace=replace)  # it may have appeared before we held the lock
        sweep_stale_partials(final)
        tmp = partial_name(final)
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        try:
            yield tmp
            _commit(tmp, final, replace=replace)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise


def _commit(tmp: Path, final: Path, *, replace: bool) -> None:
    if not final.exists():
        os.rename(tmp, final)
        return
    ensure_writable(final, replace=replace)
    # Two renames: the old folder stays whole until the new one is in place.
    old = final.parent / f".{final.name}.old-{os.getpid()}"
    os.rename(final, old)
    os.rename(tmp, final)
    shutil.rmtree(old, ignore_errors=True)
