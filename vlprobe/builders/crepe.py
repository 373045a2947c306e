"""``vlprobe build crepe``: CREPE (Ma et al., 2023) from ``syst_hard_negatives.zip`` and
``prod_hard_negatives.zip`` of github.com/RAIVNLab/CREPE at the pinned commit (or the 27 productivity CSVs loose, from
the third-party copy :mod:`vlprobe.benchmarks.crepe` pins) and the Visual Genome images.

The authors' code ranks ``[caption] + hard negatives`` for the region ``x, y, width, height`` of image ``image_id``;
recall@1 is the share of rows whose caption ranks first. Here a row is 1 image (the region, as PNG) x ``[caption,
*negatives]``, gold ``[[1, 0, ..., 0]]``; vlprobe's ``text`` is their recall@1. A negatives literal (a list, or a
Python set in 3,768 productivity rows) is read from its syntax tree, never evaluated. A build makes the configs whose
file is at hand (:meth:`Crepe.config_files`)."""

from __future__ import annotations

import argparse
import ast
import csv
import io
import math
import zipfile
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import datasets
from datasets import Features, Value

from ..benchmarks import crepe as facts
from ..benchmarks.crepe import COMPLEXITIES, COMPOUNDS, PRETRAINING, PROD_TYPES, PROD_ZIP, SYST_TYPES, SYST_ZIP
from ..dataset.downloads import read_member
from ..dataset.images import check_crop_box
from . import AnnotationError, shown
from .flow import SPLIT, Annotations, Image, Needs, Plan, Row, UpstreamBuilder, has_upper, pct

SOURCE = "visual_genome"
COMBINED, COMBINED_FROM = "valid_hard_negs_combined", ("valid_hard_negs_atom", "valid_hard_negs_comp")
_REGION = ("x", "y", "width", "height")
# the longest negatives literal a row may have (the pinned files' is under 2,000): a hostile file cannot stall the parser
MAX_FIELD = 65_536


@dataclass(frozen=True)
class Part:
    """One leaf config: the negatives of one column of one CSV, in a zip (or, productivity, loose)."""

    config: str
    family: str  # systematicity / productivity
    zip: str
    csv: str  # the file's base name inside the zip
    negatives: str  # the CSV column holding the list of hard negatives
    negative_type: str
    pretraining: str = ""
    compounds: str = ""
    complexity: int | None = None
    loose: str | None = None  # the third-party copy's path of the same CSV (productivity)


# file and column names as the authors' scripts build them (gather_params, crepe_prod_eval_clip.main)
PARTS: tuple[Part, ...] = tuple(
    Part(f"syst_{p}_{c}_{t}", "systematicity", SYST_ZIP, f"syst_vg_hard_negs_{c}_compounds_in_{p}.csv",
         f"valid_hard_negs_{t}", t, pretraining=p, compounds=c)
    for p in PRETRAINING for c in COMPOUNDS for t in SYST_TYPES
) + tuple(
    Part(f"prod_{t}_{n}", "productivity", PROD_ZIP, f"prod_vg_hard_negs_{t}_complexity_{n}.csv", "hard_negs", t,
         complexity=n, loose=facts.prod_csv(t, n))
    for t in PROD_TYPES for n in COMPLEXITIES
)
assert tuple(p.config for p in PARTS) == facts.BENCHMARK.configs
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
# How rows of this folder become vlprobe items (see vlprobe/dataset/spec.py): one Visual Genome region (the
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


def zip_members(path: Path) -> dict[str, str]:
    """Base name -> member of the CSV files in a zip; a name twice is refused (the authors name files by base name)."""
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


def parse_csv(data: bytes, where: str) -> list[dict[str, str]]:
    """A CSV file's rows as the authors' ``pandas.read_csv`` sees them (header row, UTF-8)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise AnnotationError(f"{where}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    reader = csv.DictReader(io.StringIO(text))
    rows: list[dict[str, str]] = []
    try:
        rows.extend(reader)
    except csv.Error as err:  # e.g. a field over the csv module's limit (131,072 characters)
        # rows are numbered from 0 after the header, as the row checks number them
        raise AnnotationError(f"{where} row {len(rows)}: not readable as CSV: {err}") from None
    return rows


def read_zip_csv(zip_path: Path, name: str, members: Mapping[str, str]) -> list[dict[str, str]]:
    if name not in members:
        shown = ", ".join(sorted(members)[:6]) + (" ..." if len(members) > 6 else "")
        raise AnnotationError(f"{zip_path.name}: no file {name} (the zip's CSV files: {shown or 'none'})")
    with zipfile.ZipFile(zip_path) as zf:
        return parse_csv(read_member(zf, members[name], str(zip_path)), f"{zip_path.name}:{name}")


def _number(value: str | None, where: str, field: str, whole: bool = False) -> float:
    try:
        f = float(value or "nan")  # None (a short row) or "": not a number
    except ValueError:
        f = float("nan")
    if not math.isfinite(f) or (whole and f != int(f)):
        raise AnnotationError(f"{where}: {field} {value!r} is not a {'whole ' if whole else ''}number")
    return f


def negatives_literal(value: str | None, where: str, column: str) -> tuple[list[str], bool]:
    """(the strings of a negatives literal, whether it is a set), read from its syntax tree, evaluating
    nothing; a set's in the order written, each once (the authors' ``list(set)`` order changes from run to run)."""
    if not isinstance(value, str):
        raise AnnotationError(f"{where}: {column} is missing")
    if len(value) > MAX_FIELD:
        raise AnnotationError(f"{where}: {column} is {len(value):,} characters long, more than a list of negatives "
                              f"may be ({MAX_FIELD:,})")
    try:
        node = ast.parse(value.lstrip(" \t"), mode="eval").body  # literal_eval strips the same
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        node = None
    if not isinstance(node, (ast.List, ast.Tuple, ast.Set)) or not all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        raise AnnotationError(f"{where}: {column} {value[:80]!r} is not a Python list (or set) of strings")
    texts = [e.value for e in node.elts]
    if isinstance(node, ast.Set):
        texts = list(dict.fromkeys(texts))
    if not all(t.strip() for t in texts):
        raise AnnotationError(f"{where}: {column} holds an empty string")
    return texts, isinstance(node, ast.Set)


def derives_combined(rows: list[dict[str, str]], part: Part) -> bool:
    """Whether ``part``'s CSV lacks the `combined` column: its negatives are then atom + comp (the README's type)."""
    return part.negatives == COMBINED and bool(rows) and COMBINED not in rows[0]


@dataclass(frozen=True)
class Region:
    """One CSV row as the authors' code reads it: image, region, caption, negatives (and whether written as a set)."""

    index: int
    image_id: int
    box: tuple[float, float, float, float]
    caption: str
    negatives: list[str]
    as_set: bool

    @classmethod
    def parse(cls, n: int, rec: dict[str, str], columns: Sequence[str], where: str) -> Region:
        """CSV row ``n`` (``rec``), its negatives from ``columns`` (one, or atom + comp)."""
        image_id_text, caption, *region = (rec.get(c) for c in ("image_id", "caption", *_REGION))
        missing = [c for c in ("image_id", "caption", *_REGION, *columns) if rec.get(c) is None]
        if missing:
            raise AnnotationError(f"{where}: missing column(s) {missing} (columns: {sorted(k for k in rec if k)})")
        image_id = int(_number(image_id_text, where, "image_id", whole=True))
        if image_id < 0:
            raise AnnotationError(f"{where}: image_id {image_id_text!r} is not a Visual Genome image id")
        if not caption.strip():  # type: ignore[union-attr]
            raise AnnotationError(f"{where}: caption is empty")
        x, y, w, h = (_number(value, where, c) for c, value in zip(_REGION, region))
        if w <= 0 or h <= 0:
            raise AnnotationError(f"{where}: the region's width and height must be positive, got {w} x {h}")
        read = [negatives_literal(rec[c], where, c) for c in columns]
        return cls(n, image_id, (x, y, w, h), str(caption), [t for texts, _ in read for t in texts],
                   any(is_set for _, is_set in read))


def prod_facts(regions: Sequence[Region]) -> facts.ProdFacts:
    """What rows hold: the set literals of every row read, the rest of the rows kept."""
    kept = [r for r in regions if r.negatives]
    return facts.ProdFacts(
        len(kept), sum(r.as_set for r in regions), sum(r.caption in r.negatives for r in kept),
        sum(has_upper(r.caption) and not any(has_upper(t) for t in r.negatives) for r in kept),
        sum(not has_upper(r.caption) and all(has_upper(t) for t in r.negatives) for r in kept))


def read_part(rows: list[dict[str, str]], part: Part, where_file: str) -> tuple[list[Row], list[int], facts.ProdFacts]:
    """One leaf config's rows; the CSV rows left out for an empty list of negatives; what the rows hold."""
    columns = COMBINED_FROM if derives_combined(rows, part) else (part.negatives,)
    regions = [Region.parse(n, rec, columns, f"{where_file} row {n}") for n, rec in enumerate(rows)]
    out = [Row(f"{part.config}/{r.index}", dict(
        index=r.index, leaf=part.config, family=part.family, negative_type=part.negative_type,
        pretraining=part.pretraining, compounds=part.compounds, complexity=part.complexity, image_id=str(r.image_id),
        **dict(zip(_REGION, r.box)), caption=r.caption, negatives=r.negatives, n_negatives=len(r.negatives),
        gold=[[1] + [0] * len(r.negatives)]), (Image("image", SOURCE, f"{r.image_id}.jpg"),), record=r)
        for r in regions if r.negatives]
    return out, [r.index for r in regions if not r.negatives], prod_facts(regions)


@dataclass
class Read:
    """What :func:`read_all` read, per config, for the build report."""

    rows: dict[str, list[Row]] = field(default_factory=dict)
    in_file: dict[str, int] = field(default_factory=dict)
    empty: dict[str, list[int]] = field(default_factory=dict)
    read_from: dict[str, str] = field(default_factory=dict)
    quirks: dict[str, facts.ProdFacts] = field(default_factory=dict)
    derived: list[str] = field(default_factory=list)


def read_all(annotations: Path, configs: Sequence[str] | None = None, files: frozenset[str] | None = None) -> Read:
    """The rows of ``configs`` (default: every one), each from its zip where ``files`` holds it, else loose."""
    parts = [BY_CONFIG[c] for c in (configs or BY_CONFIG)]
    if files is None:  # whatever the folder holds
        files = frozenset(p for p in (SYST_ZIP, PROD_ZIP, *(x.loose for x in PARTS if x.loose))
                          if p and (annotations / p).is_file())
    members: dict[str, dict[str, str]] = {}
    cache: dict[tuple[str, str], list[dict[str, str]]] = {}
    out = Read()
    for part in parts:
        if part.zip in files or part.loose not in files:  # the upstream zip first
            if part.zip not in members:
                members[part.zip] = zip_members(annotations / part.zip)
            key, where = (part.zip, part.csv), f"{part.zip}:{part.csv}"
            if key not in cache:
                cache[key] = read_zip_csv(annotations / part.zip, part.csv, members[part.zip])
        else:
            key, where = ("", part.loose), part.loose
            if key not in cache:
                cache[key] = parse_csv((annotations / part.loose).read_bytes(), part.loose)
        out.rows[part.config], left_out, out.quirks[part.config] = read_part(cache[key], part, where)
        out.in_file[part.config] = len(cache[key])
        out.read_from[part.config] = where
        if left_out:
            out.empty[part.config] = left_out
        if derives_combined(cache[key], part):
            out.derived.append(part.config)
    return out


def crop(row: Row, column: str, data: bytes) -> bytes:
    """The region the authors' code feeds the model (``TF.crop(image, y, x, height, width)``), as PNG."""
    from PIL import Image as PILImage

    x, y, w, h = row.record.box
    with PILImage.open(io.BytesIO(data)) as im:
        box = (x, y, x + w, y + h)
        check_crop_box(box, im.size, f"CREPE row {row.id} ({column} {row.record.image_id}.jpg)")  # 1e300, 100000 x 100000
        region = im.convert("RGB").crop(box)
    buf = io.BytesIO()
    region.save(buf, "PNG")
    return buf.getvalue()


class Crepe(UpstreamBuilder):
    benchmark = facts.BENCHMARK
    help = ("CREPE (Ma et al. 2023): systematicity and productivity, 1 Visual Genome region x (1 + k) texts, "
            "from the upstream zips at a pinned commit (or the productivity CSVs loose)")
    what = (f"{SYST_ZIP} and {PROD_ZIP}, or in place of the latter the 27 productivity CSVs loose as "
            f"prod_hard_negatives/<type>/<file>.csv (the third-party copy github.com/{facts.PROD_CSVS.repo}, "
            "checked against its own hashes)")
    sources = (SOURCE,)
    images_help = ("images root: a folder holding Visual Genome's VG_100K/ and VG_100K_2/ (or images.zip, "
                   "images2.zip); a flat folder of the <image_id>.jpg files: --image-dir visual_genome=FOLDER")
    download_help = ("download the Visual Genome images missing locally into --cache-dir, file by file from "
                     "Visual Genome's hosts (cs.stanford.edu/people/rak248/VG_100K[_2]/)")
    spec_yaml = SPEC_YAML
    features_all, aggregates, leaves, default_config = FEATURES, AGGREGATES, tuple(BY_CONFIG), DEFAULT_CONFIG
    card = dict(license_name="crepe-visual-genome",
                license_link=f"https://github.com/{facts.UPSTREAM.repo}/blob/{facts.UPSTREAM.commit}/README.md",
                tags=["vision-and-language", "compositionality", "hard-negatives", "benchmark", "vlprobe"],
                size_categories=["10K<n<100K"])

    def config_files(self) -> dict[str, Needs]:
        """Each config reads one CSV: in its zip, or (productivity) loose from the third-party copy."""
        return {p.config: ((p.zip, p.loose) if p.loose else (p.zip,),) for p in PARTS}

    def read(self, folder: Path, args: argparse.Namespace) -> Annotations:
        selection = args.selection
        read = read_all(folder, selection.configs, selection.files)
        return Annotations({c: {SPLIT: list(rs)} for c, rs in read.rows.items()}, read)

    def convert(self, row: Row, column: str, data: bytes) -> bytes:
        return crop(row, column, data)

    def card_values(self, annotations: Annotations) -> dict[str, Any]:
        syst = [{"config": p.config, "pretraining": PRETRAINING[p.pretraining], "compounds": p.compounds,
                 "type": p.negative_type, "csv": p.csv, "column": p.negatives} for p in PARTS if p.family == "systematicity"]
        prod = [{"type": t, "configs": f"`prod_{t}_4` ... `prod_{t}_12`",
                 "csv": f"{t}/prod_vg_hard_negs_{t}_complexity_<n>.csv"} for t in PROD_TYPES]
        counts = [{"config": c, "rows": f"{f.rows:,}", "sets": f"{f.set_literals:,}", "same": f"{f.caption_is_negative:,}",
                   "upper": pct(f.upper_case_rule, f.rows), "lower": pct(f.lower_case_rule, f.rows)}
                  for c, f in facts.PROD_FACTS.items()]
        total = {k: sum(getattr(f, k) for f in facts.PROD_FACTS.values()) for k in facts.ProdFacts._fields}
        negate = [f for c, f in facts.PROD_FACTS.items() if c.startswith("prod_negate_")]
        third = facts.PROD_CSVS
        return dict(syst=syst, prod=prod, counts=counts, total={k: f"{v:,}" for k, v in total.items()},
                    negate_rows=f"{sum(f.rows for f in negate):,}", negate_lower=f"{sum(f.lower_case_rule for f in negate):,}",
                    atom_rows=f"{sum(f.rows for c, f in facts.PROD_FACTS.items() if c.startswith('prod_atom_')):,}",
                    third_repo=third.repo, third_commit=third.commit, third_note=third.third_party,
                    third_files=[{"path": f.path, "blob": f.blob, "size": f"{f.size:,}"} for f in third.files])

    def report(self, plan: Plan, args: argparse.Namespace) -> list[str]:
        """``data/BUILD.md``'s account of the rows."""
        read: Read = plan.annotations.facts
        counts, skipped = {c: sum(n.values()) for c, n in plan.counts().items()}, plan.skipped
        ks = {config: dict(Counter(len(r.record.negatives) for r in splits[SPLIT]))  # of the rows built
              for config, splits in plan.annotations.rows.items()}
        built = [p for p in PARTS if p.config in read.in_file]
        lines = [f"Rows in this build: **{sum(counts.values()):,}** over {len(built)} of {len(PARTS)} leaf configs (the "
                 f"aggregates {', '.join(f'`{a}`' for a in AGGREGATES)} read their leaves' files).", "",
                 "Rows per config against the rows of its CSV file; k is the number of hard negatives per row "
                 "(the authors' `crepe_prod_eval_*.py` scripts slice 6 texts per image, i.e. assume k = 5); "
                 "\"set literals\" counts the rows whose negatives are written as a Python set (read in the order "
                 "written, each once).", "",
                 "| config | rows | rows in the CSV | left out: no negatives | left out: image missing | k (rows) "
                 "| set literals | read from |",
                 "|---|---:|---:|---:|---:|---|---:|---|"]
        for p in built:
            k = ", ".join(f"{n}: {c:,}" for n, c in sorted(ks.get(p.config, {}).items()))
            lines.append(f"| `{p.config}` | {counts.get(p.config, 0):,} | {read.in_file[p.config]:,} | "
                         f"{len(read.empty.get(p.config, [])):,} | {len(skipped.get(p.config, [])):,} | {k} | "
                         f"{read.quirks[p.config].set_literals:,} | `{read.read_from[p.config]}` |")
        lines += ["", "## What the texts give away", "",
                  "Of the rows read (before any is left out for a missing image): rows whose caption is also one of "
                  "their negatives (always a tie, so never right under the strict rule), and how far a rule that "
                  "looks at no image gets on casing alone (strict: right only when the caption alone has upper case, "
                  "or alone has none). In `prod_negate_*` the caption is usually the only text without upper case.", "",
                  "| config | rows | caption = a negative | \"the text with upper case\" | \"the text without\" |",
                  "|---|---:|---:|---:|---:|"]
        for p in built:
            q, n = read.quirks[p.config], len(read.rows[p.config])  # every row read (the build may leave some out)
            lines.append(f"| `{p.config}` | {n:,} | {q.caption_is_negative:,} | {pct(q.upper_case_rule, n)}% | "
                         f"{pct(q.lower_case_rule, n)}% |")
        if read.derived:
            lines += ["", "## `combined` negatives built as atom + comp", "",
                      f"The CSV files of these configs have no `{COMBINED}` column, so each row's negatives are its "
                      "`valid_hard_negs_atom` list followed by its `valid_hard_negs_comp` list (the README's "
                      "\"combined (atom+comp)\"): " + ", ".join(f"`{c}`" for c in read.derived) + "."]
        if read.empty:
            lines += ["", "## Rows left out: no negatives", "",
                      "These CSV rows have an empty list in the config's negatives column: an item of 1 text has "
                      "nothing to rank (the authors' code would rank the caption first and count it right).", ""]
            lines += [f"- `{c}`: {len(rows)} row(s): {shown(rows, 5)}" for c, rows in read.empty.items()]
        return lines
