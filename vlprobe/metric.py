"""vlprobe's door to the metric.

The math lives in one committed file, ``metric/valse_metric.py`` (the ``evaluate`` module that is
also published as a Space). vlprobe reads it from where it was installed (:data:`METRIC_FILE`, see
:mod:`vlprobe.locations`): inside the package, ``vlprobe/_bundled/metric/``, when installed from a
wheel (setup.py maps ``metric/`` there); the clone's ``metric/`` folder otherwise (a clone, an
editable install). It is imported here as ``vlprobe.valse_metric``.

* :func:`compute` calls the module's pure function directly: no Arrow round trip, and it takes
  stacked ``(N, m, n)`` arrays (the path large runs take).
* :func:`load` returns the ``evaluate.Metric`` itself, loaded from :data:`METRIC_FILE` (a local
  path: nothing is asked of the Hub and nothing is written into evaluate's namespace of
  downloaded modules).
* ``evaluate.load("valse_metric")`` by its bare name works from the repository root (the committed
  symlink ``valse_metric -> metric`` is the folder evaluate looks for) and, anywhere and offline,
  once :func:`register` (``python -m vlprobe.metric register``) has put the module where evaluate
  keeps a downloaded ``evaluate-metric/valse_metric`` (evaluate then logs that it uses that cached
  version: that is how it loads a bare name offline).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

from .locations import shipped

MODULE_NAME = "valse_metric"


def _import_metric():
    folder = shipped("metric")
    if folder is None or not (folder / f"{MODULE_NAME}.py").is_file():
        raise ImportError(f"vlprobe: the metric {MODULE_NAME}.py is missing: neither this installed package "
                          f"(vlprobe/_bundled/metric/) nor a clone around it (metric/) has it; reinstall vlprobe")
    name = f"{__package__}.{MODULE_NAME}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, folder / f"{MODULE_NAME}.py")
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
METRIC_FILE = Path(_module.__file__).resolve()
METRIC_KEYS = _module.METRIC_KEYS
TIE_POLICIES = _module.TIE_POLICIES
# evaluate resolves a bare name through the canonical namespace "evaluate-metric/<name>" and, when
# the Hub cannot answer, through its cache folder "evaluate-metric--<name>".
CACHE_NAME = f"evaluate-metric--{MODULE_NAME}"


def compute(predictions: Any, references: Any, **kwargs: Any) -> dict:
    """Same arguments and result as ``evaluate.load("valse_metric").compute(...)``."""
    return _module.compute_metrics(predictions, references, **kwargs)


def _modules_root() -> Path:
    from evaluate.loading import init_dynamic_modules

    return Path(init_dynamic_modules())


def registered_path() -> Path:
    """Where :func:`register` puts the module (inside evaluate's ``HF_MODULES_CACHE``)."""
    digest = hashlib.sha256(METRIC_FILE.read_bytes()).hexdigest()
    return _modules_root() / "metrics" / CACHE_NAME / digest / f"{MODULE_NAME}.py"


def register() -> Path:
    """Put this package's metric where ``evaluate.load("valse_metric")`` finds it offline: evaluate's
    module cache (``$HF_MODULES_CACHE/evaluate_modules/metrics/evaluate-metric--valse_metric/<sha256>/``),
    laid out as evaluate lays out a module it downloaded. Idempotent; the registered copy is made
    the most recent one, which is the one evaluate picks. Returns the registered file."""
    target = registered_path()
    metrics_dir = target.parents[2]
    for folder in (metrics_dir, target.parent.parent, target.parent):
        folder.mkdir(parents=True, exist_ok=True)
        init = folder / "__init__.py"
        if not init.exists():
            init.write_bytes(b"")
    data = METRIC_FILE.read_bytes()
    if not target.is_file() or target.read_bytes() != data:
        tmp = target.with_name(f".{target.name}.tmp{os.getpid()}")
        tmp.write_bytes(data)
        os.replace(tmp, target)
    os.utime(target)  # evaluate picks the most recently modified cached version
    return target


def load(**kwargs: Any):
    """The ``evaluate`` metric module, as ``evaluate.load("valse_metric")`` gives it to users,
    loaded from :data:`METRIC_FILE`: it asks the Hub nothing and registers nothing."""
    import evaluate

    return evaluate.load(str(METRIC_FILE), **kwargs)


def main(argv: list[str] | None = None) -> int:
    """``python -m vlprobe.metric register``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["register"] and len(args) == 1:
        path = register()
        print(f"registered {MODULE_NAME} at {path}; evaluate.load({MODULE_NAME!r}) now works offline")
        return 0
    print("usage: python -m vlprobe.metric register", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
