"""Damaged score-cache entries (issue 39): each entry is validated as it is read (its check, byte length,
dimension, finite values, key); a bad one is dropped and computed again with one warning, and the rerun gives the
same scores as a clean cache. A warning never kills a run. A cache folder another user could change is not read."""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
import sys

import numpy as np
import pytest
from helpers import warning_lines
from helpers_engine import ToyDual, toy_items

from vlprobe.scoring.engine import Engine
from vlprobe.storage import score_cache as cache_module
from vlprobe.storage.score_cache import ScoreCache, pack


def _score(root, items):
    scorer = ToyDual("toy")
    with ScoreCache(root, scorer.cache_key()) as cache:
        res = Engine(scorer, batch_size=4, cache=cache, progress=False).score(items)
        return res.scores, cache.path, scorer


def _first_key(part, kind: str) -> tuple[str, bytes]:
    with sqlite3.connect(part) as db:
        return db.execute("SELECT key, value FROM entries WHERE key >= ? AND key < ? ORDER BY key LIMIT 1",
                          (kind + ":", kind + ";")).fetchone()


def _set(part, key: str, value: bytes) -> None:
    with sqlite3.connect(part) as db:
        db.execute("UPDATE entries SET value = ? WHERE key = ?", (value, key))


def _short(part):  # a 5-byte value
    key, _ = _first_key(part, "i")
    _set(part, key, b"\x00\x01\x02\x03\x04")


def _wrong_dimension(part):  # half the floats, with a valid check: as a value written by another model would be
    key, value = _first_key(part, "t")
    vector = np.frombuffer(value[:-8], dtype=np.float32)
    _set(part, key, pack(key, vector[: len(vector) // 2]))


def _nan(part):
    key, value = _first_key(part, "i")
    vector = np.frombuffer(value[:-8], dtype=np.float32).copy()
    vector[0] = np.nan
    _set(part, key, pack(key, vector))


def _wrong_key(part):  # another entry's value copied under this key
    with sqlite3.connect(part) as db:
        (k1, v1), (k2, v2) = db.execute("SELECT key, value FROM entries WHERE key >= 'i:' AND key < 'i;' "
                                        "ORDER BY key LIMIT 2").fetchall()
    _set(part, k1, v2)


def _flipped_bit(part):
    key, value = _first_key(part, "t")
    _set(part, key, value[:3] + bytes([value[3] ^ 0x10]) + value[4:])


@pytest.mark.parametrize("damage", [_short, _wrong_dimension, _nan, _wrong_key, _flipped_bit],
                         ids=["5-bytes", "wrong-dimension", "nan", "wrong-key", "flipped-bit"])
def test_a_damaged_entry_is_dropped_and_recomputed_with_one_warning(tmp_path, capfd, damage):
    items = toy_items(24, n_colors=8)
    clean, part, _ = _score(tmp_path, items)
    damage(part)
    capfd.readouterr()
    again, _, scorer = _score(tmp_path, items)
    lines = warning_lines(capfd.readouterr().err)
    assert len(lines) == 1 and "damaged score-cache entr" in lines[0] and str(tmp_path) in lines[0], lines
    assert scorer.images_encoded + scorer.texts_encoded == 1  # only the damaged entry is computed again
    for got, want in zip(again, clean):  # a batch of one, not four: BLAS sums may differ in the last bits
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    third, _, scorer = _score(tmp_path, items)  # the fresh value replaced the damaged one
    assert scorer.images_encoded + scorer.texts_encoded == 0 and not warning_lines(capfd.readouterr().err)


def test_a_warning_on_a_full_disk_never_kills_the_run(monkeypatch):
    class Full:
        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")

        def flush(self):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(sys, "stderr", Full())
    from vlprobe.storage import arrow_cache, leftovers

    cache_module.warn("anything")  # none of vlprobe's warnings and notes raises
    arrow_cache.warn("anything")
    leftovers.say_on_stderr("anything")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown to another uid needs root")
def test_a_cache_folder_of_another_user_is_not_read(tmp_path, capfd):
    items = toy_items(12, n_colors=4)
    clean, part, _ = _score(tmp_path, items)
    os.chown(part.parent, 12345, 12345)  # as if another local user had made (or swapped in) the folder
    capfd.readouterr()
    again, _, scorer = _score(tmp_path, items)
    lines = warning_lines(capfd.readouterr().err)
    assert len(lines) == 1 and "another user" in lines[0] and str(part.parent) in lines[0], lines
    assert scorer.images_encoded > 0  # nothing was read from it
    for got, want in zip(again, clean):
        np.testing.assert_array_equal(got, want)


def test_a_cache_folder_others_may_write_is_made_private_and_foreign_parts_ignored(tmp_path, capfd):
    items = toy_items(12, n_colors=4)
    clean, part, _ = _score(tmp_path, items)
    os.chmod(part.parent, 0o777)
    foreign = part.with_name("part-7.sqlite")
    with sqlite3.connect(foreign) as db:  # another user's part, planted while the folder was open to all
        db.execute("CREATE TABLE entries (key TEXT PRIMARY KEY, value BLOB NOT NULL)")
        key, _ = _first_key(part, "i")
        db.execute("INSERT INTO entries VALUES (?, ?)", (key, pack(key, np.zeros(8, np.float32))))
    if os.geteuid() == 0:
        os.chown(foreign, 12345, 12345)
    capfd.readouterr()
    again, _, _ = _score(tmp_path, items)
    assert os.stat(part.parent).st_mode & 0o777 == 0o700
    lines = warning_lines(capfd.readouterr().err)
    assert len(lines) == 1 and "others could write into" in lines[0], lines
    for got, want in zip(again, clean):
        np.testing.assert_array_equal(got, want)


def test_a_model_digest_memo_others_could_write_is_not_trusted(tmp_path, monkeypatch):
    import json

    from vlprobe.storage import keys
    from vlprobe.storage.keys import folder_digest

    monkeypatch.setattr(keys, "RACY_S", -1.0)  # memoise files however recently written
    model = tmp_path / "model"
    model.mkdir()
    (model / "weights.bin").write_bytes(b"w" * 100)
    memo_dir = tmp_path / "memo"
    truth = folder_digest(model, memo_dir)
    memo = next(memo_dir.glob("*.json"))
    forged = {name: [*stamp[:4], "0" * 64] for name, stamp in json.loads(memo.read_text()).items()}
    memo.write_text(json.dumps(forged))
    assert folder_digest(model, memo_dir) != truth  # a memo of ours is believed (that is its point)...
    memo.write_text(json.dumps(forged))
    os.chmod(memo, 0o666)
    assert folder_digest(model, memo_dir) == truth  # ...one others could have written is not


# ---- every entry bound to the model it was computed for --------------------------------------------------------

class _Other(ToyDual):
    """Another model: other embeddings of the same size, so its scores read as this model's would change numbers."""

    def encode_images(self, inputs):
        return -super().encode_images(inputs)


def _score_with(scorer, root, items):
    with ScoreCache(root, scorer.cache_key()) as cache:
        return Engine(scorer, batch_size=4, cache=cache, progress=False).score(items).scores, cache.path


def _two_models(tmp_path):
    items = toy_items(12, n_colors=4)
    clean, part, _ = _score(tmp_path, items)
    theirs, their_part = _score_with(_Other("other"), tmp_path, items)
    assert not np.allclose(np.stack(clean), np.stack(theirs))  # what a mix-up would change
    return items, clean, part, their_part


@pytest.mark.parametrize("how", ["copied", "renamed", "symlinked"])
def test_another_models_part_file_is_refused_naming_it(tmp_path, capfd, how):
    items, clean, part, their_part = _two_models(tmp_path)
    part.unlink()  # nothing of this model's own is left: every value would come from the file placed here
    target = part if how == "renamed" else part.with_name("part-3.sqlite")
    if how == "copied":
        shutil.copy(their_part, target)
    elif how == "renamed":
        their_part.rename(target)
    else:
        target.symlink_to(their_part)
    capfd.readouterr()
    again, _, scorer = _score(tmp_path, items)
    lines = warning_lines(capfd.readouterr().err)
    assert len(lines) == 1 and str(target) in lines[0], lines
    assert ("symbolic link" if how == "symlinked" else "written for another model") in lines[0]
    assert scorer.images_encoded > 0  # computed again, not read from the other model's file
    for got, want in zip(again, clean):
        np.testing.assert_array_equal(got, want)
    assert os.path.lexists(target) == (how == "renamed")  # moved aside (a fresh own part is made at part-0)


def test_a_cache_folder_renamed_from_another_model_is_moved_aside(tmp_path, capfd):
    items, clean, part, their_part = _two_models(tmp_path)
    shutil.rmtree(part.parent)
    their_part.parent.rename(part.parent)  # the other model's folder under this model's name
    capfd.readouterr()
    again, _, _ = _score(tmp_path, items)
    lines = warning_lines(capfd.readouterr().err)
    assert len(lines) == 1 and "holds another model's scores" in lines[0] and str(part.parent) in lines[0], lines
    for got, want in zip(again, clean):
        np.testing.assert_array_equal(got, want)
