"""Render a :class:`~vlprobe.scenes.model.Scene` as TraVLR draws it, with PIL instead of OpenCV.

Geometry (``reference/travlr.md`` §4), for a ``size`` x ``size`` white canvas (500 by default):

* implicit 6x6 grid, no lines or labels; cell = size/6; the centre of (row r, column c) is
  ``(round(cell/2 + cell*c), round(cell/2 + cell*r))``, i.e. x, y in {42, 125, 208, 292, 375, 458};
* every object is TraVLR's MEDIUM size, 0.55 x cell: circles have radius ``int(0.55*cell/2)``
  (22 px), polygons a circumradius of ``round(0.55*cell/2)`` (23 px), first vertex straight up;
  the star has outer radius 22 and inner radius 11;
* shapes are filled, with no outline and no anti-aliasing, so every pixel of an object has
  exactly its colour (the object's centre pixel included) and the background stays pure white.

Output is PNG (lossless), unlike the original's JPEG. PIL's PNG encoder is deterministic: the
same Pillow and zlib give byte-identical files; other versions give identical pixels.
"""

from __future__ import annotations

import io
import math
import zlib
from functools import lru_cache, partial
from typing import Iterator, Sequence

from PIL import Image, ImageDraw

from .model import GRID, RGB, Scene, SceneObject

SIZE = 500
MEDIUM = 0.55
WHITE = (255, 255, 255)
PNG_COMPRESS_LEVEL = 6  # fixed here because it changes the bytes
# zlib's run-length strategy suits flat shapes on white: about 35% faster to encode than the
# default strategy here, and slightly smaller files.
PNG_COMPRESS_TYPE = zlib.Z_RLE


def cell_size(size: int = SIZE) -> float:
    return size / GRID


def cell_centre(row: int, column: int, size: int = SIZE) -> tuple[int, int]:
    """Pixel ``(x, y)`` of the centre of cell (``row``, ``column``) on a ``size`` canvas."""
    cell = cell_size(size)
    return (round(cell / 2 + cell * column), round(cell / 2 + cell * row))


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
    if shape == "triangle":
        return tuple(_regular(3, r))
    if shape == "square":
        return tuple(_regular(4, r, start_deg=-135.0))  # axis-aligned, corners on the circumcircle
    if shape == "pentagon":
        return tuple(_regular(5, r))
    if shape == "hexagon":
        return tuple(_regular(6, r))
    if shape == "octagon":
        return tuple(_regular(8, r))
    if shape == "star":
        outer = int(MEDIUM * cell_size(size) / 2)  # 22
        inner = outer / 2  # 11
        pts = []
        for k in range(10):
            rad = outer if k % 2 == 0 else inner
            ang = math.radians(-90.0 + 36.0 * k)
            pts.append((rad * math.cos(ang), rad * math.sin(ang)))
        return tuple(pts)
    if shape == "trapezium":
        # the two bottom vertices of the up-pointing triangle, and a top edge half as wide at -r
        (_, _), (bx, by), (_, _) = _regular(3, r)
        return ((bx, by), (-bx, by), (-bx / 2, -r), (bx / 2, -r))
    if shape == "parallelogram":
        h = r / math.sqrt(2)  # half side of the square
        w = 2 * h
        return ((-h + w / 3, -h), (h, -h), (h - w / 3, h), (-h, h))
    raise ValueError(f"no outline for shape {shape!r}")


def draw_object(draw: ImageDraw.ImageDraw, obj: SceneObject, size: int = SIZE) -> None:
    x, y = cell_centre(obj.row, obj.column, size)
    colour = RGB[obj.colour]
    if obj.shape == "circle":
        r = int(MEDIUM * cell_size(size) / 2)
        draw.ellipse((x - r, y - r, x + r, y + r), fill=colour)
        return
    points = [(round(x + dx), round(y + dy)) for dx, dy in shape_outline(obj.shape, size)]
    draw.polygon(points, fill=colour)


def render(scene: Scene, size: int = SIZE) -> Image.Image:
    """The scene as an RGB PIL image, ``size`` x ``size`` (default 500, as TraVLR)."""
    image = Image.new("RGB", (size, size), WHITE)
    draw = ImageDraw.Draw(image)
    for obj in scene.objects:
        draw_object(draw, obj, size)
    return image


def png_bytes(image: Image.Image, compress_level: int = PNG_COMPRESS_LEVEL) -> bytes:
    """PNG-encode ``image`` deterministically (no timestamps or text chunks)."""
    buf = io.BytesIO()
    image.save(buf, format="PNG", compress_level=compress_level, compress_type=PNG_COMPRESS_TYPE)
    return buf.getvalue()


def render_png(scene: Scene, size: int = SIZE) -> bytes:
    """``render`` then ``png_bytes``: what the dataset builders store."""
    return png_bytes(render(scene, size))


def render_many(scenes: Sequence[Scene], size: int = SIZE, workers: int = 1, chunksize: int = 64) -> Iterator[bytes]:
    """PNG bytes of each scene, in order. ``workers`` > 1 renders in that many processes (spawned,
    so it is safe beside threads); the output is identical either way, since rendering is pure."""
    if workers <= 1 or len(scenes) < 2 * chunksize:
        for scene in scenes:
            yield render_png(scene, size)
        return
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        yield from pool.imap(partial(render_png, size=size), scenes, chunksize=chunksize)
