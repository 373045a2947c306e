"""``vlprobe.evaluate`` and ``vlprobe.score`` (:mod:`.api`), their settings, data, scoring and result."""

from .api import evaluate, score
from .data import default_datasets, default_model
from .result import Evaluation

__all__ = ["Evaluation", "default_datasets", "default_model", "evaluate", "score"]
