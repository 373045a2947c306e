"""Texts about scenes: TraVLR's caption (``reference/travlr.md`` §3; the text modality) and descriptive captions."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from .model import RandomLike, Scene, SceneObject, as_random

PREFIX = "Columns, left to right, are ordered A to F. Rows, top to bottom, are ordered 1 to 6."
NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def article(word: str) -> str:
    """``"an"`` before a vowel sound (among the colours only "orange"), else ``"a"``."""
    return "an" if word[:1].lower() in "aeiou" else "a"


def join_list(parts: Sequence[str]) -> str:
    """``"x"``, ``"x and y"``, ``"x, y and z"`` (no Oxford comma, as TraVLR)."""
    parts = list(parts)
    if not parts:
        raise ValueError("nothing to join")
    if len(parts) == 1:
        return parts[0]
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def object_phrase(obj: SceneObject) -> str:
    """``"a red circle at A 1"``."""
    return f"{article(obj.colour)} {obj.colour} {obj.shape} at {obj.coordinate}"


def travlr_caption(scene: Scene, rng: RandomLike = None, order: Sequence[int] | None = None) -> str:
    """TraVLR's caption of ``scene``: its prefix, then the objects in a random order drawn from ``rng``, or ``order``."""
    if order is None:
        order = list(range(len(scene)))
        as_random(rng).shuffle(order)
    order = list(order)
    if sorted(order) != list(range(len(scene))):
        raise ValueError(f"order must be a permutation of 0..{len(scene) - 1}, got {order}")
    names = [object_phrase(scene.objects[i]) for i in order]
    return f"{PREFIX} There is {join_list(names)}."


def plural(shape: str) -> str:
    return shape + "s"  # every shape name here takes a plain -s


def noun_phrase(count: int, colour: str | None = None, shape: str | None = None, words: bool = True) -> str:
    """``"a red circle"``, ``"two circles"``, ``"three red objects"`` (``words=False``: ``"3 ..."``)."""
    noun = shape or "object"
    adjective = f"{colour} " if colour else ""
    if count == 1:
        head = article(adjective or noun) if words else "1"
        return f"{head} {adjective}{noun}"
    num = NUMBER_WORDS[count] if words and 0 <= count < len(NUMBER_WORDS) else str(count)
    return f"{num} {adjective}{plural(noun)}"


def inventory(scene: Scene, rng: RandomLike = None) -> str:
    """All objects grouped by type, in a random order: ``"two red circles, a blue square and an orange star"``."""
    counts = Counter(o.type for o in scene.objects)
    groups = sorted(counts.items())
    as_random(rng).shuffle(groups)
    return join_list([noun_phrase(n, colour, shape) for (colour, shape), n in groups])
