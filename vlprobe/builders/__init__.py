"""Dataset folder builders, discovered: each module here defining ``NAME``, ``HELP``,
``add_arguments(parser)`` and ``build(args) -> Path`` becomes ``vlprobe build <NAME>``.
Builders know nothing of models; they write a Hub dataset folder (see ``vlprobe/dataset/folder.py``)."""

from __future__ import annotations

import importlib
import json
import pkgutil
from pathlib import Path
from types import ModuleType
from typing import Any


class AnnotationError(ValueError):
    """An annotation file or record that cannot be used; the message names the file and record."""


def read_json(path: Path, benchmark: str, expected: type, shape: str, missing_hint: str) -> Any:
    """Load one of ``benchmark``'s annotation files, with errors that name it: missing (with
    ``missing_hint`` on how to point at it), not JSON, or not a JSON ``expected`` (``shape``)."""
    from ..dataset.reading import ANNOTATION_BYTES, parse_json, read_bytes

    try:  # bounded: a regular file, its size, its nesting (vlprobe.dataset.reading)
        data = parse_json(read_bytes(path, "annotation file", ANNOTATION_BYTES).decode("utf-8"), str(path))
    except FileNotFoundError:
        raise FileNotFoundError(f"{benchmark} annotation file not found: {path} ({missing_hint})") from None
    except UnicodeDecodeError as err:  # e.g. a UTF-16 file (it starts with the bytes 0xff 0xfe)
        raise AnnotationError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    except json.JSONDecodeError as err:
        raise AnnotationError(f"{path}: not valid JSON: {err}") from None
    if not isinstance(data, expected):
        raise AnnotationError(f"{path}: expected {shape}")
    return data


def builders() -> dict[str, ModuleType]:
    found = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "NAME") and hasattr(module, "build"):
            found[module.NAME] = module
    from ..plugins import builders as plugin_builders  # a user's own (entry points, include path)

    found.update(plugin_builders(found))
    return found
