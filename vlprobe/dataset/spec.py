"""How rows of a dataset become items: a small declarative file, ``vlprobe.yaml`` (docs/datasets.md)::

    # vlprobe.yaml
    id: id                    # column with a unique row id (default: the row index)
    images: [image]           # image columns, in order; m = their count (a list column adds all its elements)
    texts: [caption, foil]    # text columns, in order; n = their count (a list column adds all its elements)
    gold: [[1, 0]]            # a literal m x n 0/1 matrix ...
    # gold: gold              # ... or a column holding one per row ...
    # gold: {column: label, map: {true: [[1, 0]], false: [[0, 1]]}}   # ... or a column's value mapped to one
    tags: [instrument]        # columns whose values become tags "column=value" (list columns: one tag each)
    context: caption          # optional: a text describing the image (TraVLR's caption), for --modality
    configs:                  # optional per-config overrides of any key above (benchmark aside)
      some_config: {texts: [caption, foil_1, foil_2], gold: [[1, 0, 0]]}
    benchmark: valse          # optional: the benchmark these rows are (written by its builder)
    data_version: 2152d90     # optional: the upstream version of the data it was built from (results record it)

Datasets on the Hub without such a file get a built-in spec from ``vlprobe/specs/<name>.yaml``.

Modalities (TraVLR's): ``image``; ``caption`` (blank images, texts ``"<query> <caption>"``: a model truncates from
the end, and a caption alone can fill CLIP's 77 tokens); ``both`` (the real images, the texts so).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import yaml

from ..benchmarks import BenchmarkError, by_old_name, find, get
from ..errors import DatasetError
from ..storage.locations import SPEC_FILE
from .items import Item, ItemError
from .reading import SPEC_BYTES, FileError, parse_yaml, read_text

if TYPE_CHECKING:
    import datasets

MODALITIES = ("image", "caption", "both")
_KEYS = {"id", "images", "texts", "gold", "tags", "context", "configs", "description", "benchmark", "data_version"}
_CONFIG_KEYS = _KEYS - {"configs", "benchmark", "data_version"}  # what configs.<name> may override: a folder is one benchmark
_BUILTIN_DIR = Path(__file__).parents[1] / "specs"


@dataclass(frozen=True)
class GoldMap:
    """``gold: {column: ..., map: {value: matrix}}``: the gold matrix of a row is its ``column``'s value mapped."""

    column: str
    map: Mapping[object, list[list[int]]]

    def as_yaml(self) -> dict[str, object]:
        """The mapping as YAML writes it."""
        return {"column": self.column, "map": dict(self.map)}


Gold = list[list[int]] | str | GoldMap


class SpecError(ValueError):
    """A spec file that cannot be used; the message names the file and key."""


class DuplicateIdError(DatasetError, ValueError):
    """Two or more rows of one config/split share an id (per-item scores are keyed by it)."""


def _refuse_repeats(ids: Iterable[object], where: str, column: str) -> None:
    rows_of: dict[str, list[int]] = {}
    for index, value in enumerate(ids):
        rows_of.setdefault(str(value), []).append(index)
    dups = {k: v for k, v in rows_of.items() if len(v) > 1}
    if not dups:
        return
    shown = ", ".join(f"{k!r} (rows {', '.join(map(str, v[:4]))}{', ...' if len(v) > 4 else ''})"
                      for k, v in list(dups.items())[:10])
    more = f" and {len(dups) - 10} more" if len(dups) > 10 else ""
    raise DuplicateIdError(f"{where}: {len(dups)} id(s) of column {column!r} occur more than once: {shown}{more}; "
                           f"per-item scores are keyed by the id, so each row needs its own (fix the data, or point "
                           f"the spec's 'id' at a unique column)")


@dataclass(frozen=True)
class ItemSpec:
    """How the rows of one dataset become items (the parsed ``vlprobe.yaml``, see the module doc)."""

    images: tuple[str, ...]
    texts: tuple[str, ...]
    gold: Gold
    id: str | None = None
    tags: tuple[str, ...] = ()
    context: str | None = None
    source: str = "<dict>"
    description: str = ""
    overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    benchmark: str | None = None  # a registered benchmark's name (vlprobe.benchmarks), or None
    data_version: str | None = None  # the upstream version of the data the folder was built from, as recorded

    @classmethod
    def from_dict(cls, data: object, source: str = "<dict>") -> ItemSpec:
        """The spec a parsed ``vlprobe.yaml`` holds; a :class:`SpecError` naming ``source`` and the key at fault."""
        if not isinstance(data, Mapping):
            raise SpecError(f"{source}: a spec must be a mapping of keys, got {type(data).__name__}")
        unknown = set(data) - _KEYS
        if unknown:
            raise SpecError(f"{source}: unknown key(s) {sorted(unknown)}; known keys: {sorted(_KEYS)}")
        for key in ("images", "texts", "gold"):
            if key not in data:
                raise SpecError(f"{source}: missing required key {key!r}")
        overrides = data.get("configs") or {}
        if not isinstance(overrides, Mapping):
            raise SpecError(f"{source}: 'configs' must map config names to overrides")
        for name, over in overrides.items():
            if not isinstance(over, Mapping) or set(over) - _CONFIG_KEYS:
                raise SpecError(f"{source}: configs.{name} must be a mapping of spec keys "
                                f"({', '.join(sorted(_CONFIG_KEYS))})")
        return cls(**{key: parse(data.get(key), key, source) for key, parse in _FIELDS.items()}, source=source,
                   overrides={str(k): dict(v) for k, v in overrides.items()})

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> ItemSpec:
        """The spec file ``path`` (read within :mod:`.reading`'s bounds); a :class:`SpecError` naming it otherwise."""
        path = Path(path)
        try:
            data = parse_yaml(read_text(path, "spec", SPEC_BYTES), str(path))
        except FileNotFoundError:
            raise SpecError(f"{path}: spec file not found") from None
        except IsADirectoryError:
            raise SpecError(f"{path}: is a folder, not a spec file") from None
        except FileError as err:
            raise SpecError(str(err)) from None
        except yaml.YAMLError as err:
            raise SpecError(yaml_error(path, err)) from None
        return cls.from_dict(data or {}, source=str(path))

    def for_config(self, config: str | None) -> ItemSpec:
        """This spec with the overrides of ``config`` applied (itself when there are none)."""
        over = self.overrides.get(config or "")
        if not over:
            return self
        merged = {**{key: getattr(self, key) for key in _FIELDS}, **over}
        return ItemSpec.from_dict(merged, source=f"{self.source} (configs.{config})")

    def to_item(self, row: Mapping[str, Any], index: int = 0, config: str = "", modality: str = "image") -> Item:
        """Convert one dataset row to an :class:`Item`; errors name the row and the column."""
        row_id = str(row[self.id]) if self.id and self.id in row else str(index)
        where = f"row {index} (id {row_id!r}) of config {config!r}" if config else f"row {index} (id {row_id!r})"
        if modality not in MODALITIES:
            raise SpecError(f"unknown modality {modality!r}; choose one of {MODALITIES}")
        images = self._gather(row, self.images, where)
        texts = self._gather(row, self.texts, where)
        empty = [col for col in self.texts if any(v is None or (isinstance(v, str) and not v.strip())
                                                  for v in _values(row[col]))]
        if empty:  # a JSONL null and a CSV's empty cell alike: no text to score
            raise ItemError(f"{where}: text column(s) {empty} hold no text (null or empty); every text must be a "
                            "non-empty string")
        gold = self._gold(row, where)
        if modality != "image":
            if not self.context:
                raise SpecError(
                    f"{self.source}: modality {modality!r} needs a 'context' column (a text describing the image)"
                )
            context = _column(row, self.context, where)
            texts = [f"{t} {context}" for t in texts]  # the text first: truncation cuts the context
            if modality == "caption":
                from .images import blank_like  # noqa: PLC0415 (PIL: only for a caption-only modality)

                images = [blank_like(im) for im in images]
        tags = [f"{col}={v}" for col in self.tags for v in _values(_column(row, col, where)) if v is not None and v != ""]
        try:
            return Item(id=row_id, images=tuple(images), texts=tuple(texts), gold=np.asarray(gold), tags=tuple(tags),
                        config=config)
        except ItemError as err:
            raise ItemError(f"{where}: {err}") from None

    def check_columns(self, features: Mapping[str, Any], where: str, first: Mapping[str, Any] | None = None) -> None:
        """Refuse, naming the spec, the key and the column, a spec whose columns ``features`` lacks, or whose
        ``images:`` names a column holding neither images nor, in ``first`` (the first row), image file paths."""
        named = [("id", self.id), ("context", self.context)] + [("images", c) for c in self.images] + \
            [("texts", c) for c in self.texts] + [("tags", c) for c in self.tags]
        if isinstance(self.gold, str):
            named.append(("gold", self.gold))
        elif isinstance(self.gold, GoldMap):
            named.append(("gold", self.gold.column))
        for key, column in named:
            if column is not None and column not in features:
                raise SpecError(f"{where}: {self.source} names column {column!r} under {key}:, which the dataset does "
                                f"not have; its columns: {', '.join(features)}")
        for column in self.images:
            kind = features[column]
            inner = getattr(kind, "feature", None) or (kind[0] if isinstance(kind, list) and kind else None)
            paths = [v for v in _values((first or {}).get(column)) if isinstance(v, str)]
            if paths and all(p.lower().endswith(IMAGE_SUFFIXES) for p in paths):
                continue  # image file paths (opened inside the dataset folder)
            if type(kind).__name__ != "Image" and type(inner).__name__ != "Image":
                raise SpecError(f"{where}: {self.source} lists column {column!r} under images:, but it holds "
                                f"{getattr(kind, 'dtype', type(kind).__name__)}, not images; list it under texts: "
                                "or tags:")

    def check_unique_ids(self, dataset: datasets.Dataset, limit: int | None = None, where: str = "") -> None:
        """Refuse a dataset (its first ``limit`` rows) whose id column, read alone, repeats (:class:`DuplicateIdError`)."""
        if not self.id or self.id not in dataset.column_names:
            return  # to_item names a missing column
        n = len(dataset) if limit is None else min(limit, len(dataset))
        column = dataset.select_columns([self.id])
        _refuse_repeats((column.select(range(n)) if n < len(dataset) else column)[self.id], where or self.source, self.id)

    def iter_items(
        self, rows: Iterable[Mapping[str, Any]], config: str = "", modality: str = "image"
    ) -> Iterator[Item]:
        """Items of ``rows``; duplicate ids refused (a Dataset's before the first item, others' at the end)."""
        spec = self.for_config(config)
        where = f"config {config!r}" if config else spec.source
        if hasattr(rows, "column_names"):
            spec.check_unique_ids(cast("datasets.Dataset", rows), where=where)
        ids: list[str] = []
        for index, row in enumerate(rows):
            item = spec.to_item(row, index=index, config=config, modality=modality)
            ids.append(item.id)
            yield item
        if spec.id:
            _refuse_repeats(ids, where, spec.id)

    def _gather(self, row: Mapping[str, Any], columns: tuple[str, ...], where: str) -> list[Any]:
        return [v for col in columns for v in _values(_column(row, col, where))]

    def _gold(self, row: Mapping[str, Any], where: str) -> object:
        gold = self.gold
        if isinstance(gold, str):
            return _column(row, gold, where)
        if isinstance(gold, GoldMap):
            value = _column(row, gold.column, where)
            for key, matrix in gold.map.items():
                if key == value or str(key).lower() == str(value).lower():
                    return matrix
            raise ItemError(
                f"{where}: column {gold.column!r} has value {value!r}, which the spec's gold map "
                f"({self.source}) does not cover: {list(gold.map)}"
            )
        return gold


IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".gif", ".bmp", ".tif", ".tiff")


def yaml_error(path: str | os.PathLike[str], err: yaml.YAMLError) -> str:
    """A YAML error in one line: the file, line and column, and what is wrong (PyYAML's spans several)."""
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    where = f"{path} line {mark.line + 1} column {mark.column + 1}" if mark is not None else str(path)
    what = ": ".join(p for p in (getattr(err, "context", None), getattr(err, "problem", None)) if p) or \
        " ".join(str(err).split())
    return f"{where}: not valid YAML: {what}"


def _values(cell: object) -> list[Any]:
    """A cell's values: the elements of a list column's cell, else the cell itself."""
    return list(cell) if isinstance(cell, (list, tuple)) else [cell]


def _names(value: object, key: str, source: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise SpecError(f"{source}: {key!r} must be a column name or a list of column names, got {value!r}")


def _benchmark(value: object, key: str, source: str) -> str | None:
    """The spec's ``benchmark``: None, or the name of a registered benchmark."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise SpecError(f"{source}: 'benchmark' must be a benchmark's name, got {value!r}")
    try:
        return get(value, where=source).name
    except BenchmarkError as err:
        raise SpecError(f"{err}; leave the key out for a dataset of your own") from None


def _version(value: object, key: str, source: str) -> str | None:
    """The spec's ``data_version``: None, or a version's name (a commit, a release)."""
    if value is None:
        return None
    if not isinstance(value, (str, int)) or isinstance(value, bool) or not str(value).strip():
        raise SpecError(f"{source}: 'data_version' must name a version of the data (an upstream commit, a release), "
                        f"got {value!r}")
    return str(value).strip()


def dataset_version(spec: ItemSpec, benchmark: str | None) -> str | None:
    """The version of a dataset's data: its ``vlprobe.yaml``'s, else the one ``benchmark`` declares, else None."""
    if spec.data_version:
        return spec.data_version
    bench = find(benchmark)
    return (bench.data_version or None) if bench is not None else None


def _gold_form(gold: object, key: str, source: str) -> Gold:
    """The spec's ``gold`` (``key``), checked to be one of its three forms."""
    if isinstance(gold, (str, GoldMap)):
        return gold
    if isinstance(gold, Mapping):
        column, table = gold.get("column"), gold.get("map")
        if set(gold) != {"column", "map"} or not isinstance(table, Mapping) or not table:
            raise SpecError(f"{source}: a gold mapping needs exactly 'column' and a non-empty 'map'")
        return GoldMap(str(column), table)
    if isinstance(gold, list) and gold and all(isinstance(r, list) for r in gold):
        return gold
    raise SpecError(f"{source}: 'gold' must be a matrix like [[1, 0]], a column name, or {{column, map}}; got {gold!r}")


def _as_given(value: object, key: str, source: str) -> object:
    return value  # a column name (id, context), checked against the dataset's columns when it is read


# How each key of a spec is read into its field: (value or None, key, source) -> field, or a SpecError naming them
_FIELDS: dict[str, Callable[[object, str, str], Any]] = {
    "images": _names, "texts": _names, "gold": _gold_form, "id": _as_given,
    "tags": lambda value, key, source: _names(value or [], key, source), "context": _as_given,
    "description": lambda value, key, source: str(value or ""), "benchmark": _benchmark, "data_version": _version,
}


def _column(row: Mapping[str, Any], col: str, where: str) -> object:
    try:
        return row[col]
    except KeyError:
        raise ItemError(f"{where}: has no column {col!r}; columns are {sorted(row)}") from None


def dataset_benchmark(dataset: str, spec: ItemSpec) -> tuple[str | None, str]:
    """The benchmark ``dataset``'s rows are (the spec's, else the one an old folder's name meant, with a note)."""
    if spec.benchmark:
        return spec.benchmark, ""
    old = by_old_name(str(dataset))
    if old is None:
        return None, ""
    return old.name, (f"{dataset}: no benchmark recorded in {spec.source} (a folder built before vlprobe recorded "
                      f"it), so it is taken as {old.name} from the folder's name; rebuild it, or add "
                      f"`benchmark: {old.name}` to that file")


def find_spec(dataset: str, spec_path: str | None = None) -> ItemSpec:
    """The item spec of ``dataset``: ``spec_path``, else its ``vlprobe.yaml``, else a built-in one named after it."""
    if spec_path:
        return ItemSpec.from_file(spec_path)
    local = Path(dataset)
    if local.is_dir():
        if (local / SPEC_FILE).is_file():
            return ItemSpec.from_file(local / SPEC_FILE)
        builtin = _BUILTIN_DIR / f"{local.resolve().name.lower()}.yaml"
        if builtin.is_file():
            return ItemSpec.from_file(builtin)
        raise SpecError(
            f"{local}: no {SPEC_FILE} in this folder; write one (see vlprobe/dataset/spec.py) or pass --spec FILE"
        )
    builtin = _BUILTIN_DIR / f"{dataset.split('/')[-1].lower()}.yaml"
    try:
        from huggingface_hub import hf_hub_download  # noqa: PLC0415 (the Hub's client: only for a Hub id)

        path = hf_hub_download(repo_id=dataset, filename=SPEC_FILE, repo_type="dataset")
        return ItemSpec.from_file(path)
    except Exception as err:  # offline, missing file, gated repo: fall back to a built-in spec
        if builtin.is_file():
            return ItemSpec.from_file(builtin)
        raise SpecError(
            f"{dataset!r}: not a local folder, and no {SPEC_FILE} could be read from the Hub ({type(err).__name__}); "
            f"pass a local folder or --spec FILE"
        ) from None

