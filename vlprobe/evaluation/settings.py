"""The settings of ``vlprobe.evaluate`` (:class:`EvaluateSettings`) and ``vlprobe.score`` (:class:`ScoreSettings`),
each checked before anything is loaded."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ..benchmarks.base import AUTHORS, TEXT_ONLY, TIE_CHOICES
from ..dataset.spec import MODALITIES as IMAGE_MODALITIES
from ..dataset.spec import ItemSpec
from ..defaults import BATCH_SIZE
from ..options import (
    Refused,
    Settings,
    batch_size_or_auto,
    callable_or_none,
    is_number,
    joined,
    names_given,
    one_of,
    opt,
    optional,
    path,
    switch,
    worker_count,
)

if TYPE_CHECKING:
    from ..options import DatasetLike

DEFAULT_OUT = "runs/default"  # the offline default run's output folder
MODALITIES = (*IMAGE_MODALITIES, TEXT_ONLY)  # TraVLR's three and text-only (vlprobe/evaluation/text_only.py)
CONTROLS = ("blank", "shuffle")  # "shuffled" is accepted as the CLI's old spelling of "shuffle"

_DATASETS_WANTED = ("must be a dataset folder, a Hub id, a datasets.Dataset/DatasetDict (with spec=), a list of "
                    "those, or a dict {name: one of those}")


def dataset_list(datasets: object) -> tuple[list[DatasetLike], list[str] | None]:
    """``datasets`` as a list, with a dict's names; :class:`Refused` for anything else and for duplicates."""
    names: list[str] | None = None
    if isinstance(datasets, Mapping) and not _is_dataset_object(datasets):
        names, datasets = [str(k) for k in datasets], list(datasets.values())
    elif isinstance(datasets, (str, os.PathLike)) or _is_dataset_object(datasets):
        datasets = [datasets]
    elif not isinstance(datasets, (list, tuple)):
        raise Refused(_DATASETS_WANTED)
    datasets = list(datasets)
    if not datasets:
        raise Refused("no dataset given")
    seen: set[str] = set()
    for d in datasets:
        if _is_dataset_object(d):
            continue
        if not isinstance(d, (str, os.PathLike)):
            raise Refused(_DATASETS_WANTED, d)
        path(d, "is empty; name a dataset folder, a built benchmark's name or a Hub id")
        key = os.path.normpath(os.path.abspath(d)) if os.path.exists(d) else str(d)
        if key in seen:
            raise Refused("given more than once (its rows would be scored and counted twice); name each dataset once",
                          key)
        seen.add(key)
    return datasets, names


def _is_dataset_object(obj: object) -> bool:
    hf = sys.modules.get("datasets")  # not imported: obj cannot be one (and a name is checked without it)
    return hf is not None and isinstance(obj, (hf.Dataset, hf.DatasetDict))


def _datasets(value: object) -> object:
    if value is not None:
        dataset_list(value)
    return value


def _spec(value: object) -> object:
    if value is None or isinstance(value, (dict, ItemSpec)):
        return value
    return path(value, "must be a vlprobe.yaml path, a dict or an ItemSpec")


def _threshold(value: object) -> float:
    if not is_number(value) or not 0 <= value <= 1:
        raise Refused("must be a probability threshold in [0, 1] (e.g. 0.5): it is applied to the model's match "
                      "probabilities")
    return value


def _control(value: object) -> str | None:
    if value == "shuffled":
        return "shuffle"
    if value is not None and value not in CONTROLS:
        raise Refused(f"unknown control; choose one of {', '.join(CONTROLS)}")
    return None if value is None else str(value)


def _root(value: object) -> object:
    if value is not None and not os.path.isdir(path(value, "must be a folder path (where the offline default's "
                                                           "folders are), or None")):
        raise Refused("is not a folder; name the folder the offline default's folders are in (or leave it out: the "
                      "working directory)")
    return value


@dataclass(frozen=True)
class EvaluateSettings(Settings):
    """The settings of one ``vlprobe.evaluate`` run (its keywords, checked)."""

    PROG: ClassVar[str] = "vlprobe evaluate"
    LISTS: ClassVar[tuple[str, ...]] = ("configs", "splits")
    REPEATED: ClassVar[tuple[str, ...]] = ("datasets",)

    datasets: Any = opt(None, _datasets, flag="--dataset")
    splits: str | Sequence[str] | None = opt(None, optional(names_given), flag="--split")
    spec: Any = opt(None, _spec)
    ties: str = opt(AUTHORS, one_of(TIE_CHOICES, "tie policy"))
    threshold: float = opt(0.5, _threshold)
    modality: str = opt("image", one_of(MODALITIES, "modality"))
    control: str | None = opt(None, _control)
    exact_preprocessing: bool = opt(False, switch)
    root: Any = opt(None, _root, flag=None)
    log: Any = opt(None, callable_or_none, flag=None)

    def together(self) -> None:
        super().together()
        if self.modality == TEXT_ONLY and self.control:
            raise self.refuse("control", "--modality text looks at no image, so an image control changes nothing; "
                                         "leave it out")

    def record(self, workers: int) -> dict[str, Any]:
        """The settings block of results.json's provenance (``workers``: the DataLoader workers that ran)."""
        return {"ties": self.ties, "bootstrap": self.bootstrap, "confidence": self.confidence, "seed": self.seed,
                "threshold": self.threshold, "limit": self.limit, "batch_size": self.batch_size,
                "num_workers": workers, "modality": self.modality, "control": self.control,
                "split": joined(self.splits), "config": joined(self.configs),
                "exact_preprocessing": self.exact_preprocessing}


def _texts(value: object) -> tuple[str, ...]:
    texts = [value] if isinstance(value, str) else value
    if not isinstance(texts, (list, tuple)) or not texts or not all(isinstance(t, str) for t in texts):
        raise Refused("must be a string or a non-empty list of strings")
    for j, t in enumerate(texts):
        if not t.strip():  # as vlprobe.evaluate refuses an empty text cell: no text to score
            raise Refused("is empty; every text must be a non-empty string", t, f"[{j}]")
    return tuple(texts)


def _images(value: object) -> tuple[Any, ...]:
    from PIL import Image

    one = (str, os.PathLike, Image.Image)
    images = [value] if isinstance(value, one) else value
    if not isinstance(images, (list, tuple)) or not images:
        raise Refused("must be a PIL image, an image file path, or a non-empty list of them")
    for i, image in enumerate(images):
        if not isinstance(image, one):
            raise Refused("must be a PIL image or an image file path", image, f"[{i}]")
        if isinstance(image, (str, os.PathLike)) and not os.path.isfile(image):
            raise Refused("no such image file", str(image), f"[{i}]")
    return tuple(os.fspath(im) if isinstance(im, os.PathLike) else im for im in images)


@dataclass(frozen=True)
class ScoreSettings(Settings):
    """The settings of one ``vlprobe.score`` call: the images and texts, and the model's settings."""

    batch_size: int | str = opt(BATCH_SIZE, batch_size_or_auto)
    num_workers: int | None = opt(0, worker_count)
    progress: bool = opt(False, switch)
    images: Any = opt((), _images, flag=None)
    texts: Any = opt((), _texts, flag=None)
    probabilities: bool = opt(False, switch, flag=None)
    exact_preprocessing: bool = opt(False, switch)
