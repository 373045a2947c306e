"""``vlprobe.evaluate(...)``: score a model on benchmarks and measure it, the one pipeline that the
CLI (``vlprobe evaluate``), the Space and the probe command call.

    import vlprobe
    res = vlprobe.evaluate(model="models/mini-clip", datasets=["winoground_style"], bootstrap=1000)
    res.summary            # the papers' aggregates per benchmark
    res.to_pandas()        # results.csv: per dataset/config/split/tag and metric (value, ci_low, ci_high, chance, n)
    res.scores()           # a datasets.Dataset of the per-item scores (= scores.parquet)
    res.save("runs/x")     # results.json, scores.parquet, results.csv, plots: what the CLI writes
    res.plot()             # a matplotlib figure

The flow: every setting is checked first (and the output folder, the device), before anything is
loaded; each (dataset, config, split) is opened as a memory-mapped Arrow table; rows are read in
bounded chunks (``chunk_size`` rows, across splits), turned into items by the dataset's
``vlprobe.yaml`` (:mod:`vlprobe.dataset.spec`) and scored by :mod:`vlprobe.scoring.engine`, which computes each
unique input once per chunk; the on-disk cache (:mod:`vlprobe.storage.score_cache`) carries what was computed
from one chunk to the next. Only the score matrices, gold matrices, ids, texts and tags are kept:
image bytes are dropped after each chunk, so memory does not grow with the dataset. A run whose
rows fit in one chunk scores everything in one engine call, exactly as before streaming.

Errors are the named errors of :mod:`vlprobe.errors` (the CLI prints them as one line).

The package, by layer: :mod:`.settings` (:class:`EvaluateSettings`: every keyword, typed, checked first),
:mod:`.data` (datasets, configs and splits, read through :mod:`vlprobe.dataset.splits` as the probe reads them), :mod:`.model`
(the model through :mod:`vlprobe.runner`, and the checks of what it can score),
:mod:`.scoring` (streamed scoring through the engine and the cache, and measuring),
:mod:`.result` (:class:`Evaluation`) and :mod:`.api` (:func:`evaluate`, :func:`score`: each a
:class:`vlprobe.runner.Run`, the pipeline ``vlprobe.probe`` follows too, whose hooks they fill).
"""

from ..dataset.splits import TEST_LIKE, check_reachable, load_split, select_configs, select_splits
from ..options import MAX_BOOTSTRAP
from ..runner import default_workers, throwaway_cache
from ..storage.locations import DEFAULT_DATASETS, DEFAULT_MODEL
from .api import evaluate, score
from .data import SplitSource, default_datasets, plan_splits
from .model import default_model, load_model
from .result import Evaluation, display_keys, format_summary
from .settings import CONTROLS, EvaluateSettings, ScoreSettings, Settings

__all__ = [
    "CONTROLS", "DEFAULT_DATASETS", "DEFAULT_MODEL", "MAX_BOOTSTRAP", "TEST_LIKE", "Evaluation", "EvaluateSettings",
    "ScoreSettings", "Settings", "SplitSource", "check_reachable", "default_datasets", "default_model",
    "default_workers", "display_keys", "evaluate", "format_summary", "load_model", "load_split",
    "plan_splits", "score", "select_configs", "select_splits", "throwaway_cache",
]
