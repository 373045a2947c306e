"""Family ``vqascore``: generative vision-language models scored VQAScore-style (Lin et al., 2024).

For each (image, text) the model is asked, through its processor's chat template,

    Does this figure show "{text}"? Please answer yes or no.

as one user turn holding the image and this question, with the generation prompt added; the
model is run once (no generation) and the next-token distribution after the prompt is read.

* **score** = ``log P(Yes)``: the log of the next-token probability of "Yes" over the **whole
  vocabulary** (VQAScore's P(Yes), in log space so tiny probabilities keep their order in float32).
* **probability** = ``P(Yes) / (P(Yes) + P(No))``: normalised over the two answers, so that 0.5 is
  the point where the model prefers neither; it feeds the thresholded metrics (acc, p_c, p_f).

"Yes" and "No" are looked up robustly: every spelling among ``Yes``/`` Yes`` (and ``No``/`` No``)
that the tokenizer encodes as a **single** token is collected (SentencePiece ``▁Yes``, byte-level
``ĠYes``, plain ``Yes``), and their probabilities are summed, because whether the answer follows
a space depends on how the template ends. Lower-case "yes"/"no" are not counted (VQAScore reads
"Yes"). A tokenizer where neither spelling is one token raises a clear error.

**Batching.** The engine hands over a batch of pairs (by default 32) and they go through the model
in **one forward pass**: the prompts are padded on the **right** with an attention mask, and each
row's next-token distribution is read at its own last real token. Right padding keeps every real
token at the position it has alone, so a pair's score does not depend on what it is batched with
(whatever the model's position embeddings; left padding shifts positions, which only rotary
embeddings forgive). The pairs of one image sit together in a batch, and each distinct image is
**preprocessed once** and its pixel rows repeated for its texts (:class:`_ReuseImages`), so an
item with 4 captions pays for one image preprocessing, not 4.

The family takes the architectures in :data:`ARCHITECTURES` (LLaVA, LLaVA-NeXT/OneVision, Idefics 2/3,
SmolVLM, Qwen2-VL/Qwen2.5-VL/Qwen3-VL, PaliGemma, Gemma 3, InstructBLIP, BLIP-2 captioning, Mllama)
and every class of transformers' ``AutoModelForImageTextToText`` table; any such model whose
``AutoProcessor`` takes ``images=`` and ``text=`` works (tested with a tiny LLaVA and a tiny
Qwen2-VL). A checkpoint without language-model embeddings (e.g. a BLIP-2 *retrieval* checkpoint,
which ``AutoModelForImageTextToText`` would load as a captioner with a random language model)
is refused. Processors without a chat template
(e.g. PaliGemma's, which inserts its image tokens itself) get the bare question as the prompt,
recorded as ``chat_template: false``. ``prompt=`` (with a ``{text}`` slot) changes the question.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from .base import PairScorer, PairScores, register
from .loading import (
    embedding_head,
    from_pretrained_checked,
    load_processor,
    processor_preprocessing,
    resolve_dtype,
    to_device,
    to_images,
)

DEFAULT_PROMPT = 'Does this figure show "{text}"? Please answer yes or no.'


# The explicit map; the rest of AutoModelForImageTextToText's table is taken too (auto_mappings).
ARCHITECTURES = frozenset({
    "LlavaForConditionalGeneration", "LlavaNextForConditionalGeneration", "LlavaOnevisionForConditionalGeneration",
    "Idefics2ForConditionalGeneration", "Idefics3ForConditionalGeneration", "SmolVLMForConditionalGeneration",
    "Qwen2VLForConditionalGeneration", "Qwen2_5_VLForConditionalGeneration", "Qwen3VLForConditionalGeneration",
    "PaliGemmaForConditionalGeneration", "Gemma3ForConditionalGeneration", "InstructBlipForConditionalGeneration",
    "Blip2ForConditionalGeneration", "MllamaForConditionalGeneration",
})


def answer_token_ids(tokenizer: Any, word: str) -> list[int]:
    """Ids of the single tokens that spell ``word`` with or without a leading space."""
    ids: list[int] = []
    for variant in (word, " " + word):
        enc = tokenizer.encode(variant, add_special_tokens=False)
        # SentencePiece tokenizers may emit a lone "▁" before the word: drop pure-whitespace pieces.
        enc = [i for i in enc if tokenizer.decode([i]).strip()]
        if len(enc) == 1 and tokenizer.decode(enc).strip() == word and enc[0] not in ids:
            ids.append(enc[0])
    if not ids:
        raise ValueError(f"the tokenizer has no single token for {word!r} (with or without a leading space); "
                         f"VQAScore needs one to read P({word}) from the next-token distribution")
    return ids


class _ReuseImages:
    """Stands in for a processor's image processor: each distinct image (by identity) in a call is
    preprocessed once, in one batch, and its output rows are repeated for every pair that shows it.
    Anything it cannot split per image (nested image lists, outputs that are not one row per
    image) goes to the real image processor unchanged, so the result is always the processor's."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __call__(self, images: Any = None, *args: Any, **kwargs: Any) -> Any:
        from PIL import Image

        if images is None and "images" in kwargs:
            images = kwargs.pop("images")
        import torch

        if not (isinstance(images, (list, tuple)) and images
                and all(isinstance(im, (Image.Image, torch.Tensor)) for im in images)):
            return self.inner(images, *args, **kwargs)
        slot: dict[int, int] = {}
        index = [slot.setdefault(id(im), len(slot)) for im in images]
        if len(slot) == len(images):
            return self.inner(images, *args, **kwargs)
        unique = list({id(im): im for im in images}.values())  # first-seen order, as slot numbers them
        out = self.inner(unique, *args, **kwargs)
        repeated = {}
        for key, value in out.items():
            if hasattr(value, "shape") and len(value.shape) > 0 and value.shape[0] == len(unique):
                repeated[key] = value[index]
            elif isinstance(value, list) and len(value) == len(unique):
                repeated[key] = [value[i] for i in index]
            else:  # not one row per image: let the image processor do every image
                return self.inner(images, *args, **kwargs)
        for key, value in repeated.items():
            out[key] = value
        return out


class VQAScoreScorer(PairScorer):
    family: ClassVar[str] = "vqascore"
    uses_images: ClassVar[bool] = True

    def __init__(self, model_id: str, model: Any, processor: Any, *, device: str, dtype: str,
                 revision: str | None = None, prompt: str = DEFAULT_PROMPT) -> None:
        super().__init__(model_id=model_id, revision=revision, device=device, dtype=dtype)
        if "{text}" not in prompt:
            raise ValueError(f"the VQAScore prompt must contain a {{text}} slot: {prompt!r}")
        self.model = model
        self.processor = processor
        self.prompt = prompt
        self.tokenizer = getattr(processor, "tokenizer", None)
        if self.tokenizer is None:
            raise ValueError(f"model {model_id!r}: its processor has no tokenizer")
        self._torch_dtype = resolve_dtype(dtype)[1]
        self.yes_ids = answer_token_ids(self.tokenizer, "Yes")
        self.no_ids = answer_token_ids(self.tokenizer, "No")
        self.chat_template = bool(getattr(processor, "chat_template", None))
        self._batch_processor = processor
        if getattr(processor, "image_processor", None) is not None:
            import copy

            self._batch_processor = copy.copy(processor)
            self._batch_processor.image_processor = _ReuseImages(processor.image_processor)
        self.preprocessing = {
            **processor_preprocessing(getattr(processor, "image_processor", None), processor),
            "processor": type(processor).__name__,
            "prompt": prompt,
            "chat_template": self.chat_template,
            "yes_tokens": self.tokenizer.convert_ids_to_tokens(self.yes_ids),
            "no_tokens": self.tokenizer.convert_ids_to_tokens(self.no_ids),
            "text_padding": "longest, right side (last real token read)",
            "score": "log P(Yes) over the full vocabulary",
            "probability": "P(Yes) / (P(Yes) + P(No))",
        }

    def render(self, text: str) -> str:
        """The full prompt string for one text (chat template applied when the processor has one)."""
        question = self.prompt.format(text=text)
        if not self.chat_template:
            return question
        messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": question}]}]
        return self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)

    def preprocess_pairs(self, images: list[Any], texts: list[str]) -> Any:
        if len(images) != len(texts):
            raise ValueError(f"preprocess_pairs: {len(images)} images but {len(texts)} texts")
        prompts = [self.render(t) for t in texts]
        # The engine decodes each image once per batch, so the pairs of one image share a PIL
        # object: _ReuseImages preprocesses it once.
        return dict(self._batch_processor(images=to_images(images), text=prompts, padding=True,
                                          padding_side="right", return_tensors="pt"))

    def score_pairs(self, inputs: Any) -> PairScores:
        import torch

        batch = to_device(inputs, self.device, self._torch_dtype)
        mask = batch.get("attention_mask")
        with torch.inference_mode():
            logits = self.model(**batch).logits
            if mask is None:
                last = torch.full((logits.shape[0],), logits.shape[1] - 1, device=logits.device)
            else:
                # The last real token of each row, whichever side the processor pads on.
                pos = torch.arange(mask.shape[1], device=mask.device).expand_as(mask)
                last = torch.where(mask.bool(), pos, torch.full_like(pos, -1)).max(dim=1).values
            next_logits = logits[torch.arange(logits.shape[0], device=logits.device), last].float()
            logp = torch.log_softmax(next_logits, dim=-1)
            log_yes = torch.logsumexp(logp[:, self.yes_ids], dim=-1)
            log_no = torch.logsumexp(logp[:, self.no_ids], dim=-1)
            prob = torch.sigmoid(log_yes - log_no)  # = P(Yes) / (P(Yes) + P(No))
        return PairScores(log_yes.cpu().numpy().astype(np.float32), prob.cpu().numpy().astype(np.float32))


def wrap_vqascore(model_id: str, model: Any, processor: Any, *, device: str, dtype: str,
                  revision: str | None = None, prompt: str = DEFAULT_PROMPT) -> VQAScoreScorer:
    """An already-loaded generative VLM and its processor -> a scorer."""
    return VQAScoreScorer(model_id, model, processor, device=device, dtype=dtype, revision=revision, prompt=prompt)


@register("vqascore", priority=5, wrap=wrap_vqascore, architectures=ARCHITECTURES,
          auto_mappings=("MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES",),
          description='generative VLMs: log P("Yes") to "Does this figure show ...?" (VQAScore)')
def load_vqascore(model: str, *, device: str = "cpu", dtype: str = "float32", revision: str | None = None,
                  trust_remote_code: bool = False, config: Any = None, prompt: str = DEFAULT_PROMPT,
                  exact_preprocessing: bool = False, **kw: Any) -> VQAScoreScorer:
    from transformers import AutoModelForImageTextToText

    if kw:
        raise TypeError(f"family 'vqascore' takes only prompt=... and exact_preprocessing=..., not {sorted(kw)}")
    _, torch_dtype = resolve_dtype(dtype)
    net = from_pretrained_checked(AutoModelForImageTextToText, model, family="vqascore", head=embedding_head,
                                  revision=revision, trust_remote_code=trust_remote_code, dtype=torch_dtype)
    processor = load_processor(model, exact_preprocessing=exact_preprocessing, revision=revision,
                               trust_remote_code=trust_remote_code)
    return wrap_vqascore(model, net.to(device).eval(), processor, device=device, dtype=dtype,
                         revision=revision, prompt=prompt)
