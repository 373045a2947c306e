"""``--modality text`` (``evaluate(modality="text")``): each true text of an item against its other true texts
and its false ones, by the text tower. On SugarCREPE++ items the metric's ``text`` score is the authors' TOT
(VLMs/test_*.py: cos(P1, P2) > cos(P1, neg) and cos(P1, P2) > cos(P2, neg)), checked here against that
criterion computed independently: on hand-worked cosines, and on the real files (../shared/data, through
VLPROBE_SHARED_DATA; skipped without them) with the shipped models/mini-clip."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import datasets
import numpy as np
import pytest

import vlprobe
from vlprobe.errors import ArgumentError, DatasetError
from vlprobe.evaluation.text_only import pairs, text_gold
from vlprobe.scorers.base import DualScorer

SPEC = {"id": "id", "images": ["image"], "texts": ["caption", "caption2", "negative_caption"], "gold": [[1, 1, 0]],
        "tags": ["case"]}

# Hand-worked 2-d text embeddings (unnormalised: the scorer normalises) and the TOT each case must get.
VECTORS = {
    "p1": (5.0, 0.0),      # unit x
    "p2 close": (4.0, 3.0),   # cos(p1, p2) = 0.8
    "neg far": (0.0, 7.0),    # cos(p1, neg) = 0, cos(p2, neg) = 0.6 -> right
    "p2 apart": (0.0, 2.0),   # cos(p1, p2) = 0
    "neg near p1": (3.0, 4.0),  # cos(p1, neg) = 0.6 > 0 -> wrong (P1 prefers the negative)
    "p2 mid": (3.0, 4.0),     # cos(p1, p2) = 0.6
    "neg near p2": (0.0, 1.0),  # cos(p1, neg) = 0 < 0.6 but cos(p2, neg) = 0.8 > 0.6 -> wrong (P2 prefers it)
    "neg tie": (3.0, -4.0),   # cos(p1, neg) = 0.6 = cos(p1, p2): a tie -> wrong under strict
}
CASES = [  # (id, caption, caption2, negative_caption)
    ("right", "p1", "p2 close", "neg far"),
    ("wrong_p1", "p1", "p2 apart", "neg near p1"),
    ("wrong_p2", "p1", "p2 mid", "neg near p2"),
    ("tie", "p1", "p2 mid", "neg tie"),
]


@dataclass
class HandDual(DualScorer):
    """A dual encoder whose text embeddings are :data:`VECTORS`; it refuses to look at any image."""

    family = "hand-dual"

    def __post_init__(self) -> None:
        self.texts_encoded = 0

    def preprocess_images(self, images):
        raise AssertionError("--modality text decoded an image")

    def encode_images(self, inputs):
        raise AssertionError("--modality text encoded an image")

    def encode_texts(self, texts):
        self.texts_encoded += len(texts)
        return np.array([VECTORS[t] for t in texts], dtype=np.float32)

    def similarity(self, image_emb, text_emb):
        return image_emb @ text_emb.T


def authors_tot(p1, p2, neg) -> bool:
    """The authors' TOT on one item, from the raw embeddings: normalise, cosine, both comparisons strict."""
    p1, p2, neg = (np.asarray(v, dtype=np.float64) / np.linalg.norm(v) for v in (p1, p2, neg))
    c12, c1n, c2n = p1 @ p2, p1 @ neg, p2 @ neg
    return bool(c12 > c1n and c12 > c2n)


def hand_dataset() -> datasets.Dataset:
    # The image column names files that do not exist: decoding one would fail.
    return datasets.Dataset.from_dict({
        "id": [c[0] for c in CASES], "case": [c[0] for c in CASES], "image": ["/nonexistent/img.jpg"] * len(CASES),
        "caption": [c[1] for c in CASES], "caption2": [c[2] for c in CASES],
        "negative_caption": [c[3] for c in CASES]})


def run(scorer, ds=None, spec=SPEC, **kw):
    kw = {"bootstrap": 0, "cache_dir": "none", "progress": False, **kw}
    return vlprobe.evaluate(model=scorer, datasets={"hand": hand_dataset() if ds is None else ds}, spec=spec,
                            modality="text", **kw)


def test_the_matrix_layout_is_generic() -> None:
    # one row, one cell per pair of texts compared: each similarity once (issue 49: with cos(P1, P2) in two
    # rows, chance and ties="half" treated one number as two)
    assert text_gold(2, 1).tolist() == [[True, False, False]]
    assert pairs(2, 3) == [(0, 1), (0, 2), (1, 2)]  # [cos(P1, P2), cos(P1, neg), cos(P2, neg)]
    assert text_gold(2, 2).tolist() == [[True, False, False, False, False]]  # BLA: 2 true, 2 false
    assert text_gold(3, 2).tolist() == [[True] * 3 + [False] * 6]
    assert pairs(3, 5) == [(0, 1), (0, 2), (1, 2), (0, 3), (0, 4), (1, 3), (1, 4), (2, 3), (2, 4)]


def test_hand_worked_tot_equals_the_authors_criterion() -> None:
    expected = [authors_tot(*(VECTORS[t] for t in c[1:])) for c in CASES]
    assert expected == [True, False, False, False]  # right, P1 wrong, P2 wrong, tie
    scorer = HandDual(model_id="hand")
    res = run(scorer)
    (split,) = res.splits
    m = split.metrics
    assert m["text"] == pytest.approx(np.mean(expected)) == 0.25
    assert m["n_ties"] == 1 and "image" not in m and "group" not in m
    assert split.data["modality"] == "text" and res.provenance["settings"]["modality"] == "text"
    cos = {("p1", "p2 close"): 0.8, ("p1", "neg far"): 0.0, ("p2 close", "neg far"): 0.6,
           ("p1", "p2 apart"): 0.0, ("p1", "neg near p1"): 0.6, ("p2 apart", "neg near p1"): 0.8,
           ("p1", "p2 mid"): 0.6, ("p1", "neg near p2"): 0.0, ("p2 mid", "neg near p2"): 0.8,
           ("p1", "neg tie"): 0.6, ("p2 mid", "neg tie"): -0.28}
    for item, s, case in zip(split.items, split.scores, CASES):
        _, p1, p2, neg = case
        assert item.texts == (p1, p2, neg) and item.gold.tolist() == [[True, False, False]]
        # one row: [cos(P1, P2), cos(P1, neg), cos(P2, neg)]
        np.testing.assert_allclose(s, [[cos[p1, p2], cos[p1, neg], cos[p2, neg]]], atol=1e-6)
        row_right = bool((s[0, 0] > s[0, 1:]).all())
        assert row_right == authors_tot(*(VECTORS[t] for t in case[1:])), case[0]
    assert m["per_tag"]["case=right"]["text"] == 1.0 and m["per_tag"]["case=tie"]["text"] == 0.0
    # Only the tie changes with the tie policy: lenient counts it right, half as half.
    assert run(scorer, ties="lenient").splits[0].metrics["text"] == 0.5
    assert run(scorer, ties="half").splits[0].metrics["text"] == 0.375
    # TOT's chance is the rule's: cos(P1, P2) the largest of three cosines, 1/3
    assert m["chance"]["text"] == pytest.approx(1 / 3)
    # The summary of a text-only run: text is the headline of any benchmark.
    assert res.summary["hand"].headline == ("text",)


def test_text_only_never_looks_at_an_image_and_the_cache_serves_a_second_run(tmp_path: Path) -> None:
    scorer = HandDual(model_id="hand")
    first = run(scorer, cache_dir=str(tmp_path / "cache"))
    n = scorer.texts_encoded
    assert n == len(VECTORS) and first.provenance["engine"]["computed_texts"] == n
    second = run(scorer, cache_dir=str(tmp_path / "cache"))
    assert scorer.texts_encoded == n  # nothing computed
    eng = second.provenance["engine"]
    assert eng["computed_texts"] == 0 and eng["computed_images"] == 0 and eng["cached"] == n
    np.testing.assert_array_equal(np.stack(second.splits[0].scores), np.stack(first.splits[0].scores))


def test_one_true_text_is_refused_before_the_model_loads(tmp_path, monkeypatch) -> None:
    from vlprobe import runner

    def no_model(*a, **k):
        raise AssertionError("the model was loaded before the dataset's shape was checked")

    monkeypatch.setattr(runner, "load_model", no_model)
    # SugarCREPE's shape: one caption against its negative.
    ds = hand_dataset().remove_columns(["caption2"])
    spec = {**SPEC, "texts": ["caption", "negative_caption"], "gold": [[1, 0]]}
    with pytest.raises(DatasetError) as err:
        vlprobe.evaluate(model=str(tmp_path), datasets={"sugar_crepe": ds}, spec=spec, modality="text",
                         cache_dir="none", progress=False)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("sugar_crepe/default/test: cannot be scored text-only")
    assert "has 1 true text and 1 false" in msg
    # No false text (Winoground's two captions, each true of its image): nothing to compare against.
    wino = {**SPEC, "images": ["image", "image"], "texts": ["caption", "caption2"], "gold": [[1, 0], [0, 1]]}
    with pytest.raises(DatasetError, match="has 2 true texts and 0 false"):
        run(HandDual(model_id="hand"), spec=wino)


def test_families_without_a_text_tower_are_refused(tiny_blip_itm_path: Path, tiny_gpt2_path: Path) -> None:
    for path, family in ((tiny_blip_itm_path, "itm"), (tiny_gpt2_path, "causal_lm")):
        with pytest.raises(ArgumentError) as err:
            run(str(path))
        assert err.value.cli() == f"--modality text: needs a dual encoder's text tower; {family} has none"
    with pytest.raises(ArgumentError, match="--modality text looks at no image"):
        run(HandDual(model_id="hand"), control="blank")


def test_the_option_is_defined_once() -> None:
    from vlprobe.cli import build_parser
    from vlprobe.dataset.spec import MODALITIES as SPEC_MODALITIES
    from vlprobe.evaluation.settings import MODALITIES
    from vlprobe.probing import ProbeSettings
    from vlprobe.probing.settings import MODALITIES as PROBE_MODALITIES

    assert MODALITIES == ("image", "caption", "both", "text")
    assert PROBE_MODALITIES == SPEC_MODALITIES == ("image", "caption", "both")  # the probe's stay TraVLR's
    args = build_parser("evaluate").parse_args(["evaluate", "--modality", "text"])
    assert args.modality == "text"
    with pytest.raises(ArgumentError, match="unknown modality text"):
        ProbeSettings(test_modalities="text")


# ---- the real SugarCREPE++ files -----------------------------------------------------------------------


@pytest.mark.shared_data
@pytest.mark.slow
def test_real_sugar_crepe_pp_tot_with_mini_clip(real_sugar_crepe_pp: tuple[Path, Path], repo_root: Path,
                                                tmp_path: Path, capsys) -> None:
    """`vlprobe evaluate --modality text` on the 4,757 items with models/mini-clip (the stand-in images are never
    read): per subset, the count the metric's text score gives equals the authors' criterion computed with numpy on
    the same text embeddings (read back from the score cache the run filled); the summary's headline is TOT."""
    import pyarrow.parquet as pq

    from vlprobe.cli import main
    from vlprobe.scorers import load_scorer
    from vlprobe.storage.score_cache import ScoreCache

    sugar_crepe_pp, _ = real_sugar_crepe_pp
    model, cache_dir, out = str(repo_root / "models" / "mini-clip"), tmp_path / "cache", tmp_path / "run"
    start = time.perf_counter()
    code = main(["evaluate", "--dataset", str(sugar_crepe_pp), "--model", model, "--modality", "text",
                 "--bootstrap", "0", "--no-progress", "--cache-dir", str(cache_dir), "--out", str(out)])
    seconds = time.perf_counter() - start
    printed = capsys.readouterr()
    assert code == 0, printed.err
    doc = json.loads((out / "results.json").read_text())
    assert doc["provenance"]["settings"]["modality"] == "text" and "--modality text" in doc["provenance"]["command"]
    assert doc["provenance"]["engine"]["computed_images"] == 0
    (entry,) = doc["results"]
    assert entry["config"] == "all" and entry["metrics"]["n_items"] == 4757

    # The authors' criterion, independently: the run's embeddings from its cache, numpy cosines.
    rows = pq.read_table(out / "scores.parquet").to_pylist()
    assert len(rows) == 4757
    texts = sorted({t for r in rows for t in r["texts"]})
    scorer = load_scorer(model)
    keys = dict(zip(texts, scorer.text_keys(texts)))  # entries are keyed by the token ids the model reads
    cache = ScoreCache(cache_dir, scorer.cache_key())
    vectors = cache.get_many(["t:" + k for k in keys.values()])
    cache.close()
    emb = {t: np.asarray(vectors["t:" + keys[t]], dtype=np.float64) for t in texts}
    ds = datasets.load_dataset(str(sugar_crepe_pp), "all", split="test", cache_dir=str(tmp_path / "hf"))
    ds = ds.remove_columns(["image"])
    right: dict[str, list[bool]] = {}
    # The run keeps its scores as float32: a comparison whose float64 margin is nonzero but below float32's
    # resolution may read as a tie there. Such near-ties (none on this machine) may differ; nothing else may.
    near: dict[str, int] = {}
    for rec in ds:
        p1, p2, neg = (emb[rec[k]] / np.linalg.norm(emb[rec[k]]) for k in ("caption", "caption2", "negative_caption"))
        right.setdefault(rec["subset"], []).append(bool(p1 @ p2 > p1 @ neg and p1 @ p2 > p2 @ neg))
        margins = np.abs([p1 @ p2 - p1 @ neg, p1 @ p2 - p2 @ neg])
        near[rec["subset"]] = near.get(rec["subset"], 0) + int(((margins > 0) & (margins < 1e-6)).any())
    per_tag = entry["metrics"]["per_tag"]
    measured = {}
    for subset, flags in right.items():
        m = per_tag[f"subset={subset}"]
        assert abs(round(m["text"] * m["n_items"]) - sum(flags)) <= near[subset] and m["n_items"] == len(flags), subset
        measured[subset] = (sum(flags), len(flags))
    assert abs(round(entry["metrics"]["text"] * 4757) - sum(sum(f) for f in right.values())) <= sum(near.values())
    block = doc["summary"]["sugar_crepe_pp"]
    assert block["headline"] == ["text"] and block["names"] == {"text": "TOT"} and "TOT" in block["source"]
    assert block["tie_policy"]["rule"].startswith("a tie is wrong: the authors' TOT")
    assert [r["config"] for r in block["rows"]] == ["replace_obj", "replace_att", "replace_rel", "swap_obj", "swap_att"]
    assert "TOT " in printed.out or "TOT " in printed.err
    # A second run computes nothing: every text comes from the cache.
    again = tmp_path / "again"
    assert main(["evaluate", "--dataset", str(sugar_crepe_pp), "--model", model, "--modality", "text", "--bootstrap",
                 "0", "--no-progress", "--cache-dir", str(cache_dir), "--out", str(again)]) == 0
    capsys.readouterr()
    assert json.loads((again / "results.json").read_text())["provenance"]["engine"]["computed_texts"] == 0
    print(f"mini-clip TOT on SugarCREPE++ ({seconds:.1f} s): "
          + ", ".join(f"{s} {k}/{n} = {k / n:.4f}" for s, (k, n) in measured.items()))


def test_summary_and_tables_of_a_text_only_run() -> None:
    """SugarCREPE++ scored text-only: the summary's headline is text, named TOT, with the TOT tie rule; an
    image run keeps ITT (set_acc, acc_r). The printed summary, the report's table and plot pick text too."""
    from vlprobe.evaluation.result import format_summary
    from vlprobe.report.tables import headline
    from vlprobe.results.summary import display_metrics, summarize

    metrics = {"acc_r": 0.3, "text": 0.2, "set_acc": 0.3, "sentence_acc": 0.65, "auroc": 0.4, "n_items": 10}

    def entries(modality):
        return [{"benchmark": "sugar_crepe_pp", "dataset": "./sugar_crepe_pp", "config": c, "split": "test",
                 "data": {"modality": modality}, "metrics": metrics} for c in ("replace_obj", "swap_att")]

    tot = summarize(entries("text"))["sugar_crepe_pp"]
    assert tot.headline == ("text",) and tot.names == {"text": "TOT"} and "TOT per subset" in tot.source
    assert [r.values for r in tot.rows] == [{"text": 0.2}, {"text": 0.2}]
    assert "cos(P1, P2) strictly above" in tot.tie_policy.rule
    assert "replace_obj/test" in format_summary({"sugar_crepe_pp": tot}) and "TOT 20.0" in format_summary(
        {"sugar_crepe_pp": tot})
    itt = summarize(entries("image"))["sugar_crepe_pp"]
    assert itt.headline == ("set_acc", "acc_r") and itt.names == {} and "ITT" in itt.source
    assert display_metrics("sugar_crepe_pp", (2, 2), list(metrics), "text")[0] == "text"
    assert headline(metrics, "sugar_crepe_pp", (2, 2), "text") == "text"
    # Any benchmark scored text-only: text (BLA's 2 true and 2 false sentences).
    bla = summarize([{**e, "benchmark": "bla", "dataset": "./bla", "config": "active_passive"}
                     for e in entries("text")[:1]])["bla"]
    assert bla.headline == ("text",) and bla.rows[0].values == {"text": 0.2}
    # which the paper does not do: no paper's source, and said in the heading (TOT is SugarCREPE++'s own)
    assert bla.source is None and bla.departures[0].setting == "modality" and tot.departures == ()
    assert "NOT the authors' setting: modality text (authors: image)" in format_summary({"bla": bla})


# ---- a text-only model on items of several images: the image comparisons all tie -------------------------------

def test_a_text_only_model_on_two_by_two_items_gets_no_image_or_group_number(tiny_gpt2_path, folder, tmp_path):
    """GPT-2 scores a text the same with both images: every image comparison of a 2 x 2 item ties by construction,
    and image and group were printed as 0.0 (below chance). They are N/A with that reason, everywhere a number is
    shown; text and acc_r (rows: each image's two texts) keep theirs, as does the tie count."""
    import csv

    res = vlprobe.evaluate(model=str(tiny_gpt2_path), datasets=str(folder), configs=["swap"], bootstrap=20,
                           progress=False, cache_dir="none", out=tmp_path / "run")
    [split] = res.splits
    m = split.metrics
    n = len(split.items)
    reason = f"image, group: all {2 * n} image comparisons tied: the model does not see images"
    assert m["image"] is None and m["group"] is None and m["na_reason"] == reason
    assert m["ci"]["image"] is None and m["ci"]["group"] is None
    assert isinstance(m["text"], float) and m["acc_r"] == 0.5 and m["n_ties"] == 2 * n
    # results.json, results.csv, the printed table and the summary say N/A with the reason, never 0.0
    doc = json.loads((tmp_path / "run" / "results.json").read_text())
    saved = doc["results"][0]["metrics"]
    assert saved["image"] is None and saved["group"] is None and saved["na_reason"] == reason
    rows = {r["metric"]: r for r in csv.DictReader((tmp_path / "run" / "results.csv").open()) if not r["tag"]}
    assert rows["image"]["value"] == "" and rows["group"]["value"] == "" and rows["image"]["na_reason"] == reason
    assert float(rows["text"]["value"]) == pytest.approx(m["text"])
    table = res.table()
    assert f"N/A ({reason})" in table and "image 0.0" not in table and "group 0.0" not in table


def test_per_metric_ties_are_counted_by_rows_and_columns() -> None:
    """Hand-worked: one 2 x 2 item whose columns tie (a text-only model) and whose rows do not; one whose rows tie."""
    from vlprobe.evaluation.tied_metrics import comparison_ties, reasons

    gold = np.array([[[1, 0], [0, 1]]] * 2, dtype=bool)
    text_only = [[0.3, 0.7], [0.3, 0.7]]  # each text alike with both images
    blind_rows = [[0.5, 0.5], [0.2, 0.2]]  # each image alike with both texts
    counts = comparison_ties(np.array([text_only, blind_rows]), gold)
    assert counts.tolist() == [[2, 0, 2, 2], [2, 2, 2, 0]]
    assert reasons(counts[:1], sees_images=False) == {
        "image": "all 2 image comparisons tied: the model does not see images",
        "group": "all 2 image comparisons tied: the model does not see images"}
    assert set(reasons(counts[1:])) == {"acc_r", "text", "set_acc", "set_error", "sentence_acc", "group"}
    assert reasons(counts) == {}  # over both items, neither kind of comparison tied throughout
    # lists of unequal shapes give the same counts
    assert comparison_ties([np.array(text_only), np.array([[0.2, 0.2, 0.1]])],
                           [gold[0], np.array([[1, 0, 0]], dtype=bool)]).tolist() == [[2, 0, 2, 2], [2, 1, 0, 0]]
