"""No TraVLR config can be solved without the scene (issue 11 §2).

For every config, a text-only classifier is trained on the training rows' query words alone (a
bag of words and word pairs, logistic regression written here in numpy) and must stay at chance
(accuracy <= 0.56 on 1,000 rows) on both test splits, in TraVLR's true/false framing (query ->
label) and in vlprobe's query-vs-foil framing (which of query and foil_query is true). A
caption-only classifier, which reads the scene's description but ignores the query, must stay at
chance too. (In the query-vs-foil framing a scorer that ignores the query gives both texts the
same score, a tie on every item, so there it is at chance by construction.)

Rows are generated without rendering images (:func:`vlprobe.scenes.travlr.generate_task` draws
scenes, queries and captions; only the builder renders), so the whole test takes seconds.
"""

from __future__ import annotations

import functools
import re
from collections import Counter

import numpy as np
import pytest

from vlprobe import scenes as S
from vlprobe.scenes import travlr as T
from vlprobe.scenes.statements import Compare, Count, Quantifier, Spatial

SIZES = {"train": 2000, "test_ind": 1000, "test_ood": 1000}
CHANCE_BOUND = 0.56  # 1,000 rows at chance: sd 0.016, so 0.56 is 3.8 sd above 0.5
_WORD = re.compile(r"[a-z0-9]+")


def bag(text: str) -> list[str]:
    """Words and adjacent word pairs ("not all" differs from "all")."""
    words = _WORD.findall(text.lower())
    return words + [f"{a}_{b}" for a, b in zip(words, words[1:])]


class BagOfWords:
    """Binary bag-of-words features over a vocabulary fixed on the training texts."""

    def __init__(self, texts: list[str]):
        vocab = sorted({t for text in texts for t in bag(text)})
        self.index = {t: i for i, t in enumerate(vocab)}

    def __call__(self, texts: list[str]) -> np.ndarray:
        x = np.zeros((len(texts), len(self.index)), dtype=np.float64)
        for r, text in enumerate(texts):
            for t in bag(text):
                if t in self.index:
                    x[r, self.index[t]] = 1.0
        return x


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1e-3, steps: int = 500, lr: float = 0.5) -> np.ndarray:
    """Weights (bias last) of an L2-regularised logistic regression, by full-batch gradient descent."""
    xb = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(xb.shape[1])
    # einsum, not @: products this small run in one thread, while a threaded BLAS on a busy machine
    # (2 cores shared by several test runs) made each fit 15 times slower
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-np.clip(np.einsum("ij,j->i", xb, w), -30, 30)))
        grad = np.einsum("ij,i->j", xb, p - y) / len(y) + l2 * np.r_[w[:-1], 0.0]
        w -= lr * grad
    return w


def decision(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    return np.einsum("ij,j->i", np.hstack([x, np.ones((len(x), 1))]), w)


# ---- cheap features: image / caption statistics + the query's words (issue 25) ------------------
# Each baseline reads statistics a model gets without relating objects to each other: from the
# image (ink, pixels per palette colour, distinct colours, occupied cells and which rows and columns
# hold an object), or from the caption (how often each shape, colour, column and row is named,
# objects, length); and the query's words, one-hot. The label of every task hangs on the query's
# operator (relation, asked number, quantifier, more/fewer), so every statistic is also crossed with
# the operator, and with the statistic the query singles out: the pixels / mentions of the queried
# colour, and for shapes the ink divided by (or weighted by) the queried shapes' areas.
# Counting mentions of the queried *shape* in the caption is left out: that is the cardinality and
# comparison tasks themselves, not a cue (for the quantifiers it is a cue that remains; the card
# says so).
# The image statistics are computed from the scene and each shape's pixel count as rendered (exact:
# objects never overlap, every object keeps to its cell); test_scene_statistics_are_the_rendered_
# images_statistics checks this on rendered images, so the baselines need not render 3,200 images
# per task and the test stays well under a minute.
CHEAP_BOUND = 0.58  # macro-F1 on 1,000 rows (SIZES): sd about 0.016 at chance, so 0.58 is 5 sd above 0.5
_WHITE = (255, 255, 255)
_PALETTE = {rgb: name for name, rgb in S.RGB.items()}
_CAPTION_WORDS = S.ALL_SHAPES + tuple(S.RGB)
RENDER_OPTIONS = getattr(T, "RENDER_OPTIONS", {})  # as the builder renders
_CENTRES = [S.cell_centre(r, c) for r in range(S.GRID) for c in range(S.GRID)]


@functools.lru_cache(maxsize=None)
def _cell_areas(options: tuple) -> dict[tuple[str, int, int], int]:
    # with the paper's geometry a polygon's pixel count depends a little on its cell (rounding)
    out = {}
    for shape in S.ALL_SHAPES:
        for r in range(S.GRID):
            for c in range(S.GRID):
                img = S.render(S.Scene((S.SceneObject(shape, "black", r, c),)), **dict(options))
                out[shape, r, c] = sum(n for n, rgb in img.getcolors(16) if rgb != _WHITE)
    return out


def cell_areas(render_options: dict | None = None) -> dict[tuple[str, int, int], int]:
    """Pixels of each shape drawn alone in each cell, as rendered with ``render_options``
    (default: as the builder renders)."""
    return _cell_areas(tuple(sorted((RENDER_OPTIONS if render_options is None else render_options).items())))


def shape_areas(render_options: dict | None = None) -> dict[str, float]:
    """Mean pixels of each shape (what a cheap model could learn per shape name)."""
    cells = cell_areas(render_options)
    return {shape: float(np.mean([cells[shape, r, c] for r in range(S.GRID) for c in range(S.GRID)]))
            for shape in S.ALL_SHAPES}


def image_stats(img) -> dict[str, float]:
    """Statistics of a rendered scene (pixels as stored: the PNG is lossless)."""
    stats = {f"px_{name}": 0.0 for name in S.RGB}
    ink = 0
    for n, rgb in img.getcolors(256):
        if rgb != _WHITE:
            ink += n
            stats[f"px_{_PALETTE[rgb]}"] = n / 1000
    stats["ink"] = ink / 1000
    return _occupancy(stats, [img.getpixel(xy) != _WHITE for xy in _CENTRES])  # every shape covers its cell's centre


def scene_stats(scene, areas: dict[tuple[str, int, int], int]) -> dict[str, float]:
    """:func:`image_stats` of the scene rendered with these :func:`cell_areas`, without rendering."""
    px = Counter()
    for o in scene:
        px[o.colour] += areas[o.shape, o.row, o.column]
    stats = {f"px_{name}": px[name] / 1000 for name in S.RGB}
    stats["ink"] = sum(px.values()) / 1000
    cells = {(o.row, o.column) for o in scene}
    return _occupancy(stats, [(r, c) in cells for r in range(S.GRID) for c in range(S.GRID)])


def _occupancy(stats: dict[str, float], occupied: list[bool]) -> dict[str, float]:
    stats["colours"] = float(sum(v > 0 for k, v in stats.items() if k.startswith("px_")))
    stats["objects"] = float(sum(occupied))
    for i in range(S.GRID):
        stats[f"row{i}"] = float(sum(occupied[i * S.GRID:(i + 1) * S.GRID]))
        stats[f"col{i}"] = float(sum(occupied[i::S.GRID]))
    return stats


def caption_stats(caption: str) -> dict[str, float]:
    words = _WORD.findall(caption.lower().split(" there ", 1)[-1])  # the object list, not the fixed prefix
    counts = Counter(words)
    stats = {f"n_{w}": float(counts[w]) for w in _CAPTION_WORDS}
    stats.update({f"col{i}": float(counts[c]) for i, c in enumerate("abcdef")})
    stats.update({f"row{i}": float(counts[str(i + 1)]) for i in range(S.GRID)})
    stats["colours"] = float(sum(counts[c] > 0 for c in S.RGB))
    stats["objects"] = float(counts["at"])
    stats["length"] = len(caption) / 100
    return stats


def _operator_and_cues(query, stats: dict[str, float], source: str, areas: dict[str, float]) -> tuple[str, dict[str, float]]:
    """The query's operator word and the statistics it singles out."""
    colour = (lambda c: stats[f"px_{c}"]) if source == "image" else (lambda c: stats[f"n_{c}"])
    ink = stats["ink"] if source == "image" else stats["objects"]
    if isinstance(query, Spatial):
        return query.relation, {"subject_colour": colour(query.subject[0]), "object_colour": colour(query.object[0])}
    mean_area = float(np.mean([areas[s] for s in S.SHAPES]))
    # ink beyond what the objects would cover at the mean area: which shapes are many, when areas differ
    excess = ink - stats["objects"] * mean_area / 1000 if source == "image" else 0.0
    if isinstance(query, Count):
        per = ink * 1000 / areas[query.shape] if source == "image" else ink
        return str(query.n), {"ink_per_shape": per, "ink_per_shape_minus_n": per - query.n,
                              "objects_minus_n": stats["objects"] - query.n,
                              "excess_x_area": excess * (areas[query.shape] - mean_area) / 1000}
    if isinstance(query, Quantifier):
        return query.quantifier, {"queried_colour": colour(query.colour)}
    if isinstance(query, Compare):
        sign = 1.0 if query.relation == "more" else -1.0
        diff = (areas[query.x] - areas[query.y]) / 1000
        return query.relation, {"area_diff_x_ink": sign * diff * ink, "area_diff_x_excess": sign * diff * excess,
                                "area_diff": sign * diff}
    raise TypeError(type(query).__name__)


def cheap_features(query, stats: dict[str, float], source: str, areas: dict[str, float]) -> dict[str, float]:
    """Statistics, query words one-hot, and every statistic crossed with the query's operator."""
    op, cues = _operator_and_cues(query, stats, source, areas)
    base = {**stats, **cues}
    feats = {f"s:{k}": v for k, v in base.items()}
    feats.update({f"w:{t}": 1.0 for t in bag(query.text())})
    feats.update({f"op={op}:{k}": v for k, v in base.items()})
    feats[f"op={op}"] = 1.0
    # a linear model cannot find "true when the count is near the asked number" in a raw count:
    # the small integer statistics and the cues also enter one-hot, per operator
    for k in ("objects", "colours", *cues):
        feats[f"op={op}:{k}={round(base[k])}"] = 1.0
    return feats


class Vectoriser:
    """Dicts of features -> standardised matrix over the keys seen in training."""

    def __init__(self, rows: list[dict[str, float]]):
        self.keys = sorted({k for r in rows for k in r})
        x = self._raw(rows)
        self.mean, self.sd = x.mean(0), x.std(0) + 1e-9

    def _raw(self, rows):
        index = {k: i for i, k in enumerate(self.keys)}
        x = np.zeros((len(rows), len(self.keys)))
        for r, row in enumerate(rows):
            for k, v in row.items():
                if k in index:
                    x[r, index[k]] = v
        return x

    def __call__(self, rows):
        return (self._raw(rows) - self.mean) / self.sd


def macro_f1(pred: np.ndarray, gold: np.ndarray) -> float:
    scores = []
    for cls in (True, False):
        tp = np.sum((pred == cls) & (gold == cls))
        p, g = np.sum(pred == cls), np.sum(gold == cls)
        scores.append(2 * tp / (p + g) if p + g else 0.0)
    return float(np.mean(scores))


def cheap_baselines(task: str, seed: int = 0, render_options: dict | None = None, data=None) -> dict[str, dict[str, float]]:
    """{"image_query" | "caption_query": {test split: macro-F1}} of logistic regressions on cheap
    features, trained on the training rows of ``task`` at SIZES (or of ``data``, generate_task's output);
    the image's statistics as rendered with ``render_options`` (default: as the builder)."""
    areas, cells = shape_areas(render_options), cell_areas(render_options)
    data = data or generated(task, seed)
    feats = {split: {"image_query": [cheap_features(e.query, scene_stats(e.scene, cells), "image", areas) for e in exs],
                     "caption_query": [cheap_features(e.query, caption_stats(e.caption), "caption", areas) for e in exs]}
             for split, exs in data.items() if exs}
    gold = {split: np.array([e.label for e in exs]) for split, exs in data.items() if exs}
    out: dict[str, dict[str, float]] = {}
    for name in ("image_query", "caption_query"):
        vec = Vectoriser(feats["train"][name])
        w = fit_logistic(vec(feats["train"][name]), gold["train"].astype(np.float64), l2=1e-2)
        out[name] = {split: macro_f1(decision(w, vec(feats[split][name])) > 0, gold[split])
                     for split in ("test_ind", "test_ood")}
    return out


@functools.lru_cache(maxsize=None)
def generated(task: str, seed: int = 0) -> dict[str, list]:
    """The rows both kinds of baseline read (generated once per test session)."""
    return T.generate_task(task, SIZES, seed=seed)


def shortcut_accuracies(task: str, seed: int = 0) -> dict[str, dict[str, float]]:
    """{framing: {test split: accuracy}} of the three shortcuts on ``task``, trained on train."""
    rows = {split: [(e.query.text(), e.foil.text(), e.caption, e.label) for e in exs]
            for split, exs in generated(task, seed).items() if exs}
    train = rows["train"]
    y = np.array([label for *_, label in train], dtype=np.float64)
    out: dict[str, dict[str, float]] = {"query_true_false": {}, "query_vs_foil": {}, "caption_true_false": {}}

    # true/false from the query's words
    feats = BagOfWords([q for q, *_ in train])
    w = fit_logistic(feats([q for q, *_ in train]), y)
    # query vs foil: a linear score per text, trained on (query - foil) to say whether the query is the true one
    w_pair = fit_logistic(feats([q for q, *_ in train]) - feats([f for _, f, *_ in train]), y)
    # true/false from the caption alone
    cap = BagOfWords([c for _, _, c, _ in train])
    w_cap = fit_logistic(cap([c for _, _, c, _ in train]), y)

    for split in ("test_ind", "test_ood"):
        test = rows[split]
        gold = np.array([label for *_, label in test])
        qs, fs, cs = [q for q, *_ in test], [f for _, f, *_ in test], [c for _, _, c, _ in test]
        out["query_true_false"][split] = float(np.mean((decision(w, feats(qs)) > 0) == gold))
        out["query_vs_foil"][split] = float(np.mean((decision(w_pair, feats(qs) - feats(fs)) > 0) == gold))
        out["caption_true_false"][split] = float(np.mean((decision(w_cap, cap(cs)) > 0) == gold))
    return out


def test_the_classifier_finds_a_planted_shortcut():
    # the same classifier scores well above the bound when the query's words do carry the label
    rng = np.random.default_rng(0)
    words = ["red", "blue", "green", "circle", "square", "star"]
    texts = [" ".join(rng.choice(words, 4)) for _ in range(1500)]
    labels = np.array(["red" in t.split() for t in texts], dtype=np.float64)
    feats = BagOfWords(texts[:1000])
    w = fit_logistic(feats(texts[:1000]), labels[:1000])
    assert np.mean((decision(w, feats(texts[1000:])) > 0) == labels[1000:]) > 0.95


@pytest.fixture(scope="module")
def accuracies():
    return {task: shortcut_accuracies(task) for task in T.TASKS}


@pytest.mark.parametrize("task", T.TASKS)
@pytest.mark.parametrize("framing", ["query_true_false", "query_vs_foil", "caption_true_false"])
@pytest.mark.slow
def test_no_config_is_solved_without_the_scene(accuracies, task, framing):
    for split, acc in accuracies[task][framing].items():
        assert acc <= CHANCE_BOUND, f"{task}/{split}: a {framing} shortcut scores {acc:.3f} > {CHANCE_BOUND}"


def test_the_cards_table_is_what_the_test_measures(accuracies):
    from vlprobe.builders.travlr import CARD_BODY

    framings = ("query_true_false", "query_vs_foil", "caption_true_false")
    for task, acc in accuracies.items():
        row = f"| `{task}` | " + " | ".join(
            f"{acc[f]['test_ind']:.3f} / {acc[f]['test_ood']:.3f}" for f in framings) + " |"
        assert row in CARD_BODY, f"the card's shortcut table is stale; {task} measures {row}"


@pytest.mark.parametrize("options", [RENDER_OPTIONS, {}], ids=["as_built", "paper_geometry"])
def test_scene_statistics_are_the_rendered_images_statistics(options):
    from vlprobe.scenes.render import render

    areas = cell_areas(options)
    for task in T.TASKS:
        for exs in T.generate_task(task, {"train": 12, "test_ood": 12}, seed=1).values():
            for e in exs:
                assert scene_stats(e.scene, areas) == image_stats(render(e.scene, **options)), (task, e.scene)


@pytest.fixture(scope="module")
def cheap():
    return {task: cheap_baselines(task) for task in T.TASKS}


@pytest.mark.parametrize("task", T.TASKS)
@pytest.mark.parametrize("source", ["image_query", "caption_query"])
@pytest.mark.slow
def test_no_config_is_solved_by_cheap_statistics(cheap, task, source):
    for split, f1 in cheap[task][source].items():
        assert f1 <= CHEAP_BOUND, f"{task}/{split}: {source} statistics score macro-F1 {f1:.3f} > {CHEAP_BOUND}"


@pytest.mark.slow
def test_the_cheap_baselines_find_planted_cues(monkeypatch):
    # The same baselines score above the bound where a cue is planted. (1) The paper's geometry
    # (shape areas 742-1,581 px): the ink tells which of two shapes is the more numerous.
    areas = cheap_baselines("numerical_comparison", render_options={})["image_query"]
    assert min(areas.values()) > CHEAP_BOUND, areas
    # (2) Quantifier scenes drawn without matching their objects, colours and Y objects across
    # labels: an "Only" scene has p1 Y objects, a "Not only" one p1 + p2.
    monkeypatch.setattr(T, "_SIGNATURES", {})
    unmatched = cheap_baselines("quantifiers", data=T.generate_task("quantifiers", SIZES, seed=0))
    assert min(unmatched["image_query"].values()) > CHEAP_BOUND, unmatched
    assert min(unmatched["caption_query"].values()) > CHEAP_BOUND, unmatched


def test_the_cards_cheap_table_is_what_the_test_measures(cheap):
    from vlprobe.builders.travlr import CARD_BODY

    for task, f1 in cheap.items():
        row = f"| `{task}` | " + " | ".join(
            f"{f1[s]['test_ind']:.3f} / {f1[s]['test_ood']:.3f}" for s in ("image_query", "caption_query")) + " |"
        assert row in CARD_BODY, f"the card's cheap-statistics table is stale; {task} measures {row}"


def test_every_quantifier_and_label_is_equally_likely():
    for split, exs in T.generate_task("quantifiers", {"train": 1200, "test_ood": 120}, seed=0).items():
        if not exs:
            continue
        cells = Counter((e.query.quantifier, e.label) for e in exs)
        assert len(cells) == 12 and set(cells.values()) == {len(exs) // 12}, (split, cells)


if __name__ == "__main__":  # python tests/test_travlr_shortcuts.py: the table of accuracies
    for task in T.TASKS:
        for framing, by_split in {**shortcut_accuracies(task), **cheap_baselines(task)}.items():
            print(f"{task:22s} {framing:20s} " + "  ".join(f"{s} {a:.3f}" for s, a in by_split.items()))
