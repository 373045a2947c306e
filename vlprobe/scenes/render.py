"""Render a :class:`~vlprobe.scenes.model.Scene` as TraVLR draws it (``reference/travlr.md`` §4), with PIL
instead of OpenCV: an implicit 6x6 grid on a white canvas, every object TraVLR's MEDIUM size, filled, no
anti-aliasing. ``equal_area`` scales every shape to :data:`EQUAL_AREA` pixels, so the ink tells how many
objects there are, not which shapes (issue 25); ``centred`` also puts each shape's pixel centroid on its
cell's centre (issue 49). Output is PNG, byte-identical for the same Pillow and zlib.
"""

from __future__ import annotations

import io
import math
import zlib
from collections.abc import Iterator, Sequence
from functools import lru_cache, partial

from PIL import Image, ImageDraw

from .model import GRID, RGB, Scene

SIZE = 500
MEDIUM = 0.55
WHITE = (255, 255, 255)
PNG_COMPRESS_LEVEL = 6  # fixed here because it changes the bytes
# zlib's run-length strategy: about 35% faster than the default on flat shapes, and smaller
PNG_COMPRESS_TYPE = zlib.Z_RLE


def cell_size(size: int = SIZE) -> float:
    return size / GRID


def cell_centre(row: int, column: int, size: int = SIZE) -> tuple[int, int]:
    """Pixel ``(x, y)`` of the centre of cell (``row``, ``column``) on a ``size`` canvas."""
    cell = cell_size(size)
    return (round(cell / 2 + cell * column), round(cell / 2 + cell * row))


# regular polygons: (sides, angle of the first vertex); the square axis-aligned, corners on the circumcircle
_POLYGONS = {"triangle": (3, -90.0), "square": (4, -135.0), "pentagon": (5, -90.0), "hexagon": (6, -90.0),
             "octagon": (8, -90.0)}


def _regular(n: int, radius: float, start_deg: float = -90.0) -> list[tuple[float, float]]:
    # y grows downwards, so -90 degrees is straight up.
    return [
        (radius * math.cos(math.radians(start_deg + 360.0 * k / n)), radius * math.sin(math.radians(start_deg + 360.0 * k / n)))
        for k in range(n)
    ]


@lru_cache(maxsize=64)
def shape_outline(shape: str, size: int = SIZE) -> tuple[tuple[float, float], ...]:
    """The polygon of ``shape`` as offsets from the cell centre (not used for circles)."""
    r = round(MEDIUM * cell_size(size) / 2)  # 23 px on a 500 px canvas
    if shape in _POLYGONS:
        sides, start = _POLYGONS[shape]
        return tuple(_regular(sides, r, start))
    if shape == "star":
        outer = int(MEDIUM * cell_size(size) / 2)  # 22; the inner vertices at half of it
        return tuple((dx, dy) if k % 2 == 0 else (dx / 2, dy / 2) for k, (dx, dy) in enumerate(_regular(10, outer)))
    if shape == "trapezium":
        # the two bottom vertices of the up-pointing triangle, and a top edge half as wide at -r
        (_, _), (bx, by), (_, _) = _regular(3, r)
        return ((bx, by), (-bx, by), (-bx / 2, -r), (bx / 2, -r))
    if shape == "parallelogram":
        h = r / math.sqrt(2)  # half side of the square
        w = 2 * h
        return ((-h + w / 3, -h), (h, -h), (h - w / 3, h), (-h, h))
    raise ValueError(f"no outline for shape {shape!r}")


EQUAL_AREA = 1200  # pixels per object on a 500 px canvas (about the main shapes' mean), scaled by (size/500)^2
_CIRCLE_SIDES = 64


def _fill(points: Sequence[tuple[float, float]], span: int):
    """Boolean mask (2*span+1 square) PIL fills for a polygon of these offsets around its centre pixel."""
    import numpy as np

    img = Image.new("L", (2 * span + 1, 2 * span + 1), 0)
    ImageDraw.Draw(img).polygon([(round(span + dx), round(span + dy)) for dx, dy in points], fill=255)
    return np.asarray(img) > 0


@lru_cache(maxsize=64)
def equal_area_mask(shape: str, size: int = SIZE, centred: bool = False) -> tuple[int, Image.Image]:
    """``(span, mask)``: the pixels of ``shape`` with ``equal_area``, an "L" mask of side ``2*span+1``: the outline
    scaled to fit the pixel count, then the next size's pixels nearest the centre until the count is exact."""
    import numpy as np

    base = (tuple(_regular(_CIRCLE_SIDES, MEDIUM * cell_size(size) / 2)) if shape == "circle"
            else shape_outline(shape, size))
    target = round(EQUAL_AREA * (size / SIZE) ** 2)
    span = int(0.5 * cell_size(size)) - 1  # masks never leave their cell

    def scaled(k: float):
        return tuple((dx * k, dy * k) for dx, dy in base)

    lo, hi = 0.0, 3.0
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _fill(scaled(mid), span).sum() <= target else (lo, mid)
    mask = _fill(scaled(lo), span).copy()
    # the pixels the next larger scale adds, nearest the centre first, keep the outline's look
    yy, xx = np.mgrid[-span:span + 1, -span:span + 1]
    added = np.argwhere(_fill(scaled(hi), span) & ~mask)
    order = sorted(map(tuple, added), key=lambda rc: (np.hypot(rc[0] - span, rc[1] - span), rc))
    for rc in order[:max(0, target - int(mask.sum()))]:
        mask[rc] = True
    dist = np.hypot(yy, xx)
    while mask.sum() < target:  # only if scaling did not nest (rounded vertices): grow the boundary
        neighbours = _neighbours(mask)
        score = np.where(~mask & (neighbours > 0), neighbours - dist / 100.0, -np.inf)
        mask[np.unravel_index(int(np.argmax(score)), mask.shape)] = True  # argmax: first in row order on ties
    if centred:
        mask = _centre(mask)
    return span, Image.fromarray(mask.astype(np.uint8) * 255, mode="L")


def _neighbours(mask):
    """Per pixel, how many of its 8 neighbours are in ``mask``."""
    import numpy as np

    padded = np.pad(mask, 1).astype(np.int64)
    h, w = mask.shape
    return sum(padded[1 + dy:1 + dy + h, 1 + dx:1 + dx + w] for dy in (-1, 0, 1) for dx in (-1, 0, 1) if dy or dx)


def _centre(mask):
    """``mask`` with its pixel centroid on its centre: each step, the smoothest boundary move that lowers it."""
    import numpy as np

    mask = mask.copy()
    span = (mask.shape[0] - 1) // 2
    yy, xx = (a.ravel() for a in np.mgrid[-span:span + 1, -span:span + 1])
    inside = (np.abs(yy) < span) & (np.abs(xx) < span)  # a mask never reaches its square's edge
    while True:
        flat = mask.ravel()
        sx, sy = int(xx[flat].sum()), int(yy[flat].sum())
        if sx == 0 and sy == 0:
            return mask
        nb = _neighbours(mask).ravel()
        out = np.flatnonzero(flat & (nb < 8))
        into = np.flatnonzero(~flat & (nb > 0) & inside)
        gain = abs(sx) + abs(sy) - (np.abs(sx - xx[out][:, None] + xx[into][None, :])
                                    + np.abs(sy - yy[out][:, None] + yy[into][None, :]))
        smooth = nb[into][None, :] - nb[out][:, None]
        score = np.where(gain > 0, smooth * 10_000 + gain, np.iinfo(np.int64).min)
        i, j = np.unravel_index(int(np.argmax(score)), score.shape)  # argmax: the first on ties
        mask.flat[out[i]] = False
        mask.flat[into[j]] = True


def render(scene: Scene, size: int = SIZE, equal_area: bool = False, centred: bool = False) -> Image.Image:
    """The scene as an RGB PIL image, ``size`` x ``size`` (``equal_area``, ``centred``: the module doc)."""
    if centred and not equal_area:
        raise ValueError("centred=True needs equal_area=True (only equal-area shapes are centred)")
    image = Image.new("RGB", (size, size), WHITE)
    draw = ImageDraw.Draw(image)
    for obj in scene.objects:
        x, y = cell_centre(obj.row, obj.column, size)
        colour = RGB[obj.colour]
        if equal_area:
            span, mask = equal_area_mask(obj.shape, size, centred)
            draw.bitmap((x - span, y - span), mask, fill=colour)
        elif obj.shape == "circle":
            r = int(MEDIUM * cell_size(size) / 2)
            draw.ellipse((x - r, y - r, x + r, y + r), fill=colour)
        else:
            draw.polygon([(round(x + dx), round(y + dy)) for dx, dy in shape_outline(obj.shape, size)], fill=colour)
    return image


def png_bytes(image: Image.Image, compress_level: int = PNG_COMPRESS_LEVEL) -> bytes:
    """PNG-encode ``image`` deterministically (no timestamps or text chunks)."""
    buf = io.BytesIO()
    image.save(buf, format="PNG", compress_level=compress_level, compress_type=PNG_COMPRESS_TYPE)
    return buf.getvalue()


def render_png(scene: Scene, size: int = SIZE, equal_area: bool = False, centred: bool = False) -> bytes:
    """``render`` then ``png_bytes``: what the dataset builders store."""
    return png_bytes(render(scene, size, equal_area, centred))


def render_many(scenes: Sequence[Scene], size: int = SIZE, workers: int = 1, chunksize: int = 64,
                equal_area: bool = False, centred: bool = False) -> Iterator[bytes]:
    """PNG bytes of each scene, in order; ``workers`` > 1 renders in that many spawned processes."""
    if workers <= 1 or len(scenes) < 2 * chunksize:
        for scene in scenes:
            yield render_png(scene, size, equal_area, centred)
        return
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        yield from pool.imap(partial(render_png, size=size, equal_area=equal_area, centred=centred), scenes, chunksize=chunksize)
