"""Temporary folders that say whose they are: an :class:`OwnedDir` holds a lock file its process keeps ``flock``-ed
(released by the kernel even after ``kill -9``); :func:`sweep` removes only those whose lock it can take."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import sys
import tempfile
import weakref
from collections.abc import Callable, Iterable
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no flock, so no folder can be proved abandoned
    fcntl = None  # type: ignore[assignment]

LOCK_NAME = ".vlprobe-owner"
# Inside a staging folder: the run swap_in is replacing, which a sweep puts back where a kill left --out absent.
PREVIOUS = "previous"
TMP_PREFIXES = ("vlprobe-features-", "vlprobe-chunk-cache-", "vlprobe-arrow-")


def staging_prefix(out: str | os.PathLike[str]) -> str:
    """The name prefix of the folders beside ``out`` that a run stages it in."""
    return f".{Path(out).name}.new-"


class OwnedDir:
    """A temporary folder (mode 0700) with a lock file held until :meth:`cleanup` (or garbage collection) deletes it."""

    def __init__(self, prefix: str, dir: str | os.PathLike[str] | None = None) -> None:
        self.name = tempfile.mkdtemp(prefix=prefix, dir=dir)
        self.path = Path(self.name)
        fd = -1
        try:
            if fcntl is not None:
                # locked under a temporary name, then renamed: a sweeper never sees it unlocked while we live
                pending = self.path / (LOCK_NAME + ".pending")
                fd = os.open(pending, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
                fcntl.flock(fd, fcntl.LOCK_EX)
                os.write(fd, f"pid {os.getpid()}\nhost {socket.gethostname()}\n".encode())
                os.replace(pending, self.path / LOCK_NAME)
        except BaseException:
            if fd >= 0:
                os.close(fd)
            shutil.rmtree(self.name, ignore_errors=True)
            raise
        self._finalizer = weakref.finalize(self, _remove_lock_last, self.name, fd)

    def cleanup(self) -> None:
        self._finalizer()

    def __repr__(self) -> str:
        return f"OwnedDir({self.name!r})"


def _remove_lock_last(folder: str | os.PathLike[str], fd: int = -1) -> None:
    """Delete ``folder``, its lock file last (so a kill meanwhile leaves one the sweep knows), then release ``fd``."""
    try:
        children = [c for c in os.scandir(folder) if c.name != LOCK_NAME]
    except OSError:
        children = []
    for child in children:
        if child.is_dir(follow_symlinks=False):
            shutil.rmtree(child.path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(child.path)
    shutil.rmtree(folder, ignore_errors=True)
    if fd >= 0:
        os.close(fd)


def remove_if_abandoned(folder: Path, restore: Path | None = None) -> int | None:
    """Remove ``folder`` if its owner is gone (its :data:`PREVIOUS` put back at ``restore``): its size, else None."""
    if fcntl is None:
        return None
    try:
        st = folder.lstat()
        if not folder.is_dir() or folder.is_symlink() or (hasattr(os, "getuid") and st.st_uid != os.getuid()):
            return None
        fd = os.open(folder / LOCK_NAME, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None  # no lock file (or not ours to read): not provably abandoned
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return None  # its owner holds the lock: a live run
        if restore is not None and (folder / PREVIOUS).is_dir() and not os.path.lexists(restore):
            # when it cannot be put back it goes with the rest: out stays absent, as the killed run left it
            with contextlib.suppress(OSError):
                os.replace(folder / PREVIOUS, restore)
        size = _size(folder)
        _remove_lock_last(folder)
        return None if folder.exists() else size
    finally:
        os.close(fd)


def _size(folder: Path) -> int:
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def _candidates(out: str | os.PathLike[str] | None, tmp: bool) -> Iterable[tuple[Path, Path | None]]:
    if tmp:
        root = Path(tempfile.gettempdir())
        try:
            for p in root.iterdir():
                if p.name.startswith(TMP_PREFIXES):
                    yield p, None
        except OSError:
            pass
    if out is not None:
        out = Path(out).expanduser().absolute()
        prefix = staging_prefix(out)
        try:
            for p in out.parent.iterdir():
                # mkdtemp's 8-character suffix only: ".run.new-x.new-abc" stages another folder, "run.new-x"
                if p.name.startswith(prefix) and re.fullmatch(r"[a-z0-9_]{8}", p.name[len(prefix):]):
                    yield p, out
        except OSError:
            pass


def say_on_stderr(message: str) -> None:
    with contextlib.suppress(OSError, ValueError):  # a note never stops a run (a full disk under a redirected stderr)
        print(message, file=sys.stderr, flush=True)


def sweep(out: str | os.PathLike[str] | None = None, *, tmp: bool = True,
          log: Callable[[str], None] | None = say_on_stderr) -> list[Path]:
    """Remove killed runs' leftovers in ``$TMPDIR`` (``tmp``) and beside ``out``, said in one line to ``log``."""
    removed, freed, restored = [], 0, None
    for folder, target in _candidates(out, tmp):
        was_absent = target is not None and not os.path.lexists(target)
        size = remove_if_abandoned(folder, target)
        if size is not None:
            removed.append(folder)
            freed += size
            if was_absent and target is not None and os.path.lexists(target):
                restored = target
    if removed and log is not None:
        shown = ", ".join(str(p) for p in removed[:3]) + (f" and {len(removed) - 3} more" if len(removed) > 3 else "")
        back = f"; put back {restored}, the previous run a killed run had moved aside" if restored else ""
        log(f"vlprobe: removed {len(removed)} leftover folder(s) of killed runs ({freed / 1e6:.1f} MB): {shown}{back}")
    return removed
