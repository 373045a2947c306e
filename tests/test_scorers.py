"""Scorer families on tiny random models loaded through the real Auto* path (no downloads).

Each family's scores are checked against the model's own outputs computed independently here,
one pair (or one text) at a time, so batching and padding cannot hide a mistake."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from vlprobe.dataset.items import Item
from vlprobe.scorers import (
    ModelNotFoundError,
    UnknownFamilyError,
    apply_control,
    families,
    load_scorer,
)
from vlprobe.scorers.loading import resolve_device, resolve_dtype

TEXTS = ["a dog is running on the grass.", "There are 4 cats.", "the red ball is to the left of the blue box",
         "Yes"]


# ---- dual encoders ---------------------------------------------------------------------------

@pytest.mark.parametrize("fixture", ["tiny_clip_path", "tiny_siglip_path", "tiny_siglip2_path", "tiny_align_path"])
def test_dual_scores_equal_logits_per_image(request, fixture, images):
    from transformers import AutoModel, AutoProcessor

    path = request.getfixturevalue(fixture)
    scorer = load_scorer(str(path))
    assert scorer.family == "dual" and scorer.kind == "dual"
    img = scorer.encode_images(scorer.preprocess_images(images))
    # Texts encoded in two batches of different padded lengths: the embeddings must not care.
    txt = np.concatenate([scorer.encode_texts(TEXTS[:1]), scorer.encode_texts(TEXTS[1:])])
    assert img.dtype == np.float32 and txt.dtype == np.float32
    got = scorer.similarity(img, txt)
    assert got.shape == (len(images), len(TEXTS)) and got.dtype == np.float32

    model = AutoModel.from_pretrained(path).eval()
    processor = AutoProcessor.from_pretrained(path)
    # SigLIP models are trained on max-length padded text; the others pad to the longest text.
    padding = "max_length" if "siglip" in fixture else True
    assert scorer.padding == padding
    inputs = processor(text=TEXTS, images=images, padding=padding, max_length=scorer.max_length,
                       truncation=True, return_tensors="pt")
    with torch.no_grad():
        want = model(**inputs).logits_per_image.numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(want).max())))
    # The scores are not all alike (a trivially constant scorer would pass a loose test).
    assert np.ptp(want) > 1e-3


def test_dual_bf16_close_to_fp32(tiny_clip_path, images):
    fp32 = load_scorer(str(tiny_clip_path), dtype="fp32")
    bf16 = load_scorer(str(tiny_clip_path), dtype="bf16")
    assert bf16.dtype == "bfloat16" and bf16.describe()["dtype"] == "bfloat16"
    s32 = fp32.similarity(fp32.encode_images(fp32.preprocess_images(images)), fp32.encode_texts(TEXTS))
    s16 = bf16.similarity(bf16.encode_images(bf16.preprocess_images(images)), bf16.encode_texts(TEXTS))
    assert s16.dtype == np.float32
    np.testing.assert_allclose(s16, s32, atol=0.15 * max(1.0, float(np.abs(s32).max())))


# ---- image-text matching heads ---------------------------------------------------------------

def test_itm_blip_match_logit_and_probability(tiny_blip_itm_path, images):
    from transformers import AutoProcessor, BlipForImageTextRetrieval

    scorer = load_scorer(str(tiny_blip_itm_path))
    assert scorer.family == "itm" and scorer.uses_images
    out = scorer.score_pairs(scorer.preprocess_pairs(images, TEXTS))
    assert out.scores.dtype == np.float32 and out.probabilities.dtype == np.float32

    model = BlipForImageTextRetrieval.from_pretrained(tiny_blip_itm_path).eval()
    processor = AutoProcessor.from_pretrained(tiny_blip_itm_path)
    for k, (image, text) in enumerate(zip(images, TEXTS)):
        with torch.no_grad():
            logits = model(**processor(images=image, text=text, return_tensors="pt"), use_itm_head=True).itm_score[0]
        assert out.scores[k] == pytest.approx(float(logits[1] - logits[0]),
                                              abs=1e-5 * max(1.0, abs(float(logits[1] - logits[0]))))
        assert out.probabilities[k] == pytest.approx(float(torch.softmax(logits, -1)[1]), abs=1e-5)
    np.testing.assert_allclose(out.probabilities, 1 / (1 + np.exp(-out.scores)), rtol=1e-4, atol=1e-5)


def test_itm_vilt_single_logit(tiny_vilt_path, images):
    from transformers import AutoProcessor, ViltForImageAndTextRetrieval

    scorer = load_scorer(str(tiny_vilt_path))
    assert scorer.family == "itm"
    out = scorer.score_pairs(scorer.preprocess_pairs(images, TEXTS))
    model = ViltForImageAndTextRetrieval.from_pretrained(tiny_vilt_path).eval()
    processor = AutoProcessor.from_pretrained(tiny_vilt_path)
    for k, (image, text) in enumerate(zip(images, TEXTS)):
        with torch.no_grad():
            logit = float(model(**processor(images=image, text=text, return_tensors="pt")).logits[0, 0])
        assert out.scores[k] == pytest.approx(logit, abs=1e-5 * max(1.0, abs(logit)))
        assert out.probabilities[k] == pytest.approx(1 / (1 + np.exp(-logit)), abs=1e-5)


def test_itm_refuses_a_model_without_a_matching_head(tiny_clip_path):
    with pytest.raises(ValueError, match="BlipForImageTextRetrieval"):
        load_scorer(str(tiny_clip_path), family="itm")


# ---- text-only language model ----------------------------------------------------------------

def test_causal_lm_is_minus_mean_nll_by_hand(tiny_gpt2_path, images):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    scorer = load_scorer(str(tiny_gpt2_path))
    assert scorer.family == "causal_lm" and scorer.uses_images is False
    # Images are ignored: None placeholders are fine for a text-only scorer.
    out = scorer.score_pairs(scorer.preprocess_pairs([None] * len(TEXTS), TEXTS))
    assert out.probabilities is None and out.scores.dtype == np.float32

    model = AutoModelForCausalLM.from_pretrained(tiny_gpt2_path).eval()
    tok = AutoTokenizer.from_pretrained(tiny_gpt2_path)
    for k, text in enumerate(TEXTS):
        ids = [tok.bos_token_id] + tok(text, add_special_tokens=False)["input_ids"]
        x = torch.tensor([ids])
        with torch.no_grad():
            logits = model(x).logits[0]
            loss = float(model(x, labels=x).loss)
        # By hand: the log-probability of every text token (the first included) given its prefix.
        logp = torch.log_softmax(logits, -1)
        by_hand = sum(float(logp[t - 1, ids[t]]) for t in range(1, len(ids))) / (len(ids) - 1)
        assert out.scores[k] == pytest.approx(by_hand, abs=1e-5 * max(1.0, abs(by_hand)))
        assert out.scores[k] == pytest.approx(-loss, abs=1e-5 * max(1.0, abs(loss)))


def test_causal_lm_refuses_empty_text(tiny_gpt2_path):
    from vlprobe.errors import ModelError

    scorer = load_scorer(str(tiny_gpt2_path))
    # A scorer's refusal comes out as one line naming the model and family (ScoringError).
    with pytest.raises(ModelError, match=r"\(family 'causal_lm'\) failed in preprocess_pairs: .*no tokens"):
        scorer.preprocess_pairs([None], [""])


# ---- VQAScore --------------------------------------------------------------------------------

def test_vqascore_log_p_yes(tiny_vlm_path, images):
    from transformers import AutoModelForImageTextToText, AutoProcessor

    scorer = load_scorer(str(tiny_vlm_path))
    assert scorer.family == "vqascore"
    # The template ends in "ASSISTANT:", so both "Yes" and " Yes" must be found.
    assert scorer.preprocessing["yes_tokens"] == ["Yes", "ĠYes"]
    assert scorer.preprocessing["no_tokens"] == ["No", "ĠNo"]
    prompt = scorer.render("a dog")
    assert 'Does this figure show "a dog"? Please answer yes or no.' in prompt and prompt.endswith("ASSISTANT:")
    out = scorer.score_pairs(scorer.preprocess_pairs(images, TEXTS))

    model = AutoModelForImageTextToText.from_pretrained(tiny_vlm_path).eval()
    processor = AutoProcessor.from_pretrained(tiny_vlm_path)
    tok = processor.tokenizer
    yes = [tok.convert_tokens_to_ids(t) for t in ("Yes", "ĠYes")]
    no = [tok.convert_tokens_to_ids(t) for t in ("No", "ĠNo")]
    for k, (image, text) in enumerate(zip(images, TEXTS)):
        inputs = processor(images=image, text=scorer.render(text), return_tensors="pt")
        with torch.no_grad():
            p = torch.softmax(model(**inputs).logits[0, -1], -1)
        p_yes, p_no = float(p[yes].sum()), float(p[no].sum())
        assert out.scores[k] == pytest.approx(np.log(p_yes), abs=1e-5 * max(1.0, abs(np.log(p_yes))))
        assert out.probabilities[k] == pytest.approx(p_yes / (p_yes + p_no), abs=1e-5)


def test_vqascore_custom_prompt_needs_a_slot(tiny_vlm_path):
    with pytest.raises(ValueError, match="text"):
        load_scorer(str(tiny_vlm_path), prompt="Is this a picture?")
    scorer = load_scorer(str(tiny_vlm_path), prompt="Is {text} true?")
    assert "Is a cat true?" in scorer.render("a cat")
    assert scorer.preprocessing["prompt"] == "Is {text} true?"


# ---- loading, detection, errors, provenance --------------------------------------------------

def test_named_family_and_unknown_family(tiny_clip_path):
    assert load_scorer(str(tiny_clip_path), family="dual").family == "dual"
    with pytest.raises(UnknownFamilyError) as err:
        load_scorer(str(tiny_clip_path), family="no-such-family")
    for name in ("dual", "itm", "causal_lm", "vqascore"):
        assert name in str(err.value)


def test_undetectable_model_lists_known_families(tmp_path):
    from transformers import BertConfig

    BertConfig(architectures=["BertForMaskedLM"]).save_pretrained(tmp_path)
    with pytest.raises(UnknownFamilyError) as err:
        load_scorer(str(tmp_path))
    msg = str(err.value)
    assert "\n" not in msg and "BertForMaskedLM is a 'bert' model for masked LM" in msg
    assert "closest: --family causal_lm" in msg and "`vlprobe list` shows each family" in msg  # not every family


def test_missing_hub_model_says_pass_a_local_path():
    with pytest.raises(ModelNotFoundError) as err:
        load_scorer("no-such-org/no-such-model-vlprobe")
    msg = str(err.value)
    assert isinstance(err.value, FileNotFoundError)
    assert "'no-such-org/no-such-model-vlprobe'" in msg and "local folder" in msg and "HF_HUB_OFFLINE" in msg


def test_missing_or_incomplete_folder(tmp_path):
    with pytest.raises(ModelNotFoundError, match="no such folder. Pass an existing local folder"):
        load_scorer(str(tmp_path / "not" / "there"))
    with pytest.raises(ModelNotFoundError, match="does not hold a complete saved model"):
        load_scorer(str(tmp_path))  # exists, but holds no config.json
    with pytest.raises(ValueError, match="no model given"):
        load_scorer("  ")


@pytest.mark.parametrize("family", ["causal_lm", "vqascore"])
@pytest.mark.slow
def test_wrong_named_family_is_a_short_clear_error(tiny_clip_path, family):
    with pytest.raises(ValueError, match=r"\(CLIPConfig\) cannot be loaded with AutoModelFor.*another family"):
        load_scorer(str(tiny_clip_path), family=family)


def test_yes_no_lookup_with_a_sentencepiece_style_tokenizer():
    """Metaspace (SentencePiece-style) vocabularies spell the answer "▁Yes"; a word that is never
    one token is refused clearly."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from vlprobe.scorers.vqascore import answer_token_ids

    raw = Tokenizer(models.BPE(unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.Metaspace()
    raw.decoder = decoders.Metaspace()
    raw.train_from_iterator(["Yes No yes no Yes. No. Does this show a dog?"] * 5,
                            trainers.BpeTrainer(vocab_size=120, special_tokens=["<unk>"], show_progress=False))
    tok = PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="<unk>")
    yes = answer_token_ids(tok, "Yes")
    assert tok.convert_ids_to_tokens(yes) == ["▁Yes"]
    assert tok.convert_ids_to_tokens(answer_token_ids(tok, "No")) == ["▁No"]
    with pytest.raises(ValueError, match="no single token for 'Maybe'"):
        answer_token_ids(tok, "Maybe")


def test_device_dtype_and_provenance(tiny_clip_path, tiny_vlm_path):
    assert resolve_dtype("bf16")[0] == "bfloat16" and resolve_dtype("half")[0] == "float16"
    with pytest.raises(ValueError, match="unsupported dtype"):
        resolve_dtype("int8")
    expected = "cuda" if torch.cuda.is_available() else ("mps" if torch.backends.mps.is_available() else "cpu")
    assert resolve_device(None) == resolve_device("auto") == expected
    for path in (tiny_clip_path, tiny_vlm_path):
        d = load_scorer(str(path), device="cpu").describe()
        assert d["revision"] is None and d["model_id"] == str(path) and d["device"] == "cpu"
        json.dumps(d)  # results.json must be able to hold it
    pre = load_scorer(str(tiny_clip_path)).preprocessing
    assert pre["crop_size"] == {"height": 32, "width": 32} and pre["text_max_length"] == 32
    assert pre["image_mean"] == pytest.approx([0.48145466, 0.4578275, 0.40821073])


def test_every_family_is_registered_with_a_description():
    fams = families()
    assert {"dual", "itm", "causal_lm", "vqascore"} <= set(fams)
    assert all(f.description for f in fams.values())


def test_a_second_family_of_the_same_name_is_refused():
    from vlprobe.scorers import DuplicateFamilyError, get_family, register, unregister

    families()
    original = get_family("dual")

    def my_loader(model, **kw):  # a plugin's loader, defined in another module than dual_encoder.py
        raise AssertionError("never called")

    with pytest.raises(DuplicateFamilyError, match=r"'dual' is already registered by vlprobe\.scorers\.dual_encoder"):
        register("dual", description="a plugin clash")(my_loader)
    assert get_family("dual") == original  # the first one is kept, not silently replaced

    # A new name registers; the same loader registered again (a module reloaded) is not a clash.
    register("test_family_h6", description="test")(my_loader)
    try:
        with pytest.raises(DuplicateFamilyError):
            register("test_family_h6", description="test")(lambda model, **kw: None)
        register("test_family_h6", description="test, again")(my_loader)
        assert get_family("test_family_h6").description == "test, again"
    finally:
        unregister("test_family_h6")
    assert "test_family_h6" not in families()
    with pytest.raises(UnknownFamilyError, match="test_family_h6"):
        unregister("test_family_h6")


# ---- controls --------------------------------------------------------------------------------

def _items(images):
    return [
        Item(id="a", images=(images[0],), texts=("x", "y"), gold=[[1, 0]], tags=("t=1",)),
        Item(id="b", images=(images[1], images[2]), texts=("x", "y"), gold=[[1, 0], [0, 1]]),
        Item(id="c", images=(images[3],), texts=("x", "y"), gold=[[0, 1]]),
    ]


def test_blank_control_keeps_sizes_and_everything_else(images):
    from vlprobe.dataset.images import to_pil

    items = _items(images)
    blank = apply_control(items, "blank")
    for old, new in zip(items, blank):
        assert (new.id, new.texts, new.tags) == (old.id, old.texts, old.tags)
        assert np.array_equal(new.gold, old.gold) and new.meta["control"] == "blank"
        for a, b in zip(old.images, new.images):
            pil = to_pil(b)
            assert pil.size == a.size and pil.getextrema() == ((255, 255),) * 3


def test_shuffle_control_is_a_seeded_permutation(images):
    items = _items(images)
    ids = lambda its: [id(im) for it in its for im in it.images]  # noqa: E731
    one, again, other = (apply_control(items, "shuffle", seed=s) for s in (0, 0, 1))
    assert ids(one) == ids(again)
    assert sorted(ids(one)) == sorted(ids(items))
    assert ids(one) != ids(items) or ids(other) != ids(items)
    assert [it.m for it in one] == [it.m for it in items]
    with pytest.raises(ValueError, match="known controls: blank, shuffle"):
        apply_control(items, "mirror")


def test_control_recorded_in_provenance(tiny_clip_path, tiny_gpt2_path):
    scorer = load_scorer(str(tiny_clip_path), control="shuffle", control_seed=3)
    d = scorer.describe()
    assert d["family"] == "dual+shuffle" and d["preprocessing"]["control"] == {"name": "shuffle", "seed": 3}
    assert load_scorer(str(tiny_clip_path)).family == "dual"  # the class is untouched
    with pytest.raises(ValueError, match="does not look at images"):
        load_scorer(str(tiny_gpt2_path), control="blank")


def test_blank_scores_differ_from_real_ones(tiny_clip_path, images):
    """The control changes what the model sees: scores on blank images differ from real ones,
    and all blank images of one size embed identically."""
    scorer = load_scorer(str(tiny_clip_path))
    items = _items(images)
    real = [im for it in items for im in it.images]
    blank = [im for it in apply_control(items, "blank") for im in it.images]
    e_real = scorer.encode_images(scorer.preprocess_images(real))
    e_blank = scorer.encode_images(scorer.preprocess_images(blank))
    assert not np.allclose(e_real, e_blank, atol=1e-4)
    np.testing.assert_allclose(e_blank[0], e_blank[1], rtol=1e-4,
                               atol=1e-5 * max(1.0, float(np.abs(e_blank).max())))  # both 40x30


def test_hub_id_from_the_cache_records_the_commit(tiny_clip_path, tmp_path, monkeypatch):
    """A Hub id resolved offline from a Hub-layout cache (what a networked machine leaves behind)
    loads through the same path and records the snapshot's commit hash as the revision."""
    import shutil

    import huggingface_hub.constants

    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "models--vlprobe-test--tiny-clip"
    snapshot = repo / "snapshots" / commit
    shutil.copytree(tiny_clip_path, snapshot)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))
    scorer = load_scorer("vlprobe-test/tiny-clip")
    assert scorer.describe()["revision"] == commit and scorer.model_id == "vlprobe-test/tiny-clip"
    assert load_scorer("vlprobe-test/tiny-clip", revision="main").revision == commit
    with pytest.raises(ModelNotFoundError, match="local folder"):
        load_scorer("vlprobe-test/tiny-clip", revision="no-such-branch")
