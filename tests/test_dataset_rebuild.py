"""A dataset folder changes as one unit on rebuild (issue 39): it is rebuilt in a copy beside it and swapped in at
the end, so a build killed at any step of its publish leaves it all old or all new, and readable; a failed build
leaves nothing where no folder existed."""

from __future__ import annotations

import argparse
from pathlib import Path

import datasets
import pytest
from helpers import Killed

import vlprobe.dataset.folder as df
from vlprobe.builders import travlr
from vlprobe.builders.folder import build_folder
from vlprobe.publish import check_dataset_folder
from vlprobe.storage import leftovers, run_folder


@pytest.fixture()
def source(tmp_path) -> Path:
    from helpers_data import folder_source

    src = folder_source(tmp_path / "src")
    (src / "more.csv").write_text("id,image,caption,foil\nm1,images/red.png,red,blue\nm2,images/blue.png,blue,red\n"
                                  "m3,images/red.png,crimson,navy\n")
    return src


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _readable(folder: Path, cache: Path) -> None:
    problems, _ = check_dataset_folder(folder)
    assert problems == [], problems
    meta = df.read_card_metadata(folder)
    for config in [c["config_name"] for c in meta["configs"]]:
        assert len(datasets.load_dataset(str(folder), config, split="test", cache_dir=str(cache))) > 0


STEPS = ["write_split", "record_data_files", "write_card", "before the swap", "inside the swap"]


@pytest.mark.parametrize("step", STEPS)
def test_a_rebuild_killed_at_each_step_leaves_the_folder_all_old_or_all_new(source, tmp_path, monkeypatch, step):
    out = build_folder(source, tmp_path / "ds", license="mit", config="one", captions="rows.csv")
    old = _snapshot(out)
    new_folder = build_folder(source, tmp_path / "clean-new", license="mit", config="one", captions="more.csv")
    monkeypatch.setattr(leftovers.OwnedDir, "cleanup", lambda self: None)  # a killed process cleans nothing
    at_kill = {}  # the folder at the instant of the kill: what a kill -9 leaves (no except or finally runs)
    if step in ("write_split", "record_data_files", "write_card"):
        def killed(*args, **kwargs):
            at_kill.update(_snapshot(out))
            raise Killed
        monkeypatch.setattr(df, step, killed)
    else:
        real = run_folder.exchange

        def exchange(a, b):
            if step == "inside the swap":
                assert real(a, b)
            at_kill.update(_snapshot(out))
            raise Killed
        monkeypatch.setattr(run_folder, "exchange", exchange)
    with pytest.raises(Killed):
        build_folder(source, out, license="mit", config="one", captions="more.csv")
    monkeypatch.undo()
    now = _snapshot(out)
    assert at_kill == now  # nothing was put right after the kill
    if step == "inside the swap":  # all new: the same files as a clean build of the new rows
        assert now.keys() == _snapshot(new_folder).keys() and now != old
    else:
        assert now == old
    _readable(out, tmp_path / "hf")


def test_a_failed_fresh_build_leaves_no_folder(tmp_path, monkeypatch):
    import vlprobe.builders.travlr as tr

    calls = []

    def fails(*args, **kwargs):
        calls.append(1)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tr, "write_rows", fails)
    args = argparse.Namespace(out=str(tmp_path / "travlr"), split_sizes=None, configs="spatiality", size="tiny",
                              seed=0, workers=1)
    with pytest.raises(OSError, match="No space left"):
        travlr.Travlr().build(args)
    assert calls and sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_dataset_folder_that_is_a_symbolic_link_stays_one(source, tmp_path):
    real = build_folder(source, tmp_path / "real", license="mit", config="one", captions="rows.csv")
    link = tmp_path / "link"
    link.symlink_to(real)
    build_folder(source, link, license="mit", config="one", captions="more.csv")
    assert link.is_symlink() and (real / "vlprobe.yaml").is_file()
    _readable(link, tmp_path / "hf")
