"""The device input path (vlprobe.scoring.device_images) and ``batch_size="auto"`` (vlprobe.scoring.auto_batch), on the CPU.

No GPU here: the device path's code runs with ``device="cpu"`` (the same decode_jpeg batch call, the same
processor call on tensors), and is held to the model's own processor given the PIL images; the GPU's
difference (nvjpeg, device float ops) is measured by scripts/bench_scoring.py on a GPU. The batch size
search runs on a fake scorer whose time per batch and out-of-memory threshold the test sets: nothing
depends on this machine's speed.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from helpers import encode, jpeg_photo
from PIL import Image
from test_preprocessing import TEXTS, _encoded_cases, needs_torchvision

from vlprobe.dataset.images import ImageError, ImageTooLargeError, to_pil
from vlprobe.dataset.items import Item
from vlprobe.scorers import load_scorer
from vlprobe.scoring import auto_batch, device_images
from vlprobe.scoring.device_images import (
    PIXEL_MAX_DIFF,
    PIXEL_MEAN_DIFF,
    DeviceImages,
    decode_on,
    device_path,
    jpeg_header,
    read_batch,
    read_for_device,
)
from vlprobe.scoring.engine import Engine


def _cases() -> dict[str, bytes]:
    """Every format and mode of test_preprocessing, plus odd sizes and an EXIF-rotated photo."""
    rng = np.random.default_rng(1)
    cases = dict(_encoded_cases())
    for w, h in ((1, 1), (3, 7), (1000, 17), (17, 1000), (225, 223)):
        cases[f"jpeg {w}x{h}"] = encode(Image.fromarray((rng.random((h, w, 3)) * 255).astype(np.uint8)), "JPEG")
    exif = Image.Exif()
    exif[0x0112] = 6  # orientation: rotate 90 degrees on display
    cases["jpeg exif rotated"] = encode(jpeg_photo(5, size=(320, 200)), "JPEG", exif=exif.tobytes())
    return cases


@needs_torchvision
def test_cpu_decode_of_the_device_path_gives_the_pil_pixels():
    """read_for_device + decode_on: JPEGs (RGB and grey) go as bytes and are decoded in one batch, the rest are
    decoded in the worker; every image comes out as to_pil's pixels (EXIF orientation ignored by both)."""
    import torch

    cases = _cases()
    payloads = [read_for_device({"bytes": data, "path": name}, where=name) for name, data in cases.items()]
    kinds = {name: p.dim() for name, p in zip(cases, payloads)}
    assert kinds["jpeg photo"] == 1 and kinds["jpeg grey"] == 1 and kinds["jpeg 3x7"] == 1  # bytes to the device
    assert kinds["jpeg cmyk"] == 3 and kinds["png rgba"] == 3 and kinds["webp"] == 3  # decoded in the worker
    decoded = decode_on(payloads, "cpu", list(cases))
    for (name, data), got in zip(cases.items(), decoded):
        want = torch.from_numpy(np.array(to_pil(data))).permute(2, 0, 1)
        assert got.dtype == torch.uint8 and got.shape == want.shape, name
        assert torch.equal(got, want), (name, int((got.int() - want.int()).abs().max()))
    assert decoded[list(cases).index("jpeg exif rotated")].shape[1:] == (200, 320)  # as stored, not rotated


def test_jpeg_header_reads_what_pil_reads():
    """The marker scan gives PIL's mode and size for every RGB and grey JPEG, and None (PIL decides) for the rest."""
    cases = _cases()
    for name, data in cases.items():
        with Image.open(io.BytesIO(data)) as pil:
            want = (pil.mode, pil.size) if pil.format == "JPEG" and pil.mode in ("RGB", "L") else None
        assert jpeg_header(data) == want, name
    assert jpeg_header(cases["jpeg photo"]) is not None and jpeg_header(cases["jpeg grey"])[0] == "L"
    assert jpeg_header(cases["jpeg cmyk"]) is None
    photo = cases["jpeg photo"]
    assert jpeg_header(photo[:2] + b"\xff\xff" + photo[2:]) == jpeg_header(photo)  # a fill byte
    for odd in (b"", b"\xff\xd8", b"\xff\xd8\xff" + b"0" * 40, photo[:20], b"\xff\xd8\xff\xda\x00\x08" + b"\x00" * 8,
                b"\xff\xd8\xff\xc0\x00\x11\x08\x00\x00\x00\x10\x03" + b"\x00" * 9):  # ... height 0 (DNL)
        assert jpeg_header(odd) is None, odd


@needs_torchvision
def test_read_for_device_refuses_an_oversized_jpeg_from_its_header(monkeypatch):
    data = encode(jpeg_photo(1, size=(320, 200)), "JPEG")
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 100)
    with pytest.raises(ImageTooLargeError, match=r"row 3: image photo.jpg is 320 x 200 = 64,000 pixels"):
        read_for_device({"bytes": data, "path": "photo.jpg"}, where="row 3")


@needs_torchvision
def test_read_batch_is_read_for_device_on_each_row():
    import torch

    cases = _cases()
    rows = [({"bytes": data, "path": name}, name) for name, data in cases.items()]
    for got, (image, where) in zip(read_batch(rows), rows):
        assert torch.equal(got, read_for_device(image, where))
    with pytest.raises(ImageError, match="row 9: corrupt or unreadable image bad.jpg"):
        read_batch([rows[0], ({"bytes": cases["jpeg photo"][:20], "path": "bad.jpg"}, "row 9")])


@needs_torchvision
def test_the_device_is_warmed_once_per_process(tiny_clip_path, monkeypatch):
    monkeypatch.setattr(device_images, "_WARM", {})
    first = device_images.warm_up("cpu")
    assert first > 0 and device_images.warm_up("cpu") == 0.0
    assert DeviceImages(load_scorer(str(tiny_clip_path))).warmup_s == 0.0  # already warm
    monkeypatch.setattr(device_images, "_WARM", {})
    scorer = load_scorer(str(tiny_clip_path))
    seen = []
    real = scorer.preprocess_images
    monkeypatch.setattr(scorer, "preprocess_images", lambda images: seen.append([tuple(i.shape) for i in images]) or real(images))
    assert DeviceImages(scorer).warmup_s > 0 and seen == [[(3, 16, 16)]]  # the processor ran on the tiny image too
    monkeypatch.setattr(device_images, "_WARM", {})
    monkeypatch.setattr(scorer, "preprocess_images", lambda images: 1 / 0)  # a failing processor: left to the check
    assert DeviceImages(scorer).warmup_s > 0

    def broken(device):
        raise RuntimeError("no nvjpeg")

    monkeypatch.setattr(device_images, "warm_up", broken)  # a failed warm-up leaves the first-image check to decide
    assert DeviceImages(load_scorer(str(tiny_clip_path))).warmup_s == 0.0


@needs_torchvision
def test_read_for_device_names_the_unreadable_file():
    whole = _encoded_cases()["jpeg photo"]
    with pytest.raises(ImageError, match="row 7: corrupt or unreadable image photo.jpg"):
        read_for_device({"bytes": whole[:20], "path": "photo.jpg"}, where="row 7")


@needs_torchvision
@pytest.mark.parametrize("fixture", ["tiny_clip_path", "tiny_siglip_path", "tiny_align_path"])
def test_device_path_inputs_equal_the_processor_on_pil_images(request, fixture):
    """DeviceImages (run on the CPU here) gives the model inputs its own fast processor gives for the PIL
    images (the same pixels: equal within float rounding), and the PIL processor's within the device path's
    stated tolerance (PIXEL_MAX_DIFF, PIXEL_MEAN_DIFF)."""
    path = str(request.getfixturevalue(fixture))
    fast = load_scorer(path)
    slow = load_scorer(path, exact_preprocessing=True)
    cases = _cases()
    payloads = [read_for_device(data) for data in cases.values()]
    got = DeviceImages(fast)(payloads)["pixel_values"].float().numpy()
    pils = [to_pil(data) for data in cases.values()]
    want = fast.preprocess_images(pils)["pixel_values"].float().numpy()
    assert got.shape == want.shape
    assert float(np.abs(got - want).max()) <= 1e-5, fixture
    exact = slow.preprocess_images(pils)["pixel_values"].float().numpy()
    diff = np.abs(got - exact)
    assert diff.max() <= PIXEL_MAX_DIFF and diff.mean() <= PIXEL_MEAN_DIFF, (fixture, float(diff.max()), float(diff.mean()))


class _Device:
    """A scorer stand-in for device_path()."""

    def __init__(self, device, **prep):
        self.device = device
        self.preprocessing = {"image_backend": "torchvision", "image_processor": "CLIPImageProcessor", **prep}

    def preprocess_images(self, images):
        return images


@needs_torchvision
def test_device_path_only_where_every_step_runs_on_the_device():
    assert device_path(_Device("cuda:0")) == (True, "")
    assert device_path(_Device("cpu"))[0] is False
    assert device_path(_Device("mps")) == (False, "decoding on the device needs CUDA (nvjpeg)")
    no, why = device_path(_Device("cuda", image_backend="pil", image_processor="CLIPImageProcessorPil"))
    assert not no and "CLIPImageProcessorPil" in why and "not a fast" in why
    no, why = device_path(_Device("cuda", resample=1))  # PIL's LANCZOS
    assert not no and "LANCZOS" in why


def _photo_items(n=6):
    items = []
    for k in range(n):
        fmt = "PNG" if k % 3 == 2 else "JPEG"  # PNGs take the worker-decode branch
        data = encode(jpeg_photo(10 + k, size=(160 + 8 * k, 120)), fmt, quality=90)
        items.append(Item(f"i{k}", [{"bytes": data, "path": f"p{k}.{fmt.lower()}"}], TEXTS,
                          np.array([[True, False]])))
    return items


@needs_torchvision
@pytest.mark.parametrize("workers", [0, 1])
def test_engine_device_path_gives_the_cpu_paths_scores(tiny_clip_path, workers):
    """The engine's device path (bytes from the workers, decode + processor in the main process, one batch
    ahead in a thread), run on the CPU, gives the scores of the CPU path, and names an unreadable image."""
    scorer = load_scorer(str(tiny_clip_path))
    items = _photo_items()
    want = Engine(scorer, batch_size=4, progress=False).score(items)
    engine = Engine(scorer, batch_size=4, num_workers=workers, progress=False)
    engine._device_images = DeviceImages(scorer)  # what a GPU scorer gets
    got = engine.score(items)
    for a, b in zip(got.scores, want.scores):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)
    assert got.stats["image_preprocessing_on"] == "cpu"
    bad = Item("broken", [{"bytes": b"\xff\xd8\xff" + b"0" * 40, "path": "broken.jpg"}], TEXTS, np.array([[True, False]]))
    engine = Engine(scorer, batch_size=4, num_workers=workers, progress=False)
    engine._device_images = DeviceImages(scorer)
    with pytest.raises(ImageError, match="item 'broken'.*broken.jpg"):
        engine.score([*items[:2], bad])


@needs_torchvision
def test_engine_device_path_reads_a_batch_per_task_in_threads_made_once(tiny_clip_path, monkeypatch):
    """One read task per batch (not a future per image), the reader and preparing threads made once per engine and
    kept across calls, and texts encoded between image batches (while the next batch is read and prepared)."""
    import threading

    import vlprobe.scoring.engine as engine_module

    scorer = load_scorer(str(tiny_clip_path))
    items = [Item(f"i{k}", it.images, (f"a photo number {k}", f"a drawing number {k}"), it.gold)
             for k, it in enumerate(_photo_items(12))]
    reads: list[int] = []
    real_read_batch = engine_module.read_batch
    monkeypatch.setattr(engine_module, "read_batch", lambda rows: reads.append(len(rows)) or real_read_batch(rows))
    calls: list[str] = []
    real_images, real_texts = scorer.encode_images, scorer.encode_texts
    monkeypatch.setattr(scorer, "encode_images", lambda inputs: calls.append("i") or real_images(inputs))
    monkeypatch.setattr(scorer, "encode_texts", lambda texts: calls.append("t") or real_texts(texts))
    real_ids = scorer.encode_seen_ids
    monkeypatch.setattr(scorer, "encode_seen_ids", lambda ids: calls.append("t") or real_ids(ids))
    want = Engine(scorer, batch_size=4, progress=False).score(items)
    calls.clear()
    engine = Engine(scorer, batch_size=4, num_workers=2, progress=False)
    engine._device_images = DeviceImages(scorer)
    got = engine.score(items)
    for a, b in zip(got.scores, want.scores):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)
    assert reads == [4, 4, 4]  # 12 images, batch 4: one read per batch
    assert calls.count("i") == 3 and calls.count("t") >= 6  # 24 texts, batch 4 (texts of one token length per batch)
    assert calls[0] == "i" and "t" in calls[: calls.index("i", 1)]  # texts between the first and second image batch
    pools = engine._pools()
    engine.score(items[:8])  # a second call: the same threads
    assert engine._pools() == pools and reads == [4, 4, 4, 4, 4]
    names = [t.name for t in threading.enumerate()]
    assert sum(n.startswith("vlprobe-read") for n in names) <= 2 and sum(n.startswith("vlprobe-prepare") for n in names) <= 1


@needs_torchvision
def test_engine_falls_back_to_the_cpu_path_when_the_device_refuses(tiny_clip_path):
    scorer = load_scorer(str(tiny_clip_path))
    items = _photo_items(3)

    class Refusing(DeviceImages):
        def __call__(self, payloads, wheres=None):
            raise RuntimeError("no kernel for this op on the device")

    lines: list[str] = []
    engine = Engine(scorer, batch_size=4, progress=False, log=lines.append)
    engine._device_images = Refusing(scorer)
    got = engine.score(items)
    want = Engine(scorer, batch_size=4, progress=False).score(items)
    for a, b in zip(got.scores, want.scores):
        np.testing.assert_array_equal(a, b)
    assert got.stats["image_preprocessing_on"] == "cpu"
    assert any("the device path failed" in line and "no kernel" in line for line in lines), lines


# ---- batch_size="auto" -----------------------------------------------------------------------------------------

def test_search_doubles_until_throughput_stops_rising():
    # a fixed cost per batch amortised until 256, then no gain: 256 is kept
    def seconds(n):
        return 0.05 + n * 1e-3 if n <= 256 else n * 1.2e-3

    size, trials = auto_batch.choose_batch_size(seconds)
    assert size == 256
    assert [t["batch_size"] for t in trials] == [32, 64, 128, 256, 512]


def test_search_steps_back_on_out_of_memory():
    import torch

    freed = []

    def seconds(n):
        if n > 100:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return 1.0  # every size takes a second: bigger is always better

    size, trials = auto_batch.choose_batch_size(seconds, on_oom=lambda: freed.append(1))
    assert size == 64 and trials[-1] == {"batch_size": 128, "out_of_memory": True} and freed == [1]
    size, _ = auto_batch.choose_batch_size(lambda n: seconds(n * 8))  # even 32 does not fit: halved until one does
    assert size == 8
    with pytest.raises(ValueError, match="boom"):  # anything but out-of-memory is the caller's error
        auto_batch.choose_batch_size(lambda n: (_ for _ in ()).throw(ValueError("boom")))


@pytest.fixture
def fake_gpu(monkeypatch, tmp_path):
    """A ToyDual on a pretend accelerator ("fake:0"): its time per batch and its memory limit are the test's."""
    import torch
    from helpers_engine import ToyDual

    monkeypatch.setenv("VLPROBE_CACHE", str(tmp_path / "home"))
    calls: list[int] = []
    limit = {"inputs": 100}

    def timed_call(fn, inputs, device):
        n = len(inputs)
        calls.append(n)
        if n > limit["inputs"]:
            raise torch.OutOfMemoryError("CUDA out of memory")
        fn(inputs)
        return 0.02 + n * 1e-4  # throughput rises until the memory runs out

    monkeypatch.setattr(auto_batch, "timed_call", timed_call)
    return ToyDual("toy/fake-gpu", device="fake:0"), calls, limit


def test_engine_auto_searches_each_tower_remembers_and_records(fake_gpu, tmp_path):
    from helpers_engine import toy_items

    scorer, calls, limit = fake_gpu
    items = toy_items(200, n_colors=200)  # 200 distinct images, 68 distinct texts
    lines: list[str] = []
    result = Engine(scorer, batch_size="auto", progress=False, log=lines.append).score(items)
    # images: 32, 64, then 128 runs out of memory -> 64; texts likewise (128 is the most 68 texts need)
    assert calls == [32, 64, 128, 32, 64, 128]
    assert result.stats["batch_size"] == {"chosen": "auto", "images": 64, "texts": 64}
    assert any("batch size for the images" in line and ": 64 (auto; tried 32:" in line and "128: out of memory" in line
               for line in lines), lines
    assert any("decoded and preprocessed on the CPU" in line for line in lines)  # ToyDual has no fast processor
    memo = json.loads((tmp_path / "home" / auto_batch.MEMO_FILE).read_text())
    assert sorted(memo.values()) == [64, 64] and all("fake:0" in key for key in memo)
    fixed = Engine(scorer, batch_size=32, progress=False).score(items)
    for a, b in zip(result.scores, fixed.scores):  # float32 noise of another batch size at most
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)

    # A search that stops only because this run had few inputs left is used, not remembered.
    (tmp_path / "home" / auto_batch.MEMO_FILE).unlink()
    limit["inputs"] = 10_000
    calls.clear()
    result = Engine(scorer, batch_size="auto", progress=False, log=lines.append).score(toy_items(20, n_colors=20))
    assert calls == [32, 32, 64, 128]  # images: 20 (32 is the first and last size); texts: 68 (up to 128)
    assert result.stats["batch_size"] == {"chosen": "auto", "images": 32, "texts": 128}
    assert not (tmp_path / "home" / auto_batch.MEMO_FILE).exists()


@pytest.mark.parametrize("device_path", [False, True])
def test_engine_searches_the_texts_batch_size_before_the_first_image_batch(fake_gpu, monkeypatch, device_path):
    """Both searches come before any image batch is read or encoded (texts are encoded between image batches, and a
    search timed beside the next batch's reading and preparing measured too little). Fake timer: no clock read."""
    import threading

    from helpers_engine import toy_items

    import vlprobe.scoring.engine as engine_module

    scorer, _, _ = fake_gpu
    events: list[str] = []
    searching: list[int] = []

    def timed_call(fn, inputs, device):
        searching.append(1)
        try:
            fn(inputs)
        finally:
            searching.pop()
        return max(0.02, len(inputs) * 3e-4)  # throughput rises up to 64, then flat

    monkeypatch.setattr(auto_batch, "timed_call", timed_call)
    for name, tower in (("encode_images", "images"), ("encode_texts", "texts")):
        monkeypatch.setattr(scorer, name, (lambda real, tower: lambda x: (
            events.append(f"{'search' if searching else 'batch'} {tower}"), real(x))[1])(getattr(scorer, name), tower))
    engine = Engine(scorer, batch_size="auto", num_workers=1, progress=False, log=lambda line: None)
    if device_path:  # the device path's reader threads and preparing thread, with a stand-in for the device's work
        real_read = engine_module.read_batch
        # a batch is read in a reader thread; the search's sample, in this one
        monkeypatch.setattr(engine_module, "read_batch", lambda rows: events.append(
            "read" if threading.current_thread().name.startswith("vlprobe-read") else "sample") or real_read(rows))

        def on_device(payloads, wheres=None):
            return scorer.preprocess_images([Image.fromarray(p.permute(1, 2, 0).numpy()) for p in payloads])

        on_device.checked = True
        engine._device_images = on_device
    result = engine.score(toy_items(200, n_colors=200))
    first = min(events.index(e) for e in ("batch images", "read") if e in events)
    assert {"search images", "search texts"} <= set(events[:first]), events
    assert not any(e.startswith("search") for e in events[first:]), events
    assert ("read" in events) == device_path and events.count("batch images") == 4  # 200 images at 64
    # texts are still encoded between image batches
    assert events.index("batch texts") < len(events) - events[::-1].index("batch images")
    assert result.stats["batch_size"] == {"chosen": "auto", "images": 64, "texts": 64}


def test_engine_auto_reads_the_memo_and_is_the_default_on_cpu(fake_gpu, monkeypatch):
    from helpers_engine import ToyDual, toy_items

    scorer, calls, _ = fake_gpu
    auto_batch.remember(auto_batch.memo_key(scorer, "images"), 96)
    auto_batch.remember(auto_batch.memo_key(scorer, "texts"), 48)
    lines: list[str] = []
    result = Engine(scorer, batch_size="auto", progress=False, log=lines.append).score(toy_items(10))
    assert calls == [] and result.stats["batch_size"] == {"chosen": "auto", "images": 96, "texts": 48}
    assert any("remembered" in line for line in lines)
    cpu = Engine(ToyDual("toy/cpu"), batch_size="auto", progress=False).score(toy_items(10))
    assert cpu.stats["batch_size"] == {"chosen": "given", "images": 32, "texts": 32}
    from vlprobe.options import Settings  # the batch size is checked once, by the settings

    with pytest.raises(ValueError, match=r"batch_size='big': must be a whole number \(at least 1\) or 'auto'"):
        Settings(batch_size="big")


def test_the_batch_size_memo_is_read_only_from_a_cache_home_and_file_of_one_s_own(fake_gpu, tmp_path, capsys):
    """Issue 48: batch-sizes.json is trusted as every cache is: in a cache home another user could write into (or
    as a file they could, or a symbolic link) it is not read, with one warning, and the search runs again; a
    refused home is not written to; a memo file of one's own home that others could write is replaced."""
    from helpers_engine import toy_items

    scorer, calls, _ = fake_gpu
    home = tmp_path / "home"
    memo = home / auto_batch.MEMO_FILE
    keys = [auto_batch.memo_key(scorer, tower) for tower in ("images", "texts")]
    for key in keys:
        auto_batch.remember(key, 8)  # planted: a batch of 8 would slow every run down
    assert oct(home.stat().st_mode & 0o777) == "0o700" and auto_batch.remembered(keys[0]) == 8
    home.chmod(0o777)
    planted = memo.read_text()
    result = Engine(scorer, batch_size="auto", progress=False, log=lambda line: None).score(toy_items(200, n_colors=200))
    assert calls and result.stats["batch_size"] == {"chosen": "auto", "images": 64, "texts": 64}  # searched again
    assert memo.read_text() == planted  # nothing written into a refused home
    err = capsys.readouterr().err
    assert f"not using the cache folder {home}: {home} is writable by others (mode 777)" in err
    home.chmod(0o700)
    memo.chmod(0o666)
    assert auto_batch.remembered(keys[0]) is None
    assert f"not reading {memo}: {memo} is writable by others (mode 666)" in capsys.readouterr().err
    auto_batch.remember(keys[1], 64)  # replaced by a file of one's own, without the planted entries
    assert json.loads(memo.read_text()) == {keys[1]: 64} and memo.stat().st_mode & 0o077 == 0
    memo.unlink()
    (tmp_path / "elsewhere.json").write_text(json.dumps({keys[0]: 8}))
    memo.symlink_to(tmp_path / "elsewhere.json")
    assert auto_batch.remembered(keys[0]) is None and "is a symbolic link" in capsys.readouterr().err
