"""Content hashing, in one place: what the score cache keys its folders and entries by, what a cached copy of a file
is checked against, and the digest of a local model folder (for the score cache, the scorers, the Arrow cache and the
builders, so none of them reaches into another's store).

**Stamped hashes.** A hash is kept with the file's *stamp* (:func:`stamp`: size, modification and change times,
inode), and taken as it was while the stamp is the same (:func:`sha256_known`), so gigabytes of weights or parquet
are not read on every run. The change time makes this safe: a rewrite that puts the old modification time back still
sets it, and nothing can set it back. A stamp within :data:`RACY_S` seconds of the file's last change is not kept.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .locations import cache_home, distrust, private_folder

RACY_S = 2.0  # a file changed this recently may change again within the same clock tick: its stamp is not kept
_BLOCK = 1 << 22


def key_digest(key: Mapping[str, Any]) -> str:
    """A stable digest of a mapping (JSON with sorted keys): a scorer's cache key, a folder's name in the cache."""
    blob = json.dumps(key, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def ids_hash(ids: Iterable[int]) -> str:
    """A stable hash of a sequence of token ids."""
    return hashlib.sha256(",".join(map(str, map(int, ids))).encode("ascii")).hexdigest()


def git_blob_sha1(data: bytes) -> str:
    """The id git gives a file with this content (``git hash-object``): what upstream annotation files are pinned by."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def stamp(st: os.stat_result) -> list[int]:
    """What says a file is unchanged: [size, mtime_ns, ctime_ns, inode]."""
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def settled(st: os.stat_result) -> bool:
    """Whether the file's last change is old enough (:data:`RACY_S`) for its stamp to be kept."""
    return time.time() - max(st.st_mtime, st.st_ctime) > RACY_S


def sha256_files(paths: Sequence[str | os.PathLike[str]]) -> tuple[str, list[str]]:
    """(the sha256 of the files' content in order, as one stream; each file's own sha256), reading each once."""
    whole, each = hashlib.sha256(), []
    for path in paths:
        own = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(_BLOCK), b""):
                whole.update(block)
                own.update(block)
        each.append(own.hexdigest())
    return whole.hexdigest(), each


def sha256_known(path: str | os.PathLike[str], known: object) -> tuple[str, list[int] | None]:
    """(the sha256 of ``path``, its stamp to keep with it, None while the file is racy). ``known``: a record kept
    earlier, ``[*stamp, sha256]``; its hash is taken when the file's stamp is still the one recorded, else the file is
    read."""
    st = os.stat(path)
    now = stamp(st)
    if isinstance(known, list) and len(known) == 5 and known[:4] == now and isinstance(known[4], str):
        digest = known[4]
    else:
        digest = sha256_files([path])[1][0]
    return digest, (now if settled(st) else None)


# ---- what a local model folder holds -------------------------------------------------------------

# Files that do not change what a model computes: its card, pictures, logs. Everything else at the
# top of the folder (weights, config, tokenizer, processor, chat template, custom code) is hashed.
_NOT_MODEL = (".md", ".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".pdf", ".html", ".log")


def folder_digest(folder: str | os.PathLike[str], memo_dir: str | os.PathLike[str] | None = None) -> str:
    """The sha256 of what a local model folder holds: each top-level file's name, size and sha256 (hidden files,
    the card, images and logs left out; symlinks followed). Each hash is kept with its stamp in a memo
    (``<memo_dir>/<hash of the folder's path>.json``, default ``<cache_home>/model-digests``); a memo that cannot be
    read or written, or that another user could have written (:func:`~vlprobe.storage.locations.distrust`), is not
    used: every file is hashed."""
    folder = Path(folder)
    files = sorted(p for p in folder.iterdir()
                   if not p.name.startswith(".") and p.suffix.lower() not in _NOT_MODEL and p.is_file())
    home = Path(memo_dir) if memo_dir is not None else cache_home()
    memo_path = (home if memo_dir is not None else home / "model-digests") / \
        f"{hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:24]}.json"
    trusted = distrust(memo_path, home) is None
    try:
        memo = json.loads(memo_path.read_text(encoding="utf-8")) if trusted and memo_path.is_file() else {}
        if not isinstance(memo, dict):
            memo = {}
    except (OSError, ValueError):
        memo = {}
    fresh: dict[str, list] = {}
    total = hashlib.sha256()
    for path in files:
        digest, kept = sha256_known(path, memo.get(path.name))
        if kept is not None:
            fresh[path.name] = [*kept, digest]
        total.update(f"{path.name}\0{os.stat(path).st_size}\0{digest}\n".encode())
    if fresh != memo and trusted:
        try:
            private_folder(memo_path.parent)
            tmp = memo_path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(json.dumps(fresh, sort_keys=True), encoding="utf-8")
            os.replace(tmp, memo_path)
        except OSError:
            pass
    return total.hexdigest()
