"""A ``vlprobe probe`` run in the report: its TraVLR Table 2 layout, each cell beside the published probe table its
benchmark declares (``probe_table``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..benchmarks import Benchmark, find
from ..probing.result import table2_cell_text, table2_cells, table2_grid
from ..results.schema import Finetune, ProbeDocument, ProbeRow, Table2Cell
from .papers import PaperResult
from .runs import Run


def _rows(run: Run) -> tuple[ProbeRow, ...]:
    return run.doc.rows if isinstance(run.doc, ProbeDocument) else ()


def probe_benchmark(run: Run) -> Benchmark | None:
    """The benchmark a probe run's dataset records; None for a dataset of the user's own."""
    dataset = run.doc.provenance.dataset
    return find(dataset.benchmark) if dataset else None


@dataclass(frozen=True)
class PaperCell:
    """A published probe table's OOD cell: the figure (%), its change from InD and its #sd (converged runs)."""

    value: float
    change: float | None
    sd_runs: int | None


def _paper_rows(papers: list[PaperResult], bench: Benchmark | None) -> dict[tuple[str, str, str], dict[str, PaperCell]]:
    """{(task, train, test): {model: cell}} of the benchmark's published probe table's OOD cells."""
    out: dict[tuple[str, str, str], dict[str, PaperCell]] = {}
    if bench is None or not bench.probe_table:
        return out
    for p in papers:
        m = re.fullmatch(r"(.+)/train=(\w+)/test=(\w+)/test_ood", p.config)
        if p.benchmark != bench.name or p.table != bench.probe_table or p.metric != "macro_f1" or not m:
            continue
        change = re.search(r"change from InD ([+-]?\d+(?:\.\d+)?)", p.note)
        runs = re.search(r"#sd = (\d+)", p.note)
        out.setdefault(m.groups(), {})[p.model] = PaperCell(p.value, float(change.group(1)) if change else None,
                                                            int(runs.group(1)) if runs else None)
    return out


def _kinds(run: Run) -> list[tuple[str, list[Table2Cell]]]:
    """(what the rows are, their Table 2 cells) for each kind of rows the run has cells of."""
    rows, st = _rows(run), run.settings
    plan = st.finetune if isinstance(st.finetune, Finetune) else Finetune()
    kinds = [(f"frozen probe ({st.classifier or 'logreg'})", False),
             (f"fine-tuned ({plan.schedule} schedule, {plan.epochs} epochs)" if plan.schedule
              else "fine-tuned (schedule not recorded)", True)]
    return [(what, cells) for what, finetuned in kinds if (cells := table2_cells(rows, finetuned))]


def table2_of(run: Run) -> list[tuple[str, tuple[list[str], list[list[str]]]]]:
    """The run's TraVLR Table 2 layout per kind of rows: (title, (header, rows))."""
    out = []
    for what, cells in _kinds(run):
        tests, grid = table2_grid(cells)
        header = ["task", "trained on"] + [f"tested on {m}" for m in tests] + ["seeds above chance (InD)"]
        out.append((f"{run.label}: {what}", (header, [[task, setting, *texts, above] for task, setting, texts, above in grid])))
    return out


def beside_paper(run: Run, papers: list[PaperResult]) -> tuple[list[str], list[list[str]]] | None:
    """One row per cell the published probe table has: ours, then per paper model its figure and ours minus it."""
    bench = probe_benchmark(run)
    published = _paper_rows(papers, bench)
    models = list(dict.fromkeys(m for cells in published.values() for m in cells))  # the paper's, in first-seen order
    header = ["vlprobe", "task", "trained on", "tested on", "ours: OOD (change) ± sd"]
    for m in models:
        header += [f"{m} (change) [#sd]", f"ours - {m}"]
    body = []
    for what, cells in _kinds(run):
        for c in cells:
            paper = published.get((c.task, c.trained_on, c.test_modality))
            if not paper or c.ood is None:
                continue
            row = [what, c.task, c.trained_on, c.test_modality, table2_cell_text(c)]
            for m in models:
                p = paper.get(m)
                if p is None:
                    row += ["", ""]
                    continue
                change = f" ({p.change:+.2f})" if p.change is not None else ""
                runs = f" [{p.sd_runs}]" if p.sd_runs is not None else ""
                row += [f"{p.value:.2f}{change}{runs}", f"{100 * c.ood - p.value:+.1f}"]
            body.append(row)
    return (header, body) if body else None


def describe(run: Run) -> str:
    """One line: model, dataset, seeds, classifier, training rows, schedule, caveats."""
    prov, rows = run.doc.provenance, _rows(run)
    st = prov.settings
    dataset = (prov.dataset.name or prov.dataset.dataset) if prov.dataset else None
    seeds = st.seeds or sorted({r.seed for r in rows if r.seed is not None}) or [None]
    sizes = sorted({r.train_size for r in rows if r.train_size})
    bits = [f"vlprobe probe of {prov.model.name} on {dataset}", f"seeds {', '.join(map(str, seeds))}",
            f"training rows {', '.join(map(str, sizes)) or '-'}"]
    if st.limit:
        bits.append(f"first {st.limit} rows per split only (--limit): not comparable to the paper")
    if isinstance(st.finetune, Finetune) and st.finetune.schedule == "quick":
        bits.append("fine-tuning schedule quick (early stopping on validation): a departure from the paper")
    return "; ".join(bits) + f"; {prov.created or ''}; {run.path}"
