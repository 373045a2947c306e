"""Family ``dual``: transformers dual encoders (:data:`ARCHITECTURES` and transformers' zero-shot image classification
table; FLAVA pre-training and OWL-ViT detection checkpoints load as their contrastive model). The score is the model's
**own image-text logit**: ``exp(logit_scale) * cos`` (SigLIP adds ``logit_bias``), ``cos / temperature`` (ALIGN), or
the cosine. SigLIP texts are padded to ``max_length`` (64), as their model cards require; others to the longest.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from .base import DualScorer, register
from .loading import load_transformers, model_max_text_length, no_options, processor_preprocessing, to_images

if TYPE_CHECKING:
    from torch import Tensor
    from transformers import PretrainedConfig, PreTrainedModel, PreTrainedTokenizerBase, ProcessorMixin
    from transformers.utils import ModelOutput

    from .base import Picture

# The explicit map (class names as a config's "architectures" lists them).
ARCHITECTURES = frozenset({
    "CLIPModel", "SiglipModel", "Siglip2Model", "AlignModel", "AltCLIPModel", "ChineseCLIPModel", "MetaClip2Model",
    "BlipModel", "FlavaModel", "FlavaForPreTraining", "OwlViTModel", "OwlViTForObjectDetection", "Owlv2Model",
    "Owlv2ForObjectDetection",
    # a vision tower and a text tower joined by projections (what transformers' run_clip.py example trains)
    "VisionTextDualEncoderModel",
})
_MAX_LENGTH_PADDED = {"siglip", "siglip2"}


def embedding_of(out: Tensor | ModelOutput) -> Tensor:
    """The embedding ``get_*_features`` returns: a tensor (transformers 4) or in an output (transformers 5)."""
    import torch

    names = ("pooler_output", "image_embeds", "text_embeds")
    found = [out] if isinstance(out, torch.Tensor) else [getattr(out, name, None) for name in names]
    emb = next((val for val in found if isinstance(val, torch.Tensor)), None)
    if emb is None:
        raise TypeError(f"cannot find the embedding in {type(out).__name__}")
    # FLAVA projects every position (B, L, d); its contrastive head reads the first, [CLS].
    return emb[:, 0, :] if emb.dim() == 3 else emb


def logit_of(model: object) -> tuple[float, float, str]:
    """(scale, bias, formula) of the model's own image-text logits, read once (python floats)."""
    import torch

    with torch.inference_mode():
        if hasattr(model, "logit_scale"):
            scale, logit = float(model.logit_scale.float().exp().item()), "exp(logit_scale) * cosine"
        elif hasattr(model, "temperature"):
            scale, logit = 1.0 / float(model.temperature.float().item()), "cosine / temperature"
        else:
            scale, logit = 1.0, "cosine"
        bias = getattr(model, "logit_bias", None)
        if bias is None:
            return scale, 0.0, logit
        return scale, float(bias.float().item()), logit + " + logit_bias"


class LogitSimilarity:
    """:meth:`~vlprobe.scorers.base.DualScorer.similarity` as ``scale * dot + bias`` in float32 (:func:`logit_of`)."""

    scale: float = 1.0
    bias: float = 0.0

    def similarity(self, image_emb: np.ndarray, text_emb: np.ndarray) -> np.ndarray:
        """(m, d) x (n, d) -> (m, n): the model's own image-text logits."""
        cos = np.asarray(image_emb, dtype=np.float32) @ np.asarray(text_emb, dtype=np.float32).T
        return (cos * np.float32(self.scale) + np.float32(self.bias)).astype(np.float32, copy=False)


class DualEncoderScorer(LogitSimilarity, DualScorer[dict[str, "Tensor"]]):
    """A transformers dual encoder as a scorer (see the module doc)."""

    family: ClassVar[str] = "dual"

    def __init__(self, model_id: str, model: PreTrainedModel, processor: ProcessorMixin | PreTrainedTokenizerBase,
                 *, device: str, dtype: str, revision: str | None = None) -> None:
        check_dual(model_id, model)
        super().__init__(model_id=model_id, revision=revision, device=device, dtype=dtype)
        self.model = model
        self.processor = processor
        self.tokenizer = getattr(processor, "tokenizer", processor)
        self.image_processor = getattr(processor, "image_processor", None)
        model_type = getattr(model.config, "model_type", "")
        self.max_length = model_max_text_length(self.tokenizer, model.config)
        if model_type in _MAX_LENGTH_PADDED:
            self.padding: str | bool = "max_length"
            self.max_length = min(64, self.max_length)
        else:
            self.padding = True
        self.scale, self.bias, self.logit = logit_of(model)
        self.preprocessing = {
            **processor_preprocessing(self.image_processor, processor),
            "model_type": model_type,
            "text_padding": "max_length" if self.padding == "max_length" else "longest",
            "text_max_length": self.max_length,
            "text_truncation": True,
            "prompt": None,
            "score": self.logit,
        }

    def preprocess_images(self, images: Sequence[Picture]) -> dict[str, Tensor]:
        # Through the processor when there is one: some processors (SigLIP 2) set image options
        # of their own (max_num_patches) on top of the image processor's saved ones.
        fn = self.processor if self.image_processor is not None and self.processor is not self.image_processor \
            else self.image_processor
        return dict(fn(images=to_images(images), return_tensors="pt"))

    def encode_images(self, inputs: dict[str, Tensor]) -> np.ndarray:
        import torch

        inputs = self._to_device(inputs)
        with torch.inference_mode():
            emb = embedding_of(self.model.get_image_features(**inputs))
        return self._normalise(emb)

    def tokenize(self, texts: list[str]) -> dict[str, Tensor]:
        return dict(self.tokenizer(list(texts), padding=self.padding, truncation=True,
                                   max_length=self.max_length, return_tensors="pt"))

    def encode_texts(self, texts: list[str]) -> np.ndarray:
        return self._encode_text_inputs(self.tokenize(texts))

    def encodes_seen_ids(self) -> bool:
        # only while the ids and their padding are this class's own (a subclass that feeds texts another way keeps
        # encode_texts) and the tokenizer says how it pads
        cls, tok = type(self), self.tokenizer
        return (cls.seen_texts is DualScorer.seen_texts and cls.tokenize is DualEncoderScorer.tokenize
                and cls.encode_texts is DualEncoderScorer.encode_texts and self.text_limit() == self.max_length
                and isinstance(getattr(tok, "pad_token_id", None), int)
                and getattr(tok, "padding_side", "right") in ("left", "right"))

    def encode_seen_ids(self, ids: list[tuple[int, ...]]) -> np.ndarray:
        return self._encode_text_inputs(self.pad_seen_ids(ids))

    def pad_seen_ids(self, ids: list[tuple[int, ...]]) -> dict[str, Tensor]:
        """What :meth:`tokenize` returns for the texts whose :meth:`seen_texts` ids are ``ids``, padded as it pads."""
        import itertools

        import torch

        tok = self.tokenizer
        names = getattr(tok, "model_input_names", ("input_ids", "attention_mask"))
        lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
        width = max(int(lengths.max(initial=0)), self.max_length if self.padding == "max_length" else 0)
        cols = np.arange(width)[None, :]
        real = cols >= (width - lengths)[:, None] if tok.padding_side == "left" else cols < lengths[:, None]
        input_ids = np.full((len(ids), width), tok.pad_token_id, dtype=np.int64)
        # a boolean mask assigns in row-major order: each row's ids, in order, on its side (one copy, no row loop)
        input_ids[real] = np.fromiter(itertools.chain.from_iterable(ids), dtype=np.int64, count=int(lengths.sum()))
        columns = {"input_ids": input_ids,
                   # one sequence: type 0, padding the tokenizer's pad type
                   "token_type_ids": np.where(real, 0, int(getattr(tok, "pad_token_type_id", 0))),
                   "attention_mask": real}
        return {name: torch.from_numpy(col.astype(np.int64)) for name, col in columns.items()
                if name == "input_ids" or name in names}

    def _encode_text_inputs(self, inputs: dict[str, Tensor]) -> np.ndarray:
        import torch

        inputs = self._to_device(inputs)
        with torch.inference_mode():
            emb = embedding_of(self.model.get_text_features(**inputs))
        return self._normalise(emb)

    @staticmethod
    def _normalise(emb: Tensor) -> np.ndarray:
        emb = emb.float()
        emb = emb / emb.norm(p=2, dim=-1, keepdim=True)
        return emb.cpu().numpy().astype(np.float32, copy=False)


def check_dual(model_id: str, model: PreTrainedModel) -> None:
    """One line for a model that is not a dual encoder."""
    if not (hasattr(model, "get_image_features") and hasattr(model, "get_text_features")):
        raise ValueError(f"model {model_id!r} ({type(model).__name__}) has no get_image_features/get_text_features: "
                         f"it is not a dual encoder; pick another --family")


@register("dual", priority=10, wrap=DualEncoderScorer, architectures=ARCHITECTURES,
          auto_mappings=("MODEL_FOR_ZERO_SHOT_IMAGE_CLASSIFICATION_MAPPING_NAMES",),
          description="dual encoders (CLIP, SigLIP, ALIGN, FLAVA, OWL-ViT, ...): the model's image-text logit")
def load_dual(model: str, *, device: str = "cpu", dtype: str = "float32", revision: str | None = None,
              trust_remote_code: bool = False, config: PretrainedConfig | None = None,
              exact_preprocessing: bool = False, **kw: object) -> DualEncoderScorer:
    """A dual encoder's Hub id or folder -> a scorer (``AutoModel`` and ``AutoProcessor``)."""
    from transformers import AutoModel

    no_options("dual", kw)
    # the score reads all of AutoModel (both towers, their projections, the logit scale): the head is "" (all)
    return load_transformers(AutoModel, model, family="dual", head=lambda net: [""], wrap=DualEncoderScorer,
                             check=check_dual, device=device, dtype=dtype, revision=revision,
                             trust_remote_code=trust_remote_code, exact_preprocessing=exact_preprocessing)
