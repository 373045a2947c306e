"""A run's results shown, from the records: the table a run prints, the wide table to paste and the bar charts."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from itertools import groupby
from typing import TYPE_CHECKING, Any, SupportsFloat

import numpy as np

from ..benchmarks import COUNTED, METRIC_ORDER, TIE_POLICIES
from . import summary
from .schema import Entry, Metrics, dataset_name

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.collections import LineCollection
    from matplotlib.container import BarContainer

    from .scored import ScoredSplit

NA_KEY = "na_reason"


def pct(value: SupportsFloat | str | None, digits: int = 1) -> str:
    """A fraction as a percentage (``0.4567`` -> ``"45.7"``); ``""`` for None or NaN."""
    if value is None:
        return ""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    return "" if not np.isfinite(v) else f"{100 * v:.{digits}f}"


def na_text(metrics: Metrics | Mapping[str, Any] | None) -> str:
    """``"N/A (<reason>)"`` for a result whose metrics are not available (every item tied), else ""."""
    reason = metrics.na_reason if isinstance(metrics, Metrics) else (metrics or {}).get(NA_KEY)
    return f"N/A ({reason})" if reason else ""


def metric_keys(metrics: Mapping[str, Any]) -> list[str]:
    """The scalar metrics present in a metric module's output, in display order (not available: those it would have had)."""
    na = bool(metrics.get(NA_KEY))
    return [k for k in METRIC_ORDER if k in metrics and (isinstance(metrics[k], (int, float)) or (na and metrics[k] is None))]


def truncation_warning(split: Entry | ScoredSplit) -> str:
    """The one-line warning of a scored split (or an entry) where some items' texts collapsed, else ""."""
    if isinstance(split, Entry):
        return (split.data.truncation.warning if split.data.truncation else None) or ""
    # read in place: parsing the split's data on each call could raise where it has nothing to say
    return str((split.data.get("truncation") or {}).get("warning") or "")


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "x"


def shown_metrics(entry: Entry) -> list[str]:
    """The metrics an entry's table row and plot show (:func:`vlprobe.results.summary.display_metrics`)."""
    available = entry.metrics.keys()
    keys = summary.display_metrics(entry.benchmark, entry.shape, available, entry.modality)
    return [k for k in keys if k in available] or available


def row_name(entry: Entry) -> str:
    """An entry's name in a table: ``valse/existence/test``, a pooled config marked ``(pooled)``."""
    return entry.name + (" (pooled)" if summary.pooled(entry) else "")


def _cell(m: Metrics, key: str) -> str:
    v = m.value(key)
    if v is None:
        return na_text(m) or "-"
    ci = m.ci.get(key)
    return pct(v) + (f" [{pct(ci[0])},{pct(ci[1])}]" if ci is not None else "")


def format_table(entries: Sequence[Entry], keys_of: Callable[[Entry], Sequence[str]] = shown_metrics) -> str:
    """The plain-text table a run prints, a block per run of entries showing the same metrics."""
    out = []
    for keys, group in groupby(entries, key=lambda e: list(keys_of(e))):
        header = ["dataset/config/split", "n", "ties"] + keys
        rows = []
        for e in group:
            m = e.metrics
            cells = [_cell(m, k) for k in keys]
            na = na_text(m)
            if na and cells.count(na) > 1:  # the reason once, in the first cell it fills
                first = cells.index(na)
                cells = [c if c != na or i == first else "N/A" for i, c in enumerate(cells)]
            tied = " ".join(str(x) for x in (m.n_ties, f"({e.ties})" if e.ties else None) if x is not None)
            rows.append([row_name(e), str(m.n_items or ""), tied] + cells)
            rows.append(["  chance", "", ""] + [pct(m.chance.get(k)) for k in keys])
        widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
        out.append("\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
                              for r in [header, ["-" * w for w in widths], *rows]))
    policies = [p for p in TIE_POLICIES if any(e.ties == p for e in entries)]
    if policies:
        out[-1] += ("\nties: tied comparisons, " + ", ".join(f"({p}) {COUNTED[p]}" for p in policies)
                    + ": by its benchmark's authors' rule (strict for a dataset of your own) unless --ties names one")
    if any(summary.pooled(e) for e in entries):
        out[-1] += f"\n(pooled): the items of its configs together, {summary.POOLED}; the paper's aggregates follow"
    return "\n\n".join(out)


def wide_rows(entries: Sequence[Entry], digits: int = 1) -> tuple[list[str], list[dict[str, Any]]]:
    """(columns, rows) of the table researchers paste (CLIP_benchmark's ``build_csv``): a row per entry, values in %."""
    shown = [shown_metrics(e) for e in entries]
    metrics = [k for k in METRIC_ORDER if any(k in keys for keys in shown)]
    rows = []
    for e, keys in zip(entries, shown, strict=True):
        m = e.metrics
        row: dict[str, Any] = {"dataset": dataset_name(e.dataset), "config": e.config, "split": e.split,
                               "pooled": summary.pooled(e), "n_items": m.n_items, "n_ties": m.n_ties}
        values = {k: None if (v := m.value(k)) is None or k not in keys else round(100 * v, digits) for k in metrics}
        rows.append({**row, **values, NA_KEY: m.na_reason})
    return ["dataset", "config", "split", "pooled", "n_items", "n_ties", *metrics, NA_KEY], rows


def bar_chart(ax: Axes, labels: Sequence[str], values: Sequence[float | None], *,
              ci: Sequence[Sequence[float | None] | None] | None = None, chance: Sequence[float | None] | None = None,
              color: str | None = "#4c78a8", label: str = "score", confidence: float | None = None, offset: float = 0.0,
              width: float = 0.8) -> tuple[BarContainer, LineCollection | None]:
    """Bars in % on ``ax`` (values are fractions), CI error bars where given, a dashed chance line over each bar;
    ``offset`` and ``width`` place one run's bars among others'. Returns the bars and a chance line."""
    vals = np.array([np.nan if v is None else float(v) for v in values], dtype=float) * 100
    x = np.arange(len(labels))
    yerr = None
    if ci is not None and any(c is not None for c in ci):
        bounds = np.array([[np.nan if c is None or c[j] is None else c[j] for c in ci] for j in (0, 1)], dtype=float) * 100
        lo, hi = np.where(np.isnan(bounds), vals, bounds)  # no bound: no error bar
        yerr = np.vstack([np.clip(vals - lo, 0, None), np.clip(hi - vals, 0, None)])
        label += f" ({100 * confidence:.0f}% CI)" if confidence else " (95% CI)"
    bars = ax.bar(x + offset, np.nan_to_num(vals), width, color=color, yerr=yerr, capsize=4, label=label)
    line = None
    for i, c in enumerate(chance or []):
        if c is not None and np.isfinite(c):
            line = ax.hlines(c * 100, i - 0.45, i + 0.45, colors="#d62728", linestyles="dashed",
                             label="chance" if line is None else "")  # "": not in the legend
    ax.set_xticks(x, list(labels), rotation=30, ha="right")
    ax.set_ylim(0, 100)
    ax.set_ylabel("%")
    return bars, line


def plot_split(ax: Axes, entry: Entry, title_suffix: str = "") -> None:
    """One entry's bar chart: the metrics of its table row."""
    m = entry.metrics
    keys = [k for k in shown_metrics(entry) if m.value(k) is not None]
    bar_chart(ax, keys, [m.value(k) for k in keys], ci=[m.ci.get(k) for k in keys] if m.ci else None,
              chance=[m.chance.get(k) for k in keys])
    na = f"\n{na_text(m)}" if m.na_reason else ""
    ax.set_title(f"{row_name(entry)} (n={m.n_items}){na}{title_suffix}", fontsize=9)
    ax.legend(fontsize=7, loc="upper right")


def plot_name(entry: Entry | ScoredSplit) -> str:
    """The file name of an entry's (or a scored split's) plot."""
    return f"plot_{slug(dataset_name(entry.dataset))}_{slug(entry.config)}_{slug(entry.split)}.png"
