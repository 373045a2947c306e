"""``vlprobe build sugar_crepe``: SugarCREPE (Hsieh et al., NeurIPS 2023 Datasets and Benchmarks) as a
Hub dataset folder, from the 7 annotation files of github.com/RAIVNLab/sugar-crepe at a pinned commit
(verified by git blob hash, see :mod:`vlprobe.builders.upstream`) and the COCO val2017 images.

One config per subset (its own parquet) and ``all`` (the default; it lists the 7 subsets' parquet
files, so image bytes are stored once per subset). Each row is 1 image x [caption, negative_caption],
the caption true: gold ``[[1, 0]]``.

The helpers below the SugarCREPE part (:func:`build_folder`, with :func:`upstream.add_arguments`) are the
upstream-annotations-plus-original-images build flow that VALSE's builder follows; SugarCREPE++
and COLA use them too.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import datasets
from datasets import Features, Value

from .. import image_sources as imgs
from ..dataset_folder import ConfigDecl, card_metadata, publish_staged, staging_folder, write_split_rows
from . import AnnotationError, cards, read_json, upstream

NAME = "sugar_crepe"
HELP = "SugarCREPE (NeurIPS 2023): 7 hard-negative subsets on COCO val2017, from the pinned upstream files"

DEFAULT_OUT = Path("sugar_crepe")
SPLIT = "test"
SOURCE = "coco2017_val"


@dataclass(frozen=True)
class Subset:
    config: str
    category: str  # the paper's grouping: add / replace / swap
    title: str
    count: int  # records in the pinned file (checked by the tests against the real files)
    example: str


# The file of each subset is <config>.json; counts are those of the pinned files (the paper's Table 1
# and README give the same 7,511 in all).
SUBSETS: tuple[Subset, ...] = (
    Subset("add_obj", "add", "ADD-OBJ: an object is added", 2062,
           "*A cat and dog napping together on the couch.* / *A cat and a dog napping together under a blanket on the couch.*"),
    Subset("add_att", "add", "ADD-ATT: an attribute is added", 692,
           "*A drawing of a young woman with many facial piercings.* / *A drawing of a tattooed young woman ...*"),
    Subset("replace_obj", "replace", "REPLACE-OBJ: an object is replaced", 1652,
           "*Several toy animals - a bull, giraffe, deer and parakeet.* / *... giraffe, snake and parakeet.*"),
    Subset("replace_att", "replace", "REPLACE-ATT: an attribute is replaced", 788,
           "*A tan toilet and sink combination in a small room.* / *A white toilet and sink ...*"),
    Subset("replace_rel", "replace", "REPLACE-REL: a relation is replaced", 1406,
           "*A white with red striped bus drives down the slow lane ...* / *... bus is stuck in the slow lane ...*"),
    Subset("swap_obj", "swap", "SWAP-OBJ: two objects are swapped", 245,
           "*A cat sits on its hind legs, and swats at the plant.* / *A cat sits on the plant, and swats at its hind legs.*"),
    Subset("swap_att", "swap", "SWAP-ATT: two attributes are swapped", 666,
           "*Blue bathroom with two white towels hanging by the shower.* / *White bathroom with two blue towels ...*"),
)
BY_CONFIG = {s.config: s for s in SUBSETS}
CATEGORIES: dict[str, tuple[str, ...]] = {}
for _s in SUBSETS:
    CATEGORIES[_s.category] = CATEGORIES.get(_s.category, ()) + (_s.config,)
TOTAL = sum(s.count for s in SUBSETS)

_f = Value
FEATURES = Features({
    "id": _f("string"), "key": _f("string"), "subset": _f("string"), "category": _f("string"),
    "image": datasets.Image(), "caption": _f("string"), "negative_caption": _f("string"), "filename": _f("string"),
})
_FIELDS = {"filename", "caption", "negative_caption"}

SPEC_YAML = """\
# How rows of this folder become vlprobe items (see vlprobe/spec.py): one COCO image, the caption and
# its hard negative; the caption is the gold text. SugarCREPE's authors count a tie as wrong
# (main_eval.py: pos > neg), which is vlprobe's default tie policy (strict).
description: SugarCREPE (Hsieh et al., NeurIPS 2023), 1 image x [caption, negative_caption], gold [[1, 0]].
id: id
images: [image]
texts: [caption, negative_caption]
gold: [[1, 0]]
tags: [subset, category]
"""


def _str_field(rec: Any, field: str, where: str) -> str:
    value = rec.get(field) if isinstance(rec, dict) else None
    if not isinstance(value, str) or not value.strip():
        raise AnnotationError(f"{where}: field {field!r} is missing or not a non-empty string")
    return value


def coco_file(rec: Any, where: str) -> str:
    name = _str_field(rec, "filename", where)
    if not imgs.SOURCES[SOURCE].matches(name):
        raise AnnotationError(f"{where}: filename {name!r} is not a COCO val2017 file name (12 digits + .jpg)")
    return name


def read_subset(annotations: Path, subset: Subset) -> list[dict[str, Any]]:
    """One annotation file -> rows (without image bytes), in the file's key order."""
    path = annotations / f"{subset.config}.json"
    data = read_json(path, "SugarCREPE", dict, "a JSON object mapping keys to records",
                     f"pass --annotations DIR, the data/ folder of github.com/{upstream.SUGAR_CREPE.repo}")
    rows = []
    for key, rec in data.items():
        where = f"{path.name} record {key!r}"
        if not isinstance(rec, dict):
            raise AnnotationError(f"{where}: expected a JSON object")
        unknown = set(rec) - _FIELDS
        if unknown:
            raise AnnotationError(f"{where}: unknown field(s) {sorted(unknown)}; the builder would drop them")
        rows.append({
            "id": f"{subset.config}/{key}", "key": str(key), "subset": subset.config, "category": subset.category,
            "caption": _str_field(rec, "caption", where), "negative_caption": _str_field(rec, "negative_caption", where),
            "filename": coco_file(rec, where),
            "_images": (("image", SOURCE, rec["filename"]),),
        })
    return rows


# ---- configs and card ---------------------------------------------------------------------------
def config_decls() -> list[ConfigDecl]:
    all_files = {SPLIT: [f"data/{s.config}/{SPLIT}-*.parquet" for s in SUBSETS]}
    return ([ConfigDecl("all", FEATURES, (SPLIT,), default=True, paths=all_files)]
            + [ConfigDecl(s.config, FEATURES, (SPLIT,)) for s in SUBSETS])


def card_yaml() -> dict[str, Any]:
    return card_metadata(
        config_decls(), language=["en"], license="other", license_name="sugar-crepe-mit-coco",
        license_link=f"https://github.com/{upstream.SUGAR_CREPE.repo}/blob/{upstream.SUGAR_CREPE.commit}/LICENSE",
        pretty_name="SugarCREPE", task_categories=["image-to-text", "zero-shot-image-classification"],
        tags=["vision-and-language", "compositionality", "hard-negatives", "benchmark", "vlprobe"],
        size_categories=["1K<n<10K"],
    )


def upstream_values(up: upstream.Upstream) -> dict[str, Any]:
    return dict(annotations_url=up.default_url, upstream_folder=up.folder, upstream_repo=up.repo,
                upstream_commit=up.commit, url_env=up.url_env,
                files=[{"path": f.path, "blob": f.blob, "size": f"{f.size:,}"} for f in up.files])


def card_values() -> dict[str, Any]:
    rows = [{"config": s.config, "category": s.category, "title": s.title, "count": f"{s.count:,}",
             "example": s.example} for s in SUBSETS]
    groups = [{"name": c, "members": ", ".join(f"`{m}`" for m in ms),
               "count": f"{sum(BY_CONFIG[m].count for m in ms):,}"} for c, ms in CATEGORIES.items()]
    return dict(rows=rows, groups=groups, total=f"{TOTAL:,}", **upstream_values(upstream.SUGAR_CREPE))


def write_card(out: Path) -> Path:
    return cards.write(out, "sugar_crepe_card.md", card_yaml(), **card_values())


# ---- the shared build flow (SugarCREPE, SugarCREPE++, COLA) --------------------------------------
def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def annotations_of(args: argparse.Namespace, up: upstream.Upstream) -> Path:
    return upstream.annotation_folder(up, args.annotations, cache_dir=args.cache_dir,
                                      base_url=getattr(args, "annotations_url", None), retries=args.retries, log=_log)


def build_folder(
    args: argparse.Namespace,
    name: str,
    rows_by_config: Mapping[str, list[dict[str, Any]]],
    sources: Sequence[str],
    features: Features,
    write_static: Callable[[Path], None],
    report: Callable[[dict[str, int], dict[str, list[str]]], list[str]],
    title: str,
    convert: Callable[[dict[str, Any], str, bytes], bytes] | None = None,
) -> Path:
    """Check every image, then stream each config's rows (``_images``: (column, source, file) per
    image of the row) to parquet in a staging folder and move it in; then the card, ``vlprobe.yaml``
    (``write_static``) and ``data/BUILD.md`` (``report(counts, skipped)``). Missing images stop the
    build with a report per source, unless ``--skip-missing-images`` (then the rows are left out and
    listed); a build left with no rows is refused. A failed build leaves the folder as it was.
    ``convert(row, column, data)``, when given, returns the bytes to store for one image of a row
    (CREPE stores the region its authors crop out of the Visual Genome image)."""
    start = time.perf_counter()
    out = Path(args.out)
    ids = [r["id"] for rows in rows_by_config.values() for r in rows]
    if len(set(ids)) != len(ids):
        raise AnnotationError(f"{name}: duplicate row ids across the annotation files")
    resolvers = imgs.make_resolvers(sources, images_root=args.images,
                                    locations=imgs.parse_locations(args.image_dir, sources),
                                    download=args.download, cache_dir=args.cache_dir, retries=args.retries)
    wanted: dict[str, list[str]] = {}
    for rows in rows_by_config.values():
        for r in rows:
            for _, source, file in r["_images"]:
                wanted.setdefault(source, []).append(file)
    missing_report = imgs.check_sources(wanted, resolvers, workers=args.workers)
    rows_by_config = dict(rows_by_config)
    skipped: dict[str, list[str]] = {}
    if missing_report:
        if not args.skip_missing_images:
            raise imgs.MissingImagesError(
                missing_report, "Pass the image folders or zips (--images ROOT, --image-dir SOURCE=PATH), --download, "
                                "or --skip-missing-images to build without these rows (data/BUILD.md will list them).")
        missing = {(s, n) for s, names in missing_report.missing.items() for n in names}
        for config, rows in rows_by_config.items():
            kept = []
            for r in rows:
                gone = [f for _, s, f in r["_images"] if (s, f) in missing]
                if gone:
                    skipped.setdefault(config, []).append(f"{r['id']} ({', '.join(gone)})")
                else:
                    kept.append(r)
            rows_by_config[config] = kept
        _log(f"skipping {missing_report.total} missing image file(s):\n" + missing_report.summary())
        if not any(rows_by_config.values()):
            raise imgs.MissingImagesError(
                missing_report, "No row has its images, so there is nothing to build (--skip-missing-images leaves "
                                "out only some rows); pass the image folders or zips (--images ROOT, --image-dir "
                                "SOURCE=PATH) or --download.")
    _log(f"{name}: annotations read and images checked in {time.perf_counter() - start:.1f}s")

    def stream(rows: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        requests = ((resolvers[s], f) for r in rows for _, s, f in r["_images"])
        data = imgs.read_checked_many(requests, workers=args.read_workers)
        for r in rows:
            row = {k: v for k, v in r.items() if k != "_images"}
            for column, _, file in r["_images"]:
                raw = next(data)
                row[column] = {"bytes": convert(r, column, raw) if convert else raw, "path": file}
            yield row

    counts: dict[str, int] = {}
    stage = staging_folder(out)
    try:
        for config, rows in rows_by_config.items():
            _, counts[config] = write_split_rows(stage, config, SPLIT, stream(rows), features)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    publish_staged(stage, out)
    write_static(out)
    cards.write_build_report(out, title, report(counts, skipped))
    _log(f"{name}: {sum(counts.values())} rows, built in {time.perf_counter() - start:.1f}s")
    return out


def count_report(counts: dict[str, int], skipped: dict[str, list[str]], expected: Mapping[str, int]) -> list[str]:
    """``data/BUILD.md``'s lines: rows per config against the upstream file's, and the rows left out."""
    lines = [f"Rows in this build: **{sum(counts.values()):,}** (a build with every image: {sum(expected.values()):,}).",
             "", "| config | rows | with every image |", "|---|---:|---:|"]
    lines += [f"| `{c}` | {counts.get(c, 0):,} | {n:,} |" for c, n in expected.items()]
    if skipped:
        lines += ["", "## Rows left out", "",
                  "Built with `--skip-missing-images`: these rows are **not** here, because an image file was missing.", ""]
        for config, ids in sorted(skipped.items()):
            shown = ", ".join(ids[:5]) + (f" (+{len(ids) - 5} more)" if len(ids) > 5 else "")
            lines.append(f"- `{config}`: {len(ids)} row(s): {shown}")
    return lines


# ---- build ----------------------------------------------------------------------------------------
# Where the COCO val2017 images come from (SugarCREPE++ draws on the same images).
COCO_IMAGES_HELP = {
    "images_help": "images root: a folder holding COCO's val2017/ (or val2017.zip); a flat folder of the files: "
                   "--image-dir coco2017_val=FOLDER",
    "download_help": "download the COCO val2017 images missing locally into --cache-dir, file by file from "
                     "images.cocodataset.org",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    upstream.add_arguments(parser, upstream.SUGAR_CREPE, what="the 7 SugarCREPE JSON files", sources=(SOURCE,),
                           default_out=DEFAULT_OUT, **COCO_IMAGES_HELP)


def build(args: argparse.Namespace) -> Path:
    annotations = annotations_of(args, upstream.SUGAR_CREPE)
    rows = {s.config: read_subset(annotations, s) for s in SUBSETS}

    def static(out: Path) -> None:
        write_card(out)
        (out / "vlprobe.yaml").write_text(SPEC_YAML, encoding="utf-8")

    return build_folder(args, NAME, rows, (SOURCE,), FEATURES, static,
                        lambda counts, skipped: count_report(counts, skipped, {s.config: s.count for s in SUBSETS}),
                        "SugarCREPE: this build")
