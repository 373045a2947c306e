"""``vlprobe build travlr``: TraVLR's four tasks, generated (:mod:`vlprobe.scenes.travlr`) and rendered offline:
4 configs x 4 splits, the card, ``vlprobe.yaml`` and ``true_false.yaml`` (the paper's framing)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import datasets

from ..dataset.folder import ConfigDecl, write_spec
from ..scenes import travlr as gen
from . import cards
from .synthetic import RateMeter, SyntheticBuilder, parse_names, parse_split_sizes, write_rows

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


class Travlr(SyntheticBuilder[tuple[dict[str, int], list[str]]]):
    name = "travlr"
    help = "TraVLR's 4 tasks (spatiality, cardinality, quantifiers, numerical_comparison) rendered offline"
    needs = "nothing: scenes rendered offline by vlprobe (seeded; --size tiny/default/paper)"
    sizes = gen.SIZES
    size_help = ("rows per split (train/validation/test_ind/test_ood): tiny 8/4/4/4, default 2000/200/200/200, paper as "
                 "the paper's Table 3 (spatiality 32000, the others 8000 training rows; 10000/10000/20000), paper32k "
                 "32000/10000/10000/20000 for every task")
    configs = gen.TASKS
    body = "travlr_body.md"
    spec_yaml = SPEC_YAML
    card = dict(pretty_name="TraVLR (vlprobe rendering)", language=["en"], task_categories=["visual-question-answering"],
                tags=["synthetic", "vision-and-language", "foils", "travlr", "vlprobe"])

    def add_arguments(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("--split-sizes", default=None, metavar="SPLIT=N,...",
                       help="override some split sizes, e.g. train=1000,test_ood=500")
        super().add_arguments(p)

    def config_decls(self) -> list[ConfigDecl]:
        return [ConfigDecl(task, FEATURES, splits=gen.SPLITS, default=(task == "spatiality")) for task in gen.TASKS]

    def plan(self, args: argparse.Namespace) -> tuple[dict[str, int], list[str]]:
        """(the split sizes given, the tasks to build), checked before anything is written."""
        return parse_split_sizes(args.split_sizes, gen.SPLITS), parse_names(args.configs, gen.TASKS, "config(s)")

    def write_metadata(self, folder: Path) -> None:
        """The card, vlprobe.yaml and true_false.yaml (the two framings); identical for every size and seed."""
        super().write_metadata(folder)
        write_spec(folder, TRUE_FALSE_YAML, self.name, name=TRUE_FALSE_SPEC)

    def write(self, folder: Path, plan: tuple[dict[str, int], list[str]], args: argparse.Namespace) -> None:
        overrides, tasks = plan
        start, meter = time.perf_counter(), RateMeter()
        self.write_metadata(folder)
        for task in tasks:
            examples = gen.generate_task(task, {**gen.sizes_for(args.size, task), **overrides}, seed=args.seed)
            for split in gen.SPLITS:
                exs = examples[split]
                pngs = meter.render([e.scene for e in exs], workers=args.workers, **gen.RENDER_OPTIONS)
                rows = [{**gen.to_row(ex, i), "image": {"bytes": png, "path": None}}
                        for i, (ex, png) in enumerate(zip(exs, pngs))]
                write_rows(folder, task, split, rows, FEATURES)
        meter.report(f"travlr ({args.size}, seed {args.seed})", time.perf_counter() - start)


CARD_BODY = cards.body(Travlr.body)  # the card's prose, vlprobe/templates/travlr_body.md
