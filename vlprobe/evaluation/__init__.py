"""``vlprobe.evaluate(...)``: score a model on benchmarks and measure it (the CLI's ``vlprobe evaluate``, the Space)::

    res = vlprobe.evaluate(model="models/mini-clip", datasets=["winoground_style"], bootstrap=1000)
    res.summary, res.to_pandas(), res.scores(), res.save("runs/x"), res.plot()

Every setting is checked first; each (dataset, config, split) is opened memory-mapped and read in chunks of
``chunk_size`` rows, turned into items by its ``vlprobe.yaml`` and scored by the engine, each unique input once, the
score cache carrying it across chunks; only scores, gold, ids, texts and tags are kept, so memory does not grow with
the dataset. The modules: :mod:`.settings` (every keyword, checked), :mod:`.data` (the splits, and the
offline default), :mod:`.scoring` (streamed scoring and measuring), :mod:`.result` (:class:`Evaluation`) and
:mod:`.api` (:func:`evaluate`, :func:`score`: each a :class:`vlprobe.runner.Run`).
"""

from ..dataset.splits import TEST_LIKE, check_reachable, load_split, select_configs, select_splits
from ..options import MAX_BOOTSTRAP
from ..runner import default_workers, throwaway_cache
from ..storage.locations import DEFAULT_DATASETS, DEFAULT_MODEL
from .api import evaluate, load_model, score
from .data import SplitSource, default_datasets, default_model, plan_splits
from .result import Evaluation, display_keys, format_summary
from .settings import CONTROLS, EvaluateSettings, ScoreSettings, Settings

__all__ = [
    "CONTROLS", "DEFAULT_DATASETS", "DEFAULT_MODEL", "MAX_BOOTSTRAP", "TEST_LIKE", "Evaluation", "EvaluateSettings",
    "ScoreSettings", "Settings", "SplitSource", "check_reachable", "default_datasets", "default_model",
    "default_workers", "display_keys", "evaluate", "format_summary", "load_model", "load_split",
    "plan_splits", "score", "select_configs", "select_splits", "throwaway_cache",
]
