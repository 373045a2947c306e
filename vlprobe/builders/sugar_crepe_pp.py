"""``vlprobe build sugar_crepe_pp``: SugarCREPE++ (Dumpala et al., NeurIPS 2024) from the 5 pinned files and the
COCO val2017 images. One config per subset and ``all``; a row is 1 image x [caption, caption2, negative_caption], gold
``[[1, 1, 0]]``: the authors' ITT is ``set_acc``, their TOT ``text`` with ``--modality text``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import datasets
from datasets import Features, Value

from ..benchmarks import sugar_crepe_pp as facts
from .flow import Annotations, Image, Row, UpstreamBuilder, parse_record

SOURCE = "coco2017_val"

_f = Value
FEATURES = Features({
    "id": _f("string"), "key": _f("string"), "subset": _f("string"), "category": _f("string"),
    "image": datasets.Image(), "caption": _f("string"), "caption2": _f("string"), "negative_caption": _f("string"),
    "filename": _f("string"),
})

SPEC_YAML = """\
# How rows of this folder become vlprobe items (see vlprobe/dataset/spec.py): one COCO image, its two true
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


@dataclass(frozen=True)
class Record:
    """One record of a SugarCREPE++ file (a list of ``{id, filename, caption, caption2, negative_caption}``)."""

    id: int
    filename: str
    caption: str
    caption2: str
    negative_caption: str


class SugarCrepePP(UpstreamBuilder):
    benchmark = facts.BENCHMARK
    help = "SugarCREPE++ (NeurIPS 2024): 5 subsets, 1 image x 2 true captions + 1 negative, from the pinned upstream files"
    what = "the 5 SugarCREPE++ JSON files"
    sources = (SOURCE,)
    spec_yaml = SPEC_YAML
    features_all, aggregates, leaves = FEATURES, {"all": facts.SUBSETS}, facts.SUBSETS
    card = dict(license_name="sugar-crepe-pp-cc-by-4.0-coco",
                license_link=f"https://github.com/{facts.UPSTREAM.repo}/blob/{facts.UPSTREAM.commit}/LICENSE",
                tags=["vision-and-language", "compositionality", "hard-negatives", "benchmark", "vlprobe"],
                size_categories=["1K<n<10K"])
    shape = "a JSON list of records"

    def row(self, config: str, n: int, key: str, rec: object, where: str) -> Row:
        r = parse_record(Record, rec, where, SOURCE)
        return Row(f"{config}/{r.id}", dict(
            key=str(r.id), subset=config, category=facts.CATEGORIES[config], caption=r.caption, caption2=r.caption2,
            negative_caption=r.negative_caption, filename=r.filename), (Image("image", SOURCE, r.filename),))

    def card_values(self, annotations: Annotations) -> dict[str, Any]:
        return dict(rows=[{"config": c, "category": facts.CATEGORIES[c], "title": c.upper().replace("_", "-"),
                           "count": f"{facts.COUNTS[c]:,}"} for c in facts.SUBSETS], total=f"{sum(facts.COUNTS.values()):,}")
