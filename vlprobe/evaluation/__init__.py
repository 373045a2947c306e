"""``vlprobe.evaluate`` and ``vlprobe.score``: :mod:`.settings` (every keyword, checked), :mod:`.data` (the splits,
and the offline default), :mod:`.scoring` (streamed scoring and measuring), :mod:`.result` (:class:`Evaluation`) and
:mod:`.api` (each a :class:`vlprobe.runner.Run`)."""

from .api import evaluate, score
from .data import default_datasets, default_model
from .result import Evaluation

__all__ = ["Evaluation", "default_datasets", "default_model", "evaluate", "score"]
