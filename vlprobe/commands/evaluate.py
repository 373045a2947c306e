"""``vlprobe evaluate``: score a model on a benchmark and write the papers' metrics, with provenance
(:mod:`vlprobe.evaluation`); each flag's ``dest`` and default are the keyword's of :func:`vlprobe.evaluate`."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..storage.locations import DEFAULT_DATASETS, DEFAULT_MODEL
from . import add_command

HELP = "score a model on a benchmark; write results.json, scores.parquet, results.csv, plots"


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "evaluate", HELP, run, (
        "Score a model on a benchmark and write metrics with CIs, per config and per tag. With no "
        f"--dataset/--model: the offline default ({', '.join(DEFAULT_DATASETS)} with {DEFAULT_MODEL})."))
    from ..benchmarks.base import AUTHORS
    from ..cli import add_run_options, batch_size
    from ..defaults import AUTO
    from ..evaluation.settings import CONTROLS, DEFAULT_OUT, MODALITIES

    p.add_argument("--dataset", dest="datasets", action="append", metavar="FOLDER_OR_HUB_ID", help="dataset folder "
                   "or Hub id; repeat for several (default: the offline default datasets)")
    p.add_argument("--config", dest="configs", default="all", metavar="CONFIG", help="config name(s), "
                   "comma-separated; 'all' (default) scores every config, or the dataset's own config named 'all' "
                   "when it has one (VALSE); '*' always scores every config")
    p.add_argument("--split", dest="splits", metavar="SPLIT", help="split(s), comma-separated (default: the splits "
                   "whose name starts with 'test', else the only split)")
    p.add_argument("--spec", help="a vlprobe.yaml saying how rows become items (default: the dataset's)")
    p.add_argument("--model", help=f"model folder or Hub id (default: {DEFAULT_MODEL})")
    p.add_argument("--ties", default=AUTHORS, help="how a tied comparison counts: authors "
                   "(default: each benchmark's authors' rule, e.g. CREPE's lenient, most others' strict; strict for a "
                   "dataset of your own), or strict (wrong), half or lenient (right) for every split")
    p.add_argument("--threshold", type=float, default=0.5, help="probability threshold of acc/p_c/p_f (default 0.5)")
    p.add_argument("--batch-size", type=batch_size, default=AUTO, metavar="N|auto", help="inputs per forward pass, "
                   "or auto (default): on a GPU the largest batch that still speeds each tower up, searched once per "
                   "model and card and remembered; 32 on the CPU")
    p.add_argument("--modality", default="image", choices=MODALITIES, help="TraVLR's settings: image (default), "
                   "caption (blank image, query + caption: the query first, so truncation cannot cut it), both "
                   "(image, query + caption); text: no image, each true text against the item's other true texts and "
                   "its false ones by the text tower (SugarCREPE++'s TOT)")
    p.add_argument("--control", choices=(*CONTROLS, "shuffled"), help="control run: every image blank, or images "
                   "shuffled across items ('shuffled' is the old name of 'shuffle')")
    p.add_argument("--out", help=f"output folder (default: {DEFAULT_OUT} for the default run, else "
                   f"runs/<dataset>-<model>)")
    p.add_argument("--exact-preprocessing", action="store_true", help="always the model's PIL image processor (the "
                   "one the papers ran), never the fast torchvision one (default: fast when torchvision imports)")
    add_run_options(p)


def run(args: argparse.Namespace) -> int:
    from ..cli import keywords
    from ..errors import ArgumentError
    from ..evaluation import evaluate
    from ..evaluation.settings import DEFAULT_OUT
    from ..results import RUN_FILES, dataset_name, plot_name
    from ..results.display import slug
    from ..results.schema import Stats

    out = args.out
    if out is not None and not str(out).strip():
        raise ArgumentError("out", out, "is empty; name a folder for the outputs, or leave --out out for the default "
                                        "(runs/<dataset>-<model>)")
    if out is None and not args.datasets:
        out = DEFAULT_OUT
    elif out is None:
        model_name = Path(str(args.model or DEFAULT_MODEL).rstrip("/")).name
        out = f"runs/{slug(dataset_name(args.datasets[0]))}-{slug(model_name)}"
    root = Path(os.getenv("VLPROBE_ROOT") or Path.cwd())  # where the offline default's folders are looked for
    result = evaluate(**{**keywords(args), "out": out}, root=root, log=print)
    if not result.main_process:
        return 0
    print()
    print(result.table())
    stats = result.document.provenance.engine or Stats()
    cache = f" ({stats.cache_dir})" if stats.cache_dir else ""
    print(f"\nscored in {stats.seconds:.1f}s: {stats.computed} inputs computed, {stats.cached} from the cache{cache}")
    names = list(RUN_FILES) + [plot_name(u) for u in result.splits]
    print(f"wrote {len(names)} files to {out}: " + ", ".join(names))
    return 0
