"""``vlprobe build vl_checklist``: VL-CheckList (Zhao et al., 2022, arXiv:2207.00221) as a Hub dataset
folder, from the JSON files under ``data/`` of github.com/om-ai-lab/VL-CheckList at a pinned commit and
the images of Visual Genome (also VAW's), SWiG and HAKE.

Each file is a JSON list of ``[image path, {"POS": [texts], "NEG": [texts]}]``; the corpus yaml that
points at it (``ANNO_PATH``) gives the image root (``vg/``, ``swig/`` or ``hake/``). The authors'
``itc`` evaluation (``vl_checklist/evaluate.py``) scores ``POS[0]`` and ``NEG[0]`` against the image and
counts an item right when the positive's score is strictly above the negative's: here each record is
1 image x [POS[0], NEG[0]], gold ``[[1, 0]]``, and their accuracy is vlprobe's ``acc_r`` (= ``text``).

Configs: the 13 leaves of the taxonomy (``object_location_center``, ..., ``attribute_color``, ...,
``relation_spatial``), each holding the records of its corpus files (tag ``corpus``), and ``object``,
``attribute``, ``relation`` and ``all`` (the default), which read their leaves' parquet.

The authors' loader skips a record whose image file does not exist, silently. Here a missing image
stops the build unless ``--skip-missing-images``; then the records are left out, and ``data/BUILD.md``
and the build's log count them per leaf and corpus. The files are not pinned by hash yet: a build
records their git blob hashes in ``data/BUILD.md`` and warns once. The pins and the tie rule are
VL-CheckList's benchmark module's (:mod:`vlprobe.benchmarks.vl_checklist`); the build runs on the shared
flow (:mod:`vlprobe.builders.flow`).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets
from datasets import Features, Value

from ..benchmarks import vl_checklist as facts
from ..dataset_folder import ConfigDecl, card_metadata
from ..image_sources import Archive, SourceSpec
from . import AnnotationError, cards, read_json
from .flow import SPLIT, Annotations, Plan, UpstreamBuilder, upstream_values

# VL-CheckList's images, as its DATASETS.md lays them out under one root: vg/VG_100K[_2]/, swig/<file>,
# hake/<sub-folder>/... (sources of its own, so that the look-up of the other benchmarks is unchanged).
IMAGES: dict[str, SourceSpec] = {s.name: s for s in (
    SourceSpec(
        "visual_genome_vlc", "Visual Genome images, as VL-CheckList names them (VG_100K[_2]/<vg id>.jpg)", r"\d+\.jpg",
        ("vg/VG_100K", "vg/VG_100K_2", "VG_100K", "VG_100K_2"), ("images.zip", "images2.zip"),
        ("https://cs.stanford.edu/people/rak248/VG_100K/{name}", "https://cs.stanford.edu/people/rak248/VG_100K_2/{name}"),
        "Visual Genome: CC BY 4.0 (the images are Flickr photos from YFCC100M and COCO)",
    ),
    SourceSpec(
        "swig_vlc", "SWiG / imSitu images, as VL-CheckList names them (swig/<file>)", r"[a-z_]+_\d+\.jpg",
        ("swig", "images_512", "swig/images_512"), ("images_512.zip",), (),
        "imSitu images: non-commercial research and educational use (imSitu terms); SWiG annotations MIT",
        Archive("https://swig-data-weights.s3.us-east-2.amazonaws.com/images_512.zip", "images_512.zip"),
    ),
    # HAKE's images come from several collections, one sub-folder each (HAKE's Images/README); file
    # names are unique only within a sub-folder, so each is a source. No per-file URLs: local only.
    *(SourceSpec(f"hake_{sub}", f"HAKE images: {sub}", r"[A-Za-z0-9_.-]+\.(jpg|jpeg|png|JPG|JPEG|PNG)",
                 tuple(p for d in dirs for p in (f"hake/{d}", d)), (), (),
                 "HAKE: the terms of each source collection (HAKE's Images/README)")
      for sub, dirs in (("openimages", ("openimages",)), ("hcvrd", ("hcvrd",)), ("pic", ("pic",)),
                        ("images_20190730", ("hake_images_20190730",)),
                        ("images_20200614", ("hake_images_20200614",)),
                        ("hico_det", ("hico_20160224_det/images/test2015", "hico_20160224_det/images/train2015")),
                        ("vcoco", ("vcoco/train2014", "vcoco/val2014"))))
)}
VG, SWIG = "visual_genome_vlc", "swig_vlc"
# HAKE's first path component -> the image source of that sub-folder
HAKE = {"openimages": "hake_openimages", "hcvrd": "hake_hcvrd", "pic": "hake_pic",
        "hake_images_20190730": "hake_images_20190730", "hake_images_20200614": "hake_images_20200614",
        "hico_20160224_det": "hake_hico_det", "vcoco": "hake_vcoco"}
SOURCES = (VG, SWIG, *HAKE.values())
assert set(SOURCES) == set(IMAGES)


@dataclass(frozen=True)
class Leaf:
    config: str
    aspect: str  # Object / Attribute / Relation
    type: str  # the authors' TYPES entry, e.g. "Object/Location/center"
    corpora: tuple[tuple[str, str], ...]  # (corpus name as in corpus/<type>/<name>.yaml, file under data/)


def _object_leaves() -> list[Leaf]:
    out = []
    for kind, leaves in (("Location", ("center", "margin", "mid")), ("Size", ("large", "medium", "small"))):
        low = kind.lower()
        for leaf in leaves:
            corpora = [("hake", f"Object/{kind}/hake_{low}/hake_obj_{leaf}.json")]
            corpora += [(f"swig_{r}", f"Object/{kind}/swig_{low}/swig_{r}/swig_{r}_{leaf}.json")
                        for r in ("agent", "destination", "item", "tool")]
            corpora += [(f"vg_{r}", f"Object/{kind}/vg_{low}/vg_{r}_{leaf}.json") for r in ("obj", "subj")]
            out.append(Leaf(f"object_{low}_{leaf}", "Object", f"Object/{kind}/{leaf}", tuple(corpora)))
    return out


LEAVES: tuple[Leaf, ...] = (
    *_object_leaves(),
    *(Leaf(f"attribute_{a}", "Attribute", f"Attribute/{a}",
           (("vaw", f"Attribute/vaw/{a}.json"), ("vg", f"Attribute/vg/{a}.json")))
      for a in ("action", "color", "material", "size", "state")),
    Leaf("relation_action", "Relation", "Relation/action",
         (("hake", "Relation/hake_action.json"), ("swig", "Relation/swig_action.json"), ("vg", "Relation/vg/action.json"))),
    Leaf("relation_spatial", "Relation", "Relation/spatial", (("vg", "Relation/vg/spatial.json"),)),
)
BY_CONFIG = {leaf.config: leaf for leaf in LEAVES}
AGGREGATES: dict[str, tuple[str, ...]] = {
    "all": tuple(leaf.config for leaf in LEAVES),
    **{a.lower(): tuple(leaf.config for leaf in LEAVES if leaf.aspect == a) for a in ("Object", "Attribute", "Relation")},
}
DEFAULT_CONFIG = "all"

_f = Value
FEATURES = Features({
    "id": _f("string"), "index": _f("int32"), "aspect": _f("string"), "leaf": _f("string"), "corpus": _f("string"),
    "file": _f("string"), "image": datasets.Image(), "image_path": _f("string"),
    "caption": _f("string"), "negative_caption": _f("string"),
    "positives": datasets.Sequence(_f("string")), "negatives": datasets.Sequence(_f("string")),
})

SPEC_YAML = """\
# How rows of this folder become vlprobe items (see vlprobe/spec.py): one image, the record's first
# positive (caption) and first negative (negative_caption), as the authors' itc evaluation takes them;
# gold [[1, 0]]. Their accuracy counts a tie as wrong (pos > neg): vlprobe's acc_r under the strict policy.
description: VL-CheckList (Zhao et al., 2022), 1 image x [POS[0], NEG[0]], gold [[1, 0]].
id: id
images: [image]
texts: [caption, negative_caption]
gold: [[1, 0]]
tags: [aspect, leaf, corpus]
"""


def image_of(path: Any, corpus: str, where: str) -> tuple[str, str]:
    """The record's image path -> (image source, file name), by the corpus's image root."""
    if not isinstance(path, str) or not path.strip():
        raise AnnotationError(f"{where}: the image path {path!r} is not a non-empty string")
    parts = path.split("/")
    if corpus.startswith("hake"):
        source = HAKE.get(parts[0])
        folders = [d for d in IMAGES[source].subdirs if not d.startswith("hake/")] if source else []
        if source is None or "/".join(parts[:-1]) not in folders:
            raise AnnotationError(f"{where}: HAKE image path {path!r} is not <sub-folder>/<file> under one of "
                                  f"HAKE's folders ({', '.join(HAKE)})")
    elif corpus.startswith("swig"):
        source = SWIG
        if len(parts) != 1:
            raise AnnotationError(f"{where}: SWiG image path {path!r} should be a file name (the images sit in swig/)")
    else:
        source = VG
        if len(parts) > 2 or (len(parts) == 2 and parts[0] not in ("VG_100K", "VG_100K_2")):
            raise AnnotationError(f"{where}: Visual Genome image path {path!r} is not VG_100K[_2]/<vg id>.jpg")
    name = parts[-1]
    if not IMAGES[source].matches(name):
        raise AnnotationError(f"{where}: image file name {name!r} does not look like a {IMAGES[source].title} file")
    return source, name


def _texts(value: Any, where: str, key: str) -> list[str]:
    if not isinstance(value, list) or not value or not all(isinstance(t, str) and t.strip() for t in value):
        raise AnnotationError(f"{where}: {key} should be a non-empty list of non-empty strings, got {str(value)[:80]}")
    return value


def read_file(annotations: Path, leaf: Leaf, corpus: str, file: str) -> list[dict[str, Any]]:
    path = annotations / file
    data = read_json(path, "VL-CheckList", list, 'a JSON list of [image path, {"POS": [...], "NEG": [...]}]',
                     f"pass --annotations DIR, the data/ folder of github.com/{facts.UPSTREAM.repo}")
    rows = []
    for n, rec in enumerate(data):
        where = f"{file} record {n}"
        if not isinstance(rec, list) or len(rec) != 2 or not isinstance(rec[1], dict):
            raise AnnotationError(f'{where}: expected [image path, {{"POS": [...], "NEG": [...]}}]')
        unknown = set(rec[1]) - {"POS", "NEG"}
        if unknown:
            raise AnnotationError(f"{where}: unknown key(s) {sorted(unknown)}; the builder would drop them")
        pos, neg = _texts(rec[1].get("POS"), where, "POS"), _texts(rec[1].get("NEG"), where, "NEG")
        source, name = image_of(rec[0], corpus, where)
        rows.append({
            "id": f"{leaf.config}/{corpus}/{n}", "index": n, "aspect": leaf.aspect, "leaf": leaf.config,
            "corpus": corpus, "file": file, "image_path": rec[0], "caption": pos[0], "negative_caption": neg[0],
            "positives": pos, "negatives": neg, "_images": (("image", source, name),),
        })
    return rows


def read_all(annotations: Path) -> dict[str, list[dict[str, Any]]]:
    return {leaf.config: [r for corpus, file in leaf.corpora for r in read_file(annotations, leaf, corpus, file)]
            for leaf in LEAVES}


# ---- configs, card and build report -------------------------------------------------------------------
def config_decls() -> list[ConfigDecl]:
    aggregates = [ConfigDecl(name, FEATURES, (SPLIT,), default=name == DEFAULT_CONFIG,
                             paths={SPLIT: [f"data/{c}/{SPLIT}-*.parquet" for c in members]})
                  for name, members in AGGREGATES.items()]
    return aggregates + [ConfigDecl(leaf.config, FEATURES, (SPLIT,)) for leaf in LEAVES]


def card_yaml() -> dict[str, Any]:
    up = facts.UPSTREAM
    return card_metadata(
        config_decls(), language=["en"], license="other", license_name="vl-checklist-vg-swig-hake",
        license_link=f"https://github.com/{up.repo}/tree/{up.commit}",
        pretty_name="VL-CheckList", task_categories=["image-to-text", "zero-shot-image-classification"],
        tags=["vision-and-language", "compositionality", "hard-negatives", "benchmark", "vlprobe"],
        size_categories=["100K<n<1M"],
    )


def card_values() -> dict[str, Any]:
    leaves = [{"config": leaf.config, "type": leaf.type,
               "corpora": ", ".join(f"`{c}`" for c, _ in leaf.corpora)} for leaf in LEAVES]
    aggregates = [{"config": a, "members": len(m)} for a, m in AGGREGATES.items()]
    return dict(leaves=leaves, aggregates=aggregates, citation=facts.CITATION.strip(), **upstream_values(facts.UPSTREAM))


def write_card(out: Path) -> Path:
    return cards.write(out, "vl_checklist_card.md", card_yaml(), **card_values())


def dropped_per_corpus(skipped: dict[str, list[str]]) -> dict[tuple[str, str], int]:
    """Rows left out per (leaf, corpus), from build_folder's ``skipped`` ids ``<leaf>/<corpus>/<n> (...)``."""
    out: dict[tuple[str, str], int] = {}
    for config, ids in skipped.items():
        for i in ids:
            corpus = i.split(" ", 1)[0].split("/")[1]
            out[(config, corpus)] = out.get((config, corpus), 0) + 1
    return out


def report(counts: dict[str, int], skipped: dict[str, list[str]], in_file: dict[tuple[str, str], int]) -> list[str]:
    """``data/BUILD.md``'s account of the rows per leaf and corpus (the flow adds the rows left out and the
    files used), and the dropped records counted in the log."""
    dropped = dropped_per_corpus(skipped)
    total, gone = sum(in_file.values()), sum(dropped.values())
    lines = [f"Rows in this build: **{sum(counts.values()):,}** of the files' {total:,} records; "
             f"**{gone:,} dropped because their image could not be had** (the authors' loader skips such "
             "records without a word; here they are counted).", "",
             "| leaf config | corpus | file | records | rows | dropped: image missing |", "|---|---|---|---:|---:|---:|"]
    for leaf in LEAVES:
        for corpus, file in leaf.corpora:
            n, d = in_file[(leaf.config, corpus)], dropped.get((leaf.config, corpus), 0)
            lines.append(f"| `{leaf.config}` | {corpus} | `{file}` | {n:,} | {n - d:,} | {d:,} |")
    print(f"{facts.UPSTREAM.benchmark}: {gone:,} of {total:,} records dropped because their image could not "
          "be had (data/BUILD.md counts them per leaf and corpus)", file=sys.stderr, flush=True)
    return lines


# ---- build ------------------------------------------------------------------------------------------
class Builder(UpstreamBuilder):
    benchmark = facts.BENCHMARK
    help = ("VL-CheckList (2022): Object / Attribute / Relation, 1 image x [positive, negative], "
            "from the upstream files at a pinned commit")
    what = f"the {len(facts.UPSTREAM.files)} VL-CheckList JSON files"
    sources = tuple(IMAGES.values())
    images_help = ("images root laid out as the authors' DATASETS.md: vg/VG_100K/, vg/VG_100K_2/, swig/, "
                   "hake/<sub-folder>/ (also VG_100K/, images_512/ or the release zips at the top)")
    download_help = ("download the missing Visual Genome images file by file and SWiG's images_512.zip into "
                     "--cache-dir (HAKE's images have no per-file source: give them locally)")
    spec_yaml = SPEC_YAML

    def read(self, folder: Path, args: argparse.Namespace) -> Annotations:
        rows = read_all(folder)
        in_file = {(leaf.config, corpus): sum(r["corpus"] == corpus for r in rows[leaf.config])
                   for leaf in LEAVES for corpus, _ in leaf.corpora}
        return Annotations({c: {SPLIT: rs} for c, rs in rows.items()}, {"in_file": in_file})

    def config_decls(self) -> list[ConfigDecl]:
        return config_decls()

    def write_card(self, out: Path, annotations: Annotations) -> Path:
        return write_card(out)

    def report(self, plan: Plan, args: argparse.Namespace) -> list[str]:
        counts = {c: sum(n.values()) for c, n in plan.counts().items()}
        return report(counts, plan.skipped, plan.annotations.facts["in_file"])


BUILDER = Builder()
NAME, HELP, add_arguments, build = BUILDER.name, BUILDER.help, BUILDER.add_arguments, BUILDER.build
