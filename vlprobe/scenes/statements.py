"""Statements about scenes: ``text()`` (TraVLR's wording where it has one), ``phrase()`` (Winoground-style captions),
``to_dict()`` (:func:`statement_from_dict` reverses it), and :func:`truth`, the single truth function every label and
gold matrix in vlprobe comes from. "The red circle" must name exactly one object, else :func:`truth` raises
:class:`StatementError` instead of guessing; quantifiers follow first-order logic (``All`` over nothing is true).
"""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from .captions import inventory, join_list, noun_phrase, plural
from .model import COLOURS, SHAPES, RandomLike, Scene, SceneObject, as_random


class StatementError(ValueError):
    """A statement without a truth value on a scene (a referent missing or ambiguous), or malformed."""


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


@dataclass(frozen=True)
class Statement:
    """A statement about a scene; ``choices``: the values each named field may take."""

    kind: ClassVar[str] = ""
    choices: ClassVar[Mapping[str, Collection[str]]] = {}

    def __post_init__(self) -> None:
        for name, allowed in self.choices.items():
            if getattr(self, name) not in allowed:
                raise StatementError(f"{self.kind}: unknown {name} {getattr(self, name)!r}; known: {list(allowed)}")

    def holds(self, scene: Scene) -> bool:  # pragma: no cover - every subclass overrides it
        raise NotImplementedError

    def phrase(self) -> str:
        return self.text().rstrip(".")[:1].lower() + self.text().rstrip(".")[1:]

    def text(self) -> str:
        return _capital(self.phrase()) + "."

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **asdict(self)}


@dataclass(frozen=True)
class Exists(Statement):
    """There is at least one object of ``colour`` and ``shape`` (either may be None: any)."""

    colour: str | None = None
    shape: str | None = None
    kind: ClassVar[str] = "exists"

    def holds(self, scene: Scene) -> bool:
        return scene.count(self.colour, self.shape) >= 1

    def phrase(self) -> str:
        return noun_phrase(1, self.colour, self.shape)

    def text(self) -> str:
        return f"There is {self.phrase()}."


@dataclass(frozen=True)
class Count(Statement):
    """There are exactly ``n`` objects of ``colour`` and ``shape`` (either may be None: any)."""

    n: int
    shape: str | None = None
    colour: str | None = None
    kind: ClassVar[str] = "count"

    def holds(self, scene: Scene) -> bool:
        return scene.count(self.colour, self.shape) == self.n

    def text(self) -> str:
        # TraVLR's cardinality template: "There are 2 circle objects." / "There is 1 circle object."
        verb, noun = ("is", "object") if self.n == 1 else ("are", "objects")
        return f"There {verb} {' '.join(w for w in (str(self.n), self.colour, self.shape, noun) if w)}."

    def phrase(self) -> str:
        return noun_phrase(self.n, self.colour, self.shape)  # "two circles"


RELATIONS: dict[str, str] = {
    "left": "to the left of",
    "right": "to the right of",
    "above": "above",
    "below": "below",
}
OPPOSITE = {"left": "right", "right": "left", "above": "below", "below": "above"}


@dataclass(frozen=True)
class Spatial(Statement):
    """The ``subject`` (colour, shape) is ``relation`` (left/right/above/below) the ``object``."""

    subject: tuple[str, str]
    relation: str
    object: tuple[str, str]
    kind: ClassVar[str] = "spatial"
    choices: ClassVar[Mapping[str, Collection[str]]] = {"relation": RELATIONS}

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "subject", tuple(self.subject))
        object.__setattr__(self, "object", tuple(self.object))

    def holds(self, scene: Scene) -> bool:
        a, b = _the(scene, self.subject, self), _the(scene, self.object, self)
        return {"left": a.column < b.column, "right": a.column > b.column, "above": a.row < b.row,
                "below": a.row > b.row}[self.relation]

    def phrase(self) -> str:
        (c1, s1), (c2, s2) = self.subject, self.object
        return f"the {c1} {s1} is {RELATIONS[self.relation]} the {c2} {s2}"


def _the(scene: Scene, ref: tuple[str, str], statement: Statement) -> SceneObject:
    found = scene.find(colour=ref[0], shape=ref[1])
    if len(found) != 1:
        raise StatementError(
            f"{statement.text()!r}: 'the {ref[0]} {ref[1]}' names {len(found)} objects in the scene, not exactly one"
        )
    return found[0]


# quantifier -> (surface form, its negation)
QUANTIFIERS: dict[str, tuple[str, str]] = {
    "all": ("All", "not all"),  # every X-object is Y
    "not all": ("Not all", "all"),  # some X-object is not Y
    "some": ("Some of", "none"),  # >= 1 X-object is Y
    "none": ("None of", "some"),  # no X-object is Y
    "only": ("Only", "not only"),  # every Y-object is X
    "not only": ("Not only", "only"),  # some Y-object is not X
}


@dataclass(frozen=True)
class Quantifier(Statement):
    """TraVLR's quantifier query: "{Q} the {shape} objects are {colour} objects."."""

    quantifier: str
    shape: str
    colour: str
    kind: ClassVar[str] = "quantifier"
    choices: ClassVar[Mapping[str, Collection[str]]] = {"quantifier": QUANTIFIERS}

    def holds(self, scene: Scene) -> bool:
        x_is_y = [o.colour == self.colour for o in scene.find(shape=self.shape)]  # each X-object: is it Y?
        y_is_x = [o.shape == self.shape for o in scene.find(colour=self.colour)]  # each Y-object: is it X?
        return {"all": all(x_is_y), "not all": not all(x_is_y), "some": any(x_is_y), "none": not any(x_is_y),
                "only": all(y_is_x), "not only": not all(y_is_x)}[self.quantifier]

    def text(self) -> str:
        return f"{QUANTIFIERS[self.quantifier][0]} the {self.shape} objects are {self.colour} objects."

    def negation(self) -> Quantifier:
        return Quantifier(QUANTIFIERS[self.quantifier][1], self.shape, self.colour)


@dataclass(frozen=True)
class Compare(Statement):
    """There are ``more``/``fewer`` objects of shape ``x`` than of shape ``y`` (strict)."""

    relation: str
    x: str
    y: str
    kind: ClassVar[str] = "compare"
    choices: ClassVar[Mapping[str, Collection[str]]] = {"relation": ("more", "fewer")}

    def holds(self, scene: Scene) -> bool:
        a, b = scene.count(shape=self.x), scene.count(shape=self.y)
        return a > b if self.relation == "more" else a < b

    def text(self) -> str:
        return f"There are {self.relation} {plural(self.x)} than {plural(self.y)}."


@dataclass(frozen=True)
class And(Statement):
    """Every part holds; its phrase joins the parts' phrases: "a red circle and a blue square"."""

    parts: tuple[Statement, ...]
    kind: ClassVar[str] = "and"

    def __post_init__(self) -> None:
        object.__setattr__(self, "parts", tuple(self.parts))
        if len(self.parts) < 2:
            raise StatementError("And needs at least two parts")

    def holds(self, scene: Scene) -> bool:
        return all(p.holds(scene) for p in self.parts)

    def phrase(self) -> str:
        return join_list([p.phrase() for p in self.parts])

    def text(self) -> str:
        first = self.parts[0]
        return f"There {'are' if isinstance(first, Count) and first.n != 1 else 'is'} {self.phrase()}."

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "parts": [p.to_dict() for p in self.parts]}


_KINDS = {cls.kind: cls for cls in (Exists, Count, Spatial, Quantifier, Compare, And)}


def statement_from_dict(data: Mapping[str, Any]) -> Statement:
    """Inverse of ``Statement.to_dict`` (accepts the JSON round-trip: lists for tuples)."""
    data = dict(data)
    kind = data.pop("kind", None)
    if kind not in _KINDS:
        raise StatementError(f"unknown statement kind {kind!r}; known: {list(_KINDS)}")
    if kind == "and":
        return And(tuple(statement_from_dict(p) for p in data["parts"]))
    return _KINDS[kind](**data)


def truth(scene: Scene, statement: Statement) -> bool:
    """Is ``statement`` true of ``scene``? :class:`StatementError` when it has no truth value there."""
    if not isinstance(statement, Statement):
        raise StatementError(f"not a statement: {statement!r}")
    return bool(statement.holds(scene))


def foil(
    scene: Scene,
    statement: Statement,
    rng: RandomLike = None,
    numbers: Sequence[int] | None = None,
    colours: Sequence[str] | None = None,
) -> Statement:
    """The minimal edit of ``statement`` whose truth on ``scene`` is the opposite (another relation, number or
    colour, or the negation); :class:`StatementError` when none flips it."""
    rng = as_random(rng)
    value = truth(scene, statement)
    if isinstance(statement, Spatial):
        candidates: list[Statement] = [Spatial(statement.subject, OPPOSITE[statement.relation], statement.object)]
    elif isinstance(statement, Quantifier):
        candidates = [statement.negation()]
    elif isinstance(statement, Compare):
        candidates = [Compare("fewer" if statement.relation == "more" else "more", statement.x, statement.y)]
    elif isinstance(statement, Count):
        pool = [n for n in (numbers if numbers is not None else range(1, 10)) if n != statement.n]
        rng.shuffle(pool)
        candidates = [Count(n, statement.shape, statement.colour) for n in pool]
    elif isinstance(statement, Exists):
        others = [c for c in (colours or COLOURS) if c != statement.colour]
        rng.shuffle(others)
        candidates = [Exists(c, statement.shape) for c in others]
    else:
        raise StatementError(f"no minimal edit is defined for {type(statement).__name__}")
    for candidate in candidates:
        if truth(scene, candidate) != value:
            return candidate
    raise StatementError(f"no minimal edit of {statement.text()!r} flips its truth on this scene")


STATEMENT_KINDS = ("exists", "count", "spatial", "quantifier", "compare")


def _candidate(scene: Scene, kind: str, rng: random.Random, shapes: Sequence[str],
               colours: Sequence[str]) -> Statement | None:
    objs = scene.objects
    if kind == "exists":
        if rng.random() < 0.5:
            o = rng.choice(objs)
            return Exists(o.colour, o.shape)
        return Exists(rng.choice(colours), rng.choice(shapes))
    if kind == "count":
        shape = rng.choice([o.shape for o in objs]) if rng.random() < 0.7 else rng.choice(shapes)
        colour = rng.choice([o.colour for o in objs]) if rng.random() < 0.3 else None
        true_n = scene.count(colour, shape)
        n = true_n if (true_n and rng.random() < 0.5) else rng.randint(1, 6)
        return Count(n, shape, colour)
    if kind == "spatial":
        unique = [o for o in objs if scene.count(o.colour, o.shape) == 1]
        if len(unique) < 2:
            return None
        a, b = rng.sample(unique, 2)
        axes = []
        if a.column != b.column:
            axes += ["left", "right"]
        if a.row != b.row:
            axes += ["above", "below"]
        return Spatial(a.type, rng.choice(axes), b.type)
    if kind == "quantifier":
        shape = rng.choice([o.shape for o in objs])
        colour = rng.choice([o.colour for o in objs])
        return Quantifier(rng.choice(list(QUANTIFIERS)), shape, colour)
    if kind == "compare":
        present = sorted({o.shape for o in objs})
        x = rng.choice(present)
        y = rng.choice([s for s in shapes if s != x])
        if scene.count(shape=x) == scene.count(shape=y):
            return None
        return Compare(rng.choice(("more", "fewer")), x, y)
    raise StatementError(f"unknown statement kind {kind!r}; known: {STATEMENT_KINDS}")


def sample_statement(
    scene: Scene,
    rng: RandomLike,
    kinds: Sequence[str] = STATEMENT_KINDS,
    label: bool | None = None,
    shapes: Sequence[str] = SHAPES,
    colours: Sequence[str] = COLOURS,
    max_tries: int = 200,
) -> tuple[Statement, bool]:
    """A random statement about ``scene`` of one of ``kinds`` (with truth ``label`` when given), and its truth."""
    rng = as_random(rng)
    for _ in range(max_tries):
        stmt = _candidate(scene, rng.choice(list(kinds)), rng, shapes, colours)
        if stmt is None:
            continue
        try:
            value = truth(scene, stmt)
        except StatementError:  # no truth value here: a "the ..." naming no object or several
            continue
        if label is None or value == label:
            return stmt, value
    raise StatementError(f"no {'true' if label else 'false' if label is not None else ''} statement of kinds {list(kinds)} "
                         f"found in {max_tries} tries")


def describe(scene: Scene, rng: RandomLike = None, relations: int = 1) -> str:
    """A short true description: the inventory, then up to ``relations`` spatial sentences between nameable objects."""
    rng = as_random(rng)
    sentences = [_capital(inventory(scene, rng)) + "."]
    for _ in range(relations):
        try:
            stmt, _ = sample_statement(scene, rng, kinds=("spatial",), label=True, max_tries=20)
        except StatementError:
            break
        sentences.append(stmt.text())
    return " ".join(sentences)

