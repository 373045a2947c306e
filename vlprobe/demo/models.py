"""Loaded models, kept between requests, and a fast one-sentence failure for a model that cannot be had (transformers
can take many seconds to give up offline)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..errors import ModelError
from . import hub
from .settings import Settings, SpaceError, max_models

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from ..scorers.base import Scorer


def check_available(model_id: str) -> None:
    """Fail in well under a second when a Hub id cannot be loaded (offline and not cached, or not on the Hub); a
    local folder (absolute, as ``resolve_model`` gives it) passes. A Hub id is never looked up on the disk."""
    if hub.local_folder(model_id):
        return
    from ..scorers.base import get_family
    from ..scorers.loading import family_of_name

    own = family_of_name(model_id) if ":" in model_id else None  # a name a family reads itself (open_clip's)
    if own is not None:  # the family's own quick check, as the registry gives it
        check = get_family(own).check_name
        try:
            if check is not None:
                check(model_id, None)
        except ModelError as err:
            raise SpaceError(str(err)) from None
        return
    import huggingface_hub
    from huggingface_hub import constants
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    cached = huggingface_hub.try_to_load_from_cache(model_id, "config.json")
    if isinstance(cached, str):
        return
    if constants.HF_HUB_OFFLINE:
        raise SpaceError(f"model {model_id!r} is not on this Space and this Space cannot download models; "
                         "choose the default model or one the Space owner has added")
    try:
        huggingface_hub.model_info(model_id, timeout=3)
    except GatedRepoError:
        raise SpaceError(f"model {model_id!r} is gated on the Hugging Face Hub; this Space cannot load it") from None
    except RepositoryNotFoundError:
        raise SpaceError(f"there is no model {model_id!r} on the Hugging Face Hub (or it is private); "
                         "check the spelling") from None
    except Exception:  # noqa: BLE001  (no answer in 3 s: say so rather than wait)
        raise SpaceError(f"model {model_id!r} is not on this Space and the Hugging Face Hub cannot be reached "
                         "from it now; try again later or choose the default model") from None


def load_scorer(model_id: str) -> Scorer:
    """A vlprobe scorer for the model, never running a repository's own code."""
    from ..scorers.loading import load_scorer as _load

    check_available(model_id)
    try:
        return _load(model_id, trust_remote_code=False)  # never run a repo's own code on a Space
    except (OSError, ValueError, ImportError, KeyError) as err:
        msg = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise SpaceError(f"model {Path(model_id).name!r} could not be loaded: {msg.split('. ')[0]}") from None


class ModelCache:
    """Loaded scorers, the least recently used dropped beyond ``capacity``; a model loads once, holding back no other."""

    def __init__(self, capacity: int | None = None) -> None:
        self.capacity = capacity
        self._models: OrderedDict[str, Scorer] = OrderedDict()
        self._lock = threading.Lock()  # guards the two dicts
        self._loading: dict[str, threading.Lock] = {}  # one lock per model being loaded
        self.loads = 0

    def _cached(self, model_id: str) -> Scorer | None:
        with self._lock:
            if model_id in self._models:
                self._models.move_to_end(model_id)
                return self._models[model_id]
        return None

    def get(self, model_id: str, loader: Callable[[str], Scorer] | None = None) -> Scorer:
        found = self._cached(model_id)
        if found is not None:
            return found
        with self._lock:
            key_lock = self._loading.setdefault(model_id, threading.Lock())
        with key_lock:
            found = self._cached(model_id)  # another request may have loaded it while this one waited
            if found is not None:
                return found
            try:
                scorer = (loader or load_scorer)(model_id)
            except BaseException:
                with self._lock:
                    self._loading.pop(model_id, None)
                raise
            with self._lock:  # stored before its loading lock goes, so nobody loads it twice
                self.loads += 1
                self._models[model_id] = scorer
                self._loading.pop(model_id, None)
                while len(self._models) > (self.capacity or max_models()):
                    self._models.popitem(last=False)
            return scorer

    def __contains__(self, model_id: str) -> bool:
        return model_id in self._models


MODELS = ModelCache()


def preload_default_model(settings: Settings, cache: ModelCache | None = None) -> str | None:
    """Load the default model (at the Space's start, so the first visitor does not wait); why it could not, or None."""
    try:
        (cache or MODELS).get(settings.resolve_model(""))
    except SpaceError as err:
        return str(err)
    return None


def tokenizer_of(model_id: str, cache: ModelCache | None = None) -> PreTrainedTokenizerBase | None:
    """A model's tokenizer (which gallery examples it can read): the loaded model's, else its files alone; or None."""
    scorer = (cache or MODELS)._cached(model_id)
    if scorer is not None:
        return getattr(scorer, "tokenizer", None)
    if not hub.model_at_hand(model_id):
        return None
    try:
        from transformers import AutoTokenizer

        offline = not hub.local_folder(model_id) and not hub.hub_reachable()
        return AutoTokenizer.from_pretrained(model_id, local_files_only=offline)
    except Exception:  # noqa: BLE001  (no tokenizer to read: every example is offered)
        return None
