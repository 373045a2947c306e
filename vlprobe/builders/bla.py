"""``vlprobe build bla``: the BLA benchmark (Chen, Fernández, Pezzelle, EMNLP 2023) as a Hub
dataset folder, from the released annotation files and the Visual Genome images.

Configs ``active_passive`` (613 caption sets), ``coordination`` (654), ``relative_clause`` (672).
Each row: one image, two true captions, two false captions (distractors). Rows are streamed to
parquet, one image at a time.
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
from ..dataset_folder import ConfigDecl, card_metadata, publish_staged, staging_folder, write_card, write_split_rows
from . import AnnotationError, read_json

NAME = "bla"
HELP = "BLA (EMNLP 2023): active-passive, coordination, relative clause, from the released annotations and VG images"

REPO = Path(__file__).resolve().parents[2]
DEFAULT_ANNOTATIONS = REPO.parent / "shared" / "data" / "bla" / "released_2023" / "annotations"
DEFAULT_OUT = REPO / "bla"
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

_COMMON = {
    "id": Value("string"), "task": Value("string"), "image": datasets.Image(), "image_id": Value("string"),
    "true_captions": List(Value("string")), "false_captions": List(Value("string")),
    "index": Value("int32"), "group_index": Value("int32"),
}
FEATURES = {
    "active_passive": Features({**_COMMON, "predicate": Value("string"), "caption_voices": List(Value("string")),
                                "voice_order": Value("string")}),
    "coordination": Features({**_COMMON, "quality_scores": List(Value("float64"))}),
    "relative_clause": Features({**_COMMON, "quality_scores": List(Value("float64"))}),
}

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
  # text order is given by voice_order (TA, TP, FA, FP in the released data); predicate for per-verb tables
  active_passive: {tags: [task, predicate, voice_order]}
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


def config_decls() -> list[ConfigDecl]:
    return [ConfigDecl(t.config, FEATURES[t.config], (SPLIT,), default=(t.config == "active_passive")) for t in TASKS]


def card_yaml() -> dict[str, Any]:
    return card_metadata(
        config_decls(),
        language=["en"],
        license="other",
        license_name="bla-mixed",
        pretty_name="BLA (Basic Language Abilities)",
        task_categories=["image-to-text", "zero-shot-image-classification"],
        tags=["vision-and-language", "probing", "benchmark", "syntax", "vlprobe"],
        size_categories=["1K<n<10K"],
    )


def card_body(counts: dict[str, int], voice_orders: Counter, skipped: dict[str, list[str]]) -> str:
    rows = "\n".join(f"| `{t.config}` | `{t.file}` | {t.count:,} | {counts.get(t.config, 0):,} |" for t in TASKS)
    orders = ", ".join(f"`{o}` in {n:,} rows" for o, n in voice_orders.most_common()) or "none built"
    if set(voice_orders) == {"TA,TP,FA,FP"}:
        order_note = ("So in every row text 0 is TA, 1 is TP, 2 is FA and 3 is FP: TA vs FA is score column 0 vs 2, "
                      "TP vs FP column 1 vs 3, TA vs FP column 0 vs 3, TP vs FA column 1 vs 2.")
    else:
        order_note = ("The order is not the same in every row: read each row's `caption_voices`, or group on the "
                      "`voice_order=` tag, before comparing columns.")
    if skipped:
        lines = []
        for config, names in sorted(skipped.items()):
            shown = ", ".join(sorted(names)[:5]) + (f" (+{len(names) - 5} more)" if len(names) > 5 else "")
            lines.append(f"- `{config}`: {len(names)} row(s) without their Visual Genome image: {shown}")
        skipped_text = ("\n\n## Rows left out of this build\n\nThis folder was built with `--skip-missing-images`: "
                        "the rows below are **not** in it, so the counts above are below the release's.\n\n"
                        + "\n".join(lines))
    else:
        skipped_text = ""
    return f"""
# BLA: Basic Language Abilities of pre-trained multimodal models

BLA (Chen, Fernández and Pezzelle, EMNLP 2023; first built in Xinyi Chen's MSc thesis, UvA 2022)
tests whether vision-and-language models understand three basic, frequent English constructions.
Each caption set is one Visual Genome image with **two true captions** and **two false captions**
(distractors) that use the same words (active-passive: the same nouns and verb) in a way that is wrong
for the image. Every noun mentioned is in the image, so object recognition alone does not solve it.

This folder is built from the released annotation files (github.com/shin-ee-chen/BLA,
`BLA_Benchmark/annotations/`, MIT licence) and the Visual Genome images, by `vlprobe build bla`. It
holds no annotation or image files of its own until it is built.

```python
from datasets import load_dataset
ds = load_dataset("bla", "coordination", split="test")    # or a Hub id once published
ds[0]["true_captions"], ds[0]["false_captions"], ds[0]["image"]
```

## Configs and counts

| config | annotation file | caption sets released | rows in this build |
|---|---|---:|---:|
{rows}

These are the EMNLP 2023 release's counts. The MSc thesis version had 613 / 800 / 789 caption sets;
for the release, coordination and relative clause were partly rebuilt (other images, other distractors).
`active_passive` is the default config.

## What each task tests

- **Active-passive** (`active_passive`): who does what to whom, across voices. The true captions are an
  active sentence and its passive (same meaning, different form); the false ones swap agent and patient.
  *TA: the woman feeds the man / TP: the man is fed by the woman / FA: the man feeds the woman / FP: the
  woman is fed by the man* (thesis, Figure 4.1). Only human-human interactions with transitive verbs (43 verbs; `predicate`),
  so that the swapped sentence is not implausible on its own.
- **Coordination** (`coordination`): "who has which attributes" when two verb phrases are joined by
  *and*. True: *the man has a brown tie and wears a yellow shirt / the woman wears a white top and wears
  a black skirt*; false: *the man has a brown tie and wears a white top / the woman wears a yellow shirt
  and wears a black skirt* (image 115 of the release): one conjunct is swapped between the two people.
- **Relative clause** (`relative_clause`): the same attribute matching inside a relative clause.
  True: *the person who has a brown tie wears a yellow shirt / the person who wears a white top wears a
  black skirt*; false: *the person who has a brown tie wears a black skirt / the person who wears a white
  top wears a yellow shirt* (image 115 of the release): the main predicates are swapped between the two
  people. (The thesis version swapped a relative clause with a main predicate instead.)

## How the sentences were made

From Visual Genome relationships and attributes: person entities found with WordNet (`noun.person`),
items smaller than a size threshold discarded (1% of the image for active-passive; 0.1% for people and
0.05% for attributes in the other tasks), attributes of two people made distinct with word2vec and
Sentence-BERT similarity, sentences generated from templates, and caption sets with any sentence of
GRUEN linguistic quality below 0.7 discarded; one caption set per image is kept.

## Columns

| column | type | meaning |
|---|---|---|
| `id` | string | `<config>/<image_id>` (one caption set per image in each task) |
| `task` | string | the config name |
| `image` | image | the Visual Genome image |
| `image_id` | string | the Visual Genome image id (a string in active-passive and an int in the other files; normalised to a string) |
| `true_captions` | list of 2 strings | `True1`, `True2` |
| `false_captions` | list of 2 strings | `False1`, `False2` |
| `index`, `group_index` | int32 | the record's `index` and its caption group's `group_index` (candidate numbering of the release) |
| `predicate` | string | active-passive only: the verb (`watches`, `looks at`, `holds`, ...) |
| `caption_voices` | list of 4 strings | active-passive only: `active`/`passive` for `[True1, True2, False1, False2]` |
| `voice_order` | string | active-passive only: the same as the thesis' roles, e.g. `TA,TP,FA,FP` |
| `quality_scores` | list of 4 float64 | coordination and relative clause: the release's `score`, one per sentence in the order `[True1, True2, False1, False2]`, all >= 0.70; by all evidence the GRUEN quality scores of the 0.7 filter (the release does not name them) |

Captions are kept as released (lower-case, no final period; 4 coordination and 4 relative-clause
sentences contain a double space).

## Items for vlprobe, and the active-passive pair analyses

`vlprobe.yaml` makes each row one item: 1 image x 4 texts, `true_captions` then `false_captions`
(`[True1, True2, False1, False2]`), gold `[[1, 1, 0, 0]]`, tags `task=...` (active-passive also
`predicate=...` and `voice_order=...`). From the 1 x 4 score matrix the metric gives sentence accuracy,
set accuracy (both true captions above both false ones) and set error (both false above both true).

The thesis' active-passive analyses compare sentences by voice: TA vs FA ("all active"), TP vs FP
("all passive"), and across voices. The metric only sees scores, gold and tags, so the voice of each of
the four texts is in the rows: `caption_voices` (detected at build time from the sentence form "... is/are
<verb> by ...") and `voice_order`. In this build the orders are: {orders}. {order_note}

## Images and licences

The annotations are MIT-licensed (© 2023 Xinyi Chen). The images are Visual Genome images: Visual
Genome is released under CC BY 4.0, and its images are Flickr photos (from YFCC100M and COCO) whose
owners' terms still apply. `license: other` stands for the combination; check it before you publish a
built folder.

## How to build

```bash
vlprobe build bla --annotations PATH/TO/BLA_Benchmark/annotations --images PATH/TO/IMAGES
# options: --image-dir visual_genome=FOLDER_OR_ZIP (repeatable), --download [--cache-dir DIR],
#          --skip-missing-images, --out DIR
```

`datasets` caches a local folder by its name and card, not by the parquet's content: after
rebuilding a folder you loaded before (other options, other images), load it once with
`load_dataset(folder, config, download_mode="force_redownload", verification_mode="no_checks")`,
or it serves the old rows.

`--annotations` is the folder with the three `*_captions.json` files (default
`../shared/data/bla/released_2023/annotations` next to the repository). `--images` is a folder
holding Visual Genome's `VG_100K/` and `VG_100K_2/` (or their zips `images.zip`, `images2.zip`), or BLA's
own `images/` folder (`<image_id>.jpg`, in `BLA_benchmark.zip`); zips are read in place. `--download`
fetches missing images from `cs.stanford.edu/people/rak248/VG_100K{{,_2}}/<id>.jpg` into a cache, with
retries. Before writing anything the build checks every image and stops with a report of the missing
files (how many, the first names, where it looked), unless `--skip-missing-images` is given, in which
case this card lists what was left out. An image that does not decode stops the build with its file name.
{skipped_text}

## Citation

```bibtex
@inproceedings{{chen-etal-2023-bla,
  title = "The {{BLA}} Benchmark: Investigating Basic Language Abilities of Pre-Trained Multimodal Models",
  author = "Chen, Xinyi and Fern{{\\'a}}ndez, Raquel and Pezzelle, Sandro",
  booktitle = "Proceedings of the 2023 Conference on Empirical Methods in Natural Language Processing",
  year = "2023",
  url = "https://aclanthology.org/2023.emnlp-main.356",
}}
```
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--annotations", type=Path, default=DEFAULT_ANNOTATIONS,
                        help="folder with the three BLA *_captions.json files (default: %(default)s)")
    parser.add_argument("--images", type=Path, default=None,
                        help="images root: a folder holding VG_100K/, VG_100K_2/, images/ or their zips")
    parser.add_argument("--image-dir", action="append", default=[], metavar="SOURCE=PATH",
                        help=f"a folder or zip of Visual Genome images (repeatable); source: {SOURCE}")
    parser.add_argument("--download", action="store_true",
                        help="download Visual Genome images missing locally, into --cache-dir")
    parser.add_argument("--cache-dir", type=Path, default=None, help=f"download cache (default {imgs.DEFAULT_CACHE})")
    parser.add_argument("--retries", type=int, default=3, help="download attempts per URL (default: 3)")
    parser.add_argument("--workers", type=int, default=8, help="parallel downloads (default: 8)")
    parser.add_argument("--read-workers", type=int, default=2,
                        help="threads reading and checking images (default: 2)")
    parser.add_argument("--skip-missing-images", action="store_true",
                        help="leave out rows whose image is missing (the card lists them) instead of stopping")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="dataset folder to write (default: %(default)s)")


def build(args: argparse.Namespace) -> Path:
    start = time.perf_counter()
    out = Path(args.out)
    rows_by_task = {t.config: read_task(Path(args.annotations), t) for t in TASKS}
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
        print(f"skipping {report.total} missing image file(s):\n{report.summary()}", file=sys.stderr)

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
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    publish_staged(stage, out)
    for task in TASKS:
        if counts[task.config] != task.count:
            print(f"bla: note: {task.config} has {counts[task.config]} rows, the 2023 release {task.count}",
                  file=sys.stderr)
    orders = Counter(r["voice_order"] for r in rows_by_task["active_passive"])
    write_card(out, card_yaml(), card_body(counts, orders, skipped))
    (out / "vlprobe.yaml").write_text(SPEC_YAML, encoding="utf-8")
    print(f"bla: {sum(counts.values())} rows, built in {time.perf_counter() - start:.1f}s", file=sys.stderr)
    print("note: datasets caches a local folder by name and card; if you loaded this folder before, load it once "
          "with download_mode='force_redownload', verification_mode='no_checks' to see this build", file=sys.stderr)
    return out
