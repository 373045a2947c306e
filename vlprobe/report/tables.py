"""The report's tables, (header, rows) each."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..benchmarks import find
from ..results import na_text, pct
from ..results import summary as summary_rules
from ..results.schema import Entry, Metrics, SummaryBlock, SummaryRow, dump, parse
from .papers import PAPER_TABLES, PaperResult, source_label
from .runs import Run


def _pct(v: float | None) -> str:
    """A fraction as a percentage, ``-`` where there is none (an empty table cell reads as missing)."""
    return pct(v) or "-"


def _cell(m: Metrics | None, key: str) -> str:
    if m is None:
        return ""
    v = m.value(key)
    if v is None:
        return na_text(m) if key in m.values else ""
    ci = m.ci.get(key)
    return _pct(v) + (f" [{_pct(ci[0])}, {_pct(ci[1])}]" if ci else "")


def _benchmarks(runs: Sequence[Run]) -> list[str]:
    """The names the runs' tables go under (a benchmark, or a dataset of the user's own), in run order."""
    return list(dict.fromkeys(name for run in runs for name, _ in run.named))


def _ties(m: Metrics | None) -> str:
    """A run's tied comparisons and items for one config/split: "98 (n=100)"."""
    if m is None or m.n_ties is None:
        return ""
    return f"{m.n_ties} (n={m.n_items if m.n_items is not None else '?'})"


def _registered(runs: Sequence[Run], name: str) -> str | None:
    """The registered benchmark of the entries whose tables go under ``name`` (None: a user's dataset)."""
    return next((e.benchmark for run in runs for e in run.entries(name) if find(e.benchmark)), None)


def config_label(entry: Entry) -> str:
    """An entry's config as tables name it: a pooled config says it is no paper's figure."""
    return entry.config + (f" ({summary_rules.POOLED})" if summary_rules.pooled(entry) else "")


def long_table(runs: Sequence[Run], benchmark: str) -> tuple[list[str], list[list[str]]]:
    """One row per (config, split, metric); per run its value [CI] and its ties (many: the scores are constant)."""
    from ..results.display import shown_metrics

    header = ["config", "split", "metric"] + [h for r in runs for h in (r.label, f"{r.label} ties")] + ["chance"]
    per_run = [{(config_label(e), e.split): e for e in run.entries(benchmark)} for run in runs]
    rows = []
    for config, split in dict.fromkeys(unit for mine in per_run for unit in mine):
        found = [mine.get((config, split)) for mine in per_run]
        present = [e for e in found if e is not None]
        for key in dict.fromkeys(k for e in present for k in shown_metrics(e)):
            chance = next((e.metrics.chance[key] for e in present if key in e.metrics.chance), None)
            cells = [e.metrics if e is not None else None for e in found]
            rows.append([config, split, key] + [c for m in cells for c in (_cell(m, key), _ties(m))]
                        + [_pct(chance) if chance is not None else ""])
    return header, rows


def tag_table(runs: Sequence[Run], benchmark: str) -> tuple[list[str], list[list[str]]] | None:
    """Per-tag breakdown: one row per (config, split, tag) with the config's headline metric."""
    header = ["config", "split", "tag", "metric"] + [f"{r.label} (n)" for r in runs]
    per_run = [{(e.config, e.split, tag): m for e in run.entries(benchmark) for tag, m in sorted(e.metrics.per_tag.items())}
               for run in runs]
    rows = []
    for config, split, tag, key in dict.fromkeys((e.config, e.split, tag, entry_headline(e) or "") for run in runs
                                                 for e in run.entries(benchmark) for tag in sorted(e.metrics.per_tag)):
        found = [mine.get((config, split, tag)) for mine in per_run]
        rows.append([config, split, tag, key] + ["" if m is None or (m.value(key) is None and not na_text(m)) else
                                                 f"{_cell(m, key)} ({m.n_items})" for m in found])
    return (header, rows) if rows else None


def _summary_cell(row: SummaryRow | None, metric: str, authors: str | None = None) -> str:
    """A summary row's value in % [CI], "(k of n)" on an incomplete aggregate, and theirs where it differs: "(strict: 21.9)"."""
    if row is None or not row.has(metric):
        return ""
    if metric in row.na:
        text = f"N/A ({row.na_reason})"
    else:
        ci = row.ci.get(metric)
        text = _pct(row.values[metric]) + (f" [{_pct(ci[0])}, {_pct(ci[1])}]" if ci else "")
        if row.aggregate and not row.complete:  # over fewer members, or members over fewer
            text += f" ({len(row.over)} of {len(row.over) + len(row.missing)})" if row.missing else " (in part)"
    if metric in row.authors:
        text += f" ({authors or 'authors'}: {_pct(row.authors[metric])})"
    return text


def _authors(block: SummaryBlock | None) -> str | None:
    return block.tie_policy.authors if block is not None and block.tie_policy else None


def summary_table(runs: Sequence[Run], benchmark: str) -> tuple[list[str], list[list[str]], list[str]] | None:
    """The papers' aggregates of each run: one row per (config, split, headline metric); and the runs' notes."""
    blocks = [run.summary.get(benchmark) for run in runs]
    # a pooled config goes by its label, which says what it is
    per_run = [{(r.label if r.pooled and r.label else r.config, r.split): r for r in (b.rows if b else ())} for b in blocks]
    keys = list(dict.fromkeys((*unit, metric) for mine in per_run for unit, row in mine.items()
                              for metric in (*row.values, *row.na)))
    if not keys:
        return None
    order = summary_rules.headline_metrics(_registered(runs, benchmark))
    keys.sort(key=lambda k: order.index(k[2]) if k[2] in order else len(order))  # stable: configs in run order
    header = ["config", "split", "metric"] + [r.label for r in runs]
    rows = [[config, split, metric] + [_summary_cell(mine.get((config, split)), metric, _authors(b))
                                       for mine, b in zip(per_run, blocks, strict=True)] for config, split, metric in keys]
    notes = [f"{run.label}: {said}" for run, b in zip(runs, blocks, strict=True) if b is not None
             for said in [*(f"departs from the authors' setting: {d.note}" for d in b.departures), *b.notes]]
    return header, rows, notes


def published_beside(runs: Sequence[Run], benchmark: str) -> tuple[list[str], list[list[str]]] | None:
    """Each run beside the figures published for its own checkpoint; None when no run has any."""
    rows = [[run.label, *row] for run in runs if (block := run.summary.get(benchmark)) is not None
            for row in summary_rules.published_table(block)[1]]
    if not rows:
        return None
    return ["run", *summary_rules.published_table(SummaryBlock(None))[0]], rows


def check_published(runs: Sequence[Run], tolerance: float) -> tuple[bool, list[str]]:
    """Whether every published figure is within ``tolerance`` points of the run's (none: False), and the lines saying so."""
    lines, off, checked = [], 0, 0
    for run in runs:
        for name, block in run.summary.items():
            for p in block.published:
                checked += 1
                if p.difference is not None and abs(100 * p.difference) <= tolerance + 1e-9:
                    continue
                off += 1
                what = (f"off by {100 * p.difference:+.2f} points: " if p.difference is not None else
                        "no figure of this run: ")
                ours = f" {100 * p.ours:.2f}" if p.ours is not None else ""
                lines.append(f"{what}{run.label} {name} {p.config} {block.names.get(p.metric, p.metric)}{ours}, "
                             f"{p.source} {100 * p.value:.2f}" + (f" ({p.note})" if p.note else ""))
    if not checked:
        said = "; ".join(dict.fromkeys(n for run in runs for block in run.summary.values() for n in block.notes
                                       if n.startswith("no published figure")))
        return False, ["nothing to check: no run has a figure published for its checkpoint" + (f" ({said})" if said else "")]
    lines.append(f"{checked - off} of {checked} published figures within {tolerance:g} "
                 f"{'point' if tolerance == 1 else 'points'} of the run's" + (f"; {off} off" if off else ""))
    return not off, lines


def _run_value(run: Run, benchmark: str, config: str, metric: str) -> SummaryRow | None:
    """The run's summary row for the paper's (config, metric) (VALSE's ``avg`` included)."""
    block = run.summary.get(benchmark)
    return next((r for r in (block.rows if block else ()) if r.paper_config == config and r.has(metric)), None)


def paper_table(runs: Sequence[Run], benchmark: str, papers: list[PaperResult]) -> tuple[list[str], list[list[str]]] | None:
    """The runs' figures beside those of the benchmark's ``paper_tables``, one row per system; None where none."""
    registered = _registered(runs, benchmark) if runs else benchmark
    tables = PAPER_TABLES.get(registered or "")
    if not tables or find(registered) is None:
        return None
    rows = [p for p in papers if p.benchmark == registered and p.table in tables]
    columns = list(dict.fromkeys((p.config, p.metric) for p in rows
                                 if any(_run_value(run, benchmark, p.config, p.metric) for run in runs)))
    if not columns:
        return None
    header = ["system", "source"] + [f"{c} {m}" for c, m in columns]
    out = []
    for run in runs:
        theirs = _authors(run.summary.get(benchmark))
        cells = [_summary_cell(_run_value(run, benchmark, config, metric), metric, theirs) for config, metric in columns]
        out.append([f"this run: {run.label}", "vlprobe"] + cells)
    for model in dict.fromkeys(p.model for p in rows):
        values = {(p.config, p.metric): p.value for p in rows if p.model == model}
        if not any(c in values for c in columns):
            continue
        table = next(p.table for p in rows if p.model == model)
        out.append([model, source_label(registered, table)] + [f"{values[c]:.1f}" if c in values else "" for c in columns])
    return header, out


def headline(metrics: Metrics | Mapping[str, Any], benchmark: str | None = None,
             shape: tuple[int, int] | None = None, modality: str | None = None) -> str | None:
    """The metric a plot shows for a config (:func:`vlprobe.results.summary.primary_metric`)."""
    m = metrics if isinstance(metrics, Metrics) else parse(Metrics, dump(metrics), "metrics")
    return summary_rules.primary_metric(benchmark, shape, m.keys(), modality)


def entry_headline(entry: Entry) -> str | None:
    """:func:`headline` of one of a run's entries."""
    return headline(entry.metrics, entry.benchmark if find(entry.benchmark) else None, entry.shape, entry.modality)
