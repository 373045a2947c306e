"""What a run leaves behind, and the provenance that makes it reproducible.

``write_outputs(out_dir, run)`` writes:

* ``results.json``: one entry per (dataset, config, split) with the metric module's full output
  (every applicable metric, ``n_items``, ``n_ties``, ``chance``, ``support``, ``ci`` with
  ``--bootstrap``, ``per_tag``), plus ``provenance``: model id and resolved revision, family,
  dtype, device, preprocessing, tie policy and the other settings, package versions, dataset
  fingerprints, the command line and the time;
* ``scores.parquet``: one row per item: ``dataset``, ``config``, ``split``, ``id``, ``scores``
  (m x n), ``gold`` (m x n), ``probabilities`` (m x n, null when the scorer gives none),
  ``texts``, ``tags``;
* ``results.csv``: the long table, one row per (dataset, config, split, tag, metric), with the CI
  bounds, the chance level, the support and the tie count (tag is empty for the whole config);
* ``plot_<dataset>_<config>_<split>.png``: a bar per metric with its CI and its chance level.

All files are written to a temporary name and renamed, so a reader never sees half a file.
"""

from __future__ import annotations

import csv
import io
import json
import os
import platform
import re
import sys
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .items import Item

# Display order of the metrics (any other key the metric module returns follows).
METRIC_ORDER = ("acc_r", "text", "image", "group", "sentence_acc", "set_acc", "set_error", "auroc",
                "acc", "p_c", "p_f", "min_p")
_PACKAGES = ("vlprobe", "torch", "transformers", "datasets", "evaluate", "accelerate", "huggingface_hub",
             "numpy", "pillow", "tokenizers")


@dataclass
class Unit:
    """One evaluated (dataset, config, split): its items, their matrices and the metric output."""

    dataset: str
    config: str
    split: str
    items: list[Item]
    scores: list[np.ndarray] = field(default_factory=list)
    probabilities: list[np.ndarray] | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)  # fingerprint, revision, rows...

    @property
    def name(self) -> str:
        return f"{benchmark_name(self.dataset)}/{self.config}/{self.split}"


def benchmark_name(dataset: str) -> str:
    """``facebook/winoground`` -> ``winoground``; ``./travlr`` -> ``travlr``."""
    return Path(str(dataset).rstrip("/")).name.lower() or str(dataset)


def package_versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def environment() -> dict[str, Any]:
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "packages": package_versions(),
    }


def metric_keys(metrics: dict[str, Any]) -> list[str]:
    """The scalar metrics present in a metric result, in display order."""
    skip = {"n_items", "n_ties", "chance", "support", "ci", "per_tag"}
    keys = [k for k in METRIC_ORDER if k in metrics]
    keys += [k for k, v in metrics.items() if k not in keys and k not in skip and isinstance(v, (int, float))]
    return keys


# ---- writers ------------------------------------------------------------------------------------

def _atomic_write_bytes(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return _jsonable(obj.item())
    if isinstance(obj, float) and not np.isfinite(obj):
        return None  # JSON has no NaN
    if isinstance(obj, Path):
        return str(obj)
    return obj


def results_document(units: Sequence[Unit], provenance: dict[str, Any]) -> dict[str, Any]:
    return {
        "format": "vlprobe-results/1",
        "provenance": provenance,
        "results": [
            {
                "benchmark": benchmark_name(u.dataset),
                "dataset": u.dataset,
                "config": u.config,
                "split": u.split,
                "data": u.data,
                "metrics": u.metrics,
            }
            for u in units
        ],
    }


def write_results_json(path: Path, units: Sequence[Unit], provenance: dict[str, Any]) -> None:
    doc = _jsonable(results_document(units, provenance))
    _atomic_write_bytes(path, (json.dumps(doc, indent=2, allow_nan=False) + "\n").encode("utf-8"))


def write_scores_parquet(path: Path, units: Sequence[Unit]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols: dict[str, list[Any]] = {k: [] for k in ("dataset", "config", "split", "id", "scores", "gold",
                                                   "probabilities", "texts", "tags")}
    for u in units:
        probs = u.probabilities or [None] * len(u.items)
        for item, s, p in zip(u.items, u.scores, probs):
            cols["dataset"].append(u.dataset)
            cols["config"].append(u.config)
            cols["split"].append(u.split)
            cols["id"].append(item.id)
            cols["scores"].append(np.asarray(s, dtype=np.float32).tolist())
            cols["gold"].append(item.gold.tolist())
            cols["probabilities"].append(None if p is None else np.asarray(p, dtype=np.float32).tolist())
            cols["texts"].append(list(item.texts))
            cols["tags"].append(list(item.tags))
    matrix = pa.list_(pa.list_(pa.float32()))
    schema = pa.schema([
        ("dataset", pa.string()), ("config", pa.string()), ("split", pa.string()), ("id", pa.string()),
        ("scores", matrix), ("gold", pa.list_(pa.list_(pa.bool_()))), ("probabilities", matrix),
        ("texts", pa.list_(pa.string())), ("tags", pa.list_(pa.string())),
    ])
    table = pa.Table.from_pydict(cols, schema=schema)
    buf = io.BytesIO()
    pq.write_table(table, buf)
    _atomic_write_bytes(path, buf.getvalue())


CSV_COLUMNS = ("dataset", "config", "split", "tag", "metric", "value", "ci_low", "ci_high", "chance", "support",
               "n_items", "n_ties")


def csv_rows(units: Sequence[Unit]) -> list[dict[str, Any]]:
    rows = []
    for u in units:
        blocks = [("", u.metrics)] + sorted((u.metrics.get("per_tag") or {}).items())
        for tag, m in blocks:
            for key in metric_keys(m):
                ci = (m.get("ci") or {}).get(key) or [None, None]
                rows.append({
                    "dataset": benchmark_name(u.dataset), "config": u.config, "split": u.split, "tag": tag,
                    "metric": key, "value": m.get(key), "ci_low": ci[0], "ci_high": ci[1],
                    "chance": (m.get("chance") or {}).get(key), "support": (m.get("support") or {}).get(key),
                    "n_items": m.get("n_items"), "n_ties": m.get("n_ties"),
                })
    return rows


def write_results_csv(path: Path, units: Sequence[Unit]) -> None:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in csv_rows(units):
        writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
    _atomic_write_bytes(path, buf.getvalue().encode("utf-8"))


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "x"


def plot_unit(path: Path, unit: Unit, title_suffix: str = "") -> None:
    """A bar per metric (in %), CI error bars when bootstrapped, a dashed chance line per bar."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    m = unit.metrics
    keys = [k for k in metric_keys(m) if m.get(k) is not None and np.isfinite(m.get(k))]
    values = np.array([m[k] for k in keys], dtype=float) * 100
    fig, ax = plt.subplots(figsize=(max(4.0, 0.9 * len(keys) + 1.5), 3.6), dpi=110)
    x = np.arange(len(keys))
    ci = m.get("ci") or {}
    yerr = None
    if ci:
        lo = np.array([(ci.get(k) or [m[k], m[k]])[0] for k in keys], dtype=float) * 100
        hi = np.array([(ci.get(k) or [m[k], m[k]])[1] for k in keys], dtype=float) * 100
        yerr = np.vstack([np.clip(values - lo, 0, None), np.clip(hi - values, 0, None)])
    ax.bar(x, values, color="#4c78a8", yerr=yerr, capsize=4, label="score" + (" (95% CI)" if ci else ""))
    chance = m.get("chance") or {}
    for i, k in enumerate(keys):
        if chance.get(k) is not None:
            ax.hlines(chance[k] * 100, i - 0.45, i + 0.45, colors="#d62728", linestyles="dashed",
                      label="chance" if i == 0 else None)
    ax.set_xticks(x, keys, rotation=30, ha="right")
    ax.set_ylim(0, 100)
    ax.set_ylabel("%")
    ax.set_title(f"{unit.name} (n={m.get('n_items', len(unit.items))}){title_suffix}", fontsize=9)
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    _atomic_write_bytes(path, buf.getvalue())


def plot_name(unit: Unit) -> str:
    return f"plot_{_slug(benchmark_name(unit.dataset))}_{_slug(unit.config)}_{_slug(unit.split)}.png"


def write_outputs(out_dir: str | os.PathLike, units: Sequence[Unit], provenance: dict[str, Any]) -> list[Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "results.json", out / "scores.parquet", out / "results.csv"]
    write_results_json(written[0], units, provenance)
    write_scores_parquet(written[1], units)
    write_results_csv(written[2], units)
    model = provenance.get("model", {}).get("model_id", "")
    for u in units:
        path = out / plot_name(u)
        plot_unit(path, u, title_suffix=f"\n{model}" if model else "")
        written.append(path)
    return written


# ---- the table printed at the end of a run --------------------------------------------------------

def format_table(units: Sequence[Unit]) -> str:
    """A plain-text table: one row per (dataset, config, split), value% [CI] per metric, chance below."""
    keys: list[str] = []
    for u in units:
        keys += [k for k in metric_keys(u.metrics) if k not in keys]
    keys = [k for k in METRIC_ORDER if k in keys] + [k for k in keys if k not in METRIC_ORDER]
    header = ["dataset/config/split", "n", "ties"] + keys
    rows = []
    for u in units:
        m = u.metrics
        ci = m.get("ci") or {}
        cells = [u.name, str(m.get("n_items", "")), str(m.get("n_ties", ""))]
        for k in keys:
            v = m.get(k)
            if v is None:
                cells.append("-")
                continue
            cell = f"{100 * v:.1f}"
            if k in ci and ci[k] is not None:
                cell += f" [{100 * ci[k][0]:.1f},{100 * ci[k][1]:.1f}]"
            cells.append(cell)
        rows.append(cells)
        chance = m.get("chance") or {}
        rows.append(["  chance", "", ""] + [f"{100 * chance[k]:.1f}" if chance.get(k) is not None else "" for k in keys])
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(lines)


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
