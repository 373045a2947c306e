"""Family ``itm``: cross-encoders with an image-text matching head, one forward per (image, text) pair (:data:`_HEADS`).

BLIP, BLIP-2 (the mean over its query positions) and BridgeTower give [no match, match] logits: score = their
difference (the match log-odds, which ranks pairs as the VALSE LXMERT script's raw match logit does, reference/valse.md
§4.1), probability = ``softmax(logits)[match]``; ViLT gives one match logit and its sigmoid. BLIP's head reads
``[CLS]`` as transformers runs it (LAVIS swaps in ``[ENC]``). FLAVA's ITM head needs its pre-training model: FLAVA is
scored as ``dual``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from .base import PairScorer, PairScores, register
from .loading import (
    load_config,
    load_transformers,
    model_max_text_length,
    no_options,
    processor_preprocessing,
    to_images,
)

if TYPE_CHECKING:
    from torch import Tensor
    from transformers import PretrainedConfig, PreTrainedModel, ProcessorMixin

    from .base import Picture

# architecture name -> (what its forward is given to run the matching head, the output holding the match logits, the
# parameters the head reads besides the backbone)
_HEADS = {
    "BlipForImageTextRetrieval": ({"use_itm_head": True}, "itm_score", ["itm_head"]),
    "Blip2ForImageTextRetrieval": ({"use_image_text_matching_head": True}, "logits_per_image",
                                   ["itm_head", "query_tokens"]),
    "BridgeTowerForImageAndTextRetrieval": ({}, "logits", ["itm_score"]),  # its ITM head on the pooled output
    "ViltForImageAndTextRetrieval": ({}, "logits", ["rank_output"]),  # one match logit; the others two
}
_ONE_LOGIT = "ViltForImageAndTextRetrieval"


def check_config(model_id: str, arch: str, config: PretrainedConfig) -> None:
    """One line, before any weight loads, for a config the matching head cannot run with."""
    qformer = getattr(config, "qformer_config", None)
    if arch == "Blip2ForImageTextRetrieval" and qformer is not None and not getattr(qformer, "use_qformer_text_input",
                                                                                     False):
        raise ValueError(
            f"model {model_id!r} (Blip2ForImageTextRetrieval): its qformer_config has use_qformer_text_input false, "
            f"so its Q-Former is built without the text layers the ITM head reads (transformers would fail with "
            f"'Blip2QFormerLayer' object has no attribute 'intermediate'); set \"use_qformer_text_input\": true "
            f"in qformer_config of its config.json, as the released BLIP-2 ITM checkpoints have")


def _arch(config: PretrainedConfig) -> str | None:
    return next((arch for arch in getattr(config, "architectures", None) or [] if arch in _HEADS), None)


class ITMScorer(PairScorer[dict[str, "Tensor"]]):
    """A transformers image-text matching head as a scorer (see the module doc)."""

    family: ClassVar[str] = "itm"
    uses_images: ClassVar[bool] = True

    def __init__(self, model_id: str, model: PreTrainedModel, processor: ProcessorMixin, *, device: str, dtype: str,
                 revision: str | None = None) -> None:
        arch = type(model).__name__ if type(model).__name__ in _HEADS else _arch(model.config)
        if arch is None:
            raise ValueError(f"model {model_id!r} is a {type(model).__name__}; the itm family supports {', '.join(_HEADS)}")
        super().__init__(model_id=model_id, revision=revision, device=device, dtype=dtype)
        check_config(model_id, arch, model.config)
        self.model = model
        self.processor = processor
        self.arch = arch
        tokenizer = getattr(processor, "tokenizer", None)
        # BLIP-2 reads texts with its Q-Former (its text_config is the captioning LM, unused here).
        self.max_length = model_max_text_length(tokenizer, getattr(model.config, "qformer_config", None)
                                                or model.config)
        two_way = arch != _ONE_LOGIT
        score = ("logit[match] - logit[no match]" if two_way else "match logit")
        prob = ("softmax(logits)[match]" if two_way else "sigmoid(match logit)")
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

    def _limit(self) -> dict[str, int]:
        # A BLIP-2 processor without num_query_tokens cannot take max_length (transformers subtracts
        # None from it); it then truncates at the tokenizer's own limit.
        return {} if getattr(self.processor, "num_query_tokens", 0) is None else {"max_length": self.max_length}

    def text_limit(self) -> int | None:
        # BLIP-2's processor keeps num_query_tokens of max_length for the image tokens it puts first.
        queries = getattr(self.processor, "num_query_tokens", None) if self.arch == "Blip2ForImageTextRetrieval" else None
        return self.max_length - queries if queries else super().text_limit()

    def seen_texts(self, texts: Sequence[str]) -> list[tuple[int, ...]]:
        """The text's token ids as :meth:`preprocess_pairs` makes them (without BLIP-2's image tokens)."""
        ids = self.processor(text=list(texts), truncation=True, **self._limit()).input_ids
        return [tuple(int(i) for i in row) for row in ids]

    def preprocess_pairs(self, images: Sequence[Picture], texts: list[str]) -> dict[str, Tensor]:
        if len(images) != len(texts):
            raise ValueError(f"preprocess_pairs: {len(images)} images but {len(texts)} texts")
        return dict(self.processor(images=to_images(images), text=list(texts), padding=True, truncation=True,
                                   return_tensors="pt", **self._limit()))

    def score_pairs(self, inputs: dict[str, Tensor]) -> PairScores:
        import torch

        batch = self._to_device(inputs)
        kwargs, output = _HEADS[self.arch][:2]
        with torch.inference_mode():
            logits = getattr(self.model(**batch, **kwargs), output).float()
            if self.arch == _ONE_LOGIT:
                score = logits[:, 0]
                prob = torch.sigmoid(score)
            else:  # (no match, match)
                score = logits[:, 1] - logits[:, 0]
                prob = torch.softmax(logits, dim=-1)[:, 1]
        return PairScores(score.cpu().numpy().astype(np.float32), prob.cpu().numpy().astype(np.float32))

    def pair_features(self, inputs: dict[str, Tensor]) -> np.ndarray:
        """The joint representation the matching head reads, float32 (B, hidden), for vlprobe probe: BLIP's first
        position, BLIP-2's query positions averaged (as its logits are), BridgeTower's and ViLT's pooler output."""
        import torch

        batch = self._to_device(inputs)
        with torch.inference_mode():
            if self.arch == "BlipForImageTextRetrieval":
                feats = self.model(**batch, use_itm_head=True).question_embeds[:, 0, :]
            elif self.arch == "Blip2ForImageTextRetrieval":
                seen: list[Tensor] = []
                hook = self.model.itm_head.register_forward_hook(lambda m, args, out: seen.append(args[0]))
                try:
                    self.model(**batch, use_image_text_matching_head=True)
                finally:
                    hook.remove()
                feats = seen[0].mean(dim=1)
            elif self.arch == "BridgeTowerForImageAndTextRetrieval":
                feats = self.model.bridgetower(**batch).pooler_output
            else:
                feats = self.model.vilt(**batch).pooler_output
        return feats.float().cpu().numpy().astype(np.float32)


@register("itm", priority=20, wrap=ITMScorer, architectures=_HEADS,
          description="image-text matching heads (BLIP and BLIP-2 ITM, BridgeTower and ViLT retrieval): match logit "
                      "and probability")
def load_itm(model: str, *, device: str = "cpu", dtype: str = "float32", revision: str | None = None,
             trust_remote_code: bool = False, config: PretrainedConfig | None = None, exact_preprocessing: bool = False,
             **kw: object) -> ITMScorer:
    """A matching model's Hub id or folder -> a scorer (the class its config names, and ``AutoProcessor``)."""
    import transformers

    no_options("itm", kw)
    if config is None:
        config = load_config(model, revision=revision, trust_remote_code=trust_remote_code)
    arch = _arch(config)
    if arch is None:
        raise ValueError(
            f"model {model!r} has architectures {getattr(config, 'architectures', None)}; the itm family "
            f"supports {', '.join(_HEADS)} (e.g. Salesforce/blip-itm-base-coco, BridgeTower/bridgetower-base-itm-mlm, "
            f"dandelin/vilt-b32-finetuned-coco)"
        )
    check_config(model, arch, config)  # before the weights load
    return load_transformers(getattr(transformers, arch), model, family="itm", head=lambda net: _HEADS[arch][2],
                             wrap=ITMScorer, device=device, dtype=dtype, revision=revision,
                             trust_remote_code=trust_remote_code, exact_preprocessing=exact_preprocessing)
