"""``vlprobe build travlr``: TraVLR's four tasks, generated and rendered offline, as a Hub dataset
folder (``travlr/``: 4 configs x 4 splits of parquet with embedded PNGs, card, ``vlprobe.yaml`` and
``true_false.yaml``, the two framings).

The generators and split rules are in :mod:`vlprobe.scenes.travlr`; this module only renders the
scenes, writes the rows and the card. Same seed and size give byte-identical parquet with the same
Pillow/zlib/pyarrow (pixels are identical with any version); a rebuild with the same inputs and generator
code finds the folder intact and does nothing (:mod:`vlprobe.builders.unchanged`; ``--force`` rebuilds).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import datasets

from ..dataset.folder import ConfigDecl, card_metadata, rebuilding, write_card, write_spec
from ..scenes import travlr as gen
from . import cards, unchanged
from .synthetic import RateMeter, parse_names, parse_split_sizes, write_rows

NAME = "travlr"
HELP = "TraVLR's 4 tasks (spatiality, cardinality, quantifiers, numerical_comparison) rendered offline"
# what `vlprobe list` says a build needs
NEEDS = "nothing: scenes rendered offline by vlprobe (seeded; --size tiny/default/paper)"
DEFAULT_OUT = Path("travlr")

FEATURES = datasets.Features({
    "id": datasets.Value("string"),
    "image": datasets.Image(),
    "caption": datasets.Value("string"),
    "query": datasets.Value("string"),
    "foil_query": datasets.Value("string"),
    "label": datasets.Value("bool"),
    "subtype": datasets.Value("string"),
    "objects": datasets.List({
        "shape": datasets.Value("string"),
        "colour": datasets.Value("string"),
        "row": datasets.Value("int8"),
        "column": datasets.Value("int8"),
        "queried": datasets.Value("bool"),
    }),
    "query_form": datasets.Value("string"),
    "foil_form": datasets.Value("string"),
    "case": datasets.Value("string"),
})

SPEC_YAML = """\
# How rows of this folder become vlprobe items (see vlprobe/dataset/spec.py): vlprobe's zero-shot adaptation,
# 1 image x 2 texts, the query and its minimal truth-flipping edit; the gold cell is the one whose
# statement is true (pairwise accuracy). The paper's own framing is true_false.yaml.
description: TraVLR (Chow, Tan, Kan, EACL 2023) tasks rendered by vlprobe; query vs its minimal foil.
id: id
images: [image]
texts: [query, foil_query]
gold: {column: label, map: {true: [[1, 0]], false: [[0, 1]]}}
tags: [subtype, label]
context: caption
"""

# The paper's framing, selected with `vlprobe evaluate --spec travlr/true_false.yaml`.
TRUE_FALSE_SPEC = "true_false.yaml"
TRUE_FALSE_YAML = """\
# TraVLR's own framing (see vlprobe/dataset/spec.py): 1 image x 1 text, the query, judged true or false of the
# scene; gold [[1]] when it is true, [[0]] when it is false. The paper scores it by macro-F1 (the mean
# of the F1 of the true and of the false class), which needs a match probability (ITM heads, VQAScore
# VLMs, or a probe on frozen features). Use it with:
#   vlprobe evaluate --dataset travlr --spec travlr/true_false.yaml --model ...
description: TraVLR (Chow, Tan, Kan, EACL 2023) tasks rendered by vlprobe; the paper's true/false framing.
id: id
images: [image]
texts: [query]
gold: {column: label, map: {true: [[1]], false: [[0]]}}
tags: [subtype, label]
context: caption
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    from .synthetic import add_out_argument  # ./NAME in a clone, else the user's folder (vlprobe.storage.locations)

    add_out_argument(p, NAME)
    p.add_argument("--size", choices=sorted(gen.SIZES), default="default",
                   help="rows per split (train/validation/test_ind/test_ood): tiny 8/4/4/4, default 2000/200/200/200, "
                        "paper as the paper's Table 3 (spatiality 32000, the others 8000 training rows; "
                        "10000/10000/20000), paper32k 32000/10000/10000/20000 for every task")
    p.add_argument("--split-sizes", default=None, metavar="SPLIT=N,...",
                   help="override some split sizes, e.g. train=1000,test_ood=500")
    p.add_argument("--configs", default="all", help=f"comma-separated subset of {', '.join(gen.TASKS)} (default: all)")
    p.add_argument("--seed", type=int, default=0, help="generation seed (default 0)")
    p.add_argument("--workers", type=int, default=1, help="rendering processes (default 1; 2+ for --size paper)")
    unchanged.add_force_argument(p)


def config_decls() -> list[ConfigDecl]:
    return [ConfigDecl(task, FEATURES, splits=gen.SPLITS, default=(task == "spatiality")) for task in gen.TASKS]


def card_text() -> tuple[dict, str]:
    meta = card_metadata(
        config_decls(),
        license="cc-by-4.0",
        pretty_name="TraVLR (vlprobe rendering)",
        language=["en"],
        task_categories=["visual-question-answering"],
        tags=["synthetic", "vision-and-language", "foils", "travlr", "vlprobe"],
    )
    return meta, CARD_BODY


def write_metadata(out: Path) -> None:
    """The card (README.md), vlprobe.yaml and true_false.yaml; identical for every size and seed."""
    meta, body = card_text()
    write_card(out, meta, body)
    write_spec(out, SPEC_YAML, NAME)  # the folder is TraVLR whatever it is called, in either framing
    write_spec(out, TRUE_FALSE_YAML, NAME, name=TRUE_FALSE_SPEC)


# The files whose code decides what a build writes: an edit to any of them rebuilds (vlprobe.builders.unchanged).
GENERATOR = ("scenes/*.py", "builders/travlr.py", "builders/synthetic.py", "builders/cards.py", "dataset/folder.py",
             "templates/travlr_body.md")


def build(args: argparse.Namespace) -> Path:
    out = Path(args.out)
    overrides = parse_split_sizes(args.split_sizes, gen.SPLITS)
    tasks = parse_names(args.configs, gen.TASKS, "config(s)")
    want = unchanged.inputs(NAME, {"size": args.size, "split_sizes": overrides, "configs": tasks, "seed": args.seed},
                            GENERATOR)
    if not getattr(args, "force", False) and unchanged.up_to_date(out, want):
        args.up_to_date = f"{out} is up to date (built from the same inputs: {unchanged.describe(want)}; every " \
                          f"file intact): nothing built; --force rebuilds it"
        return out
    start = time.perf_counter()
    meter = RateMeter()
    with rebuilding(out) as target:  # swapped in whole at the end: a failed or killed build changes nothing
        write_metadata(target)
        for task in tasks:
            examples = gen.generate_task(task, {**gen.sizes_for(args.size, task), **overrides}, seed=args.seed)
            for split in gen.SPLITS:
                exs = examples[split]
                pngs = meter.render([e.scene for e in exs], workers=args.workers, **gen.RENDER_OPTIONS)
                rows = []
                for i, (ex, png) in enumerate(zip(exs, pngs)):
                    row = gen.to_row(ex, i)
                    row["image"] = {"bytes": png, "path": None}
                    rows.append(row)
                write_rows(target, task, split, rows, FEATURES)
        unchanged.record(target, want)  # last: the inputs and every file this build leaves
    meter.report(f"travlr ({args.size}, seed {args.seed})", time.perf_counter() - start)
    return out


CARD_BODY = cards.body("travlr_body.md")  # the card's prose, vlprobe/templates/travlr_body.md
