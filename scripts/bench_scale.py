"""Does memory stay flat as a dataset grows? ``vlprobe.evaluate`` and ``vlprobe.probe`` on 10k, 30k
and 60k rows.

It builds a TraVLR-shaped dataset folder (one config; columns id, image, caption, query, foil_query,
label, subtype; the TraVLR spec: 1 image x 2 texts, the query and its foil) at each size, then runs
each folder in a fresh process with the shipped model (``models/mini-clip``) and prints rows, wall
time, rows/s and peak memory:

* ``--what evaluate``: a ``test`` split of N rows, scored by ``vlprobe.evaluate``;
* ``--what probe``: a ``train`` split of N rows plus ``validation`` and ``test`` splits of 2,000
  rows each, run through ``vlprobe.probe`` (image, caption and both features, the text-only
  baseline, a logistic-regression probe per setting, no bootstrap). Its features (3 settings x
  (4 x 64) + 64 text-only float32 per row with mini-clip, 3.3 KB per row) go to files on disk and the probes read
  them a block at a time (vlprobe/storage/feature_store.py), so they do not count in its memory.

* ``peak RSS``: the process's high-water resident set (``ru_maxrss``): what ``top`` shows at its
  worst, including the pages of the memory-mapped Arrow files that were read (file-backed: the
  kernel can drop them at will);
* ``peak anon``: the highest anonymous (heap) resident memory seen by a sampler every 0.1 s
  (``RssAnon`` in ``/proc/self/status``): what the run really holds.

The images: a pool of 500 x 500 PNG scenes (TraVLR's canvas size; coloured shapes on white), each
row's copy made unique by a PNG ``tEXt`` chunk with its id, so every row is a distinct image to the
engine (hashed, decoded, preprocessed and encoded once each) while building stays fast. Texts
are drawn from TraVLR-like templates (a few thousand unique ones, repeated as in TraVLR).

``--images jpeg`` (``--what evaluate``; default sizes 1,500 and 6,000 rows): photo-sized images as a
user brings them. A source folder of 640 x 480 photo-like JPEGs (a smooth colour field plus sensor-like
noise, quality 85, about 90 KB each; a pool of 200 pictures, each row's file made unique by a JPEG
comment segment naming the row) and a ``captions.jsonl`` with the same columns, turned into a dataset
folder by ``vlprobe build folder`` (in its own process, not measured). Each run then starts from a
fresh ``HF_DATASETS_CACHE``, ``TMPDIR`` and ``VLPROBE_CACHE``, so the first load (datasets' conversion of the parquet to
Arrow) is inside the measurement, and scores with no score cache (``cache_dir="none"``), as
``vlprobe evaluate --cache-dir none``. With ``--keep`` the source and dataset folders are kept and
reused by the next run with the same ``--work``.

Each run uses a fresh score cache (everything is computed, cache writes included). Usage::

    nice .venv/bin/python scripts/bench_scale.py [--sizes 10000,30000,60000] [--bootstrap 0]
        [--chunk-size 2000] [--image-size 500] [--work /tmp/vlprobe-bench-scale]
    nice .venv/bin/python scripts/bench_scale.py --images jpeg [--sizes 1500,6000] [--keep]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

COLOURS = {"red": (220, 40, 40), "blue": (40, 80, 220), "green": (40, 170, 60), "yellow": (230, 200, 30),
           "purple": (140, 60, 180), "orange": (240, 140, 30), "grey": (128, 128, 128)}
SHAPES = ("circle", "square", "triangle", "pentagon", "hexagon", "star", "cross")
RELATIONS = ("left of", "right of", "above", "below")
SPEC = """# TraVLR's query-vs-foil framing (as travlr/vlprobe.yaml)
id: id
images: [image]
texts: [query, foil_query]
gold: {column: label, map: {true: [[1, 0]], false: [[0, 1]]}}
tags: [subtype, label]
context: caption
"""


# ---- building ---------------------------------------------------------------------------------------

def _scene_png(rng: random.Random, size: int = 500) -> bytes:
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (size, size), (255, 255, 255))
    draw = ImageDraw.Draw(image)
    cell = size // 6
    for _ in range(rng.randint(2, 5)):
        r, c = rng.randrange(6), rng.randrange(6)
        x, y, d = c * cell + cell // 4, r * cell + cell // 4, cell // 2
        colour = rng.choice(list(COLOURS.values()))
        if rng.random() < 0.5:
            draw.ellipse([x, y, x + d, y + d], fill=colour)
        else:
            draw.rectangle([x, y, x + d, y + d], fill=colour)
    buf = io.BytesIO()
    image.save(buf, format="PNG", compress_level=6)
    return buf.getvalue()


def _unique(png: bytes, row_id: str) -> bytes:
    """The same image with a tEXt chunk naming the row inserted before IEND: other bytes, same pixels."""
    data = b"vlprobe-row\x00" + row_id.encode()
    chunk = struct.pack(">I", len(data)) + b"tEXt" + data + struct.pack(">I", zlib.crc32(b"tEXt" + data))
    return png[:-12] + chunk + png[-12:]


def _rows(n: int, seed: int = 0, pool_size: int = 500, image_size: int = 500):
    rng = random.Random(seed)
    pool = [_scene_png(rng, image_size) for _ in range(pool_size)]
    for i in range(n):
        a, b = rng.sample(list(COLOURS), 2)
        s1, s2 = rng.sample(SHAPES, 2)
        rel = rng.choice(RELATIONS)
        other = RELATIONS[RELATIONS.index(rel) ^ 1]
        label = rng.random() < 0.5
        row_id = f"r{i:06d}"
        yield {
            "id": row_id,
            "image": {"bytes": _unique(pool[rng.randrange(pool_size)], row_id), "path": None},
            "caption": f"There is a {a} {s1} and a {b} {s2}.",
            "query": f"The {a} {s1} is {rel} the {b} {s2}.",
            "foil_query": f"The {a} {s1} is {other} the {b} {s2}.",
            "label": label,
            "subtype": "horizontal" if rel in RELATIONS[:2] else "vertical",
        }


PROBE_EVAL_ROWS = 2000  # validation and test rows of the probe's folder, at every size


def build(folder: Path, n: int, seed: int = 0, image_size: int = 500, what: str = "evaluate",
          eval_rows: int = PROBE_EVAL_ROWS) -> float:
    """A dataset folder with ``n`` test rows (``what="evaluate"``) or ``n`` train rows plus ``eval_rows`` validation
    and test rows each (``what="probe"``); returns the seconds it took."""
    import datasets

    from vlprobe.dataset.folder import ConfigDecl, card_metadata, write_card, write_split_rows

    start = time.perf_counter()
    if folder.exists():
        shutil.rmtree(folder)
    features = datasets.Features({
        "id": datasets.Value("string"), "image": datasets.Image(), "caption": datasets.Value("string"),
        "query": datasets.Value("string"), "foil_query": datasets.Value("string"), "label": datasets.Value("bool"),
        "subtype": datasets.Value("string"),
    })
    sizes = {"test": n} if what == "evaluate" else {"train": n, "validation": eval_rows, "test": eval_rows}
    decl = ConfigDecl("spatiality", features, splits=tuple(sizes), default=True)
    write_card(folder, card_metadata([decl], license="cc0-1.0", pretty_name="bench_scale"),
               f"# bench_scale\n\n{n} TraVLR-shaped rows for scripts/bench_scale.py.")
    for k, (split, rows) in enumerate(sizes.items()):
        write_split_rows(folder, "spatiality", split, _rows(rows, seed + k, image_size=image_size), features,
                         batch_size=500)
    (folder / "vlprobe.yaml").write_text(SPEC, encoding="utf-8")
    return time.perf_counter() - start


JPEG_SIZE = (640, 480)
JPEG_POOL = 200


def _photo_jpeg(rng: random.Random) -> bytes:
    """A 640 x 480 photo-like JPEG of about 90 KB: a smooth random colour field (upscaled from 20 x 15)
    plus Gaussian noise of sd 12, quality 85 (noise is what makes a camera's JPEG large)."""
    import numpy as np
    from PIL import Image

    w, h = JPEG_SIZE
    np_rng = np.random.default_rng(rng.randrange(2**32))
    field = Image.fromarray((np_rng.random((15, 20, 3)) * 255).astype(np.uint8)).resize((w, h), Image.BICUBIC)
    pixels = np.asarray(field).astype(np.int16) + np_rng.normal(0, 12, (h, w, 3)).astype(np.int16)
    buf = io.BytesIO()
    Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(buf, format="JPEG", quality=85)
    return buf.getvalue()


def _unique_jpeg(jpeg: bytes, row_id: str) -> bytes:
    """The same JPEG with a comment (COM) segment naming the row after SOI: other bytes, same pixels."""
    data = b"vlprobe-row " + row_id.encode()
    return jpeg[:2] + b"\xff\xfe" + struct.pack(">H", len(data) + 2) + data + jpeg[2:]


def build_jpeg(folder: Path, n: int, seed: int = 0) -> float:
    """A source folder (``images/*.jpg`` + ``captions.jsonl`` + ``vlprobe.yaml``) of ``n`` rows made
    into the dataset folder ``folder`` by ``vlprobe build folder``, as a user would; returns the
    seconds it took. With both already there (``--keep``), they are reused and 0 is returned."""
    source = folder.with_name(folder.name + "_source")
    if (folder / "vlprobe.yaml").is_file() and (source / "captions.jsonl").is_file():
        return 0.0
    start = time.perf_counter()
    for path in (folder, source):
        if path.exists():
            shutil.rmtree(path)
    (source / "images").mkdir(parents=True)
    rng = random.Random(seed)
    pool = [_photo_jpeg(rng) for _ in range(JPEG_POOL)]
    with open(source / "captions.jsonl", "w", encoding="utf-8") as fh:
        for row in _rows(n, seed, pool_size=1, image_size=8):  # the texts; the images are replaced
            name = f"images/{row['id']}.jpg"
            (source / name).write_bytes(_unique_jpeg(pool[rng.randrange(JPEG_POOL)], row["id"]))
            fh.write(json.dumps({**row, "image": name}) + "\n")
    (source / "vlprobe.yaml").write_text(SPEC, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-c", "import sys; from vlprobe.cli import main; sys.exit(main())",
                           "build", "folder", str(source), "--out", str(folder), "--license", "cc0-1.0",
                           "--config", "spatiality"],
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)))
    if proc.returncode != 0:
        sys.exit(f"vlprobe build folder failed:\n{proc.stderr[-3000:]}")
    return time.perf_counter() - start


# ---- measuring (in a fresh process per size) --------------------------------------------------------

def _status() -> dict[str, int]:
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
                out[key] = int(value.split()[0])  # kB
    return out


def child(folder: str, model: str, bootstrap: int, chunk_size: int, what: str, score_cache: str = "fresh",
          num_workers: int | None = None) -> None:
    peak = {"RssAnon": 0}
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            try:
                peak["RssAnon"] = max(peak["RssAnon"], _status().get("RssAnon", 0))
            except OSError:
                pass
            done.wait(0.1)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    import vlprobe

    cache = tempfile.mkdtemp(prefix="vlprobe-bench-scale-cache-")
    score_cache = cache if score_cache == "fresh" else score_cache  # "none": as --cache-dir none
    start = time.perf_counter()
    try:
        if what == "evaluate":
            res = vlprobe.evaluate(model=model, datasets=folder, bootstrap=bootstrap, cache_dir=score_cache,
                                   progress=False, chunk_size=chunk_size, num_workers=num_workers)
        else:
            res = vlprobe.probe(model=model, datasets=folder, bootstrap=bootstrap, cache_dir=cache, progress=False,
                                chunk_size=chunk_size)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    seconds = time.perf_counter() - start
    done.set()
    thread.join()
    if what == "evaluate":
        split = res.splits[0]
        rows, score, engine = len(split.items), split.metrics.get("acc_r"), res.provenance["engine"]
    else:
        info = res.provenance["dataset"]["splits"]["spatiality"]
        rows = info["train"]["rows_used"]
        score = next(r["macro_f1"] for r in res.rows if r["setting"] == "image" and r["test_modality"] == "image")
        engine = res.provenance["features"]
    print(json.dumps({
        "rows": rows, "seconds": seconds, "score": score,
        "cpu_seconds": sum(getattr(resource.getrusage(who), f) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
                           for f in ("ru_utime", "ru_stime")),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "peak_anon_mb": peak["RssAnon"] / 1024,
        "children_peak_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
        "engine": engine,
    }))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,30000,60000")
    ap.add_argument("--model", default=str(REPO / "models" / "mini-clip"))
    ap.add_argument("--bootstrap", type=int, default=0)
    ap.add_argument("--image-size", type=int, default=500,
                    help="square canvas in pixels (default 500, TraVLR's; smaller builds and decodes faster)")
    ap.add_argument("--chunk-size", type=int, default=2000)
    ap.add_argument("--what", default="evaluate", choices=("evaluate", "probe"),
                    help="evaluate: N test rows scored; probe: N train rows (+ --eval-rows validation and test rows) probed")
    ap.add_argument("--eval-rows", type=int, default=PROBE_EVAL_ROWS,
                    help=f"--what probe: validation and test rows each, at every size (default {PROBE_EVAL_ROWS:,})")
    ap.add_argument("--images", default="png", choices=("png", "jpeg"),
                    help="png: the 500 px scenes above; jpeg: 640x480 photo-like JPEGs (~90 KB) through `vlprobe build "
                         "folder`, first load and no score cache included (--what evaluate; default sizes 1500,6000)")
    ap.add_argument("--num-workers", type=int, default=None, help="DataLoader workers (default: vlprobe's)")
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "vlprobe-bench-scale"))
    ap.add_argument("--keep", action="store_true", help="keep the built folders")
    ap.add_argument("--child", nargs=1, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], args.model, args.bootstrap, args.chunk_size, args.what,
              "none" if args.images == "jpeg" else "fresh", args.num_workers)
        return

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    jpeg = args.images == "jpeg"
    if jpeg and args.what != "evaluate":
        ap.error("--images jpeg measures --what evaluate")
    if jpeg and args.sizes == ap.get_default("sizes"):
        args.sizes = "1500,6000"
    sizes = [int(s) for s in args.sizes.split(",")]
    images = "640x480 JPEGs (~90 KB) via `vlprobe build folder`, fresh datasets cache, no score cache" if jpeg \
        else f"{args.image_size} px PNGs"
    print(f"vlprobe.{args.what}: model {args.model}, {images}, num_workers {args.num_workers}, bootstrap {args.bootstrap}, "
          f"chunk size {args.chunk_size}, "
          f"{os.cpu_count()} CPUs, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}")
    print(f"{'rows':>7} {'build s':>8} {'wall s':>8} {'CPU s':>8} {'rows/s':>8} {'peak RSS MB':>12} "
          f"{'peak anon MB':>13} {'acc_r' if args.what == 'evaluate' else 'img F1':>6}")
    results = []
    for n in sizes:
        folder = work / (f"jpeg_{n}" if jpeg else f"travlr_like_{n}")
        if jpeg:
            built = build_jpeg(folder, n)
        else:
            built = build(folder, n, image_size=args.image_size, what=args.what, eval_rows=args.eval_rows)
        tmp = work / "tmp"  # the Arrow copy of the folder (vlprobe.storage.arrow_cache: $VLPROBE_CACHE/arrow) goes here
        tmp.mkdir(exist_ok=True)
        env = dict(os.environ, HF_DATASETS_CACHE=str(work / "hf-cache"), TMPDIR=str(tmp),
                   VLPROBE_CACHE=str(tmp / "vlprobe-cache"))
        if jpeg:  # a fresh datasets cache: the first load (parquet -> Arrow) is measured
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir()
            env["HF_DATASETS_CACHE"] = str(tmp / "hf-cache")
        proc = subprocess.run([sys.executable, __file__, "--child", str(folder), "--model", args.model,
                               "--bootstrap", str(args.bootstrap), "--chunk-size", str(args.chunk_size),
                               "--what", args.what, "--images", args.images]
                              + (["--num-workers", str(args.num_workers)] if args.num_workers is not None else []),
                              capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            sys.exit(f"the run on {n} rows failed:\n{proc.stderr[-3000:]}")
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        results.append(r)
        print(f"{r['rows']:>7} {built:>8.1f} {r['seconds']:>8.1f} {r['cpu_seconds']:>8.1f} {r['rows'] / r['seconds']:>8.1f} "
              f"{r['peak_rss_mb']:>12.0f} {r['peak_anon_mb']:>13.0f} {r['score']:>6.3f}", flush=True)
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
            shutil.rmtree(folder.with_name(folder.name + "_source"), ignore_errors=True)
            shutil.rmtree(tmp, ignore_errors=True)
    if len(results) > 1:
        first, last = results[0], results[-1]
        print(f"\npeak RSS {last['rows']} / {first['rows']} rows: {last['peak_rss_mb'] / first['peak_rss_mb']:.2f}x; "
              f"peak anon: {last['peak_anon_mb'] / first['peak_anon_mb']:.2f}x; time per row: "
              f"{(last['seconds'] / last['rows']) / (first['seconds'] / first['rows']):.2f}x")


if __name__ == "__main__":
    main()
