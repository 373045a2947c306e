"""What ``vlprobe.evaluate`` returns (:class:`Evaluation`), and the papers' aggregates printed with it."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import write_failed
from ..results import RunResult, ScoredSplit, format_table, pct, result_entries, truncation_warning
from ..results import summary as summary_rules
from ..results.io import provenance_record
from ..results.run import check_out
from ..results.schema import Entry, EvaluationDocument, SummaryBlock, SummaryRow

if TYPE_CHECKING:
    import datasets
    import pandas as pd
    from matplotlib.figure import Figure


class Evaluation(RunResult[Entry]):
    """What :func:`evaluate` returns, on :class:`vlprobe.ProbeResult`'s surface (:class:`~vlprobe.results.RunResult`);
    and ``scores()`` (the per-item scores), ``splits`` and ``provenance`` (the scored splits and what produced them)."""

    def __init__(self, splits: list[ScoredSplit], provenance: dict[str, Any],
                 summary: Mapping[str, SummaryBlock] | None, *, main_process: bool = True) -> None:
        self.splits = splits
        self.provenance = provenance
        self.summary = dict(summary or {})
        self.main_process = main_process

    @cached_property
    def document(self) -> EvaluationDocument:
        """results.json as records."""
        return EvaluationDocument(provenance_record(self.provenance), tuple(result_entries(self.splits)), self.summary)

    def to_pandas(self, per_tag: bool = True, wide: bool = False) -> pd.DataFrame:
        """results.csv as a DataFrame, a row per dataset/config/split/tag/metric (``tag`` empty for the whole split;
        ``per_tag=False``: those rows only, without the column); ``wide=True``: results_wide.csv, a row per
        dataset/config/split and a column per metric shown, in %."""
        import pandas as pd

        from ..results.display import wide_rows
        from ..results.io import CSV_COLUMNS, csv_rows

        if wide:
            columns, rows = wide_rows(self.entries)
            return pd.DataFrame(rows, columns=columns)
        rows = [r for r in csv_rows(self.entries) if per_tag or not r["tag"]]
        frame = pd.DataFrame(rows, columns=list(CSV_COLUMNS))
        return frame if per_tag else frame.drop(columns=["tag"])

    def scores(self) -> datasets.Dataset:
        """The per-item scores as a ``datasets.Dataset`` (the rows of scores.parquet)."""
        import datasets

        from ..results.io import scores_table

        return datasets.Dataset(scores_table(self.splits, self.entries))

    def table(self) -> str:
        """The table ``vlprobe evaluate`` prints."""
        warnings = [w for w in (truncation_warning(e) for e in self.entries) if w]
        return format_table(self.entries) + "".join(f"\n{w}" for w in warnings) + format_summary(self.summary)

    def save(self, out: str | os.PathLike) -> list[Path]:
        """Write results.json, scores.parquet, results.csv, results_wide.csv and one plot per split into ``out``,
        as one unit (a temporary folder swapped in). Returns the paths written."""
        from ..results import check_output_dir, write_outputs

        check_out(out)
        if not self.main_process:
            return []
        check_output_dir(out)
        try:
            return write_outputs(out, self.splits, self.document)
        except OSError as err:
            engine = self.document.provenance.engine
            raise write_failed(out, err, engine.cache_dir if engine else None, "scores", "nothing") from None

    def plot(self) -> Figure:
        """A matplotlib figure: one panel per split, a bar per metric with its CI and chance."""
        import matplotlib.pyplot as plt

        from ..results.display import plot_split

        n = max(1, len(self.splits))
        cols = min(3, n)
        rows = math.ceil(n / cols)
        fig, axes = plt.subplots(rows, cols, figsize=(5.0 * cols, 3.8 * rows), squeeze=False)
        for ax, entry in zip(axes.flat, self.entries):
            plot_split(ax, entry)
        for ax in list(axes.flat)[len(self.splits):]:
            ax.axis("off")
        fig.tight_layout()
        return fig

    def __repr__(self) -> str:
        names = [s.name for s in self.splits]
        shown = ", ".join(names[:3]) + (f", ... ({len(names)} in all)" if len(names) > 3 else "")
        items = sum(len(s.items) for s in self.splits)
        return (f"<vlprobe.Evaluation: {self.document.provenance.model.name} on {shown}; {items} items; .table(), "
                f".summary, .to_pandas(), .plot(), .save(dir)>")


def _figure(key: str, value: float | None, row: SummaryRow, theirs: str | None, names: Mapping[str, str]) -> str:
    ci = row.ci.get(key)
    text = f"{names.get(key, key)} " + (f"N/A ({row.na_reason})" if value is None else pct(value))
    text += f" [{pct(ci[0])},{pct(ci[1])}]" if ci and value is not None else ""
    return text + (f" ({theirs}: {pct(row.authors[key])})" if key in row.authors else "")


def format_summary(summary: Mapping[str, SummaryBlock]) -> str:
    """The papers' aggregates as text under the table ("" when there are none)."""
    lines: list[str] = []
    for bench, block in (summary or {}).items():
        if not block.rows:
            continue
        lines += ["", summary_rules.summary_title(bench, block)]
        theirs = block.tie_policy.authors if block.tie_policy else None
        for row in block.rows:
            cells = [_figure(k, v, row, theirs, block.names) for k, v in row.values.items()]
            cells += [_figure(k, None, row, theirs, block.names) for k in row.na]
            extra = "".join(f"  ({said})" for said in (row.framing, summary_rules.POOLED if row.pooled else None) if said)
            n = f"  n={row.n_items}" if row.n_items is not None else ""
            shown = (row.config if row.pooled else row.name) + "/" + row.split  # a pooled row's label follows its figures
            lines.append(f"  {shown:<32} " + "  ".join(cells) + n + extra)
        lines += [f"  departs from the authors' setting: {d.note}" for d in block.departures]
        lines += [f"  note: {note}" for note in block.notes]
        if block.published:
            header, rows = summary_rules.published_table(block)
            widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]
            right = {3, 4, 5}  # the figures
            for r in [header, *rows]:
                cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
                lines.append(("    " + "  ".join(cells) + "  " + r[-1]).rstrip())
    return ("\n" + "\n".join(lines)) if lines else ""
