"""The ``open_clip`` scorer family (vlprobe/scorers/open_clip.py) on tiny random-weight open_clip models, one per kind
of architecture the field scores (a ViT, its QuickGELU config, a timm ConvNeXt, a SigLIP with a timm ViT, a logit
bias and a Hugging Face tokenizer), each made with ``open_clip.create_model(ARCH, pretrained=None)`` at small widths,
saved in the Hub layout (``open_clip_config.json`` + safetensors, as open_clip's push_to_hf_hub writes them), put in
a Hugging Face cache as a Hub repository would be, and loaded back as ``hf-hub:ORG/REPO`` through open_clip's own Hub
path. Scores are compared with the model's own ``encode_image``/``encode_text`` logits."""

from __future__ import annotations

import copy
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from tiny_models import _byte_bpe, _wrap, tiny_images

from vlprobe.dataset.items import Item
from vlprobe.errors import ModelError
from vlprobe.scorers import load_scorer
from vlprobe.scorers import open_clip as family
from vlprobe.scorers.loading import family_of_name
from vlprobe.scoring.engine import Engine

open_clip = pytest.importorskip("open_clip", reason="open_clip_torch is not installed (pip install 'vlprobe[open_clip]')")

COMMIT = "0123456789abcdef0123456789abcdef01234567"
# kind -> (open_clip config, timm trunk standing in for its big one, image size, preprocessing)
ARCHS = {
    "vit": ("ViT-B-32", None, 32, {"resize_mode": "shortest", "interpolation": "bicubic"}),
    "quickgelu": ("ViT-B-32-quickgelu", None, 32, {"resize_mode": "shortest", "interpolation": "bilinear"}),
    "convnext": ("convnext_base", "test_convnext", 40, {"resize_mode": "longest", "interpolation": "bicubic",
                                                        "fill_color": 0}),
    "siglip": ("ViT-B-16-SigLIP", "test_vit", 160, {"resize_mode": "squash", "interpolation": "bicubic",
                                                    "mean": (0.5, 0.5, 0.5), "std": (0.5, 0.5, 0.5)}),
}
# a gold caption, a foil, the caption again in other case and punctuation (SigLIP's tokenizer canonicalizes it),
# two texts alike up to the tiny models' 24 tokens and different after, and the caption once more
LONG = "a small dog runs " * 8
TEXTS = ("a dog on the grass", "the red ball is left of the box", "A dog on the grass.", LONG + "then sits",
         LONG + "then jumps", "a dog on the grass")


def repo_id(kind: str) -> str:
    return f"vlprobe-test/tiny-open-clip-{kind}"


def build(kind: str, folder: Path, seed: int = 0) -> Path:
    """A tiny random-weight open_clip model of ``kind`` saved in the Hub layout in ``folder``."""
    from open_clip.push_to_hf_hub import save_config_for_hf
    from safetensors.torch import save_file

    arch, trunk, size, preprocess = ARCHS[kind]
    cfg = copy.deepcopy(open_clip.get_model_config(arch))
    cfg["embed_dim"] = 16
    vision, text = cfg["vision_cfg"], cfg["text_cfg"]
    if trunk:
        vision.update(timm_model_name=trunk, image_size=size)
        if vision.get("timm_proj") == "none":  # the trunk's features are the embedding (SigLIP)
            import timm

            cfg["embed_dim"] = timm.create_model(trunk).num_features
    else:
        vision.update(layers=2, width=32, head_width=16, image_size=size, patch_size=8)
    text.update(width=32, heads=2, layers=2, context_length=24)
    folder.mkdir(parents=True, exist_ok=True)
    if kind == "siglip":  # a Hugging Face tokenizer, saved beside the weights, named by the repository
        tok = _wrap(_byte_bpe(["<pad>", "</s>"]), bos=None, eos="</s>", pad="<pad>", add_bos=False, add_eos=True,
                    model_max_length=16)
        tok.save_pretrained(folder)
        text.update(vocab_size=len(tok), context_length=16, hf_tokenizer_name=repo_id(kind), pad_id=tok.pad_token_id,
                    eos_id=tok.eos_token_id)
    torch.manual_seed(seed)
    model = open_clip.create_model(arch, pretrained=None, force_preprocess_cfg=preprocess,
                                   **{k: cfg[k] for k in ("embed_dim", "vision_cfg", "text_cfg")})
    with torch.no_grad():  # a logit scale of its own, so that the scale is read, not assumed
        model.logit_scale.fill_(2.0 + 0.1 * seed)
    save_config_for_hf(model, folder / family.CONFIG_FILE, model_config=cfg)
    save_file(model.state_dict(), folder / "open_clip_model.safetensors")
    return folder


def into_hub_cache(folder: Path, cache: Path, repo: str) -> None:
    """``folder``'s files as the Hugging Face cache holds a downloaded repository (refs/main -> snapshot)."""
    root = cache / f"models--{repo.replace('/', '--')}"
    (root / "refs").mkdir(parents=True, exist_ok=True)
    (root / "refs" / "main").write_text(COMMIT)
    shutil.copytree(folder, root / "snapshots" / COMMIT, dirs_exist_ok=True)
    # the repository has no transformers config.json: the cache remembers that, as a download leaves it
    (root / ".no_exist" / COMMIT).mkdir(parents=True, exist_ok=True)
    (root / ".no_exist" / COMMIT / "config.json").touch()


@pytest.fixture(scope="module")
def hub(tmp_path_factory) -> Path:
    """A Hugging Face cache holding the four tiny models as Hub repositories (offline: the tests' HF_HUB_OFFLINE=1)."""
    cache = tmp_path_factory.mktemp("hf-hub-cache")
    for kind in ARCHS:
        into_hub_cache(build(kind, tmp_path_factory.mktemp(kind)), cache, repo_id(kind))
    return cache


@pytest.fixture
def in_hub(hub, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub))
    return hub


def own_logits(name: str, images, texts) -> tuple[np.ndarray, dict]:
    """The model's own logits, as open_clip's users compute them (its own preprocess, tokenizer and forward), and
    its preprocessing config."""
    model, preprocess = open_clip.create_model_from_pretrained(name)
    tokenizer = open_clip.get_tokenizer(name)
    with torch.no_grad():
        out = model(torch.stack([preprocess(im) for im in images]), tokenizer(list(texts)))
        image, text, scale = out[:3]
        bias = out[3] if len(out) > 3 else 0.0
        return (scale * image @ text.T + bias).numpy(), dict(model.visual.preprocess_cfg)


def engine_scores(scorer, images) -> np.ndarray:
    items = [Item(id=f"i{k}", images=(im,), texts=TEXTS, gold=[[1, 0, 0, 0, 0, 0]]) for k, im in enumerate(images)]
    return np.concatenate(list(Engine(scorer, batch_size=3, progress=False).score(items).scores))


IMAGES = tiny_images(2, size=(40, 30)) + tiny_images(1, size=(24, 36))


@pytest.mark.parametrize("kind", ["vit", "quickgelu", pytest.param("convnext", marks=pytest.mark.slow),
                                  pytest.param("siglip", marks=pytest.mark.slow)])
def test_each_architecture_scores_its_own_logits(in_hub, kind, capsys):
    name = f"hf-hub:{repo_id(kind)}"
    assert family_of_name(name) == "open_clip"
    want, cfg = own_logits(name, IMAGES, TEXTS)
    exact = load_scorer(name, exact_preprocessing=True)
    got = engine_scores(exact, IMAGES)
    diff = float(np.abs(got - want).max())
    print(f"{kind}: max |vlprobe - own logits| = {diff:.3g} (exact preprocessing)")
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(want).max())))
    assert np.ptp(want) > 1e-3  # the scores differ: the comparison can fail
    # identical model inputs tie exactly: the caption twice, and texts alike up to the 24-token limit
    assert (got[:, 0] == got[:, 5]).all()
    if kind != "siglip":
        assert (got[:, 3] == got[:, 4]).all()
    else:  # SigLIP's tokenizer canonicalizes case and punctuation: one input to the model
        assert (got[:, 0] == got[:, 2]).all()
    prep = exact.preprocessing
    assert prep["image_backend"] == "pil" and exact.revision == COMMIT and exact.model_sha256 is None
    assert (prep["resize_mode"], prep["interpolation"]) == (cfg["resize_mode"], cfg["interpolation"])
    assert prep["image_mean"] == list(cfg["mean"]) and prep["image_size"] == list(cfg["size"])
    assert prep["model_config"] == f"open_clip_config.json of {repo_id(kind)}"
    assert prep["score"].endswith("logit_bias") == (kind == "siglip")
    quick = kind == "quickgelu"
    assert prep["quick_gelu"] is quick and prep["model_cfg"]["quick_gelu"] is quick
    assert ("QuickGELU" in prep["activation"]["text"]) is quick
    # the default: open_clip's transform on uint8 tensors (what runs on a GPU), within a grey level of PIL's
    fast = load_scorer(name)
    assert fast.preprocessing["image_backend"] == "torchvision"
    pix_fast, pix_pil = fast.preprocess_images(IMAGES), exact.preprocess_images(IMAGES)
    pixels = float((pix_fast - pix_pil).abs().max())
    scores = float(np.abs(engine_scores(fast, IMAGES) - want).max())
    print(f"{kind}: tensor path vs PIL: max pixel difference {pixels:.3g}, max logit difference {scores:.3g}")
    assert pixels <= 0.05 and scores <= 5e-3 * max(1.0, float(np.abs(want).max()))


def test_the_resize_is_pil_s_within_a_grey_level_on_either_path():
    """The tensor path's resize against PIL's, for shrinking and enlarging, bicubic and bilinear, on the CPU's uint8
    kernel and on the float path a GPU takes (run here on the CPU: the same arithmetic)."""
    from torchvision.transforms import InterpolationMode
    from torchvision.transforms.functional import pil_to_tensor

    from vlprobe.scorers.open_clip import _output_size, _resize

    worst = {}
    for image in tiny_images(2, size=(40, 30)) + tiny_images(1, size=(300, 220)):
        tensor = pil_to_tensor(image)
        for mode in (InterpolationMode.BICUBIC, InterpolationMode.BILINEAR):
            for target in (24, 32, 64):
                want = pil_to_tensor(image.resize(tuple(reversed(_output_size(image.height, image.width, target))),
                                                  {InterpolationMode.BICUBIC: 3, InterpolationMode.BILINEAR: 2}[mode]))
                for float_path in (False, True):
                    got = _resize(tensor, _output_size(image.height, image.width, target), mode, float_path=float_path)
                    worst[float_path] = max(worst.get(float_path, 0), int((got.int() - want.int()).abs().max()))
    print(f"max |tensor resize - PIL| in grey levels: uint8 path {worst[False]}, float path {worst[True]}")
    assert worst[False] <= 1 and worst[True] <= 1


def test_local_dir_and_plain_folder_are_the_hub_model(in_hub, tmp_path):
    """The same files as local-dir:PATH, and as a plain folder (detected by its open_clip_config.json), score as the
    Hub repository does; a local folder is keyed by its content, so retrained weights never read old scores."""
    folder = build("vit", tmp_path / "vit")
    hub_scores = engine_scores(load_scorer(f"hf-hub:{repo_id('vit')}"), IMAGES)
    for name in (f"local-dir:{folder}", str(folder)):
        assert family_of_name(name) == "open_clip"
        scorer = load_scorer(name)
        assert scorer.family == "open_clip" and scorer.revision is None and scorer.model_sha256
        np.testing.assert_array_equal(engine_scores(scorer, IMAGES), hub_scores)
    before = load_scorer(f"local-dir:{folder}").cache_key()
    build("vit", folder, seed=1)
    assert load_scorer(f"local-dir:{folder}").cache_key() != before


def test_one_tokenization_per_text(in_hub):
    """A text's key is its token ids up to the padding, and the engine encodes texts from those ids: bit for bit what
    encode_texts gives from the texts."""
    for kind in ("vit", "siglip"):
        scorer = load_scorer(f"hf-hub:{repo_id(kind)}")
        ids = scorer.seen_texts(list(TEXTS))
        assert scorer.encodes_seen_ids() and all(len(row) <= scorer.text_limit() for row in ids)
        assert len(ids[3]) == scorer.text_limit() == scorer.max_length  # truncated at the context length
        assert len(ids[0]) < scorer.text_limit()
        np.testing.assert_array_equal(scorer.encode_seen_ids(ids), scorer.encode_texts(list(TEXTS)))


@pytest.fixture
def copies(tmp_path, monkeypatch) -> Path:
    """$VLPROBE_OPEN_CLIP_MODELS with a tiny ViT registered as ViT-B-32/openai."""
    home = tmp_path / "open_clip_models"
    build("vit", home / "ViT-B-32" / "openai")
    monkeypatch.setenv(family.MODELS_ENV, str(home))
    return home


def test_open_clip_name_offline_through_a_registered_copy(copies):
    scorer = load_scorer("open_clip:ViT-B-32/openai")
    assert scorer.model_id == "open_clip:ViT-B-32/openai" and scorer.preprocessing["checkpoint"] == "ViT-B-32/openai"
    assert "registered" in scorer.preprocessing["source"] and scorer.model_sha256
    # keyed by content, not path: the same files elsewhere read the same cached scores
    moved = copies.parent / "elsewhere"
    shutil.copytree(copies, moved / "models")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(family.MODELS_ENV, str(moved / "models"))
        assert load_scorer("open_clip:ViT-B-32/openai").cache_key() == scorer.cache_key()
    want = own_logits(f"local-dir:{copies / 'ViT-B-32' / 'openai'}", IMAGES, TEXTS)[0]
    np.testing.assert_allclose(engine_scores(load_scorer("open_clip:ViT-B-32/openai", exact_preprocessing=True),
                                             IMAGES), want, rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(want).max())))


def test_score_evaluate_and_probe_take_open_clip_names(copies, folder, tmp_path):
    """The Python API and `vlprobe probe` take an open_clip name as they take a Hub id (no --family)."""
    import vlprobe
    from vlprobe import probing
    from vlprobe.cli import main

    name = "open_clip:ViT-B-32/openai"
    scorer = load_scorer(name)
    S = vlprobe.score(name, IMAGES, list(TEXTS), cache_dir="none")
    np.testing.assert_allclose(S, scorer.similarity(scorer.encode_images(scorer.preprocess_images(IMAGES)),
                                                    scorer.encode_texts(list(TEXTS))), rtol=1e-5, atol=1e-5)
    res = vlprobe.evaluate(model=name, datasets=[str(folder)], bootstrap=0, progress=False, cache_dir="none")
    assert res.to_pandas()["value"].notna().any()
    assert main(["build", "travlr", "--out", str(tmp_path / "travlr"), "--size", "tiny", "--configs", "spatiality",
                 "--split-sizes", "train=12,validation=6,test_ind=6,test_ood=6"]) in (0, None)
    run = probing.probe(name, str(tmp_path / "travlr"), "spatiality", train_sizes=[8], bootstrap=0, progress=False,
                        cache_dir="none")
    assert run.provenance["model"]["family"] == "open_clip" and run.rows


@pytest.mark.parametrize("name, says", [
    ("open_clip:ViT-B-32/laion2b_s34b_b79", ["open_clip:ViT-B-32/laion2b_s34b_b79k", "its tags are"]),
    ("open_clip:ViT-B-23/openai", ["no architecture 'ViT-B-23'", "open_clip:ViT-B-32/openai"]),
    ("open_clip:ViT-B-32", ["open_clip:ARCH/PRETRAINED"]),
    ("local-dir:/no/such/folder", ["there is no folder"]),
    ("hf-hub:laion", ["ORG/REPO"]),
    ("hf-hub:vlprobe-test/not-cached", ["HF_HUB_OFFLINE", "no copy"]),
])
def test_bad_names_fail_in_one_line_naming_close_ones(name, says, capsys):
    from vlprobe.cli import main

    code = main(["evaluate", "--dataset", "winoground_style", "--model", name, "--no-progress", "--cache-dir", "none"])
    err = capsys.readouterr().err.strip()
    assert code != 0 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert all(s in err for s in says), err


def test_a_folder_without_open_clip_config_is_refused(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelError, match="no open_clip_config.json"):
        load_scorer(f"local-dir:{tmp_path / 'empty'}")
    assert family_of_name(str(tmp_path / "empty")) is None  # a folder is open_clip's only with that file


def test_missing_package_is_one_line(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "open_clip" else real(n, *a))
    with pytest.raises(ModelError, match=r"pip install 'vlprobe\[open_clip\]'"):
        family.check_name("open_clip:ViT-B-32/openai")


@pytest.mark.parametrize("arch, tag, quick, warned", [
    ("ViT-B-32", "openai", True, False),  # open_clip < 2.29 loaded openai weights with QuickGELU whatever the config
    ("ViT-B-32", "laion400m_e32", False, True),  # GELU, as open_clip builds it: the weights' QuickGELU is named
    ("ViT-B-32-quickgelu", "laion400m_e32", True, False),
    ("ViT-B-32", "laion2b_s34b_b79k", False, False),
])
def test_the_activation_open_clip_built_for_each_published_name(monkeypatch, capsys, arch, tag, quick, warned):
    """``open_clip:ARCH/PRETRAINED`` from open_clip's table builds the activation the published numbers were measured
    with; the weights are replaced by a tiny model's (no download), the rest is the real path."""
    calls, real = {}, open_clip.create_model

    def create_model(name, pretrained=None, force_quick_gelu=False, **kw):
        calls.update(name=name, pretrained=pretrained, force_quick_gelu=force_quick_gelu)
        cfg = copy.deepcopy(open_clip.get_model_config(name))
        cfg["embed_dim"] = 16
        cfg["vision_cfg"].update(layers=1, width=32, head_width=16, image_size=32, patch_size=8)
        cfg["text_cfg"].update(width=32, heads=2, layers=1)
        return real(name, pretrained=None, force_quick_gelu=force_quick_gelu,
                                      **{k: cfg[k] for k in ("embed_dim", "vision_cfg", "text_cfg")})

    monkeypatch.setattr(open_clip, "create_model", create_model)
    scorer = load_scorer(f"open_clip:{arch}/{tag}")
    assert calls == {"name": arch, "pretrained": tag, "force_quick_gelu": arch == "ViT-B-32" and tag == "openai"}
    prep = scorer.preprocessing
    assert prep["checkpoint"] == f"{arch}/{tag}" and prep["model_config"] == arch and prep["quick_gelu"] is quick
    assert ("QuickGELU" in prep["activation"]["image"]) is quick
    assert prep["weights"] == open_clip.get_pretrained_cfg(arch, tag)["hf_hub"]
    err = capsys.readouterr().err
    assert ("weights were trained with QuickGELU" in err) is warned
    if warned:
        assert f"open_clip:ViT-B-32-quickgelu/{tag}" in err and len(err.strip().splitlines()) == 1


def test_names_check_and_space_model_box_take_open_clip_names(copies, tmp_path, clean_space_env):
    from vlprobe.demo.settings import Settings
    from vlprobe.names import check_model

    check_model("open_clip:ViT-B-32/openai")
    with pytest.raises(ModelError, match="did you mean"):
        check_model("open_clip:ViT-B-32/openia")
    with pytest.raises(ModelError, match="no revision"):
        check_model("open_clip:ViT-B-32/openai", revision="main")
    assert Settings(root=tmp_path).resolve_model("open_clip:ViT-B-32/openai") == "open_clip:ViT-B-32/openai"


@pytest.mark.slow
@pytest.mark.shared_data
def test_evaluate_sugar_crepe_with_open_clip_vit_b_32_openai(shared_data, copies, tmp_path, monkeypatch, capsys):
    """``vlprobe evaluate --dataset sugar_crepe --model open_clip:ViT-B-32/openai`` end to end, offline: the name
    loads the registered copy, the run records the family and checkpoint, and the headline is the authors' rule
    (pos > neg) on the stored scores."""
    import pyarrow.parquet as pq
    from helpers import jpeg
    from helpers_data import run_build

    from vlprobe.builders import sugar_crepe
    from vlprobe.cli import main

    records = json.loads((shared_data / "sugar_crepe" / "swap_obj.json").read_text()).values()
    (tmp_path / "images" / "val2017").mkdir(parents=True)
    for name in {r["filename"] for r in records}:
        (tmp_path / "images" / "val2017" / name).write_bytes(jpeg(name, size=(48, 40)))
    run_build(sugar_crepe.SugarCrepe(), "--annotations", shared_data / "sugar_crepe", "--images", tmp_path / "images",
              "--configs", "swap_obj", "--out", tmp_path / "work" / "sugar_crepe")
    monkeypatch.chdir(tmp_path / "work")
    code = main(["evaluate", "--dataset", "sugar_crepe", "--config", "swap_obj", "--model", "open_clip:ViT-B-32/openai",
                 "--limit", "20", "--bootstrap", "0", "--no-progress", "--cache-dir", "none", "--out", str(tmp_path / "run")])
    assert code == 0, capsys.readouterr().err
    doc = json.loads((tmp_path / "run" / "results.json").read_text())
    model = doc["provenance"]["model"]
    assert model["family"] == "open_clip" and model["model_id"] == "open_clip:ViT-B-32/openai"
    assert model["preprocessing"]["checkpoint"] == "ViT-B-32/openai"
    rows = pq.read_table(tmp_path / "run" / "scores.parquet").to_pylist()
    entry = next(e for e in doc["results"] if e["config"] == "swap_obj")
    right = [np.asarray(r["scores"])[0, 0] > np.asarray(r["scores"])[0, 1] for r in rows if r["config"] == "swap_obj"]
    assert len(right) == 20 and entry["metrics"]["acc_r"] == pytest.approx(np.mean(right))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q", "-p", "no:xdist"]))
