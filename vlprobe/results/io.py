"""A run's files written from the records (:func:`write_outputs`) and read back (:func:`read_results`)."""

from __future__ import annotations

import csv
import io
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from importlib import metadata
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import DatasetError
from ..storage.run_folder import write_run_folder
from . import summary
from .display import NA_KEY, plot_name, plot_split, shown_metrics, wide_rows
from .schema import (
    Document,
    Entry,
    EvaluationDocument,
    Metrics,
    Provenance,
    SchemaError,
    dataset_name,
    dump,
    parse,
)
from .scored import ScoredSplit

if TYPE_CHECKING:
    import pyarrow as pa
    from matplotlib.figure import Figure

_PACKAGES = ("vlprobe", "torch", "transformers", "datasets", "evaluate", "accelerate", "huggingface_hub",
             "numpy", "pillow", "tokenizers")
# What a run writes into its folder; a folder holding anything else is not overwritten.
RUN_FILES = ("results.json", "scores.parquet", "results.csv", "results_wide.csv")


class ResultsError(DatasetError, ValueError):
    """A results.json that cannot be read: one line naming the file and the field."""


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def package_versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def vlprobe_commit() -> str | None:
    """The git commit vlprobe runs from when it is a clone's checkout, else None."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        done = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    sha = done.stdout.strip()
    return sha if done.returncode == 0 and len(sha) == 40 else None


def environment() -> dict[str, Any]:
    return {"python": sys.version.split()[0], "platform": platform.platform(), "packages": package_versions(),
            "vlprobe_commit": vlprobe_commit()}


def provenance_record(provenance: Mapping[str, Any] | Provenance) -> Provenance:
    """The run's provenance (as :class:`vlprobe.runner.Run` builds it) as a record, each dataset named."""
    from .upgrade import named

    if isinstance(provenance, Provenance):
        return provenance
    return parse(Provenance, named(dump(provenance)), "provenance")


def atomic_write_bytes(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def results_json_bytes(doc: Document, indent: int = 2) -> bytes:
    return (json.dumps(dump(doc), indent=indent, allow_nan=False) + "\n").encode("utf-8")


def write_results_json(path: str | os.PathLike[str], doc: Document) -> None:
    atomic_write_bytes(Path(path), results_json_bytes(doc))


def scores_table(splits: Sequence[ScoredSplit], entries: Sequence[Entry]) -> pa.Table:
    """The per-item scores (the content of scores.parquet), each row's dataset by the name its entry has."""
    import pyarrow as pa

    def matrix(m: object) -> list[list[float]] | None:
        return None if m is None else np.asarray(m, dtype=np.float32).tolist()

    floats = pa.list_(pa.list_(pa.float32()))
    schema = pa.schema([
        ("dataset", pa.string()), ("config", pa.string()), ("split", pa.string()), ("id", pa.string()),
        ("scores", floats), ("gold", pa.list_(pa.list_(pa.bool_()))), ("probabilities", floats),
        ("texts", pa.list_(pa.string())), ("tags", pa.list_(pa.string())),
    ])
    columns: list[list[object]] = [[] for _ in schema.names]  # filled row by row into per-column lists
    for u, e in zip(splits, entries):
        for item, s, p in zip(u.items, u.scores, u.probabilities or repeat(None)):
            row = (e.dataset, u.config, u.split, item.id, matrix(s), np.asarray(item.gold).tolist(), matrix(p),
                   list(item.texts), list(item.tags))
            for column, value in zip(columns, row, strict=True):
                column.append(value)
    return pa.Table.from_pydict(dict(zip(schema.names, columns, strict=True)), schema=schema)


CSV_COLUMNS = ("dataset", "config", "split", "tag", "metric", "value", "ci_low", "ci_high", "chance", "support",
               "n_items", "n_ties", NA_KEY)


def csv_rows(entries: Sequence[Entry]) -> list[dict[str, Any]]:
    """results.csv's rows: per entry and per tag, each metric under one name (no synonyms: :func:`.summary.metric_synonyms`)."""
    rows = []
    for e in entries:
        same = summary.metric_synonyms(e.benchmark, e.shape)
        blocks: list[tuple[str, Metrics]] = [("", e.metrics), *sorted(e.metrics.per_tag.items())]
        for tag, m in blocks:
            for key in [k for k in m.keys() if k not in same]:
                low, high = m.ci.get(key) or (None, None)
                rows.append({"dataset": dataset_name(e.dataset), "config": e.config, "split": e.split, "tag": tag,
                             "metric": key, "value": m.values.get(key), "ci_low": low, "ci_high": high,
                             "chance": m.chance.get(key), "support": m.support.get(key), "n_items": m.n_items,
                             "n_ties": m.n_ties, NA_KEY: m.na_reason})
    return rows


def csv_bytes(columns: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> bytes:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(columns), lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
    return buf.getvalue().encode("utf-8")


def write_png(path: Path, fig: Figure) -> None:
    """Write ``fig`` as a PNG and close it."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})  # no matplotlib version: the same bytes anywhere
    plt.close(fig)
    atomic_write_bytes(Path(path), buf.getvalue())


def plot_entry(path: Path, entry: Entry, title_suffix: str = "") -> None:
    """Write one entry's bar chart as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(4.0, 0.9 * len(shown_metrics(entry)) + 1.5), 3.6), dpi=110)
    plot_split(ax, entry, title_suffix)
    fig.tight_layout()
    write_png(path, fig)


def write_outputs(out_dir: str | os.PathLike[str], splits: Sequence[ScoredSplit], doc: EvaluationDocument) -> list[Path]:
    """Write a run's files (:data:`RUN_FILES` and a plot per entry) as one folder swapped in for ``out_dir``."""
    import pyarrow.parquet as pq

    def write(stage: Path) -> list[str]:
        entries = doc.results
        atomic_write_bytes(stage / "results.json", results_json_bytes(doc))
        buf = io.BytesIO()
        pq.write_table(scores_table(splits, entries), buf)
        atomic_write_bytes(stage / "scores.parquet", buf.getvalue())
        atomic_write_bytes(stage / "results.csv", csv_bytes(CSV_COLUMNS, csv_rows(entries)))
        atomic_write_bytes(stage / "results_wide.csv", csv_bytes(*wide_rows(entries)))
        names = list(RUN_FILES)
        for e in entries:
            plot_entry(stage / plot_name(e), e, title_suffix=f"\n{doc.provenance.model.name}")
            names.append(plot_name(e))
        return names

    return write_run_folder(out_dir, write)


def read_results(path: str | os.PathLike[str]) -> Document:
    """A results.json file (or the run folder holding one) as records, older formats upgraded; a
    :class:`ResultsError`, one line naming the file and the field, for one that is not a vlprobe results.json."""
    from .upgrade import authors_from_scores, parse_document

    path = Path(path)
    if path.is_dir():
        path = path / "results.json"
    from ..dataset.reading import RESULTS_BYTES, FileError, load_json

    try:
        doc = parse_document(load_json(path, "results file", RESULTS_BYTES), str(path))  # bounded: size, nesting
    except FileError as err:
        raise ResultsError(str(err)) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ResultsError(f"{path}: not a JSON file ({err})") from None
    except SchemaError as err:
        raise ResultsError(f"{path}: {err}") from None
    return authors_from_scores(doc, path.parent) if isinstance(doc, EvaluationDocument) else doc
