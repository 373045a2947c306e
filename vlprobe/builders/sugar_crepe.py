"""``vlprobe build sugar_crepe``: SugarCREPE (Hsieh et al., NeurIPS 2023) from the 7 pinned files and the COCO
val2017 images. One config per subset and ``all``; a row is 1 image x [caption, negative_caption], gold ``[[1, 0]]``."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import datasets
from datasets import Features, Value

from ..benchmarks import sugar_crepe as facts
from .flow import Annotations, Image, Row, UpstreamBuilder, parse_record

SOURCE = "coco2017_val"
CATEGORY = {c: g for g, members in facts.GROUPS.items() for c in members}  # the paper's add / replace / swap

_f = Value
FEATURES = Features({
    "id": _f("string"), "key": _f("string"), "subset": _f("string"), "category": _f("string"),
    "image": datasets.Image(), "caption": _f("string"), "negative_caption": _f("string"), "filename": _f("string"),
})

SPEC_YAML = """\
# How rows of this folder become vlprobe items (see vlprobe/dataset/spec.py): one COCO image, the caption and
# its hard negative; the caption is the gold text. SugarCREPE's authors count a tie as wrong
# (main_eval.py: pos > neg), which is vlprobe's default tie policy (strict).
description: SugarCREPE (Hsieh et al., NeurIPS 2023), 1 image x [caption, negative_caption], gold [[1, 0]].
id: id
images: [image]
texts: [caption, negative_caption]
gold: [[1, 0]]
tags: [subset, category]
"""


@dataclass(frozen=True)
class Record:
    """One record of a SugarCREPE file (``{key: {caption, negative_caption, filename}}``)."""

    caption: str
    negative_caption: str
    filename: str


class SugarCrepe(UpstreamBuilder):
    benchmark = facts.BENCHMARK
    help = "SugarCREPE (NeurIPS 2023): 7 hard-negative subsets on COCO val2017, from the pinned upstream files"
    what = "the 7 SugarCREPE JSON files"
    sources = (SOURCE,)
    spec_yaml = SPEC_YAML
    features_all, aggregates, leaves = FEATURES, {"all": facts.SUBSETS}, facts.SUBSETS
    card = dict(license_name="sugar-crepe-mit-coco",
                license_link=f"https://github.com/{facts.UPSTREAM.repo}/blob/{facts.UPSTREAM.commit}/LICENSE",
                tags=["vision-and-language", "compositionality", "hard-negatives", "benchmark", "vlprobe"],
                size_categories=["1K<n<10K"])
    shape, keyed = "a JSON object mapping keys to records", True

    def row(self, config: str, n: int, key: str, rec: object, where: str) -> Row:
        r = parse_record(Record, rec, where, SOURCE)
        return Row(f"{config}/{key}", dict(key=key, subset=config, category=CATEGORY[config], **asdict(r)),
                   (Image("image", SOURCE, r.filename),))

    def card_values(self, annotations: Annotations) -> dict[str, Any]:
        groups = [{"name": c, "members": ", ".join(f"`{m}`" for m in ms),
                   "count": f"{sum(facts.COUNTS[m] for m in ms):,}"} for c, ms in facts.GROUPS.items()]
        return dict(category=CATEGORY, count={c: f"{n:,}" for c, n in facts.COUNTS.items()}, groups=groups,
                    total=f"{sum(facts.COUNTS.values()):,}")
