"""The metric is the heart of vlprobe: hand-worked cases, exact chance by enumeration, tie policies
checked against their definitions, properties, error paths, bootstrap and the evaluate path."""

from __future__ import annotations

import doctest
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vlprobe import metric, valse_metric

WINO = [[1, 0], [0, 1]]
BLA = [[1, 1, 0, 0]]
VALSE = [[1, 0]]


def compute(S, G, **kw):
    return metric.compute(S, G, **kw)


# ---------------------------------------------------------------------------------------------
# Hand-worked cases
# ---------------------------------------------------------------------------------------------

def test_valse_pairwise_by_hand():
    # caption wins, foil wins, tie: strict 1/3, half 1.5/3, lenient 2/3; one tied comparison.
    S = [[[0.9, 0.2]], [[0.3, 0.7]], [[0.5, 0.5]]]
    G = [VALSE] * 3
    assert compute(S, G)["acc_r"] == pytest.approx(1 / 3)
    assert compute(S, G, ties="half")["acc_r"] == pytest.approx(0.5)
    assert compute(S, G, ties="lenient")["acc_r"] == pytest.approx(2 / 3)
    r = compute(S, G)
    assert r["n_ties"] == 1 and r["n_items"] == 3
    # AUROC over the 6 cells: gold {0.9, 0.3, 0.5} vs non-gold {0.2, 0.7, 0.5}: 5.5 of 9 pairs.
    assert r["auroc"] == pytest.approx(5.5 / 9)
    assert "image" not in r and "group" not in r  # m = 1: no column comparisons


def test_valse_thresholded_as_lxmert_code():
    # Gold right iff P > 0.5 (strict), non-gold right iff P <= 0.5 (VALSE's lxmert_valse_eval.py).
    S = [[[2.0, 1.0]], [[0.0, 1.0]], [[1.0, 1.0]], [[3.0, -1.0]]]
    P = [[[0.9, 0.2]], [[0.5, 0.7]], [[0.6, 0.5]], [[0.4, 0.1]]]
    r = compute(S, [VALSE] * 4, probabilities=P)
    assert r["p_c"] == pytest.approx(2 / 4)  # 0.9, 0.6 right; 0.5 (not > 0.5) and 0.4 wrong
    assert r["p_f"] == pytest.approx(3 / 4)  # 0.2, 0.5 (<= 0.5), 0.1 right; 0.7 wrong
    assert r["acc"] == pytest.approx(5 / 8)
    assert r["min_p"] == pytest.approx(0.5)
    assert r["chance"]["p_c"] == 0.5 and r["chance"]["p_f"] == 0.5
    r = compute(S, [VALSE] * 4, probabilities=P, threshold=0.3)
    assert r["p_c"] == pytest.approx(1.0) and r["p_f"] == pytest.approx(2 / 4)  # foils 0.2, 0.1 <= 0.3
    assert r["chance"]["p_c"] == pytest.approx(0.7) and r["chance"]["p_f"] == pytest.approx(0.3)
    # E[min(p_c, p_f)], not min(E[p_c], E[p_f]) = 0.3: p_c ~ Bin(4, 0.7) / 4, p_f ~ Bin(4, 0.3) / 4.
    pmf = lambda n, p, k: math.comb(n, k) * p ** k * (1 - p) ** (n - k)  # noqa: E731
    expected = sum(pmf(4, 0.7, i) * pmf(4, 0.3, j) * min(i, j) / 4 for i in range(5) for j in range(5))
    assert r["chance"]["min_p"] == pytest.approx(expected) and expected < 0.3


def test_winoground_scores_by_hand():
    # s(c_j, i_i) = S[i][j]. Text right: S00 > S01 and S11 > S10. Image right: S00 > S10 and S11 > S01.
    both = [[0.30, 0.25], [0.28, 0.31]]
    text_only = [[0.30, 0.25], [0.40, 0.41]]  # rows right; column 0: 0.30 < 0.40, image wrong
    image_only = [[0.5, 0.6], [0.1, 0.7]]  # row 0 wrong (0.5 < 0.6); columns right (0.5 > 0.1, 0.7 > 0.6)
    neither = [[0.1, 0.9], [0.9, 0.1]]
    r = compute([both, text_only, image_only, neither], [WINO] * 4)
    assert r["text"] == 0.5 and r["image"] == 0.5 and r["group"] == 0.25
    assert r["support"]["group"] == 4


def test_winoground_ties_count_wrong_by_default():
    tie = [[0.3, 0.3], [0.1, 0.5]]  # S00 == S01: text fails under strict
    r = compute([tie], [WINO])
    assert (r["text"], r["image"], r["group"]) == (0.0, 1.0, 0.0)
    assert r["n_ties"] == 1
    assert compute([tie], [WINO], ties="lenient")["group"] == 1.0
    assert compute([tie], [WINO], ties="half")["group"] == 0.5


def test_bla_set_metrics_by_hand():
    # Two true captions (T1, T2), two distractors (F1, F2).
    correct = [[0.9, 0.8, 0.2, 0.1]]  # both trues on top
    wrong = [[0.1, 0.2, 0.8, 0.9]]  # both falses on top
    mixed = [[0.9, 0.1, 0.8, 0.2]]  # one true, one false in the top 2
    r = compute([correct, wrong, mixed], [BLA] * 3)
    assert r["set_acc"] == pytest.approx(1 / 3)
    assert r["set_error"] == pytest.approx(1 / 3)
    assert r["sentence_acc"] == pytest.approx((1 + 0 + 0.5) / 3)
    # acc_r pools the 4 T-F pairs per item: 4 + 0 + 2 (T1>F1, T1>F2, T2<F1, T2<F2) -> 6/12... mixed: T1 beats both, T2 beats none
    assert r["acc_r"] == pytest.approx((4 + 0 + 2) / 12)
    assert r["chance"]["set_acc"] == pytest.approx(1 / 6)
    assert r["chance"]["sentence_acc"] == pytest.approx(0.5)


def test_bla_clamped_scores_all_tied():
    # BLA's CLIP clamps max(cos, 0): every score 0 is a 4-way tie.
    r = {t: compute([[[0, 0, 0, 0]]], [BLA], ties=t) for t in ("strict", "half", "lenient")}
    assert (r["strict"]["set_acc"], r["strict"]["set_error"], r["strict"]["sentence_acc"]) == (0, 1, 0)
    assert (r["lenient"]["set_acc"], r["lenient"]["set_error"], r["lenient"]["sentence_acc"]) == (1, 0, 1)
    assert r["half"]["set_acc"] == pytest.approx(1 / 6) and r["half"]["set_error"] == pytest.approx(1 / 6)
    assert r["half"]["sentence_acc"] == pytest.approx(0.5)
    assert r["strict"]["n_ties"] == 4


def test_mixed_shapes_in_one_call_pool_correctly():
    S = [[[0.9, 0.2]], [[0.30, 0.25], [0.28, 0.31]], [[0.9, 0.8, 0.2, 0.1]]]
    G = [VALSE, WINO, BLA]
    r = compute(S, G)
    assert r["acc_r"] == 1.0 and r["support"]["acc_r"] == 1 + 2 + 4
    assert r["group"] == 1.0 and r["support"]["group"] == 1  # only the 2x2 item has columns
    assert r["text"] == 1.0 and r["support"]["text"] == 3
    assert r["set_acc"] == 1.0 and r["support"]["set_acc"] == 1 + 2 + 1


# ---------------------------------------------------------------------------------------------
# Chance levels by exhaustive enumeration
# ---------------------------------------------------------------------------------------------

def _all_orderings(m, n):
    return np.array([np.array(p, dtype=float).reshape(m, n) for p in itertools.permutations(range(m * n))])


def test_chance_winoground_by_enumeration():
    S = _all_orderings(2, 2)
    G = np.broadcast_to(np.array(WINO), S.shape)
    r = compute(S, G)
    assert r["text"] == pytest.approx(0.25) and r["image"] == pytest.approx(0.25)
    assert r["group"] == pytest.approx(1 / 6)
    for key in ("text", "image", "group", "acc_r", "auroc"):
        assert r["chance"][key] == pytest.approx(r[key]), key


def test_chance_bla_by_enumeration():
    S = _all_orderings(1, 4)
    G = np.broadcast_to(np.array(BLA), S.shape)
    r = compute(S, G)
    assert r["set_acc"] == pytest.approx(1 / 6) and r["set_error"] == pytest.approx(1 / 6)
    assert r["sentence_acc"] == pytest.approx(0.5)
    for key in ("set_acc", "set_error", "sentence_acc", "acc_r", "text"):
        assert r["chance"][key] == pytest.approx(r[key]), key


gold_matrices = st.integers(1, 3).flatmap(
    lambda m: st.integers(1, 3).flatmap(
        lambda n: st.lists(st.lists(st.integers(0, 1), min_size=n, max_size=n), min_size=m, max_size=m)
    )
).filter(lambda g: any(any(r) for r in g) and 2 <= len(g) * len(g[0]) <= 7)  # 1 x 1: classified, see below


@settings(max_examples=25, deadline=None)
@given(gold_matrices)
def test_chance_equals_enumeration_for_any_gold_pattern(G):
    m, n = len(G), len(G[0])
    S = _all_orderings(m, n)
    r = compute(S, np.broadcast_to(np.array(G), S.shape))
    for key in ("acc_r", "text", "image", "group", "set_acc", "set_error", "sentence_acc"):
        assert (key in r) == (key in r["chance"])
        if key in r:
            assert r["chance"][key] == pytest.approx(r[key]), key


# ---------------------------------------------------------------------------------------------
# Chance from each benchmark's own rule (issue 49): every order of the scores the rule compares,
# the rule written out as its authors state it, against the metric's chance on that item shape
# ---------------------------------------------------------------------------------------------

def _text_only(values, n_true, n_false):
    """SugarCREPE++'s TOT (and BLA scored text-only) as --modality text builds it, through text_only's own
    layout: ``values`` = the texts' pairwise similarities, the true-true ones then the true-false ones."""
    from vlprobe.evaluation.text_only import item_matrix, pairs, text_gold

    sim = np.zeros((n_true + n_false,) * 2)
    for v, (i, j) in zip(values, pairs(n_true, n_true + n_false)):
        sim[i, j] = sim[j, i] = v
    return item_matrix(sim, n_true), text_gold(n_true, n_false)


def _bla_rank_accuracy(v):  # BLA's get_accuracy on the rank topk gives (v: True1, True2, False1, False2)
    rank = {i: 1 + sorted(range(4), key=lambda j: -v[j]).index(i) for i in range(4)}
    return sum((i < 2 and rank[i] <= 2) or (i >= 2 and rank[i] > 2) for i in range(4)) / 4


# (what, how many scores the rule compares, matrix and gold from those scores, {metric: the rule on the scores})
RULES = [
    ("VALSE, SugarCREPE, VL-CheckList, TraVLR query vs foil: caption above foil", 2,
     lambda v: ([[v[0], v[1]]], [[1, 0]]), {"acc_r": lambda v: v[0] > v[1], "text": lambda v: v[0] > v[1],
                                            "auroc": lambda v: v[0] > v[1]}),
    ("TraVLR with the foil true", 2, lambda v: ([[v[0], v[1]]], [[0, 1]]), {"acc_r": lambda v: v[1] > v[0]}),
    ("Winoground, winoground_style (s[i][j]: image i, caption j)", 4,
     lambda v: ([[v[0], v[1]], [v[2], v[3]]], [[1, 0], [0, 1]]),
     {"text": lambda v: v[0] > v[1] and v[3] > v[2], "image": lambda v: v[0] > v[2] and v[3] > v[1],
      "group": lambda v: v[0] > v[1] and v[3] > v[2] and v[0] > v[2] and v[3] > v[1],
      "acc_r": lambda v: ((v[0] > v[1]) + (v[3] > v[2])) / 2}),
    ("COLA multi-object: each caption prefers its own image", 4,
     lambda v: ([[v[0], v[1]], [v[2], v[3]]], [[1, 0], [0, 1]]), {"image": lambda v: v[0] > v[2] and v[3] > v[1]}),
    ("BLA: true1, true2, false1, false2", 4, lambda v: ([list(v)], [[1, 1, 0, 0]]),
     {"sentence_acc": _bla_rank_accuracy, "set_acc": lambda v: min(v[:2]) > max(v[2:]),
      "set_error": lambda v: min(v[2:]) > max(v[:2]), "acc_r": lambda v: sum(a > b for a in v[:2] for b in v[2:]) / 4}),
    ("SugarCREPE++ ITT: both captions above the negative", 3, lambda v: ([list(v)], [[1, 1, 0]]),
     {"set_acc": lambda v: v[0] > v[2] and v[1] > v[2], "acc_r": lambda v: ((v[0] > v[2]) + (v[1] > v[2])) / 2}),
    ("SugarCREPE++ TOT: cos(P1, P2) above cos(P1, neg) and cos(P2, neg)", 3, lambda v: _text_only(v, 2, 1),
     {"text": lambda v: v[0] > v[1] and v[0] > v[2], "acc_r": lambda v: ((v[0] > v[1]) + (v[0] > v[2])) / 2}),
    ("BLA text-only: cos(true1, true2) above the four true-false cosines", 5, lambda v: _text_only(v, 2, 2),
     {"text": lambda v: v[0] > max(v[1:])}),
    ("CREPE productivity: caption ranked first of 6", 6, lambda v: ([list(v)], [[1, 0, 0, 0, 0, 0]]),
     {"text": lambda v: v[0] > max(v[1:]), "set_acc": lambda v: v[0] > max(v[1:])}),
    ("CREPE systematicity: caption ranked first of 4", 4, lambda v: ([list(v)], [[1, 0, 0, 0]]),
     {"text": lambda v: v[0] > max(v[1:])}),
]


@pytest.mark.parametrize("what, n, build, rules", RULES, ids=[r[0].split(":")[0] for r in RULES])
def test_chance_is_the_benchmarks_rule_over_every_order_of_its_scores(what, n, build, rules):
    expected = {k: np.mean([float(rule(v)) for v in itertools.permutations(range(n))]) for k, rule in rules.items()}
    S, G = build(tuple(range(n)))
    r = compute([S], [G])
    for key, value in expected.items():
        assert r["chance"][key] == pytest.approx(value), (what, key)


def test_tot_chance_is_a_third_not_a_quarter():
    # the issue: a layout with cos(P1, P2) in two rows ([[1, 0], [1, 0]]) gave the product of two rows, 1/4
    S, G = _text_only((0.0, 0.0, 0.0), 2, 1)
    assert np.asarray(G).tolist() == [[True, False, False]]
    assert compute([S], [G])["chance"]["text"] == pytest.approx(1 / 3)
    assert compute([[[0.0, 0.0], [0.0, 0.0]]], [[[1, 0], [1, 0]]])["chance"]["text"] == pytest.approx(1 / 4)


def test_crepe_rows_of_several_lengths_pool_their_chances():
    S = [[[0.0] * (1 + k)] for k in (2, 3, 5)]
    G = [[[1] + [0] * k] for k in (2, 3, 5)]
    assert compute(S, G)["chance"]["text"] == pytest.approx(np.mean([1 / 3, 1 / 4, 1 / 6]))


@pytest.mark.parametrize("gold, t", [([[1, 0]], 0.5), ([[1, 0]], 0.3), ([[1, 1, 0, 0]], 0.5), ([[1, 0], [0, 1]], 0.7)])
def test_thresholded_chance_is_the_expectation_over_every_call(gold, t):
    # With match probabilities (VALSE's LXMERT, an ITM head on BLA or Winoground): every cell is called true
    # (probability > t) independently with probability 1 - t when probabilities are uniform on [0, 1];
    # enumerate every pattern of calls over 2 items, weighted, and apply each rule.
    g = np.array(gold * 2, dtype=bool).ravel()  # two items' cells
    q = 1 - t
    exp = {"acc": 0.0, "p_c": 0.0, "p_f": 0.0, "min_p": 0.0, "f1_true": 0.0, "f1_false": 0.0}
    for calls in itertools.product([False, True], repeat=len(g)):
        c = np.array(calls)
        w = math.prod(q if x else 1 - q for x in calls)
        p_c, p_f = (c & g).sum() / g.sum(), (~c & ~g).sum() / (~g).sum()
        exp["acc"] += w * (c == g).mean()
        exp["p_c"] += w * p_c
        exp["p_f"] += w * p_f
        exp["min_p"] += w * min(p_c, p_f)
        exp["f1_true"] += w * _f1(c.astype(int), g.astype(int), 1)
        exp["f1_false"] += w * _f1(c.astype(int), g.astype(int), 0)
    exp["macro_f1"] = (exp["f1_true"] + exp["f1_false"]) / 2
    S = np.zeros((2, *np.shape(gold)))
    r = compute(S, np.broadcast_to(np.array(gold), S.shape), probabilities=np.full(S.shape, 0.5), threshold=t)
    for key, value in exp.items():
        assert r["chance"][key] == pytest.approx(value), key


def test_every_metric_has_a_chance_test_above():
    # each metric the module reports is held to a rule's enumeration in this section (auroc: 1/2 for every
    # shape, the chance that a gold cell outscores a non-gold one)
    covered = {k for _, _, _, rules in RULES for k in rules} | {"acc", "p_c", "p_f", "min_p", "f1_true", "f1_false",
                                                                 "macro_f1"}
    assert covered == set(valse_metric.METRIC_KEYS)


# ---------------------------------------------------------------------------------------------
# Tie policies against their definitions
# ---------------------------------------------------------------------------------------------

small_items = gold_matrices.flatmap(
    lambda g: st.tuples(
        st.just(g),
        st.lists(st.lists(st.integers(0, 2), min_size=len(g[0]), max_size=len(g[0])), min_size=len(g), max_size=len(g)),
    )
)
RANK = ("acc_r", "text", "image", "group", "set_acc", "set_error", "sentence_acc")


@settings(max_examples=40, deadline=None)
@given(small_items)
def test_half_is_the_expectation_over_random_tie_breaks(item):
    G, S = np.array(item[0]), np.array(item[1], dtype=float)
    m, n = S.shape
    # Break ties by every possible order of infinitesimal perturbations, equally likely.
    perturbed = np.array([S + 1e-6 * np.array(p).reshape(m, n) for p in itertools.permutations(range(m * n))])
    expected = compute(perturbed, np.broadcast_to(G, perturbed.shape))
    half = compute([S], [G], ties="half")
    for key in RANK:
        if key in half:
            assert half[key] == pytest.approx(expected[key]), key


@settings(max_examples=40, deadline=None)
@given(small_items)
def test_strict_and_lenient_are_perturbations_against_and_for_the_model(item):
    G, S = np.array(item[0]), np.array(item[1], dtype=float)
    against = S + np.where(G, -1e-6, 1e-6)  # every tie resolved against the model
    favour = S + np.where(G, 1e-6, -1e-6)
    strict, lenient = compute([S], [G]), compute([S], [G], ties="lenient")
    for key in RANK:
        if key in strict:
            assert strict[key] == pytest.approx(compute([against], [G])[key]), key
            assert lenient[key] == pytest.approx(compute([favour], [G])[key]), key


# ---------------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------------

def _scores_and_gold(draw_shape, draw):
    m, n = draw_shape
    G = draw(st.lists(st.lists(st.integers(0, 1), min_size=n, max_size=n), min_size=m, max_size=m).filter(
        lambda g: any(any(r) for r in g)))
    S = draw(st.lists(st.lists(st.integers(-3, 3), min_size=n, max_size=n), min_size=m, max_size=m))
    return np.array(S, dtype=float), np.array(G)


@st.composite
def batches(draw, distinct=False):
    shapes = draw(st.lists(st.sampled_from([(1, 2), (2, 2), (1, 4), (2, 3)]), min_size=1, max_size=6))
    S, G = [], []
    for shape in shapes:
        s, g = _scores_and_gold(shape, draw)
        if distinct:
            s = s + np.arange(s.size).reshape(s.shape) * 1e-3 + draw(st.floats(0, 1e-4))
        S.append(s)
        G.append(g)
    return S, G


@settings(max_examples=60, deadline=None)
@given(batches())
@pytest.mark.slow
def test_rank_metrics_invariant_to_strictly_increasing_transforms(batch):
    S, G = batch
    for ties in ("strict", "half", "lenient"):
        a = compute(S, G, ties=ties)
        b = compute([np.exp(s) * 3 - 7 for s in S], G, ties=ties)
        for key in RANK + ("auroc",):
            if key in a:
                assert b[key] == pytest.approx(a[key]), (ties, key)
        assert a["n_ties"] == b["n_ties"]


@settings(max_examples=60, deadline=None)
@given(batches())
@pytest.mark.slow
def test_structural_inequalities(batch):
    S, G = batch
    res = {t: compute(S, G, ties=t) for t in ("strict", "half", "lenient")}
    for r in res.values():
        if "group" in r:
            # group <= min(text, image) over the same items: those where group is defined.
            sel = [i for i in range(len(G)) if "group" in compute([S[i]], [G[i]])]
            for ties in ("strict", "half", "lenient"):
                sub = compute([S[i] for i in sel], [G[i] for i in sel], ties=ties)
                assert sub["group"] <= min(sub["text"], sub["image"]) + 1e-12
        if "set_acc" in r:
            assert r["set_acc"] + r["set_error"] <= 1 + 1e-12
    for key in ("acc_r", "text", "image", "group", "set_acc", "sentence_acc"):
        if key in res["strict"]:
            assert res["strict"][key] <= res["half"][key] + 1e-12 <= res["lenient"][key] + 2e-12, key
    if "set_error" in res["strict"]:
        assert res["strict"]["set_error"] + 1e-12 >= res["half"]["set_error"] >= res["lenient"]["set_error"] - 1e-12


@settings(max_examples=60, deadline=None)
@given(batches(distinct=True))
@pytest.mark.slow
def test_without_ties_the_policies_agree(batch):
    S, G = batch
    res = [compute(S, G, ties=t) for t in ("strict", "half", "lenient")]
    assert res[0]["n_ties"] == 0
    for key in RANK:
        if key in res[0]:
            assert res[0][key] == pytest.approx(res[1][key]) == pytest.approx(res[2][key])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.permutations([0.0, 1.0, 2.0, 3.0]), min_size=1, max_size=8))
def test_bla_sentence_acc_identity(perms):
    S = [np.array([p]) for p in perms]
    r = compute(S, [np.array(BLA)] * len(S))
    assert r["sentence_acc"] == pytest.approx(r["set_acc"] + 0.5 * (1 - r["set_acc"] - r["set_error"]))


@settings(max_examples=40, deadline=None)
@given(batches())
@pytest.mark.slow
def test_auroc_is_mann_whitney_over_all_cells(batch):
    S, G = batch
    gold = np.concatenate([s[g.astype(bool)] for s, g in zip(S, G)])
    non = np.concatenate([s[~g.astype(bool)] for s, g in zip(S, G)])
    r = compute(S, G)
    if len(non) == 0:
        assert "auroc" not in r
        return
    wins = (gold[:, None] > non[None, :]).sum() + 0.5 * (gold[:, None] == non[None, :]).sum()
    assert r["auroc"] == pytest.approx(wins / (len(gold) * len(non)))


def test_stacked_arrays_equal_lists():
    rng = np.random.default_rng(1)
    S = rng.integers(0, 3, size=(50, 2, 2)).astype(float)
    G = np.broadcast_to(np.array(WINO), S.shape)
    for ties in ("strict", "half"):
        a = compute(S, G, ties=ties, bootstrap=50, seed=3)
        b = compute([s.tolist() for s in S], [g.tolist() for g in G], ties=ties, bootstrap=50, seed=3)
        assert a == b


def test_per_tag_equals_the_subset():
    rng = np.random.default_rng(2)
    S = list(rng.normal(size=(30, 1, 4)))
    G = [np.array(BLA)] * 30
    tags = [["task=ap"] if i % 3 == 0 else ["task=co", "hard"] for i in range(30)]
    r = compute(S, G, tags=tags)
    for tag in ("task=ap", "task=co", "hard"):
        sel = [i for i, t in enumerate(tags) if tag in t]
        sub = compute([S[i] for i in sel], [G[i] for i in sel])
        entry = r["per_tag"][tag]
        for key in ("acc_r", "set_acc", "set_error", "sentence_acc", "auroc", "n_items", "n_ties", "chance"):
            assert entry[key] == pytest.approx(sub[key]), (tag, key)


# ---------------------------------------------------------------------------------------------
# Bootstrap
# ---------------------------------------------------------------------------------------------

def test_bootstrap_is_deterministic_for_a_seed_and_brackets_the_estimate():
    rng = np.random.default_rng(0)
    S = rng.normal(size=(400, 2, 2)) + np.eye(2) * 0.5
    G = np.broadcast_to(np.array(WINO), S.shape)
    P = 1 / (1 + np.exp(-S))
    tags = [["a"] if i % 2 else ["b"] for i in range(400)]
    a = compute(S, G, probabilities=P, tags=tags, bootstrap=200, seed=7)
    b = compute(S, G, probabilities=P, tags=tags, bootstrap=200, seed=7)
    c = compute(S, G, probabilities=P, tags=tags, bootstrap=200, seed=8)
    assert a["ci"] == b["ci"] and a["per_tag"]["a"]["ci"] == b["per_tag"]["a"]["ci"]
    assert a["ci"] != c["ci"]
    for key in ("acc_r", "text", "image", "group", "auroc", "acc", "p_c", "p_f", "min_p", "set_acc"):
        lo, hi = a["ci"][key]
        assert lo <= a[key] <= hi, key
        assert hi - lo < 0.2
    # A wider confidence level gives a wider interval.
    wide = compute(S, G, bootstrap=200, seed=7, confidence=0.99)["ci"]["group"]
    assert wide[1] - wide[0] >= a["ci"]["group"][1] - a["ci"]["group"][0]


def test_bootstrap_group_ci_matches_a_plain_resampling_loop():
    rng = np.random.default_rng(5)
    S = rng.normal(size=(60, 2, 2))
    G = np.broadcast_to(np.array(WINO), S.shape)
    per_item = np.array([compute([s], [np.array(WINO)])["group"] for s in S])
    r = compute(S, G, bootstrap=300, seed=11)
    # Same statistic, independent draws: the intervals agree to within sampling noise.
    loop = np.random.default_rng(0)
    means = [per_item[loop.integers(0, 60, 60)].mean() for _ in range(2000)]
    lo, hi = np.percentile(means, [2.5, 97.5])
    assert r["ci"]["group"][0] == pytest.approx(lo, abs=0.04)
    assert r["ci"]["group"][1] == pytest.approx(hi, abs=0.04)


# ---------------------------------------------------------------------------------------------
# 1 x 1 items (TraVLR's true/false framing): acc, macro-F1, F1 per class, exact chance
# ---------------------------------------------------------------------------------------------

def _f1(pred, gold, cls):
    tp = sum(1 for p, g in zip(pred, gold) if p == cls and g == cls)
    fp = sum(1 for p, g in zip(pred, gold) if p == cls and g != cls)
    fn = sum(1 for p, g in zip(pred, gold) if p != cls and g == cls)
    return 2 * tp / (2 * tp + fp + fn)


def _one_by_one(values, labels):
    return [[[v]] for v in values], [[[g]] for g in labels]


def test_one_by_one_items_by_hand():
    # Gold T T T F F; probabilities 0.9 0.6 0.3 0.2 0.7 -> called T T F F T: TP 2, FN 1, TN 1, FP 1.
    P, G = _one_by_one([0.9, 0.6, 0.3, 0.2, 0.7], [1, 1, 1, 0, 0])
    r = compute(P, G, probabilities=P)
    assert r["acc"] == pytest.approx(3 / 5)
    assert r["f1_true"] == pytest.approx(2 * 2 / (2 * 2 + 1 + 1))  # 2/3
    assert r["f1_false"] == pytest.approx(2 * 1 / (2 * 1 + 1 + 1))  # 1/2
    assert r["macro_f1"] == pytest.approx((2 / 3 + 1 / 2) / 2)  # 7/12
    assert r["p_c"] == pytest.approx(2 / 3) and r["p_f"] == pytest.approx(1 / 2)
    assert r["support"]["macro_f1"] == 5 and r["n_items"] == 5
    for key in ("acc_r", "text", "set_acc", "group"):  # a single statement is never ranked
        assert key not in r
    # The same from the scores with a threshold, and through a probe's logits at 0.
    assert compute(P, G, threshold=0.5)["macro_f1"] == pytest.approx(7 / 12)
    logits = [[[math.log(p / (1 - p))]] for p in (0.9, 0.6, 0.3, 0.2, 0.7)]
    assert compute(logits, G, threshold=0.0)["macro_f1"] == pytest.approx(7 / 12)


def test_one_by_one_chance_is_the_exact_expectation_of_a_fair_coin():
    # Enumerate all 2^5 equally likely guesses of a fair coin: the exact expected macro-F1.
    labels = [1, 1, 1, 0, 0]
    P, G = _one_by_one([0.9, 0.6, 0.3, 0.2, 0.7], labels)
    guesses = list(itertools.product([0, 1], repeat=5))
    e_true = sum(_f1(g, labels, 1) for g in guesses) / 32
    e_false = sum(_f1(g, labels, 0) for g in guesses) / 32
    e_acc = sum(sum(a == b for a, b in zip(g, labels)) / 5 for g in guesses) / 32
    e_min = sum(min(sum(g[:3]) / 3, sum(1 - x for x in g[3:]) / 2) for g in guesses) / 32
    c = compute(P, G, probabilities=P)["chance"]
    assert c["f1_true"] == pytest.approx(e_true) and c["f1_false"] == pytest.approx(e_false)
    assert c["macro_f1"] == pytest.approx((e_true + e_false) / 2)
    assert c["acc"] == pytest.approx(e_acc) and c["min_p"] == pytest.approx(e_min)
    # Scores with a threshold: the same fair coin.
    assert compute(P, G, threshold=0.3)["chance"]["macro_f1"] == pytest.approx((e_true + e_false) / 2)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=7), st.sampled_from([0.2, 0.5, 0.9]))
def test_one_by_one_chance_equals_enumeration_for_any_labels_and_threshold(labels, t):
    # Probabilities uniform on [0, 1]: each statement called true with probability 1 - t.
    q = 1 - t
    n = len(labels)
    exp = {"f1_true": 0.0, "f1_false": 0.0, "acc": 0.0}
    for guess in itertools.product([0, 1], repeat=n):
        w = math.prod(q if x else 1 - q for x in guess)
        exp["acc"] += w * sum(a == b for a, b in zip(guess, labels)) / n
        if any(labels):
            exp["f1_true"] += w * _f1(guess, labels, 1)
        if not all(labels):
            exp["f1_false"] += w * _f1(guess, labels, 0)
    P, G = _one_by_one([0.5] * n, [int(x) for x in labels])
    r = compute(P, G, probabilities=P, threshold=t)
    assert r["chance"]["acc"] == pytest.approx(exp["acc"])
    assert ("f1_true" in r) == any(labels) and ("f1_false" in r) == (not all(labels))
    assert ("macro_f1" in r) == (any(labels) and not all(labels))
    for key in ("f1_true", "f1_false"):
        if key in r:
            assert r["chance"][key] == pytest.approx(exp[key]), key
    if "macro_f1" in r:
        assert r["chance"]["macro_f1"] == pytest.approx((exp["f1_true"] + exp["f1_false"]) / 2)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.booleans()), min_size=1, max_size=30))
def test_one_by_one_f1_properties(items):
    probs, labels = [p for p, _ in items], [int(g) for _, g in items]
    P, G = _one_by_one(probs, labels)
    r = compute(P, G, probabilities=P)
    pred = [int(p > 0.5) for p in probs]
    if "macro_f1" in r:
        assert r["f1_true"] == pytest.approx(_f1(pred, labels, 1))
        assert r["f1_false"] == pytest.approx(_f1(pred, labels, 0))
        assert r["macro_f1"] == pytest.approx((r["f1_true"] + r["f1_false"]) / 2)
        assert 0 <= r["macro_f1"] <= 1 and 0 < r["chance"]["macro_f1"] < 1
        # Swapping the classes (labels and decisions) swaps the two F1 scores.
        flipped = compute([[[1 - p]] for p in probs], [[[1 - g]] for g in labels],
                          probabilities=[[[1 - p]] for p in probs], threshold=0.5)
        if not any(p == 0.5 for p in probs):  # 0.5 is "false" both ways
            assert flipped["f1_true"] == pytest.approx(r["f1_false"])
            assert flipped["macro_f1"] == pytest.approx(r["macro_f1"])
    assert r["acc"] == pytest.approx(np.mean([a == b for a, b in zip(pred, labels)]))


def test_one_by_one_per_tag_bootstrap_and_mixed_shapes():
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, 200)
    probs = np.clip(labels * 0.3 + rng.uniform(0, 0.7, 200), 0, 1)
    P, G = probs.reshape(-1, 1, 1), labels.reshape(-1, 1, 1)
    tags = [["split=a"] if i % 2 else ["split=b"] for i in range(200)]
    r = compute(P, G, probabilities=P, tags=tags, bootstrap=300, seed=0)
    for key in ("macro_f1", "f1_true", "f1_false", "acc", "min_p"):
        lo, hi = r["ci"][key]
        assert lo <= r[key] <= hi and hi - lo < 0.3, key
    sub = compute(P[1::2], G[1::2], probabilities=P[1::2])
    for key in ("macro_f1", "f1_true", "f1_false", "acc", "chance"):
        assert r["per_tag"]["split=a"][key] == pytest.approx(sub[key]), key
    assert "macro_f1" in r["per_tag"]["split=a"]["ci"]
    # A tag holding only true statements: F1 of the false class (and macro-F1) is not defined.
    only_true = compute(P, G, probabilities=P, tags=[[f"label={g}"] for g in labels])["per_tag"]["label=1"]
    assert "f1_true" in only_true and "f1_false" not in only_true and "macro_f1" not in only_true
    # Mixed shapes in one call: 1 x 1 items beside VALSE and Winoground items.
    S = [[[0.8]], [[0.2]], [[0.9, 0.1]], [[0.7, 0.2], [0.1, 0.6]]]
    Gm = [[[1]], [[0]], [[1, 0]], [[1, 0], [0, 1]]]
    mixed = compute(S, Gm, probabilities=S)
    assert mixed["acc_r"] == pytest.approx(1.0) and mixed["group"] == 1.0
    assert mixed["support"]["macro_f1"] == 8 and mixed["macro_f1"] == pytest.approx(1.0)
    # Without probabilities, only the 1 x 1 items are classified (by their scores).
    ranked = compute(S, Gm, threshold=0.5)
    assert ranked["support"]["acc"] == 2 and ranked["acc_r"] == pytest.approx(1.0)
    assert "acc" not in compute(S[2:], Gm[2:], threshold=0.5)  # no 1 x 1 item: scores are never thresholded


def test_one_by_one_needs_probabilities_or_a_threshold():
    with pytest.raises(ValueError, match=r"item 1: a 1 x 1 item .* pass probabilities= .* or threshold="):
        compute([[[0.9, 0.1]], [[0.4]]], [[[1, 0]], [[0]]])
    with pytest.raises(ValueError, match="only a 1 x 1 true/false item may have gold"):
        compute([[[0.9, 0.1]]], [[[0, 0]]], threshold=0.5)


# ---------------------------------------------------------------------------------------------
# Exact chance of min(p_c, p_f)
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n, reference", [(1, 0.2475), (10, 0.413), (100, 0.472)])
def test_min_p_chance_matches_a_monte_carlo(n, reference):
    S = np.zeros((n, 1, 2))
    G = np.broadcast_to(np.array([VALSE]), S.shape)
    exact = compute(S, G, probabilities=np.full(S.shape, 0.5))["chance"]["min_p"]
    rng = np.random.default_rng(0)
    u = rng.uniform(size=(20_000, n, 2))
    mc = np.minimum((u[:, :, 0] > 0.5).mean(1), (u[:, :, 1] <= 0.5).mean(1)).mean()
    assert exact == pytest.approx(mc, abs=0.01)
    assert exact == pytest.approx(reference, abs=0.005)  # the Monte Carlo figures
    assert exact < 0.5  # not min(E[p_c], E[p_f])


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.sampled_from([0.1, 0.5, 0.75]))
def test_min_p_chance_equals_enumeration(g, f, t):
    # g gold cells and f non-gold cells over 1 x 1 items; probabilities uniform: P(called true) = 1 - t.
    pmf = lambda n, p, k: math.comb(n, k) * p ** k * (1 - p) ** (n - k)  # noqa: E731
    expected = sum(pmf(g, 1 - t, i) * pmf(f, t, j) * min(i / g, j / f) for i in range(g + 1) for j in range(f + 1))
    P, G = _one_by_one([0.5] * (g + f), [1] * g + [0] * f)
    assert compute(P, G, probabilities=P, threshold=t)["chance"]["min_p"] == pytest.approx(expected)


def test_exact_chance_holds_for_large_runs():
    # how long it takes is scripts/bench_metric.py's to say (no test depends on the machine's speed)
    n = 200_000
    P = np.full((n, 1, 2), 0.5)
    c = compute(np.zeros((n, 1, 2)), np.broadcast_to(np.array([VALSE]), P.shape), probabilities=P)["chance"]
    assert 0.49 < c["min_p"] < 0.5 and c["macro_f1"] == pytest.approx(0.5, abs=1e-3)


# ---------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "S, G, kw, message",
    [
        ([[[1.0, 0.0]], [[1.0, 0.0, 2.0]]], [VALSE, VALSE], {}, "item 1: score matrix is 1x3 but gold matrix is 1x2"),
        ([[[1.0, float("nan")]]], [VALSE], {}, "item 0: score matrix holds NaN"),
        ([[[1.0, 0.0]], [[float("inf"), 0.0]]], [VALSE, VALSE], {}, "item 1: score matrix holds NaN or infinite"),
        ([[[1.0, 0.0]], [[1.0, 0.0]]], [VALSE, [[0, 0]]], {}, "item 1: gold matrix has no gold cell"),
        ([[[1.0, 0.0]]], [[[2, 0]]], {}, "item 0: gold matrix must hold only 0 and 1"),
        ([], [], {}, "predictions: no items"),
        ([[[1.0, 0.0]]], [VALSE], {"ties": "random"}, "unknown ties='random'"),
        ([[[1.0, 0.0]]] * 2, [VALSE] * 2, {"probabilities": [[[0.5, 0.5]], [[1.2, 0.0]]]},
         "item 1: probabilities must lie in [0, 1]"),
        ([[[1.0, 0.0]]], [VALSE], {"probabilities": [[[0.5, 0.5, 0.1]]]}, "item 0: probability matrix has shape"),
        ([[[1.0, 0.0]]], [VALSE, VALSE], {}, "references: 2 items, but predictions has 1"),
        ([[[1.0, 0.0]]], [VALSE], {"tags": [["a"], ["b"]]}, "tags: 2 entries"),
        ([[1.0, 0.0]], [VALSE], {}, "predictions[0]: must be an m x n matrix"),
        ([[[1.0, 0.0]]], [VALSE], {"bootstrap": -1}, "bootstrap=-1: must be from 0"),
        ([[[1.0, 0.0]]], [VALSE], {"threshold": 2, "probabilities": [[[0.5, 0.5]]]}, "threshold must lie in [0, 1]"),
        ([[[1.0, 0.0]]], [VALSE], {"threshold": "0.5"}, "threshold must be a finite number"),
        ([[[1.0, 0.0]]], [[["1", "0"]]], {}, "references[0]: must hold numbers, got strings"),
        ([[["0.9", "0.1"]]], [VALSE], {}, "predictions[0]: must hold numbers, got strings"),
        ([[[0.9, 0.1]]], [VALSE], {"probabilities": [[["0.9", "0.1"]]]}, "probabilities[0]: must hold numbers"),
        ([[[0.9, 0.1]]], [[[1, None]]], {}, "references[0]: must hold numbers, got None"),
        ([[[1.0, 0.0]]] * 3, [VALSE] * 3, {"tags": "abc"}, "tags: got the string 'abc'"),
        ([[[1.0, 0.0]]], [VALSE], {"tags": [[None]]}, "tags[0]: must be a list of strings, got [None]"),
        ("0.9", [VALSE], {}, "predictions: got a string"),
        (np.zeros((2, 0, 2)), np.zeros((2, 0, 2)), {}, "predictions: a stacked array of shape (2, 0, 2) holds empty items"),
        (np.array([[["0.9", "0.1"]]]), np.array([VALSE]), {}, "predictions: must hold numbers, got strings"),
        (np.zeros((1, 1, 2)), np.array([[["1", "0"]]]), {}, "references: must hold numbers, got strings"),
    ],
)
def test_bad_input_names_the_item_and_the_problem(S, G, kw, message):
    with pytest.raises(ValueError) as err:
        compute(S, G, **kw)
    assert message in str(err.value)


def test_stacked_bad_input_names_the_item():
    S = np.zeros((5, 2, 2))
    S[3, 1, 0] = np.nan
    with pytest.raises(ValueError, match="item 3: score matrix holds NaN"):
        compute(S, np.broadcast_to(np.array(WINO), S.shape))
    G = np.broadcast_to(np.array(WINO), S.shape).copy()
    G[4] = 0
    with pytest.raises(ValueError, match="item 4: gold matrix has no gold cell"):
        compute(np.zeros((5, 2, 2)), G)


# ---------------------------------------------------------------------------------------------
# The evaluate path and the doc examples
# ---------------------------------------------------------------------------------------------

def test_evaluate_load_add_batch_compute_equals_the_pure_function(repo_root, monkeypatch):
    monkeypatch.chdir(repo_root)
    module = metric.load()
    S = [[[0.9, 0.2]], [[0.30, 0.25], [0.28, 0.31]], [[0.9, 0.8, 0.2, 0.1]], [[0.4, 0.4]]]
    G = [VALSE, WINO, BLA, VALSE]
    module.add_batch(predictions=S[:2], references=G[:2])
    module.add_batch(predictions=S[2:], references=G[2:])
    tags = [["a"], ["b"], ["a"], ["b"]]
    got = module.compute(ties="half", tags=tags, bootstrap=20, seed=0)
    assert got == metric.compute(S, G, ties="half", tags=tags, bootstrap=20, seed=0)
    # evaluate.load on the file path, as the metric card shows.
    import evaluate

    direct = evaluate.load(str(repo_root / "metric" / "valse_metric.py"))
    assert direct.compute(predictions=S, references=G)["acc_r"] == metric.compute(S, G)["acc_r"]


def test_docstring_examples_run_as_doctests(repo_root, monkeypatch):
    monkeypatch.chdir(repo_root)
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    test = finder.find(valse_metric._KWARGS_DESCRIPTION, "valse_metric._KWARGS_DESCRIPTION", globs={})[0]
    assert len(test.examples) >= 8
    result = runner.run(test)
    assert result.failed == 0, f"{result.failed} doctest example(s) failed"


def test_half_refuses_items_with_too_many_tied_cells():
    n = 18
    S = np.zeros((1, 2, n))
    G = np.zeros((1, 2, n), dtype=int)
    G[0, 0, : n // 2] = 1
    G[0, 1, n // 2:] = 1
    with pytest.raises(ValueError, match="use ties='strict'"):
        compute(S, G, ties="half")
    r = compute(S, G)
    assert r["group"] == 0.0
    # Its group chance cannot be enumerated exactly: left out rather than approximated.
    assert "group" not in r["chance"] and r["chance"]["text"] == pytest.approx(1 / math.comb(n, n // 2) ** 2)


def test_result_is_json_serialisable():
    import json

    r = compute([[[0.9, 0.2]]] * 3, [VALSE] * 3, probabilities=[[[0.9, 0.2]]] * 3, tags=[["x"]] * 3, bootstrap=10, seed=0)
    json.dumps(r)
    assert math.isfinite(r["acc_r"])


def test_metric_card_is_a_metric_space_and_its_tie_table_is_true(repo_root):
    import yaml

    text = (repo_root / "metric" / "README.md").read_text(encoding="utf-8")
    meta = yaml.safe_load(text.split("---")[1])
    assert meta["sdk"] == "gradio" and meta["app_file"] == "app.py"
    assert {"evaluate", "metric"} <= set(meta["tags"])
    # The card's tie-policy table, row by row.
    table = {"strict": (0.0, (0.0, 1.0, 0.0), (0.0, 0.5)), "half": (0.5, (0.5, 1.0, 0.5), (0.5, 0.75)),
             "lenient": (1.0, (1.0, 1.0, 1.0), (1.0, 1.0))}
    for ties, (acc_r, wino, bla) in table.items():
        assert f"| `{ties}`" in text
        assert compute([[[0.5, 0.5]]], [VALSE], ties=ties)["acc_r"] == acc_r
        w = compute([[[0.3, 0.3], [0.1, 0.5]]], [WINO], ties=ties)
        assert (w["text"], w["image"], w["group"]) == wino
        b = compute([[[0.7, 0.4, 0.4, 0.1]]], [BLA], ties=ties)
        assert (b["set_acc"], b["sentence_acc"]) == bla


def test_the_evaluate_path_refuses_strings_before_arrow_converts_them():
    module = metric.load()
    with pytest.raises(ValueError, match=r"references\[0\]: must hold numbers, got strings \(e.g. '1'\)"):
        module.compute(predictions=[[[0.9, 0.1]]], references=[[["1", "0"]]])
    with pytest.raises(ValueError, match=r"predictions\[0\]: must hold numbers"):
        module.add_batch(predictions=[[["0.9", "0.1"]]], references=[[[1, 0]]])
    with pytest.raises(ValueError, match=r"prediction\[0\]: must hold numbers"):
        module.add(prediction=[["0.9", "0.1"]], reference=[[1, 0]])
    # 1 x 1 true/false items through evaluate's Arrow features (gold [[0]] included).
    r = module.compute(predictions=[[[0.8]], [[0.4]]], references=[[[1]], [[0]]], threshold=0.5)
    assert r["macro_f1"] == 1.0


def test_metric_card_documents_one_by_one_items_and_its_numbers_are_true(repo_root):
    text = (repo_root / "metric" / "README.md").read_text(encoding="utf-8")
    assert "macro_f1 = (f1_true + f1_false) / 2" in text and "python -m vlprobe.metric register" in text
    p = [[[0.9]], [[0.6]], [[0.3]], [[0.2]], [[0.7]]]
    r = compute(p, [[[1]], [[1]], [[1]], [[0]], [[0]]], probabilities=p)
    assert f"{r['macro_f1']:.4f}, {r['chance']['macro_f1']:.4f}" in text  # "0.5833, 0.4664"
    assert f"`E[min_p] = {r['chance']['min_p']:.4f}`" in text
    for n, shown in ((1, "0.25 for 1 item"), (10, "0.412 for 10"), (100, "0.472 for 100")):
        c = compute(np.zeros((n, 1, 2)), np.broadcast_to(np.array([VALSE]), (n, 1, 2)),
                    probabilities=np.full((n, 1, 2), 0.5))["chance"]["min_p"]
        assert shown in text and shown.split()[0] == f"{c:.3f}".rstrip("0"), (n, c)


def test_add_batch_and_add_take_tags_and_probabilities_with_their_items(repo_root):
    """Per-item inputs may come with the items, as a streaming loop has them (evaluate's schema has
    no optional columns, so the module keeps them in order); the result equals one compute call."""
    import evaluate

    module = evaluate.load(str(repo_root / "metric" / "valse_metric.py"))
    S = [[[0.3, 0.2]], [[0.1, 0.2]], [[0.5, 0.4]]]
    G = [[[1, 0]]] * 3
    P = [[[0.9, 0.2]], [[0.4, 0.6]], [[0.7, 0.3]]]
    tags = [["a"], ["b"], ["a", "c"]]
    module.add_batch(predictions=S[:2], references=G[:2], tags=tags[:2], probabilities=P[:2])
    module.add(prediction=S[2], reference=G[2], tags=tags[2], probability=P[2])
    got = module.compute()
    want = compute(S, G, tags=tags, probabilities=P)
    assert got["acc_r"] == want["acc_r"] and got["p_c"] == want["p_c"] and got["p_f"] == want["p_f"]
    assert {k: v["acc_r"] for k, v in got["per_tag"].items()} == {k: v["acc_r"] for k, v in want["per_tag"].items()}
    # given for some batches only, or twice: refused, naming the items
    module.add_batch(predictions=S[:1], references=G[:1])
    with pytest.raises(ValueError, match=r"tags= was given with some add_batch/add calls and not others "
                                         r"\(not for items 0\.\.0\)"):
        module.add_batch(predictions=S[1:2], references=G[1:2], tags=tags[1:2])
    module.compute()
    module.add_batch(predictions=S[:1], references=G[:1], tags=tags[:1])
    with pytest.raises(ValueError, match="give it once"):
        module.compute(tags=tags[:1])
    with pytest.raises(ValueError, match="has 1 entries for a batch of 2 items"):
        module.add_batch(predictions=S[:2], references=G[:2], tags=tags[:1])


# ---------------------------------------------------------------------------------------------
# BLA's CLIP script clamps cosines (issue 49): 2.5 * max(cos, 0), ranked with torch.topk
# ---------------------------------------------------------------------------------------------

def _bla_clip_ranks(cosines):
    """rank_captions of BLA's evaluation_models/clip/utils.py: clip_score = 2.5 * max(similarity, 0), then
    topk over the four captions, rank[caption] = its position + 1."""
    torch = pytest.importorskip("torch")
    score = 2.5 * torch.max(torch.tensor([cosines], dtype=torch.float32), torch.zeros(1, 4))
    _, indices = score[0].topk(4)
    rank = list(range(4))
    for i, value in enumerate(indices.numpy()):
        rank[value] = i + 1
    return rank


def test_torch_topk_order_among_ties_as_the_bla_tie_rule_states():
    torch = pytest.importorskip("torch")
    assert torch.tensor([0.0, 0.0, 0.0, 0.0]).topk(4).indices.tolist() == [2, 3, 0, 1]
    assert torch.tensor([0.3, 0.0, 0.0, 0.0]).topk(4).indices.tolist() == [0, 2, 3, 1]
    from vlprobe.benchmarks import get

    assert "[0, 0, 0, 0] gives 2, 3, 0, 1; [0.3, 0, 0, 0] gives 0, 2, 3, 1" in get("bla").tie_rule.rule


def test_negative_scores_are_counted_and_flagged_for_bla():
    # cosines: all positive (the clamp changes nothing); one negative (alone at the bottom: nothing either);
    # two negatives (they tie at 0 in the authors' ranking: topk's order decides)
    cos = [[0.30, 0.25, 0.20, 0.10], [0.30, 0.25, 0.20, -0.10], [0.30, -0.05, -0.10, -0.20]]
    r = compute([[c] for c in cos], [BLA] * 3)
    assert r["scores"] == {"min": pytest.approx(-0.20), "max": pytest.approx(0.30), "n_negative": 2}
    assert r["scores"]["min"] <= r["scores"]["max"]
    authors = [_bla_rank_accuracy(c) for c in cos]  # from the raw cosines: vlprobe's sentence_acc
    clamped = [sum((i < 2 and k <= 2) or (i >= 2 and k > 2) for i, k in enumerate(_bla_clip_ranks(c))) / 4 for c in cos]
    assert r["sentence_acc"] == pytest.approx(np.mean(authors))
    assert clamped[:2] == authors[:2]  # without two negatives the clamp changes nothing
    assert (authors[2], clamped[2]) == (1.0, 0.5)  # [0.3, 0, 0, 0]: topk puts a false caption's 0 above the true one's
    from vlprobe.benchmarks import get

    rule = get("bla").clamped
    flag = rule.departure(r["scores"]["n_negative"], r["n_items"], family="dual")
    assert flag["setting"] == "scores" and flag["run"] == "2 of 3 items with a negative score"
    assert "2.5 * max(cos, 0)" in flag["note"] and "topk" in flag["note"]
    assert rule.departure(r["scores"]["n_negative"], r["n_items"], family="causal_lm") is None  # not cosines
    assert rule.departure(compute([[cos[0]]], [BLA])["scores"]["n_negative"], 1, family="dual") is None
    tagged = compute([[c] for c in cos], [BLA] * 3, tags=[["a"], ["a"], ["b"]])
    assert tagged["per_tag"]["a"]["scores"]["n_negative"] == 1 and tagged["per_tag"]["b"]["scores"]["n_negative"] == 1
