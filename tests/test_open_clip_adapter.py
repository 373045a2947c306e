"""docs/models.md's open_clip adapter, run as written: the block is read from the page (so the docs cannot drift),
executed, and its scorer, on a tiny random open_clip model saved as a ``local-dir:`` folder, scored through vlprobe's
engine against the model's own forward output (``exp(logit_scale) * image_features @ text_features.T``)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch
from tiny_models import tiny_images

from vlprobe.engine import Engine
from vlprobe.items import Item

open_clip = pytest.importorskip("open_clip", reason="open_clip_torch is not installed (pip install open_clip_torch)")

TEXTS = ("a dog", "There are 4 cats on the sofa and a man is riding a horse.", "the red ball is to the left", "Yes")


def _adapter_block(repo_root) -> str:
    page = (repo_root / "docs" / "models.md").read_text()
    section = page[page.index("### open_clip models"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.fixture(scope="module")
def tiny_open_clip(tmp_path_factory):
    from safetensors.torch import save_file

    cfg = {"embed_dim": 16, "vision_cfg": {"image_size": 32, "layers": 2, "width": 32, "patch_size": 8, "head_width": 16},
           "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 2}}
    torch.manual_seed(0)
    model = open_clip.CLIP(**cfg)
    folder = tmp_path_factory.mktemp("open_clip")
    (folder / "open_clip_config.json").write_text(json.dumps({"model_cfg": cfg, "preprocess_cfg": {}}))
    save_file(model.state_dict(), folder / "open_clip_model.safetensors")
    return folder


def test_the_documented_open_clip_adapter_scores_as_the_model_does(repo_root, tiny_open_clip):
    namespace: dict = {}
    exec(compile(_adapter_block(repo_root), "docs/models.md (open_clip adapter)", "exec"), namespace)
    scorer = namespace["OpenCLIPScorer"](f"local-dir:{tiny_open_clip}")
    assert scorer.model_sha256  # a local folder is cached under its content
    images = tiny_images(2, size=(40, 30)) + tiny_images(1, size=(24, 36))
    items = [Item(id=f"i{k}", images=(im,), texts=TEXTS, gold=[[1, 0, 0, 0]]) for k, im in enumerate(images)]
    got = np.concatenate(list(Engine(scorer, batch_size=3, progress=False).score(items).scores))

    model, preprocess = open_clip.create_model_from_pretrained(f"local-dir:{tiny_open_clip}")
    tokenizer = open_clip.get_tokenizer(f"local-dir:{tiny_open_clip}")
    with torch.no_grad():
        # CLIP.forward: (normalised image features, normalised text features, exp(logit_scale))
        image_features, text_features, logit_scale = model(torch.stack([preprocess(im) for im in images]),
                                                           tokenizer(list(TEXTS)))[:3]
        want = (logit_scale * image_features @ text_features.T).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(want).max())))
    assert np.ptp(want) > 1e-4


def test_vlprobe_evaluate_takes_the_adapter(repo_root, tiny_open_clip, folder):
    import vlprobe

    namespace: dict = {}
    exec(compile(_adapter_block(repo_root), "docs/models.md (open_clip adapter)", "exec"), namespace)
    res = vlprobe.evaluate(model=namespace["OpenCLIPScorer"](f"local-dir:{tiny_open_clip}"), datasets=[str(folder)],
                           bootstrap=0, progress=False, cache_dir="none")
    assert res.to_pandas()["value"].notna().any()
