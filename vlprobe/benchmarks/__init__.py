"""The benchmarks vlprobe knows, one module each defining ``BENCHMARK`` (``docs/adding-a-benchmark.md``)."""

from .base import *  # noqa: F403  (what base.py's __all__ names)
