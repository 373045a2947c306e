"""The report's tables: runs side by side per config (with ties), per tag, the papers' aggregates, and
the runs beside the published numbers."""

from __future__ import annotations

from typing import Any, Sequence

from .. import summary as summary_rules
from ..results import metric_keys, na_text
from .papers import PAPER_TABLES, source_label
from .runs import Run


def _pct(v: Any) -> str:
    """A fraction as a percentage, ``-`` where there is none (an empty table cell reads as missing)."""
    from ..results import pct

    return pct(v) or "-"


def _cell(metrics: dict[str, Any], key: str) -> str:
    v = metrics.get(key)
    if v is None:
        return na_text(metrics) if key in metrics else ""
    ci = (metrics.get("ci") or {}).get(key)
    return _pct(v) + (f" [{_pct(ci[0])}, {_pct(ci[1])}]" if ci else "")


def _benchmarks(runs: Sequence[Run]) -> list[str]:
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


def long_table(runs: Sequence[Run], benchmark: str) -> tuple[list[str], list[list[str]]]:
    """One row per (config, split, metric); per run its value [CI] and a ties column: the gold vs
    non-gold comparisons that tied, and the items (a 0.0 [0.0, 0.0] where nearly everything tied
    says "the scores are constant", not "always wrong")."""
    header = ["config", "split", "metric"] + [h for r in runs for h in (r.label, f"{r.label} ties")] + ["chance"]
    keys: list[tuple[str, str]] = []
    by: dict[tuple[int, str, str], dict[str, Any]] = {}
    shapes: dict[tuple[str, str], tuple[int, int] | None] = {}
    modalities: dict[tuple[str, str], str | None] = {}
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
            shown = summary_rules.display_metrics(benchmark, shapes.get((config, split)), metric_keys(m),
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
            key = headline(r["metrics"], benchmark, _shape(r), _modality(r))
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
    shape = entry.get("shape")
    if shape:
        return (int(shape[0]), int(shape[1]))
    return summary_rules.infer_shape(entry.get("metrics") or {})


def _pct_cell(values: dict[str, Any], ci: dict[str, Any], key: str) -> str:
    v = values.get(key)
    if v is None:
        return ""
    c = ci.get(key)
    return _pct(v) + (f" [{_pct(c[0])}, {_pct(c[1])}]" if c else "")


def _summary_cell(row: dict[str, Any] | None, metric: str) -> str:
    """A summary row's value in %, with its CI, and "(k of n)" on an incomplete aggregate."""
    if row is not None and metric in (row.get("na") or []):
        return f"N/A ({row['na_reason']})"
    if row is None or metric not in row["values"]:
        return ""
    text = _pct_cell(row["values"], row.get("ci") or {}, metric)
    if row.get("aggregate") and not row.get("complete", True):
        text += f" ({len(row['over'])} of {len(row['over']) + len(row['missing'])})"
    return text


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
        notes += [f"{run.label}: {n}" for n in block.get("notes", [])]
    if not keys:
        return None
    order = summary_rules.headline_metrics(benchmark)
    keys.sort(key=lambda k: order.index(k[2]) if k[2] in order else len(order))  # stable: configs in run order
    header = ["config", "split", "metric"] + [r.label for r in runs]
    rows = [[config, split, metric] + [_summary_cell(by.get((i, config, split)), metric) for i in range(len(runs))]
            for config, split, metric in keys]
    return header, rows, notes


def _run_value(run: Run, benchmark: str, config: str, metric: str) -> dict[str, Any] | None:
    """The run's summary row for the paper's (config, metric) (VALSE's ``avg`` included)."""
    block = run.summary.get(benchmark) or {}
    return next((r for r in block.get("rows", []) if r["paper_config"] == config
                 and (metric in r["values"] or metric in (r.get("na") or []))), None)


def paper_table(runs: Sequence[Run], benchmark: str, papers: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]] | None:
    tables = PAPER_TABLES.get(benchmark)
    if not tables:
        return None
    rows = [p for p in papers if p["benchmark"] == benchmark and p["table"] in tables]
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
        cells = [_summary_cell(_run_value(run, benchmark, config, metric), metric) for config, metric in columns]
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
        out.append([model, source_label(benchmark, table)] + [f"{values[c]:.1f}" if c in values else "" for c in columns])
    return header, out


def _modality(entry: dict[str, Any]) -> str | None:
    """The modality a results.json entry was scored in (``data.modality``; ``text``: text only)."""
    return (entry.get("data") or {}).get("modality")


def headline(metrics: dict[str, Any], benchmark: str | None = None,
             shape: tuple[int, int] | None = None, modality: str | None = None) -> str | None:
    """The metric a plot shows for a config, by the one rule (:func:`vlprobe.summary.primary_metric`):
    Winoground's group, VALSE's acc_r, BLA's sentence accuracy, TraVLR's macro-F1 or acc_r. Without
    a benchmark, the rule for the item shape (inferred from the metrics when not given)."""
    available = [k for k in metric_keys(metrics) if metrics.get(k) is not None or na_text(metrics)]
    if shape is None:
        shape = summary_rules.infer_shape(metrics)
    return summary_rules.primary_metric(benchmark or "", shape, available, modality)
