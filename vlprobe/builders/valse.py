"""``vlprobe build valse``: VALSE (Parcalabescu et al., ACL 2022) from the 11 original annotation files and the
original images. One config per instrument, one per piece and ``all`` (these read the instruments' parquet). Only
valid records by default (``mturk.caption >= 2``); ``--include-invalid`` keeps all 8,782."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import datasets
from datasets import Features, List, Value

from ..benchmarks import valse as facts
from ..benchmarks.valse import FILES, PAPER_ALL, PAPER_VALID, PIECES
from ..dataset import image_sources as imgs
from . import AnnotationError
from .flow import SPLIT, Annotations, Image, Plan, Row, UpstreamBuilder, parse_record

PIECE = facts.BENCHMARK.parts  # instrument -> piece (what each tests: the card, templates/valse_card.md)

# Image sources VALSE draws on, in routing order (the file-name patterns are disjoint).
VALSE_SOURCES = ("coco2014_train", "coco2014_val", "visdial_val2018", "visual7w", "coco2017_val", "swig")

_f = Value
FEATURES = Features({
    "id": _f("string"), "key": _f("string"), "piece": _f("string"), "instrument": _f("string"),
    "image": datasets.Image(), "caption": _f("string"), "foil": _f("string"),
    "source_dataset": _f("string"), "image_source": _f("string"), "image_file": _f("string"),
    "original_split": _f("string"), "dataset_idx": _f("string"), "linguistic_phenomena": _f("string"),
    "classes": _f("string"), "classes_foil": _f("string"),
    "mturk_caption": _f("int32"), "mturk_foil": _f("int32"), "mturk_other": _f("int32"), "valid": _f("bool"),
    "answer": _f("int32"), "declarative_statement": _f("string"),
    "declarative_statement_foils": List(_f("string")), "provenance_of_foils": _f("string"),
    "foil_method": _f("string"), "grammaticality_score": _f("float64"),
    "nli_entail": _f("float64"), "nli_neutral": _f("float64"), "nli_contradict": _f("float64"), "nli_pred": _f("string"),
    "orig_caption": _f("string"), "only_caption": _f("string"),
})

SPEC_YAML = """\
# How rows of this folder become vlprobe items (see vlprobe/dataset/spec.py): one image, the caption and
# its foil; the caption is the gold text. Tags drive per-piece / per-instrument tables.
description: VALSE (Parcalabescu et al., ACL 2022), 1 image x [caption, foil], gold [[1, 0]].
id: id
images: [image]
texts: [caption, foil]
gold: [[1, 0]]
tags: [piece, instrument, image_source, valid]
"""


def class_string(value: object) -> str | None:
    """``classes`` / ``classes_foil`` as a string: strings unchanged, numbers as digits, the rest in JSON."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool) or isinstance(value, list):
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return str(value)
    raise TypeError(f"unexpected class value {value!r}")


def _single(values: object, where: str, field: str) -> object:
    if values is None:
        return None
    if not isinstance(values, list) or len(values) != 1:
        raise AnnotationError(f"{where}: {field} should be a list of one value, got {values!r}")
    return values[0]


def image_source(file_name: str, where: str) -> str:
    for name in VALSE_SOURCES:
        if imgs.SOURCES[name].matches(file_name):
            return name
    raise AnnotationError(f"{where}: image_file {file_name!r} matches no known VALSE image source")


@dataclass(frozen=True)
class Votes:
    """A record's ``mturk``: how many of the three annotators chose the caption, the foil, neither."""

    caption: int
    foil: int
    other: int


@dataclass(frozen=True)
class Nli:
    """A record's ``nli_scores``: each a list of one value."""

    entail: Any = None
    neutral: Any = None
    contradict: Any = None
    pred: Any = None


@dataclass(frozen=True)
class Record:
    """One record of a VALSE file; every field of the 11 files (anything else stops the build)."""

    caption: str
    foil: str
    image_file: str
    mturk: Any
    dataset: Any = None
    original_split: Any = None
    dataset_idx: Any = None
    linguistic_phenomena: Any = None
    classes: Any = None
    classes_foil: Any = None
    answer: Any = None
    split: Any = None
    declarative_statement: Any = None
    declarative_statement_foils: Any = None
    provenance_of_foils: Any = None
    foil_method: Any = None
    foiling_method: Any = None
    grammaticality_scores: Any = None
    nli_scores: Any = None
    orig_caption: Any = None
    key: Any = None
    only_caption: Any = None

    @classmethod
    def parse(cls, rec: object, key: str, where: str) -> Record:
        r = parse_record(cls, rec, where)
        try:
            votes = Votes(*(int(r.mturk[k]) for k in ("caption", "foil", "other")))
        except (KeyError, TypeError, ValueError) as err:
            raise AnnotationError(f"{where}: missing or malformed field: mturk {err!r}") from None
        if r.split not in (None, r.original_split):
            raise AnnotationError(f"{where}: split {r.split!r} differs from original_split {r.original_split!r}")
        if r.key not in (None, key):
            raise AnnotationError(f"{where}: field key {r.key!r} differs from the record key")
        return replace(r, mturk=votes, nli_scores=parse_record(Nli, r.nli_scores or {}, f"{where} nli_scores"))

    @property
    def valid(self) -> bool:
        """At least two of the three annotators chose the caption (``mturk.caption >= 2``): the paper's records."""
        return self.mturk.caption >= 2


class Valse(UpstreamBuilder):
    benchmark = facts.BENCHMARK
    help = "VALSE (ACL 2022): 11 instruments in 6 pieces + FOIL-it, from the original annotations and images"
    what = "the 11 VALSE JSON files"
    sources = VALSE_SOURCES
    images_help = ("images root: a folder holding the sources' release folders or zips (val2017/, train2014/, "
                   "val2014/, visual7w/images/, images_512/, VisualDialog_val2018/, *.zip)")
    download_help = ("download the images missing locally into --cache-dir: COCO file by file, Visual7W, SWiG and "
                     "VisDial val2018 as their owners' archives (downloaded once, resumable)")
    spec_yaml = SPEC_YAML
    features_all, leaves = FEATURES, facts.INSTRUMENTS  # all, and each piece of several instruments, read theirs
    aggregates = {"all": leaves, **{piece: members for piece, members in PIECES.items() if members != (piece,)}}
    card = dict(license_name="valse-mixed",
                tags=["vision-and-language", "foils", "probing", "benchmark", "vlprobe"], size_categories=["1K<n<10K"])
    shape, keyed = "a JSON object mapping keys to records", True

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--include-invalid", action="store_true",
                            help="keep all 8,782 records, not only the valid ones (mturk.caption >= 2)")

    def leaf_file(self, config: str) -> str:
        return FILES[config]

    def row(self, config: str, n: int, key: str, rec: object, where: str) -> Row:
        r = Record.parse(rec, key, where)
        votes, nli = r.mturk, r.nli_scores
        try:
            classes, classes_foil = class_string(r.classes), class_string(r.classes_foil)
        except TypeError as err:
            raise AnnotationError(f"{where}: {err}") from None
        source = image_source(r.image_file, where)
        return Row(f"{config}/{key}", dict(
            key=key, piece=PIECE[config], instrument=config, caption=r.caption, foil=r.foil, source_dataset=r.dataset,
            image_source=source, image_file=r.image_file, original_split=r.original_split,
            dataset_idx=None if r.dataset_idx is None else str(r.dataset_idx), linguistic_phenomena=r.linguistic_phenomena,
            classes=classes, classes_foil=classes_foil, mturk_caption=votes.caption, mturk_foil=votes.foil,
            mturk_other=votes.other, valid=r.valid, answer=r.answer, declarative_statement=r.declarative_statement,
            declarative_statement_foils=r.declarative_statement_foils, provenance_of_foils=r.provenance_of_foils,
            foil_method=r.foil_method if r.foil_method is not None else r.foiling_method,
            grammaticality_score=_single(r.grammaticality_scores, where, "grammaticality_scores"),
            nli_entail=_single(nli.entail, where, "nli_scores.entail"),
            nli_neutral=_single(nli.neutral, where, "nli_scores.neutral"),
            nli_contradict=_single(nli.contradict, where, "nli_scores.contradict"),
            nli_pred=_single(nli.pred, where, "nli_scores.pred"), orig_caption=r.orig_caption,
            only_caption=r.only_caption), (Image("image", source, r.image_file),), record=r)

    def read(self, folder: Path, args: argparse.Namespace) -> Annotations:
        every = getattr(args, "include_invalid", False)
        return Annotations({c: {SPLIT: [r for r in self.read_leaf(folder, c) if every or r.record.valid]}
                            for c in self.leaves})

    def card_values(self, annotations: Annotations) -> dict[str, Any]:
        """What ``vlprobe/templates/valse_card.md`` is filled with: the same for every build."""
        rows = [{"config": c, "piece": PIECE[c], "file": FILES[c], "paper_all": f"{PAPER_ALL[c]:,}",
                 "paper_valid": f"{PAPER_VALID[c]:,}"} for c in facts.INSTRUMENTS]
        piece_rows = [{"piece": piece, "members": ", ".join(f"`{m}`" for m in members),
                       "rows": f"{sum(PAPER_VALID[m] for m in members):,}"} for piece, members in PIECES.items()]
        total = f"{sum(PAPER_VALID.values()):,}"
        selection = (
            f"A default build keeps **only the valid records** ({total}), as the paper evaluates them. "
            f"`vlprobe build valse --include-invalid` keeps all {sum(PAPER_ALL.values()):,} candidates (then filter on "
            "`valid`, or `mturk_caption >= 2`, to get the benchmark as the paper defines it)."
        )
        archives = [{"source": s, "file": a.file, "url": a.url} for s in VALSE_SOURCES
                    if (a := imgs.SOURCES[s].archive) is not None]
        return dict(rows=rows, piece_rows=piece_rows, selection=selection, total=total, archives=archives)

    def expected(self, args: argparse.Namespace) -> dict[str, int]:
        return dict(PAPER_ALL if getattr(args, "include_invalid", False) else PAPER_VALID)

    def report(self, plan: Plan, args: argparse.Namespace) -> list[str]:
        first = ("All 8,782 candidate records (`--include-invalid`); filter on `valid` for the benchmark as the paper "
                 "defines it." if getattr(args, "include_invalid", False) else
                 "Only the valid records (`mturk_caption >= 2`), as the paper evaluates them.")
        return [first] + super().report(plan, args)

