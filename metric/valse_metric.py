# Copyright 2026 the vlprobe authors. MIT licence.
"""valse_metric: pairwise (VALSE), group (Winoground) and set (BLA) scoring of vision-and-language
models on foils, and true/false classification of 1 x 1 statements (TraVLR's macro-F1), from score
matrices and gold matrices.

This file is the single source of truth for vlprobe's metric math. It is self-contained (numpy,
datasets and evaluate only) so that it can be published alone as a Hugging Face Space and loaded
with ``evaluate.load("<org>/valse_metric")``; in a clone ``evaluate.load("valse_metric")`` (see the card).

Every item is ``m`` images x ``n`` texts with a score matrix ``S`` (higher = better match) and a
0/1 gold matrix ``G`` (``G[i, j] = 1``: text j truly describes image i). A *pair* is a gold cell and
a non-gold cell of the same row (text side) or of the same column (image side).
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections import defaultdict
from typing import Any, Sequence

import datasets
import evaluate
import numpy as np

# Every metric this module returns, in the order tables show them: the one list of their names. The
# Space beside this file reads it; vlprobe keeps a copy (vlprobe.benchmarks.METRIC_ORDER, as this file
# imports nothing of vlprobe), which its tests hold equal to this one.
METRIC_KEYS = (
    "acc_r", "text", "image", "group", "sentence_acc", "set_acc", "set_error", "auroc",
    "acc", "macro_f1", "f1_true", "f1_false", "p_c", "p_f", "min_p",
)
RANK_KEYS = ("acc_r", "text", "image", "group", "set_acc", "set_error", "sentence_acc")
PROB_KEYS = ("acc", "p_c", "p_f")  # ratios of per-item sums
F1_KEYS = ("macro_f1", "f1_true", "f1_false")  # functions of the pooled confusion matrix
# How a tie counts: the one list. The Space beside this file reads it, and vlprobe (vlprobe.metric, and
# vlprobe.benchmarks from this source, without running it).
TIE_POLICIES = ("strict", "half", "lenient")
MAX_BOOTSTRAP = 100_000  # resamples; every resample's statistics are held in memory at once
# Every gold cell is compared with every non-gold cell of its row and of its column: m * n * (m + n) comparisons for
# an m x n item, made at once as a few boolean arrays of that size. Items are processed in blocks of at most this
# many comparisons (bounded memory, about 1 GiB at the peak); one item larger than this is refused, naming what it
# would need (a 1 x 100,000 item: 10,000,100,000 comparisons, 9.3 GiB per array).
MAX_COMPARISONS = 1 << 27
# The bootstrap's work is resamples x the cells it resamples (each tag's cells again): about 1e8 takes ten seconds on
# one core. More is refused with the resamples that would fit, so a run never spends minutes on its intervals.
MAX_BOOTSTRAP_WORK = 200_000_000
# A value class with more tied cells than this makes ties="half" enumerate too many orderings.
_MAX_TIED_CELLS = 16

_CITATION = """\
@inproceedings{parcalabescu-etal-2022-valse,
  title = {{VALSE}: A Task-Independent Benchmark for Vision and Language Models Centered on Linguistic Phenomena},
  author = {Parcalabescu, Letitia and Cafagna, Michele and Muradjan, Lilitta and Frank, Anette and Calixto, Iacer and Gatt, Albert},
  booktitle = {Proceedings of the 60th Annual Meeting of the Association for Computational Linguistics (ACL)},
  year = {2022},
  pages = {8253--8280},
  url = {https://aclanthology.org/2022.acl-long.567}
}
@inproceedings{thrush2022winoground,
  title = {Winoground: Probing Vision and Language Models for Visio-Linguistic Compositionality},
  author = {Thrush, Tristan and Jiang, Ryan and Bartolo, Max and Singh, Amanpreet and Williams, Adina and Kiela, Douwe and Ross, Candace},
  booktitle = {Proceedings of the IEEE/CVF Conference on Computer Vision and Pattern Recognition (CVPR)},
  year = {2022},
  pages = {5238--5248}
}
@inproceedings{chen-etal-2023-bla,
  title = {The {BLA} Benchmark: Investigating Basic Language Abilities of Pre-Trained Multimodal Models},
  author = {Chen, Xinyi and Fern{\\'a}ndez, Raquel and Pezzelle, Sandro},
  booktitle = {Proceedings of the 2023 Conference on Empirical Methods in Natural Language Processing (EMNLP)},
  year = {2023},
  url = {https://aclanthology.org/2023.emnlp-main.356}
}@inproceedings{chow-etal-2023-travlr,
  title = {{TraVLR}: Now You See It, Now You Don't! A Bimodal Dataset for Evaluating Visio-Linguistic Reasoning},
  author = {Chow, Keng Ji and Tan, Samson and Kan, Min-Yen},
  booktitle = {Proceedings of the 17th Conference of the European Chapter of the Association for Computational Linguistics (EACL)},
  year = {2023},
  url = {https://aclanthology.org/2023.eacl-main.242}
}
"""

_DESCRIPTION = """\
Scores vision-and-language models on minimally edited texts (foils). One item is m images x n texts
with a score matrix and a 0/1 gold matrix; one call mixes any shapes. Pairwise ranking accuracy
(VALSE acc_r), Winoground's text / image / group scores, BLA's set accuracy, set error and sentence
accuracy, AUROC, and, given match probabilities, VALSE's thresholded acc, p_c, p_f and min(p_c, p_f);
for 1 x 1 true/false statements (TraVLR) the macro-F1 and the F1 of each class.
Every result reports the number of tied comparisons, the exact chance level of each metric for the
given item shapes, optional per-tag results and percentile-bootstrap confidence intervals over items.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: per item an m x n score matrix (nested lists or arrays; items may differ in shape),
        higher meaning a better image-text match. Same-shape items may be stacked as one numpy array
        of shape (N, m, n): the fast path for large runs.
    references: per item the m x n gold matrix of 0/1 (1: text j describes image i); at least one 1,
        except for a 1 x 1 item (one image, one statement), whose gold is [[1]] (true) or [[0]] (false).
    ties: "strict" (default), "half" or "lenient": how a tie between a gold and a non-gold cell counts.
        "strict" resolves every tie against the model (the VALSE and Winoground reference codes: a tie
        is wrong); "lenient" resolves every tie in the model's favour (the VALSE paper's formula,
        phi(i,f) <= phi(i,c)); "half" is the exact expected value when every tie is broken by an
        independent, infinitesimally small random perturbation of the scores. AUROC always counts a
        tie 1/2.
    probabilities: optional, per item m x n match probabilities in [0, 1] (models with a matching
        head); adds the thresholded metrics acc, p_c, p_f, min_p, f1_true, f1_false, macro_f1.
    threshold: a cell is called true when its probability > threshold: a gold cell is right when
        called true, a non-gold cell when not (default 0.5, as VALSE's LXMERT code). Without
        probabilities, 1 x 1 items (which cannot be ranked) are classified by their scores against
        threshold, which must then be given (e.g. 0.0 for a probe's logits); other items never are.
    tags: optional, per item a list of strings; adds "per_tag" with the same keys for each tag.
    bootstrap: number of percentile-bootstrap resamples over items (default 0: no intervals).
    confidence: the intervals' confidence level (default 0.95).
    seed: seed of the bootstrap (same seed, same intervals).
Returns:
    acc_r: pooled over all gold/non-gold pairs of all rows, the share where the gold cell scores higher.
    text: share of items where, in every row with both kinds of cell, every gold cell beats every
        non-gold cell. image: the same over columns (items with m >= 2). group: both (Winoground).
    set_acc: share of rows (with both kinds of cell) where every gold cell beats every non-gold cell;
        set_error: share of rows where every non-gold cell beats every gold cell; sentence_acc: share
        of cells classified right when the top-k cells of each row (k = its gold count) are taken as
        true (BLA).
    auroc: probability that a random gold cell outscores a random non-gold cell, over all cells.
    acc, p_c, p_f, min_p: with probabilities, share of all cells / gold cells / non-gold cells right,
        and min(p_c, p_f).
    f1_true, f1_false, macro_f1: F1 of the true class (gold cells) and of the false class (non-gold
        cells) over the classified cells, 2 TP / (2 TP + FP + FN) for each, and their mean (TraVLR's
        macro-F1). A class's F1 is present when the class has a gold cell; macro_f1 when both do.
    scores: {"min", "max": the lowest and highest score, "n_negative": the items with a score below 0} (BLA's
        CLIP script ranks 2.5 * max(cosine, 0): where cosines are negative its figures can differ).
    n_items, n_ties (tied gold vs non-gold comparisons, rows and columns), chance (each metric's
        exact expected value under random scores for these item shapes; for the thresholded metrics,
        when each classified cell is called true independently with probability 1 - threshold, i.e.
        probabilities uniform on [0, 1], or 1/2, a fair coin, when scores are thresholded), support (how many units each
        metric averages over), per_tag (with tags), ci (with bootstrap > 0): {metric: [low, high]}.
    A metric is present only when it is defined for the given items.
Examples:
    VALSE-shaped items (1 image; caption, then foil). A tie counts as wrong by default:

    >>> import evaluate
    >>> valse = evaluate.load("metric/valse_metric.py")  # from the Hub: evaluate.load("<org>/valse_metric")
    >>> r = valse.compute(predictions=[[[0.9, 0.2]], [[0.3, 0.7]], [[0.5, 0.5]]],
    ...                   references=[[[1, 0]], [[1, 0]], [[1, 0]]])
    >>> round(r["acc_r"], 4), r["n_ties"], r["chance"]["acc_r"]
    (0.3333, 1, 0.5)
    >>> round(valse.compute(predictions=[[[0.9, 0.2]], [[0.3, 0.7]], [[0.5, 0.5]]],
    ...                     references=[[[1, 0]], [[1, 0]], [[1, 0]]], ties="half")["acc_r"], 4)
    0.5

    A Winoground-shaped item (2 images x 2 captions, caption i describes image i):

    >>> r = valse.compute(predictions=[[[0.30, 0.25], [0.28, 0.31]]], references=[[[1, 0], [0, 1]]])
    >>> r["text"], r["image"], r["group"]
    (1.0, 1.0, 1.0)
    >>> round(r["chance"]["group"], 4)
    0.1667

    A BLA-shaped item (1 image; two true captions, then two distractors):

    >>> r = valse.compute(predictions=[[[0.8, 0.3, 0.5, 0.1]]], references=[[[1, 1, 0, 0]]])
    >>> r["set_acc"], r["set_error"], r["sentence_acc"]
    (0.0, 0.0, 0.5)

    TraVLR-shaped items (1 image x 1 statement, gold [[1]] true or [[0]] false), classified by a
    probability: called T, T, F, F, T against gold T, T, T, F, F.

    >>> p = [[[0.9]], [[0.6]], [[0.3]], [[0.2]], [[0.7]]]
    >>> r = valse.compute(predictions=p, references=[[[1]], [[1]], [[1]], [[0]], [[0]]], probabilities=p)
    >>> round(r["f1_true"], 4), round(r["f1_false"], 4), round(r["macro_f1"], 4), r["acc"]
    (0.6667, 0.5, 0.5833, 0.6)
    >>> round(r["chance"]["macro_f1"], 4), round(r["chance"]["min_p"], 4)
    (0.4664, 0.3125)
"""


# ============================================================================================
# Input checking
# ============================================================================================

def _tie_weight(ties: str) -> float:
    if ties not in TIE_POLICIES:
        raise ValueError(f"unknown ties={ties!r}; choose one of {', '.join(TIE_POLICIES)}")
    return {"strict": 0.0, "half": 0.5, "lenient": 1.0}[ties]


def _check_form(values: Any, name: str) -> None:
    """Refuse what is no list of m x n matrices, before anything converts it: a string, a single number, an array of
    another number of dimensions (a 4-D array), an item that is not 2-D."""
    if isinstance(values, (str, bytes)):
        raise ValueError(f"{name}: got a string ({values[:40]!r}); pass one m x n matrix of numbers per item")
    if isinstance(values, np.ndarray) or np.isscalar(values) or not hasattr(values, "__iter__"):
        arr = np.asarray(values) if np.isscalar(values) or isinstance(values, np.ndarray) else None
        if arr is None or arr.ndim == 0:
            raise ValueError(f"{name}={values!r}: a single {type(values).__name__}; pass one m x n matrix of numbers "
                             "per item (a list of matrices, or an (N, m, n) array)")
        if arr.ndim != 3:
            raise ValueError(f"{name}: a stacked array must have shape (N, m, n), got {arr.shape}"
                             + ("; wrap a single m x n item as [matrix]" if arr.ndim == 2 else ""))
        return
    for i, v in enumerate(values if isinstance(values, (list, tuple)) else ()):
        try:
            shape = np.shape(v) if not isinstance(v, (str, bytes)) else ()
        except ValueError:  # ragged rows: named later
            continue
        if len(shape) != 2:
            raise ValueError(f"{name}[{i}]: must be an m x n matrix (a list of rows), got {len(shape)} dimension(s)"
                             + ("; wrap a single row as [[...]]" if len(shape) < 2 else ""))


def _check_size(shape: Sequence[int], where: str) -> None:
    """Refuse an m x n item whose comparisons (see :data:`MAX_COMPARISONS`) do not fit, naming what it would need."""
    m, n = int(shape[-2]), int(shape[-1])
    need = m * n * (m + n)
    if need > MAX_COMPARISONS:
        raise ValueError(f"{where}: a {m:,} x {n:,} item compares every gold cell with every other cell of its row and "
                         f"column, {need:,} comparisons (about {need / (1 << 30):.1f} GiB per comparison array); the "
                         f"metric takes items of at most {MAX_COMPARISONS:,} (m * n * (m + n): e.g. 1 x "
                         f"{math.isqrt(MAX_COMPARISONS) - 1:,})")


def _as_items(values: Any, name: str, n_expected: int | None = None) -> list[np.ndarray] | np.ndarray:
    """A (N, m, n) float array when stacked, else a list of 2-D arrays; shapes checked per item."""
    _check_form(values, name)
    if isinstance(values, np.ndarray) and values.ndim == 3:
        arr = values
        _check_numeric(arr, name)
        if 0 in arr.shape[1:]:
            raise ValueError(f"{name}: a stacked array of shape {arr.shape} holds empty items; "
                             f"each item must be m x n with m, n >= 1")
        _check_size(arr.shape, f"{name}[0]")
    else:
        if isinstance(values, np.ndarray) and values.ndim != 3:
            raise ValueError(f"{name}: a stacked array must have shape (N, m, n), got {values.shape}")
        arr = []
        for i, v in enumerate(values):
            try:
                raw = np.asarray(v)
            except ValueError as err:  # ragged rows
                raise ValueError(f"{name}[{i}]: must be an m x n matrix of numbers ({err})") from None
            _check_numeric(raw, f"{name}[{i}]")
            try:
                arr.append(raw.astype(np.float64))
            except (TypeError, ValueError) as err:
                raise ValueError(f"{name}[{i}]: must be an m x n matrix of numbers ({err})") from None
        for i, a in enumerate(arr):
            if a.ndim != 2:
                raise ValueError(
                    f"{name}[{i}]: must be an m x n matrix (a list of rows), got {a.ndim} dimension(s); "
                    f"wrap a single row as [[...]]"
                )
            if a.size == 0:
                raise ValueError(f"{name}[{i}]: empty matrix")
            _check_size(a.shape, f"{name}[{i}]")
    n = len(arr)
    if n == 0:
        raise ValueError(f"{name}: no items")
    if n_expected is not None and n != n_expected:
        raise ValueError(f"{name}: {n} items, but predictions has {n_expected}")
    return arr


def _check_numeric(arr: np.ndarray, name: str) -> None:
    """Refuse strings ("1", "0.9") and other non-numbers, which numpy would silently convert."""
    kind = arr.dtype.kind
    if kind in "biuf":
        return
    if kind == "O":
        bad = next((x for x in arr.ravel() if isinstance(x, (str, bytes)) or x is None), 0)
        if bad is None or isinstance(bad, (str, bytes)):
            raise ValueError(f"{name}: must hold numbers, got {bad!r}")
        return
    example = arr.ravel()[0].tolist() if arr.size else ""
    what = "strings" if kind in "USa" else f"values of type {arr.dtype}"
    raise ValueError(f"{name}: must hold numbers, got {what} (e.g. {example!r}); convert them first")


def _refuse_strings(values: Any, name: str) -> None:
    """The string check of :func:`_as_items`, for the evaluate path (before Arrow converts them)."""
    if values is None:
        return
    _check_form(values, name)
    if isinstance(values, np.ndarray):
        _check_numeric(values, name)
        return
    for i, v in enumerate(values):
        try:
            raw = np.asarray(v)
        except ValueError:
            continue  # ragged: the metric names it later
        _check_numeric(raw, f"{name}[{i}]")


def _refuse_non_binary(values: Any, name: str) -> None:
    """Gold cells other than 0 and 1 (0.5, 2, -1), refused before Arrow would turn 0.5 into 0."""
    if values is None or isinstance(values, (str, bytes)) or np.isscalar(values):
        return
    if isinstance(values, np.ndarray) and values.ndim == 3 and values.dtype.kind in "biuf":  # at once, not per item
        odd = np.isfinite(values) & (values != 0) & (values != 1)
        if odd.any():
            i = int(np.flatnonzero(odd.reshape(len(values), -1).any(1))[0])
            raise ValueError(f"item {i}: gold matrix must hold only 0 and 1, got {float(values[odd][0]):g} (in {name})")
        return
    for i, v in enumerate(values if not isinstance(values, np.ndarray) else list(values)):
        try:
            raw = np.asarray(v, dtype=np.float64)
        except (ValueError, TypeError):
            continue  # ragged or not numbers: named later
        odd = np.isfinite(raw) & ~np.isin(raw, (0.0, 1.0))  # None and NaN: the numeric check names them
        if odd.any():
            bad = raw[odd].flat[0]
            raise ValueError(f"item {i}: gold matrix must hold only 0 and 1, got {float(bad):g} (in {name})")


def _whole(value: Any, name: str, low: int, high: int | None = None) -> int:
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise ValueError(f"{name}={value!r}: must be a whole number (an int, not {type(value).__name__})")
    if value < low or (high is not None and value > high):
        span = f"from {low} to {high:,}" if high is not None else f"{low} or more"
        raise ValueError(f"{name}={value!r}: must be {span}")
    return int(value)


def _check_bootstrap_work(bootstrap: int, groups: dict, tag_lists: list[list[str]] | None, N: int) -> None:
    """Refuse a bootstrap whose work (:data:`MAX_BOOTSTRAP_WORK`) would take minutes, with the resamples that fit."""
    cells = np.zeros(N)
    for shape, (idx, *_rest) in groups.items():
        cells[idx] = shape[0] * shape[1]
    per = float((cells * (1 + np.array([len(set(t)) for t in tag_lists]))).sum() if tag_lists else cells.sum())
    if bootstrap > bootstrap_that_fits(per):
        tagged = ", and each tag's cells again" if tag_lists else ""
        raise ValueError(f"bootstrap={bootstrap:,}: resampling {N:,} items ({int(cells.sum()):,} cells{tagged}) "
                         f"{bootstrap:,} times is {bootstrap * per:,.0f} cell resamples, more than the "
                         f"{MAX_BOOTSTRAP_WORK:,} the metric does (about a minute on one core); use "
                         f"bootstrap={bootstrap_that_fits(per):,} or fewer")


def bootstrap_that_fits(cells: float) -> int:
    """The most resamples (at least 1) of ``cells`` cells within :data:`MAX_BOOTSTRAP_WORK`: ``vlprobe evaluate``
    asks it before scoring, so a run is not refused only once its scores are in."""
    return max(1, int(MAX_BOOTSTRAP_WORK // max(cells, 1)))


def _first_bad(mask_per_item: np.ndarray) -> int:
    return int(np.flatnonzero(mask_per_item)[0])


def _validate(S, G, P):
    """Check and normalise. Returns lists of per-shape groups: {shape: (indices, S, G, P)}."""
    stacked = isinstance(S, np.ndarray) and isinstance(G, np.ndarray) and S.shape == G.shape and (
        P is None or (isinstance(P, np.ndarray) and P.shape == S.shape))
    if stacked:
        groups = {S.shape[1:]: (np.arange(S.shape[0]), S.astype(np.float64, copy=False), G, P)}
    else:
        S_list = list(S) if isinstance(S, np.ndarray) else S
        G_list = list(G) if isinstance(G, np.ndarray) else G
        P_list = None if P is None else (list(P) if isinstance(P, np.ndarray) else P)
        by_shape: dict[tuple, list[int]] = defaultdict(list)
        S_list = [np.asarray(s, dtype=np.float64) for s in S_list]
        for i, (s, g) in enumerate(zip(S_list, G_list)):
            if isinstance(g, np.ndarray) and g.dtype.kind not in "biuf":
                _check_numeric(g, f"references[{i}]")
            if s.shape != np.shape(g):
                raise ValueError(f"item {i}: score matrix is {s.shape[0]}x{s.shape[1]} but gold matrix is "
                                 f"{'x'.join(map(str, np.shape(g)))}")
            if P_list is not None and np.shape(P_list[i]) != s.shape:
                raise ValueError(f"item {i}: probability matrix has shape {np.shape(P_list[i])}, "
                                 f"score matrix {s.shape}")
            by_shape[s.shape].append(i)
        groups = {}
        for shape, idx in by_shape.items():
            groups[shape] = (
                np.asarray(idx),
                np.stack([S_list[i] for i in idx]),
                np.stack([np.asarray(G_list[i]) for i in idx]),
                None if P_list is None else np.stack([np.asarray(P_list[i], dtype=np.float64) for i in idx]),
            )
    out = {}
    for shape, (idx, s, g, p) in groups.items():
        bad = ~np.isfinite(s).reshape(len(idx), -1).all(1)
        if bad.any():
            i = idx[_first_bad(bad)]
            raise ValueError(f"item {i}: score matrix holds NaN or infinite values")
        g_num = np.asarray(g)
        _check_numeric(g_num, "references")
        if g_num.dtype != bool:
            ok = np.isin(g_num, (0, 1)).reshape(len(idx), -1).all(1)
            if not ok.all():
                i = idx[_first_bad(~ok)]
                raise ValueError(f"item {i}: gold matrix must hold only 0 and 1")
        g_bool = g_num.astype(bool)
        none = ~g_bool.reshape(len(idx), -1).any(1)
        if none.any() and shape != (1, 1):  # a 1 x 1 item may be a false statement: gold [[0]]
            i = idx[_first_bad(none)]
            raise ValueError(f"item {i}: gold matrix has no gold cell (at least one text must describe an image; "
                             f"only a 1 x 1 true/false item may have gold [[0]])")
        if p is not None:
            _check_numeric(np.asarray(p), "probabilities")
            p = np.asarray(p, dtype=np.float64)
            bad = ~(np.isfinite(p) & (p >= 0) & (p <= 1)).reshape(len(idx), -1).all(1)
            if bad.any():
                i = idx[_first_bad(bad)]
                raise ValueError(f"item {i}: probabilities must lie in [0, 1] (and not be NaN)")
        out[shape] = (idx, s, g_bool, p)
    return out


def _as_tags(tags: Any, n: int) -> list[list[str]] | None:
    if tags is None:
        return None
    if isinstance(tags, (str, bytes)):
        raise ValueError(f"tags: got the string {tags[:40]!r}; pass one list of tags per item, e.g. "
                         f"[['instrument=existence'], ...] (a string would become one tag per character)")
    tags = list(tags)
    if len(tags) != n:
        raise ValueError(f"tags: {len(tags)} entries, but there are {n} items")
    out = []
    for i, t in enumerate(tags):
        if t is None:
            out.append([])
        elif isinstance(t, str):
            out.append([t])
        else:
            try:
                given = list(t)
            except TypeError:
                raise ValueError(f"tags[{i}]: must be a list of strings, got {t!r}") from None
            if not all(isinstance(x, str) for x in given):  # None or 3 would become the tag "None" or "3"
                raise ValueError(f"tags[{i}]: must be a list of strings, got {given!r:.80}")
            out.append(given)
    return out


# ============================================================================================
# Per-item quantities, vectorised over same-shape items
# ============================================================================================

def _inv_binom_table(n: int) -> np.ndarray:
    """T[a, b] = 1 / C(a + b, a): the chance that a uniformly random order of a gold and b non-gold
    tied cells puts every gold cell first."""
    t = np.zeros((n + 1, n + 1))
    for a in range(n + 1):
        for b in range(n + 1):
            t[a, b] = 1.0 / math.comb(a + b, a)
    return t


def _count_pairs(mask: np.ndarray) -> np.ndarray:
    """Sum a boolean (N, r, c, c) array over its last two axes, in the narrowest safe integer type
    (summing bools as int64 dominates the run time of a million items otherwise)."""
    c = mask.shape[-1]
    dtype = np.uint8 if c * c < 256 else np.int64
    return np.add.reduce(mask.reshape(mask.shape[0], mask.shape[1], -1).view(np.uint8), axis=2,
                         dtype=dtype).astype(np.int64)


def _row_sets(S: np.ndarray, G: np.ndarray, w: float):
    """Per row of (N, r, c) arrays: pair counts, wins, ties, and the set events under the policy.

    Returns has_both (N, r), pairs, wins, ties (N, r), set_ok (N, r) in [0, 1] (every gold cell
    above every non-gold cell), set_bad (N, r) (every non-gold cell above every gold cell), and
    (set_ok under strict, set_ok under lenient) as booleans.
    """
    pm = G[:, :, :, None] & ~G[:, :, None, :]
    gt = S[:, :, :, None] > S[:, :, None, :]
    eq = S[:, :, :, None] == S[:, :, None, :]
    pairs = G.sum(2) * (~G).sum(2)
    wins = _count_pairs(pm & gt)
    ties = _count_pairs(pm & eq)
    has_both = pairs > 0

    ok_strict = has_both & (wins == pairs)
    ok_lenient = has_both & (wins + ties == pairs)
    bad_strict = has_both & (wins == 0)  # no gold cell strictly above a non-gold one: ties go against
    bad_lenient = has_both & (wins == 0) & (ties == 0)
    bounds = (ok_strict, ok_lenient)
    if w == 0.0:
        return has_both, pairs, wins, ties, ok_strict.astype(float), bad_strict.astype(float), bounds
    if w == 1.0:
        return has_both, pairs, wins, ties, ok_lenient.astype(float), bad_lenient.astype(float), bounds

    table = _inv_binom_table(S.shape[2])
    inf = np.inf
    min_gold = np.where(G, S, inf).min(2)
    max_non = np.where(~G, S, -inf).max(2)
    a = (G & (S == min_gold[..., None])).sum(2)
    b = (~G & (S == max_non[..., None])).sum(2)
    ok = np.where(ok_strict, 1.0, np.where(ok_lenient, table[a, b], 0.0))
    max_gold = np.where(G, S, -inf).max(2)
    min_non = np.where(~G, S, inf).min(2)
    a2 = (G & (S == max_gold[..., None])).sum(2)
    b2 = (~G & (S == min_non[..., None])).sum(2)
    bad = np.where(bad_lenient, 1.0, np.where(bad_strict, table[a2, b2], 0.0))
    return has_both, pairs, wins, ties, ok, bad, bounds


def _sentence(S: np.ndarray, G: np.ndarray, has_both: np.ndarray, ties: str) -> np.ndarray:
    """Cells classified right per row (N, r) when the top-k cells (k = gold count) are called true."""
    n = S.shape[2]
    k = G.sum(2)
    desc = -np.sort(-S, axis=2)
    kk = np.clip(k - 1, 0, n - 1)
    t = np.take_along_axis(desc, kk[..., None], axis=2)[..., 0]
    above = (S > t[..., None]).sum(2)
    at = S == t[..., None]
    tied = at.sum(2)
    gold_at = (G & at).sum(2)
    gold_above = (G & (S > t[..., None])).sum(2)
    r = k - above
    if ties == "strict":
        j = gold_above + np.maximum(0, r - (tied - gold_at))
    elif ties == "lenient":
        j = gold_above + np.minimum(r, gold_at)
    else:
        j = gold_above + r * gold_at / tied
    correct = n - 2 * k + 2 * j
    return np.where(has_both, correct, 0.0)


def _count_linear_extensions(n_nodes: int, preds: list[int]) -> int:
    """Orders of n_nodes in which every node comes after all nodes in its predecessor bit mask."""
    dp = [0] * (1 << n_nodes)
    dp[0] = 1
    for mask in range(1 << n_nodes):
        ways = dp[mask]
        if not ways:
            continue
        for v in range(n_nodes):
            bit = 1 << v
            if not mask & bit and preds[v] & mask == preds[v]:
                dp[mask | bit] += ways
    return dp[-1]


def _group_probability(S: np.ndarray, G: np.ndarray) -> float:
    """P(every gold cell beats every non-gold cell in its row and in its column) when ties are
    broken by independent infinitesimal noise: exact, by counting linear extensions of the tie
    constraints within each class of equal scores."""
    m, n = S.shape
    cells = [(i, j) for i in range(m) for j in range(n)]
    constraints = []  # (winner, loser) cell indices with equal scores
    for i in range(m):
        for j in range(n):
            if not G[i, j]:
                continue
            rivals = [(i, jj) for jj in range(n) if not G[i, jj]] + [(ii, j) for ii in range(m) if not G[ii, j]]
            for (ii, jj) in rivals:
                if S[i, j] < S[ii, jj]:
                    return 0.0
                if S[i, j] == S[ii, jj]:
                    constraints.append((i * n + j, ii * n + jj))
    if not constraints:
        return 1.0
    by_value: dict[float, list[tuple[int, int]]] = defaultdict(list)
    for x, y in constraints:
        by_value[float(S[cells[x]])].append((x, y))
    prob = 1.0
    for edges in by_value.values():
        nodes = sorted({v for e in edges for v in e})
        if len(nodes) > _MAX_TIED_CELLS:
            raise ValueError(
                f"ties='half' would enumerate orderings of {len(nodes)} tied cells in one item; "
                f"use ties='strict' or 'lenient' for such items"
            )
        pos = {v: k for k, v in enumerate(nodes)}
        preds = [0] * len(nodes)
        for x, y in edges:  # x must come before (above) y
            preds[pos[y]] |= 1 << pos[x]
        prob *= _count_linear_extensions(len(nodes), preds) / math.factorial(len(nodes))
        if prob == 0.0:
            break
    return prob


def _group_probability_or_nan(S: np.ndarray, G: np.ndarray) -> float:
    try:
        return _group_probability(S, G)
    except ValueError:
        return float("nan")


def _group_half(S: np.ndarray, G: np.ndarray, need: np.ndarray, for_chance: bool = False) -> np.ndarray:
    """Exact "half" group values for the items in ``need``, computed once per distinct pattern of
    (gold matrix, weak order of the cells) and shared by every item with that pattern."""
    out = np.zeros(len(S))
    idx = np.flatnonzero(need)
    if idx.size == 0:
        return out
    N, m, n = S[idx].shape
    flat = S[idx].reshape(len(idx), -1)
    below = (flat[:, :, None] > flat[:, None, :]).sum(2)  # canonical form of the weak order
    key = np.concatenate([below, G[idx].reshape(len(idx), -1).astype(np.int64)], axis=1)
    base = m * n + 1
    if key.shape[1] * math.log2(base) < 62:  # pack each key into one integer: unique on 1-D is far faster
        packed = key @ (base ** np.arange(key.shape[1], dtype=np.int64))
        _, first, inverse = np.unique(packed, return_index=True, return_inverse=True)
        uniq = key[first]
    else:
        uniq, inverse = np.unique(key, axis=0, return_inverse=True)
    # For chance levels, a shape too large to enumerate gets NaN (its chance is then left out).
    prob = _group_probability_or_nan if for_chance else _group_probability
    values = np.array([
        prob(u[: m * n].reshape(m, n).astype(float), u[m * n:].reshape(m, n).astype(bool)) for u in uniq
    ])
    out[idx] = values[inverse.ravel()]
    return out


def _per_item(S: np.ndarray, G: np.ndarray, P: np.ndarray | None, ties: str, threshold: float | None,
              for_chance: bool = False) -> dict:
    """Numerators and denominators per item (N,) of every metric, for one block of same-shape items."""
    w = _tie_weight(ties)
    N, m, n = S.shape
    r_both, r_pairs, r_wins, r_ties, r_ok, r_bad, r_bounds = _row_sets(S, G, w)
    St, Gt = S.transpose(0, 2, 1), G.transpose(0, 2, 1)
    c_both, c_pairs, c_wins, c_ties, c_ok, c_bad, c_bounds = _row_sets(St, Gt, w)

    q: dict[str, np.ndarray] = {}
    q["acc_r_num"] = (r_wins + w * r_ties).sum(1).astype(float)
    q["acc_r_den"] = r_pairs.sum(1).astype(float)
    q["n_ties"] = (r_ties.sum(1) + c_ties.sum(1)).astype(float)
    flat = S.reshape(N, -1)
    q["n_negative"] = (flat < 0).any(1).astype(float)
    q["score_min"], q["score_max"] = flat.min(1).astype(float), flat.max(1).astype(float)

    text_def = r_both.any(1)
    text_val = np.where(r_both, r_ok, 1.0).prod(1)
    image_def = c_both.any(1)
    image_val = np.where(c_both, c_ok, 1.0).prod(1)
    q["text_num"] = np.where(text_def, text_val, 0.0)
    q["text_den"] = text_def.astype(float)
    q["image_num"] = np.where(image_def, image_val, 0.0)
    q["image_den"] = image_def.astype(float)

    group_def = text_def & image_def
    if ties == "half":
        # Text and image events share cells, so their tie-breaks are not independent: exact
        # enumeration where strict and lenient disagree, the common case costs nothing.
        strict = np.where(r_both, r_bounds[0], True).all(1) & np.where(c_both, c_bounds[0], True).all(1)
        lenient = np.where(r_both, r_bounds[1], True).all(1) & np.where(c_both, c_bounds[1], True).all(1)
        strict, lenient = strict.astype(float), lenient.astype(float)
        group_val = np.where(strict == lenient, strict, 0.0)
        group_val += _group_half(S, G, group_def & (strict != lenient), for_chance)
    else:
        group_val = text_val * image_val
    q["group_num"] = np.where(group_def, group_val, 0.0)
    q["group_den"] = group_def.astype(float)

    q["set_acc_num"] = np.where(r_both, r_ok, 0.0).sum(1)
    q["set_error_num"] = np.where(r_both, r_bad, 0.0).sum(1)
    q["set_acc_den"] = q["set_error_den"] = r_both.sum(1).astype(float)
    q["sentence_acc_num"] = _sentence(S, G, r_both, ties).sum(1)
    q["sentence_acc_den"] = (r_both.sum(1) * n).astype(float)

    if P is not None:
        right_gold = (G & (P > threshold)).reshape(N, -1).sum(1)
        right_non = (~G & (P <= threshold)).reshape(N, -1).sum(1)
        q["p_c_num"], q["p_c_den"] = right_gold.astype(float), G.reshape(N, -1).sum(1).astype(float)
        q["p_f_num"], q["p_f_den"] = right_non.astype(float), (~G).reshape(N, -1).sum(1).astype(float)
        q["acc_num"], q["acc_den"] = (right_gold + right_non).astype(float), float(m * n) * np.ones(N)
    return q


def _per_item_in_blocks(S: np.ndarray, G: np.ndarray, P: np.ndarray | None, ties: str, threshold: float | None,
                        for_chance: bool = False) -> dict:
    """:func:`_per_item` over blocks of items of at most :data:`MAX_COMPARISONS` comparisons: bounded memory."""
    N, m, n = S.shape
    step = max(1, MAX_COMPARISONS // (m * n * (m + n)))
    if N <= step:
        return _per_item(S, G, P, ties, threshold, for_chance)
    parts = [_per_item(S[lo:lo + step], G[lo:lo + step], None if P is None else P[lo:lo + step], ties, threshold,
                       for_chance) for lo in range(0, N, step)]
    return {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}


# ============================================================================================
# AUROC (Mann-Whitney, ties 1/2), plain and weighted for the bootstrap
# ============================================================================================

class _AurocCells:
    """All cells of all items, sorted once; AUROC of any weighting of items in O(cells)."""

    def __init__(self, scores: np.ndarray, gold: np.ndarray, item: np.ndarray):
        self.values, self.group = np.unique(scores, return_inverse=True)
        self.group = self.group.ravel()
        self.gold = gold.astype(float)
        self.non = 1.0 - self.gold
        self.item = item
        self.n_groups = len(self.values)

    def auroc(self, item_weights: np.ndarray | None = None, cell_mask: np.ndarray | None = None) -> float:
        w = np.ones(len(self.group)) if item_weights is None else item_weights[self.item]
        if cell_mask is not None:
            w = w * cell_mask
        gw = np.bincount(self.group, weights=w * self.gold, minlength=self.n_groups)
        fw = np.bincount(self.group, weights=w * self.non, minlength=self.n_groups)
        total_g, total_f = gw.sum(), fw.sum()
        if total_g == 0 or total_f == 0:
            return float("nan")
        below = np.cumsum(fw) - fw
        return float((gw * (below + 0.5 * fw)).sum() / (total_g * total_f))

    def auroc_resampled(self, counts: np.ndarray, item_idx: np.ndarray) -> np.ndarray:
        """AUROC of each bootstrap resample at once: row ``r`` of ``counts`` (resamples x items) weights the
        cells of item ``item_idx[j]`` by ``counts[r, j]`` (every other cell by 0). Bit for bit
        ``auroc(item_weights=...)`` row by row (the same sums in the same order: a cell of weight 0 adds
        exactly 0.0), in a few array operations instead of one pass per resample."""
        mine = np.isin(self.item, item_idx)
        column = np.searchsorted(item_idx, self.item[mine])  # item_idx is sorted
        group, gold, non = self.group[mine], self.gold[mine], self.non[mine]
        n_groups = self.n_groups
        out = np.empty(len(counts))
        step = max(1, 4_000_000 // max(n_groups, len(group), 1))  # bounds the (resamples x groups) work arrays
        for start in range(0, len(counts), step):
            w = counts[start:start + step][:, column]
            b = len(w)
            slot = (group[None, :] + n_groups * np.arange(b)[:, None]).ravel()
            gw = np.bincount(slot, weights=(w * gold).ravel(), minlength=b * n_groups).reshape(b, n_groups)
            fw = np.bincount(slot, weights=(w * non).ravel(), minlength=b * n_groups).reshape(b, n_groups)
            total_g, total_f = gw.sum(axis=1), fw.sum(axis=1)
            below = np.cumsum(fw, axis=1) - fw
            with np.errstate(invalid="ignore", divide="ignore"):
                value = (gw * (below + 0.5 * fw)).sum(axis=1) / (total_g * total_f)
            value[(total_g == 0) | (total_f == 0)] = np.nan
            out[start:start + b] = value
        return out


# ============================================================================================
# Aggregation
# ============================================================================================

def _binomial_pmf(n: int, p: float) -> np.ndarray:
    """P(K = k), k = 0..n, for K ~ Binomial(n, p), in log space (exact up to rounding for any n)."""
    out = np.zeros(n + 1)
    if p <= 0.0:
        out[0] = 1.0
        return out
    if p >= 1.0:
        out[n] = 1.0
        return out
    k = np.arange(1, n + 1, dtype=np.float64)
    log_comb = np.concatenate([[0.0], np.cumsum(np.log(n - k + 1) - np.log(k))])
    kk = np.arange(n + 1, dtype=np.float64)
    return np.exp(log_comb + kk * math.log(p) + (n - kk) * math.log1p(-p))


def _chance_f1(n_true: int, n_false: int, q: float) -> tuple[float | None, float | None]:
    """Exact E[F1 of the true class], E[F1 of the false class] when each of the n_true + n_false
    cells is independently called true with probability q.

    With TP ~ Bin(n_true, q) and FP ~ Bin(n_false, q), the cells called true number
    s = TP + FP ~ Bin(N, q), N = n_true + n_false, and F1_true = 2 TP / (n_true + s) depends on
    TP only through its numerator; given s, TP is hypergeometric with mean s n_true / N. So
    E[F1_true] = sum_s P(s) 2 s n_true / (N (n_true + s)), and likewise for the false class with
    N - s cells called false: E[F1_false] = sum_s P(s) 2 (N - s) n_false / (N (n_false + N - s)).
    """
    n = n_true + n_false
    pmf = _binomial_pmf(n, q)
    s = np.arange(n + 1, dtype=np.float64)
    f1_true = float((pmf * 2 * s * n_true / (n * (n_true + s))).sum()) if n_true > 0 else None
    f1_false = float((pmf * 2 * (n - s) * n_false / (n * (n_false + n - s))).sum()) if n_false > 0 else None
    return f1_true, f1_false


def _chance_min_p(n_true: int, n_false: int, q: float) -> float:
    """Exact E[min(p_c, p_f)] with p_c = TP / n_true, TP ~ Bin(n_true, q) and, independently,
    p_f = TN / n_false, TN ~ Bin(n_false, 1 - q).

    E[min(X, Y)] = sum_k (v_k - v_(k-1)) P(X >= v_k) P(Y >= v_k) over the sorted union v_1 < v_2 < ...
    of the values X and Y can take (v_0 = 0), in integers over the common denominator
    n_true * n_false so that equal values are merged exactly."""
    den = n_true * n_false
    surv_x = np.cumsum(_binomial_pmf(n_true, q)[::-1])[::-1]  # surv_x[i] = P(TP >= i)
    surv_y = np.cumsum(_binomial_pmf(n_false, 1.0 - q)[::-1])[::-1]
    values = np.union1d(np.arange(1, n_true + 1, dtype=np.int64) * n_false,
                        np.arange(1, n_false + 1, dtype=np.int64) * n_true)  # v * den
    need_x = -(-values // n_false)  # TP >= ceil(v * n_true): TP * n_false >= v * den
    need_y = -(-values // n_true)
    steps = np.diff(np.concatenate([[0], values])) / den
    return float((steps * surv_x[need_x] * surv_y[need_y]).sum())


def _f1_from_counts(tp, n_true, tn, n_false):
    """F1 of the true and of the false class from pooled counts (arrays or floats); NaN where the
    class has no gold cell. FN = n_true - TP, FP = n_false - TN."""
    tp, n_true, tn, n_false = (np.asarray(x, dtype=np.float64) for x in (tp, n_true, tn, n_false))
    with np.errstate(invalid="ignore", divide="ignore"):
        f1_true = np.where(n_true > 0, 2 * tp / (tp + n_true + n_false - tn), np.nan)
        f1_false = np.where(n_false > 0, 2 * tn / (tn + n_false + n_true - tp), np.nan)
    return f1_true, f1_false


def _summarise(q: dict[str, np.ndarray], sel: np.ndarray | None, chance_q: dict[str, np.ndarray],
               cells: _AurocCells, cell_sel: np.ndarray | None, p_true: float | None) -> dict:
    def total(key: str, src=q) -> float:
        v = src[key]
        return float(v.sum() if sel is None else v[sel].sum())

    res: dict[str, Any] = {}
    chance: dict[str, float] = {}
    support: dict[str, int] = {}
    for key in RANK_KEYS:
        den = total(f"{key}_den")
        if den > 0:
            res[key] = total(f"{key}_num") / den
            expected = total(f"{key}_num", chance_q) / den
            if math.isfinite(expected):  # NaN: some item too large to enumerate exactly
                chance[key] = expected
            support[key] = int(round(den))
    auc = cells.auroc(cell_mask=cell_sel)
    if not math.isnan(auc):
        res["auroc"] = auc
        chance["auroc"] = 0.5
        support["auroc"] = int(cells.gold.sum() if cell_sel is None else (cells.gold * cell_sel).sum())
    if p_true is not None and total("acc_den") > 0:
        for key in PROB_KEYS:
            den = total(f"{key}_den")
            if den > 0:
                res[key] = total(f"{key}_num") / den
                support[key] = int(round(den))
        # Chance: every classified cell called true independently with probability p_true
        # (1 - threshold for probabilities uniform on [0, 1]; 1/2, a fair coin, for scores).
        g, f = int(round(total("p_c_den"))), int(round(total("p_f_den")))
        if g > 0:
            chance["p_c"] = p_true
        if f > 0:
            chance["p_f"] = 1.0 - p_true
        chance["acc"] = (g * p_true + f * (1.0 - p_true)) / (g + f)
        if g > 0 and f > 0:
            res["min_p"] = min(res["p_c"], res["p_f"])
            chance["min_p"] = _chance_min_p(g, f, p_true)
            support["min_p"] = g + f
        f1_true, f1_false = _f1_from_counts(total("p_c_num"), g, total("p_f_num"), f)
        e_true, e_false = _chance_f1(g, f, p_true)
        for key, value, expected in (("f1_true", f1_true, e_true), ("f1_false", f1_false, e_false)):
            if expected is not None:
                res[key], chance[key], support[key] = float(value), expected, g + f
        if g > 0 and f > 0:
            res["macro_f1"] = (res["f1_true"] + res["f1_false"]) / 2
            chance["macro_f1"] = (e_true + e_false) / 2
            support["macro_f1"] = g + f
    res["n_items"] = int(len(q["n_ties"]) if sel is None else sel.sum())
    res["n_ties"] = int(round(total("n_ties")))
    low, high = (q[k] if sel is None else q[k][sel] for k in ("score_min", "score_max"))
    res["scores"] = {"min": float(low.min()), "max": float(high.max()), "n_negative": int(round(total("n_negative")))}
    res["chance"] = chance
    res["support"] = support
    return res


def _bootstrap(q: dict[str, np.ndarray], keys: list[str], cells: _AurocCells, item_idx: np.ndarray,
               resamples: int, confidence: float, rng: np.random.Generator, want_auroc: bool,
               want_f1: Sequence[str] = ()) -> dict:
    """Percentile bootstrap over the items ``item_idx``: resample them with replacement."""
    n = len(item_idx)
    # The F1 scores are not ratios of per-item sums: resample the confusion counts instead.
    f1_cols = np.stack([q[k][item_idx] for k in ("p_c_num", "p_c_den", "p_f_num", "p_f_den")], axis=1) \
        if want_f1 else None
    f1 = np.empty((resamples, 4)) if want_f1 else None
    nums = np.stack([q[f"{k}_num"][item_idx] for k in keys], axis=1) if keys else np.zeros((n, 0))
    dens = np.stack([q[f"{k}_den"][item_idx] for k in keys], axis=1) if keys else np.zeros((n, 0))
    stats = np.empty((resamples, len(keys)))
    aucs = np.empty(resamples) if want_auroc else None
    chunk = max(1, min(resamples, 20_000_000 // max(n, 1)))
    done = 0
    while done < resamples:
        b = min(chunk, resamples - done)
        draws = rng.integers(0, n, size=(b, n))
        counts = np.bincount((draws + (np.arange(b) * n)[:, None]).ravel(), minlength=b * n).reshape(b, n)
        counts = counts.astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            stats[done:done + b] = (counts @ nums) / (counts @ dens)
        if f1 is not None:
            f1[done:done + b] = counts @ f1_cols
        if want_auroc:
            aucs[done:done + b] = cells.auroc_resampled(counts, item_idx)
        done += b
    alpha = (1.0 - confidence) / 2.0
    pct = [100 * alpha, 100 * (1 - alpha)]
    ci: dict[str, list[float]] = {}
    for j, k in enumerate(keys):
        col = stats[:, j]
        if np.isfinite(col).any():
            lo, hi = np.nanpercentile(col, pct)
            ci[k] = [float(lo), float(hi)]
    if "p_c" in keys and "p_f" in keys:
        mins = np.minimum(stats[:, keys.index("p_c")], stats[:, keys.index("p_f")])
        lo, hi = np.nanpercentile(mins, pct)
        ci["min_p"] = [float(lo), float(hi)]
    if f1 is not None:
        f1_true, f1_false = _f1_from_counts(*(f1[:, j] for j in range(4)))
        for key, col in (("f1_true", f1_true), ("f1_false", f1_false), ("macro_f1", (f1_true + f1_false) / 2)):
            if key in want_f1 and np.isfinite(col).any():
                lo, hi = np.nanpercentile(col, pct)
                ci[key] = [float(lo), float(hi)]
    if want_auroc and np.isfinite(aucs).any():
        lo, hi = np.nanpercentile(aucs, pct)
        ci["auroc"] = [float(lo), float(hi)]
    return ci


def compute_metrics(
    predictions: Any,
    references: Any,
    ties: str = "strict",
    probabilities: Any = None,
    threshold: float | None = None,
    tags: Any = None,
    bootstrap: int = 0,
    confidence: float = 0.95,
    seed: int | None = None,
) -> dict:
    """Pure function behind the evaluate module; same arguments and result (see _KWARGS_DESCRIPTION)."""
    _tie_weight(ties)
    if threshold is not None:
        if isinstance(threshold, (str, bytes, bool)) or not isinstance(threshold, (int, float, np.number)) \
                or not math.isfinite(float(threshold)):
            raise ValueError(f"threshold must be a finite number, got {threshold!r}")
        if probabilities is not None and not 0.0 <= float(threshold) <= 1.0:
            raise ValueError(f"threshold must lie in [0, 1] for probabilities, got {threshold}")
    if predictions is None or references is None:
        missing = " and ".join(n for n, v in (("predictions", predictions), ("references", references)) if v is None)
        raise ValueError(f"{missing}=None: pass one m x n score matrix (predictions) and one 0/1 gold matrix "
                         "(references) per item")
    bootstrap = _whole(bootstrap, "bootstrap", 0, MAX_BOOTSTRAP)
    if seed is not None:
        seed = _whole(seed, "seed", 0, 2**32 - 1)
    if isinstance(confidence, (str, bytes, bool)) or not isinstance(confidence, numbers.Real) \
            or not 0.0 < float(confidence) < 1.0:
        raise ValueError(f"confidence={confidence!r}: must be a number strictly between 0 and 1 (e.g. 0.95)")
    if not isinstance(ties, str):
        raise ValueError(f"ties={ties!r}: must be one of {', '.join(TIE_POLICIES)}")
    _refuse_non_binary(references, "references")
    S = _as_items(predictions, "predictions")
    N = len(S)
    G = _as_items(references, "references", N)
    P = None if probabilities is None else _as_items(probabilities, "probabilities", N)
    tag_lists = _as_tags(tags, N)
    groups = _validate(S, G, P)
    if bootstrap > 0:
        _check_bootstrap_work(bootstrap, groups, tag_lists, N)
    if all(bool(np.all(np.asarray(g))) for g in G) and (1, 1) not in groups:
        warnings.warn("references: every cell of every item is gold (1), so no text is a foil: there is nothing to "
                      "compare and no metric can be computed", stacklevel=2)

    # What is classified (thresholded) and the chance model's P(a cell is called true): with
    # probabilities every cell, at `threshold` (default 0.5), against probabilities uniform on
    # [0, 1]; without, only 1 x 1 items (they cannot be ranked), by their scores at `threshold`,
    # against a fair coin (the scores' distribution is unknown).
    if P is not None:
        t = 0.5 if threshold is None else float(threshold)
        p_true: float | None = 1.0 - t
    else:
        t = None if threshold is None else float(threshold)
        single = [shape for shape in groups if shape == (1, 1)]
        if single and t is None:
            raise ValueError(
                f"item {int(groups[(1, 1)][0][0])}: a 1 x 1 item (one statement, gold [[1]] or [[0]]) is "
                f"classified, not ranked: pass probabilities= (match probabilities in [0, 1]) or threshold= "
                f"(the score above which a statement counts as true)")
        p_true = 0.5 if single else None

    q: dict[str, np.ndarray] = {}
    chance_q: dict[str, np.ndarray] = {}
    cell_scores, cell_gold, cell_item = [], [], []
    for shape, (idx, s, g, p) in groups.items():
        decide = p if p is not None else (s if shape == (1, 1) and t is not None else None)
        block = _per_item_in_blocks(s, g, decide, ties, t)
        for key, vals in block.items():
            q.setdefault(key, np.zeros(N))[idx] = vals
        # Chance = the "half" value on constant scores (every ordering of the cells equally likely);
        # it depends on the gold pattern only, so compute it once per distinct pattern.
        flat_g = g.reshape(len(idx), -1)
        if flat_g.shape[1] <= 62:  # one integer per pattern: 1-D unique is far faster than axis=0
            _, first, inverse = np.unique(flat_g @ (np.int64(1) << np.arange(flat_g.shape[1], dtype=np.int64)),
                                          return_index=True, return_inverse=True)
            patterns = flat_g[first]
        else:
            patterns, inverse = np.unique(flat_g, axis=0, return_inverse=True)
        patterns = patterns.reshape(-1, *g.shape[1:])
        block_chance = _per_item_in_blocks(np.zeros(patterns.shape), patterns, None, "half", t, for_chance=True)
        for key, vals in block_chance.items():
            chance_q.setdefault(key, np.zeros(N))[idx] = vals[inverse.ravel()]
        cell_scores.append(s.reshape(-1))
        cell_gold.append(g.reshape(-1))
        cell_item.append(np.repeat(idx, s.shape[1] * s.shape[2]))
    cells = _AurocCells(np.concatenate(cell_scores), np.concatenate(cell_gold), np.concatenate(cell_item))

    result = _summarise(q, None, chance_q, cells, None, p_true)
    seq = np.random.SeedSequence(seed)
    tag_names = sorted({t for ts in tag_lists for t in ts}) if tag_lists is not None else []
    children = seq.spawn(1 + len(tag_names))
    boot_keys = [k for k in RANK_KEYS + PROB_KEYS if k in result]

    if bootstrap > 0:
        result["ci"] = _bootstrap(q, boot_keys, cells, np.arange(N), int(bootstrap), float(confidence),
                                  np.random.default_rng(children[0]), "auroc" in result,
                                  [k for k in F1_KEYS if k in result])
    if tag_lists is not None:
        per_tag = {}
        for t_i, name in enumerate(tag_names):
            sel = np.array([name in ts for ts in tag_lists])
            cell_sel = sel[cells.item].astype(float)
            entry = _summarise(q, sel, chance_q, cells, cell_sel, p_true)
            if bootstrap > 0:
                keys = [k for k in boot_keys if k in entry]
                entry["ci"] = _bootstrap(q, keys, cells, np.flatnonzero(sel), int(bootstrap),
                                         float(confidence), np.random.default_rng(children[1 + t_i]),
                                         "auroc" in entry, [k for k in F1_KEYS if k in entry])
            per_tag[name] = entry
        result["per_tag"] = per_tag
    return result


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class ValseMetric(evaluate.Metric):
    """Pairwise, group and set scoring of image-text score matrices (VALSE, Winoground, BLA)."""

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({
                "predictions": datasets.Sequence(datasets.Sequence(datasets.Value("float64"))),
                "references": datasets.Sequence(datasets.Sequence(datasets.Value("int32"))),
            }),
            reference_urls=[
                "https://aclanthology.org/2022.acl-long.567",
                "https://github.com/Heidelberg-NLP/VALSE",
                "https://huggingface.co/datasets/facebook/winoground",
                "https://aclanthology.org/2023.emnlp-main.356",
                "https://aclanthology.org/2023.eacl-main.242",
            ],
        )

    # evaluate encodes inputs with Arrow, which would turn "0.9" or "1" into numbers: refuse them first.
    def compute(self, *, predictions=None, references=None, **kwargs):
        """Compute the metrics (see the arguments below); strings are refused, not converted.
"""
        _refuse_strings(predictions, "predictions")
        _refuse_strings(references, "references")
        _refuse_non_binary(references, "references")
        added = getattr(self, "_n_added", 0)
        if not added and (predictions is None or references is None):  # evaluate's own error is a bare TypeError
            missing = " and ".join(n for n, v in (("predictions", predictions), ("references", references)) if v is None)
            raise ValueError(f"{missing}=None: pass one m x n score matrix (predictions) and one 0/1 gold matrix "
                             "(references) per item, here or with add_batch/add first")
        for name in ("bootstrap", "seed"):  # named before evaluate's writer sees them
            if kwargs.get(name) is not None:
                _whole(kwargs[name], name, 0, MAX_BOOTSTRAP if name == "bootstrap" else 2**32 - 1)
        per_item, self._per_item, self._n_added = getattr(self, "_per_item", {}), {}, 0
        for name, values in per_item.items():
            if kwargs.get(name) is not None:
                raise ValueError(f"{name}= was given with add_batch/add and again with compute; give it once")
            kwargs[name] = values
        return super().compute(predictions=predictions, references=references, **kwargs)

    # evaluate's feature schema has one fixed set of columns, so the per-item inputs that are optional
    # (tags=, probabilities=) are kept here, in the order items are added, and handed to compute.
    # Single-process only: a distributed run (num_process > 1) passes them to compute instead.
    def _keep_per_item(self, n: int, **given: Any) -> None:
        per_item = self.__dict__.setdefault("_per_item", {})
        done = self.__dict__.setdefault("_n_added", 0)
        for name, values in given.items():
            if values is None:
                if name in per_item:
                    raise ValueError(f"{name}= was given with some add_batch/add calls and not others (not for "
                                     f"items {done}..{done + n - 1})")
                continue
            if len(values) != n:
                raise ValueError(f"{name}= has {len(values)} entries for a batch of {n} items")
            if name not in per_item and done:
                raise ValueError(f"{name}= was given with some add_batch/add calls and not others (not for "
                                 f"items 0..{done - 1})")
            per_item.setdefault(name, []).extend(list(values))
        self._n_added = done + n

    def add_batch(self, *, predictions=None, references=None, tags=None, probabilities=None, **kwargs):
        """Add a batch of items (see the arguments below); strings are refused, not converted. ``tags=``
        and ``probabilities=``, one entry per item, may come with the items instead of with compute.
"""
        _refuse_strings(predictions, "predictions")
        _refuse_strings(references, "references")
        _refuse_non_binary(references, "references")
        self._keep_per_item(0 if predictions is None else len(predictions), tags=tags, probabilities=probabilities)
        return super().add_batch(predictions=predictions, references=references, **kwargs)

    def add(self, *, prediction=None, reference=None, tags=None, probability=None, **kwargs):
        """Add one item (see the arguments below); strings are refused, not converted. ``tags=`` (the
        item's tags) and ``probability=`` (its probability matrix) may come with it.
"""
        _refuse_strings(None if prediction is None else [prediction], "prediction")
        _refuse_strings(None if reference is None else [reference], "reference")
        _refuse_non_binary(None if reference is None else [reference], "reference")
        self._keep_per_item(1, tags=None if tags is None else [tags],
                            probabilities=None if probability is None else [probability])
        return super().add(prediction=prediction, reference=reference, **kwargs)

    def _compute(self, predictions, references, ties="strict", probabilities=None, threshold=None, tags=None,
                 bootstrap=0, confidence=0.95, seed=None):
        return compute_metrics(predictions, references, ties=ties, probabilities=probabilities,
                               threshold=threshold, tags=tags, bootstrap=bootstrap, confidence=confidence,
                               seed=seed)
