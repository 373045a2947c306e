"""Compare runs: ``results.json`` files -> report.md, report.html, report.tex and report.png (``vlprobe report``)."""

from .papers import paper_results
from .render import build_report, write_report
from .runs import ReportError, Run, load_runs
from .tables import check_published, headline

__all__ = ["ReportError", "Run", "build_report", "check_published", "headline", "load_runs", "paper_results",
           "write_report"]
