"""The benchmarks vlprobe knows, one module each, found by scanning this folder (as ``scorers/`` is):
each module defines ``BENCHMARK``, a :class:`Benchmark` holding everything true of its benchmark
(pins, configs and counts, headline metrics and aggregates, tie rule, names of metrics, published
numbers, citation). See ``docs/adding-a-benchmark.md``."""

from .base import *  # noqa: F403  (what base.py's __all__ names)
