"""How fast does vlprobe score on this machine's device, and how close is the engine to the model alone?

Made to fit a short GPU slot (2,048 items in under 3 minutes on an H100) and to run on a CPU in seconds
(``--quick``). BLA-shaped items (1 image x 4 texts; 640 x 480 JPEGs, each item its own image) and a
ViT-B/32-shaped CLIP (``CLIPConfig()`` defaults, random weights: nothing is downloaded; a word-level tokenizer
built from the items' texts). One table, each row a stage, each stage in its own ``try`` (one failure still
prints the rest) and skipped once ``--time-cap`` seconds have gone (a hard alarm at the cap + 60 s ends the
script with what it has):

* **device path warm-up**: the process's first decode and preprocess on the device (a tiny JPEG, done once when
  a ``DeviceImages`` is made, so outside every timed stage and before an engine run's first batch), apart;
* **decode**: JPEG bytes -> (3, H, W) uint8, on the CPU (``to_tensor``, one image at a time, as a DataLoader
  worker does) and on the device (``vlprobe.scoring.device_images.decode_on``: one ``decode_jpeg`` call per batch,
  nvjpeg on CUDA); **preprocess**: the model's fast image processor on the CPU and on the device;
* **device vs CPU preprocessing**: max |pixel| and max |score| differences between the device path and the CPU
  path on the same images, and how many of the items' gold-vs-foil comparisons they flip;
* **model-only floor**: encoding the already-preprocessed unique images and the unique texts, nothing else,
  at ``--batch-size`` (the default, 32) and at the batch ``--batch-size auto`` picks per tower
  (:func:`vlprobe.scoring.auto_batch.choose_batch_size`);
* **engine**: :class:`vlprobe.scoring.engine.Engine` as ``vlprobe evaluate`` runs it (``batch_size="auto"``, a fresh
  on-disk cache, ``--num-workers`` DataLoader workers; the device input path on a GPU), after an untimed
  warm-up; its time over the floor at the best batch (target <= 1.25x);
* **per-pair loop** on ``--loop-items`` items (the reference scripts' way: the processor and one ``model()``
  call per pair, PIL images) and max |engine - loop logits| there;
* **vlprobe evaluate**: a plain ``vlprobe evaluate`` (its own process; the model saved with
  ``save_pretrained``, the items built into a dataset folder by ``vlprobe build folder``): wall time vs the
  "scored in" time it prints.

Rates are (image, text) pairs per second (items x 4 / seconds) unless named otherwise. The table goes to
stdout and, with ``--out`` (default ``$OUT`` when set), to ``bench.txt`` and ``bench.json`` there, written
after every stage. Usage::

    .venv/bin/python scripts/bench_scoring.py --quick                    # CPU check, about a minute here
    python scripts/bench_scoring.py --device cuda --dtype float16 --items 2048   # a GPU (scripts/gpu_bench.sh)
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
POOL = 128


# ---- inputs ------------------------------------------------------------------------------------------------

def make_items(n: int, seed: int = 0):
    from PIL import Image, ImageDraw

    from vlprobe.dataset.items import Item

    rng = np.random.default_rng(seed)
    nouns = ["dog", "cat", "man", "woman", "boy", "girl", "horse", "bird", "car", "ball", "child", "chef"]
    verbs = ["chases", "pushes", "follows", "watches", "carries", "holds", "feeds", "paints"]
    # photo-like JPEGs (~50-70 KB): a few smooth backgrounds with sensor-like noise, shifted per item, plus shapes
    y, x = np.mgrid[0:480, 0:640].astype(np.float32)
    backgrounds = [np.clip(np.stack([128 + 100 * np.sin(x / (50 + 17 * c + k) + y / (80 + 11 * c) + k + c)
                                     for c in range(3)], -1) + rng.normal(0, 6, (480, 640, 3)), 0, 255).astype(np.uint8)
                   for k in range(4)]
    pool = []  # 128 rendered photos; past that, item i's JPEG is photo i % 128 with its own comment segment
    for i in range(min(n, POOL)):
        shifted = np.roll(backgrounds[i % 4], (int(rng.integers(0, 480)), int(rng.integers(0, 640))), (0, 1))
        im = Image.fromarray(shifted)
        draw = ImageDraw.Draw(im)
        for _ in range(6):
            x0, y0 = int(rng.integers(0, 560)), int(rng.integers(0, 400))
            draw.ellipse([x0, y0, x0 + int(rng.integers(20, 80)), y0 + int(rng.integers(20, 80))],
                         fill=tuple(int(c) for c in rng.integers(0, 255, 3)))
        buf = io.BytesIO()
        im.save(buf, format="JPEG", quality=90)
        pool.append(buf.getvalue())
    items = []
    for i in range(n):
        # other bytes (so another image to the engine, decoded again), the same decode work as photo i % POOL
        comment = f"vlprobe bench item {i}".encode()
        jpeg = pool[i % POOL]
        jpeg = jpeg[:2] + b"\xff\xfe" + struct.pack(">H", len(comment) + 2) + comment + jpeg[2:]
        a, b = rng.choice(nouns, 2, replace=False)
        v = rng.choice(verbs)
        texts = (f"the {a} {v} the {b} in picture {i}", f"the {b} is {v[:-1]}ed by the {a} in picture {i}",
                 f"the {b} {v} the {a} in picture {i}", f"the {a} is {v[:-1]}ed by the {b} in picture {i}")
        items.append(Item(id=str(i), images=({"bytes": jpeg, "path": f"img{i}.jpg"},), texts=texts,
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


def make_model(items, fast: bool = True, small: bool = False):
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import CLIPConfig, CLIPModel, CLIPProcessor, PreTrainedTokenizerFast

    words = sorted({w for it in items for t in it.texts for w in t.split()})
    vocab = {"<pad>": 0, "<unk>": 1, "<bos>": 2, "<eos>": 3, **{w: i + 4 for i, w in enumerate(words)}}
    raw = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    raw.post_processor = processors.TemplateProcessing(single="<bos> $A <eos>", special_tokens=[("<bos>", 2), ("<eos>", 3)])
    tok = PreTrainedTokenizerFast(tokenizer_object=raw, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>",
                                  unk_token="<unk>", model_max_length=77)
    config = CLIPConfig()  # ViT-B/32 defaults
    if small:  # --quick on a CPU: the code paths, not the figures
        config = CLIPConfig(text_config={"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                                         "num_attention_heads": 2},
                            vision_config={"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                                           "num_attention_heads": 2, "patch_size": 32}, projection_dim=64)
    config.text_config.bos_token_id, config.text_config.eos_token_id, config.text_config.pad_token_id = 2, 3, 0
    config.text_config.vocab_size = max(config.text_config.vocab_size, len(vocab))
    torch.manual_seed(0)
    model = CLIPModel(config).eval()
    slow_cls, fast_cls = image_processor_classes()
    image_processor = (fast_cls if fast and fast_cls is not None else slow_cls)()
    return model, CLIPProcessor(image_processor=image_processor, tokenizer=tok)


def per_pair_loop(model, processor, items, device="cpu", torch_dtype=None):
    import torch

    from vlprobe.dataset.images import to_pil
    from vlprobe.scorers.base import to_device

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


def sync(device):
    if str(device).startswith("cuda"):
        import torch

        torch.cuda.synchronize(device)


# ---- the report ----------------------------------------------------------------------------------------------

class Report:
    """Rows of the table, printed and written (bench.txt, bench.json under ``out``) as they come."""

    def __init__(self, out: str | None, header: dict):
        self.out = Path(out) if out else None
        self.data: dict = {"header": header, "rows": {}, "errors": {}}
        self.lines: list[str] = []
        if self.out:
            self.out.mkdir(parents=True, exist_ok=True)
        for k, v in header.items():
            self.line(f"{k}: {v}")
        self.line(f"{'stage':<46} {'value':>12}  unit / note")

    def line(self, text: str) -> None:
        print(text, flush=True)
        self.lines.append(text)
        self._write()

    def row(self, key: str, label: str, value, unit: str = "") -> None:
        self.data["rows"][key] = value
        shown = f"{value:12,.1f}" if isinstance(value, float) and abs(value) >= 0.1 else (
            f"{value:12.2e}" if isinstance(value, float) else f"{value!s:>12}")
        self.line(f"{label:<46} {shown}  {unit}")

    def error(self, stage: str, err: BaseException) -> None:
        self.data["errors"][stage] = f"{type(err).__name__}: {err}"
        self.line(f"{stage:<46} {'FAILED':>12}  {type(err).__name__}: {str(err)[:300]}")
        traceback.print_exc(file=sys.stderr)

    def _write(self) -> None:
        if not self.out:
            return
        (self.out / "bench.txt").write_text("\n".join(self.lines) + "\n", encoding="utf-8")
        (self.out / "bench.json").write_text(json.dumps(self.data, indent=1, default=str), encoding="utf-8")


# ---- main ----------------------------------------------------------------------------------------------------

def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--items", type=int, default=None, help="BLA-shaped items (default 2048 on a GPU, 128 on the CPU)")
    p.add_argument("--quick", action="store_true",
                   help="a check of every stage in about a minute on a CPU: 32 items, 4 in the per-pair loop, a 2-layer "
                        "64-wide CLIP (not ViT-B/32: the figures mean nothing)")
    p.add_argument("--batch-size", type=int, default=32, help="the default batch the floor is also measured at (32)")
    p.add_argument("--num-workers", type=int, default=None,
                   help="DataLoader workers for the engine (default: vlprobe evaluate's, min(4, CPUs - 1) or 0)")
    p.add_argument("--repeats", type=int, default=1, help="timed runs of the floor and the engine; best kept (default 1)")
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:1 (default: cuda when there is one)")
    p.add_argument("--dtype", default=None, help="float32, float16, bfloat16 (default float16 on a GPU, float32 on CPU)")
    p.add_argument("--exact-preprocessing", action="store_true", help="the PIL image processor (no device path)")
    p.add_argument("--loop-items", type=int, default=None, help="items in the per-pair loop (default 64; 0: skip)")
    p.add_argument("--skip-loop", action="store_true", help="the same as --loop-items 0")
    p.add_argument("--skip-evaluate", action="store_true", help="leave out the plain `vlprobe evaluate` stage")
    p.add_argument("--evaluate-items", type=int, default=None, help="items of the evaluate stage (default: --items)")
    p.add_argument("--time-cap", type=float, default=None,
                   help="seconds after which stages are skipped (default 170 on a GPU, a short slot; 1800 on the CPU)")
    p.add_argument("--out", default=os.environ.get("OUT"), help="folder for bench.txt and bench.json (default $OUT)")
    p.add_argument("--profile", action="store_true",
                   help="also profile one engine run and one `vlprobe evaluate` (cProfile; untimed extra runs): "
                        "engine_profile.txt and evaluate_profile.txt in --out")
    p.add_argument("--model", default=None, help="a saved dual encoder (e.g. models/mini-clip) instead of the random CLIP")
    args = p.parse_args(argv)
    start = time.perf_counter()
    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    on_gpu = device.startswith("cuda")
    if args.time_cap is None:
        args.time_cap = 170.0 if on_gpu else 1800.0
    signal.signal(signal.SIGALRM, lambda *_: (print("bench: hard time cap reached, stopping", flush=True), os._exit(3)))
    signal.alarm(int(args.time_cap + 60))
    dtype = args.dtype or ("float16" if on_gpu else "float32")
    n_items = args.items or (32 if args.quick else 2048 if on_gpu else 128)
    loop_items = 0 if args.skip_loop else (args.loop_items if args.loop_items is not None else (4 if args.quick else 64))

    from vlprobe.runner import default_workers

    workers = default_workers() if args.num_workers is None else args.num_workers
    scratch = Path(tempfile.mkdtemp(prefix="vlprobe-bench-"))
    os.environ["VLPROBE_CACHE"] = str(scratch / "cache-home")  # the batch size memo and caches start empty
    import transformers

    gpu = torch.cuda.get_device_name(device) if on_gpu else None
    rep = Report(args.out, {
        "machine": f"{gpu or 'CPU'}; {os.cpu_count()} cores, {torch.get_num_threads()} torch threads; "
                   f"load average {os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg") else "",
        "versions": f"python {sys.version.split()[0]}, torch {torch.__version__}, "
                    f"torchvision {_version('torchvision')}, transformers {transformers.__version__}",
        "run": f"{n_items} BLA-shaped items (1 image x 4 texts, 640 x 480 JPEG), {4 * n_items} pairs; "
               f"{args.model or ('a 2-layer 64-wide CLIP (--quick)' if args.quick else 'CLIP ViT-B/32 shape, random weights')}; "
               f"{device}, {dtype}; {workers} DataLoader "
               f"workers; best of {args.repeats}",
    })
    rows = rep.data["rows"]

    def stage(name):
        def wrap(fn):
            left = args.time_cap - (time.perf_counter() - start)
            if left <= 0:
                rep.line(f"{name:<46} {'skipped':>12}  time cap of {args.time_cap:.0f} s reached")
                return None
            try:
                return fn()
            except Exception as err:  # noqa: BLE001 - every stage reports, none stops the others
                rep.error(name, err)
                return None
        return wrap

    from vlprobe.dataset.images import to_tensor
    from vlprobe.scorers.dual_encoder import DualEncoderScorer
    from vlprobe.scorers.loading import resolve_dtype
    from vlprobe.scoring.device_images import PIXEL_MAX_DIFF, PIXEL_MEAN_DIFF, DeviceImages, decode_on, read_for_device
    from vlprobe.scoring.engine import Engine

    dtype_name, torch_dtype = resolve_dtype(dtype)
    t = time.perf_counter()
    items = make_items(n_items)
    rep.row("setup.make_items_s", "setup: make the JPEG items", time.perf_counter() - t, "s")
    if args.model:
        from vlprobe.scorers import load_scorer

        scorer = load_scorer(args.model, "dual", device=device, dtype=dtype_name,
                             exact_preprocessing=args.exact_preprocessing)
        model, processor = scorer.model, scorer.processor
    else:
        model, processor = make_model(items, fast=not args.exact_preprocessing, small=args.quick)
        model = model.to(device, torch_dtype)
        scorer = DualEncoderScorer("bench/clip-vit-b32-random", model, processor, device=device, dtype=dtype_name)
    pairs = 4 * n_items
    raw = [it.images[0] for it in items]
    texts = list(dict.fromkeys(t for it in items for t in it.texts))
    bs = args.batch_size
    device_prep = DeviceImages(scorer) if scorer.preprocessing.get("image_backend") == "torchvision" else None
    if device_prep is not None:  # the first decode on the device in this process: paid once, when a run starts
        rep.row("setup.device_warmup_s", f"device path warm-up ({device}: first decode + preprocess, once per process)",
                device_prep.warmup_s, "s (once per process, outside the timed stages)")
    rep.line(f"image processor: {scorer.preprocessing.get('image_processor')} "
             f"({scorer.preprocessing.get('image_backend')}); {len(raw)} unique images, {len(texts)} unique texts")

    # -- decode and preprocess -------------------------------------------------------------------------------
    sub = raw[: min(len(raw), 256)]  # the CPU stages on a subsample: their rate is what matters

    @stage("decode, CPU")
    def _():
        to_tensor(sub[0])
        t = time.perf_counter()
        decoded = [to_tensor(x) for x in sub]
        rep.row("decode.cpu_img_s", "decode, CPU (to_tensor, one image at a time)", len(sub) / (time.perf_counter() - t),
                "images/s")
        return decoded

    cpu_decoded = _

    @stage("preprocess, CPU")
    def _():
        if cpu_decoded is None:
            raise RuntimeError("no CPU-decoded images")
        scorer.preprocess_images(cpu_decoded[:bs])  # untimed
        t = time.perf_counter()
        for b in batches(cpu_decoded, bs):
            scorer.preprocess_images(b)
        rep.row("preprocess.cpu_img_s", f"preprocess, CPU ({scorer.preprocessing.get('image_backend')})",
                len(sub) / (time.perf_counter() - t), "images/s")

    payloads = [read_for_device(x) for x in raw]

    @stage("decode, device")
    def _():
        decode_on(payloads[:bs], device)
        sync(device)
        t = time.perf_counter()
        out = []
        for b in batches(payloads, bs):
            out.extend(decode_on(b, device))
        sync(device)
        rep.row("decode.device_img_s", f"decode, {device} (decode_jpeg, batches of {bs})",
                len(payloads) / (time.perf_counter() - t), "images/s")
        return out

    dev_decoded = _

    @stage("preprocess, device")
    def _():
        if dev_decoded is None:
            raise RuntimeError("no device-decoded images")
        scorer.preprocess_images(dev_decoded[:bs])
        sync(device)
        t = time.perf_counter()
        for b in batches(dev_decoded, bs):
            scorer.preprocess_images(b)
        sync(device)
        rep.row("preprocess.device_img_s", f"preprocess, {device} (the fast processor on device tensors)",
                len(dev_decoded) / (time.perf_counter() - t), "images/s")

    # -- the device path vs the CPU path on the same images ---------------------------------------------------
    @stage("device vs CPU preprocessing")
    def _():
        if device_prep is None:
            raise RuntimeError("no fast image processor: no device path")
        n = min(len(raw), 256)
        dev = torch.cat([device_prep(b)["pixel_values"].float() for b in batches(payloads[:n], bs)])
        cpu = torch.cat([scorer.preprocess_images([to_tensor(x) for x in b])["pixel_values"].float()
                         for b in batches(raw[:n], bs)]).to(dev.device)
        rows["gpu_vs_cpu.pixel_max_abs"] = float((dev - cpu).abs().max())
        rep.row("gpu_vs_cpu.pixel_max_abs", f"device vs CPU path: max |pixel| ({n} images)",
                rows["gpu_vs_cpu.pixel_max_abs"], f"normalised units (tolerance {PIXEL_MAX_DIFF})")
        rep.row("gpu_vs_cpu.pixel_mean_abs", "device vs CPU path: mean |pixel|", float((dev - cpu).abs().mean()),
                f"(tolerance {PIXEL_MEAN_DIFF})")
        t_emb = np.concatenate([scorer.encode_texts(b) for b in batches([t for it in items[:n] for t in it.texts], bs)])
        e_dev = np.concatenate([scorer.encode_images({"pixel_values": dev[i : i + bs]}) for i in range(0, n, bs)])
        e_cpu = np.concatenate([scorer.encode_images({"pixel_values": cpu[i : i + bs]}) for i in range(0, n, bs)])
        s_dev = np.stack([scorer.similarity(e_dev[k : k + 1], t_emb[4 * k : 4 * k + 4])[0] for k in range(n)])
        s_cpu = np.stack([scorer.similarity(e_cpu[k : k + 1], t_emb[4 * k : 4 * k + 4])[0] for k in range(n)])
        rep.row("gpu_vs_cpu.score_max_abs", "device vs CPU path: max |score|", float(np.abs(s_dev - s_cpu).max()),
                f"logits (largest |logit| {float(np.abs(s_cpu).max()):.2f})")
        # gold texts 0, 1 vs foils 2, 3: the four pairwise comparisons of each item
        comp = lambda s: np.stack([s[:, g] > s[:, f] for g in (0, 1) for f in (2, 3)], 1)  # noqa: E731
        rep.row("gpu_vs_cpu.flipped_comparisons", "device vs CPU path: comparisons flipped",
                f"{int((comp(s_dev) != comp(s_cpu)).sum())}/{4 * n}", "gold-vs-foil pairs (BLA pairwise acc)")

    # -- model-only floor -------------------------------------------------------------------------------------
    def floor_inputs():
        if device_prep is not None and on_gpu:
            return torch.cat([device_prep(b)["pixel_values"] for b in batches(payloads, bs)])
        return torch.cat([scorer.preprocess_images([to_tensor(x) for x in b])["pixel_values"] for b in batches(raw, bs)])

    pixels = stage("preprocess all images for the floor")(floor_inputs)

    def floor(image_bs, text_bs):
        for i in range(0, len(pixels), image_bs):
            scorer.encode_images({"pixel_values": pixels[i : i + image_bs]})
        for b in batches(texts, text_bs):
            scorer.encode_texts(b)
        sync(device)

    def best_of(fn, *a):
        fn(*a)  # untimed: kernels at these shapes
        best = float("inf")
        for _ in range(args.repeats):
            t = time.perf_counter()
            fn(*a)
            best = min(best, time.perf_counter() - t)
        return best

    @stage("model-only floor, default batch")
    def _():
        s = best_of(floor, bs, bs)
        rep.row("floor.default_pairs_s", f"model-only floor, batch {bs}", pairs / s, "pairs/s")
        return s

    t_floor_default = _

    @stage("batch size search")
    def _():
        from vlprobe.scoring import auto_batch

        sample_px = {"pixel_values": pixels[:bs]}
        longest = sorted(texts, key=len)[-bs:]
        from vlprobe.scoring.engine import _tile

        def search(encode, sample, todo):
            largest = max(bs, min(auto_batch.LARGEST, 1 << max(todo - 1, 1).bit_length()))
            with torch.inference_mode():
                size, trials = auto_batch.choose_batch_size(
                    lambda n: auto_batch.timed_call(encode, _tile(sample, n), device), largest=largest,
                    on_oom=torch.cuda.empty_cache if on_gpu else None)
            return size, trials

        ib, itr = search(scorer.encode_images, sample_px, len(pixels))
        tb, ttr = search(scorer.encode_texts, longest, len(texts))
        fmt = lambda trials: ", ".join(f"{t['batch_size']}: {t.get('inputs_per_s', 'OOM')}" for t in trials)  # noqa: E731
        rep.row("auto.image_batch", "batch size auto: images", ib, f"tried {fmt(itr)} /s")
        rep.row("auto.text_batch", "batch size auto: texts", tb, f"tried {fmt(ttr)} /s")
        return ib, tb

    best_sizes = _

    @stage("model-only floor, best batch")
    def _():
        ib, tb = best_sizes or (bs, bs)
        s = best_of(floor, ib, tb)
        rep.row("floor.best_pairs_s", f"model-only floor, batch {ib} images / {tb} texts", pairs / s, "pairs/s")
        return s

    t_floor_best = _

    # -- the engine --------------------------------------------------------------------------------------------
    def engine_run(batch_size, with_cache=True):
        from vlprobe.storage.score_cache import ScoreCache

        with tempfile.TemporaryDirectory(dir=scratch) as tmp:
            cache = ScoreCache(tmp, scorer.cache_key()) if with_cache else None
            try:
                t = time.perf_counter()
                res = Engine(scorer, batch_size=batch_size, num_workers=workers, cache=cache, progress=False,
                             log=lambda m: rep.line(f"  engine: {m}")).score(items)
                return res, time.perf_counter() - t
            finally:
                if cache is not None:
                    cache.close()

    engine_scores = {}

    @stage("engine, first run")
    def _():
        # The first run of a model on a card: the batch size search included (then remembered), no cache.
        t = time.perf_counter()
        Engine(scorer, batch_size="auto", num_workers=workers, cache=None, progress=False,
               log=lambda m: rep.line(f"  engine (first run): {m}")).score(items)
        s = time.perf_counter() - t
        rep.row("engine.first_run_pairs_s", "engine, first run (incl. the batch search on a GPU), no cache", pairs / s, "pairs/s")

    @stage("engine, batch auto")
    def _():
        best = float("inf")
        for _ in range(args.repeats):
            res, s = engine_run("auto")
            best = min(best, s)
        engine_scores["auto"] = res
        sizes = res.stats["batch_size"]
        rep.row("engine.auto_pairs_s", f"engine, batch auto ({sizes.get('images')} / {sizes.get('texts')}), cache on",
                pairs / best, f"pairs/s ({sizes['chosen']})")
        rep.row("engine.image_path", "engine: images decoded and preprocessed on", res.stats.get("image_preprocessing_on"), "")
        return best

    t_engine = _

    if args.profile and args.out:
        @stage("engine profile")
        def _():
            import cProfile

            prof = cProfile.Profile()
            prof.enable()
            engine_run("auto")
            prof.disable()
            _write_profile(prof, Path(args.out) / "engine_profile.txt", "one engine run, batch auto, cache on")
            rep.line(f"{'engine profile':<46} {'written':>12}  engine_profile.txt")

    @stage("engine, batch default")
    def _():
        res, s = engine_run(bs)
        rep.row("engine.default_pairs_s", f"engine, batch {bs}, cache on", pairs / s, "pairs/s")
        return s

    @stage("engine / floor")
    def _():
        if t_engine is None or t_floor_best is None:
            raise RuntimeError("the engine or the floor did not run")
        rep.row("ratio.engine_over_best_floor", "engine time / model-only floor at best batch", t_engine / t_floor_best,
                "x (target <= 1.25)")
        if t_floor_default is not None:
            rep.row("ratio.engine_over_default_floor", f"engine time / model-only floor at batch {bs}",
                    t_engine / t_floor_default, "x")

    # -- the per-pair loop ---------------------------------------------------------------------------------------
    if loop_items:
        @stage("per-pair loop")
        def _():
            sub_items = items[:loop_items]
            per_pair_loop(model, processor, sub_items[:1], device, torch_dtype)
            t = time.perf_counter()
            ref = per_pair_loop(model, processor, sub_items, device, torch_dtype)
            s = time.perf_counter() - t
            rep.row("loop.pairs_s", f"per-pair loop ({loop_items} items, PIL images)", 4 * loop_items / s, "pairs/s")
            res = engine_scores.get("auto")
            if res is not None:
                diff = max(float(np.abs(a - b).max()) for a, b in zip(res.scores, ref))
                scale = max(float(np.abs(r).max()) for r in ref)
                rep.row("loop.max_abs_diff", "max |engine - per-pair logits|", diff, f"(largest |logit| {scale:.2f})")

    # -- a plain vlprobe evaluate ------------------------------------------------------------------------------------
    if not args.skip_evaluate:
        @stage("vlprobe evaluate")
        def _():
            n_eval = min(args.evaluate_items or n_items, n_items)
            model_dir, data_dir = scratch / "model", scratch / "dataset"
            if args.model:
                model_dir = Path(args.model)
            else:
                model.save_pretrained(model_dir)
                processor.save_pretrained(model_dir)
            build_dataset(items[:n_eval], data_dir)
            env = dict(os.environ, PYTHONPATH=_pythonpath(), VLPROBE_CACHE=str(scratch / "evaluate-cache-home"))
            cmd = [sys.executable, "-c", "import sys; from vlprobe.cli import main; sys.exit(main())", "evaluate",
                   "--dataset", str(data_dir), "--model", str(model_dir), "--device", device, "--dtype", dtype_name,
                   "--out", str(scratch / "run")]
            t = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                                  timeout=max(10, args.time_cap + 50 - (time.perf_counter() - start)))
            wall = time.perf_counter() - t
            if proc.returncode != 0:
                raise RuntimeError(f"vlprobe evaluate exited {proc.returncode}: {proc.stderr[-1500:]}")
            scored = next((float(line.split("scored in ")[1].split("s")[0]) for line in proc.stdout.splitlines()
                           if "scored in " in line), None)
            rep.row("evaluate.wall_s", f"vlprobe evaluate, {n_eval} items: wall", wall, "s (a fresh process)")
            if scored is not None:
                rep.row("evaluate.scored_s", "vlprobe evaluate: scoring (its 'scored in')", scored,
                        f"s = {100 * scored / wall:.0f}% of the wall time (target >= 50%)")
            for line in proc.stderr.splitlines():
                if "batch size for the" in line or "preprocessed on the CPU" in line:
                    rep.line(f"  evaluate: {line.strip()}")
            if args.profile and args.out:  # a second, profiled run (the memo and the Arrow copy are warm now)
                runner = scratch / "run_cli.py"
                runner.write_text("import sys\nfrom vlprobe.cli import main\nsys.exit(main(sys.argv[1:]))\n")
                prof_file = scratch / "evaluate.prof"
                shutil.rmtree(scratch / "run", ignore_errors=True)
                proc = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(prof_file), str(runner), *cmd[3:],
                                       "--cache-dir", str(scratch / "profiled-cache")],
                                      capture_output=True, text=True, env=env,
                                      timeout=max(10, args.time_cap + 50 - (time.perf_counter() - start)))
                if proc.returncode == 0:
                    import pstats

                    _write_profile(pstats.Stats(str(prof_file)), Path(args.out) / "evaluate_profile.txt",
                                   "a second vlprobe evaluate (fresh score cache), under cProfile")
                    rep.line(f"{'evaluate profile':<46} {'written':>12}  evaluate_profile.txt")
                else:
                    rep.line(f"{'evaluate profile':<46} {'FAILED':>12}  {proc.stderr[-300:]}")

    rep.row("total_s", "bench total", time.perf_counter() - start, "s")
    signal.alarm(0)
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


SPEC = """# BLA-shaped: one image, two true captions, two false ones
id: id
images: [image]
texts: [true1, true2, false1, false2]
gold: [[1, 1, 0, 0]]
"""


def build_dataset(items, folder: Path) -> None:
    """``items`` as a source folder (JPEGs + captions.jsonl + vlprobe.yaml) made into a dataset folder by
    ``vlprobe build folder``, as a user would."""
    source = folder.with_name(folder.name + "_source")
    (source / "images").mkdir(parents=True, exist_ok=True)
    with open(source / "captions.jsonl", "w", encoding="utf-8") as fh:
        for it in items:
            name = f"images/{it.id}.jpg"
            (source / name).write_bytes(it.images[0]["bytes"])
            fh.write(json.dumps({"id": it.id, "image": name, "true1": it.texts[0], "true2": it.texts[1],
                                 "false1": it.texts[2], "false2": it.texts[3]}) + "\n")
    (source / "vlprobe.yaml").write_text(SPEC, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-c", "import sys; from vlprobe.cli import main; sys.exit(main())",
                           "build", "folder", str(source), "--out", str(folder), "--license", "cc0-1.0"],
                          capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=_pythonpath()))
    if proc.returncode != 0:
        raise RuntimeError(f"vlprobe build folder failed: {proc.stderr[-1500:]}")


def _write_profile(prof, path: Path, title: str) -> None:
    """The top functions of a cProfile run, by cumulative and by own time, as text."""
    import pstats

    buf = io.StringIO()
    stats = prof if isinstance(prof, pstats.Stats) else pstats.Stats(prof)
    stats.stream = buf
    buf.write(f"{title}\n\n")
    stats.sort_stats("cumulative").print_stats(45)
    stats.sort_stats("tottime").print_stats(35)
    path.write_text(buf.getvalue(), encoding="utf-8")


def _pythonpath() -> str:
    return os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))


def _version(name: str) -> str:
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:
        return "not installed"


if __name__ == "__main__":
    sys.exit(main())
