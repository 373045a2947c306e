"""Family ``itm``: cross-encoders with an image-text matching head, one forward per (image, text) pair.

==============================  =================================  ==========================================
architecture                    head output                        score / probability
==============================  =================================  ==========================================
``BlipForImageTextRetrieval``   ``itm_score`` (B, 2): [no match,   score = logit[match] - logit[no match]
(BLIP ITM, ``use_itm_head``)    match]                             (the match log-odds); probability =
                                                                   softmax(logits)[match] = sigmoid(score)
``ViltForImageAndTextRetrieval``  ``logits`` (B, 1)                score = the single match logit;
(ViLT retrieval)                                                   probability = sigmoid(logit)
==============================  =================================  ==========================================

For BLIP the difference of the two logits is used rather than the "match" logit alone, so that the
score ranks pairs exactly as the model's own match probability does (the VALSE LXMERT script ranks
by the raw match logit, reference/valse.md §4.1; for a 2-way softmax the log-odds is the
monotone equivalent). The probability feeds the thresholded metrics (acc, p_c, p_f at 0.5, which
is the argmax of the two logits as in the LXMERT script).

BLIP's ITM head is applied to the text encoder's first position with the tokenizer's ``[CLS]``,
as ``transformers`` runs it (the original LAVIS code swaps in an ``[ENC]`` token: not done here,
since the Hub checkpoints are used through transformers). FLAVA's ITM head needs the full
pre-training model and is not supported yet.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from .base import PairScorer, PairScores, register
from .loading import (from_pretrained, load_processor, model_max_text_length, processor_preprocessing, resolve_dtype,
                      to_device, to_images)

# architecture name -> how to read the match logits from its output
_HEADS = {
    "BlipForImageTextRetrieval": "two_way",
    "ViltForImageAndTextRetrieval": "single",
}


def _arch(config: Any) -> str | None:
    for arch in getattr(config, "architectures", None) or []:
        if arch in _HEADS:
            return arch
    return None


class ITMScorer(PairScorer):
    family: ClassVar[str] = "itm"
    uses_images: ClassVar[bool] = True

    def __init__(self, model_id: str, model: Any, processor: Any, arch: str, *, device: str, dtype: str,
                 revision: str | None = None) -> None:
        super().__init__(model_id=model_id, revision=revision, device=device, dtype=dtype)
        self.model = model
        self.processor = processor
        self.arch = arch
        self.head = _HEADS[arch]
        self._torch_dtype = resolve_dtype(dtype)[1]
        tokenizer = getattr(processor, "tokenizer", None)
        self.max_length = model_max_text_length(tokenizer, model.config)
        score = ("logit[match] - logit[no match]" if self.head == "two_way" else "match logit")
        prob = ("softmax(logits)[match]" if self.head == "two_way" else "sigmoid(match logit)")
        self.preprocessing = {
            **processor_preprocessing(getattr(processor, "image_processor", None), processor),
            "architecture": arch,
            "text_padding": "longest",
            "text_max_length": self.max_length,
            "text_truncation": True,
            "prompt": None,
            "score": score,
            "probability": prob,
        }

    def preprocess_pairs(self, images: list[Any], texts: list[str]) -> Any:
        if len(images) != len(texts):
            raise ValueError(f"preprocess_pairs: {len(images)} images but {len(texts)} texts")
        return dict(self.processor(images=to_images(images), text=list(texts), padding=True, truncation=True,
                                   max_length=self.max_length, return_tensors="pt"))

    def score_pairs(self, inputs: Any) -> PairScores:
        import torch

        batch = to_device(inputs, self.device, self._torch_dtype)
        with torch.inference_mode():
            if self.head == "two_way":
                logits = self.model(**batch, use_itm_head=True).itm_score.float()
                score = logits[:, 1] - logits[:, 0]
                prob = torch.softmax(logits, dim=-1)[:, 1]
            else:
                score = self.model(**batch).logits.float()[:, 0]
                prob = torch.sigmoid(score)
        return PairScores(score.cpu().numpy().astype(np.float32), prob.cpu().numpy().astype(np.float32))

    def pair_features(self, inputs: Any) -> np.ndarray:
        """The joint representation the matching head reads, float32 (B, hidden): BLIP's text encoder
        at the first position (cross-attending to the image), ViLT's pooler output (for vlprobe probe)."""
        import torch

        batch = to_device(inputs, self.device, self._torch_dtype)
        with torch.inference_mode():
            if self.head == "two_way":
                feats = self.model(**batch, use_itm_head=True).question_embeds[:, 0, :]
            else:
                feats = self.model.vilt(**batch).pooler_output
        return feats.float().cpu().numpy().astype(np.float32)


@register("itm", detect=lambda config: _arch(config) is not None, priority=20,
          description="image-text matching heads (BLIP ITM, ViLT retrieval): match logit and probability")
def load_itm(model: str, *, device: str = "cpu", dtype: str = "float32", revision: str | None = None,
             trust_remote_code: bool = False, config: Any = None, exact_preprocessing: bool = False,
             **kw: Any) -> ITMScorer:
    import transformers

    from .loading import load_config

    if kw:
        raise TypeError(f"family 'itm' takes no options {sorted(kw)}")
    if config is None:
        config = load_config(model, revision=revision, trust_remote_code=trust_remote_code)
    arch = _arch(config)
    if arch is None:
        raise ValueError(
            f"model {model!r} has architectures {getattr(config, 'architectures', None)}; the itm family "
            f"supports {', '.join(_HEADS)} (e.g. Salesforce/blip-itm-base-coco, dandelin/vilt-b32-finetuned-coco)"
        )
    _, torch_dtype = resolve_dtype(dtype)
    net = from_pretrained(getattr(transformers, arch), model, revision=revision, dtype=torch_dtype)
    processor = load_processor(model, exact_preprocessing=exact_preprocessing, revision=revision,
                               trust_remote_code=trust_remote_code)
    return ITMScorer(model, net.to(device).eval(), processor, arch, device=device, dtype=dtype, revision=revision)
