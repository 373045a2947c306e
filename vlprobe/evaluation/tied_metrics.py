"""Ties made not available (issue 47.3). A split (or tag) whose every item tied gets no numbers (``na_reason``: "100/100
items tied: texts identical after truncation to 48 tokens"); one where some tied keeps them, with a warning in
``data["truncation"]``. A metric whose every comparison (a gold cell against a non-gold one of its row, or column)
tied gives the tie policy's constant, not a measurement: it becomes None with its reason."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..benchmarks import COUNTED
from ..results import NA_KEY, ScoredSplit, metric_keys

ROW_METRICS = ("acc_r", "text", "set_acc", "set_error", "sentence_acc")
COLUMN_METRICS = ("image",)
BOTH_METRICS = ("group",)

Matrices = np.ndarray | Sequence[np.ndarray]  # per item an m x n matrix: stacked (N, m, n), or a list of them


def comparison_ties(scores: Matrices, gold: Matrices) -> np.ndarray:
    """Per item (N, 4): row comparisons, of them tied, column comparisons, of them tied."""
    if isinstance(scores, np.ndarray) and isinstance(gold, np.ndarray) and scores.ndim == 3:
        S, G = scores, gold.astype(bool)
        pairs_r = G[:, :, :, None] & ~G[:, :, None, :]
        tied_r = pairs_r & (S[:, :, :, None] == S[:, :, None, :])
        pairs_c = G[:, :, None, :] & ~G[:, None, :, :]
        tied_c = pairs_c & (S[:, :, None, :] == S[:, None, :, :])
        return np.stack([pairs_r.sum((1, 2, 3)), tied_r.sum((1, 2, 3)), pairs_c.sum((1, 2, 3)),
                         tied_c.sum((1, 2, 3))], axis=1)
    out = np.zeros((len(gold), 4), dtype=np.int64)
    for i, (S, G) in enumerate(zip(scores, gold)):
        out[i] = comparison_ties(np.asarray(S, dtype=np.float64)[None], np.asarray(G, dtype=bool)[None])[0]
    return out


def any_tied(counts: np.ndarray) -> np.ndarray:
    """Per item, from :func:`comparison_ties`: whether any comparison is an exact tie."""
    return np.asarray(counts[:, 1] + counts[:, 3] > 0)


def all_tied(counts: np.ndarray) -> np.ndarray:
    """Per item, from :func:`comparison_ties`: whether every comparison tied (False for a 1 x 1 item: none)."""
    r, r_tied, c, c_tied = counts.T
    return np.asarray((r + c > 0) & (r_tied == r) & (c_tied == c))


def reasons(counts: np.ndarray, sees_images: bool = True) -> dict[str, str]:
    """{metric: why it is not available} for the metrics whose every comparison tied over ``counts``' items."""
    rows, rows_tied, cols, cols_tied = (int(x) for x in np.asarray(counts).reshape(-1, 4).sum(0))
    out: dict[str, str] = {}
    if rows and rows_tied == rows:
        why = f"all {rows} text comparisons tied (each image scored its gold and non-gold texts alike)"
        out.update({k: why for k in ROW_METRICS + BOTH_METRICS})
    if cols and cols_tied == cols:
        why = (f"all {cols} image comparisons tied: the model does not see images" if not sees_images else
               f"all {cols} image comparisons tied (each text scored alike with its gold and non-gold images)")
        out.update({k: out.get(k, why) for k in COLUMN_METRICS + BOTH_METRICS})
    return out


def blank(metrics: dict[str, Any], keys: Iterable[str], reason: str) -> None:
    """The metrics ``keys`` of ``metrics`` (and their CIs) become None, with ``reason`` as ``na_reason``."""
    ci = metrics.get("ci") or {}
    for key in keys:
        metrics[key] = None
        if key in ci:
            ci[key] = None
    metrics[NA_KEY] = reason


def mark(metrics: dict[str, Any], why: dict[str, str]) -> bool:
    """The metrics of ``why`` become not available, unless all are already; whether any of ``metrics`` is not."""
    gone = [k for k in why if k in metrics]
    if gone and not metrics.get(NA_KEY):
        by_reason: dict[str, list[str]] = {}
        for key in gone:
            by_reason.setdefault(why[key], []).append(key)
        blank(metrics, gone, "; ".join(f"{', '.join(keys)}: {reason}" for reason, keys in by_reason.items()))
    return bool(metrics.get(NA_KEY))


def _why(n_collapsed: int, n_truncated: int, limit: int | None) -> str:
    """Why ``n_collapsed`` items' texts are one input, in the words the tables and the Space print."""
    cut = f"texts identical after truncation to {limit} tokens" if limit else "texts identical after truncation"
    if n_truncated == n_collapsed:
        return cut
    same = "texts the model reads as the same token ids"
    return same if not n_truncated else f"{same} ({n_truncated} of them {cut})"


def _reason(n_tied: int, n: int, n_collapsed: int, limit: int | None, n_truncated: int) -> str:
    why = _why(n_collapsed, n_truncated, limit)
    if n_collapsed == n:
        return f"{n_tied}/{n} items tied: {why}"
    if n_collapsed:
        return f"{n_tied}/{n} items tied ({n_collapsed} with {why})"
    return f"{n_tied}/{n} items tied"


def _not_available(m: dict[str, Any], reason: str) -> None:
    """Every metric of ``m`` (and its CI) becomes None, with ``na_reason``."""
    ci = m.get("ci")
    blank(m, metric_keys(m), reason)
    if ci:
        m["ci"] = dict.fromkeys(ci)


def mark_ties(split: ScoredSplit, counts: np.ndarray, ties: str = "strict", sees_images: bool = True) -> bool:
    """Mark the ties of ``split`` (``counts``: of its items) in its metrics and ``data``; whether any became N/A."""
    n = len(split.items)
    tied = all_tied(counts)
    collapsed = np.isin(np.arange(n), split.collapsed or [])
    # a split recorded without causes: truncation, as before there were any
    truncated = collapsed.copy() if split.truncated is None else np.isin(np.arange(n), split.truncated)
    some = any_tied(counts) | collapsed
    n_tied, n_collapsed, n_truncated, n_some = int(tied.sum()), int(collapsed.sum()), int(truncated.sum()), int(some.sum())
    collapse = {"collapsed_items": n_collapsed, "text_max_length": split.text_limit} if split.collapsed is not None else {}
    warning: dict[str, str] = {}
    na = bool(n and n_tied == n)
    if na:
        _not_available(split.metrics, _reason(n_tied, n, n_collapsed, split.text_limit, n_truncated))
    elif n_some:
        counted = f"each tied comparison {COUNTED.get(ties, ties)} (ties={ties})"
        if n_collapsed:
            why = _why(n_collapsed, n_truncated, split.text_limit)
            why = why.replace("texts identical after truncation", "texts identical after the model's truncation", 1)
            text = f"{n_collapsed}/{n} items have {why}, so they tie"
            text += f"; {n_some}/{n} items hold a tie in all" if n_some > n_collapsed else ""
        else:
            text = f"{n_some}/{n} items hold a tie (a gold and a non-gold cell with exactly the same score)"
        warning = {"warning": f"warning: {split.name}: {text}; {counted}"}
    na = mark(split.metrics, reasons(counts, sees_images)) or na
    members: dict[str, list[int]] = {}  # tag -> its items' places
    for i, item in enumerate(split.items):
        for tag in item.tags:
            members.setdefault(tag, []).append(i)
    for tag, tm in (split.metrics.get("per_tag") or {}).items():
        idx = np.asarray(members.get(tag, []), dtype=int)
        if n_tied and len(idx) and tied[idx].all():
            _not_available(tm, _reason(len(idx), len(idx), int(collapsed[idx].sum()), split.text_limit,
                                       int(truncated[idx].sum())))
            na = True
        if len(idx):
            na = mark(tm, reasons(counts[idx], sees_images)) or na
    split.data["truncation"] = {"tied_items": n_tied, **collapse, **warning}
    return na
