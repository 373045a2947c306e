"""What a run leaves behind, and the provenance that makes it reproducible.

``write_outputs(out_dir, splits, provenance, summary)`` writes:

* ``results.json`` (``format: vlprobe-results/2``): one entry per (dataset, config, split) with
  ``benchmark`` (the registered benchmark the dataset records in its vlprobe.yaml, null for a
  dataset of the user's own), ``dataset``, ``config``, ``split``, ``shape`` (the items' m x n, null
  when mixed), ``data`` and the metric module's full output (every applicable metric, ``n_items``,
  ``n_ties``, ``chance``, ``support``, ``ci`` with ``--bootstrap``, ``per_tag``); where the run's tie
  policy is not the benchmark's authors' rule, ``authors_rule``: the same metrics under that rule
  (``{"ties", "metrics"}``, no CI); ``summary``: the papers' aggregates (:mod:`vlprobe.summary`);
  plus ``provenance``: model id and resolved revision, family, dtype, device, preprocessing, tie
  policy and the other settings, package versions, dataset fingerprints, the command line and the
  time. Files of format 1 (or none) are read as before: their ``benchmark`` was the dataset's folder
  or Hub name (:func:`entry_benchmark`);
* ``scores.parquet``: one row per item: ``dataset``, ``config``, ``split``, ``id``, ``scores``
  (m x n), ``gold`` (m x n), ``probabilities`` (m x n, null when the scorer gives none),
  ``texts``, ``tags``;
* ``results.csv``: the long table, one row per (dataset, config, split, tag, metric), one name per
  quantity for the items' shape (:func:`vlprobe.summary.metric_synonyms`), with the CI
  bounds, the chance level, the support and the tie count (tag is empty for the whole config),
  and ``na_reason``: why the value is empty where every item tied (see below);
* ``plot_<dataset>_<config>_<split>.png``: a bar per metric with its CI and its chance level.

Not available: where every item of a split (or of a tag) tied, for instance because the model's
truncation made its texts identical, its metrics are not shown as numbers: each is None (null in
results.json, empty in results.csv) and ``metrics["na_reason"]`` says why
(``"100/100 items tied: texts identical after truncation to 48 tokens"``); tables print
``N/A (<reason>)`` (:func:`na_text`). A tie still counts as the tie policy says in every number
that is shown. ``data["truncation"]`` records the counts (and a one-line ``warning`` where only
some items collapsed).

The files are written into a temporary folder beside ``out_dir``, which is then swapped in (the old
folder moved aside and removed), so a folder always holds one run's files: never the new
``results.json`` beside the old ``scores.parquet`` (:mod:`vlprobe.run_folder`, whose
:func:`check_output_dir` and :func:`write_run_folder` are re-exported here). :func:`check_output_dir`
says, before any scoring starts, whether a folder can be written that way.

Shared display helpers live here too, for the CLI, the report and the Space: :data:`METRIC_ORDER`,
:func:`pct` (percent formatting) and :func:`bar_chart` (bars with CIs and chance lines); and the one
function that names the benchmark of a results entry, :func:`entry_benchmark`.
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
from collections.abc import Sequence as _Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from . import summary
from .benchmarks import METRIC_ORDER, by_old_name, find
from .run_folder import check_output_dir, write_run_folder  # noqa: F401  (re-exported)
from .summary import dataset_name  # noqa: F401  (re-exported: the CLI and the engine name datasets by it)

RESULTS_FORMAT = "vlprobe-results/2"  # 2: an entry's "benchmark" is the one its dataset records (or null)
_PACKAGES = ("vlprobe", "torch", "transformers", "datasets", "evaluate", "accelerate", "huggingface_hub",
             "numpy", "pillow", "tokenizers")
# What a run writes into its folder; a folder holding anything else is not overwritten.
RUN_FILES = ("results.json", "scores.parquet", "results.csv")


@dataclass(frozen=True, slots=True)
class ScoredItem:
    """What a run keeps of an item once it is scored: no images, only what the outputs need.
    Kept for every row of a run, so kept small: no per-object dict, repeated texts and tags
    stored once (interned strings; one shared tuple per distinct tag set), one shared read-only
    array per distinct gold matrix. Its score matrix is kept apart, stacked with its chunk's
    (:class:`ScoreMatrices`)."""

    id: str
    texts: tuple[str, ...]
    gold: np.ndarray
    tags: tuple[str, ...] = ()

    @classmethod
    def of(cls, item: Any) -> "ScoredItem":
        return cls(id=item.id, texts=tuple(sys.intern(t) for t in item.texts), gold=_shared_gold(item.gold),
                   tags=_shared_tags(item.tags))

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(self.gold.shape)  # type: ignore[return-value]


@dataclass
class ScoredSplit:
    """One evaluated (dataset, config, split): its items (as :class:`ScoredItem`, or full
    :class:`~vlprobe.items.Item` objects), their score matrices and the metric output."""

    dataset: str
    config: str
    split: str
    items: list[Any]
    benchmark: str | None = None  # the registered benchmark the dataset records (vlprobe.benchmarks), or None
    # per item an m x n matrix: a list of arrays, or (what evaluate keeps) a ScoreMatrices
    scores: Sequence[np.ndarray] = field(default_factory=list)
    probabilities: Sequence[np.ndarray] | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)  # fingerprint, revision, rows...
    # Positions of the items where a gold and a non-gold text are one input to the model (the same
    # token ids after its tokenization and truncation), so they tie exactly; None when the scorer could
    # not say (see vlprobe.scorers.base.Scorer.seen_texts). ``truncated``: those of them whose texts
    # differ only past the truncation limit.
    collapsed: list[int] | None = None
    truncated: list[int] | None = None
    text_limit: int | None = None  # the scorer's text length limit, in tokens
    # The metrics under the benchmark's own tie rule where the run's policy is another: {"ties", "metrics"}
    authors_rule: dict[str, Any] | None = None

    @property
    def name(self) -> str:
        return f"{dataset_name(self.dataset)}/{self.config}/{self.split}"

    @property
    def shape(self) -> tuple[int, int] | None:
        """The items' m x n shape when they all share one, else None."""
        shapes = {tuple(np.shape(it.gold)) for it in self.items}
        return shapes.pop() if len(shapes) == 1 else None  # type: ignore[return-value]


class ScoreMatrices(_Sequence):
    """Per-item matrices (scores or probabilities) kept as a few stacked arrays: consecutive items
    of one shape share one ``(k, m, n)`` block, added a chunk at a time (:meth:`extend`). A
    sequence of ``m x n`` arrays, as a list of them would be (``scores[i]`` is a view into its
    block), without a numpy array per item: a 1 x 2 float32 matrix is 8 bytes of data, its own
    ndarray around 200 bytes more. :meth:`stacked` gives all of them as one ``(N, m, n)`` array
    when they share a shape."""

    def __init__(self, matrices: Any = (), dtype: Any = np.float32) -> None:
        self.dtype = np.dtype(dtype)
        self._blocks: list[np.ndarray] = []
        self._ends: list[int] = []  # items up to the end of each block
        self.extend(matrices)

    def extend(self, matrices: Any) -> None:
        """Append ``matrices`` (a sequence of m x n arrays, or one (k, m, n) array)."""
        run: list[np.ndarray] = []
        for matrix in matrices:
            arr = np.asarray(matrix, dtype=self.dtype)
            if arr.ndim != 2:
                raise ValueError(f"each item needs an m x n matrix, got shape {arr.shape}")
            if run and arr.shape != run[0].shape:
                self._append(np.stack(run))
                run = []
            run.append(arr)
        if run:
            self._append(np.stack(run))

    def _append(self, block: np.ndarray) -> None:
        self._blocks.append(block)
        self._ends.append(len(self) + len(block))

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        i = int(index)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("ScoreMatrices index out of range")
        k = int(np.searchsorted(self._ends, i, side="right"))
        return self._blocks[k][i - (self._ends[k - 1] if k else 0)]

    def __iter__(self) -> Any:
        for block in self._blocks:
            yield from block

    @property
    def nbytes(self) -> int:
        return sum(b.nbytes for b in self._blocks)

    def stacked(self) -> np.ndarray | None:
        """One ``(N, m, n)`` array of every matrix (a copy), or None when their shapes differ."""
        if not self._blocks or any(b.shape[1:] != self._blocks[0].shape[1:] for b in self._blocks):
            return None
        return np.concatenate(self._blocks) if len(self._blocks) > 1 else self._blocks[0].copy()

    def __repr__(self) -> str:
        shapes = sorted({b.shape[1:] for b in self._blocks})
        return f"<ScoreMatrices: {len(self)} matrices of shape(s) {shapes}, {self.dtype}>"


_GOLDS: dict[tuple, np.ndarray] = {}
_TAGS: dict[tuple, tuple] = {}


def _shared_tags(tags: Any) -> tuple[str, ...]:
    """One tuple per distinct tag set (a run has a handful), of interned strings."""
    key = tuple(sys.intern(str(t)) for t in tags)
    shared = _TAGS.get(key)
    if shared is None:
        shared = key
        if len(_TAGS) < 10_000:
            _TAGS[key] = shared
    return shared


def _shared_gold(gold: np.ndarray) -> np.ndarray:
    """One read-only array per distinct gold matrix (a run has a handful: [[1, 0]], [[0, 1]]...)."""
    gold = np.asarray(gold, dtype=bool)
    key = (gold.shape, gold.tobytes())
    shared = _GOLDS.get(key)
    if shared is None:
        shared = np.array(gold, dtype=bool, copy=True)
        shared.setflags(write=False)
        if len(_GOLDS) < 10_000:
            _GOLDS[key] = shared
    return shared


def records_benchmark(fmt: str | None) -> bool:
    """Whether a results.json of format ``fmt`` records each entry's benchmark (format 2 on); in a
    file of format 1, or of none, an entry's ``benchmark`` was its dataset's folder or Hub name."""
    return fmt is not None and not str(fmt).endswith("/1")


def entry_benchmark(entry: dict[str, Any], fmt: str | None = RESULTS_FORMAT) -> str | None:
    """The registered benchmark of a results.json entry, the one rule for it: in a file of the
    current format, the ``benchmark`` its dataset recorded (null: a dataset of the user's own; a
    name this vlprobe does not know: None too); in a file of format 1 (or none), written before
    datasets recorded it, the benchmark its dataset's name meant (``valse``, ``facebook/winoground``)."""
    if not records_benchmark(fmt):
        old = by_old_name(str(entry.get("dataset") or entry.get("benchmark") or ""))
        return old.name if old is not None else None
    bench = find(entry.get("benchmark")) if isinstance(entry.get("benchmark"), str) else None
    return bench.name if bench is not None else None


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


NA_KEY = "na_reason"


def na_text(metrics: dict[str, Any] | None) -> str:
    """``"N/A (<reason>)"`` for a result whose metrics are not available (every item tied), else ""."""
    reason = (metrics or {}).get(NA_KEY)
    return f"N/A ({reason})" if reason else ""


def truncation_warning(split: "ScoredSplit") -> str:
    """The one-line warning of a split where some items' texts collapsed, else ""."""
    return str((split.data.get("truncation") or {}).get("warning") or "")


def metric_keys(metrics: dict[str, Any]) -> list[str]:
    """The scalar metrics present in a metric result, in display order (with a not-available
    result, the metrics it would have had)."""
    skip = {"n_items", "n_ties", "chance", "support", "ci", "per_tag", NA_KEY}
    keys = [k for k in METRIC_ORDER if k in metrics]
    na = bool(metrics.get(NA_KEY))
    keys += [k for k, v in metrics.items() if k not in keys and k not in skip
             and (isinstance(v, (int, float)) or (na and v is None))]
    return keys


def pct(value: Any, digits: int = 1) -> str:
    """A fraction as a percentage (``0.4567`` -> ``"45.7"``); ``""`` for None or NaN."""
    if value is None:
        return ""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    return "" if not np.isfinite(v) else f"{100 * v:.{digits}f}"


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


def result_entries(splits: Sequence[ScoredSplit]) -> list[dict[str, Any]]:
    """The ``results`` list of results.json: one entry per (dataset, config, split)."""
    out = []
    for u in splits:
        entry = {
            "benchmark": u.benchmark,
            "dataset": u.dataset,
            "config": u.config,
            "split": u.split,
            "shape": list(u.shape) if u.shape else None,
            "data": u.data,
            "metrics": u.metrics,
        }
        if u.authors_rule is not None:
            entry["authors_rule"] = u.authors_rule
        out.append(entry)
    return out


def results_document(splits: Sequence[ScoredSplit], provenance: dict[str, Any],
                     summary: dict[str, Any] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "format": RESULTS_FORMAT,
        "provenance": provenance,
        "results": result_entries(splits),
    }
    if summary:
        doc["summary"] = summary
    return _jsonable(doc)


def results_json_bytes(doc: dict[str, Any]) -> bytes:
    return (json.dumps(_jsonable(doc), indent=2, allow_nan=False) + "\n").encode("utf-8")


def write_results_json(path: Path, splits: Sequence[ScoredSplit], provenance: dict[str, Any],
                       summary: dict[str, Any] | None = None) -> None:
    _atomic_write_bytes(Path(path), results_json_bytes(results_document(splits, provenance, summary)))


SCORE_COLUMNS = ("dataset", "config", "split", "id", "scores", "gold", "probabilities", "texts", "tags")


def scores_table(splits: Sequence[ScoredSplit]) -> Any:
    """The per-item scores as a ``pyarrow.Table`` (the content of scores.parquet)."""
    import pyarrow as pa

    cols: dict[str, list[Any]] = {k: [] for k in SCORE_COLUMNS}
    for u in splits:
        probs = u.probabilities or [None] * len(u.items)
        for item, s, p in zip(u.items, u.scores, probs):
            cols["dataset"].append(u.dataset)
            cols["config"].append(u.config)
            cols["split"].append(u.split)
            cols["id"].append(item.id)
            cols["scores"].append(np.asarray(s, dtype=np.float32).tolist())
            cols["gold"].append(np.asarray(item.gold).tolist())
            cols["probabilities"].append(None if p is None else np.asarray(p, dtype=np.float32).tolist())
            cols["texts"].append(list(item.texts))
            cols["tags"].append(list(item.tags))
    matrix = pa.list_(pa.list_(pa.float32()))
    schema = pa.schema([
        ("dataset", pa.string()), ("config", pa.string()), ("split", pa.string()), ("id", pa.string()),
        ("scores", matrix), ("gold", pa.list_(pa.list_(pa.bool_()))), ("probabilities", matrix),
        ("texts", pa.list_(pa.string())), ("tags", pa.list_(pa.string())),
    ])
    return pa.Table.from_pydict(cols, schema=schema)


def write_scores_parquet(path: Path, splits: Sequence[ScoredSplit]) -> None:
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(scores_table(splits), buf)
    _atomic_write_bytes(Path(path), buf.getvalue())


CSV_COLUMNS = ("dataset", "config", "split", "tag", "metric", "value", "ci_low", "ci_high", "chance", "support",
               "n_items", "n_ties", "na_reason")


def csv_rows(splits: Sequence[ScoredSplit]) -> list[dict[str, Any]]:
    """results.csv's rows: per split and per tag, each metric under one name (a synonym for this item shape,
    :func:`vlprobe.summary.metric_synonyms`, is left out: ``text`` = ``set_acc`` = ``sentence_acc`` = ``acc_r``
    for 1 x 2 items is the one row ``acc_r``)."""
    rows = []
    for u in splits:
        same = summary.metric_synonyms(u.benchmark, u.shape)
        blocks = [("", u.metrics)] + sorted((u.metrics.get("per_tag") or {}).items())
        for tag, m in blocks:
            for key in [k for k in metric_keys(m) if k not in same]:
                ci = (m.get("ci") or {}).get(key) or [None, None]
                rows.append({
                    "dataset": dataset_name(u.dataset), "config": u.config, "split": u.split, "tag": tag,
                    "metric": key, "value": m.get(key), "ci_low": ci[0], "ci_high": ci[1],
                    "chance": (m.get("chance") or {}).get(key), "support": (m.get("support") or {}).get(key),
                    "n_items": m.get("n_items"), "n_ties": m.get("n_ties"), "na_reason": m.get(NA_KEY),
                })
    return rows


def write_results_csv(path: Path, splits: Sequence[ScoredSplit]) -> None:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in csv_rows(splits):
        writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
    _atomic_write_bytes(Path(path), buf.getvalue().encode("utf-8"))


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "x"


# ---- plots --------------------------------------------------------------------------------------

def bar_chart(ax: Any, labels: Sequence[str], values: Sequence[float | None], *,
              ci: Sequence[Sequence[float] | None] | None = None, chance: Sequence[float | None] | None = None,
              color: str = "#4c78a8", label: str = "score", confidence: float | None = None) -> None:
    """Bars in % on ``ax`` (values are fractions), CI error bars where given, a dashed chance line
    over each bar that has one. The one bar chart of vlprobe: run plots, the report, the Space."""
    vals = np.array([np.nan if v is None else float(v) for v in values], dtype=float) * 100
    x = np.arange(len(labels))
    yerr = None
    if ci is not None and any(c is not None for c in ci):
        lo = np.array([(c[0] if c is not None else np.nan) for c in ci], dtype=float) * 100
        hi = np.array([(c[1] if c is not None else np.nan) for c in ci], dtype=float) * 100
        lo, hi = np.where(np.isnan(lo), vals, lo), np.where(np.isnan(hi), vals, hi)
        yerr = np.vstack([np.clip(vals - lo, 0, None), np.clip(hi - vals, 0, None)])
        level = f" ({100 * confidence:.0f}% CI)" if confidence else " (95% CI)"
        label += level
    ax.bar(x, np.nan_to_num(vals), color=color, yerr=yerr, capsize=4, label=label)
    first = True
    for i, c in enumerate(chance or []):
        if c is not None and np.isfinite(c):
            ax.hlines(c * 100, i - 0.45, i + 0.45, colors="#d62728", linestyles="dashed",
                      label="chance" if first else None)
            first = False
    ax.set_xticks(x, list(labels), rotation=30, ha="right")
    ax.set_ylim(0, 100)
    ax.set_ylabel("%")


def shown_metrics(split: ScoredSplit) -> list[str]:
    """The metrics a split's table row and its plot show: those meaningful for its benchmark and
    item shape (:func:`vlprobe.summary.display_metrics`; a 1 x 2 item shows acc_r, not the set
    metrics that equal it)."""
    available = metric_keys(split.metrics)
    keys = summary.display_metrics(split.benchmark, split.shape, available, (split.data or {}).get("modality"))
    return [k for k in keys if k in available] or available


def plot_split(ax: Any, split: ScoredSplit, title_suffix: str = "") -> None:
    """One split's bar per metric (in %; the metrics of its table row, :func:`shown_metrics`), CI
    error bars when bootstrapped, chance per bar."""
    m = split.metrics
    keys = [k for k in shown_metrics(split) if isinstance(m.get(k), (int, float)) and np.isfinite(m.get(k))]
    ci = m.get("ci") or {}
    chance = m.get("chance") or {}
    bar_chart(ax, keys, [m[k] for k in keys], ci=[ci.get(k) for k in keys] if ci else None,
              chance=[chance.get(k) for k in keys])
    na = f"\n{na_text(m)}" if m.get(NA_KEY) else ""
    ax.set_title(f"{split.name} (n={m.get('n_items', len(split.items))}){na}{title_suffix}", fontsize=9)
    ax.legend(fontsize=7, loc="upper right")


def plot_unit(path: Path, unit: ScoredSplit, title_suffix: str = "") -> None:
    """Write one split's bar chart (see :func:`plot_split`) as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n_keys = len(shown_metrics(unit))
    fig, ax = plt.subplots(figsize=(max(4.0, 0.9 * n_keys + 1.5), 3.6), dpi=110)
    plot_split(ax, unit, title_suffix)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    _atomic_write_bytes(Path(path), buf.getvalue())


def plot_name(unit: ScoredSplit) -> str:
    return f"plot_{_slug(dataset_name(unit.dataset))}_{_slug(unit.config)}_{_slug(unit.split)}.png"


# ---- the output folder, as one unit (vlprobe/run_folder.py) ----------------------------------------

def write_outputs(out_dir: str | os.PathLike, units: Sequence[ScoredSplit], provenance: dict[str, Any],
                  summary: dict[str, Any] | None = None) -> list[Path]:
    """Write a run's files into a staging folder beside ``out_dir`` and swap it in
    (:func:`write_run_folder`); returns the paths the files have in ``out_dir``."""

    def write(stage: Path) -> list[str]:
        names = list(RUN_FILES)
        write_results_json(stage / "results.json", units, provenance, summary)
        write_scores_parquet(stage / "scores.parquet", units)
        write_results_csv(stage / "results.csv", units)
        model = provenance.get("model", {}).get("model_id", "")
        for u in units:
            plot_unit(stage / plot_name(u), u, title_suffix=f"\n{model}" if model else "")
            names.append(plot_name(u))
        return names

    return write_run_folder(out_dir, write)


# ---- the table printed at the end of a run --------------------------------------------------------

def _cell(m: dict[str, Any], key: str) -> str:
    v = m.get(key)
    if v is None:
        return na_text(m) or "-"
    ci = (m.get("ci") or {}).get(key)
    return pct(v) + (f" [{pct(ci[0])},{pct(ci[1])}]" if ci is not None else "")


def format_table(units: Sequence[ScoredSplit], keys_of: Any = None) -> str:
    """A plain-text table: one row per (dataset, config, split), value% [CI] per metric, chance below.

    ``keys_of(split)`` picks the metrics shown for a split (default: every metric it has);
    consecutive splits showing the same metrics share one block with one header."""
    keys_of = keys_of or (lambda u: metric_keys(u.metrics))
    blocks: list[tuple[list[str], list[ScoredSplit]]] = []
    for u in units:
        keys = list(keys_of(u))
        if blocks and blocks[-1][0] == keys:
            blocks[-1][1].append(u)
        else:
            blocks.append((keys, [u]))
    out = []
    for keys, group in blocks:
        header = ["dataset/config/split", "n", "ties"] + keys
        rows = []
        for u in group:
            m = u.metrics
            cells = [_cell(m, k) for k in keys]
            na = na_text(m)
            if na and cells.count(na) > 1:  # the reason once, in the first cell it fills
                first = cells.index(na)
                cells = [c if c != na or i == first else "N/A" for i, c in enumerate(cells)]
            rows.append([u.name, str(m.get("n_items", "")), str(m.get("n_ties", ""))] + cells)
            chance = m.get("chance") or {}
            rows.append(["  chance", "", ""] + [pct(chance.get(k)) for k in keys])
        widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
        lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip()]
        lines.append("  ".join("-" * w for w in widths))
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        out.append("\n".join(lines))
    return "\n\n".join(out)


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
