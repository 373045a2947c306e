"""The seed papers' published numbers (``vlprobe/data/paper_results.csv``) and which of their tables a report
compares with (each benchmark's ``paper_tables``)."""

from __future__ import annotations

from dataclasses import dataclass

from ..benchmarks import benchmarks, find
from ..results.published import data_records

_WITH_PAPERS = [b for b in benchmarks().values() if b.paper_tables]

PAPER_TABLES: dict[str, tuple[str, ...]] = {b.name: tuple(t.table for t in b.paper_tables) for b in _WITH_PAPERS}
PAPER_NOTES: dict[str, str] = {b.name: b.paper_note for b in _WITH_PAPERS if b.paper_note}


def source_label(benchmark: str, table: str) -> str:
    """Where a table's figures come from, as the report's "source" column says it ("paper, <table>")."""
    bench = find(benchmark)
    return bench.source_label(table) if bench is not None else f"paper, {table}"


@dataclass(frozen=True)
class PaperResult:
    """One published figure (a row of ``paper_results.csv``): a percentage, as the paper prints it."""

    benchmark: str
    table: str
    model: str
    metric: str
    config: str
    value: float
    note: str = ""


def paper_results() -> list[PaperResult]:
    """The rows of ``vlprobe/data/paper_results.csv``."""
    return data_records("paper_results.csv", PaperResult)


def paper_benchmarks() -> tuple[str, ...]:
    """The benchmarks with published numbers to set a run beside, in the order the CSV holds them."""
    order = list(dict.fromkeys(r.benchmark for r in paper_results()))
    return tuple(sorted(PAPER_TABLES, key=lambda b: order.index(b) if b in order else len(order)))
