"""The ``datasets`` library's Arrow copies of dataset folders: kept where only this user can change them, checked
against the parquet they were made from before they are read, rebuilt when damaged or stale, pruned.

``datasets.load_dataset(folder, config)`` converts a folder's parquet into Arrow files on its first load and
memory-maps those files on every later one. vlprobe keeps them in :func:`vlprobe.locations.arrow_home`
(``<cache_home>/arrow``), one entry per (folder, config, split)::

    <cache_home>/arrow/                   mode 0700: no other local user can read, add or swap a file
        <key>/                            key: a hash of the folder's resolved path, the config and the split
            entry.json                    what the entry was made from and what it holds (below)
            hf/...                        the datasets library's own cache folder for this split

``entry.json`` records the source parquet files (path, size, modification time) with the sha256 of their
content, and the Arrow files written from them (path, size) with the number of rows. Before an entry is read,
the parquet is hashed again and the Arrow files are looked at: parquet that changed (a rebuild, a file replaced
by hand) makes the entry stale, and it is rebuilt without a word; an Arrow file that is missing or has another
size, or a copy that does not hold the recorded rows (a truncated, deleted or swapped file), is rebuilt with one
warning. A new entry is converted in a staging folder beside the entries and renamed into place whole, so an
entry is complete or absent; a conversion killed meanwhile leaves a staging folder that a later run removes.
Entries not used for :data:`MAX_AGE_DAYS` days, and those whose folder is gone, are removed when a new one is
made.

A cache folder this user cannot use (another user's, a symbolic link, or one that cannot be written) is never
read: the run converts into a private temporary folder instead (``$TMPDIR/vlprobe-arrow-*``, removed at exit)
and says so in one warning.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import datasets
import pyarrow as pa
import pyarrow.dataset as pds

from .leftovers import OwnedDir, remove_if_abandoned
from .locations import UnsafeFolderError, arrow_home, private_folder

RECORD = "entry.json"
MAX_AGE_DAYS = 30
STAGING_PREFIX = ".staging-"
TEMPORARY_PREFIX = "vlprobe-arrow-"  # $TMPDIR fallback (swept as a leftover when its run was killed)
_FORMAT = 1  # of entry.json


@dataclass(frozen=True)
class LoadedSplit:
    """A split loaded through the cache: the memory-mapped Dataset, and what identifies its data."""

    dataset: datasets.Dataset
    data_files: tuple[str, ...]  # the source parquet files, absolute
    data_sha256: str             # of their content, in order


def warn(message: str) -> None:
    from .cache import warn as cache_warn  # one line on stderr, never raising (a full disk loses the line, not the run)

    cache_warn(message)


def load_folder_split(folder: str | Path, config: str, split: str, **kwargs: Any) -> datasets.Dataset:
    """``load_dataset(folder, config, split=split)`` through vlprobe's checked Arrow cache (see the module doc):
    never a stale or damaged copy, never one another user could have changed."""
    return load_split(folder, config, split, **kwargs).dataset


def load_split(folder: str | Path, config: str, split: str, **kwargs: Any) -> LoadedSplit:
    """One split of dataset folder ``folder`` as a memory-mapped Dataset, with its source files and their sha256
    (the parquet is read once for both the check and the provenance)."""
    folder = Path(folder).resolve()
    builder = datasets.load_dataset_builder(str(folder), config)
    files = tuple(sorted(str(f) for f in (builder.config.data_files or {}).get(split, [])))
    source = _fingerprint(files)
    # The first load converts the parquet to Arrow; here without pyarrow's pre-buffering, with which
    # the heap grew with every row group read until the whole file was converted (issue 25: RssAnon
    # rose steadily to 969 MB converting 6,000 640x480 JPEG rows, 523 MB of parquet; 707 MB without).
    kwargs.setdefault("fragment_scan_options", pds.ParquetFragmentScanOptions(pre_buffer=False))
    home = _home()
    entry = home / hashlib.sha256(f"{folder}\0{config}\0{split}".encode()).hexdigest()[:24]
    ds = _reuse(entry, source, folder, config, split, kwargs)
    if ds is None:
        ds = _convert(home, entry, source, folder, config, split, kwargs)
    return LoadedSplit(ds, files, source["sha256"])


# ---- where --------------------------------------------------------------------------------------------------

_FALLBACK: OwnedDir | None = None  # this process's private temporary folder, when the cache folder cannot be used


def _home() -> Path:
    global _FALLBACK
    wanted = arrow_home()
    try:
        return private_folder(wanted)
    except (UnsafeFolderError, OSError) as err:
        if _FALLBACK is None:
            _FALLBACK = OwnedDir(prefix=TEMPORARY_PREFIX)
            why = str(err) if isinstance(err, UnsafeFolderError) else (err.strerror or str(err))
            warn(f"not using the Arrow cache {wanted} ({why}); converting into a private temporary folder for "
                 f"this run ({_FALLBACK.name}), removed when it ends")
        return _FALLBACK.path


# ---- what an entry was made from ---------------------------------------------------------------------------

def _fingerprint(files: tuple[str, ...]) -> dict[str, Any]:
    """The parquet files' paths, sizes and modification times, and the sha256 of their content."""
    h = hashlib.sha256()
    stamps = []
    for f in files:
        st = os.stat(f)
        stamps.append([f, st.st_size, st.st_mtime_ns])
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 22), b""):
                h.update(block)
    return {"files": stamps, "sha256": h.hexdigest()}


def _arrow_files(ds: datasets.Dataset, entry: Path) -> list[list[Any]]:
    """[relative path, size] of each Arrow file ``ds`` maps, all inside ``entry``."""
    out, root = [], entry.resolve()
    for f in ds.cache_files:
        path = Path(f["filename"]).resolve()
        out.append([path.relative_to(root).as_posix(), path.stat().st_size])
    return sorted(out)


# ---- read an entry -----------------------------------------------------------------------------------------

def _reuse(entry: Path, source: dict[str, Any], folder: Path, config: str, split: str,
           kwargs: dict[str, Any]) -> datasets.Dataset | None:
    """The entry's Dataset when its record matches ``source`` and its files are whole; else None, the entry removed
    (with a warning when it was damaged rather than stale)."""
    if not os.path.lexists(entry):
        return None
    damage = None
    try:
        record = json.loads((entry / RECORD).read_text(encoding="utf-8"))
        if not isinstance(record, dict) or record.get("format") != _FORMAT:
            raise ValueError("an unknown record")
    except (OSError, ValueError) as err:
        record, damage = None, f"its record cannot be read: {getattr(err, 'strerror', None) or err}"
    if record is not None and record.get("source") != source:
        _remove(entry)  # stale: the folder was rebuilt (or its files replaced); converted again, silently
        return None
    if record is not None:
        damage = _damage(entry, record)
    if damage is None:
        try:
            ds = _load(folder, config, split, entry, kwargs)
            if len(ds) != record["rows"] or _arrow_files(ds, entry) != record["arrow"]:
                damage = f"it holds {len(ds)} rows in other files than the {record['rows']} recorded"
            else:
                os.utime(entry / RECORD)  # last use, for pruning
                return ds
        except Exception as err:  # whatever datasets raises on a damaged copy: converted again
            damage = f"{type(err).__name__}: {str(err).strip().splitlines()[0] if str(err).strip() else ''}"
    warn(f"the Arrow copy of {folder.name} {config}/{split} in {entry} is damaged ({damage}); converting the "
         f"parquet again")
    _remove(entry)
    return None


def _damage(entry: Path, record: dict[str, Any]) -> str | None:
    """What is wrong with the entry's Arrow files against its record, or None."""
    arrow = record.get("arrow")
    if not isinstance(arrow, list) or not arrow or not isinstance(record.get("rows"), int):
        return "its record lists no Arrow file"
    for name, size in arrow:
        path = entry / name
        if not path.is_file():
            return f"{name} is missing"
        if path.stat().st_size != size:
            return f"{name} has {path.stat().st_size:,} bytes, not the {size:,} written"
    return None


def _load(folder: Path, config: str, split: str, entry: Path, kwargs: dict[str, Any]) -> datasets.Dataset:
    with conversion_arrow_pool():  # see there
        return datasets.load_dataset(str(folder), config, split=split, cache_dir=str(entry / "hf"), **kwargs)


# ---- make an entry -----------------------------------------------------------------------------------------

def _convert(home: Path, entry: Path, source: dict[str, Any], folder: Path, config: str, split: str,
             kwargs: dict[str, Any], retry: bool = True) -> datasets.Dataset:
    """Convert the split into a staging folder, record it, rename it into place; the Dataset read from there."""
    _prune(home)
    holder = OwnedDir(prefix=STAGING_PREFIX, dir=home)
    try:
        stage = holder.path / "entry"
        stage.mkdir()
        ds = _load(folder, config, split, stage, kwargs)
        record = {"format": _FORMAT, "folder": str(folder), "config": config, "split": split, "source": source,
                  "rows": len(ds), "arrow": _arrow_files(ds, stage)}
        (stage / RECORD).write_text(json.dumps(record, indent=1), encoding="utf-8")
        del ds
        try:
            os.rename(stage, entry)
            placed = True
        except OSError:  # another process placed the entry meanwhile: read theirs
            placed = False
    finally:
        holder.cleanup()
    if placed:
        return _load(folder, config, split, entry, kwargs)
    ds = _reuse(entry, source, folder, config, split, kwargs)
    if ds is not None:
        return ds
    if not retry:
        raise OSError(f"the Arrow cache entry {entry} keeps changing while this run converts {folder.name} "
                      f"{config}/{split}; run again")
    return _convert(home, entry, source, folder, config, split, kwargs, retry=False)


def _remove(entry: Path) -> None:
    if os.path.islink(entry) or os.path.isfile(entry):
        os.unlink(entry)
    else:
        shutil.rmtree(entry, ignore_errors=True)


def _prune(home: Path) -> None:
    """Remove entries unused for MAX_AGE_DAYS days or whose folder is gone, entries without a record, and the
    staging folders of killed conversions."""
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


# ---- memory -----------------------------------------------------------------------------------------------

@contextlib.contextmanager
def conversion_arrow_pool() -> Iterator[None]:
    """Arrow allocates from jemalloc inside the block (the system's ``malloc`` where this pyarrow
    has no jemalloc) instead of pyarrow's default pool, mimalloc; what the block freed is given back
    to the system when it ends.

    ``datasets`` converts a folder's parquet to an Arrow file on its first load, reading in Arrow's
    threads. mimalloc keeps the pages that those threads allocated and the main thread freed, so a
    conversion left about as much memory resident as it converted, for the rest of the run: 80 MB
    after converting 20,000 500 px TraVLR-like rows (46 MB of Arrow), whose scoring then peaked at
    661 MB; 3 MB with jemalloc (peak 586 MB), and with ``malloc`` glibc's heap kept 25 MB
    (peak 612 MB). Buffers made inside the block are freed to the pool that made them."""
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
