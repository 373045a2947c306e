"""vlprobe probe: TraVLR's train-on-one-modality protocol on frozen features (dual encoder, ITM head,
VQAScore VLM, the shipped mini-clip), its tables, cache reuse, model selection on validation only,
cross-modal transfer, few-shot and learning curves."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers_probe import fake_features

from vlprobe import probing as P
from vlprobe.cli import main as vlprobe_main
from vlprobe.errors import SettingError
from vlprobe.storage import feature_store
from vlprobe.storage.feature_store import FeatureFile, FeatureStore, row_blocks, take_rows

TASKS = "spatiality,cardinality"


@pytest.fixture(scope="module")
def dual_run(travlr_small, tiny_clip_path, tmp_path_factory):
    cache = tmp_path_factory.mktemp("probe_cache")
    res = P.probe(tiny_clip_path, str(travlr_small), TASKS, train_sizes=[8, 16], few_shot=6, bootstrap=20,
                  cache_dir=cache, progress=False)
    return res, cache


@pytest.mark.slow
def test_dual_encoder_probe_rows_and_tables(dual_run):
    res, _ = dual_run
    rows = res.rows
    tasks = {r["task"] for r in rows}
    assert tasks == {"spatiality", "cardinality"}
    for r in rows:
        assert 0.0 <= r["macro_f1"] <= 1.0 and r["split"] in ("test_ind", "test_ood")
        assert r["l2"] in P.L2_GRID
    # same modality for every training modality and the text-only baseline, at 8, 16 and the full 24 rows
    same = {(r["task"], r["setting"], r["train_size"], r["split"]) for r in rows if r["transfer"] == "same"}
    for task in tasks:
        for setting in (*P.MODALITIES, P.TEXT_ONLY):
            for n in (8, 16, 24):
                for split in ("test_ind", "test_ood"):
                    assert (task, setting, n, split) in same
    # zero-shot and few-shot transfer off the diagonal
    for kind in ("zero-shot", "few-shot (6)"):
        pairs = {(r["train_modality"], r["test_modality"]) for r in rows if r["transfer"] == kind}
        assert pairs == {(a, b) for a in P.MODALITIES for b in P.MODALITIES if a != b}
    table2 = res.same_modality_table()
    assert "| spatiality | image | 24 |" in table2 and "text-only" in table2 and "cardinality" in table2
    transfer = res.transfer_table()
    assert "tested on caption" in transfer and "few-shot (6)" in transfer
    t = res.provenance["timings"]
    assert t["feature_seconds"] > 0 and t["probe_seconds"] > 0
    assert res.provenance["settings"]["model_selection"] == "validation"


@pytest.mark.slow
def test_second_probe_computes_nothing(dual_run, travlr_small, tiny_clip_path):
    res, cache = dual_run
    assert res.provenance["features"]["computed_inputs"] > 0
    again = P.probe(tiny_clip_path, str(travlr_small), TASKS, bootstrap=0, cache_dir=cache, progress=False)
    assert again.provenance["features"]["computed_inputs"] == 0
    first = {(r["task"], r["setting"], r["test_modality"], r["split"]): r["macro_f1"] for r in res.rows
             if r["train_size"] == 24 and r["transfer"] in ("same", "zero-shot")}
    second = {(r["task"], r["setting"], r["test_modality"], r["split"]): r["macro_f1"] for r in again.rows
              if r["transfer"] in ("same", "zero-shot")}
    assert first == second  # the same features (from the cache) and the same deterministic probes


@pytest.mark.slow
def test_outputs_written(dual_run, tmp_path):
    res, _ = dual_run
    written = {p.name for p in res.save(tmp_path / "out")}
    assert {"results.json", "results.csv", "tables.md", "learning_curve_spatiality.png",
            "learning_curve_cardinality.png"} <= written
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    assert doc["provenance"]["model"]["family"] == "dual" and len(doc["rows"]) == len(res.rows)
    assert "same_modality" in doc["tables"]
    header = (tmp_path / "out" / "results.csv").read_text().splitlines()[0].split(",")
    assert header[:4] == ["task", "setting", "train_modality", "test_modality"]


def _run(data, feats, **kw):
    args = dict(train_modalities=P.MODALITIES, test_modalities=P.MODALITIES, text_only=False, zero_shot=False,
                train_sizes=None, few_shot=0, classifier="logreg", bootstrap=0, confidence=0.95, seed=0,
                progress=False)
    args.update(kw)
    return P.run_probes(feats, data, **args)


def test_model_selection_never_reads_a_test_split(monkeypatch):
    data, feats = fake_features()
    rows = _run(data, feats)
    # Flip every test label: the chosen L2 (picked on validation) must not move, the scores must.
    for split in ("test_ind", "test_ood"):
        data["t"][split].labels = ~data["t"][split].labels
    flipped = _run(data, feats)
    assert [r["l2"] for r in rows] == [r["l2"] for r in flipped]
    assert rows[0]["macro_f1"] > 0.75 > 0.25 > flipped[0]["macro_f1"]
    # and what select() is given to choose with is the validation split, every time
    seen = []
    real = P.select

    def spy(kind, xtr, ytr, xval, yval, **kw):
        seen.append((xval, yval))
        return real(kind, xtr, ytr, xval, yval, **kw)

    monkeypatch.setattr(P.protocol, "select", spy)
    _run(data, feats, train_sizes=[20])
    assert len(seen) == 2 * len(P.MODALITIES)
    for xval, yval in seen:
        assert yval is data["t"]["validation"].labels and any(xval is feats[("t", "validation", m)] for m in P.MODALITIES)


def test_logistic_regression_learns_and_newton_matches_lbfgs(monkeypatch):
    data, feats = fake_features(n_feat=5)
    x, y = feats[("t", "train", "image")], data["t"]["train"].labels
    newton = P.fit("logreg", x, y, 1e-2)
    monkeypatch.setattr(P.classifiers, "NEWTON_MAX_DIM", 0)
    lbfgs = P.fit("logreg", x, y, 1e-2, max_iter=500)
    scale = max(1.0, float(np.abs(newton.params[0].numpy()).max()))
    np.testing.assert_allclose(newton.params[0].numpy(), lbfgs.params[0].numpy(), rtol=1e-3, atol=1e-3 * scale)
    xt, yt = feats[("t", "test_ood", "image")], data["t"]["test_ood"].labels
    assert P.macro_f1(newton.proba(xt) > 0.5, yt) > 0.8
    mlp = P.fit("mlp", x, y, 1e-3, seed=1)
    assert P.macro_f1(mlp.proba(xt) > 0.5, yt) > 0.75
    # few-shot: a very strong pull towards the starting probe keeps its weights
    tuned = P.fit("logreg", x[:6], ~y[:6], 1e6, start=newton)
    np.testing.assert_allclose(tuned.params[0].numpy(), newton.params[0].numpy(), atol=1e-3 * scale)


# Every L2 of the grid with Newton's method; L-BFGS (the solver above 2,048 features) where it converges within a few
# seconds here (at 1e-4 it takes ~1,000 iterations: 13 s on the loaded 2-core machine).
@pytest.mark.parametrize("solver,l2", [("newton", l2) for l2 in P.L2_GRID]
                         + [("lbfgs", l2) for l2 in P.L2_GRID if l2 >= 1e-3])
def test_logistic_regression_equals_scikit_learns(monkeypatch, l2, solver):
    """The probe's logistic regression (torch; Newton's method, or L-BFGS above NEWTON_MAX_DIM features) against
    scikit-learn's, the field's reference, on the same standardised features and the same L2: the probe minimises
    mean BCE + l2/2 ||w||^2 (bias unpenalised), scikit-learn C * sum BCE + 1/2 ||w||^2, the same optimum at
    C = 1 / (n * l2). Weights, bias and probabilities agree to 1e-4 (Newton) / 2e-3 (L-BFGS, float32) of their
    scale, and so do the predicted labels, wherever scikit-learn's probability is not within that of 0.5."""
    from sklearn.linear_model import LogisticRegression

    data, feats = fake_features(n_feat=8, seed=3)
    x, y = feats[("t", "train", "image")], data["t"]["train"].labels
    if solver == "lbfgs":
        monkeypatch.setattr(P.classifiers, "NEWTON_MAX_DIM", 0)
    probe = P.fit("logreg", x, y, l2, max_iter=1000)
    z = (x - probe.mean) / probe.std  # the probe's own standardisation (population std + 1e-6)
    ref = LogisticRegression(C=1.0 / (len(y) * l2), tol=1e-12, max_iter=100_000).fit(z.astype(np.float64), y)
    tol = 1e-4 if solver == "newton" else 2e-3
    scale = max(1.0, float(np.abs(ref.coef_).max()))
    np.testing.assert_allclose(probe.params[0].numpy(), ref.coef_[0], rtol=0, atol=tol * scale)
    assert float(probe.params[1]) == pytest.approx(float(ref.intercept_[0]), abs=tol * scale)
    xt = feats[("t", "test_ood", "image")]
    want = ref.predict_proba(((xt - probe.mean) / probe.std).astype(np.float64))[:, 1]
    got = probe.proba(xt)
    np.testing.assert_allclose(got, want, rtol=0, atol=tol * scale)
    clear = np.abs(want - 0.5) > tol * scale
    assert clear.sum() >= len(want) - 2 and np.array_equal((got > 0.5)[clear], (want > 0.5)[clear])


def test_measure_macro_f1_by_hand():
    gold = np.array([1, 1, 1, 0, 0, 0, 0, 0], bool)
    prob = np.array([0.9, 0.8, 0.2, 0.7, 0.1, 0.1, 0.3, 0.4])
    # true class: TP 2, FP 1, FN 1 -> F1 2/3; false class: TP 4, FP 1, FN 1 -> F1 4/5
    m = P.measure(prob, gold, bootstrap=200, seed=0)
    assert m["f1_true"] == pytest.approx(2 / 3) and m["f1_false"] == pytest.approx(0.8)
    assert m["macro_f1"] == pytest.approx((2 / 3 + 0.8) / 2) and m["acc"] == pytest.approx(6 / 8)
    assert m["ci_low"] <= m["macro_f1"] <= m["ci_high"] and 0.3 < m["chance"] < 0.6
    # the probe's own macro-F1 (what select() chooses by) agrees with the metric's
    assert P.macro_f1(prob > 0.5, gold) == pytest.approx(m["macro_f1"])


@pytest.mark.slow
def test_itm_probe_uses_the_joint_representation(travlr_small, tiny_blip_itm_path, tmp_path):
    res = P.probe(tiny_blip_itm_path, str(travlr_small), "spatiality", train_modalities="image,caption",
                  test_modalities="image,caption", bootstrap=0, cache_dir=tmp_path, progress=False)
    assert res.provenance["model"]["family"] == "itm"
    assert {r["setting"] for r in res.rows} == {"image", "caption"}  # no text-only baseline for ITM heads
    assert {(r["train_modality"], r["test_modality"]) for r in res.rows if r["transfer"] == "zero-shot"} == {
        ("image", "caption"), ("caption", "image")}
    # 24 + 12 + 12 + 12 rows x 2 modalities, each a distinct (image or blank, text) pair
    assert res.provenance["features"]["computed_inputs"] == 120
    again = P.probe(tiny_blip_itm_path, str(travlr_small), "spatiality", train_modalities="image,caption",
                    test_modalities="image,caption", bootstrap=0, cache_dir=tmp_path, progress=False)
    assert again.provenance["features"]["computed_inputs"] == 0


@pytest.mark.slow
def test_vqascore_model_gives_the_zero_shot_rows(travlr_small, tiny_vlm_path, tmp_path):
    res = P.probe(tiny_vlm_path, str(travlr_small), "cardinality", test_modalities="image,caption", limit=4,
                  bootstrap=0, cache_dir=tmp_path, progress=False)
    assert {r["setting"] for r in res.rows} == {P.ZERO_SHOT}
    assert {(r["test_modality"], r["split"]) for r in res.rows} == {
        (m, s) for m in ("image", "caption") for s in ("test_ind", "test_ood")}
    assert all(r["train_size"] == 0 and r["n"] == 4 for r in res.rows)
    assert "zero-shot, image" in res.same_modality_table()


@pytest.mark.slow
def test_shipped_mini_clip_probe(travlr_small, repo_root, tmp_path):
    res = P.probe(repo_root / "models" / "mini-clip", str(travlr_small), "spatiality", train_sizes=[12],
                  bootstrap=100, cache_dir=tmp_path, progress=False)
    assert res.provenance["model"]["family"] == "dual"
    # the shipped text tower reads TraVLR's caption + query whole (the old 48-token one cut 100% of them)
    assert res.provenance["features"]["caption_truncated"]["spatiality"] == 0.0
    assert "| spatiality | image | 24 |" in res.same_modality_table()


@pytest.mark.slow
def test_cli_probe_and_its_errors(travlr_small, tiny_clip_path, tmp_path, capsys):
    out = tmp_path / "run"
    code = vlprobe_main(["probe", "--dataset", str(travlr_small), "--config", "spatiality", "--model",
                         str(tiny_clip_path), "--train-modality", "image", "--test-modality", "image,caption",
                         "--train-size", "8", "--bootstrap", "0", "--cache-dir", str(tmp_path / "c"),
                         "--out", str(out), "--no-progress"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "Same modality" in printed and "Feature extraction" in printed
    doc = json.loads((out / "results.json").read_text())
    assert doc["provenance"]["command"].startswith("vlprobe probe")
    assert (out / "learning_curve_spatiality.png").is_file()
    code = vlprobe_main(["probe", "--dataset", str(travlr_small), "--model", str(tiny_clip_path),
                         "--train-modality", "video", "--out", str(tmp_path / "x")])
    assert code == 2 and "unknown modality" in capsys.readouterr().err
    for flag, value, said in (("--chunk-size", "0", "--chunk-size 0: must be at least 1"),
                              ("--num-workers", "-1", "--num-workers -1: must be 0 or more")):
        code = vlprobe_main(["probe", "--dataset", str(travlr_small), "--model", str(tiny_clip_path), flag, value,
                             "--out", str(tmp_path / "x")])
        assert code == 2 and said in capsys.readouterr().err
    with pytest.raises(SettingError, match="chunk_size=0: must be at least 1"):
        P.probe(tiny_clip_path, str(travlr_small), chunk_size=0)
    with pytest.raises(SettingError, match="train_sizes='10,abc': must be training sizes"):
        P.probe(tiny_clip_path, str(travlr_small), train_sizes="10,abc")


def test_a_train_size_above_the_training_rows_is_refused_up_front(travlr_small, tiny_clip_path, tmp_path, capsys,
                                                                  monkeypatch):
    """docs/probe.md's --train-size 1000,2000,8000 on a smaller build used to train '8000' on every row, a point of
    the curve dropped in silence: refused before the model loads, naming the largest size possible."""
    from vlprobe import runner

    monkeypatch.setattr(runner, "load_model", lambda *a, **k: pytest.fail("the model was loaded before the refusal"))
    with pytest.raises(SettingError) as err:
        P.probe(tiny_clip_path, str(travlr_small), "spatiality", train_sizes=[4, 100000], progress=False)
    msg = str(err.value)
    assert "\n" not in msg and "train_sizes='4,100000'" in msg and "spatiality/train has" in msg
    assert "fewer than 100000" in msg and "the largest size possible is" in msg
    code = vlprobe_main(["probe", "--dataset", str(travlr_small), "--config", "spatiality", "--model",
                         str(tiny_clip_path), "--train-size", "100000", "--out", str(tmp_path / "x")])
    err_text = capsys.readouterr().err
    assert code == 2 and "--train-size 100000:" in err_text and "largest size possible" in err_text
    assert not (tmp_path / "x").exists()


@pytest.mark.slow
def test_finetune_trains_a_copy_of_the_model(travlr_small, tiny_clip_path, tmp_path):
    from vlprobe.scorers import load_scorer

    scorer = load_scorer(str(tiny_clip_path))
    before = {k: v.clone() for k, v in scorer.model.state_dict().items()}
    res = P.probe(scorer, str(travlr_small), "spatiality", train_modalities="image",
                  test_modalities="image,caption", finetune=True, epochs=2, bootstrap=0, text_baseline=False,
                  cache_dir=tmp_path, progress=False)
    tuned = [r for r in res.rows if r["classifier"] == "finetune"]
    assert {(r["test_modality"], r["transfer"], r["split"]) for r in tuned} == {
        (m, "same" if m == "image" else "zero-shot", s) for m in ("image", "caption") for s in ("test_ind", "test_ood")}
    assert all(r["epoch"] in (1, 2) and 0 <= r["macro_f1"] <= 1 for r in tuned)
    for k, v in scorer.model.state_dict().items():  # the scorer's model (and so the feature cache) is untouched
        assert (v == before[k]).all(), k
    assert "Fine-tuned model" in P.format_report(res)
    # the frozen probe's tables do not mix in the fine-tuned rows
    assert res.same_modality_table().count("| spatiality | image |") == 1


def test_bootstrap_ci_agrees_with_the_metric():
    from vlprobe import metric

    rng = np.random.default_rng(1)
    gold = rng.random(300) < 0.5
    prob = np.clip(np.where(gold, 0.65, 0.35) + rng.normal(0, 0.25, 300), 0, 1)
    mine = P.measure(prob, gold, bootstrap=4000)
    if "macro_f1" not in metric.METRIC_KEYS:
        pytest.skip("the metric has no macro_f1 yet")
    ref = metric.compute(prob.reshape(-1, 1, 1), gold.reshape(-1, 1, 1), probabilities=prob.reshape(-1, 1, 1),
                         bootstrap=4000, seed=0)
    assert mine["macro_f1"] == pytest.approx(ref["macro_f1"]) and mine["chance"] == pytest.approx(ref["chance"]["macro_f1"])
    np.testing.assert_allclose([mine["ci_low"], mine["ci_high"]], ref["ci"]["macro_f1"], atol=0.015)
    # every row lost (all-NaN probabilities): no figure, but the same chance as the metric's for this gold
    lost = P.measure(np.full(300, np.nan), gold)
    assert lost["macro_f1"] is None and lost["na_reason"] and lost["chance"] == pytest.approx(ref["chance"]["macro_f1"])


def test_unbuilt_folder_is_a_clear_error(tmp_path, tiny_clip_path):
    from vlprobe.errors import DatasetError

    folder = tmp_path / "travlr"
    folder.mkdir()
    (folder / "README.md").write_text("---\nconfigs:\n- config_name: spatiality\n  data_files:\n"
                                      "  - split: train\n    path: data/spatiality/train-*.parquet\n---\n")
    (folder / "vlprobe.yaml").write_text("images: [image]\ntexts: [query]\ngold: {column: label, map: {true: [[1]], "
                                         "false: [[0]]}}\ncontext: caption\n")
    with pytest.raises(DatasetError, match="has not been built"):
        P.probe(tiny_clip_path, str(folder), progress=False)


def test_a_missing_default_dataset_says_where_to_get_one(tmp_path, monkeypatch, capsys):
    """Run outside the checkout, the default `travlr` is neither a folder nor readable offline: one
    line that says how to point at one (and names no option the probe does not have)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("VLPROBE_ROOT", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert vlprobe_main(["probe"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "VLPROBE_ROOT" in err and "--spec" not in err


@pytest.mark.parametrize("fixture,settings", [
    ("tiny_clip_path", [*P.MODALITIES, P.TEXT_ONLY]),   # dual encoder: embeddings
    ("tiny_blip_itm_path", ["image", "caption"]),        # ITM head: joint representation
    ("tiny_vlm_path", ["image"]),                        # VQAScore: zero-shot P(Yes) on the test splits
])
@pytest.mark.slow
def test_features_streamed_in_chunks_equal_one_pass(request, fixture, settings, travlr_small):
    """Rows are read, decoded and encoded a chunk at a time (memory holds one chunk's images): the
    features are those of one pass over each split, within the suite's float tolerance (batch shapes
    differ). A split keeps only its labels in memory; the features are float32 files on disk."""
    from vlprobe.runner import load_model
    from vlprobe.scoring.engine import Engine

    data = P.load_splits(str(travlr_small), "spatiality")
    for split in data["spatiality"].values():
        assert split.table.cache_files, "a split is read from memory-mapped Arrow files"
        # the image-path rule (image_folder, outside_images) and the rows before --limit are small settings, not rows
        assert set(vars(split)) == {"task", "split", "labels", "table", "spec", "info", "text_table", "image_folder",
                                    "outside_images", "rows_in_split"}
        assert split.texts("query", 0, 3) == split.texts_at("query", [0, 1, 2]) and len(split.texts("caption")) == len(split)
    scorer = load_model(request.getfixturevalue(fixture))
    whole, _ = P.extract_features(Engine(scorer, batch_size=8, progress=False), data, settings, chunk_size=10_000)
    chunked, stats = P.extract_features(Engine(scorer, batch_size=8, progress=False), data, settings, chunk_size=5)
    assert set(whole) == set(chunked) and whole
    for key in whole:
        assert chunked[key].shape == whole[key].shape
        if fixture != "tiny_vlm_path":  # VQAScore's zero-shot P(Yes): one float per row, in memory
            assert isinstance(chunked[key], FeatureFile) and chunked[key].path.suffix == ".npy"
        a, b = np.asarray(chunked[key]), np.asarray(whole[key])
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(b).max())))
    if fixture == "tiny_clip_path":  # 24/12/12/12 rows in chunks of 5: every image computed once
        assert stats["images"]["computed"] == 60 and stats["images"]["unique"] == 60


def test_fits_read_features_a_block_at_a_time(monkeypatch, tmp_path):
    """Every solver reads its rows a block at a time, from an array or a feature file on disk
    (bounded memory on 60k-row training sets): the fit equals the one-block fit from memory, for
    Newton's method, L-BFGS and the MLP, and for a subset of a file's rows (learning curves)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(103, 9)).astype(np.float32) * 3 + 1
    y = rng.random(103) < 1 / (1 + np.exp(-x[:, 0]))
    store = FeatureStore(tmp_path)
    w = store.writer("train", len(x))
    for a in range(0, len(x), 40):  # written a chunk at a time, as extraction does
        w.write(x[a:a + 40])
    on_disk = w.close()
    assert on_disk.shape == x.shape
    np.testing.assert_array_equal(np.asarray(on_disk), x)
    sub = [3, 50, 7, 99, 20]
    np.testing.assert_array_equal(take_rows(on_disk, sub), x[sorted(sub)])

    def weights(p):
        return np.concatenate([v.numpy().reshape(-1) for v in p.params])

    # Newton runs to convergence (float64: the block order moves only the last bits). L-BFGS and the
    # MLP's Adam take 5 iterations: a converged L-BFGS or 300 Adam steps would end anywhere within
    # their stopping tolerance (measured up to 3e-4 apart), while 5 steps follow one path and stay
    # within 2e-6 (5 seeds), far inside the 1e-4 asked here.
    short = {"lbfgs": 5, "mlp": 5}
    whole = {"logreg": P.fit("logreg", x, y, 0.01), "mlp": P.fit("mlp", x, y, 0.01, seed=1, max_iter=5)}
    monkeypatch.setattr(P.classifiers, "NEWTON_MAX_DIM", 0)
    whole["lbfgs"] = P.fit("logreg", x, y, 0.01, max_iter=short["lbfgs"])
    monkeypatch.setattr(feature_store, "MIN_BLOCK_ROWS", 10)
    monkeypatch.setattr(feature_store, "BLOCK_BYTES", 1)  # blocks of 10 rows
    assert len(list(row_blocks(on_disk))) == 11
    seen = {"lbfgs": P.fit("logreg", on_disk, y, 0.01, max_iter=short["lbfgs"])}
    monkeypatch.setattr(P.classifiers, "NEWTON_MAX_DIM", 2048)
    seen["logreg"] = P.fit("logreg", on_disk, y, 0.01)
    seen["mlp"] = P.fit("mlp", on_disk, y, 0.01, seed=1, max_iter=short["mlp"])
    for kind, probe in seen.items():
        np.testing.assert_allclose(probe.mean, whole[kind].mean, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(probe.std, whole[kind].std, rtol=1e-6, atol=1e-6)
        ref = weights(whole[kind])
        tol = 1e-6 if kind == "logreg" else 1e-4
        np.testing.assert_allclose(weights(probe), ref, rtol=tol, atol=tol * max(1.0, float(np.abs(ref).max())))
        np.testing.assert_allclose(probe.proba(on_disk), whole[kind].proba(x), rtol=10 * tol, atol=10 * tol)
    # a large subset stays on disk (a view of the file's rows), a small one comes into memory
    idx = np.arange(0, 103, 2)
    view = take_rows(on_disk, idx)
    assert isinstance(view, FeatureFile) and len(view) == len(idx)
    np.testing.assert_array_equal(np.asarray(view), x[idx])
    np.testing.assert_allclose(weights(P.fit("logreg", view, y[idx], 0.01)), weights(P.fit("logreg", x[idx], y[idx], 0.01)),
                               rtol=1e-6, atol=1e-6)
    design = P.classifiers._design(x, whole["logreg"].mean, whole["logreg"].std).numpy()
    np.testing.assert_array_equal(design[:, :9], ((x - whole["logreg"].mean) / whole["logreg"].std).astype(np.float32))
    assert (design[:, 9] == 1).all()
    store.cleanup()
    assert not store.dir.exists()


def test_feature_file_errors(tmp_path):
    store = FeatureStore(tmp_path)
    w = store.writer("a", 4)
    w.write(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="width 5 after blocks of width 3"):
        w.write(np.zeros((1, 5), np.float32))
    with pytest.raises(ValueError, match="more than the 4 rows"):
        w.write(np.zeros((3, 3), np.float32))
    with pytest.raises(ValueError, match="2 rows written, 4 declared"):
        w.close()
    np.save(tmp_path / "f64.npy", np.zeros((2, 2)))
    with pytest.raises(ValueError, match="not a C-ordered float32 matrix"):
        FeatureFile(tmp_path / "f64.npy")


@pytest.mark.slow
def test_probe_without_a_cache_computes_each_input_once(travlr_small, tiny_clip_path, tmp_path, monkeypatch):
    """With no cache asked for and several chunks, a throw-away cache carries repeated texts across
    chunks: every unique input is computed once, as with a cache, and nothing is left behind."""
    import shutil
    import tempfile
    from pathlib import Path

    import pyarrow as pa
    import pyarrow.parquet as pq

    from vlprobe.dataset.folder import BUILD_RECORD

    folder = tmp_path / "repeated"  # travlr_small with four queries, repeated in every chunk
    shutil.copytree(travlr_small, folder)
    for f in (folder / "data").rglob("*.parquet"):
        table = pq.read_table(f)
        queries = [f"query {i % 4}" for i in range(table.num_rows)]
        pq.write_table(table.set_column(table.schema.get_field_index("query"), "query", pa.array(queries)), f)
    (folder / BUILD_RECORD).unlink()  # edited by hand, the copy is no longer the folder vlprobe wrote (its shard names)
    kw = dict(train_modalities="image,caption", test_modalities="image,caption", bootstrap=0, progress=False)
    cached = P.probe(tiny_clip_path, str(folder), "spatiality", cache_dir=tmp_path / "c", **kw)
    # A $TMPDIR of this test's own, looked at for the probe's folder names only: other pytest
    # sessions make vlprobe-* folders in the shared one.
    from vlprobe.storage.leftovers import TMP_PREFIXES

    own_tmp = tmp_path / "tmpdir"
    own_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(own_tmp))
    made = []
    real_mkdtemp = tempfile.mkdtemp
    monkeypatch.setattr(tempfile, "mkdtemp", lambda *a, **k: made.append(real_mkdtemp(*a, **k)) or made[-1])
    bare = P.probe(tiny_clip_path, str(folder), "spatiality", cache_dir="none", chunk_size=5, **kw)
    assert bare.provenance["features"]["cache_dir"] is None
    # 60 images, 60 captions, 4 queries and 60 text-only inputs (query + caption) at most; fewer distinct model
    # inputs, since the tiny tokenizer truncates at 32 tokens and inputs are keyed by the token ids the model
    # reads. Without the throw-away cache each chunk would compute its four queries again.
    computed = bare.provenance["features"]["computed_inputs"]
    assert computed == cached.provenance["features"]["computed_inputs"] and 64 <= computed <= 184
    assert {(r["setting"], r["test_modality"], r["split"]) for r in bare.rows} == {
        (r["setting"], r["test_modality"], r["split"]) for r in cached.rows}
    assert {Path(p).name.split("-")[1] for p in made if Path(p).parent == own_tmp} == {"features", "chunk"}
    assert [p for p in own_tmp.iterdir() if p.name.startswith(TMP_PREFIXES)] == []  # no feature or cache folder left


@pytest.mark.slow
def test_rows_that_lose_their_query_to_truncation_are_counted_and_an_all_lost_setting_is_na(
        travlr_small, tmp_path, capsys):
    """Issue 25: a caption+query text whose query the text tower cuts is counted and reported in one
    line; a test split whose every row lost it is N/A, not a number. The shipped mini-clip cut to 4
    tokens reads no query whole: its text-only baseline (query + caption in one text) has nothing to
    predict from, while the image setting (the query embedded alone) keeps its numbers."""
    from helpers_ties import truncating_mini_clip

    model = truncating_mini_clip(tmp_path, 4)
    res = P.probe(str(model), str(travlr_small), "spatiality", train_modalities="image", test_modalities="image",
                  bootstrap=0, cache_dir="none", progress=False)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "lose their query" in line]
    assert len(lines) == 1 and "to 4 tokens" in lines[0] and "60/60 caption+query texts" in lines[0]
    assert "N/A (no prediction) for spatiality/test_ind/text-only" in lines[0]
    lost = res.provenance["features"]["stats"]["query_lost"]
    assert lost["spatiality/test_ind/text-only"] == [12, 12] and lost["spatiality/train/text-only"] == [24, 24]
    text_only = [r for r in res.rows if r["setting"] == P.TEXT_ONLY]
    assert text_only and all(r["macro_f1"] is None and r["na_reason"] == "12/12 test rows lost their query to the "
                             "model's truncation" for r in text_only)
    assert all(r["macro_f1"] is not None for r in res.rows if r["setting"] == "image")
    table = res.same_modality_table()
    assert "N/A (12/12 test rows lost their query to the model's truncation)" in table
    # the Table 2 layout (means over the 3 default seeds) says N/A with the reason too, never "-" or 0
    text_only_line = next(line for line in res.table2().splitlines() if "text-only" in line)
    assert "N/A (12/12 test rows lost their query to the model's truncation)" in text_only_line


@pytest.mark.slow
def test_itm_caption_setting_keeps_the_query_first(travlr_small, tiny_blip_itm_path, tmp_path, capsys):
    """The ITM head reads "query caption" (the spec's caption modality). With its 32-token limit the
    caption first cut every query (issue 25); the query first, only the queries longer than the limit
    on their own (the tiny tokenizer splits words finely) are cut, and the one line says how many."""
    from vlprobe.probing.features import query_lost
    from vlprobe.scorers.loading import load_scorer

    res = P.probe(tiny_blip_itm_path, str(travlr_small), "spatiality", train_modalities="caption",
                  test_modalities="caption", bootstrap=0, cache_dir=tmp_path, progress=False)
    scorer = load_scorer(str(tiny_blip_itm_path))
    data = P.load_splits(str(travlr_small), "spatiality")["spatiality"]["test_ind"]
    captions, queries = data.texts("caption"), data.texts("query")
    too_long = int(query_lost(scorer, queries, queries).sum())  # a query longer than the limit by itself
    assert 0 < too_long < len(queries)
    lost = res.provenance["features"]["stats"]["query_lost"]
    assert lost["spatiality/test_ind/caption"] == [too_long, 12]
    lines = [line for line in capsys.readouterr().err.splitlines() if "lose their query" in line]
    assert len(lines) == 1 and f"spatiality/test_ind/caption {too_long}/12" in lines[0]
    assert all(r["macro_f1"] is not None for r in res.rows)  # some rows keep their query: numbers
    # the old order, caption first, lost the query of every row
    assert query_lost(scorer, [f"{c} {q}" for c, q in zip(captions, queries)], queries).all()


@pytest.mark.slow
@pytest.mark.parametrize("fixture", ["tiny_clip_path", "tiny_blip_itm_path"])  # embeddings; joint features
def test_an_unreadable_image_is_named_by_its_split_and_row(request, fixture, travlr_small, tmp_path, capsys):
    """Issue 48: an image the probe cannot read is named by its task, split, row and column (as a path refused
    there is), not as the engine's `input 0` of a chunk; one line from `vlprobe probe`, no traceback."""
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    from vlprobe.dataset.folder import shard_name
    from vlprobe.errors import VlprobeError

    folder = tmp_path / "travlr"
    shutil.copytree(travlr_small, folder, ignore=shutil.ignore_patterns(".hf_cache"))
    (shard,) = sorted((folder / "data" / "spatiality").glob("validation-*.parquet"))
    table = pq.read_table(shard)
    images = table.column("image").to_pylist()
    images[5] = {**images[5], "bytes": b"not an image at all"}
    pq.write_table(table.set_column(table.schema.get_field_index("image"), "image",
                                    pa.array(images, type=table.schema.field("image").type)), shard)
    new = shard.rename(shard.with_name(shard_name("validation", shard)))  # named after its content, as builds name it
    for record in (folder / ".huggingface.yaml", folder / "data" / "BUILD_INPUTS.json"):  # which name the shards
        record.write_text(record.read_text().replace(shard.name, new.name))
    model = str(request.getfixturevalue(fixture))
    with pytest.raises(VlprobeError) as err:
        P.probe(model, str(folder), "spatiality", train_modalities="image", test_modalities="image", cache_dir="none",
                progress=False, chunk_size=4)  # row 5 is the second chunk's second row: `input 1` before
    assert "spatiality/validation row 5 column 'image'" in str(err.value) and "input 1" not in str(err.value)
    assert "unreadable image" in str(err.value)
    code = vlprobe_main(["probe", "--model", model, "--dataset", str(folder), "--config", "spatiality",
                         "--train-modality", "image", "--test-modality", "image", "--cache-dir", "none",
                         "--no-progress", "--out", str(tmp_path / "run")])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and "spatiality/validation row 5 column 'image'" in lines[-1] and "Traceback" not in "".join(lines)
