"""The probe's features through the engine (each input computed once), a chunk at a time into a feature store; rows
whose query the model's truncation cuts are counted (``query_lost``), a test split that lost them all NaN."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..defaults import CHUNK_ROWS
from ..errors import ModelError
from ..storage.feature_store import FeatureFile, FeatureStore
from .data import Split, Splits
from .protocol import FeatureMap
from .settings import MODALITIES, TEXT_ONLY, TRAIN

if TYPE_CHECKING:
    from ..scorers.base import Scorer
    from ..scoring.engine import Engine

Stats = dict[str, Any]  # the engine's statistics, as it gives them


def _concat(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.concatenate([u, v, u * v, np.abs(u - v)], axis=1).astype(np.float32)


def _normalise(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def _tokenizer(scorer: Scorer) -> Callable[..., Mapping[str, list[list[int]]]] | None:
    tok = getattr(scorer, "tokenizer", None) or getattr(getattr(scorer, "processor", None), "tokenizer", None)
    return tok if callable(tok) else None


def query_lost(scorer: Scorer, texts: Sequence[str], queries: Sequence[str]) -> np.ndarray | None:
    """Per text, whether the model's truncation cuts the query it holds; None without a tokenizer and limit."""
    tok, limit = _tokenizer(scorer), scorer.text_limit()
    if tok is None or not limit:
        return None
    ends = [t.find(q) for t, q in zip(texts, queries)]
    prefixes = [t[:at + len(q)] if at >= 0 else t for t, q, at in zip(texts, queries, ends)]
    ids = tok(prefixes, add_special_tokens=True, verbose=False)["input_ids"]  # no "longer than" warning
    return np.array([len(row) > limit for row in ids], dtype=bool)


class _Lost:
    """Rows whose query was lost to truncation, per (task, split, setting)."""

    def __init__(self, scorer: Scorer) -> None:
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

    def report(self) -> dict[str, Stats]:
        """The counts for the stats, said in one line on stderr where any query was lost."""
        if not self.counts:
            return {}
        hit = {k: c for k, c in self.counts.items() if c[0]}
        if hit:
            limit = self.scorer.text_limit()
            lost, total = sum(c[0] for c in self.counts.values()), sum(c[1] for c in self.counts.values())
            where = ", ".join(f"{t}/{sp}/{m} {c[0]}/{c[1]}" for (t, sp, m), c in hit.items())
            na = [f"{t}/{sp}/{m}" for (t, sp, m), c in hit.items() if sp.startswith("test") and c[0] == c[1]]
            print(f"probe: warning: {lost}/{total} caption+query texts lose their query to the model's truncation"
                  + (f" to {limit} tokens" if limit else "") + f" ({where})"
                  + (f"; N/A (no prediction) for {', '.join(na)}" if na else "; they stay in the numbers"),
                  file=sys.stderr)
        return {"query_lost": {f"{t}/{sp}/{m}": list(c) for (t, sp, m), c in self.counts.items()}}


def extract_features(engine: Engine, data: Splits, settings: Sequence[str], chunk_size: int = CHUNK_ROWS,
                     store: FeatureStore | None = None) -> tuple[FeatureMap, dict[str, Stats]]:
    """{(task, split, setting): a float32 FeatureFile in ``store``, or VQAScore's P(Yes) array} and engine stats."""
    from ..scorers.base import DualScorer

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


def _add_stats(total: Stats, st: Mapping[str, object]) -> None:
    """Engine stats summed over chunks (numbers add; anything else: the last value)."""
    for key, value in st.items():
        was = total.get(key, 0)
        total[key] = was + value if isinstance(value, (int, float)) and not isinstance(value, bool) and isinstance(
            was, (int, float)) else value


def _labels(s: Split, start: int, stop: int) -> list[str]:
    """How an image error names rows ``start:stop`` of ``s``: ``spatiality/test_ind row 12 column 'image'``."""
    return [f"{s.task}/{s.split} row {i} column 'image'" for i in range(start, stop)]


def _written(store: FeatureStore, splits: list[Split], settings: Sequence[str], chunk_size: int, lost: _Lost,
             chunk: Callable[[Split, int, int], Mapping[str, np.ndarray]]) -> dict[tuple[str, str, str], FeatureFile]:
    """Each split's ``chunk`` blocks appended per setting; a test split that lost every query as NaN rows."""
    out = {}
    for s in splits:
        writers = {m: store.writer(f"{s.task}-{s.split}-{m}", len(s)) for m in settings}
        for a, b in s.chunks(chunk_size):
            for m, block in chunk(s, a, b).items():
                writers[m].write(block)
        for m, w in writers.items():
            features = w.close()
            if lost.all_lost(s, m):
                nan = store.writer(f"{s.task}-{s.split}-{m}-unavailable", len(features))
                for block in features.blocks():
                    nan.write(np.full_like(block, np.nan))
                features = nan.close()
            out[(s.task, s.split, m)] = features
    return out


def _dual_features(engine: Engine, splits: list[Split], settings: Sequence[str], chunk_size: int,
                   store: FeatureStore) -> tuple[FeatureMap, dict[str, Stats]]:
    """A chunk's images and texts embedded (the engine's cache carries them across chunks), each setting composed."""
    image_stats: Stats = {}
    text_stats: Stats = {}
    lost = _Lost(engine.scorer)
    need_images = any(m in ("image", "both") for m in settings)
    need_captions = any(m in ("caption", "both") for m in settings)

    def chunk(s: Split, a: int, b: int) -> dict[str, np.ndarray]:
        if need_images:
            img, st = engine.embed_images(s.images_at(range(a, b)), _labels(s, a, b))
            _add_stats(image_stats, st)
        queries = s.texts("query", a, b)
        texts = list(queries)
        captions = s.texts("caption", a, b) if need_captions or TEXT_ONLY in settings else []
        if need_captions:
            texts += captions
        if TEXT_ONLY in settings:
            joined = [f"{q} {c}" for c, q in zip(captions, queries)]
            lost.add(s, TEXT_ONLY, joined, queries)
            texts += joined
        emb, st = engine.embed_texts(texts)
        _add_stats(text_stats, st)
        n = b - a
        q = emb[:n]
        cap = emb[n:2 * n]  # the captions', where they were embedded
        composed = {"image": lambda: _concat(img, q), "caption": lambda: _concat(cap, q),
                    "both": lambda: _concat(_normalise(img + cap), q), TEXT_ONLY: lambda: emb[len(emb) - n:]}
        return {m: composed[m]() for m in settings}

    out = _written(store, splits, settings, chunk_size, lost, chunk)
    return out, {"images": image_stats, "texts": text_stats, **lost.report()}


def _pair_features(engine: Engine, splits: list[Split], modalities: Sequence[str], chunk_size: int,
                   store: FeatureStore) -> tuple[FeatureMap, dict[str, Stats]]:
    stats: Stats = {}
    lost = _Lost(engine.scorer)

    def chunk(s: Split, a: int, b: int) -> dict[str, np.ndarray]:
        rows, out = s.rows(a, b), {}
        for m in modalities:
            items = s.items(m, a, b, rows)
            if m != "image":  # one text: the query, then the caption
                lost.add(s, m, [it.texts[0] for it in items], s.texts("query", a, b))
            out[m], st = engine.pair_features([it.images[0] for it in items], [it.texts[0] for it in items],
                                              _labels(s, a, b))
            _add_stats(stats, st)
        return out

    return _written(store, splits, modalities, chunk_size, lost, chunk), {"pairs": stats, **lost.report()}


def _zero_shot(engine: Engine, splits: list[Split], modalities: Sequence[str],
               chunk_size: int) -> tuple[FeatureMap, dict[str, Stats]]:
    """P(Yes | scene, query) per test row and modality: one float per row, kept in memory."""
    from ..dataset.items import Item

    stats: Stats = {}
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


def _truncation(scorer: Scorer, data: Splits) -> dict[str, float] | None:
    """Share of captions longer than the text tower's limit, per task."""
    tok, limit = _tokenizer(scorer), getattr(scorer, "max_length", None)
    if tok is None or not limit:
        return None
    out = {}
    for task, by in data.items():
        train, longer = by[TRAIN], 0
        for a, b in train.chunks(CHUNK_ROWS):
            longer += sum(len(ids) > limit for ids in tok(train.texts("caption", a, b), add_special_tokens=True)["input_ids"])
        out[task] = round(longer / len(train), 4) if len(train) else 0.0
    return out
