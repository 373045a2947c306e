"""What a run leaves behind, as declared records (:mod:`.schema`), and the files they are written to and read from.

A run folder holds ``results.json`` (an :class:`~.schema.EvaluationDocument` or :class:`~.schema.ProbeDocument`;
its JSON Schema: ``vlprobe schema``; older formats read through :func:`.upgrade.upgrade`), ``scores.parquet`` (one
row per item: its score, gold and probability matrices, texts and tags), ``results.csv`` (one row per dataset,
config, split, tag and metric, one name per quantity: :func:`.summary.metric_synonyms`), ``results_wide.csv`` (the
table to paste: :func:`.display.wide_rows`) and a plot per entry. A metric that is not available (every item tied)
is None, with ``na_reason`` saying why; tables print ``N/A (<reason>)`` (:func:`.display.na_text`). The files are
written into a folder beside the output folder and swapped in (:mod:`vlprobe.storage.run_folder`).
"""

from ..storage.run_folder import check_output_dir, write_run_folder
from .display import NA_KEY, bar_chart, format_table, metric_keys, na_text, pct, plot_name, truncation_warning
from .io import RUN_FILES, ResultsError, atomic_write_bytes, environment, now_iso, read_results, write_outputs
from .run import RunResult
from .schema import dataset_name
from .scored import ScoredItem, ScoredSplit, ScoreMatrices, result_entries

__all__ = [
    "NA_KEY", "RUN_FILES", "ResultsError", "RunResult", "ScoreMatrices", "ScoredItem", "ScoredSplit",
    "atomic_write_bytes", "bar_chart", "check_output_dir", "dataset_name", "environment", "format_table", "metric_keys",
    "na_text", "now_iso", "pct", "plot_name", "read_results", "result_entries", "truncation_warning", "write_outputs",
    "write_run_folder",
]
