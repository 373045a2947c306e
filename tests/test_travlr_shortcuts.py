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

import re
from collections import Counter

import numpy as np
import pytest

from vlprobe.scenes import travlr as T

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
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-np.clip(xb @ w, -30, 30)))
        grad = xb.T @ (p - y) / len(y) + l2 * np.r_[w[:-1], 0.0]
        w -= lr * grad
    return w


def decision(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    return np.hstack([x, np.ones((len(x), 1))]) @ w


def shortcut_accuracies(task: str, seed: int = 0) -> dict[str, dict[str, float]]:
    """{framing: {test split: accuracy}} of the three shortcuts on ``task``, trained on train."""
    rows = {split: [(e.query.text(), e.foil.text(), e.caption, e.label) for e in exs]
            for split, exs in T.generate_task(task, SIZES, seed=seed).items() if exs}
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


def test_every_quantifier_and_label_is_equally_likely():
    for split, exs in T.generate_task("quantifiers", {"train": 1200, "test_ood": 120}, seed=0).items():
        if not exs:
            continue
        cells = Counter((e.query.quantifier, e.label) for e in exs)
        assert len(cells) == 12 and set(cells.values()) == {len(exs) // 12}, (split, cells)


if __name__ == "__main__":  # python tests/test_travlr_shortcuts.py: the table of accuracies
    for task in T.TASKS:
        for framing, by_split in shortcut_accuracies(task).items():
            print(f"{task:22s} {framing:20s} " + "  ".join(f"{s} {a:.3f}" for s, a in by_split.items()))
