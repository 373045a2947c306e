"""vlprobe's door to the metric.

The math lives in one source, ``metric/valse_metric.py`` (the ``evaluate`` module that is also
published as a Space). Two byte-identical copies exist so that every way of loading it needs
nothing but a clone or ``pip install vlprobe`` (``tests/test_metric_packaging.py`` fails when they
drift; refresh them with ``python -m vlprobe.metric sync`` from a clone):

* ``vlprobe/valse_metric.py``: the copy the installed package carries (this module imports it);
* ``valse_metric/valse_metric.py`` at the repository root: ``evaluate.load("valse_metric")`` run
  from the root resolves a bare name to ``./valse_metric/valse_metric.py``.

After ``pip install vlprobe``, anywhere and offline, ``evaluate.load("valse_metric")`` works once
the module is registered in evaluate's own module cache (where it keeps a downloaded
``evaluate-metric/valse_metric``, and where it looks when the Hub cannot be reached):
``python -m vlprobe.metric register`` does it, and so does :func:`load`.

* :func:`compute` calls the module's pure function directly: no Arrow round trip, and it takes
  stacked ``(N, m, n)`` arrays (the path large runs take).
* :func:`load` returns the ``evaluate.Metric`` itself, as ``evaluate.load`` gives it to users.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from typing import Any

from . import valse_metric as _module

METRIC_FILE = Path(_module.__file__).resolve()
METRIC_KEYS = _module.METRIC_KEYS
TIE_POLICIES = _module.TIE_POLICIES
MODULE_NAME = "valse_metric"
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
    """The ``evaluate`` metric module, as ``evaluate.load("valse_metric")`` gives it to users: it is
    registered first (so that the bare name works offline from now on), then loaded from the
    registered file, which asks the Hub nothing."""
    import evaluate

    return evaluate.load(str(register()), **kwargs)


def sync(repo_root: str | os.PathLike) -> list[Path]:
    """Copy the one source, ``metric/valse_metric.py``, over its two copies in a clone; returns
    the files that changed."""
    root = Path(repo_root)
    source = root / "metric" / f"{MODULE_NAME}.py"
    data = source.read_bytes()
    changed = []
    for copy in (root / "vlprobe" / f"{MODULE_NAME}.py", root / MODULE_NAME / f"{MODULE_NAME}.py"):
        if not copy.is_file() or copy.read_bytes() != data:
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes(data)
            changed.append(copy)
    return changed


def main(argv: list[str] | None = None) -> int:
    """``python -m vlprobe.metric register`` | ``python -m vlprobe.metric sync [REPO_ROOT]``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["register"] and len(args) == 1:
        path = register()
        print(f"registered {MODULE_NAME} at {path}; evaluate.load({MODULE_NAME!r}) now works offline")
        return 0
    if args[:1] == ["sync"] and len(args) <= 2:
        root = Path(args[1]) if len(args) == 2 else Path.cwd()
        if not (root / "metric" / f"{MODULE_NAME}.py").is_file():
            print(f"error: {root}: not a vlprobe clone (no metric/{MODULE_NAME}.py)", file=sys.stderr)
            return 2
        changed = sync(root)
        print("\n".join(f"updated {p}" for p in changed) or "copies already identical")
        return 0
    print("usage: python -m vlprobe.metric register | sync [REPO_ROOT]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
