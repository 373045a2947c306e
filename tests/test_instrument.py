"""A user's own instrument: `vlprobe build folder` turns a plain folder of images and a captions
file into a Hub dataset folder, and its vlprobe.yaml turns the rows into items."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import datasets
import numpy as np
import pytest

from vlprobe.builders.folder import build_folder
from vlprobe.cli import main
from vlprobe.dataset.spec import find_spec
from vlprobe.publish import check_dataset_folder


def _make_images_module(repo_root: Path):
    spec = importlib.util.spec_from_file_location("shapes_make_images", repo_root / "examples/shapes/make_images.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def shapes_source(repo_root, tmp_path_factory) -> Path:
    """The worked example's source folder, with its images drawn (they are not committed)."""
    src = tmp_path_factory.mktemp("shapes_src") / "shapes"
    shutil.copytree(repo_root / "examples/shapes", src, ignore=shutil.ignore_patterns("images", "__pycache__"))
    _make_images_module(repo_root).make_images(src / "images")
    return src


@pytest.fixture(scope="module")
def shapes_dataset(shapes_source, tmp_path_factory) -> Path:
    """The worked example built with the two commands of docs/datasets.md."""
    out = tmp_path_factory.mktemp("shapes_out") / "shapes_dataset"
    for captions, config in (("captions.csv", "shapes"), ("swaps.jsonl", "swaps")):
        rc = main(["build", "folder", str(shapes_source), "--captions", captions, "--config", config,
                   "--license", "cc0-1.0", "--pretty-name", "Shapes", "--out", str(out)])
        assert rc == 0
    return out


def test_example_images_are_deterministic(repo_root, tmp_path):
    module = _make_images_module(repo_root)
    a = [p.read_bytes() for p in module.make_images(tmp_path / "a")]
    b = [p.read_bytes() for p in module.make_images(tmp_path / "b")]
    assert a == b and len(a) == len(module.SCENES)


def test_worked_example_builds_and_validates(shapes_dataset):
    problems, files = check_dataset_folder(shapes_dataset)
    assert problems == []
    assert [f.rsplit("-", 1)[0] for f in sorted(files)] == ["data/shapes/test-00000-of-00001", "data/swaps/test-00000-of-00001"]
    assert datasets.get_dataset_config_names(str(shapes_dataset)) == ["shapes", "swaps"]
    assert datasets.get_dataset_default_config_name(str(shapes_dataset)) == "shapes"


def test_worked_example_items_convert(shapes_dataset):
    spec = find_spec(str(shapes_dataset))
    shapes = datasets.load_dataset(str(shapes_dataset), "shapes", split="test")
    items = list(spec.iter_items(shapes, config="shapes"))
    assert len(items) == 8
    first = items[0]
    assert first.id == "color-1" and first.shape == (1, 2)
    assert first.texts == ("a red circle", "a blue circle")
    assert np.array_equal(first.gold, [[True, False]])
    assert first.tags == ("phenomenon=color",)
    assert first.images[0].size == (96, 96)  # decoded from the embedded bytes
    assert {t for it in items for t in it.tags} == {
        "phenomenon=color", "phenomenon=counting", "phenomenon=relations", "phenomenon=existence"}

    swaps = datasets.load_dataset(str(shapes_dataset), "swaps", split="test")
    items = list(spec.iter_items(swaps, config="swaps"))
    assert len(items) == 3 and all(it.shape == (2, 2) for it in items)
    assert np.array_equal(items[0].gold, np.eye(2, dtype=bool))
    assert items[0].texts == ("a circle to the left of a square", "a square to the left of a circle")


def test_a_json_array_of_records_builds_the_same_rows_as_jsonl(shapes_source, tmp_path):
    """A .json captions file (one JSON array of records, what json.dump of a list writes) is accepted, found on its
    own, and gives the same rows as the same records a line at a time; anything else is one line naming the file."""
    src = tmp_path / "src"
    shutil.copytree(shapes_source, src, ignore=shutil.ignore_patterns("*.csv", "*.jsonl"))
    records = [json.loads(line) for line in (shapes_source / "swaps.jsonl").read_text().splitlines() if line.strip()]
    (src / "swaps.json").write_text(json.dumps(records, indent=2))
    build_folder(src, tmp_path / "from_json", config="swaps", license="cc0-1.0")  # found: the only captions file
    build_folder(shapes_source, tmp_path / "from_jsonl", captions="swaps.jsonl", config="swaps", license="cc0-1.0")
    got, want = (datasets.load_dataset(str(tmp_path / name), "swaps", split="test") for name in ("from_json", "from_jsonl"))
    assert got.to_list() == want.to_list() and len(got) == len(records)
    (src / "swaps.json").write_text(json.dumps({"rows": records}))
    with pytest.raises(ValueError, match=r"swaps.json: a .json captions file must hold one JSON array of objects"):
        build_folder(src, tmp_path / "bad", config="swaps", license="cc0-1.0")
    (src / "swaps.json").write_text(json.dumps([records[0], ["not", "a", "record"]]))
    with pytest.raises(ValueError, match=r"swaps.json row 2: each element of the array must be a JSON object"):
        build_folder(src, tmp_path / "bad2", config="swaps", license="cc0-1.0")


def test_rebuilding_a_config_replaces_it(shapes_source, tmp_path):
    out = tmp_path / "ds"
    build_folder(shapes_source, out, captions="captions.csv", config="shapes", license="cc0-1.0")
    # vlprobe.yaml overrides a config ("swaps") that is not built yet: publishing refuses that.
    problems = check_dataset_folder(out)[0]
    assert len(problems) == 1 and "configs.swaps overrides a config the card does not declare" in problems[0]
    build_folder(shapes_source, out, captions="swaps.jsonl", config="swaps", license="cc0-1.0")
    build_folder(shapes_source, out, captions="captions.csv", config="shapes", license="cc0-1.0")
    card = (out / "README.md").read_text()
    assert card.count("config_name: shapes") == 2  # once in dataset_info, once in configs
    assert card.count("config_name: swaps") == 2 and card.count("default: true") == 1
    assert len(list((out / "data/shapes").glob("*.parquet"))) == 1
    assert check_dataset_folder(out)[0] == []


def test_default_spec_for_image_caption_foil(tmp_path, shapes_source):
    """Without vlprobe.yaml, the columns image/caption/foil... get the obvious spec."""
    src = tmp_path / "plain"
    shutil.copytree(shapes_source / "images", src / "images")
    (src / "pairs.csv").write_text(
        "image,caption,foil_1,foil_2,kind\n"
        "images/red_circle.png,a red circle,a blue circle,a green circle,color\n"
    )
    out = build_folder(src, tmp_path / "out", license="cc-by-4.0", config="colors")
    spec = find_spec(str(out))
    assert spec.texts == ("caption", "foil_1", "foil_2") and spec.gold == [[1, 0, 0]] and spec.tags == ("kind",)
    assert check_dataset_folder(out)[0] == []


def test_added_config_with_another_shape_gets_an_override(tmp_path, shapes_source):
    """A second config whose columns differ from the folder's spec gets configs.<name> in vlprobe.yaml."""
    src = tmp_path / "src"
    shutil.copytree(shapes_source / "images", src / "images")
    (src / "vlprobe.yaml").write_text("images: [image]\ntexts: [caption, foil]\ngold: [[1, 0]]\n")
    (src / "a.csv").write_text("image,caption,foil\nimages/red_circle.png,a red circle,a blue circle\n")
    (src / "b.jsonl").write_text(json.dumps(
        {"image": "images/one_square.png", "caption": "one square", "foil": "two squares"}) + "\n")
    out = tmp_path / "out"
    build_folder(src, out, captions="a.csv", config="a", license="mit")
    (src / "vlprobe.yaml").write_text("images: [image]\ntexts: [foil, caption]\ngold: [[0, 1]]\n")
    build_folder(src, out, captions="b.jsonl", config="b", license="mit")
    spec = find_spec(str(out))
    assert spec.for_config("a").texts == ("caption", "foil")
    assert spec.for_config("b").texts == ("foil", "caption") and spec.for_config("b").gold == [[0, 1]]
    assert check_dataset_folder(out)[0] == []


@pytest.mark.parametrize(
    "csv_text, message",
    [
        ("image,caption,foil\nimages/nope.png,a,b\n", "does not exist"),
        ("image,caption,foil\nimages/red_circle.png,a\n", "different number of cells"),
        ("picture,text\nimages/red_circle.png,a\n", "not the simple"),
        ("caption,foil\nx,y\n", "no column names image files"),
    ],
)
def test_build_refuses_bad_sources(tmp_path, shapes_source, csv_text, message):
    src = tmp_path / "src"
    shutil.copytree(shapes_source / "images", src / "images")
    (src / "rows.csv").write_text(csv_text)
    with pytest.raises((ValueError, FileNotFoundError), match=message):
        build_folder(src, tmp_path / "out", license="mit")
    assert not (tmp_path / "out" / "README.md").exists()


def test_build_refuses_rows_the_spec_cannot_convert(tmp_path, shapes_source):
    src = tmp_path / "src"
    shutil.copytree(shapes_source / "images", src / "images")
    (src / "rows.csv").write_text("image,caption,foil\nimages/red_circle.png,a red circle,a blue circle\n")
    (src / "vlprobe.yaml").write_text("images: [image]\ntexts: [caption, foils]\ngold: [[1, 0]]\n")
    with pytest.raises(ValueError, match="no column 'foils'"):
        build_folder(src, tmp_path / "out", license="mit")


def test_build_refuses_a_second_licence(tmp_path, shapes_source):
    out = tmp_path / "out"
    build_folder(shapes_source, out, captions="captions.csv", config="shapes", license="cc0-1.0")
    with pytest.raises(ValueError, match="one licence"):
        build_folder(shapes_source, out, captions="swaps.jsonl", config="swaps", license="mit")


@pytest.mark.slow
def test_worked_example_scores_with_vlprobe_evaluate(shapes_dataset, tiny_clip_path, tmp_path):
    """The point of vlprobe.yaml: a new instrument is scored at once, no code touched."""
    out = tmp_path / "results"
    rc = main(["evaluate", "--dataset", str(shapes_dataset), "--model", str(tiny_clip_path),
               "--bootstrap", "0", "--out", str(out), "--no-progress", "--cache-dir", str(tmp_path / "cache")])
    assert rc == 0
    results = json.loads((out / "results.json").read_text())["results"]
    by_config = {r["config"]: r["metrics"] for r in results}
    assert set(by_config) == {"shapes", "swaps"}
    assert by_config["shapes"]["n_items"] == 8 and by_config["swaps"]["n_items"] == 3
    assert 0.0 <= by_config["swaps"]["group"] <= 1.0  # 2 x 2 items get Winoground's scores


def test_build_refuses_duplicate_row_ids_naming_them(tmp_path, shapes_source, capsys):
    src = tmp_path / "src"
    shutil.copytree(shapes_source / "images", src / "images")
    (src / "rows.csv").write_text(
        "id,image,caption,foil\n"
        "a,images/red_circle.png,a red circle,a blue circle\n"
        "b,images/red_circle.png,a red circle,a green circle\n"
        "a,images/red_circle.png,a red circle,a red square\n"
        "c,images/red_circle.png,a red circle,a red star\n"
        "c,images/red_circle.png,a red circle,a red hexagon\n")
    (src / "vlprobe.yaml").write_text("id: id\nimages: [image]\ntexts: [caption, foil]\ngold: [[1, 0]]\n")
    code = main(["build", "folder", str(src), "--license", "mit", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "'a' (rows" in err and "'c' (rows" in err and "'b'" not in err and "more than once" in err
    assert not (tmp_path / "out" / "README.md").exists() and not (tmp_path / "out" / "data").exists()
