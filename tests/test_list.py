"""`vlprobe list`: the catalogue (benchmarks vlprobe builds, what they need, whether built and where), the dataset
folders found with their configs and splits, the families with their architectures, the bundled model."""

from __future__ import annotations

import shutil
from pathlib import Path

from helpers_data import build_folder

from vlprobe.cli import main


def test_list_shows_folders_configs_splits_and_families(tmp_path, monkeypatch, capsys):
    build_folder(tmp_path, n=4)
    (tmp_path / "synthetic" / "vlprobe.yaml").exists()
    unbuilt = tmp_path / "travlr"
    unbuilt.mkdir()
    repo = Path(__file__).resolve().parents[1]
    for name in ("README.md", "vlprobe.yaml"):
        (unbuilt / name).write_text((repo / "travlr" / name).read_text())
    (tmp_path / "not_a_dataset").mkdir()
    monkeypatch.chdir(tmp_path)
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "synthetic" in out and "pairs (test); swap (test)" in out
    assert "travlr" in out and "not built, `vlprobe build travlr`: spatiality, cardinality" in out
    assert "not_a_dataset" not in out
    assert "model families" in out and "dual" in out and "itm" in out
    assert main(["list", "--dataset", str(tmp_path / "synthetic")]) == 0
    assert "pairs (test); swap (test)" in capsys.readouterr().out


def test_list_of_an_unreadable_dataset_is_one_line(tmp_path, capsys):
    assert main(["list", "--dataset", str(tmp_path / "nosuch")]) == 2
    err = capsys.readouterr().err
    assert "nosuch" in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_list_is_a_catalogue_from_any_folder(tmp_path, monkeypatch, capsys):
    """Outside a clone (an empty working folder): every benchmark `vlprobe build` makes, with its configs, what it
    needs and where it is built (here: one built into the cache, where `vlprobe build` writes outside a clone), the
    folders found there, the families with their architectures, and the bundled model."""
    from vlprobe.builders import builders
    from vlprobe.storage.locations import datasets_home

    build_folder(tmp_path / "src", n=4)
    monkeypatch.setenv("VLPROBE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("VLPROBE_ROOT", raising=False)
    shutil.copytree(tmp_path / "src" / "synthetic", datasets_home() / "travlr")
    work = tmp_path / "empty"
    work.mkdir()
    monkeypatch.chdir(work)
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name in builders():
        assert f"\n  {name}\n" in out, name
    travlr = out[out.index("\n  travlr\n"):out.index("\n  valse\n")]
    assert "configs: spatiality, cardinality, quantifiers, numerical_comparison" in travlr
    assert "needs: nothing: scenes rendered offline" in travlr and f"built: {datasets_home() / 'travlr'}" in travlr
    valse = out[out.index("\n  valse\n"):out.index("\n  vl_checklist\n")]
    assert "github.com/Heidelberg-NLP/VALSE" in valse and "MS COCO 2014" in valse and "built: no" in valse
    assert "configs: all, counting" in valse and "(15 in all)" in valse
    assert "winoground  facebook/winoground" in out
    assert f"{datasets_home()} (the cache, where `vlprobe build` writes outside a clone):" in out
    assert "travlr" in out[out.index(f"{datasets_home()} (the cache"):] and "pairs (test); swap (test)" in out
    families = out[out.index("model families"):]
    for arch in ("CLIPModel", "VisionTextDualEncoderModel", "BridgeTowerForImageAndTextRetrieval",
                 "any AutoModelForZeroShotImageClassification class", "GPT2LMHeadModel"):
        assert arch in families, arch
    assert "bundled model: mini-clip" in out and "not in this installation" not in out


def test_a_folder_built_in_the_working_folder_is_built_in_the_catalogue_too(tmp_path, monkeypatch, capsys):
    """Run where `vlprobe build` wrote (the Space's set-up): the benchmark's "built:" line names the folder that
    "dataset folders found" lists with data, not "no"; a folder with a card but no data stays "built: no"."""
    build_folder(tmp_path / "src", n=4)
    work = tmp_path / "work"
    shutil.copytree(tmp_path / "src" / "synthetic", work / "travlr")
    repo = Path(__file__).resolve().parents[1]
    (work / "valse").mkdir()
    for name in ("README.md", "vlprobe.yaml"):
        (work / "valse" / name).write_text((repo / "valse" / name).read_text())
    monkeypatch.setenv("VLPROBE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("VLPROBE_ROOT", raising=False)
    monkeypatch.chdir(work)
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    travlr = out[out.index("\n  travlr\n"):out.index("\n  valse\n")]
    valse = out[out.index("\n  valse\n"):out.index("\n  vl_checklist\n")]
    assert f"built: {work / 'travlr'}" in travlr, travlr
    assert "built: no" in valse, valse
    found = out[out.index("dataset folders found"):]
    assert "travlr" in found and "pairs (test); swap (test)" in found
