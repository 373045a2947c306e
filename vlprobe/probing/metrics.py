"""Macro-F1 and its companions: values and chance from the metric on 1 x 1 items, the CI from the confusion counts."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

_VALUES = ("macro_f1", "f1_true", "f1_false", "acc")


def _cells(pred: np.ndarray, gold: np.ndarray) -> np.ndarray:
    return np.asarray(pred, bool).astype(int) * 2 + np.asarray(gold, bool).astype(int)  # 0 TN, 1 FN, 2 FP, 3 TP


def _macro_f1(tn: np.ndarray, fn: np.ndarray, fp: np.ndarray, tp: np.ndarray) -> np.ndarray:
    """Macro-F1 of confusion counts (an F1 of 0 for a class never predicted right)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        f1t = np.where(tp > 0, 2 * tp / (2 * tp + fp + fn), 0.0)
        f1f = np.where(tn > 0, 2 * tn / (2 * tn + fp + fn), 0.0)
    return (f1t + f1f) / 2


def macro_f1(pred: np.ndarray, gold: np.ndarray) -> float:
    return float(_macro_f1(*np.bincount(_cells(pred, gold), minlength=4).astype(np.float64)))


def measure(prob: np.ndarray, gold: np.ndarray, *, bootstrap: int = 1000, confidence: float = 0.95,
            seed: int = 0) -> dict[str, object]:
    """The metric's figures of ``prob > 0.5`` on 1 x 1 items, and a bootstrap CI of macro-F1 from the confusion counts
    (the metric's own was 60% of the probes' time); all-NaN ``prob`` (every query truncated away) is N/A."""
    from .. import metric

    prob = np.asarray(prob, dtype=np.float64).reshape(-1)
    gold = np.asarray(gold, dtype=bool).reshape(-1)
    lost = bool(len(prob)) and bool(np.isnan(prob).all())
    scored = np.zeros_like(prob) if lost else prob  # chance is the gold's alone: the metric's, predictions or none
    r = metric.compute(scored.reshape(-1, 1, 1), gold.reshape(-1, 1, 1), probabilities=scored.reshape(-1, 1, 1),
                       threshold=0.5, bootstrap=0)
    chance = (r.get("chance") or {}).get("macro_f1")
    if lost:
        return {**dict.fromkeys(_VALUES), "chance": chance, "ci_low": None, "ci_high": None, "n": len(gold),
                "metric": "vlprobe.probing",
                "na_reason": f"{len(prob)}/{len(prob)} test rows lost their query to the model's truncation"}
    low, high = _ci(prob > 0.5, gold, bootstrap, confidence, seed)
    return {**{k: r.get(k) for k in _VALUES}, "chance": chance, "ci_low": low,
            "ci_high": high, "n": len(gold), "metric": "vlprobe.metric (1x1 items)"}


def _ci(pred: np.ndarray, gold: np.ndarray, bootstrap: int, confidence: float,
        seed: int) -> tuple[float | None, float | None]:
    """The percentile bootstrap CI of macro-F1: each resample a multinomial draw of the 4 confusion cells' counts."""
    if bootstrap <= 0 or not len(gold):
        return None, None
    probs = np.bincount(_cells(pred, gold), minlength=4) / len(gold)
    counts = np.random.default_rng(seed).multinomial(len(gold), probs, size=bootstrap).astype(np.float64)
    alpha = (1 - confidence) / 2
    low, high = np.percentile(_macro_f1(*counts.T), [100 * alpha, 100 * (1 - alpha)])
    return float(low), float(high)


class SeedStats(NamedTuple):
    """One figure over seeds; ``identical``: every seed alike (a deterministic setting, whose sd of 0 says nothing)."""

    mean: float | None
    sd: float | None
    identical: bool


def over_seeds(values: list[float | None]) -> SeedStats:
    """The :class:`SeedStats` of one figure over seeds (n - 1 in the sd's denominator), None values left out."""
    vals = [float(v) for v in values if v is not None]
    if not vals:
        return SeedStats(None, None, False)
    arr = np.asarray(vals, dtype=np.float64)
    identical = len(arr) > 1 and bool(np.all(arr == arr[0]))
    sd = (0.0 if identical else float(arr.std(ddof=1))) if len(arr) > 1 else None
    # identical values: the value itself (3 x / 3 need not be x in floating point)
    return SeedStats(float(arr[0]) if identical else float(arr.mean()), sd, identical)
