"""``vlprobe build <dataset> ...``: build a Hub dataset folder (parquet + card) offline."""

from __future__ import annotations

import argparse

HELP = "build a dataset folder (parquet with embedded images + card YAML)"


def register(sub: argparse._SubParsersAction) -> None:
    import sys

    from ..builders import builders
    from ..errors import VlprobeError

    parser = sub.add_parser("build", help=HELP)
    inner = parser.add_subparsers(dest="dataset", metavar="DATASET", required=True)
    try:
        found = builders()
    except VlprobeError as err:  # a plugin's builder that cannot be loaded (vlprobe.plugins): one line, as run() says
        print(f"vlprobe build: error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    for name, module in sorted(found.items()):
        p = inner.add_parser(name, help=getattr(module, "HELP", ""), description=getattr(module, "HELP", ""))
        module.add_arguments(p)
        p.set_defaults(func=_run(module))


# Counts every builder may take, and their least value (checked here, so each builder need not).
_AT_LEAST = {"workers": 1, "read_workers": 1, "retries": 1, "items": 1}


def check_args(args: argparse.Namespace) -> None:
    """Refuse, in one line, the arguments every builder shares: counts below their least value and
    an ``--out`` that is a file."""
    from pathlib import Path

    from ..errors import SettingError

    for name, least in _AT_LEAST.items():
        value = getattr(args, name, None)
        if value is not None and value < least:
            raise SettingError(f"--{name.replace('_', '-')} must be {least} or more, got {value}")
    out = getattr(args, "out", None)
    if out is not None and Path(out).exists() and not Path(out).is_dir():
        raise SettingError(f"--out {out} is a file, not a folder; give a folder to write the dataset in")


def _run(module):
    def run(args: argparse.Namespace) -> int:
        check_args(args)
        out = module.build(args)
        if getattr(args, "dry_run", False):  # the paper builders' --dry-run: nothing built, the image list written
            if str(out) != "-":
                print(f"dry run, nothing built; the image files needed are listed in {out}")
        elif getattr(args, "up_to_date", None):  # built before from the same inputs (vlprobe.builders.unchanged)
            print(args.up_to_date)
        else:
            print(f"built {out}")
        return 0

    return run
