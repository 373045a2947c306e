"""Where vlprobe's caches live, decided in one place (vlprobe/storage/locations.py), and the datasets library's Arrow copies
of dataset folders (vlprobe/storage/arrow_cache.py): private to the user, checked against the parquet they came from,
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
from helpers import warning_lines
from helpers_data import build_folder

import vlprobe
from vlprobe.benchmarks import Upstream
from vlprobe.builders import upstream
from vlprobe.dataset.image_sources import ImageResolver, SourceSpec
from vlprobe.storage import arrow_cache, locations
from vlprobe.storage.arrow_cache import load_folder_split

ROOT_ONLY = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                               reason="another user's folder is made with chown, which needs root")


def _every_cache() -> dict[str, Path]:
    """Where each kind of cache goes now, as the code that uses it asks."""
    up = Upstream(benchmark="x", repo="owner/repo", commit="0" * 40, folder="data", files=(), url_env="X_URL")
    return {
        "scores": locations.cache_home(),
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


def _cache_entry(cache: Path) -> Path:
    (entry,) = [p for p in cache.iterdir() if not p.name.startswith(".")]
    return entry


def _arrow_files(entry: Path) -> list[Path]:
    return sorted(entry.rglob("*.arrow"))


def test_the_copy_lives_in_the_users_cache_private_and_recorded(cache, data, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    first = load_folder_split(data, "pairs", "test")
    entry = _cache_entry(cache)
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert {Path(f["filename"]).resolve() for f in first.cache_files} == {p.resolve() for p in _arrow_files(entry)}
    record = json.loads((entry / arrow_cache.RECORD).read_text())
    assert record["rows"] == 6 and record["folder"] == str(data.resolve()) and record["source"]["sha256"]
    assert not list((tmp_path / "tmp").iterdir())  # nothing in the shared temporary folder
    stamp = [p.stat().st_mtime_ns for p in _arrow_files(entry)]
    again = load_folder_split(data, "pairs", "test")  # read back, not converted again
    assert again["id"] == first["id"] and [p.stat().st_mtime_ns for p in _arrow_files(entry)] == stamp
    assert not warning_lines(capsys.readouterr().err)


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


def _same_size_edit(entry: Path) -> None:
    """A caption's bytes changed in place, the file's size and modification time kept (issue 48)."""
    path = _arrow_files(entry)[0]
    st, data = path.stat(), path.read_bytes()
    path.write_bytes(data.replace(b"a shape number", b"X shape number", 1))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _planted_file(entry: Path) -> None:
    (_arrow_files(entry)[0].parent / "cache-planted.arrow").write_bytes(b"x")


@pytest.mark.parametrize("damage", [_truncate, _delete, _swap, _garbage_record, _same_size_edit, _planted_file],
                         ids=lambda f: f.__name__[1:])
def test_a_damaged_copy_is_converted_again_with_one_warning(damage, cache, data, capsys):
    clean = load_folder_split(data, "pairs", "test")[:]
    damage(_cache_entry(cache))
    capsys.readouterr()
    again = load_folder_split(data, "pairs", "test")
    warnings = warning_lines(capsys.readouterr().err)
    assert len(warnings) == 1 and "is damaged" in warnings[0] and "converting the parquet again" in warnings[0]
    assert again[:] == clean
    load_folder_split(data, "pairs", "test")  # whole again: read without a word
    assert not warning_lines(capsys.readouterr().err)


def test_a_rebuilt_folder_is_converted_again_silently(cache, data, capsys):
    assert len(load_folder_split(data, "pairs", "test")) == 6
    time.sleep(0.01)
    build_folder(data.parent, n=8)  # the same folder, other rows
    assert len(load_folder_split(data, "pairs", "test")) == 8 and not warning_lines(capsys.readouterr().err)
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
    warnings = warning_lines(capsys.readouterr().err)
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
    assert len(warning_lines(capsys.readouterr().err)) == 2  # one per split (pairs, swap)
    for a, b in zip(clean.splits, again.splits):
        np.testing.assert_array_equal(np.stack(a.scores), np.stack(b.scores))
        assert a.metrics == b.metrics


def test_a_cached_run_draws_no_encoding_0_bars(tmp_path, capsys):
    """A second run reads every vector from the cache: no "encoding 0 images" / "encoding 0 texts" progress bar."""
    from helpers_engine import ToyDual, toy_items

    from vlprobe.scoring.engine import Engine
    from vlprobe.storage.score_cache import ScoreCache

    items = toy_items(12)
    for _ in range(2):
        capsys.readouterr()
        scorer = ToyDual("toy")
        with ScoreCache(tmp_path, scorer.cache_key()) as cache:
            Engine(scorer, batch_size=4, cache=cache, progress=True).score(items)
    err = capsys.readouterr().err
    assert scorer.images_encoded == 0 and scorer.texts_encoded == 0
    assert "encoding 0" not in err


def test_a_shard_that_is_not_what_its_name_records_is_refused(cache, data):
    """A built folder's shard replaced by another config's (or edited) is refused naming it: each shard is named after
    its content's sha256 when it is built."""
    from vlprobe.errors import DatasetError

    load_folder_split(data, "pairs", "test")
    (pairs,) = (data / "data" / "pairs").glob("*.parquet")
    (swap,) = (data / "data" / "swap").glob("*.parquet")
    os.replace(swap, pairs)  # another config's rows under this shard's name
    with pytest.raises(DatasetError, match=rf"{pairs.name} does not hold what the build wrote"):
        load_folder_split(data, "pairs", "test")


# ---- a second local user ----------------------------------------------------------------------------------------

def _second_user() -> tuple[int, int]:
    """A second local user to act as (``nobody``, else one made with useradd); skipped with the reason where the
    test cannot act as one."""
    import pwd
    import shutil
    import subprocess

    if not hasattr(os, "geteuid") or os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("acting as a second local user needs root and setpriv (util-linux)")
    for name in ("nobody", "vlprobe-other"):
        try:
            user = pwd.getpwnam(name)
            return user.pw_uid, user.pw_gid
        except KeyError:
            continue
    made = subprocess.run(["useradd", "--system", "--no-create-home", "vlprobe-other"], capture_output=True)
    if made.returncode:
        pytest.skip(f"no second local user, and useradd failed: {made.stderr.decode().strip()}")
    user = pwd.getpwnam("vlprobe-other")
    return user.pw_uid, user.pw_gid


def _as_second_user(user: tuple[int, int], script: str) -> None:
    import subprocess

    done = subprocess.run(["setpriv", f"--reuid={user[0]}", f"--regid={user[1]}", "--clear-groups", "/bin/sh", "-ec",
                           script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.fixture
def shared() -> Path:
    """A folder both users can write (as /tmp is), outside pytest's private temporary folders."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="vlprobe-shared-", dir="/tmp"))
    folder.chmod(0o1777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _evaluate(capsys, *argv: str) -> tuple[int, str, str]:
    from vlprobe.cli import main

    capsys.readouterr()
    code = main(["evaluate", *argv, "--bootstrap", "0", "--num-workers", "0", "--no-progress"])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow
def test_a_cache_home_another_user_made_changes_no_number(shared, tiny_clip_path, tmp_path, monkeypatch, capsys):
    """Issue 48: the cache home (here $VLPROBE_CACHE, a shared lab folder) was made by another user, who put a
    dataset of their own under the name the victim scores and could swap its score-cache folders: the dataset is
    refused in one line, and every other run goes on without that home's caches, its numbers those of a clean run."""
    user = _second_user()
    data = build_folder(shared / "src", n=6)
    home = shared / "home"
    _as_second_user(user, f"mkdir -m 755 {home} {home}/datasets && cp -r {data} {home}/datasets/sc")
    monkeypatch.setenv("VLPROBE_CACHE", str(tmp_path / "own"))
    code, clean, _ = _evaluate(capsys, "--dataset", str(data), "--model", str(tiny_clip_path), "--out",
                               str(tmp_path / "clean"))
    assert code == 0
    monkeypatch.setenv("VLPROBE_CACHE", str(home))
    monkeypatch.chdir(tmp_path)
    code, _, err = _evaluate(capsys, "--dataset", "sc", "--model", str(tiny_clip_path), "--out", str(tmp_path / "a"))
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"{home}/datasets/sc" in err and "belongs to another user" in err and "Traceback" not in err
    code, out, err = _evaluate(capsys, "--dataset", str(data), "--model", str(tiny_clip_path), "--out",
                               str(tmp_path / "b"))
    warnings = warning_lines(err)
    assert code == 0 and len(warnings) == 1, err
    assert f"not using the cache folder {home}: {home} belongs to another user" in warnings[0]
    assert "chmod 700" in warnings[0]
    tables = [[line for line in text.splitlines() if "from the cache" not in line and "wrote" not in line]
              for text in (out, clean)]
    assert tables[0] == tables[1]  # every number that of the clean run
    assert sorted(p.name for p in home.iterdir()) == ["datasets"]  # nothing of the victim's was written there


@pytest.mark.slow
def test_an_entry_planted_while_arrow_was_open_is_dropped(shared, monkeypatch, capsys):
    """Issue 48: the user's own arrow/ had been 0777; another user replaced an entry by a doctored copy (a caption
    edited, sizes kept). vlprobe empties the folder (not only makes it private again) and converts afresh."""
    user = _second_user()
    data = build_folder(shared / "src", n=6)
    home = shared / "home"
    home.mkdir(mode=0o755)
    monkeypatch.setenv("VLPROBE_CACHE", str(home))
    clean = load_folder_split(data, "pairs", "test")[:]
    (home / "arrow").chmod(0o777)
    entry = _cache_entry(home / "arrow")
    arrow = _arrow_files(entry)[0].relative_to(entry)
    doctor = (f"import pathlib; p = pathlib.Path('{entry}/{arrow}'); "
              "p.write_bytes(p.read_bytes().replace(b'a shape number', b'X shape number'))")
    _as_second_user(user, f"mv {entry} {entry}.old && cp -r {entry}.old {entry} && /usr/bin/python3 -c \"{doctor}\"")
    assert (entry / arrow).stat().st_uid == user[0]
    capsys.readouterr()
    again = load_folder_split(data, "pairs", "test")[:]
    warnings = warning_lines(capsys.readouterr().err)
    assert len(warnings) == 1 and "was writable by others (mode 777)" in warnings[0] and "emptied" in warnings[0]
    assert again == clean and stat.S_IMODE((home / "arrow").stat().st_mode) == 0o700


def test_a_dataset_found_in_the_cache_that_others_could_change_is_refused(tmp_path, monkeypatch):
    """`--dataset NAME` finding <cache>/datasets/NAME is checked as every cache is, file by file."""
    from vlprobe.errors import DatasetError
    from vlprobe.names import find_dataset

    monkeypatch.setenv("VLPROBE_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    locations.private_folder(locations.datasets_home())
    folder = build_folder(locations.datasets_home(), n=4)
    (folder / "vlprobe.yaml").write_text("id: id\nimages: [image]\ntexts: [caption, foil]\ngold: [[1, 0]]\n")
    assert find_dataset("synthetic") == str(folder)
    (folder / "data" / "pairs").chmod(0o777)  # a folder inside it others could write into
    with pytest.raises(DatasetError, match=r"dataset 'synthetic': found .* in vlprobe's cache, but .*pairs is "
                                           r"writable by others \(mode 777\), who could have changed its rows"):
        find_dataset("synthetic")


def test_an_annotation_cache_others_could_change_is_refused(tmp_path, monkeypatch):
    """An annotation file without a pinned hash would be used as found: its cache is held to the same rule."""
    from vlprobe.builders import AnnotationError

    home = tmp_path / "shared"
    home.mkdir(mode=0o777)
    home.chmod(0o777)
    monkeypatch.setenv("VLPROBE_CACHE", str(home))
    up = Upstream(benchmark="x", repo="owner/repo", commit="0" * 40, folder="data", files=(), url_env="X_URL")
    with pytest.raises(AnnotationError, match=rf"not using the annotation cache .*: {home} is writable by others "
                                              r"\(mode 777\).*chmod 700"):
        upstream.cache_folder(up)
    home.chmod(0o700)
    assert upstream.cache_folder(up).parent == home / "annotations"
