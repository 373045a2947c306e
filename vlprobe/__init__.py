"""vlprobe: probe vision-and-language models on linguistic phenomena with foils.

The Python API is :func:`evaluate`, :func:`probe` and :func:`score`; the CLI (``vlprobe/commands/``) calls them. The
layers and the data flow: docs/development.md (``tests/test_imports.py`` holds the arrows).
"""

__version__ = "0.1.0"

from typing import TYPE_CHECKING

# The public names, imported on first use (PEP 562): evaluate/probe pull in datasets, pandas and torch.
_EXPORTS = {
    "DatasetError": "errors", "ModelError": "errors", "SettingError": "errors", "VlprobeError": "errors",
    "Evaluation": "evaluation", "evaluate": "evaluation", "score": "evaluation",
    "Item": "dataset.items", "ItemError": "dataset.items",
    "ProbeResult": "probing", "probe": "probing",
    "ItemSpec": "dataset.spec", "SpecError": "dataset.spec", "find_spec": "dataset.spec",
    # evaluate.load("valse_metric") by its bare name, offline: registered on request, never at import
    "register_metric": "metric_registry",
}
# Submodules users reach as attributes after a plain `import vlprobe` (`vlprobe.metric.load()`), imported then.
_SUBMODULES = ("metric",)
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    import importlib

    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'vlprobe' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS) | set(_SUBMODULES))


if TYPE_CHECKING:  # for type checkers and editors
    from .dataset.items import Item, ItemError  # noqa: F401
    from .dataset.spec import ItemSpec, SpecError, find_spec  # noqa: F401
    from .errors import DatasetError, ModelError, SettingError, VlprobeError  # noqa: F401
    from .evaluation import Evaluation, evaluate, score  # noqa: F401
    from .metric_registry import register_metric  # noqa: F401
    from .probing import ProbeResult, probe  # noqa: F401
