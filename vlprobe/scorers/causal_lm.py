"""Family ``causal_lm``: text-only causal language models (the unimodal baseline of VALSE, BLA and Winoground); images
are ignored. Score = **minus the mean token negative log-likelihood** of the text after the model's BOS token (or EOS,
as for GPT-2), so every text token, the first included, is scored once. VALSE's ``unimodal_valse_eval.py``
(reference/valse.md §4.2) slides a stride-3 window without BOS that skips the first token, counts some twice and
divides by the last window's start: not a clean perplexity, so this family computes the textbook per-token mean.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from .base import PairScorer, PairScores, _first_line, register
from .loading import embedding_head, load_transformers, model_max_text_length, no_options

if TYPE_CHECKING:
    from torch import Tensor
    from transformers import PretrainedConfig, PreTrainedModel, PreTrainedTokenizerBase, ProcessorMixin

# The explicit map; the rest of AutoModelForCausalLM's table is taken too (auto_mappings).
ARCHITECTURES = frozenset({
    "GPT2LMHeadModel", "OpenAIGPTLMHeadModel", "GPTNeoForCausalLM", "GPTNeoXForCausalLM", "GPTJForCausalLM",
    "LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM", "PhiForCausalLM",
    "Phi3ForCausalLM", "GemmaForCausalLM", "Gemma2ForCausalLM", "OlmoForCausalLM", "Olmo2ForCausalLM",
    "OPTForCausalLM", "BloomForCausalLM", "FalconForCausalLM", "SmolLM3ForCausalLM",
})


class CausalLMScorer(PairScorer[dict[str, "Tensor"]]):
    """A text-only causal language model as a scorer: minus the mean token NLL (see the module doc)."""

    family: ClassVar[str] = "causal_lm"
    uses_images: ClassVar[bool] = False

    def __init__(self, model_id: str, model: PreTrainedModel,
                 tokenizer: PreTrainedTokenizerBase | ProcessorMixin | None, *, device: str, dtype: str,
                 revision: str | None = None) -> None:
        """``tokenizer``: the model's tokenizer, or a processor holding it."""
        if tokenizer is None:
            raise ValueError("a loaded causal LM needs its tokenizer: evaluate(model=(model, tokenizer), ...)")
        tokenizer = getattr(tokenizer, "tokenizer", tokenizer)
        super().__init__(model_id=model_id, revision=revision, device=device, dtype=dtype)
        self.model = model
        self.tokenizer = tokenizer
        bos = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
        if bos is None:
            raise ValueError(f"model {model_id!r}: the tokenizer has neither a BOS nor an EOS token to "
                             f"prepend, so the first token of a text cannot be scored")
        self.bos_id = int(bos)
        self.pad_id = int(tokenizer.pad_token_id) if tokenizer.pad_token_id is not None else self.bos_id
        # One position goes to the BOS token.
        self.max_length = model_max_text_length(tokenizer, model.config, default=1024) - 1
        self.preprocessing = {
            "tokenizer": type(tokenizer).__name__,
            "prefix_token": tokenizer.convert_ids_to_tokens(self.bos_id),
            "add_special_tokens": False,
            "text_max_length": self.max_length,
            "text_truncation": True,
            "prompt": None,
            "score": "-mean token NLL (BOS prepended, every text token scored)",
        }
        self.check_causal()

    def check_causal(self) -> None:
        """Refuse (one line) a model whose logits are not one row per input token, or depend on later tokens (BERT
        without ``is_decoder``): two texts differing in their last token must get the same logits before it."""
        import torch

        words = list(self.tokenizer("the cat sat on the mat", add_special_tokens=False).input_ids)[:4]
        vocab = int(getattr(self.model.get_output_embeddings(), "out_features", 0) or len(self.tokenizer))
        while len(words) < 4:
            words.append((words[-1] + 1) % vocab if words else 0)
        other = (words[-1] + 1) % vocab
        ids = torch.tensor([[self.bos_id, *words], [self.bos_id, *words[:-1], other]], dtype=torch.long)
        name = f"model {self.model_id!r} ({type(self.model).__name__})"
        try:
            with torch.inference_mode():
                logits = self.model(input_ids=ids.to(self.device), attention_mask=torch.ones_like(ids).to(self.device)).logits
        except Exception as err:
            if "out of memory" in str(err).lower():
                raise
            raise ValueError(f"{name} cannot be scored as causal_lm: a plain forward pass on token ids failed "
                             f"({_first_line(err)})") from err
        if tuple(logits.shape[:2]) != tuple(ids.shape):
            raise ValueError(f"{name} cannot be scored as causal_lm: it returns logits of shape {tuple(logits.shape)} "
                             f"for {tuple(ids.shape)} input tokens, not one row per token")
        # The two texts differ in their last token only: before it, a causal model's logits differ by float
        # noise alone; at it, by what the token changes. A bidirectional model's earlier logits move too.
        logits = logits.float()
        earlier = float((logits[0, :-1] - logits[1, :-1]).abs().max())
        last = float((logits[0, -1] - logits[1, -1]).abs().max())
        noise = 1e-3 if self.dtype == "float32" else 5e-2
        if earlier > noise * last + 1e-6:
            raise ValueError(f"{name} cannot be scored as causal_lm: its logits at a position change with later tokens "
                             f"(a bidirectional model; for BERT-like models set is_decoder true), so a token's "
                             f"predicted probability would have seen the token")

    def seen_texts(self, texts: Sequence[str]) -> list[tuple[int, ...]]:
        """The text's token ids as :meth:`preprocess_pairs` feeds them, without the BOS in front."""
        ids = self.tokenizer(list(texts), add_special_tokens=False, truncation=True,
                             max_length=self.max_length).input_ids
        return [tuple(int(i) for i in row) for row in ids]

    def preprocess_pairs(self, images: Sequence[object], texts: list[str]) -> dict[str, Tensor]:
        """Images are ignored; texts -> right-padded ids with BOS in front, and their attention mask."""
        import torch

        texts = list(texts)
        ids = self.seen_texts(texts)
        width = 1 + max(len(r) for r in ids)
        input_ids = torch.full((len(ids), width), self.pad_id, dtype=torch.long)
        attention = torch.zeros((len(ids), width), dtype=torch.long)
        for i, (text, row) in enumerate(zip(texts, ids, strict=True)):
            if not row:
                raise ValueError(f"text {text!r} has no tokens; an empty text cannot be scored by a language model")
            input_ids[i, 0] = self.bos_id
            input_ids[i, 1:1 + len(row)] = torch.tensor(row, dtype=torch.long)
            attention[i, : 1 + len(row)] = 1
        return {"input_ids": input_ids, "attention_mask": attention}

    def score_pairs(self, inputs: dict[str, Tensor]) -> PairScores:
        import torch

        input_ids = inputs["input_ids"].to(self.device)
        attention = inputs["attention_mask"].to(self.device)
        with torch.inference_mode():
            logits = self.model(input_ids=input_ids, attention_mask=attention).logits
            # Position t predicts token t+1; log-softmax in float32 whatever the model dtype.
            logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
            target = input_ids[:, 1:]
            token_logp = logp.gather(-1, target.unsqueeze(-1)).squeeze(-1)
            mask = attention[:, 1:].float()
            score = (token_logp * mask).sum(-1) / mask.sum(-1)
        return PairScores(score.cpu().numpy().astype(np.float32), None)


@register("causal_lm", priority=0, wrap=CausalLMScorer, architectures=ARCHITECTURES,
          auto_mappings=("MODEL_FOR_CAUSAL_LM_MAPPING_NAMES",),
          description="text-only causal LMs (GPT-2, ...): minus the mean token NLL, images ignored")
def load_causal_lm(model: str, *, device: str = "cpu", dtype: str = "float32", revision: str | None = None,
                   trust_remote_code: bool = False, config: PretrainedConfig | None = None,
                   exact_preprocessing: bool = False, **kw: object) -> CausalLMScorer:
    """A causal LM's Hub id or folder -> a scorer (``AutoModelForCausalLM`` and ``AutoTokenizer``)."""
    from transformers import AutoModelForCausalLM

    no_options("causal_lm", kw)
    return load_transformers(AutoModelForCausalLM, model, family="causal_lm", head=embedding_head, wrap=CausalLMScorer,
                             tokenizer=True, device=device, dtype=dtype, revision=revision,
                             trust_remote_code=trust_remote_code, exact_preprocessing=exact_preprocessing)
