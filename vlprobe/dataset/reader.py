"""Read a dataset folder (or Hub dataset) as vlprobe scores it: the configs and splits its card declares and which
are built, and rows read a slice at a time from the memory-mapped Arrow files without decoding their images."""

from __future__ import annotations

import copy
import ctypes
import functools
import mmap
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import datasets
import pyarrow.parquet as pq
import yaml

from ..errors import DatasetError
from .folder import read_card_metadata
from .reading import FileError, parse_yaml

F = TypeVar("F")
Madvise = Callable[[int, int, int], int]


@dataclass(frozen=True)
class DeclaredConfig:
    """A config as a dataset card declares it: its name and its data-file patterns by split, in the card's order."""

    name: str
    data_files: dict[str, list[str]]

    def splits(self) -> list[str]:
        """Its splits, ``test``-like ones first (``train`` where the card names none)."""
        splits = list(self.data_files) or ["train"]
        return sorted(splits, key=lambda s: (not s.startswith("test"), splits.index(s)))


def declared_configs(folder: str | Path) -> list[DeclaredConfig]:
    """The configs the card of dataset folder ``folder`` declares (a :class:`DatasetError` when it cannot be read)."""
    try:
        configs = read_card_metadata(folder).get("configs") or []
    except (OSError, ValueError, yaml.YAMLError) as err:
        raise DatasetError(f"cannot read the card of dataset folder {Path(folder).name!r}: {err}") from None
    named = [(c.get("config_name"), c) for c in configs if isinstance(c, dict)]
    return [DeclaredConfig(str(name), data_file_patterns(c.get("data_files"))) for name, c in named if name]


def data_file_patterns(data_files: object) -> dict[str, list[str]]:
    """A card's ``data_files`` as {split: [patterns]}, in every form the Hub accepts."""
    def listed(value: object) -> list[str]:
        if value is None:
            return []
        if isinstance(value, (list, tuple)):
            return [str(v) for v in value if v is not None]
        return [str(value)]

    out: dict[str, list[str]] = {}
    if isinstance(data_files, dict) and "path" not in data_files:
        for split, value in data_files.items():
            out.setdefault(str(split), []).extend(listed(value))
        return out
    entries = data_files if isinstance(data_files, (list, tuple)) else [data_files] if data_files else []
    for entry in (e for e in entries if e is not None):
        split, paths = (entry.get("split", "train"), entry.get("path")) if isinstance(entry, dict) else ("train", entry)
        out.setdefault(str(split), []).extend(listed(paths))
    return out


def built_configs(folder: str | Path) -> list[str]:
    """The configs the folder's card declares whose parquet files exist (have been built)."""
    path = Path(folder)
    return [c.name for c in declared_configs(path) if any(any(path.glob(p)) for ps in c.data_files.values() for p in ps)]


def config_splits(folder: str | Path, config: str) -> list[str]:
    """A config's splits as the card declares them, ``test``-like splits first."""
    for c in declared_configs(folder):
        if c.name == config:
            return c.splits()
    raise DatasetError(f"dataset {Path(folder).name!r} has no config {config!r}; it has: "
                       f"{', '.join(built_configs(folder)) or 'none built'}")


def undecoded_features(features: F) -> F:
    """The same features with every ``Image`` left undecoded: the engine hashes the bytes, decoding in workers."""
    if isinstance(features, datasets.Image):
        return datasets.Image(decode=False)
    if isinstance(features, dict):
        return type(features)({k: undecoded_features(v) for k, v in features.items()})
    if isinstance(features, (list, tuple)):
        return type(features)(undecoded_features(v) for v in features)
    inner = getattr(features, "feature", None)  # List / Sequence / LargeList
    if inner is not None:
        new: Any = copy.copy(features)  # a datasets List / Sequence / LargeList
        try:
            new.feature = undecoded_features(inner)
        except (AttributeError, TypeError):  # a frozen feature type: leave it as it is
            return features
        return new
    return features


def read_rows(ds: datasets.Dataset, start: int, stop: int) -> list[dict[str, Any]]:
    """Rows ``start .. stop`` of a Dataset as dicts, images undecoded, ``READ_SLICE_ROWS`` at a time, each slice's file
    pages released after it (the rows are Python objects by then; else the whole file would stay resident)."""
    features = undecoded_features(ds.features)
    files = [cache_file["filename"] for cache_file in getattr(ds, "cache_files", None) or []]
    table = ds.with_format("arrow")
    out: list[dict[str, Any]] = []
    for lo in range(start, stop, READ_SLICE_ROWS):
        piece = table[lo:min(lo + READ_SLICE_ROWS, stop)]
        batch = features.decode_batch(piece.to_pydict())
        n = piece.num_rows
        del piece
        release_mapped_pages(files)
        cols = list(batch)
        out += [{c: batch[c][i] for c in cols} for i in range(n)]
    return out


READ_SLICE_ROWS = 128  # rows converted to Python per slice of the memory map (read_rows)


def release_mapped_pages(paths: Iterable[str | os.PathLike[str]]) -> int:
    """Drop this process's resident pages of the read-only memory maps of ``paths`` (Linux); returns the bytes."""
    if not sys.platform.startswith("linux") or not hasattr(mmap, "MADV_DONTNEED"):
        return 0
    wanted = {os.path.realpath(os.fspath(p)) for p in paths}
    if not wanted:
        return 0
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return 0
    ranges = []
    for line in lines:
        parts = line.split(maxsplit=5)
        if len(parts) < 6 or "w" in parts[1]:
            continue
        if parts[5] in wanted:  # the kernel names a mapping by its resolved path
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            ranges.append((lo, hi - lo))
    if not ranges:
        return 0
    madvise = _libc_madvise()
    if madvise is None:
        return 0
    done = 0
    for address, length in ranges:
        if madvise(address, length, mmap.MADV_DONTNEED) == 0:
            done += length
    return done


@functools.cache
def _libc_madvise() -> Madvise | None:
    """libc's ``madvise(addr, length, advice)`` through ctypes, or None where it cannot be had."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).madvise  # the C library the interpreter runs on
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    fn.restype = ctypes.c_int
    return fn


def list_configs(dataset: str, revision: str | None = None) -> list[str]:
    """The config names of a dataset folder or Hub id (``datasets``' own listing)."""
    return list(datasets.get_dataset_config_names(str(dataset), revision=revision))


def list_splits(dataset: str, config: str, revision: str | None = None) -> list[str]:
    """The split names of one config of a dataset folder or Hub id."""
    return list(datasets.get_dataset_split_names(str(dataset), config, revision=revision))


def damaged_file(folder: Path) -> str | None:
    """Which file of dataset folder ``folder`` cannot be read, and why (None: every file reads)."""
    for name in ("README.md", ".huggingface.yaml", "vlprobe.yaml"):
        path = folder / name
        if not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
            parse_yaml(text.split("---")[1] if name == "README.md" and text.startswith("---") else
                       ("" if name == "README.md" else text), str(path))  # bounded: size, nesting (vlprobe.dataset.reading)
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
