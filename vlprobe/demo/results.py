"""The Results tab: results.json files side by side (``vlprobe.report.long_table``), beside the
papers' published numbers (``vlprobe.report.paper_table``), and a chart with one bar per run per
(benchmark, config, split, headline metric). The tables come from vlprobe.report (what
``vlprobe report`` writes); this module only adapts them to the page."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from ..benchmarks import get
from ..report.papers import PaperResult, paper_benchmarks
from ..results.schema import dataset_name
from .settings import SpaceError

PAPER_BENCHMARKS = paper_benchmarks()  # those whose benchmark declares published numbers (vlprobe/benchmarks/)
MAX_RESULTS_BYTES = 20 * 1024 * 1024
MAX_RESULTS_FILES = 20


@dataclass(frozen=True)
class Point:
    """One point of the chart: a run's (or a published system's) headline metric for a config and split, in %."""

    source: str  # the run's label, or "paper: <system>"
    benchmark: str
    config: str
    split: str
    metric: str
    value: float
    ci: tuple[float, float] | None = None
    chance: float | None = None


@dataclass
class Comparison:
    headers: list[str]  # the runs: one row per (benchmark, config, split, metric), one column per run
    rows: list[list[Any]]
    paper_headers: list[str]  # the papers' layout: one row per system, runs first
    paper_rows: list[list[Any]]
    chart: Any  # a matplotlib Figure, or None
    note: str
    points: list[Point]  # the chart's points


MAX_LABEL = 32
_MEANINGLESS = re.compile(r"^(tmp.*|[0-9a-f]{16,}|gradio|uploads?|results?|outputs?|runs?|\.?)$", re.IGNORECASE)


def short(text: str, limit: int = MAX_LABEL) -> str:
    """``text`` on one line, at most ``limit`` characters (the middle elided)."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    head = (limit - 1) * 2 // 3
    return text[:head] + "…" + text[len(text) - (limit - 1 - head):]


def run_description(run: Any) -> str:
    """What a run is: its model (vlprobe.report's label: model, dtype, control) and datasets."""
    names = ", ".join(dict.fromkeys(dataset_name(e.dataset) for e in run.results))
    model = re.sub(r" #\d+$", "", run.label)  # vlprobe.report numbers repeated labels; the page does that itself
    return f"{model} · {names}" if names else model


def run_label(path: Path, description: str, typed: str = "") -> str:
    """A run's name: what the visitor typed; else its file's name (``a.json`` -> ``a``); else, for
    the usual ``results.json``, its folder's name when it says something (not a temporary or
    upload folder, whose names are random: 64 hex digits for Gradio's uploads); else what the run
    is (its model and datasets). Short: at most MAX_LABEL characters."""
    if typed.strip():
        return short(typed)
    if path.stem.lower() not in ("results", "result") and not _MEANINGLESS.match(path.stem):
        return short(path.stem)
    folder = path.parent.name
    if folder and not _MEANINGLESS.match(folder):
        return short(folder)
    return short(description)


def unique_labels(labels: Sequence[str], details: Sequence[str]) -> list[str]:
    """The labels made distinct: a repeated label gets its run's detail when that tells the runs
    apart (``name · detail``), else a number (``name (2)``); at most MAX_LABEL characters."""
    out = list(labels)
    for label in dict.fromkeys(labels):
        idx = [k for k, lab in enumerate(labels) if lab == label]
        if len(idx) < 2:
            continue
        tried = [short(f"{label} · {details[k]}") if details[k] and details[k] != label else label for k in idx]
        if len(set(tried)) < len(tried):
            tried = [short(label, MAX_LABEL - 4) + f" ({n})" for n in range(1, len(idx) + 1)]
        for k, lab in zip(idx, tried):
            out[k] = lab
    seen: dict[str, int] = {}
    for k, lab in enumerate(out):  # a label with a detail could still meet another run's label
        seen[lab] = seen.get(lab, 0) + 1
        if seen[lab] > 1:
            out[k] = short(lab, MAX_LABEL - 4) + f" ({seen[lab]})"
    return out


def display_name(f: Any) -> str:
    """The name a file was uploaded under (Gradio keeps it as the last part of its path), made safe
    to show and never a path: see :func:`vlprobe.demo.uploads.safe_name`."""
    from .uploads import safe_name

    if isinstance(f, dict):
        name = f.get("orig_name") or f.get("path") or f.get("name") or ""
    else:
        name = getattr(f, "orig_name", None) or getattr(f, "name", None) or str(f)
    return safe_name(str(name))


def load_runs(files: Iterable[Any], names: str | Sequence[str] = "") -> list[Any]:
    """The runs of the uploaded files, each named (see :func:`run_label`; ``names``: one per line,
    in the files' order, optional) with a short name unique among them."""
    from .. import report
    from ..errors import VlprobeError
    from .uploads import upload_path

    files = list(files)
    if not files:
        return []
    if len(files) > MAX_RESULTS_FILES:
        raise SpaceError(f"{len(files)} files is more than this page compares at once ({MAX_RESULTS_FILES})")
    paths = [upload_path(f, "results file") for f in files]
    shown = [display_name(f) for f in files]
    for p, name in zip(paths, shown):
        if p.is_file() and p.stat().st_size > MAX_RESULTS_BYTES:
            raise SpaceError(f"{name}: larger than {MAX_RESULTS_BYTES // (1024 * 1024)} MB; is it a results.json?")
    try:
        runs = report.load_runs(paths)
    except (report.ReportError, FileNotFoundError, VlprobeError) as err:
        message = str(err)
        for p, name in zip(paths, shown):  # name the file as the person uploaded it, not by the server's path
            message = message.replace(str(p), name)
        message = message.replace("; write one with `vlprobe evaluate`", "")
        raise SpaceError(message) from None
    typed = [n.strip() for n in (names.splitlines() if isinstance(names, str) else names)]
    typed += [""] * (len(runs) - len(typed))
    descriptions = [run_description(run) for run in runs]
    labels = [run_label(p.parent / name, desc, t) for p, name, desc, t in zip(paths, shown, descriptions, typed)]
    created = [str(run.doc.provenance.created or "")[:16].replace("T", " ") for run in runs]
    details = [d if len(set(descriptions)) == len(descriptions) else c for d, c in zip(descriptions, created)]
    for run, label in zip(runs, unique_labels(labels, details)):
        run.label = label
    return runs


def long_rows(runs: Sequence[Any]) -> tuple[list[str], list[list[Any]], list[str]]:
    """(headers, rows, benchmarks) of the runs' metrics side by side: ``vlprobe report``'s long table
    (per run its value [CI] and its tied comparisons) with the benchmark in front."""
    from .. import report

    benchmarks = list(dict.fromkeys(name for run in runs for name, _ in run.named))
    headers: list[str] = []
    rows: list[list[Any]] = []
    for bench in benchmarks:
        header, body = report.long_table(runs, bench)
        headers = headers or ["benchmark"] + header
        rows += [[bench] + row for row in body]
    return headers, rows, benchmarks


def _published(benchmark: str, papers: list[PaperResult]) -> list[PaperResult]:
    from .. import report

    return [p for p in papers if p.benchmark == benchmark and p.table in report.PAPER_TABLES[benchmark]]


def papers_only(benchmark: str, papers: list[PaperResult]) -> tuple[list[str], list[list[Any]]]:
    """The published table of ``benchmark`` alone (no run loaded), long rather than wide: one row
    per (config, metric), one column per system, the first row each system's source."""
    from .. import report

    rows = _published(benchmark, papers)
    systems = list(dict.fromkeys(p.model for p in rows))
    source = {m: report.source_label(benchmark, next(p.table for p in rows if p.model == m)) for m in systems}
    values = {(p.config, p.metric, p.model): p.value for p in rows}
    out: list[list[Any]] = [["source", ""] + [source[m] for m in systems]]
    for config, metric in dict.fromkeys((p.config, p.metric) for p in rows):
        out.append([config, metric] + [f"{values[config, metric, m]:.1f}" if (config, metric, m) in values else ""
                                       for m in systems])
    return ["config", "metric", *systems], out


def papers_benchmark(choice: str | None, benchmarks: Sequence[str], have_runs: bool) -> str | None:
    if choice not in ("auto", "all", "", None):
        return choice
    return next((b for b in benchmarks if b in PAPER_BENCHMARKS), None if have_runs else PAPER_BENCHMARKS[0])


def paper_section(runs: Sequence[Any], bench: str | None) -> tuple[list[str], list[list[Any]], list[Point], str]:
    """(headers, rows, chart points, note) beside the papers' published numbers of ``bench``."""
    from .. import report

    if bench not in PAPER_BENCHMARKS:
        owners = ", ".join(f"{get(b).display}'s" for b in PAPER_BENCHMARKS)
        return [], [], [], f"The published numbers here are {owners}; none of the loaded runs is on one of them."
    papers = report.paper_results()
    table = report.paper_table(runs, bench, papers) if runs else papers_only(bench, papers)
    if table is None:
        return [], [], [], f"No loaded run has a config and metric that the {bench} paper reports."
    points = [Point(f"paper: {p.model}", bench, p.config, "paper", p.metric, p.value) for p in _published(bench, papers)]
    return table[0], table[1], points, report.PAPER_NOTES.get(bench, "")


def headline_key(benchmark: str, metrics: Any) -> str | None:
    """The metric the chart shows for a result, by vlprobe's one headline rule
    (:func:`vlprobe.results.summary.primary_metric`: BLA's sentence accuracy, Winoground's group...)."""
    from .. import report

    return report.headline(metrics, benchmark)


def run_points(runs: Sequence[Any]) -> list[Point]:
    """One chart point per run per (benchmark, config, split): the headline metric, its CI, chance."""
    from .. import report

    out = []
    for run in runs:
        for name, e in run.named:
            key = report.entry_headline(e)  # by the benchmark and the item shape the entry records
            value = e.metrics.value(key)
            if value is None:
                continue
            ci, chance = e.metrics.ci.get(key), e.metrics.chance.get(key)
            out.append(Point(run.label, name, report.CONFIG_ALIASES.get((name, e.config), e.config), e.split, key,
                             100 * value, None if not ci or None in ci else (100 * ci[0], 100 * ci[1]),
                             None if chance is None else 100 * chance))
    return out


def matching_papers(paper_points: list[Point], points: list[Point]) -> list[Point]:
    """The papers' points only where a run has the same config and headline metric (with no run:
    each benchmark's headline metric)."""
    if points:
        return [p for p in paper_points if _group(p) in {_group(q) for q in points}]
    from ..results.summary import primary_metric

    return [p for p in paper_points if p.metric == primary_metric(p.benchmark, None, {q.metric for q in paper_points})]


def compare_results(files: Iterable[Any] | None, include_papers: bool = True, benchmark: str = "auto",
                    names: str = "") -> Comparison:
    """The Results tab: the runs' metrics side by side, and for one benchmark, the runs beside the
    papers' published numbers, with a chart. ``names``: the runs' names, one per line (optional)."""
    runs = load_runs([f for f in (files or []) if f], names)
    if not runs and not include_papers:
        raise SpaceError("nothing to compare: load one or more results files, or tick "
                         "'Include the papers' published numbers'")
    headers, rows, benchmarks = long_rows(runs)
    notes = ([f"{len(runs)} run{'s' if len(runs) != 1 else ''}; values in %, with the run's 95% confidence "
              "interval in brackets when it has one."] if runs else
             ["No results file loaded: the papers' published numbers alone, in %."])
    notes += [f"{run.label}: {', '.join(run.caveats())}, not comparable to a paper." for run in runs if run.caveats()]
    # the summary blocks' other departures from the authors' setting (another tie policy, items they do not score,
    # BLA's clamped cosines), as `vlprobe report` says them; limit, control and modality are the caveats above
    notes += [f"{run.label}: departs from the authors' setting: {d.note}." for run in runs for block in run.summary.values()
              for d in block.departures if d.setting not in ("limit", "control", "modality")]
    paper_headers: list[str] = []
    paper_rows: list[list[Any]] = []
    paper_points: list[Point] = []
    if include_papers:
        paper_headers, paper_rows, paper_points, note = paper_section(runs, papers_benchmark(benchmark, benchmarks, bool(runs)))
        notes.append(note)
    points = run_points(runs)
    points += matching_papers(paper_points, points)
    sources = [run.label for run in runs] + list(dict.fromkeys(p.source for p in points if p.source.startswith("paper: ")))
    return Comparison(headers=headers, rows=rows, paper_headers=paper_headers, paper_rows=paper_rows,
                      chart=comparison_chart(points, sources), note=" ".join(n for n in notes if n), points=points)


def _group(point: Point) -> tuple[str, str, str]:
    """A chart row: (benchmark, config, metric); every run's split and every published system is a
    point on it."""
    return point.benchmark, point.config, point.metric


def _group_label(group: tuple[str, str, str], one_benchmark: bool, one_metric: bool) -> str:
    """A group's label, on one line: ``config · metric`` (``benchmark/config``: several benchmarks;
    no metric when every group has the same one, which the axis names), the metric marked where
    lower is better, at most 44 characters."""
    from .glossary import chart_label

    benchmark, config, metric = group
    name = config if one_benchmark else f"{benchmark}/{config}"
    return short(name if one_metric else f"{name} · {chart_label(metric)}", 44)


MARKERS = "osD^vP*Xhp<>"


def comparison_chart(points: list[Point], sources: list[str]) -> Any:
    """A dot plot, None when there is nothing. One row per benchmark/config/metric, one point per
    (source, split) in its own colour and marker (runs first, then published systems); with more
    sources than configs (Winoground's 19 systems on one config) the other way round: one row per
    source, one point per config. Row labels sit on the left, one line each, a row apart, so they
    never meet; points are nudged apart within a row; the runs' CIs are horizontal bars, chance a
    dashed tick; the legend sits under the plot. Each point's SVG id is
    ``point:<source>:<benchmark>/<config>/<split>:<metric>``."""
    import textwrap

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .display import chart_rc
    from .glossary import chart_label

    if not points:
        return None
    groups = list(dict.fromkeys(_group(p) for p in points))
    one_benchmark = len({g[0] for g in groups}) == 1
    metrics = list(dict.fromkeys(g[2] for g in groups))
    splits = {s: list(dict.fromkeys(p.split for p in points if p.source == s)) for s in sources}
    runs = [(s, split) for s in sources for split in splits[s]]
    run_name = {b: f"{b[0]} · {b[1]}" if len(splits[b[0]]) > 1 else b[0] for b in runs}
    group_name = {g: _group_label(g, one_benchmark, len(metrics) == 1) for g in groups}
    by_source = len(runs) > len(groups)
    if by_source:  # rows: the sources; points: the configs
        rows, series = runs, groups
        row_of, series_of = (lambda p: (p.source, p.split)), _group
        row_names, series_names = [run_name[b] for b in runs], [group_name[g] for g in groups]
    else:
        rows, series = groups, runs
        row_of, series_of = _group, (lambda p: (p.source, p.split))
        row_names, series_names = [group_name[g] for g in groups], [run_name[b] for b in runs]
    cmap = plt.get_cmap("tab20" if len(series) > 10 else "tab10")
    style = {b: (cmap(k % cmap.N), MARKERS[k % len(MARKERS)]) for k, b in enumerate(series)}
    nudge = min(0.14, 0.7 / max(1, len(series)))
    show_legend = len(series) > 1 or any(p.chance is not None for p in points)
    entries = series_names + ["chance"] if show_legend else []
    two = len(entries) > 4 and max(len(k) for k in entries) <= 24  # short names: two legend columns
    legend_lines = sum(len(textwrap.wrap(k, 40, break_long_words=False)) for k in entries) / (2 if two else 1)
    # wide enough that the plot keeps about 3.6 in beside its longest row label (13 pt: about 0.1 in a character)
    width = min(7.6, max(5.4, 3.6 + 0.1 * max(len(n) for n in row_names)))
    with matplotlib.rc_context(chart_rc()):
        fig, ax = plt.subplots(figsize=(width, 1.6 + 0.42 * len(rows) + 0.27 * (legend_lines + 1)), dpi=100,
                               layout="constrained")
        chance_drawn = set()
        for p in points:
            r, k = rows.index(row_of(p)), series.index(series_of(p))
            y = r + nudge * (k - (len(series) - 1) / 2)
            colour, marker = style[series_of(p)]
            err = None if not p.ci else [[max(0.0, p.value - p.ci[0])], [max(0.0, p.ci[1] - p.value)]]
            container = ax.errorbar([p.value], [y], xerr=err, fmt=marker, color=colour, markersize=7, capsize=2,
                                    label=series_names[k], markeredgecolor="white", markeredgewidth=0.6)
            container.lines[0].set_gid(f"point:{p.source}:{p.benchmark}/{p.config}/{p.split}:{p.metric}")
            if p.chance is not None and (r, p.chance) not in chance_drawn:
                chance_drawn.add((r, p.chance))
                ax.vlines(p.chance, r - 0.42, r + 0.42, colors="black", linestyles="dashed", linewidth=1,
                          label="chance")
        ax.set_yticks(np.arange(len(rows)), row_names)
        ax.set_ylim(len(rows) - 0.5, -0.5)  # the first row on top
        ax.set_xlim(0, 100)
        ax.set_xlabel(f"{chart_label(metrics[0])} (%)" if len(metrics) == 1 else "%")
        ax.grid(axis="x", color="#e5e7eb")
        ax.set_axisbelow(True)
        if show_legend:
            handles, labels = ax.get_legend_handles_labels()
            unique = dict(zip(labels, handles))
            # under the chart (constrained layout keeps it clear of the axis labels), never over a point
            fig.legend(unique.values(), ["\n".join(textwrap.wrap(k, 40, break_long_words=False)) for k in unique],
                       loc="outside lower left", frameon=False, ncol=2 if two else 1)
        fig.suptitle(f"{groups[0][0]}: headline metric" if one_benchmark else "headline metric per config")
    plt.close(fig)
    return fig


def chart_svg(fig: Any) -> str:
    """The figure as SVG for the page (:func:`vlprobe.demo.display.svg`): each point a
    ``<g data-point="source:benchmark/config/split:metric">`` (a data attribute, which HTML
    sanitisers keep, unlike ids), its text kept as text."""
    from .display import svg

    return svg(fig, "Dot plot of each run's and each published system's headline metric per config and split, "
                    "in %, with 95% confidence intervals and dashed chance ticks", chart_id="results-svg")
