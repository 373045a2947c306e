"""The result of ``vlprobe.evaluate``: :class:`Evaluation` (summary, tables, scores, plots, save) and
the papers' aggregates printed with it."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from .. import summary as summary_rules
from ..errors import VlprobeError
from ..results import ScoredSplit, pct


class Evaluation:
    """What :func:`evaluate` returns; the same surface as :class:`vlprobe.ProbeResult`:

    * ``results``: the results.json document (a dict); ``summary``: each benchmark's headline
      metrics (its paper's aggregates where it has a paper), as under the printed table;
    * ``table()``: the text ``vlprobe evaluate`` prints; ``to_pandas()``: results.csv's rows, one
      per dataset/config/split/tag/metric; ``plot()``: a matplotlib figure of the table's metrics;
    * ``save(dir)``: results.json, scores.parquet, results.csv and plots, as the CLI writes them;
    * ``scores()``: the per-item score matrices as a ``datasets.Dataset``; ``splits`` and
      ``provenance``: the scored splits and what produced them.
    """

    def __init__(self, splits: list[ScoredSplit], provenance: dict[str, Any], summary: dict[str, Any] | None,
                 *, main_process: bool = True) -> None:
        self.splits = splits
        self.provenance = provenance
        self.summary = summary or {}
        self.main_process = main_process

    @property
    def results(self) -> dict[str, Any]:
        """The results.json document."""
        from ..results import results_document

        return results_document(self.splits, self.provenance, self.summary)

    def to_pandas(self, per_tag: bool = True) -> Any:
        """results.csv as a DataFrame: one row per dataset/config/split/tag/metric (``tag`` empty for the whole
        split; ``per_tag=False`` keeps those rows only and drops the column): value, ci_low, ci_high, chance,
        support, n_items, n_ties, na_reason (why value is None where every item tied). One name per quantity
        for the items' shape, as in results.csv."""
        import pandas as pd

        from ..results import CSV_COLUMNS, csv_rows

        rows = [r for r in csv_rows(self.splits) if per_tag or not r["tag"]]
        frame = pd.DataFrame(rows, columns=list(CSV_COLUMNS))
        return frame if per_tag else frame.drop(columns=["tag"])

    def scores(self) -> Any:
        """The per-item scores as a ``datasets.Dataset`` (the rows of scores.parquet)."""
        import datasets

        from ..results import scores_table

        return datasets.Dataset(scores_table(self.splits))

    def table(self) -> str:
        """The table ``vlprobe evaluate`` prints."""
        from ..results import format_table, truncation_warning

        warnings = [w for w in (truncation_warning(u) for u in self.splits) if w]
        return (format_table(self.splits, keys_of=display_keys) + "".join(f"\n{w}" for w in warnings)
                + format_summary(self.summary))

    def save(self, out_dir: str | os.PathLike) -> list[Path]:
        """Write results.json, scores.parquet, results.csv and one plot per split into ``out_dir``,
        as one unit (a temporary folder swapped in). Returns the paths written."""
        from ..results import check_output_dir, write_outputs

        if not self.main_process:
            return []
        check_output_dir(out_dir)
        try:
            return write_outputs(out_dir, self.splits, self.provenance, self.summary)
        except OSError as err:
            cache = (self.provenance.get("engine") or {}).get("cache_dir")
            rerun = (f"the scores are in the cache ({cache}), so running it again computes nothing" if cache
                     else "nothing was cached (cache_dir none), so a rerun scores again")
            raise VlprobeError(f"cannot write the outputs to {out_dir} ({err.strerror or err}); {rerun}") from None

    def plot(self) -> Any:
        """A matplotlib figure: one panel per split, a bar per metric with its CI and chance."""
        import matplotlib.pyplot as plt

        from ..results import plot_split

        n = max(1, len(self.splits))
        cols = min(3, n)
        rows = math.ceil(n / cols)
        fig, axes = plt.subplots(rows, cols, figsize=(5.0 * cols, 3.8 * rows), squeeze=False)
        for ax, split in zip(axes.flat, self.splits):
            plot_split(ax, split)
        for ax in list(axes.flat)[len(self.splits):]:
            ax.axis("off")
        fig.tight_layout()
        return fig

    def __repr__(self) -> str:
        model = Path(str(self.provenance.get("model", {}).get("model_id") or "?").rstrip("/")).name or "?"
        names = [s.name for s in self.splits]
        shown = ", ".join(names[:3]) + (f", ... ({len(names)} in all)" if len(names) > 3 else "")
        items = sum(len(s.items) for s in self.splits)
        return (f"<vlprobe.Evaluation: {model} on {shown}; {items} items; .table(), .summary, .to_pandas(), "
                f".plot(), .save(dir)>")


def display_keys(split: ScoredSplit) -> list[str]:
    """The metrics the printed table (and the plots) show for a split: those meaningful for its
    benchmark and item shape (:func:`vlprobe.results.shown_metrics`)."""
    from ..results import shown_metrics

    return shown_metrics(split)


def summarize(entries: list[dict[str, Any]], settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """The papers' aggregates per benchmark (:func:`vlprobe.summary.summarize`); ``settings``: the
    run's recorded settings, to flag where it departs from the authors' own."""
    return summary_rules.summarize(entries, settings) or {}


def format_summary(summary: dict[str, Any]) -> str:
    """The papers' aggregates as text under the table ("" when there are none): per benchmark its
    source, one line per row (config or aggregate, split, headline values with CIs, and the figure
    under the authors' tie rule where the run's is another), how the run departs from the authors'
    setting, its notes."""
    lines: list[str] = []
    for bench, block in (summary or {}).items():
        rows = block.get("rows") or []
        if not rows:
            continue
        lines += ["", summary_rules.summary_title(bench, block)]
        names = block.get("names") or {}  # the paper's name of a metric (SugarCREPE++'s text score: TOT)
        theirs = (block.get("tie_policy") or {}).get("authors")
        for row in rows:
            name = f"{row.get('label') or row.get('config')}/{row.get('split')}"
            cis = row.get("ci") or {}
            authors = row.get("authors") or {}
            cells = []
            for key, value in (row.get("values") or {}).items():
                ci = cis.get(key)
                cells.append(f"{names.get(key, key)} {pct(value)}" + (f" [{pct(ci[0])},{pct(ci[1])}]" if ci else "")
                             + (f" ({theirs}: {pct(authors[key])})" if key in authors else ""))
            cells += [f"{names.get(key, key)} N/A ({row['na_reason']})" for key in row.get("na") or []]
            extra = f"  ({row['framing']})" if row.get("framing") else ""
            n = f"  n={row['n_items']}" if row.get("n_items") is not None else ""
            lines.append(f"  {name:<32} " + "  ".join(cells) + n + extra)
        lines += [f"  departs from the authors' setting: {d['note']}" for d in block.get("departures") or []]
        lines += [f"  note: {note}" for note in block.get("notes") or []]
    return ("\n" + "\n".join(lines)) if lines else ""
