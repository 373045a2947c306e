"""What is scored: each (dataset, config, split) a run names, opened memory-mapped (:mod:`vlprobe.dataset.splits`),
its rows turned into items by the dataset's ``vlprobe.yaml``; and the offline default's folders."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..benchmarks import TEXT_ONLY
from ..dataset.items import ItemError
from ..dataset.spec import ItemSpec, SpecError, dataset_benchmark, dataset_version, find_spec
from ..dataset.splits import checked_image_paths, load_split, select_configs, select_splits
from ..errors import ArgumentError, DatasetError, ModelError
from ..names import is_built
from ..options import listed
from ..results import dataset_name
from ..storage import locations
from ..storage.locations import DEFAULT_DATASETS, DEFAULT_MODEL, dataset_folder
from .settings import EvaluateSettings
from .text_only import text_only

if TYPE_CHECKING:
    import datasets

    from ..options import DatasetLike, SpecLike

# datasets is imported where used (seconds): a misspelt name is refused before it is.


@dataclass
class SplitSource:
    """One (dataset, config, split) to score: a memory-mapped Dataset read in chunks."""

    dataset: str            # the name results use: a folder, a Hub id, or a given name
    config: str
    split: str
    rows: datasets.Dataset
    n: int                  # rows to score (after limit)
    spec: ItemSpec          # already for this config
    data: dict[str, Any] = field(default_factory=dict)
    shape: tuple[int, int] | None = None
    benchmark: str | None = None  # the registered benchmark its rows are (vlprobe.benchmarks), or None
    dataset_version: str | None = None  # the version of its data (vlprobe.dataset.spec.dataset_version)
    # Image paths are opened only inside this folder unless outside_images; an in-memory dataset's are not checked.
    image_folder: str | None = None
    check_image_paths: bool = False
    outside_images: bool = False

    @property
    def name(self) -> str:
        return f"{dataset_name(self.dataset)}/{self.config}/{self.split}"

    def row_batches(self, size: int) -> Iterator[tuple[int, list[dict[str, Any]]]]:
        """(first row index, rows) of at most ``size`` rows, images as undecoded dicts."""
        from ..dataset.reader import read_rows

        for start in range(0, self.n, size):
            rows = read_rows(self.rows, start, min(start + size, self.n))
            if self.check_image_paths:
                rows = checked_image_paths(rows, self.spec.images, self.image_folder, self.outside_images,
                                           self.name, start)
            yield start, rows

    def items(self, start: int, rows: Sequence[Mapping[str, Any]], modality: str) -> list[Any]:  # Items, or TextOnlyItems
        text = modality == TEXT_ONLY  # the row's items as they are, their texts compared with each other (no image)
        try:
            items = [self.spec.to_item(row, index=start + i, config=self.config, modality="image" if text else modality)
                     for i, row in enumerate(rows)]
            return [text_only(item) for item in items] if text else items
        except (ItemError, SpecError) as err:
            raise DatasetError(f"{self.name}: {err}") from None


def _spec_of(dataset: DatasetLike, spec: SpecLike | None) -> ItemSpec:
    """An ItemSpec from ``spec`` (an ItemSpec, a dict, a path) or, for a folder or Hub id, the dataset's own."""
    try:
        if isinstance(spec, ItemSpec):
            return spec
        if isinstance(spec, Mapping):
            return ItemSpec.from_dict(spec, source="spec=")
        if spec is None and not isinstance(dataset, str):
            raise SpecError("an in-memory dataset needs spec=... (an ItemSpec, a dict or a vlprobe.yaml path) "
                            "saying how its rows become items")
        return find_spec(str(dataset), None if spec is None else str(spec))
    except SpecError as err:
        raise DatasetError(str(err)) from None


def plan_splits(datasets_: Sequence[DatasetLike], s: EvaluateSettings,
                names: Sequence[str] | None = None) -> list[SplitSource]:
    """Every (dataset, config, split) to score, opened but not read; ``names``: the datasets' given names."""
    import datasets as hf

    sources: list[SplitSource] = []
    revision = s.dataset_revision
    for k, dataset in enumerate(datasets_):
        name = names[k] if names else None
        if isinstance(dataset, (hf.Dataset, hf.DatasetDict)):
            label = _dataset_label(dataset, name)
            if isinstance(dataset, hf.Dataset):
                parts = {str(dataset.split) if dataset.split is not None else "test": dataset}
            else:
                parts = dict(dataset)
            item_spec = _spec_of(dataset, s.spec)
            config = (listed(s.configs) or ["default"])[0] if s.configs not in ("all", "*") else "default"
            for split in select_splits(label, config, s.splits, names=list(parts)):
                ds = parts[split]
                info = {"fingerprint": getattr(ds, "_fingerprint", None)}
                sources.append(_source(label, config, split, ds, item_spec, info, s, item_spec.benchmark))
            continue
        dataset = os.fspath(dataset)
        if revision is not None and Path(dataset).is_dir():
            raise ArgumentError("dataset_revision", revision,
                                f"{dataset} is a local folder, which has no revisions; leave it out (it picks "
                                f"a branch, tag or commit of a Hub dataset)")
        item_spec = _spec_of(dataset, s.spec)
        benchmark, note = dataset_benchmark(dataset, item_spec)  # a guess from the name is said in the summary
        for config in select_configs(dataset, s.configs, revision):
            for split in select_splits(dataset, config, s.splits, revision=revision):
                ds, info = load_split(dataset, config, split, revision)
                sources.append(_source(name or dataset, config, split, ds, item_spec,
                                       {**info, **({"benchmark_note": note} if note else {})}, s, benchmark,
                                       folder=dataset))
    return sources


def _source(dataset: str, config: str, split: str, ds: datasets.Dataset, spec: ItemSpec, info: dict[str, Any],
            s: EvaluateSettings, benchmark: str | None, folder: str | None = None) -> SplitSource:
    """One split to score, checked against its spec (``folder``: the dataset folder; None: an in-memory dataset)."""
    n_rows = len(ds)
    n = min(s.limit, n_rows) if s.limit is not None else n_rows
    in_memory = folder is None
    info = {**info, "in_memory": True} if in_memory else info
    folder = str(Path(folder).resolve()) if folder is not None and Path(folder).is_dir() else None
    try:  # SpecError is a ValueError
        config_spec = spec.for_config(config)
        src = SplitSource(dataset=dataset, config=config, split=split, rows=ds, n=n, spec=config_spec,
                          data={**info, "rows_in_split": n_rows, "rows_scored": n, "revision": s.dataset_revision,
                                "spec": spec.source, "modality": s.modality}, benchmark=benchmark,
                          dataset_version=dataset_version(spec, benchmark),
                          image_folder=folder,
                          check_image_paths=not in_memory, outside_images=s.outside_images)
        if n == 0:
            raise DatasetError(f"{dataset} config {config!r} split {split!r} has no rows")
        strings = [c for c in config_spec.images if c in ds.features and "Value" in
                   (type(ds.features[c]).__name__, type(getattr(ds.features[c], "feature", None)).__name__)]
        first = ds.select_columns(strings)[0] if strings and len(ds) else None  # no image is decoded
        config_spec.check_columns(ds.features, src.name, first)
    except ValueError as err:
        raise DatasetError(str(err)) from None
    config_spec.check_unique_ids(ds, limit=n, where=src.name)  # DuplicateIdError names the ids
    # The first row as an item: the spec works, and the item shape is known before any model loads.
    _, first_rows = next(src.row_batches(1))
    src.shape = src.items(0, first_rows, s.modality)[0].shape
    return src


def default_datasets(root: str | os.PathLike) -> list[str]:
    """The offline default's dataset folders: where ``vlprobe build <name>`` writes, run from ``root``."""
    out = []
    for name in DEFAULT_DATASETS:
        folder = dataset_folder(name, root)
        if not is_built(folder):
            raise DatasetError(
                f"the default dataset folder {folder} has not been built yet; build it with "
                f"`vlprobe build {name}` (or pass --dataset FOLDER_OR_HUB_ID)"
            )
        out.append(str(folder))
    return out


def default_model(root: str | os.PathLike) -> str:
    """The offline default's model folder: ``root/models/mini-clip`` in a clone, else the copy this package ships."""
    root = Path(root)
    model = root / DEFAULT_MODEL
    if (model / "config.json").is_file():
        return str(model)
    packaged = locations.shipped_model()  # (through the module: a test replaces it)
    if packaged is not None:
        return str(packaged)
    how = " train it with `python -m vlprobe_train`, or" if importlib.util.find_spec("vlprobe_train") else ""
    raise ModelError(
        f"the default model {model} is not there and this vlprobe installation ships none (the small "
        f"offline CLIP has not been made in this checkout);{how} pass --model with a local folder written "
        f"by save_pretrained, or a Hub id"
    )


def _dataset_label(dataset: DatasetLike, name: str | None) -> str:
    if name:
        return name
    if isinstance(dataset, (str, os.PathLike)):
        return str(dataset)
    info = getattr(dataset, "info", None)
    return getattr(info, "dataset_name", None) or "dataset"
