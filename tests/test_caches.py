"""Where vlprobe's caches live, decided in one place (vlprobe/locations.py), and the datasets library's Arrow copies
of dataset folders (vlprobe/arrow_cache.py): private to the user, checked against the parquet they came from,
rebuilt when damaged or stale, pruned."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import datasets
import numpy as np
import pytest
from helpers_data import build_folder

import vlprobe
from vlprobe import arrow_cache, locations
from vlprobe.arrow_cache import load_folder_split
from vlprobe.benchmarks import Upstream
from vlprobe.builders import upstream
from vlprobe.cache import default_cache_dir
from vlprobe.image_sources import ImageResolver, SourceSpec

ROOT_ONLY = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                               reason="another user's folder is made with chown, which needs root")


def _every_cache() -> dict[str, Path]:
    """Where each kind of cache goes now, as the code that uses it asks."""
    up = Upstream(benchmark="x", repo="owner/repo", commit="0" * 40, folder="data", files=(), url_env="X_URL")
    return {
        "scores": default_cache_dir(),
        "annotations": upstream.cache_folder(up).parent,
        "images": ImageResolver(SourceSpec(name="coco", title="COCO", pattern=".*")).cache.parent,
        "datasets": locations.datasets_home(),
        "arrow": locations.arrow_home(),
    }


@pytest.mark.parametrize("how", ["VLPROBE_CACHE", "XDG_CACHE_HOME", "HOME"])
def test_every_cache_follows_the_same_rule(how, tmp_path, monkeypatch):
    for name in ("VLPROBE_CACHE", "XDG_CACHE_HOME", "VLPROBE_IMAGE_CACHE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    if how == "VLPROBE_CACHE":
        monkeypatch.setenv("VLPROBE_CACHE", str(tmp_path / "vc"))
        home = tmp_path / "vc"
    elif how == "XDG_CACHE_HOME":
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        home = tmp_path / "xdg" / "vlprobe"
    else:
        home = tmp_path / "home" / ".cache" / "vlprobe"
    assert locations.cache_home() == home
    assert _every_cache() == {"scores": home, "annotations": home / "annotations", "images": home / "images",
                              "datasets": home / "datasets", "arrow": home / "arrow"}
    # images alone may be sent elsewhere (another disk)
    monkeypatch.setenv("VLPROBE_IMAGE_CACHE", str(tmp_path / "big-disk"))
    assert _every_cache()["images"] == tmp_path / "big-disk" and _every_cache()["arrow"] == home / "arrow"


def test_a_private_folder_is_made_private_and_kept_so(tmp_path):
    made = locations.private_folder(tmp_path / "a" / "arrow")
    assert stat.S_IMODE(made.stat().st_mode) == 0o700
    os.chmod(made, 0o777)  # ours, but opened to everyone (by hand, or an old umask)
    assert stat.S_IMODE(locations.private_folder(made).stat().st_mode) == 0o700
    (tmp_path / "target").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "target")
    with pytest.raises(locations.UnsafeFolderError, match="symbolic link"):
        locations.private_folder(tmp_path / "link")


@ROOT_ONLY
def test_a_folder_of_another_user_is_refused(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o777)
    os.chown(theirs, 65534, 65534)
    with pytest.raises(locations.UnsafeFolderError, match="another user"):
        locations.private_folder(theirs)


# ---- the Arrow copies ------------------------------------------------------------------------------------------

@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("VLPROBE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "arrow"


@pytest.fixture
def data(tmp_path) -> Path:
    return build_folder(tmp_path / "data", n=6)


def _entry(cache: Path) -> Path:
    (entry,) = [p for p in cache.iterdir() if not p.name.startswith(".")]
    return entry


def _arrow_files(entry: Path) -> list[Path]:
    return sorted(entry.rglob("*.arrow"))


def _warnings(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("vlprobe: warning:")]


def test_the_copy_lives_in_the_users_cache_private_and_recorded(cache, data, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    first = load_folder_split(data, "pairs", "test")
    entry = _entry(cache)
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert {Path(f["filename"]).resolve() for f in first.cache_files} == {p.resolve() for p in _arrow_files(entry)}
    record = json.loads((entry / arrow_cache.RECORD).read_text())
    assert record["rows"] == 6 and record["folder"] == str(data.resolve()) and record["source"]["sha256"]
    assert not list((tmp_path / "tmp").iterdir())  # nothing in the shared temporary folder
    stamp = [p.stat().st_mtime_ns for p in _arrow_files(entry)]
    again = load_folder_split(data, "pairs", "test")  # read back, not converted again
    assert again["id"] == first["id"] and [p.stat().st_mtime_ns for p in _arrow_files(entry)] == stamp
    assert not _warnings(capsys.readouterr().err)


def _truncate(entry: Path) -> None:
    path = _arrow_files(entry)[0]
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _delete(entry: Path) -> None:
    _arrow_files(entry)[0].unlink()


def _swap(entry: Path) -> None:
    """Another split's Arrow file put in place of this one (as in issue 39's demonstration)."""
    other = datasets.Dataset.from_dict({"id": ["x"] * 50, "caption": ["another split"] * 50})
    other.save_to_disk(str(entry.parent / "other"))
    (arrow,) = (entry.parent / "other").glob("*.arrow")
    os.replace(arrow, _arrow_files(entry)[0])


def _garbage_record(entry: Path) -> None:
    (entry / arrow_cache.RECORD).write_text("{not json")


@pytest.mark.parametrize("damage", [_truncate, _delete, _swap, _garbage_record], ids=lambda f: f.__name__[1:])
def test_a_damaged_copy_is_converted_again_with_one_warning(damage, cache, data, capsys):
    clean = load_folder_split(data, "pairs", "test")[:]
    damage(_entry(cache))
    capsys.readouterr()
    again = load_folder_split(data, "pairs", "test")
    warnings = _warnings(capsys.readouterr().err)
    assert len(warnings) == 1 and "is damaged" in warnings[0] and "converting the parquet again" in warnings[0]
    assert again[:] == clean
    load_folder_split(data, "pairs", "test")  # whole again: read without a word
    assert not _warnings(capsys.readouterr().err)


def test_a_rebuilt_folder_is_converted_again_silently(cache, data, capsys):
    assert len(load_folder_split(data, "pairs", "test")) == 6
    time.sleep(0.01)
    build_folder(data.parent, n=8)  # the same folder, other rows
    assert len(load_folder_split(data, "pairs", "test")) == 8 and not _warnings(capsys.readouterr().err)
    assert len([p for p in cache.iterdir() if not p.name.startswith(".")]) == 1  # the stale copy was replaced


def test_old_and_orphaned_copies_are_pruned(cache, data, tmp_path):
    gone = build_folder(tmp_path / "gone", n=4)
    load_folder_split(gone, "pairs", "test")
    load_folder_split(data, "swap", "test")
    old = {p for p in cache.iterdir() if not p.name.startswith(".")}
    import shutil

    shutil.rmtree(gone)  # its copy is orphaned
    swap_entry = next(p for p in old if json.loads((p / arrow_cache.RECORD).read_text())["config"] == "swap")
    long_ago = time.time() - (arrow_cache.MAX_AGE_DAYS + 1) * 86400
    os.utime(swap_entry / arrow_cache.RECORD, (long_ago, long_ago))  # unused for a month
    load_folder_split(data, "pairs", "test")  # a new copy: the old ones are looked at
    left = {p for p in cache.iterdir() if not p.name.startswith(".")}
    assert not left & old and len(left) == 1


@ROOT_ONLY
def test_an_arrow_folder_of_another_user_is_never_read(cache, data, tmp_path, monkeypatch, capsys):
    clean = load_folder_split(data, "pairs", "test")[:]
    os.chown(cache, 65534, 65534)  # as if another local user had made (and could change) it
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(arrow_cache, "_FALLBACK", None)
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    got = load_folder_split(data, "pairs", "test")
    warnings = _warnings(capsys.readouterr().err)
    assert len(warnings) == 1 and "belongs to another user" in warnings[0] and "private temporary folder" in warnings[0]
    assert got[:] == clean
    assert all(str(tmp_path / "tmp") in f["filename"] for f in got.cache_files)


@pytest.mark.slow
def test_evaluate_after_damage_gives_the_clean_run(cache, data, tiny_clip_path, capsys):
    kw = dict(model=str(tiny_clip_path), datasets=str(data), bootstrap=0, num_workers=0, progress=False,
              cache_dir="none")
    clean = vlprobe.evaluate(**kw)
    for entry in [p for p in cache.iterdir() if not p.name.startswith(".")]:
        _truncate(entry)
    capsys.readouterr()
    again = vlprobe.evaluate(**kw)
    assert len(_warnings(capsys.readouterr().err)) == 2  # one per split (pairs, swap)
    for a, b in zip(clean.splits, again.splits):
        np.testing.assert_array_equal(np.stack(a.scores), np.stack(b.scores))
        assert a.metrics == b.metrics


def test_a_cached_run_draws_no_encoding_0_bars(tmp_path, capsys):
    """A second run reads every vector from the cache: no "encoding 0 images" / "encoding 0 texts" progress bar."""
    from helpers_engine import ToyDual, toy_items

    from vlprobe.cache import ScoreCache
    from vlprobe.engine import Engine

    items = toy_items(12)
    for _ in range(2):
        capsys.readouterr()
        scorer = ToyDual("toy")
        with ScoreCache(tmp_path, scorer.cache_key()) as cache:
            Engine(scorer, batch_size=4, cache=cache, progress=True).score(items)
    err = capsys.readouterr().err
    assert scorer.images_encoded == 0 and scorer.texts_encoded == 0
    assert "encoding 0" not in err
