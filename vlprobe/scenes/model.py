"""The scene model (TraVLR's world): objects of a shape and a colour on an implicit 6x6 grid, at most one per
cell; row 0 is the top row and column 0 the left one, captions name them ``1``-``6`` and ``A``-``F``.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Union

if TYPE_CHECKING:
    from numpy.random import Generator

GRID = 6

# TraVLR's 7 main shapes, in its enum order (which its seeded held-out pairs depend on), and 2 for quantifiers only
SHAPES: tuple[str, ...] = ("square", "circle", "triangle", "star", "hexagon", "octagon", "pentagon")
EXTRA_SHAPES: tuple[str, ...] = ("trapezium", "parallelogram")
ALL_SHAPES: tuple[str, ...] = SHAPES + EXTRA_SHAPES

# "purple" is the original's lavender (230, 230, 250), almost white: what TraVLR's quantifier task used
RGB: dict[str, tuple[int, int, int]] = {
    "red": (255, 0, 0),
    "blue": (0, 0, 255),
    "green": (0, 255, 0),
    "yellow": (255, 255, 0),
    "orange": (255, 165, 0),
    "purple": (230, 230, 250),
    "brown": (165, 42, 42),
    "black": (0, 0, 0),
}
COLOURS: tuple[str, ...] = ("red", "blue", "green", "yellow", "orange")  # spatial, cardinality, compare
QUANTIFIER_COLOURS: tuple[str, ...] = COLOURS + ("purple", "brown")  # the quantifier task's X/Y colours
ALL_COLOURS: tuple[str, ...] = QUANTIFIER_COLOURS + ("black",)  # quantifier companions and distractors
OBJECT_TYPES: tuple[tuple[str, str], ...] = tuple((c, s) for s in SHAPES for c in COLOURS)  # the original's order

COLUMN_NAMES = "ABCDEF"
RandomLike = Union[random.Random, "Generator", int, None]


class SceneError(ValueError):
    """A scene that breaks the model's rules (unknown shape/colour, off-grid, two objects in a cell)."""


@dataclass(frozen=True, order=True)
class SceneObject:
    """One object: a filled ``shape`` of ``colour`` in cell (``row``, ``column``), 0-based, row 0 on top."""

    shape: str
    colour: str
    row: int
    column: int

    def __post_init__(self) -> None:
        if self.shape not in ALL_SHAPES:
            raise SceneError(f"unknown shape {self.shape!r}; known: {ALL_SHAPES}")
        if self.colour not in RGB:
            raise SceneError(f"unknown colour {self.colour!r}; known: {tuple(RGB)}")
        for name in ("row", "column"):
            value = getattr(self, name)
            if not isinstance(value, int) or not 0 <= value < GRID:
                raise SceneError(f"{name} must be an int in 0..{GRID - 1}, got {value!r}")

    @property
    def type(self) -> tuple[str, str]:
        """``(colour, shape)``: what a referring expression like "the red circle" names."""
        return (self.colour, self.shape)

    @property
    def cell(self) -> tuple[int, int]:
        return (self.row, self.column)

    @property
    def coordinate(self) -> str:
        """The caption's coordinate, column letter then row number: ``"A 1"`` for the top-left cell."""
        return f"{COLUMN_NAMES[self.column]} {self.row + 1}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SceneObject:
        return cls(shape=data["shape"], colour=data["colour"], row=int(data["row"]), column=int(data["column"]))


@dataclass(frozen=True)
class Scene:
    """An immutable scene: a tuple of objects in distinct cells (:meth:`key` ignores their order)."""

    objects: tuple[SceneObject, ...]

    def __post_init__(self) -> None:
        objects = tuple(o if isinstance(o, SceneObject) else SceneObject.from_dict(o) for o in self.objects)
        object.__setattr__(self, "objects", objects)
        cells = [o.cell for o in objects]
        if len(set(cells)) != len(cells):
            dup = sorted({c for c in cells if cells.count(c) > 1})
            raise SceneError(f"two objects share a cell (row, column): {dup}")

    def __len__(self) -> int:
        return len(self.objects)

    def __iter__(self) -> Iterator[SceneObject]:
        return iter(self.objects)

    def key(self) -> tuple[SceneObject, ...]:
        """A canonical, hashable identity (objects sorted): equal for scenes that render identically."""
        return tuple(sorted(self.objects))

    def find(self, colour: str | None = None, shape: str | None = None) -> list[SceneObject]:
        """Objects matching ``colour`` and ``shape`` (``None`` matches any)."""
        return [
            o for o in self.objects if (colour is None or o.colour == colour) and (shape is None or o.shape == shape)
        ]

    def count(self, colour: str | None = None, shape: str | None = None) -> int:
        return len(self.find(colour, shape))

    def free_cells(self) -> list[tuple[int, int]]:
        used = {o.cell for o in self.objects}
        return [cell for cell in ALL_CELLS if cell not in used]

    def to_records(self) -> list[dict[str, Any]]:
        return [o.to_dict() for o in self.objects]

    @classmethod
    def from_records(cls, records: Iterable[Mapping[str, Any]]) -> Scene:
        return cls(tuple(SceneObject.from_dict(r) for r in records))


ALL_CELLS: tuple[tuple[int, int], ...] = tuple((r, c) for r in range(GRID) for c in range(GRID))


def place(types: Sequence[tuple[str, str]], rng: random.Random, taken: Iterable[tuple[int, int]] = ()) -> list[SceneObject]:
    """Objects of the given ``(colour, shape)`` types in random distinct cells not in ``taken``."""
    free = [cell for cell in ALL_CELLS if cell not in set(taken)]
    if len(types) > len(free):
        raise SceneError(f"cannot place {len(types)} objects in {len(free)} free cells")
    cells = rng.sample(free, len(types))
    return [SceneObject(shape=s, colour=c, row=r, column=col) for (c, s), (r, col) in zip(types, cells)]


def sample_scene(
    rng: RandomLike,
    n_objects: int | tuple[int, int] = (2, 8),
    shapes: Sequence[str] = SHAPES,
    colours: Sequence[str] = COLOURS,
    distinct_types: bool = False,
) -> Scene:
    """A random scene of ``n_objects`` (or a ``(low, high)`` range) in distinct cells; ``distinct_types``: all nameable."""
    rng = as_random(rng)
    n = n_objects if isinstance(n_objects, int) else rng.randint(n_objects[0], n_objects[1])
    if not 1 <= n <= GRID * GRID:
        raise SceneError(f"a scene holds 1..{GRID * GRID} objects, asked for {n}")
    if distinct_types:
        pool = [(c, s) for s in shapes for c in colours]
        if n > len(pool):
            raise SceneError(f"only {len(pool)} distinct (colour, shape) types for {n} objects")
        types = rng.sample(pool, n)
    else:
        types = [(rng.choice(list(colours)), rng.choice(list(shapes))) for _ in range(n)]
    return Scene(tuple(place(types, rng)))


def as_random(rng: RandomLike) -> random.Random:
    """``rng`` as a ``random.Random``: itself, or one seeded from a numpy Generator's stream."""
    if isinstance(rng, random.Random):
        return rng
    if rng is None or isinstance(rng, int):
        return random.Random(rng)
    if hasattr(rng, "integers"):  # numpy.random.Generator
        return random.Random(int(rng.integers(0, 2**63 - 1)))
    raise TypeError(f"expected random.Random, numpy Generator or int seed, got {type(rng).__name__}")
