"""VQAScore: batched pairs (one forward pass per batch, each image preprocessed once) against one
pair per forward pass.

On BLA-shaped items (1 image x 4 texts; 640 x 480 JPEGs, each item its own image) and the tiny LLaVA
of the tests (``tests/tiny_models.py``: ``LlavaForConditionalGeneration`` built from a config, CLIP
vision tower at 32 px, 2-layer Llama; random weights, nothing downloaded), in one process it times:

(a) the loop: for every (image, text) pair, the processor on that one pair and one ``model(...)``
    call, reading log P(Yes) at the last position (each item's image decoded once, which favours
    the loop);
(b) the engine (:class:`vlprobe.scoring.engine.Engine`, no cache, images decoded in the main process):
    pairs in batches of ``--batch-size``, padded on the right, each image preprocessed once for its
    4 texts.

Both are warmed up first (untimed) and run ``--repeats`` times, best kept. It checks that the
scores agree (max |difference| of log P(Yes)). Usage::

    .venv/bin/python scripts/bench_vqascore.py [--items 60] [--batch-size 32] [--repeats 2] [--exact-preprocessing]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests"))


def loop(scorer, items):
    """One pair per forward pass, the way a reference script calls a VLM."""
    import torch

    from vlprobe.dataset.images import to_pil

    out = []
    with torch.inference_mode():
        for item in items:
            image = to_pil(item.images[0])
            row = []
            for text in item.texts:
                inputs = scorer.processor(images=[image], text=[scorer.render(text)], return_tensors="pt")
                logp = torch.log_softmax(scorer.model(**inputs).logits[0, -1].float(), -1)
                row.append(float(torch.logsumexp(logp[scorer.yes_ids], -1)))
            out.append(np.array([row], dtype=np.float32))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--items", type=int, default=60)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--exact-preprocessing", action="store_true", help="the PIL image processor even with torchvision")
    args = p.parse_args(argv)

    import torch
    from bench_scoring import make_items
    from tiny_models import build_tiny_vlm

    from vlprobe.scorers import load_scorer
    from vlprobe.scoring.engine import Engine

    items = make_items(args.items)
    pairs = sum(it.m * it.n for it in items)
    with tempfile.TemporaryDirectory() as tmp:
        scorer = load_scorer(str(build_tiny_vlm(Path(tmp) / "tiny_vlm")), device="cpu",
                             exact_preprocessing=args.exact_preprocessing)
    print(f"{len(items)} BLA-shaped items (1 image x 4 texts, 640 x 480 JPEG), {pairs} pairs; tiny LLaVA "
          f"(random weights); image processor {scorer.preprocessing['image_processor']} "
          f"({scorer.preprocessing['image_backend']}); torch {torch.__version__}, {torch.get_num_threads()} threads; "
          f"batch size {args.batch_size}; best of {args.repeats}")

    engine = Engine(scorer, batch_size=args.batch_size, num_workers=0, cache=None, progress=False)
    loop(scorer, items[:2])  # warm-up
    engine.score(items[:10])

    t_loop = t_engine = float("inf")
    for _ in range(args.repeats):
        t = time.perf_counter()
        ref = loop(scorer, items)
        t_loop = min(t_loop, time.perf_counter() - t)
        t = time.perf_counter()
        res = engine.score(items)
        t_engine = min(t_engine, time.perf_counter() - t)

    diff = max(float(np.abs(a - b).max()) for a, b in zip(res.scores, ref))
    scale = max(float(np.abs(r).max()) for r in ref)
    print(f"(a) one pair per forward : {t_loop:7.2f} s  {pairs / t_loop:8.1f} pairs/s")
    print(f"(b) batched, image reused: {t_engine:7.2f} s  {pairs / t_engine:8.1f} pairs/s")
    print(f"speed-up: {t_loop / t_engine:.2f}x (target >= 3x)")
    print(f"max |batched - loop| log P(Yes): {diff:.2e} (largest |log P(Yes)| {scale:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
