"""More tiny random transformers models, one per architecture a scorer family accepts, for
tests/test_architectures.py (tests/tiny_models.py has the ones the rest of the suite uses).

Each ``build_*(folder)`` writes a model built from a tiny config (random, seeded weights) and its
processor or tokenizer with ``save_pretrained``, so it loads through the same Auto* path a Hub id
takes. :data:`BUILDERS` maps an architecture (a class name a config's ``architectures`` lists) to
its builder; the architectures tests/tiny_models.py already builds are mapped to those."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import tiny_models as tm

# ---- tokenizers ----------------------------------------------------------------------------------


def _bert_tokenizer(extra: tuple[str, ...] = (), max_length: int = 32):
    return tm.bert_tokenizer(("[PAD]", "[CLS]", "[SEP]", "[MASK]", "[UNK]", *extra), max_length, mask_token="[MASK]",
                             unk_token="[UNK]")


def _opt_tokenizer():
    """OPT's </s> text, padded with <pad> (the language model of BLIP-2 and InstructBLIP)."""
    return tm._wrap(tm._byte_bpe(["<pad>", "</s>", "<unk>"]), bos="</s>", eos="</s>", pad="<pad>", add_bos=True,
                    add_eos=False, model_max_length=64, unk_token="<unk>")


def _opt_text(vocab: int, tok) -> dict:
    return dict(model_type="opt", vocab_size=vocab, hidden_size=32, num_hidden_layers=1, ffn_dim=64,
                num_attention_heads=2, max_position_embeddings=128, word_embed_proj_dim=32, pad_token_id=tok.pad_token_id,
                bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)


# ---- dual encoders ---------------------------------------------------------------------------------

def build_altclip(folder):
    from transformers import AltCLIPConfig, AltCLIPModel, AltCLIPProcessor

    tok = _bert_tokenizer()
    config = AltCLIPConfig(text_config=tm.text_tower(tok, 40, project_dim=16),
                           vision_config=tm.vision_tower(projection_dim=16), projection_dim=16)
    tm._seed()
    proc = AltCLIPProcessor(image_processor=tm.clip_image_processor(), tokenizer=tok)
    return tm.save(folder, AltCLIPModel(config).eval(), proc)


def build_chinese_clip(folder):
    from transformers import ChineseCLIPConfig, ChineseCLIPImageProcessor, ChineseCLIPModel, ChineseCLIPProcessor

    tok = _bert_tokenizer()
    config = ChineseCLIPConfig(text_config=tm.text_tower(tok, 32), vision_config=tm.vision_tower(projection_dim=16),
                               projection_dim=16)
    tm._seed()
    proc = ChineseCLIPProcessor(image_processor=ChineseCLIPImageProcessor(size={"shortest_edge": 32},
                                                                          crop_size={"height": 32, "width": 32}),
                                tokenizer=tok)
    return tm.save(folder, ChineseCLIPModel(config).eval(), proc)


def build_metaclip_2(folder):
    from transformers import CLIPProcessor, MetaClip2Config, MetaClip2Model

    tok = tm.clip_tokenizer(16)
    config = MetaClip2Config(text_config=tm.text_tower(tok, 16, ends=True, projection_dim=16),
                             vision_config=tm.vision_tower(projection_dim=16), projection_dim=16)
    tm._seed()
    proc = CLIPProcessor(image_processor=tm.clip_image_processor(), tokenizer=tok)
    return tm.save(folder, MetaClip2Model(config).eval(), proc)


def build_vision_text_dual_encoder(folder):
    """A VisionTextDualEncoderModel (CLIP vision tower + BERT text tower), as transformers' run_clip.py builds one."""
    from transformers import (
        BertConfig,
        CLIPVisionConfig,
        VisionTextDualEncoderConfig,
        VisionTextDualEncoderModel,
        VisionTextDualEncoderProcessor,
    )

    tok = _bert_tokenizer()
    config = VisionTextDualEncoderConfig.from_vision_text_configs(CLIPVisionConfig(**tm.vision_tower()),
                                                                  BertConfig(**tm.text_tower(tok, 40)), projection_dim=16)
    tm._seed()
    proc = VisionTextDualEncoderProcessor(image_processor=tm.clip_image_processor(), tokenizer=tok)
    return tm.save(folder, VisionTextDualEncoderModel(config=config).eval(), proc)


def build_blip_contrastive(folder):
    from transformers import BlipConfig, BlipImageProcessor, BlipModel, BlipProcessor

    tok = _bert_tokenizer()
    config = BlipConfig(text_config=tm.text_tower(tok, 32, ends=True, encoder_hidden_size=32,
                                                  sep_token_id=tok.sep_token_id),
                        vision_config=tm.vision_tower(), projection_dim=16, image_text_hidden_size=16)
    tm._seed()
    proc = BlipProcessor(image_processor=BlipImageProcessor(size={"height": 32, "width": 32}), tokenizer=tok)
    return tm.save(folder, BlipModel(config).eval(), proc)


def build_flava_model(folder):
    """A FlavaModel saved as itself (not the pre-training class)."""
    from transformers import FlavaModel

    folder = tm.build_tiny_flava(folder)
    model = FlavaModel.from_pretrained(folder).eval()
    model.save_pretrained(folder)
    return folder


def build_owlvit_model(folder):
    from transformers import OwlViTModel

    folder = tm.build_tiny_owlvit(folder)
    OwlViTModel.from_pretrained(folder).eval().save_pretrained(folder)
    return folder


def _build_owlv2(folder, detection: bool):
    from transformers import Owlv2Config, Owlv2ForObjectDetection, Owlv2ImageProcessor, Owlv2Model, Owlv2Processor

    tok = tm.clip_tokenizer(16)
    config = Owlv2Config(text_config=tm.text_tower(tok, 16, ends=True), vision_config=tm.vision_tower(),
                         projection_dim=16)
    tm._seed()
    model = (Owlv2ForObjectDetection if detection else Owlv2Model)(config).eval()
    proc = Owlv2Processor(image_processor=Owlv2ImageProcessor(size={"height": 32, "width": 32}), tokenizer=tok)
    return tm.save(folder, model, proc)


def build_owlv2_model(folder):
    return _build_owlv2(folder, detection=False)


def build_owlv2_detection(folder):
    return _build_owlv2(folder, detection=True)


def build_clipseg(folder):
    from transformers import CLIPSegConfig, CLIPSegModel, CLIPSegProcessor, ViTImageProcessor

    tok = tm.clip_tokenizer(16)
    config = CLIPSegConfig(text_config=tm.text_tower(tok, 16, ends=True), vision_config=tm.vision_tower(),
                           projection_dim=16)
    tm._seed()
    proc = CLIPSegProcessor(image_processor=ViTImageProcessor(size={"height": 32, "width": 32}), tokenizer=tok)
    return tm.save(folder, CLIPSegModel(config).eval(), proc)


# ---- generative VLMs (vqascore) --------------------------------------------------------------------

def build_git(folder):
    """GitForCausalLM: its outputs put the image's positions first, then the text's; an uncased WordPiece
    tokenizer that ends every text with [SEP], as GIT's released checkpoints (bert-base-uncased's)."""
    from transformers import GitConfig, GitForCausalLM, GitProcessor

    tok = tm.bert_uncased_tokenizer()
    config = GitConfig(vision_config=tm.vision_tower(), **tm.text_tower(tok, 128, bos_token_id=tok.cls_token_id,
                                                                      eos_token_id=tok.sep_token_id))
    tm._seed()
    proc = GitProcessor(image_processor=tm.clip_image_processor(), tokenizer=tok)
    return tm.save(folder, GitForCausalLM(config).eval(), proc)


def build_blip2_captioning(folder):
    """Blip2ForConditionalGeneration: Q-Former query outputs stand in for the <image> tokens the processor
    puts before the text; a 1-layer OPT language model."""
    from transformers import Blip2Config, Blip2ForConditionalGeneration, Blip2Processor, BlipImageProcessor

    tok = _opt_tokenizer()
    proc = Blip2Processor(image_processor=BlipImageProcessor(size={"height": 32, "width": 32}), tokenizer=tok,
                          num_query_tokens=4)
    vocab = len(proc.tokenizer)
    config = Blip2Config(
        vision_config=tm.vision_tower(),
        qformer_config=dict(vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                            intermediate_size=64, max_position_embeddings=32, encoder_hidden_size=32),
        text_config=_opt_text(vocab, tok),
        num_query_tokens=4, image_token_index=proc.tokenizer.convert_tokens_to_ids("<image>"))
    tm._seed()
    return tm.save(folder, Blip2ForConditionalGeneration(config).eval(), proc)


def build_instructblip(folder):
    """InstructBlipForConditionalGeneration: the Q-Former also reads the prompt (its own BERT tokenizer)."""
    from transformers import (
        BlipImageProcessor,
        InstructBlipConfig,
        InstructBlipForConditionalGeneration,
        InstructBlipProcessor,
    )

    tok = _opt_tokenizer()
    qtok = _bert_tokenizer(max_length=64)
    proc = InstructBlipProcessor(image_processor=BlipImageProcessor(size={"height": 32, "width": 32}), tokenizer=tok,
                                 qformer_tokenizer=qtok, num_query_tokens=4)
    vocab = len(proc.tokenizer)
    config = InstructBlipConfig(
        vision_config=tm.vision_tower(),
        qformer_config=dict(vocab_size=len(qtok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                            intermediate_size=64, max_position_embeddings=64, encoder_hidden_size=32,
                            pad_token_id=qtok.pad_token_id),
        text_config=_opt_text(vocab, tok),
        num_query_tokens=4, image_token_index=proc.tokenizer.convert_tokens_to_ids("<image>"))
    tm._seed()
    return tm.save(folder, InstructBlipForConditionalGeneration(config).eval(), proc)


def build_paligemma(folder):
    """PaliGemmaForConditionalGeneration: no chat template; the processor puts the image tokens and BOS
    before the prompt and a newline after it."""
    from transformers import PaliGemmaConfig, PaliGemmaForConditionalGeneration, PaliGemmaProcessor, SiglipImageProcessor

    raw = tm._byte_bpe(["<pad>", "<bos>", "<eos>", "<unk>", "<image>"])
    tok = tm._wrap(raw, bos="<bos>", eos="<eos>", pad="<pad>", add_bos=True, add_eos=False, model_max_length=128,
                   unk_token="<unk>")
    image_token = tok.convert_tokens_to_ids("<image>")
    config = PaliGemmaConfig(
        vision_config=tm.vision_tower(model_type="siglip_vision_model", projection_dim=32),
        text_config=tm.text_tower(tok, 128, ends=True, model_type="gemma", num_key_value_heads=1, head_dim=16),
        image_token_index=image_token, projection_dim=32)
    config.vision_config.num_image_tokens = 16
    tm._seed()
    image_processor = SiglipImageProcessor(size={"height": 32, "width": 32})
    image_processor.image_seq_length = 16  # (32 / 8) ** 2 patches
    proc = PaliGemmaProcessor(image_processor=image_processor, tokenizer=tok)
    return tm.save(folder, PaliGemmaForConditionalGeneration(config).eval(), proc)


# ---- the map --------------------------------------------------------------------------------------

def build_bridgetower_itm(folder):
    """BridgeTowerForImageAndTextRetrieval; its vision tower needs hidden_size >= 64 (one head per 64 dims)."""
    from transformers import (
        BridgeTowerConfig,
        BridgeTowerForImageAndTextRetrieval,
        BridgeTowerImageProcessor,
        BridgeTowerProcessor,
    )

    tok = _bert_tokenizer()
    config = BridgeTowerConfig(
        text_config=tm.text_tower(tok, 40),
        vision_config=dict(hidden_size=64, num_hidden_layers=2, patch_size=8, image_size=32),
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2)
    tm._seed()
    proc = BridgeTowerProcessor(image_processor=BridgeTowerImageProcessor(size={"shortest_edge": 32}, size_divisor=8,
                                                                          crop_size={"shortest_edge": 32}), tokenizer=tok)
    return tm.save(folder, BridgeTowerForImageAndTextRetrieval(config).eval(), proc)


BUILDERS: dict[str, Callable[[Path], Path]] = {
    "CLIPModel": tm.build_tiny_clip, "SiglipModel": tm.build_tiny_siglip, "Siglip2Model": tm.build_tiny_siglip2,
    "AlignModel": tm.build_tiny_align, "FlavaForPreTraining": tm.build_tiny_flava,
    "OwlViTForObjectDetection": tm.build_tiny_owlvit, "AltCLIPModel": build_altclip,
    "ChineseCLIPModel": build_chinese_clip, "MetaClip2Model": build_metaclip_2, "BlipModel": build_blip_contrastive,
    "FlavaModel": build_flava_model, "OwlViTModel": build_owlvit_model, "Owlv2Model": build_owlv2_model,
    "Owlv2ForObjectDetection": build_owlv2_detection, "CLIPSegModel": build_clipseg,
    "BlipForImageTextRetrieval": tm.build_tiny_blip_itm, "Blip2ForImageTextRetrieval": tm.build_tiny_blip2_itm,
    "ViltForImageAndTextRetrieval": tm.build_tiny_vilt,
    "BridgeTowerForImageAndTextRetrieval": build_bridgetower_itm, "VisionTextDualEncoderModel": build_vision_text_dual_encoder,
    "LlavaForConditionalGeneration": tm.build_tiny_vlm, "Qwen2VLForConditionalGeneration": tm.build_tiny_qwen2_vl,
    "GitForCausalLM": build_git, "Blip2ForConditionalGeneration": build_blip2_captioning,
    "InstructBlipForConditionalGeneration": build_instructblip, "PaliGemmaForConditionalGeneration": build_paligemma,
    "GPT2LMHeadModel": tm.build_tiny_gpt2,
}
