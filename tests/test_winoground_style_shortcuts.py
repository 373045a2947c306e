"""No winoground_style instrument can be solved by cheap statistics (issue 49).

Before issue 49, a rule on the pixels of each named colour (with the shapes' areas) picked caption 0's
image in 98% of attribute_swap items, the ink did as well for count_swap. Now every image statistic that
does not read what the words bind is the same in both images of an item (see vlprobe/scenes/winoground.py),
and classifiers on them stay at chance.

The task a baseline is given: a caption and the item's two images in either order (A, B); say whether A
is the caption's image. Each item gives four such rows (each caption, each order), half of them true. A
statistic of the caption alone, or of the images alone, is at chance by construction (each caption is right
for one image and wrong for the other, and each image for one caption); what can help is the two together.
Features, each group with the caption's (its words, and its colours, shapes, numbers and relation in the
order named):

- ink: the ink (pixels not white), the objects, the distinct colours, the smallest and the largest object,
  the objects per row and per column;
- colour_pixels: the pixels of each colour;
- layout: the centroid and the bounding box of the ink;
- colour_layout: the centroid and the bounding box of each colour's pixels;
- named: the statistics the caption singles out, the issue's rules: the pixels of each named colour, alone
  and times the difference of the named shapes' areas; the ink times that difference and the order of the
  numbers; the centroid and bounding box of the ink times it and the relation's direction;
- named_layout: the centroid, bounding box, width and height of each named colour's pixels, and its
  centroid along the relation's axis times the relation's direction;

each as image A's minus image B's. Where a colour is (its centroid) is what spatial_swap asks, and which
shape a colour makes (the extent of its pixels) what attribute_swap asks: ``colour_layout`` and
``named_layout`` are the content of those two instruments, not cheap cues there, and are bounded on
count_swap only (its captions name no colour, and each colour's pixels are the same in both images).
test_cheap_statistics_are_the_same_in_both_images checks that exactly, on every item of a build. The
classifiers (tests/helpers_cues.py): logistic regression and gradient boosting, trained on TRAIN items and
tested on TEST others (accuracy over their rows); the content sets show they find what is there.

The statistics are computed from each object's pixels as rendered alone
(test_scene_statistics_are_the_rendered_images_statistics holds them equal to the rendered images'), so no
image is rendered for the baselines.
"""

from __future__ import annotations

import dataclasses
import functools
import random
import re

import numpy as np
import pytest
from helpers_cues import MODELS, Pixels, Vectoriser, assert_documented, fit_predict_matrix, object_pixels, shape_areas

from vlprobe import scenes as S
from vlprobe.scenes import winoground as W
from vlprobe.scenes.statements import Spatial

TRAIN, TEST = 600, 400  # items per instrument; rows are 4 per item
CHEAP_BOUND = 0.58  # accuracy on 1,600 rows of 400 items: sd about 0.025 at chance (items' rows are not independent)
RENDER_OPTIONS = W.RENDER_OPTIONS  # as the builder renders
PAPER_GEOMETRY: dict = {}  # TraVLR's MEDIUM shapes (742 to 1,581 px): the rendering before issue 49
_WHITE = (255, 255, 255)
_PALETTE = {rgb: name for name, rgb in S.RGB.items()}
CONTENT = {"spatial_swap": ("colour_layout", "named_layout"), "attribute_swap": ("colour_layout", "named_layout"),
           "count_swap": ()}
NUMBERS = {"two": 2, "three": 3, "four": 4, "five": 5}
_SHAPE_WORD = {**{s: s for s in S.SHAPES}, **{s + "s": s for s in S.SHAPES}}
_WORD = re.compile(r"[a-z]+")


def _stats(ink: Pixels, by_colour: dict[str, Pixels], objects: list[int], cells: list[tuple[int, int]]) -> dict:
    def layout(p: Pixels | None) -> dict[str, float]:
        if p is None:
            return {"cx": 0.0, "cy": 0.0, "x0": 0.0, "x1": 0.0, "y0": 0.0, "y1": 0.0, "present": 0.0}
        return {"cx": p.sx / p.n, "cy": p.sy / p.n, "x0": float(p.x0), "x1": float(p.x1), "y0": float(p.y0),
                "y1": float(p.y1), "present": 1.0}

    return {
        "ink": {"ink": ink.n / 1000, "objects": float(len(objects)), "colours": float(len(by_colour)),
                "smallest": min(objects) / 1000, "largest": max(objects) / 1000,
                **{f"row{i}": float(sum(r == i for r, _ in cells)) for i in range(S.GRID)},
                **{f"col{i}": float(sum(c == i for _, c in cells)) for i in range(S.GRID)}},
        "colour_pixels": {c: (by_colour[c].n if c in by_colour else 0) / 1000 for c in S.COLOURS},
        "layout": layout(ink),
        "colour_layout": {f"{c}_{k}": v for c in S.COLOURS for k, v in layout(by_colour.get(c)).items()},
    }


def image_stats(img) -> dict[str, dict[str, float]]:
    """The statistics of a rendered image, read from its pixels (objects found as 4-connected components)."""
    from scipy import ndimage

    arr = np.asarray(img.convert("RGB"))
    inked = (arr != 255).any(axis=2)
    by_colour = {}
    for c in S.COLOURS:
        mask = (arr == S.RGB[c]).all(axis=2)
        if mask.any():
            by_colour[c] = Pixels.of(mask)
    labels, n = ndimage.label(inked)
    sizes = [int(s) for s in np.bincount(labels.ravel())[1:]]
    centres = [S.cell_centre(r, c) for r in range(S.GRID) for c in range(S.GRID)]
    cells = [(i // S.GRID, i % S.GRID) for i, (x, y) in enumerate(centres) if inked[y, x]]
    return _stats(Pixels.of(inked), by_colour, sizes, cells)


def scene_stats(scene, options: dict) -> dict[str, dict[str, float]]:
    """:func:`image_stats` of ``scene`` rendered with ``options``, from each object's pixels, without rendering."""
    pixels = [object_pixels(o.shape, o.row, o.column, options) for o in scene]
    by_colour = {c: Pixels.union([p for o, p in zip(scene, pixels) if o.colour == c]) for c in {o.colour for o in scene}}
    return _stats(Pixels.union(pixels), by_colour, [p.n for p in pixels], [o.cell for o in scene])


@dataclasses.dataclass(frozen=True)
class Caption:
    """What a caption names, read from its words."""

    text: str
    colours: tuple[str, ...]
    shapes: tuple[str, ...]
    numbers: tuple[int, ...]
    relation: str

    @classmethod
    def read(cls, text: str) -> "Caption":
        words = _WORD.findall(text.lower())
        relation = next((r for r in ("left", "right", "above", "below") if r in words), "")
        return cls(text, tuple(w for w in words if w in S.COLOURS), tuple(_SHAPE_WORD[w] for w in words if w in _SHAPE_WORD),
                   tuple(NUMBERS[w] for w in words if w in NUMBERS), relation)

    def features(self) -> dict[str, float]:
        words = _WORD.findall(self.text.lower())
        out = {f"w:{w}": 1.0 for w in words}
        out.update({f"w:{a}_{b}": 1.0 for a, b in zip(words, words[1:])})
        out.update({f"colour{i}={c}": 1.0 for i, c in enumerate(self.colours)})
        out.update({f"shape{i}={s}": 1.0 for i, s in enumerate(self.shapes)})
        out.update({f"number{i}": float(n) for i, n in enumerate(self.numbers)})
        out[f"relation={self.relation}"] = 1.0
        out["characters"] = len(self.text) / 10
        return out

    @property
    def direction(self) -> tuple[str, float]:
        """The axis the relation is on and the sign of the subject's offset from the object along it."""
        return {"left": ("cx", -1.0), "right": ("cx", 1.0), "above": ("cy", -1.0), "below": ("cy", 1.0)}.get(
            self.relation, ("cx", 0.0))


def named_cues(cap: Caption, a: dict, b: dict, areas: dict[str, float]) -> dict[str, float]:
    """The statistics the caption singles out, image A's minus image B's (see the module's doc)."""
    out = {}
    s = cap.shapes
    prior = (areas[s[0]] - areas[s[-1]]) / 1000 if s else 0.0  # first-named shape's area minus the last one's
    for i, c in enumerate(cap.colours[:2]):
        d = a["colour_pixels"][c] - b["colour_pixels"][c]
        out[f"colour{i}_pixels"] = d
        out[f"colour{i}_pixels_x_area"] = d * (prior if i == 0 else -prior)
    order = np.sign(cap.numbers[0] - cap.numbers[1]) if len(cap.numbers) == 2 else 1.0
    out["ink_x_area_x_order"] = (a["ink"]["ink"] - b["ink"]["ink"]) * prior * order
    axis, sign = cap.direction
    for k in ("cx", "cy", "x0", "x1", "y0", "y1"):
        d = a["layout"][k] - b["layout"][k]
        out[f"layout_{k}"] = d
        out[f"layout_{k}_x_area_x_direction"] = d * prior * (sign if k[1] == axis[1] else 0.0)
    return out


def named_layout(cap: Caption, a: dict, b: dict) -> dict[str, float]:
    """Where each named colour is and the extent of its pixels, image A's minus image B's."""
    out = {}
    axis, sign = cap.direction
    for i, c in enumerate(cap.colours[:2]):
        la, lb = ({k: s["colour_layout"][f"{c}_{k}"] for k in ("cx", "cy", "x0", "x1", "y0", "y1")} for s in (a, b))
        for k in la:
            out[f"colour{i}_{k}"] = la[k] - lb[k]
        out[f"colour{i}_width"] = (la["x1"] - la["x0"]) - (lb["x1"] - lb["x0"])
        out[f"colour{i}_height"] = (la["y1"] - la["y0"]) - (lb["y1"] - lb["y0"])
        out[f"colour{i}_along_relation"] = (la[axis] - lb[axis]) * sign
    return out


def item_rows(items: list, options: dict) -> tuple[list[tuple[Caption, dict, dict]], np.ndarray]:
    """Four rows per item: (caption, image A's statistics, image B's), true when A is the caption's image."""
    out, gold = [], []
    for it in items:
        stats = [scene_stats(it.scene_0, options), scene_stats(it.scene_1, options)]
        for k, text in enumerate((it.caption_0, it.caption_1)):
            cap = Caption.read(text)
            for first in (0, 1):
                out.append((cap, stats[first], stats[1 - first]))
                gold.append(first == k)
    return out, np.array(gold)


def features(row: tuple[Caption, dict, dict], groups: tuple[str, ...], areas: dict[str, float]) -> dict[str, float]:
    cap, a, b = row
    feats = {f"caption:{k}": v for k, v in cap.features().items()} if "caption" in groups else {}
    for g in groups:
        if g in ("ink", "colour_pixels", "layout", "colour_layout"):
            feats.update({f"{g}:{k}": a[g][k] - b[g][k] for k in a[g]})
    if "named" in groups:
        feats.update({f"named:{k}": v for k, v in named_cues(cap, a, b, areas).items()})
    if "named_layout" in groups:
        feats.update({f"named_layout:{k}": v for k, v in named_layout(cap, a, b).items()})
    return feats


CAPTION = ("caption",)
CHEAP_SETS = {  # name -> groups
    "caption": CAPTION,
    "image": ("ink", "colour_pixels", "layout", "colour_layout"),
    "caption + ink": CAPTION + ("ink",),
    "caption + colour_pixels": CAPTION + ("colour_pixels",),
    "caption + layout": CAPTION + ("layout",),
    "caption + colour_layout": CAPTION + ("colour_layout",),
    "caption + named": CAPTION + ("named",),
    "caption + named_layout": CAPTION + ("named_layout",),
    "everything": CAPTION + ("ink", "colour_pixels", "layout", "named"),
    "everything + layouts": CAPTION + ("ink", "colour_pixels", "layout", "colour_layout", "named", "named_layout"),
}


def is_content(name: str, config: str) -> bool:
    """Whether a feature set holds what ``config`` asks about (not a cheap cue there)."""
    return any(g in CHEAP_SETS[name] for g in CONTENT[config])


def baselines(config: str, options: dict | None = None, items: tuple | None = None,
              sets: tuple[str, ...] | None = None) -> dict[tuple[str, str], float]:
    """{(feature set, model): accuracy} on TEST items of ``config`` (or ``items``: train, test) trained on TRAIN
    others, with the images' statistics as rendered with ``options`` (default: as the builder)."""
    pytest.importorskip("sklearn")  # a dev extra
    options = RENDER_OPTIONS if options is None else options
    train, test = items or train_test_items(config)
    sets = sets or tuple(CHEAP_SETS)
    every = tuple(dict.fromkeys(g for name in sets for g in CHEAP_SETS[name]))
    areas = shape_areas(options)
    (tr, y_tr), (te, y_te) = item_rows(train, options), item_rows(test, options)
    f_tr = [features(r, every, areas) for r in tr]
    vec = Vectoriser(f_tr)  # every group's features at once; each set takes its columns
    x_tr, x_te = vec.raw(f_tr), vec.raw([features(r, every, areas) for r in te])
    out = {}
    for name in sets:
        cols = vec.columns(tuple(f"{g}:" for g in CHEAP_SETS[name]))
        for model in MODELS:
            (pred,) = fit_predict_matrix(model, x_tr[:, cols], y_tr, [x_te[:, cols]])
            out[name, model] = float(np.mean(pred == y_te))
    return out


@functools.lru_cache(maxsize=None)
def train_test_items(config: str) -> tuple[list, list]:
    """TRAIN items and TEST others (a seed no build uses, so as not to fit the built items)."""
    items = W.generate(config, TRAIN + TEST, seed=49)
    return items[:TRAIN], items[TRAIN:]


@functools.lru_cache(maxsize=None)
def measured(config: str) -> dict[tuple[str, str], float]:
    """The baselines of ``config``, fitted once per test session."""
    return baselines(config)


# ---- tests ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("options", [RENDER_OPTIONS, PAPER_GEOMETRY], ids=["as_built", "paper_geometry"])
def test_scene_statistics_are_the_rendered_images_statistics(options):
    for config in W.CONFIGS:
        for it in W.generate(config, 4, seed=1):
            for scene in (it.scene_0, it.scene_1):
                assert scene_stats(scene, options) == image_stats(S.render(scene, **options)), (config, scene)


CHEAP_GROUPS = ("ink", "colour_pixels", "layout")


@pytest.mark.parametrize("config", W.CONFIGS)
def test_cheap_statistics_are_the_same_in_both_images(config):
    # exact: every item of a build's size, each statistic that does not read what the words bind
    groups = CHEAP_GROUPS + (() if CONTENT[config] else ("colour_layout",))
    for it in W.generate(config, 400):
        a, b = scene_stats(it.scene_0, RENDER_OPTIONS), scene_stats(it.scene_1, RENDER_OPTIONS)
        for g in groups:
            assert a[g] == b[g], (config, g, it)


@pytest.mark.slow
@pytest.mark.parametrize("config", W.CONFIGS)
def test_no_instrument_is_solved_by_cheap_statistics(config):
    over = {f"{name} / {model}": round(acc, 3) for (name, model), acc in measured(config).items()
            if not is_content(name, config) and acc > CHEAP_BOUND}
    assert not over, f"{config}: cheap features pick the caption's image in more than {CHEAP_BOUND}: {over}"


def different_shapes(item, rng: random.Random):
    """A spatial_swap item as the generator drew it before issue 49: the two named objects of two shapes
    (the object's shape redrawn, in both images; no other object of its new type)."""
    (ca, sa), relation, (cb, _) = item.statement_0.subject, item.statement_0.relation, item.statement_0.object
    taken = {o.shape for o in item.scene_0.objects[2:] if o.colour == cb}
    sb = rng.choice([s for s in S.SHAPES if s != sa and s not in taken])

    def redrawn(scene):  # its first two objects are the named ones, the second the relation's object
        first, second, *others = scene.objects
        return S.Scene((first, dataclasses.replace(second, shape=sb), *others))

    out = W.WinoItem("spatial_swap", redrawn(item.scene_0), redrawn(item.scene_1),
                     Spatial((ca, sa), relation, (cb, sb)), Spatial((cb, sb), relation, (ca, sa)))
    out.check()
    return out


@pytest.mark.slow
def test_the_baselines_find_planted_cues():
    # (1) TraVLR's MEDIUM shapes (742 to 1,581 px), the rendering before issue 49: the pixels of each named
    # colour tell attribute_swap's binding, the ink count_swap's counts
    for config in ("attribute_swap", "count_swap"):
        found = baselines(config, options=PAPER_GEOMETRY, sets=("caption + named",))
        assert min(found.values()) > 0.9, (config, found)
    # (2) spatial_swap's named objects of two shapes (the generator before issue 49), MEDIUM shapes: the
    # ink's centroid and bounding box move with the larger shape
    rng = random.Random(0)
    train, test = ([different_shapes(it, rng) for it in part] for part in train_test_items("spatial_swap"))
    found = baselines("spatial_swap", options=PAPER_GEOMETRY, items=(train, test), sets=("caption + named",))
    assert max(found.values()) > CHEAP_BOUND, found
    # (3) the content of the instrument solves it: where each colour is (spatial_swap), which shape each colour
    # makes (attribute_swap)
    for config in ("spatial_swap", "attribute_swap"):
        assert max(v for (name, _), v in measured(config).items() if name == "caption + named_layout") > 0.7


def cheap_table() -> list[str]:
    """The rows of docs/datasets.md's table: per feature set and classifier, accuracy per instrument (a
    content set marked ``(content)``)."""
    lines = []
    for name in CHEAP_SETS:
        for model in MODELS:
            cells = [f"{measured(c)[name, model]:.3f}" + (" (content)" if is_content(name, c) else "") for c in W.CONFIGS]
            lines.append(f"| {name} | {model} | " + " | ".join(cells) + " |")
    return lines


@pytest.mark.slow
def test_the_docs_table_is_what_the_test_measures(repo_root):
    assert_documented(cheap_table(), (repo_root / "docs" / "datasets.md").read_text(), "docs/datasets.md")


def card_row() -> str:
    return "| best cheap baseline | " + " | ".join(
        f"{max(v for (name, _), v in measured(c).items() if not is_content(name, c)):.3f}" for c in W.CONFIGS) + " |"


@pytest.mark.slow
def test_the_cards_figures_are_what_the_test_measures():
    from vlprobe.builders.winoground_style import CARD_BODY

    assert_documented([card_row()], CARD_BODY, "the winoground_style card")


if __name__ == "__main__":  # python tests/test_winoground_style_shortcuts.py: the table docs/datasets.md shows
    print("\n".join(cheap_table()))
    print(card_row())
