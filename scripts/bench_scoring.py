"""How fast is each stage of scoring, and how close is the engine to the floor?

In one process, on BLA-shaped items (1 image x 4 texts; 640 x 480 JPEGs, each item its own image, as
in BLA) and a ViT-B/32-shaped CLIP (``CLIPConfig()`` defaults: 12-layer ViT-B/32 vision tower at
224 px, 12-layer 512-wide text tower; random weights, nothing downloaded; a word-level tokenizer
built from the items' texts), it measures:

* **stages**, each alone on the unique inputs, in images (or texts) per second: **decode** (JPEG
  bytes -> RGB PIL), **preprocess** (the image processor, batched; the PIL ("slow") one and, when
  torchvision imports, the fast one too), **encode** (the model on preprocessed images; texts apart);
* (a) the per-pair loop: for every (image, text) pair, the processor and one ``model(...)`` call
  returning ``logits_per_image``, as the VALSE/BLA/Winoground reference scripts do (each item's
  image decoded once, which favours the loop); ``--skip-loop`` leaves it out;
* (b) the engine (:class:`vlprobe.engine.Engine` with a fresh on-disk cache, so its writes are
  counted), images decoded and preprocessed in ``--num-workers`` DataLoader workers; (b') the same
  without a cache;
* (c) the in-line floor: decode + preprocess + encode of just the unique inputs, in batches, one
  after the other in this process (no hashing, no cache, no DataLoader);
* (d) the model-only floor: encoding the already-preprocessed unique inputs, nothing else. With
  the input path in workers on spare cores, (b) can approach (d); without, (c) is its floor.

Rates of (a)-(d) are (image, text) pairs per second (items x 4 / seconds). Every method is warmed
up first (untimed); the stages and (b), (b'), (c), (d) are interleaved and repeated, the best time
kept, because on a shared machine the load drifts. It checks that the engine's scores equal the
per-pair loop's logits, and times the cache alone. ``--device cuda --dtype float16`` runs the same
on a GPU (the model and its inputs in that dtype). Usage::

    .venv/bin/python scripts/bench_scoring.py [--items 120] [--batch-size 32] [--num-workers N] [--repeats 2]
        [--device cpu|cuda] [--dtype float32|float16|bfloat16] [--exact-preprocessing] [--skip-loop]
        [--stages-only] [--model models/mini-clip]

``--model`` scores a saved dual encoder instead (e.g. the shipped ``models/mini-clip``, whose encoder
is fast enough that the input path is the floor).
"""

from __future__ import annotations

import argparse
import io
import os
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


def image_processor_classes():
    """(PIL image processor class, fast one or None when torchvision does not import) for CLIP."""
    import transformers

    from vlprobe.scorers.loading import torchvision_available

    fast = torchvision_available()
    if hasattr(transformers, "CLIPImageProcessorPil"):  # transformers 5: CLIPImageProcessor is the fast one
        return transformers.CLIPImageProcessorPil, (transformers.CLIPImageProcessor if fast else None)
    return transformers.CLIPImageProcessor, (getattr(transformers, "CLIPImageProcessorFast", None) if fast else None)


def make_model(items, fast: bool = True):
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import CLIPConfig, CLIPModel, CLIPProcessor, PreTrainedTokenizerFast

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
    slow_cls, fast_cls = image_processor_classes()
    image_processor = (fast_cls if fast and fast_cls is not None else slow_cls)()
    processor = CLIPProcessor(image_processor=image_processor, tokenizer=tok)
    return model, processor


def per_pair_loop(model, processor, items, device="cpu", torch_dtype=None):
    import torch

    from vlprobe.images import to_pil
    from vlprobe.scorers.loading import to_device

    out = []
    with torch.inference_mode():
        for item in items:
            image = to_pil(item.images[0])
            row = []
            for text in item.texts:
                inputs = processor(text=[text], images=[image], return_tensors="pt", padding=True)
                inputs = to_device(dict(inputs), device, torch_dtype)
                row.append(float(model(**inputs).logits_per_image[0, 0]))
            out.append(np.array([row], dtype=np.float32))
    return out


def batches(seq, size):
    return [seq[i : i + size] for i in range(0, len(seq), size)]


def timed(fn, *args):
    t = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t


def stages(scorer, items, batch_size, slow_processor=None):
    """Each stage alone on the unique inputs: seconds for decode (as the engine decodes for this
    scorer: to tensors for a fast image processor, to PIL otherwise; and to PIL, as the slow
    processor needs), preprocess (this scorer's image processor, and ``slow_processor`` too if
    given), encode images, encode texts; and the preprocessed image batches (for the model-only
    floor)."""
    from vlprobe.engine import decoder
    from vlprobe.images import to_pil

    decode = decoder(scorer)
    raw = [it.images[0] for it in items]  # every item has its own image
    texts = list(dict.fromkeys(t for it in items for t in it.texts))
    decoded, t_decode = timed(lambda: [decode(x) for x in raw])
    inputs, t_pre = timed(lambda: [scorer.preprocess_images(b) for b in batches(decoded, batch_size)])
    t_slow = t_decode_pil = None
    if slow_processor is not None:
        pils, t_decode_pil = timed(lambda: [to_pil(x) for x in raw])
        _, t_slow = timed(lambda: [slow_processor(images=b, return_tensors="pt") for b in batches(pils, batch_size)])
    _, t_enc = timed(lambda: [scorer.encode_images(x) for x in inputs])
    _, t_txt = timed(lambda: [scorer.encode_texts(b) for b in batches(texts, batch_size)])
    return dict(decode=t_decode, decode_pil=t_decode_pil, preprocess=t_pre, preprocess_slow=t_slow, encode=t_enc,
                texts=t_txt, n_images=len(raw), n_texts=len(texts), decoded_to=decode.__name__), inputs


def floor(scorer, items, batch_size):
    """(c): decode + preprocess + encode of the unique inputs, one after the other."""
    from vlprobe.engine import decoder

    decode = decoder(scorer)
    images = [it.images[0] for it in items]
    texts = list(dict.fromkeys(t for it in items for t in it.texts))
    for b in batches(images, batch_size):
        scorer.encode_images(scorer.preprocess_images([decode(x) for x in b]))
    for b in batches(texts, batch_size):
        scorer.encode_texts(b)


def model_floor(scorer, inputs, items, batch_size):
    """(d): the model alone on already-preprocessed unique inputs."""
    texts = list(dict.fromkeys(t for it in items for t in it.texts))
    for x in inputs:
        scorer.encode_images(x)
    for b in batches(texts, batch_size):
        scorer.encode_texts(b)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--items", type=int, default=120)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--num-workers", type=int, default=None,
                   help="DataLoader workers for (b) (default: min(4, cores - 1) with more than 2 cores, else 0)")
    p.add_argument("--repeats", type=int, default=2, help="runs of (b), (b'), (c), (d), interleaved; best kept (default 2)")
    p.add_argument("--device", default="cpu", help="cpu (default), cuda, cuda:1, mps")
    p.add_argument("--dtype", default="float32", help="float32 (default), float16, bfloat16")
    p.add_argument("--exact-preprocessing", action="store_true",
                   help="the PIL image processor even when torchvision (the fast one) is there")
    p.add_argument("--skip-loop", action="store_true", help="leave out (a), the per-pair loop")
    p.add_argument("--stages-only", action="store_true", help="time the stages alone (no (a)-(d), no cache)")
    p.add_argument("--model", default=None,
                   help="a saved dual encoder (e.g. models/mini-clip) loaded with load_scorer instead of the "
                        "random ViT-B/32-shaped CLIP")
    args = p.parse_args(argv)
    from vlprobe.evaluation import default_workers

    workers = default_workers() if args.num_workers is None else args.num_workers

    import torch

    from vlprobe.cache import ScoreCache
    from vlprobe.engine import Engine
    from vlprobe.scorers.dual_encoder import DualEncoderScorer
    from vlprobe.scorers.loading import resolve_dtype

    dtype_name, torch_dtype = resolve_dtype(args.dtype)
    items = make_items(args.items)
    slow_cls, fast_cls = image_processor_classes()
    if args.model:
        from vlprobe.scorers import load_scorer
        from vlprobe.scorers.loading import load_processor

        scorer = load_scorer(args.model, "dual", device=args.device, dtype=dtype_name,
                             exact_preprocessing=args.exact_preprocessing)
        model, processor = scorer.model, scorer.processor
        slow = (load_processor(args.model, exact_preprocessing=True).image_processor
                if scorer.preprocessing["image_backend"] != "pil" else None)
        slow_cls = type(slow) if slow is not None else slow_cls
    else:
        model, processor = make_model(items, fast=not args.exact_preprocessing)
        model = model.to(args.device, torch_dtype)
        scorer = DualEncoderScorer("bench/clip-vit-b32-random", model, processor, device=args.device,
                                   dtype=dtype_name)
        slow = slow_cls() if scorer.preprocessing["image_backend"] != "pil" else None
    pairs = sum(it.m * it.n for it in items)
    gpu = torch.cuda.get_device_name(args.device) if str(args.device).startswith("cuda") else None
    print(f"{len(items)} BLA-shaped items (1 image x 4 texts, 640 x 480 JPEG), {pairs} pairs; "
          f"{args.model or 'CLIP ViT-B/32 shape, random weights'}; torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, {os.cpu_count()} cores; "
          f"device {args.device}{f' ({gpu})' if gpu else ''}, {dtype_name}; batch size {args.batch_size}, "
          f"{workers} DataLoader workers for (b); image processor {scorer.preprocessing['image_processor']} "
          f"({scorer.preprocessing['image_backend']}{'' if fast_cls else '; torchvision does not import here'}); "
          f"best of {args.repeats}")

    # Untimed warm-up of every tensor shape each method will see: the first call at a new shape
    # pays seconds of one-off kernel set-up on CPU, which is not what is being compared.
    if args.stages_only:
        args.skip_loop = True
    if not args.skip_loop:
        per_pair_loop(model, processor, items[:1], args.device, torch_dtype)
    Engine(scorer, batch_size=args.batch_size, num_workers=0, cache=None, progress=False).score(
        items[: args.batch_size] if args.stages_only else items)

    t_loop = None
    if not args.skip_loop:
        ref, t_loop = timed(per_pair_loop, model, processor, items, args.device, torch_dtype)

    # Stages, then (b), (b'), (c), (d) interleaved and repeated, best time kept: on a shared
    # machine the load drifts, and interleaving keeps the ratios fair.
    st: dict = {}
    t_engine = t_nocache = t_floor = t_model = float("inf")
    for _ in range(args.repeats):
        s, inputs = stages(scorer, items, args.batch_size, slow)
        st = {k: min(v, st[k]) if st.get(k) is not None and v is not None else v for k, v in s.items()}
        if args.stages_only:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            t = time.perf_counter()
            with ScoreCache(tmp, scorer.cache_key()) as cache:  # a fresh cache: every write is counted
                res = Engine(scorer, batch_size=args.batch_size, num_workers=workers, cache=cache,
                             progress=False).score(items)
            t_engine = min(t_engine, time.perf_counter() - t)
        _, t = timed(lambda: Engine(scorer, batch_size=args.batch_size, num_workers=workers, cache=None,
                                    progress=False).score(items))
        t_nocache = min(t_nocache, t)
        t_floor = min(t_floor, timed(floor, scorer, items, args.batch_size)[1])
        t_model = min(t_model, timed(model_floor, scorer, inputs, items, args.batch_size)[1])

    if args.stages_only:
        print_stages(st, scorer, slow_cls)
        return 0

    # The cache's own cost: commit 50 batches of embeddings of this model's width, read them back.
    dim = scorer.encode_texts(["a"]).shape[1]
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp, ScoreCache(tmp, scorer.cache_key()) as cache:
        batches_ = [{f"t:{b}:{k}": rng.standard_normal(dim).astype(np.float32) for k in range(args.batch_size)}
                    for b in range(50)]
        t = time.perf_counter()
        for batch in batches_:
            cache.put_many(batch)
        t_write = (time.perf_counter() - t) / len(batches_)
        t = time.perf_counter()
        cache.get_many([k for batch in batches_ for k in batch])
        t_read = time.perf_counter() - t

    print_stages(st, scorer, slow_cls)
    if t_loop is not None:
        print(f"(a) per-pair loop   : {t_loop:7.2f} s  {pairs / t_loop:8.1f} pairs/s")
    print(f"(b) engine          : {t_engine:7.2f} s  {pairs / t_engine:8.1f} pairs/s  ({workers} workers)")
    print(f"    engine, no cache: {t_nocache:7.2f} s  {pairs / t_nocache:8.1f} pairs/s (the cost of the SQLite writes)")
    print(f"(c) in-line floor   : {t_floor:7.2f} s  {pairs / t_floor:8.1f} pairs/s (decode + preprocess + encode)")
    print(f"(d) model-only floor: {t_model:7.2f} s  {pairs / t_model:8.1f} pairs/s (encode only)")
    if t_loop is not None:
        print(f"engine / per-pair loop speed-up: {t_loop / t_engine:.2f}x (target >= 3x)")
    print(f"engine time / in-line floor    : {t_engine / t_floor:.2f}x")
    print(f"engine time / model-only floor : {t_engine / t_model:.2f}x (target <= 1.25x with workers on spare cores)")
    if t_loop is not None:
        diff = max(float(np.abs(a - b).max()) for a, b in zip(res.scores, ref))
        scale = max(float(np.abs(r).max()) for r in ref)
        print(f"max |engine - per-pair logits| : {diff:.2e} (largest |logit| {scale:.1f})")
    print(f"cache: {1000 * t_write:.2f} ms to commit a batch of {args.batch_size} {dim}-d embeddings; "
          f"{1000 * t_read:.1f} ms to read {50 * args.batch_size} back")
    return 0


def print_stages(st, scorer, slow_cls) -> None:
    n_img, n_txt = st["n_images"], st["n_texts"]
    print(f"stages ({n_img} unique images, {n_txt} unique texts), each alone:")
    into = "(3, H, W) uint8 tensor" if st["decoded_to"] == "to_tensor" else "RGB PIL"
    print(f"  decode          : {n_img / st['decode']:8.1f} images/s  (JPEG 640 x 480 -> {into}, as the engine does)")
    print(f"  preprocess      : {n_img / st['preprocess']:8.1f} images/s  ({scorer.preprocessing['image_processor']}, "
          f"{scorer.preprocessing['image_backend']})")
    if st["preprocess_slow"] is not None:
        fast_path = st["decode"] + st["preprocess"]
        slow_path = st["decode_pil"] + st["preprocess_slow"]
        print(f"  decode (PIL)    : {n_img / st['decode_pil']:8.1f} images/s  (JPEG 640 x 480 -> RGB PIL)")
        print(f"  preprocess (PIL): {n_img / st['preprocess_slow']:8.1f} images/s  ({slow_cls.__name__}); fast / PIL: "
              f"{st['preprocess_slow'] / st['preprocess']:.2f}x (target >= 3x)")
        print(f"  decode + preprocess: {n_img / fast_path:8.1f} images/s fast, {n_img / slow_path:.1f} PIL: "
              f"{slow_path / fast_path:.2f}x")
    print(f"  encode images   : {n_img / st['encode']:8.1f} images/s  (the model alone)")
    print(f"  encode texts    : {n_txt / st['texts']:8.1f} texts/s")


if __name__ == "__main__":
    sys.exit(main())
