"""The scene model, renderer, captions and truth function (vlprobe/scenes)."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from vlprobe import scenes as S
from vlprobe.scenes import Scene
from vlprobe.scenes import SceneObject as O


def scene(*objs):
    return Scene(tuple(O(*o) for o in objs))


def test_caption_format_exact():
    sc = scene(("circle", "red", 0, 0), ("square", "blue", 3, 2), ("star", "orange", 1, 5))
    assert S.travlr_caption(sc, order=[0, 1, 2]) == (
        "Columns, left to right, are ordered A to F. Rows, top to bottom, are ordered 1 to 6. "
        "There is a red circle at A 1, a blue square at C 4 and an orange star at F 2."
    )
    two = scene(("hexagon", "green", 5, 5), ("triangle", "yellow", 0, 1))
    assert S.travlr_caption(two, order=[1, 0]).endswith("There is a yellow triangle at B 1 and a green hexagon at F 6.")


def test_caption_names_every_object_once_in_a_seeded_order():
    rng = random.Random(3)
    for _ in range(50):
        sc = S.sample_scene(rng, (2, 12))
        cap = S.travlr_caption(sc, random.Random(1))
        assert cap == S.travlr_caption(sc, random.Random(1))
        body = cap[len(S.PREFIX) + 1:]
        assert body.startswith("There is ") and body.endswith(".")
        names = body[len("There is "):-1].replace(" and ", ", ").split(", ")
        assert sorted(names) == sorted(S.object_phrase(o) for o in sc)
        assert ", and " not in cap  # no Oxford comma


def test_caption_order_must_be_a_permutation():
    sc = scene(("circle", "red", 0, 0), ("square", "blue", 3, 2))
    with pytest.raises(ValueError, match="permutation"):
        S.travlr_caption(sc, order=[0, 0])


def test_cell_centres_match_the_spec():
    assert [S.cell_centre(0, c)[0] for c in range(6)] == [42, 125, 208, 292, 375, 458]
    assert [S.cell_centre(r, 0)[1] for r in range(6)] == [42, 125, 208, 292, 375, 458]


@pytest.mark.parametrize("seed", range(5))
def test_pixel_at_each_centre_has_the_object_colour(seed):
    sc = S.sample_scene(random.Random(seed), (5, 20), shapes=S.ALL_SHAPES, colours=S.ALL_COLOURS)
    img = S.render(sc)
    assert img.size == (500, 500) and img.mode == "RGB"
    for o in sc:
        assert img.getpixel(S.cell_centre(o.row, o.column)) == S.RGB[o.colour], o
    # empty cells stay white, and no pixel has a colour outside the palette (no anti-aliasing)
    for r, c in sc.free_cells():
        assert img.getpixel(S.cell_centre(r, c)) == (255, 255, 255)
    colours = {rgb for _, rgb in img.getcolors(maxcolors=1000)}
    assert colours <= {(255, 255, 255)} | {S.RGB[o.colour] for o in sc}


def test_every_shape_has_its_size_and_stays_in_its_cell():
    for shape in S.ALL_SHAPES:
        img = S.render(scene((shape, "black", 2, 2)))
        arr = np.asarray(img)
        ys, xs = np.nonzero((arr == 0).all(axis=2))
        cx, cy = S.cell_centre(2, 2)
        extent = max(abs(xs - cx).max(), abs(ys - cy).max())
        assert 16 <= extent <= 23, (shape, extent)  # MEDIUM: circumradius 23 (square half-side 16)
        assert arr[cy, cx].tolist() == [0, 0, 0]
    circle = np.asarray(S.render(scene(("circle", "black", 0, 0))))
    ys, xs = np.nonzero((circle == 0).all(axis=2))
    assert xs.max() - xs.min() + 1 in (44, 45)  # radius 22


def test_render_is_deterministic_and_png():
    sc = S.sample_scene(random.Random(9), 10)
    a, b = S.render_png(sc), S.render_png(sc)
    assert a == b and a[:8] == b"\x89PNG\r\n\x1a\n"
    assert S.render(sc, size=224).size == (224, 224)


def test_scene_rules():
    with pytest.raises(S.SceneError, match="share a cell"):
        scene(("circle", "red", 0, 0), ("square", "blue", 0, 0))
    with pytest.raises(S.SceneError, match="unknown shape"):
        O("blob", "red", 0, 0)
    with pytest.raises(S.SceneError, match="row"):
        O("circle", "red", 6, 0)
    with pytest.raises(S.SceneError, match="colour"):
        O("circle", "pink", 0, 0)


def test_sample_scene_accepts_numpy_and_is_reproducible():
    a = S.sample_scene(np.random.default_rng(1), (2, 8), distinct_types=True)
    b = S.sample_scene(np.random.default_rng(1), (2, 8), distinct_types=True)
    assert a == b and len({o.type for o in a}) == len(a)
    assert Scene.from_records(a.to_records()) == a
    assert Scene(tuple(reversed(a.objects))).key() == a.key()


def test_truth_function_by_hand():
    sc = scene(
        ("circle", "red", 0, 0), ("square", "blue", 3, 2), ("circle", "blue", 5, 4), ("star", "orange", 1, 5)
    )
    T = S.truth
    assert T(sc, S.Spatial(("red", "circle"), "left", ("blue", "square")))
    assert not T(sc, S.Spatial(("red", "circle"), "right", ("blue", "square")))
    assert T(sc, S.Spatial(("red", "circle"), "above", ("blue", "square")))
    assert T(sc, S.Spatial(("blue", "circle"), "below", ("orange", "star")))
    assert T(sc, S.Count(2, "circle")) and not T(sc, S.Count(1, "circle")) and T(sc, S.Count(1, "circle", "red"))
    assert T(sc, S.Exists("orange", "star")) and not T(sc, S.Exists("red", "star"))
    assert T(sc, S.Compare("more", "circle", "square")) and not T(sc, S.Compare("fewer", "circle", "square"))
    assert not T(sc, S.Compare("more", "square", "star"))  # 1 vs 1: neither more nor fewer
    assert T(sc, S.Quantifier("not all", "circle", "red")) and not T(sc, S.Quantifier("all", "circle", "red"))
    assert T(sc, S.Quantifier("some", "circle", "blue")) and not T(sc, S.Quantifier("none", "circle", "blue"))
    assert T(sc, S.Quantifier("not only", "circle", "blue"))  # the blue square
    assert T(sc, S.Quantifier("only", "circle", "red")) and T(sc, S.Quantifier("all", "star", "orange"))
    assert T(sc, S.And((S.Exists("red", "circle"), S.Exists("blue", "square"))))
    assert not T(sc, S.And((S.Exists("red", "circle"), S.Exists("red", "square"))))
    with pytest.raises(S.StatementError, match="names 0 objects"):
        T(sc, S.Spatial(("green", "circle"), "left", ("blue", "square")))
    with pytest.raises(S.StatementError, match="names 2 objects"):
        T(scene(("circle", "red", 0, 0), ("circle", "red", 1, 1), ("star", "red", 2, 2)),
          S.Spatial(("red", "circle"), "left", ("red", "star")))


def test_statement_texts():
    assert S.Count(2, "circle").text() == "There are 2 circle objects."
    assert S.Count(1, "circle").text() == "There is 1 circle object."
    assert S.Spatial(("red", "circle"), "left", ("blue", "square")).text() == \
        "The red circle is to the left of the blue square."
    assert S.Quantifier("not all", "circle", "red").text() == "Not all the circle objects are red objects."
    assert S.Quantifier("some", "star", "blue").text() == "Some of the star objects are blue objects."
    assert S.Quantifier("none", "star", "blue").text() == "None of the star objects are blue objects."
    assert S.Compare("more", "circle", "square").text() == "There are more circles than squares."
    assert S.And((S.Exists("orange", "circle"), S.Exists("blue", "square"))).phrase() == \
        "an orange circle and a blue square"
    assert S.And((S.Count(2, "circle"), S.Count(3, "square"))).phrase() == "two circles and three squares"


def test_foil_flips_truth_with_one_edit():
    rng = random.Random(0)
    flipped = 0
    for _ in range(200):
        sc = S.sample_scene(rng, (3, 10))
        stmt, value = S.sample_statement(sc, rng)
        try:
            f = S.foil(sc, stmt, rng)
        except S.StatementError:
            continue
        flipped += 1
        assert S.truth(sc, f) is (not value)
        assert type(f) is type(stmt)
        a, b = stmt.text().split(), f.text().split()
        # one word changed, or a negation/quantifier word added or removed
        assert sum(x != y for x, y in zip(a, b)) <= 2 or abs(len(a) - len(b)) <= 1
    assert flipped > 150


def test_sample_statement_labels_and_round_trip():
    rng = random.Random(5)
    for _ in range(100):
        sc = S.sample_scene(rng, (3, 10))
        for label in (True, False):
            stmt, value = S.sample_statement(sc, rng, label=label)
            assert value is label and S.truth(sc, stmt) is label
            again = S.statement_from_dict(json.loads(json.dumps(stmt.to_dict())))
            assert again == stmt and S.truth(sc, again) is label
        assert S.describe(sc, rng)[0].isupper()


def test_sample_statement_reports_impossible_requests():
    sc = scene(("circle", "red", 0, 0), ("circle", "red", 1, 1))
    with pytest.raises(S.StatementError, match="no true statement"):
        S.sample_statement(sc, random.Random(0), kinds=("spatial",), label=True, max_tries=10)


def test_pixels_match_a_golden_digest():
    # Pixel identity must not depend on the machine (PNG bytes may, through zlib). A change in
    # this digest means the geometry changed, or Pillow rasterises polygons differently.
    import hashlib

    objs = [O(s, c, i // 6, (i * 5) % 6) for i, (s, c) in enumerate(zip(S.ALL_SHAPES * 2, S.ALL_COLOURS * 3))]
    digest = hashlib.sha256(S.render(Scene(tuple(objs))).tobytes()).hexdigest()
    assert digest == "83eb5c0a015f565c12b14d18d503434c06b6acef7870f93b44eb5d00ee97db58"


@pytest.mark.slow
def test_render_many_in_processes_equals_sequential():
    from vlprobe.scenes.render import render_many

    scenes = [S.sample_scene(random.Random(i), (2, 10)) for i in range(140)]
    assert list(render_many(scenes, workers=2, chunksize=32)) == [S.render_png(s) for s in scenes]


@pytest.mark.parametrize("size", [500, 224])
def test_centred_equal_area_shapes_have_their_centroid_on_the_cell_centre(size):
    # winoground_style's rendering (issue 49): the same pixel count as equal_area, the pixel centroid exactly
    # on the cell's centre, and the outline kept (a few boundary pixels moved)
    from vlprobe.scenes.render import EQUAL_AREA, equal_area_mask

    target = round(EQUAL_AREA * (size / 500) ** 2)
    for shape in S.SHAPES:
        _, plain = equal_area_mask(shape, size)
        span, mask = equal_area_mask(shape, size, centred=True)
        a, b = np.asarray(plain) > 0, np.asarray(mask) > 0
        assert a.sum() == b.sum() == target, shape
        ys, xs = np.nonzero(b)
        assert xs.sum() == span * len(xs) and ys.sum() == span * len(ys), shape
        assert (a != b).sum() <= 0.12 * target, (shape, (a != b).sum())  # at most 6% of its pixels moved
        for row, col in ((0, 0), (3, 4)):
            img = np.asarray(S.render(scene((shape, "red", row, col)), size=size, equal_area=True, centred=True))
            ys, xs = np.nonzero((img != 255).any(axis=2))
            assert (xs.mean(), ys.mean()) == S.cell_centre(row, col, size), shape
    off = [abs(np.nonzero(np.asarray(equal_area_mask(s, 500)[1]) > 0)[0].mean() - 40) for s in S.SHAPES]
    assert max(off) > 0.2  # without centring the triangle's and the star's centroids lie 0.2 px off
    with pytest.raises(ValueError, match="equal_area"):
        S.render(scene(("circle", "red", 0, 0)), centred=True)
