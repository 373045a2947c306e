"""Where vlprobe finds what it ships and what it builds (vlprobe/storage/locations.py): a clone keeps its
folders (`make evaluate` unchanged); elsewhere the package's own copies and the user's dataset
folder (~/.cache/vlprobe/datasets, or $VLPROBE_CACHE/datasets) are used, never a Hub id."""

from __future__ import annotations

from pathlib import Path

import pytest

import vlprobe.storage.locations as L
from vlprobe import names, probing
from vlprobe.cli import main
from vlprobe.errors import DatasetError, ModelError
from vlprobe.evaluation import default_datasets, default_model


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("VLPROBE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("VLPROBE_ROOT", raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return tmp_path / "cache" / "datasets"


def _built(folder: Path) -> Path:
    (folder / "data" / "x").mkdir(parents=True)
    (folder / "data" / "x" / "test-00000-of-00001.parquet").write_bytes(b"")
    (folder / "vlprobe.yaml").write_text("")
    return folder


def test_the_clone_has_its_shipped_folders(repo_root):
    assert L.shipped("metric") == repo_root / "metric"
    assert L.shipped("space") == repo_root / "space"
    assert L.shipped_model() == repo_root / "models" / "mini-clip"
    assert L.shipped("nothing") is None


def test_dataset_folder_rules(home, tmp_path, monkeypatch):
    # Outside a clone: the user's folder, whatever the working directory.
    assert L.dataset_folder("travlr") == home / "travlr"
    (Path("travlr")).mkdir()  # a folder of that name that is not a vlprobe dataset folder (say, a clone of TraVLR)
    assert L.dataset_folder("travlr") == home / "travlr"
    # A vlprobe dataset folder here (the clone's committed card folder) is the one.
    Path("travlr/vlprobe.yaml").write_text("")
    assert L.dataset_folder("travlr") == Path("travlr")
    # $VLPROBE_ROOT, when set, is where builds go and the default is read.
    monkeypatch.setenv("VLPROBE_ROOT", str(tmp_path / "root"))
    assert L.dataset_folder("winoground_style") == tmp_path / "root" / "winoground_style"


def test_the_clone_builds_into_its_own_folders(repo_root, monkeypatch):
    """`make evaluate` runs `vlprobe build travlr` at the root: the committed card folder is the target."""
    monkeypatch.chdir(repo_root)
    monkeypatch.delenv("VLPROBE_ROOT", raising=False)
    import argparse

    from vlprobe.builders import travlr, winoground_style

    for builder in (travlr.Travlr(), winoground_style.WinogroundStyle()):
        p = argparse.ArgumentParser()
        builder.add_arguments(p)
        assert p.parse_args([]).out == Path(builder.name)


def test_build_outside_a_clone_defaults_to_the_users_folder(home):
    import argparse

    from vlprobe.builders import travlr

    p = argparse.ArgumentParser()
    travlr.Travlr().add_arguments(p)
    assert p.parse_args([]).out == home / "travlr"
    assert p.parse_args(["--out", "x"]).out == Path("x")


def test_offline_default_reads_the_users_folder(home):
    with pytest.raises(DatasetError, match=r"cache/datasets/travlr has not been built.*vlprobe build travlr"):
        default_datasets(Path.cwd())
    for name in ("travlr", "winoground_style"):
        _built(home / name)
    assert default_datasets(Path.cwd()) == [str(home / "travlr"), str(home / "winoground_style")]
    # A built folder in the working directory (a clone) comes first.
    _built(Path.cwd() / "travlr")
    assert default_datasets(Path.cwd())[0] == str(Path.cwd() / "travlr")


def test_default_model_is_the_clones_else_the_packages(home, repo_root, monkeypatch):
    assert default_model(repo_root) == str(repo_root / "models" / "mini-clip")
    assert default_model(Path.cwd()) == str(L.shipped_model())
    monkeypatch.setattr(L, "shipped_model", lambda: None)
    with pytest.raises(ModelError, match="ships none"):
        default_model(Path.cwd())


def test_probe_defaults_resolve_to_the_shipped_model_and_the_users_folder(home, monkeypatch):
    assert names.find_model(probing.DEFAULT_MODEL) == str(L.shipped_model())
    assert names.find_model("org/model") == "org/model"
    assert names.find_dataset("travlr") == "travlr"  # not built anywhere: left as given (a Hub id)
    _built(home / "travlr")
    assert names.find_dataset("travlr") == str(home / "travlr")
    _built(Path.cwd() / "travlr")
    assert names.find_dataset("travlr") == "travlr"  # the folder here


def test_publish_without_a_shipped_folder_says_so_in_one_line(home, monkeypatch, capsys):
    monkeypatch.setattr(L, "shipped", lambda name: None)
    for kind in ("metric", "space"):
        assert main(["publish", kind, "--repo", "my-lab/valse_metric", "--dry-run"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and f"no ./{kind} here" in err and "--folder" in err
