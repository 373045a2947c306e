"""``vlprobe build vl_checklist``: VL-CheckList (Zhao et al., 2022) from the JSON files under ``data/`` of
github.com/om-ai-lab/VL-CheckList at the pinned commit and the images of Visual Genome, SWiG and HAKE. A record is
``[image path, {"POS": [texts], "NEG": [texts]}]``; the authors' ``itc`` evaluation scores ``POS[0]`` against
``NEG[0]``, right when strictly above: here 1 image x [POS[0], NEG[0]], gold ``[[1, 0]]``, their accuracy ``acc_r``.

By default, per corpus file, what the authors' code scores: the first ``MAX_NUM/2`` = 1,000 records whose image
exists, in file order; ``--all-records`` holds every record, tagged ``records=all``. Configs: the 13 leaves of the
taxonomy and ``object``, ``attribute``, ``relation`` and ``all`` (the default), which read their leaves' parquet."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets
from datasets import Features, Value

from ..benchmarks import vl_checklist as facts
from ..benchmarks.vl_checklist import BY_CONFIG, FIRST, LEAVES, CorpusFile, Leaf
from ..dataset.image_sources import Archive, SourceSpec
from . import AnnotationError
from .flow import SPLIT, Annotations, Image, Needs, Plan, Row, Rows, UpstreamBuilder, has_upper, parse_record, pct, records_of

# the images as DATASETS.md lays them out under one root (sources of their own: the others' look-up unchanged)
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
    # HAKE's sub-folders (one per collection) each a source: file names are unique only within one; local only
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


AGGREGATES: dict[str, tuple[str, ...]] = {
    "all": tuple(leaf.config for leaf in LEAVES),
    **{a.lower(): tuple(leaf.config for leaf in LEAVES if leaf.aspect == a) for a in facts.ASPECTS},
}
RECORDS_FIRST, RECORDS_ALL = f"first_{FIRST}", "all"  # the `records` column: the authors' protocol, or every record

_f = Value
FEATURES = Features({
    "id": _f("string"), "index": _f("int32"), "aspect": _f("string"), "leaf": _f("string"), "corpus": _f("string"),
    "source": _f("string"), "type_corpus": _f("string"), "records": _f("string"),
    "file": _f("string"), "image": datasets.Image(), "image_path": _f("string"),
    "caption": _f("string"), "negative_caption": _f("string"),
    "positives": datasets.Sequence(_f("string")), "negatives": datasets.Sequence(_f("string")),
})

SPEC_YAML = """\
# How rows of this folder become vlprobe items (see vlprobe/dataset/spec.py): one image, the record's first
# positive (caption) and first negative (negative_caption), as the authors' itc evaluation takes them;
# gold [[1, 0]]. Their accuracy counts a tie as wrong (pos > neg): vlprobe's acc_r under the strict policy.
# type_corpus= names the corpus file (the authors' unit: one accuracy each, then means per source and
# type); records=all marks a build with every record, not the authors' first MAX_NUM/2 of each file.
description: VL-CheckList (Zhao et al., 2022), 1 image x [POS[0], NEG[0]], gold [[1, 0]].
id: id
images: [image]
texts: [caption, negative_caption]
gold: [[1, 0]]
tags: [aspect, leaf, type_corpus, records]
"""


def image_of(path: object, corpus: str, where: str) -> tuple[str, str]:
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


def _texts(value: object, where: str, key: str) -> list[str]:
    if not isinstance(value, list) or not value or not all(isinstance(t, str) and t.strip() for t in value):
        raise AnnotationError(f"{where}: {key} should be a non-empty list of non-empty strings, got {str(value)[:80]}")
    return value


@dataclass(frozen=True)
class Texts:
    """A record's texts: the positives and the negatives (the authors' itc evaluation scores the first of each)."""

    POS: Any = None
    NEG: Any = None


@dataclass(frozen=True)
class Record:
    """One record of a corpus file: the image path as written, the image source and file name, the texts."""

    image_path: str
    source: str
    name: str
    positives: list[str]
    negatives: list[str]

    @classmethod
    def parse(cls, rec: object, corpus: str, where: str) -> Record:
        if not isinstance(rec, list) or len(rec) != 2 or not isinstance(rec[1], dict):
            raise AnnotationError(f'{where}: expected [image path, {{"POS": [...], "NEG": [...]}}]')
        texts = parse_record(Texts, rec[1], where)
        pos, neg = _texts(texts.POS, where, "POS"), _texts(texts.NEG, where, "NEG")
        return cls(rec[0], *image_of(rec[0], corpus, where), pos, neg)

    @property
    def caption(self) -> str:
        return self.positives[0]

    @property
    def negative_caption(self) -> str:
        return self.negatives[0]


def read_file(annotations: Path, leaf: Leaf, corpus_file: CorpusFile, records: str = RECORDS_FIRST) -> list[Row]:
    """One corpus file's records as rows, in file order, each naming its unit (the file)."""
    file, corpus = corpus_file.path, corpus_file.corpus
    rows = []
    shape = 'a JSON list of [image path, {"POS": [...], "NEG": [...]}]'
    for n, _, rec, where in records_of(annotations, file, facts.UPSTREAM, shape):
        r = Record.parse(rec, corpus, where)
        rows.append(Row(f"{leaf.config}/{corpus}/{n}", dict(
            index=n, aspect=leaf.aspect, leaf=leaf.config, corpus=corpus, source=corpus_file.source,
            type_corpus=corpus_file.name, records=records, file=file, image_path=r.image_path, caption=r.caption,
            negative_caption=r.negative_caption, positives=r.positives, negatives=r.negatives),
            (Image("image", r.source, r.name),), unit=corpus_file.name, record=r))
    return rows


def file_facts(records: list[Record]) -> facts.FileFacts:
    """:class:`vlprobe.benchmarks.vl_checklist.FileFacts` of records (one file's, in order)."""
    seen: set[tuple] = set()
    duplicates = 0
    for r in records:
        key = (r.image_path, tuple(r.positives), tuple(r.negatives))
        duplicates += key in seen
        seen.add(key)
    return facts.FileFacts(
        len(records), sum(r.caption == r.negative_caption for r in records), duplicates,
        sum(has_upper(r.caption) and not has_upper(r.negative_caption) for r in records),
        sum(not has_upper(r.caption) and has_upper(r.negative_caption) for r in records))


def authors_means(per_file: Mapping[str, float]) -> dict[str, tuple[float, bool]]:
    """Per group of ``GROUPS``, the mean of its members' per-file values (radar.py) and whether all were there."""
    out: dict[str, tuple[float, bool]] = {}
    values = {name: (v, True) for name, v in per_file.items()}
    for g in facts.GROUPS:
        present = [values[m] for m in g.members if m in values]
        if present:
            values[g.name] = out[g.name] = (sum(v for v, _ in present) / len(present),
                                            len(present) == len(g.members) and all(c for _, c in present))
    return out


class VlChecklist(UpstreamBuilder):
    benchmark = facts.BENCHMARK
    help = ("VL-CheckList (2022): Object / Attribute / Relation, 1 image x [positive, negative], from the upstream "
            f"files at a pinned commit; per corpus file the first {FIRST:,} records, as the authors' itc evaluation")
    what = f"the {len(facts.UPSTREAM.files)} VL-CheckList JSON files"
    sources = tuple(IMAGES.values())
    images_help = ("images root laid out as the authors' DATASETS.md: vg/VG_100K/, vg/VG_100K_2/, swig/, "
                   "hake/<sub-folder>/ (also VG_100K/, images_512/ or the release zips at the top)")
    download_help = ("download the missing Visual Genome images file by file and SWiG's images_512.zip into "
                     "--cache-dir (HAKE's images have no per-file source: give them locally)")
    spec_yaml = SPEC_YAML
    features_all, aggregates, leaves = FEATURES, AGGREGATES, tuple(BY_CONFIG)  # default_config: all
    card = dict(license_name="vl-checklist-vg-swig-hake",
                license_link=f"https://github.com/{facts.UPSTREAM.repo}/tree/{facts.UPSTREAM.commit}",
                tags=["vision-and-language", "compositionality", "hard-negatives", "benchmark", "vlprobe"],
                size_categories=["10K<n<100K"])

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--all-records", action="store_true",
                            help=f"every record of each corpus file, not the first MAX_NUM/2 = {FIRST:,} the authors' "
                                 "evaluate.py scores (not the authors' protocol: summaries of it say so)")

    def config_files(self) -> dict[str, Needs]:
        """Each leaf reads its corpus files; one with some of them is built from those."""
        return {leaf.config: tuple((f.path,) for f in leaf.files) for leaf in LEAVES}

    def read(self, folder: Path, args: argparse.Namespace) -> Annotations:
        selection, every = args.selection, bool(getattr(args, "all_records", False))
        read: dict[str, list[Row]] = {}
        rows: Rows = {}
        for config in selection.configs:
            leaf = BY_CONFIG[config]
            leaf_rows = []
            for f in leaf.files:
                if f.path in selection.files:
                    read[f.name] = read_file(folder, leaf, f, RECORDS_ALL if every else RECORDS_FIRST)
                    leaf_rows += read[f.name]
            rows[config] = {SPLIT: leaf_rows}
        return Annotations(rows, read, first=None if every else FIRST)

    def expected(self, args: argparse.Namespace) -> dict[str, int]:
        """Rows per leaf with every image (leaves whose every file's count is known here)."""
        every = bool(getattr(args, "all_records", False))
        out = {}
        for leaf in LEAVES:
            if all(f.name in facts.COUNTS for f in leaf.files):
                out[leaf.config] = sum(n if every else min(n, FIRST) for n in (facts.COUNTS[f.name] for f in leaf.files))
        return out

    def card_values(self, annotations: Annotations) -> dict[str, Any]:
        files = []
        for leaf in LEAVES:
            for f in leaf.files:
                row = {"leaf": leaf.config, "name": f.name, "path": f.path, "source": f.source, "blob": f.blob}
                full, first = facts.FULL_FACTS.get(f.name), facts.FIRST_FACTS.get(f.name)
                if full is None or first is None:  # a file not at hand here: its hash only
                    files.append({**row, **dict.fromkeys(("records", "first", "same", "dups", "upper"), "-")})
                    continue
                files.append({**row, "records": f"{full.records:,}", "first": f"{first.records:,}",
                              "same": f"{first.same_text} / {full.same_text}",
                              "dups": f"{first.duplicates:,} / {full.duplicates:,}",
                              "upper": " / ".join(pct(x.upper_case_rule, x.records) for x in (first, full))})
        upper = authors_means({n: f.upper_case_rule / f.records for n, f in facts.FIRST_FACTS.items()})
        leaves = []
        for leaf in LEAVES:
            here = [f for f in leaf.files if f.name in facts.FULL_FACTS]
            first = sum(facts.FIRST_FACTS[f.name].records for f in here)
            full = sum(facts.FULL_FACTS[f.name].records for f in here)
            value, complete = upper.get(leaf.config, (None, False))
            leaves.append({"config": leaf.config, "type": leaf.type, "label": leaf.label, "files": len(leaf.files),
                           "here": len(here), "first": f"{first:,}", "full": f"{full:,}",
                           "sources": ", ".join(f"{s} ({len(fs)})" for s, fs in leaf.sources.items()),
                           "upper": (pct(value) + ("" if complete else f" ({len(here)} of {len(leaf.files)} files)"))
                           if value is not None else "-"})
        overall = {g: upper[g] for g in ("object", "attribute", "relation", "overall")}
        totals = {"files": len(facts.FILES), "here": len(facts.FULL_FACTS),
                  "first": f"{sum(f.records for f in facts.FIRST_FACTS.values()):,}",
                  "full": f"{sum(f.records for f in facts.FULL_FACTS.values()):,}",
                  "same": f"{sum(f.same_text for f in facts.FULL_FACTS.values()):,}",
                  "same_first": f"{sum(f.same_text for f in facts.FIRST_FACTS.values()):,}",
                  "dups": f"{sum(f.duplicates for f in facts.FULL_FACTS.values()):,}",
                  "dups_first": f"{sum(f.duplicates for f in facts.FIRST_FACTS.values()):,}"}
        aggregates = [{"config": a, "members": len(m)} for a, m in AGGREGATES.items()]
        spatial = facts.FULL_FACTS["Relation_spatial_vg"]
        spatial_values = {"records": f"{spatial.records:,}", "dups": f"{spatial.duplicates:,}",
                          "upper": f"{spatial.upper_case_rule:,}", "first_upper": pct(upper["relation_spatial"][0])}
        return dict(corpus_files=files, leaves=leaves, totals=totals, aggregates=aggregates, first=f"{FIRST:,}",
                    max_num=facts.MAX_NUM, records_first=RECORDS_FIRST, spatial=spatial_values,
                    color_same=facts.FULL_FACTS["Attribute_color_vg"].same_text,
                    action_same=facts.FULL_FACTS["Relation_action_vg"].same_text,
                    overall={k: (pct(v) + ("" if c else " (in part)")) for k, (v, c) in overall.items()},
                    missing=[f for leaf in LEAVES for f in leaf.files if f.name not in facts.FULL_FACTS])

    def report(self, plan: Plan, args: argparse.Namespace) -> list[str]:
        """``data/BUILD.md``'s account per corpus file, what the rows hold, and the casing rule's accuracy."""
        read: dict[str, list[Row]] = plan.annotations.facts
        all_records = bool(getattr(args, "all_records", False))
        built: dict[str, list[Record]] = {}
        for splits in plan.annotations.rows.values():
            for r in splits.get(SPLIT, []):
                built.setdefault(str(r.unit), []).append(r.record)
        dropped: dict[str, int] = {}
        for ids in plan.skipped.values():
            for i in ids:
                leaf, corpus = i.split(" ", 1)[0].split("/")[:2]
                name = next(f.name for f in BY_CONFIG[leaf].files if f.corpus == corpus)
                dropped[name] = dropped.get(name, 0) + 1
        total = sum(len(rs) for rs in read.values())
        n_built = sum(len(rs) for rs in built.values())
        which = ("every record of each file (`--all-records`): **not the authors' protocol**, whose `evaluate.py` "
                 f"scores the first MAX_NUM/2 = {FIRST:,} of each" if all_records else
                 f"the authors' protocol: per corpus file, the first MAX_NUM/2 = {FIRST:,} records whose image could be had, "
                 "in file order (`evaluate.py`, `d.data[name][:int(max_number/2)]`, after `data_loader.py` skips records "
                 "without their image)")
        lines = [f"Rows in this build: **{n_built:,}** of the {total:,} records in the {len(read)} corpus files read: {which}. "
                 f"**{sum(dropped.values()):,} records were left out because their image could not be had** (the "
                 "authors' loader skips such records without a word; here they are counted, and the file's next "
                 "record taken in their place).", "",
                 "| leaf config | corpus file (the authors' name) | file | records | rows | left out: image missing "
                 "| past the first 1,000 |".replace("1,000", f"{FIRST:,}"),
                 "|---|---|---|---:|---:|---:|---:|"]
        for leaf in LEAVES:
            for f in leaf.files:
                if f.name in read:
                    n, b = len(read[f.name]), len(built.get(f.name, []))
                    d = dropped.get(f.name, 0)
                    lines.append(f"| `{leaf.config}` | `{f.name}` | `{f.path}` | {n:,} | {b:,} | {d:,} | {n - b - d:,} |")
        per_file = {name: file_facts(rs) for name, rs in built.items()}
        upper = {name: f.upper_case_rule / f.records for name, f in per_file.items() if f.records}
        means = authors_means(upper)
        lines += ["", "## What the records give away", "",
                  "Per corpus file, of this build's rows: records whose `POS[0]` is `NEG[0]` (always a tie: wrong under "
                  "the authors' `pos > neg`), records equal to an earlier one of the file (image and texts), records whose "
                  "`POS[0]` alone has upper case (`NEG[0]` none), and how far a rule that looks at no image gets by picking "
                  "the text with upper case (strict: a tie, where neither or both have it, is wrong). A case-sensitive "
                  "text encoder can learn that cue.", "",
                  "| corpus file | rows | POS[0] = NEG[0] | duplicates | upper case only in POS[0] | \"the text with upper "
                  "case\" (%) |", "|---|---:|---:|---:|---:|---:|"]
        for leaf in LEAVES:
            for f in leaf.files:
                if f.name in per_file:
                    x = per_file[f.name]
                    lines.append(f"| `{f.name}` | {x.records:,} | {x.same_text:,} | {x.duplicates:,} | {x.upper_case_rule:,} | "
                                 f"{pct(x.upper_case_rule, x.records)} |")
        lines += ["", "The same rule averaged as the authors average a model's accuracy (per source, then per type, as "
                      "`radar.py` with `corpus.json`; then vlprobe's means per aspect and overall); a mean over fewer files "
                      "than the type has is marked:", "", "| group | \"the text with upper case\" (%) |", "|---|---:|"]
        for g in facts.GROUPS:
            if g.name in means and "/" not in g.name:
                v, complete = means[g.name]
                lines.append(f"| {g.label} | {pct(v)}{'' if complete else ' (in part)'} |")
        return lines

