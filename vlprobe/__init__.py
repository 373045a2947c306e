"""vlprobe: probe vision-and-language models on linguistic phenomena with foils.

Data flow (one direction only)::

    dataset folder (parquet + card + vlprobe.yaml) --load_dataset--> rows (memory-mapped, read in chunks)
    rows --ItemSpec--> Items (m images, n texts, gold m x n, tags)
    Items --scorer (engine)--> score matrices S (m x n)
    (S, gold, tags) --metric (metric/valse_metric.py)--> pairwise / group / set scores, CIs, per tag

The Python API is :func:`evaluate` (``vlprobe/evaluation/``), :func:`probe` (``vlprobe/probing/``) and
:func:`score` for one image-by-text matrix in a notebook; ``vlprobe evaluate`` (the CLI, ``vlprobe/commands/``)
parses arguments and calls them. Where things live, by layer (``tests/test_imports.py`` holds the arrows):

* at the top: ``cli.py``, ``errors.py`` (the errors users see), ``options.py`` (the settings every run shares,
  a frozen dataclass, and the one check of each), ``defaults.py``, ``runner.py`` (the pipeline every run follows:
  settings, output folder, data, model, cache, engine, provenance, results; ``evaluate``, ``probe`` and ``score``
  fill its hooks), ``names.py`` (what a dataset or model name stands for, and the closest known name for a typo),
  ``plugins.py`` (benchmarks, builders and scorer families from outside vlprobe), ``metric.py`` /
  ``metric_registry.py`` (the metric module ``metric/valse_metric.py``, and its registration with ``evaluate``);
* ``dataset/``, the data side: ``items.py`` and ``spec.py`` (rows -> items by a folder's ``vlprobe.yaml``),
  ``splits.py`` (one split as evaluate and probe read it), ``folder.py`` / ``reader.py`` (writing and reading
  dataset folders), ``images.py``, ``image_sources.py`` and ``downloads.py`` (images and the sources the upstream
  benchmarks name), ``reading.py`` (files a user gives, read bounded);
* ``storage/``: ``score_cache.py``, ``arrow_cache.py`` (the datasets library's Arrow copies, private and checked),
  ``feature_store.py``, ``run_folder.py`` (an output folder swapped in whole), ``leftovers.py``, ``keys.py``
  (content hashing), ``locations.py`` / ``paths.py`` (where shipped folders and every cache live);
* ``scoring/``: ``engine.py`` (each unique input encoded once, each distinct pair scored once), ``auto_batch.py``,
  ``device_images.py``; ``scorers/``: the model families, one module each;
* ``evaluation/`` and ``probing/``: the two runs (settings, data, model, scoring, result, api; TraVLR's probe
  protocol over cached features);
* ``results/``: the declared records of results.json (``schema.py``), the one upgrade of older files, the files a
  run writes, tables and charts, ``summary.py`` (the papers' aggregates by the benchmarks' declarations) and
  ``published.py`` (published figures keyed by checkpoint); ``report/``: runs beside the published numbers;
* ``benchmarks/``: one module per benchmark, everything true of it, found by a registry; ``builders/``: one
  module per dataset, each a ``Builder`` the registry finds, ``templates/`` their cards; ``scenes/``: the synthetic instruments'
  renderer and truth function;
* ``demo/``: the Space's logic (``space/app.py`` is the page); ``publish/``: checking and pushing to the Hub.

The mini CLIP trainer is not part of this package: it is ``vlprobe_train`` (``python -m vlprobe_train``).
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
