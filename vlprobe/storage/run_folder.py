"""A run's output folder as one unit, written beside it and swapped in whole; only a folder whose :data:`RUN_RECORD`
names this command and accounts for every file (or an empty one, or a run from before the record) is replaced."""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..errors import ArgumentError
from .keys import identity, sha256_files
from .leftovers import PREVIOUS, OwnedDir, say_on_stderr, staging_prefix, sweep

# The names vlprobe evaluate writes into its output folder: what a run of it may hold beside RUN_RECORD.
RUN_FILE = re.compile(r"^(results\.json|scores\.parquet|results(_wide)?\.csv|plot_.*\.png)$")
RUN_RECORD = ".vlprobe-run.json"  # {"command": ..., "files": {name: "sha256:<hex>"}}: who wrote this folder, and what


def _command_of(own: re.Pattern[str]) -> str:
    return "evaluate" if own.pattern == RUN_FILE.pattern else "probe"


@dataclass(frozen=True)
class RunRecord:
    """A run folder's :data:`RUN_RECORD`: the command that wrote it and each file's :func:`_written`."""

    command: str
    files: dict[str, str | int | None]

    @classmethod
    def read(cls, folder: Path) -> RunRecord | None:
        try:
            value = json.loads((folder / RUN_RECORD).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        command, files = (value.get("command"), value.get("files")) if isinstance(value, dict) else (None, None)
        return cls(command, files) if isinstance(command, str) and isinstance(files, dict) else None

    def write(self, folder: Path) -> None:
        (folder / RUN_RECORD).write_text(json.dumps({"command": self.command, "files": self.files}, indent=1,
                                                    sort_keys=True), encoding="utf-8")


def _not_ours(out: Path, own: re.Pattern[str]) -> str | None:
    """Why the existing folder ``out`` is not a run this command may replace, or None."""
    names = sorted(p.name for p in out.iterdir())
    if not names:
        return None
    command = _command_of(own)
    record = RunRecord.read(out)
    if record is None and _legacy_run(out, names, own, command):
        return None
    if record is None:
        shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        return (f"holds files that are not a vlprobe run's ({shown}): no record of a vlprobe run ({RUN_RECORD}) is "
                f"there; a run replaces its folder as a whole, so choose a new or empty folder")
    if record.command != command:
        return (f"holds a `vlprobe {record.command}` run, which `vlprobe {command}` would replace; choose another "
                "folder")
    written = record.files
    extra = [n for n in names if n != RUN_RECORD and (n not in written or not own.match(n))]
    changed = [n for n in names if n in written and _written(out / n, written[n]) != written[n]]
    if extra or changed:
        shown = ", ".join((extra or changed)[:3]) + (", ..." if len(extra or changed) > 3 else "")
        what = "files that are not the vlprobe run's" if extra else "files changed since the run wrote them"
        return f"holds {what} ({shown}); a run replaces its folder as a whole, so choose a new or empty folder"
    return None


def _legacy_run(out: Path, names: list[str], own: re.Pattern[str], command: str) -> bool:
    """Whether ``out`` is a run of ``command`` from before :data:`RUN_RECORD` (only its names, its command line)."""
    if "results.json" not in names or not all(own.match(n) for n in names):
        return False
    try:
        provenance = json.loads((out / "results.json").read_text(encoding="utf-8")).get("provenance") or {}
    except (OSError, ValueError, AttributeError):
        return False
    line = provenance.get("command") if isinstance(provenance, dict) else None
    return isinstance(line, str) and line.startswith(f"vlprobe {command} ")


def _written(path: Path, like: str | int | None = "sha256:") -> str | int | None:
    """``sha256:<hex>`` of ``path`` (its size where ``like``, an older record, is an int); None if unreadable or a link."""
    try:
        if path.is_symlink() or not path.is_file():
            return None
        if isinstance(like, int):
            return path.stat().st_size
        return "sha256:" + sha256_files([path])[1][0]
    except OSError:
        return None


def check_output_dir(out_dir: str | os.PathLike[str], own: re.Pattern[str] = RUN_FILE, *, remember: bool = True) -> Path:
    """Refuse, creating nothing, an output folder a run cannot take (a file, not a run of this command, unwritable); the
    folder the run will write (``out_dir``, or a link's target), remembered to say when another run replaced it."""
    out = _target(Path(out_dir).expanduser())
    if out.exists() and not out.is_dir():
        raise ArgumentError("out", str(out_dir), "is a file, not a folder; choose a folder for the outputs")
    if out.is_dir():
        why = _not_ours(out, own)
        if why:
            raise ArgumentError("out", str(out_dir), why)
    # the run is staged beside out: the nearest existing parent must take a new folder
    parent = out.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise ArgumentError("out", str(out), f"{parent} is a file, so the folder cannot be created")
    try:
        probe = Path(tempfile.mkdtemp(prefix=".vlprobe-probe-", dir=parent))
        probe.rmdir()
    except OSError as err:
        raise ArgumentError("out", str(out), f"cannot write in {parent} ({err.strerror or err}); choose a "
                                             f"writable folder") from None
    if remember:
        _SEEN[str(out.absolute())] = identity(out)
    return out


_SEEN: dict[str, tuple[int, int] | None] = {}  # out (absolute) -> the folder there when this process checked it


def _target(out: Path) -> Path:
    """``out``, or the folder a symbolic link ``out`` points to (replaced there, so ``out`` stays a link)."""
    return Path(os.path.realpath(out)) if out.is_symlink() else out


def write_run_folder(out_dir: str | os.PathLike[str], write: Callable[[Path], Iterable[str]],
                     own: re.Pattern[str] = RUN_FILE) -> list[Path]:
    """``write(folder)`` fills a staging folder beside ``out_dir``, swapped in whole with its :data:`RUN_RECORD`."""
    given = Path(out_dir).expanduser()
    check_output_dir(given, own, remember=False)  # never swap away a folder that holds anything but a run of this command
    out = _target(given)
    if out != given:
        say_on_stderr(f"vlprobe: --out {given} is a symbolic link: writing the run into {out}, the folder it points "
                      "to, which it goes on pointing to")
    out.parent.mkdir(parents=True, exist_ok=True)
    sweep(out)
    holder = OwnedDir(prefix=staging_prefix(out), dir=out.parent)
    try:
        stage = holder.path / "run"
        stage.mkdir()
        names = list(write(stage))
        RunRecord(_command_of(own), {n: _written(stage / n) for n in names}).write(stage)
        seen = _SEEN.get(str(out.absolute()), "unknown")
        now = identity(out)
        if seen != "unknown" and now is not None and now != seen:
            say_on_stderr(f"vlprobe: note: {given} was replaced by another run while this one worked; this run's "
                          "output replaces it")
        swap_in(stage, out, holder.path)
        _SEEN[str(out.absolute())] = identity(out)
    finally:
        holder.cleanup()
    return [given / n for n in names]


_RENAME_EXCHANGE = 2  # renameat2's flag (Linux 3.15+, glibc 2.28+)


def exchange(a: Path, b: Path) -> bool:
    """Swap two existing paths in one step (Linux ``renameat2(RENAME_EXCHANGE)``); False where the system cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd = -100
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (22, 38, 95):  # EINVAL, ENOSYS, EOPNOTSUPP: this kernel or file system cannot exchange
        return False
    raise OSError(err, os.strerror(err), str(b))


def swap_in(stage: Path, out: Path, holder: Path) -> None:
    """Replace ``out`` by ``stage`` in one exchange where the system can; else the old run is renamed away first."""
    if out.is_dir() and exchange(stage, out):
        return
    moved = out.exists()
    if moved:
        os.replace(out, holder / PREVIOUS)  # a kill before the next line: the next run's sweep puts it back
    try:
        os.replace(stage, out)
    except BaseException:  # an error (or Ctrl-C) between the renames: the previous run goes back
        if moved and not os.path.lexists(out):
            os.replace(holder / PREVIOUS, out)
        raise
