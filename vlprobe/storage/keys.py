"""Content hashing, in one place: a file's hash is kept with its *stamp* (:func:`stamp`) and reused while that is
unchanged, so gigabytes are not read on every run (a rewrite cannot set the change time back)."""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .locations import cache_home, distrust, private_folder

RACY_S = 2.0  # a file changed this recently may change again within the same clock tick
_BLOCK = 1 << 22


def key_digest(key: Mapping[str, Any]) -> str:
    """A stable digest of a mapping (JSON with sorted keys)."""
    blob = json.dumps(key, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def write_json(path: Path, value: object, indent: int | None = None) -> None:
    """``value`` as JSON in ``path``, through a temporary file renamed over it: a reader never sees half of it."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(json.dumps(value, indent=indent, sort_keys=True, default=str), encoding="utf-8")
    os.replace(tmp, path)


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def ids_hash(ids: Iterable[int]) -> str:
    return hashlib.sha256(",".join(map(str, map(int, ids))).encode("ascii")).hexdigest()


def git_blob_sha1(data: bytes) -> str:
    """``git hash-object``'s id of this content: what upstream annotation files are pinned by."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def stamp(st: os.stat_result) -> list[int]:
    """What says a file is unchanged: [size, mtime_ns, ctime_ns, inode]."""
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def identity(path: Path) -> tuple[int, int] | None:
    """Which file is at ``path`` now (device, inode), None when there is none."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


def settled(st: os.stat_result) -> bool:
    """Whether the file's last change is old enough for its stamp to be kept."""
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
    """(``path``'s sha256, its stamp or None while racy), reusing ``known`` (``[*stamp, sha256]``) while it holds."""
    st = os.stat(path)
    now = stamp(st)
    if isinstance(known, list) and len(known) == 5 and known[:4] == now and isinstance(known[4], str):
        digest = known[4]
    else:
        digest = sha256_files([path])[1][0]
    return digest, (now if settled(st) else None)


# Files that do not change what a model computes; everything else at the top of its folder is hashed.
_NOT_MODEL = (".md", ".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".pdf", ".html", ".log")


def folder_digest(folder: str | os.PathLike[str], memo_dir: str | os.PathLike[str] | None = None) -> str:
    """The sha256 of a local model folder's top-level files (not its card, images, logs), memoised by stamp."""
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
            write_json(memo_path, fresh)
        except OSError:
            pass
    return total.hexdigest()
