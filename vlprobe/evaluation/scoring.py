"""Scoring, streamed: rows are read in bounded chunks across splits, scored by :mod:`vlprobe.scoring.engine`
through the score cache, and measured by the metric; only scores, gold, ids, texts and tags are kept.

Ties: the engine gives inputs the model cannot tell apart one score, so a gold text and a non-gold
one that the model reads as the same token ids (:meth:`vlprobe.scorers.base.Scorer.seen_texts`: the
same string twice, a case the tokenizer folds, unknown words, a difference past the truncation limit)
tie exactly, and the tie policy counts the comparison. Each chunk's texts are passed through the
scorer's tokenization once to record such items as *collapsed*. After the metric, a split (or a tag)
whose every item tied gets no numbers: its metrics become None with ``na_reason`` (e.g. "100/100 items
tied: texts identical after truncation to 48 tokens"); a split where only some items tied keeps its
numbers (each tied comparison counted as the tie policy says) and gets a one-line warning in
``data["truncation"]`` that counts the items holding a tie, how many of them because of identical
model inputs, and how the policy counted them."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from ..benchmarks import COUNTED, find, tie_policy
from ..dataset.images import ImageError
from ..errors import DatasetError, ModelError
from ..results import NA_KEY, ScoredItem, ScoredSplit, ScoreMatrices, metric_keys
from ..scorers.controls import apply_control
from ..scoring.engine import Engine, EngineOutOfMemory
from .data import SplitSource
from .settings import TEXT, EvaluateSettings
from .text_only import score_text_only
from .tied_metrics import mark_tied_metrics

# Imported where used, as they are slow to import (python -X importtime, this 2-core machine): torch 11.7 s and
# accelerate (only under `accelerate launch`), the metric (it imports evaluate, datasets and torch).


def _chunks(sources: Sequence[SplitSource], s: EvaluateSettings) -> Iterator[list[tuple[int, Any]]]:
    """(source index, item) lists of at most ``chunk_size`` items, in order, across splits. With the
    shuffle control a split is one chunk (its images are permuted across all its items)."""

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
            # Nothing of this batch may stay referenced here while the next one is read: the items
            # hold their image bytes (2,000 photos of 90 KB: 180 MB), and the old chunk was kept
            # alive beside the next one while it was read (issue 25).
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


def _collapsed(engine: Engine, items: Sequence[Any]) -> list[str | None] | None:
    """Per item, whether a gold text and a non-gold text of one image are one input to the model (the
    same token ids after its tokenization and truncation, the same string twice included): None if
    not, ``"truncation"`` when every such pair differs only past the scorer's text limit, else
    ``"tokens"``. None for the whole chunk when the scorer cannot say. The ids are the ones the engine
    keyed the chunk by (:meth:`Engine.seen_texts`): no text is tokenized again."""
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


def _score(sources: list[SplitSource], engine: Engine, s: EvaluateSettings, progress: bool, main: bool,
           throwaway: bool = False) -> tuple[list[ScoredSplit], dict[str, Any]]:
    """Stream every source through ``engine``; the scored splits (no images) and the engine stats. ``throwaway``:
    the engine's cache is a throw-away one (nothing in it came from a cache kept)."""
    scorer = engine.scorer
    splits = [ScoredSplit(dataset=src.dataset, config=src.config, split=src.split, benchmark=src.benchmark, items=[],
                          dataset_version=src.dataset_version,
                          scores=ScoreMatrices(), probabilities=ScoreMatrices(), data=src.data) for src in sources]
    limit = scorer.text_limit() if hasattr(scorer, "text_limit") else None
    total = sum(src.n for src in sources)
    bar = None
    if progress and main and total > s.chunk_size:
        bar = tqdm(total=total, desc="scoring", unit="item")
    stats: dict[str, Any] = {}
    chunks = 0
    start = time.perf_counter()
    try:
        for chunk in _chunks(sources, s):
            try:
                if s.modality == TEXT:
                    result = score_text_only(engine, [item for _, item in chunk])
                else:
                    result = engine.score([item for _, item in chunk])
            except EngineOutOfMemory as err:
                raise ModelError(str(err)) from None
            except ImageError as err:
                raise DatasetError(str(err)) from None
            chunks += 1
            for key, value in result.stats.items():
                if key != "world_size" and isinstance(value, (int, float)):
                    stats[key] = stats.get(key, 0) + value
                else:
                    stats[key] = value
            probs = result.probabilities
            flags = _collapsed(engine, [item for _, item in chunk])
            rows: dict[int, list[int]] = {}  # source -> its items' places in the chunk
            for i, (k, item) in enumerate(chunk):
                if flags is not None:
                    if splits[k].collapsed is None:
                        splits[k].collapsed, splits[k].truncated, splits[k].text_limit = [], [], limit
                    if flags[i]:
                        splits[k].collapsed.append(len(splits[k].items))
                        if flags[i] == "truncation":
                            splits[k].truncated.append(len(splits[k].items))
                splits[k].items.append(ScoredItem.of(item))
                rows.setdefault(k, []).append(i)
            for k, places in rows.items():
                out = splits[k]
                out.scores.extend([result.scores[i] for i in places])  # one stacked block per chunk
                if out.probabilities is not None:
                    if probs is None:
                        out.probabilities = None
                    else:
                        out.probabilities.extend([probs[i] for i in places])
            if bar is not None:
                bar.update(len(chunk))
            del result, probs, chunk  # the chunk's items (image bytes) and per-item arrays go now
    finally:
        if bar is not None:
            bar.close()
    if chunks > 1:
        stats["seconds"] = round(time.perf_counter() - start, 3)
        stats["chunks"] = chunks
        stats["chunk_size"] = s.chunk_size
        if throwaway:
            stats["cached"] = 0  # only the throw-away cache served them: nothing came from a cache kept
    for out in splits:
        if out.probabilities is not None and len(out.probabilities) != len(out.items):
            out.probabilities = None
    return splits, stats


def _measure(split: ScoredSplit, s: EvaluateSettings, sees_images: bool = True) -> None:
    from .. import metric as metric_module

    scores, gold, probs = _metric_inputs(split)
    tags = [it.tags for it in split.items]  # tuples: the metric copies them into lists itself
    bench = find(split.benchmark)
    split.ties = tie_policy(bench, s.ties, s.modality)  # "authors": its benchmark's rule, else strict
    try:
        split.metrics = metric_module.compute(
            scores, gold, ties=split.ties, probabilities=probs, threshold=s.threshold,
            tags=tags if any(tags) else None, bootstrap=s.bootstrap, confidence=s.confidence, seed=s.seed,
        )
    except ValueError as err:
        raise DatasetError(f"{split.name}: {err}") from None
    mark_not_available(split, tied_items(scores, gold), split.ties, with_ties=items_with_ties(scores, gold))
    mark_tied_metrics(split, scores, gold, sees_images, tags)  # a metric whose every comparison tied: N/A
    split.authors_rule = _authors_rule(split, s, scores, gold, probs, tags)


def _authors_rule(split: ScoredSplit, s: EvaluateSettings, scores: Any, gold: Any, probs: Any, tags: Any) -> dict | None:
    """The split's metrics as its benchmark's authors' code computes them, where they differ from the run's: under
    their tie rule where the split was counted by another policy (``--ties lenient`` on SugarCREPE, ``--ties strict``
    on CREPE), or where the run's are not available (every item tied: their code prints a number, 0.0 under a
    strict rule): ``{"ties": <the authors' policy>, "metrics": ...}``, with no CI (a figure to read beside the
    run's); else None."""
    from .. import metric as metric_module  # as _measure: the metric module imports evaluate

    bench = find(split.benchmark)
    rule = bench.tie_rule_for(s.modality) if bench is not None else None
    m = split.metrics
    na = m.get("na_reason") or any(t.get("na_reason") for t in (m.get("per_tag") or {}).values())
    if rule is None or (rule.policy == split.ties and not na):
        return None
    return {"ties": rule.policy, "metrics": metric_module.compute(scores, gold, ties=rule.policy, probabilities=probs,
                                                                 threshold=s.threshold, tags=tags if any(tags) else None,
                                                                 bootstrap=0)}


def items_with_ties(scores: Any, gold: Any) -> np.ndarray:
    """Per item, whether any comparison the metrics make (a gold cell against a non-gold cell of the
    same row, or of the same column) is an exact tie."""
    if isinstance(scores, np.ndarray) and isinstance(gold, np.ndarray) and scores.ndim == 3:
        S, G = scores, gold.astype(bool)
        rows = (G[:, :, :, None] & ~G[:, :, None, :] & (S[:, :, :, None] == S[:, :, None, :])).any((1, 2, 3))
        cols = (G[:, :, None, :] & ~G[:, None, :, :] & (S[:, :, None, :] == S[:, None, :, :])).any((1, 2, 3))
        return rows | cols
    out = np.zeros(len(gold), dtype=bool)
    for i, (S, G) in enumerate(zip(scores, gold)):
        out[i] = bool(items_with_ties(np.asarray(S, dtype=np.float64)[None], np.asarray(G, dtype=bool)[None])[0])
    return out


def tied_items(scores: Any, gold: Any) -> np.ndarray:
    """Per item, whether every comparison the metrics make (a gold cell against a non-gold cell of
    the same row, or of the same column) is a tie: each row and column holding both gold and
    non-gold cells has one score throughout. False for an item with no comparison (1 x 1)."""
    if isinstance(scores, np.ndarray) and isinstance(gold, np.ndarray) and scores.ndim == 3:
        S, G = scores, gold.astype(bool)
        has_r = G.any(2) & (~G).any(2)
        has_c = G.any(1) & (~G).any(1)
        flat_r = S.max(2) == S.min(2)
        flat_c = S.max(1) == S.min(1)
        return (has_r.any(1) | has_c.any(1)) & (flat_r | ~has_r).all(1) & (flat_c | ~has_c).all(1)
    out = np.zeros(len(gold), dtype=bool)
    for i, (S, G) in enumerate(zip(scores, gold)):
        out[i] = bool(tied_items(np.asarray(S, dtype=np.float64)[None], np.asarray(G, dtype=bool)[None])[0])
    return out


def _why(n_collapsed: int, n_truncated: int, limit: int | None) -> str:
    """Why ``n_collapsed`` items' texts are one input, in the words the tables and the Space print."""
    cut = f"texts identical after truncation to {limit} tokens" if limit else "texts identical after truncation"
    if n_truncated == n_collapsed:
        return cut
    same = "texts the model reads as the same token ids"
    return same if not n_truncated else f"{same} ({n_truncated} of them {cut})"


def _reason(n_tied: int, n: int, n_collapsed: int, limit: int | None, n_truncated: int | None = None) -> str:
    why = _why(n_collapsed, n_collapsed if n_truncated is None else n_truncated, limit)
    if n_collapsed == n:
        return f"{n_tied}/{n} items tied: {why}"
    if n_collapsed:
        return f"{n_tied}/{n} items tied ({n_collapsed} with {why})"
    return f"{n_tied}/{n} items tied"


def _not_available(m: dict[str, Any], reason: str) -> None:
    """Every metric of ``m`` (and its CI) becomes None, with ``na_reason``: none is a number."""

    for key in metric_keys(m):
        m[key] = None
    if m.get("ci"):
        m["ci"] = {k: None for k in m["ci"]}
    m[NA_KEY] = reason


def mark_not_available(split: ScoredSplit, tied: np.ndarray, ties: str = "strict",
                       with_ties: np.ndarray | None = None) -> None:
    """Record the tied and collapsed items of ``split`` in ``data["truncation"]``; where every item
    of the split (or of one of its tags) tied, its metrics become not available (see the module
    doc); where only some items hold a tie (``with_ties``: per item, any comparison tied; default the
    collapsed items), a one-line warning counting them, how many tie because the model reads a gold
    and a non-gold text as the same input, and how the tie policy counted them."""
    n = len(split.items)
    collapsed = np.zeros(n, dtype=bool)
    if split.collapsed:
        collapsed[np.asarray(split.collapsed, dtype=int)] = True
    truncated = np.zeros(n, dtype=bool)
    if split.truncated:
        truncated[np.asarray(split.truncated, dtype=int)] = True
    elif split.truncated is None:
        truncated = collapsed.copy()  # a split recorded without causes: truncation, as before there were any
    some = collapsed.copy() if with_ties is None else np.asarray(with_ties, dtype=bool) | collapsed
    n_tied, n_collapsed, n_truncated, n_some = int(tied.sum()), int(collapsed.sum()), int(truncated.sum()), int(some.sum())
    info: dict[str, Any] = {"tied_items": n_tied}
    if split.collapsed is not None:
        info.update({"collapsed_items": n_collapsed, "text_max_length": split.text_limit})
    m = split.metrics
    if n and n_tied == n:
        _not_available(m, _reason(n_tied, n, n_collapsed, split.text_limit, n_truncated))
    elif n_some:
        counted = f"each tied comparison {COUNTED.get(ties, ties)} (ties={ties})"
        if n_collapsed:
            why = _why(n_collapsed, n_truncated, split.text_limit)
            why = why.replace("texts identical after truncation", "texts identical after the model's truncation", 1)
            text = f"{n_collapsed}/{n} items have {why}, so they tie"
            text += f"; {n_some}/{n} items hold a tie in all" if n_some > n_collapsed else ""
        else:
            text = f"{n_some}/{n} items hold a tie (a gold and a non-gold cell with exactly the same score)"
        info["warning"] = f"warning: {split.name}: {text}; {counted}"
    per_tag = m.get("per_tag") or {}
    if per_tag and n_tied:
        members: dict[str, list[int]] = {}
        for i, item in enumerate(split.items):
            for tag in item.tags:
                members.setdefault(tag, []).append(i)
        for tag, tm in per_tag.items():
            idx = np.asarray(members.get(tag, []), dtype=int)
            if len(idx) and tied[idx].all():
                _not_available(tm, _reason(len(idx), len(idx), int(collapsed[idx].sum()), split.text_limit,
                                           int(truncated[idx].sum())))
    split.data["truncation"] = info


def _metric_inputs(split: ScoredSplit) -> tuple[Any, Any, Any]:
    """(scores, gold, probabilities) for the metric: when every item has one shape, stacked
    ``(N, m, n)`` arrays (float64 scores and probabilities, boolean gold), the metric's own fast
    path, which stacks a list of per-item matrices into exactly these arrays; else the lists."""
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
