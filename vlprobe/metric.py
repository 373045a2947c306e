"""vlprobe's door to the metric. The math lives in one place only, ``metric/valse_metric.py``
(the ``evaluate`` module that is also published as a Space); ``vlprobe/valse_metric.py`` is a
symlink to it so that an installed package carries it too.

* :func:`compute` calls the module's pure function directly: no Arrow round trip, and it takes
  stacked ``(N, m, n)`` arrays (the path large runs take).
* :func:`load` returns the ``evaluate.Metric`` itself, as ``evaluate.load`` gives it to users.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import valse_metric as _module

METRIC_FILE = Path(_module.__file__).resolve()
METRIC_KEYS = _module.METRIC_KEYS
TIE_POLICIES = _module.TIE_POLICIES


def compute(predictions: Any, references: Any, **kwargs: Any) -> dict:
    """Same arguments and result as ``evaluate.load(".../valse_metric").compute(...)``."""
    return _module.compute_metrics(predictions, references, **kwargs)


def load(**kwargs: Any):
    """The ``evaluate`` metric module, loaded from the file this package carries."""
    import evaluate

    return evaluate.load(str(METRIC_FILE), **kwargs)
