"""Dataset folder builders, discovered: each module here defining ``NAME``, ``HELP``,
``add_arguments(parser)`` and ``build(args) -> Path`` becomes ``vlprobe build <NAME>``.
Builders know nothing of models; they write a Hub dataset folder (see ``vlprobe/dataset_folder.py``)."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def builders() -> dict[str, ModuleType]:
    found = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "NAME") and hasattr(module, "build"):
            found[module.NAME] = module
    return found
