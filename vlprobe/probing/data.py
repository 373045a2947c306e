"""The TraVLR-shaped splits a probe reads, loaded as ``vlprobe evaluate`` loads them, and the checks of their rows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..dataset.spec import SpecError, find_spec
from ..dataset.splits import checked_image_paths, load_split
from ..errors import DatasetError
from ..names import did_you_mean, find_dataset
from .settings import TRAIN, TRAVLR_COLUMNS, TRAVLR_SHAPE, VALIDATION, ProbeSettingError

# vlprobe.dataset.reader is imported where used: it imports datasets (3.9 s), which a misspelt name never needs.


@dataclass
class Split:
    """One config/split: its memory-mapped rows, read a chunk at a time, and its labels (held in memory)."""

    task: str
    split: str
    labels: np.ndarray
    table: Any = None       # datasets.Dataset
    spec: Any = None
    info: dict = field(default_factory=dict)
    text_table: Any = None  # the caption and query columns, Arrow-formatted (zero-copy slices)
    image_folder: str | None = None  # image cells holding a path are opened only inside it (see vlprobe.dataset.splits)
    outside_images: bool = False
    rows_in_split: int = 0  # before ``limit``

    def _checked(self, rows: list[dict], start: int) -> list[dict]:
        return checked_image_paths(rows, ("image",), self.image_folder, self.outside_images,
                                   f"{self.task}/{self.split}", start)

    def __len__(self) -> int:
        return len(self.labels)

    def chunks(self, size: int) -> list[tuple[int, int]]:
        return [(a, min(a + size, len(self))) for a in range(0, len(self), size)]

    def rows(self, start: int, stop: int) -> list[dict]:
        from ..dataset.reader import read_rows

        return self._checked(read_rows(self.table, start, stop), start)

    def images_at(self, idx: Sequence[int] | np.ndarray) -> list:
        from ..dataset.reader import read_rows

        picked = self.table.select([int(i) for i in idx])
        return [self._checked([r], int(i))[0]["image"] for i, r in zip(idx, read_rows(picked, 0, len(picked)))]

    def texts(self, column: str, start: int = 0, stop: int | None = None) -> list[str]:
        """``caption`` or ``query`` of rows ``start:stop``."""
        stop = len(self) if stop is None else stop
        return self.text_table[start:stop].column(column).to_pylist()

    def texts_at(self, column: str, idx: Sequence[int] | np.ndarray) -> list[str]:
        return self.text_table[[int(i) for i in idx]].column(column).to_pylist()

    def items(self, modality: str, start: int, stop: int, rows: list | None = None) -> list:
        """Rows ``start:stop`` as items of ``modality`` (``rows``: those rows, if already read)."""
        rows = self.rows(start, stop) if rows is None else rows
        return [self.spec.to_item(r, index=start + i, config=self.task, modality=modality)
                for i, r in enumerate(rows)]


Splits = dict[str, dict[str, Split]]  # {task: {split: Split}}


def load_splits(dataset: str, configs: str | Sequence[str] = "all", *, revision: str | None = None,
                limit: int | None = None, outside_images: bool = False) -> Splits:
    """The splits of a TraVLR-shaped dataset (a folder, a built benchmark's name or a Hub id); only labels are read."""
    from ..dataset.reader import built_configs, config_splits, list_configs, list_splits

    dataset = str(find_dataset(dataset))
    local = Path(dataset).is_dir()
    spec_error = None
    try:
        spec = find_spec(dataset)
    except SpecError as err:
        if local:  # said after the dataset's shape is checked: a folder that is not TraVLR's hears that first
            spec, spec_error = None, err
        else:
            raise DatasetError(f"dataset {dataset!r} is not a folder here and cannot be read from the Hub; run "
                               f"from the checkout that holds it, set VLPROBE_ROOT, or build one with "
                               f"`vlprobe build travlr --out DIR` and pass --dataset DIR") from None
    if local:
        names = built_configs(dataset)
        if not names:
            raise DatasetError(f"dataset folder {dataset} has no parquet files listed by its card: it has not been "
                               f"built yet (`vlprobe build {Path(dataset).name}`), or it is not a dataset folder")
    else:
        try:
            names = list_configs(dataset, revision)
        except Exception as err:
            raise DatasetError(f"cannot read dataset {dataset!r}: {type(err).__name__}: {err}. Build it with "
                               f"`vlprobe build travlr` or pass a dataset folder") from None
    wanted = names if configs in (None, "", "all", "*") else (
        [c.strip() for c in configs.split(",") if c.strip()] if isinstance(configs, str) else list(configs))
    unknown = [c for c in wanted if c not in names]
    if unknown:
        raise DatasetError(f"unknown config(s) {unknown} of {dataset}{did_you_mean(unknown[0], names)}; its configs "
                           f"are: {', '.join(names)}")
    out: Splits = {}
    for task in wanted:
        try:
            split_names = config_splits(dataset, task) if local else list_splits(dataset, task, revision)
            split_names = sorted(split_names, key=lambda name: name.startswith("test"))  # train, validation, tests
        except Exception as err:
            raise DatasetError(f"cannot read dataset {dataset!r} config {task!r}: {type(err).__name__}: {err}") from None
        if any(s not in split_names for s in (TRAIN, VALIDATION)) or not any(s.startswith("test") for s in split_names):
            raise DatasetError(f"{dataset} config {task!r} has splits {split_names}, so it is not {TRAVLR_SHAPE}")
        out[task] = {}
        for split in split_names:
            ds, info = load_split(dataset, task, split, revision)
            missing = [c for c in TRAVLR_COLUMNS if c not in ds.column_names]
            if missing:
                raise DatasetError(f"{dataset} config {task!r} split {split!r} has columns {sorted(ds.column_names)}, "
                                   f"without {', '.join(missing)}, so it is not {TRAVLR_SHAPE}")
            n_rows = len(ds)
            if limit is not None and limit < n_rows:
                ds = ds.select(range(limit))
            if not len(ds):
                raise DatasetError(f"{dataset} config {task!r} split {split!r} has no rows")
            label = ds.select_columns(["label"]).with_format("arrow")[:].column("label").to_pylist()
            odd = [v for v in label if v not in (True, False)]  # 0 and 1 compare equal to them
            if odd:
                raise DatasetError(f"{dataset} config {task!r} split {split!r}: column 'label' holds {odd[0]!r}; the "
                                   f"probe needs true/false labels (bool, or 0/1)")
            labels = np.array([bool(v) for v in label])
            out[task][split] = Split(task, split, labels, ds, spec,
                                     {**info, "rows_in_split": n_rows, "rows_used": len(ds)},
                                     text_table=ds.select_columns(["caption", "query"]).with_format("arrow"),
                                     image_folder=str(Path(dataset).resolve()) if local else None,
                                     outside_images=outside_images, rows_in_split=n_rows)
    if spec_error is not None:
        raise spec_error
    return out


def check_classes(data: Splits, dataset: str, limit: int | None, trained: bool) -> None:
    """Refuse a test split (or, ``trained``, any split) without both classes, naming it (and ``limit`` if the cause)."""
    need = "train, validation and every test split" if trained else "every test split"
    for task, by in data.items():
        for name, sp in by.items():
            if not (name.startswith("test") or trained) or (sp.labels.any() and not sp.labels.all()):
                continue
            only = "true" if sp.labels.all() else "false"
            if limit is not None and sp.rows_in_split > limit:
                raise ProbeSettingError("limit", limit, f"the first {limit} row(s) of {task}/{name} are all {only}; "
                                                        f"the probe needs true and false rows in {need}: use more rows")
            raise DatasetError(f"{dataset} config {task!r} split {name!r}: all {len(sp)} row(s) are {only}; the probe "
                               f"needs true and false rows in {need}")


def check_train_rows(data: Splits, train_sizes: Sequence[int] | None, few_shot: int, limit: int | None) -> None:
    """Refuse learning-curve sizes or few-shot rows past a task's training rows (they would take them all, in silence)."""
    sizes = train_sizes or ()
    for task, by in data.items():
        train = by.get(TRAIN)
        if train is None:
            continue
        too_big = sorted(n for n in sizes if n > len(train))
        if too_big:
            cause = (f" (--limit {limit} of its {train.rows_in_split})"
                     if limit is not None and train.rows_in_split > limit else "")
            raise ProbeSettingError("train_sizes", ",".join(map(str, sizes)),
                                    f"{task}/{TRAIN} has {len(train)} row(s){cause}, fewer than "
                                    f"{', '.join(map(str, too_big))}: the largest size possible is {len(train)} "
                                    f"(the full train split is always a point of the curve)")
        if few_shot > len(train):
            raise ProbeSettingError("few_shot", few_shot, f"must be at most {len(train)}, the rows of {task}/{TRAIN} "
                                                          f"(the paper trains further on 200)")

