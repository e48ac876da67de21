"""What code made a result: the package version (the installed distribution's, else the core's:
they are the same number), the git commit it runs from, and a hash of the built core.

The version number alone says little (it is the same at every commit), so manifests also record
``code_identity()``, and result stores reuse a run only if ``core_build()`` made it.
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

GIT_TIMEOUT_S = 5  # a slow or locked repository must not hold up a run


def version() -> str:
    try:
        return metadata.version("airlink")
    except metadata.PackageNotFoundError:
        from airlink import _core

        return _core.__version__


@functools.cache
def core_build() -> str:
    """A hash of the simulation core's binary: what decides whether two runs came from the same
    models (the version number does not change with every change of the models).

    >>> len(core_build())
    16
    """
    from airlink import _core

    h = hashlib.sha256()
    with open(_core.__file__, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:16]


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):  # no git, or it hangs: the commit stays unknown
        return None
    return done.stdout if done.returncode == 0 else None


@functools.cache
def git_commit() -> tuple[str | None, bool | None]:
    """The commit of the git checkout this package runs from and whether tracked files differ
    from it; ``(None, None)`` for an installed package or when git cannot tell.

    Asked of git itself (rev-parse, status) rather than read from ``.git``: worktrees, packed
    refs and submodules all have their own layouts. Untracked files do not count as changes:
    results folders written inside the checkout are not code.
    """
    root = Path(__file__).resolve().parents[2]  # python/airlink/ -> the source tree
    if not (root / ".git").exists():
        return None, None
    commit = _git(root, "rev-parse", "HEAD")
    if not commit:
        return None, None
    status = _git(root, "status", "--porcelain", "--untracked-files=no")
    return commit.strip(), (None if status is None else bool(status.strip()))


def code_identity() -> dict[str, Any]:
    """The code a result comes from, as manifests record it: version, git commit and whether the
    checkout had changes (null when not run from a checkout), the core's build hash, and the UTC
    date it was made.

    >>> sorted(code_identity())
    ['airlink', 'commit', 'core', 'date', 'dirty']
    """
    commit, dirty = git_commit()
    return {"airlink": version(), "commit": commit, "dirty": dirty, "core": core_build(),
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")}
