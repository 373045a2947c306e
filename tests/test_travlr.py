"""TraVLR: generators and split rules (vlprobe/scenes/travlr.py) and the built folder
(vlprobe build travlr): determinism, InD/OOD disjointness, balance, truth, load_dataset, items."""

from __future__ import annotations

import argparse
import hashlib
import io
import json
from collections import Counter
from pathlib import Path

import datasets
import pytest
from PIL import Image

from vlprobe import scenes as S
from vlprobe.builders import travlr as builder
from vlprobe.scenes import travlr as T
from vlprobe.spec import find_spec

SIZES = {"train": 200, "validation": 40, "test_ind": 40, "test_ood": 120}


@pytest.fixture(scope="module")
def generated():
    return {task: T.generate_task(task, SIZES, seed=0) for task in T.TASKS}


def _args(out: Path, **kw) -> argparse.Namespace:
    base = dict(out=out, size="tiny", split_sizes=None, configs="all", seed=0, workers=1)
    base.update(kw)
    return argparse.Namespace(**base)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("repo")
    builder.build(_args(root / "travlr"))
    return root / "travlr"


# ---- split rules as the reference gives them ---------------------------------------------------
def test_reconstructed_split_tables_match_the_reference():
    ind, ood = T.spatial_object_pairs()
    ind, ood = {frozenset(p) for p in ind}, {frozenset(p) for p in ood}
    assert len(ind) == 476 and len(ood) == 119 and not ind & ood
    for pair in [(("blue", "hexagon"), ("blue", "octagon")), (("yellow", "star"), ("orange", "pentagon")),
                 (("red", "pentagon"), ("yellow", "pentagon"))]:  # first, second and last of the reference's list
        assert frozenset(pair) in ood
    assert {t for p in ind for t in p} == {t for p in ood for t in p} == set(T.OBJECT_TYPES)
    assert T.quantifier_count_pairs()[1] == [(1, 3), (1, 4), (1, 5), (2, 4), (4, 4)]
    assert len(T.quantifier_types(False)) == 42 and len(T.quantifier_types(True)) == 7
    assert len(T.compare_count_pairs(False)) == 42 and len(T.compare_count_pairs(True)) == 30
    ind_pairs, ood_pairs = T.compare_shape_pairs()
    assert len(ind_pairs) == 17 and len(ood_pairs) == 4
    assert T.cardinality_counts("square", True) == T.cardinality_counts("pentagon", True) == (4, 6)
    assert T.spatial_index_pairs("left/right", True) == [(0, 4), (1, 3), (2, 5)]
    assert len(T.spatial_index_pairs("above/below", False)) == 12


# ---- generated rows ------------------------------------------------------------------------------
def _queried(ex):
    return [o for i, o in enumerate(ex.scene.objects) if i in ex.queried]


def test_spatiality_ind_and_ood_disjoint(generated):
    ood_pairs = {frozenset(p) for p in T.spatial_object_pairs()[1]}
    for split, rows in generated["spatiality"].items():
        ood = split == "test_ood"
        for ex in rows:
            a, b = _queried(ex)
            assert (frozenset({a.type, b.type}) in ood_pairs) == ood
            axis = (a.column, b.column) if ex.subtype == "left/right" else (a.row, b.row)
            held = T.SPATIAL_OOD_COLUMN_PAIRS if ex.subtype == "left/right" else T.SPATIAL_OOD_ROW_PAIRS
            assert (tuple(sorted(axis)) in held) == ood
            assert {ex.query.subject, ex.query.object} == {a.type, b.type}
            assert len({o.type for o in ex.scene}) == 3  # distractor of a third type: referents unique


def test_cardinality_ind_and_ood_disjoint(generated):
    for split, rows in generated["cardinality"].items():
        ood = split == "test_ood"
        for ex in rows:
            shape = ex.query.shape
            held = T.CARDINALITY_OOD_COUNTS[shape]
            assert (ex.scene.count(shape=shape) in held) == ood
            assert (ex.query.n in held) == ood and (ex.foil.n in held) == ood
            for present in {o.shape for o in ex.scene}:  # every <number, shape> pair in the scene
                assert (ex.scene.count(shape=present) in T.CARDINALITY_OOD_COUNTS[present]) == ood
            assert 1 <= len(ex.scene) - ex.scene.count(shape=shape) <= 10


def test_quantifiers_ind_and_ood_disjoint(generated):
    _, ood_counts = T.quantifier_count_pairs()
    for split, rows in generated["quantifiers"].items():
        ood = split == "test_ood"
        for ex in rows:
            q = ex.query
            assert ((q.shape, q.colour) in T.QUANTIFIER_OOD_TYPES) == ood
            case = json.loads(json.dumps(ex.case))
            (n1, s1, c1), (n2, s2, c2) = case["types"]
            assert ex.scene.count(c1, s1) == n1 and ex.scene.count(c2, s2) == n2
            assert ((n1, n2) in ood_counts) == ood
            for o in ex.scene:  # distractors share nothing with the queried types
                if (o.colour, o.shape) not in {(c1, s1), (c2, s2)}:
                    assert o.shape not in {q.shape, s1, s2} and o.colour not in {q.colour, c1, c2}


def test_numerical_comparison_ind_and_ood_disjoint(generated):
    _, ood_pairs = T.compare_shape_pairs()
    for split, rows in generated["numerical_comparison"].items():
        ood = split == "test_ood"
        for ex in rows:
            a, b = ex.scene.count(shape=ex.query.x), ex.scene.count(shape=ex.query.y)
            assert a != b and (abs(a - b) >= 4) == ood
            assert (tuple(sorted((ex.query.x, ex.query.y), key=S.SHAPES.index)) in ood_pairs) == ood


@pytest.mark.parametrize("task", T.TASKS)
def test_labels_balanced_and_agree_with_the_truth_function(generated, task):
    seen = set()
    for split, rows in generated[task].items():
        assert len(rows) == SIZES[split]
        assert sum(ex.label for ex in rows) == SIZES[split] // 2
        if task == "spatiality":
            assert Counter(ex.subtype for ex in rows) == {"left/right": SIZES[split] // 2, "above/below": SIZES[split] // 2}
        for ex in rows:
            assert S.truth(ex.scene, ex.query) is ex.label
            assert S.truth(ex.scene, ex.foil) is (not ex.label)
            assert type(ex.foil) is type(ex.query) and ex.foil.text() != ex.query.text()
            key = (ex.scene.key(), ex.query)
            assert key not in seen
            seen.add(key)


@pytest.mark.parametrize("task", T.TASKS)
def test_ood_queries_never_occur_in_training(generated, task):
    # the paper: "we also ensure that all queries in the OOD test set do not occur in the training set"
    ood = {ex.query.text() for ex in generated[task]["test_ood"]} | {ex.foil.text() for ex in generated[task]["test_ood"]}
    ind = {ex.query.text() for s in T.IND_SPLITS for ex in generated[task][s]}
    assert ood and not ood & ind


def test_paper_sizes_follow_table_3():
    assert T.sizes_for("paper", "spatiality") == {"train": 32000, "validation": 10000, "test_ind": 10000, "test_ood": 20000}
    for task in ("cardinality", "quantifiers", "numerical_comparison"):
        assert T.sizes_for("paper", task)["train"] == 8000 and T.sizes_for("paper32k", task)["train"] == 32000
    assert T.sizes_for("default", "quantifiers") == T.SIZES["default"]
    with pytest.raises(ValueError, match="unknown size"):
        T.sizes_for("huge", "spatiality")


def test_minimal_foil_edits(generated):
    ex = generated["quantifiers"]["train"][0]
    assert ex.foil == ex.query.negation()
    for ex in generated["spatiality"]["train"][:20]:
        assert ex.foil.relation == S.statements.OPPOSITE[ex.query.relation]
        assert (ex.foil.subject, ex.foil.object) == (ex.query.subject, ex.query.object)
    for ex in generated["numerical_comparison"]["train"][:20]:
        assert {ex.query.relation, ex.foil.relation} == {"more", "fewer"}
    for ex in generated["cardinality"]["train"][:20]:
        assert ex.foil.shape == ex.query.shape and ex.foil.n != ex.query.n


def test_generation_does_not_depend_on_the_hash_seed(tmp_path):
    # set iteration order changes with PYTHONHASHSEED; rows must not
    import subprocess
    import sys

    code = (
        "import hashlib, json; from vlprobe.scenes import travlr as T, winoground as W; h = hashlib.sha256()\n"
        "for task in T.TASKS:\n"
        "    for split, rows in T.generate_task(task, {'train': 30, 'test_ood': 30}, seed=1).items():\n"
        "        h.update(json.dumps([T.to_row(e, i) for i, e in enumerate(rows)], sort_keys=True).encode())\n"
        "for config in W.CONFIGS:\n"
        "    h.update(json.dumps([W.to_row(it, i) for i, it in enumerate(W.generate(config, 30))]).encode())\n"
        "print(h.hexdigest())\n"
    )
    root = Path(__file__).resolve().parents[1]
    digests = set()
    for hash_seed in ("1", "2", "3"):
        env = {"PYTHONHASHSEED": hash_seed, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        digests.add(out.stdout.strip())
    assert len(digests) == 1


def test_generation_is_deterministic_and_seeded():
    a = T.generate_task("quantifiers", {"train": 12}, seed=3)
    b = T.generate_task("quantifiers", {"train": 12}, seed=3)
    c = T.generate_task("quantifiers", {"train": 12}, seed=4)
    assert [T.to_row(e, i) for i, e in enumerate(a["train"])] == [T.to_row(e, i) for i, e in enumerate(b["train"])]
    assert [e.scene for e in a["train"]] != [e.scene for e in c["train"]]


def test_bad_requests_are_named():
    with pytest.raises(ValueError, match="unknown TraVLR task"):
        T.generate_task("colour", {"train": 1})
    with pytest.raises(ValueError, match="unknown split"):
        T.generate_task("cardinality", {"dev": 1})
    with pytest.raises(ValueError, match="SPLIT=N"):
        builder.build(_args(Path("/nonexistent"), split_sizes="dev=3"))
    with pytest.raises(ValueError, match="at least 1 row"):
        builder.build(_args(Path("/nonexistent"), split_sizes="test_ood=0"))
    with pytest.raises(ValueError, match="unknown config"):
        builder.build(_args(Path("/nonexistent"), configs="colour"))


# ---- the built folder ------------------------------------------------------------------------------
def _digests(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*")) if p.is_file()
    }


def test_two_builds_are_byte_identical(built, tmp_path):
    again = builder.build(_args(tmp_path / "travlr"))
    assert _digests(again) == _digests(built)
    assert len([k for k in _digests(built) if k.endswith(".parquet")]) == 16


def test_committed_card_and_spec_match_the_builder(built, repo_root):
    for name in ("README.md", "vlprobe.yaml", builder.TRUE_FALSE_SPEC):
        assert (repo_root / "travlr" / name).read_text() == (built / name).read_text(), name


@pytest.mark.parametrize("config", T.TASKS)
def test_load_dataset_round_trip_and_items(built, config, monkeypatch, tmp_path):
    monkeypatch.chdir(built.parent)  # as from the repository root
    ds = datasets.load_dataset("travlr", config, cache_dir=str(tmp_path / "cache"))
    assert set(ds) == set(T.SPLITS)
    expected = T.generate_task(config, T.SIZES["tiny"], seed=0)
    spec = find_spec("travlr")
    for split in T.SPLITS:
        rows = ds[split]
        assert len(rows) == T.SIZES["tiny"][split]
        assert rows.features == builder.FEATURES
        for row, ex in zip(rows, expected[split]):
            scene = S.Scene.from_records(row["objects"])
            assert scene == ex.scene
            query = S.statement_from_dict(json.loads(row["query_form"]))
            foil = S.statement_from_dict(json.loads(row["foil_form"]))
            assert query.text() == row["query"] and foil.text() == row["foil_query"]
            assert S.truth(scene, query) is row["label"] and S.truth(scene, foil) is (not row["label"])
            assert row["caption"].startswith(S.PREFIX + " There is ")
            assert sorted(row["caption"][len(S.PREFIX) + 10:-1].replace(" and ", ", ").split(", ")) == \
                sorted(S.object_phrase(o) for o in scene)
            image = row["image"]
            assert image.size == (500, 500)
            for o in scene:
                assert image.getpixel(S.cell_centre(o.row, o.column)) == S.RGB[o.colour]
        for modality in ("image", "caption", "both"):
            items = list(spec.iter_items(rows, config=config, modality=modality))
            assert len(items) == len(rows)
            for item, row in zip(items, rows):
                assert item.gold.tolist() == ([[True, False]] if row["label"] else [[False, True]])
                assert item.texts[0].endswith(row["query"]) and item.texts[1].endswith(row["foil_query"])
                assert f"subtype={row['subtype']}" in item.tags
                if modality == "image":
                    assert item.texts == (row["query"], row["foil_query"])
                else:
                    assert item.texts[0] == f"{row['caption']} {row['query']}"
                if modality == "caption":
                    assert item.images[0].getcolors() == [(500 * 500, (255, 255, 255))]


@pytest.mark.parametrize("config", T.TASKS)
def test_true_false_spec_gives_the_papers_1x1_items(built, config, monkeypatch, tmp_path):
    monkeypatch.chdir(built.parent)
    rows = datasets.load_dataset("travlr", config, split="test_ood", cache_dir=str(tmp_path / "cache"))
    spec = find_spec("travlr", f"travlr/{builder.TRUE_FALSE_SPEC}")
    for modality in ("image", "caption", "both"):
        items = list(spec.iter_items(rows, config=config, modality=modality))
        assert [item.shape for item in items] == [(1, 1)] * len(rows)
        for item, row in zip(items, rows):
            assert item.gold.tolist() == [[row["label"]]]
            assert item.texts[0].endswith(row["query"]) and f"label={row['label']}" in item.tags
    assert {item.gold[0, 0] for item in items} == {True, False}  # both labels occur


def test_parquet_images_are_png_bytes(built):
    import pyarrow.parquet as pq

    (shard,) = (built / "data" / "cardinality").glob("train-*.parquet")
    table = pq.read_table(shard)
    first = table.column("image")[0].as_py()
    assert first["bytes"][:8] == b"\x89PNG\r\n\x1a\n"
    assert Image.open(io.BytesIO(first["bytes"])).format == "PNG"


def test_cli_builds_both_folders(tmp_path, capsys):
    from vlprobe.builders import builders
    from vlprobe.cli import main

    assert {"travlr", "winoground_style"} <= set(builders())
    assert main(["build", "travlr", "--size", "tiny", "--configs", "all", "--out", str(tmp_path / "t")]) == 0
    assert main(["build", "winoground_style", "--items", "2", "--out", str(tmp_path / "w")]) == 0
    assert "images/s" in capsys.readouterr().err
    assert len(list((tmp_path / "t" / "data").rglob("*.parquet"))) == 16
    assert len(list((tmp_path / "w" / "data").rglob("*.parquet"))) == 3
    assert main(["build", "travlr", "--split-sizes", "train=x", "--out", str(tmp_path / "t")]) == 2
