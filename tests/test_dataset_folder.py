"""The dataset-folder helpers: a rebuilt folder is never read from a stale cache, and
`vlprobe evaluate --config all` respects a dataset's own config named "all"."""

from __future__ import annotations

import time

import datasets

from vlprobe.commands.evaluate import _configs
from vlprobe.dataset_folder import ConfigDecl, card_metadata, load_folder_split, write_card, write_split

FEATURES = datasets.Features({"id": datasets.Value("string"), "text": datasets.Value("string")})


def _build(folder, rows, names=("one",)):
    configs = [ConfigDecl(n, FEATURES, ("test",), default=(i == 0)) for i, n in enumerate(names)]
    write_card(folder, card_metadata(configs, license="mit"), "# test")
    for n in names:
        write_split(folder, n, "test", datasets.Dataset.from_dict(rows, features=FEATURES))


def test_rebuilt_folder_is_read_fresh(tmp_path):
    folder = tmp_path / "ds"
    _build(folder, {"id": ["a"], "text": ["first build"]})
    assert load_folder_split(folder, "one", "test")["text"] == ["first build"]
    time.sleep(0.01)  # a different modification time even on coarse clocks
    _build(folder, {"id": ["a", "b"], "text": ["second build", "more"]})
    assert load_folder_split(folder, "one", "test")["text"] == ["second build", "more"]


def test_config_all_means_every_config_unless_the_dataset_has_one_named_all(tmp_path):
    plain, with_all = tmp_path / "plain", tmp_path / "with_all"
    _build(plain, {"id": ["a"], "text": ["x"]}, names=("one", "two"))
    _build(with_all, {"id": ["a"], "text": ["x"]}, names=("all", "one", "two"))
    assert sorted(_configs(str(plain), "all", None)) == ["one", "two"]
    assert _configs(str(with_all), "all", None) == ["all"]
    assert sorted(_configs(str(with_all), "*", None)) == ["all", "one", "two"]
    assert _configs(str(with_all), "one,two", None) == ["one", "two"]
