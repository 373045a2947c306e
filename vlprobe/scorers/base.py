"""The scorer contract and the family registry.

The engine drives two kinds of scorer: a :class:`DualScorer` embeds images and texts apart (each item's matrix comes
from :meth:`DualScorer.similarity`), a :class:`PairScorer` scores each (image, text) pair. Texts are deduplicated by
the token ids the model reads (:meth:`Scorer.seen_texts`), so inputs it cannot tell apart tie exactly. A family is one
module of ``vlprobe/scorers/`` (discovered, not listed) calling :func:`register`. Each scoring method (:data:`_GUARDED`)
raises an unforeseen error as a one-line :class:`ScoringError`; vlprobe's own, image and out-of-memory errors pass.
"""

from __future__ import annotations

import functools
import importlib
import os
import pkgutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, ParamSpec, TypeVar, cast

import numpy as np

from ..dataset.images import ImageError
from ..errors import ModelError, VlprobeError

if TYPE_CHECKING:
    import torch
    from PIL.Image import Image
    from torch import Tensor

    Picture = Image | Tensor  # a decoded image as the engine hands it over: PIL, or a (3, H, W) uint8 tensor

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")
Inputs = TypeVar("Inputs")  # what a scorer's preprocessing makes of a batch and its model reads

# The methods the engine (and the probe) call on a scorer; each is guarded.
_GUARDED = ("preprocess_images", "encode_images", "encode_texts", "tokenize", "similarity",
            "preprocess_pairs", "score_pairs", "pair_features", "seen_texts", "encode_seen_ids")


class ScoringError(ModelError):
    """A scorer failed in a way vlprobe did not foresee: one line naming the model, its family and the step."""

    def __init__(self, message: str) -> None:
        # A DataLoader worker re-raises an exception as type(err)(its message + the worker's
        # traceback): keep the one line this class wrote, the traceback's last.
        if "Original Traceback" in message:
            tail = message.strip().splitlines()[-1]
            message = tail.split(f"{type(self).__name__}: ", 1)[-1]
        super().__init__(message)


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    line = text.splitlines()[0] if text else ""
    line = line if len(line) <= 300 else line[:297] + "..."
    return f"{type(err).__name__}: {line}" if line else type(err).__name__


def is_oom(err: BaseException) -> bool:
    """Whether ``err`` is the device running out of memory."""
    try:
        import torch

        if isinstance(err, torch.OutOfMemoryError):
            return True
    except (ImportError, AttributeError):
        pass
    return isinstance(err, RuntimeError) and "out of memory" in str(err).lower()


def _guard(fn: Callable[P, R]) -> Callable[P, R]:
    if getattr(fn, "_vlprobe_guarded", False):
        return fn

    @functools.wraps(fn)
    def method(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except Exception as err:
            if isinstance(err, (VlprobeError, ImageError)) or is_oom(err):  # they say what is wrong, or are handled
                raise
            self = args[0]
            raise ScoringError(
                f"model {getattr(self, 'model_id', '?')!r} (family {getattr(self, 'family', '?')!r}) failed in "
                f"{fn.__name__}: {_first_line(err)}") from err

    method._vlprobe_guarded = True  # type: ignore[attr-defined]
    return method


def text_key(text: str, ids: Sequence[int] | None) -> str:
    """A text's key: a hash of the token ids the model reads, or of the text when they are not known."""
    from ..storage.keys import ids_hash, text_hash

    return "text:" + text_hash(text) if ids is None else "ids:" + ids_hash(ids)


_DTYPES = {
    "float32": "float32", "fp32": "float32", "float": "float32",
    "float16": "float16", "fp16": "float16", "half": "float16",
    "bfloat16": "bfloat16", "bf16": "bfloat16",
}


def resolve_dtype(dtype: object = "float32") -> tuple[str, torch.dtype]:
    """A dtype spelling or ``torch.dtype`` -> (canonical name, ``torch.dtype``); a clear ValueError for anything else."""
    import torch

    if isinstance(dtype, torch.dtype):
        name = str(dtype).removeprefix("torch.")
    else:
        name = str(dtype or "float32").lower().removeprefix("torch.")
    if name not in _DTYPES:
        raise ValueError(f"unsupported dtype {dtype!r}; use one of float32 (fp32), float16 (fp16), bfloat16 (bf16)")
    canonical = _DTYPES[name]
    return canonical, getattr(torch, canonical)


def to_device(inputs: Mapping[str, T], device: str, torch_dtype: torch.dtype) -> dict[str, T]:
    """Processor outputs on ``device``; floating tensors (pixel values) in ``torch_dtype``, integer ones as they are."""
    import torch

    out: dict[str, T] = {}
    for k, v in inputs.items():
        if isinstance(v, torch.Tensor):
            moved = v.to(device)
            out[k] = cast(T, moved.to(torch_dtype) if moved.is_floating_point() else moved)
        else:
            out[k] = v
    return out


@dataclass
class PairScores:
    """Scores of a batch of pairs; ``probabilities``: match probabilities in [0, 1] (for acc, p_c, p_f), if any."""

    scores: np.ndarray
    probabilities: np.ndarray | None = None


@dataclass
class Scorer:
    """What was loaded, and how: everything a result needs for provenance."""

    model_id: str
    family: ClassVar[str] = "base"
    kind: ClassVar[str] = "base"
    revision: str | None = None
    device: str = "cpu"
    dtype: str = "float32"
    preprocessing: dict = field(default_factory=dict)
    model_sha256: str | None = None  # a local folder's content digest (vlprobe.storage.keys.folder_digest)

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        for name in _GUARDED:
            fn = cls.__dict__.get(name)
            if callable(fn):
                setattr(cls, name, _guard(fn))

    def describe(self) -> dict[str, Any]:
        """Provenance for results.json; also the basis of the cache key."""
        return {
            "model_id": self.model_id,
            "revision": self.revision,
            "model_sha256": self.model_sha256,
            "family": self.family,
            "kind": self.kind,
            "dtype": self.dtype,
            "device": self.device,
            "preprocessing": self.preprocessing,
        }

    def _to_device(self, inputs: Mapping[str, T]) -> dict[str, T]:
        """:func:`to_device` for this scorer."""
        return to_device(inputs, self.device, resolve_dtype(self.dtype)[1])

    def text_limit(self) -> int | None:
        """The most tokens of a text the model reads (longer texts are truncated), or None if unknown."""
        limit = getattr(self, "max_length", None)
        return int(limit) if isinstance(limit, int) and limit > 0 else None

    def seen_texts(self, texts: Sequence[str]) -> list[tuple[int, ...]] | None:
        """Each text's token ids as the model reads them (truncated, without padding): texts the model cannot tell
        apart come back equal, so they get one score and tie exactly. None without a tokenizer and a limit."""
        tok = getattr(self, "tokenizer", None) or getattr(getattr(self, "processor", None), "tokenizer", None)
        limit = self.text_limit()
        if tok is None or limit is None or not callable(tok):
            return None
        ids = tok(list(texts), truncation=True, max_length=limit)["input_ids"]  # a BatchEncoding or a plugin's plain dict
        return [tuple(int(i) for i in row) for row in ids]

    seen_texts = _guard(seen_texts)

    def text_keys(self, texts: Sequence[str]) -> list[str]:
        """One key per text (:func:`text_key`), equal exactly when the model reads the two texts alike."""
        texts = list(texts)
        seen = self.seen_texts(texts) if texts else []
        if seen is not None and len(seen) != len(texts):
            raise ValueError(f"seen_texts returned {len(seen)} rows for {len(texts)} texts")
        return [text_key(t, None if seen is None else seen[i]) for i, t in enumerate(texts)]

    def cache_key(self) -> dict[str, Any]:
        """What must match to reuse a cached score: :meth:`describe` without the device, a local folder by its content."""
        model_id = Path(self.model_id).expanduser().resolve().name or "model" if self.model_sha256 else self.model_id
        return {**{k: v for k, v in self.describe().items() if k != "device"}, "model_id": model_id}


class DualScorer(Scorer, Generic[Inputs]):
    """Images and texts embedded apart (CLIP-style); ``Inputs``: what :meth:`preprocess_images` makes."""

    kind: ClassVar[str] = "dual"

    def preprocess_images(self, images: Sequence[Picture]) -> Inputs:
        """Decoded images -> model inputs (runs in DataLoader workers)."""
        raise NotImplementedError

    def encode_images(self, inputs: Inputs) -> np.ndarray:
        """Preprocessed inputs -> image embeddings, float32 (B, d), in the model's own space."""
        raise NotImplementedError

    def encode_texts(self, texts: list[str]) -> np.ndarray:
        """Texts -> text embeddings, float32 (B, d)."""
        raise NotImplementedError

    def encodes_seen_ids(self) -> bool:
        """Whether :meth:`encode_seen_ids` can encode texts from their :meth:`seen_texts` ids."""
        return False

    def encode_seen_ids(self, ids: list[tuple[int, ...]]) -> np.ndarray:
        """Optional: :meth:`encode_texts`' embeddings, bit for bit, from the texts' :meth:`seen_texts` ids."""
        raise NotImplementedError

    def similarity(self, image_emb: np.ndarray, text_emb: np.ndarray) -> np.ndarray:
        """(m, d) x (n, d) -> (m, n) scores, equal to the model's own image-text logits."""
        raise NotImplementedError

    def text_similarity(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Text-text cosines (m, n) in float64, as SugarCREPE++'s authors compare texts for its TOT; no scale or bias."""
        a = np.asarray(a, dtype=np.float64)
        b = np.asarray(b, dtype=np.float64)
        a = a / np.linalg.norm(a, axis=-1, keepdims=True)
        b = b / np.linalg.norm(b, axis=-1, keepdims=True)
        return a @ b.T


class PairScorer(Scorer, Generic[Inputs]):
    """One score per (image, text) pair; ``Inputs``: what :meth:`preprocess_pairs` makes."""

    kind: ClassVar[str] = "pair"
    uses_images: ClassVar[bool] = True

    def preprocess_pairs(self, images: Sequence[Picture], texts: list[str]) -> Inputs:
        """(decoded images, texts) -> model inputs (in DataLoader workers; a text-only scorer gets None images)."""
        raise NotImplementedError

    def score_pairs(self, inputs: Inputs) -> PairScores:
        """Preprocessed inputs -> one score (and optionally a probability) per pair."""
        raise NotImplementedError


@dataclass(frozen=True)
class Family:
    """A registered scorer family (see :func:`register`)."""

    name: str
    load: Callable[..., Scorer]
    detect: Callable[[Any], bool] | None = None  # config -> bool, for families no map describes (plugins)
    priority: int = 0  # higher wins when two families' maps both take an architecture
    description: str = ""
    wrap: Callable[..., Scorer] | None = None
    architectures: frozenset[str] = frozenset()
    auto_mappings: tuple[str, ...] = ()
    # names the family reads itself, loaded with no transformers config (open_clip's ``open_clip:ARCH/TAG``)
    claims: Callable[[Any], bool] | None = None
    check_name: Callable[..., Any] | None = None  # (name, revision): its quick check of such a name, before loading

    def auto_architectures(self) -> dict[str, tuple[str, ...]]:
        """``{model_type: class names}`` of the family's transformers Auto tables."""
        out: dict[str, tuple[str, ...]] = {}
        if not self.auto_mappings:
            return out
        from transformers.models.auto import modeling_auto

        for table in self.auto_mappings:
            for model_type, names in getattr(modeling_auto, table, {}).items():
                out[model_type] = out.get(model_type, ()) + ((names,) if isinstance(names, str) else tuple(names))
        return out

    def takes(self, architecture: str) -> str | None:
        """``"explicit"`` if ``architecture`` is in the family's own map, ``"auto"`` if in its Auto tables, else None."""
        if architecture in self.architectures:
            return "explicit"
        if any(architecture in names for names in self.auto_architectures().values()):
            return "auto"
        return None


# The Auto class each transformers table feeds, for `vlprobe list`.
_AUTO_CLASSES = {
    "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES": "AutoModelForCausalLM",
    "MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES": "AutoModelForImageTextToText",
    "MODEL_FOR_ZERO_SHOT_IMAGE_CLASSIFICATION_MAPPING_NAMES": "AutoModelForZeroShotImageClassification",
}


_FAMILIES: dict[str, Family] = {}
_DISCOVERED = False


def register(
    name: str, *, detect: Callable[[Any], bool] | None = None, priority: int = 0, description: str = "",
    wrap: Callable[..., Scorer] | None = None, architectures: Iterable[str] = (), auto_mappings: Iterable[str] = (),
    claims: Callable[[Any], bool] | None = None, check_name: Callable[..., Any] | None = None,
) -> Callable[[Callable[..., Scorer]], Callable[..., Scorer]]:
    """Decorator: register ``load(model_id, *, device, dtype, revision, trust_remote_code, config,
    exact_preprocessing, **kw) -> Scorer`` as family ``name``. ``wrap(model_id, model, processor, *, device, dtype,
    revision)`` makes a scorer of an already-loaded model; ``architectures``: the config class names the family takes;
    ``auto_mappings``: transformers ``MODEL_FOR_..._MAPPING_NAMES`` tables whose classes it takes too."""

    def deco(load: Callable[..., Scorer]) -> Callable[..., Scorer]:
        old = _FAMILIES.get(name)
        # Re-running the same module (importlib.reload) re-registers the same loader: allowed.
        if old is not None and _origin(old.load) != _origin(load):
            raise DuplicateFamilyError(
                f"scorer family {name!r} is already registered by {_origin(old.load)}; "
                f"{_origin(load)} cannot register a second family of the same name: pick another name "
                f"(or call vlprobe.scorers.unregister({name!r}) first to replace it on purpose)"
            )
        _FAMILIES[name] = Family(name, load, detect, priority, description, wrap, frozenset(architectures),
                                 tuple(auto_mappings), claims, check_name)
        return load

    return deco


def _origin(load: Callable[..., object]) -> str:
    return f"{getattr(load, '__module__', '?')}.{getattr(load, '__qualname__', repr(load))}"


def unregister(name: str) -> None:
    """Remove a registered family (to replace it on purpose, or after a test)."""
    if _FAMILIES.pop(name, None) is None:
        raise UnknownFamilyError(f"cannot unregister scorer family {name!r}: it is not registered")


def families() -> dict[str, Family]:
    global _DISCOVERED
    if not _DISCOVERED:
        # the modules beside this one, by path: importing the package itself would be an import circle
        for info in pkgutil.iter_modules([os.path.dirname(__file__)]):
            if info.name != "base":
                importlib.import_module(f"{__package__}.{info.name}")
        _DISCOVERED = True
        from vlprobe.plugins import load_scorers  # a user's own families (entry points, include path)

        load_scorers()
    return dict(_FAMILIES)


class UnknownFamilyError(ValueError):
    """A scorer family name that is not registered, or a model no family recognises."""


class DuplicateFamilyError(ValueError):
    """A second scorer family registered under a name already taken."""


def get_family(name: str) -> Family:
    fams = families()
    if name not in fams:
        raise UnknownFamilyError(f"unknown scorer family {name!r}; known families: {', '.join(sorted(fams))}")
    return fams[name]
