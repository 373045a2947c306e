"""``vlprobe evaluate``: score a model on a benchmark and write the papers' metrics, with provenance.

    vlprobe evaluate --dataset travlr --config all --model models/mini-clip --bootstrap 1000 --out runs/x

With no ``--dataset`` and no ``--model`` it runs the offline default: the dataset folders
``travlr`` and ``winoground_style`` of the repository (all configs, their test splits) with the
small CLIP in ``models/mini-clip``, written to ``runs/default``.

This module only parses the arguments: the pipeline is :func:`vlprobe.evaluate`
(:mod:`vlprobe.evaluation`), which checks every setting and the output folder before scoring,
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

DEFAULT_OUT = "runs/default"


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
    p.add_argument("--dataset", action="append", metavar="FOLDER_OR_HUB_ID",
                   help="dataset folder or Hub id; repeat for several (default: the offline default datasets)")
    p.add_argument("--config", default="all",
                   help="config name(s), comma-separated; 'all' (default) scores every config, or the dataset's own "
                   "config named 'all' when it has one (VALSE); '*' always scores every config")
    p.add_argument("--split", default=None,
                   help="split(s), comma-separated (default: the splits whose name starts with 'test', "
                        "else the only split)")
    p.add_argument("--dataset-revision", default=None, help="Hub revision (branch, tag or commit) of the dataset")
    p.add_argument("--spec", default=None, help="a vlprobe.yaml saying how rows become items (default: the dataset's)")
    p.add_argument("--model", default=None, help=f"model folder or Hub id (default: {DEFAULT_MODEL})")
    p.add_argument("--revision", default=None, help="Hub revision of the model")
    p.add_argument("--family", default=None, help="scorer family (default: detected from the model's config)")
    p.add_argument("--ties", default="strict", help="tie policy of the metric: strict (default), half, lenient")
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for CIs (0: none; default 1000)")
    p.add_argument("--confidence", type=float, default=0.95, help="CI level (default 0.95)")
    p.add_argument("--threshold", type=float, default=0.5, help="probability threshold of acc/p_c/p_f (default 0.5)")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and of the shuffled control")
    p.add_argument("--limit", type=int, default=None, help="score only the first N rows of each config/split")
    p.add_argument("--batch-size", type=int, default=32, help="inputs per forward pass (default 32)")
    p.add_argument("--num-workers", type=int, default=None,
                   help="DataLoader workers decoding images (default: min(4, CPUs - 1) when more than 2 CPUs, else 0)")
    p.add_argument("--dtype", default="float32", help="float32 (default), float16 or bfloat16")
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:1, mps (default: the best available)")
    p.add_argument("--modality", default="image", choices=("image", "caption", "both"),
                   help="TraVLR's settings: image (default), caption (blank image, caption + query), both")
    p.add_argument("--control", default=None, choices=("blank", "shuffle", "shuffled"),
                   help="control run: every image blank, or images shuffled across items ('shuffled' is the old "
                        "name of 'shuffle')")
    p.add_argument("--exact-preprocessing", action="store_true",
                   help="always the model's PIL image processor (the one the papers ran), never the fast "
                        "torchvision one (default: fast when torchvision imports)")
    p.add_argument("--cache-dir", default=None,
                   help="score cache (default: $VLPROBE_CACHE or ~/.cache/vlprobe); 'none' disables it")
    p.add_argument("--out", default=None, help=f"output folder (default: {DEFAULT_OUT} for the default run)")
    p.add_argument("--chunk-size", type=int, default=None,
                   help="rows read and scored at a time; memory does not grow with the dataset (default 2000)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=run)


# ---- the command ----------------------------------------------------------------------------------

def default_root() -> Path:
    """Where the offline default's folders are looked for: ``$VLPROBE_ROOT``, else the working
    directory (the repository checkout, where ``make`` and the README run it)."""
    return Path(os.environ.get("VLPROBE_ROOT") or Path.cwd())


def run(args: argparse.Namespace) -> int:
    from ..evaluation import CHUNK_ROWS, evaluate
    from ..results import _slug, benchmark_name

    default_job = not args.dataset
    out = args.out
    if not out:
        if default_job:
            out = DEFAULT_OUT
        else:
            model_name = Path(str(args.model or DEFAULT_MODEL).rstrip("/")).name
            out = f"runs/{_slug(benchmark_name(args.dataset[0]))}-{_slug(model_name)}"
    result = evaluate(
        model=args.model, datasets=args.dataset, configs=args.config, splits=args.split, spec=args.spec,
        family=args.family, revision=args.revision, dataset_revision=args.dataset_revision, ties=args.ties,
        bootstrap=args.bootstrap, confidence=args.confidence, threshold=args.threshold, seed=args.seed,
        limit=args.limit, batch_size=args.batch_size, num_workers=args.num_workers, device=args.device,
        dtype=args.dtype, modality=args.modality, control=args.control, cache_dir=args.cache_dir,
        progress=not args.no_progress, out=out, root=default_root(),
        chunk_size=args.chunk_size if args.chunk_size is not None else CHUNK_ROWS, log=print,
        exact_preprocessing=args.exact_preprocessing,
    )
    if not result.main_process:
        return 0
    print()
    print(result.table())
    stats = result.provenance.get("engine") or {}
    computed = sum(v for k, v in stats.items() if k.startswith("computed_") and not k.endswith("_this_process"))
    cache = stats.get("cache_dir")
    print(f"\nscored in {stats.get('seconds', 0):.1f}s: {computed} inputs computed, {stats.get('cached', 0)} from the cache"
          + (f" ({cache})" if cache else ""))
    names = ["results.json", "scores.parquet", "results.csv"] + [_plot(u) for u in result.splits]
    print(f"wrote {len(names)} files to {out}: " + ", ".join(names))
    return 0


def _plot(split) -> str:
    from ..results import plot_name

    return plot_name(split)
