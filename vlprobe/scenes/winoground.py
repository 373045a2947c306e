"""Winoground-style 2x2 instruments on synthetic scenes (``CONFIGS``; the dataset card,
``vlprobe/templates/winoground_style_body.md``, shows each and why only the words tell the two images apart):
two images, two captions with the same words in another order, each caption true of exactly one image.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from .model import ALL_CELLS, COLOURS, OBJECT_TYPES, SHAPES, Scene, SceneObject, place
from .statements import And, Count, Exists, Spatial, Statement, truth

CONFIGS = ("spatial_swap", "attribute_swap", "count_swap")
RENDER_OPTIONS: dict[str, Any] = {"equal_area": True, "centred": True}
SIZES = {"tiny": 8, "default": 400, "paper": 400}  # Winoground itself has 400 items

# (tag, secondary_tag, num_main_preds, collapsed_tag) in Winoground's vocabulary
TAGS: dict[str, tuple[str, str, int, str]] = {
    "spatial_swap": ("Noun Phrase", "Symbolic", 1, "Object"),
    "attribute_swap": ("Adjective-Color", "Symbolic", 1, "Relation"),
    "count_swap": ("Adjective-Number", "Symbolic", 1, "Relation"),
}
COUNTS = (2, 3, 4, 5)  # plural, so that both captions use the same words


class WinoError(RuntimeError):
    """A generated item that breaks the Winoground contract (should never happen)."""


@dataclass(frozen=True)
class WinoItem:
    config: str
    scene_0: Scene
    scene_1: Scene
    statement_0: Statement
    statement_1: Statement

    @property
    def caption_0(self) -> str:
        return self.statement_0.phrase()

    @property
    def caption_1(self) -> str:
        return self.statement_1.phrase()

    def truth_matrix(self) -> list[list[bool]]:
        """``[i][j]``: is caption j true of image i (the gold matrix, from the truth function)."""
        return [[truth(sc, st) for st in (self.statement_0, self.statement_1)] for sc in (self.scene_0, self.scene_1)]

    def check(self) -> None:
        if self.truth_matrix() != [[True, False], [False, True]]:
            raise WinoError(f"{self.config}: captions are not each true of exactly one image: {self}")
        if sorted(self.caption_0.split()) != sorted(self.caption_1.split()) or self.caption_0 == self.caption_1:
            raise WinoError(f"{self.config}: captions do not use the same words in another order: {self}")


def _distractors(rng: random.Random, exclude_types: set, taken: list[tuple[int, int]], exclude_shapes=()) -> list[SceneObject]:
    pool = [t for t in OBJECT_TYPES if t not in exclude_types and t[1] not in exclude_shapes]
    types = [rng.choice(pool) for _ in range(rng.randint(0, 3))]
    return place(types, rng, taken=taken)


def _spatial_swap(rng: random.Random) -> WinoItem:
    shape = rng.choice(SHAPES)
    a, b = ((c, shape) for c in rng.sample(COLOURS, 2))  # one shape: the ink is the same in both images
    relation = rng.choice(("left", "right", "above", "below"))
    while True:
        p, q = rng.sample(ALL_CELLS, 2)
        axis = 1 if relation in ("left", "right") else 0
        if p[axis] != q[axis]:
            break
    # put a at p and b at q such that "a relation b" holds
    forward = p[axis] < q[axis] if relation in ("left", "above") else p[axis] > q[axis]
    if not forward:
        p, q = q, p
    others = _distractors(rng, {a, b}, [p, q])
    scene_0 = Scene((SceneObject(a[1], a[0], *p), SceneObject(b[1], b[0], *q), *others))
    scene_1 = Scene((SceneObject(a[1], a[0], *q), SceneObject(b[1], b[0], *p), *others))
    return WinoItem("spatial_swap", scene_0, scene_1, Spatial(a, relation, b), Spatial(b, relation, a))


def _attribute_swap(rng: random.Random) -> WinoItem:
    s1, s2 = rng.sample(SHAPES, 2)
    c1, c2 = rng.sample(COLOURS, 2)
    p, q = rng.sample(ALL_CELLS, 2)
    others = _distractors(rng, {(c1, s1), (c2, s2), (c2, s1), (c1, s2)}, [p, q])
    scene_0 = Scene((SceneObject(s1, c1, *p), SceneObject(s2, c2, *q), *others))
    scene_1 = Scene((SceneObject(s1, c2, *p), SceneObject(s2, c1, *q), *others))
    return WinoItem(
        "attribute_swap", scene_0, scene_1,
        And((Exists(c1, s1), Exists(c2, s2))), And((Exists(c2, s1), Exists(c1, s2))),
    )


def _inside(cells: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The cells strictly inside the rows and the columns ``cells`` span."""
    rows, cols = [r for r, _ in cells], [c for _, c in cells]
    return [(r, c) for r, c in cells if min(rows) < r < max(rows) and min(cols) < c < max(cols)]


def _count_swap(rng: random.Random) -> WinoItem:
    s1, s2 = rng.sample(SHAPES, 2)
    a, b = rng.sample(COUNTS, 2)
    changed = abs(a - b)  # the objects whose shape differs between the images
    while True:  # those lie inside: shapes' extents differ, so one on an edge would move the bounding box
        cells = rng.sample(ALL_CELLS, a + b)
        inside = _inside(cells)
        if len(inside) >= changed:
            break
    swapped = set(rng.sample(inside, changed))
    rest = [cell for cell in cells if cell not in swapped]  # min(a, b) of each shape, in both images
    fixed = dict(zip(rest, [s1] * min(a, b) + [s2] * min(a, b)))
    in_0, in_1 = (s1, s2) if a > b else (s2, s1)  # the swapped cells' shape: image 0 has a of s1, b of s2
    colour = rng.choice(COLOURS)  # one colour: each colour's pixels have the bounding box of the ink
    others = _distractors(rng, set(), cells, exclude_shapes=(s1, s2))
    scene_0, scene_1 = (Scene(tuple(SceneObject(fixed.get(cell, shape), colour, *cell) for cell in cells) + tuple(others))
                        for shape in (in_0, in_1))
    return WinoItem(
        "count_swap", scene_0, scene_1,
        And((Count(a, s1), Count(b, s2))), And((Count(b, s1), Count(a, s2))),
    )


_MAKERS = {"spatial_swap": _spatial_swap, "attribute_swap": _attribute_swap, "count_swap": _count_swap}


def generate(config: str, n: int, seed: int = 0, max_tries: int = 1000) -> list[WinoItem]:
    """``n`` distinct items of ``config``, deterministic in ``seed``; each one checked."""
    if config not in _MAKERS:
        raise ValueError(f"unknown Winoground-style config {config!r}; choose one of {CONFIGS}")
    if n < 0:
        raise ValueError(f"number of items must be >= 0, got {n}")
    rng = random.Random(f"vlprobe-winoground-style:{config}:{seed}")
    seen: set = set()
    items: list[WinoItem] = []
    while len(items) < n:
        for _ in range(max_tries):
            item = _MAKERS[config](rng)
            key = (item.scene_0.key(), item.scene_1.key(), item.caption_0)
            if key not in seen:
                break
        else:
            raise WinoError(f"{config}: no new distinct item after {max_tries} draws ({len(items)} of {n} made)")
        seen.add(key)
        item.check()
        items.append(item)
    return items


def to_row(item: WinoItem, index: int) -> dict[str, Any]:
    """facebook/winoground's columns (images aside), then the scenes and the captions' structured forms."""
    tag, secondary, preds, collapsed = TAGS[item.config]
    return {
        "id": index,
        "caption_0": item.caption_0,
        "caption_1": item.caption_1,
        "tag": tag,
        "secondary_tag": secondary,
        "num_main_preds": preds,
        "collapsed_tag": collapsed,
        "objects_0": item.scene_0.to_records(),
        "objects_1": item.scene_1.to_records(),
        "form_0": json.dumps(item.statement_0.to_dict(), sort_keys=True),
        "form_1": json.dumps(item.statement_1.to_dict(), sort_keys=True),
        "instrument": item.config,
        "key": f"{item.config}/{index}",
    }
