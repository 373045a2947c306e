"""TraVLR's four tasks as generators of examples (scene, query, its minimal foil, label), with the paper's
in-distribution / out-of-distribution split rules (``reference/travlr.md`` §5). The dataset card
(``vlprobe/templates/travlr_body.md``) gives the rules, the held-out cases and why no cheap statistic of the image or
caption tells the label (issues 25, 33; ``tests/test_travlr_shortcuts.py``).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .captions import travlr_caption
from .model import ALL_COLOURS, ALL_SHAPES, COLOURS, OBJECT_TYPES, QUANTIFIER_COLOURS, SHAPES, Scene, SceneObject, place
from .statements import Compare, Count, Quantifier, Spatial, Statement, foil, truth

TASKS = ("spatiality", "cardinality", "quantifiers", "numerical_comparison")
# Every shape covers the same pixels: the ink tells how many objects there are, not which shapes (issue 25).
RENDER_OPTIONS: dict[str, Any] = {"equal_area": True}
SPLITS = ("train", "validation", "test_ind", "test_ood")
IND_SPLITS = ("train", "validation", "test_ind")

# "paper": Table 3 (PAPER_TRAIN's training rows); "paper32k": the generator README's 32k for every task
SIZES: dict[str, dict[str, int]] = {
    "tiny": {"train": 8, "validation": 4, "test_ind": 4, "test_ood": 4},
    # enough training rows for a probe to learn something, test splits for +-7-point CIs
    "default": {"train": 2000, "validation": 200, "test_ind": 200, "test_ood": 200},
    "paper": {"train": 32000, "validation": 10000, "test_ind": 10000, "test_ood": 20000},
    "paper32k": {"train": 32000, "validation": 10000, "test_ind": 10000, "test_ood": 20000},
}
PAPER_TRAIN = {"spatiality": 32000, "cardinality": 8000, "quantifiers": 8000, "numerical_comparison": 8000}


def sizes_for(size: str, task: str) -> dict[str, int]:
    """Rows per split of ``task`` at the named ``size`` (tiny, default, paper, paper32k)."""
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r}; choose one of {sorted(SIZES)}")
    return {**SIZES[size], "train": PAPER_TRAIN[task]} if size == "paper" else dict(SIZES[size])


class GenerationError(RuntimeError):
    """The generator could not produce the requested rows (e.g. more unique rows than exist)."""


@dataclass(frozen=True)
class Example:
    """One TraVLR row before rendering: ``query`` has truth ``label`` on ``scene``; ``foil`` the opposite."""

    task: str
    split: str
    scene: Scene
    query: Statement
    foil: Statement
    label: bool
    subtype: str
    queried: frozenset[int]
    case: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    caption: str = ""

    def check(self) -> None:
        """Re-derive both labels with the truth function."""
        if truth(self.scene, self.query) is not self.label or truth(self.scene, self.foil) is self.label:
            raise GenerationError(f"{self.task}/{self.split}: labels disagree with the truth function: {self}")

    def objects(self) -> list[dict[str, Any]]:
        return [{**o.to_dict(), "queried": i in self.queried} for i, o in enumerate(self.scene.objects)]


SPATIAL_OOD_COLUMN_PAIRS = frozenset({(0, 4), (1, 3), (2, 5)})  # {A,E} {B,D} {C,F}
SPATIAL_OOD_ROW_PAIRS = frozenset({(1, 5), (0, 2), (3, 4)})  # rows {2,6} {1,3} {4,5}
ALL_INDEX_PAIRS = tuple(itertools.combinations(range(6), 2))


def spatial_object_pairs() -> tuple[list[tuple], list[tuple]]:
    """(InD, OOD) pairs of object types: the original's ``random.seed(6)`` shuffle of the 595, first 476 InD."""
    pairs = list(itertools.combinations(OBJECT_TYPES, 2))  # a tuple, not a set: a set of strings iterates in PYTHONHASHSEED order
    random.Random(6).shuffle(pairs)
    return pairs[:476], pairs[476:]


def spatial_index_pairs(axis: str, ood: bool) -> list[tuple[int, int]]:
    held = SPATIAL_OOD_COLUMN_PAIRS if axis == "left/right" else SPATIAL_OOD_ROW_PAIRS
    return [p for p in ALL_INDEX_PAIRS if (p in held) == ood]


# the original's table, with its off-by-one that gives square and pentagon the same held-out counts
CARDINALITY_OOD_COUNTS: dict[str, tuple[int, int]] = {
    "square": (4, 6), "circle": (1, 5), "triangle": (2, 6), "star": (1, 3),
    "hexagon": (2, 4), "octagon": (3, 5), "pentagon": (4, 6),
}


def cardinality_counts(shape: str, ood: bool) -> tuple[int, ...]:
    held = CARDINALITY_OOD_COUNTS[shape]
    return tuple(n for n in range(1, 7) if (n in held) == ood)


QUANTIFIER_OOD_TYPES = frozenset({
    ("square", "red"), ("circle", "blue"), ("triangle", "green"), ("star", "yellow"),
    ("hexagon", "orange"), ("octagon", "purple"), ("pentagon", "brown"),
})


def quantifier_types(ood: bool) -> list[tuple[str, str]]:
    """(shape X, colour Y) pairs of the split: 42 InD, the 7 "diagonal" pairs OOD."""
    return [(s, c) for s in SHAPES for c in QUANTIFIER_COLOURS if ((s, c) in QUANTIFIER_OOD_TYPES) == ood]


def quantifier_count_pairs() -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(InD, OOD) (n1, n2) pairs: the original's ``random.seed(1)`` shuffle of {1..5}^2, 20 + 5."""
    pairs = list(itertools.product(range(1, 6), repeat=2))
    random.Random(1).shuffle(pairs)
    return sorted(pairs[:20]), sorted(pairs[20:])


# The paper's Table 1: each quantifier's <a, b> as regions "xy" (shape X, colour Y), "x" (X \ Y), "y" (Y \ X); an
# instance is "for" the quantifier its scene makes true (the card's "Quantifier pairs").
QUANTIFIER_ORDER = ("all", "not all", "some", "none", "only", "not only")
QUANTIFIER_PAIRS: dict[str, tuple[str, str]] = {
    "all": ("xy", "y"),  # <X n Y, Y \ X>; "x" is empty, so every X is Y
    "not all": ("xy", "x"),  # <X n Y, X \ Y>
    "none": ("x", "y"),  # <X \ Y, Y \ X>; "xy" is empty
    "some": ("x", "xy"),  # <X \ Y, X n Y>
    "only": ("xy", "x"),  # <X n Y, X \ Y>; "y" is empty, so every Y is X
    "not only": ("xy", "y"),  # <X n Y, Y \ X>
}


def quantifier_case(quantifier: str, label: bool) -> str:
    """The quantifier the scene makes true: ``quantifier`` itself if ``label`` else its negation."""
    return quantifier if label else Quantifier(quantifier, "square", "red").negation().quantifier


COMPARE_OOD_MIN_DIFF = 4


def compare_shape_pairs() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(InD, OOD) unordered shape pairs: 17 + 4, ours from ``random.Random(6)`` (the original drew them unseeded)."""
    pairs = list(itertools.combinations(SHAPES, 2))
    ood = random.Random(6).sample(pairs, 4)
    return [p for p in pairs if p not in ood], sorted(ood)


def compare_count_pairs(ood: bool) -> list[tuple[int, int]]:
    """Ordered (a, b), a != b in 1..9: |a - b| in 1..3 InD (42), >= 4 OOD (30)."""
    return [
        (a, b) for a in range(1, 10) for b in range(1, 10)
        if a != b and (abs(a - b) >= COMPARE_OOD_MIN_DIFF) == ood
    ]


def _spatial(rng: random.Random, split: str, label: bool, axis: str) -> Example:
    ood = split == "test_ood"
    ind_pairs, ood_pairs = _SPATIAL_PAIRS
    pair = list(rng.choice(ood_pairs if ood else ind_pairs))
    rng.shuffle(pair)
    (c1, s1), (c2, s2) = pair
    lo, hi = rng.choice(spatial_index_pairs(axis, ood))
    first, second = (lo, hi) if rng.random() < 0.5 else (hi, lo)
    if axis == "left/right":
        cells = [(rng.randrange(6), first), (rng.randrange(6), second)]
        relations = ("left", "right")
    else:
        cells = [(first, rng.randrange(6)), (second, rng.randrange(6))]
        relations = ("above", "below")
    queried = [SceneObject(s1, c1, *cells[0]), SceneObject(s2, c2, *cells[1])]
    distractor_type = rng.choice([t for t in OBJECT_TYPES if t not in pair])
    objects = queried + place([distractor_type], rng, taken=cells)
    scene = Scene(tuple(objects))
    options = [
        Spatial(a, rel, b) for a, b in ((pair[0], pair[1]), (pair[1], pair[0])) for rel in relations
    ]
    query = rng.choice([q for q in options if truth(scene, q) is label])
    return Example(
        task="spatiality", split=split, scene=scene, query=query, foil=foil(scene, query), label=label,
        subtype=axis, queried=frozenset({0, 1}),
        case={"relationship": axis, "objects": [list(t) for t in pair], "index_pair": [lo, hi]},
    )


@functools.cache
def _distractor_sets_by_total(excluded: tuple[str, ...], ood: bool) -> dict[int, tuple[tuple[tuple[str, int], ...], ...]]:
    """{total: every (shape, count) tuple of the shapes not in ``excluded`` with counts of the split}."""
    sets: list[tuple[tuple[str, int], ...]] = [()]
    for other in (s for s in SHAPES if s not in excluded):
        sets = [combo + ((other, k),) for combo in sets for k in cardinality_counts(other, ood)] + sets
    by_total: dict[int, list] = {}
    for combo in sets:
        by_total.setdefault(sum(k for _, k in combo), []).append(combo)
    return {total: tuple(sorted(combos)) for total, combos in by_total.items()}


def cardinality_scene_sizes(shape: str, ood: bool) -> range:
    """Object counts a scene with the queried ``shape`` can have whatever its true count (1..10 distractors)."""
    counts = cardinality_counts(shape, ood)
    return range(max(counts) + 1, min(counts) + 10 + 1)


@functools.cache
def cardinality_layouts(shape: str, ood: bool) -> dict[int, tuple[tuple[int, int, tuple[tuple[str, int], ...]], ...]]:
    """{scene size: every (n, m, companions)}: n of ``shape``, a partner with m and, where none could hold n too, a
    mirror that could (with a third count): the group sizes do not tell which of n and m is the queried shape's."""
    counts = cardinality_counts(shape, ood)
    sizes = cardinality_scene_sizes(shape, ood)
    held = {s: cardinality_counts(s, ood) for s in SHAPES if s != shape}
    layouts: dict[int, list] = {}
    for n, m in itertools.permutations(counts, 2):
        both = [s for s in held if {n, m} <= set(held[s])]
        companions = [((p, m),) for p in both] or [
            ((p, m), (q, k)) for p in held if m in held[p] for q in held if q != p and n in held[q]
            for k in held[q] if k not in (n, m)]
        for group in companions:
            excluded = (shape, *(c for c, _ in group))
            for rest in _distractor_sets_by_total(excluded, ood):
                total = n + sum(k for _, k in group) + rest
                if total in sizes:
                    layouts.setdefault(total, []).append((n, m, group))
    return {total: tuple(found) for total, found in sorted(layouts.items())}


def _cardinality(rng: random.Random, split: str, label: bool) -> Example:
    """A row: n of the queried shape, m of a partner; the query asks n (true) or m (false), the scene drawn first."""
    ood = split == "test_ood"
    shape = rng.choice(SHAPES)
    layouts = cardinality_layouts(shape, ood)
    total = rng.choice(list(layouts))
    n, m, companions = rng.choice(layouts[total])
    groups = ((shape, n), *companions)
    distractor_sets = _distractor_sets_by_total(tuple(c for c, _ in groups), ood).get(total - sum(k for _, k in groups), ())
    types = [(rng.choice(COLOURS), s) for s, k in groups for _ in range(k)]
    for other, k in rng.choice(distractor_sets):
        types += [(rng.choice(COLOURS), other) for _ in range(k)]
    scene = Scene(tuple(place(types, rng)))
    asked, other = (n, m) if label else (m, n)
    return Example(
        task="cardinality", split=split, scene=scene, query=Count(asked, shape), foil=Count(other, shape),
        label=label, subtype=shape, queried=frozenset(range(n)),
        case={"shape": shape, "number": asked, "true_number": n, "partner": companions[0][0], "partner_number": m,
              "mirror": list(companions[1]) if len(companions) > 1 else None},
    )


class Regions(NamedTuple):
    """Objects in each region of a quantifier instance (see ``QUANTIFIER_PAIRS``)."""

    xy: int = 0
    x: int = 0
    y: int = 0


def quantifier_regions(case: str, pair: tuple[int, int], extra: int = 0) -> Regions:
    """Objects in each region of an instance for ``case`` with Table-1 ``pair`` (``extra``: Y \\ X of "not all")."""
    regions = Regions(**dict(zip(QUANTIFIER_PAIRS[case], pair, strict=True)))
    return regions._replace(y=extra) if case == "not all" else regions


def quantifier_extras(case: str, p1: int, ood: bool) -> list[int]:
    """The ``extra`` Y \\ X objects an instance for ``case`` may hold ("not all": so its "all" pair is a split's)."""
    return [b for a, b in _QUANT_COUNTS[ood] if a == p1] if case == "not all" else [0]


def _y_objects(case: str, pair: tuple[int, int], extra: int) -> int:
    regions = quantifier_regions(case, pair, extra)
    return regions.xy + regions.y


@functools.cache
def quantifier_instance_pairs(quantifier: str, ood: bool) -> tuple[tuple[tuple, tuple], ...]:
    """Every ((pair, extra) for ``quantifier``, (pair, extra) for its negation) holding as many objects of colour Y."""
    negation = quantifier_case(quantifier, False)
    options = {case: [(pair, extra) for pair in _QUANT_COUNTS[ood] for extra in quantifier_extras(case, pair[0], ood)]
               for case in (quantifier, negation)}
    return tuple((t, f) for t in options[quantifier] for f in options[negation]
                 if _y_objects(quantifier, *t) == _y_objects(negation, *f))


QUANTIFIER_DISTRACTORS = (0, 4)  # objects beyond the two instances (the other instance is a distractor too)


def _instance_types(case: str, pair: tuple[int, int], extra: int, x: str, y: str, rng: random.Random,
                    colours: list[str], shapes: list[str]) -> tuple[list[tuple[str, str]], dict[str, Any]]:
    """The (colour, shape) of each object of an instance for ``case`` about ``x`` and ``y``, its pair's first."""
    regions = quantifier_regions(case, pair, extra)
    z, w = rng.choice(colours), rng.choice(shapes)
    types = [(y, x)] * regions.xy + [(z, x)] * regions.x + [(y, w)] * regions.y
    return types, {"case": case, "pair": list(pair), "shape": x, "colour": y, "regions": regions._asdict(),
                   "companions": {"x": z, "y": w}}


def _quantifiers(rng: random.Random, split: str, label: bool, quantifier: str) -> Example:
    """A row: instances for the quantifier and its negation; the label only decides which the query names."""
    ood = split == "test_ood"
    x, y = rng.choice(_QUANT_TYPES[ood])
    other_x = rng.choice([s for s in SHAPES if s != x])
    other_y = rng.choice([c for c in QUANTIFIER_COLOURS if c != y])
    (t_pair, t_extra), (f_pair, f_extra) = rng.choice(quantifier_instance_pairs(quantifier, ood))
    negation = quantifier_case(quantifier, False)
    colours = [c for c in ALL_COLOURS if c not in (y, other_y)]
    shapes = [s for s in ALL_SHAPES if s not in (x, other_x)]
    true_type, false_type = ((x, y), (other_x, other_y)) if label else ((other_x, other_y), (x, y))
    true_types, true_case = _instance_types(quantifier, t_pair, t_extra, *true_type, rng, colours, shapes)
    false_types, false_case = _instance_types(negation, f_pair, f_extra, *false_type, rng, colours, shapes)
    distractors = [(rng.choice(colours), rng.choice(shapes)) for _ in range(rng.randint(*QUANTIFIER_DISTRACTORS))]
    placed = place(true_types + false_types + distractors, rng)
    true_objects, false_objects = placed[:len(true_types)], placed[len(true_types):len(true_types) + len(false_types)]
    rest = placed[len(true_types) + len(false_types):]
    # the queried instance's objects first (its pair's first of all), then the other's, then the distractors
    objects, case, other_case = ((true_objects + false_objects, true_case, false_case) if label
                                 else (false_objects + true_objects, false_case, true_case))
    scene = Scene(tuple(objects + rest))
    query = Quantifier(quantifier, x, y)
    n_pair = sum(t_pair if label else f_pair)
    return Example(
        task="quantifiers", split=split, scene=scene, query=query, foil=foil(scene, query), label=label,
        subtype=query.quantifier, queried=frozenset(range(n_pair)),  # the pair's objects come first
        case={**case, "other": other_case, "distractors": len(distractors)},
    )


def _numerical(rng: random.Random, split: str, label: bool) -> Example:
    ood = split == "test_ood"
    x, y = rng.choice(_COMPARE_PAIRS[ood])
    if rng.random() < 0.5:
        x, y = y, x
    a, b = rng.choice(compare_count_pairs(ood))
    types = [(rng.choice(COLOURS), x) for _ in range(a)] + [(rng.choice(COLOURS), y) for _ in range(b)]
    others = [s for s in SHAPES if s not in (x, y)]
    k = rng.randint(1, 10)
    types += [(rng.choice(COLOURS), rng.choice(others)) for _ in range(k)]
    scene = Scene(tuple(place(types, rng)))
    relation = "more" if (a > b) == label else "fewer"
    query = Compare(relation, x, y)
    return Example(
        task="numerical_comparison", split=split, scene=scene, query=query, foil=foil(scene, query), label=label,
        subtype=relation, queried=frozenset(range(a + b)),
        case={"x": x, "y": y, "a": a, "b": b, "distractors": k},
    )


_SPATIAL_PAIRS = spatial_object_pairs()
_QUANT_TYPES = {False: quantifier_types(False), True: quantifier_types(True)}
_QUANT_COUNTS = dict(zip((False, True), quantifier_count_pairs()))
_COMPARE_PAIRS = dict(zip((False, True), compare_shape_pairs()))

# What each split balances, cycled (an even size is exactly balanced): the label, with spatiality's axis and
# the quantifier (each (quantifier, label) cell equally often, as the paper's Figures 10-11).
_LABELS = ((True,), (False,), (False,), (True,))
_STRATA: dict[str, tuple[tuple, ...]] = {
    "spatiality": ((True, "left/right"), (False, "above/below"), (False, "left/right"), (True, "above/below")),
    "quantifiers": tuple((label, q) for q in QUANTIFIER_ORDER for label in (True, False)),
}

_MAKERS: dict[str, Callable[..., Example]] = {
    "spatiality": _spatial, "cardinality": _cardinality, "quantifiers": _quantifiers, "numerical_comparison": _numerical,
}


def generate_task(task: str, sizes: dict[str, int], seed: int = 0, max_tries: int = 1000) -> dict[str, list[Example]]:
    """All splits of ``task`` (``sizes``: rows per split), deterministic in ``seed``, unrendered."""
    if task not in _MAKERS:
        raise ValueError(f"unknown TraVLR task {task!r}; choose one of {TASKS}")
    unknown = set(sizes) - set(SPLITS)
    if unknown:
        raise ValueError(f"unknown split(s) {sorted(unknown)}; splits are {SPLITS}")
    rng = random.Random(f"vlprobe-travlr:{task}:{seed}")  # a str seed hashes with sha512: stable across runs
    seen: set = set()
    out: dict[str, list[Example]] = {}
    for split in SPLITS:
        n = int(sizes.get(split, 0))
        if n < 0:
            raise ValueError(f"size of split {split!r} must be >= 0, got {n}")
        plan = list(itertools.islice(itertools.cycle(_STRATA.get(task, _LABELS)), n))
        rng.shuffle(plan)
        rows: list[Example] = []
        for label, *stratum in plan:
            for _ in range(max_tries):
                ex = _MAKERS[task](rng, split, label, *stratum)
                key = (ex.scene.key(), ex.query)
                if key not in seen:
                    break
            else:
                raise GenerationError(
                    f"{task}/{split}: no new unique row after {max_tries} draws ({len(rows)} of {n} made)"
                )
            seen.add(key)
            ex = dataclasses.replace(ex, caption=travlr_caption(ex.scene, rng))
            ex.check()
            rows.append(ex)
        out[split] = rows
    return out


def to_row(ex: Example, index: int) -> dict[str, Any]:
    """The dataset row of ``ex`` (without the image, which the builder renders)."""
    return {
        "id": f"{ex.task}-{ex.split}-{index:06d}",
        "caption": ex.caption,
        "query": ex.query.text(),
        "foil_query": ex.foil.text(),
        "label": ex.label,
        "subtype": ex.subtype,
        "objects": ex.objects(),
        "query_form": json.dumps(ex.query.to_dict(), sort_keys=True),
        "foil_form": json.dumps(ex.foil.to_dict(), sort_keys=True),
        "case": json.dumps(ex.case, sort_keys=True),
    }
