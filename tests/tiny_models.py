"""Tiny transformers models built from configs with random weights and a locally trained
tokenizer, saved with save_pretrained, so tests load them through the real Auto* path.

Every fixture is **session-scoped**: the model is built once per test session (well under a
second each on CPU) into a session tmp dir and the fixture returns that folder's path, exactly
as a user would pass a local checkout to ``vlprobe evaluate --model PATH``.

Fixtures (each returns the saved folder's ``Path``):

* ``tiny_clip_path``: ``CLIPModel`` + ``CLIPProcessor``; 32 px images, 8 px patches, 16-d embeddings.
* ``tiny_siglip_path``: ``SiglipModel`` + ``SiglipProcessor``; logits = scale * cosine + bias.
* ``tiny_siglip2_path``: ``Siglip2Model`` + ``Siglip2Processor``; NaFlex patch sequences (16 px).
* ``tiny_align_path``: ``AlignModel`` + ``AlignProcessor``; EfficientNet tower, cosine / temperature.
* ``tiny_blip_itm_path``: ``BlipForImageTextRetrieval`` + ``BlipProcessor``; 2-way ITM head.
* ``tiny_vilt_path``: ``ViltForImageAndTextRetrieval`` + ``ViltProcessor``; one match logit.
* ``tiny_gpt2_path``: ``GPT2LMHeadModel`` + tokenizer (no processor); BOS = ``<|endoftext|>``.
* ``tiny_vlm_path``: ``LlavaForConditionalGeneration`` + ``LlavaProcessor`` with a chat template
  (loads with ``AutoModelForImageTextToText``); "Yes"/"No" are in the vocabulary.
* ``tiny_blip2_itm_path``: ``Blip2ForImageTextRetrieval`` + ``Blip2Processor``; Q-Former ITM head.
* ``tiny_flava_path``: ``FlavaForPreTraining`` + ``FlavaProcessor`` (scored as its ``FlavaModel``).
* ``tiny_owlvit_path``: ``OwlViTForObjectDetection`` + ``OwlViTProcessor`` (scored as its ``OwlViTModel``).
* ``tiny_qwen2_vl_path``: ``Qwen2VLForConditionalGeneration`` + ``Qwen2VLProcessor`` with a Qwen-style
  chat template (M-RoPE, 2 x 2 patch merging).

The tokenizers are byte-level BPE models trained here with the ``tokenizers`` library on a small
English corpus (so every string tokenizes, and "Yes"/"No" and their leading-space variants are
single tokens); they are saved as ``tokenizer.json`` and loaded with ``AutoTokenizer``.
Weights are random but seeded, so a model's outputs are the same in every session.

Helpers (plain functions, usable outside pytest): ``build_tiny_clip(folder)`` and friends,
``tiny_images(k)`` for a few small distinct RGB PIL images.
"""

from __future__ import annotations

from pathlib import Path

import pytest

# Enough English for BPE merges over the words benchmark captions use, plus the VQAScore answers.
_CORPUS = [
    "a dog is running on the grass.",
    "There are 4 cats on the sofa.",
    "A man is riding a horse and a woman is watching.",
    "the red ball is to the left of the blue box.",
    "Two people are playing video games in a room.",
    "the girl was hugged by the boy who is wearing a hat.",
    "Does this figure show a cat? Please answer yes or no.",
    "Yes No yes no Yes. No. Yes, No,",
    "There is no animal. There are animals. Some of the circles are red.",
    "a mug on a table, a plant next to the window, a tree over the car",
] * 3


def _byte_bpe(special_tokens: list[str], vocab_size: int = 400):
    """A byte-level BPE ``tokenizers.Tokenizer`` trained on the corpus (never produces unk)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=special_tokens,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_CORPUS, trainer)
    return tok


# Every printable ASCII character is in the WordPiece and SentencePiece alphabets (no [UNK] for a quote).
_ASCII = "".join(chr(c) for c in range(33, 127))


def _wordpiece_uncased(special_tokens: list[str], vocab_size: int = 400):
    """An uncased WordPiece ``tokenizers.Tokenizer``, as BERT's ``bert-base-uncased`` (which GIT's, BLIP's, ViLT's
    and ALIGN's released checkpoints ship): lower-cased and accent-stripped by BERT's normaliser, split on
    whitespace and punctuation, ``##`` continuation pieces; "Yes" and "yes" are one token."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=True, clean_text=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix="##")
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=special_tokens, show_progress=False,
                                        initial_alphabet=list(_ASCII))
    tok.train_from_iterator(_CORPUS, trainer)
    return tok


def _sentencepiece_bpe(special_tokens: list[str], vocab_size: int = 400):
    """A SentencePiece-style BPE ``tokenizers.Tokenizer``, as Llama 2's and Gemma's (LLaVA-1.5, PaliGemma): cased,
    spaces become ``▁`` and start a piece (``▁Yes``), one ``▁`` put before the text, unknown characters as
    byte pieces ``<0x0A>``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first")
    tok.decoder = decoders.Sequence([decoders.ByteFallback(), decoders.Metaspace(replacement="\u2581",
                                                                                 prepend_scheme="first")])
    byte_pieces = [f"<0x{b:02X}>" for b in range(256)]
    trainer = trainers.BpeTrainer(vocab_size=vocab_size + len(byte_pieces), special_tokens=special_tokens + byte_pieces,
                                  initial_alphabet=list(_ASCII), show_progress=False)
    tok.train_from_iterator(_CORPUS, trainer)
    return tok


def _wrap(tok, *, bos: str | None, eos: str | None, pad: str | None, add_bos: bool, add_eos: bool,
          model_max_length: int, **extra):
    """Wrap a ``tokenizers.Tokenizer`` as a transformers tokenizer, adding BOS/EOS as asked."""
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast

    if add_bos or add_eos:
        single = " ".join(([f"{bos}:0"] if add_bos else []) + ["$A:0"] + ([f"{eos}:0"] if add_eos else []))
        specials = [(t, tok.token_to_id(t)) for t in {bos if add_bos else None, eos if add_eos else None} if t]
        tok.post_processor = processors.TemplateProcessing(single=single, special_tokens=specials)
    extra.setdefault("unk_token", None)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=bos, eos_token=eos, pad_token=pad,
        model_max_length=model_max_length, **extra,
    )


def bert_uncased_tokenizer(extra: tuple[str, ...] = (), max_length: int = 32):
    """A transformers tokenizer over :func:`_wordpiece_uncased`, with BERT's [CLS] text [SEP] (GIT's tokenizer)."""
    raw = _wordpiece_uncased(["[PAD]", "[CLS]", "[SEP]", "[MASK]", "[UNK]", *extra])
    return _wrap(raw, bos="[CLS]", eos="[SEP]", pad="[PAD]", add_bos=True, add_eos=True, model_max_length=max_length,
                 cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]", unk_token="[UNK]")


def bert_tokenizer(specials: tuple[str, ...] = ("[PAD]", "[CLS]", "[SEP]"), max_length: int = 32, **extra):
    """BERT's [CLS] text [SEP], padded with [PAD], over :func:`_byte_bpe` (``extra``: more named tokens, mask_token=...)."""
    return _wrap(_byte_bpe(list(specials)), bos="[CLS]", eos="[SEP]", pad="[PAD]", add_bos=True, add_eos=True,
                 model_max_length=max_length, cls_token="[CLS]", sep_token="[SEP]", **extra)


def clip_tokenizer(max_length: int = 32):
    """CLIP's <|startoftext|> text <|endoftext|>, padded with <|pad|>, over :func:`_byte_bpe`."""
    return _wrap(_byte_bpe(["<|pad|>", "<|startoftext|>", "<|endoftext|>"]), bos="<|startoftext|>", eos="<|endoftext|>",
                 pad="<|pad|>", add_bos=True, add_eos=True, model_max_length=max_length)


def save(folder: str | Path, model, processor) -> Path:
    """``processor`` and ``model`` saved into ``folder``, as ``from_pretrained`` reads them."""
    folder = Path(folder)
    processor.save_pretrained(folder)
    model.save_pretrained(folder)
    return folder


def tiny_images(k: int = 3, size: tuple[int, int] = (40, 30)):
    """``k`` distinct small RGB PIL images (solid colours with a square), deterministic."""
    from PIL import Image, ImageDraw

    out = []
    for i in range(k):
        img = Image.new("RGB", size, ((70 * i) % 256, (130 + 40 * i) % 256, (200 - 50 * i) % 256))
        ImageDraw.Draw(img).rectangle([2 + 3 * i, 2, 12 + 3 * i, 12], fill=(255 - 60 * i % 256, 20 * i, 90))
        out.append(img)
    return out


def _seed():
    import torch

    torch.manual_seed(0)


def text_tower(tokenizer, positions: int, *, ends: bool = False, **extra) -> dict:
    """A 2-layer, 32-d text tower's config over ``tokenizer`` (its vocabulary and pad token), ``positions`` long;
    ``ends``: the tokenizer's BOS and EOS ids too; ``extra``: more keys."""
    ids = dict(bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id) if ends else {}
    return dict(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                num_attention_heads=2, max_position_embeddings=positions, pad_token_id=tokenizer.pad_token_id, **ids,
                **extra)


def vision_tower(**extra) -> dict:
    """A 2-layer, 32-d ViT's config: 32 px images in 8 px patches; ``extra``: more keys."""
    return dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, image_size=32,
                patch_size=8, **extra)


def clip_image_processor():
    """CLIP's image processor at 32 px: the shortest edge resized to 32, a 32 x 32 centre crop."""
    from transformers import CLIPImageProcessor

    return CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})


# ---- dual encoders ---------------------------------------------------------------------------

def build_tiny_clip(folder: str | Path) -> Path:
    """CLIPModel with a 2-layer, 32-d text and vision tower, CLIPProcessor at 32 px."""
    from transformers import CLIPConfig, CLIPModel, CLIPProcessor

    tokenizer = clip_tokenizer(32)
    config = CLIPConfig(text_config=text_tower(tokenizer, 32, ends=True, projection_dim=16),
                        vision_config=vision_tower(projection_dim=16), projection_dim=16)
    _seed()
    return save(folder, CLIPModel(config).eval(), CLIPProcessor(image_processor=clip_image_processor(),
                                                                tokenizer=tokenizer))


@pytest.fixture(scope="session")
def tiny_clip_path(tmp_path_factory) -> Path:
    """A saved tiny random CLIP (``CLIPModel`` + ``CLIPProcessor``); load it with ``from_pretrained``."""
    return build_tiny_clip(tmp_path_factory.mktemp("tiny_clip"))



def build_tiny_siglip(folder: str | Path) -> Path:
    """SiglipModel (sigmoid loss: logits = scale * cosine + bias), SiglipProcessor at 32 px."""
    from transformers import SiglipConfig, SiglipImageProcessor, SiglipModel, SiglipProcessor

    raw = _byte_bpe(["<pad>", "</s>"])
    # SigLIP's text tower pools the last position and is trained on max-length padded text.
    tokenizer = _wrap(raw, bos=None, eos="</s>", pad="<pad>", add_bos=False, add_eos=True, model_max_length=16)
    config = SiglipConfig(text_config=text_tower(tokenizer, 16, eos_token_id=tokenizer.eos_token_id),
                          vision_config=vision_tower())
    _seed()
    model = SiglipModel(config).eval()
    image_processor = SiglipImageProcessor(size={"height": 32, "width": 32})
    return save(folder, model, SiglipProcessor(image_processor=image_processor, tokenizer=tokenizer))



def build_tiny_siglip2(folder: str | Path) -> Path:
    """Siglip2Model (NaFlex: patch sequences with a pixel_attention_mask and spatial_shapes)."""
    from transformers import Siglip2Config, Siglip2ImageProcessor, Siglip2Model, Siglip2Processor

    raw = _byte_bpe(["<pad>", "<unk>", "<bos>", "<eos>"])
    # Siglip2Processor reloads it as a Gemma tokenizer, which needs an unk token.
    tokenizer = _wrap(raw, bos="<bos>", eos="<eos>", pad="<pad>", add_bos=False, add_eos=True, model_max_length=16,
                      unk_token="<unk>")
    config = Siglip2Config(
        text_config=text_tower(tokenizer, 16, eos_token_id=tokenizer.eos_token_id),
        # The processor class fixes 16 px patches and up to 256 of them (transformers 5).
        vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                           patch_size=16, num_patches=256),
    )
    _seed()
    model = Siglip2Model(config).eval()
    processor = Siglip2Processor(image_processor=Siglip2ImageProcessor(patch_size=16, max_num_patches=256),
                                 tokenizer=tokenizer)
    return save(folder, model, processor)


def build_tiny_align(folder: str | Path) -> Path:
    """AlignModel (EfficientNet image tower, BERT text tower; logits = cosine / temperature)."""
    import torch
    from transformers import AlignConfig, AlignModel, AlignProcessor, EfficientNetImageProcessor

    tokenizer = bert_tokenizer()
    config = AlignConfig(
        text_config=text_tower(tokenizer, 32),
        # width 0.1 gives a 32-d pooled image embedding, which the text projection must match.
        vision_config=dict(image_size=32, width_coefficient=0.1, depth_coefficient=0.1, hidden_dim=64),
        projection_dim=32,
        temperature_init_value=0.5,  # not 1, so that dividing by the temperature is tested
    )
    _seed()
    model = AlignModel(config).eval()
    # With the default 0.02-std init the activations of this many random conv layers vanish to
    # ~1e-30 and the cosine is NaN: use a fan-in init so the tiny tower stays numerically alive.
    with torch.no_grad():
        for module in model.vision_model.modules():
            if isinstance(module, torch.nn.Conv2d):
                torch.nn.init.kaiming_normal_(module.weight)
    image_processor = EfficientNetImageProcessor(size={"height": 32, "width": 32},
                                                 crop_size={"height": 32, "width": 32})
    return save(folder, model, AlignProcessor(image_processor=image_processor, tokenizer=tokenizer))


# ---- cross-encoders with a matching head ----------------------------------------------------

def build_tiny_blip_itm(folder: str | Path) -> Path:
    """BlipForImageTextRetrieval (ITM head: logits[:, 1] = "match"), BlipProcessor at 32 px."""
    from transformers import BlipConfig, BlipForImageTextRetrieval, BlipImageProcessor, BlipProcessor

    tokenizer = bert_tokenizer()
    config = BlipConfig(text_config=text_tower(tokenizer, 32, ends=True, encoder_hidden_size=32,
                                               sep_token_id=tokenizer.sep_token_id),
                        vision_config=vision_tower(), projection_dim=16, image_text_hidden_size=16)
    _seed()
    model = BlipForImageTextRetrieval(config).eval()
    image_processor = BlipImageProcessor(size={"height": 32, "width": 32})
    return save(folder, model, BlipProcessor(image_processor=image_processor, tokenizer=tokenizer))


def build_tiny_vilt(folder: str | Path) -> Path:
    """ViltForImageAndTextRetrieval (one match logit), ViltProcessor with 32 px shortest edge."""
    from transformers import ViltConfig, ViltForImageAndTextRetrieval, ViltImageProcessor, ViltProcessor

    tokenizer = bert_tokenizer()
    config = ViltConfig(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
        max_position_embeddings=32, image_size=32, patch_size=8, max_image_length=-1,
        pad_token_id=tokenizer.pad_token_id,
    )
    _seed()
    model = ViltForImageAndTextRetrieval(config).eval()
    image_processor = ViltImageProcessor(size={"shortest_edge": 32}, size_divisor=8)
    return save(folder, model, ViltProcessor(image_processor=image_processor, tokenizer=tokenizer))


# ---- language models ------------------------------------------------------------------------

def build_tiny_gpt2(folder: str | Path) -> Path:
    """GPT2LMHeadModel; like GPT-2 the tokenizer adds no special tokens and BOS = EOS = <|endoftext|>."""
    from transformers import GPT2Config, GPT2LMHeadModel

    folder = Path(folder)
    raw = _byte_bpe(["<|endoftext|>"])
    tokenizer = _wrap(raw, bos="<|endoftext|>", eos="<|endoftext|>", pad=None, add_bos=False, add_eos=False,
                      model_max_length=64)
    config = GPT2Config(vocab_size=len(tokenizer), n_positions=64, n_embd=32, n_layer=2, n_head=2,
                        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    _seed()
    GPT2LMHeadModel(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


LLAVA_CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'].upper() + ': ' }}"
    "{% for item in message['content'] %}{% if item['type'] == 'image' %}{{ '<image>\n' }}"
    "{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}{% endfor %}{{ '\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}"
)


def build_tiny_vlm(folder: str | Path, tokenizer: str = "byte_bpe") -> Path:
    """LlavaForConditionalGeneration (CLIP vision tower + Llama text model) with a LlavaProcessor and
    a LLaVA-1.5-style chat template that ends in ``ASSISTANT:``, so the answer's first token is the
    leading-space variant " Yes"/" No" (what VQAScore's token lookup must handle). ``tokenizer``:
    ``"byte_bpe"`` (byte-level BPE, as Llama 3's) or ``"sentencepiece"`` (Llama 2's SentencePiece BPE, as
    LLaVA-1.5's released checkpoints)."""
    from transformers import LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor

    if tokenizer == "sentencepiece":
        raw = _sentencepiece_bpe(["<unk>", "<s>", "</s>", "<pad>", "<image>"])
        tokenizer = _wrap(raw, bos="<s>", eos="</s>", pad="<pad>", add_bos=True, add_eos=False, model_max_length=128,
                          unk_token="<unk>")
    else:
        raw = _byte_bpe(["<pad>", "<s>", "</s>", "<image>"])
        tokenizer = _wrap(raw, bos="<s>", eos="</s>", pad="<pad>", add_bos=True, add_eos=False, model_max_length=128)
    image_token_id = tokenizer.convert_tokens_to_ids("<image>")
    config = LlavaConfig(
        vision_config=vision_tower(model_type="clip_vision_model", projection_dim=16),
        text_config=text_tower(tokenizer, 128, ends=True, model_type="llama", num_key_value_heads=2),
        image_token_index=image_token_id,
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
    )
    _seed()
    model = LlavaForConditionalGeneration(config).eval()
    processor = LlavaProcessor(image_processor=clip_image_processor(), tokenizer=tokenizer, patch_size=8,
                               vision_feature_select_strategy="default", num_additional_image_tokens=1,
                               chat_template=LLAVA_CHAT_TEMPLATE, image_token="<image>")
    return save(folder, model, processor)


def build_tiny_blip2_itm(folder: str | Path) -> Path:
    """Blip2ForImageTextRetrieval (Q-Former ITM head: logits_per_image[:, 1] = "match"), Blip2Processor.
    BLIP-2's config also holds its captioning LM (a 1-layer OPT here), which this class does not build."""
    from transformers import Blip2Config, Blip2ForImageTextRetrieval, Blip2Processor, BlipImageProcessor

    tokenizer = bert_tokenizer()
    # As on the Hub: the processor adds an <image> token and puts num_query_tokens of them before
    # the text; the model (image_token_index set) drops them again for the ITM head.
    processor = Blip2Processor(image_processor=BlipImageProcessor(size={"height": 32, "width": 32}),
                               tokenizer=tokenizer, num_query_tokens=4)
    vocab = len(processor.tokenizer)
    config = Blip2Config(
        vision_config=vision_tower(),
        qformer_config=dict(vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                            intermediate_size=64, max_position_embeddings=32, encoder_hidden_size=32,
                            pad_token_id=tokenizer.pad_token_id, use_qformer_text_input=True),  # text layers: ITM
        text_config=dict(model_type="opt", vocab_size=vocab, hidden_size=32, num_hidden_layers=1, ffn_dim=64,
                         num_attention_heads=2, max_position_embeddings=64, word_embed_proj_dim=32),
        num_query_tokens=4, image_text_hidden_size=16,
        image_token_index=processor.tokenizer.convert_tokens_to_ids("<image>"),
    )
    _seed()
    model = Blip2ForImageTextRetrieval(config).eval()
    return save(folder, model, processor)


def build_tiny_flava(folder: str | Path) -> Path:
    """FlavaForPreTraining (image, text and multimodal encoders, a tiny dVAE codebook, ITM head),
    FlavaProcessor at 32 px; saved as Hub FLAVA checkpoints are, with the pre-training class."""
    from transformers import FlavaConfig, FlavaForPreTraining, FlavaImageProcessor, FlavaProcessor

    tokenizer = bert_tokenizer(("[PAD]", "[CLS]", "[SEP]", "[MASK]"), mask_token="[MASK]")
    enc = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2)
    config = FlavaConfig(
        image_config=dict(**enc, image_size=32, patch_size=8),
        text_config=dict(**enc, vocab_size=len(tokenizer), max_position_embeddings=32,
                         pad_token_id=tokenizer.pad_token_id),
        multimodal_config=dict(**enc),
        image_codebook_config=dict(hidden_size=8, num_groups=1, num_blocks_per_group=1, vocab_size=16),
        hidden_size=32, projection_dim=16,
    )
    _seed()
    model = FlavaForPreTraining(config).eval()
    image_processor = FlavaImageProcessor(size={"height": 32, "width": 32}, crop_size={"height": 32, "width": 32},
                                          codebook_size={"height": 16, "width": 16},
                                          codebook_crop_size={"height": 16, "width": 16})
    return save(folder, model, FlavaProcessor(image_processor=image_processor, tokenizer=tokenizer))


def build_tiny_owlvit(folder: str | Path) -> Path:
    """OwlViTForObjectDetection (as Hub OWL-ViT checkpoints are saved), OwlViTProcessor at 32 px."""
    from transformers import OwlViTConfig, OwlViTForObjectDetection, OwlViTImageProcessor, OwlViTProcessor

    tokenizer = clip_tokenizer(16)
    config = OwlViTConfig(text_config=text_tower(tokenizer, 16, ends=True), vision_config=vision_tower(),
                          projection_dim=16)
    _seed()
    model = OwlViTForObjectDetection(config).eval()
    image_processor = OwlViTImageProcessor(size={"height": 32, "width": 32}, crop_size={"height": 32, "width": 32})
    return save(folder, model, OwlViTProcessor(image_processor=image_processor, tokenizer=tokenizer))


QWEN_CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' }}"
    "{% for item in message['content'] %}{% if item['type'] == 'image' %}"
    "{{ '<|vision_start|><|image_pad|><|vision_end|>' }}"
    "{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}{% endfor %}{{ '<|im_end|>\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def build_tiny_qwen2_vl(folder: str | Path) -> Path:
    """Qwen2VLForConditionalGeneration (a 1-block vision tower with 2 x 2 patch merging, M-RoPE text
    model) with a Qwen2VLProcessor and a Qwen-style chat template ending in "assistant\n", so the
    answer's first token is "Yes" without a space."""
    from transformers import (
        Qwen2VLConfig,
        Qwen2VLForConditionalGeneration,
        Qwen2VLImageProcessor,
        Qwen2VLProcessor,
        Qwen2VLVideoProcessor,
    )

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                "<|image_pad|>", "<|video_pad|>"]
    raw = _byte_bpe(specials)
    tokenizer = _wrap(raw, bos=None, eos="<|im_end|>", pad="<|endoftext|>", add_bos=False, add_eos=False,
                      model_max_length=256)
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in specials}
    config = Qwen2VLConfig(
        text_config=dict(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=256,
                         rope_parameters=dict(rope_type="default", rope_theta=10000.0, mrope_section=[2, 3, 3]),
                         pad_token_id=ids["<|endoftext|>"], bos_token_id=None, eos_token_id=ids["<|im_end|>"]),
        vision_config=dict(depth=1, embed_dim=32, hidden_size=32, num_heads=2, patch_size=8, spatial_merge_size=2,
                           temporal_patch_size=2),
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
    )
    _seed()
    model = Qwen2VLForConditionalGeneration(config).eval()
    # 32 x 32 px images: 4 x 4 patches of 8 px, merged 2 x 2 into 4 image tokens.
    image_processor = Qwen2VLImageProcessor(patch_size=8, merge_size=2, temporal_patch_size=2,
                                            min_pixels=32 * 32, max_pixels=32 * 32)
    video_processor = Qwen2VLVideoProcessor(patch_size=8, merge_size=2, temporal_patch_size=2)  # required, unused
    return save(folder, model, Qwen2VLProcessor(image_processor=image_processor, tokenizer=tokenizer,
                                                video_processor=video_processor, chat_template=QWEN_CHAT_TEMPLATE))


@pytest.fixture(scope="session")
def tiny_siglip_path(tmp_path_factory) -> Path:
    """A saved tiny random SigLIP (``SiglipModel`` + ``SiglipProcessor``)."""
    return build_tiny_siglip(tmp_path_factory.mktemp("tiny_siglip"))


@pytest.fixture(scope="session")
def tiny_siglip2_path(tmp_path_factory) -> Path:
    """A saved tiny random SigLIP 2 (``Siglip2Model`` + ``Siglip2Processor``, NaFlex inputs)."""
    return build_tiny_siglip2(tmp_path_factory.mktemp("tiny_siglip2"))


@pytest.fixture(scope="session")
def tiny_align_path(tmp_path_factory) -> Path:
    """A saved tiny random ALIGN (``AlignModel`` + ``AlignProcessor``)."""
    return build_tiny_align(tmp_path_factory.mktemp("tiny_align"))


@pytest.fixture(scope="session")
def tiny_blip_itm_path(tmp_path_factory) -> Path:
    """A saved tiny random BLIP ITM model (``BlipForImageTextRetrieval`` + ``BlipProcessor``)."""
    return build_tiny_blip_itm(tmp_path_factory.mktemp("tiny_blip_itm"))


@pytest.fixture(scope="session")
def tiny_vilt_path(tmp_path_factory) -> Path:
    """A saved tiny random ViLT retrieval model (``ViltForImageAndTextRetrieval`` + ``ViltProcessor``)."""
    return build_tiny_vilt(tmp_path_factory.mktemp("tiny_vilt"))


@pytest.fixture(scope="session")
def tiny_gpt2_path(tmp_path_factory) -> Path:
    """A saved tiny random GPT-2 (``GPT2LMHeadModel`` + tokenizer, no processor)."""
    return build_tiny_gpt2(tmp_path_factory.mktemp("tiny_gpt2"))


@pytest.fixture(scope="session")
def tiny_vlm_path(tmp_path_factory) -> Path:
    """A saved tiny random LLaVA (``AutoModelForImageTextToText`` + ``AutoProcessor`` with a chat template)."""
    return build_tiny_vlm(tmp_path_factory.mktemp("tiny_vlm"))


@pytest.fixture(scope="session")
def tiny_blip2_itm_path(tmp_path_factory) -> Path:
    """A saved tiny random BLIP-2 ITM model (``Blip2ForImageTextRetrieval`` + ``Blip2Processor``)."""
    return build_tiny_blip2_itm(tmp_path_factory.mktemp("tiny_blip2_itm"))


@pytest.fixture(scope="session")
def tiny_flava_path(tmp_path_factory) -> Path:
    """A saved tiny random FLAVA (``FlavaForPreTraining`` + ``FlavaProcessor``)."""
    return build_tiny_flava(tmp_path_factory.mktemp("tiny_flava"))


@pytest.fixture(scope="session")
def tiny_owlvit_path(tmp_path_factory) -> Path:
    """A saved tiny random OWL-ViT (``OwlViTForObjectDetection`` + ``OwlViTProcessor``)."""
    return build_tiny_owlvit(tmp_path_factory.mktemp("tiny_owlvit"))


@pytest.fixture(scope="session")
def tiny_qwen2_vl_path(tmp_path_factory) -> Path:
    """A saved tiny random Qwen2-VL (``Qwen2VLForConditionalGeneration`` + ``Qwen2VLProcessor``)."""
    return build_tiny_qwen2_vl(tmp_path_factory.mktemp("tiny_qwen2_vl"))


# Everything public (the fixtures are what conftest star-imports).
__all__ = [n for n in dir() if n.startswith(("tiny_", "build_tiny_"))]
