"""vlprobe: probe vision-and-language models on linguistic phenomena with foils.

Data flow (one direction only)::

    dataset folder (parquet + card + vlprobe.yaml) --load_dataset--> rows (memory-mapped, read in chunks)
    rows --ItemSpec--> Items (m images, n texts, gold m x n, tags)
    Items --scorer (engine)--> score matrices S (m x n)
    (S, gold, tags) --metric (metric/valse_metric.py)--> pairwise / group / set scores, CIs, per tag

The Python API is :func:`evaluate` (``vlprobe/evaluation.py``), with :func:`score` for one
image-by-text matrix in a notebook; ``vlprobe evaluate`` (the CLI,
``vlprobe/commands/evaluate.py``) parses arguments and calls it. Where things live:

* ``evaluation/``: the pipeline, by layer (settings, data, model, scoring, result, api);
* ``results.py``: what a run writes (results.json, scores.parquet, results.csv, plots) and the
  shared display helpers (METRIC_ORDER, percent formatting, bar charts); ``run_folder.py``: an
  output folder written beside ``--out`` and swapped in whole (evaluate and probe);
* ``spec.py`` / ``items.py``: rows -> items; ``engine.py`` / ``cache.py``: scoring and the score cache;
  ``scorers/``: model families; ``dataset_folder.py``: writing dataset folders; ``folder_reader.py``: reading
  them (configs, splits, rows with undecoded image columns); ``keys.py``: content hashing (cache keys, stamped file
  hashes, model digests); ``reading.py``: files a user gives, read bounded; ``errors.py``: the errors users see;
  ``options.py``: the settings every run shares (``Settings``, a frozen dataclass; ``EvaluateSettings`` and
  ``ProbeSettings`` in ``evaluation/settings.py`` and ``probing/settings.py`` add each command's own) and the one
  check of each; ``splits.py``: one split of a dataset, read as ``evaluate`` and ``probe`` read it;
* ``probing/``: :func:`probe`, TraVLR's train-on-one-modality protocol over cached features (settings,
  data, features, classifiers, metrics, protocol, finetune, result, api);
  ``feature_store.py``: its feature matrices on disk, written a chunk and read a block at a time;
* ``benchmarks/``: one module per benchmark, everything true of it (pins, configs and counts,
  headline metrics and groups, tie rule, names of metrics, published tables, citation), found by a
  registry; ``summary.py``: the papers' aggregates by those declarations (one rule for the CLI, the
  report and the Space); ``report/``: runs beside the published numbers (runs, papers, probes, tables, render);
* ``builders/``: one module per dataset, the paper benchmarks' on one build flow (``flow.py``;
  ``upstream.py`` fetches and verifies the annotation files), ``templates/`` their cards; a built
  folder records its benchmark in ``vlprobe.yaml``; ``scenes/``: the renderer and truth function of the
  synthetic instruments; ``image_sources.py``: the image sources the upstream benchmarks name (COCO, Visual Genome, ...);
  ``downloads.py``: a release archive's resumable, checked download and safe opening;
* ``demo/``: the Space's logic (``space/app.py`` is the page); ``publish/``: checking and pushing to the Hub;
* ``runner.py``: the pipeline every run follows (settings checked once, the output folder, the data, the model,
  the cache and workers, the engine, provenance, results), ``Run``, whose hooks ``evaluate``, ``probe`` and ``score``
  fill;
* ``names.py``: what a dataset or model name stands for, the same in every command and the API
  (``travlr`` after ``vlprobe build travlr``, ``mini-clip``), and the closest known name for a typo;
* ``plugins.py``: benchmarks, builders and scorer families from outside vlprobe (a package's entry points
  ``vlprobe.benchmarks`` / ``vlprobe.scorers``, or a folder in ``VLPROBE_INCLUDE_PATH``);
* ``locations.py``: where the shipped folders (the metric ``metric/valse_metric.py``, the Space, the
  default model) are, in a clone and when installed, and where every cache lives (one rule:
  ``$VLPROBE_CACHE``, else ``$XDG_CACHE_HOME/vlprobe``, else ``~/.cache/vlprobe``);
  ``arrow_cache.py``: the datasets library's Arrow copies of dataset folders, private and checked.

The mini CLIP trainer is not part of this package: it is ``vlprobe_train`` (``python -m vlprobe_train``).
"""

__version__ = "0.1.0"

from typing import TYPE_CHECKING

# The public names, imported on first use (PEP 562) so that `import vlprobe` and `vlprobe --help`
# stay light: evaluate/probe pull in datasets, pandas and torch.
_EXPORTS = {
    "DatasetError": "errors", "ModelError": "errors", "SettingError": "errors", "VlprobeError": "errors",
    "Evaluation": "evaluation", "evaluate": "evaluation", "score": "evaluation",
    "Item": "items", "ItemError": "items",
    "ProbeResult": "probing", "probe": "probing",
    "ItemSpec": "spec", "SpecError": "spec", "find_spec": "spec",
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
    from .errors import DatasetError, ModelError, SettingError, VlprobeError  # noqa: F401
    from .evaluation import Evaluation, evaluate, score  # noqa: F401
    from .items import Item, ItemError  # noqa: F401
    from .metric_registry import register_metric  # noqa: F401
    from .probing import ProbeResult, probe  # noqa: F401
    from .spec import ItemSpec, SpecError, find_spec  # noqa: F401
