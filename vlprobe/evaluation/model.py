"""The model: a path or Hub id loaded through its scorer family, or an in-memory (model, processor)
pair or scorer wrapped by its family; the default model; the check that it can score the items' shapes."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .. import runner
from ..errors import ArgumentError, ModelError
from ..scorers.base import DualScorer, Scorer
from ..storage import locations
from ..storage.locations import DEFAULT_MODEL
from .data import SplitSource
from .settings import EvaluateSettings

if TYPE_CHECKING:
    from ..options import ModelLike, ProcessorLike


def load_model(model: ModelLike, processor: ProcessorLike | None, family: str | None, revision: str | None,
               s: EvaluateSettings) -> Scorer:
    """A ready scorer from a path/Hub id (``mini-clip`` included), a (model, processor) pair, a loaded model, or a
    scorer, with the settings ``s`` of a run (:func:`vlprobe.runner.load_model`)."""
    return runner.load_model(model, processor, family=family, revision=revision, device=s.device, dtype=s.dtype,
                             exact_preprocessing=s.exact_preprocessing, control=s.control, seed=s.seed)


def _check_shapes(sources: Sequence[SplitSource], scorer: Scorer) -> None:
    """TraVLR's true/false framing (1 x 1 items) needs a match probability; a dual encoder's
    similarity is not one, and vlprobe does not invent one."""
    if not isinstance(scorer, DualScorer):
        return
    for src in sources:
        if src.shape == (1, 1):
            raise ModelError(
                f"{src.name} has 1 x 1 items (one image, one statement, true or false), which are scored by a "
                f"match probability; {scorer.model_id} is a dual encoder (family {scorer.family!r}), whose "
                f"similarity is not a calibrated probability. Use a family that gives one (itm, vqascore), the "
                f"query-vs-foil framing of the dataset, or `vlprobe probe`, which fits a probe on the frozen "
                f"features as TraVLR's paper does"
            )


def _check_text_tower(scorer: Scorer) -> None:
    """``--modality text`` compares texts by a dual encoder's text tower; a family that scores image-text pairs
    jointly (itm, vqascore) or reads text alone with a language model (causal_lm) has none."""
    if not isinstance(scorer, DualScorer):
        raise ArgumentError("modality", "text", f"needs a dual encoder's text tower; {scorer.family} has none")


def default_model(root: str | os.PathLike) -> str:
    """The offline default's model folder: ``root/models/mini-clip`` in a clone, else the copy
    this package ships (inside the installed package, see :mod:`vlprobe.storage.locations`)."""
    root = Path(root)
    model = root / DEFAULT_MODEL
    if (model / "config.json").is_file():
        return str(model)
    packaged = locations.shipped_model()  # (through the module: a test replaces it)
    if packaged is not None:
        return str(packaged)
    how = " train it with `python -m vlprobe_train`, or" if importlib.util.find_spec("vlprobe_train") else ""
    raise ModelError(
        f"the default model {model} is not there and this vlprobe installation ships none (the small "
        f"offline CLIP has not been made in this checkout);{how} pass --model with a local folder written "
        f"by save_pretrained, or a Hub id"
    )
