"""Fast (torchvision) and slow (PIL) image processors agree, per scorer family.

vlprobe runs the model's fast image processor when ``torchvision`` imports (transformers 5's
default) and the PIL one with ``exact_preprocessing=True``. Both resize with antialiasing, but
PIL resamples in 8-bit and torchvision in float, so pixel values differ by about one grey level
at most (one level is 1/255/std ~ 0.015 after CLIP's normalisation). Stated tolerances, on
640 x 480 JPEG "photos" (smooth gradients, noise and shapes, quality 90) and the synthetic
500 x 500 scene PNGs:

* pixel values: mean |fast - slow| <= 1e-3 and max |fast - slow| <= 0.05 (normalised units,
  whose range is about 4; 0.05 is about 3 grey levels). Measured with torchvision 0.28: max 0.015
  (CLIP, LLaVA's CLIP processor), 0.008 (SigLIP 2, ViLT), < 1e-3 (SigLIP, ALIGN, BLIP); means
  below 1e-5;
* scores: |fast - slow| <= 5e-3 x max(1, |slow|), for every family's score (measured: at most
  2.3e-4, CLIP).

The fast side needs torchvision: without it these tests are skipped. PyPI's torchvision does not
import beside the pinned CPU torch of ``.venv``, so ``make test`` runs this file (and the others
whose results depend on the image processor) again in ``.venv-vision``, which has torchvision.
What does not need torchvision is checked everywhere: the option is recorded in provenance and
the cache key, and ``exact_preprocessing=True`` always gives the PIL processor.
"""

from __future__ import annotations

import io
import random

import numpy as np
import pytest
from helpers import encode, jpeg_photo
from PIL import Image

from vlprobe.scorers import load_scorer
from vlprobe.scorers.base import DualScorer
from vlprobe.scorers.loading import torchvision_available

FAMILIES = ["tiny_clip_path", "tiny_siglip_path", "tiny_siglip2_path", "tiny_align_path", "tiny_blip_itm_path",
            "tiny_vilt_path", "tiny_vlm_path"]
TEXTS = ["a dog is running on the grass.", "the red ball is to the left of the blue box"]
needs_torchvision = pytest.mark.skipif(
    not torchvision_available(),
    reason="torchvision does not import here, so there is no fast image processor to compare with the PIL one "
           "(`make test` runs this file again in .venv-vision, which has torchvision)")


def scene_png(seed: int) -> Image.Image:
    from vlprobe.scenes.model import sample_scene
    from vlprobe.scenes.render import render_png

    return Image.open(io.BytesIO(render_png(sample_scene(random.Random(seed))))).convert("RGB")


@pytest.fixture(scope="module")
def real_looking_images():
    return [jpeg_photo(0), jpeg_photo(1), scene_png(0), scene_png(1)]


def _pixels(scorer, images):
    if isinstance(scorer, DualScorer):
        inputs = scorer.preprocess_images(images)
    else:
        inputs = scorer.preprocess_pairs(images, [TEXTS[0]] * len(images))
    return inputs["pixel_values"].float().numpy()


def _scorer_scores(scorer, images):
    if isinstance(scorer, DualScorer):
        img = scorer.encode_images(scorer.preprocess_images(images))
        return scorer.similarity(img, scorer.encode_texts(TEXTS))
    pairs = [(im, t) for im in images for t in TEXTS]
    return scorer.score_pairs(scorer.preprocess_pairs([p[0] for p in pairs], [p[1] for p in pairs])).scores


@needs_torchvision
@pytest.mark.parametrize("fixture", FAMILIES)
def test_fast_and_slow_processors_agree(request, fixture, real_looking_images):
    path = str(request.getfixturevalue(fixture))
    fast = load_scorer(path, exact_preprocessing=False)
    slow = load_scorer(path, exact_preprocessing=True)
    assert fast.preprocessing["image_backend"] == "torchvision", fast.preprocessing["image_processor"]
    assert slow.preprocessing["image_backend"] == "pil", slow.preprocessing["image_processor"]
    assert fast.cache_key() != slow.cache_key()  # never share cached scores

    pf, ps = _pixels(fast, real_looking_images), _pixels(slow, real_looking_images)
    assert pf.shape == ps.shape
    diff = np.abs(pf - ps)
    assert diff.mean() <= 1e-3 and diff.max() <= 0.05, (fixture, float(diff.mean()), float(diff.max()))

    sf, ss = np.asarray(_scorer_scores(fast, real_looking_images)), np.asarray(_scorer_scores(slow, real_looking_images))
    np.testing.assert_allclose(sf, ss, rtol=0, atol=5e-3 * max(1.0, float(np.abs(ss).max())))


@pytest.mark.parametrize("fixture", ["tiny_clip_path", "tiny_blip_itm_path", "tiny_vlm_path"])
def test_exact_preprocessing_takes_the_pil_processor_and_is_recorded(request, fixture):
    path = str(request.getfixturevalue(fixture))
    exact = load_scorer(path, exact_preprocessing=True)
    default = load_scorer(path)
    assert exact.preprocessing["image_backend"] == "pil"
    assert exact.preprocessing["image_processor"].endswith("Pil") or "Fast" not in exact.preprocessing["image_processor"]
    expected = "torchvision" if torchvision_available() else "pil"
    assert default.preprocessing["image_backend"] == expected
    # Which processor ran is part of the provenance and of the cache key.
    assert exact.describe()["preprocessing"]["image_backend"] == "pil"
    assert (exact.cache_key() == default.cache_key()) == (expected == "pil")


def test_text_only_family_accepts_the_option(tiny_gpt2_path):
    scorer = load_scorer(str(tiny_gpt2_path), exact_preprocessing=True)
    assert scorer.family == "causal_lm"


def _encoded_cases():
    rng = np.random.default_rng(0)
    arr = (rng.random((48, 64, 3)) * 255).astype(np.uint8)

    return {
        "jpeg photo": encode(jpeg_photo(2), "JPEG", quality=90),
        "jpeg rgb 4:4:4": encode(Image.fromarray(arr), "JPEG", quality=95, subsampling=0),
        "jpeg rgb 4:2:0": encode(Image.fromarray(arr), "JPEG", subsampling=2),
        "jpeg progressive": encode(Image.fromarray(arr), "JPEG", progressive=True),
        "jpeg grey": encode(Image.fromarray(arr[..., 0]), "JPEG"),
        "jpeg cmyk": encode(Image.fromarray(arr).convert("CMYK"), "JPEG"),
        "png rgb": encode(Image.fromarray(arr), "PNG"),
        "png grey": encode(Image.fromarray(arr[..., 0]), "PNG"),
        "png rgba": encode(Image.fromarray(np.dstack([arr, arr[..., :1]])), "PNG"),
        "png palette": encode(Image.fromarray(arr).quantize(16), "PNG"),
        "png 16-bit grey": encode(Image.fromarray(arr[..., 0].astype(np.uint16) * 257), "PNG"),
        "webp": encode(Image.fromarray(arr), "WEBP"),
        "gif": encode(Image.fromarray(arr), "GIF"),
        "scene png": encode(scene_png(3), "PNG"),
    }


@needs_torchvision
def test_tensor_decode_gives_the_pil_pixels():
    """For a fast processor the engine decodes to (3, H, W) uint8 tensors (torchvision.io for JPEG
    and PNG in RGB or grey, PIL for the rest): the very pixels to_pil gives, for every format and
    mode; a truncated file is the same named ImageError."""
    import torch

    from vlprobe.dataset.images import ImageError, to_pil, to_tensor

    for name, data in _encoded_cases().items():
        for image in (data, {"bytes": data, "path": None}):
            got = to_tensor(image, where="row 3")
            want = torch.from_numpy(np.array(to_pil(image))).permute(2, 0, 1)
            assert got.dtype == torch.uint8 and got.shape == want.shape, name
            assert torch.equal(got, want), (name, int((got.int() - want.int()).abs().max()))
    pil = jpeg_photo(4)
    assert torch.equal(to_tensor(pil), torch.from_numpy(np.array(pil)).permute(2, 0, 1))
    whole = _encoded_cases()["jpeg photo"]
    for cut in (len(whole) // 2, 20):
        with pytest.raises(ImageError, match="row 3: corrupt or unreadable image"):
            to_tensor({"bytes": whole[:cut], "path": "photo.jpg"}, where="row 3")


@needs_torchvision
@pytest.mark.parametrize("fixture", ["tiny_clip_path", "tiny_blip_itm_path", "tiny_vlm_path"])
def test_engine_feeds_a_fast_processor_tensors_with_the_same_scores(request, fixture, real_looking_images):
    """The engine decodes to tensors for a fast processor and to PIL for a slow one; a fast scorer's
    scores through the engine equal the same scorer on PIL images (identical pixels; float tolerance)."""
    from vlprobe.dataset.images import to_pil, to_tensor
    from vlprobe.dataset.items import Item
    from vlprobe.scoring.engine import Engine, decoder

    path = str(request.getfixturevalue(fixture))
    fast = load_scorer(path)
    assert decoder(fast) is to_tensor and decoder(load_scorer(path, exact_preprocessing=True)) is to_pil
    blobs = []
    for im in real_looking_images:
        blobs.append({"bytes": encode(im, "JPEG" if im.size == (640, 480) else "PNG", quality=90), "path": None})
    items = [Item(f"i{k}", [b], TEXTS, np.array([[True, False]])) for k, b in enumerate(blobs)]
    got = np.stack(Engine(fast, batch_size=3, progress=False).score(items).scores)[:, 0, :]
    want = np.asarray(_scorer_scores(fast, [to_pil(b) for b in blobs])).reshape(len(blobs), len(TEXTS))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(want).max())))
