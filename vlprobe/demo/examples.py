"""Items to try and to score: the gallery, a dataset's configs, splits and rows with items, and stratified samples."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..dataset.images import to_pil
from ..dataset.items import Item, ItemError
from ..dataset.spec import SpecError, find_spec
from ..errors import DatasetError
from ..storage.locations import DEFAULT_DATASETS
from .score import item_shape, unknown_words
from .settings import Settings, SpaceError

if TYPE_CHECKING:
    from datasets import Dataset
    from transformers import PreTrainedTokenizerBase

    from ..dataset.reader import DeclaredConfig
    from ..dataset.spec import ItemSpec

# (name, shape, scenes of (shape, colour, row, column) objects, captions, foils), in mini-clip's vocabulary too
SCENES = (
    ("Colour foil", "pairwise", ([("circle", "red", 1, 1), ("square", "blue", 3, 3)],),
     ["a red circle and a blue square"], ["a red circle and a green square"]),
    ("Two captions, two foils", "set", ([("triangle", "green", 2, 1)],),
     ["a green triangle", "there is a green triangle"], ["a yellow triangle", "there is a green circle"]),
    ("Swapped relation", "group", ([("circle", "red", 2, 0), ("square", "blue", 2, 3)],
                                   [("square", "blue", 2, 0), ("circle", "red", 2, 3)]),
     ["a red circle left of a blue square", "a blue square left of a red circle"], []),
)
GALLERY_SLOTS = 6  # buttons the gallery shows at most


@dataclass(frozen=True)
class Example:
    """One gallery example: a button's label, the item's shape, its image files and texts."""

    key: str
    label: str
    shape: str
    images: tuple[str, ...]
    captions: tuple[str, ...]
    foils: tuple[str, ...]

    def fields(self) -> tuple[str, str | None, str, str]:
        """(image 1, image 2 or None, captions text, foils text) for the Score tab."""
        return (self.images[0], self.images[1] if len(self.images) > 1 else None,
                "\n".join(self.captions), "\n".join(self.foils))


def scene_examples(folder: Path) -> list[Example]:
    """The rendered scenes (vlprobe's scene renderer, into ``folder``)."""
    from ..scenes.model import Scene, SceneObject
    from ..scenes.render import render

    out = []
    for k, (name, shape, scenes, captions, foils) in enumerate(SCENES):
        paths = []
        for j, objects in enumerate(scenes, 1):
            path = Path(folder) / f"scene{k}_{j}.png"
            if not path.is_file():
                render(Scene(objects=tuple(SceneObject(*o) for o in objects)), size=256).save(path)
            paths.append(str(path))
        out.append(Example(f"scene:{k}", f"{name} ({shape})", shape, tuple(paths), tuple(captions), tuple(foils)))
    return out


def dataset_example(settings: Settings, dataset: str, folder: Path) -> Example | None:
    """A dataset's first row as a gallery example (its images saved into ``folder``); None if it cannot be."""
    try:
        configs = dataset_configs(settings, dataset)
        if not configs:
            return None
        config = configs[0]
        name = dataset_name(settings, dataset)
        image_1, image_2, captions, foils = example_fields(settings, dataset, config, 0)
    except Exception:  # noqa: BLE001  (a dataset that cannot be read now, a Hub one offline: no example from it)
        return None
    paths = []
    for j, image in enumerate((image_1, image_2), 1):
        if image is not None:
            path = Path(folder) / f"{name}_{config}_{j}.png"
            to_pil(image, where=name).save(path)
            paths.append(str(path))
    caps, fls = tuple(captions.splitlines()), tuple(foils.splitlines()) if foils else ()
    shape = item_shape(len(paths), len(caps) if len(paths) == 1 else 2, len(caps) + len(fls))
    return Example(f"dataset:{name}/{config}", f"{name}: {config} ({shape})", shape, tuple(paths), caps, fls)


def gallery(settings: Settings, folder: Path, datasets: Sequence[str]) -> list[Example]:
    """One item of each dataset (those with photos first), then the rendered scenes."""
    ordered = sorted(datasets, key=lambda d: Path(d).name in DEFAULT_DATASETS)  # stable: photos first
    found = [dataset_example(settings, d, folder) for d in ordered]
    return [e for e in found if e is not None] + scene_examples(folder)


def readable(examples: Sequence[Example], tokenizer: PreTrainedTokenizerBase | None) -> list[Example]:
    """The examples with no word that the model's tokenizer reads as its unknown token; all when it cannot say."""
    if tokenizer is None:
        return list(examples)
    holder = type("Tok", (), {"tokenizer": tokenizer})()
    return [e for e in examples if not unknown_words(holder, e.captions + e.foils)]


# ---- datasets: folders (and Hub ids an owner listed) --------------------------------------------

def dataset_name(settings: Settings, dataset: str | None) -> str:
    source = settings.resolve_dataset(dataset)
    return source.name if isinstance(source, Path) else str(source)


@functools.lru_cache(maxsize=64)
def _card_configs(folder: str, stamp: tuple[int, int]) -> tuple[DeclaredConfig, ...]:
    from ..dataset.reader import declared_configs as card_configs

    return tuple(card_configs(folder))


def declared_configs(folder: Path) -> list[DeclaredConfig]:
    """The configs a folder's card declares, read once per version of the card (VALSE's takes most of a second)."""
    try:
        st = (Path(folder) / "README.md").stat()
    except OSError:
        st = None
    return list(_card_configs(str(folder), (st.st_mtime_ns, st.st_size) if st else (0, 0)))


def split_rows(folder: Path, config: str) -> dict[str, int]:
    """{split: rows} of one config of a built folder, from its parquet footers (an unreadable file: 0 rows)."""
    import pyarrow.parquet as pq

    out: dict[str, int] = {}
    for c in declared_configs(folder):
        if c.name != config:
            continue
        for split, patterns in c.data_files.items():
            n = 0
            for pattern in patterns:
                for f in folder.glob(pattern):
                    try:
                        n += pq.ParquetFile(f).metadata.num_rows
                    except Exception:  # noqa: BLE001  (an empty or broken file holds no row the page can read)
                        pass
            out[split] = out.get(split, 0) + n
    return out


def build_hint(folder: Path) -> str:
    """How to build a folder's missing configs: its `vlprobe build` command when there is one."""
    from ..builders import builders

    return f"`vlprobe build {folder.name}`" if folder.name in builders() else "its own build script"


def dataset_configs(settings: Settings, dataset: str | None) -> list[str]:
    """The configs of a dataset that have rows in this build (a Hub id: all of its configs)."""
    from ..dataset.reader import list_configs

    source = settings.resolve_dataset(dataset)
    try:
        if not isinstance(source, Path):
            return list_configs(source)
        return [c.name for c in declared_configs(source) if any(split_rows(source, c.name).values())]
    except DatasetError as err:
        raise SpaceError(str(err)) from None
    except Exception as err:  # noqa: BLE001  (a Hub id that cannot be listed now)
        raise SpaceError(f"cannot list the configs of {Path(str(dataset)).name!r} "
                         f"({type(err).__name__}); try again later") from None


def dataset_splits(settings: Settings, dataset: str | None, config: str | None) -> list[str]:
    """A config's splits that have rows, ``test``-like first; a config with none is refused saying how to build it."""
    from ..dataset.reader import config_splits, list_splits

    source = settings.resolve_dataset(dataset)
    if not config:
        raise SpaceError(f"choose a config of {dataset_name(settings, dataset)!r} in the Config box")
    try:
        if not isinstance(source, Path):
            return list_splits(source, config)
        declared = next((c for c in declared_configs(source) if c.name == config), None)
        splits = config_splits(source, config) if declared is None else list(declared.data_files)
        splits = sorted(splits or ["train"], key=lambda s: (not s.startswith("test"), splits.index(s)))
    except DatasetError as err:
        raise SpaceError(str(err)) from None
    except Exception as err:  # noqa: BLE001
        raise SpaceError(f"cannot list the splits of {source}/{config} ({type(err).__name__}); try again later") from None
    rows = split_rows(source, config)
    with_rows = [s for s in splits if rows.get(s)]
    if not with_rows:
        raise SpaceError(f"{source.name}/{config} has no rows in this build; build it with {build_hint(source)} "
                         "(with its images) or choose another config")
    return with_rows


def open_split(settings: Settings, dataset: str | None, config: str | None, split: str | None = None) -> tuple[Any, Any, str]:
    """(rows as a ``datasets.Dataset`` with images left encoded, the dataset's spec, the split)."""
    from ..dataset.reader import undecoded_features
    from ..storage.arrow_cache import load_folder_split

    source = settings.resolve_dataset(dataset)
    name = dataset_name(settings, dataset)
    if not config:
        raise SpaceError(f"choose a config of {name!r} in the Config box")
    splits = dataset_splits(settings, dataset, config)
    split = split or splits[0]
    if split not in splits:
        raise SpaceError(f"{name}/{config} has no split {split!r} with rows; choose one of: {', '.join(splits)}")
    try:
        spec = find_spec(str(source))
        if isinstance(source, Path):
            ds = load_folder_split(source, config, split)  # never a stale cache after a rebuild
        else:
            import datasets

            ds = datasets.load_dataset(source, config, split=split)
        for column, feature in ds.features.items():  # the engine hashes the encoded bytes and decodes them itself
            if feature != undecoded_features(feature):
                ds = ds.cast_column(column, undecoded_features(feature))
    except SpecError as err:
        raise SpaceError(str(err)) from None
    except (ValueError, FileNotFoundError, OSError) as err:
        raise SpaceError(f"cannot load {name}/{config}/{split}: {str(err).splitlines()[0]}") from None
    return ds, spec, split


def load_items(settings: Settings, dataset: str | None, config: str | None, split: str | None = None,
               limit: int | None = None, start: int = 0, rows: Sequence[int] | None = None) -> list[Item]:
    """Rows ``start .. start+limit`` of a config's split (or the rows numbered in ``rows``) as items."""
    ds, spec, split = open_split(settings, dataset, config, split)
    name = dataset_name(settings, dataset)
    if rows is not None:
        picked = ds.select(list(rows))
    else:
        if not 0 <= start < len(ds):
            raise SpaceError(f"Row: {name}/{config}/{split} has rows 0 to {len(ds) - 1:,}; row {start} does not exist")
        picked = ds.select(range(start, len(ds) if limit is None else min(len(ds), start + limit)))
    try:
        return list(spec.iter_items(picked, config=config))
    except (ItemError, SpecError) as err:
        raise SpaceError(str(err)) from None


def check_row(value: str | float | None) -> int:
    """The Row box's value as a row number, or one sentence naming the box (an empty box is not row 0)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        raise SpaceError("Row: the box is empty; type a row number from 0")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise SpaceError(f"Row: {value!r} is not a number; type a row number from 0") from None
    if not np.isfinite(number) or number != int(number) or number < 0:
        raise SpaceError(f"Row: {value} is not a row number; type a whole number from 0")
    return int(number)


def example_fields(settings: Settings, dataset: str | None, config: str | None,
                   index: str | float | None) -> tuple[Any, Any, str, str]:
    """(image 1, image 2 or None, captions text, foils text) of one dataset row, for the Score tab."""
    item = load_items(settings, dataset, config, None, limit=1, start=check_row(index))[0]
    gold = item.gold
    if item.m == 1:
        captions = [t for j, t in enumerate(item.texts) if gold[0, j]]
        foils = [t for j, t in enumerate(item.texts) if not gold[0, j]]
    elif item.m == 2 and all(gold[i].sum() == 1 for i in range(2)) and gold[0].argmax() != gold[1].argmax():
        captions = [item.texts[int(gold[i].argmax())] for i in range(2)]
        foils = [t for j, t in enumerate(item.texts) if not gold[:, j].any()]
    else:
        raise SpaceError(f"item {item.id!r} has {item.m} images and {item.n} texts, more than the Score tab "
                         "shows; score it in the Benchmark tab")
    if not foils and item.m == 1:
        raise SpaceError(f"item {item.id!r} has no foil (all its texts are true)")
    images = [to_pil(im, where=f"item {item.id!r}") for im in item.images]
    return images[0], (images[1] if item.m == 2 else None), "\n".join(captions), "\n".join(foils)


# ---- a stratified sample of a split -------------------------------------------------------------

@dataclass
class Sample:
    """Rows of a split picked for a run (in the split's order), the column stratified on, and rows per value."""

    rows: list[int]
    of: int  # rows in the split
    column: str = ""
    counts: dict[str, int] | None = None
    seed: int = 0

    def describe(self) -> str:
        if len(self.rows) == self.of:
            return f"all {self.of:,} items"
        if not self.column:
            return f"{len(self.rows):,} of {self.of:,} items, drawn at random (seed {self.seed})"
        parts = ", ".join(f"{n:,} {value}" for value, n in (self.counts or {}).items())
        return (f"{len(self.rows):,} of {self.of:,} items, sampled across {self.column} "
                f"(stratified, seed {self.seed}): {parts}")

    def record(self) -> dict[str, Any]:
        return {"rows": len(self.rows), "of": self.of, "stratified_on": self.column or None,
                "per_value": self.counts, "seed": self.seed}


def _strata_column(ds: Dataset, spec: ItemSpec, configs: Sequence[str]) -> tuple[str, list[str]]:
    """The tag column to stratify on and its value per row: the first whose values are the folder's configs (an
    ``all`` config's), else the first that varies; ("", []) when none does."""
    columns = [c for c in spec.tags if c in ds.column_names]
    if not columns:
        return "", []
    table = ds.select_columns(columns).to_dict()
    values = {c: [str(v[0] if isinstance(v, (list, tuple)) and v else v) for v in table[c]] for c in columns}
    varied = [c for c in columns if len(set(values[c])) > 1]
    for c in varied:
        if set(values[c]) <= set(configs):
            return c, values[c]
    return (varied[0], values[varied[0]]) if varied else ("", [])


def sample_rows(ds: Dataset, spec: ItemSpec, n: int, configs: Sequence[str] = (), seed: int = 0) -> Sample:
    """``n`` rows of ``ds`` drawn across a tag column's values (:func:`_strata_column`) in proportion to their sizes
    (largest remainders, a tie to the smaller value, each at least one row when ``n`` allows)."""
    total = len(ds)
    if n >= total:
        return Sample(rows=list(range(total)), of=total, seed=seed)
    rng = np.random.default_rng(seed)
    column, values = _strata_column(ds, spec, configs)
    if not column:
        return Sample(rows=sorted(int(i) for i in rng.choice(total, size=n, replace=False)), of=total, seed=seed)
    groups: dict[str, list[int]] = {}
    for i, v in enumerate(values):
        groups.setdefault(v, []).append(i)
    names = sorted(groups)
    sizes = np.array([len(groups[v]) for v in names], dtype=float)
    quota = sizes * n / total
    take = np.floor(quota).astype(int)
    if n >= len(names):
        take = np.maximum(take, 1)
    while take.sum() > n:  # the minimum of one pushed past n: take back where most is over the share, never below one
        spare = [k for k in range(len(names)) if take[k] > 1]
        take[max(spare, key=lambda k: take[k] - quota[k])] -= 1
    for k in sorted(range(len(names)), key=lambda k: (-(quota[k] - take[k]), sizes[k])):  # ties: the smaller value
        if take.sum() >= n:
            break
        if take[k] < sizes[k]:
            take[k] += 1
    picked: list[int] = []
    counts: dict[str, int] = {}
    for v, t in zip(names, take):
        if t > 0:
            picked += [int(i) for i in rng.choice(groups[v], size=int(t), replace=False)]
            counts[v] = int(t)
    return Sample(rows=sorted(picked), of=total, column=column, counts=counts, seed=seed)
