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
from ..report.papers import paper_benchmarks
from .settings import SpaceError

PAPER_BENCHMARKS = paper_benchmarks()  # those whose benchmark declares published numbers (vlprobe/benchmarks/)
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
    datasets = list(dict.fromkeys(str(r.get("dataset") or r.get("benchmark") or "") for r in run.results))
    names = ", ".join(Path(d).name for d in datasets if d)
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
    for run, name in zip(runs, shown):
        for r in run.results:
            if not isinstance(r, dict) or not {"benchmark", "config", "split", "metrics"} <= set(r):
                raise SpaceError(f"{name}: not a vlprobe results file "
                                 "(a result lacks benchmark, config, split or metrics)")
    typed = [n.strip() for n in (names.splitlines() if isinstance(names, str) else names)]
    typed += [""] * (len(runs) - len(typed))
    descriptions = [run_description(run) for run in runs]
    labels = [run_label(p.parent / name, desc, t) for p, name, desc, t in zip(paths, shown, descriptions, typed)]
    created = [str((run.doc.get("provenance") or {}).get("created") or "")[:16].replace("T", " ") for run in runs]
    details = [d if len(set(descriptions)) == len(descriptions) else c for d, c in zip(descriptions, created)]
    for run, label in zip(runs, unique_labels(labels, details)):
        run.label = label
    return runs


def long_rows(runs: Sequence[Any]) -> tuple[list[str], list[list[Any]], list[str]]:
    """(headers, rows, benchmarks) of the runs' metrics side by side: ``vlprobe report``'s long table
    (per run its value [CI] and its tied comparisons) with the benchmark in front."""
    from .. import report

    benchmarks = list(dict.fromkeys(r["benchmark"] for run in runs for r in run.results))
    headers: list[str] = []
    rows: list[list[Any]] = []
    for bench in benchmarks:
        header, body = report.long_table(runs, bench)
        headers = headers or ["benchmark"] + header
        rows += [[bench] + row for row in body]
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
        out.append([model, report.source_label(benchmark, table)]
                   + [f"{values[c]:.1f}" if c in values else "" for c in columns])
    return ["system", "source"] + [f"{c} {m}" for c, m in columns], out


def papers_benchmark(choice: str | None, benchmarks: Sequence[str], have_runs: bool) -> str | None:
    if choice not in ("auto", "all", "", None):
        return choice
    return next((b for b in benchmarks if b in PAPER_BENCHMARKS), None if have_runs else PAPER_BENCHMARKS[0])


def paper_section(runs: Sequence[Any], bench: str | None) -> tuple[list[str], list[list[Any]], list[dict], str]:
    """(headers, rows, chart points, note) beside the papers' published numbers of ``bench``."""
    from .. import report

    if bench not in PAPER_BENCHMARKS:
        owners = ", ".join(f"{get(b).display}'s" for b in PAPER_BENCHMARKS)
        return [], [], [], f"The published numbers here are {owners}; none of the loaded runs is on one of them."
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
            key = report.entry_headline(r)  # by the benchmark and the item shape the entry records
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


def compare_results(files: Iterable[Any] | None, include_papers: bool = True, benchmark: str = "auto",
                    names: str = "") -> Comparison:
    """The Results tab: the runs' metrics side by side, and for one benchmark, the runs beside the
    papers' published numbers, with a chart. ``names``: the runs' names, one per line (optional)."""
    runs = load_runs([f for f in (files or []) if f], names)
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


def _tick_label(benchmark: str, config: str, metric: str) -> str:
    """A group's x-axis label: ``benchmark/config`` on one line when short, else broken after the
    slash, never inside a name (a name cut over two lines reads as two words), then ``(metric)``."""
    joined = f"{benchmark}/{config}"
    return (joined if len(joined) <= 18 else f"{benchmark}/\n{config}") + f"\n({metric})"


def comparison_chart(points: list[dict], sources: list[str]) -> Any:
    """Grouped bars, one group per benchmark/config/metric, one bar per (source, split) (runs first,
    then published systems), the runs' CIs, dashed chance lines; None when there is nothing. Each
    bar has its own colour and legend entry ("run · split" where a run has several splits); its
    SVG id is ``bar:<source>:<benchmark>/<config>/<split>:<metric>``."""
    import textwrap

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .display import chart_rc

    if not points:
        return None
    groups = list(dict.fromkeys(_group(p) for p in points))
    splits = {s: list(dict.fromkeys(p["split"] for p in points if p["source"] == s)) for s in sources}
    bars = [(s, split) for s in sources for split in splits[s]]
    per_group = max(1, max(sum(1 for p in points if _group(p) == g) for g in groups))
    width = 0.8 / per_group
    cmap = plt.get_cmap("tab20" if len(bars) > 10 else "tab10")
    colours = {b: cmap(k % cmap.N) for k, b in enumerate(bars)}
    with matplotlib.rc_context(chart_rc()):
        fig, ax = plt.subplots(figsize=(min(9.0, max(4.5, 1.2 + 0.42 * len(points))), 4.0 + 0.22 * len(bars)),
                               dpi=100, layout="constrained")
        for g, group in enumerate(groups):
            members = [p for b in bars for p in points if _group(p) == group and (p["source"], p["split"]) == b]
            for k, p in enumerate(members):
                x = g + width * (k + 0.5 - len(members) / 2)  # centred on its group's label
                err = None if not p.get("ci") else [[max(0.0, p["value"] - p["ci"][0])], [max(0.0, p["ci"][1] - p["value"])]]
                several = len(splits[p["source"]]) > 1
                name = f"{p['source']} · {p['split']}" if several else p["source"]
                (bar,) = ax.bar([x], [p["value"]], width, color=colours[(p["source"], p["split"])], yerr=err,
                                capsize=2, label=name, edgecolor="white")
                bar.set_gid(f"bar:{p['source']}:{p['benchmark']}/{p['config']}/{p['split']}:{p['metric']}")
                if p.get("chance") is not None:
                    ax.hlines(p["chance"], x - width / 2, x + width / 2, colors="black", linestyles="dashed",
                              linewidth=1)
        handles, labels = ax.get_legend_handles_labels()
        unique = dict(zip(labels, handles))
        ax.set_xticks(np.arange(len(groups)),
                      [_tick_label(b, c, m) for b, c, m in groups],
                      rotation=0 if len(groups) <= 3 else 30, ha="center" if len(groups) <= 3 else "right")
        ax.set_ylabel("%")
        ax.set_ylim(0, 100)
        # under the chart (constrained layout keeps it clear of the axis labels), never over a bar
        fig.legend(unique.values(), ["\n".join(textwrap.wrap(k, 40, break_long_words=False)) for k in unique],
                   loc="outside lower left", frameon=False, ncol=1 if len(unique) < 8 else 2)
        ax.set_title("headline metric per config")
    plt.close(fig)
    return fig


def chart_svg(fig: Any) -> str:
    """The figure as SVG for the page (:func:`vlprobe.demo.display.svg`): each bar a
    ``<g data-bar="source:benchmark/config/split:metric">`` (a data attribute, which HTML
    sanitisers keep, unlike ids), its text kept as text."""
    from .display import svg

    return svg(fig, "Bar chart of each run's headline metric per config and split, in %, "
                    "with 95% confidence intervals and dashed chance lines", chart_id="results-svg")
