"""Scoring, streamed: rows read in bounded chunks across splits, scored by the engine through the score cache, and
measured; only scores, gold, ids, texts and tags are kept. Each chunk's texts are keyed once to find the items whose
gold and non-gold texts are one input to the model (:mod:`.tied_metrics` says what becomes of them)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from ..benchmarks import TEXT_ONLY, find, tie_policy
from ..dataset.images import ImageError
from ..dataset.items import Item
from ..errors import DatasetError, ModelError
from ..results import ScoredItem, ScoredSplit, ScoreMatrices
from ..scorers.controls import apply_control
from ..scoring.engine import Engine, EngineOutOfMemory
from .data import SplitSource
from .settings import EvaluateSettings
from .text_only import TextOnlyItem, score_text_only
from .tied_metrics import Matrices, comparison_ties, mark_ties

# torch, accelerate and the metric are imported where used: they take seconds to import.


def _chunks(sources: Sequence[SplitSource], s: EvaluateSettings) -> Iterator[list[tuple[int, Any]]]:
    """(source index, item) lists of at most ``chunk_size`` items across splits (shuffle: a split, permuted whole)."""

    buffer: list[tuple[int, Any]] = []
    for k, src in enumerate(sources):
        size = src.n if s.control == "shuffle" else s.chunk_size
        for start, rows in src.row_batches(size):
            items = src.items(start, rows, s.modality)
            del rows
            if s.control:
                try:
                    items = list(apply_control(items, s.control, seed=s.seed))
                except ValueError as err:
                    raise DatasetError(f"{src.name}: {err}") from None
            for item in items:
                buffer.append((k, item))
                if len(buffer) >= s.chunk_size and s.control != "shuffle":
                    yield buffer
                    buffer = []
            if s.control == "shuffle" and len(buffer) >= s.chunk_size:
                yield buffer
                buffer = []
            # nothing of this batch may stay referenced while the next is read: its items hold image bytes (issue 25)
            items = item = None
    if buffer:
        yield buffer


def _distributed(device: str | None) -> tuple[Any, str | None]:
    """Under ``accelerate launch`` (WORLD_SIZE > 1): the initialised state and this process's device."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return None, device
    import torch
    from accelerate import PartialState

    cpu = (device or "").startswith("cpu") or not torch.cuda.is_available()
    state = PartialState(cpu=cpu)
    return state, (device if device else str(state.device))


def _collapsed(engine: Engine, items: Sequence[Item | TextOnlyItem]) -> list[str | None] | None:
    """Per item, whether a gold and a non-gold text of one image are one input to the model: None if not,
    ``"truncation"`` when they differ only past the text limit, else ``"tokens"``; None where the scorer cannot say."""
    scorer = engine.scorer
    distinct = list(dict.fromkeys(t for item in items for t in item.texts))
    seen = engine.seen_texts(distinct)
    if seen is None:
        return None
    read = dict(zip(distinct, seen))
    limit = scorer.text_limit() if hasattr(scorer, "text_limit") else None
    flags: list[str | None] = []
    for item in items:
        gold = np.asarray(item.gold, dtype=bool)
        causes = set()
        for row in gold:
            for j in np.flatnonzero(row):
                for k in np.flatnonzero(~row):
                    a, b = item.texts[j], item.texts[k]
                    if read[a] == read[b]:
                        cut = a != b and limit is not None and len(read[a]) >= limit
                        causes.add("truncation" if cut else "tokens")
        flags.append(None if not causes else ("truncation" if causes == {"truncation"} else "tokens"))
    return flags


def _score(sources: list[SplitSource], engine: Engine, s: EvaluateSettings, main: bool,
           throwaway: bool = False) -> tuple[list[ScoredSplit], dict[str, Any]]:
    """Stream every source through ``engine``: the scored splits (no images) and the engine stats."""
    scorer = engine.scorer
    splits = [ScoredSplit(dataset=src.dataset, config=src.config, split=src.split, benchmark=src.benchmark, items=[],
                          dataset_version=src.dataset_version, data=src.data) for src in sources]
    scores = [ScoreMatrices() for _ in sources]  # one stacked block per chunk
    probabilities: list[ScoreMatrices | None] = [ScoreMatrices() for _ in sources]  # None: a chunk had none
    limit = scorer.text_limit() if hasattr(scorer, "text_limit") else None
    total = sum(src.n for src in sources)
    stats: dict[str, Any] = {}
    chunks = 0
    start = time.perf_counter()
    with tqdm(total=total, desc="scoring", unit="item", disable=not (s.progress and main and total > s.chunk_size)) as bar:
        for chunk in _chunks(sources, s):
            chunks += 1
            try:
                if s.modality == TEXT_ONLY:
                    result = score_text_only(engine, [item for _, item in chunk])
                else:
                    result = engine.score([item for _, item in chunk])
            except EngineOutOfMemory as err:
                raise ModelError(str(err)) from None
            except ImageError as err:
                raise DatasetError(str(err)) from None
            for key, value in result.stats.items():
                if key != "world_size" and isinstance(value, (int, float)):
                    stats[key] = stats.get(key, 0) + value
                else:
                    stats[key] = value
            probs = result.probabilities
            flags = _collapsed(engine, [item for _, item in chunk])
            rows: dict[int, list[int]] = {}  # source -> its items' places in the chunk
            for i, (k, item) in enumerate(chunk):
                out = splits[k]
                if flags is not None:
                    if out.collapsed is None or out.truncated is None:
                        out.collapsed, out.truncated, out.text_limit = [], [], limit
                    if flags[i]:
                        out.collapsed.append(len(out.items))
                    if flags[i] == "truncation":
                        out.truncated.append(len(out.items))
                out.items.append(ScoredItem.of(item))
                rows.setdefault(k, []).append(i)
            for k, places in rows.items():
                scores[k].extend([result.scores[i] for i in places])
                kept = probabilities[k]
                if kept is not None and probs is not None:
                    kept.extend([probs[i] for i in places])
                else:
                    probabilities[k] = None
            bar.update(len(chunk))
            del result, probs, chunk  # the chunk's items (image bytes) and per-item arrays go now
    if chunks > 1:
        stats.update(seconds=round(time.perf_counter() - start, 3), chunks=chunks, chunk_size=s.chunk_size)
        if throwaway:
            stats.update(cached=0)  # only the throw-away cache served them: nothing came from a cache kept
    for out, kept_scores, kept in zip(splits, scores, probabilities):
        out.scores = kept_scores
        out.probabilities = kept if kept is not None and len(kept) == len(out.items) else None
    return splits, stats


def _measure(split: ScoredSplit, s: EvaluateSettings, sees_images: bool = True) -> None:
    """The metrics of ``split``, its ties marked, and where they differ its authors' code's (``authors_rule``)."""
    from .. import metric as metric_module  # it imports evaluate, datasets and torch

    scores, gold, probs = _metric_inputs(split)
    tags = [it.tags for it in split.items]  # tuples: the metric copies them into lists itself
    given = {"probabilities": probs, "threshold": s.threshold, "tags": tags if any(tags) else None}
    bench = find(split.benchmark)
    split.ties = tie_policy(bench, s.ties, s.modality)  # "authors": its benchmark's rule, else strict
    try:
        split.metrics = metric_module.compute(scores, gold, ties=split.ties, bootstrap=s.bootstrap,
                                              confidence=s.confidence, seed=s.seed, **given)
    except ValueError as err:
        raise DatasetError(f"{split.name}: {err}") from None
    na = mark_ties(split, comparison_ties(scores, gold), split.ties, sees_images)
    # Under the authors' tie rule where the split was counted by another, or where the run's are not available (their
    # code prints a number): a figure to read beside the run's, with no CI.
    rule = bench.tie_rule_for(s.modality) if bench is not None else None
    if rule is not None and (rule.policy != split.ties or na):
        split.authors_rule = {"ties": rule.policy, "metrics": metric_module.compute(scores, gold, ties=rule.policy,
                                                                                   bootstrap=0, **given)}


def _metric_inputs(split: ScoredSplit) -> tuple[Matrices, Matrices, Matrices | None]:
    """(scores, gold, probabilities), stacked ``(N, m, n)`` where every item has one shape (the metric's fast path)."""
    golds = [it.gold for it in split.items]
    scores, probs = split.scores, split.probabilities
    if isinstance(scores, ScoreMatrices) and (probs is None or isinstance(probs, ScoreMatrices)) and golds:
        shape = golds[0].shape
        stacked = scores.stacked()
        stacked_probs = None if probs is None else probs.stacked()
        if stacked is not None and stacked.shape == (len(golds), *shape) and \
                (probs is None or (stacked_probs is not None and stacked_probs.shape == stacked.shape)) and \
                all(g.shape == shape for g in golds):
            return (stacked.astype(np.float64), np.stack(golds).astype(bool, copy=False),
                    None if probs is None else stacked_probs.astype(np.float64))
    return scores, golds, probs
