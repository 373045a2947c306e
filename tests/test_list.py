"""`vlprobe list`: the dataset folders, configs and splits that can be evaluated, and the families."""

from __future__ import annotations

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
