"""A metric whose every comparison tied is not available, with its reason (issue 47.3).

A rank metric compares a gold cell with a non-gold cell of the same **row** (``acc_r``, ``text``, ``set_acc``,
``set_error``, ``sentence_acc``) or **column** (``image``); ``group`` needs both. Where every comparison one of them
makes tied, across a split (or tag), its value is the tie policy's constant, not a measurement (a text-only model
ties every image comparison): it becomes None with ``na_reason`` naming it and why (``"image, group: all 40 image
comparisons tied: the model does not see images"``); the others keep their numbers."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..results import NA_KEY, ScoredSplit

ROW_METRICS = ("acc_r", "text", "set_acc", "set_error", "sentence_acc")
COLUMN_METRICS = ("image",)
BOTH_METRICS = ("group",)

Matrices = np.ndarray | Sequence[np.ndarray]  # per item an m x n matrix: stacked (N, m, n), or a list of them


def comparison_ties(scores: Matrices, gold: Matrices) -> np.ndarray:
    """Per item (N, 4): row comparisons, of them tied, column comparisons, of them tied (a gold cell against a
    non-gold cell of the same row / column)."""
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


def reasons(counts: np.ndarray, sees_images: bool = True) -> dict[str, str]:
    """{metric: why it is not available} for the metrics whose every comparison tied, from :func:`comparison_ties`
    rows summed over the items of a split or tag."""
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
    """The metrics of ``why`` present in ``metrics`` become not available, ``na_reason`` naming them (unless it
    is not available as a whole already); whether any metric of ``metrics`` is not available."""
    gone = [k for k in why if k in metrics]
    if gone and not metrics.get(NA_KEY):
        by_reason: dict[str, list[str]] = {}
        for key in gone:
            by_reason.setdefault(why[key], []).append(key)
        blank(metrics, gone, "; ".join(f"{', '.join(keys)}: {reason}" for reason, keys in by_reason.items()))
    return bool(metrics.get(NA_KEY))


def tag_members(tags: Sequence[Sequence[str]]) -> dict[str, list[int]]:
    """{tag: the places of the items that have it}."""
    members: dict[str, list[int]] = {}
    for i, item_tags in enumerate(tags):
        for tag in item_tags:
            members.setdefault(tag, []).append(i)
    return members


def mark_tied_metrics(split: ScoredSplit, counts: np.ndarray, sees_images: bool,
                      tags: Sequence[Sequence[str]]) -> bool:
    """Mark, in ``split.metrics`` and each of its per-tag results, the metrics whose every comparison tied
    (``counts``: :func:`comparison_ties` of its items); whether any of them is not available."""
    na = mark(split.metrics, reasons(counts, sees_images))
    members = tag_members(tags)
    for tag, tm in (split.metrics.get("per_tag") or {}).items():
        if members.get(tag):
            na = mark(tm, reasons(counts[members[tag]], sees_images)) or na
    return na
