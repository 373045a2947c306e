"""``vlprobe build bla``: the BLA benchmark (Chen, Fernández, Pezzelle, EMNLP 2023) as a Hub
dataset folder, from the released annotation files and the Visual Genome images.

Configs ``active_passive`` (613 caption sets), ``coordination`` (654), ``relative_clause`` (672),
and ``all``: the three tasks pooled, each row once, read from the three configs' parquet (image bytes
stored once), tagged ``task=<config>`` so that per-task results come from one run. ``vlprobe
evaluate --dataset bla`` scores ``all`` by default, not the fine-tuning configs ``<task>_<setting>``
(the release's fine-tuning splits), which are scored only when named. Each benchmark row: one image,
two true captions, two false captions (distractors). Rows are streamed to parquet, one image at a time.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import datasets
from datasets import Features, List, Value

from .. import image_sources as imgs
from ..dataset_folder import ConfigDecl, card_metadata, publish_staged, staging_folder, write_split_rows
from . import AnnotationError, cards, read_json, upstream

NAME = "bla"
HELP = "BLA (EMNLP 2023): active-passive, coordination, relative clause, from the released annotations and VG images"

DEFAULT_OUT = Path("bla")
SPLIT = "test"
SOURCE = "visual_genome"


@dataclass(frozen=True)
class Task:
    config: str
    file: str
    count: int  # caption sets in the released file (EMNLP 2023); the card shows it beside the built count


TASKS = (
    Task("active_passive", "active_passive_captions.json", 613),
    Task("coordination", "coordination_captions.json", 654),
    Task("relative_clause", "relative_clause_captions.json", 672),
)
BY_CONFIG = {t.config: t for t in TASKS}
# The three tasks pooled, each row once (ids are ``<task>/<image_id>``, so unique across tasks): what
# ``vlprobe evaluate --dataset bla`` scores with its default ``--config all`` (a dataset without a
# config of that name would have every config scored, the fine-tuning ones included).
ALL = "all"

# The fine-tuning data of the release: finetune/<setting>/<task dir>/{train,valid,test}.json, one
# config per task and setting (``<task>_<setting>``) with splits train / validation / test.
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


FINETUNE = tuple(Finetune(t.config, s) for t in TASKS for s in SETTINGS)
MAIN_FILES = tuple(t.file for t in TASKS)
FINETUNE_FILES = tuple(f.file(sp) for f in FINETUNE for sp in FT_SPLITS)

_COMMON = {
    "id": Value("string"), "task": Value("string"), "image": datasets.Image(), "image_id": Value("string"),
    "true_captions": List(Value("string")), "false_captions": List(Value("string")),
    "index": Value("int32"), "group_index": Value("int32"),
}
# One schema for the three tasks, each task-specific column null in the other tasks' rows, so that
# ``all`` reads the three configs' parquet files as one table (as VALSE's ``all`` does).
_ONLY = {"active_passive": ("predicate", "caption_voices", "voice_order"),
         "coordination": ("quality_scores",), "relative_clause": ("quality_scores",)}
BENCH_FEATURES = Features({**_COMMON, "predicate": Value("string"), "caption_voices": List(Value("string")),
                           "voice_order": Value("string"), "quality_scores": List(Value("float64"))})
FEATURES = {c: BENCH_FEATURES for c in (ALL, *BY_CONFIG)}

FINETUNE_FEATURES = Features({
    "id": Value("string"), "task": Value("string"), "setting": Value("string"), "image": datasets.Image(),
    "image_id": Value("string"), "true_captions": List(Value("string")), "false_captions": List(Value("string")),
    "gold": List(List(Value("int8"))),
})

SPEC_YAML = """\
# How rows of this folder become vlprobe items (see vlprobe/spec.py): one image and four texts,
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


def normalise(task: Task, position: int, rec: dict[str, Any]) -> dict[str, Any]:
    where = f"{task.file} record {position}"
    try:
        image_id = str(rec["image_id"])
        groups = rec["caption_group"]
        if not isinstance(groups, list) or len(groups) != 1:
            raise AnnotationError(f"{where}: caption_group should hold exactly one group, got {len(groups)}")
        group = groups[0]
        trues = [group["True1"], group["True2"]]
        falses = [group["False1"], group["False2"]]
    except (KeyError, TypeError) as err:
        raise AnnotationError(f"{where}: missing or malformed field: {err!r}") from None
    if not all(isinstance(s, str) and s.strip() for s in trues + falses):
        raise AnnotationError(f"{where} (image {image_id}): the four captions must be non-empty strings")
    row = {
        "id": f"{task.config}/{image_id}", "task": task.config, "image_id": image_id,
        "true_captions": trues, "false_captions": falses,
        "index": rec.get("index"), "group_index": group.get("group_index"),
        **{c: None for cols in _ONLY.values() for c in cols},
    }
    if task.config == "active_passive":
        voices = [voice(s) for s in trues + falses]
        row.update(predicate=group.get("predicate"), caption_voices=voices,
                   voice_order=",".join(_ROLE[(i < 2, v)] for i, v in enumerate(voices)))
    else:
        scores = group.get("score")
        if not (isinstance(scores, list) and len(scores) == 4):
            raise AnnotationError(f"{where} (image {image_id}): score should be a list of 4 numbers, got {scores!r}")
        row["quality_scores"] = [float(x) for x in scores]
    return row


# (is a true caption, voice) -> the thesis' names: True/False Active/Passive
_ROLE = {(True, "active"): "TA", (True, "passive"): "TP", (False, "active"): "FA", (False, "passive"): "FP"}


def read_finetune(annotations: Path, ft: Finetune, split: str, benchmark: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
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
        trues, falses = main["true_captions"], main["false_captions"]
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
        rows.append({"id": main["id"], "task": ft.task, "setting": ft.setting, "image_id": str(image_id),
                     "true_captions": t, "false_captions": f, "gold": gold})
    return rows


def read_task(annotations: Path, task: Task) -> list[dict[str, Any]]:
    path = annotations / task.file
    data = read_json(path, "BLA", list, "a JSON list of caption sets",
                     "pass --annotations DIR, the released BLA_Benchmark/annotations folder")
    rows = [normalise(task, i, rec) for i, rec in enumerate(data)]
    ids = Counter(r["id"] for r in rows)
    dup = [i for i, n in ids.items() if n > 1]
    if dup:
        raise AnnotationError(f"{path}: image ids repeat, so ids would not be unique: {dup[:5]}")
    return rows


def config_decls(finetune: bool = True) -> list[ConfigDecl]:
    pooled = {SPLIT: [f"data/{t.config}/{SPLIT}-*.parquet" for t in TASKS]}
    decls = [ConfigDecl(ALL, BENCH_FEATURES, (SPLIT,), paths=pooled)]
    decls += [ConfigDecl(t.config, FEATURES[t.config], (SPLIT,), default=(t.config == "active_passive")) for t in TASKS]
    if finetune:
        decls += [ConfigDecl(f.config, FINETUNE_FEATURES, tuple(FT_SPLITS)) for f in FINETUNE]
    return decls


def card_yaml(finetune: bool = True) -> dict[str, Any]:
    return card_metadata(
        config_decls(finetune),
        language=["en"],
        license="other",
        license_name="bla-mixed",
        pretty_name="BLA (Basic Language Abilities)",
        task_categories=["image-to-text", "zero-shot-image-classification"],
        tags=["vision-and-language", "probing", "benchmark", "syntax", "vlprobe"],
        size_categories=["1K<n<10K"],
    )


# Rows per split of each fine-tuning config in the release (train / validation / test): the card shows
# them whatever a build holds; a build whose annotations give other counts says so.
_GOLDEN = {"active_passive": 41, "coordination": 36, "relative_clause": 25}
FINETUNE_COUNTS = {
    f.config: {"train": _GOLDEN[f.task] if f.setting == "finetune_train_golden" else 100, "validation": 200,
               "test": _GOLDEN[f.task] if f.setting == "finetune_test_golden" else 200}
    for f in FINETUNE
}


def card_values(voice_orders: Counter) -> dict[str, Any]:
    """What ``vlprobe/templates/bla_card.md`` is filled with: the same for every build (what a build
    holds goes to ``data/BUILD.md``, :func:`build_report`), so a build changes no committed card.
    ``voice_orders``: of the released active-passive rows (before any is left out)."""
    if set(voice_orders) == {"TA,TP,FA,FP"}:
        order_note = ("So in every row text 0 is TA, 1 is TP, 2 is FA and 3 is FP: TA vs FA is score column 0 vs 2, "
                      "TP vs FP column 1 vs 3, TA vs FP column 0 vs 3, TP vs FA column 1 vs 2.")
    else:
        order_note = ("The order is not the same in every row: read each row's `caption_voices`, or group on the "
                      "`voice_order=` tag, before comparing columns.")
    return dict(
        tasks=[{"config": t.config, "file": t.file, "released": f"{t.count:,}"} for t in TASKS],
        all_released=f"{sum(t.count for t in TASKS):,}",
        finetune=[{"config": f.config, "setting": f.setting, **{sp: f"{n:,}" for sp, n in FINETUNE_COUNTS[f.config].items()}}
                  for f in FINETUNE],
        orders=", ".join(f"`{o}` in {n:,} rows" for o, n in voice_orders.most_common()) or "none",
        order_note=order_note,
        n_files=len(upstream.BLA.files), annotations_url=upstream.BLA.default_url, upstream_folder=upstream.BLA.folder,
        upstream_repo=upstream.BLA.repo, upstream_commit=upstream.BLA.commit, url_env=upstream.BLA.url_env,
    )


def build_report(counts: dict[str, int], skipped: dict[str, list[str]],
                 finetune_counts: dict[str, dict[str, int]]) -> list[str]:
    """``data/BUILD.md``: what this build holds (rows per config and split, the rows left out and why)."""
    lines = [f"Benchmark rows in this build: **{sum(counts.values()):,}** (with every image: "
             f"{sum(t.count for t in TASKS):,}).", "", "| config | rows | with every image |", "|---|---:|---:|"]
    lines += [f"| `{t.config}` | {counts.get(t.config, 0):,} | {t.count:,} |" for t in TASKS]
    if finetune_counts:
        lines += ["", "| fine-tuning config | train | validation | test |", "|---|---:|---:|---:|"]
        lines += [f"| `{c}` | " + " | ".join(f"{n.get(sp, 0):,}" for sp in FT_SPLITS) + " |"
                  for c, n in finetune_counts.items()]
    else:
        lines += ["", "Built with `--skip-finetune`: the fine-tuning configs the card declares have no files here."]
    if skipped:
        lines += ["", "## Rows left out", "",
                  "Built with `--skip-missing-images`: these rows are **not** here, because their image file was missing "
                  "(the fine-tuning rows of the same images went too).", ""]
        for c, names in sorted(skipped.items()):
            shown = ", ".join(sorted(names)[:5]) + (f" (+{len(names) - 5} more)" if len(names) > 5 else "")
            lines.append(f"- `{c}`: {len(names)} row(s) without their Visual Genome image: {shown}")
    return lines


def add_arguments(parser: argparse.ArgumentParser) -> None:
    upstream.add_arguments(
        parser, upstream.BLA, what="the released annotations: the three *_captions.json files and finetune/",
        sources=(SOURCE,), images_help="images root: a folder holding VG_100K/, VG_100K_2/, images/ or their zips",
        download_help="download Visual Genome images missing locally, into --cache-dir", default_out=DEFAULT_OUT)
    parser.add_argument("--skip-finetune", action="store_true",
                        help="build only the benchmark configs (the three tasks and all), not the fine-tuning configs")


def build(args: argparse.Namespace) -> Path:
    start = time.perf_counter()
    out = Path(args.out)
    finetune = not getattr(args, "skip_finetune", False)
    pinned = upstream.BLA if finetune else upstream.BLA.select(MAIN_FILES)
    annotations = upstream.annotation_folder(
        pinned, args.annotations, cache_dir=args.cache_dir, base_url=getattr(args, "annotations_url", None),
        retries=args.retries, log=lambda m: print(m, file=sys.stderr))
    rows_by_task = {t.config: read_task(annotations, t) for t in TASKS}
    # of the released rows, before any is left out for a missing image: the card is the same for every build
    orders = Counter(r["voice_order"] for r in rows_by_task["active_passive"])
    # fine-tuning splits: {config: {split: rows}}; every item is a benchmark item
    ft_rows: dict[str, dict[str, list[dict[str, Any]]]] = {}
    if finetune:
        for ft in FINETUNE:
            bench = {r["image_id"]: r for r in rows_by_task[ft.task]}
            ft_rows[ft.config] = {sp: read_finetune(annotations, ft, sp, bench) for sp in FT_SPLITS}
    resolvers = imgs.make_resolvers(
        (SOURCE,), images_root=args.images, locations=imgs.parse_locations(args.image_dir, (SOURCE,)),
        download=args.download, cache_dir=args.cache_dir, retries=args.retries,
    )
    resolver = resolvers[SOURCE]
    wanted = {SOURCE: [f"{r['image_id']}.jpg" for rows in rows_by_task.values() for r in rows]}
    report = imgs.check_sources(wanted, resolvers, workers=args.workers)
    skipped: dict[str, list[str]] = {}
    if report:
        if not args.skip_missing_images:
            raise imgs.MissingImagesError(
                report, "Pass the Visual Genome folders or zips (--images ROOT, --image-dir visual_genome=PATH), "
                        "--download, or --skip-missing-images to build without these rows (the card will list them).")
        missing = set(report.missing[SOURCE])
        for config, rows in rows_by_task.items():
            gone = [r for r in rows if f"{r['image_id']}.jpg" in missing]
            if gone:
                skipped[config] = [f"{r['image_id']}.jpg" for r in gone]
                rows_by_task[config] = [r for r in rows if f"{r['image_id']}.jpg" not in missing]
        for config, splits in ft_rows.items():  # the same images: those rows go too
            for sp, rows in splits.items():
                splits[sp] = [r for r in rows if f"{r['image_id']}.jpg" not in missing]
        print(f"skipping {report.total} missing image file(s):\n{report.summary()}", file=sys.stderr)
        if not any(rows_by_task.values()):  # nothing to build: an empty dataset is not a build
            raise imgs.MissingImagesError(
                report, "No row has its image, so there is nothing to build (--skip-missing-images leaves out only "
                        "some rows); pass the Visual Genome folders or zips (--images ROOT, --image-dir "
                        "visual_genome=PATH) or --download.")

    def stream(rows: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        names = [f"{r['image_id']}.jpg" for r in rows]
        checked = imgs.read_checked_many(((resolver, n) for n in names), workers=args.read_workers)
        for r, name, data in zip(rows, names, checked):
            yield {**r, "image": {"bytes": data, "path": name}}

    counts = {}
    stage = staging_folder(out)  # a failed build leaves the folder as it was
    try:
        for task in TASKS:
            _, counts[task.config] = write_split_rows(stage, task.config, SPLIT, stream(rows_by_task[task.config]),
                                                      FEATURES[task.config])
        ft_counts: dict[str, dict[str, int]] = {}
        for config, splits in ft_rows.items():
            ft_counts[config] = {}
            for sp, rows in splits.items():
                _, ft_counts[config][sp] = write_split_rows(stage, config, sp, stream(rows), FINETUNE_FEATURES)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    publish_staged(stage, out)
    for task in TASKS:
        if counts[task.config] != task.count:
            print(f"bla: note: {task.config} has {counts[task.config]} rows, the 2023 release {task.count}",
                  file=sys.stderr)
    if not finetune:  # a folder built before with them: they go, so the folder holds this build only
        for ft in FINETUNE:
            shutil.rmtree(out / "data" / ft.config, ignore_errors=True)
    for config, expected in FINETUNE_COUNTS.items():
        if not skipped and config in ft_counts and ft_counts[config] != expected:
            print(f"bla: note: {config} has {ft_counts[config]} rows, the release {expected}", file=sys.stderr)
    cards.write(out, "bla_card.md", card_yaml(), **card_values(orders))
    cards.write_build_report(out, "BLA: this build", build_report(counts, skipped, ft_counts))
    (out / "vlprobe.yaml").write_text(SPEC_YAML, encoding="utf-8")
    n_ft = sum(n for splits in ft_counts.values() for n in splits.values())
    print(f"bla: {sum(counts.values())} benchmark rows" + (f" and {n_ft} fine-tuning rows in {len(ft_counts)} configs"
          if ft_counts else "") + f", built in {time.perf_counter() - start:.1f}s", file=sys.stderr)
    print("note: datasets caches a local folder by name and card; if you loaded this folder before, load it once "
          "with download_mode='force_redownload', verification_mode='no_checks' to see this build", file=sys.stderr)
    return out
