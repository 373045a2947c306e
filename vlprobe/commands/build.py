"""``vlprobe build <dataset> ...``: build a Hub dataset folder (parquet + card), and the checks every builder shares."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..builders import Builder

HELP = "build a dataset folder (parquet with embedded images + card YAML)"


def register(sub: argparse._SubParsersAction) -> None:
    from ..builders import builders
    from ..errors import VlprobeError

    parser = sub.add_parser("build", help=HELP)
    inner = parser.add_subparsers(dest="dataset", metavar="DATASET", required=True)
    try:
        found = builders()
    except VlprobeError as err:  # a plugin's builder that cannot be loaded (vlprobe.plugins): one line, as run() says
        parser.exit(2, f"vlprobe build: error: {err}\n")
    for name, builder in sorted(found.items()):
        p = inner.add_parser(name, help=builder.help, description=builder.help)
        builder.add_arguments(p)
        p.set_defaults(func=_run(builder))


MAX_ITEMS = 1_000_000  # per config: what a generator renders in a day
MAX_RETRIES = 100


def check_args(args: argparse.Namespace) -> None:
    """Refuse, in one line, the arguments every builder shares: counts of at least 1 and at most their largest, and an
    ``--out`` that is a file or the working directory (or a folder holding it: a build replaces its ``--out`` whole)."""
    from ..errors import SettingError

    workers = max(16, 4 * (os.cpu_count() or 1))  # four per core, at least 16: downloads wait on the network
    most = {"workers": workers, "read_workers": workers, "retries": MAX_RETRIES, "items": MAX_ITEMS}
    for name in most:
        value = getattr(args, name, None)
        flag = f"--{name.replace('_', '-')}"
        if value is not None and value < 1:
            raise SettingError(f"{flag} must be 1 or more, got {value}")
        if value is not None and value > most[name]:
            why = f" on this machine (4 per core, at least 16; it has {os.cpu_count() or 1} cores)" if "workers" in name else ""
            raise SettingError(f"{flag} {value}: must be at most {most[name]:,}{why}")
    out = getattr(args, "out", None)
    if out is None:
        return
    if not str(out).strip() or str(out) == ".":
        raise SettingError(f"--out {str(out)!r}: names the working directory; a build replaces its --out whole, so "
                           "give a folder of its own (e.g. --out NAME)")
    path = Path(out).expanduser()
    if path.exists() and not path.is_dir():
        raise SettingError(f"--out {out} is a file, not a folder; give a folder to write the dataset in")
    if path.is_dir() and (path.resolve() == Path.cwd().resolve() or path.resolve() in Path.cwd().resolve().parents):
        raise SettingError(f"--out {out}: is the working directory or a folder that holds it; a build replaces its "
                           "--out whole, so give a folder of its own (e.g. --out NAME)")


def _run(builder: Builder) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        check_args(args)
        out = builder.build(args)
        if getattr(args, "dry_run", False):  # the paper builders' --dry-run: nothing built, the image list written
            if str(out) != "-":
                print(f"dry run, nothing built; the image files needed are listed in {out}")
        elif getattr(args, "up_to_date", None):  # built before from the same inputs (vlprobe.builders.unchanged)
            print(args.up_to_date)
        else:
            print(f"built {out}")
        return 0

    return run
