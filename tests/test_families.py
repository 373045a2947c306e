"""Model families: detected from explicit architecture maps (and transformers' own Auto tables),
wrapped by the family that owns them, refused in one line when the checkpoint lacks the head the
family reads, and every scorer failure raised as one line naming the model and family.

Every family's tiny random model is built from a config, saved with save_pretrained and loaded
through the same Auto* path as a Hub id (tests/tiny_models.py); its scores are checked against the
model's own outputs computed here, one pair at a time."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import assert_close
from tiny_models import tiny_images

from vlprobe.errors import ModelError
from vlprobe.scorers import families, get_family, load_scorer, register, unregister
from vlprobe.scorers.base import PairScorer, PairScores, ScoringError
from vlprobe.scorers.loading import MissingWeightsError, UnmappedArchitectureError, detect_family, load_config

TEXTS = ["a dog is running on the grass.", "There are 4 cats.", "the red ball is to the left of the blue box", "Yes"]


# ---- detection: explicit maps first, then the Auto tables --------------------------------------

@pytest.mark.parametrize("fixture,family", [
    ("tiny_clip_path", "dual"), ("tiny_siglip_path", "dual"), ("tiny_siglip2_path", "dual"),
    ("tiny_align_path", "dual"), ("tiny_flava_path", "dual"), ("tiny_owlvit_path", "dual"),
    # BLIP-2's model type is in AutoModelForImageTextToText's table (its captioner), but the retrieval class is in
    # itm's explicit map: the class decides, not the model type.
    ("tiny_blip_itm_path", "itm"), ("tiny_blip2_itm_path", "itm"), ("tiny_vilt_path", "itm"),
    ("tiny_gpt2_path", "causal_lm"), ("tiny_vlm_path", "vqascore"), ("tiny_qwen2_vl_path", "vqascore"),
])
def test_every_tiny_family_is_detected_from_its_config(request, fixture, family):
    path = request.getfixturevalue(fixture)
    assert detect_family(load_config(str(path))) == family


@pytest.mark.parametrize("archs,family", [
    # BLIP-2's model type is in AutoModelForImageTextToText's table (its captioner), but the
    # retrieval class is in itm's explicit map: the class decides, not the model type.
    (["Blip2ForImageTextRetrieval"], "itm"),
    (["Blip2ForConditionalGeneration"], "vqascore"),
    (["Blip2Model"], None),  # transformers knows it, no family takes it
    # Classes only the Auto tables name (no family lists them) still resolve, by priority.
    (["CLIPSegModel"], "dual"),
    (["Idefics3ForConditionalGeneration"], "vqascore"),
    (["CohereForCausalLM"], "causal_lm"),
    (["FuyuForCausalLM"], "vqascore"),  # in both LM tables: the image-text one wins
])
def test_architecture_decides_the_family(archs, family):
    from transformers import AutoConfig

    config = AutoConfig.for_model("blip-2")
    config.architectures = archs
    if family is None:
        with pytest.raises(UnmappedArchitectureError, match=r"Blip2Model is a 'blip-2' model with no task head; "
                                                             r"closest: --family vqascore \(loads it as "
                                                             r"Blip2ForConditionalGeneration\) or --family itm"):
            detect_family(config)
    else:
        assert detect_family(config) == family


@pytest.mark.parametrize("model_type,family", [("clip", "dual"), ("siglip", "dual"), ("gpt2", "causal_lm"),
                                               ("llava", "vqascore"), ("qwen2_vl", "vqascore")])
def test_a_config_without_architectures_is_detected_by_model_type(model_type, family):
    from transformers import AutoConfig

    config = AutoConfig.for_model(model_type)
    config.architectures = None
    assert detect_family(config) == family


def test_an_unmapped_model_is_one_line_saying_what_it_is_and_the_flag_to_try(tmp_path, tiny_clip_path):
    """What the model is, the closest family and its flag; the full list is `vlprobe list`'s (it was ~800
    characters naming every architecture)."""
    from transformers import BertConfig, ViTConfig

    BertConfig(architectures=["BertForSequenceClassification"]).save_pretrained(tmp_path / "bert")
    with pytest.raises(UnmappedArchitectureError) as err:
        load_scorer(str(tmp_path / "bert"))
    msg = str(err.value)
    assert isinstance(err.value, ModelError) and "\n" not in msg
    assert msg == (f"no vlprobe scorer family takes model '{tmp_path / 'bert'}': BertForSequenceClassification is a "
                   f"'bert' model for sequence classification; closest: --family causal_lm (loads it as BertLMHeadModel); "
                   f"`vlprobe list` shows each family and the architectures it takes (family='NAME' in Python)")
    ViTConfig(architectures=["ViTForImageClassification"]).save_pretrained(tmp_path / "vit")
    with pytest.raises(UnmappedArchitectureError, match=r"ViTForImageClassification is a 'vit' model for image "
                                                        r"classification; no family takes a model of type 'vit'; "
                                                        r"`vlprobe list` shows"):
        load_scorer(str(tmp_path / "vit"))


def test_clipseg_as_released_is_a_dual_encoder(tmp_path, images):
    """CLIPSeg's checkpoints list CLIPSegForImageSegmentation, which no Auto table names; its base class CLIPSegModel is
    in the zero-shot table: detected as dual with no --family, scored as its CLIPSegModel's logits."""
    from tiny_architectures import build_clipseg
    from transformers import AutoProcessor, CLIPSegForImageSegmentation, CLIPSegModel

    base = CLIPSegModel.from_pretrained(build_clipseg(tmp_path / "base")).eval()
    seg = CLIPSegForImageSegmentation(base.config)
    seg.clip.load_state_dict(base.state_dict())
    seg.save_pretrained(tmp_path / "clipseg")
    processor = AutoProcessor.from_pretrained(tmp_path / "base")
    processor.save_pretrained(tmp_path / "clipseg")
    assert load_config(str(tmp_path / "clipseg")).architectures == ["CLIPSegForImageSegmentation"]
    _assert_dual_scores_are_the_logits(tmp_path / "clipseg", base, processor, images)


def _assert_dual_scores_are_the_logits(path, model, processor, images) -> None:
    """The model at ``path`` is scored as a dual encoder, its scores of ``images`` x TEXTS the ``logits_per_image``
    of ``model`` on ``processor``'s inputs (and not all alike)."""
    scorer = load_scorer(str(path))
    assert scorer.family == "dual"
    got = scorer.similarity(scorer.encode_images(scorer.preprocess_images(images)), scorer.encode_texts(TEXTS))
    inputs = processor(text=TEXTS, images=images, padding=True, truncation=True, max_length=scorer.max_length,
                       return_tensors="pt")
    with torch.no_grad():
        want = model(**inputs).logits_per_image.numpy()
    assert_close(got, want)
    assert np.ptp(want) > 1e-4


# ---- the new families, scored against the model's own outputs ----------------------------------

def test_blip2_itm_is_scored_by_its_matching_head(tiny_blip2_itm_path, images):
    """BLIP-2's retrieval model was detected as vqascore, loaded as a captioner with a random language
    model and failed with AttributeError; it is an itm model."""
    from transformers import AutoProcessor, Blip2ForImageTextRetrieval

    scorer = load_scorer(str(tiny_blip2_itm_path))
    assert scorer.family == "itm" and scorer.preprocessing["architecture"] == "Blip2ForImageTextRetrieval"
    out = scorer.score_pairs(scorer.preprocess_pairs(images, TEXTS))
    model = Blip2ForImageTextRetrieval.from_pretrained(tiny_blip2_itm_path).eval()
    processor = AutoProcessor.from_pretrained(tiny_blip2_itm_path)
    want_s, want_p = [], []
    for image, text in zip(images, TEXTS):
        with torch.no_grad():
            logits = model(**processor(images=image, text=text, return_tensors="pt"),
                           use_image_text_matching_head=True).logits_per_image[0]
        want_s.append(float(logits[1] - logits[0]))
        want_p.append(float(torch.softmax(logits, -1)[1]))
    assert_close(out.scores, np.array(want_s))
    np.testing.assert_allclose(out.probabilities, want_p, atol=1e-5)
    assert np.ptp(want_s) > 1e-4
    # The joint features are what the linear head reads: head(features) = the mean logits.
    feats = torch.from_numpy(scorer.pair_features(scorer.preprocess_pairs(images, TEXTS)))
    with torch.no_grad():
        head = model.itm_head(feats)
    assert_close((head[:, 1] - head[:, 0]).numpy(), np.array(want_s))


def test_a_checkpoint_without_the_family_head_is_refused_in_one_line(tiny_blip2_itm_path):
    for family in ("vqascore", "dual"):
        with pytest.raises(MissingWeightsError) as err:
            load_scorer(str(tiny_blip2_itm_path), family=family)
        msg = str(err.value)
        assert isinstance(err.value, ModelError) and "\n" not in msg
        assert f"model '{tiny_blip2_itm_path}' as family '{family}'" in msg
        assert "Blip2ForImageTextRetrieval" in msg and "language_model." in msg and "leave --family out" in msg


def test_flava_pretraining_checkpoint_is_a_dual_encoder(tiny_flava_path, images):
    """FLAVA's score is its global contrastive logit: exp(logit_scale) * cosine of the projected
    [CLS] positions (FlavaForPreTraining's contrastive head), computed here from the model's forward."""
    from transformers import AutoProcessor, FlavaModel

    scorer = load_scorer(str(tiny_flava_path))
    assert scorer.family == "dual"
    got = scorer.similarity(scorer.encode_images(scorer.preprocess_images(images)), scorer.encode_texts(TEXTS))
    model = FlavaModel.from_pretrained(tiny_flava_path).eval()
    processor = AutoProcessor.from_pretrained(tiny_flava_path)
    with torch.no_grad():
        img = model(**processor(images=images, return_tensors="pt")).image_embeddings[:, 0, :]
        txt = model(**processor(text=TEXTS, padding=True, return_tensors="pt")).text_embeddings[:, 0, :]
        img = torch.nn.functional.normalize(model.image_projection(img), dim=-1)
        txt = torch.nn.functional.normalize(model.text_projection(txt), dim=-1)
        want = (img @ txt.T * model.logit_scale.exp()).numpy()
    assert_close(got, want)
    assert np.ptp(want) > 1e-4


def test_owlvit_detection_checkpoint_is_a_dual_encoder(tiny_owlvit_path, images):
    from transformers import AutoProcessor, OwlViTModel

    _assert_dual_scores_are_the_logits(tiny_owlvit_path, OwlViTModel.from_pretrained(tiny_owlvit_path).eval(),
                                       AutoProcessor.from_pretrained(tiny_owlvit_path), images)


def test_qwen2_vl_vqascore_equals_one_pair_per_forward(tiny_qwen2_vl_path, images):
    """A Qwen-VL-style model (M-RoPE, merged patches, template ending in a newline) batched with
    right padding gives each pair the score it has alone."""
    scorer = load_scorer(str(tiny_qwen2_vl_path))
    assert scorer.family == "vqascore" and scorer.preprocessing["yes_tokens"][0] == "Yes"
    assert scorer.render("a dog").endswith("<|im_start|>assistant\n")
    out = scorer.score_pairs(scorer.preprocess_pairs(images, TEXTS))
    want_s, want_p = [], []
    for image, text in zip(images, TEXTS):
        inputs = scorer.processor(images=[image], text=[scorer.render(text)], return_tensors="pt")
        with torch.no_grad():
            logp = torch.log_softmax(scorer.model(**inputs).logits[0, -1].float(), -1)
        log_yes, log_no = (float(torch.logsumexp(logp[ids], -1)) for ids in (scorer.yes_ids, scorer.no_ids))
        want_s.append(log_yes)
        want_p.append(1 / (1 + np.exp(log_no - log_yes)))
    assert_close(out.scores, np.array(want_s))
    np.testing.assert_allclose(out.probabilities, want_p, atol=1e-5)


# ---- the registry owns wrapping --------------------------------------------------------------

@pytest.mark.parametrize("fixture,family,auto", [
    ("tiny_clip_path", "dual", "AutoModel"),
    ("tiny_blip2_itm_path", "itm", "Blip2ForImageTextRetrieval"),
    ("tiny_vlm_path", "vqascore", "AutoModelForImageTextToText"),
    ("tiny_gpt2_path", "causal_lm", "AutoModelForCausalLM"),
])
def test_a_loaded_model_is_wrapped_by_its_family(request, fixture, family, auto, images):
    import transformers

    from vlprobe.runner import load_model

    path = request.getfixturevalue(fixture)
    model = getattr(transformers, auto).from_pretrained(path)
    proc = (transformers.AutoTokenizer if family == "causal_lm" else transformers.AutoProcessor).from_pretrained(path)
    wrapped = load_model((model, proc))
    saved = load_scorer(str(path))
    assert type(wrapped) is type(saved) and wrapped.family == family
    if wrapped.kind == "dual":
        args = (images, TEXTS)
        got = wrapped.similarity(wrapped.encode_images(wrapped.preprocess_images(images)), wrapped.encode_texts(TEXTS))
        want = saved.similarity(saved.encode_images(saved.preprocess_images(images)), saved.encode_texts(TEXTS))
    else:
        args = ([None] * 4 if family == "causal_lm" else images, TEXTS)
        got = wrapped.score_pairs(wrapped.preprocess_pairs(*args)).scores
        want = saved.score_pairs(saved.preprocess_pairs(*args)).scores
    assert_close(got, want)


def test_a_family_is_one_registration_detected_and_wrapped_with_no_other_change(tiny_gpt2_path):
    """A plugin family claims an architecture through its map and wraps loaded models itself:
    neither detection nor vlprobe.evaluate's model loading needs to know it."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from vlprobe.runner import load_model

    class Echo(PairScorer):
        family = "echo_h26"

    def wrap(model_id, model, processor, *, device, dtype, revision=None):
        return Echo(model_id=model_id, device=device, dtype=dtype, revision=revision)

    def load(model, **kw):
        raise AssertionError("not called for a loaded model")

    register("echo_h26", wrap=wrap, architectures={"GPT2LMHeadModel"}, priority=99, description="test")(load)
    try:
        assert detect_family(load_config(str(tiny_gpt2_path))) == "echo_h26"  # explicit map, higher priority
        model, tok = AutoModelForCausalLM.from_pretrained(tiny_gpt2_path), AutoTokenizer.from_pretrained(tiny_gpt2_path)
        scorer = load_model((model, tok))
        assert type(scorer) is Echo and scorer.revision.startswith("weights-sha256:")
    finally:
        unregister("echo_h26")
    assert detect_family(load_config(str(tiny_gpt2_path))) == "causal_lm"


def test_families_are_discovered_modules_each_owning_load_wrap_and_map():
    import pkgutil

    import vlprobe.scorers as pkg

    fams = families()
    builtin = {"dual", "itm", "causal_lm", "vqascore"}
    assert builtin <= set(fams)
    modules = {info.name for info in pkgutil.iter_modules(pkg.__path__)}
    for name in builtin:
        fam = get_family(name)
        # load, wrap and the map live in one module of vlprobe/scorers/, found by discovery.
        assert fam.load.__module__ == fam.wrap.__module__
        assert fam.load.__module__.rsplit(".", 1)[-1] in modules
        assert fam.architectures and fam.description
    import inspect

    import vlprobe.runner as runner

    source = inspect.getsource(runner._loaded_scorer)
    assert "DualEncoderScorer" not in source and "elif family" not in source


# ---- every scorer failure is one line naming the model and family --------------------------------

def test_a_scorer_failure_is_one_line_naming_model_and_family(tiny_vlm_path):
    from vlprobe.dataset.items import Item
    from vlprobe.scoring.engine import Engine

    scorer = load_scorer(str(tiny_vlm_path))

    def broken(*args, **kwargs):
        raise AttributeError("'bool' object has no attribute 'unsqueeze'\n  (a second line)")

    scorer.model.forward = broken
    items = [Item(id="a", images=(tiny_images(1)[0],), texts=("x", "y"), gold=[[1, 0]])]
    with pytest.raises(ScoringError) as err:
        Engine(scorer, batch_size=4, progress=False).score(items)
    msg = str(err.value)
    assert isinstance(err.value, ModelError) and "\n" not in msg
    assert msg == (f"model '{tiny_vlm_path}' (family 'vqascore') failed in score_pairs: "
                   f"AttributeError: 'bool' object has no attribute 'unsqueeze'")
    assert isinstance(err.value.__cause__, AttributeError)


def test_out_of_memory_and_named_errors_pass_through_the_guard():
    from vlprobe.errors import DatasetError

    class Toy(PairScorer):
        family = "toy"

        def preprocess_pairs(self, images, texts):
            raise DatasetError("row 3 is bad")

        def score_pairs(self, inputs):
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")

    toy = Toy(model_id="m")
    with pytest.raises(DatasetError, match="row 3"):
        toy.preprocess_pairs([], [])
    with pytest.raises(torch.OutOfMemoryError):  # the engine turns it into "use a smaller --batch-size"
        toy.score_pairs(None)
    assert PairScores  # the contract's result type is unchanged


def test_a_failure_in_a_dataloader_worker_is_still_one_line():
    """torch re-raises a worker's exception as type(err)(message + worker traceback)."""
    line = "model 'm' (family 'dual') failed in preprocess_images: KeyError: 'pixel_values'"
    wrapped = (f"Caught ScoringError in DataLoader worker process 0.\nOriginal Traceback (most recent call last):\n"
               f"  File \"x.py\", line 1, in f\n    raise ScoringError(...)\nvlprobe.scorers.base.ScoringError: {line}\n")
    assert str(ScoringError(wrapped)) == line


# ---- end to end: the CLI ------------------------------------------------------------------------

FOLDER_ROWS = 4  # the rows of conftest's synthetic folder here


@pytest.mark.slow
def test_cli_scores_blip2_itm_and_refuses_it_as_vqascore_in_one_line(folder, tiny_blip2_itm_path, tmp_path, capsys):
    import json

    from vlprobe.cli import main

    common = ["evaluate", "--dataset", str(folder), "--config", "pairs", "--model", str(tiny_blip2_itm_path),
              "--bootstrap", "0", "--cache-dir", "none", "--no-progress", "--num-workers", "0"]
    assert main([*common, "--out", str(tmp_path / "ok")]) == 0, capsys.readouterr().err
    doc = json.loads((tmp_path / "ok" / "results.json").read_text())
    assert doc["provenance"]["model"]["family"] == "itm"
    capsys.readouterr()
    assert main([*common, "--family", "vqascore", "--out", str(tmp_path / "no")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err and not (tmp_path / "no").exists()
    assert err.startswith(f"vlprobe evaluate: error: cannot score model '{tiny_blip2_itm_path}' as family 'vqascore'")
