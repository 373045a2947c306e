"""Dataset image cells that hold a path (issue 39): opened only inside the dataset folder; a path outside it (an
absolute path, ``../``, a link out) is refused in one line naming the row and column, unless the user passes
``--outside-images`` (``outside_images=True``)."""

from __future__ import annotations

import os
from pathlib import Path

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import png

import vlprobe
from vlprobe.cli import main
from vlprobe.dataset.folder import ConfigDecl, card_metadata, write_card
from vlprobe.dataset.images import ImageError, image_cell_in_folder
from vlprobe.errors import DatasetError

FEATURES = datasets.Features({"id": datasets.Value("string"), "image": datasets.Image(),
                              "caption": datasets.Value("string"), "foil": datasets.Value("string")})


def _paths_folder(root: Path, paths: list[str]) -> Path:
    """A dataset folder whose image cells hold ``paths`` and no bytes (parquet written as such)."""
    folder = root / "ds"
    (folder / "data" / "pairs").mkdir(parents=True)
    (folder / "pics").mkdir()
    (folder / "pics" / "inside.png").write_bytes(png((10, 200, 10)))
    write_card(folder, card_metadata([ConfigDecl("pairs", FEATURES, default=True)], license="mit"), "# test")
    image = pa.array([{"bytes": None, "path": p} for p in paths],
                     type=pa.struct([("bytes", pa.binary()), ("path", pa.string())]))
    table = pa.table({"id": [f"r{i}" for i in range(len(paths))], "image": image,
                      "caption": ["a"] * len(paths), "foil": ["b"] * len(paths)})
    table = table.replace_schema_metadata({"huggingface": FEATURES.arrow_schema.metadata[b"huggingface"]})
    pq.write_table(table, folder / "data" / "pairs" / "test-00000-of-00001.parquet")
    (folder / "vlprobe.yaml").write_text("id: id\nimages: [image]\ntexts: [caption, foil]\ngold: [[1, 0]]\n")
    return folder


@pytest.fixture()
def outside_png(tmp_path) -> Path:
    path = tmp_path / "private" / "photo.png"
    path.parent.mkdir()
    path.write_bytes(png((200, 10, 10)))
    return path


def test_cells_inside_are_resolved_against_the_folder_outside_refused(tmp_path, outside_png):
    folder = tmp_path / "f"
    (folder / "pics").mkdir(parents=True)
    (folder / "link.png").symlink_to(outside_png)
    cell = image_cell_in_folder({"bytes": None, "path": "pics/a.png"}, folder, "row 3 column 'image'")
    assert cell["path"] == os.path.realpath(folder / "pics" / "a.png")
    with_bytes = {"bytes": b"x", "path": "/etc/hostname"}
    assert image_cell_in_folder(with_bytes, folder, "w") is with_bytes  # the bytes are read, never the path
    for bad in (str(outside_png), "../private/photo.png", "link.png", "pics/../../private/photo.png"):
        with pytest.raises(ImageError, match=r"row 3 column 'image'.*outside the dataset folder.*--outside-images"):
            image_cell_in_folder({"bytes": None, "path": bad}, folder, "row 3 column 'image'")
        allowed = image_cell_in_folder({"bytes": None, "path": bad}, folder, "w", outside=True)["path"]
        assert os.path.realpath(allowed) == os.path.realpath(folder / bad)
    with pytest.raises(ImageError, match="without a folder"):
        image_cell_in_folder("pics/a.png", None, "w")


def test_evaluate_refuses_an_absolute_image_path_naming_row_and_column(tmp_path, tiny_clip_path, outside_png, capsys):
    folder = _paths_folder(tmp_path, ["pics/inside.png", str(outside_png)])
    argv = ["evaluate", "--dataset", str(folder), "--model", str(tiny_clip_path), "--out", str(tmp_path / "o"),
            "--cache-dir", "none", "--num-workers", "0", "--no-progress", "--bootstrap", "0"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "row 1 column 'image'" in err and str(outside_png) in err and "--outside-images" in err, err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "o").exists()
    with pytest.raises(DatasetError, match="row 1 column 'image'"):
        vlprobe.evaluate(tiny_clip_path, str(folder), cache_dir="none", num_workers=0, progress=False, bootstrap=0)
    result = vlprobe.evaluate(tiny_clip_path, str(folder), cache_dir="none", num_workers=0, progress=False,
                              bootstrap=0, outside_images=True)
    assert result.scores is not None


def test_paths_inside_the_folder_are_read_from_any_working_folder(tmp_path, tiny_clip_path, monkeypatch):
    folder = _paths_folder(tmp_path, ["pics/inside.png", "pics/inside.png"])
    monkeypatch.chdir(tmp_path / "ds" / "data")  # the relative path is the folder's, not the working folder's
    vlprobe.evaluate(tiny_clip_path, str(folder), cache_dir="none", num_workers=0, progress=False, bootstrap=0)
