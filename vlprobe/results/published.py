"""Published figures keyed by checkpoint (``vlprobe/data/``, described in its README):

* ``published.csv``: one figure a row, ``benchmark, config, metric, checkpoint, value, source, dataset_version,
  n_items`` (vlprobe's names of benchmark, config and metric; ``checkpoint`` as open_clip names it,
  ``ARCH/PRETRAINED``; ``value`` in percent as the source prints it; the upstream version of the benchmark's data it
  was measured on and the number of items, where known);
* ``published_sources.csv``: per source and benchmark, the reference, its URL and commit, the rule it scored by and
  what is known of the data it read;
* ``checkpoint_names.csv``: the names users pass for each checkpoint (``open_clip:ARCH/PRETRAINED``, the
  ``hf-hub:`` repository open_clip's table loads it from, the transformers ids that hold the same weights).

:func:`published_for` gives the figures for a model name or checkpoint; :func:`checkpoint_of` the checkpoint a name
stands for. This module imports nothing of vlprobe beyond the data, so every layer can read it.
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from importlib import resources

OPEN_CLIP = "open_clip:"


@dataclass(frozen=True)
class Source:
    """Where figures come from, for one benchmark: the reference, its URL and commit (empty: not a repository
    file), the rule it scored by and what is known of the data it read."""

    key: str
    benchmark: str
    reference: str
    url: str
    commit: str
    rule: str
    note: str


@dataclass(frozen=True)
class Figure:
    """One published figure (percent)."""

    benchmark: str
    config: str
    metric: str
    checkpoint: str
    value: float
    source: Source
    dataset_version: str  # the benchmark's upstream data version it was measured on ("" : not known)
    n_items: int | None  # items it was measured on (None: not known)


def _rows(name: str) -> list[dict[str, str]]:
    text = resources.files("vlprobe").joinpath(f"data/{name}").read_text(encoding="utf-8")
    return list(csv.DictReader(text.splitlines()))


@functools.lru_cache(maxsize=1)
def sources() -> dict[tuple[str, str], Source]:
    """``{(source, benchmark): Source}`` of ``published_sources.csv``."""
    out = {}
    for r in _rows("published_sources.csv"):
        out[(r["source"], r["benchmark"])] = Source(r["source"], r["benchmark"], r["reference"], r["url"], r["commit"],
                                                    r["rule"], r["note"])
    return out


@functools.lru_cache(maxsize=1)
def figures() -> tuple[Figure, ...]:
    """Every row of ``published.csv``."""
    known = sources()
    return tuple(Figure(r["benchmark"], r["config"], r["metric"], r["checkpoint"], float(r["value"]),
                        known[(r["source"], r["benchmark"])], r["dataset_version"],
                        int(r["n_items"]) if r["n_items"] else None)
                 for r in _rows("published.csv"))


@functools.lru_cache(maxsize=1)
def checkpoint_names() -> dict[str, str]:
    """``{name: checkpoint}`` of ``checkpoint_names.csv`` (each name stands for one checkpoint)."""
    return {r["name"]: r["checkpoint"] for r in _rows("checkpoint_names.csv")}


@functools.lru_cache(maxsize=1)
def _checkpoints() -> frozenset[str]:
    return frozenset(f.checkpoint for f in figures())


def checkpoint_of(model: str) -> str | None:
    """The checkpoint a model name stands for: a name of ``checkpoint_names.csv``, a checkpoint itself
    (``ARCH/PRETRAINED``, with or without ``open_clip:``; a local copy registered under that name is that
    checkpoint), or None when no published figure is keyed by it."""
    name = str(model).strip().rstrip("/")
    if name in checkpoint_names():
        return checkpoint_names()[name]
    bare = name.removeprefix(OPEN_CLIP)
    return bare if bare in _checkpoints() else None


def published_for(model: str, benchmark: str | None = None) -> list[Figure]:
    """The published figures for the checkpoint ``model`` names (see :func:`checkpoint_of`), of ``benchmark`` (a
    vlprobe benchmark name; None: all), in the data's order; [] when there are none."""
    checkpoint = checkpoint_of(model)
    if checkpoint is None:
        return []
    return [f for f in figures() if f.checkpoint == checkpoint and (benchmark is None or f.benchmark == benchmark)]


def version_note(figure: Figure, n_items: int | None = None) -> str | None:
    """What is known to differ between the data ``figure`` was measured on and the data vlprobe builds for its
    benchmark (``n_items``: the items a run scored, default the benchmark's count for the config), or None when
    nothing is: another upstream version, and by how many items.

    >>> f = [f for f in published_for("open_clip:ViT-B-32/openai", "sugar_crepe") if f.config == "swap_obj"]
    >>> [version_note(x) for x in f]  # the SugarCREPE authors' table, then the study
    ["measured on the 6e45274 version of the data, not 546eb51 (246 items, 1 more than vlprobe's 245)", None]
    """
    from ..benchmarks import find

    bench = find(figure.benchmark)
    ours = n_items if n_items is not None else (bench.counts.get(figure.config) if bench is not None else None)
    parts = []
    if figure.dataset_version and bench is not None and bench.data_version and figure.dataset_version != bench.data_version:
        parts.append(f"measured on the {figure.dataset_version} version of the data, not {bench.data_version}")
    if figure.n_items is not None and ours is not None and figure.n_items != ours:
        more = figure.n_items - ours
        count = f"{figure.n_items:,} items, {abs(more):,} {'more' if more > 0 else 'fewer'} than vlprobe's {ours:,}"
        parts.append(f"({count})" if parts else f"measured on {count}")
    elif parts and figure.n_items is not None:
        parts.append(f"(the same {figure.n_items:,} items)")
    return " ".join(parts) or None
