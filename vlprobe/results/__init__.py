"""What a run leaves behind, as declared records (:mod:`.schema`), and the files they are written to and read from.

``vlprobe evaluate`` (:class:`vlprobe.Evaluation`) writes into its output folder:

* ``results.json`` (``format: vlprobe-results/3``, ``kind: evaluate``): an
  :class:`~.schema.EvaluationDocument`: the provenance (model id and resolved revision, family, dtype, device,
  preprocessing, the settings, each dataset's name with where it was read from, the engine's statistics, package
  versions and vlprobe's git commit from a clone, the command line and the time); one :class:`~.schema.Entry` per
  (dataset, config, split): ``benchmark`` (the registered benchmark its dataset records, null for a dataset of the
  user's own), ``dataset`` (its name, never a path), ``config``, ``split``, ``shape``, ``dataset_version``,
  ``data`` and ``metrics`` (the metric module's full output), and, where the authors' tie rule gives other figures,
  ``authors_rule``; and ``summary``: the papers' aggregates (:mod:`vlprobe.results.summary`). Its JSON Schema is
  :func:`.schema.json_schema` (``vlprobe schema``, ``docs/results.schema.json``). Files of older formats are read
  through :func:`.upgrade.upgrade`;
* ``scores.parquet``: one row per item: ``dataset`` (the entry's name), ``config``, ``split``, ``id``, ``scores``
  (m x n), ``gold`` (m x n), ``probabilities`` (m x n, null when the scorer gives none), ``texts``, ``tags``;
* ``results.csv``: the long table, one row per (dataset, config, split, tag, metric), one name per quantity for the
  items' shape (:func:`vlprobe.results.summary.metric_synonyms`), with the CI bounds, chance, support, the tie count and
  ``na_reason``; ``results_wide.csv``: the table researchers paste, one row per dataset/config/split and a column
  per metric shown, in %, rounded (:func:`.display.wide_rows`);
* ``plot_<dataset>_<config>_<split>.png``: a bar per metric with its CI and its chance level.

Not available: where every item of a split (or of a tag) tied, for instance because the model's truncation made
its texts identical, its metrics are not shown as numbers: each is None (null in results.json, empty in the CSVs)
and ``na_reason`` says why (``"100/100 items tied: texts identical after truncation to 48 tokens"``); tables print
``N/A (<reason>)`` (:func:`.display.na_text`), and the summary sets the authors' code's figure beside it. A tie
still counts as the tie policy says in every number that is shown.

The files are written into a temporary folder beside the output folder, which is then swapped in, so a folder
always holds one run's files (:mod:`vlprobe.storage.run_folder`; :func:`check_output_dir` says, before any scoring starts,
whether a folder can be written that way). ``vlprobe probe`` writes a :class:`~.schema.ProbeDocument` the same way.
"""

from ..benchmarks import METRIC_ORDER
from ..storage.run_folder import check_output_dir, write_run_folder
from .display import NA_KEY, bar_chart, format_table, metric_keys, na_text, pct, plot_name, truncation_warning
from .io import RUN_FILES, ResultsError, atomic_write_bytes, environment, now_iso, read_results, write_outputs
from .run import RunResult
from .schema import RESULTS_FORMAT, Entry, Metrics, Provenance, SchemaError, dataset_name, dump, json_schema, parse
from .scored import ScoredItem, ScoredSplit, ScoreMatrices, result_entries

__all__ = [
    "METRIC_ORDER", "NA_KEY", "RESULTS_FORMAT", "RUN_FILES", "Entry", "Metrics", "Provenance", "ResultsError",
    "RunResult", "SchemaError", "ScoreMatrices", "ScoredItem", "ScoredSplit", "atomic_write_bytes", "bar_chart",
    "check_output_dir", "dataset_name", "dump", "environment", "format_table", "json_schema", "metric_keys", "na_text",
    "now_iso", "parse", "pct", "plot_name", "read_results", "result_entries", "truncation_warning", "write_outputs",
    "write_run_folder",
]
