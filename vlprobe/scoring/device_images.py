"""Decode and preprocess images on the scorer's device (a GPU), for fast (torchvision) image processors.

On a GPU the input path, not the model, was the floor: one CPU core decodes a JPEG about 19x slower than nvjpeg does in
a batch (docs/performance.md). So reader threads read each batch's bytes (an RGB or grey JPEG is handed over encoded,
anything else decoded on the CPU), the JPEGs are decoded together on the device, and the scorer's image processor
runs there too; the pixels differ only at sharp colour edges (:data:`PIXEL_MAX_DIFF`, :data:`PIXEL_MEAN_DIFF`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from PIL import Image

from ..dataset.images import ImageError, ImageTooLargeError, _encoded, describe, open_checked, to_tensor, too_large

if TYPE_CHECKING:
    import torch
    from torch import Tensor

    from ..dataset.items import ImageLike
    from ..scorers.base import DualScorer

# RGB and grey JPEGs are decoded on the device; (format, mode) pairs as PIL reads the header.
DEVICE_DECODES = {("JPEG", "RGB"), ("JPEG", "L")}

# What the device path may differ from the CPU path by, in normalised pixel units (one grey level is about 0.015),
# as measured on an H100 (docs/performance.md): a few edge pixels by up to ~25 grey levels, the mean by a quarter of one.
PIXEL_MAX_DIFF = 0.5
PIXEL_MEAN_DIFF = 0.01


def device_path(scorer: object) -> tuple[bool, str]:
    """(whether images for ``scorer`` are decoded and preprocessed on its CUDA device, why not)."""
    device = str(getattr(scorer, "device", "cpu") or "cpu")
    if device.split(":")[0] in ("cpu", "meta"):
        return False, "the scorer runs on the CPU"
    if not device.startswith("cuda"):
        return False, "decoding on the device needs CUDA (nvjpeg)"
    prep = getattr(scorer, "preprocessing", None) or {}
    if prep.get("image_backend") != "torchvision":
        return False, (f"its image processor ({prep.get('image_processor', 'none')}) is not a fast (torchvision) one "
                       f"(or --exact-preprocessing asked for the PIL one)")
    resample = prep.get("resample")
    if resample is not None and ("LANCZOS" in str(resample).upper() or str(resample) == "1"):
        # transformers resizes with LANCZOS only on the CPU (on CUDA it falls back to BICUBIC)
        return False, "its image processor resizes with LANCZOS, which torchvision runs only on the CPU"
    try:
        import torchvision.io  # noqa: F401
    except Exception as err:  # a torchvision built for another torch
        return False, f"torchvision does not import ({err})"
    return True, ""


# JPEG start-of-frame markers (baseline, extended, progressive, lossless; Huffman and arithmetic), as PIL reads them
_SOF = frozenset({0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF})
_JPEG_MODES = {1: "L", 3: "RGB"}


def jpeg_header(data: bytes) -> tuple[str, tuple[int, int]] | None:
    """(mode as PIL names it, (width, height)) of an RGB or grey JPEG, from its markers, or None for anything else
    (then PIL has the last word). PIL's parser held the GIL for a sixth of the model's time per image on a GPU."""
    if data[:2] != b"\xff\xd8":
        return None
    at, n = 2, len(data)
    while at + 4 <= n:
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if marker == 0x01 or 0xD0 <= marker <= 0xD7:  # markers without a length
            at += 2
            continue
        if marker in (0xD8, 0xD9, 0xDA):  # a second SOI, EOI or scan data before any frame header
            return None
        length = (data[at + 2] << 8) | data[at + 3]
        if length < 2:
            return None
        if marker in _SOF:
            if at + 10 > n or length < 8:
                return None
            height = (data[at + 5] << 8) | data[at + 6]
            width = (data[at + 7] << 8) | data[at + 8]
            mode = _JPEG_MODES.get(data[at + 9])
            if mode is None or not width or not height:  # CMYK, odd component counts, a height given later (DNL)
                return None
            return mode, (width, height)
        at += 2 + length
    return None


def read_for_device(image: ImageLike, where: str = "") -> Tensor:
    """In a reader thread: an RGB or grey JPEG as its encoded bytes (a 1-D uint8 tensor, to decode on the device),
    anything else decoded here to a (3, H, W) uint8 tensor; the header is read for the size guard."""
    import torch

    if isinstance(image, Image.Image):
        return to_tensor(image, where)
    prefix = f"{where}: " if where else ""
    data = _encoded(image, prefix)
    header = jpeg_header(data)
    if header is not None:
        reason = too_large(header[1])
        if reason:
            raise ImageTooLargeError(f"{prefix}image {describe(image)} {reason}")
        return torch.frombuffer(bytearray(data), dtype=torch.uint8)
    with open_checked(data, prefix, image) as pil:
        kind = (pil.format, pil.mode)
    if kind in DEVICE_DECODES:
        return torch.frombuffer(bytearray(data), dtype=torch.uint8)
    return to_tensor(image, where)


def read_batch(rows: list[tuple[ImageLike, str]]) -> list[Tensor]:
    """:func:`read_for_device` for a batch's (image, where) rows: one task per batch (a future per image cost more)."""
    return [read_for_device(image, where) for image, where in rows]


_WARM: dict[str, float] = {}  # device -> seconds its first decode (and preprocess) took, in this process


def warm_up(device: object, preprocess: Callable[[list[Tensor]], object] | None = None) -> float:
    """Decode a tiny JPEG on ``device`` and ``preprocess`` it, once per process: the first nvjpeg / CUDA use costs
    seconds, paid here, not in the first timed batch. Returns the seconds it took (0: already warm)."""
    key = str(device)
    if key in _WARM:
        return 0.0
    import torch
    from torchvision.io import ImageReadMode, decode_jpeg, encode_jpeg

    start = time.perf_counter()
    tiny = encode_jpeg(torch.full((3, 16, 16), 128, dtype=torch.uint8))
    with torch.inference_mode():
        image = decode_jpeg([tiny], mode=ImageReadMode.RGB, device=key)[0]
        if preprocess is not None:
            try:
                preprocess([image])
            except Exception:  # noqa: BLE001
                pass
    if key.startswith("cuda"):
        torch.cuda.synchronize(torch.device(key))
    _WARM[key] = time.perf_counter() - start
    return _WARM[key]


def decode_on(payloads: list[Tensor], device: str, wheres: list[str] | None = None) -> list[Tensor]:
    """:func:`read_for_device`'s payloads -> (3, H, W) uint8 tensors on ``device``, the JPEGs decoded together; one
    the batched decode refuses is decoded alone, on the device, then on the CPU, else an ImageError names it."""
    from torchvision.io import ImageReadMode, decode_jpeg

    out = {k: p.to(device, non_blocking=True) for k, p in enumerate(payloads) if p.dim() != 1}
    encoded = [k for k, p in enumerate(payloads) if p.dim() == 1]
    if encoded:
        try:
            decoded = decode_jpeg([payloads[k] for k in encoded], mode=ImageReadMode.RGB, device=device)
        except RuntimeError:
            decoded = [_decode_one(payloads[k], device, wheres[k] if wheres else f"image {k}") for k in encoded]
        out.update(zip(encoded, decoded, strict=True))
    return [out[k] for k in range(len(payloads))]


def _decode_one(data: Tensor, device: str, where: str) -> Tensor:
    from torchvision.io import ImageReadMode, decode_jpeg

    try:
        image: Tensor = decode_jpeg(data, mode=ImageReadMode.RGB, device=device)
        return image
    except RuntimeError:
        pass
    try:  # nvjpeg refuses a few valid files (e.g. some progressive or 4:1:1 ones): libjpeg, then PIL
        return to_tensor(bytes(data.cpu().numpy().tobytes()), where).to(device, non_blocking=True)
    except ImageError:
        raise
    except Exception as err:
        raise ImageError(f"{where}: cannot decode JPEG: {err}") from None


class DeviceImages:
    """:func:`read_for_device`'s payloads -> the scorer's model inputs, decoded and preprocessed on the device; on
    CUDA on a side stream, so the next batch is prepared while the model runs this one."""

    def __init__(self, scorer: DualScorer[object]) -> None:
        self.scorer = scorer
        self.device = str(scorer.device)
        self._stream: torch.cuda.Stream | None = None  # made on first use
        self.checked = False  # set by the engine once a first image went through
        self.warmup_s = 0.0  # if warming up fails, so does the engine's check on a first image: the CPU path
        try:
            self.warmup_s = warm_up(self.device, getattr(scorer, "preprocess_images", None))
        except Exception:  # noqa: BLE001
            pass

    def __call__(self, payloads: list[Tensor], wheres: list[str] | None = None) -> object:
        import torch

        if self._stream is None and self.device.startswith("cuda"):
            self._stream = torch.cuda.Stream(device=torch.device(self.device))  # type: ignore[no-untyped-call]
        on_stream = torch.cuda.stream(self._stream) if self._stream is not None else contextlib.nullcontext()
        with torch.inference_mode(), on_stream:  # (inference mode is per thread: the engine's preparing thread's own)
            inputs = self.scorer.preprocess_images(decode_on(payloads, self.device, wheres))
        if self._stream is not None:
            self._stream.synchronize()  # the inputs are complete before another stream reads them
        return inputs
