"""vlprobe's door to the metric.

The math lives in one committed file, ``metric/valse_metric.py`` (the ``evaluate`` module that is
also published as a Space). vlprobe reads it from where it was installed (:data:`METRIC_FILE`, see
:mod:`vlprobe.storage.locations`): inside the package, ``vlprobe/_bundled/metric/``, when installed from a
wheel (setup.py maps ``metric/`` there); the clone's ``metric/`` folder otherwise (a clone, an
editable install). It is imported here as ``vlprobe.valse_metric``.

* :func:`compute` calls the module's pure function directly: no Arrow round trip, and it takes
  stacked ``(N, m, n)`` arrays (the path large runs take).
* :func:`load` returns the ``evaluate.Metric`` itself, loaded from :data:`METRIC_FILE` (a local
  path: nothing is asked of the Hub and nothing is written into evaluate's namespace of
  downloaded modules).
* ``evaluate.load("valse_metric")`` by its bare name works from the repository root (the committed
  symlink ``valse_metric -> metric`` is the folder evaluate looks for) and, anywhere and offline,
  once registered: :func:`register` (``vlprobe.register_metric()``, ``python -m vlprobe.metric register``)
  puts the module where evaluate keeps a downloaded ``evaluate-metric/valse_metric``
  (:mod:`vlprobe.metric_registry`; evaluate then logs that it uses that cached version: that is how it
  loads a bare name offline). Nothing is registered at import.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from . import metric_registry

if TYPE_CHECKING:
    import evaluate

MODULE_NAME = metric_registry.MODULE_NAME


def _import_metric() -> ModuleType:
    path = metric_registry.metric_file()
    if path is None:
        raise ImportError(f"vlprobe: the metric {MODULE_NAME}.py is missing: neither this installed package "
                          f"(vlprobe/_bundled/metric/) nor a clone around it (metric/) has it; reinstall vlprobe")
    name = f"{__package__}.{MODULE_NAME}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None  # a .py file always has a spec and a loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # before running it, as an import does (dataclasses look it up)
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    setattr(sys.modules[__package__], MODULE_NAME, module)  # `from vlprobe import valse_metric`
    return module


_module = module = _import_metric()
METRIC_FILE = Path(str(_module.__file__)).resolve()
METRIC_KEYS: tuple[str, ...] = _module.METRIC_KEYS
TIE_POLICIES: tuple[str, ...] = _module.TIE_POLICIES
CACHE_NAME = metric_registry.CACHE_NAME


def compute(predictions: object, references: object, **kwargs: object) -> dict[str, Any]:
    """Same arguments and result as ``evaluate.load("valse_metric").compute(...)``."""
    result: dict[str, Any] = _module.compute_metrics(predictions, references, **kwargs)
    return result


def registered_path() -> Path:
    """Where :func:`register` puts the module (inside evaluate's ``HF_MODULES_CACHE``)."""
    return metric_registry.registered_path(METRIC_FILE)


def register() -> Path:
    """Put this package's metric where ``evaluate.load("valse_metric")`` finds it offline: evaluate's
    module cache (``$HF_MODULES_CACHE/evaluate_modules/metrics/evaluate-metric--valse_metric/<sha256>/``),
    laid out as evaluate lays out a module it downloaded (see :mod:`vlprobe.metric_registry`); idempotent.
    Returns the registered file."""
    return metric_registry.register_metric()


def load(**kwargs: object) -> evaluate.EvaluationModule:
    """The ``evaluate`` metric module, as ``evaluate.load("valse_metric")`` gives it to users,
    loaded from :data:`METRIC_FILE`: it asks the Hub nothing and registers nothing."""
    import evaluate

    return evaluate.load(str(METRIC_FILE), **kwargs)


def main(argv: list[str] | None = None) -> int:
    """``python -m vlprobe.metric register``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["register"] and len(args) == 1:
        try:
            path = register()
        except OSError as err:
            print(f"vlprobe: error: {err}", file=sys.stderr)
            return 1
        print(f"registered {MODULE_NAME} at {path}; evaluate.load({MODULE_NAME!r}) now loads it, offline too "
              f"(evaluate logs that it uses this cached version)")
        return 0
    print("usage: python -m vlprobe.metric register", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
