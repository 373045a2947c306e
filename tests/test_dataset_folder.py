"""The dataset-folder helpers: a rebuilt folder is never read from a stale cache (by vlprobe's loader
or by plain `datasets.load_dataset`), and `vlprobe evaluate --config all` respects a dataset's own
config named "all"."""

from __future__ import annotations

import time

import datasets
import pytest

from vlprobe.dataset.folder import (
    BUILD_RECORD,
    ConfigDecl,
    card_metadata,
    read_card_metadata,
    rebuilding,
    write_card,
    write_split,
    write_split_rows,
)
from vlprobe.dataset.splits import select_configs
from vlprobe.storage.arrow_cache import load_folder_split

FEATURES = datasets.Features({"id": datasets.Value("string"), "text": datasets.Value("string")})


def _write_folder(folder, rows, names=("one",)):
    configs = [ConfigDecl(n, FEATURES, ("test",), default=(i == 0)) for i, n in enumerate(names)]
    write_card(folder, card_metadata(configs, license="mit"), "# test")
    for n in names:
        write_split(folder, n, "test", datasets.Dataset.from_dict(rows, features=FEATURES))


def test_rebuilt_folder_is_read_fresh(tmp_path):
    folder = tmp_path / "ds"
    _write_folder(folder, {"id": ["a"], "text": ["first build"]})
    assert load_folder_split(folder, "one", "test")["text"] == ["first build"]
    time.sleep(0.01)  # a different modification time even on coarse clocks
    _write_folder(folder, {"id": ["a", "b"], "text": ["second build", "more"]})
    assert load_folder_split(folder, "one", "test")["text"] == ["second build", "more"]


def test_plain_load_dataset_sees_a_rebuild(tmp_path, monkeypatch):
    # as a user would, from the folder's parent, with datasets' own (shared) cache
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "ds"
    _write_folder(folder, {"id": ["a"], "text": ["first build"]}, names=("one", "two"))
    first = datasets.load_dataset("ds", "one", split="test")
    assert first["text"] == ["first build"]
    _write_folder(folder, {"id": ["a", "b"], "text": ["second build", "more"]}, names=("one", "two"))
    assert datasets.load_dataset("ds", "one", split="test")["text"] == ["second build", "more"]
    assert datasets.load_dataset("ds", "two", split="test")["text"] == ["second build", "more"]
    # one shard per split, named after its content; the card keeps its patterns, the record names the files
    shards = sorted(p.name for p in (folder / "data" / "one").iterdir())
    assert len(shards) == 1 and shards[0].startswith("test-00000-of-00001-") and shards[0].endswith(".parquet")
    assert read_card_metadata(folder)["configs"][0]["data_files"] == [{"split": "test", "path": "data/one/test-*.parquet"}]
    record = (folder / BUILD_RECORD).read_text()
    assert f"data/one/{shards[0]}" in record and "test-*" not in record
    # the same rows again: the same files and the same cache (nothing is regenerated)
    again = datasets.load_dataset("ds", "one", split="test")
    _write_folder(folder, {"id": ["a", "b"], "text": ["second build", "more"]}, names=("one", "two"))
    assert sorted(p.name for p in (folder / "data" / "one").iterdir()) == shards
    assert datasets.load_dataset("ds", "one", split="test").cache_files == again.cache_files


def test_a_folder_with_some_configs_built_loads_those(tmp_path, monkeypatch):
    # `vlprobe build travlr --configs quantifiers`: the default config has no files
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "part"
    configs = [ConfigDecl(n, FEATURES, ("test",), default=(n == "one")) for n in ("one", "two")]
    write_card(folder, card_metadata(configs, license="mit"), "# t")
    write_split(folder, "two", "test", datasets.Dataset.from_dict({"id": ["a"], "text": ["two"]}, features=FEATURES))
    assert datasets.load_dataset("part", "two", split="test")["text"] == ["two"]
    with pytest.raises(ValueError, match="'one' not found"):
        datasets.load_dataset("part", "one", split="test")


def test_rebuilt_folders_are_recorded_too(tmp_path, monkeypatch):
    # the builders write their parquet into rebuilding()'s copy of the folder, which is swapped in after
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "staged"
    for text in ("old", "new"):
        with rebuilding(folder) as stage:
            write_card(stage, card_metadata([ConfigDecl("one", FEATURES, ("test",), default=True)], license="mit"), "# t")
            write_split_rows(stage, "one", "test", [{"id": "a", "text": text}], FEATURES)
        assert datasets.load_dataset("staged", "one", split="test")["text"] == [text]
    assert len(list((folder / "data" / "one").glob("*.parquet"))) == 1


def test_config_all_means_every_config_unless_the_dataset_has_one_named_all(tmp_path):
    plain, with_all = tmp_path / "plain", tmp_path / "with_all"
    _write_folder(plain, {"id": ["a"], "text": ["x"]}, names=("one", "two"))
    _write_folder(with_all, {"id": ["a"], "text": ["x"]}, names=("all", "one", "two"))
    assert sorted(select_configs(str(plain), "all", None)) == ["one", "two"]
    assert select_configs(str(with_all), "all", None) == ["all"]
    assert sorted(select_configs(str(with_all), "*", None)) == ["all", "one", "two"]
    assert select_configs(str(with_all), "one,two", None) == ["one", "two"]


def test_data_files_in_every_form_the_hub_accepts(tmp_path):
    from vlprobe.dataset.reader import data_file_patterns

    assert data_file_patterns("data/*.parquet") == {"train": ["data/*.parquet"]}
    assert data_file_patterns(["a/*.parquet", "b/*.parquet"]) == {"train": ["a/*.parquet", "b/*.parquet"]}
    assert data_file_patterns([{"split": "test", "path": ["a/*.parquet", "b/*.parquet"]},
                               {"split": "dev", "path": "c/*.parquet"}]) == {
        "test": ["a/*.parquet", "b/*.parquet"], "dev": ["c/*.parquet"]}
    assert data_file_patterns({"test": ["a", "b"], "train": "c"}) == {"test": ["a", "b"], "train": ["c"]}
    assert data_file_patterns(None) == {}


@pytest.mark.slow
def test_every_repository_folder_lists_its_configs_and_splits(repo_root, tmp_path):
    """Each dataset folder of the repository (lists of paths included, as winoground_style's ``all``)
    gives its configs and splits; a config whose path is a list counts as built once its files exist."""
    import shutil

    from vlprobe.dataset.reader import built_configs, config_splits, declared_configs

    folders = [p.parent for p in sorted(repo_root.glob("*/README.md")) if (p.parent / "vlprobe.yaml").exists()]
    assert {f.name for f in folders} >= {"valse", "bla", "travlr", "winoground_style"}
    for folder in folders:
        copy = tmp_path / folder.name
        shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("data"))
        assert built_configs(copy) == []
        for c in declared_configs(copy):
            splits = config_splits(copy, c.name)
            assert splits and all(isinstance(s, str) for s in splits), (folder.name, c.name)
            for patterns in c.data_files.values():
                for pattern in patterns:  # build a stand-in file for every pattern
                    target = copy / pattern.replace("*", "x")
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.touch()
        assert set(built_configs(copy)) == {c.name for c in declared_configs(copy)}, folder.name


def test_a_gold_map_is_read_into_a_record_that_writes_back_the_same(tmp_path):
    """``gold: {column, map}`` is read once into a GoldMap (for_config keeps it), and as_yaml writes it back as given."""
    import yaml

    from vlprobe.dataset.spec import GoldMap, ItemSpec

    text = "images: [image]\ntexts: [a, b]\ngold: {column: label, map: {true: [[1, 0]], false: [[0, 1]]}}\n"
    spec = ItemSpec.from_dict(yaml.safe_load(text), source="vlprobe.yaml")
    assert spec.gold == GoldMap("label", {True: [[1, 0]], False: [[0, 1]]})
    assert spec.for_config("other").gold == spec.gold
    again = ItemSpec.from_dict({**yaml.safe_load(text), "gold": yaml.safe_load(yaml.safe_dump(spec.gold.as_yaml()))})
    assert again.gold == spec.gold
    assert spec.to_item({"image": b"x", "a": "t", "b": "u", "label": "False"}).gold.tolist() == [[False, True]]
