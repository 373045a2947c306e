"""The Results tab: results.json files side by side and beside the papers' published numbers, with a dot plot drawn
twice (wide for a laptop, narrow for a phone); the API returns the same tables (the runs' as tidy rows)."""

from __future__ import annotations

import math
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import numpy as np

from .. import report
from ..benchmarks import find, get
from ..errors import VlprobeError
from ..report.papers import PAPER_NOTES, PAPER_TABLES, paper_benchmarks, paper_results, source_label
from ..report.runs import Run
from ..results import pct
from ..results.display import shown_metrics
from ..results.schema import Metrics, SummaryBlock, SummaryRow, dataset_name
from ..results.summary import pooled, primary_metric
from .benchmark import Footnotes
from .display import Table, figure, svg
from .glossary import chart_label
from .settings import SpaceError
from .uploads import safe_name, upload_path

if TYPE_CHECKING:
    from matplotlib.figure import Figure

PAPER_BENCHMARKS = paper_benchmarks()  # those whose benchmark declares published numbers (vlprobe/benchmarks/)
MAX_RESULTS_BYTES = 20 * 1024 * 1024
MAX_RESULTS_FILES = 20


@dataclass(frozen=True)
class Point:
    """A point of the chart: a run's or a published system's headline metric in % (None: N/A, said in words)."""

    source: str  # the run's label, "paper: <system>" or "published: <source>"
    benchmark: str
    config: str
    split: str
    metric: str
    value: float | None
    ci: tuple[float, float] | None = None
    chance: float | None = None
    kind: str = "run"  # "run", "paper" (the paper's systems) or "published" (for the run's own checkpoint)
    label: str = ""  # the row's name on the chart, where not the config's (an aggregate's: "Avg.")
    aggregate: bool = False  # a mean over configs (drawn under a line)


@dataclass
class Comparison:
    labels: list[str]  # the runs' names, in the files' order
    headers: list[str]  # the runs' metrics, tidy: one row per (run, benchmark, config, split, metric)
    rows: list[list[Any]]
    runs: list[Table]  # the same, as the page shows it: a table per benchmark, one row per run and config
    papers: Table | None  # the runs beside the papers' published numbers of one benchmark
    published: Table | None  # figures published for the runs' own checkpoints
    chart: Figure | None  # laid out for a laptop
    chart_narrow: Figure | None  # the same, laid out for a phone
    note: str
    points: list[Point]  # the chart's points


MAX_LABEL = 32
_MEANINGLESS = re.compile(r"^(tmp.*|[0-9a-f]{16,}|gradio|uploads?|results?|outputs?|runs?|\.?)$", re.IGNORECASE)


def short(text: str, limit: int = MAX_LABEL) -> str:
    """``text`` on one line, at most ``limit`` characters, the middle elided."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    head = (limit - 1) * 2 // 3
    return text[:head] + "…" + text[len(text) - (limit - 1 - head):]


def run_description(run: Run) -> str:
    """What a run is: its model (vlprobe.report's label: model, dtype, control) and datasets."""
    names = ", ".join(dict.fromkeys(dataset_name(e.dataset) for e in run.results))
    model = re.sub(r" #\d+$", "", run.label)  # vlprobe.report numbers repeated labels; the page does that itself
    return f"{model} · {names}" if names else model


def run_label(path: Path, description: str, typed: str = "") -> str:
    """A run's short name: what the visitor typed; else its file's name unless that is ``results.json``; else its
    folder's unless random (a temporary or upload folder); else what the run is (its model and datasets)."""
    if typed.strip():
        return short(typed)
    if path.stem.lower() not in ("results", "result") and not _MEANINGLESS.match(path.stem):
        return short(path.stem)
    folder = path.parent.name
    if folder and not _MEANINGLESS.match(folder):
        return short(folder)
    return short(description)


def unique_labels(labels: Sequence[str], details: Sequence[str]) -> list[str]:
    """The labels made distinct: ``name · detail`` where the detail tells runs apart, else ``name (2)``."""
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


def display_name(f: object) -> str:
    """The name a file was uploaded under, safe to show and never a path."""
    if isinstance(f, dict):
        name = f.get("orig_name") or f.get("path") or f.get("name") or ""
    else:
        name = getattr(f, "orig_name", None) or getattr(f, "name", None) or str(f)
    return safe_name(str(name))


def load_runs(files: Iterable[Any], names: str | Sequence[str] = "") -> list[Any]:
    """The runs of the uploaded files, each with a unique short name (:func:`run_label`; ``names``: one per line)."""
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
    for run, label, name in zip(runs, unique_labels(labels, details), shown):
        run.label, run.file_name = label, name  # the file as the visitor named it: said for its path in notes
    return runs


def said_of(run: Run, note: str) -> str:
    """A note on a run with its file's server path (the upload folder's) put as the visitor named the file."""
    return note.replace(str(run.path), run.file_name or run.path.name)


# ---- the runs' tables ---------------------------------------------------------------------------------

TIES_NOTE = "ties: the true-versus-wrong comparisons whose two scores were exactly equal (the tie policy counts them)"
POOLED_NOTE = "(pooled): every config's items scored together, not a figure any paper reports"


def _ci_text(value: float, ci: Sequence[float | None] | None) -> str:
    return pct(value) + (f" [{pct(ci[0])}, {pct(ci[1])}]" if ci and None not in ci else "")


def _value_cell(m: Metrics, key: str, notes: Footnotes, where: str) -> str:
    """A metric's value [CI] in %; "N/A¹" where every item tied (the reason a footnote); "" where it has none."""
    v = m.value(key)
    if v is None:
        return f"N/A{notes.mark(f'{where}: {m.na_reason}' if m.na_reason else f'{where}: not available')}" \
            if key in m.values else ""
    return _ci_text(v, m.ci.get(key))


RUN_HEADERS = ["run", "benchmark", "config", "split", "metric", "value", "CI low", "CI high", "chance", "items", "ties"]


def run_tables(runs: Sequence[Any]) -> tuple[list[Table], list[list[Any]]]:
    """A table per benchmark (or dataset of the visitor's own), a row per config and run; and tidy rows for the API."""
    tables: list[Table] = []
    tidy: list[list[Any]] = []
    for name in dict.fromkeys(n for run in runs for n, _ in run.named):
        members = [(run, e) for run in runs for n, e in run.named if n == name]
        configs = list(dict.fromkeys(e.config for _, e in members))
        members.sort(key=lambda m: configs.index(m[1].config))  # config by config, the runs in the files' order
        metrics = list(dict.fromkeys(k for _, e in members for k in shown_metrics(e)))
        several = len({run.label for run, _ in members}) > 1
        splits = len({e.split for _, e in members}) > 1
        chances = {k: {e.metrics.chance[k] for _, e in members if k in e.metrics.chance} for k in metrics}
        apart = [k for k in metrics if len(chances[k]) > 1]  # a chance level that differs between rows: a column
        notes = Footnotes()
        headers = ((["run"] if several else []) + ["config"] + (["split"] if splits else [])
                   + [f"{k} (chance {pct(next(iter(chances[k])))})" if len(chances[k]) == 1 else k for k in metrics]
                   + [f"{k} chance" for k in apart] + ["items", "ties"])
        rows = []
        for run, e in members:
            m = e.metrics
            rows.append(([run.label] if several else []) + [e.config + (" (pooled)" if pooled(e) else "")]
                        + ([e.split] if splits else []) + [_value_cell(m, k, notes, e.config) for k in metrics]
                        + [pct(m.chance.get(k)) for k in apart]
                        + [m.n_items if m.n_items is not None else "", m.n_ties if m.n_ties is not None else ""])
            for k in shown_metrics(e):
                ci = m.ci.get(k) or (None, None)
                tidy.append([run.label, name, e.config, e.split, k, pct(m.value(k)) or ("N/A" if k in m.values else ""),
                             pct(ci[0]), pct(ci[1]), pct(m.chance.get(k)), "" if m.n_items is None else m.n_items,
                             "" if m.n_ties is None else m.n_ties])
        label = f"{name}: {members[0][0].label} (%)" if not several else f"{name} (%)"
        extra = ([POOLED_NOTE] if any(pooled(e) for _, e in members) else []) + [TIES_NOTE]
        slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "table"
        tables.append(Table(f"runs-{slug}", label, headers, rows, notes.lines() + extra,
                            wrap=("run",) if several else ()))
    return tables, tidy


# ---- beside the papers ---------------------------------------------------------------------------------

def config_name(benchmark: str | None, config: str) -> str:
    """A config's name in the tables and chart: an aggregate by its label (VALSE's ``avg``: "Avg.")."""
    bench = find(benchmark)
    return next((g.label for g in (bench.groups if bench else ()) if g.name == config), config)


def blocks_on(runs: Sequence[Any], benchmark: str) -> list[tuple[str, Any, SummaryBlock]]:
    """(name, run, block) of each run's papers' aggregates on ``benchmark``."""
    out = []
    for run in runs:
        mine = [(n, b) for n, b in run.summary.items() if b.benchmark == benchmark]
        out += [(run.label if len(mine) == 1 else short(f"{run.label} · {n}"), run, b) for n, b in mine]
    return out


def summary_row(block: SummaryBlock, config: str, metric: str) -> SummaryRow | None:
    """The block's row for the paper's (config, metric) (VALSE's ``avg`` included)."""
    return next((r for r in block.rows if (r.paper_config or r.config) == config and r.has(metric)), None)


def na_note(reason: str | None) -> str:
    """A not-available value's footnote, the same for every config it holds for: "every item tied: <why>"."""
    why = re.sub(r"^\d+/\d+ items tied(: )?", "", reason or "")
    return f"N/A: every item tied{': ' + why if why else ''}" if reason and why != reason else \
        f"N/A: {reason or 'not available'}"


def _summary_cell(block: SummaryBlock, row: SummaryRow | None, metric: str, notes: Footnotes, who: str,
                  used: set[str]) -> str:
    """A run's papers' aggregate in % [CI]; "N/A¹" (an aggregate's footnote names its N/A members); an aggregate over
    fewer members than the paper's marked, the block's note on it a footnote (added to ``used``)."""
    if row is None or not row.has(metric):
        return ""
    if metric in row.na:
        if row.aggregate:
            members = [r.config for r in block.rows if r.config in (row.over or ()) and metric in r.na]
            return "N/A" + notes.mark(f"{who}{row.name}: N/A, as {', '.join(members)} "
                                      f"{'is' if len(members) == 1 else 'are'}" if members else na_note(row.na_reason))
        return "N/A" + notes.mark(na_note(row.na_reason))
    text = _ci_text(row.values[metric], row.ci.get(metric))
    if row.aggregate and not row.complete:
        said = next((n for n in block.notes if n.startswith(row.name)), f"{row.name}: over fewer members than the "
                                                                        f"paper's, not the paper's {row.name}")
        used.add(said)
        text += notes.mark(who + said)
    return text


def papers_benchmark(choice: str | None, benchmarks: Sequence[str], have_runs: bool) -> str | None:
    if choice not in ("auto", "all", "", None):
        return choice
    return next((b for b in benchmarks if b in PAPER_BENCHMARKS), None if have_runs else PAPER_BENCHMARKS[0])


def paper_section(runs: Sequence[Any], bench: str | None) -> tuple[Table | None, list[Point], str]:
    """(the table, the systems' chart points, a note when there is no table) of the runs beside the papers of
    ``bench``: a row per (config, metric) a run has, or, with more runs and systems than those (Winoground), a row
    per run and system; a run under another tie policy also gets its figures under the authors' rule."""
    if bench not in PAPER_BENCHMARKS:
        owners = ", ".join(f"{get(b).display}'s" for b in PAPER_BENCHMARKS)
        return None, [], f"The published numbers here are {owners}; none of the loaded runs is on one of them."
    papers = [p for p in paper_results() if p.benchmark == bench and p.table in PAPER_TABLES[bench]]
    columns = blocks_on(runs, bench)
    pairs = list(dict.fromkeys((p.config, p.metric) for p in papers))
    if runs:
        pairs = [c for c in pairs if any(summary_row(b, *c) for _, _, b in columns)]
        if not pairs:
            return None, [], f"No loaded run has a config and metric that the {get(bench).display} paper reports."
    notes, theirs = Footnotes(), False
    used: set[str] = set()
    series: list[tuple[str, dict[tuple[str, str], str]]] = []
    for name, _, block in columns:
        found = {c: summary_row(block, *c) for c in pairs}
        who = f"{name}, " if len(columns) > 1 else ""
        series.append((f"this run: {name}", {c: _summary_cell(block, r, c[1], notes, who, used)
                                             for c, r in found.items()}))
        if any(r is not None and c[1] in r.authors for c, r in found.items()):
            theirs = True
            series.append((f"{name} by the authors' rule", {c: pct(r.authors[c[1]]) if r is not None and c[1] in
                                                            r.authors else "" for c, r in found.items()}))
    values = {(p.model, p.config, p.metric): p.value for p in papers}
    systems = [m for m in dict.fromkeys(p.model for p in papers) if any((m, *c) in values for c in pairs)]
    series += [(m, {c: f"{values[key]:.1f}" if (key := (m, c[0], c[1])) in values else "" for c in pairs})
               for m in systems]
    configs = list(dict.fromkeys(c for c, _ in pairs))
    metrics = list(dict.fromkeys(m for _, m in pairs))
    own = len(series) - len(systems)  # the runs' columns (or rows), first
    marked: tuple[str, ...] = ()
    marked_rows: tuple[int, ...] = ()
    if len(pairs) >= len(series):  # long: a row per config (and metric), a column per run and system
        headers = ["config"] + (["metric"] if len(metrics) > 1 else []) + [s for s, _ in series]
        rows = [[config_name(bench, c)] + ([m] if len(metrics) > 1 else []) + [cells[(c, m)] for _, cells in series]
                for c, m in pairs]
        wrap, marked = tuple(s for s, _ in series), tuple(s for s, _ in series[:own])
        ranged = tuple(s for s, _ in series[own:])
    else:  # a row per run and system, a column per config (and metric)
        def pair_name(c: str, m: str) -> str:
            return config_name(bench, c) if len(metrics) == 1 else m if len(configs) == 1 else f"{config_name(bench, c)} {m}"
        headers = ["system"] + [pair_name(*c) for c in pairs]
        rows = [[s] + [cells[c] for c in pairs] for s, cells in series]
        wrap, marked_rows, ranged = ("system",), tuple(range(own)), ()
    tables = list(dict.fromkeys(p.table for p in papers if p.model in systems))
    said = [PAPER_NOTES.get(bench, "")]
    if len(tables) > 1:
        said.append("; ".join(f"{source_label(bench, t)}: " + ", ".join(dict.fromkeys(
            p.model for p in papers if p.table == t and p.model in systems)) for t in tables) + ".")
    if theirs:
        rules = ", ".join(dict.fromkeys(b.tie_policy.authors for _, _, b in columns if b.tie_policy)) or "theirs"
        said.append(f"by the authors' rule: what the authors' own code gives (ties counted {rules}), where this "
                    "run's tie policy is another or its figure is N/A (their code prints a number)")
    for name, run, block in columns:
        said += [f"{name}: {visitor_words(said_of(run, n))}" for n in block.notes if n not in used]  # used: footnotes
    metric = f", {metrics[0]}" if len(metrics) == 1 else ""
    title = "Beside the published numbers" if columns else "The published numbers"
    table = Table("papers", f"{title}: {get(bench).display}{metric} (%)", headers, rows,
                  [n for n in said if n] + notes.lines(), wrap=wrap, marked=marked, marked_rows=marked_rows,
                  ranged=ranged)
    points = [Point(f"paper: {p.model}", bench, p.config, "paper", p.metric, p.value, kind="paper",
                    label=config_name(bench, p.config)) for p in papers]
    return table, points, ""


def visitor_words(note: str) -> str:
    """A summary block's note as a visitor reads it, without naming vlprobe's files."""
    found = re.match(r"^no published figure for this model \((.+)\): it is no checkpoint of \S+$", note)
    if found:
        return (f"no paper published figures for this model ({found.group(1)}) itself; it is set beside the papers' "
                "own systems only")
    return note


def published_section(runs: Sequence[Any]) -> tuple[Table | None, list[Point]]:
    """The figures published for each run's own checkpoint beside the run's, a row each, and their points."""
    found = [(run, name, block, p) for run in runs for name, block in run.summary.items() for p in block.published]
    if not found:
        return None, []
    several = len({run.label for run, *_ in found}) > 1
    versions = any(p.dataset_version for *_, p in found)
    headers = ((["run"] if several else []) + ["source", "config", "metric", "published", "this run", "difference"]
               + (["data version"] if versions else []) + ["known causes"])
    rows, points = [], []
    notes = Footnotes()
    for run, name, block, p in found:
        bench = block.benchmark or name
        ours = "N/A" if p.ours is None else pct(p.ours)  # the run's row is N/A: every item tied
        rows.append(([run.label] if several else []) + [p.source, config_name(block.benchmark, p.config), p.metric,
                     pct(p.value), ours, "" if p.difference is None else f"{100 * p.difference:+.1f}"]
                    + ([p.dataset_version or ""] if versions else [])
                    + [short_causes(p.note, notes, config_name(block.benchmark, p.config))])
        points.append(Point(f"published: {short(p.source)}", bench, p.config, "published", p.metric,
                            100 * p.value, kind="published", label=config_name(block.benchmark, p.config)))
    label = "Published for this run's checkpoint (%)" if not several else "Published for the runs' checkpoints (%)"
    return Table("published", label, headers, rows, ["difference: this run's figure minus the published one, "
                                                     "in percentage points"] + notes.lines(), wrap=("run",)), points


_MEMBER = re.compile(r"^[\w.+-]+: ")  # an aggregate's note on one of its members ("existence: 505 items against 20")


def short_causes(note: str, notes: Footnotes, row: str) -> str:
    """A published row's known causes, its parts on an aggregate's members a footnote."""
    parts = [part for part in note.split("; ") if part]
    members = [part for part in parts if _MEMBER.match(part)]
    kept = "; ".join(part for part in parts if part not in members)
    if not members:
        return kept
    said = "on other item counts" if len(members) == len(parts) - 1 else f"{len(members)} on other item counts"
    return f"{kept}, {said}" + notes.mark(f"{row}: the source's items against this run's: " + ", ".join(
        m.replace(": ", " ", 1).replace(" items against ", " against ") for m in members))


# ---- the chart's points ------------------------------------------------------------------------------------

def _chance(run: Run, name: str, row: SummaryRow, metric: str) -> float | None:
    """A summary row's chance level in %: its own, else its entry's, else the one level of every entry and tag of
    the benchmark; None where they differ."""
    if row.chance is not None:
        return 100 * row.chance
    entries = run.entries(name)
    levels = {e.metrics.chance[metric] for e in entries
              if e.config == row.config and e.split == row.split and metric in e.metrics.chance}
    if not levels:
        levels = {c for e in entries for m in (e.metrics, *e.metrics.per_tag.values())
                  if (c := m.chance.get(metric)) is not None}
    return 100 * levels.pop() if len(levels) == 1 else None


def run_points(runs: Sequence[Any]) -> list[Point]:
    """A chart point per run and summary row (a config and split, or an aggregate): the headline metric."""
    out = []
    for run in runs:
        names = [n for n, _ in run.summary.items()]
        for name, block in run.summary.items():
            bench = block.benchmark or name
            twice = sum(1 for n in names if (run.summary[n].benchmark or n) == bench) > 1
            source = short(f"{run.label} · {name}") if twice else run.label
            for row in block.rows:
                key = primary_metric(block.benchmark, None, [*row.values, *row.na])
                if key is None or not row.has(key):
                    continue
                v, ci = row.values.get(key), row.ci.get(key)
                out.append(Point(source, bench, row.paper_config or row.config, row.split, key,
                                 None if v is None or not math.isfinite(v) else 100 * v,
                                 None if not ci or None in ci else (100 * ci[0], 100 * ci[1]),
                                 _chance(run, name, row, key),
                                 label=(row.label or config_name(block.benchmark, row.config)) if row.aggregate else
                                 f"{row.config} (pooled)" if row.pooled else "", aggregate=row.aggregate))
    return out


def matching(extra: list[Point], points: list[Point]) -> list[Point]:
    """The points of ``extra`` where a run has the same config and metric (with no run: the headline metric)."""
    if points:
        return [p for p in extra if _group(p) in {_group(q) for q in points}]
    return [p for p in extra if p.metric == primary_metric(p.benchmark, None, {q.metric for q in extra})]


def compare_results(files: Iterable[Any] | None, include_papers: bool = True, benchmark: str = "auto",
                    names: str = "") -> Comparison:
    """The Results tab: the runs side by side and beside one benchmark's papers, with a chart."""
    runs = load_runs([f for f in (files or []) if f], names)
    if not runs and not include_papers:
        raise SpaceError("nothing to compare: load one or more results files, or tick "
                         "'Include the papers' published numbers'")
    tables, tidy = run_tables(runs)
    notes = ([f"{len(runs)} run{'s' if len(runs) != 1 else ''}; values in %, with the run's 95% confidence "
              "interval in brackets when it has one."] if runs else
             ["No results file loaded: the papers' published numbers alone, in %."])
    notes += [f"{run.label}: {', '.join(run.caveats())}, not comparable to a paper." for run in runs if run.caveats()]
    # the blocks' other departures from the authors' setting, as `vlprobe report` says them (the rest are caveats)
    notes += [f"{run.label}: departs from the authors' setting: {said_of(run, d.note)}." for run in runs
              for block in run.summary.values() for d in block.departures
              if d.setting not in ("limit", "control", "modality")]
    papers: Table | None = None
    paper_points: list[Point] = []
    if include_papers:
        registered = [b.benchmark for run in runs for b in run.summary.values() if b.benchmark]
        papers, paper_points, missing = paper_section(runs, papers_benchmark(benchmark, registered, bool(runs)))
        notes.append(missing)
    published, published_points = published_section(runs)
    points = run_points(runs)
    points += matching(published_points, points) + matching(paper_points, points)
    sources = list(dict.fromkeys([run.label for run in runs] + [p.source for p in points]))
    return Comparison(labels=[run.label for run in runs], headers=RUN_HEADERS, rows=tidy, runs=tables, papers=papers,
                      published=published, chart=comparison_chart(points, sources),
                      chart_narrow=comparison_chart(points, sources, narrow=True),
                      note=" ".join(n for n in notes if n), points=points)


# ---- the chart -------------------------------------------------------------------------------------------

def _group(point: Point) -> tuple[str, str, str]:
    """A chart row: (benchmark, config, metric)."""
    return point.benchmark, point.config, point.metric


def _group_label(group: tuple[str, str, str], shown: str, one_benchmark: bool, one_metric: bool) -> str:
    """A row's label on one line: ``[benchmark/]config[ · metric]`` (``shown``: the config as the tables name it)."""
    benchmark, _, metric = group
    name = shown if one_benchmark else f"{benchmark}/{shown}"
    return short(name if one_metric else f"{name} · {chart_label(metric)}", 44)


MARKERS = "osD^vP*Xhp<>"
NA_COLOUR = "#374151"  # the "N/A" said on a row: dark enough for 4.5:1 on white


def comparison_chart(points: list[Point], sources: list[str], narrow: bool = False) -> Figure | None:
    """A dot plot (None when there is nothing): a row per config and metric (aggregates under a line), a panel per
    benchmark, a point per (source, split), the runs first and larger; with more sources than configs (Winoground's
    19 systems), a row per source instead. A run's N/A is said in words. Row labels are left of their row, or above
    it when ``narrow`` (a phone). SVG ids: ``point:<source>:<benchmark>/<config>/<split>:<metric>`` for each point,
    ``plot:<benchmark>`` for each panel."""
    import matplotlib

    if not any(p.value is not None for p in points):
        return None
    groups = list(dict.fromkeys(_group(p) for p in points))
    benchmarks = list(dict.fromkeys(g[0] for g in groups))
    shown: dict[tuple[str, str, str], str] = {}
    for p in points:
        if p.label:
            shown.setdefault(_group(p), p.label)
    aggregate = {_group(p) for p in points if p.aggregate}
    splits = {s: list(dict.fromkeys(p.split for p in points if p.source == s)) for s in sources}
    runs = [(s, split) for s in sources for split in splits[s]]
    kind = {(p.source, p.split): p.kind for p in points}
    # a published system by its name alone (its small marker, and the tables, say it is the paper's)
    run_name = {b: f"{b[0]} · {b[1]}" if len(splits[b[0]]) > 1 else
                b[0].removeprefix("paper: ") if kind.get(b) == "paper" else b[0] for b in runs}
    # a row's label within its benchmark's panel: the metric too where the panel has several
    panel_metrics = {b: list(dict.fromkeys(g[2] for g in groups if g[0] == b)) for b in benchmarks}
    group_name = {g: _group_label(g, shown.get(g, g[1]), True, len(panel_metrics[g[0]]) == 1) for g in groups}
    by_source = len(runs) > len(groups)
    if by_source:  # rows: the sources; points: the configs; one panel
        series = groups
        panels: list[tuple[str | None, list[Any]]] = [(None, list(runs))]
        row_of, series_of = (lambda p: (p.source, p.split)), _group
        series_names = [_group_label(g, shown.get(g, g[1]), len(benchmarks) == 1,
                                     len({h[2] for h in groups}) == 1) for g in groups]
        row_label = {b: run_name[b] for b in runs}
    else:
        series = runs
        panels = [(b, [g for g in groups if g[0] == b]) for b in benchmarks]
        row_of, series_of = _group, (lambda p: (p.source, p.split))
        series_names = [run_name[b] for b in runs]
        row_label = dict(group_name)
    where = {row: (k, r) for k, (_, members) in enumerate(panels) for r, row in enumerate(members)}
    cmap = matplotlib.colormaps["tab20" if len(series) > 10 else "tab10"]
    style = {b: (cmap(k % cmap.N), MARKERS[k % len(MARKERS)]) for k, b in enumerate(series)}
    band = 0.3 if narrow else 0.7  # the share of a row its points spread over
    nudge = min(0.14, band / max(1, len(series)))
    centre = 0.2 if narrow else 0.0  # a narrow chart's points sit under their row's label
    run_series = [b for b in runs if kind.get(b) == "run"]
    show_legend = len(series) > 1 or any(p.chance is not None for p in points)
    entries = series_names + ["chance"] if show_legend else []
    wrap = 30 if narrow else 40
    # short names: two legend columns (three on a laptop, where there are many)
    longest_entry = max((len(k) for k in entries), default=0)
    columns = 1 if len(entries) <= 4 or longest_entry > (17 if narrow else 40) else \
        3 if not narrow and len(entries) > 8 and longest_entry <= 24 else 2
    legend_lines = sum(len(textwrap.wrap(k, wrap, break_long_words=False)) for k in entries) / columns
    n_rows = sum(len(members) for _, members in panels)
    titled = len(panels) > 1
    longest = max(len(short(row_label[row], 44)) for _, members in panels for row in members)
    if narrow:  # fits a phone's column at 13 px text; the row labels inside the plot
        width = 4.3
        height = 1.3 + 0.46 * n_rows + 0.27 * (legend_lines + 1) + (0.45 * len(panels) if titled else 0)
    else:  # wide enough that the plot keeps about 6 in beside its longest row label (13 pt: about 0.1 in a character)
        width = min(10.0, max(7.0, 6.2 + 0.1 * longest))
        height = 1.6 + 0.42 * n_rows + 0.27 * (legend_lines + 1) + (0.4 * len(panels) if titled else 0)
    with figure(width, height, [len(members) for _, members in panels]) as (fig, axes):
        chance_drawn: set[tuple[int, int, float]] = set()
        missing: dict[tuple[int, int], list[str]] = {}
        for p in points:
            (a, r), k = where[row_of(p)], series.index(series_of(p))
            ax = axes[a]
            if p.chance is not None and (a, r, p.chance) not in chance_drawn:
                chance_drawn.add((a, r, p.chance))
                low, high = (r - 0.05, r + 0.45) if narrow else (r - 0.42, r + 0.42)
                ax.vlines(p.chance, low, high, colors="black", linestyles="dashed", linewidth=1, label="chance")
            if p.value is None:  # said in words on its row, not drawn as a 0
                missing.setdefault((a, r), []).append(series_names[k] if not by_source else group_name[series_of(p)])
                continue
            y = r + centre + nudge * (k - (len(series) - 1) / 2)
            colour, marker = style[series_of(p)]
            mine = (p.source, p.split) in run_series
            err = None if not p.ci else [[max(0.0, p.value - p.ci[0])], [max(0.0, p.ci[1] - p.value)]]
            container = ax.errorbar([p.value], [y], xerr=err, fmt=marker, color=colour, markersize=9 if mine else 6,
                                    capsize=2, label=series_names[k], markeredgecolor="black" if mine else "white",
                                    markeredgewidth=0.8 if mine else 0.6, zorder=3 if mine else 2)
            container.lines[0].set_gid(f"point:{p.source}:{p.benchmark}/{p.config}/{p.split}:{p.metric}")
        for (a, r), names in missing.items():
            said = "N/A" if len(run_series) <= 1 and not by_source else short("N/A: " + ", ".join(names), 40)
            axes[a].text(1.5, r + centre, said, va="center", ha="left", color=NA_COLOUR, gid=f"na:{a}:{r}")
        for ax, (bench, members) in zip(axes, panels, strict=True):
            names = [row_label[row] for row in members]
            if narrow:
                ax.set_yticks([])
                for r, name in enumerate(names):
                    ax.text(1, r - 0.46, short(name, 40), va="top", ha="left", color="#111827")
            else:
                ax.set_yticks(np.arange(len(members)), names)
            if not by_source and aggregate & set(members):  # the aggregates under a line
                first = min(members.index(g) for g in aggregate if g in members)
                if first:
                    ax.axhline(first - 0.5, color="#6b7280", linewidth=0.8)
            ax.set_ylim(len(members) - 0.5, -0.5)  # the first row on top
            ax.set_xlim(-2, 102)  # a point at 0 or 100 drawn whole
            ax.set_xticks(range(0, 101, 20))
            ax.grid(axis="x", color="#e5e7eb")
            ax.set_axisbelow(True)
            ax.patch.set_gid(f"plot:{bench or 'all'}")
            if titled:
                said = ", ".join(chart_label(m) for m in panel_metrics[bench]) if bench else ""
                ax.set_title(f"{bench}: {said}" if said else str(bench), loc="left", fontsize=13, pad=10 if narrow else 4)
        metrics = list(dict.fromkeys(g[2] for g in groups))
        axes[-1].set_xlabel(f"{chart_label(metrics[0])} (%)" if len(metrics) == 1 else "%")
        if show_legend:
            unique: dict[str, Any] = {}
            for ax in axes:
                for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
                    unique.setdefault(label, handle)
            order = [k for k in (*series_names, "chance") if k in unique]  # the runs first, chance last
            # under the chart (constrained layout keeps it clear of the axis labels), never over a point
            fig.legend([unique[k] for k in order], ["\n".join(textwrap.wrap(k, wrap, break_long_words=False))
                                                    for k in order],
                       loc="outside lower left", frameon=False, ncol=columns)
        fig.suptitle(f"{benchmarks[0]}: headline metric" if len(benchmarks) == 1 else "headline metric per config")
    return fig


CHART_TEXT = ("Dot plot of each run's and each published system's headline metric per config and split, in %, with "
              "95% confidence intervals and dashed chance ticks")


def chart_svg(fig: Figure, narrow: Figure | None = None) -> str:
    """The chart as SVG for the page; with ``narrow`` (laid out for a phone) both, the page's CSS showing one."""
    wide = svg(fig, CHART_TEXT, chart_id="results-svg")
    if narrow is None:
        return wide
    return (f'<div class="chart-wide">{wide}</div>'
            f'<div class="chart-narrow">{svg(narrow, CHART_TEXT, chart_id="results-svg-narrow")}</div>')
