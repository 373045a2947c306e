"""The scorer contract and the family registry.

A scorer turns images and texts into scores; it knows nothing of benchmarks or items. There are
two kinds, and the engine (``vlprobe/engine.py``) drives each the fast way:

* ``DualScorer`` (CLIP, SigLIP, ALIGN, ...): images and texts are embedded separately, so the
  engine encodes each *unique* image and text once and builds every item's m x n matrix from
  the embeddings with :meth:`DualScorer.similarity`.
* ``PairScorer`` (ITM heads, text-only language models, VQAScore): one score per (image, text)
  pair; the engine scores each unique pair once. ``uses_images = False`` (text-only models)
  lets the engine deduplicate by text alone.

Families register with :func:`register` and are discovered by importing every module of
``vlprobe/scorers/``: adding a model family is adding one module.

Loading: ``vlprobe.scorers.load_scorer(model, family=None, device=None, dtype="float32",
revision=None, control=None)`` (``loading.py``) detects the family from the model's config when it
is not named. Families today: ``dual`` (CLIP/SigLIP/ALIGN...), ``itm`` (BLIP ITM, ViLT),
``causal_lm`` (text-only LMs), ``vqascore`` (generative VLMs).

Controls (blank / shuffled images) act on **items**, before scoring, so every family and the
engine's deduplication work unchanged: ``items = apply_control(items, "blank" | "shuffle", seed)``
(``controls.py``), and ``load_scorer(..., control=..., control_seed=seed)`` (or
``mark_control(scorer, control, seed)``) records it in the scorer's provenance (family
``"dual+blank"``, ``preprocessing["control"]``).
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

import numpy as np


@dataclass
class PairScores:
    """Scores of a batch of pairs; ``probabilities`` are match probabilities in [0, 1] when the
    model has a matching head (they feed the thresholded metrics acc, p_c, p_f)."""

    scores: np.ndarray
    probabilities: np.ndarray | None = None


@dataclass
class Scorer:
    """Common state: what was loaded, how, and everything a result needs for provenance."""

    model_id: str
    family: ClassVar[str] = "base"
    kind: ClassVar[str] = "base"
    revision: str | None = None
    device: str = "cpu"
    dtype: str = "float32"
    preprocessing: dict = field(default_factory=dict)
    model_sha256: str | None = None  # a local folder's content digest (vlprobe.cache.folder_digest)

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

    def cache_key(self) -> dict[str, Any]:
        """What must match for a cached score or embedding to be reused (the device is left out:
        the same weights and dtype give the same numbers up to kernel noise). A local folder is
        keyed by its content (``model_sha256``) and its name, not by the path as typed: a model
        retrained into the same folder, or another model at the same relative path, gets its own
        entries; a Hub model by its id and resolved commit (``revision``)."""
        d = self.describe()
        d.pop("device", None)
        if d.get("model_sha256"):
            d["model_id"] = Path(str(d["model_id"])).expanduser().resolve().name or "model"
        return d


class DualScorer(Scorer):
    kind: ClassVar[str] = "dual"

    def preprocess_images(self, images: list[Any]) -> Any:
        """PIL images -> model inputs (runs in DataLoader workers; must be picklable-safe)."""
        raise NotImplementedError

    def encode_images(self, inputs: Any) -> np.ndarray:
        """Preprocessed inputs -> image embeddings, float32 (B, d), in the model's own space."""
        raise NotImplementedError

    def encode_texts(self, texts: list[str]) -> np.ndarray:
        """Texts -> text embeddings, float32 (B, d)."""
        raise NotImplementedError

    def similarity(self, image_emb: np.ndarray, text_emb: np.ndarray) -> np.ndarray:
        """(m, d) x (n, d) -> (m, n) scores, equal to the model's own image-text logits."""
        raise NotImplementedError


class PairScorer(Scorer):
    kind: ClassVar[str] = "pair"
    uses_images: ClassVar[bool] = True

    def preprocess_pairs(self, images: list[Any], texts: list[str]) -> Any:
        """(PIL images, texts) -> model inputs (runs in DataLoader workers)."""
        raise NotImplementedError

    def score_pairs(self, inputs: Any) -> PairScores:
        """Preprocessed inputs -> one score (and optionally a probability) per pair."""
        raise NotImplementedError


# ---- registry ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Family:
    name: str
    load: Callable[..., Scorer]
    detect: Callable[[Any], bool] | None = None  # config -> bool: is this family right for it?
    priority: int = 0  # higher is tried first when detecting
    description: str = ""


_FAMILIES: dict[str, Family] = {}
_DISCOVERED = False


def register(
    name: str, *, detect: Callable[[Any], bool] | None = None, priority: int = 0, description: str = ""
) -> Callable[[Callable[..., Scorer]], Callable[..., Scorer]]:
    """Decorator: register a loader ``load(model_id, *, device, dtype, revision, **kw) -> Scorer``."""

    def deco(load: Callable[..., Scorer]) -> Callable[..., Scorer]:
        old = _FAMILIES.get(name)
        # Re-running the same module (importlib.reload) re-registers the same loader: allowed.
        if old is not None and _origin(old.load) != _origin(load):
            raise DuplicateFamilyError(
                f"scorer family {name!r} is already registered by {_origin(old.load)}; "
                f"{_origin(load)} cannot register a second family of the same name: pick another name "
                f"(or call vlprobe.scorers.unregister({name!r}) first to replace it on purpose)"
            )
        _FAMILIES[name] = Family(name, load, detect, priority, description)
        return load

    return deco


def _origin(load: Callable[..., Any]) -> str:
    return f"{getattr(load, '__module__', '?')}.{getattr(load, '__qualname__', repr(load))}"


def unregister(name: str) -> None:
    """Remove a registered family (to replace it on purpose, or after a test)."""
    if _FAMILIES.pop(name, None) is None:
        raise UnknownFamilyError(f"cannot unregister scorer family {name!r}: it is not registered")


def families() -> dict[str, Family]:
    global _DISCOVERED
    if not _DISCOVERED:
        from vlprobe import scorers as pkg

        for info in pkgutil.iter_modules(pkg.__path__):
            if info.name != "base":
                importlib.import_module(f"{pkg.__name__}.{info.name}")
        _DISCOVERED = True
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
