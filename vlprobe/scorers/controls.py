"""Image controls, for any family that uses images: they change the **items**, not the model.

* ``blank``: every image is replaced by a white RGB image of the same size. This is TraVLR's
  caption-only setting, and a unimodal-collapse check: a model whose scores barely move when the
  image is blank is reading the texts only.
* ``shuffle``: the images are permuted across the whole run (every image slot of every item),
  with a seeded permutation, so each item is scored against some other item's image(s); the
  image-text pairing is broken while the image distribution is kept.

Use::

    items = apply_control(items, "blank")            # or "shuffle", seed=0
    scorer = load_scorer(model, control="blank")     # records it: family "dual+blank"

``apply_control`` returns new :class:`~vlprobe.dataset.items.Item` objects (ids, texts, gold and tags
unchanged; ``meta["control"]`` set) and never decodes more than an image's header. Blank images are
PNG bytes shared by all images of one size, so a content-hash cache encodes each size once.
:func:`mark_control` (called by ``load_scorer(control=...)``) records the control in provenance:
the scorer's ``family`` becomes ``"<family>+<control>"`` and ``preprocessing["control"]`` holds
the control and its seed, so results and cache keys of a control run never mix with real ones.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import numpy as np

from vlprobe.dataset.images import image_size
from vlprobe.dataset.items import Item

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


def _replace(item: Item, images: tuple[Any, ...], control: str, seed: int | None) -> Item:
    meta = {**item.meta, "control": control if seed is None else f"{control}(seed={seed})"}
    return Item(id=item.id, images=images, texts=item.texts, gold=item.gold, tags=item.tags,
                config=item.config, meta=meta)


def apply_control(items: Iterable[Item], control: str, seed: int = 0) -> list[Item]:
    """Items with their images replaced by the ``control`` ("blank" or "shuffle", see module doc).

    The shuffle permutes all image slots of the run with ``numpy.random.default_rng(seed)``; the
    same items and seed always give the same permutation. With a single image slot in the whole run
    there is nothing to shuffle and the items come back with their images unchanged (but marked).
    """
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


def mark_control(scorer: Any, control: str, seed: int = 0) -> Any:
    """Record ``control`` in the scorer's provenance (family ``"<family>+<control>"``); returns it.
    Text-only scorers (``uses_images = False``) refuse: an image control cannot change them."""
    _check(control)
    if getattr(scorer, "uses_images", True) is False:
        raise ValueError(f"the {control!r} image control makes no sense for family {scorer.family!r}, "
                         f"which does not look at images")
    base = scorer.family.split("+")[0]
    scorer.family = f"{base}+{control}"
    scorer.preprocessing = {**scorer.preprocessing,
                            "control": {"name": control, "seed": seed if control == "shuffle" else None}}
    return scorer
