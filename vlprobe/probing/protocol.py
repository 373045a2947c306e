"""TraVLR's protocol on frozen features: a probe per task and training modality, tested on each; transfer; curves."""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence

import numpy as np

from ..storage.feature_store import Features, take_rows
from .classifiers import Probe, fit, select
from .data import Split
from .metrics import measure
from .settings import TEXT_ONLY, TRAIN, VALIDATION, ZERO_SHOT

FeatureMap = Mapping[tuple[str, str, str], Features]


def _row(task: str, setting: str, split: str, scores: Mapping[str, object], *, classifier: str,
         **kw: object) -> dict[str, object]:
    return {"task": task, "setting": setting, "split": split, **kw, **scores, "classifier": classifier}


def _subset(n_total: int, n: int, seed: int, tag: str) -> np.ndarray:
    import hashlib

    s = int.from_bytes(hashlib.sha256(f"{seed}:{tag}".encode()).digest()[:8], "little")
    return np.random.default_rng(s).permutation(n_total)[:n]


def run_probes(features: FeatureMap, data: Mapping[str, Mapping[str, Split]], *, train_modalities: Sequence[str],
               test_modalities: Sequence[str], text_only: bool, zero_shot: bool, train_sizes: Sequence[int] | None,
               few_shot: int, classifier: str, bootstrap: int, confidence: float, seed: int, seeds: int = 1,
               progress: bool = True) -> list[dict[str, object]]:
    """Every fit and test of the protocol per seed; the full-split logistic regression (seed-free) is fitted once."""

    def one_seed(task: str, by_split: Mapping[str, Split], seed: int,
                 deterministic: dict[str, Probe]) -> list[dict[str, object]]:
        rows: list[dict[str, object]] = []
        tests = [s for s in by_split if s.startswith("test")]

        def test(probs: np.ndarray, split: str, setting: str, **kw: object) -> None:
            sc = measure(probs, by_split[split].labels, bootstrap=bootstrap, confidence=confidence, seed=seed)
            rows.append(_row(task, setting, split, sc, classifier=ZERO_SHOT if zero_shot else classifier, **kw,
                             seed=seed))

        if zero_shot:
            for m in test_modalities:
                for split in tests:
                    test(np.asarray(features[(task, split, m)]), split, ZERO_SHOT, train_modality=None, test_modality=m,
                         transfer="zero-shot (no training)", train_size=0, l2=None)
            return rows
        settings = list(train_modalities) + ([TEXT_ONLY] if text_only else [])
        ytr, yval = by_split[TRAIN].labels, by_split[VALIDATION].labels
        n_train = len(ytr)
        sizes = sorted({min(int(n), n_train) for n in (train_sizes or [])} | {n_train})
        for setting in settings:
            xtr, xval = features[(task, TRAIN, setting)], features[(task, VALIDATION, setting)]
            for n in sizes:
                if n < n_train:  # a seeded subset, in row order (a feature file is read in order)
                    idx = np.sort(_subset(n_train, n, seed, f"{task}:train"))
                    probe = select(classifier, take_rows(xtr, idx), ytr[idx], xval, yval, seed=seed)[0]
                elif classifier == "logreg":  # from zeros on the same rows: the same probe for every seed
                    if setting not in deterministic:
                        deterministic[setting] = select(classifier, xtr, ytr, xval, yval, seed=seed)[0]
                    probe = deterministic[setting]
                else:
                    probe = select(classifier, xtr, ytr, xval, yval, seed=seed)[0]
                for split in tests:
                    test(probe.proba(features[(task, split, setting)]), split, setting, train_modality=setting,
                         test_modality=setting if setting != TEXT_ONLY else "caption", transfer="same",
                         train_size=int(n), l2=probe.l2)
            if setting == TEXT_ONLY:
                continue
            for m in test_modalities:  # cross-modal transfer of the full-size probe
                if m == setting:
                    continue
                for split in tests:
                    test(probe.proba(features[(task, split, m)]), split, setting, train_modality=setting, test_modality=m,
                         transfer="zero-shot", train_size=n_train, l2=probe.l2)
                if few_shot > 0:
                    idx = np.sort(_subset(n_train, min(few_shot, n_train), seed, f"{task}:few-shot:{m}"))
                    tuned = fit(classifier, take_rows(features[(task, TRAIN, m)], idx), ytr[idx], probe.l2,
                                seed=seed, start=probe)
                    for split in tests:
                        test(tuned.proba(features[(task, split, m)]), split, setting, train_modality=setting,
                             test_modality=m, transfer=f"few-shot ({len(idx)})", train_size=n_train, l2=probe.l2)
        return rows

    rows: list[dict[str, object]] = []
    for task, by_split in data.items():
        t0 = time.perf_counter()
        deterministic: dict[str, Probe] = {}  # setting -> the full-size logreg probe, the same for every seed
        for s in range(seed, seed + seeds):
            rows += one_seed(task, by_split, s, deterministic)
        if progress and not zero_shot:
            print(f"probe: {task}: fitted and tested for {seeds} seed(s) in {time.perf_counter() - t0:.1f}s",
                  file=sys.stderr)
    return rows
