"""What is scored: the datasets, configs and splits a run names (folders, Hub ids, in-memory
``datasets`` objects), checked and opened as memory-mapped Arrow tables, and their rows turned into items
by the dataset's ``vlprobe.yaml``. ``vlprobe probe`` selects and loads splits through the same functions."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from ..benchmarks import find
from ..errors import ArgumentError, DatasetError, VlprobeError
from ..items import ItemError
from ..locations import DEFAULT_DATASETS, dataset_folder
from ..names import check_dataset, did_you_mean
from ..results import dataset_name
from ..spec import ItemSpec, SpecError, dataset_benchmark, find_spec
from .settings import TEST_LIKE, TEXT, EvaluateSettings, _names
from .text_only import text_only

# Imported where used, as they are slow to import (python -X importtime, on this 2-core machine): datasets 3.9 s
# (vlprobe.dataset_folder and vlprobe.arrow_cache import it), huggingface_hub.HfApi 1.0 s. A misspelt name is
# refused before any of them is imported.


@dataclass
class SplitSource:
    """One (dataset, config, split) to score: a memory-mapped Dataset read in chunks."""

    dataset: str            # the name results use: a folder, a Hub id, or a given name
    config: str
    split: str
    rows: Any               # datasets.Dataset
    n: int                  # rows to score (after limit)
    spec: Any               # ItemSpec (already for this config)
    data: dict[str, Any] = field(default_factory=dict)
    shape: tuple[int, int] | None = None
    benchmark: str | None = None  # the registered benchmark its rows are (vlprobe.benchmarks), or None
    # Image cells holding a path are opened only inside this folder (vlprobe.images.image_cell_in_folder):
    # the dataset folder, None for a Hub dataset; ``outside_images`` lifts that; in-memory datasets are the
    # caller's own and are not checked (``check_image_paths`` False).
    image_folder: str | None = None
    check_image_paths: bool = False
    outside_images: bool = False

    @property
    def name(self) -> str:
        return f"{dataset_name(self.dataset)}/{self.config}/{self.split}"

    def row_batches(self, size: int) -> Iterator[tuple[int, list[dict[str, Any]]]]:
        """(first row index, rows) of at most ``size`` rows, images as undecoded dicts."""
        from ..folder_reader import read_rows

        for start in range(0, self.n, size):
            rows = read_rows(self.rows, start, min(start + size, self.n))
            if self.check_image_paths:
                rows = checked_image_paths(rows, self.spec.images, self.image_folder, self.outside_images,
                                           self.name, start)
            yield start, rows

    def items(self, start: int, rows: Sequence[Mapping[str, Any]], modality: str) -> list[Any]:
        try:
            if modality == TEXT:  # the row's items as they are, their texts compared with each other (no image)
                return [text_only(self.spec.to_item(row, index=start + i, config=self.config))
                        for i, row in enumerate(rows)]
            return [self.spec.to_item(row, index=start + i, config=self.config, modality=modality)
                    for i, row in enumerate(rows)]
        except (ItemError, SpecError) as err:
            raise DatasetError(f"{self.name}: {err}") from None


def checked_image_paths(rows: list[dict[str, Any]], columns: Sequence[str], folder: str | None, outside: bool,
                        name: str, start: int) -> list[dict[str, Any]]:
    """``rows`` with each image cell of ``columns`` checked by :func:`vlprobe.images.image_cell_in_folder`; a path
    outside ``folder`` raises a :class:`DatasetError` naming the split, row and column."""
    from ..images import ImageError, image_cell_in_folder

    for i, row in enumerate(rows):
        for col in columns:
            if col in row:
                try:
                    row[col] = image_cell_in_folder(row[col], folder, f"{name} row {start + i} column {col!r}", outside)
                except ImageError as err:
                    raise DatasetError(str(err)) from None
    return rows


def _disk_full(err: BaseException) -> OSError | None:
    """The ENOSPC (or EDQUOT) OSError in ``err``'s chain of causes, if any."""
    import errno

    seen = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if isinstance(err, OSError) and err.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", -1)):
            return err
        err = err.__cause__ or err.__context__
    return None


def damaged_file(folder: Path) -> str | None:
    """Which file of dataset folder ``folder`` cannot be read, and why (None: every file reads): the card's YAML,
    ``.huggingface.yaml``, each parquet file (a truncated one, an empty one, a CSV or a Git LFS pointer renamed)."""
    import pyarrow.parquet as pq
    import yaml

    from ..reading import FileError, parse_yaml

    for name in ("README.md", ".huggingface.yaml", "vlprobe.yaml"):
        path = folder / name
        if not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
            parse_yaml(text.split("---")[1] if name == "README.md" and text.startswith("---") else
                       ("" if name == "README.md" else text), str(path))  # bounded: size, nesting (vlprobe.reading)
        except UnicodeDecodeError as e:
            return f"{path} is not UTF-8 text (byte {e.object[e.start]:#04x} at offset {e.start})"
        except FileError as e:
            return str(e)
        except (yaml.YAMLError, IndexError) as e:
            return f"{path} is not valid YAML ({str(e).splitlines()[0]})"
    for path in sorted(folder.glob("data/**/*.parquet")):
        try:
            with open(path, "rb") as fh:
                head = fh.read(64)
            if head.startswith(b"version https://git-lfs"):
                return f"{path} is a Git LFS pointer, not the parquet file itself (fetch it with `git lfs pull`)"
            pq.read_metadata(path)
        except Exception as e:  # pyarrow's ArrowInvalid, OSError...
            size = path.stat().st_size
            return f"{path} ({size:,} bytes) is not a readable parquet file ({str(e).splitlines()[0][:160]})"
    return None


def _dataset_error(dataset: str, err: BaseException) -> str:
    folder = Path(dataset)
    if folder.is_dir() and (folder / "vlprobe.yaml").is_file() and not _is_built(folder):
        # a clone's committed card folder (valse/, crepe/, ...): its rows come from a build
        try:
            bench = find(ItemSpec.from_file(folder / "vlprobe.yaml").benchmark)
        except ValueError:
            bench = None
        name = bench.builder if bench is not None else None
        how = (f"`vlprobe build {name}" + ("" if folder.resolve() == (Path.cwd() / name).resolve() else f" --out {dataset}")
               + "`" if name else "the builder its README names")
        return (f"dataset folder {dataset!r} holds a card but no data yet: build it with {how} "
                f"(its README.md says what the build needs: annotations, images)")
    full = _disk_full(err)
    if full is not None:
        where = f" ({full.filename})" if full.filename else ""
        return (f"cannot read dataset {dataset!r}: no space left on the disk{where} while converting it to Arrow; free "
                "some space there (or point $TMPDIR / $VLPROBE_CACHE at a disk with room) and run it again")
    if folder.is_dir() and (folder / "vlprobe.yaml").is_file():
        damaged = damaged_file(folder)
        if damaged:
            return f"dataset folder {dataset!r} is damaged: {damaged}; rebuild it (or restore the file)"
    first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    local = "" if Path(dataset).exists() else " It is not a local folder either."
    return (
        f"cannot read dataset {dataset!r} ({type(err).__name__}: {first}).{local} Pass a dataset folder "
        f"(one built by `vlprobe build ...` or downloaded on a networked machine with "
        f"`hf download {dataset} --repo-type dataset --local-dir DIR`), or a Hub id when online"
    )


check_reachable = check_dataset  # the name this check has always had here (vlprobe.names has it now)


def select_configs(dataset: str, wanted: Any, revision: str | None) -> list[str]:
    """The configs of ``dataset`` to score. ``"all"`` means every config, unless the dataset has a
    config of that name (VALSE's ``all`` holds every instrument once); ``"*"`` always means every
    config; else names (comma-separated, or a list). A name that is neither a folder nor reachable
    fails at once (:func:`check_reachable`)."""
    from ..folder_reader import list_configs

    check_reachable(str(dataset), revision)
    try:
        names = list_configs(dataset, revision)
    except Exception as err:  # not found, offline, gated: say what to do
        raise DatasetError(_dataset_error(dataset, err)) from None
    if wanted in (None, "", "*") or (wanted == "all" and "all" not in names):
        return list(names)
    chosen = _names(wanted) or []
    unknown = [c for c in chosen if c not in names]
    if unknown:
        raise DatasetError(f"unknown config(s) {unknown} of {dataset}{did_you_mean(unknown[0], names)}; its configs "
                           f"are: {', '.join(names)}")
    return chosen


def select_splits(dataset: str, config: str, wanted: Any, names: Sequence[str] | None = None,
                  revision: str | None = None) -> list[str]:
    """The splits to score: those named, else the ones whose name starts with ``test``, else the
    only one."""
    if names is None:
        from ..folder_reader import list_splits

        try:
            names = list_splits(dataset, config, revision)
        except Exception as err:
            raise DatasetError(_dataset_error(dataset, err)) from None
    names = list(names)
    chosen = _names(wanted)
    if chosen:
        unknown = [s for s in chosen if s not in names]
        if unknown:
            raise DatasetError(f"unknown split(s) {unknown} of {dataset} config {config!r}"
                               f"{did_you_mean(unknown[0], names)}; its splits are: {', '.join(names)}")
        return chosen
    test_like = [s for s in names if s.lower().startswith(TEST_LIKE)]
    if test_like:
        return test_like
    if len(names) == 1:
        return names
    raise DatasetError(f"{dataset} config {config!r} has no test split; "
                       f"name one (splits= in Python, --split on the command line): {', '.join(names)}")


def load_split(dataset: str, config: str, split: str, revision: str | None) -> tuple[Any, dict]:
    """One split as a memory-mapped Dataset, plus what identifies its data (a local folder: the
    sha256 of its parquet files, read through vlprobe's checked Arrow cache; a Hub dataset: its
    fingerprint and resolved commit)."""
    import datasets

    from .. import arrow_cache

    try:
        if Path(dataset).is_dir():
            loaded = arrow_cache.load_split(dataset, config, split)
            ds = loaded.dataset
            info = {"data_sha256": loaded.data_sha256,
                    "data_files": [os.path.relpath(f, Path(dataset).resolve()) for f in loaded.data_files]}
        else:
            with arrow_cache.conversion_arrow_pool():  # a first load converts the files to Arrow
                ds = datasets.load_dataset(dataset, config, split=split, revision=revision)
            info = {"fingerprint": getattr(ds, "_fingerprint", None), "resolved_revision": _hub_sha(dataset, revision)}
    except VlprobeError:
        raise
    except Exception as err:
        raise DatasetError(_dataset_error(dataset, err)) from None
    return ds, info


def _hub_sha(dataset: str, revision: str | None) -> str | None:
    """The commit a Hub dataset id resolves to (None offline or when it cannot be asked)."""
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        return None
    try:
        from huggingface_hub import HfApi

        return HfApi().dataset_info(dataset, revision=revision, timeout=10).sha
    except Exception:
        return None


def _spec_of(dataset: Any, spec: Any) -> Any:
    """An ItemSpec from ``spec`` (an ItemSpec, a dict, a path) or, for a folder or Hub id, the
    dataset's own."""
    try:
        if isinstance(spec, ItemSpec):
            return spec
        if isinstance(spec, Mapping):
            return ItemSpec.from_dict(spec, source="spec=")
        if spec is None and not isinstance(dataset, str):
            raise SpecError("an in-memory dataset needs spec=... (an ItemSpec, a dict or a vlprobe.yaml path) "
                            "saying how its rows become items")
        return find_spec(dataset, None if spec is None else str(spec))
    except SpecError as err:
        raise DatasetError(str(err)) from None


def plan_splits(datasets_: Sequence[Any], s: EvaluateSettings, *, spec: Any = None,
                dataset_revision: str | None = None, names: Sequence[str] | None = None) -> list[SplitSource]:
    """Every (dataset, config, split) to score, opened (memory-mapped) but not read."""
    import datasets as hf

    sources: list[SplitSource] = []
    for k, dataset in enumerate(datasets_):
        name = names[k] if names else None
        if isinstance(dataset, (hf.Dataset, hf.DatasetDict)):
            label = _dataset_label(dataset, name)
            if isinstance(dataset, hf.Dataset):
                parts = {str(dataset.split) if dataset.split is not None else "test": dataset}
            else:
                parts = dict(dataset)
            item_spec = _spec_of(dataset, spec)
            config = (_names(s.configs) or ["default"])[0] if s.configs not in (None, "all", "*") else "default"
            for split in select_splits(label, config, s.splits, names=list(parts)):
                ds = parts[split]
                info = {"fingerprint": getattr(ds, "_fingerprint", None), "in_memory": True}
                sources.append(_source(label, config, split, ds, item_spec, info, s, dataset_revision,
                                       item_spec.benchmark))
            continue
        if isinstance(dataset, os.PathLike):
            dataset = str(dataset)
        if not isinstance(dataset, str):
            raise DatasetError(f"datasets must be folders, Hub ids or datasets.Dataset/DatasetDict objects, got "
                               f"{type(dataset).__name__}")
        if dataset_revision is not None and Path(dataset).is_dir():
            # A folder has no revisions: the option would be recorded in results.json yet change nothing.
            raise ArgumentError("dataset_revision", dataset_revision,
                                f"{dataset} is a local folder, which has no revisions; leave it out (it picks "
                                f"a branch, tag or commit of a Hub dataset)")
        check_reachable(dataset, dataset_revision)  # before the spec, which may be fetched from the Hub
        item_spec = _spec_of(dataset, spec)
        benchmark, note = dataset_benchmark(dataset, item_spec)  # a guess from the name is said in the summary
        info_note = {"benchmark_note": note} if note else {}
        for config in select_configs(dataset, s.configs, dataset_revision):
            for split in select_splits(dataset, config, s.splits, revision=dataset_revision):
                ds, info = load_split(dataset, config, split, dataset_revision)
                sources.append(_source(name or dataset, config, split, ds, item_spec, {**info, **info_note}, s,
                                       dataset_revision, benchmark, folder=dataset))
    return sources


def _source(dataset: str, config: str, split: str, ds: Any, spec: Any, info: dict, s: EvaluateSettings,
            revision: str | None, benchmark: str | None = None, folder: str | None = None) -> SplitSource:
    n_rows = len(ds)
    n = min(s.limit, n_rows) if s.limit is not None else n_rows
    try:
        config_spec = spec.for_config(config)
    except ValueError as err:
        raise DatasetError(str(err)) from None
    in_memory = bool(info.get("in_memory"))
    folder = str(Path(folder).resolve()) if folder is not None and Path(folder).is_dir() else None
    src = SplitSource(dataset=dataset, config=config, split=split, rows=ds, n=n, spec=config_spec,
                      data={**info, "rows_in_split": n_rows, "rows_scored": n, "revision": revision,
                            "spec": spec.source, "modality": s.modality}, benchmark=benchmark,
                      image_folder=folder,
                      check_image_paths=not in_memory, outside_images=bool(s.outside_images))
    if n == 0:
        raise DatasetError(f"{dataset} config {config!r} split {split!r} has no rows")
    try:
        strings = [c for c in config_spec.images if c in ds.features and "Value" in
                   (type(ds.features[c]).__name__, type(getattr(ds.features[c], "feature", None)).__name__)]
        first = ds.select_columns(strings)[0] if strings and len(ds) else None  # no image is decoded
        config_spec.check_columns(ds.features, src.name, first)
    except SpecError as err:
        raise DatasetError(str(err)) from None
    config_spec.check_unique_ids(ds, limit=n, where=src.name)  # DuplicateIdError names the ids
    # The first row as an item: the spec works, and the item shape is known before any model loads.
    _, first = next(src.row_batches(1))
    src.shape = src.items(0, first, s.modality)[0].shape
    return src


def _is_built(folder: Path) -> bool:
    return any((folder / "data").rglob("*.parquet")) if (folder / "data").is_dir() else False


def default_datasets(root: str | os.PathLike) -> list[str]:
    """The offline default's dataset folders: ``root/<name>`` where it holds a ``vlprobe.yaml`` (a
    clone's committed card folders), else the folder an installed vlprobe builds into,
    ``~/.cache/vlprobe/datasets/<name>`` (see :func:`vlprobe.locations.dataset_folder`): wherever
    ``vlprobe build <name>`` with no ``--out`` writes, run from the same folder."""
    out = []
    for name in DEFAULT_DATASETS:
        folder = dataset_folder(name, root)
        if not _is_built(folder):
            raise DatasetError(
                f"the default dataset folder {folder} has not been built yet; build it with "
                f"`vlprobe build {name}` (or pass --dataset FOLDER_OR_HUB_ID)"
            )
        out.append(str(folder))
    return out


def _dataset_label(dataset: Any, name: str | None) -> str:
    if name:
        return name
    if isinstance(dataset, (str, os.PathLike)):
        return str(dataset)
    info = getattr(dataset, "info", None)
    return getattr(info, "dataset_name", None) or "dataset"
