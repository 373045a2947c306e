"""A run's output folder as one unit: :func:`check_output_dir` refuses, before any work, a folder a
run cannot take, and :func:`write_run_folder` writes the new run beside it and swaps it in whole, so
the folder is at every instant the previous run, absent, or this run. ``vlprobe evaluate``
(:func:`vlprobe.results.write_outputs`) and ``vlprobe probe`` write through it; names re-exported by
:mod:`vlprobe.results`."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Any

from .errors import ArgumentError

# The names vlprobe evaluate writes into its output folder (and the temporary files older versions
# left there): a folder holding anything else is not a run's, and is never replaced.
RUN_FILE = re.compile(r"^(results\.json|scores\.parquet|results\.csv|plot_.*\.png|\..*\.tmp\d+)$")


def check_output_dir(out_dir: str | os.PathLike, own: "re.Pattern[str]" = RUN_FILE) -> Path:
    """Refuse, before any scoring starts, an output folder that cannot take a run: a path that is
    a file, a folder holding files that are not a vlprobe run's (names matching ``own``: by default
    those ``vlprobe evaluate`` writes; they would be lost when the new run is swapped in), or a
    place where nothing can be written. Creates nothing."""
    out = Path(out_dir).expanduser()
    if out.exists() and not out.is_dir():
        raise ArgumentError("out", str(out), "is a file, not a folder; choose a folder for the outputs")
    if out.is_dir():
        foreign = sorted(p.name for p in out.iterdir() if not own.match(p.name))
        if foreign:
            shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
            raise ArgumentError("out", str(out), f"holds files that are not a vlprobe run's ({shown}); a run "
                                                 f"replaces its folder as a whole, so choose a new or empty folder")
    # The outputs are written into a temporary folder beside out and renamed: the parent (or the
    # nearest folder that exists) must take a new folder.
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
    return out


def write_run_folder(out_dir: str | os.PathLike, write: Any, own: "re.Pattern[str]" = RUN_FILE) -> list[Path]:
    """Write a run's output folder as one unit: ``write(folder)`` fills a new folder (and returns
    the names it wrote), which then replaces ``out_dir`` whole, so that ``out_dir`` is at every
    instant the previous run, absent, or this run, never a mixture, and holds only this run's files.

    The new folder is made inside a staging folder beside ``out_dir`` (``.NAME.new-*``, a
    :class:`vlprobe.leftovers.OwnedDir`), which also receives the previous run when it is swapped
    out, and is deleted at the end, on an error or an interrupt alike. A run killed meanwhile leaves
    that staging folder, locked by no one: the next run's :func:`vlprobe.leftovers.sweep` (done here
    first) removes it, putting the previous run back should the kill have come between the two
    renames of the swap. The output folder itself gets the mode any new folder gets (the umask's), not
    mkdtemp's 0700. ``own``: the names a run of this kind writes (see :func:`check_output_dir`).
    Returns the paths the files have in ``out_dir``."""
    from .leftovers import OwnedDir, staging_prefix, sweep

    out = check_output_dir(out_dir, own)  # never swap away a folder that holds anything but a run
    out.parent.mkdir(parents=True, exist_ok=True)
    sweep(out)
    holder = OwnedDir(prefix=staging_prefix(out), dir=out.parent)
    try:
        stage = holder.path / "run"
        stage.mkdir()
        names = list(write(stage))
        _swap_in(stage, out, holder.path)
    finally:
        holder.cleanup()
    return [out / n for n in names]


def _swap_in(stage: Path, out: Path, holder: Path) -> None:
    """Replace ``out`` by ``stage``: at every instant ``out`` is the old run, absent, or the new run.
    The old run goes into ``holder`` (the staging folder, deleted afterwards)."""
    from .leftovers import PREVIOUS

    moved = out.exists()
    if moved:
        os.replace(out, holder / PREVIOUS)  # a kill before the next line: the next run's sweep puts it back
    try:
        os.replace(stage, out)
    except BaseException:  # an error (or Ctrl-C) between the renames: the previous run goes back
        if moved and not os.path.lexists(out):
            os.replace(holder / PREVIOUS, out)
        raise
