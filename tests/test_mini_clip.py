"""mini-clip: the training pieces (captions, held-out rules, disjointness, loss, preprocessing,
determinism) and the shipped model in ``models/mini-clip`` (loads offline through ``load_scorer``,
scores items, beats chance on held-out colour, attribute-swap and compare foils)."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest

from vlprobe.scenes import Count, Scene, SceneObject, Spatial, truth
from vlprobe.scenes import travlr as travlr_gen
from vlprobe.scenes.statements import And, Compare, Quantifier
from vlprobe_train import mini_clip as mc

MODEL_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
               "processor_config.json", "README.md", "training_log.json")


@pytest.fixture(scope="module")
def model_dir(repo_root):
    return repo_root / "models" / "mini-clip"


@pytest.fixture(scope="module")
def scorer(model_dir):
    from vlprobe.scorers import load_scorer

    return load_scorer(str(model_dir), device="cpu")


@pytest.fixture(scope="module")
def eval_keys(repo_root):
    return mc.evaluation_scene_keys(repo_root)


def _scene(*objs):
    return Scene(tuple(SceneObject(shape=s, colour=c, row=r, column=k) for c, s, r, k in objs))


# ---- pieces -----------------------------------------------------------------------------------------
def test_inventory_is_exhaustive():
    scene = _scene(("red", "circle", 0, 0), ("red", "circle", 1, 1), ("blue", "square", 2, 2))
    inv = mc.Inventory(((2, "red", "circle"), (1, "blue", "square")))
    assert inv.text() == "Two red circles and a blue square."
    assert truth(scene, inv)
    assert not truth(scene, mc.Inventory(((2, "red", "circle"),)))  # leaves the square out
    assert not truth(scene, mc.Inventory(((1, "red", "circle"), (1, "blue", "square"))))


def test_holdout_rules():
    assert mc.holdout_violation(Count(1, "circle")) and mc.holdout_violation(Count(5, "circle", "red"))
    assert mc.holdout_violation(Count(2, "circle")) is None
    assert mc.holdout_violation(And((Count(2, "circle"), Count(4, "square"))))  # square x 4 is OOD
    ind, ood = travlr_gen.spatial_object_pairs()
    a, b = sorted(ood[0])
    assert mc.holdout_violation(Spatial(a, "left", b)) and mc.holdout_violation(Spatial(b, "above", a))
    a, b = sorted(ind[0])
    assert mc.holdout_violation(Spatial(a, "left", b)) is None
    assert mc.holdout_violation(Quantifier("all", "square", "red"))
    assert mc.holdout_violation(Quantifier("all", "square", "blue")) is None
    x, y = travlr_gen.compare_shape_pairs()[1][0]
    assert mc.holdout_violation(Compare("more", y, x))
    assert mc.ind_counts("circle") == (2, 3, 4, 6, 7, 8, 9)
    # every held-out case of the generator is caught, in either order
    assert all(mc.holdout_violation(Spatial(b, "below", a)) for a, b in ood)
    assert not any(mc.holdout_violation(Spatial(a, "left", b)) for a, b in ind)
    assert all(mc.holdout_violation(Compare("fewer", y, x)) for x, y in travlr_gen.compare_shape_pairs()[1])
    assert all(mc.holdout_violation(Quantifier("only", s, c)) for s, c in travlr_gen.QUANTIFIER_OOD_TYPES)
    for shape, counts in travlr_gen.CARDINALITY_OOD_COUNTS.items():
        assert all(mc.holdout_violation(Count(n, shape)) for n in counts)


def test_training_captions_are_true_foils_false_and_none_held_out():
    rng = random.Random(1)
    kinds = set()
    for _ in range(400):
        scene = mc.sample_training_scene(rng)
        stmt, bad, text, bad_text = mc.sample_caption(scene, rng)
        kinds.add(stmt.kind)
        assert truth(scene, stmt), text
        assert mc.holdout_violation(stmt) is None, text
        assert text in (stmt.text(), stmt.phrase())
        if bad is not None:
            assert not mc.safe_truth(scene, bad), (text, bad_text)
            assert mc.holdout_violation(bad) is None, bad_text
    assert {"inventory", "exists", "and", "count", "spatial", "quantifier", "compare"} <= kinds


@pytest.mark.slow
def test_training_and_heldout_scenes_are_disjoint_from_the_instruments(eval_keys):
    from vlprobe.scenes import winoground

    # the generators' scenes are in the excluded set ...
    ex = travlr_gen.generate_task("cardinality", travlr_gen.SIZES["default"], seed=0)["test_ood"][0]
    assert ex.scene.key() in eval_keys
    assert winoground.generate("count_swap", 1, seed=0)[0].scene_1.key() in eval_keys
    # ... and no training scene of the shipped settings is one of them
    cfg = mc.TrainConfig()
    scenes, rejected = mc.training_scenes(cfg, exclude=eval_keys)
    keys = {s.key() for s in scenes}
    assert len(keys) == cfg.scenes and not keys & eval_keys
    held = {e[0].key() for e in mc.heldout_examples("count", 50, exclude=eval_keys | keys)}
    assert not held & keys and not held & eval_keys


def test_loss_is_clip_loss_on_an_identity_gold_and_spreads_over_positives():
    import torch

    torch.manual_seed(0)
    logits = torch.randn(5, 5)
    expected = (torch.nn.functional.cross_entropy(logits, torch.arange(5))
                + torch.nn.functional.cross_entropy(logits.T, torch.arange(5))) / 2
    assert torch.allclose(mc.multi_positive_clip_loss(logits, torch.eye(5, dtype=torch.bool)), expected)
    # a text true of two images: both count as positives, and an extra column nobody matches is a pure negative
    logits = torch.tensor([[2.0, 0.0, 0.0], [2.0, 0.0, 1.0]])
    gold = torch.tensor([[True, False, False], [True, True, False]])
    logp = torch.log_softmax(logits, 1)
    row = -(logp[0, 0] + (logp[1, 0] + logp[1, 1]) / 2) / 2
    col = -((torch.log_softmax(logits[:, 0], 0).sum() / 2) + torch.log_softmax(logits[:, 1], 0)[1]) / 2
    assert torch.allclose(mc.multi_positive_clip_loss(logits, gold), (row + col) / 2)
    with pytest.raises(ValueError, match="at least one true text"):
        mc.multi_positive_clip_loss(logits, torch.zeros(2, 3, dtype=torch.bool))


def test_training_pixels_equal_the_saved_processor(model_dir):
    """The trainer's pixels are the saved processor's PIL path (what `--exact-preprocessing` runs);
    the fast torchvision processor, where it imports, is within the stated tolerance of it
    (tests/test_preprocessing.py: max 0.05 in normalised units)."""
    from vlprobe.scenes import render
    from vlprobe.scorers.loading import load_processor, torchvision_available

    rng = random.Random(3)
    scenes = [mc.sample_training_scene(rng) for _ in range(4)]
    equal = [False, True, False, True]  # TraVLR's folders are rendered with equal_area, the others not
    images = [render(s, equal_area=e) for s, e in zip(scenes, equal)]
    exact = load_processor(str(model_dir), exact_preprocessing=True)
    expected = exact(images=images, return_tensors="pt")["pixel_values"]
    size = json.loads((model_dir / "config.json").read_text())["vision_config"]["image_size"]
    got = mc.pixel_values(mc.render_small(scenes, size, equal))
    assert not np.array_equal(mc.render_small(scenes[1:2], size, [True]), mc.render_small(scenes[1:2], size))
    assert got.shape == expected.shape
    assert float((got - expected).abs().max()) < 1e-5
    if torchvision_available():
        fast = load_processor(str(model_dir))(images=images, return_tensors="pt")["pixel_values"]
        assert float((fast - expected).abs().max()) <= 0.05


@pytest.mark.slow
def test_training_is_deterministic_by_seed(tmp_path):
    cfg = mc.TrainConfig(scenes=48, epochs=1, batch_size=16, vision_hidden=32, vision_layers=1, text_hidden=32,
                         text_layers=1, heads=2, projection_dim=16, heldout_per_kind=4, warmup_steps=1)
    a = mc.train(cfg, tmp_path / "a", root=None, log_every=1)
    b = mc.train(cfg, None, root=None, log_every=1)
    assert a["steps"] == 3
    assert [h["loss"] for h in a["history"]] == [h["loss"] for h in b["history"]]
    assert a["epochs"][0]["heldout_acc_r"] == b["epochs"][0]["heldout_acc_r"]
    c = mc.train(mc.TrainConfig(**{**cfg.to_dict(), "seed": 1}), None, root=None, log_every=1)
    assert [h["loss"] for h in c["history"]] != [h["loss"] for h in a["history"]]
    assert (tmp_path / "a" / "model.safetensors").is_file()


# ---- the shipped model ---------------------------------------------------------------------------
def test_shipped_model_files_size_and_card(model_dir):
    for name in MODEL_FILES:
        assert (model_dir / name).is_file(), name
    assert mc.folder_megabytes(model_dir) <= 20.0
    card = (model_dir / "README.md").read_text()
    assert card.startswith("---\n")
    meta = card.split("---\n")[1]
    for line in ("license: mit", "library_name: transformers", "pipeline_tag: zero-shot-image-classification"):
        assert line in meta
    log = json.loads((model_dir / "training_log.json").read_text())
    assert f"{log['parameters']:,}" in card
    assert "-m vlprobe_train" in card
    # the card states the disjointness check it ran against the built folders, and its result
    dis = log["checks"]["disjointness"]
    assert dis["training_scenes"] == log["training_scenes"] and dis["generator_scenes"] > 0
    assert dis["overlap_with_folders"] == 0 and dis["overlap_with_generators"] == 0
    assert "0 and 0 in common (none)." in card
    assert log["checks"]["text_lengths"]["longest"]["tokens"] <= log["config"]["max_length"]


@pytest.mark.slow
def test_shipped_model_reads_every_travlr_and_winoground_style_text_whole(model_dir):
    """Every text of the default TraVLR and Winoground-style instruments, TraVLR's caption + query (what
    --modality caption and both score) included, fits the text tower without truncation, with no
    unknown word."""
    from transformers import AutoTokenizer

    from vlprobe.scenes import winoground

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    positions = json.loads((model_dir / "config.json").read_text())["text_config"]["max_position_embeddings"]
    assert tok.model_max_length == positions
    texts = []
    for task in travlr_gen.TASKS:
        for rows in travlr_gen.generate_task(task, travlr_gen.SIZES["default"], seed=0).values():
            texts += [f"{ex.caption} {q.text()}" for ex in rows for q in (ex.query, ex.foil)]
    for config in winoground.CONFIGS:
        texts += [c for it in winoground.generate(config, winoground.SIZES["default"], seed=0)
                  for c in (it.caption_0, it.caption_1)]
    ids = tok(texts, truncation=False, verbose=False)["input_ids"]
    longest = max(len(i) for i in ids)
    assert 200 < longest <= positions, (longest, positions)
    assert not [t for t, i in zip(texts, ids) if tok.unk_token_id in i]


def test_shipped_model_loads_offline_and_tokenizes_without_unknowns(model_dir, scorer):
    from transformers import AutoModel, AutoTokenizer

    assert scorer.family == "dual"
    assert type(AutoModel.from_pretrained(str(model_dir))).__name__ == "CLIPModel"
    tok = AutoTokenizer.from_pretrained(str(model_dir))
    rng = random.Random(5)
    texts = [mc.sample_caption(mc.sample_training_scene(rng), rng)[2] for _ in range(50)]
    texts += ["There are 2 circle objects.", "Not all the circle objects are red objects.",
              "two circles and three squares", "the red circle is to the left of the blue square"]
    for text in texts:
        assert tok.unk_token_id not in tok(text)["input_ids"], text
    ids = tok("There is a red circle.")["input_ids"]
    assert ids[0] == tok.bos_token_id and ids[-1] == tok.eos_token_id


def test_shipped_model_scores_synthetic_items(scorer):
    from vlprobe.dataset.items import Item
    from vlprobe.scenes import render, winoground
    from vlprobe.scoring.engine import score_items

    wino = winoground.generate("attribute_swap", 1, seed=123)[0]
    items = [
        Item(id="w", images=(render(wino.scene_0), render(wino.scene_1)), texts=(wino.caption_0, wino.caption_1),
             gold=np.eye(2, dtype=bool)),
        Item(id="v", images=(render(wino.scene_0),), texts=(wino.caption_0, wino.caption_1, "There is a star."),
             gold=[[1, 0, 0]]),
    ]
    res = score_items(scorer, items, progress=False)
    assert [s.shape for s in res.scores] == [(2, 2), (1, 3)]
    assert all(np.isfinite(s).all() for s in res.scores)
    # same image and texts, same scores
    assert np.allclose(res.scores[0][0], res.scores[1][0, :2], rtol=1e-4,
                       atol=1e-4 * max(1.0, float(np.abs(res.scores[1]).max())))


@pytest.mark.parametrize("kind", ["colour", "attribute_swap", "compare"])
@pytest.mark.slow
def test_shipped_model_beats_chance_on_heldout_foils(kind, scorer, model_dir, repo_root):
    """200 held-out items (fresh scenes, a true statement vs its minimal false edit, in mirrored pairs
    so that an image-blind scorer gets exactly 0.5): pairwise accuracy above 0.7, and a one-sided
    binomial test against chance (0.5) at p < 1e-6. The colour, attribute-swap and compare foils
    (0.925, 0.920, 0.990 in its card); the shipped model is at chance on the count and spatial foils."""
    from vlprobe.scoring.engine import score_items

    n = 200
    items = mc.heldout_items(kind, n, seed=0, exclude=mc.heldout_exclusion(model_dir, repo_root))
    res = score_items(scorer, items, batch_size=64, progress=False)
    result = mc.pairwise_accuracy(res.scores, items)
    acc = float(result["acc_r"])
    wins = round(acc * n)
    p_value = sum(math.comb(n, k) for k in range(wins, n + 1)) / 2**n
    assert result["n_items"] == n
    assert acc > 0.7 and p_value < 1e-6, (kind, acc, p_value)


def test_mirrored_training_pairs_flip_obey_the_rules_and_avoid_the_instruments(eval_keys):
    cfg = mc.TrainConfig(scenes=300, mirror_fraction=0.5, small_scene_fraction=0.4)
    scenes, rejected, pairs = mc.training_set(cfg, exclude=eval_keys)
    assert len(scenes) == 300 and len({s.key() for s in scenes}) == 300
    assert not {s.key() for s in scenes} & eval_keys
    assert len(pairs) > 60  # about half the draws come with a partner
    assert mc.training_scenes(cfg, exclude=eval_keys)[0] == scenes
    assert sum(len(s.objects) <= 4 for s in scenes) > 60
    for i, (j, a, b) in pairs.items():
        assert pairs[j][0] == i and pairs[j][1:] == (b, a) and abs(i - j) == 1
        assert truth(scenes[i], a) and not truth(scenes[i], b), (a.text(), b.text())
        assert mc.holdout_violation(a) is None and mc.holdout_violation(b) is None
    # with both shares at 0 no pair and no small scene is drawn: the stream is the plain one
    plain = mc.TrainConfig(scenes=50, mirror_fraction=0.0, small_scene_fraction=0.0)
    assert mc.training_set(plain)[2] == {}
    assert mc.training_scenes(plain)[0][0] == mc.sample_training_scene(random.Random(f"{mc.NAMESPACE}:train:0"))


def test_grid_position_code():
    code = mc.grid_position_code(6, 96, 0.5)
    assert tuple(code.shape) == (37, 96)
    assert float(code[0].abs().max()) == 0.0  # the class token
    assert abs(float(code[1:].std()) - 0.5) < 1e-3
    assert len({tuple(row.tolist()) for row in code[1:]}) == 36
    # patches (0, 0) and (0, 5) share the row half of the code and differ in the column half
    assert np.allclose(code[1, :48].numpy(), code[6, :48].numpy()) and not np.allclose(code[1, 48:].numpy(), code[6, 48:].numpy())


@pytest.mark.slow
def test_training_with_pairs_is_deterministic_and_the_extra_terms_count(tmp_path):
    small = dict(scenes=64, epochs=1, batch_size=16, vision_hidden=32, vision_layers=1, text_hidden=32,
                 text_layers=1, heads=2, projection_dim=16, heldout_per_kind=4, warmup_steps=1,
                 mirror_fraction=0.5, mirror_caption=1.0, small_scene_fraction=0.4, vision_position_std=0.5)
    cfg = mc.TrainConfig(**small, pair_weight=0.5, separation_weight=1.0)
    a = mc.train(cfg, None, root=None, log_every=1)
    b = mc.train(cfg, None, root=None, log_every=1)
    assert [h["loss"] for h in a["history"]] == [h["loss"] for h in b["history"]]
    c = mc.train(mc.TrainConfig(**small), None, root=None, log_every=1)
    assert [h["loss"] for h in c["history"]] != [h["loss"] for h in a["history"]]
