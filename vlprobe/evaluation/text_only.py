"""Text-only scoring, ``--modality text``: an item's texts compared with each other by the model's text tower.

An item's *true* texts (gold for some image) and *false* ones become one row of text-embedding cosines: each pair of
true texts (gold), then each (true, false) pair, ``1 x (t(t-1)/2 + t f)``; the metric's ``text`` score is right when
the true texts are closer to each other than any is to a false one. SugarCREPE++ ``[P1, P2, neg]``:
``[[cos(P1, P2), cos(P1, neg), cos(P2, neg)]]``, gold ``[[1, 0, 0]]``, the authors' TOT (VLMs/test_*.py).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..dataset.items import Item, ItemError
from ..scorers.base import DualScorer
from ..scoring.engine import Engine, EngineResult


@dataclass(frozen=True, eq=False)
class TextOnlyItem:
    """An item as the text-only modality scores it: its true texts, in order, then its false ones."""

    id: str
    texts: tuple[str, ...]
    n_true: int
    gold: np.ndarray
    tags: tuple[str, ...] = ()
    config: str = ""

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(self.gold.shape)


def text_gold(n_true: int, n_false: int) -> np.ndarray:
    """The text-only gold matrix (module doc)."""
    together = n_true * (n_true - 1) // 2
    gold = np.zeros((1, together + n_true * n_false), dtype=bool)
    gold[0, :together] = True
    gold.setflags(write=False)
    return gold


def text_only(item: Item) -> TextOnlyItem:
    """``item`` as its texts compared with each other; :class:`ItemError` where it cannot be."""
    truth = np.asarray(item.gold, dtype=bool).any(axis=0)
    true = [t for t, g in zip(item.texts, truth) if g]
    false = [t for t, g in zip(item.texts, truth) if not g]
    if len(true) < 2 or not false:
        have = f"{len(true)} true text{'s' if len(true) != 1 else ''} and {len(false)} false"
        raise ItemError(f"cannot be scored text-only (--modality text compares each true text with the item's other "
                        f"true texts and its false ones: it needs two or more true texts and a false one); item "
                        f"{item.id!r} has {have} (gold {np.asarray(item.gold, dtype=int).tolist()})")
    return TextOnlyItem(id=item.id, texts=(*true, *false), n_true=len(true), gold=text_gold(len(true), len(false)),
                        tags=tuple(item.tags), config=getattr(item, "config", ""))


def pairs(n_true: int, n: int) -> list[tuple[int, int]]:
    """The pairs of texts (of ``n``, the first ``n_true`` true) the row's cells hold, in order (module doc)."""
    true, false = range(n_true), range(n_true, n)
    return [(i, j) for i in true for j in true if i < j] + [(i, j) for i in true for j in false]


def item_matrix(similarity: np.ndarray, n_true: int) -> np.ndarray:
    """The ``1 x (t(t-1)/2 + t f)`` score matrix from the item's ``n x n`` text-text similarities."""
    sim = np.asarray(similarity)
    return np.array([[sim[i, j] for i, j in pairs(n_true, sim.shape[0])]]).astype(np.float32, copy=False)


def score_text_only(engine: Engine, items: Sequence[TextOnlyItem]) -> EngineResult:
    """Each item's text-only score matrix, each distinct text encoded once and each distinct pair of the engine's
    text keys (the token ids) compared once: two texts the model reads alike tie exactly."""
    start = time.perf_counter()
    distinct = list(dict.fromkeys(t for item in items for t in item.texts))
    emb, stats = engine.embed_texts(distinct)
    key_of = dict(zip(distinct, engine.text_keys(distinct)))
    vector = {key_of[t]: emb[k] for k, t in enumerate(distinct)}
    scorer = engine.scorer
    assert isinstance(scorer, DualScorer)  # --modality text refuses any other (EvaluateRun.after_model)
    pair: dict[tuple[str, str], float] = {}
    scores = []
    for item in items:
        keys = [key_of[t] for t in item.texts]
        unique = list(dict.fromkeys(keys))
        if any((min(a, b), max(a, b)) not in pair for a in unique for b in unique):
            vectors = np.stack([vector[k] for k in unique])
            sim = np.asarray(scorer.text_similarity(vectors, vectors))
            for i, a in enumerate(unique):
                for j, b in enumerate(unique):
                    pair.setdefault((min(a, b), max(a, b)), sim[i, j])
        full = np.array([[pair[min(a, b), max(a, b)] for b in keys] for a in keys])
        scores.append(item_matrix(full, item.n_true))
    return EngineResult(scores=scores, probabilities=None, stats={
        "cached": stats.get("cached", 0), "unique_images": 0, "unique_texts": stats.get("unique", len(distinct)),
        "computed_images": 0, "computed_texts": stats.get("computed", 0),
        "seconds": round(time.perf_counter() - start, 3)})
