"""``vlprobe build crepe``: CREPE (Ma, Hong, Gul, Gandhi, Gao, Krishna; 2023) as a Hub dataset
folder, from ``data/syst_hard_negatives.zip`` and ``data/prod_hard_negatives.zip`` of
github.com/RAIVNLab/CREPE at a pinned commit and the Visual Genome images.

Each zip holds CSV files; the authors' evaluation code (``crepe_eval_utils.BaseCsvDataset``,
``crepe_compo_eval_open_clip.py``, ``crepe_prod_eval_*.py``) reads, per row, ``image_id`` (a Visual
Genome image), the region ``x, y, width, height`` it crops out of that image, the true ``caption`` and
a Python-literal list of hard negatives (``hard_negs`` for productivity; ``valid_hard_negs_atom``,
``valid_hard_negs_comp`` or ``valid_hard_negs_combined`` for systematicity), and ranks ``[caption] + negatives`` for the cropped
region: recall@1 is the share of rows whose caption ranks first. Here each row is 1 image (the
cropped region, stored as PNG) x ``[caption, *negatives]`` with gold ``[[1, 0, ..., 0]]`` (a ``gold``
column, since k may vary); vlprobe's ``text`` (= ``set_acc`` on these items) is CREPE's recall@1.

Configs: systematicity ``syst_<pretraining>_<seen|unseen>_<atom|comp|combined>`` (18: one CSV per
pretraining set and compound split, one config per negative type; ``combined`` is atom + comp where a
CSV has no column of its own), productivity ``prod_<atom|swap|negate>_<4..12>`` (27), ``prod_<type>`` (a
type's 9 complexities), ``productivity`` (all 27, the default) and ``all`` (all 45).

The two zips are not pinned by hash yet (vlprobe has had no copy of them): a build computes their git
blob hashes, writes them to ``data/BUILD.md`` and warns once (:func:`upstream.warn_unpinned`). The pins,
the tie rule and the names of the metrics are CREPE's benchmark module's (:mod:`vlprobe.benchmarks.crepe`);
the build runs on the shared flow (:mod:`vlprobe.builders.flow`).
"""

from __future__ import annotations

import argparse
import ast
import csv
import io
import math
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import datasets
from datasets import Features, Value

from ..benchmarks import crepe as facts
from ..dataset_folder import ConfigDecl, card_metadata
from . import AnnotationError, cards
from .flow import SPLIT, Annotations, Plan, UpstreamBuilder, upstream_values

SOURCE = "visual_genome"
SYST_ZIP = "syst_hard_negatives.zip"
PROD_ZIP = "prod_hard_negatives.zip"
PRETRAINING = {"cc12m": "CC12M", "yfcc": "YFCC15M", "laion": "LAION-400M"}
COMPOUNDS = ("seen", "unseen")
SYST_TYPES = ("atom", "comp", "combined")  # combined: atom + comp (the README)
COMBINED, COMBINED_FROM = "valid_hard_negs_combined", ("valid_hard_negs_atom", "valid_hard_negs_comp")
PROD_TYPES = ("atom", "swap", "negate")
COMPLEXITIES = tuple(range(4, 13))
_REGION = ("x", "y", "width", "height")


@dataclass(frozen=True)
class Part:
    """One leaf config: the negatives of one column of one CSV of one zip."""

    config: str
    family: str  # systematicity / productivity
    zip: str
    csv: str  # the file's base name inside the zip
    negatives: str  # the CSV column holding the list of hard negatives
    negative_type: str
    pretraining: str = ""
    compounds: str = ""
    complexity: int | None = None


# File and column names as the authors' scripts build them (crepe_compo_eval_open_clip.gather_params,
# crepe_prod_eval_clip.main).
PARTS: tuple[Part, ...] = tuple(
    Part(f"syst_{p}_{c}_{t}", "systematicity", SYST_ZIP, f"syst_vg_hard_negs_{c}_compounds_in_{p}.csv",
         f"valid_hard_negs_{t}", t, pretraining=p, compounds=c)
    for p in PRETRAINING for c in COMPOUNDS for t in SYST_TYPES
) + tuple(
    Part(f"prod_{t}_{n}", "productivity", PROD_ZIP, f"prod_vg_hard_negs_{t}_complexity_{n}.csv", "hard_negs", t,
         complexity=n)
    for t in PROD_TYPES for n in COMPLEXITIES
)
BY_CONFIG = {p.config: p for p in PARTS}
AGGREGATES: dict[str, tuple[str, ...]] = {
    "all": tuple(p.config for p in PARTS),  # what a plain `vlprobe evaluate --dataset crepe` scores, each row once
    "productivity": tuple(p.config for p in PARTS if p.family == "productivity"),
    **{f"prod_{t}": tuple(f"prod_{t}_{n}" for n in COMPLEXITIES) for t in PROD_TYPES},
}
DEFAULT_CONFIG = "productivity"

_f = Value
FEATURES = Features({
    "id": _f("string"), "index": _f("int32"), "leaf": _f("string"), "family": _f("string"),
    "negative_type": _f("string"),
    "pretraining": _f("string"), "compounds": _f("string"), "complexity": _f("int32"),
    "image": datasets.Image(), "image_id": _f("string"),
    "x": _f("float64"), "y": _f("float64"), "width": _f("float64"), "height": _f("float64"),
    "caption": _f("string"), "negatives": datasets.Sequence(_f("string")), "n_negatives": _f("int32"),
    "gold": datasets.Sequence(datasets.Sequence(_f("int8"))),
})

SPEC_YAML = """\
# How rows of this folder become vlprobe items (see vlprobe/spec.py): one Visual Genome region (the
# crop the authors' code takes), the true caption and its k hard negatives; gold [[1, 0, ..., 0]]
# from the gold column (k varies). CREPE's recall@1 (the caption ranks first) is vlprobe's `text`
# (= set_acc here) under the strict tie policy: a negative tied with the caption counts against it.
description: CREPE (Ma et al., 2023), 1 image region x [caption, k hard negatives], gold [[1, 0, ..., 0]].
id: id
images: [image]
texts: [caption, negatives]
gold: gold
tags: [leaf, family, negative_type, complexity, pretraining, compounds]
"""


# ---- reading the zips -------------------------------------------------------------------------------
def zip_members(path: Path) -> dict[str, str]:
    """Base name -> member of the CSV files in one of CREPE's zips (whatever folder holds them); a
    base name found twice is refused, since the authors' scripts name files by base name only."""
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as err:
        with open(path, "rb") as fh:
            head = fh.read(64)
        if head.startswith(b"version https://git-lfs"):
            raise AnnotationError(f"{path}: a Git LFS pointer, not the zip itself; fetch the file through Git LFS "
                                  "(e.g. `git lfs pull` in a clone) and pass its folder as --annotations DIR") from None
        raise AnnotationError(f"{path}: not a readable zip file: {err}") from None
    out: dict[str, str] = {}
    with zf:
        for info in zf.infolist():
            if info.is_dir() or not info.filename.lower().endswith(".csv"):
                continue
            base = info.filename.replace("\\", "/").rsplit("/", 1)[-1]
            if base.startswith("._"):  # macOS resource forks
                continue
            if base in out:
                raise AnnotationError(f"{path.name}: {base} occurs twice ({out[base]}, {info.filename}); "
                                      "cannot tell which one the authors' scripts read")
            out[base] = info.filename
    return out


def read_csv(zip_path: Path, name: str, members: Mapping[str, str]) -> list[dict[str, str]]:
    if name not in members:
        shown = ", ".join(sorted(members)[:6]) + (" ..." if len(members) > 6 else "")
        raise AnnotationError(f"{zip_path.name}: no file {name} (the zip's CSV files: {shown or 'none'})")
    with zipfile.ZipFile(zip_path) as zf:
        text = zf.read(members[name]).decode("utf-8-sig")
    return list(csv.DictReader(io.StringIO(text)))


def _number(value: Any, where: str, field: str, whole: bool = False) -> float:
    try:
        f = float(value)
    except (TypeError, ValueError):
        f = float("nan")
    if not math.isfinite(f) or (whole and f != int(f)):
        raise AnnotationError(f"{where}: {field} {value!r} is not a {'whole ' if whole else ''}number")
    return f


def _negatives(value: Any, where: str, column: str) -> list[str]:
    try:
        parsed = ast.literal_eval(value) if isinstance(value, str) else None
    except (ValueError, SyntaxError):
        parsed = None
    if not isinstance(parsed, (list, tuple)) or not all(isinstance(t, str) and t.strip() for t in parsed):
        raise AnnotationError(f"{where}: {column} {str(value)[:80]!r} is not a Python list of non-empty strings")
    return list(parsed)


def derives_combined(rows: list[dict[str, str]], part: Part) -> bool:
    """Whether ``part`` is a `combined` config whose CSV has no ``valid_hard_negs_combined`` column:
    its negatives are then the row's atom negatives followed by its comp negatives, as the README
    defines the type ("atom+comp"); the authors' script reads the column where it exists."""
    return part.negatives == COMBINED and bool(rows) and COMBINED not in rows[0]


def read_part(rows: list[dict[str, str]], part: Part) -> tuple[list[dict[str, Any]], list[int]]:
    """One leaf config's rows (without image bytes), and the CSV rows left out because their list
    of negatives is empty (a 1 x 1 item has nothing to rank; the authors' code would rank the
    caption first and count it right)."""
    out, empty = [], []
    where_file = f"{part.zip}:{part.csv}"
    derived = derives_combined(rows, part)
    columns = COMBINED_FROM if derived else (part.negatives,)
    for n, rec in enumerate(rows):
        where = f"{where_file} row {n}"
        missing = [c for c in ("image_id", "caption", *_REGION, *columns) if rec.get(c) is None]
        if missing:
            raise AnnotationError(f"{where}: missing column(s) {missing} (columns: {sorted(k for k in rec if k)})")
        image_id = int(_number(rec["image_id"], where, "image_id", whole=True))
        if image_id < 0:
            raise AnnotationError(f"{where}: image_id {rec['image_id']!r} is not a Visual Genome image id")
        caption = rec["caption"]
        if not caption.strip():
            raise AnnotationError(f"{where}: caption is empty")
        x, y, w, h = (_number(rec[c], where, c) for c in _REGION)
        if w <= 0 or h <= 0:
            raise AnnotationError(f"{where}: the region's width and height must be positive, got {w} x {h}")
        negatives = [t for c in columns for t in _negatives(rec[c], where, c)]
        if not negatives:
            empty.append(n)
            continue
        out.append({
            "id": f"{part.config}/{n}", "index": n, "leaf": part.config, "family": part.family,
            "negative_type": part.negative_type, "pretraining": part.pretraining, "compounds": part.compounds,
            "complexity": part.complexity,
            "image_id": str(image_id), "x": x, "y": y, "width": w, "height": h, "caption": caption,
            "negatives": negatives, "n_negatives": len(negatives), "gold": [[1] + [0] * len(negatives)],
            "_images": (("image", SOURCE, f"{image_id}.jpg"),),
        })
    return out, empty


def read_all(annotations: Path) -> tuple[dict[str, list[dict[str, Any]]], dict[str, int], dict[str, list[int]],
                                         list[str]]:
    """Rows per leaf config, rows per CSV file, the rows left out (empty negative lists), and the
    `combined` configs whose negatives were derived as atom + comp (:func:`derives_combined`)."""
    members = {z: zip_members(annotations / z) for z in (SYST_ZIP, PROD_ZIP)}
    cache: dict[tuple[str, str], list[dict[str, str]]] = {}
    rows, in_file, empty, derived = {}, {}, {}, []
    for part in PARTS:
        key = (part.zip, part.csv)
        if key not in cache:
            cache[key] = read_csv(annotations / part.zip, part.csv, members[part.zip])
        rows[part.config], left_out = read_part(cache[key], part)
        in_file[part.config] = len(cache[key])
        if left_out:
            empty[part.config] = left_out
        if derives_combined(cache[key], part):
            derived.append(part.config)
    return rows, in_file, empty, derived


def crop(row: Mapping[str, Any], column: str, data: bytes) -> bytes:
    """The region the authors' code feeds the model: ``TF.crop(image, y, x, height, width)`` of the
    RGB image, which for a PIL image is ``image.crop((x, y, x + width, y + height))`` (Pillow rounds
    the box to whole pixels; parts outside the image come out black); stored losslessly as PNG."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as im:
        region = im.convert("RGB").crop((row["x"], row["y"], row["x"] + row["width"], row["y"] + row["height"]))
    buf = io.BytesIO()
    region.save(buf, "PNG")
    return buf.getvalue()


# ---- configs, card and build report -------------------------------------------------------------------
def config_decls() -> list[ConfigDecl]:
    aggregates = [ConfigDecl(name, FEATURES, (SPLIT,), default=name == DEFAULT_CONFIG,
                             paths={SPLIT: [f"data/{c}/{SPLIT}-*.parquet" for c in members]})
                  for name, members in AGGREGATES.items()]
    return aggregates + [ConfigDecl(p.config, FEATURES, (SPLIT,)) for p in PARTS]


def card_yaml() -> dict[str, Any]:
    up = facts.UPSTREAM
    return card_metadata(
        config_decls(), language=["en"], license="other", license_name="crepe-visual-genome",
        license_link=f"https://github.com/{up.repo}/blob/{up.commit}/README.md",
        pretty_name="CREPE", task_categories=["image-to-text", "zero-shot-image-classification"],
        tags=["vision-and-language", "compositionality", "hard-negatives", "benchmark", "vlprobe"],
        size_categories=["10K<n<100K"],
    )


def card_values() -> dict[str, Any]:
    syst = [{"config": p.config, "pretraining": PRETRAINING[p.pretraining], "compounds": p.compounds,
             "type": p.negative_type, "csv": p.csv, "column": p.negatives} for p in PARTS if p.family == "systematicity"]
    prod = [{"type": t, "configs": f"`prod_{t}_4` ... `prod_{t}_12`",
             "csv": f"{t}/prod_vg_hard_negs_{t}_complexity_<n>.csv"} for t in PROD_TYPES]
    return dict(syst=syst, prod=prod, citation=facts.CITATION.strip(), **upstream_values(facts.UPSTREAM))


def write_card(out: Path) -> Path:
    return cards.write(out, "crepe_card.md", card_yaml(), **card_values())


def _shown(items: list, first: int = 5) -> str:
    return ", ".join(map(str, items[:first])) + (f" (+{len(items) - first} more)" if len(items) > first else "")


def report(counts: dict[str, int], skipped: Mapping[str, Sequence[str]], in_file: dict[str, int],
           empty: dict[str, list[int]], ks: dict[str, dict[int, int]], derived: Sequence[str] = ()) -> list[str]:
    """``data/BUILD.md``'s account of the rows (the flow adds the rows left out and the files used)."""
    lines = [f"Rows in this build: **{sum(counts.values()):,}** over {len(counts)} leaf configs (the aggregates "
             f"{', '.join(f'`{a}`' for a in AGGREGATES)} read their leaves' files).", "",
             "Rows per config against the rows of its CSV file; k is the number of hard negatives per row "
             "(the authors' `crepe_prod_eval_*.py` scripts slice 6 texts per image, i.e. assume k = 5).", "",
             "| config | rows | rows in the CSV | left out: no negatives | left out: image missing | k (rows) |",
             "|---|---:|---:|---:|---:|---|"]
    for p in PARTS:
        k = ", ".join(f"{n}: {c:,}" for n, c in sorted(ks.get(p.config, {}).items()))
        lines.append(f"| `{p.config}` | {counts.get(p.config, 0):,} | {in_file[p.config]:,} | "
                     f"{len(empty.get(p.config, [])):,} | {len(skipped.get(p.config, [])):,} | {k} |")
    if derived:
        lines += ["", "## `combined` negatives built as atom + comp", "",
                  f"The CSV files of these configs have no `{COMBINED}` column, so each row's negatives are its "
                  "`valid_hard_negs_atom` list followed by its `valid_hard_negs_comp` list (the README's "
                  "\"combined (atom+comp)\"): " + ", ".join(f"`{c}`" for c in derived) + "."]
    if empty:
        lines += ["", "## Rows left out: no negatives", "",
                  "These CSV rows have an empty list in the config's negatives column: an item of 1 text has "
                  "nothing to rank (the authors' code would rank the caption first and count it right).", ""]
        lines += [f"- `{c}`: {len(rows)} row(s): {_shown(rows)}" for c, rows in empty.items()]
    return lines


# ---- build ------------------------------------------------------------------------------------------
class Builder(UpstreamBuilder):
    benchmark = facts.BENCHMARK
    help = ("CREPE (Ma et al. 2023): systematicity and productivity, 1 Visual Genome region x (1 + k) texts, "
            "from the upstream zips at a pinned commit")
    what = f"{SYST_ZIP} and {PROD_ZIP}"
    sources = (SOURCE,)
    images_help = ("images root: a folder holding Visual Genome's VG_100K/ and VG_100K_2/ (or images.zip, "
                   "images2.zip); a flat folder of the <image_id>.jpg files: --image-dir visual_genome=FOLDER")
    download_help = ("download the Visual Genome images missing locally into --cache-dir, file by file from "
                     "Visual Genome's hosts (cs.stanford.edu/people/rak248/VG_100K[_2]/)")
    spec_yaml = SPEC_YAML

    def read(self, folder: Path, args: argparse.Namespace) -> Annotations:
        rows, in_file, empty, derived = read_all(folder)
        ks: dict[str, dict[int, int]] = {}
        for config, rs in rows.items():
            for r in rs:
                ks.setdefault(config, {}).setdefault(r["n_negatives"], 0)
                ks[config][r["n_negatives"]] += 1
        return Annotations({c: {SPLIT: rs} for c, rs in rows.items()},
                           {"in_file": in_file, "empty": empty, "ks": ks, "derived": derived})

    def config_decls(self) -> list[ConfigDecl]:
        return config_decls()

    def convert(self, row: Mapping[str, Any], column: str, data: bytes) -> bytes:
        return crop(row, column, data)

    def write_card(self, out: Path, annotations: Annotations) -> Path:
        return write_card(out)

    def report(self, plan: Plan, args: argparse.Namespace) -> list[str]:
        f = plan.annotations.facts
        counts = {c: sum(n.values()) for c, n in plan.counts().items()}
        return report(counts, plan.skipped, f["in_file"], f["empty"], f["ks"], f["derived"])


BUILDER = Builder()
NAME, HELP, add_arguments, build = BUILDER.name, BUILDER.help, BUILDER.add_arguments, BUILDER.build
