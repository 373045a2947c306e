"""``vlprobe report``: compare runs (:mod:`vlprobe.report`); ``--check``: a reproduction check against the published
figures."""

from __future__ import annotations

import argparse

from . import add_command

HELP = "compare runs (evaluate or probe results.json files) with the papers' numbers in Markdown, HTML and LaTeX"


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "report", HELP, run, (
        "Compare runs written by `vlprobe evaluate` and `vlprobe probe`: report.md, report.html, report.tex "
        "(booktabs tables to paste into a paper) and report.png (evaluate runs only), each metric with its CI, the "
        "papers' aggregates, and the published numbers beside the run's where benchmark, config and metric match "
        "(the papers' tables, and vlprobe/data/published.csv for a checkpoint with published figures), with the "
        "difference. Each results.json is checked first against its declared shape (`vlprobe schema`). See "
        "docs/report.md."))
    p.add_argument("results", nargs="+", metavar="RESULTS", help="results.json files (or the run folders holding them)")
    p.add_argument("--label", action="append", default=None, metavar="NAME",
                   help="the name a run goes by in every table, once per run in the order given (default: the "
                        "model folder's name, with dtype / control / modality when not the default)")
    p.add_argument("--out", default=None, help="output folder (default: runs/report; with --check, none is written "
                                                "unless given)")
    p.add_argument("--check", action="store_true",
                   help="check that each run reproduces the figures published for its checkpoint: exit 1, naming each "
                        "figure, when one is more than --tolerance points from the run's (or the runs have none to "
                        "compare), 0 when all are within it")
    p.add_argument("--tolerance", type=float, default=1.0, metavar="POINTS",
                   help="with --check: the largest difference allowed, in percentage points (default: 1.0)")


def run(args: argparse.Namespace) -> int:
    from ..errors import ArgumentError
    from ..report import check_published, load_runs, write_report

    if args.tolerance < 0 or args.tolerance != args.tolerance:
        raise ArgumentError("tolerance", args.tolerance, "must be 0 or more (points)", flag="--tolerance")
    if not args.check or args.out is not None:
        for path in write_report(args.results, args.out or "runs/report", labels=args.label):
            print(f"wrote {path}")
    if not args.check:
        return 0
    ok, lines = check_published(load_runs(args.results, args.label, probes=True), args.tolerance)
    print("\n".join(lines))
    return 0 if ok else 1
