"""The model: a path or Hub id loaded through its scorer family, or an in-memory (model, processor)
pair or scorer wrapped by its family; the default model; the check that it can score the items' shapes."""

from __future__ import annotations

import hashlib
import importlib.util
import os
from pathlib import Path
from typing import Any, Sequence

from ..errors import ArgumentError, ModelError, SettingError, VlprobeError
from ..locations import DEFAULT_MODEL
from .data import SplitSource
from .settings import Settings


def _loaded_scorer(model: Any, processor: Any, family: str | None, s: Settings) -> Any:
    """A scorer around an already-loaded transformers model and its processor (or tokenizer): the
    family (named, or detected from the model's own class) wraps it (``Family.wrap``)."""
    import torch

    from ..scorers.base import UnknownFamilyError, get_family
    from ..scorers.loading import detect_family

    config = getattr(model, "config", None)
    if config is None:
        raise ModelError(f"model is a {type(model).__name__}: pass a model folder or Hub id, a transformers "
                         f"model (with processor=...), or a vlprobe scorer")
    try:
        # The model's own classes (a subclass of CLIPModel is still a CLIPModel), not the config's list.
        classes = [type(model).__name__] + [c.__name__ for c in type(model).__mro__[1:]
                                            if c.__module__.startswith("transformers.models.")]
        fam = get_family((family or detect_family(config, architectures=classes)).split("+")[0])
    except UnknownFamilyError as err:
        raise ModelError(str(err)) from None
    if fam.wrap is None:
        raise ModelError(f"family {fam.name!r} cannot wrap an already-loaded model; save it with save_pretrained and "
                         f"pass the folder")
    if processor is None:
        raise ModelError("a loaded model needs its processor (a tokenizer for family 'causal_lm'): "
                         "evaluate(model=(model, processor), ...) or evaluate(model=model, processor=processor, ...)")
    if s.device is not None:
        model = model.to(s.device)
    param = next(iter(model.parameters()), None)
    device = s.device or (str(param.device) if param is not None else "cpu")
    dtype = str(param.dtype).removeprefix("torch.") if param is not None else s.dtype
    model_id = str(getattr(config, "_name_or_path", "") or getattr(model, "name_or_path", "") or type(model).__name__)
    model = model.eval()
    try:
        scorer = fam.wrap(model_id, model, processor, device=device, dtype=dtype, revision=None)
    except VlprobeError:
        raise
    except Exception as err:
        line = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ModelError(f"cannot wrap model {model_id!r} as family {fam.name!r}: {line}") from err
    # The weights identify a model in memory (it may be mid-training): its cache key is their digest.
    h = hashlib.sha256()
    with torch.no_grad():
        for key, tensor in sorted(model.state_dict().items()):
            h.update(key.encode())
            h.update(tensor.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes())
    scorer.revision = f"weights-sha256:{h.hexdigest()[:32]}"
    return scorer


def load_model(model: Any, processor: Any, family: str | None, revision: str | None, s: Settings) -> Any:
    """A ready scorer from a path/Hub id, a (model, processor) pair, a loaded model, or a scorer."""
    from ..scorers.base import Scorer, UnknownFamilyError
    from ..scorers.loading import load_scorer

    if isinstance(model, tuple) and len(model) == 2 and processor is None:
        model, processor = model
    if isinstance(model, Scorer):
        scorer = model
    elif isinstance(model, (str, os.PathLike)):
        try:
            scorer = load_scorer(str(model), family, device=s.device, dtype=s.dtype, revision=revision,
                                 exact_preprocessing=s.exact_preprocessing)
        except UnknownFamilyError as err:
            raise ModelError(str(err)) from None
        except (FileNotFoundError, OSError, ValueError, TypeError) as err:
            raise ModelError(str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__) from None
    else:
        scorer = _loaded_scorer(model, processor, family, s)
    if s.control:
        from ..scorers.controls import mark_control

        if "+" not in scorer.family:
            try:
                mark_control(scorer, s.control, s.seed)
            except ValueError as err:
                raise SettingError(str(err)) from None
    return scorer


def _check_shapes(sources: Sequence[SplitSource], scorer: Any) -> None:
    """TraVLR's true/false framing (1 x 1 items) needs a match probability; a dual encoder's
    similarity is not one, and vlprobe does not invent one."""
    from ..scorers.base import DualScorer

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


def _check_text_tower(scorer: Any) -> None:
    """``--modality text`` compares texts by a dual encoder's text tower; a family that scores image-text pairs
    jointly (itm, vqascore) or reads text alone with a language model (causal_lm) has none."""
    from ..scorers.base import DualScorer

    if not isinstance(scorer, DualScorer):
        raise ArgumentError("modality", "text", f"needs a dual encoder's text tower; {scorer.family} has none")


def default_model(root: str | os.PathLike) -> str:
    """The offline default's model folder: ``root/models/mini-clip`` in a clone, else the copy
    this package ships (inside the installed package, see :mod:`vlprobe.locations`)."""
    from ..locations import shipped_model

    root = Path(root)
    model = root / DEFAULT_MODEL
    if (model / "config.json").is_file():
        return str(model)
    packaged = shipped_model()
    if packaged is not None:
        return str(packaged)
    how = " train it with `python -m vlprobe_train`, or" if importlib.util.find_spec("vlprobe_train") else ""
    raise ModelError(
        f"the default model {model} is not there and this vlprobe installation ships none (the small "
        f"offline CLIP has not been made in this checkout);{how} pass --model with a local folder written "
        f"by save_pretrained, or a Hub id"
    )
