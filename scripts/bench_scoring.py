"""How much faster is the engine than the per-pair loop of the reference codes, and how close to the floor?

In one process, on the same BLA-shaped items (1 image x 4 texts; 640 x 480 JPEGs, each item its own
image, as in BLA) and the same ViT-B/32-shaped CLIP (``CLIPConfig()`` defaults: 12-layer ViT-B/32
vision tower at 224 px, 12-layer 512-wide text tower; random weights, nothing downloaded; a word-level
tokenizer built from the items' texts), it times:

(a) the per-pair loop: for every (image, text) pair, the processor and one ``model(...)`` call
    returning ``logits_per_image``, as the VALSE/BLA/Winoground reference scripts do (each item's
    image is decoded once, which favours the loop);
(b) the engine (:class:`vlprobe.engine.Engine` with a fresh on-disk cache, so its writes are
    counted): unique images and texts encoded once, batched, images decoded in DataLoader workers;
(b') the engine again without a cache (what the SQLite writes cost);
(c) the floor: the same scorer's preprocess + encode calls on just the unique inputs, in batches,
    with nothing else (no hashing, no cache, no DataLoader).

Rates are (image, text) pairs scored per second (items x 4 / seconds). Every method is warmed up
first (untimed), because the first call at a new tensor shape pays one-off kernel set-up on CPU;
(b), (b') and (c) are interleaved and repeated, the best time kept, because on a shared machine the
load drifts. It also checks that the engine's scores equal the per-pair loop's logits, and times
the cache alone (commits of a batch of embeddings, a read back). Usage::

    .venv/bin/python scripts/bench_scoring.py [--items 120] [--batch-size 32] [--num-workers 0] [--repeats 2]
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def make_items(n: int, seed: int = 0):
    from PIL import Image, ImageDraw

    from vlprobe.items import Item

    rng = np.random.default_rng(seed)
    nouns = ["dog", "cat", "man", "woman", "boy", "girl", "horse", "bird", "car", "ball", "child", "chef"]
    verbs = ["chases", "pushes", "follows", "watches", "carries", "holds", "feeds", "paints"]
    items = []
    for i in range(n):
        im = Image.new("RGB", (640, 480), tuple(int(c) for c in rng.integers(0, 255, 3)))
        draw = ImageDraw.Draw(im)
        for _ in range(6):
            x, y = rng.integers(0, 560), rng.integers(0, 400)
            draw.ellipse([x, y, x + rng.integers(20, 80), y + rng.integers(20, 80)],
                         fill=tuple(int(c) for c in rng.integers(0, 255, 3)))
        buf = io.BytesIO()
        im.save(buf, format="JPEG", quality=90)
        a, b = rng.choice(nouns, 2, replace=False)
        v = rng.choice(verbs)
        texts = (f"the {a} {v} the {b} in picture {i}", f"the {b} is {v[:-1]}ed by the {a} in picture {i}",
                 f"the {b} {v} the {a} in picture {i}", f"the {a} is {v[:-1]}ed by the {b} in picture {i}")
        items.append(Item(id=str(i), images=({"bytes": buf.getvalue(), "path": f"img{i}.jpg"},), texts=texts,
                          gold=[[1, 1, 0, 0]], config="active_passive"))
    return items


def make_model(items):
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor, PreTrainedTokenizerFast

    words = sorted({w for it in items for t in it.texts for w in t.split()})
    vocab = {"<pad>": 0, "<unk>": 1, "<bos>": 2, "<eos>": 3, **{w: i + 4 for i, w in enumerate(words)}}
    raw = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    from tokenizers import processors

    raw.post_processor = processors.TemplateProcessing(single="<bos> $A <eos>", special_tokens=[("<bos>", 2), ("<eos>", 3)])
    tok = PreTrainedTokenizerFast(tokenizer_object=raw, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>",
                                  unk_token="<unk>", model_max_length=77)
    config = CLIPConfig()  # ViT-B/32 defaults
    config.text_config.bos_token_id, config.text_config.eos_token_id, config.text_config.pad_token_id = 2, 3, 0
    torch.manual_seed(0)
    model = CLIPModel(config).eval()
    processor = CLIPProcessor(image_processor=CLIPImageProcessor(), tokenizer=tok)
    return model, processor


def per_pair_loop(model, processor, items):
    import torch

    from vlprobe.images import to_pil

    out = []
    with torch.inference_mode():
        for item in items:
            image = to_pil(item.images[0])
            row = []
            for text in item.texts:
                inputs = processor(text=[text], images=[image], return_tensors="pt", padding=True)
                row.append(float(model(**inputs).logits_per_image[0, 0]))
            out.append(np.array([row], dtype=np.float32))
    return out


def floor(scorer, items, batch_size):
    from vlprobe.images import to_pil

    images = [it.images[0] for it in items]  # every item has its own image
    texts = list(dict.fromkeys(t for it in items for t in it.texts))
    for i in range(0, len(images), batch_size):
        scorer.encode_images(scorer.preprocess_images([to_pil(x) for x in images[i : i + batch_size]]))
    for i in range(0, len(texts), batch_size):
        scorer.encode_texts(texts[i : i + batch_size])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--items", type=int, default=120)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--num-workers", type=int, default=0)
    p.add_argument("--repeats", type=int, default=2, help="runs of (b), (b') and (c), interleaved; best kept (default 2)")
    args = p.parse_args(argv)

    import torch

    from vlprobe.cache import ScoreCache
    from vlprobe.engine import Engine
    from vlprobe.scorers.dual_encoder import DualEncoderScorer

    items = make_items(args.items)
    model, processor = make_model(items)
    scorer = DualEncoderScorer("bench/clip-vit-b32-random", model, processor, device="cpu", dtype="float32")
    pairs = sum(it.m * it.n for it in items)
    print(f"{len(items)} BLA-shaped items (1 image x 4 texts), {pairs} pairs; CLIP ViT-B/32 shape, random weights; "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads; batch size {args.batch_size}, "
          f"{args.num_workers} DataLoader workers; best of {args.repeats} for (b), (b'), (c)")

    # Untimed warm-up of every tensor shape each method will see: the first call at a new shape
    # pays seconds of one-off kernel set-up on CPU, which is not what is being compared.
    per_pair_loop(model, processor, items[:1])
    Engine(scorer, batch_size=args.batch_size, num_workers=0, cache=None, progress=False).score(items)

    t = time.perf_counter()
    ref = per_pair_loop(model, processor, items)
    t_loop = time.perf_counter() - t

    # (b), (b') and (c) are interleaved and repeated, best time kept: on a shared machine the load
    # drifts, and interleaving keeps the engine/floor ratio fair.
    t_engine = t_nocache = t_floor = float("inf")
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            t = time.perf_counter()
            with ScoreCache(tmp, scorer.cache_key()) as cache:  # a fresh cache: every write is counted
                res = Engine(scorer, batch_size=args.batch_size, num_workers=args.num_workers, cache=cache,
                             progress=False).score(items)
            t_engine = min(t_engine, time.perf_counter() - t)

        t = time.perf_counter()
        Engine(scorer, batch_size=args.batch_size, num_workers=args.num_workers, cache=None, progress=False).score(items)
        t_nocache = min(t_nocache, time.perf_counter() - t)

        t = time.perf_counter()
        floor(scorer, items, args.batch_size)
        t_floor = min(t_floor, time.perf_counter() - t)

    # The cache's own cost, apart from the load noise of the timings above: commit 50 batches of
    # embeddings of this model's width, then read them all back.
    dim = scorer.encode_texts(["a"]).shape[1]
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp, ScoreCache(tmp, scorer.cache_key()) as cache:
        batches = [{f"t:{b}:{k}": rng.standard_normal(dim).astype(np.float32) for k in range(args.batch_size)}
                   for b in range(50)]
        t = time.perf_counter()
        for batch in batches:
            cache.put_many(batch)
        t_write = (time.perf_counter() - t) / len(batches)
        t = time.perf_counter()
        cache.get_many([k for batch in batches for k in batch])
        t_read = time.perf_counter() - t

    diff = max(float(np.abs(a - b).max()) for a, b in zip(res.scores, ref))
    print(f"(a) per-pair loop : {t_loop:7.2f} s  {pairs / t_loop:8.1f} pairs/s")
    print(f"(b) engine        : {t_engine:7.2f} s  {pairs / t_engine:8.1f} pairs/s")
    print(f"    engine, no cache: {t_nocache:5.2f} s  {pairs / t_nocache:8.1f} pairs/s (the cost of the SQLite writes)")
    print(f"(c) floor         : {t_floor:7.2f} s  {pairs / t_floor:8.1f} pairs/s")
    print(f"engine / per-pair loop speed-up: {t_loop / t_engine:.2f}x (target >= 3x)")
    print(f"engine time / floor time       : {t_engine / t_floor:.2f}x (target <= 1.25x)")
    print(f"max |engine - per-pair logits| : {diff:.2e}")
    print(f"cache: {1000 * t_write:.2f} ms to commit a batch of {args.batch_size} {dim}-d embeddings; "
          f"{1000 * t_read:.1f} ms to read {50 * args.batch_size} back")
    return 0


if __name__ == "__main__":
    sys.exit(main())
