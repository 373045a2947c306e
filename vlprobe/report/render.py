"""A report rendered as Markdown, HTML, LaTeX (booktabs) and a plot, written by :func:`write_report`."""

from __future__ import annotations

import html
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ArgumentError
from ..results import atomic_write_bytes, bar_chart
from ..results import summary as summary_rules
from ..results.io import write_png
from ..results.run import check_out
from ..results.schema import Metrics, SummaryBlock
from .papers import PAPER_NOTES, paper_results
from .probes import beside_paper, describe, probe_benchmark, table2_of
from .runs import Run, load_runs, unique
from .tables import (
    _benchmarks,
    entry_headline,
    long_table,
    paper_table,
    published_beside,
    summary_table,
    tag_table,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    esc = lambda s: str(s).replace("|", "\\|")  # noqa: E731
    lines = ["| " + " | ".join(esc(h) for h in header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _html_table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join(
        "<tr" + (' class="paper"' if len(row) > 1 and str(row[1]).startswith("paper") else "") + ">"
        + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _describe(run: Run) -> str:
    """One line on an evaluate run: its model, ties, CI, date, file and caveats."""
    prov = run.doc.provenance
    model = prov.model
    desc = (f"{model.name} (revision {model.revision or 'local'}, family {model.family}, {model.dtype}, "
            f"{model.device}); ties {prov.settings.ties}; {_ci_of(run)}; {prov.created or ''}; {run.path}")
    caveats = run.caveats()
    return desc + (f"; {', '.join(caveats)}" if caveats else "")


def _ci_of(run: Run) -> str:
    st = run.settings
    if st.bootstrap == 0:
        return "no CI"
    if st.confidence is None or st.bootstrap is None:
        return "CI level not recorded"
    return f"{100 * st.confidence:g}% CI, {st.bootstrap} resamples, seed {st.seed or 0}"


def _summary_heading(runs: Sequence[Run], bench: str, *, with_source: bool = True) -> str:
    """The heading of a benchmark's aggregates: its source, and each run that departs from the authors' setting."""
    title = summary_rules.summary_title(bench, SummaryBlock(None, source=_source(runs, bench)), with_source=with_source)
    departing = [f"{r.label}: {text}" for r in runs if (text := summary_rules.departure_text(r.summary.get(bench)))]
    return title + (f", NOT the authors' setting: {'; '.join(departing)}" if departing else "")


def _source(runs: Sequence[Run], bench: str) -> str | None:
    return next((block.source for r in runs if (block := r.summary.get(bench)) and block.source), None)


def _metrics(run: Run, bench: str, config: str, split: str) -> Metrics | None:
    return next((e.metrics for name, e in run.named if (name, e.config, e.split) == (bench, config, split)), None)


def ci_sentence(runs: Sequence[Run]) -> str:
    """What the brackets are: once, or run by run with a warning where runs made CIs of different levels."""
    kinds = {r.label: _ci_of(r) for r in runs}
    made = {k for k in kinds.values() if k != "no CI"}
    base = "Values are percentages; brackets hold the percentile-bootstrap CI over items"
    if len(made) <= 1:
        return f"{base} ({made.pop()})." if made else "Values are percentages; no run made a CI."
    listing = "; ".join(f"{label}: {kind}" for label, kind in kinds.items())
    return f"{base}, each run's own, and they differ ({listing}): compare their widths with care."


@dataclass(frozen=True)
class Section:
    """One part of the report: a heading (``level`` 0: none), a lead paragraph, a table and notes; ``label``: the
    table's float in report.tex ("": not in it), its ``caption`` by default the title and the lead."""

    level: int
    title: str = ""
    lead: str = ""
    table: tuple[list[str], list[list[str]]] | None = None
    notes: tuple[str, ...] = ()
    caption: str = ""
    label: str = ""


PUBLISHED_LEAD = ("The figures published for each run's own checkpoint (vlprobe/data/published.csv), in %, to two "
                  "decimals; difference = this run - published, in points; an aggregate's published figure is the "
                  "source's figures averaged as the benchmark declares.")
TABLE2_LEAD = ("TraVLR's Table 2 layout: OOD macro-F1, (OOD - InD), ± sd over seeds; rows: trained on, columns: tested "
               "on; * the same value for every seed (a deterministic setting).")


def sections(runs: Sequence[Run]) -> list[Section]:
    """The report's parts after its runs: per benchmark, then per probe run."""
    papers = paper_results()
    probes = [r for r in runs if r.kind == "probe"]
    runs = [r for r in runs if r.kind == "evaluate"]
    out = []
    for bench in _benchmarks(runs):
        slug = "".join(ch if ch.isalnum() else "-" for ch in bench)
        out.append(Section(2, bench, table=long_table(runs, bench), caption=f"{bench}: metrics per config (%), ties = "
                           f"tied comparisons", label=f"tab:vlprobe-{slug}"))
        if agg := summary_table(runs, bench):
            source = _source(runs, bench)
            out.append(Section(3, _summary_heading(runs, bench, with_source=False),
                               f"As {source} reports them." if source else "Headline metrics per config.", agg[:2],
                               tuple(agg[2]), _summary_heading(runs, bench), f"tab:vlprobe-{slug}-summary"))
        if tags := tag_table(runs, bench):
            out.append(Section(3, f"{bench}: per tag", table=tags))
        if paper := paper_table(runs, bench, papers):
            note = PAPER_NOTES.get(bench, "")
            out.append(Section(3, f"{bench}: this run beside the published numbers", note, paper,
                               label=f"tab:vlprobe-{slug}-paper"))
        if beside := published_beside(runs, bench):
            out.append(Section(3, f"{bench}: beside the figures published for the run's checkpoint", PUBLISHED_LEAD,
                               beside, label=f"tab:vlprobe-{slug}-published"))
    for k, run in enumerate(probes, 1):
        out.append(Section(2, f"TraVLR probe: {run.label}"))
        for title, table in table2_of(run):
            out.append(Section(3, title, TABLE2_LEAD, table, caption=f"{title}: TraVLR's Table 2 layout (OOD macro-F1, "
                                                                     f"(OOD - InD), sd over seeds)",
                               label=f"tab:vlprobe-probe{k}-table2"))
        probed = probe_benchmark(run)  # the published table beside it, and what makes the two differ
        paper = f"{probed.display}'s published {probed.probe_table}" if probed is not None and probed.probe_table else ""
        if beside := beside_paper(run, papers):
            out.append(Section(3, f"{run.label} beside {paper}", probed.probe_note if probed else "", beside,
                               label=f"tab:vlprobe-probe{k}-paper"))
        else:
            out.append(Section(0, lead=f"No cell of this run is one {paper} has (its tasks and image/caption/both "
                                       f"modalities)." if paper else "The run's dataset records no benchmark with a "
                                                                     "published probe table."))
    return out


def latex_tables(runs: Sequence[Run]) -> str:
    """The report's tables as LaTeX (booktabs), one ``table`` float each, to paste into a paper."""
    import pandas as pd

    evaluated = [r for r in runs if r.kind == "evaluate"]
    parts = ["% vlprobe report: tables for LaTeX; needs \\usepackage{booktabs}"] + (
        [f"% {ci_sentence(evaluated)}"] if evaluated else []) + [""]
    for s in sections(runs):
        if s.label and s.table is not None:
            header, rows = s.table
            styler = pd.DataFrame(rows, columns=unique(header)).style.hide(axis="index").format(escape="latex")
            parts.append(styler.format_index(escape="latex", axis=1).to_latex(
                hrules=True, caption=_latex_escape(s.caption or f"{s.title}. {s.lead}"), label=s.label,
                position_float="centering", column_format="l" * len(header)))
    return "\n".join(parts)


def _latex_escape(text: str) -> str:
    """Plain text for LaTeX (a caption): its special characters escaped, one pass."""
    special = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
               "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\^{}"}
    return "".join(special.get(ch, ch) for ch in text)


def build_report(runs: Sequence[Run], plot_name: str | None = "report.png") -> tuple[str, str]:
    """The Markdown and HTML texts of the report."""
    probes = [r for r in runs if r.kind == "probe"]
    evaluated = [r for r in runs if r.kind == "evaluate"]
    lead = ci_sentence(evaluated) if evaluated else ("Values are percentages: the mean over each probe run's seeds, "
                                                     "± the sample sd over seeds.")
    md = ["# vlprobe report", "", lead, "", "## Runs", ""]
    hb = ["<h1>vlprobe report</h1>", f"<p>{html.escape(lead)}</p>", "<h2>Runs</h2>", "<ul>"]
    for run in evaluated + probes:
        desc = describe(run) if run.kind == "probe" else _describe(run)
        md.append(f"- **{run.label}**: {desc}")
        hb.append(f"<li><b>{html.escape(run.label)}</b>: {html.escape(desc)}</li>")
    md.append("")
    hb.append("</ul>")
    if plot_name and evaluated:
        md += [f"![headline metric per config]({plot_name})", ""]
        hb.append(f'<img src="{html.escape(plot_name)}" alt="headline metric per config">')
    for s in sections(runs):
        md += ([f"{'#' * s.level} {s.title}", ""] if s.level else []) + ([s.lead, ""] if s.lead else [])
        md += ([_md_table(*s.table), ""] if s.table else []) + [f"- {n}" for n in s.notes] + ([""] if s.notes else [])
        hb += [f"<h{s.level}>{html.escape(s.title)}</h{s.level}>"] if s.level else []
        hb += ([f"<p>{html.escape(s.lead)}</p>"] if s.lead else []) + ([_html_table(*s.table)] if s.table else [])
        hb += ["<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in s.notes) + "</ul>"] if s.notes else []
    style = ("body{font-family:sans-serif;margin:2em;max-width:90em}table{border-collapse:collapse;margin:1em 0}"
             "td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left}tr.paper{color:#555;background:#f7f7f7}"
             "img{max-width:100%}")
    page = ("<!doctype html><html><head><meta charset='utf-8'><title>vlprobe report</title>"
            f"<style>{style}</style></head><body>" + "\n".join(hb) + "</body></html>\n")
    return "\n".join(md) + "\n", page


# The report's chart: one panel per benchmark, wrapped after this many bars' groups, so that it stays readable
# (one long row of every config of every run was 3,850 x 440 px).
PANEL_UNITS = 10


def _panels(units: list[tuple[str, str, str, str]]) -> list[list[tuple[str, str, str, str]]]:
    """The units grouped by benchmark, each group cut into rows of PANEL_UNITS."""
    by_bench: dict[str, list[tuple[str, str, str, str]]] = {}
    for u in units:
        by_bench.setdefault(u[0], []).append(u)
    return [group[i:i + PANEL_UNITS] for group in by_bench.values() for i in range(0, len(group), PANEL_UNITS)]


def chart(runs: Sequence[Run]) -> Figure:
    """The report's Figure: each run's headline metric per (benchmark, config, split), a panel per benchmark."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    units = dict.fromkeys((name, e.config, e.split, key) for run in runs for name, e in run.named
                          if (key := entry_headline(e)))
    panels = _panels(list(units)) or [[]]
    widest = max(len(p) for p in panels)
    width = min(16.0, max(6.0, 0.5 * widest * max(1, len(runs)) + 2))
    fig, axes = plt.subplots(len(panels), 1, figsize=(width, 3.3 * len(panels) + 0.4), dpi=110, squeeze=False,
                             layout="constrained")
    bar = 0.8 / max(1, len(runs))
    legend: dict[str, Any] = {}  # label -> handle, in first-seen order, for the one legend of the figure
    for ax, panel in zip(axes[:, 0], panels):
        labels = [f"{c}/{s}\n{k}" for _, c, s, k in panel]
        chance = [next((m.chance[k] for run in runs if (m := _metrics(run, b, c, s)) and k in m.chance), None)
                  for b, c, s, k in panel]
        for i, run in enumerate(runs):
            found = [(_metrics(run, b, c, s), k) for b, c, s, k in panel]
            bars, line = bar_chart(ax, labels, [m.value(k) if m else None for m, k in found],
                                   ci=[m.ci.get(k) if m else None for m, k in found], color=None, label=run.label,
                                   chance=chance if i == len(runs) - 1 else None,  # once, after the bars (the legend's order)
                                   offset=(i - (len(runs) - 1) / 2) * bar, width=bar)
            legend.setdefault(run.label, bars)
            if line is not None:
                legend.setdefault("chance", line)
        ax.set_xticks(np.arange(len(panel)), labels, rotation=30, ha="right", fontsize=8)
        ax.set_xlim(-0.6, max(len(panel), 4) - 0.4)  # a panel of few bars keeps the bars' width
        if panel:
            ax.set_title(str(panel[0][0]), fontsize=9, loc="left")
    if legend:
        fig.legend(list(legend.values()), list(legend), loc="outside upper center", ncols=min(len(legend), 6),
                   fontsize=7, frameon=False)
    return fig


def write_report(paths: str | os.PathLike | Sequence[str | os.PathLike], out: str | os.PathLike,
                 labels: Sequence[str] | None = None) -> list[Path]:
    """Check every results file (or run folder), then write the report into the folder ``out``."""
    check_out(out)
    paths = [paths] if isinstance(paths, (str, os.PathLike)) else paths
    if not all(isinstance(p, (str, os.PathLike)) for p in paths):
        raise ArgumentError("paths", paths, "must be results.json files or run folders (str or os.PathLike)")
    folder = Path(out).expanduser()
    if folder.exists() and not folder.is_dir():
        raise ArgumentError("out", str(folder), "is a file, not a folder; choose a folder for the report")
    runs = load_runs(paths, labels, probes=True)
    evaluated = [r for r in runs if r.kind == "evaluate"]
    md, page = build_report(runs, plot_name="report.png")
    tex = latex_tables(runs)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        written = [folder / "report.md", folder / "report.html", folder / "report.tex"]
        for path, text in zip(written, (md, page, tex), strict=True):
            atomic_write_bytes(path, text.encode("utf-8"))
        if evaluated:  # the plot is of evaluate runs' headline metrics
            written.append(folder / "report.png")
            write_png(written[3], chart(evaluated))
    except OSError as err:
        raise ArgumentError("out", str(folder), f"cannot write the report there ({err.strerror or err})") from None
    return written
