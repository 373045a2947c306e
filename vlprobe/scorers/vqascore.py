"""Family ``vqascore``: generative vision-language models scored VQAScore-style (Lin et al., 2024).

Each (image, text) is asked ``Does this figure show "{text}"? Please answer yes or no.`` (``prompt=`` changes it) in
the processor's chat template, and the next token after the prompt is read in one forward pass: **score** =
``log P(Yes)`` over the whole vocabulary (in log space, so tiny probabilities keep their order in float32),
**probability** = ``P(Yes) / (P(Yes) + P(No))``. "Yes" sums every single-token spelling of ``Yes``/`` Yes`` (whether
the answer follows a space depends on the template).

The answer is read at the prompt's last real token, shifted by any positions the model puts before the text (GIT's
image) and before what the tokenizer appends to every text (GIT's ``[SEP]``). Batches are padded on the **right**, so
every token keeps the position it has alone (left padding shifts positions, which only rotary embeddings forgive);
each scorer checks this when made (:meth:`VQAScoreScorer.check_answer_position`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from ..errors import VlprobeError
from .base import PairScorer, PairScores, _first_line, register
from .loading import embedding_head, load_transformers, processor_preprocessing, to_images

if TYPE_CHECKING:
    from torch import Tensor
    from transformers import (
        BatchFeature,
        ImageProcessingMixin,
        PretrainedConfig,
        PreTrainedModel,
        PreTrainedTokenizerBase,
        ProcessorMixin,
    )

    from .base import Picture

DEFAULT_PROMPT = 'Does this figure show "{text}"? Please answer yes or no.'


# The explicit map; the rest of AutoModelForImageTextToText's table is taken too (auto_mappings).
ARCHITECTURES = frozenset({
    "LlavaForConditionalGeneration", "LlavaNextForConditionalGeneration", "LlavaOnevisionForConditionalGeneration",
    "Idefics2ForConditionalGeneration", "Idefics3ForConditionalGeneration", "SmolVLMForConditionalGeneration",
    "Qwen2VLForConditionalGeneration", "Qwen2_5_VLForConditionalGeneration", "Qwen3VLForConditionalGeneration",
    "PaliGemmaForConditionalGeneration", "Gemma3ForConditionalGeneration", "InstructBlipForConditionalGeneration",
    "Blip2ForConditionalGeneration", "MllamaForConditionalGeneration", "GitForCausalLM",
})

# The prompts and image of the answer-position check (VQAScoreScorer.check_answer_position).
_CHECK_TEXTS = ("a", "two dogs play with a red ball on the green grass next to a small wooden house")
_CHECK_IMAGE_SIZE = (224, 224)


def refuse_encoder_decoder(model_id: str, config: PretrainedConfig) -> None:
    """One line for a model whose answer comes from a decoder fed apart from the prompt."""
    if getattr(config, "is_encoder_decoder", False):
        archs = getattr(config, "architectures", None) or [type(config).__name__]
        raise ValueError(
            f"model {model_id!r} ({', '.join(archs)}) is an encoder-decoder model: its answer comes from a decoder "
            f"that the vqascore family does not run (it reads the next token after the prompt of a decoder-only "
            f"model), so it cannot be scored as vqascore")


def answer_token_ids(tokenizer: PreTrainedTokenizerBase, word: str) -> list[int]:
    """Ids of the single tokens that spell ``word`` with or without a leading space; for a tokenizer that
    cannot tell ``word`` from its lower case (it encodes both alike: uncased WordPiece), the one token of both."""
    ids: list[int] = []
    spellings = {word}
    if tokenizer.encode(word, add_special_tokens=False) == tokenizer.encode(word.lower(), add_special_tokens=False):
        spellings.add(word.lower())  # the model reads "Yes" as "yes": the same token, so the same answer
    for variant in (word, " " + word):
        enc = tokenizer.encode(variant, add_special_tokens=False)
        # SentencePiece tokenizers may emit a lone "▁" before the word: drop pure-whitespace pieces.
        enc = [i for i in enc if tokenizer.decode([i]).strip()]
        if len(enc) == 1 and tokenizer.decode(enc).strip() in spellings and enc[0] not in ids:
            ids.append(enc[0])
    if not ids:
        raise ValueError(f"the tokenizer has no single token for {word!r} (with or without a leading space); "
                         f"VQAScore needs one to read P({word}) from the next-token distribution")
    return ids


class _ReuseImages:
    """Stands in for a processor's image processor: each distinct image in a call is preprocessed once and its rows
    repeated for every pair that shows it (what it cannot split per image goes to the real one)."""

    def __init__(self, inner: ImageProcessingMixin) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> object:
        if name == "inner":  # not set yet (unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __call__(self, images: object = None, *args: object, **kwargs: object) -> BatchFeature:
        import torch
        from PIL import Image

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
        out.update(repeated)
        return out


class VQAScoreScorer(PairScorer[dict[str, "Tensor"]]):
    """A generative VLM as a scorer: log P(Yes) to a question about the text (see the module doc)."""

    family: ClassVar[str] = "vqascore"
    uses_images: ClassVar[bool] = True

    def __init__(self, model_id: str, model: PreTrainedModel, processor: ProcessorMixin, *, device: str, dtype: str,
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
        self.yes_ids = answer_token_ids(self.tokenizer, "Yes")
        self.no_ids = answer_token_ids(self.tokenizer, "No")
        self.chat_template = bool(getattr(processor, "chat_template", None))
        self.appended = appended_tokens(self.tokenizer)
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
            "answer_position": "the prompt's last real token, after any positions the model puts before the text"
                               + (f", before the appended {self.tokenizer.convert_ids_to_tokens(list(self.appended))}"
                                  if self.appended else ""),
            "score": "log P(Yes) over the full vocabulary",
            "probability": "P(Yes) / (P(Yes) + P(No))",
        }
        refuse_encoder_decoder(model_id, model.config)
        self.check_answer_position()

    def render(self, text: str) -> str:
        """The full prompt string for one text (chat template applied when the processor has one)."""
        question = self.prompt.format(text=text)
        if not self.chat_template:
            return question
        messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": question}]}]
        return self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)

    def seen_texts(self, texts: Sequence[str]) -> list[tuple[int, ...]]:
        """The token ids of each text's rendered prompt (without the image's tokens, which depend on the image)."""
        ids = self.tokenizer([self.render(t) for t in texts]).input_ids
        return [tuple(int(i) for i in row) for row in ids]

    def preprocess_pairs(self, images: Sequence[Picture], texts: list[str]) -> dict[str, Tensor]:
        if len(images) != len(texts):
            raise ValueError(f"preprocess_pairs: {len(images)} images but {len(texts)} texts")
        prompts = [self.render(t) for t in texts]
        # The engine decodes each image once per batch, so the pairs of one image share a PIL
        # object: _ReuseImages preprocesses it once.
        return dict(self._batch_processor(images=to_images(images), text=prompts, padding=True,
                                          padding_side="right", return_tensors="pt"))

    def answer_logits(self, inputs: dict[str, Tensor]) -> tuple[Tensor, Tensor, Tensor]:
        """(the model's logits (B, T, V), the position read per row (B,), the logits read there (B, V) in float32)."""
        import torch

        batch = self._to_device(inputs)
        ids = batch["input_ids"]
        mask = batch.get("attention_mask")
        logits = self.model(**batch).logits
        offset = logits.shape[1] - ids.shape[1]
        if offset < 0:
            raise ValueError(f"the model returned logits for {logits.shape[1]} positions for {ids.shape[1]} input "
                             f"tokens: vlprobe cannot tell where its answer is")
        if mask is None:
            last = torch.full((ids.shape[0],), ids.shape[1] - 1, device=ids.device)
        else:
            # The last real token of each row, whichever side the processor pads on.
            pos = torch.arange(mask.shape[1], device=mask.device).expand_as(mask)
            last = torch.where(mask.bool(), pos, torch.full_like(pos, -1)).max(dim=1).values
        if self.appended:
            k = len(self.appended)
            tail = torch.tensor(self.appended, device=ids.device)
            idx = (last.unsqueeze(1) - k + 1 + torch.arange(k, device=ids.device)).clamp(min=0)
            ends = (ids.gather(1, idx) == tail).all(dim=1) & (last >= k)
            last = torch.where(ends, last - k, last)
        read = last.to(logits.device) + offset
        rows = torch.arange(logits.shape[0], device=logits.device)
        return logits, read, logits[rows, read].float()

    def score_pairs(self, inputs: dict[str, Tensor]) -> PairScores:
        import torch

        with torch.inference_mode():
            next_logits = self.answer_logits(inputs)[2]
            logp = torch.log_softmax(next_logits, dim=-1)
            log_yes = torch.logsumexp(logp[:, self.yes_ids], dim=-1)
            log_no = torch.logsumexp(logp[:, self.no_ids], dim=-1)
            prob = torch.sigmoid(log_yes - log_no)  # = P(Yes) / (P(Yes) + P(No))
        return PairScores(log_yes.cpu().numpy().astype(np.float32), prob.cpu().numpy().astype(np.float32))

    def check_answer_position(self) -> None:
        """Refuse (one line) a model whose answer vlprobe would read at the wrong position: two prompts of different
        lengths in one right-padded batch must each be read where the logits are nearest the model's own for that
        prompt alone (less an appended end token)."""
        import torch
        from PIL import Image

        image = Image.new("RGB", _CHECK_IMAGE_SIZE, (128, 128, 128))
        name = f"model {self.model_id!r} ({type(self.model).__name__}) cannot be scored as vqascore"
        wrong = ""
        try:
            with torch.inference_mode():
                logits, read, _ = self.answer_logits(self.preprocess_pairs([image, image], list(_CHECK_TEXTS)))
                for row, text in enumerate(_CHECK_TEXTS):
                    alone = self.processor(images=[image], text=[self.render(text)], return_tensors="pt")
                    ids = alone.input_ids[0].tolist()
                    own = self.model(**self._to_device(alone)).logits[0]
                    k = len(self.appended)
                    back = k if k and len(ids) > k and tuple(ids[-k:]) == self.appended else 0
                    want = own[own.shape[0] - 1 - back].float()
                    top = want.topk(min(64, want.shape[0])).indices  # enough to tell positions apart
                    nearest = int((logits[row][:, top].float() - want[top]).norm(dim=-1).argmin())
                    if nearest != int(read[row]):
                        wrong = (f"in a right-padded batch vlprobe would read position {int(read[row])} of "
                                 f"{logits.shape[1]}, but the model's own next-token logits for the prompt are at "
                                 f"position {nearest}")
                        break
        except Exception as err:
            if isinstance(err, (VlprobeError, MemoryError)) or "out of memory" in str(err).lower():
                raise
            raise ValueError(f"{name}: checking where it puts its answer failed ({_first_line(err)})") from err
        if wrong:
            raise ValueError(f"{name}: {wrong}; vlprobe refuses rather than read its answer inside the prompt")


def appended_tokens(tokenizer: PreTrainedTokenizerBase) -> tuple[int, ...]:
    """The token ids the tokenizer appends after every text (BERT's ``[SEP]``), or ()."""
    plain = tokenizer("x y", add_special_tokens=False).input_ids
    full = tokenizer("x y").input_ids
    for start in range(len(full) - len(plain) + 1):
        if full[start:start + len(plain)] == plain:
            return tuple(int(i) for i in full[start + len(plain):])
    return ()


@register("vqascore", priority=5, wrap=VQAScoreScorer, architectures=ARCHITECTURES,
          auto_mappings=("MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES",),
          description='generative VLMs: log P("Yes") to "Does this figure show ...?" (VQAScore)')
def load_vqascore(model: str, *, device: str = "cpu", dtype: str = "float32", revision: str | None = None,
                  trust_remote_code: bool = False, config: PretrainedConfig | None = None, prompt: str = DEFAULT_PROMPT,
                  exact_preprocessing: bool = False, **kw: object) -> VQAScoreScorer:
    """A generative VLM's Hub id or folder -> a scorer (``AutoModelForImageTextToText`` and ``AutoProcessor``)."""
    from transformers import AutoModelForImageTextToText

    if kw:
        raise TypeError(f"family 'vqascore' takes only prompt=... and exact_preprocessing=..., not {sorted(kw)}")
    if config is not None:
        refuse_encoder_decoder(model, config)  # before the weights load
    return load_transformers(AutoModelForImageTextToText, model, family="vqascore", head=embedding_head,
                             wrap=VQAScoreScorer, device=device, dtype=dtype, revision=revision,
                             trust_remote_code=trust_remote_code, exact_preprocessing=exact_preprocessing, prompt=prompt)
