"""The item: one shape for every benchmark, ``m`` images, ``n`` texts and a boolean gold matrix ``G`` of shape
``(m, n)``: ``G[i, j]`` is true when text ``j`` truly describes image ``i`` (VALSE: 1 x 2 ``[[1, 0]]``; Winoground:
2 x 2 identity; BLA: 1 x 4 ``[[1, 1, 0, 0]]``; TraVLR true/false: 1 x 1 ``[[1]]`` or ``[[0]]``, the only shape that
may lack a gold cell). Tags (``"instrument=actions"``) drive per-tag tables. Items know nothing of models.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Union

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from PIL.Image import Image

# An image as a dataset row holds it (see the module doc): scorers decode it (vlprobe.dataset.images).
ImageLike = Union["Image", bytes, str, "os.PathLike[str]", Mapping[str, Any]]


class ItemError(ValueError):
    """An item that cannot be scored; the message names the item."""


@dataclass(frozen=True, eq=False)
class Item:
    id: str
    images: tuple[ImageLike, ...]
    texts: tuple[str, ...]
    gold: npt.NDArray[np.bool_]
    tags: tuple[str, ...] = ()
    config: str = ""
    meta: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "id", str(self.id))
        object.__setattr__(self, "images", tuple(self.images))
        object.__setattr__(self, "texts", tuple(self.texts))
        object.__setattr__(self, "tags", tuple(str(t) for t in self.tags))
        gold = _as_gold(self.gold, self.id)
        gold.setflags(write=False)
        object.__setattr__(self, "gold", gold)
        self.validate()

    @property
    def m(self) -> int:
        return len(self.images)

    @property
    def n(self) -> int:
        return len(self.texts)

    @property
    def shape(self) -> tuple[int, int]:
        return (self.m, self.n)

    def validate(self) -> None:
        where = f"item {self.id!r}"
        if self.m < 1:
            raise ItemError(f"{where}: has no image (m = 0); an item needs at least one image slot")
        if self.n < 1:
            raise ItemError(f"{where}: has no text (n = 0)")
        for j, text in enumerate(self.texts):
            if not isinstance(text, str):
                raise ItemError(f"{where}: text {j} is {type(text).__name__}, not a string: {text!r}")
        if self.gold.shape != self.shape:
            raise ItemError(
                f"{where}: gold matrix has shape {self.gold.shape} but the item has "
                f"{self.m} image(s) x {self.n} text(s)"
            )
        if not self.gold.any() and self.shape != (1, 1):
            raise ItemError(f"{where}: gold matrix has no gold cell; at least one text must describe an image")


def _as_gold(gold: npt.ArrayLike, item_id: str) -> npt.NDArray[np.bool_]:
    arr = np.asarray(gold)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise ItemError(f"item {item_id!r}: gold must be a 2-D m x n matrix, got {arr.ndim} dimension(s)")
    if arr.dtype != bool:
        if not np.all(np.isin(arr, (0, 1))):
            raise ItemError(f"item {item_id!r}: gold must hold only 0/1 (or booleans), got {arr.tolist()}")
        arr = arr.astype(bool)
    return np.array(arr, dtype=bool, copy=True)
