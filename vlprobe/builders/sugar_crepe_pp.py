"""``vlprobe build sugar_crepe_pp``: SugarCREPE++ (Dumpala et al., NeurIPS 2024 Datasets and Benchmarks)
as a Hub dataset folder, from the 5 annotation files of github.com/Sri-Harsha/scpp at a pinned commit
(verified by git blob hash) and the COCO val2017 images.

One config per subset and ``all`` (the default, reading the subsets' parquet). Each row is 1 image x
[caption, caption2, negative_caption], the two captions true: gold ``[[1, 1, 0]]``. The authors' ITT
score (both true captions above the negative, strictly) is vlprobe's ``set_acc`` on these items; their TOT
(``cos(P1, P2)`` above ``cos(P1, neg)`` and ``cos(P2, neg)``) is ``text`` with ``--modality text``
(:mod:`vlprobe.evaluation.text_only`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import datasets
from datasets import Features, Value

from ..dataset_folder import ConfigDecl, card_metadata
from . import AnnotationError, cards, read_json, upstream
from .sugar_crepe import (
    COCO_IMAGES_HELP,
    SOURCE,
    SPLIT,
    Subset,
    _str_field,
    annotations_of,
    build_folder,
    coco_file,
    count_report,
    upstream_values,
)

NAME = "sugar_crepe_pp"
HELP = "SugarCREPE++ (NeurIPS 2024): 5 subsets, 1 image x 2 true captions + 1 negative, from the pinned upstream files"

DEFAULT_OUT = Path("sugar_crepe_pp")

# Counts of the pinned files; each file is a JSON list of records with ids 0..count-1.
SUBSETS: tuple[Subset, ...] = (
    Subset("replace_obj", "replace", "REPLACE-OBJ", 1652, ""),
    Subset("replace_att", "replace", "REPLACE-ATT", 788, ""),
    Subset("replace_rel", "replace", "REPLACE-REL", 1406, ""),
    Subset("swap_obj", "swap", "SWAP-OBJ", 245, ""),
    Subset("swap_att", "swap", "SWAP-ATT", 666, ""),
)
BY_CONFIG = {s.config: s for s in SUBSETS}
TOTAL = sum(s.count for s in SUBSETS)

_f = Value
FEATURES = Features({
    "id": _f("string"), "key": _f("string"), "subset": _f("string"), "category": _f("string"),
    "image": datasets.Image(), "caption": _f("string"), "caption2": _f("string"), "negative_caption": _f("string"),
    "filename": _f("string"),
})
_FIELDS = {"id", "filename", "caption", "caption2", "negative_caption"}

SPEC_YAML = """\
# How rows of this folder become vlprobe items (see vlprobe/spec.py): one COCO image, its two true
# captions and the hard negative; gold [[1, 1, 0]]. The authors' ITT score (both captions above the
# negative, a tie wrong) is set_acc under the strict tie policy; acc_r is the mean of their
# Image-P1-Neg and Image-P2-Neg accuracies.
description: SugarCREPE++ (Dumpala et al., NeurIPS 2024), 1 image x [caption, caption2, negative_caption], gold [[1, 1, 0]].
id: id
images: [image]
texts: [caption, caption2, negative_caption]
gold: [[1, 1, 0]]
tags: [subset, category]
"""


def read_subset(annotations: Path, subset: Subset) -> list[dict[str, Any]]:
    path = annotations / f"{subset.config}.json"
    data = read_json(path, "SugarCREPE++", list, "a JSON list of records",
                     f"pass --annotations DIR, the data/ folder of github.com/{upstream.SUGAR_CREPE_PP.repo}")
    rows = []
    for n, rec in enumerate(data):
        where = f"{path.name} record {n}"
        if not isinstance(rec, dict):
            raise AnnotationError(f"{where}: expected a JSON object")
        unknown = set(rec) - _FIELDS
        if unknown:
            raise AnnotationError(f"{where}: unknown field(s) {sorted(unknown)}; the builder would drop them")
        key = rec.get("id")
        if not isinstance(key, int) or isinstance(key, bool):
            raise AnnotationError(f"{where}: field 'id' is missing or not an integer")
        rows.append({
            "id": f"{subset.config}/{key}", "key": str(key), "subset": subset.config, "category": subset.category,
            "caption": _str_field(rec, "caption", where), "caption2": _str_field(rec, "caption2", where),
            "negative_caption": _str_field(rec, "negative_caption", where), "filename": coco_file(rec, where),
            "_images": (("image", SOURCE, rec["filename"]),),
        })
    return rows


def config_decls() -> list[ConfigDecl]:
    all_files = {SPLIT: [f"data/{s.config}/{SPLIT}-*.parquet" for s in SUBSETS]}
    return ([ConfigDecl("all", FEATURES, (SPLIT,), default=True, paths=all_files)]
            + [ConfigDecl(s.config, FEATURES, (SPLIT,)) for s in SUBSETS])


def card_yaml() -> dict[str, Any]:
    return card_metadata(
        config_decls(), language=["en"], license="other", license_name="sugar-crepe-pp-cc-by-4.0-coco",
        license_link=f"https://github.com/{upstream.SUGAR_CREPE_PP.repo}/blob/{upstream.SUGAR_CREPE_PP.commit}/LICENSE",
        pretty_name="SugarCREPE++", task_categories=["image-to-text", "zero-shot-image-classification"],
        tags=["vision-and-language", "compositionality", "hard-negatives", "benchmark", "vlprobe"],
        size_categories=["1K<n<10K"],
    )


def card_values() -> dict[str, Any]:
    rows = [{"config": s.config, "category": s.category, "title": s.title, "count": f"{s.count:,}"} for s in SUBSETS]
    return dict(rows=rows, total=f"{TOTAL:,}", **upstream_values(upstream.SUGAR_CREPE_PP))


def write_card(out: Path) -> Path:
    return cards.write(out, "sugar_crepe_pp_card.md", card_yaml(), **card_values())


def add_arguments(parser: argparse.ArgumentParser) -> None:
    upstream.add_arguments(parser, upstream.SUGAR_CREPE_PP, what="the 5 SugarCREPE++ JSON files", sources=(SOURCE,),
                           default_out=DEFAULT_OUT, **COCO_IMAGES_HELP)


def build(args: argparse.Namespace) -> Path:
    annotations = annotations_of(args, upstream.SUGAR_CREPE_PP)
    rows = {s.config: read_subset(annotations, s) for s in SUBSETS}

    def static(out: Path) -> None:
        write_card(out)
        (out / "vlprobe.yaml").write_text(SPEC_YAML, encoding="utf-8")

    return build_folder(args, NAME, rows, (SOURCE,), FEATURES, static,
                        lambda counts, skipped: count_report(counts, skipped, {s.config: s.count for s in SUBSETS}),
                        "SugarCREPE++: this build")
