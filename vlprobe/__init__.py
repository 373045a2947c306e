"""vlprobe: probe vision-and-language models on linguistic phenomena with foils.

Data flow: a dataset folder (parquet, card, ``vlprobe.yaml``) -> rows, memory-mapped and read in chunks -> Items
(m images, n texts, gold m x n, tags) by the ``ItemSpec`` -> score matrices by a scorer through the engine -> the
metric (``metric/valse_metric.py``): pairwise, group and set scores, CIs, per tag.

The Python API is :func:`evaluate`, :func:`probe` and :func:`score`; the CLI (``vlprobe/commands/``) calls them.
By layer (``tests/test_imports.py`` holds the arrows): at the top ``errors``, ``options`` (the settings, checked
once), ``defaults``, ``runner`` (the pipeline every run follows), ``names`` (what a name stands for), ``plugins``,
``metric`` / ``metric_registry``; then ``dataset/`` (items, specs, splits, folders, images), ``storage/`` (caches,
run folders, locations), ``scoring/`` (the engine) and ``scorers/`` (model families), ``evaluation/`` and
``probing/`` (the two runs), ``results/`` (results.json's records, files, tables, the papers' aggregates),
``report/``, ``benchmarks/`` and ``builders/`` (one module per benchmark and per dataset), ``scenes/``,
``demo/`` (the Space's logic) and ``publish/``. The mini CLIP trainer is ``vlprobe_train``, not part of this package.
"""

__version__ = "0.1.0"

from typing import TYPE_CHECKING

# The public names, imported on first use (PEP 562) so that `import vlprobe` and `vlprobe --help`
# stay light: evaluate/probe pull in datasets, pandas and torch.
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
