"""Published figures keyed by open_clip's ``ARCH/PRETRAINED`` checkpoint (``vlprobe/data/``, described in its
README). Imports nothing of vlprobe but the benchmarks' declarations, when asked, so every layer can read it."""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass, fields
from importlib import resources
from typing import TypeVar, get_type_hints

OPEN_CLIP = "open_clip:"


@dataclass(frozen=True)
class Source:
    """Where figures come from, for one benchmark (a row of ``published_sources.csv``)."""

    key: str  # the CSV's "source"
    benchmark: str
    label: str  # for tables: "SugarCREPE authors (sugar-crepe#3)"
    reference: str
    url: str
    commit: str
    rule: str
    note: str


@dataclass(frozen=True)
class Figure:
    """One published figure (percent): a row of ``published.csv``."""

    benchmark: str
    config: str
    metric: str
    checkpoint: str
    value: float
    source_key: str  # the CSV's "source"
    dataset_version: str  # "": not known
    n_items: int | None

    @property
    def source(self) -> Source:
        """Where it comes from (``published_sources.csv``)."""
        return sources()[(self.source_key, self.benchmark)]


@dataclass(frozen=True)
class _CheckpointName:
    name: str
    checkpoint: str


T = TypeVar("T")


def data_records(name: str, cls: type[T], **renamed: str) -> list[T]:
    """The rows of ``vlprobe/data/<name>`` as ``cls`` dataclasses (``renamed``: field=column where another)."""
    text = resources.files("vlprobe").joinpath(f"data/{name}").read_text(encoding="utf-8")
    hints = get_type_hints(cls)
    columns = {f.name: renamed.get(f.name, f.name) for f in fields(cls)}  # type: ignore[arg-type]
    return [cls(**{f: _typed(hints[f], row[c]) for f, c in columns.items() if c in row})
            for row in csv.DictReader(text.splitlines())]


def _typed(tp: object, text: str) -> object:
    if tp is float:
        return float(text)
    if tp == int | None:
        return int(text) if text else None
    return text


@functools.lru_cache(maxsize=1)
def sources() -> dict[tuple[str, str], Source]:
    """``{(source, benchmark): Source}`` of ``published_sources.csv``."""
    return {(s.key, s.benchmark): s for s in data_records("published_sources.csv", Source, key="source")}


@functools.lru_cache(maxsize=1)
def figures() -> tuple[Figure, ...]:
    """Every row of ``published.csv``."""
    return tuple(data_records("published.csv", Figure, source_key="source"))


@functools.lru_cache(maxsize=1)
def checkpoint_names() -> dict[str, str]:
    """``{name: checkpoint}`` of ``checkpoint_names.csv`` (each name stands for one checkpoint)."""
    return {c.name: c.checkpoint for c in data_records("checkpoint_names.csv", _CheckpointName)}


def checkpoint_of(model: str) -> str | None:
    """The checkpoint a model name stands for (a name of ``checkpoint_names.csv``, or a checkpoint itself), or None."""
    name = str(model).strip().rstrip("/")
    if name in checkpoint_names():
        return checkpoint_names()[name]
    bare = name.removeprefix(OPEN_CLIP)
    return bare if any(f.checkpoint == bare for f in figures()) else None


def published_for(model: str, benchmark: str | None = None) -> list[Figure]:
    """The published figures for the checkpoint ``model`` names, of ``benchmark`` (None: all), in the data's order."""
    checkpoint = checkpoint_of(model)
    if checkpoint is None:
        return []
    return [f for f in figures() if f.checkpoint == checkpoint and (benchmark is None or f.benchmark == benchmark)]


def run_checkpoint(model_id: str | None, recorded: str | None = None) -> str | None:
    """The checkpoint a run's model was: the one its scorer ``recorded``, else the one its name stands for, else the one
    of the Hub repository a Hugging Face cache folder is a snapshot of. Any other local folder is none: its weights may
    be anything."""
    if recorded:
        return str(recorded).removeprefix(OPEN_CLIP)
    if not model_id:
        return None
    found = checkpoint_of(model_id)
    if found is not None:
        return found
    parts = str(model_id).replace("\\", "/").rstrip("/").split("/")
    if len(parts) >= 3 and parts[-2] == "snapshots" and parts[-3].startswith("models--"):
        repo = parts[-3].removeprefix("models--").replace("--", "/")
        return checkpoint_of(repo)
    return None


def version_note(figure: Figure, version: str | None = None, n_items: int | None = None) -> str | None:
    """What is known to differ between the data ``figure`` was measured on and a run's (``version``, default the
    benchmark's ``data_version``; ``n_items``, default its count): another version, other items; None when nothing."""
    from ..benchmarks import find

    bench = find(figure.benchmark)
    declared = bench.data_version if bench is not None else ""
    ours_version = version or declared
    if n_items is None and bench is not None and ours_version == declared:
        n_items = bench.counts.get(figure.config)
    parts = []
    if figure.dataset_version and ours_version and figure.dataset_version != ours_version:
        parts.append(f"measured on the {figure.dataset_version} version of the data, not {ours_version}")
    if figure.n_items is not None and n_items is not None and figure.n_items != n_items:
        count = f"{figure.n_items:,} items against {n_items:,}"
        parts.append(f"({count})" if parts else f"measured on {count}")
    elif parts and figure.n_items is not None:
        parts.append(f"(the same {figure.n_items:,} items)")
    return " ".join(parts) or None
