"""``datasets``' Arrow copies of dataset folders, private and pruned; each entry's ``entry.json`` records the parquet and
every file written from it (sha256, stamp), checked before each load (a stale entry is converted again silently)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

import datasets
import pyarrow as pa
import pyarrow.dataset as pds

from ..dataset.folder import BUILD_RECORD, RECORD_HEADER, SHARD_NAME
from ..dataset.reader import damaged_file
from ..errors import DatasetError, warn
from .keys import settled, sha256_files, sha256_known, stamp, write_json
from .leftovers import OwnedDir, remove_if_abandoned
from .locations import UnsafeFolderError, arrow_home, cache_home, private_folder, refused_home, untrusted

RECORD = "entry.json"
MAX_AGE_DAYS = 30
STAGING_PREFIX = ".staging-"
TEMPORARY_PREFIX = "vlprobe-arrow-"  # $TMPDIR fallback (swept as a leftover when its run was killed)
_FORMAT = 2  # of entry.json


@dataclass(frozen=True)
class LoadedSplit:
    """A split loaded through the cache, and what identifies its data."""

    dataset: datasets.Dataset
    data_files: tuple[str, ...]  # the source parquet files, absolute
    data_sha256: str             # of their content, in order


class SourceFile(NamedTuple):
    """A parquet file an entry was made from (``stamp`` None while the file is too new to keep one)."""

    path: str
    sha256: str
    stamp: list[int] | None


class FileHash(NamedTuple):
    sha256: str
    stamp: list[int] | None


@dataclass(frozen=True)
class Source:
    """The parquet files an entry was made from, and the sha256 of their content in order."""

    files: tuple[SourceFile, ...]
    sha256: str


@dataclass(frozen=True)
class Record:
    """An entry's ``entry.json``."""

    folder: str
    config: str
    split: str
    source: Source
    rows: int
    files: dict[str, FileHash]

    def to_json(self) -> dict[str, object]:
        return {"format": _FORMAT, **asdict(self)}  # the files' NamedTuples as JSON lists

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Record:
        source, files = value["source"], value["files"]
        if value["format"] != _FORMAT or not isinstance(files, dict) or not isinstance(source["sha256"], str):
            raise ValueError("an unknown record")
        return cls(str(value["folder"]), str(value["config"]), str(value["split"]),
                   Source(tuple(SourceFile(*f) for f in source["files"]), source["sha256"]), int(value["rows"]),
                   {str(k): FileHash(*v) for k, v in files.items()})


def load_folder_split(folder: str | Path, config: str, split: str, **kwargs: object) -> datasets.Dataset:
    """``load_dataset(folder, config, split=split)`` through the checked Arrow cache."""
    return load_split(folder, config, split, **kwargs).dataset


def load_split(folder: str | Path, config: str, split: str, **kwargs: object) -> LoadedSplit:
    """One split of dataset folder ``folder``, with its source files and their sha256 (read once for both)."""
    folder = Path(folder).resolve()
    builder = datasets.load_dataset_builder(str(folder), config)
    files = tuple(sorted(str(f) for f in (builder.config.data_files or {}).get(split, [])))
    # Without pyarrow's pre-buffering, the heap grew with every row group read (issue 25: 969 MB for 523 MB of parquet)
    kwargs.setdefault("fragment_scan_options", pds.ParquetFragmentScanOptions(pre_buffer=False))
    home = _home()
    entry = home / hashlib.sha256(f"{folder}\0{config}\0{split}".encode()).hexdigest()[:24]
    record, damage = _record(entry)
    source = _fingerprint(files, record.source if record is not None else None)
    _check_shards(folder, source)
    for attempt in range(3):
        ds = _reuse(entry, record, damage, source, folder, config, split, kwargs)
        if ds is None and attempt < 2:
            ds = _convert(home, entry, source, folder, config, split, kwargs)
        if ds is not None:
            return LoadedSplit(ds, files, source.sha256)
        record, damage = _record(entry)  # another process placed the entry meanwhile: read theirs
    raise OSError(f"the Arrow cache entry {entry} keeps changing while this run converts {folder.name} "
                  f"{config}/{split}; run again")


_FALLBACK: OwnedDir | None = None  # this process's private temporary folder, when the cache folder cannot be used


def _home() -> Path:
    global _FALLBACK
    wanted = arrow_home()
    try:
        if refused_home(cache_home()):  # said once, for every cache under it
            raise UnsafeFolderError("")
        return private_folder(wanted)
    except (UnsafeFolderError, OSError) as err:
        if _FALLBACK is None:
            _FALLBACK = OwnedDir(prefix=TEMPORARY_PREFIX)
            why = str(err) if isinstance(err, UnsafeFolderError) else (err.strerror or str(err))
            if why:
                warn(f"not using the Arrow cache {wanted} ({why}); converting into a private temporary folder for "
                     f"this run ({_FALLBACK.name}), removed when it ends")
        return _FALLBACK.path


def _fingerprint(files: tuple[str, ...], known: Source | None) -> Source:
    """The parquet files and the sha256 of their content, read only when ``known`` does not hold their stamps."""
    kept = {f.path: f for f in known.files} if known is not None else {}
    stamps = [os.stat(f) for f in files]
    if known is not None and files and all(f in kept and kept[f].stamp == stamp(st)
                                           for f, st in zip(files, stamps, strict=True)):
        return Source(tuple(kept[f] for f in files), known.sha256)
    whole, each = sha256_files(files)
    return Source(tuple(SourceFile(f, h, stamp(st) if settled(st) else None)
                        for f, h, st in zip(files, each, stamps, strict=True)), whole)


def _check_shards(folder: Path, source: Source) -> None:
    """Refuse a shard of a folder vlprobe built whose content is not the sha256 its name records."""
    try:
        with open(folder / BUILD_RECORD, encoding="utf-8") as fh:
            ours = fh.read(len(RECORD_HEADER)) == RECORD_HEADER
    except OSError:
        ours = False
    for path, sha256, _ in source.files if ours else ():
        named = SHARD_NAME.fullmatch(Path(path).name)
        if named and not sha256.startswith(named.group("sha256")):
            detail = damaged_file(folder)  # the likelier story first: truncated, empty, a CSV or an LFS pointer
            if detail:
                raise DatasetError(f"dataset folder {folder.name!r} is damaged: {detail}; rebuild it (or restore the file)")
            shown = os.path.relpath(path, folder.parent)
            raise DatasetError(f"dataset folder {folder.name!r} is damaged: {shown} does not hold what the build "
                               f"wrote (its sha256 begins {sha256[:16]}, its name records {named.group('sha256')}): it was "
                               "replaced or edited since; rebuild the folder (or restore the file)")


def _entry_files(entry: Path, known: Mapping[str, FileHash] | None = None) -> dict[str, FileHash]:
    """The entry's files but its record and locks, hashes reused by stamp; :class:`_Untrusted` for an untrusted one."""
    out: dict[str, FileHash] = {}
    known = known or {}
    for root, dirs, names in os.walk(entry):
        for name in dirs + names:
            path = Path(root) / name
            why = untrusted(path, path.lstat()) or (None if path.is_dir() or path.is_file() else f"{path} is no file")
            if why:
                raise _Untrusted(why)
            rel = path.relative_to(entry).as_posix()
            if name in names and rel != RECORD and not name.endswith(".lock"):
                was = known.get(rel)
                sha256, kept = sha256_known(path, [*was.stamp, was.sha256] if was is not None and was.stamp else None)
                out[rel] = FileHash(sha256, kept)
    return out


class _Untrusted(Exception):
    """A file of an entry that another user could have written."""


def _record(entry: Path) -> tuple[Record | None, str | None]:
    """(the entry's record, None), or (None, why it cannot be read); (None, None) without an entry."""
    if not os.path.lexists(entry):
        return None, None
    try:
        value = json.loads((entry / RECORD).read_text(encoding="utf-8"))
        if isinstance(value, dict) and isinstance(value.get("format"), int) and value["format"] < _FORMAT:
            _remove(entry)  # made by an older vlprobe: converted again, silently
            return None, None
        return Record.from_json(value), None
    except (OSError, ValueError, KeyError, TypeError) as err:
        if isinstance(err, (KeyError, TypeError)):
            err = ValueError("an unknown record")
        return None, f"its record cannot be read: {getattr(err, 'strerror', None) or err}"


def _reuse(entry: Path, record: Record | None, damage: str | None, source: Source, folder: Path,
           config: str, split: str, kwargs: dict[str, Any]) -> datasets.Dataset | None:
    """The entry's Dataset when it matches ``source``; else None, the entry removed (with a warning when damaged)."""
    if record is None and damage is None:
        return None
    if record is not None and [f[:2] for f in record.source.files] != [f[:2] for f in source.files]:
        _remove(entry)  # stale: the folder was rebuilt (or its files replaced); converted again, silently
        return None
    if record is not None:
        try:
            files = _entry_files(entry, record.files)
            written = record.files
            changed = sorted(set(files) ^ set(written)) or \
                sorted(f for f in files if files[f].sha256 != written[f].sha256)
            if changed:
                name = changed[0]
                damage = (f"{name} was added" if name not in written else f"{name} is missing"
                          if name not in files else f"{name} was changed since it was written (sha256 "
                          f"{files[name].sha256[:16]}..., written {written[name].sha256[:16]}...)")
        except _Untrusted as err:
            damage = str(err)
        except OSError as err:
            damage = f"it cannot be read ({err.strerror or err})"
    if damage is None and record is not None:
        try:
            ds = _load(folder, config, split, entry, kwargs)
            if len(ds) != record.rows:
                damage = f"it holds {len(ds)} rows, not the {record.rows} recorded"
            else:
                if files != record.files or source != record.source:  # new stamps: kept for the next run
                    write_json(entry / RECORD, replace(record, source=source, files=files).to_json(), indent=1)
                os.utime(entry / RECORD)  # last use, for pruning
                return ds
        except Exception as err:  # whatever datasets raises on a damaged copy: converted again
            damage = f"{type(err).__name__}: {str(err).strip().splitlines()[0] if str(err).strip() else ''}"
    warn(f"the Arrow copy of {folder.name} {config}/{split} in {entry} is damaged ({damage}); converting the "
         f"parquet again")
    _remove(entry)
    return None


def _load(folder: Path, config: str, split: str, entry: Path, kwargs: dict[str, Any]) -> datasets.Dataset:
    with conversion_arrow_pool():  # see there
        return datasets.load_dataset(str(folder), config, split=split, cache_dir=str(entry / "hf"), **kwargs)


def _convert(home: Path, entry: Path, source: Source, folder: Path, config: str, split: str,
             kwargs: dict[str, Any]) -> datasets.Dataset | None:
    """Convert the split in a staging folder renamed into place; None when another process placed it first."""
    _prune(home)
    holder = OwnedDir(prefix=STAGING_PREFIX, dir=home)
    try:
        stage = holder.path / "entry"
        stage.mkdir()
        ds = _load(folder, config, split, stage, kwargs)
        write_json(stage / RECORD, Record(str(folder), config, split, source, len(ds), _entry_files(stage)).to_json(), indent=1)
        del ds
        try:
            os.rename(stage, entry)
        except OSError:
            return None
    finally:
        holder.cleanup()
    return _load(folder, config, split, entry, kwargs)


def _remove(entry: Path) -> None:
    if os.path.islink(entry) or os.path.isfile(entry):
        os.unlink(entry)
    else:
        shutil.rmtree(entry, ignore_errors=True)


def _prune(home: Path) -> None:
    """Remove entries unused for MAX_AGE_DAYS days, whose folder is gone or without a record, and killed stagings."""
    cutoff = time.time() - MAX_AGE_DAYS * 86400
    try:
        children = list(home.iterdir())
    except OSError:
        return
    for child in children:
        if child.name.startswith(STAGING_PREFIX):
            remove_if_abandoned(child)
            continue
        try:
            record_path = child / RECORD
            if not record_path.is_file():
                if time.time() - child.lstat().st_mtime > 3600:  # an entry is renamed in whole: this is debris
                    _remove(child)
                continue
            folder = json.loads(record_path.read_text(encoding="utf-8")).get("folder")
            if record_path.stat().st_mtime < cutoff or not (isinstance(folder, str) and Path(folder).is_dir()):
                _remove(child)
        except (OSError, ValueError, AttributeError):
            _remove(child)


@contextlib.contextmanager
def conversion_arrow_pool() -> Iterator[None]:
    """Arrow allocates from jemalloc (else ``malloc``) inside the block, and gives what it freed back at its end:
    pyarrow's default, mimalloc, kept about as much as a conversion converted (80 MB after 20,000 500 px rows)."""
    before = pa.default_memory_pool()
    pool = None
    for make in (pa.jemalloc_memory_pool, pa.system_memory_pool):
        try:
            pool = make()
            break
        except NotImplementedError:  # pyarrow built without jemalloc
            continue
    if pool is None or pool.backend_name == before.backend_name:
        yield
        return
    pa.set_memory_pool(pool)
    try:
        yield
    finally:
        pa.set_memory_pool(before)
        pool.release_unused()
