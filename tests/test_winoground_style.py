"""Winoground-style instruments (vlprobe/scenes/winoground.py, vlprobe build winoground_style) and
the private folder made from a user's own copy of facebook/winoground (tested on a stand-in)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest
from helpers import digests, encode
from helpers_data import build_tiny

from vlprobe import scenes as S
from vlprobe.builders import winoground_style as builder
from vlprobe.dataset.spec import find_spec
from vlprobe.scenes import winoground as W


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    return build_tiny(builder.WinogroundStyle(), tmp_path_factory.mktemp("repo") / "winoground_style")


@pytest.mark.parametrize("config", W.CONFIGS)
def test_generated_items_follow_the_winoground_contract(config):
    items = W.generate(config, 400, seed=0)
    assert len(items) == 400
    keys = {(it.scene_0.key(), it.scene_1.key(), it.caption_0) for it in items}
    assert len(keys) == 400
    for it in items:
        assert it.truth_matrix() == [[True, False], [False, True]]
        assert sorted(it.caption_0.split()) == sorted(it.caption_1.split()) and it.caption_0 != it.caption_1
        # the images differ only by the swap: same number of objects, the others identical
        assert len(it.scene_0) == len(it.scene_1)
        if config != "count_swap":
            assert it.scene_0.objects[2:] == it.scene_1.objects[2:]
        else:
            assert {o.cell for o in it.scene_0} == {o.cell for o in it.scene_1}
            assert sum(a != b for a, b in zip(it.scene_0.objects, it.scene_1.objects)) == abs(
                it.statement_0.parts[0].n - it.statement_0.parts[1].n)


def test_caption_wording():
    sp = W.generate("spatial_swap", 5)[0]
    assert sp.caption_0.startswith("the ") and " is " in sp.caption_0
    at = W.generate("attribute_swap", 5)[0]
    assert at.caption_0.count(" and ") == 1 and at.caption_0.split()[0] in ("a", "an")
    ct = W.generate("count_swap", 5)[0]
    assert ct.caption_0.split()[0] in ("two", "three", "four", "five") and ct.caption_0.split()[1].endswith("s")


def test_bad_requests_are_named(tmp_path):
    with pytest.raises(ValueError, match="unknown Winoground-style config"):
        W.generate("colour_swap", 3)
    with pytest.raises(ValueError, match="unknown config"):
        build_tiny(builder.WinogroundStyle(), tmp_path, "--configs", "colour_swap")
    with pytest.raises(FileNotFoundError, match="--winoground"):
        build_tiny(builder.WinogroundStyle(), tmp_path, "--configs", "none", "--winoground", tmp_path / "nope")


def test_two_builds_are_byte_identical(built, tmp_path):
    again = build_tiny(builder.WinogroundStyle(), tmp_path / "winoground_style")
    assert digests(again) == digests(built)
    assert len([k for k in digests(built) if k.endswith(".parquet")]) == 3  # `all` reads these three


def test_committed_card_and_spec_match_the_builder(built, repo_root):
    for name in ("README.md", "vlprobe.yaml"):
        assert (repo_root / "winoground_style" / name).read_text() == (built / name).read_text(), name


@pytest.mark.parametrize("config", W.CONFIGS)
def test_load_dataset_round_trip_and_items(built, config, monkeypatch, tmp_path):
    monkeypatch.chdir(built.parent)  # as from the repository root
    ds = datasets.load_dataset("winoground_style", config, cache_dir=str(tmp_path / "cache"))
    rows = ds["test"]
    assert list(ds) == ["test"] and len(rows) == W.SIZES["tiny"]
    assert list(rows.features)[:9] == list(builder.WINOGROUND_FEATURES)
    assert rows.features == builder.FEATURES
    for row in rows:
        scenes = [S.Scene.from_records(row["objects_0"]), S.Scene.from_records(row["objects_1"])]
        forms = [S.statement_from_dict(json.loads(row["form_0"])), S.statement_from_dict(json.loads(row["form_1"]))]
        assert [f.phrase() for f in forms] == [row["caption_0"], row["caption_1"]]
        assert [[S.truth(sc, f) for f in forms] for sc in scenes] == [[True, False], [False, True]]
        for image, scene in zip((row["image_0"], row["image_1"]), scenes):
            for o in scene:
                assert image.getpixel(S.cell_centre(o.row, o.column)) == S.RGB[o.colour]
    items = list(find_spec("winoground_style").iter_items(rows, config=config))
    assert len(items) == len(rows)
    tag, secondary, preds, collapsed = W.TAGS[config]
    for item in items:
        assert item.m == item.n == 2 and item.gold.tolist() == [[True, False], [False, True]]
        assert set(item.tags) == {f"collapsed_tag={collapsed}", f"num_main_preds={preds}",
                                  f"secondary_tag={secondary}", f"tag={tag}", f"instrument={config}"}
    assert [i.id for i in items] == [f"{config}/{k}" for k in range(len(rows))] == rows["key"]


def test_all_config_pools_the_instruments_with_per_item_swap_kinds(built, monkeypatch, tmp_path):
    monkeypatch.chdir(built.parent)
    assert sorted(datasets.get_dataset_config_names("winoground_style")) == sorted([*W.CONFIGS, "all"])
    assert datasets.get_dataset_default_config_name("winoground_style") == "spatial_swap"
    rows = datasets.load_dataset("winoground_style", "all", split="test", cache_dir=str(tmp_path / "cache"))
    assert len(rows) == 3 * W.SIZES["tiny"] and rows.features == builder.FEATURES
    assert len(set(rows["key"])) == len(rows)  # ids unique over the pooled config
    assert sorted(p.name for p in (built / "data").iterdir() if p.is_dir()) == sorted(W.CONFIGS)  # nothing stored twice
    kinds = {}
    for row in rows.remove_columns(["image_0", "image_1"]):
        kinds.setdefault(row["collapsed_tag"], set()).add(row["instrument"])
    # per-tag tables compare the kinds of swap: Object (noun phrases) vs Relation (modifiers)
    assert kinds == {"Object": {"spatial_swap"}, "Relation": {"attribute_swap", "count_swap"}}
    spec = find_spec("winoground_style")
    first = next(spec.iter_items(rows.select([len(rows) - 1]), config="all"))
    assert first.id == rows[len(rows) - 1]["key"] and f"instrument={rows[len(rows) - 1]['instrument']}" in first.tags


# ---- a stand-in for the user's own copy of facebook/winoground -----------------------------------------
STANDIN = [
    {"id": 0, "caption_0": "a red circle above a blue square", "caption_1": "a blue square above a red circle",
     "tag": "Noun Phrase", "secondary_tag": "", "num_main_preds": 1, "collapsed_tag": "Object"},
    {"id": 1, "caption_0": "two stars and one hexagon", "caption_1": "one star and two hexagons",
     "tag": "Adjective-Number, Noun", "secondary_tag": "Symbolic, Pragmatics", "num_main_preds": 2,
     "collapsed_tag": "Both"},
    {"id": 2, "caption_0": "the sky is green", "caption_1": "the green is sky",
     "tag": "Scope, Preposition", "secondary_tag": "Series", "num_main_preds": 1, "collapsed_tag": "Relation"},
]


def _standin_png(seed: int, mode: str = "RGB") -> bytes:
    return encode(S.render(S.sample_scene(seed, 3), size=64).convert(mode), "PNG")


@pytest.fixture
def standin_parquet(tmp_path) -> Path:
    """A Hub snapshot in the parquet era: data/test-00000-of-00001.parquet, images embedded."""
    rows = [{**r, "image_0": {"bytes": _standin_png(2 * i, "RGBA"), "path": f"ex_{i}_img_0.png"},
             "image_1": {"bytes": _standin_png(2 * i + 1), "path": f"ex_{i}_img_1.png"}} for i, r in enumerate(STANDIN)]
    snap = tmp_path / "winoground_snapshot"
    (snap / "data").mkdir(parents=True)
    datasets.Dataset.from_list(rows, features=builder.WINOGROUND_FEATURES).to_parquet(
        str(snap / "data" / "test-00000-of-00001.parquet"))
    return snap


@pytest.fixture
def standin_jsonl(tmp_path) -> Path:
    """The legacy layout: data/examples.jsonl (image stems) + data/images.zip (images/<stem>.png)."""
    data = tmp_path / "winoground_legacy" / "data"
    data.mkdir(parents=True)
    with open(data / "examples.jsonl", "w") as fh:
        for i, r in enumerate(STANDIN):
            fh.write(json.dumps({**r, "image_0": f"ex_{i}_img_0", "image_1": f"ex_{i}_img_1"}) + "\n")
    with zipfile.ZipFile(data / "images.zip", "w") as zf:
        for i in range(len(STANDIN)):
            for k in range(2):
                zf.writestr(f"images/ex_{i}_img_{k}.png", _standin_png(2 * i + k))
    return data.parent


@pytest.mark.parametrize("layout", ["parquet", "jsonl"])
def test_private_winoground_folder_from_a_standin(layout, standin_parquet, standin_jsonl, tmp_path, monkeypatch):
    source = standin_parquet if layout == "parquet" else standin_jsonl
    out = tmp_path / "repo" / "winoground_style"
    # the jsonl run builds only the private copy; the parquet run also the synthetic configs beside it
    build_tiny(builder.WinogroundStyle(), out, "--configs", "none" if layout == "jsonl" else "all", "--items", 2,
               "--winoground", source)
    local = out / "data" / "winoground"
    assert (out / "data" / "spatial_swap").exists() == (layout == "parquet")
    card = (out / "README.md").read_text()
    assert "config_name: winoground" not in card  # the public card never declares the private copy
    assert "license: other" in (local / "README.md").read_text()
    monkeypatch.chdir(out.parent)
    rows = datasets.load_dataset("winoground_style/data/winoground", "winoground", split="test",
                                 cache_dir=str(tmp_path / "cache"))
    assert rows.features == builder.WINOGROUND_FEATURES
    assert [r["caption_0"] for r in rows] == [r["caption_0"] for r in STANDIN]
    assert [r["secondary_tag"] for r in rows] == [r["secondary_tag"] for r in STANDIN]
    assert rows[0]["image_0"].size == (64, 64)
    items = list(find_spec("winoground_style/data/winoground").iter_items(rows, config="winoground"))
    assert [it.gold.tolist() for it in items] == [[[True, False], [False, True]]] * 3
    assert "collapsed_tag=Both" in items[1].tags and "tag=Adjective-Number, Noun" in items[1].tags
    if layout == "parquet":  # the public configs still load, and none of them is the private copy
        public = datasets.load_dataset("winoground_style", "spatial_swap", split="test", cache_dir=str(tmp_path / "c2"))
        assert len(public) == 2 and public.features == builder.FEATURES
        with pytest.raises(ValueError, match="winoground"):
            datasets.load_dataset("winoground_style", "winoground", cache_dir=str(tmp_path / "c3"))


def test_private_winoground_errors_name_the_file(tmp_path, standin_jsonl):
    bad = tmp_path / "bad.parquet"
    pq.write_table(datasets.Dataset.from_list([{"id": 1, "caption_0": "x"}]).data.table, bad)
    with pytest.raises(builder.WinogroundSourceError, match=r"bad.parquet: missing column\(s\)"):
        builder.read_winoground(bad)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(builder.WinogroundSourceError, match="no \\*.parquet and no examples.jsonl"):
        builder.read_winoground(empty)
    (standin_jsonl / "data" / "examples.jsonl").write_text(
        json.dumps({**STANDIN[0], "image_0": "ex_9_img_0", "image_1": "ex_0_img_1"}) + "\n")
    with pytest.raises(builder.WinogroundSourceError, match="line 1: image_0 'ex_9_img_0' is not in"):
        builder.read_winoground(standin_jsonl)


def test_more_items_extend_fewer():
    for config in W.CONFIGS:
        small, large = W.generate(config, 10, seed=2), W.generate(config, 25, seed=2)
        assert [W.to_row(it, i) for i, it in enumerate(small)] == [W.to_row(it, i) for i, it in enumerate(large[:10])]
        assert W.generate(config, 10, seed=3)[0] != small[0]
