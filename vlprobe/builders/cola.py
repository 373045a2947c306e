"""``vlprobe build cola``: COLA's multi-object setting (Ray et al., NeurIPS 2023) from the pinned
``COLA_multiobjects_matching_benchmark.json`` and the Visual Genome images it links: one config, ``multi_object``,
2 images x 2 captions, gold the identity. An image is looked up by its link's file name locally, then on Visual
Genome's hosts, and only then on the authors' server the link points at."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import datasets
from datasets import Features, Value

from ..benchmarks import cola as facts
from ..dataset.image_sources import SourceSpec
from . import AnnotationError
from .flow import Annotations, Image, Row, UpstreamBuilder

CONFIG, FILE = facts.CONFIG, facts.FILE
COUNT = facts.BENCHMARK.counts[CONFIG]  # records in the pinned file
# Visual Genome as COLA links it, the authors' server the last resort (a source of its own: the others' look-up unchanged)
IMAGES = SourceSpec(
    "visual_genome_cola", "Visual Genome images, as COLA links them (<vg id>.jpg)", r"\d+\.jpg",
    ("VG_100K", "VG_100K_2", "vg_gqa_images", "images"), ("images.zip", "images2.zip"),
    ("https://cs.stanford.edu/people/rak248/VG_100K/{name}", "https://cs.stanford.edu/people/rak248/VG_100K_2/{name}",
     "https://cs-people.bu.edu/array/data/vg_gqa_images/{name}"),
    "Visual Genome: CC BY 4.0 (the images are Flickr photos from YFCC100M and COCO)",
)
SOURCE = IMAGES.name
_LINK = re.compile(r"https?://[^\s]+/(\d+\.jpg)")

_f = Value
FEATURES = Features({
    "id": _f("string"), "index": _f("int32"),
    "image_0": datasets.Image(), "image_1": datasets.Image(), "caption_0": _f("string"), "caption_1": _f("string"),
    "image_0_file": _f("string"), "image_1_file": _f("string"), "image_0_url": _f("string"), "image_1_url": _f("string"),
})

SPEC_YAML = """\
# How rows of this folder become vlprobe items (see vlprobe/dataset/spec.py): 2 Visual Genome images x 2
# captions, caption_i true of image_i only (gold the identity). COLA's multi-object accuracy is the
# image score (each caption scores its own image above the other, strictly).
description: COLA multi-object (Ray et al., NeurIPS 2023), 2 images x 2 captions, gold [[1, 0], [0, 1]].
id: id
images: [image_0, image_1]
texts: [caption_0, caption_1]
gold: [[1, 0], [0, 1]]
tags: []
"""


@dataclass(frozen=True)
class Record:
    """One COLA record, ``[link to image 1, caption 1, link to image 2, caption 2]``."""

    file_0: str
    url_0: str
    caption_0: str
    file_1: str
    url_1: str
    caption_1: str

    @classmethod
    def parse(cls, rec: object, where: str) -> Record:
        if not isinstance(rec, list) or len(rec) != 4:
            raise AnnotationError(f"{where}: expected [image 1 link, caption 1, image 2 link, caption 2]")
        link_0, caption_0, link_1, caption_1 = rec
        for n, link in ((1, link_0), (2, link_1)):
            if not isinstance(link, str):
                raise AnnotationError(f"{where}: image {n} should be an image link, got {link!r}")
            if not _LINK.fullmatch(link.strip()):
                raise AnnotationError(f"{where}: image {n} {link!r} is not a link ending in <visual genome id>.jpg")
        for n, caption in ((1, caption_0), (2, caption_1)):
            if not isinstance(caption, str) or not caption.strip():
                raise AnnotationError(f"{where}: caption {n} is missing or not a non-empty string")
        return cls(_LINK.fullmatch(link_0.strip()).group(1), link_0, caption_0,  # type: ignore[union-attr]
                   _LINK.fullmatch(link_1.strip()).group(1), link_1, caption_1)  # type: ignore[union-attr]


class Cola(UpstreamBuilder):
    benchmark = facts.BENCHMARK
    help = "COLA multi-object (NeurIPS 2023): 210 2x2 image-caption pairs on Visual Genome, from the pinned upstream file"
    what = FILE
    sources = (IMAGES,)
    images_help = ("images root: a folder holding Visual Genome's VG_100K/ and VG_100K_2/ (or images.zip, "
                   "images2.zip); a flat folder of the <vg id>.jpg files: --image-dir visual_genome_cola=FOLDER")
    download_help = ("download the images missing locally into --cache-dir, file by file: from Visual Genome's "
                     "hosts, else from the COLA authors' server the records link to")
    spec_yaml = SPEC_YAML
    features_all, leaves, default_config = FEATURES, (CONFIG,), CONFIG
    card = dict(license_name="cola-mit-visual-genome",
                license_link=f"https://github.com/{facts.UPSTREAM.repo}/blob/{facts.UPSTREAM.commit}/LICENSE",
                pretty_name="COLA (multi-object)", task_categories=["image-to-text", "text-to-image"],
                tags=["vision-and-language", "compositionality", "attribute-binding", "benchmark", "vlprobe"],
                size_categories=["n<1K"])
    shape = "a JSON list of [image 1 link, caption 1, image 2 link, caption 2]"

    def leaf_file(self, config: str) -> str:
        return FILE

    def row(self, config: str, n: int, key: str, rec: object, where: str) -> Row:
        r = Record.parse(rec, where)
        return Row(f"{CONFIG}/{n}", dict(index=n, caption_0=r.caption_0, caption_1=r.caption_1, image_0_file=r.file_0,
                                         image_1_file=r.file_1, image_0_url=r.url_0, image_1_url=r.url_1),
                   (Image("image_0", SOURCE, r.file_0), Image("image_1", SOURCE, r.file_1)))

    def card_values(self, annotations: Annotations) -> dict[str, Any]:
        return dict(count=COUNT, config=CONFIG, file=FILE)
