"""``vlprobe evaluate``: score a model on a benchmark and write the papers' metrics, with provenance.

    vlprobe evaluate --dataset travlr --config all --model models/mini-clip --bootstrap 1000 --out runs/x

With no ``--dataset`` and no ``--model`` it runs the offline default: the dataset folders
``travlr`` and ``winoground_style`` of the repository (all configs, their test splits) with the
small CLIP in ``models/mini-clip``, written to ``runs/default``.

This module only parses the arguments, whose flags, defaults and help come from the option table
``vlprobe.evaluation.settings.OPTIONS`` (each option is defined once there); the pipeline is
:func:`vlprobe.evaluate` (:mod:`vlprobe.evaluation`), which checks every setting and the output folder before scoring,
streams the rows through the engine, measures, and writes the folder as one unit. Outputs: see
:mod:`vlprobe.results`.

Under ``accelerate launch`` every process scores its shard of the unique inputs and only the main
process writes outputs.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..locations import DEFAULT_DATASETS, DEFAULT_MODEL

HELP = "score a model on a benchmark; write results.json, scores.parquet, results.csv, plots"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "evaluate",
        help=HELP,
        description=(
            "Score a model on a benchmark and write metrics with CIs, per config and per tag. With no "
            f"--dataset/--model: the offline default ({', '.join(DEFAULT_DATASETS)} with {DEFAULT_MODEL})."
        ),
    )
    from ..evaluation.settings import OPTIONS
    from ..options import add_arguments

    add_arguments(p, OPTIONS)  # every option, defined once in vlprobe/evaluation/settings.py
    p.set_defaults(func=run)


# ---- the command ----------------------------------------------------------------------------------

def default_root() -> Path:
    """Where the offline default's folders are looked for: ``$VLPROBE_ROOT``, else the working
    directory (the repository checkout, where ``make`` and the README run it)."""
    return Path(os.environ.get("VLPROBE_ROOT") or Path.cwd())


def run(args: argparse.Namespace) -> int:
    from ..errors import ArgumentError
    from ..evaluation import OPTIONS, evaluate
    from ..evaluation.settings import DEFAULT_OUT
    from ..options import from_args
    from ..results import RUN_FILES, dataset_name
    from ..results.display import slug

    values = from_args(OPTIONS, args)
    out = values.get("out")
    if out is not None and not str(out).strip():
        raise ArgumentError("out", out, "is empty; name a folder for the outputs, or leave --out out for the default "
                                        "(runs/<dataset>-<model>)")
    if not out:
        if not args.dataset:
            out = DEFAULT_OUT
        else:
            model_name = Path(str(args.model or DEFAULT_MODEL).rstrip("/")).name
            out = f"runs/{slug(dataset_name(args.dataset[0]))}-{slug(model_name)}"
    result = evaluate(**{**values, "out": out}, root=default_root(), log=print)
    if not result.main_process:
        return 0
    print()
    print(result.table())
    stats = result.provenance.get("engine") or {}
    computed = sum(v for k, v in stats.items() if k.startswith("computed_") and not k.endswith("_this_process"))
    cache = stats.get("cache_dir")
    print(f"\nscored in {stats.get('seconds', 0):.1f}s: {computed} inputs computed, {stats.get('cached', 0)} from the cache"
          + (f" ({cache})" if cache else ""))
    names = list(RUN_FILES) + [_plot(u) for u in result.splits]
    print(f"wrote {len(names)} files to {out}: " + ", ".join(names))
    return 0


def _plot(split) -> str:
    from ..results import plot_name

    return plot_name(split)
