"""Compare runs: ``results.json`` files -> report.md, report.html, report.tex and report.png (``vlprobe report``).

Every file is read into its records first (:func:`vlprobe.results.read_results`): the problems of all files are
raised together as one :class:`ReportError`, a line per file naming the field. Per benchmark the report has the runs
side by side per config (each metric that means something for the item shape, with its CI, ties and chance), per tag,
the papers' aggregates (:func:`vlprobe.results.summary.summarize`, with each departure from the authors' setting said),
the papers' published numbers (each benchmark's ``paper_tables``) and the figures published for each run's own
checkpoint (:mod:`vlprobe.results.published`; ``vlprobe report --check`` holds a run to them). A ``vlprobe probe``
run gets TraVLR's Table 2 layout beside the published table (:mod:`.probes`).

:mod:`.runs` reads the files, :mod:`.papers` the published numbers, :mod:`.tables` makes the tables and
:mod:`.render` the Markdown, HTML, LaTeX, the plot and the folder.
"""

from .papers import paper_results
from .render import build_report, write_report
from .runs import ReportError, Run, load_runs
from .tables import check_published, headline

__all__ = ["ReportError", "Run", "build_report", "check_published", "headline", "load_runs", "paper_results",
           "write_report"]
