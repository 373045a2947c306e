"""Embeddings and pair scores on disk, so a killed run loses nothing: one SQLite part per process under
``<cache_dir>/<model>-<key>/``, values checked (:func:`pack`), a batch per transaction; what is another model's or
user's, writable by others or damaged is moved aside or not read; an unwritable cache becomes none, with one warning."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sqlite3
import stat
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import warn
from .keys import identity, key_digest, write_json
from .locations import UnsafeFolderError, is_mine, others_may_write, private_folder, refused_home, untrusted

# Entry keys: i:<image hash>, t:<text key> (embeddings), p:<image hash or ->:<text key> (a pair's score),
# f:<image hash>:<text key> (a pair's features); a text key hashes the token ids the model reads.
# What the entry keys and values mean, part of every folder's key. 2: texts keyed by their token ids; 3: each value
# followed by its check; 4: each part records the digest of its key.
ENTRY_FORMAT = 4
_CHECK_BYTES = 8

_CHUNK = 500  # keys per SELECT (SQLite's default limit on bound variables is 999 in old builds)
_CORRUPT = {"SQLITE_CORRUPT", "SQLITE_NOTADB"}


def _check_of(key: str, data: bytes) -> bytes:
    return hashlib.blake2b(key.encode("utf-8") + b"\0" + data, digest_size=_CHECK_BYTES).digest()


def pack(key: str, vector: npt.ArrayLike) -> bytes:
    """An entry's stored value: its float32 bytes and their check."""
    data = np.ascontiguousarray(vector, dtype=np.float32).tobytes()
    return data + _check_of(key, data)


def unpack(key: str, value: bytes) -> tuple[np.ndarray | None, str]:
    """(the vector, "") of a stored value, or (None, why it is damaged)."""
    value = bytes(value)
    data, check = value[:-_CHECK_BYTES], value[-_CHECK_BYTES:]
    if len(value) <= _CHECK_BYTES or _check_of(key, data) != check:
        return None, f"{len(value)} bytes that fail their check"
    if len(data) % 4:
        return None, f"{len(data)} bytes, not whole float32 values"
    vector = np.frombuffer(data, dtype=np.float32).copy()
    if not np.isfinite(vector).all():
        return None, "NaN or infinite values"
    return vector, ""


def is_corrupt(err: BaseException) -> bool:
    """Whether a sqlite3 error says the file itself is damaged (not locked, read-only or full)."""
    name = getattr(err, "sqlite_errorname", None)
    if name:
        return name in _CORRUPT
    text = str(err).lower()
    return isinstance(err, _Damaged) or "malformed" in text or "not a database" in text


def _reason(err: BaseException) -> str:
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__


class _Damaged(sqlite3.DatabaseError):
    """quick_check's problems in a file that still opens."""


class ScoreCache:
    """Content-addressed float32 vectors for one scorer, persisted in SQLite (see module doc)."""

    def __init__(self, root: str | os.PathLike[str], scorer_key: Mapping[str, Any], *, rank: int = 0) -> None:
        self.key = {**dict(scorer_key), "entry_format": ENTRY_FORMAT}
        self.digest = key_digest(self.key)
        self.root = Path(root)
        name = self.key.get("model_id") or self.key.get("model_name") or "model"
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", str(name).strip("/"))[-60:] or "model"
        self.dir = self.root / f"{slug}-{self.digest[:16]}"
        self.path = self.dir / f"part-{rank}.sqlite"
        self.moved_aside: list[Path] = []  # damaged files this process moved out of the way
        self.disabled_reason: str | None = None
        self.dropped = 0  # damaged entries dropped (computed again) by get_many
        self.temporary = False  # a throw-away cache (deleted after the run): nothing to resume from
        self._sizes: dict[str, int] = {}  # floats per vector of each kind of entry (i:, t:, p:, f:)
        self._db: sqlite3.Connection | None = None
        self._others: dict[Path, sqlite3.Connection] = {}  # other processes' parts, opened for reading
        try:
            if not self._private_folder():
                return
            key_file = self.dir / "key.json"
            if not key_file.exists():
                write_json(key_file, self.key, indent=2)
            self._db = self._open_own()
        except (OSError, sqlite3.Error) as err:
            why = _reason(err)
            if self.root.exists() and not self.root.is_dir():
                why = "it is a file, not a folder"
            self._disable(f"cannot write the score cache in {self.root} ({why})")

    def _private_folder(self) -> bool:
        """Make :attr:`dir` ours alone (False: no cache), setting aside a folder others could write or another model's."""
        why = refused_home(self.root)  # says so, once
        if why:
            self.disabled_reason = f"the score cache {self.root} is not used: {why}"
            return False
        try:
            st: os.stat_result | None = self.dir.lstat()
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode) and is_mine(st):  # else private_folder refuses it
            if others_may_write(st):
                self._set_aside(self.dir, "untrusted", f"the score cache folder {self.dir} is one others could write "
                                f"into (mode {stat.S_IMODE(st.st_mode):o})", "starting a private one (its entries "
                                "will be computed again)")
            elif (other := self._other_key()) is not None:
                self._set_aside(self.dir, "foreign", f"the score cache folder {self.dir} holds another model's "
                                f"scores (its key.json: {other})", "starting this model's own")
            else:
                return True
        try:
            private_folder(self.dir, self.root)
        except UnsafeFolderError as err:
            self._disable(f"the score cache folder is not used: {err}, so what it holds cannot be trusted")
            return False
        return True

    def _other_key(self) -> str | None:
        """What the folder's ``key.json`` says, when that is not this cache's key (None: it is, or it is absent)."""
        try:
            found = json.loads((self.dir / "key.json").read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as err:
            return f"unreadable, {_reason(err)}"
        if found == json.loads(json.dumps(self.key, default=str)):
            return None
        if not isinstance(found, dict):
            return f"a {type(found).__name__}"
        shown = {k: found.get(k) for k in ("model_id", "model_sha256", "revision", "family", "dtype") if k in found}
        return json.dumps(shown, default=str)[:200]

    def _set_aside(self, path: Path, kind: str, what: str, then: str) -> None:
        """Move ``path`` (and its -wal file; its -shm goes) to ``<name>.<kind>-<time>-<pid>``, saying so."""
        aside = path.with_name(f"{path.name}.{kind}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
        os.replace(path, aside)
        with contextlib.suppress(FileNotFoundError):
            os.replace(path.with_name(path.name + "-wal"), aside.with_name(aside.name + "-wal"))
        with contextlib.suppress(FileNotFoundError):
            path.with_name(path.name + "-shm").unlink()
        if kind == "damaged":
            self.moved_aside.append(aside)
        warn(f"{what}; moved it to {aside} and {then}")

    @property
    def enabled(self) -> bool:
        """False when the cache could not be used: nothing is read or kept."""
        return self._db is not None

    def _disable(self, what: str) -> None:
        if self.disabled_reason is None:
            warn(f"{what}; running without a cache: scores computed from now on are not saved for a rerun")
        self.disabled_reason = what
        self.close()

    @staticmethod
    def _connect(path: Path) -> sqlite3.Connection:
        db = sqlite3.connect(str(path), timeout=60, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            # NORMAL in WAL mode: a committed batch survives a killed process (a power cut may lose the last ones)
            db.execute("PRAGMA synchronous=NORMAL")
        except BaseException:
            db.close()
            raise
        return db

    def _open_own(self) -> sqlite3.Connection:
        """This process's part, integrity-checked; a damaged or foreign one is moved aside for a fresh one."""
        last = "a foreign part"
        for _ in range(3):
            before = identity(self.path)
            db = None
            try:
                db = self._connect(self.path)
                problems = [row[0] for row in db.execute("PRAGMA quick_check").fetchall()]
                if problems != ["ok"]:
                    raise _Damaged("; ".join(problems[:2]) + (f" (+{len(problems) - 2} more)" if len(problems) > 2 else ""))
                db.execute("BEGIN IMMEDIATE")  # both tables or neither: a part without meta is not this format's
                db.execute("CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, value BLOB NOT NULL)")
                db.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
                db.execute("INSERT OR IGNORE INTO meta VALUES ('key', ?)", (self.digest,))
                db.execute("COMMIT")
                foreign = self._not_bound(self.path, db)
                if not foreign:
                    return db
                db.close()
                self._set_aside(self.path, "foreign", f"the score cache file {foreign}", "continuing with a fresh cache file")
            except sqlite3.DatabaseError as err:
                if db is not None:
                    db.close()
                if not is_corrupt(err):
                    raise
                last = _reason(err)
                if before is None or identity(self.path) == before:  # else another process already replaced it
                    self._move_aside(self.path, last)
        raise sqlite3.DatabaseError(f"{self.path} is still damaged after moving it aside: {last}")

    def _move_aside(self, path: Path, why: str) -> None:
        self._set_aside(path, "damaged", f"the score cache file {path} is damaged ({why})",
                        "continuing with a fresh cache file (its entries will be computed again)")

    def _recover(self, path: Path, err: BaseException) -> None:
        """A DatabaseError from ``path``: a damaged file moved aside; anything else about our part disables the cache."""
        corrupt = is_corrupt(err)
        if path == self.path:
            if self._db is not None:
                self._db.close()
                self._db = None
            if not corrupt:
                self._disable(f"the score cache file {path} cannot be used ({_reason(err)})")
                return
            try:
                self._move_aside(path, _reason(err))
                self._db = self._open_own()
            except (OSError, sqlite3.Error) as again:
                self._disable(f"cannot replace the damaged score cache file {path} ({_reason(again)})")
            return
        other = self._others.pop(path, None)
        if other is not None:
            other.close()
        if corrupt:
            with contextlib.suppress(OSError):  # it cannot be moved: it is simply not read
                self._move_aside(path, _reason(err))

    def _readers(self) -> list[tuple[Path, sqlite3.Connection]]:
        """This process's part and every other part in the directory (opened once, kept)."""
        if self._db is None:
            return []
        out = [(self.path, self._db)]
        try:
            parts = sorted(self.dir.glob("part-*.sqlite"))
        except OSError:
            parts = []
        for part in parts:
            if part == self.path:
                continue
            db = self._others.get(part)
            if db is None:
                try:
                    foreign = untrusted(part, part.lstat())
                    if foreign is None:
                        db = self._connect(part)
                        foreign = self._not_bound(part, db)
                except sqlite3.Error as err:
                    self._recover(part, err)
                    continue
                except OSError:
                    continue  # gone meanwhile
                if foreign is not None or db is None:
                    if db is not None:
                        db.close()
                    if foreign:  # "": a part being made by another process this instant, with nothing in it yet
                        with contextlib.suppress(OSError):  # it cannot be moved: it is simply not read
                            self._set_aside(part, "foreign", f"the score cache file {foreign}; not reading it",
                                            "continuing without it")
                    continue
                self._others[part] = db
            out.append((part, db))
        return out

    def _not_bound(self, part: Path, db: sqlite3.Connection) -> str | None:
        """Why ``part`` was not written for this key, or None; "" for a file with no table yet (being made this instant)."""
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "meta" not in tables:
            return "" if "entries" not in tables else f"{part} records no key (it is not one vlprobe wrote for this model)"
        row = db.execute("SELECT value FROM meta WHERE name = 'key'").fetchone()
        if row is None or row[0] != self.digest:
            return (f"{part} was written for another model (key {str(row[0])[:16] if row else 'none'}..., this folder's "
                    f"{self.digest[:16]}...: copied, renamed or linked here from another model's folder)")
        return None

    def get_many(self, keys: Iterable[str]) -> dict[str, np.ndarray]:
        """The cached vectors among ``keys``, from every part file in the directory."""
        wanted = list(dict.fromkeys(keys))
        found: dict[str, np.ndarray] = {}
        bad: list[tuple[str, str]] = []
        for part, db in self._readers():
            try:
                todo = [k for k in wanted if k not in found]
                for start in range(0, len(todo), _CHUNK):
                    chunk = todo[start : start + _CHUNK]
                    marks = ",".join("?" * len(chunk))
                    for key, value in db.execute(f"SELECT key, value FROM entries WHERE key IN ({marks})", chunk):
                        vector, why = unpack(key, value)
                        if vector is not None and vector.size != (size := self._size(key, vector.size)):
                            why = f"{vector.size} values where its kind has {size}"
                            vector = None
                        if vector is None:
                            bad.append((key, why))
                        else:
                            found[key] = vector
            except sqlite3.DatabaseError as err:
                if part != self.path and not is_corrupt(err):
                    continue  # another process's part that cannot be read now (locked, new layout)
                self._recover(part, err)
        bad = [(k, why) for k, why in bad if k not in found]  # another part may hold a good copy
        if bad:
            if not self.dropped:
                warn(f"{len(bad)} damaged score-cache entr{'y' if len(bad) == 1 else 'ies'} in {self.dir} (e.g. "
                     f"{bad[0][0][:40]}: {bad[0][1]}); dropped, computing {'it' if len(bad) == 1 else 'them'} again "
                     "(the fresh values replace them)")
            self.dropped += len(bad)
        return found

    def _size(self, key: str, seen: int) -> int:
        """Floats per vector of ``key``'s kind: what we wrote, else the commonest length in the parts, else ``seen``."""
        kind = key.split(":", 1)[0]
        if kind not in self._sizes:
            counts: dict[int, int] = {}
            for _, db in self._readers():
                try:
                    # a range on the primary key ("i:" <= key < "i;"), which its index answers
                    for length, n in db.execute("SELECT length(value), COUNT(*) FROM entries WHERE key >= ? AND "
                                                "key < ? GROUP BY length(value)", (kind + ":", kind + ";")):
                        counts[length] = counts.get(length, 0) + n
                except sqlite3.DatabaseError:
                    continue
            usable = {(b - _CHECK_BYTES) // 4: n for b, n in counts.items() if b > _CHECK_BYTES and (b - _CHECK_BYTES) % 4 == 0}
            self._sizes[kind] = max(usable, key=lambda size: (usable[size], size)) if usable else seen
        return self._sizes[kind]

    def put_many(self, entries: Mapping[str, np.ndarray] | Iterable[tuple[str, np.ndarray]]) -> None:
        """Write entries in one transaction: after this returns, a crash loses none of them."""
        items = entries.items() if isinstance(entries, Mapping) else entries
        rows = []
        for k, v in items:
            rows.append((k, pack(k, v)))
            self._sizes.setdefault(k.split(":", 1)[0], int(np.size(v)))
        if not rows:
            return
        for _ in range(2):  # a second try on a fresh file when the first finds it damaged
            db = self._db
            if db is None:
                return
            try:
                db.execute("BEGIN IMMEDIATE")
                try:
                    db.executemany("INSERT OR REPLACE INTO entries (key, value) VALUES (?, ?)", rows)
                    db.execute("COMMIT")
                except BaseException:  # an error, or Ctrl-C: the batch is not half-written
                    with contextlib.suppress(sqlite3.Error):
                        db.execute("ROLLBACK")
                    raise
            except sqlite3.DatabaseError as err:
                self._recover(self.path, err)
                continue
            return

    def __len__(self) -> int:
        total = 0
        for part, db in self._readers():
            try:
                total += db.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
            except sqlite3.DatabaseError as err:
                if part == self.path or is_corrupt(err):
                    self._recover(part, err)
        return total

    def close(self) -> None:
        for db in [self._db, *self._others.values()]:
            if db is not None:
                with contextlib.suppress(sqlite3.Error):
                    db.close()
        self._db = None
        self._others.clear()

    def __enter__(self) -> ScoreCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
