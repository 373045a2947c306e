"""The benchmarks vlprobe knows, one module each, found by scanning this folder (as ``scorers/`` is):
each module defines ``BENCHMARK``, a :class:`Benchmark` holding everything true of its benchmark
(pins, configs and counts, headline metrics and aggregates, tie rule, names of metrics, published
numbers, citation). See ``docs/adding-a-benchmark.md``."""

from .base import (
    AUTHORS,
    COUNTED,
    METRIC_ORDER,
    PROBABILITY_METRICS,
    TEXT_ONLY,
    TIE_CHOICES,
    TIE_POLICIES,
    Benchmark,
    BenchmarkError,
    ClampedAtZero,
    Framing,
    Group,
    PaperTable,
    TextOnly,
    TieRule,
    Upstream,
    UpstreamFile,
    benchmarks,
    by_old_name,
    find,
    get,
    shape_headline,
    tie_policy,
)

__all__ = [
    "AUTHORS", "COUNTED", "METRIC_ORDER", "PROBABILITY_METRICS", "TEXT_ONLY", "TIE_CHOICES", "TIE_POLICIES",
    "Benchmark", "BenchmarkError", "ClampedAtZero", "Framing", "Group", "PaperTable", "TextOnly", "TieRule",
    "Upstream", "UpstreamFile", "benchmarks", "by_old_name", "find", "get", "shape_headline", "tie_policy",
]
