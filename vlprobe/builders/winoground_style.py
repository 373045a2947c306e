"""``vlprobe build winoground_style``: Winoground-style 2x2 instruments on rendered scenes, in
facebook/winoground's schema; with ``--winoground PATH``, also a private folder from the user's own copy of
facebook/winoground (by default ``<out>/data/winoground/``, git-ignored and not declared by the card: never published)."""

from __future__ import annotations

import argparse
import json
import sys
import time
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

import datasets
import pyarrow.parquet as pq

from ..dataset.downloads import read_member
from ..dataset.folder import ConfigDecl, card_metadata, rebuilding, write_card, write_spec
from ..scenes import winoground as gen
from . import cards, unchanged
from .synthetic import RateMeter, SyntheticBuilder, parse_names, write_rows

LOCAL_CONFIG = "winoground"

WINOGROUND_FEATURES = datasets.Features({
    "id": datasets.Value("int32"),
    "image_0": datasets.Image(),
    "image_1": datasets.Image(),
    "caption_0": datasets.Value("string"),
    "caption_1": datasets.Value("string"),
    "tag": datasets.Value("string"),
    "secondary_tag": datasets.Value("string"),
    "num_main_preds": datasets.Value("int32"),
    "collapsed_tag": datasets.Value("string"),
})
_OBJECTS = datasets.List({
    "shape": datasets.Value("string"),
    "colour": datasets.Value("string"),
    "row": datasets.Value("int8"),
    "column": datasets.Value("int8"),
})
FEATURES = datasets.Features({
    **WINOGROUND_FEATURES,
    "objects_0": _OBJECTS,
    "objects_1": _OBJECTS,
    "form_0": datasets.Value("string"),
    "form_1": datasets.Value("string"),
    "instrument": datasets.Value("string"),  # the config the row belongs to (a tag in ``all``)
    "key": datasets.Value("string"),  # "<instrument>/<id>": unique over all configs, the item id
})
ALL_CONFIG = "all"

SPEC_YAML = """\
# How rows of this folder become vlprobe items (see vlprobe/dataset/spec.py): 2 images x 2 captions,
# caption_i is true of image_i only. Tags as Winoground's (collapsed_tag: the kind of swap,
# Object / Relation / Both), and the instrument, so config `all` gives per-instrument tables too.
description: Winoground-style 2x2 instruments on rendered scenes (same words, swapped order).
id: key
images: [image_0, image_1]
texts: [caption_0, caption_1]
gold: [[1, 0], [0, 1]]
tags: [collapsed_tag, instrument, num_main_preds, secondary_tag, tag]
"""
# The private copy of facebook/winoground has its nine columns only.
LOCAL_SPEC_YAML = """\
# How rows of this folder become vlprobe items (see vlprobe/dataset/spec.py): 2 images x 2 captions,
# caption_i is true of image_i only. Tags as Winoground's.
description: Winoground (Thrush et al., CVPR 2022), a private local copy; never redistribute.
id: id
images: [image_0, image_1]
texts: [caption_0, caption_1]
gold: [[1, 0], [0, 1]]
tags: [collapsed_tag, num_main_preds, secondary_tag, tag]
"""


class WinogroundStyle(SyntheticBuilder[tuple[list[str], int]]):
    name = "winoground_style"
    help = "Winoground-style 2x2 instruments on rendered scenes (+ a private folder from your own Winoground copy)"
    needs = "nothing: scenes rendered offline by vlprobe (a private Winoground folder: --winoground DIR, your own copy)"
    sizes = gen.SIZES
    size_help = "items per config: tiny (8), default (400), paper (400, as Winoground)"
    configs = gen.CONFIGS
    configs_help = (f"comma-separated subset of {', '.join(gen.CONFIGS)}, 'all' (default) or 'none'; load_dataset needs "
                    "the default config, spatial_swap, built too")
    body = "winoground_style_body.md"
    spec_yaml = SPEC_YAML
    card = dict(pretty_name="Winoground-style synthetic instruments (vlprobe)", language=["en"],
                task_categories=["zero-shot-image-classification"],
                tags=["synthetic", "vision-and-language", "winoground", "compositionality", "vlprobe"])
    generator = SyntheticBuilder.generator + ("templates/winoground_local_body.md",)

    def add_arguments(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("--items", type=int, default=None, help="items per config (overrides --size)")
        p.add_argument("--winoground", type=Path, default=None, metavar="PATH",
                       help="your own copy of facebook/winoground: a snapshot folder, a parquet file, or examples.jsonl "
                            "(with images.zip or images/ beside it); written to --winoground-out, never published")
        p.add_argument("--winoground-out", type=Path, default=None,
                       help="where the private Winoground folder goes (default: <out>/data/winoground, git-ignored)")
        super().add_arguments(p)

    def config_decls(self) -> list[ConfigDecl]:
        """One config per instrument, and ``all``, which reads the instruments' parquet (nothing stored twice)."""
        every = ConfigDecl(ALL_CONFIG, FEATURES, splits=("test",),
                           paths={"test": [f"data/{c}/test-*.parquet" for c in gen.CONFIGS]})
        return [ConfigDecl(c, FEATURES, splits=("test",), default=(c == "spatial_swap")) for c in gen.CONFIGS] + [every]

    def plan(self, args: argparse.Namespace) -> tuple[list[str], int]:
        """(the configs to render, items per config), checked before anything is written."""
        configs = [] if args.configs == "none" else parse_names(args.configs, gen.CONFIGS, "config(s)")
        n = args.items if args.items is not None else gen.SIZES[args.size]
        if n < 1:
            raise ValueError(f"--items must be >= 1, got {n}")
        if args.winoground is not None and not Path(args.winoground).exists():
            raise FileNotFoundError(f"--winoground: {args.winoground} does not exist")
        return configs, n

    def files_read(self, args: argparse.Namespace, plan: object) -> dict[str, unchanged.Read]:
        """The files of the Winoground copy given (by stamp)."""
        if args.winoground is None:
            return {}
        kind, files = find_source(Path(args.winoground))
        found = files if kind == "parquet" or files[1].is_file() else [files[0], *files[1].rglob("*")]
        return {"winoground": unchanged.stamps({str(f): f for f in found if f.is_file()})}

    def write(self, folder: Path, plan: tuple[list[str], int], args: argparse.Namespace) -> None:
        configs, n = plan
        start, meter = time.perf_counter(), RateMeter()
        self.write_metadata(folder)
        for config in configs:
            items = gen.generate(config, n, seed=args.seed)
            pngs = meter.render([sc for item in items for sc in (item.scene_0, item.scene_1)], workers=args.workers,
                                **gen.RENDER_OPTIONS)
            rows = [{**gen.to_row(item, i), "image_0": {"bytes": pngs[2 * i], "path": None},
                     "image_1": {"bytes": pngs[2 * i + 1], "path": None}} for i, item in enumerate(items)]
            write_rows(folder, config, "test", rows, FEATURES)
        if configs:
            meter.report(f"winoground_style ({n} items per config, seed {args.seed})", time.perf_counter() - start)
        if args.winoground is None:
            return
        if args.winoground_out is None:
            local, count = Path(args.out) / "data" / LOCAL_CONFIG, build_local_winoground(
                Path(args.winoground), folder / "data" / LOCAL_CONFIG)
        else:
            local = Path(args.winoground_out)
            with rebuilding(local) as local_folder:
                count = build_local_winoground(Path(args.winoground), local_folder)
                unchanged.record(local_folder, self._private_inputs(args))
        print(f"private Winoground copy: {count} items in {local} (never published; do not share)", file=sys.stderr)

    def _private_inputs(self, args: argparse.Namespace) -> unchanged.Inputs:
        """What the private copy written elsewhere (``--winoground-out``) was made from."""
        return unchanged.Inputs.of(self.name, {}, self.files_read(args, None), self.generator_files())

    def intact(self, out: Path, want: unchanged.Inputs, args: argparse.Namespace) -> bool:
        """The folder intact, and so is a private copy written elsewhere (``--winoground-out``)."""
        local = args.winoground_out
        return super().intact(out, want, args) and (
            local is None or unchanged.up_to_date(local, self._private_inputs(args)))


class WinogroundSourceError(ValueError):
    """The given Winoground copy cannot be read; the message names the file and row."""


_REQUIRED = tuple(WINOGROUND_FEATURES)


def find_source(path: Path) -> tuple[str, list[Path]]:
    """``("parquet", files)`` or ``("jsonl", [examples.jsonl, images])``: a file, or a folder holding either."""
    path = Path(path)
    if path.is_file():
        if path.suffix == ".parquet":
            return "parquet", [path]
        if path.suffix == ".jsonl":
            return "jsonl", [path, _images_beside(path)]
        raise WinogroundSourceError(f"{path}: expected a .parquet or .jsonl file of facebook/winoground")
    if path.is_dir():
        parquet = sorted(p for p in path.rglob("*.parquet") if p.is_file())
        if parquet:
            return "parquet", parquet
        jsonl = sorted(path.rglob("examples.jsonl"))
        if jsonl:
            return "jsonl", [jsonl[0], _images_beside(jsonl[0])]
        raise WinogroundSourceError(
            f"{path}: no *.parquet and no examples.jsonl found; pass your copy of facebook/winoground "
            "(a snapshot of the Hub repo, its data/test-*.parquet, or data/examples.jsonl with data/images.zip)"
        )
    raise WinogroundSourceError(f"{path}: does not exist")


def _images_beside(jsonl: Path) -> Path:
    for candidate in (jsonl.parent / "images.zip", jsonl.parent / "images"):
        if candidate.exists():
            return candidate
    raise WinogroundSourceError(f"{jsonl}: no images.zip or images/ folder beside it")


class Stored(NamedTuple):
    """An image as a parquet copy stores it."""

    bytes: Any = None
    path: Any = None


@dataclass(frozen=True)
class Example:
    """One example of facebook/winoground, its nine columns (each image ``{"bytes", "path"}``)."""

    id: int
    image_0: Any
    image_1: Any
    caption_0: str
    caption_1: str
    tag: str
    secondary_tag: str
    num_main_preds: int
    collapsed_tag: str

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> Example:
        """From a copy's columns: the id and count as numbers, the texts as text (None as "")."""
        raw = cls(**{c: values[c] for c in _REQUIRED})
        texts = {c: "" if getattr(raw, c) is None else str(getattr(raw, c)) for c in _TEXTS}
        return replace(raw, id=int(raw.id), num_main_preds=int(raw.num_main_preds), **texts)


_TEXTS = ("caption_0", "caption_1", "tag", "secondary_tag", "collapsed_tag")
_IMAGES = ("image_0", "image_1")


def _parquet_rows(files: list[Path]) -> Iterator[Example]:
    for f in files:
        try:
            table = pq.read_table(f)
        except Exception as err:  # pyarrow raises several types for a bad file
            raise WinogroundSourceError(f"{f}: not a readable parquet file: {err}") from None
        missing = [c for c in _REQUIRED if c not in table.column_names]
        if missing:
            raise WinogroundSourceError(f"{f}: missing column(s) {missing}; facebook/winoground has {list(_REQUIRED)}")
        for k, row in enumerate(table.select(list(_REQUIRED)).to_pylist()):
            ex = Example.of(row)
            images = {}
            for col in _IMAGES:
                value = getattr(ex, col)
                stored = (Stored(**{k: v for k, v in value.items() if k in Stored._fields}) if isinstance(value, dict)
                          else Stored(value))
                if not stored.bytes:
                    raise WinogroundSourceError(f"{f} row {k} (id {ex.id!r}): {col} holds no image bytes")
                images[col] = {"bytes": bytes(stored.bytes), "path": stored.path}
            yield replace(ex, **images)


def _jsonl_rows(jsonl: Path, images: Path) -> Iterator[Example]:
    if images.is_dir():
        files = {p.stem: p for p in images.rglob("*") if p.is_file()}
        read = lambda stem: files[stem].read_bytes()  # noqa: E731
        names = set(files)
        archive = None
    else:
        try:
            archive = zipfile.ZipFile(images)
        except zipfile.BadZipFile as err:
            raise WinogroundSourceError(f"{images}: not a zip file: {err}") from None
        members = {Path(m).stem: m for m in archive.namelist() if not m.endswith("/")}
        read = lambda stem: read_member(archive, members[stem], str(images))  # noqa: E731
        names = set(members)
    try:
        with open(jsonl, encoding="utf-8") as fh:
            for line_no, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as err:
                    raise WinogroundSourceError(f"{jsonl} line {line_no}: not JSON: {err}") from None
                missing = [c for c in _REQUIRED if c not in record]
                if missing:
                    raise WinogroundSourceError(f"{jsonl} line {line_no}: missing field(s) {missing}")
                stored = {}
                for col in _IMAGES:
                    stem = Path(str(record[col])).stem
                    if stem not in names:
                        raise WinogroundSourceError(f"{jsonl} line {line_no}: {col} {record[col]!r} is not in {images}")
                    stored[col] = {"bytes": read(stem), "path": f"{stem}.png"}
                yield replace(Example.of(record), **stored)
    finally:
        if archive is not None:
            archive.close()


def read_winoground(path: Path) -> list[Example]:
    """The examples of a local facebook/winoground copy (image bytes as they are)."""
    kind, files = find_source(path)
    rows = list(_parquet_rows(files) if kind == "parquet" else _jsonl_rows(files[0], files[1]))
    if not rows:
        raise WinogroundSourceError(f"{path}: no rows")
    ids = [r.id for r in rows]
    if len(set(ids)) != len(ids):
        raise WinogroundSourceError(f"{path}: duplicate ids {sorted({i for i in ids if ids.count(i) > 1})[:5]}")
    return rows


def build_local_winoground(source: Path, out: Path) -> int:
    """Convert the user's copy at ``source`` into the private dataset folder ``out``."""
    rows = read_winoground(source)
    if len(rows) != 400:
        print(f"note: {source} has {len(rows)} items (facebook/winoground has 400)", file=sys.stderr)
    meta = card_metadata([ConfigDecl(LOCAL_CONFIG, WINOGROUND_FEATURES, splits=("test",), default=True)], license="other",
                         license_name="winoground-license-agreement",
                         license_link="https://huggingface.co/datasets/facebook/winoground/blob/main/license_agreement.txt",
                         pretty_name="Winoground (private local copy)")
    write_card(out, meta, cards.body("winoground_local_body.md"))
    write_spec(out, LOCAL_SPEC_YAML, "winoground")  # the real Winoground, whatever the folder is called
    write_rows(out, LOCAL_CONFIG, "test", [asdict(r) for r in rows], WINOGROUND_FEATURES)
    return len(rows)


CARD_BODY = cards.body(WinogroundStyle.body)  # the card's prose, vlprobe/templates/winoground_style_body.md
