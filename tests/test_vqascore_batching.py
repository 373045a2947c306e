"""VQAScore batches several (image, text) pairs per forward pass and preprocesses each image once.

The batched scores must equal those of one pair per forward pass (the model alone, no padding),
within a tolerance scaled to the values; padding is on the right, so a row's real tokens keep the
positions they have alone."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tiny_models import build_tiny_qwen2_vl, build_tiny_vlm, tiny_images

from vlprobe.dataset.items import Item
from vlprobe.scorers import load_scorer
from vlprobe.scoring.engine import Engine

# Texts of different lengths, so the batch is padded.
TEXTS = ["a dog", "There are 4 cats on the sofa and a man is riding a horse.", "the red ball is to the left",
         "Yes"]


def _one_pair_per_forward(scorer, image, text):
    """The model alone on one pair (no batch, no padding): log P(Yes) and P(Yes)/(P(Yes)+P(No))."""
    inputs = scorer.processor(images=[image], text=[scorer.render(text)], return_tensors="pt")
    with torch.inference_mode():
        logits = scorer.model(**inputs).logits[0, -1].float()
    logp = torch.log_softmax(logits, -1)
    log_yes = float(torch.logsumexp(logp[scorer.yes_ids], -1))
    log_no = float(torch.logsumexp(logp[scorer.no_ids], -1))
    return log_yes, 1.0 / (1.0 + np.exp(log_no - log_yes))


def test_batched_scores_equal_one_pair_per_forward(tiny_vlm_path):
    scorer = load_scorer(str(tiny_vlm_path))
    images = tiny_images(3, size=(40, 30))
    items = [Item(id=str(k), images=(im,), texts=tuple(TEXTS), gold=[[1, 0, 0, 0]]) for k, im in enumerate(images)]
    res = Engine(scorer, batch_size=8, progress=False).score(items)  # 12 pairs: batches of 8 and 4

    ref = np.array([[_one_pair_per_forward(scorer, im, t) for t in TEXTS] for im in images])  # (3, 4, 2)
    got_scores = np.stack([s[0] for s in res.scores])
    got_probs = np.stack([p[0] for p in res.probabilities])
    np.testing.assert_allclose(got_scores, ref[..., 0], rtol=1e-4, atol=1e-5 * max(1.0, np.abs(ref[..., 0]).max()))
    np.testing.assert_allclose(got_probs, ref[..., 1], rtol=1e-4, atol=1e-5)
    assert res.stats["computed_pairs"] == 12


def test_the_batch_is_right_padded_and_each_image_preprocessed_once(tiny_vlm_path):
    scorer = load_scorer(str(tiny_vlm_path))
    images = tiny_images(2, size=(40, 30))
    reuse = scorer._batch_processor.image_processor
    seen = []
    real = reuse.inner

    class Counting:
        def __getattr__(self, name):
            return getattr(real, name)

        def __call__(self, imgs, *args, **kwargs):
            seen.append(len(imgs))
            return real(imgs, *args, **kwargs)

    reuse.inner = Counting()
    pair_images = [images[0]] * len(TEXTS) + [images[1]] * len(TEXTS)  # one PIL object per image
    inputs = scorer.preprocess_pairs(pair_images, TEXTS + TEXTS)
    assert seen == [2]  # 8 pairs, 2 distinct images: one image-processor call on 2 images

    # The same pixel values as preprocessing every pair's image on its own.
    alone = scorer.processor.image_processor(pair_images, return_tensors="pt")["pixel_values"]
    torch.testing.assert_close(inputs["pixel_values"], alone, rtol=0, atol=0)
    mask = inputs["attention_mask"]
    assert not bool(mask.all())  # texts of different lengths: some rows are padded
    # Right padding: every row is ones then zeros.
    assert torch.equal(mask, torch.sort(mask, dim=1, descending=True).values)

    out = scorer.score_pairs(inputs)
    ref = np.array([_one_pair_per_forward(scorer, im, t) for im, t in zip(pair_images, TEXTS + TEXTS)])
    np.testing.assert_allclose(out.scores, ref[:, 0], rtol=1e-4, atol=1e-5 * max(1.0, np.abs(ref[:, 0]).max()))


def test_distinct_images_of_equal_content_are_not_merged(tiny_vlm_path):
    """Reuse is by identity (the engine decodes each unique image once per batch): two different
    images are never given each other's pixels."""
    scorer = load_scorer(str(tiny_vlm_path))
    a, b = tiny_images(2, size=(40, 30))
    inputs = scorer.preprocess_pairs([a, b, a], ["x", "x", "x"])
    px = inputs["pixel_values"]
    assert torch.equal(px[0], px[2]) and not torch.equal(px[0], px[1])


@pytest.mark.parametrize("exact", [False, True])
def test_exact_preprocessing_option_is_recorded(tiny_vlm_path, exact):
    scorer = load_scorer(str(tiny_vlm_path), exact_preprocessing=exact)
    backend = scorer.preprocessing["image_backend"]
    assert backend in ("pil", "torchvision")
    if exact:
        assert backend == "pil"
    assert scorer.cache_key()["preprocessing"]["image_backend"] == backend


# ---- the tokenizer kinds the families' released checkpoints use ------------------------------------------------

def _git_model(folder):
    from tiny_architectures import build_git

    return build_git(folder)


# (builder, the kind of tokenizer, the tokens "Yes" and "No" are read from). GIT's checkpoints ship BERT's uncased
# WordPiece vocabulary ("Yes" is read as "yes"); LLaVA-1.5's Llama 2 SentencePiece ("▁Yes" after "ASSISTANT:");
# Llama 3 / Qwen byte-level BPE ("ĠYes" after a space, "Yes" after a newline).
TOKENIZER_KINDS = {
    "git-wordpiece-uncased": (_git_model, ["yes"], ["no"]),
    "llava-sentencepiece": (lambda folder: build_tiny_vlm(folder, tokenizer="sentencepiece"), ["▁Yes"], ["▁No"]),
    "llava-byte-bpe": (build_tiny_vlm, ["Yes", "ĠYes"], ["No", "ĠNo"]),
    "qwen2-vl-byte-bpe": (build_tiny_qwen2_vl, ["Yes", "ĠYes"], ["No", "ĠNo"]),
}


def _own_answer(scorer, image, text):
    """The model alone on one prompt, as its own recipe feeds it (without an end token the tokenizer appends, as
    GIT's VQA recipe feeds no [SEP]): log P(answer) of the yes and no tokens at its last position."""
    inputs = dict(scorer.processor(images=[image], text=[scorer.render(text)], return_tensors="pt"))
    k = len(scorer.appended)
    if k and tuple(inputs["input_ids"][0, -k:].tolist()) == scorer.appended:
        inputs["input_ids"] = inputs["input_ids"][:, :-k]
        if "attention_mask" in inputs:
            inputs["attention_mask"] = inputs["attention_mask"][:, :-k]
    with torch.inference_mode():
        logp = torch.log_softmax(scorer.model(**inputs).logits[0, -1].float(), -1)
    return float(torch.logsumexp(logp[scorer.yes_ids], -1)), float(torch.logsumexp(logp[scorer.no_ids], -1))


@pytest.mark.parametrize("kind", sorted(TOKENIZER_KINDS))
def test_each_tokenizer_kind_reads_the_answer_from_its_own_tokens(kind, tmp_path):
    """An uncased WordPiece GIT is scored (it was refused: "no single token for 'Yes'", as its decode gives "yes"),
    with "yes"/"no" as the answer tokens; each kind's scores equal the model's own next-token distribution."""
    build, yes, no = TOKENIZER_KINDS[kind]
    scorer = load_scorer(str(build(tmp_path / kind)), family="vqascore")
    assert sorted(scorer.preprocessing["yes_tokens"]) == sorted(yes)
    assert sorted(scorer.preprocessing["no_tokens"]) == sorted(no)
    images = tiny_images(2, size=(32, 32))
    texts = ["a dog", "There are 4 cats on the sofa."]
    items = [Item(id=str(k), images=(im,), texts=tuple(texts), gold=[[1, 0]]) for k, im in enumerate(images)]
    res = Engine(scorer, batch_size=4, progress=False).score(items)
    ref = np.array([[_own_answer(scorer, im, t) for t in texts] for im in images])  # (2, 2, [log yes, log no])
    np.testing.assert_allclose(np.stack([s[0] for s in res.scores]), ref[..., 0], rtol=1e-4,
                               atol=1e-5 * max(1.0, np.abs(ref[..., 0]).max()))
    np.testing.assert_allclose(np.stack([p[0] for p in res.probabilities]), 1 / (1 + np.exp(ref[..., 1] - ref[..., 0])),
                               rtol=1e-4, atol=1e-5)


def test_a_cased_tokenizer_still_reads_only_yes(tmp_path):
    """A cased vocabulary that has "yes" and "Yes" as two tokens reads "Yes" only (VQAScore's answer)."""
    from transformers import AutoTokenizer

    from vlprobe.scorers.vqascore import answer_token_ids

    tok = AutoTokenizer.from_pretrained(str(build_tiny_vlm(tmp_path / "vlm", tokenizer="sentencepiece")))
    assert tok.convert_ids_to_tokens(tok.encode("yes", add_special_tokens=False)) == ["▁yes"]
    assert tok.convert_ids_to_tokens(answer_token_ids(tok, "Yes")) == ["▁Yes"]
