"""Draw the images of the worked example (small PNGs, made here rather than committed).

    python examples/shapes/make_images.py            # writes examples/shapes/images/*.png
    python examples/shapes/make_images.py --out DIR  # somewhere else

Deterministic: the same pixels on every run, so the built parquet is reproducible.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from PIL import Image, ImageDraw

SIZE = 96
COLORS = {"red": (220, 30, 30), "blue": (30, 60, 220), "green": (30, 160, 60), "black": (0, 0, 0)}


def _circle(d: ImageDraw.ImageDraw, cx: int, cy: int, r: int, color: str) -> None:
    d.ellipse([cx - r, cy - r, cx + r, cy + r], fill=COLORS[color])


def _square(d: ImageDraw.ImageDraw, cx: int, cy: int, r: int, color: str) -> None:
    d.rectangle([cx - r, cy - r, cx + r, cy + r], fill=COLORS[color])


def _triangle(d: ImageDraw.ImageDraw, cx: int, cy: int, r: int, color: str) -> None:
    d.polygon([(cx, cy - r), (cx - r, cy + r), (cx + r, cy + r)], fill=COLORS[color])


# file name -> list of (shape, centre x, centre y, radius, colour)
SCENES = {
    "red_circle": [(_circle, 48, 48, 24, "red")],
    "blue_circle": [(_circle, 48, 48, 24, "blue")],
    "one_square": [(_square, 48, 48, 16, "green")],
    "two_squares": [(_square, 28, 48, 12, "green"), (_square, 68, 48, 12, "green")],
    "three_squares": [(_square, 18, 48, 10, "green"), (_square, 48, 48, 10, "green"), (_square, 78, 48, 10, "green")],
    "circle_left_of_square": [(_circle, 26, 48, 16, "black"), (_square, 70, 48, 16, "black")],
    "square_left_of_circle": [(_square, 26, 48, 16, "black"), (_circle, 70, 48, 16, "black")],
    "triangle": [(_triangle, 48, 48, 26, "blue")],
}


def make_images(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, shapes in SCENES.items():
        image = Image.new("RGB", (SIZE, SIZE), (255, 255, 255))
        draw = ImageDraw.Draw(image)
        for draw_shape, cx, cy, r, color in shapes:
            draw_shape(draw, cx, cy, r, color)
        path = out / f"{name}.png"
        image.save(path, optimize=True)
        written.append(path)
    return written


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "images")
    args = parser.parse_args()
    paths = make_images(args.out)
    print(f"wrote {len(paths)} images to {args.out}")
