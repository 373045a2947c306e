"""A persistent on-disk cache of embeddings and pair scores, so a killed run loses nothing.

Layout::

    <cache_dir>/<model-slug>-<key hash>/key.json          the scorer's cache_key(), for humans
    <cache_dir>/<model-slug>-<key hash>/part-<rank>.sqlite one SQLite file per writing process

The directory is chosen by the scorer's :meth:`~vlprobe.scorers.base.Scorer.cache_key` (model id,
resolved revision, family, dtype, preprocessing), so a different model, revision, precision or
preprocessing never reads another's numbers. Inside, entries are keyed by content:

* ``i:<sha256 of the image bytes>``: an image embedding (DualScorer);
* ``t:<sha256 of the text>``: a text embedding (DualScorer);
* ``p:<image hash or ->:<text hash>``: a pair's score and match probability (PairScorer; ``-``
  when the scorer reads no image).

Values are raw float32 bytes. Why SQLite in WAL mode: every batch is committed in one transaction,
so a process killed at any instant leaves only whole batches behind (no torn records to repair),
readers never block the writer, and it needs nothing outside the standard library. Each process of
a multi-process run writes its own ``part-<rank>.sqlite`` (no cross-process write locks; works
on per-node disks); reads look at every part in the directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

_CHUNK = 500  # keys per SELECT (SQLite's default limit on bound variables is 999 in old builds)


def default_cache_dir() -> Path:
    """``$VLPROBE_CACHE``, else ``$XDG_CACHE_HOME/vlprobe``, else ``~/.cache/vlprobe``."""
    if os.environ.get("VLPROBE_CACHE"):
        return Path(os.environ["VLPROBE_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "vlprobe"


def key_digest(key: Mapping[str, Any]) -> str:
    """A stable digest of a scorer's cache key (JSON with sorted keys)."""
    blob = json.dumps(key, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _slug(model_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", str(model_id).strip("/"))[-60:] or "model"


class ScoreCache:
    """Content-addressed float32 vectors for one scorer, persisted in SQLite (see module doc)."""

    def __init__(self, root: str | os.PathLike, scorer_key: Mapping[str, Any], *, rank: int = 0) -> None:
        self.key = dict(scorer_key)
        digest = key_digest(self.key)
        self.dir = Path(root) / f"{_slug(self.key.get('model_id', 'model'))}-{digest[:16]}"
        self.dir.mkdir(parents=True, exist_ok=True)
        key_file = self.dir / "key.json"
        if not key_file.exists():
            tmp = key_file.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(json.dumps(self.key, indent=2, sort_keys=True, default=str), encoding="utf-8")
            os.replace(tmp, key_file)
        self.path = self.dir / f"part-{rank}.sqlite"
        self._db = self._connect(self.path)
        self._db.execute("CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, value BLOB NOT NULL)")
        self._db.commit()
        self.writes = 0

    @staticmethod
    def _connect(path: Path) -> sqlite3.Connection:
        db = sqlite3.connect(str(path), timeout=60, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode: a committed batch survives a killed process (not a power cut, which
        # would only lose the last batches: they are then recomputed, never corrupted).
        db.execute("PRAGMA synchronous=NORMAL")
        return db

    def get_many(self, keys: Iterable[str]) -> dict[str, np.ndarray]:
        """The cached vectors among ``keys``, from every part file in the directory."""
        wanted = list(dict.fromkeys(keys))
        found: dict[str, np.ndarray] = {}
        for part in sorted(self.dir.glob("part-*.sqlite")):
            db = self._db if part == self.path else self._connect(part)
            try:
                todo = [k for k in wanted if k not in found]
                for start in range(0, len(todo), _CHUNK):
                    chunk = todo[start : start + _CHUNK]
                    marks = ",".join("?" * len(chunk))
                    for key, value in db.execute(f"SELECT key, value FROM entries WHERE key IN ({marks})", chunk):
                        found[key] = np.frombuffer(value, dtype=np.float32).copy()
            except sqlite3.DatabaseError:
                continue  # an unreadable part (not SQLite, or from a newer layout): recompute instead
            finally:
                if db is not self._db:
                    db.close()
        return found

    def put_many(self, entries: Mapping[str, np.ndarray] | Iterable[tuple[str, np.ndarray]]) -> None:
        """Write entries in one transaction: after this returns, a crash loses none of them."""
        items = entries.items() if isinstance(entries, Mapping) else entries
        rows = [(k, np.ascontiguousarray(v, dtype=np.float32).tobytes()) for k, v in items]
        if not rows:
            return
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.executemany("INSERT OR REPLACE INTO entries (key, value) VALUES (?, ?)", rows)
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self.writes += len(rows)

    def __len__(self) -> int:
        total = 0
        for part in self.dir.glob("part-*.sqlite"):
            db = self._db if part == self.path else self._connect(part)
            try:
                total += db.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
            finally:
                if db is not self._db:
                    db.close()
        return total

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "ScoreCache":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
