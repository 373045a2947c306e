"""``vlprobe build <dataset> ...``: build a Hub dataset folder (parquet + card) offline."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    from ..builders import builders

    parser = sub.add_parser("build", help="build a dataset folder (parquet with embedded images + card YAML)")
    inner = parser.add_subparsers(dest="dataset", metavar="DATASET", required=True)
    for name, module in sorted(builders().items()):
        p = inner.add_parser(name, help=getattr(module, "HELP", ""), description=getattr(module, "HELP", ""))
        module.add_arguments(p)
        p.set_defaults(func=_run(module))


def _run(module):
    def run(args: argparse.Namespace) -> int:
        out = module.build(args)
        print(f"built {out}")
        return 0

    return run
