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
``vlprobe.yaml`` (:mod:`vlprobe.spec`) and scored by :mod:`vlprobe.engine`, which computes each
unique input once per chunk; the on-disk cache (:mod:`vlprobe.cache`) carries what was computed
from one chunk to the next. Only the score matrices, gold matrices, ids, texts and tags are kept:
image bytes are dropped after each chunk, so memory does not grow with the dataset. A run whose
rows fit in one chunk scores everything in one engine call, exactly as before streaming.

Errors are the named errors of :mod:`vlprobe.errors` (the CLI prints them as one line).

The package, by layer: :mod:`.settings` (every setting, defined once in its ``OPTIONS`` table and
checked first), :mod:`.data` (datasets, configs and splits, shared with the probe), :mod:`.model`
(the model through :mod:`vlprobe.runner`, and the checks of what it can score),
:mod:`.scoring` (streamed scoring through the engine and the cache, and measuring),
:mod:`.result` (:class:`Evaluation`) and :mod:`.api` (:func:`evaluate`, :func:`score`). What a run does
around its own work (settings, output folder, model, cache, workers, engine, provenance) is
:class:`vlprobe.runner.Run`, which ``vlprobe.probe`` shares.
"""

from ..locations import DEFAULT_DATASETS, DEFAULT_MODEL
from ..runner import open_cache, throwaway_cache
from .api import evaluate, score
from .data import (
                   SplitSource,
                   check_reachable,
                   default_datasets,
                   load_split,
                   plan_splits,
                   select_configs,
                   select_splits,
)
from .model import default_model, load_model
from .result import Evaluation, display_keys, format_summary, summarize
from .scoring import quiet_progress
from .settings import (
                   CHUNK_ROWS,
                   CONTROLS,
                   MAX_BOOTSTRAP,
                   OPTIONS,
                   TEST_LIKE,
                   EvaluateSettings,
                   Settings,
                   check_cache_dir,
                   check_device,
                   command_line,
                   default_workers,
)

__all__ = [
    "CHUNK_ROWS", "CONTROLS", "DEFAULT_DATASETS", "DEFAULT_MODEL", "MAX_BOOTSTRAP", "OPTIONS", "TEST_LIKE", "Evaluation",
    "EvaluateSettings", "Settings",
    "SplitSource", "check_cache_dir", "check_device", "check_reachable", "command_line", "default_datasets",
    "default_model", "default_workers", "display_keys", "evaluate", "format_summary", "load_model", "load_split",
    "open_cache", "plan_splits", "quiet_progress", "score", "select_configs", "select_splits", "summarize", "throwaway_cache",
]
