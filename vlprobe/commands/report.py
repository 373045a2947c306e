"""``vlprobe report <results.json ...> [--label NAME ...] [--out DIR]``: compare runs in Markdown, HTML
and LaTeX, with a plot,
with the papers' aggregates (:mod:`vlprobe.results.summary`) beside the seed papers' published numbers where
benchmark, config and metric match; a ``vlprobe probe`` run beside TraVLR's Table 2 (:mod:`vlprobe.report.probes`).
Bad files are refused, one line each naming the file and the field (:mod:`vlprobe.report`)."""

from __future__ import annotations

import argparse

HELP = "compare runs (evaluate or probe results.json files) with the papers' numbers in Markdown, HTML and LaTeX"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help=HELP,
        description=(
            "Compare runs written by `vlprobe evaluate` (and `vlprobe probe`): report.md, report.html, "
            "report.tex (booktabs tables to paste into a paper) and report.png, each metric with its CI and the "
            "run's tied comparisons, with the papers' aggregates (VALSE per instrument and Avg. over its 11 "
            "instruments, Winoground text / image / group, BLA per task, TraVLR per task and test split) and the "
            "published numbers (VALSE Table 2, Winoground Table 3, BLA thesis Tables 6.3 and 6.2) beside this run "
            "where benchmark, config and metric match. A `vlprobe probe` run's results.json is taken too: its "
            "TraVLR Table 2 layout and each cell beside TraVLR's published Table 2 (the paper's figure, ours, the "
            "difference); report.png is of evaluate runs only. Each results.json is "
            "checked first against its declared shape (`vlprobe schema`): one line per bad file, naming the field."
        ),
    )
    p.add_argument("results", nargs="+", metavar="RESULTS", help="results.json files (or the run folders holding them)")
    p.add_argument("--label", action="append", default=None, metavar="NAME",
                   help="the name a run goes by in every table, once per run in the order given (default: the "
                        "model folder's name, with dtype / control / modality when not the default)")
    p.add_argument("--out", default="runs/report", help="output folder (default: runs/report)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..report import write_report

    written = write_report(args.results, args.out, labels=args.label)
    for path in written:
        print(f"wrote {path}")
    return 0
