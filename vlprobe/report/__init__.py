"""Compare runs: ``results.json`` files -> a Markdown and an HTML report, plus one plot.

Every file is read into its records first (:func:`vlprobe.results.read_results`: older formats upgraded, the
declared shape checked): one line per file at fault, naming the file and the field, raised as a
:class:`ReportError`.

For every benchmark in the runs the report has:

1. a long table, one row per (config, split, metric), one column per run (value and 95% CI in %),
   and the chance level; only the metrics that mean something for the benchmark and the item shape
   (:func:`vlprobe.results.summary.display_metrics`: a 1 x 2 item shows acc_r, not five copies of it); a config
   that pools the others' items (VALSE's ``all``) is labelled "pooled over items, not a paper figure";
   and, where items carry tags, a per-tag table of each config's headline metric
   (:func:`vlprobe.results.summary.primary_metric`) with the item count;
2. the papers' aggregates (:func:`vlprobe.results.summary.summarize`, by each benchmark's declaration in
   ``vlprobe/benchmarks/``: VALSE per instrument and its Avg. over the 11 instruments, Winoground text /
   image / group, BLA per task, TraVLR per task and test split, ...), with a note wherever an aggregate
   is incomplete, and, for a run that departs from the authors' setting (another tie policy, a
   modality, a control, ``--limit``), a heading and a note that say so, with each value's figure under
   the authors' tie rule beside it where the run's tie policy is another, and beside each N/A (every item
   tied) the figure the authors' code prints;
3. where the benchmark declares published numbers (``paper_tables``, in
   ``vlprobe/data/paper_results.csv``: VALSE Table 2, Winoground Table 3, BLA thesis Tables 6.3 and
   6.2, SugarCREPE's GPT-4V figures), a table in the papers' layout: one row per system, "this run"
   rows first, then the papers' systems, one column per (config, metric) that both the paper and a
   run's aggregates have (VALSE's ``avg`` included);
4. where a run's model is a checkpoint with published figures (``vlprobe/data/published.csv``, matched by
   :func:`vlprobe.results.published.run_checkpoint`), the run beside them (:func:`.tables.published_beside`): per
   source, config and aggregate, the published figure, the run's, the difference and its known causes (another
   version of the data and by how many items, a tie policy, a limit, tied comparisons, texts read as one input);
   :func:`.tables.check_published` is ``vlprobe report --check``.

A ``vlprobe probe`` run's results.json (rows, no results list) is read too (:mod:`.probes`): its
TraVLR Table 2 layout (OOD macro-F1 per train x test modality, mean over seeds, (OOD - InD), ± sd)
and each cell beside the published probe table its benchmark declares (TraVLR's Table 2: the four
fine-tuned models' figures, ours, and the difference), with what makes them differ said beside it.

Caveats carried into the report: the published numbers are percentages as printed; the BLA
numbers were measured on the thesis version of the data (613 / 800 / 789 caption sets), not on
the 2023 release (613 / 654 / 672) that vlprobe's ``bla`` folder holds; a run on a ``--limit``-ed
subset, or on a control, is not comparable to a paper. Matching is by the benchmark each entry's
dataset recorded (in its vlprobe.yaml; a results.json from before that was recorded is read by its
dataset's name, with a note), config and metric; a dataset that records none gets generic tables, and
the synthetic ``winoground_style`` is *not* Winoground and gets no paper column.

The package: :mod:`.runs` (results.json files read and checked), :mod:`.papers` (the published
numbers), :mod:`.probes` (probe runs beside TraVLR's Table 2), :mod:`.tables` (the tables) and
:mod:`.render` (Markdown, HTML, LaTeX, the plot, the folder).
"""

from .papers import CONFIG_ALIASES, PAPER_NOTES, PAPER_TABLES, paper_benchmarks, paper_results, source_label
from .render import build_report, ci_sentence, latex_tables, plot_runs, write_report
from .runs import ReportError, Run, load_runs
from .tables import (
    check_published,
    config_label,
    entry_headline,
    headline,
    long_table,
    paper_table,
    published_beside,
    summary_table,
    tag_table,
)

__all__ = [
    "CONFIG_ALIASES", "PAPER_NOTES", "PAPER_TABLES", "ReportError", "Run", "build_report", "check_published",
    "ci_sentence", "config_label", "entry_headline", "headline", "latex_tables", "load_runs", "long_table",
    "paper_benchmarks", "paper_results", "paper_table", "plot_runs", "published_beside", "source_label",
    "summary_table", "tag_table", "write_report",
]
