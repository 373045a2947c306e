"""vlprobe's door to the metric, ``metric/valse_metric.py`` (:data:`METRIC_FILE`), imported as ``vlprobe.valse_metric``:
:func:`compute` calls its pure function directly (no Arrow round trip); nothing is registered at import."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import metric_registry
from .metric_registry import register_metric as register  # `python -m vlprobe.metric register`
from .plugins import import_file

if TYPE_CHECKING:
    import evaluate

MODULE_NAME = metric_registry.MODULE_NAME
module = import_file(f"{__package__}.{MODULE_NAME}", metric_registry.metric_file())
setattr(sys.modules[__package__], MODULE_NAME, module)  # `from vlprobe import valse_metric`
METRIC_FILE = Path(str(module.__file__)).resolve()
METRIC_KEYS: tuple[str, ...] = module.METRIC_KEYS
TIE_POLICIES: tuple[str, ...] = module.TIE_POLICIES
CACHE_NAME = metric_registry.CACHE_NAME


def compute(predictions: object, references: object, **kwargs: object) -> dict[str, Any]:
    """Same arguments and result as ``evaluate.load("valse_metric").compute(...)``."""
    result: dict[str, Any] = module.compute_metrics(predictions, references, **kwargs)
    return result


def load(**kwargs: object) -> evaluate.EvaluationModule:
    """The ``evaluate`` metric module loaded from :data:`METRIC_FILE`: it asks the Hub nothing, registers nothing."""
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
