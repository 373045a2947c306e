"""The probe's features through :class:`vlprobe.scoring.engine.Engine` (cached, computed once per input),
written a chunk at a time to :mod:`vlprobe.storage.feature_store`: dual-encoder ``[u, v, u*v, |u-v|]``, an ITM
head's joint representation, or a VQAScore model's zero-shot probability.

Where one text holds both the caption and the query (the dual encoder's text-only baseline, an ITM
head's ``caption`` and ``both`` settings; the query comes first in each), the rows whose query the
model's truncation removes (:func:`query_lost`) are counted per task, split and setting, recorded in
the stats (``query_lost``: ``{"task/split/setting": [lost, rows]}``) and reported in one line on
stderr. A test split whose every row lost its query has no prediction to measure: its features are
written as NaN, which :func:`vlprobe.probing.metrics.measure` reports as not available
(``macro_f1`` None, ``na_reason``), never as a number."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..defaults import CHUNK_ROWS
from ..errors import ModelError
from .data import Split
from .settings import MODALITIES, TEXT_ONLY, TRAIN


def _concat(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.concatenate([u, v, u * v, np.abs(u - v)], axis=1).astype(np.float32)


def _normalise(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def text_only_input(caption: str, query: str) -> str:
    return f"{query} {caption}"


def query_lost(scorer: Any, texts: Sequence[str], queries: Sequence[str]) -> np.ndarray | None:
    """Per text, whether the model's truncation cuts (part of) the query it holds: the text up to the
    end of its query is longer than the model reads. None when the scorer has no tokenizer and limit."""
    tok = getattr(scorer, "tokenizer", None) or getattr(getattr(scorer, "processor", None), "tokenizer", None)
    limit = scorer.text_limit() if hasattr(scorer, "text_limit") else getattr(scorer, "max_length", None)
    if tok is None or not limit or not callable(tok):
        return None
    ends = [t.find(q) for t, q in zip(texts, queries)]
    prefixes = [t[:at + len(q)] if at >= 0 else t for t, q, at in zip(texts, queries, ends)]
    ids = tok(prefixes, add_special_tokens=True, verbose=False)["input_ids"]  # no "longer than" warning
    return np.array([len(row) > limit for row in ids], dtype=bool)


class _Lost:
    """Rows whose query was lost to truncation, per (task, split, setting)."""

    def __init__(self, scorer: Any) -> None:
        self.scorer = scorer
        self.counts: dict[tuple[str, str, str], list[int]] = {}

    def add(self, s: Split, setting: str, texts: Sequence[str], queries: Sequence[str]) -> None:
        flags = query_lost(self.scorer, texts, queries)
        if flags is None:
            return
        count = self.counts.setdefault((s.task, s.split, setting), [0, 0])
        count[0] += int(flags.sum())
        count[1] += len(flags)

    def all_lost(self, s: Split, setting: str) -> bool:
        lost, n = self.counts.get((s.task, s.split, setting), (0, 0))
        return s.split.startswith("test") and n > 0 and lost == n

    def report(self, stats: dict) -> None:
        """The counts into ``stats["query_lost"]``, and one line on stderr where any query was lost."""
        if not self.counts:
            return
        stats["query_lost"] = {f"{t}/{sp}/{m}": list(c) for (t, sp, m), c in self.counts.items()}
        hit = {k: c for k, c in self.counts.items() if c[0]}
        if not hit:
            return
        import sys

        limit = self.scorer.text_limit() if hasattr(self.scorer, "text_limit") else None
        lost, total = sum(c[0] for c in self.counts.values()), sum(c[1] for c in self.counts.values())
        where = ", ".join(f"{t}/{sp}/{m} {c[0]}/{c[1]}" for (t, sp, m), c in hit.items())
        na = [f"{t}/{sp}/{m}" for (t, sp, m), c in hit.items() if sp.startswith("test") and c[0] == c[1]]
        print(f"probe: warning: {lost}/{total} caption+query texts lose their query to the model's truncation"
              + (f" to {limit} tokens" if limit else "") + f" ({where})"
              + (f"; N/A (no prediction) for {', '.join(na)}" if na else "; they stay in the numbers"),
              file=sys.stderr)


def _unavailable(store: Any, name: str, features: Any) -> Any:
    """A feature file of NaN rows the shape of ``features``: a test split whose every row lost its
    query has no prediction (measured as not available)."""
    w = store.writer(f"{name}-unavailable", len(features))
    for block in features.blocks():
        w.write(np.full_like(block, np.nan))
    return w.close()


def extract_features(engine: Any, data: dict[str, dict[str, Split]], settings: Sequence[str],
                     chunk_size: int = CHUNK_ROWS, store: Any = None) -> tuple[dict, dict]:
    """{(task, split, setting): features} and engine stats. Features are a (N, d) float32
    :class:`~vlprobe.storage.feature_store.FeatureFile` in ``store`` (a temporary
    :class:`~vlprobe.storage.feature_store.FeatureStore` when None), or, for VQAScore, P(Yes) as an (N,) array.

    ``settings``: modalities among :data:`MODALITIES` and optionally :data:`TEXT_ONLY`. Rows are
    read, decoded and encoded ``chunk_size`` at a time and each chunk's features are appended to
    their files: memory holds one chunk, whatever the number of rows."""
    from ..scorers.base import DualScorer
    from ..storage.feature_store import FeatureStore

    splits = [s for by_split in data.values() for s in by_split.values()]
    scorer = engine.scorer
    store = store if store is not None else FeatureStore()
    if isinstance(scorer, DualScorer):
        return _dual_features(engine, splits, settings, chunk_size, store)
    if hasattr(scorer, "pair_features"):
        return _pair_features(engine, splits, [s for s in settings if s in MODALITIES], chunk_size, store)
    if getattr(scorer, "family", "") == "vqascore":
        return _zero_shot(engine, splits, [s for s in settings if s in MODALITIES], chunk_size)
    raise ModelError(f"model {scorer.model_id!r} (family {scorer.family!r}) exposes no features the probe can use: "
                     f"it needs a dual encoder, an ITM head (pair_features) or a VQAScore VLM")


def _add_stats(total: dict, st: dict) -> dict:
    """Engine stats summed over chunks (counts and seconds add; anything else: the last value)."""
    for key, value in st.items():
        total[key] = total.get(key, 0) + value if isinstance(value, (int, float)) and not isinstance(value, bool) else value
    return total


def _labels(s: Split, start: int, stop: int) -> list[str]:
    """How an image error names rows ``start:stop`` of ``s``: ``spatiality/test_ind row 12 column 'image'``, as a
    path refused in them is named (:func:`vlprobe.dataset.splits.checked_image_paths`)."""
    return [f"{s.task}/{s.split} row {i} column 'image'" for i in range(start, stop)]


def _writers(store: Any, s: Split, settings: Sequence[str]) -> dict[str, Any]:
    return {m: store.writer(f"{s.task}-{s.split}-{m}", len(s)) for m in settings}


def _dual_features(engine: Any, splits: list[Split], settings: Sequence[str], chunk_size: int,
                   store: Any) -> tuple[dict, dict]:
    """A chunk of rows at a time: its images and texts embedded (each unique input once: the engine's
    cache carries them across chunks), the settings' features composed and appended to their files."""
    stats: dict[str, Any] = {"images": {}, "texts": {}}
    lost = _Lost(engine.scorer)
    need_images = any(m in ("image", "both") for m in settings)
    need_captions = any(m in ("caption", "both") for m in settings)
    out = {}
    for s in splits:
        writers = _writers(store, s, settings)
        for a, b in s.chunks(chunk_size):
            if need_images:
                img, st = engine.embed_images(s.images(a, b), _labels(s, a, b))
                _add_stats(stats["images"], st)
            queries = s.texts("query", a, b)
            texts = list(queries)
            captions = s.texts("caption", a, b) if need_captions or TEXT_ONLY in settings else []
            if need_captions:
                texts += captions
            if TEXT_ONLY in settings:
                joined = [text_only_input(c, q) for c, q in zip(captions, queries)]
                lost.add(s, TEXT_ONLY, joined, queries)
                texts += joined
            emb, st = engine.embed_texts(texts)
            _add_stats(stats["texts"], st)
            n = b - a
            q = emb[:n]
            cap = emb[n:2 * n] if need_captions else None
            for m, w in writers.items():
                if m == "image":
                    w.write(_concat(img, q))
                elif m == "caption":
                    w.write(_concat(cap, q))
                elif m == "both":
                    w.write(_concat(_normalise(img + cap), q))
                elif m == TEXT_ONLY:
                    w.write(emb[len(emb) - n:])
        out.update(_closed(store, s, writers, lost))
    lost.report(stats)
    return out, stats


def _closed(store: Any, s: Split, writers: dict[str, Any], lost: _Lost) -> dict:
    out = {}
    for m, w in writers.items():
        features = w.close()
        out[(s.task, s.split, m)] = _unavailable(store, f"{s.task}-{s.split}-{m}", features) \
            if lost.all_lost(s, m) else features
    return out


def _pair_features(engine: Any, splits: list[Split], modalities: Sequence[str], chunk_size: int,
                   store: Any) -> tuple[dict, dict]:
    stats: dict[str, Any] = {}
    lost = _Lost(engine.scorer)
    out = {}
    for s in splits:
        writers = _writers(store, s, modalities)
        for a, b in s.chunks(chunk_size):
            rows = s.rows(a, b)
            for m, w in writers.items():
                items = s.items(m, a, b, rows)
                if m != "image":  # one text: the query, then the caption
                    lost.add(s, m, [it.texts[0] for it in items], [r["query"] for r in rows])
                # the query (followed by the caption for caption/both)
                feats, st = engine.pair_features([it.images[0] for it in items], [it.texts[0] for it in items],
                                                 _labels(s, a, b))
                w.write(feats)
                _add_stats(stats, st)
        out.update(_closed(store, s, writers, lost))
    result = {"pairs": stats}
    lost.report(result)
    return out, result


def _zero_shot(engine: Any, splits: list[Split], modalities: Sequence[str], chunk_size: int) -> tuple[dict, dict]:
    """P(Yes | scene, query) per test row and modality: one float per row, kept in memory."""
    from ..dataset.items import Item

    stats: dict[str, Any] = {}
    out = {}
    for s in splits:
        if not s.split.startswith("test"):
            continue
        for m in modalities:
            parts = []
            for a, b in s.chunks(chunk_size):
                # 1 image x the query alone (the spec's first text): the gold cell is not read here
                batch = [Item(it.id, it.images, it.texts[:1], np.ones((1, 1), bool), config=it.config)
                         for it in s.items(m, a, b)]
                res = engine.score(batch)
                if res.probabilities is None:
                    raise ModelError(f"model {engine.scorer.model_id!r} gives no match probabilities; the zero-shot "
                                     f"row needs them")
                # the query's P(Yes) normalised over Yes/No
                parts.append(np.array([p[0, 0] for p in res.probabilities], dtype=np.float32))
                _add_stats(stats, res.stats)
            out[(s.task, s.split, m)] = np.concatenate(parts)
    return out, {"pairs": stats}


def _truncation(scorer: Any, data: dict) -> dict | None:
    """Share of captions (and text-only inputs) longer than the text tower's limit, per task."""
    tok = getattr(scorer, "tokenizer", None) or getattr(getattr(scorer, "processor", None), "tokenizer", None)
    limit = getattr(scorer, "max_length", None)
    if tok is None or not limit:
        return None
    out = {}
    for task, by in data.items():
        train, longer = by[TRAIN], 0
        for a, b in train.chunks(CHUNK_ROWS):
            longer += sum(len(ids) > limit for ids in tok(train.texts("caption", a, b), add_special_tokens=True)["input_ids"])
        out[task] = round(longer / len(train), 4) if len(train) else 0.0
    return out
