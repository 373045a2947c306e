"""``vlprobe build folder``: a user's folder of images + a CSV/JSONL/JSON of captions and foils -> a Hub dataset
folder. Image columns hold paths relative to the captions file; the source's ``vlprobe.yaml`` says which columns are
images, texts, gold and tags (without one, ``image, caption, foil...`` gets the obvious spec). Building into the same
``--out`` with another ``--config`` adds a config, the others kept."""

from __future__ import annotations

import argparse
import csv
import io
import itertools
import json
import logging
import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import datasets
import yaml

from ..dataset import folder as df
from ..dataset.images import encoded_file, to_pil
from ..dataset.reader import undecoded_features
from ..dataset.reading import CAPTIONS_BYTES, parse_json, read_text
from ..dataset.spec import IMAGE_SUFFIXES, SPEC_FILE, GoldMap, ItemSpec
from ..errors import DatasetError, SettingError
from ..storage.paths import check_config_name, check_split_name, inside
from . import Builder, cards, unchanged

T = TypeVar("T")
CAPTIONS_SUFFIXES = (".csv", ".jsonl", ".json")  # .json: one JSON array of records


@dataclass(frozen=True)
class Source:
    """What a build reads, read and checked: the captions file, its rows, the image columns, the spec, the image files."""

    table: Path
    rows: list[dict[str, Any]]
    image_cols: list[str]
    spec: ItemSpec
    spec_text: str
    spec_file: Path | None
    images: dict[str, Path]  # "row N column C (path)" of the first row naming it -> the file


class Folder(Builder[Source]):
    name = "folder"
    help = "a folder of images + a CSV/JSONL/JSON of captions and foils (your own instrument) -> a Hub dataset folder"
    needs = "your folder of images and a captions file: vlprobe build folder SOURCE --out DIR --license ID"
    generator = (*Builder.generator, "dataset/spec.py")  # IMAGE_SUFFIXES: which columns are guessed to be images

    def default_out(self) -> None:
        return None  # --out is required: a folder of the user's choosing, with other configs in it kept

    def add_arguments(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("source", type=Path, help="the folder holding the images and the captions file")
        p.add_argument("--captions", type=Path, default=None,
                       help="the CSV, JSONL or JSON (an array of records) file, relative to SOURCE (default: the only "
                            "*.csv/*.jsonl/*.json in SOURCE)")
        p.add_argument("--config", default="default", help="config name of this instrument (default: 'default'); "
                                                           "other configs in --out are kept")
        p.add_argument("--split", default="test", help="split name (default: test)")
        p.add_argument("--license", required=True,
                       help="licence of the images and texts, a Hub licence id (cc-by-4.0, cc0-1.0, mit, other ...)")
        p.add_argument("--spec", type=Path, default=None, help="the vlprobe.yaml to use (default: SOURCE/vlprobe.yaml)")
        p.add_argument("--image-columns", default=None,
                       help="comma-separated image columns (default: columns whose values all name image files)")
        p.add_argument("--pretty-name", default=None, help="card title (default: the --out folder name)")
        p.add_argument("--description", default="", help="one paragraph for the card")
        p.add_argument("--language", default="en", help="language code of the texts (default: en)")
        p.add_argument("--default", action="store_true", help="make this config the default one in --out")
        super().add_arguments(p)

    def plan(self, args: argparse.Namespace) -> Source:
        """The source read and checked (names, rows, image files, the spec); no image decoded yet."""
        source, out = Path(args.source), Path(args.out)
        if not source.is_dir():
            raise FileNotFoundError(f"{source}: the source folder does not exist")
        if out.exists() and not out.is_dir():
            raise SettingError(f"--out {out} is a file, not a folder; give a folder to write the dataset in")
        check_config_name(args.config, "--config")
        check_split_name(args.split, "--split")
        if not args.license or not args.license.strip():
            raise ValueError("--license: say under which licence the images and texts may be shared")
        table = _find_captions(source, args.captions)
        rows = _read_rows(table)
        if not rows:
            raise ValueError(f"{table}: no rows")
        columns = list(rows[0])
        given = [c.strip() for c in args.image_columns.split(",") if c.strip()] if args.image_columns else None
        image_cols = given or _guess_image_columns(rows, table.parent)
        if not image_cols:
            paths = [(c, r[c]) for r in rows for c in columns if isinstance(r[c], str) and ("/" in r[c] or "\\" in r[c])]
            hint = (f"; column {paths[0][0]!r} holds paths ({paths[0][1][:80]!r}), but not all of them name image files "
                    f"({', '.join(IMAGE_SUFFIXES)}) inside {table.parent}") if paths else ""
            raise ValueError(f"{table}: no column names image files (columns: {columns}){hint}; pass --image-columns")
        for i, row in enumerate(rows):  # a NUL byte is no text a model reads (and cuts C strings short)
            bad = next((c for c, v in row.items() if isinstance(v, str) and "\0" in v), None)
            if bad is not None:
                raise ValueError(f"{table} row {i + 1} column {bad!r}: holds a NUL byte (\\0); remove it")
        for col in image_cols:
            if col not in columns:
                raise ValueError(f"--image-columns: {table} has no column {col!r}; columns are {columns}")
        spec_file = Path(args.spec) if args.spec else source / SPEC_FILE
        if spec_file.is_file():  # the user's spec, else the common image/caption/foil shape
            spec = ItemSpec.from_file(spec_file)  # names the file on undecodable or malformed YAML
            spec_text = spec_file.read_text(encoding="utf-8")
        else:
            default = _default_spec(columns, image_cols, table)
            spec_text = "# written by `vlprobe build folder` (no vlprobe.yaml in the source folder)\n" + yaml.safe_dump(
                default, sort_keys=False, default_flow_style=None)
            spec = ItemSpec.from_dict(default, source=f"default spec for {table}")
        images: dict[str, Path] = {}
        for i, row in enumerate(rows):
            for col in image_cols:
                for rel in row[col] if isinstance(row[col], list) else [row[col]]:
                    where = f"{table} row {i + 1} column {col!r}"
                    if not isinstance(rel, str) or not rel:
                        raise ValueError(f"{where}: has no image path")
                    # relative to the captions file, never above it, links resolved (as `vlprobe evaluate` reads image
                    # paths): a captions file from elsewhere must not embed (and so publish) files from outside it
                    file = inside(table.parent, rel, f"{where}: image path")
                    if not file.exists() or file.is_dir():
                        raise FileNotFoundError(f"{where}: names {rel!r}, but {file} "
                                                f"{'is a folder' if file.is_dir() else 'does not exist'}")
                    images.setdefault(f"{where} ({rel})", file)
        return Source(table, rows, image_cols, spec, spec_text, spec_file if spec_file.is_file() else None, images)

    def files_read(self, args: argparse.Namespace, plan: Source) -> dict[str, unchanged.Read]:
        """The captions file (and the spec) and the images, by stamp."""
        read = {"captions": plan.table, **({"spec": plan.spec_file} if plan.spec_file else {})}
        return {"captions": unchanged.stamps(read), "images": unchanged.stamps({str(f): f for f in plan.images.values()})}

    def write(self, folder: Path, plan: Source, args: argparse.Namespace) -> None:
        """Every image embedded and every row made an item before anything is written; other configs kept."""
        out, config = Path(args.out), args.config
        records = _embed(plan)
        with df.progress_bars_off():  # no progress bars for a few rows
            features = _features(records, plan.image_cols)
            ds = datasets.Dataset.from_list(records, features=features)
            items = list(plan.spec.for_config(config).iter_items(ds.cast(undecoded_features(features)), config=config))
        _refuse_duplicate_ids([item.id for item in items], plan.table)
        card = Card.read(folder)
        if card.license not in (None, args.license):
            raise ValueError(f"{out}/README.md says license {card.license!r}, this build says {args.license!r}; one "
                             "dataset repo has one licence")
        meta = card.merged(df.ConfigDecl(config, features, (args.split,), default=True), args.default,
                           license=args.license, pretty_name=args.pretty_name or card.pretty_name or out.resolve().name,
                           language=args.language, n_rows=len(ds))
        spec_out = _spec_text(folder / SPEC_FILE, plan.spec_text, plan.spec, config)
        body = _card_body(Card.of(meta), args.description, plan.table.name,
                          spec_out if spec_out is not None else (folder / SPEC_FILE).read_text(encoding="utf-8"))
        with df.progress_bars_off():
            df.write_split(folder, config, args.split, ds)
        if spec_out is not None:
            (folder / SPEC_FILE).write_text(spec_out, encoding="utf-8")
        df.write_card(folder, meta, body)


def build_folder(source: str | Path, out: str | Path, *, license: str, captions: str | Path | None = None,
                 config: str = "default", split: str = "test", spec_path: str | Path | None = None,
                 image_columns: list[str] | None = None, pretty_name: str | None = None, description: str = "",
                 language: str = "en", make_default: bool = False, force: bool = False) -> Path:
    """``vlprobe build folder`` in Python: build (or add one config to) the dataset folder ``out``; returns ``out``.
    Everything is read and checked before the folder changes; a build that fails leaves ``out`` as it was (no
    folder where there was none); one from the same inputs into a folder they built does nothing."""
    args = argparse.Namespace(source=source, out=out, captions=captions, config=config, split=split, license=license,
                              spec=spec_path, image_columns=",".join(image_columns) if image_columns else None,
                              pretty_name=pretty_name, description=description, language=language,
                              default=make_default, force=force)
    return Folder().build(args)


def _embed(plan: Source) -> list[dict[str, Any]]:
    """The rows with each image's bytes in place of its path (each file read once, :data:`MAX_IMAGE_BYTES` in all)."""
    read: dict[str, bytes] = {}
    total = 0
    for where, file in plan.images.items():
        key = os.path.realpath(file)
        if key not in read:
            read[key] = encoded_file(file, where)  # bounded by size
            to_pil(read[key], where=where)
            total += len(read[key])
            if total > MAX_IMAGE_BYTES:
                raise ValueError(f"{where.rsplit(' (', 1)[0]}: the images named so far hold {total / (1 << 30):.1f} GiB, "
                                 f"more than one `vlprobe build folder` holds in memory ({MAX_IMAGE_BYTES >> 30} GiB); "
                                 "split the rows into configs (--config) of fewer images")
    records = []
    for row in plan.rows:
        rec = dict(row)
        for col in plan.image_cols:
            embedded = [{"bytes": read[os.path.realpath(inside(plan.table.parent, rel, col))], "path": Path(rel).name}
                        for rel in (row[col] if isinstance(row[col], list) else [row[col]])]
            rec[col] = embedded if isinstance(row[col], list) else embedded[0]
        records.append(rec)
    return records


def _refuse_duplicate_ids(ids: list[str], table: Path) -> None:
    """Per-item scores are keyed by the row id: two rows with one id would overwrite each other."""
    repeated = {i: n for i, n in Counter(ids).items() if n > 1}
    if repeated:
        rows: dict[str, list[int]] = {}
        for k, i in enumerate(ids):
            if i in repeated:
                rows.setdefault(i, []).append(k + 1)
        shown = "; ".join(f"{i!r} (rows {', '.join(map(str, r[:5]))}{', ...' if len(r) > 5 else ''})"
                          for i, r in list(rows.items())[:5])
        more = f" and {len(repeated) - 5} more" if len(repeated) > 5 else ""
        raise DatasetError(f"{table}: {len(repeated)} row id(s) used more than once: {shown}{more}; per-item scores "
                           "are keyed by the id, so give every row its own")


def _find_captions(source: Path, captions: str | Path | None) -> Path:
    if captions is not None:
        path = Path(captions)
        path = path if path.is_absolute() or path.is_file() else source / path
        if not path.is_file():
            raise FileNotFoundError(f"--captions {captions}: no such file (looked in {source})")
        return path
    found = sorted(p for p in source.iterdir() if p.suffix.lower() in CAPTIONS_SUFFIXES)
    if len(found) != 1:
        raise ValueError(
            f"{source}: expected one captions file (*.csv, *.jsonl or *.json), found {[p.name for p in found] or 'none'}; "
            f"pass --captions"
        )
    return found[0]


MAX_ROWS = 100_000  # rows of one build: every row and its image bytes are held in memory until the parquet is written
MAX_IMAGE_BYTES = 4 << 30  # the images of one build, in memory at once (each file read once, however many rows name it)


def _read_rows(path: Path) -> list[dict[str, Any]]:
    """The captions file's rows, within the bounds of :mod:`vlprobe.dataset.reading` and :data:`MAX_ROWS`."""
    suffix = path.suffix.lower()
    if suffix not in CAPTIONS_SUFFIXES:
        raise ValueError(f"{path}: the captions file must be .csv, .jsonl (one JSON object a line) or .json (a JSON "
                         f"array of objects)")
    text = read_text(path, "captions file", CAPTIONS_BYTES)

    def bounded(rows: Iterable[T]) -> list[T]:
        out = list(itertools.islice(rows, MAX_ROWS + 1))
        if len(out) > MAX_ROWS:
            raise DatasetError(f"{path}: has more than {MAX_ROWS:,} rows, more than one `vlprobe build folder` takes (it "
                               "holds every row and image in memory until the parquet is written); split it into "
                               "configs (--config) of fewer rows")
        return out

    if suffix == ".csv":
        try:
            rows = [dict(r) for r in bounded(csv.DictReader(io.StringIO(text, newline="")))]
        except csv.Error as err:
            raise DatasetError(f"{path}: not a readable CSV file: {err}") from None
        for i, r in enumerate(rows):
            if None in r or any(v is None for v in r.values()):
                raise ValueError(f"{path} row {i + 1}: has a different number of cells than the header")
        return rows
    if suffix == ".json":
        try:
            data = parse_json(text, str(path))
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}: not JSON: {err}") from None
        rows = bounded(iter(_json_array(path, data)))
    else:
        lines = ((i, line) for i, line in enumerate(text.splitlines()) if line.strip())
        rows = [_jsonl_row(path, i, line) for i, line in bounded(lines)]
    keys = list(rows[0]) if rows else []
    for i, row in enumerate(rows):
        if set(row) != set(keys):
            raise ValueError(f"{path}: row {i + 1} has keys {sorted(row)}, the first row {sorted(keys)}")
    return rows


def _jsonl_row(path: Path, i: int, line: str) -> dict[str, Any]:
    try:
        row = parse_json(line, f"{path} line {i + 1}")
    except json.JSONDecodeError as err:
        raise ValueError(f"{path} line {i + 1}: not JSON: {err}") from None
    if not isinstance(row, dict):
        raise ValueError(f"{path} line {i + 1}: each line must be a JSON object")
    return row


def _json_array(path: Path, data: object) -> list[dict[str, Any]]:
    if not isinstance(data, list):
        raise ValueError(f"{path}: a .json captions file must hold one JSON array of objects (one per row), not a "
                         f"{type(data).__name__}; or write one object a line as .jsonl")
    for i, row in enumerate(data):
        if not isinstance(row, dict):
            raise ValueError(f"{path} row {i + 1}: each element of the array must be a JSON object, not "
                             f"{type(row).__name__}")
    return data


def _guess_image_columns(rows: list[dict[str, Any]], base: Path) -> list[str]:
    cols = []
    for col in rows[0]:
        values = [r[col] for r in rows]
        flat = [v for x in values for v in (x if isinstance(x, list) else [x])]
        if flat and all(isinstance(v, str) and v.lower().endswith(IMAGE_SUFFIXES) for v in flat):
            cols.append(col)
    return cols


def _default_spec(columns: list[str], image_cols: list[str], table: Path) -> dict[str, Any]:
    foils = [c for c in columns if c.lower().startswith("foil")]
    if "caption" not in columns or not foils:
        raise ValueError(
            f"{table}: no vlprobe.yaml in the source folder, and the columns {columns} are not the simple "
            "image/caption/foil shape; write a vlprobe.yaml naming the image, text and gold columns (see vlprobe/dataset/spec.py)"
        )
    tags = [c for c in columns if c not in set(image_cols) | {"caption", "id"} | set(foils)]
    return {**({"id": "id"} if "id" in columns else {}), "images": list(image_cols), "texts": ["caption", *foils],
            "gold": [[1] + [0] * len(foils)] * len(image_cols), **({"tags": tags} if tags else {})}


def _features(records: list[dict[str, Any]], image_cols: list[str]) -> datasets.Features:
    others = [c for c in records[0] if c not in image_cols]
    inferred = datasets.Dataset.from_list([{c: r[c] for c in others} for r in records]).features if others else {}
    feats = {}
    for col in records[0]:
        if col in image_cols:
            feats[col] = datasets.List(datasets.Image()) if isinstance(records[0][col], list) else datasets.Image()
        else:
            feats[col] = inferred[col]
    return datasets.Features(feats)


def _size_category(n: int) -> str:
    for limit, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if n < limit:
            return label
    return "n>1M"


@dataclass(frozen=True)
class Card:
    """A card's YAML as ``vlprobe build folder`` merges into it: its other fields, configs and dataset_info."""

    fields: dict[str, Any]
    configs: list[dict[str, Any]]
    infos: list[dict[str, Any]]
    license: str | None = None
    pretty_name: str | None = None
    task_categories: list[str] | None = None
    tags: list[str] | None = None

    @classmethod
    def of(cls, meta: dict[str, Any]) -> Card:
        fields = {k: v for k, v in meta.items() if k not in ("configs", "dataset_info")}
        infos = meta.get("dataset_info") or []
        return cls(fields, list(meta.get("configs") or []),
                   [{"config_name": "default", **d} for d in (infos if isinstance(infos, list) else [infos])],
                   **{f: fields.get(f) for f in ("license", "pretty_name", "task_categories", "tags")})

    @classmethod
    def read(cls, folder: Path) -> Card:
        """The card of ``folder`` (an empty one without a README.md), with errors that name the file."""
        if not (folder / "README.md").is_file():
            return cls({}, [], [])
        try:
            return cls.of(df.read_card_metadata(folder))
        except (yaml.YAMLError, ValueError, UnicodeDecodeError) as err:
            why = " ".join(str(err).split())
            raise DatasetError(f"{folder / 'README.md'}: the card's YAML header cannot be read ({why}); fix it or build "
                               "into another --out") from None

    def names(self) -> list[str]:
        return [_config_name(c) for c in self.configs]

    def merged(self, decl: df.ConfigDecl, make_default: bool, *, license: str, pretty_name: str, language: str,
               n_rows: int) -> dict[str, Any]:
        """The card YAML with this config replaced or added, the others kept."""
        # card_metadata starts from an empty card, which huggingface_hub warns about; nothing is wrong.
        card_log = logging.getLogger("huggingface_hub.repocard")
        level = card_log.level
        card_log.setLevel(logging.ERROR)
        try:
            fresh = Card.of(df.card_metadata([decl], license=license))
        finally:
            card_log.setLevel(level)
        others = [c for c in self.configs if _config_name(c) != decl.name]
        if make_default or any(_is_default(c) for c in others):  # one default: this one, or the one there was
            others, entry = ([_not_default(c) for c in others], fresh.configs[0]) if make_default else (
                others, _not_default(fresh.configs[0]))
        else:
            entry = fresh.configs[0]
        new = not (self.fields or self.configs or self.infos)
        return {**self.fields, "license": license, "pretty_name": pretty_name,
                "language": [language] if isinstance(language, str) else language,
                "task_categories": self.task_categories or ["image-to-text"],
                "tags": sorted(set(self.tags or []) | {"vlprobe", "foils", "vision-and-language"}),
                **({"size_categories": [_size_category(n_rows)]} if new else {}),
                "dataset_info": [d for d in self.infos if _config_name(d) != decl.name] + fresh.infos,
                "configs": [*others, entry]}


def _config_name(entry: dict[str, Any]) -> str:
    return entry.get("config_name", "default")


def _is_default(entry: dict[str, Any]) -> bool:
    return bool(entry.get("default"))


def _not_default(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k != "default"}


def _spec_text(path: Path, spec_text: str, spec: ItemSpec, config: str) -> str | None:
    """What to write as ``vlprobe.yaml`` (None: keep it): the spec, or the folder's with a ``configs.<config>`` override."""
    if not path.is_file():
        return spec_text
    current = ItemSpec.from_file(path)
    a, b = current.for_config(config), spec.for_config(config)
    if (a.images, a.texts, a.gold, a.id, a.tags, a.context) == (b.images, b.texts, b.gold, b.id, b.tags, b.context):
        return None
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    mine = spec.for_config(config)
    gold = mine.gold.as_yaml() if isinstance(mine.gold, GoldMap) else mine.gold
    override = {"images": list(mine.images), "texts": list(mine.texts), "gold": gold, "tags": list(mine.tags),
                **({"id": mine.id} if mine.id else {}), **({"context": mine.context} if mine.context else {})}
    data = {**data, "configs": {**{name: dict(over) for name, over in current.overrides.items()}, config: override}}
    return ("# written by `vlprobe build folder`; configs.<name> overrides the top-level keys for that config\n"
            + yaml.safe_dump(data, sort_keys=False, default_flow_style=None))


def _card_body(card: Card, description: str, table_name: str, spec_text: str) -> str:
    configs = card.names()
    default = next((_config_name(c) for c in card.configs if _is_default(c)), configs[0])
    columns = {_config_name(d): [f.get("name") for f in d.get("features") or []] for d in card.infos}
    rows = [f"| `{c}`{' (default)' if c == default else ''} | " + ", ".join(f"`{f}`" for f in columns.get(c, [])) + " |"
            for c in configs]
    return cards.body("folder_body.md").format(
        name=card.pretty_name or "dataset", description=f"{description.strip()}\n\n" if description else "",
        table=table_name, configs="\n".join(rows), default=default, spec=spec_text.strip(), license=card.license)
