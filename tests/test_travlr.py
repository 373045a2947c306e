"""TraVLR: generators and split rules (vlprobe/scenes/travlr.py) and the built folder
(vlprobe build travlr): determinism, InD/OOD disjointness, balance, truth, load_dataset, items."""

from __future__ import annotations

import importlib
import io
import json
import random
from collections import Counter
from pathlib import Path

import datasets
import pytest
from helpers import digests
from helpers_data import build_tiny
from PIL import Image

from vlprobe import scenes as S
from vlprobe.builders import travlr as builder
from vlprobe.dataset.spec import find_spec
from vlprobe.scenes import travlr as T

SIZES = {"train": 200, "validation": 40, "test_ind": 40, "test_ood": 120}


@pytest.fixture(scope="module")
def generated():
    return {task: T.generate_task(task, SIZES, seed=0) for task in T.TASKS}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    return build_tiny(builder.Travlr(), tmp_path_factory.mktemp("repo") / "travlr")


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


def _regions(ex):
    """Objects of X n Y, X \\ Y and Y \\ X in the scene of a quantifier row."""
    q = ex.query
    xy = ex.scene.count(colour=q.colour, shape=q.shape)
    return {"xy": xy, "x": ex.scene.count(shape=q.shape) - xy, "y": ex.scene.count(colour=q.colour) - xy}


def test_quantifiers_ind_and_ood_disjoint(generated):
    low, high = T.QUANTIFIER_DISTRACTORS
    for split, rows in generated["quantifiers"].items():
        ood = split == "test_ood"
        for ex in rows:
            q = ex.query
            assert ((q.shape, q.colour) in T.QUANTIFIER_OOD_TYPES) == ood
            case, other = ex.case, ex.case["other"]
            assert _regions(ex) == case["regions"]
            # the other instance (for the negation, or for the quantifier itself when the label is
            # false) shares neither shape nor colour with the query's type, and the distractors
            # neither instance's shape nor colour
            assert other["shape"] != q.shape and other["colour"] != q.colour
            assert {case["case"], other["case"]} == {q.quantifier, q.negation().quantifier}
            assert len(ex.scene) == sum(case["regions"].values()) + sum(other["regions"].values()) + case["distractors"]
            assert low <= case["distractors"] <= high
            for o in ex.scene.objects[len(ex.scene) - case["distractors"]:]:
                assert o.shape not in (q.shape, other["shape"]) and o.colour not in (q.colour, other["colour"])


def test_quantifier_rows_follow_table_1_pairs(generated):
    # Each row is an instance for the quantifier its scene makes true (the query's, or its negation's
    # when the label is false), and that quantifier's Table-1 pair is one of the split's pairs, both
    # numbers in 1..5; so is the query's own pair wherever it has no zero (a zero is forced where the
    # quantifier is false: "Some X are Y" is false exactly when X n Y is empty).
    ind, ood_pairs = T.quantifier_count_pairs()
    for split, rows in generated["quantifiers"].items():
        allowed = set(ood_pairs if split == "test_ood" else ind)
        for ex in rows:
            regions = _regions(ex)
            case = ex.query.quantifier if ex.label else ex.query.negation().quantifier
            pair = tuple(regions[r] for r in T.QUANTIFIER_PAIRS[case])
            assert pair in allowed, (split, case, pair, ex.scene)
            own = tuple(regions[r] for r in T.QUANTIFIER_PAIRS[ex.query.quantifier])
            assert own in allowed or 0 in own, (split, ex.query.quantifier, own, ex.scene)


def _renamed(scene, names):
    return sorted((names.get(o.colour, o.colour), names.get(o.shape, o.shape), o.row, o.column) for o in scene)


@pytest.mark.parametrize("split", ["train", "test_ood"])
def test_quantifier_scenes_are_drawn_before_the_label(split):
    # With the same draws, a true and a false row hold the same scene but for which of its two
    # instances has the query's type: every statistic of the scene that does not ask which objects
    # are of the queried shape X or colour Y is the same whatever the label.
    for seed in range(60):
        q = T.QUANTIFIER_ORDER[seed % 6]
        true = T._quantifiers(random.Random(seed), split, True, q)
        false = T._quantifiers(random.Random(seed), split, False, q)
        assert true.query == false.query and (true.label, false.label) == (True, False)
        x, y, ox, oy = true.query.shape, true.query.colour, true.case["other"]["shape"], true.case["other"]["colour"]
        assert _renamed(true.scene, {x: ox, ox: x, y: oy, oy: y}) == _renamed(false.scene, {})
        # the queried colour has as many objects either way (its pixels tell nothing)
        assert true.scene.count(colour=y) == false.scene.count(colour=y)
    ood = T.generate_task("quantifiers", {"test_ood": 240}, seed=3)["test_ood"]
    for q in ("only", "not only"):  # Y objects: p1 for "only", p1 + p2 for "not only"; matched only at 4
        assert {ex.scene.count(colour=ex.query.colour) for ex in ood if ex.query.quantifier == q} == {4}


def test_cardinality_scenes_are_drawn_before_the_label(generated):
    # the scene shows the queried shape's true count and, as another shape's count, the foil's
    # number; with the same draws a true and a false row hold the same scene, query and foil swapped
    for split, rows in generated["cardinality"].items():
        for ex in rows:
            assert len(ex.scene) in T.cardinality_scene_sizes(ex.query.shape, split == "test_ood")
            wrong = ex.foil if ex.label else ex.query
            assert ex.scene.count(shape=ex.case["partner"]) == wrong.n != ex.scene.count(shape=ex.query.shape)
    for seed in range(40):
        for split in ("train", "test_ood"):
            true = T._cardinality(random.Random(seed), split, True)
            false = T._cardinality(random.Random(seed), split, False)
            assert true.scene == false.scene and (true.query, true.foil) == (false.foil, false.query)


@pytest.mark.slow
def test_equal_area_shapes_cover_the_same_pixels():
    R = importlib.import_module("vlprobe.scenes.render")  # the package exports a function of that name

    for size in (500, 224):
        target = round(R.EQUAL_AREA * (size / 500) ** 2)
        half = R.cell_size(size) / 2
        for shape in S.ALL_SHAPES:
            for row, col in ((0, 0), (2, 3), (5, 5)):
                img = S.render(S.Scene((S.SceneObject(shape, "red", row, col),)), size=size, equal_area=True)
                x, y = S.cell_centre(row, col, size)
                ink = [(i % size, i // size) for i, p in enumerate(img.getdata()) if p != (255, 255, 255)]
                assert len(ink) == target, (size, shape)
                assert img.getpixel((x, y)) == S.RGB["red"]
                assert all(abs(px - x) < half and abs(py - y) < half for px, py in ink), (size, shape)


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


@pytest.mark.slow
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
        build_tiny(builder.Travlr(), Path("/nonexistent"), "--split-sizes", "dev=3")
    with pytest.raises(ValueError, match="at least 1 row"):
        build_tiny(builder.Travlr(), Path("/nonexistent"), "--split-sizes", "test_ood=0")
    with pytest.raises(ValueError, match="unknown config"):
        build_tiny(builder.Travlr(), Path("/nonexistent"), "--configs", "colour")


# ---- the built folder ------------------------------------------------------------------------------
@pytest.mark.slow
def test_two_builds_are_byte_identical(built, tmp_path):
    again = build_tiny(builder.Travlr(), tmp_path / "travlr")
    assert digests(again) == digests(built)
    assert len([k for k in digests(built) if k.endswith(".parquet")]) == 16


def test_committed_card_and_spec_match_the_builder(built, repo_root):
    for name in ("README.md", "vlprobe.yaml", builder.TRUE_FALSE_SPEC):
        assert (repo_root / "travlr" / name).read_text() == (built / name).read_text(), name


@pytest.mark.parametrize("config", T.TASKS)
@pytest.mark.slow
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
            # rendered as the generator says (equal areas): the ink counts the objects
            assert list(image.getdata()) == list(S.render(scene, **T.RENDER_OPTIONS).getdata())
        for modality in ("image", "caption", "both"):
            items = list(spec.iter_items(rows, config=config, modality=modality))
            assert len(items) == len(rows)
            for item, row in zip(items, rows):
                assert item.gold.tolist() == ([[True, False]] if row["label"] else [[False, True]])
                assert item.texts[0].startswith(row["query"]) and item.texts[1].startswith(row["foil_query"])
                assert f"subtype={row['subtype']}" in item.tags
                if modality == "image":
                    assert item.texts == (row["query"], row["foil_query"])
                else:
                    # The query first, then the caption (issue 25; was caption first): a text tower
                    # truncates from the end, so a long caption is what it cuts, never the query that
                    # tells the true text from the foil.
                    assert item.texts == (f"{row['query']} {row['caption']}", f"{row['foil_query']} {row['caption']}")
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
            assert item.texts[0].startswith(row["query"]) and f"label={row['label']}" in item.tags
    assert {item.gold[0, 0] for item in items} == {True, False}  # both labels occur


def test_caption_modality_keeps_the_query_when_the_text_tower_truncates(built, tmp_path, capsys):
    """Issue 25: with the caption first, a text tower of 48 tokens (the shipped mini-clip cut to 48,
    as it was before its retraining; CLIP reads 77) read the caption alone, query and foil became one
    input, every item tied and the summary printed "acc_r 0.0". The query first, it survives."""
    import json

    from helpers_ties import truncating_mini_clip

    from vlprobe.cli import main
    from vlprobe.scorers.loading import load_scorer

    model = truncating_mini_clip(tmp_path, 48)
    rows = datasets.load_dataset(str(built), "spatiality", split="test_ind", cache_dir=str(tmp_path / "cache"))
    rows = rows.select(range(min(20, len(rows))))
    scorer = load_scorer(str(model))
    assert scorer.text_limit() == 48
    old = scorer.seen_texts([f"{r['caption']} {t}" for r in rows for t in (r["query"], r["foil_query"])])
    assert all(old[2 * i] == old[2 * i + 1] for i in range(len(rows)))  # the old order: every pair one input
    out = tmp_path / "run"
    assert main(["evaluate", "--dataset", str(built), "--config", "spatiality", "--model", str(model),
                 "--modality", "caption", "--limit", "20", "--bootstrap", "0", "--num-workers", "0",
                 "--cache-dir", "none", "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    doc = json.loads((out / "results.json").read_text())
    for r in doc["results"]:
        assert r["metrics"]["n_ties"] == 0 and r["metrics"]["acc_r"] is not None, r["split"]
        assert r["data"]["truncation"] == {"tied_items": 0, "collapsed_items": 0, "text_max_length": 48}
    assert "N/A" not in printed and "warning:" not in printed


def test_parquet_images_are_png_bytes(built):
    import pyarrow.parquet as pq

    (shard,) = (built / "data" / "cardinality").glob("train-*.parquet")
    table = pq.read_table(shard)
    first = table.column("image")[0].as_py()
    assert first["bytes"][:8] == b"\x89PNG\r\n\x1a\n"
    assert Image.open(io.BytesIO(first["bytes"])).format == "PNG"


@pytest.mark.slow
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
