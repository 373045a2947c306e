"""``vlprobe build bla``: BLA (Chen, Fernández, Pezzelle, EMNLP 2023) from the released annotation files and the
Visual Genome images. Configs: the three tasks (a row: 1 image x two true and two false captions), ``all`` (the three
pooled, read from their parquet) and the release's fine-tuning splits as ``<task>_<setting>``."""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import datasets
from datasets import Features, List, Value

from ..benchmarks import Upstream
from ..benchmarks import bla as facts
from ..benchmarks.bla import COUNTS, FILES, TASKS
from ..dataset.folder import ConfigDecl
from . import AnnotationError, read_json
from .flow import SPLIT, Annotations, Image, Plan, Row, Rows, UpstreamBuilder, parse_record

SOURCE = "visual_genome"


VOICED = "active_passive"  # the task whose captions are each in the active or the passive voice
# the three tasks pooled, what `--dataset bla` scores by default (without it every config, fine-tuning ones too, would be)
ALL = "all"

# the release's finetune/<setting>/<task dir>/{train,valid,test}.json: a config <task>_<setting> each
SETTINGS = ("finetune_random", "finetune_test_golden", "finetune_train_golden")
TASK_DIRS = {"active_passive": "active_passive", "coordination": "coord", "relative_clause": "rc"}
FT_SPLITS = {"train": "train", "validation": "valid", "test": "test"}  # HF split name -> release file


@dataclass(frozen=True)
class Finetune:
    task: str
    setting: str

    @property
    def config(self) -> str:
        return f"{self.task}_{self.setting}"

    def file(self, split: str) -> str:
        return f"finetune/{self.setting}/{TASK_DIRS[self.task]}/{FT_SPLITS[split]}.json"


FINETUNE = tuple(Finetune(t, s) for t in TASKS for s in SETTINGS)
MAIN_FILES = tuple(FILES.values())

_COMMON = {
    "id": Value("string"), "task": Value("string"), "image": datasets.Image(), "image_id": Value("string"),
    "true_captions": List(Value("string")), "false_captions": List(Value("string")),
    "index": Value("int32"), "group_index": Value("int32"),
}
# one schema for the three tasks (a task's own columns null in the others' rows), so that `all` reads them as one table
_ONLY = {"active_passive": ("predicate", "caption_voices", "voice_order"),
         "coordination": ("quality_scores",), "relative_clause": ("quality_scores",)}
BENCH_FEATURES = Features({**_COMMON, "predicate": Value("string"), "caption_voices": List(Value("string")),
                           "voice_order": Value("string"), "quality_scores": List(Value("float64"))})
FEATURES = {c: BENCH_FEATURES for c in (ALL, *TASKS)}

FINETUNE_FEATURES = Features({
    "id": Value("string"), "task": Value("string"), "setting": Value("string"), "image": datasets.Image(),
    "image_id": Value("string"), "true_captions": List(Value("string")), "false_captions": List(Value("string")),
    "gold": List(List(Value("int8"))),
})

SPEC_YAML = """\
# How rows of this folder become vlprobe items (see vlprobe/dataset/spec.py): one image and four texts,
# the two true captions then the two false ones (list columns expand in order); gold [[1, 1, 0, 0]].
description: BLA (Chen, Fernandez, Pezzelle, EMNLP 2023), 1 image x [true1, true2, false1, false2], gold [[1, 1, 0, 0]].
id: id
images: [image]
texts: [true_captions, false_captions]
gold: [[1, 1, 0, 0]]
tags: [task]
configs:
  # all: the three tasks pooled, each row once; the task= tag gives the per-task results
  all: {tags: [task]}
  # text order is given by voice_order (TA, TP, FA, FP in the released data); predicate for per-verb tables
  active_passive: {tags: [task, predicate, voice_order]}
  # fine-tuning configs: train rows are [true, false] ([[1, 0]]), validation/test rows all four texts
  active_passive_finetune_random: {gold: gold, tags: [task, setting]}
  active_passive_finetune_test_golden: {gold: gold, tags: [task, setting]}
  active_passive_finetune_train_golden: {gold: gold, tags: [task, setting]}
  coordination_finetune_random: {gold: gold, tags: [task, setting]}
  coordination_finetune_test_golden: {gold: gold, tags: [task, setting]}
  coordination_finetune_train_golden: {gold: gold, tags: [task, setting]}
  relative_clause_finetune_random: {gold: gold, tags: [task, setting]}
  relative_clause_finetune_test_golden: {gold: gold, tags: [task, setting]}
  relative_clause_finetune_train_golden: {gold: gold, tags: [task, setting]}
"""

# A passive sentence of the active-passive templates: "the X is/are <participle> [particle] by the Y".
_PASSIVE = re.compile(r"\b(is|are)\b.*\bby\b")


def voice(sentence: str) -> str:
    return "passive" if _PASSIVE.search(sentence) else "active"


@dataclass(frozen=True)
class Group:
    """A caption set's one group: two true captions, two false ones, and per task a predicate or quality scores."""

    True1: str
    True2: str
    False1: str
    False2: str
    group_index: Any = None
    predicate: Any = None
    score: Any = None


@dataclass(frozen=True)
class Record:
    """One caption set of a task file: the image, its one group of captions, its index in the release."""

    image_id: Any
    caption_group: Any
    index: Any = None

    @classmethod
    def parse(cls, rec: object, where: str) -> Record:
        r = parse_record(cls, rec, where)
        image_id, groups = str(r.image_id), r.caption_group
        if not isinstance(groups, list) or len(groups) != 1:
            raise AnnotationError(f"{where} (image {image_id}): caption_group should hold exactly one group, got "
                                  f"{len(groups) if isinstance(groups, list) else groups!r}")
        return replace(r, image_id=image_id, caption_group=parse_record(Group, groups[0], f"{where} (image {image_id})"))

    @property
    def group(self) -> Group:
        return self.caption_group

    @property
    def trues(self) -> list[str]:
        return [self.group.True1, self.group.True2]

    @property
    def falses(self) -> list[str]:
        return [self.group.False1, self.group.False2]

    def voices(self) -> list[str]:
        """Active or passive, per caption (True1, True2, False1, False2)."""
        return [voice(s) for s in self.trues + self.falses]

    def voice_order(self) -> str:
        """The thesis' names of the captions in order: ``TA,TP,FA,FP`` in every released row."""
        return ",".join(_ROLE[(i < 2, v)] for i, v in enumerate(self.voices()))


# (is a true caption, voice) -> the thesis' names: True/False Active/Passive
_ROLE = {(True, "active"): "TA", (True, "passive"): "TP", (False, "active"): "FA", (False, "passive"): "FP"}


def read_finetune(annotations: Path, ft: Finetune, split: str, benchmark: dict[str, Row]) -> list[Row]:
    """One fine-tuning split as rows; every item must be a benchmark item with the same captions."""
    path = annotations / ft.file(split)
    data = read_json(path, "BLA", dict, "a JSON object mapping image ids to caption lists",
                     "pass --annotations DIR, the released BLA_Benchmark/annotations folder")
    rows = []
    for image_id, captions in data.items():
        where = f"{ft.file(split)} item {image_id!r}"
        main = benchmark.get(str(image_id))
        if main is None:
            raise AnnotationError(f"{where}: image {image_id} is not in the {ft.task} benchmark file")
        trues, falses = main.record.trues, main.record.falses
        if split == "train":
            if not (isinstance(captions, list) and len(captions) == 2 and captions[0] in trues and captions[1] in falses):
                raise AnnotationError(f"{where}: expected [a true caption, a false caption] of the benchmark item, "
                                      f"got {captions!r}")
            t, f, gold = [captions[0]], [captions[1]], [[1, 0]]
        else:
            if captions != trues + falses:
                raise AnnotationError(f"{where}: expected the benchmark item's [True1, True2, False1, False2], "
                                      f"got {captions!r}")
            t, f, gold = trues, falses, [[1, 1, 0, 0]]
        rows.append(Row(main.id, dict(task=ft.task, setting=ft.setting, image_id=str(image_id), true_captions=t,
                                      false_captions=f, gold=gold), main.images))
    return rows


# rows per split of each fine-tuning config in the release: the card shows them whatever a build holds
_GOLDEN = {"active_passive": 41, "coordination": 36, "relative_clause": 25}
FINETUNE_COUNTS = {
    f.config: {"train": _GOLDEN[f.task] if f.setting == "finetune_train_golden" else 100, "validation": 200,
               "test": _GOLDEN[f.task] if f.setting == "finetune_test_golden" else 200}
    for f in FINETUNE
}


class Bla(UpstreamBuilder):
    benchmark = facts.BENCHMARK
    help = "BLA (EMNLP 2023): active-passive, coordination, relative clause, from the released annotations and VG images"
    what = "the released annotations: the three *_captions.json files and finetune/"
    sources = (SOURCE,)
    images_help = "images root: a folder holding VG_100K/, VG_100K_2/, images/ or their zips"
    download_help = "download Visual Genome images missing locally, into --cache-dir"
    spec_yaml = SPEC_YAML
    card = dict(license_name="bla-mixed", pretty_name="BLA (Basic Language Abilities)",
                tags=["vision-and-language", "probing", "benchmark", "syntax", "vlprobe"], size_categories=["1K<n<10K"])
    shape = "a JSON list of caption sets"
    features_all, aggregates, leaves, default_config = BENCH_FEATURES, {ALL: TASKS}, TASKS, VOICED

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--skip-finetune", action="store_true",
                            help="build only the benchmark configs (the three tasks and all), not the fine-tuning "
                                 "configs")

    def files(self, args: argparse.Namespace) -> Upstream:
        return facts.UPSTREAM.select(MAIN_FILES) if getattr(args, "skip_finetune", False) else facts.UPSTREAM

    def leaf_file(self, config: str) -> str:
        return FILES[config]

    def row(self, config: str, n: int, key: str, rec: object, where: str) -> Row:
        r = Record.parse(rec, where)
        own: dict[str, Any] = dict.fromkeys(c for cols in _ONLY.values() for c in cols)
        if config == VOICED:
            own.update(predicate=r.group.predicate, caption_voices=r.voices(), voice_order=r.voice_order())
        else:
            scores = r.group.score
            if not (isinstance(scores, list) and len(scores) == 4):
                raise AnnotationError(f"{where} (image {r.image_id}): score should be a list of 4 numbers, got {scores!r}")
            own.update(quality_scores=[float(x) for x in scores])
        return Row(f"{config}/{r.image_id}", dict(task=config, image_id=r.image_id, true_captions=r.trues,
                                                  false_captions=r.falses, index=r.index,
                                                  group_index=r.group.group_index, **own),
                   (Image("image", SOURCE, f"{r.image_id}.jpg"),), record=r)

    def read(self, folder: Path, args: argparse.Namespace) -> Annotations:
        """The rows, and the voice orders of the released active-passive rows (before any is left out)."""
        rows_by_task: dict[str, list[Row]] = {}
        for t in TASKS:
            rows_by_task[t] = self.read_leaf(folder, t)
            dup = [i for i, n in Counter(r.id for r in rows_by_task[t]).items() if n > 1]
            if dup:
                raise AnnotationError(f"{folder / FILES[t]}: image ids repeat, so ids would not be unique: {dup[:5]}")
        orders = Counter(r.record.voice_order() for r in rows_by_task[VOICED])
        rows: Rows = {c: {SPLIT: rs} for c, rs in rows_by_task.items()}
        if not getattr(args, "skip_finetune", False):  # every fine-tuning item is a benchmark item
            for ft in FINETUNE:
                bench = {r.record.image_id: r for r in rows_by_task[ft.task]}
                rows[ft.config] = {sp: read_finetune(folder, ft, sp, bench) for sp in FT_SPLITS}
        return Annotations(rows, orders)

    def config_decls(self) -> list[ConfigDecl]:
        return super().config_decls() + [ConfigDecl(f.config, FINETUNE_FEATURES, tuple(FT_SPLITS)) for f in FINETUNE]

    def card_values(self, annotations: Annotations) -> dict[str, Any]:
        """What ``vlprobe/templates/bla_card.md`` is filled with: the same for every build."""
        voice_orders: Counter = annotations.facts
        if set(voice_orders) == {"TA,TP,FA,FP"}:
            order_note = ("So in every row text 0 is TA, 1 is TP, 2 is FA and 3 is FP: TA vs FA is score column 0 vs 2, "
                          "TP vs FP column 1 vs 3, TA vs FP column 0 vs 3, TP vs FA column 1 vs 2.")
        else:
            order_note = ("The order is not the same in every row: read each row's `caption_voices`, or group on the "
                          "`voice_order=` tag, before comparing columns.")
        return dict(
            tasks=[{"config": t, "file": FILES[t], "released": f"{COUNTS[t]:,}"} for t in TASKS],
            all_released=f"{sum(COUNTS.values()):,}",
            finetune=[{"config": f.config, "setting": f.setting, **{sp: f"{n:,}" for sp, n in FINETUNE_COUNTS[f.config].items()}}
                      for f in FINETUNE],
            orders=", ".join(f"`{o}` in {n:,} rows" for o, n in voice_orders.most_common()) or "none",
            order_note=order_note, n_files=len(facts.UPSTREAM.files),
        )

    def finish(self, out: Path, plan: Plan, args: argparse.Namespace) -> None:
        if getattr(args, "skip_finetune", False):  # a folder built before with them: they go, so it holds this build only
            for ft in FINETUNE:
                shutil.rmtree(out / "data" / ft.config, ignore_errors=True)
        for config, n in plan.counts().items():
            if not plan.skipped and config in FINETUNE_COUNTS and n != FINETUNE_COUNTS[config]:
                print(f"bla: note: {config} has {n} rows, the release {FINETUNE_COUNTS[config]}", file=sys.stderr)

    def report(self, plan: Plan, args: argparse.Namespace) -> list[str]:
        """Rows per config and split against the release's."""
        built = plan.counts()
        counts = {t: sum(built.get(t, {}).values()) for t in TASKS}
        finetune_counts = {c: n for c, n in built.items() if c in FINETUNE_COUNTS}
        lines = [f"Benchmark rows in this build: **{sum(counts.values()):,}** (with every image: "
                 f"{sum(COUNTS.values()):,}).", "", "| config | rows | with every image |", "|---|---:|---:|"]
        lines += [f"| `{t}` | {counts.get(t, 0):,} | {COUNTS[t]:,} |" for t in TASKS]
        if finetune_counts:
            lines += ["", "| fine-tuning config | train | validation | test |", "|---|---:|---:|---:|"]
            lines += [f"| `{c}` | " + " | ".join(f"{n.get(sp, 0):,}" for sp in FT_SPLITS) + " |"
                      for c, n in finetune_counts.items()]
        else:
            lines += ["", "Built with `--skip-finetune`: the fine-tuning configs the card declares have no files here."]
        return lines

