"""Image controls, for any family that uses images: they change the **items**, not the model. ``blank`` makes every
image a white one of its size (TraVLR's caption-only setting, a unimodal-collapse check); ``shuffle`` permutes the
images across the run (breaking the pairing, keeping the image distribution). :func:`mark_control` records the
control in provenance (family ``"<family>+<control>"``), so its results and cache keys never mix with real ones.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from functools import lru_cache
from typing import TypeVar

import numpy as np

from vlprobe.dataset.images import image_size
from vlprobe.dataset.items import ImageLike, Item

from .base import Scorer

S = TypeVar("S", bound=Scorer)
CONTROLS = ("blank", "shuffle")


def _check(control: str) -> str:
    if control not in CONTROLS:
        raise ValueError(f"unknown image control {control!r}; known controls: {', '.join(CONTROLS)}")
    return control


@lru_cache(maxsize=64)
def white_png(width: int, height: int) -> bytes:
    """PNG bytes of a white RGB image of the given size (cached: one per size)."""
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (width, height), (255, 255, 255)).save(buf, format="PNG")
    return buf.getvalue()


def _replace(item: Item, images: tuple[ImageLike, ...], control: str, seed: int | None) -> Item:
    meta = {**item.meta, "control": control if seed is None else f"{control}(seed={seed})"}
    return Item(id=item.id, images=images, texts=item.texts, gold=item.gold, tags=item.tags,
                config=item.config, meta=meta)


def apply_control(items: Iterable[Item], control: str, seed: int = 0) -> list[Item]:
    """New items with their images replaced by the ``control`` (``meta["control"]`` set); the shuffle's permutation
    is ``numpy.random.default_rng(seed)``'s; no image is decoded past its header."""
    _check(control)
    items = list(items)
    if control == "blank":
        return [
            _replace(item, tuple(white_png(*image_size(im, f"item {item.id!r} image {k}"))
                                 for k, im in enumerate(item.images)), control, None)
            for item in items
        ]
    slots = [im for item in items for im in item.images]
    perm = np.random.default_rng(seed).permutation(len(slots))
    shuffled = [slots[p] for p in perm]
    out, k = [], 0
    for item in items:
        out.append(_replace(item, tuple(shuffled[k:k + item.m]), control, seed))
        k += item.m
    return out


def mark_control(scorer: S, control: str, seed: int = 0) -> S:
    """Record ``control`` in the scorer's provenance; a text-only scorer refuses it, as it cannot change them."""
    _check(control)
    if getattr(scorer, "uses_images", True) is False:
        raise ValueError(f"the {control!r} image control makes no sense for family {scorer.family!r}, "
                         f"which does not look at images")
    base = scorer.family.split("+")[0]
    scorer.family = f"{base}+{control}"  # type: ignore[misc]  # this scorer's own, shadowing its class's
    scorer.preprocessing = {**scorer.preprocessing,
                            "control": {"name": control, "seed": seed if control == "shuffle" else None}}
    return scorer
