"""Images as datasets hand them over: decode, hash and blank them, with errors that name the file. An image over
``PIL.Image.MAX_IMAGE_PIXELS`` is refused from its header (PNG cannot be decoded at reduced size)."""

from __future__ import annotations

import contextlib
import hashlib
import io
import math
import os
import re
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from PIL import Image, UnidentifiedImageError

from ..errors import VlprobeError
from .items import ImageLike
from .reading import FileError, read_bytes

if TYPE_CHECKING:
    from torch import Tensor


class ImageError(VlprobeError, ValueError):
    """An image that cannot be read; the message names the item and file where known."""


class ImageTooLargeError(ImageError):
    """An image with more pixels than ``PIL.Image.MAX_IMAGE_PIXELS``: refused, not decoded."""


# The largest image file vlprobe reads: an image within PIL.Image.MAX_IMAGE_PIXELS stored uncompressed is 358 MB.
MAX_IMAGE_BYTES = 512 << 20


def encoded_file(path: str | os.PathLike[str], where: str = "") -> bytes:
    """The bytes of image file ``path`` (a regular file within :data:`MAX_IMAGE_BYTES`), else an ImageError naming it."""
    prefix = f"{where}: " if where else ""
    try:
        return read_bytes(path, "image file", MAX_IMAGE_BYTES)
    except FileError as err:
        kind = ImageTooLargeError if "larger than" in str(err) else ImageError
        raise kind(f"{prefix}{err}") from None


def _cell(cell: Mapping[str, Any]) -> tuple[bytes | None, str | None]:
    """A datasets image cell ``{"bytes": ..., "path": ...}`` read once: (its bytes, its path), each None when empty."""
    data, path = cell.get("bytes"), cell.get("path")
    return (bytes(data) if data else None), (str(path) if path else None)


def image_cell_in_folder(value: object, folder: str | os.PathLike[str] | None, where: str,
                         outside: bool = False) -> object:
    """A dataset image cell with its path resolved inside ``folder`` (None: a Hub dataset); a path outside it raises
    :class:`ImageError` naming ``where`` unless ``outside``: a dataset must not make vlprobe read the user's files."""
    if isinstance(value, (list, tuple)):
        return type(value)(image_cell_in_folder(v, folder, where, outside) for v in value)
    if isinstance(value, dict):
        data, cell_path = _cell(value)
        if data is not None or cell_path is None:
            return value
        path = cell_path
    elif isinstance(value, (str, os.PathLike)):
        path = str(value)
    else:
        return value
    base = os.path.realpath(folder) if folder is not None else None
    target = os.path.realpath(os.path.join(base, path)) if base is not None and not os.path.isabs(path) else None
    if outside:
        return {"bytes": None, "path": target or path}
    if base is None or target is None or os.path.commonpath([base, target]) != base:
        where_from = f"outside the dataset folder {folder}" if folder is not None else "a local path in a dataset " \
                     "without a folder"
        raise ImageError(f"{where}: the image cell holds the path {path[:200]!r}, {where_from}; vlprobe reads images "
                         "only from a row's bytes or from files inside its dataset folder (pass --outside-images, "
                         "outside_images=True in Python, to read it)")
    return {"bytes": None, "path": target}


def describe(image: object) -> str:
    path = _cell(image)[1] if isinstance(image, dict) else None
    if path is not None:
        return path
    if isinstance(image, (str, os.PathLike)):
        return str(image)
    if isinstance(image, Image.Image):
        return f"<PIL {image.mode} {image.size[0]}x{image.size[1]}>"
    return f"<{type(image).__name__}>"


def to_pil(image: ImageLike, where: str = "") -> Image.Image:
    """Decode ``image`` to an RGB PIL image (alpha flattened, as Winoground's reference code does)."""
    prefix = f"{where}: " if where else ""
    if isinstance(image, Image.Image):
        pil = image
    else:
        data = _encoded(image, prefix)
        pil = open_checked(data, prefix, image)
        try:
            pil.load()
        except (UnidentifiedImageError, OSError, SyntaxError) as err:
            raise ImageError(f"{prefix}corrupt or unreadable image {describe(image)}: {err}") from None
    if pil.mode != "RGB":
        pil = pil.convert("RGB")
    return pil


# (format, mode) pairs torchvision.io decodes to PIL's convert("RGB") pixels (tests/test_preprocessing.py)
_TORCHVISION_DECODES = {("JPEG", "RGB"), ("JPEG", "L"), ("PNG", "RGB"), ("PNG", "L")}


def to_tensor(image: ImageLike, where: str = "") -> Tensor:
    """Decode ``image`` to a (3, H, W) uint8 tensor of :func:`to_pil`'s pixels, by torchvision.io where it can (2x)."""
    import torch

    if not isinstance(image, Image.Image):
        prefix = f"{where}: " if where else ""
        data = _encoded(image, prefix)
        with open_checked(data, prefix, image) as header:  # reads the header only
            kind = (header.format, header.mode)
        if kind in _TORCHVISION_DECODES:
            from torchvision.io import ImageReadMode, decode_image

            try:
                decoded: Tensor = decode_image(torch.frombuffer(bytearray(data), dtype=torch.uint8),
                                               mode=ImageReadMode.RGB)
                return decoded
            except RuntimeError:
                pass  # let PIL decode it, or say why it cannot
    return torch.from_numpy(np.array(to_pil(image, where))).permute(2, 0, 1).contiguous()


def too_large(size: tuple[int, int] | None, pixels: int | None = None) -> str | None:
    """Why an image of ``size`` (or ``pixels``) is refused (more than ``PIL.Image.MAX_IMAGE_PIXELS``), or None."""
    limit = Image.MAX_IMAGE_PIXELS
    n = size[0] * size[1] if size is not None else pixels
    if not limit or n is None or n <= limit:
        return None
    dims = f"{size[0]:,} x {size[1]:,} = " if size is not None else ""
    return (f"is {dims}{n:,} pixels, more than the {int(limit):,} vlprobe decodes (PIL.Image.MAX_IMAGE_PIXELS, "
            "a guard against decompression bombs); refused: downscale it (or raise the limit if you trust it)")


def check_crop_box(box: tuple[float, float, float, float], size: tuple[int, int], where: str) -> tuple[int, ...]:
    """``box`` (as ``PIL.Image.crop`` takes it) as whole pixels; :class:`ImageError` naming ``where`` for coordinates
    no image reaches (PIL's C code overflows past 2**31), :class:`ImageTooLargeError` for a region too large."""
    if not all(isinstance(v, (int, float)) and math.isfinite(v) and abs(v) < 2**31 for v in box):
        raise ImageError(f"{where}: crop box {tuple(box)} is not a region of an image (its coordinates must be finite "
                         f"pixel positions; the image is {size[0]} x {size[1]})")
    left, top, right, bottom = (int(round(v)) for v in box)
    reason = too_large((max(0, right - left), max(0, bottom - top)))
    if reason:
        raise ImageTooLargeError(f"{where}: crop box {tuple(box)} {reason.replace('is ', 'is a region of ', 1)}")
    return left, top, right, bottom


def open_checked(data: bytes, prefix: str = "", image: ImageLike | None = None) -> Image.Image:
    """``Image.open`` on encoded bytes (the header only); :class:`ImageError` naming the file when it cannot be."""
    name = describe(image if image is not None else data)
    try:
        with warnings.catch_warnings():  # PIL warns between 1x and 2x its limit; the size is checked below
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            pil = Image.open(io.BytesIO(data))
    except Image.DecompressionBombError as err:  # over 2x the limit: PIL refuses before telling the size
        found = re.search(r"\((\d+) pixels\)", str(err))
        reason = too_large(None, int(found.group(1))) if found else None
        raise ImageTooLargeError(f"{prefix}image {name} {reason or err}") from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as err:
        raise ImageError(f"{prefix}corrupt or unreadable image {name}: {err}") from None
    reason = too_large(pil.size)
    if reason:
        pil.close()
        raise ImageTooLargeError(f"{prefix}image {name} {reason}")
    return pil


def _encoded(image: ImageLike, prefix: str) -> bytes:
    """The encoded bytes of ``image``, else :class:`ImageError` naming it after ``prefix``."""
    data: bytes | None = None
    try:
        if isinstance(image, (bytes, bytearray)):
            data = bytes(image)
        elif isinstance(image, dict):
            data, path = _cell(image)
            if data is None and path is not None and os.path.isfile(path):
                data = encoded_file(path)
        elif isinstance(image, (str, os.PathLike)):
            data = encoded_file(image)
    except ImageError as err:
        raise type(err)(f"{prefix}{err}") from None
    except OSError as err:
        raise ImageError(f"{prefix}cannot read image {describe(image)}: {err}") from None
    if data is None:
        raise ImageError(f"{prefix}no image data in {describe(image)}")
    return data


def image_size(image: ImageLike, where: str = "") -> tuple[int, int]:
    """(width, height) of a dataset image, reading only the header of encoded images."""
    if isinstance(image, Image.Image):
        return image.size
    prefix = f"{where}: " if where else ""
    data = _encoded(image, prefix)
    with open_checked(data, prefix, image) as im:
        return im.size


def content_hash(image: ImageLike) -> str:
    """A stable content hash: sha256 of the encoded bytes, or of a PIL image's RGB pixels and size."""
    h = hashlib.sha256()
    if isinstance(image, Image.Image):
        pil = to_pil(image)
        h.update(f"rgb:{pil.size[0]}x{pil.size[1]}:".encode())
        h.update(pil.tobytes())
    else:
        h.update(b"bytes:")
        h.update(_encoded(image, ""))
    return h.hexdigest()


def blank_like(image: ImageLike, default_size: tuple[int, int] = (500, 500)) -> Image.Image:
    """A white RGB image of the same size as ``image`` (TraVLR's caption-only setting)."""
    size = default_size
    with contextlib.suppress(ImageError):
        size = image_size(image)
    return Image.new("RGB", size, (255, 255, 255))
