"""``vlprobe probe``: TraVLR's protocol (train on one modality, test on each) on a model's frozen features.

    vlprobe probe --dataset travlr --config all --model models/mini-clip \\
        --train-modality image,caption,both --test-modality image,caption,both --train-size 100,200 --out runs/probe

Parses the arguments (whose flags, defaults and help come from the option table
``vlprobe.probing.settings.OPTIONS``, where each option is defined once) and calls
:func:`vlprobe.probing.probe` (also ``vlprobe.probe``), which checks every setting and --out before anything is
loaded and writes the output folder as one unit; see that module for the protocol. Writes results.json (rows +
provenance + tables), results.csv, tables.md and learning-curve plots.
"""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "TraVLR's protocol: train a probe on one modality's features, test on image/caption/both (macro-F1)"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "probe",
        help=HELP,
        description=(
            "Train a classifier on a frozen model's features with the scene given as an image, a caption or "
            "both; test it in and out of distribution on every modality (cross-modal transfer), with "
            "learning curves and text-only baselines. Features are computed once and cached."
        ),
    )
    from ..options import add_arguments
    from ..probing.settings import OPTIONS

    add_arguments(p, OPTIONS)  # every option, defined once in vlprobe/probing/settings.py
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..options import from_args
    from ..probing import format_report, probe
    from ..probing.settings import OPTIONS

    # a bad setting raises an ArgumentError, which the vlprobe command names as the command line spells it
    # (--few-shot, not few_shot=)
    result = probe(**from_args(OPTIONS, args))
    print(format_report(result))
    written = sorted(p.name for p in Path(args.out).iterdir())
    print(f"wrote {len(written)} files to {args.out}: " + ", ".join(written))
    return 0
