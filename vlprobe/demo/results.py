"""The Results tab: results.json files side by side (``vlprobe.report.long_table``), beside the
papers' published numbers (``vlprobe.report.paper_table``), and a chart with one bar per run per
(benchmark, config, split, headline metric). The tables come from vlprobe.report (what
``vlprobe report`` writes); this module only adapts them to the page."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from .settings import SpaceError

PAPER_BENCHMARKS = ("valse", "winoground", "bla")
MAX_RESULTS_BYTES = 20 * 1024 * 1024
MAX_RESULTS_FILES = 20


@dataclass
class Comparison:
    headers: list[str]  # the runs: one row per (benchmark, config, split, metric), one column per run
    rows: list[list[Any]]
    paper_headers: list[str]  # the papers' layout: one row per system, runs first
    paper_rows: list[list[Any]]
    chart: Any  # a matplotlib Figure, or None
    note: str
    points: list[dict]  # the chart's bars: source, benchmark, config, split, metric, value, ci, chance


def _file_path(f: Any) -> Path:
    if isinstance(f, dict):
        f = f.get("path") or f.get("name")
    return Path(str(getattr(f, "name", f)))


def run_label(path: Path, model_label: str) -> str:
    """A run is named by its file (``a.json`` -> ``a``), or by its folder when the file is the
    usual ``results.json``, or by its model when neither says more."""
    if path.stem != "results":
        return path.stem
    return path.parent.name if path.parent.name and not path.parent.name.startswith("tmp") else model_label


def load_runs(files: Iterable[Any]) -> list[Any]:
    from .. import report
    from ..errors import VlprobeError

    paths = [_file_path(f) for f in files]
    if not paths:
        return []
    if len(paths) > MAX_RESULTS_FILES:
        raise SpaceError(f"{len(paths)} files is more than this page compares at once ({MAX_RESULTS_FILES})")
    for p in paths:
        if p.is_file() and p.stat().st_size > MAX_RESULTS_BYTES:
            raise SpaceError(f"{p.name}: larger than {MAX_RESULTS_BYTES // (1024 * 1024)} MB; is it a results.json?")
    try:
        runs = report.load_runs(paths)
    except (report.ReportError, FileNotFoundError, VlprobeError) as err:
        message = str(err)
        for p in paths:  # name the file as the person uploaded it, not by the server's temporary path
            message = message.replace(str(p), p.name)
        message = message.replace("; write one with `vlprobe evaluate`", "")
        raise SpaceError(message) from None
    for run in runs:
        for r in run.results:
            if not isinstance(r, dict) or not {"benchmark", "config", "split", "metrics"} <= set(r):
                raise SpaceError(f"{run.path.name}: not a vlprobe results file "
                                 "(a result lacks benchmark, config, split or metrics)")
    labels: dict[str, int] = {}
    for run in runs:
        label = run_label(run.path, run.label)
        labels[label] = labels.get(label, 0) + 1
        run.label = label if labels[label] == 1 else f"{label} #{labels[label]}"
    return runs


def long_rows(runs: Sequence[Any]) -> tuple[list[str], list[list[Any]], list[str]]:
    """(headers, rows, benchmarks) of the runs' metrics side by side."""
    from .. import report

    benchmarks = list(dict.fromkeys(r["benchmark"] for run in runs for r in run.results))
    headers = ["benchmark", "config", "split", "metric"] + [run.label for run in runs] + ["chance"]
    rows: list[list[Any]] = []
    for bench in benchmarks:
        rows += [[bench] + row for row in report.long_table(runs, bench)[1]]
    return headers, rows, benchmarks


def papers_only(benchmark: str, papers: list[dict]) -> tuple[list[str], list[list[Any]]]:
    """The published table of ``benchmark`` alone (no run loaded): one row per system."""
    from .. import report

    rows = [p for p in papers if p["benchmark"] == benchmark and p["table"] in report.PAPER_TABLES[benchmark]]
    columns = list(dict.fromkeys((p["config"], p["metric"]) for p in rows))
    out = []
    for model in dict.fromkeys(p["model"] for p in rows):
        values = {(p["config"], p["metric"]): p["value"] for p in rows if p["model"] == model}
        table = next(p["table"] for p in rows if p["model"] == model)
        out.append([model, f"paper, {table}"] + [f"{values[c]:.1f}" if c in values else "" for c in columns])
    return ["system", "source"] + [f"{c} {m}" for c, m in columns], out


def papers_benchmark(choice: str | None, benchmarks: Sequence[str], have_runs: bool) -> str | None:
    if choice not in ("auto", "all", "", None):
        return choice
    return next((b for b in benchmarks if b in PAPER_BENCHMARKS), None if have_runs else "valse")


def paper_section(runs: Sequence[Any], bench: str | None) -> tuple[list[str], list[list[Any]], list[dict], str]:
    """(headers, rows, chart points, note) beside the papers' published numbers of ``bench``."""
    from .. import report

    if bench not in PAPER_BENCHMARKS:
        return [], [], [], ("The published numbers here are VALSE's, Winoground's and BLA's; none of the loaded "
                            "runs is on one of them.")
    papers = report.paper_results()
    table = report.paper_table(runs, bench, papers) if runs else papers_only(bench, papers)
    if table is None:
        return [], [], [], f"No loaded run has a config and metric that the {bench} paper reports."
    points = [{"source": f"paper: {p['model']}", "benchmark": bench, "config": p["config"], "split": "paper",
               "metric": p["metric"], "value": p["value"], "ci": None, "chance": None}
              for p in papers if p["benchmark"] == bench and p["table"] in report.PAPER_TABLES[bench]]
    return table[0], table[1], points, report.PAPER_NOTES.get(bench, "")


def headline_key(benchmark: str, metrics: dict) -> str | None:
    """The metric the chart shows for a result, by vlprobe's one headline rule
    (:func:`vlprobe.summary.primary_metric`: BLA's sentence accuracy, Winoground's group...)."""
    from .. import report

    return report.headline(metrics, benchmark)


def run_points(runs: Sequence[Any]) -> list[dict]:
    """One chart bar per run per (benchmark, config, split): the headline metric, its CI, chance."""
    from .. import report

    out = []
    for run in runs:
        for r in run.results:
            key = headline_key(r["benchmark"], r["metrics"])
            value = r["metrics"].get(key) if key else None
            if value is None:
                continue
            ci = (r["metrics"].get("ci") or {}).get(key)
            chance = (r["metrics"].get("chance") or {}).get(key)
            out.append({
                "source": run.label, "benchmark": r["benchmark"], "split": r["split"], "metric": key,
                "config": report.CONFIG_ALIASES.get((r["benchmark"], r["config"]), r["config"]),
                "value": 100 * float(value), "ci": None if not ci or ci[0] is None else (100 * ci[0], 100 * ci[1]),
                "chance": None if chance is None else 100 * float(chance),
            })
    return out


def matching_papers(paper_points: list[dict], points: list[dict]) -> list[dict]:
    """The papers' bars only where a run has the same config and headline metric (with no run:
    each benchmark's headline metric)."""
    if points:
        shown = {(p["benchmark"], p["config"], p["metric"]) for p in points}
        return [p for p in paper_points if (p["benchmark"], p["config"], p["metric"]) in shown]
    from ..summary import primary_metric

    return [p for p in paper_points
            if p["metric"] == primary_metric(p["benchmark"], None, {q["metric"] for q in paper_points})]


def compare_results(files: Iterable[Any] | None, include_papers: bool = True, benchmark: str = "auto") -> Comparison:
    """The Results tab: the runs' metrics side by side, and for one benchmark, the runs beside the
    papers' published numbers, with a chart."""
    runs = load_runs([f for f in (files or []) if f])
    if not runs and not include_papers:
        raise SpaceError("nothing to compare: load one or more results files, or tick "
                         "'Include the papers' published numbers'")
    headers, rows, benchmarks = long_rows(runs)
    notes = [f"{len(runs)} run{'s' if len(runs) != 1 else ''}; values in %, with the run's 95% confidence "
             "interval in brackets when it has one."]
    notes += [f"{run.label}: {', '.join(run.caveats())}, not comparable to a paper." for run in runs if run.caveats()]
    paper_headers: list[str] = []
    paper_rows: list[list[Any]] = []
    paper_points: list[dict] = []
    if include_papers:
        paper_headers, paper_rows, paper_points, note = paper_section(runs, papers_benchmark(benchmark, benchmarks, bool(runs)))
        notes.append(note)
    points = run_points(runs)
    points += matching_papers(paper_points, points)
    sources = [run.label for run in runs] + list(dict.fromkeys(p["source"] for p in points if p["source"].startswith("paper: ")))
    return Comparison(headers=headers, rows=rows, paper_headers=paper_headers, paper_rows=paper_rows,
                      chart=comparison_chart(points, sources), note=" ".join(n for n in notes if n), points=points)


def _group(point: dict) -> tuple[str, str, str]:
    """A chart group: (benchmark, config, metric); runs' splits are separate bars within it."""
    return point["benchmark"], point["config"], point["metric"]


def comparison_chart(points: list[dict], sources: list[str]) -> Any:
    """Grouped bars, one group per benchmark/config/metric, one bar per (source, split) (runs first,
    then published systems), the runs' CIs, dashed chance lines; None when there is nothing. Each
    bar's SVG id is ``bar:<source>:<benchmark>/<config>/<split>:<metric>``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not points:
        return None
    groups = list(dict.fromkeys(_group(p) for p in points))
    bars = [(s, split) for s in sources for split in dict.fromkeys(p["split"] for p in points if p["source"] == s)]
    width = 0.8 / max(1, max(sum(1 for p in points if _group(p) == g) for g in groups))
    fig, ax = plt.subplots(figsize=(min(12.0, max(6.4, 1.2 * len(points) ** 0.8 + 3)), 4.4), dpi=100)
    cmap = plt.get_cmap("tab20")
    colours = {s: cmap(k % 20) for k, s in enumerate(sources)}
    for g, group in enumerate(groups):
        members = [p for b in bars for p in points if _group(p) == group and (p["source"], p["split"]) == b]
        for k, p in enumerate(members):
            x = g - 0.4 + width * (k + 0.5)
            err = None if not p.get("ci") else [[max(0.0, p["value"] - p["ci"][0])], [max(0.0, p["ci"][1] - p["value"])]]
            (bar,) = ax.bar([x], [p["value"]], width, color=colours[p["source"]], yerr=err, capsize=2,
                            label=p["source"], edgecolor="white")
            bar.set_gid(f"bar:{p['source']}:{p['benchmark']}/{p['config']}/{p['split']}:{p['metric']}")
            if p["split"] != "paper":
                ax.text(x, 1, p["split"], rotation=90, ha="center", va="bottom", fontsize=7, color="white")
            if p.get("chance") is not None:
                ax.hlines(p["chance"], x - width / 2, x + width / 2, colors="black", linestyles="dashed", linewidth=1)
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    ax.set_xticks(np.arange(len(groups)), [f"{b}/{c}\n({m})" for b, c, m in groups], rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("%")
    ax.set_ylim(0, 100)
    ax.legend(unique.values(), unique.keys(), fontsize=7, ncol=1 + len(unique) // 10, loc="upper left",
              bbox_to_anchor=(1.0, 1.0), frameon=False)
    ax.set_title("headline metric per config and split (dashed: chance; bars: 95% CI)", fontsize=9)
    fig.tight_layout()
    plt.close(fig)
    return fig


def chart_svg(fig: Any) -> str:
    """The figure as SVG text for the page: each bar a ``<g data-bar="source:benchmark/config/split:metric">``
    (a data attribute, which HTML sanitisers keep, unlike ids)."""
    import re

    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    svg = buf.getvalue()
    return re.sub(r'<g id="bar:([^"]+)"', r'<g data-bar="\1"', svg[svg.find("<svg"):])
