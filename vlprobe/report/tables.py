"""The report's tables: runs side by side per config (with ties), per tag, the papers' aggregates, and
the runs beside the published numbers."""

from __future__ import annotations

from typing import Any, Sequence

from .. import summary as summary_rules
from ..benchmarks import find
from ..results import metric_keys, na_text, pct
from .papers import PAPER_TABLES, source_label
from .runs import Run


def _pct(v: Any) -> str:
    """A fraction as a percentage, ``-`` where there is none (an empty table cell reads as missing)."""
    return pct(v) or "-"


def _cell(metrics: dict[str, Any], key: str) -> str:
    v = metrics.get(key)
    if v is None:
        return na_text(metrics) if key in metrics else ""
    ci = (metrics.get("ci") or {}).get(key)
    return _pct(v) + (f" [{_pct(ci[0])}, {_pct(ci[1])}]" if ci else "")


def _benchmarks(runs: Sequence[Run]) -> list[str]:
    """The names the runs' tables go under (a benchmark, or a dataset of the user's own), in run order."""
    out: list[str] = []
    for run in runs:
        for r in run.results:
            if r.get("benchmark") not in out:
                out.append(r.get("benchmark"))
    return out


def _ties(metrics: dict[str, Any] | None) -> str:
    """A run's tied comparisons and items for one config/split: "98 (n=100)"."""
    if not metrics or metrics.get("n_ties") is None:
        return ""
    return f"{metrics['n_ties']} (n={metrics.get('n_items', '?')})"


def _registered(runs: Sequence[Run], name: str) -> str | None:
    """The registered benchmark of the entries whose tables go under ``name`` (None: a user's dataset)."""
    return next((r.get("registered") for run in runs for r in run.results if r.get("benchmark") == name), None)


def long_table(runs: Sequence[Run], benchmark: str) -> tuple[list[str], list[list[str]]]:
    """One row per (config, split, metric); per run its value [CI] and a ties column: the gold vs
    non-gold comparisons that tied, and the items (a 0.0 [0.0, 0.0] where nearly everything tied
    says "the scores are constant", not "always wrong"). ``benchmark``: the name the tables go under."""
    header = ["config", "split", "metric"] + [h for r in runs for h in (r.label, f"{r.label} ties")] + ["chance"]
    keys: list[tuple[str, str]] = []
    by: dict[tuple[int, str, str], dict[str, Any]] = {}
    shapes: dict[tuple[str, str], tuple[int, int] | None] = {}
    modalities: dict[tuple[str, str], str | None] = {}
    registered = _registered(runs, benchmark)
    for i, run in enumerate(runs):
        for r in run.results:
            if r.get("benchmark") != benchmark:
                continue
            unit = (r["config"], r["split"])
            if unit not in keys:
                keys.append(unit)
            by[(i, *unit)] = r["metrics"]
            shapes.setdefault(unit, _shape(r))
            modalities.setdefault(unit, _modality(r))
    rows = []
    for config, split in keys:
        present = [by[(i, config, split)] for i in range(len(runs)) if (i, config, split) in by]
        metrics: list[str] = []
        for m in present:
            shown = summary_rules.display_metrics(registered, shapes.get((config, split)), metric_keys(m),
                                                  modalities.get((config, split)))
            metrics += [k for k in shown if k not in metrics]
        for key in metrics:
            chance = next(((m.get("chance") or {}).get(key) for m in present
                           if (m.get("chance") or {}).get(key) is not None), None)
            rows.append([config, split, key]
                        + [c for i in range(len(runs)) for c in (_cell(by.get((i, config, split), {}), key),
                                                                 _ties(by.get((i, config, split))))]
                        + [_pct(chance) if chance is not None else ""])
    return header, rows


def tag_table(runs: Sequence[Run], benchmark: str) -> tuple[list[str], list[list[str]]] | None:
    """Per-tag breakdown: one row per (config, split, tag) with the config's headline metric."""
    header = ["config", "split", "tag", "metric"] + [f"{r.label} (n)" for r in runs]
    keys: list[tuple[str, str, str, str]] = []
    by: dict[tuple[int, str, str, str], dict[str, Any]] = {}
    for i, run in enumerate(runs):
        for r in run.results:
            if r.get("benchmark") != benchmark:
                continue
            key = entry_headline(r)
            for tag, m in sorted((r["metrics"].get("per_tag") or {}).items()):
                unit = (r["config"], r["split"], tag, key)
                if unit not in keys:
                    keys.append(unit)
                by[(i, r["config"], r["split"], tag)] = m
    if not keys:
        return None
    rows = []
    for config, split, tag, key in keys:
        cells = []
        for i in range(len(runs)):
            m = by.get((i, config, split, tag))
            cells.append("" if m is None or (m.get(key) is None and not na_text(m))
                         else f"{_cell(m, key)} ({m.get('n_items', '')})")
        rows.append([config, split, tag, key] + cells)
    return header, rows


def _shape(entry: dict[str, Any]) -> tuple[int, int] | None:
    """The items' shape the entry records (None: mixed shapes, or not recorded)."""
    shape = entry.get("shape")
    return (int(shape[0]), int(shape[1])) if shape else None


def _pct_cell(values: dict[str, Any], ci: dict[str, Any], key: str) -> str:
    v = values.get(key)
    if v is None:
        return ""
    c = ci.get(key)
    return _pct(v) + (f" [{_pct(c[0])}, {_pct(c[1])}]" if c else "")


def _summary_cell(row: dict[str, Any] | None, metric: str, authors: str | None = None) -> str:
    """A summary row's value in %, with its CI, "(k of n)" on an incomplete aggregate, and, where the
    run's tie policy is not the authors' rule, the value under theirs: "(strict: 21.9)"."""
    if row is not None and metric in (row.get("na") or []):
        return f"N/A ({row['na_reason']})"
    if row is None or metric not in row["values"]:
        return ""
    text = _pct_cell(row["values"], row.get("ci") or {}, metric)
    if row.get("aggregate") and not row.get("complete", True):  # over fewer members, or members over fewer
        text += f" ({len(row['over'])} of {len(row['over']) + len(row['missing'])})" if row["missing"] else " (in part)"
    if metric in (row.get("authors") or {}):
        text += f" ({authors or 'authors'}: {_pct(row['authors'][metric])})"
    return text


def _authors(block: dict[str, Any] | None) -> str | None:
    return ((block or {}).get("tie_policy") or {}).get("authors")


def summary_table(runs: Sequence[Run], benchmark: str) -> tuple[list[str], list[list[str]], list[str]] | None:
    """The papers' aggregates of each run: one row per (config, split, headline metric), and the
    notes (incomplete aggregates, framings) per run."""
    keys: list[tuple[str, str, str]] = []
    by: dict[tuple[int, str, str], dict[str, Any]] = {}
    notes: list[str] = []
    for i, run in enumerate(runs):
        block = run.summary.get(benchmark)
        if not block:
            continue
        for row in block["rows"]:
            by[(i, row["config"], row["split"])] = row
            for metric in list(row["values"]) + list(row.get("na") or []):
                if (row["config"], row["split"], metric) not in keys:
                    keys.append((row["config"], row["split"], metric))
        notes += [f"{run.label}: departs from the authors' setting: {d['note']}" for d in block.get("departures", [])]
        notes += [f"{run.label}: {n}" for n in block.get("notes", [])]
    if not keys:
        return None
    order = summary_rules.headline_metrics(_registered(runs, benchmark))
    keys.sort(key=lambda k: order.index(k[2]) if k[2] in order else len(order))  # stable: configs in run order
    header = ["config", "split", "metric"] + [r.label for r in runs]
    rows = [[config, split, metric] + [_summary_cell(by.get((i, config, split)), metric,
                                                     _authors(runs[i].summary.get(benchmark)))
                                       for i in range(len(runs))]
            for config, split, metric in keys]
    return header, rows, notes


def _run_value(run: Run, benchmark: str, config: str, metric: str) -> dict[str, Any] | None:
    """The run's summary row for the paper's (config, metric) (VALSE's ``avg`` included)."""
    block = run.summary.get(benchmark) or {}
    return next((r for r in block.get("rows", []) if r["paper_config"] == config
                 and (metric in r["values"] or metric in (r.get("na") or []))), None)


def paper_table(runs: Sequence[Run], benchmark: str, papers: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]] | None:
    """This run's figures beside the published ones of the benchmark ``benchmark`` names (the
    benchmark's ``paper_tables``): one row per system, runs first; a run's value that is not under
    the authors' tie rule carries theirs beside it. None for a dataset that records no benchmark."""
    registered = _registered(runs, benchmark) if runs else benchmark
    tables = PAPER_TABLES.get(registered or "")
    if not tables or find(registered) is None:
        return None
    rows = [p for p in papers if p["benchmark"] == registered and p["table"] in tables]
    columns: list[tuple[str, str]] = []
    for p in rows:
        col = (p["config"], p["metric"])
        if col not in columns and any(_run_value(run, benchmark, *col) is not None for run in runs):
            columns.append(col)
    if not columns:
        return None
    header = ["system", "source"] + [f"{c} {m}" for c, m in columns]
    out = []
    for run in runs:
        theirs = _authors(run.summary.get(benchmark))
        cells = [_summary_cell(_run_value(run, benchmark, config, metric), metric, theirs) for config, metric in columns]
        out.append([f"this run: {run.label}", "vlprobe"] + cells)
    models: list[str] = []
    for p in rows:
        if p["model"] not in models:
            models.append(p["model"])
    for model in models:
        values = {(p["config"], p["metric"]): p["value"] for p in rows if p["model"] == model}
        if not any(c in values for c in columns):
            continue
        table = next(p["table"] for p in rows if p["model"] == model)
        out.append([model, source_label(registered, table)] + [f"{values[c]:.1f}" if c in values else "" for c in columns])
    return header, out


def _modality(entry: dict[str, Any]) -> str | None:
    """The modality a results.json entry was scored in (``data.modality``; ``text``: text only)."""
    return (entry.get("data") or {}).get("modality")


def headline(metrics: dict[str, Any], benchmark: str | None = None,
             shape: tuple[int, int] | None = None, modality: str | None = None) -> str | None:
    """The metric a plot shows for a config, by the one rule (:func:`vlprobe.summary.primary_metric`):
    Winoground's group, VALSE's acc_r, BLA's sentence accuracy, TraVLR's macro-F1 or acc_r.
    ``benchmark``: a registered benchmark's name (else the rule for the item ``shape``)."""
    available = [k for k in metric_keys(metrics) if metrics.get(k) is not None or na_text(metrics)]
    return summary_rules.primary_metric(benchmark, shape, available, modality)


def entry_headline(entry: dict[str, Any]) -> str | None:
    """:func:`headline` of one of a run's entries (:attr:`Run.results`), by its benchmark and the shape it records."""
    return headline(entry["metrics"], entry.get("registered"), _shape(entry), _modality(entry))
