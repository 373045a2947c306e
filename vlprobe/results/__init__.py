"""What a run leaves behind: its records (:mod:`.schema`), their aggregates, files, tables and plots."""

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
