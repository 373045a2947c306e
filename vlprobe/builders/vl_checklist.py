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
records their git blob hashes in ``data/BUILD.md`` and warns once.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets
from datasets import Features, Value

from .. import image_sources as imgs
from ..dataset_folder import ConfigDecl, card_metadata
from . import AnnotationError, cards, read_json, upstream
from .crepe import annotation_lines
from .crepe import upstream_values as unpinned_upstream_values
from .sugar_crepe import SPLIT, annotations_of, build_folder

NAME = "vl_checklist"
HELP = ("VL-CheckList (2022): Object / Attribute / Relation, 1 image x [positive, negative], "
        "from the upstream files at a pinned commit")

DEFAULT_OUT = Path("vl_checklist")
VG, SWIG = "visual_genome_vlc", "swig_vlc"
# HAKE's first path component -> the image source of that sub-folder (vlprobe.image_sources)
HAKE = {"openimages": "hake_openimages", "hcvrd": "hake_hcvrd", "pic": "hake_pic",
        "hake_images_20190730": "hake_images_20190730", "hake_images_20200614": "hake_images_20200614",
        "hico_20160224_det": "hake_hico_det", "vcoco": "hake_vcoco"}
SOURCES = (VG, SWIG, *HAKE.values())


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
        folders = [d for d in imgs.SOURCES[source].subdirs if not d.startswith("hake/")] if source else []
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
    if not imgs.SOURCES[source].matches(name):
        raise AnnotationError(f"{where}: image file name {name!r} does not look like a {imgs.SOURCES[source].title} file")
    return source, name


def _texts(value: Any, where: str, key: str) -> list[str]:
    if not isinstance(value, list) or not value or not all(isinstance(t, str) and t.strip() for t in value):
        raise AnnotationError(f"{where}: {key} should be a non-empty list of non-empty strings, got {str(value)[:80]}")
    return value


def read_file(annotations: Path, leaf: Leaf, corpus: str, file: str) -> list[dict[str, Any]]:
    path = annotations / file
    data = read_json(path, "VL-CheckList", list, 'a JSON list of [image path, {"POS": [...], "NEG": [...]}]',
                     f"pass --annotations DIR, the data/ folder of github.com/{upstream.VL_CHECKLIST.repo}")
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
    up = upstream.VL_CHECKLIST
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
    return dict(leaves=leaves, aggregates=aggregates, **unpinned_upstream_values(upstream.VL_CHECKLIST))


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


def report(counts: dict[str, int], skipped: dict[str, list[str]], in_file: dict[tuple[str, str], int],
           records: list[dict]) -> list[str]:
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
    if skipped:
        lines += ["", "## Rows left out", "",
                  "Built with `--skip-missing-images`: these rows are **not** here, because their image was missing.", ""]
        for config, ids in sorted(skipped.items()):
            shown = ", ".join(ids[:5]) + (f" (+{len(ids) - 5} more)" if len(ids) > 5 else "")
            lines.append(f"- `{config}`: {len(ids)} row(s): {shown}")
    print(f"{upstream.VL_CHECKLIST.benchmark}: {gone:,} of {total:,} records dropped because their image could not "
          "be had (data/BUILD.md counts them per leaf and corpus)", file=sys.stderr, flush=True)
    return lines + annotation_lines(upstream.VL_CHECKLIST, records)


# ---- build ------------------------------------------------------------------------------------------
def add_arguments(parser: argparse.ArgumentParser) -> None:
    upstream.add_arguments(
        parser, upstream.VL_CHECKLIST, what=f"the {len(upstream.VL_CHECKLIST.files)} VL-CheckList JSON files",
        sources=SOURCES,
        images_help="images root laid out as the authors' DATASETS.md: vg/VG_100K/, vg/VG_100K_2/, swig/, "
                    "hake/<sub-folder>/ (also VG_100K/, images_512/ or the release zips at the top)",
        download_help="download the missing Visual Genome images file by file and SWiG's images_512.zip into "
                      "--cache-dir (HAKE's images have no per-file source: give them locally)",
        default_out=DEFAULT_OUT)


def build(args: argparse.Namespace) -> Path:
    up = upstream.VL_CHECKLIST
    annotations = annotations_of(args, up)
    records = upstream.file_records(up, annotations)
    rows = read_all(annotations)
    in_file: dict[tuple[str, str], int] = {}
    for leaf in LEAVES:
        for corpus, _ in leaf.corpora:
            in_file[(leaf.config, corpus)] = sum(r["corpus"] == corpus for r in rows[leaf.config])

    def static(out: Path) -> None:
        write_card(out)
        (out / "vlprobe.yaml").write_text(SPEC_YAML, encoding="utf-8")

    return build_folder(args, NAME, rows, SOURCES, FEATURES, static,
                        lambda counts, skipped: report(counts, skipped, in_file, records), "VL-CheckList: this build")
