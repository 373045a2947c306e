"""One split of a dataset folder or Hub id, as both ``vlprobe evaluate`` and ``vlprobe probe`` read it: its configs
and splits selected, opened as a memory-mapped Arrow table with what identifies its data, a failure named as the
file at fault, and the image cells of its rows kept inside its folder."""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..benchmarks import find
from ..errors import DatasetError, VlprobeError
from ..names import check_dataset, did_you_mean
from ..options import listed
from .spec import ItemSpec

if TYPE_CHECKING:
    import datasets

# datasets (3.9 s to import, through .folder, .reader, arrow_cache) is imported where used: a misspelt name is refused first
Wanted = str | Sequence[str] | None  # configs or splits: comma-separated names, a list of them, or None for the default

TEST_LIKE = ("test",)


def checked_image_paths(rows: list[dict[str, Any]], columns: Sequence[str], folder: str | None, outside: bool,
                        name: str, start: int) -> list[dict[str, Any]]:
    """``rows`` with each image cell of ``columns`` kept inside ``folder`` (:func:`~.images.image_cell_in_folder`)."""
    from .images import ImageError, image_cell_in_folder  # noqa: PLC0415 (PIL: only where images are checked)

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
    seen = set()
    at: BaseException | None = err
    while at is not None and id(at) not in seen:
        seen.add(id(at))
        if isinstance(at, OSError) and at.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", -1)):
            return at
        at = at.__cause__ or at.__context__
    return None


def _dataset_error(dataset: str, err: BaseException) -> str:
    folder = Path(dataset)
    if folder.is_dir() and (folder / "vlprobe.yaml").is_file() and not any((folder / "data").rglob("*.parquet")):
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
        from .reader import damaged_file  # noqa: PLC0415 (imports datasets, 3.9 s: not before the checks)

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


def select_configs(dataset: str, wanted: Wanted, revision: str | None) -> list[str]:
    """The configs of ``dataset`` to score: names (comma-separated, or a list); ``"*"`` every config, and ``"all"``
    too unless the dataset has a config of that name (VALSE's ``all`` holds every instrument once)."""
    from .reader import list_configs  # noqa: PLC0415 (datasets: see above)

    check_reachable(str(dataset), revision)
    try:
        names = list_configs(dataset, revision)
    except Exception as err:  # not found, offline, gated: say what to do
        raise DatasetError(_dataset_error(dataset, err)) from None
    if wanted in (None, "", "*") or (wanted == "all" and "all" not in names):
        return list(names)
    return _known(listed(wanted) or [], names, "config", dataset)


def _known(chosen: list[str], names: Sequence[str], what: str, where: str) -> list[str]:
    """``chosen``, or a :class:`DatasetError` naming those of them not among ``names`` (the ``what``-s of ``where``)."""
    unknown = [c for c in chosen if c not in names]
    if unknown:
        raise DatasetError(f"unknown {what}(s) {unknown} of {where}{did_you_mean(unknown[0], names)}; its {what}s "
                           f"are: {', '.join(names)}")
    return chosen


def select_splits(dataset: str, config: str, wanted: Wanted, names: Sequence[str] | None = None,
                  revision: str | None = None) -> list[str]:
    """The splits to score: those named, else the ones whose name starts with ``test``, else the only one."""
    if names is None:
        from .reader import list_splits  # noqa: PLC0415 (datasets: see above)

        try:
            names = list_splits(dataset, config, revision)
        except Exception as err:
            raise DatasetError(_dataset_error(dataset, err)) from None
    names = list(names)
    chosen = listed(wanted)
    if chosen:
        return _known(chosen, names, "split", f"{dataset} config {config!r}")
    test_like = [s for s in names if s.lower().startswith(TEST_LIKE)]
    if test_like:
        return test_like
    if len(names) == 1:
        return names
    raise DatasetError(f"{dataset} config {config!r} has no test split; "
                       f"name one (splits= in Python, --split on the command line): {', '.join(names)}")


def load_split(dataset: str, config: str, split: str, revision: str | None) -> tuple[datasets.Dataset, dict[str, Any]]:
    """One split as a memory-mapped Dataset, and what identifies its data (sha256s, or the Hub's commit)."""
    import datasets  # noqa: PLC0415 (see above)

    from ..storage import arrow_cache  # noqa: PLC0415 (datasets: see above)

    try:
        if Path(dataset).is_dir():
            loaded = arrow_cache.load_split(dataset, config, split)
            ds = loaded.dataset
            info: dict[str, Any] = {"data_sha256": loaded.data_sha256,
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
        from huggingface_hub import HfApi  # noqa: PLC0415 (see above)

        return HfApi().dataset_info(dataset, revision=revision, timeout=10).sha
    except Exception:
        return None
