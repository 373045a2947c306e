"""Every architecture a scorer family accepts is read where the model puts its answer (issue 33,
section 2): for each one that can be built tiny offline, vlprobe's score (through the engine, batched
and padded) equals the model's own forward output computed here, one pair or text at a time:

* dual: the model's ``logits_per_image`` (FLAVA's contrastive head by hand: its forward has none);
* itm: the matching head's match log-odds (ViLT: its one match logit) and probability;
* vqascore: log P(Yes) from the model's own next-token logits at the last position of the prompt alone
  (less an end token the tokenizer appends: GIT's [SEP]), and for GIT the first step of its own
  ``generate`` on [CLS] + the question, its documented VQA recipe;
* causal_lm: minus the model's own mean token loss (``labels=input_ids``) on BOS + the text.

What no test builds is covered by a check every scorer makes on the model itself when it is made
(vqascore: the answer position of a padded batch against each prompt alone; causal_lm: one row of
logits per token, none depending on later tokens) or refused in one line (encoder-decoder VLMs); the
tests below make each check refuse a model it must refuse."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import assert_close
from tiny_architectures import BUILDERS
from tiny_models import tiny_images

from vlprobe.dataset.items import Item
from vlprobe.scorers import get_family, load_scorer
from vlprobe.scorers.loading import detect_family, load_config
from vlprobe.scoring.engine import Engine

# Texts of different lengths (the batch is padded), one past a 32-token limit.
TEXTS = ("a dog", "There are 4 cats on the sofa and a man is riding a horse.", "the red ball is to the left",
         "Yes")


@pytest.fixture(scope="module")
def images():
    return tiny_images(2, size=(40, 30)) + tiny_images(1, size=(24, 36))


_BUILT: dict[str, object] = {}


@pytest.fixture
def built(tmp_path_factory):
    def build(arch: str):
        if arch not in _BUILT:
            _BUILT[arch] = BUILDERS[arch](tmp_path_factory.mktemp(arch))
        return _BUILT[arch]
    return build


def _family_of(arch: str) -> str:
    return next(name for name in ("itm", "dual", "vqascore", "causal_lm") if get_family(name).takes(arch))


def _archs(family: str) -> list[str]:
    return [a for a in BUILDERS if _family_of(a) == family]


def _engine_scores(scorer, images, texts, batch_size=3):
    items = [Item(id=f"i{k}", images=(im,), texts=tuple(texts), gold=[[1] + [0] * (len(texts) - 1)])
             for k, im in enumerate(images)]
    res = Engine(scorer, batch_size=batch_size, progress=False).score(items)
    scores = np.concatenate([s for s in res.scores])
    probs = None if res.probabilities is None else np.concatenate([p for p in res.probabilities])
    return scores, probs


def test_every_explicit_architecture_has_a_tiny_model_here():
    """The explicit maps cannot grow without a test against the model's own output: each listed class is
    built here, or named below with the reason it is not (then the family's check on the model covers it)."""
    not_built = {
        # vqascore: processors too heavy to build offline in a few lines; the answer-position check runs on them.
        "LlavaNextForConditionalGeneration", "LlavaOnevisionForConditionalGeneration", "Idefics2ForConditionalGeneration",
        "Idefics3ForConditionalGeneration", "SmolVLMForConditionalGeneration", "Qwen2_5_VLForConditionalGeneration",
        "Qwen3VLForConditionalGeneration", "Gemma3ForConditionalGeneration", "MllamaForConditionalGeneration",
    }
    for name in ("dual", "itm", "vqascore", "causal_lm"):
        for arch in get_family(name).architectures:
            if name == "causal_lm":
                assert arch in CAUSAL_LM_TYPES.values() or arch in BUILDERS, arch
            else:
                assert arch in BUILDERS or arch in not_built, arch
    assert not (not_built & set(BUILDERS))


# ---- dual: the model's logits_per_image ------------------------------------------------------------

@pytest.mark.parametrize("arch", _archs("dual"))
def test_dual_score_is_the_models_logits_per_image(arch, built, images):
    from transformers import AutoModel, AutoProcessor

    path = built(arch)
    assert detect_family(load_config(str(path))) == "dual"
    scorer = load_scorer(str(path))
    got, _ = _engine_scores(scorer, images, TEXTS)
    model = AutoModel.from_pretrained(path).eval()
    processor = AutoProcessor.from_pretrained(path)
    with torch.no_grad():
        if "Flava" in arch:  # FlavaModel's forward has no logits: its contrastive head, by hand
            img = model(**processor(images=list(images), return_tensors="pt")).image_embeddings[:, 0, :]
            txt = model(**processor(text=list(TEXTS), padding=True, truncation=True, max_length=scorer.max_length,
                                    return_tensors="pt")).text_embeddings[:, 0, :]
            img = torch.nn.functional.normalize(model.image_projection(img), dim=-1)
            txt = torch.nn.functional.normalize(model.text_projection(txt), dim=-1)
            want = (img @ txt.T * model.logit_scale.exp()).numpy()
        else:
            inputs = processor(text=list(TEXTS), images=list(images), padding=scorer.padding, truncation=True,
                               max_length=scorer.max_length, return_tensors="pt")
            want = model(**inputs).logits_per_image.numpy()
    assert_close(got, want)
    assert np.ptp(want) > 1e-4


@pytest.mark.parametrize("arch", _archs("dual"))
def test_dual_texts_padded_from_their_key_ids_are_the_tokenizers_inputs(arch, built):
    """The engine tokenizes each text once: its key's ids (seen_texts), padded, are the inputs tokenize gives."""
    scorer = load_scorer(str(built(arch)))
    assert scorer.encodes_seen_ids()
    for texts in (TEXTS, TEXTS[:1], ("", "a dog")):
        want = scorer.tokenize(list(texts))
        got = scorer.pad_seen_ids(scorer.seen_texts(list(texts)))
        assert sorted(got) == sorted(want)
        for name in want:
            assert got[name].dtype == want[name].dtype and torch.equal(got[name], want[name]), name
        np.testing.assert_array_equal(scorer.encode_seen_ids(scorer.seen_texts(list(texts))),
                                      scorer.encode_texts(list(texts)))


# ---- itm: the matching head ---------------------------------------------------------------------

@pytest.mark.parametrize("arch", _archs("itm"))
def test_itm_score_is_the_models_match_head(arch, built, images):
    import transformers
    from transformers import AutoProcessor

    path = built(arch)
    scorer = load_scorer(str(path))
    assert scorer.family == "itm"
    got, got_p = _engine_scores(scorer, images, TEXTS)
    model = getattr(transformers, arch).from_pretrained(path).eval()
    processor = AutoProcessor.from_pretrained(path)
    want, want_p = [], []
    limit = {} if arch == "Blip2ForImageTextRetrieval" and processor.num_query_tokens is None else \
        {"max_length": scorer.max_length}
    for image in images:
        for text in TEXTS:
            inputs = processor(images=image, text=text, truncation=True, return_tensors="pt", **limit)
            with torch.no_grad():
                if arch == "BlipForImageTextRetrieval":
                    logits = model(**inputs, use_itm_head=True).itm_score[0]
                elif arch == "Blip2ForImageTextRetrieval":
                    logits = model(**inputs, use_image_text_matching_head=True).logits_per_image[0]
                elif arch == "BridgeTowerForImageAndTextRetrieval":
                    logits = model(**inputs).logits[0]
                else:
                    logit = model(**inputs).logits[0, 0]
                    want.append(float(logit))
                    want_p.append(float(torch.sigmoid(logit)))
                    continue
            want.append(float(logits[1] - logits[0]))
            want_p.append(float(torch.softmax(logits, -1)[1]))
    assert_close(got.ravel(), np.array(want))
    np.testing.assert_allclose(got_p.ravel(), want_p, atol=1e-5)


def test_bridgetower_probe_features_are_what_its_itm_head_reads(built, images):
    """vlprobe probe's joint features for BridgeTower: its pooled cross-modal output, so that the model's own ITM
    head on them gives back the scores."""
    scorer = load_scorer(str(built("BridgeTowerForImageAndTextRetrieval")))
    inputs = scorer.preprocess_pairs(list(images), list(TEXTS[:3]))
    feats = scorer.pair_features(inputs)
    assert feats.shape == (3, 2 * scorer.model.config.hidden_size)
    with torch.no_grad():
        logits = scorer.model.itm_score(torch.from_numpy(feats))
    assert_close((logits[:, 1] - logits[:, 0]).numpy(), scorer.score_pairs(inputs).scores)


def test_a_blip2_itm_config_without_qformer_text_input_names_the_cause(tiny_blip2_itm_path, tmp_path):
    import json
    import shutil

    from transformers import AutoProcessor, Blip2Config, Blip2ForImageTextRetrieval

    from vlprobe.runner import load_model
    from vlprobe.scorers.itm import ITMScorer

    folder = tmp_path / "blip2-no-text"
    shutil.copytree(tiny_blip2_itm_path, folder)
    config = json.loads((folder / "config.json").read_text())
    config["qformer_config"]["use_qformer_text_input"] = False
    (folder / "config.json").write_text(json.dumps(config))
    for load in (lambda: load_scorer(str(folder)), lambda: load_model(str(folder))):
        with pytest.raises(Exception) as err:
            load()
        msg = str(err.value)
        assert "\n" not in msg and "use_qformer_text_input" in msg and "'intermediate'" in msg, msg
        assert "set \"use_qformer_text_input\": true" in msg
    # an already-loaded model is refused the same way, before it is run
    model = Blip2ForImageTextRetrieval(Blip2Config.from_pretrained(folder)).eval()
    with pytest.raises(ValueError, match="use_qformer_text_input false"):
        ITMScorer("m", model, AutoProcessor.from_pretrained(tiny_blip2_itm_path), device="cpu", dtype="float32")


# ---- vqascore: the answer logit at the last real position of the model's own output -------------

def _own_log_yes(scorer, image, text):
    """From the model alone on one pair, unpadded: log P(Yes) at its last position (less a trailing token
    the tokenizer appends to every text, found here independently of vlprobe)."""
    tok = scorer.tokenizer
    full, plain = tok("x y")["input_ids"], tok("x y", add_special_tokens=False)["input_ids"]
    start = next(k for k in range(len(full)) if full[k:k + len(plain)] == plain)
    appended = full[start + len(plain):]
    inputs = dict(scorer.processor(images=[image], text=[scorer.render(text)], return_tensors="pt"))
    ids = inputs["input_ids"][0].tolist()
    if appended and ids[-len(appended):] == appended:
        inputs["input_ids"] = inputs["input_ids"][:, : -len(appended)]
        inputs["attention_mask"] = inputs["attention_mask"][:, : -len(appended)]
    with torch.no_grad():
        logits = scorer.model(**inputs).logits[0, -1].float()
    logp = torch.log_softmax(logits, -1)
    return float(torch.logsumexp(logp[scorer.yes_ids], -1)), float(torch.logsumexp(logp[scorer.no_ids], -1))


@pytest.mark.parametrize("arch", _archs("vqascore"))
def test_vqascore_reads_the_answer_where_the_model_puts_it(arch, built, images):
    path = built(arch)
    assert detect_family(load_config(str(path))) == "vqascore"
    scorer = load_scorer(str(path))
    got, got_p = _engine_scores(scorer, images, TEXTS, batch_size=5)  # batches mix images and lengths
    want = np.array([[_own_log_yes(scorer, im, t) for t in TEXTS] for im in images])  # (images, texts, 2)
    assert_close(got, want[..., 0])
    np.testing.assert_allclose(got_p, 1 / (1 + np.exp(want[..., 1] - want[..., 0])), atol=1e-5)


def test_git_is_scored_as_its_own_vqa_recipe_generates(built, images):
    """GIT's outputs hold its image positions first; vlprobe reads the answer after them, at the
    question's last token (before the [SEP] its tokenizer appends), which is what GIT's documented VQA
    use computes: generate(pixel_values, input_ids=[CLS] + question) -- its first step's logits."""
    path = built("GitForCausalLM")
    scorer = load_scorer(str(path))
    assert scorer.family == "vqascore" and not scorer.chat_template
    assert scorer.preprocessing["answer_position"].endswith("before the appended ['[SEP]']")
    got, _ = _engine_scores(scorer, images[:2], TEXTS, batch_size=8)
    tok = scorer.tokenizer
    for i, image in enumerate(images[:2]):
        pixel_values = scorer.processor(images=image, return_tensors="pt")["pixel_values"]
        for j, text in enumerate(TEXTS):
            ids = [tok.cls_token_id] + tok(scorer.render(text), add_special_tokens=False)["input_ids"]
            with torch.no_grad():
                out = scorer.model.generate(pixel_values=pixel_values, input_ids=torch.tensor([ids]), max_new_tokens=1,
                                            do_sample=False, output_logits=True, return_dict_in_generate=True)
            logp = torch.log_softmax(out.logits[0][0].float(), -1)
            assert got[i, j] == pytest.approx(float(torch.logsumexp(logp[scorer.yes_ids], -1)), rel=1e-4, abs=1e-4)
    # Reading at the position of the input ids (inside GIT's prompt), as vlprobe did, is another number.
    inputs = scorer.preprocess_pairs([images[0]], [TEXTS[1]])
    with torch.no_grad():
        logits = scorer.model(**inputs).logits
    wrong = torch.log_softmax(logits[0, inputs["input_ids"].shape[1] - 1].float(), -1)
    assert abs(float(torch.logsumexp(wrong[scorer.yes_ids], -1)) - got[0, 1]) > 1e-3


def test_a_model_read_at_the_wrong_position_is_refused_before_scoring(built, monkeypatch):
    """The answer-position check refuses a model whose padded batch vlprobe would read elsewhere than the
    model's own next token: here GIT with the image-position offset taken away, as vlprobe used to read it."""
    from vlprobe.scorers import vqascore

    path = built("GitForCausalLM")
    real = vqascore.VQAScoreScorer.answer_logits

    def without_offset(self, inputs):
        logits, read, _ = real(self, inputs)
        read = read - (logits.shape[1] - inputs["input_ids"].shape[1])
        return logits, read, logits[torch.arange(logits.shape[0]), read].float()

    monkeypatch.setattr(vqascore.VQAScoreScorer, "answer_logits", without_offset)
    with pytest.raises(ValueError) as err:
        load_scorer(str(path))
    msg = str(err.value)
    assert "\n" not in msg and "GitForCausalLM" in msg and "cannot be scored as vqascore" in msg and "position" in msg


def test_an_encoder_decoder_vlm_is_refused_before_its_weights_load(tmp_path):
    from transformers import AutoConfig

    config = AutoConfig.for_model("pix2struct")
    config.architectures = ["Pix2StructForConditionalGeneration"]
    config.save_pretrained(tmp_path)
    assert detect_family(load_config(str(tmp_path))) == "vqascore"  # AutoModelForImageTextToText's table
    with pytest.raises(ValueError) as err:
        load_scorer(str(tmp_path))  # no weights in the folder: refused from the config alone
    msg = str(err.value)
    assert "\n" not in msg and "encoder-decoder" in msg and "Pix2StructForConditionalGeneration" in msg


# ---- causal_lm: minus the model's own mean token loss -------------------------------------------

# model_type -> the class the family's explicit map names (each built here from a tiny config).
CAUSAL_LM_TYPES = {
    "gpt2": "GPT2LMHeadModel", "openai-gpt": "OpenAIGPTLMHeadModel", "gpt_neo": "GPTNeoForCausalLM",
    "gpt_neox": "GPTNeoXForCausalLM", "gptj": "GPTJForCausalLM", "llama": "LlamaForCausalLM",
    "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM", "phi": "PhiForCausalLM",
    "phi3": "Phi3ForCausalLM", "gemma": "GemmaForCausalLM", "gemma2": "Gemma2ForCausalLM", "olmo": "OlmoForCausalLM",
    "olmo2": "Olmo2ForCausalLM", "opt": "OPTForCausalLM", "bloom": "BloomForCausalLM", "falcon": "FalconForCausalLM",
    "smollm3": "SmolLM3ForCausalLM",
}
# A few classes only transformers' AutoModelForCausalLM table names, through the same code path.
CAUSAL_LM_AUTO = {"cohere": "CohereForCausalLM", "mamba": "MambaForCausalLM", "starcoder2": "Starcoder2ForCausalLM"}


def build_causal_lm(folder, model_type: str):
    """A tiny causal LM of ``model_type`` from its config's defaults cut down, with GPT-2's tiny tokenizer."""
    import tiny_models as tm
    from transformers import AutoConfig, AutoModelForCausalLM

    raw = tm._byte_bpe(["<|endoftext|>"])
    tok = tm._wrap(raw, bos="<|endoftext|>", eos="<|endoftext|>", pad=None, add_bos=False, add_eos=False,
                   model_max_length=64)
    small = dict(vocab_size=len(tok), hidden_size=32, n_embd=32, d_model=32, num_hidden_layers=2, n_layer=2,
                 num_layers=2, num_attention_heads=2, n_head=2, num_heads=2, num_key_value_heads=2,
                 intermediate_size=64, ffn_dim=64, head_dim=16, max_position_embeddings=64, n_positions=64,
                 word_embed_proj_dim=32, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                 pad_token_id=tok.eos_token_id, state_size=4, expand=2, conv_kernel=2, rotary_dim=8)
    config = AutoConfig.for_model(model_type)
    keys = set(config.to_dict()) | set(getattr(config, "attribute_map", {}))
    extra = {"gpt_neo": {"attention_types": [[["global", "local"], 1]]}}.get(model_type, {})
    config = AutoConfig.for_model(model_type, **{k: v for k, v in small.items() if k in keys}, **extra)
    tm._seed()
    model = AutoModelForCausalLM.from_config(config).eval()
    model.config.architectures = [type(model).__name__]
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


@pytest.mark.parametrize("model_type", [*CAUSAL_LM_TYPES, *CAUSAL_LM_AUTO])
def test_causal_lm_score_is_minus_the_models_own_mean_loss(model_type, tmp_path):
    path = build_causal_lm(tmp_path, model_type)
    arch = {**CAUSAL_LM_TYPES, **CAUSAL_LM_AUTO}[model_type]
    assert load_config(str(path)).architectures == [arch]
    scorer = load_scorer(str(path), family="causal_lm")
    got, _ = _engine_scores(scorer, tiny_images(1), TEXTS, batch_size=3)
    want = []
    for text in TEXTS:
        ids = torch.tensor([[scorer.bos_id] + scorer.tokenizer(text, add_special_tokens=False)["input_ids"]])
        with torch.no_grad():
            want.append(-float(scorer.model(input_ids=ids, labels=ids).loss))
    assert_close(got.ravel(), np.array(want))


def test_a_bidirectional_model_is_refused_as_causal_lm(tmp_path):
    """BERT loaded through AutoModelForCausalLM without is_decoder sees the tokens it would predict."""
    import tiny_models as tm
    from transformers import BertConfig, BertLMHeadModel

    tok = tm._wrap(tm._byte_bpe(["[PAD]", "[CLS]", "[SEP]"]), bos="[CLS]", eos="[SEP]", pad="[PAD]", add_bos=True,
                   add_eos=True, model_max_length=32)
    config = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=32, is_decoder=False,
                        architectures=["BertLMHeadModel"])
    tm._seed()
    BertLMHeadModel(config).eval().save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    with pytest.raises(ValueError) as err:
        load_scorer(str(tmp_path), family="causal_lm")
    msg = str(err.value)
    assert "\n" not in msg and "bidirectional" in msg and "is_decoder" in msg
    config.is_decoder = True  # the same weights read as a decoder are scored
    BertLMHeadModel(config).eval().save_pretrained(tmp_path)
    assert load_scorer(str(tmp_path), family="causal_lm").family == "causal_lm"
