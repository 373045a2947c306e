"""TraVLR's protocol for any model: train a probe on one modality, test on each (``vlprobe probe``).

TraVLR (Chow, Tan, Kan, EACL 2023) *trains* a model on a task with the scene given as an image, a
caption, or both, and tests it on the same or another modality, in distribution (``test_ind``) and
out of distribution (``test_ood``), scored by macro-F1 (its Table 2, Figure 12). Here the model is
frozen and a small classifier is trained on its features (the paper's "frozen pretrained
representations" setting, Appendix B); ``finetune=True`` (dual encoders) also fine-tunes a copy of
the model with a linear head on the same features, as the paper's main experiments do
(:func:`finetune_rows`; rows with ``classifier = "finetune"``).

**Features** come through :class:`vlprobe.engine.Engine`, so each unique input is computed once and
cached on disk next to ``vlprobe evaluate``'s scores (a second probe on the same model computes
nothing). Rows are read a chunk at a time and each chunk's features are appended to float32 files
in a temporary folder (:mod:`vlprobe.feature_store`), which the classifiers read a block of rows at
a time: the probe's memory does not grow with the number of rows.

* dual encoders (CLIP, SigLIP, ...): ``[u, v, u*v, |u-v|]`` with ``v`` the query's text embedding and
  ``u`` the scene's: the image embedding (image), the caption's text embedding (caption), or the
  L2-normalised sum of both (both). The text-only baseline is the text tower on
  ``query + " " + caption`` in one pass (the query first, so a short text tower's truncation cuts
  the caption, not the query; the paper's BERT baselines read caption [SEP] query).
* ITM heads (BLIP ITM, ViLT): the joint representation the matching head reads
  (:meth:`ITMScorer.pair_features`) of (image, query) / (blank image, caption + query) /
  (image, caption + query), as ``vlprobe evaluate --modality`` builds them.
* VQAScore VLMs: no probe; the zero-shot P(Yes | scene, query) > 0.5 is the prediction (the
  ``zero-shot`` rows).

**Classifier**: logistic regression (torch, full-batch L-BFGS from zeros, features standardised on
the training rows), or ``classifier="mlp"`` (one hidden layer, Adam, fixed seed). The L2 strength is
chosen among :data:`L2_GRID` by macro-F1 on the ``validation`` split of the training modality,
never on a test split.

**Transfer**: a probe trained on modality A is tested on every test modality B (zero-shot); with
``few_shot=N`` it is then trained further on N ``train`` rows of B, regularised towards its
zero-shot weights (L2-SP with the chosen strength) and tested again.

**Learning curves**: ``train_sizes`` trains on nested seeded subsets of ``train`` (same modality).

**Metric**: macro-F1 (the mean of the F1 of the true and of the false class, the paper's B.1), with
F1 per class, accuracy, a percentile bootstrap CI and chance, from :func:`vlprobe.metric.compute` on
1 x 1 items (gold ``[[1]]``/``[[0]]``, the probe's probability) when the metric has ``macro_f1``, else
from this module's own implementation of the same definitions.
"""

from __future__ import annotations

import math
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .errors import ArgumentError, DatasetError, ModelError, SettingError
from .evaluation import CHUNK_ROWS
from .feature_store import row_blocks, take_rows

MODALITIES = ("image", "caption", "both")
TEXT_ONLY = "text-only"
ZERO_SHOT = "zero-shot"
CLASSIFIERS = ("logreg", "mlp")
L2_GRID = (1e-4, 1e-3, 1e-2, 1e-1, 1.0)
TRAIN, VALIDATION = "train", "validation"
DEFAULT_DATASET = "travlr"
from .locations import DEFAULT_MODEL  # noqa: E402  (the offline default, written once)
SETTING_ORDER = (*MODALITIES, TEXT_ONLY, ZERO_SHOT)
MAX_BOOTSTRAP = 100_000  # resamples, as vlprobe.evaluate allows
# The names a probe run writes into its output folder (and the temporary files older versions left
# there): a folder holding anything else is not a probe run's, and is never replaced.
PROBE_RUN_FILE = re.compile(r"^(results\.json|results\.csv|tables\.md|learning_curve_.*\.png|\..*\.tmp\d+)$")
TRAVLR_COLUMNS = ("image", "caption", "query", "label")
TRAVLR_SHAPE = ("a TraVLR-shaped dataset: the probe needs splits 'train', 'validation' and at least one 'test*', "
                "each with columns image, caption, query and label (true/false)")
_NONE = object()


# ---- data -----------------------------------------------------------------------------------------

@dataclass
class Split:
    """One config/split: its memory-mapped rows (read a chunk at a time, images undecoded) and its
    labels, the only per-row values held in memory (captions and queries are read a chunk at a
    time too)."""

    task: str
    split: str
    labels: np.ndarray
    table: Any = None       # datasets.Dataset
    spec: Any = None
    info: dict = field(default_factory=dict)
    text_table: Any = None  # the caption and query columns, Arrow-formatted (zero-copy slices)

    def __len__(self) -> int:
        return len(self.labels)

    def chunks(self, size: int) -> list[tuple[int, int]]:
        return [(a, min(a + size, len(self))) for a in range(0, len(self), size)]

    def rows(self, start: int, stop: int) -> list[dict]:
        from .dataset_folder import read_rows

        return read_rows(self.table, start, stop)

    def images(self, start: int, stop: int) -> list:
        return [r["image"] for r in self.rows(start, stop)]

    def images_at(self, idx: Sequence[int]) -> list:
        from .dataset_folder import read_rows

        picked = self.table.select([int(i) for i in idx])
        return [r["image"] for r in read_rows(picked, 0, len(picked))]

    def texts(self, column: str, start: int = 0, stop: int | None = None) -> list[str]:
        """``caption`` or ``query`` of rows ``start:stop``."""
        stop = len(self) if stop is None else stop
        return self.text_table[start:stop].column(column).to_pylist()

    def texts_at(self, column: str, idx: Sequence[int]) -> list[str]:
        return self.text_table[[int(i) for i in idx]].column(column).to_pylist()

    def items(self, modality: str, start: int = 0, stop: int | None = None, rows: list | None = None) -> list:
        """Rows ``start:stop`` as items of ``modality`` (``rows``: those rows, if already read)."""
        stop = len(self) if stop is None else stop
        rows = self.rows(start, stop) if rows is None else rows
        return [self.spec.to_item(r, index=start + i, config=self.task, modality=modality)
                for i, r in enumerate(rows)]


def _resolve_dataset(dataset: str) -> str:
    """A folder relative to the working directory (the checkout, where `make` runs); else the folder
    of that name where `vlprobe build` puts it (``$VLPROBE_ROOT/<name>`` when set, else
    ``~/.cache/vlprobe/datasets/<name>``: :func:`vlprobe.locations.dataset_folder`), as `vlprobe
    evaluate` finds its default folders; else a Hub id."""
    from .locations import dataset_folder

    if Path(dataset).is_dir() or not str(dataset).strip():
        return str(dataset)
    built = dataset_folder(str(dataset))
    return str(built) if built.is_dir() else str(dataset)


def _resolve_model(model: Any) -> Any:
    """``models/mini-clip`` (the default) names the small CLIP vlprobe ships: that folder under the
    working directory (a clone) or ``$VLPROBE_ROOT``, else the copy inside the installed package;
    never a Hub id."""
    if not (isinstance(model, str) and model == DEFAULT_MODEL) or Path(model).is_dir():
        return model
    from .evaluation import default_model

    return default_model(os.environ.get("VLPROBE_ROOT") or Path.cwd())


def load_splits(dataset: str, configs: str | Sequence[str] = "all", *, revision: str | None = None,
                limit: int | None = None) -> dict[str, dict[str, Split]]:
    """{task: {split: Split}} for a TraVLR-shaped dataset (folder or Hub id): splits ``train``,
    ``validation`` and ``test*``; columns ``image``, ``caption``, ``query``, ``label``.

    Each split is loaded as `vlprobe evaluate` loads it (:func:`vlprobe.evaluation.load_split`: a
    memory-mapped Arrow table, the data's sha256 or Hub revision recorded); only the labels are
    read into memory here; captions, queries and images are read a chunk at a time when features
    are computed."""
    from .dataset_folder import config_splits, list_configs, list_splits
    from .evaluation import load_split
    from .spec import SpecError, find_spec

    dataset = _resolve_dataset(dataset)
    local = Path(dataset).is_dir()
    spec_error = None
    try:
        spec = find_spec(dataset)
    except SpecError as err:
        if local:  # said after the dataset's shape is checked: a folder that is not TraVLR's hears that first
            spec, spec_error = None, err
        else:
            raise DatasetError(f"dataset {dataset!r} is not a folder here and cannot be read from the Hub; run "
                               f"from the checkout that holds it, set VLPROBE_ROOT, or build one with "
                               f"`vlprobe build travlr --out DIR` and pass --dataset DIR") from None
    if local:
        from .dataset_folder import built_configs

        names = built_configs(dataset)
        if not names:
            raise DatasetError(f"dataset folder {dataset} has no parquet files listed by its card: it has not been "
                               f"built yet (`vlprobe build {Path(dataset).name}`), or it is not a dataset folder")
    else:
        try:
            names = list_configs(dataset, revision)
        except Exception as err:
            raise DatasetError(f"cannot read dataset {dataset!r}: {type(err).__name__}: {err}. Build it with "
                               f"`vlprobe build travlr` or pass a dataset folder") from None
    wanted = names if configs in (None, "", "all", "*") else (
        [c.strip() for c in configs.split(",") if c.strip()] if isinstance(configs, str) else list(configs))
    unknown = [c for c in wanted if c not in names]
    if unknown:
        raise DatasetError(f"unknown config(s) {unknown} of {dataset}; its configs are: {', '.join(names)}")
    out: dict[str, dict[str, Split]] = {}
    for task in wanted:
        try:
            split_names = config_splits(dataset, task) if local else list_splits(dataset, task, revision)
            split_names = sorted(split_names, key=lambda name: name.startswith("test"))  # train, validation, tests
        except Exception as err:
            raise DatasetError(f"cannot read dataset {dataset!r} config {task!r}: {type(err).__name__}: {err}") from None
        if any(s not in split_names for s in (TRAIN, VALIDATION)) or not any(s.startswith("test") for s in split_names):
            raise DatasetError(f"{dataset} config {task!r} has splits {split_names}, so it is not {TRAVLR_SHAPE}")
        out[task] = {}
        for split in split_names:
            ds, info = load_split(dataset, task, split, revision)
            missing = [c for c in TRAVLR_COLUMNS if c not in ds.column_names]
            if missing:
                raise DatasetError(f"{dataset} config {task!r} split {split!r} has columns {sorted(ds.column_names)}, "
                                   f"without {', '.join(missing)}, so it is not {TRAVLR_SHAPE}")
            n_rows = len(ds)
            if limit is not None and limit < n_rows:
                ds = ds.select(range(limit))
            if not len(ds):
                raise DatasetError(f"{dataset} config {task!r} split {split!r} has no rows")
            label = ds.select_columns(["label"]).with_format("arrow")[:].column("label").to_pylist()
            odd = next((v for v in label if v not in (True, False)), _NONE)  # 0 and 1 compare equal to them
            if odd is not _NONE:
                raise DatasetError(f"{dataset} config {task!r} split {split!r}: column 'label' holds {odd!r}; the "
                                   f"probe needs true/false labels (bool, or 0/1)")
            labels = np.array([bool(v) for v in label])
            out[task][split] = Split(task, split, labels, ds, spec,
                                     {**info, "rows_in_split": n_rows, "rows_used": len(ds)},
                                     text_table=ds.select_columns(["caption", "query"]).with_format("arrow"))
    if spec_error is not None:
        raise spec_error
    return out


# ---- features ---------------------------------------------------------------------------------------

def _concat(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.concatenate([u, v, u * v, np.abs(u - v)], axis=1).astype(np.float32)


def _normalise(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def text_only_input(caption: str, query: str) -> str:
    return f"{query} {caption}"


def extract_features(engine: Any, data: dict[str, dict[str, Split]], settings: Sequence[str],
                     chunk_size: int = CHUNK_ROWS, store: Any = None) -> tuple[dict, dict]:
    """{(task, split, setting): features} and engine stats. Features are a (N, d) float32
    :class:`~vlprobe.feature_store.FeatureFile` in ``store`` (a temporary
    :class:`~vlprobe.feature_store.FeatureStore` when None), or, for VQAScore, P(Yes) as an (N,) array.

    ``settings``: modalities among :data:`MODALITIES` and optionally :data:`TEXT_ONLY`. Rows are
    read, decoded and encoded ``chunk_size`` at a time and each chunk's features are appended to
    their files: memory holds one chunk, whatever the number of rows."""
    from .feature_store import FeatureStore
    from .scorers.base import DualScorer

    splits = [s for by_split in data.values() for s in by_split.values()]
    scorer = engine.scorer
    store = store if store is not None else FeatureStore()
    if isinstance(scorer, DualScorer):
        return _dual_features(engine, splits, settings, chunk_size, store)
    if hasattr(scorer, "pair_features"):
        return _pair_features(engine, splits, [s for s in settings if s in MODALITIES], chunk_size, store)
    if getattr(scorer, "family", "") == "vqascore":
        return _zero_shot(engine, splits, [s for s in settings if s in MODALITIES], chunk_size)
    raise ModelError(f"model {scorer.model_id!r} (family {scorer.family!r}) exposes no features the probe can use: "
                     f"it needs a dual encoder, an ITM head (pair_features) or a VQAScore VLM")


def _add_stats(total: dict, st: dict) -> dict:
    """Engine stats summed over chunks (counts and seconds add; anything else: the last value)."""
    for key, value in st.items():
        total[key] = total.get(key, 0) + value if isinstance(value, (int, float)) and not isinstance(value, bool) else value
    return total


def _writers(store: Any, s: Split, settings: Sequence[str]) -> dict[str, Any]:
    return {m: store.writer(f"{s.task}-{s.split}-{m}", len(s)) for m in settings}


def _dual_features(engine: Any, splits: list[Split], settings: Sequence[str], chunk_size: int,
                   store: Any) -> tuple[dict, dict]:
    """A chunk of rows at a time: its images and texts embedded (each unique input once: the engine's
    cache carries them across chunks), the settings' features composed and appended to their files."""
    stats: dict[str, Any] = {"images": {}, "texts": {}}
    need_images = any(m in ("image", "both") for m in settings)
    need_captions = any(m in ("caption", "both") for m in settings)
    out = {}
    for s in splits:
        writers = _writers(store, s, settings)
        for a, b in s.chunks(chunk_size):
            if need_images:
                img, st = engine.embed_images(s.images(a, b))
                _add_stats(stats["images"], st)
            queries = s.texts("query", a, b)
            texts = list(queries)
            captions = s.texts("caption", a, b) if need_captions or TEXT_ONLY in settings else []
            if need_captions:
                texts += captions
            if TEXT_ONLY in settings:
                texts += [text_only_input(c, q) for c, q in zip(captions, queries)]
            emb, st = engine.embed_texts(texts)
            _add_stats(stats["texts"], st)
            n = b - a
            q = emb[:n]
            cap = emb[n:2 * n] if need_captions else None
            for m, w in writers.items():
                if m == "image":
                    w.write(_concat(img, q))
                elif m == "caption":
                    w.write(_concat(cap, q))
                elif m == "both":
                    w.write(_concat(_normalise(img + cap), q))
                elif m == TEXT_ONLY:
                    w.write(emb[len(emb) - n:])
        out.update({(s.task, s.split, m): w.close() for m, w in writers.items()})
    return out, stats


def _pair_features(engine: Any, splits: list[Split], modalities: Sequence[str], chunk_size: int,
                   store: Any) -> tuple[dict, dict]:
    stats: dict[str, Any] = {}
    out = {}
    for s in splits:
        writers = _writers(store, s, modalities)
        for a, b in s.chunks(chunk_size):
            rows = s.rows(a, b)
            for m, w in writers.items():
                items = s.items(m, a, b, rows)
                # the query (with the caption in front for caption/both)
                feats, st = engine.pair_features([it.images[0] for it in items], [it.texts[0] for it in items])
                w.write(feats)
                _add_stats(stats, st)
        out.update({(s.task, s.split, m): w.close() for m, w in writers.items()})
    return out, {"pairs": stats}


def _zero_shot(engine: Any, splits: list[Split], modalities: Sequence[str], chunk_size: int) -> tuple[dict, dict]:
    """P(Yes | scene, query) per test row and modality: one float per row, kept in memory."""
    from .items import Item

    stats: dict[str, Any] = {}
    out = {}
    for s in splits:
        if not s.split.startswith("test"):
            continue
        for m in modalities:
            parts = []
            for a, b in s.chunks(chunk_size):
                # 1 image x the query alone (the spec's first text): the gold cell is not read here
                batch = [Item(it.id, it.images, it.texts[:1], np.ones((1, 1), bool), config=it.config)
                         for it in s.items(m, a, b)]
                res = engine.score(batch)
                if res.probabilities is None:
                    raise ModelError(f"model {engine.scorer.model_id!r} gives no match probabilities; the zero-shot "
                                     f"row needs them")
                # the query's P(Yes) normalised over Yes/No
                parts.append(np.array([p[0, 0] for p in res.probabilities], dtype=np.float32))
                _add_stats(stats, res.stats)
            out[(s.task, s.split, m)] = np.concatenate(parts)
    return out, {"pairs": stats}


# ---- classifiers ------------------------------------------------------------------------------------

@dataclass
class Probe:
    """A trained classifier with its feature standardisation."""

    kind: str
    mean: np.ndarray
    std: np.ndarray
    params: dict
    l2: float

    def logits(self, x: Any) -> np.ndarray:
        """Logits for the rows of ``x`` (an array or a feature file), a block of rows at a time."""
        import torch

        parts = []
        with torch.no_grad():
            for block in row_blocks(x):
                parts.append(_forward(self.kind, self.params, _standardised(block, self.mean, self.std)).numpy())
        return np.concatenate(parts) if parts else np.empty(0, np.float32)

    def proba(self, x: Any) -> np.ndarray:
        return 0.5 * (1.0 + np.tanh(0.5 * self.logits(x).astype(np.float64)))  # the logistic, without overflow


def _standardised(block: np.ndarray, mean: np.ndarray, std: np.ndarray) -> Any:
    """A block of rows standardised in float32, as every solver sees the features."""
    import torch

    return torch.from_numpy(((block - mean) / std).astype(np.float32))


def _moments(x: Any) -> tuple[np.ndarray, np.ndarray]:
    """Per-feature mean and standard deviation (+1e-6), accumulated in float64 over blocks of rows
    (two passes: the mean, then the squared deviations from it); returned as float32."""
    n = len(x)
    total = None
    for block in row_blocks(x):
        part = block.sum(axis=0, dtype=np.float64)
        total = part if total is None else total + part
    mean = total / n
    sq = None
    for block in row_blocks(x):
        part = np.square(block - mean).sum(axis=0)
        sq = part if sq is None else sq + part
    std = np.sqrt(sq / n)
    return mean.astype(np.float32), (std + 1e-6).astype(np.float32)


def _forward(kind: str, params: dict, z: Any) -> Any:
    import torch

    if kind == "logreg":
        return z @ params["w"] + params["b"]
    h = torch.relu(z @ params["w1"] + params["b1"])
    return h @ params["w2"] + params["b2"]


def _init_params(kind: str, d: int, seed: int, hidden: int = 128) -> dict:
    import torch

    if kind == "logreg":
        return {"w": torch.zeros(d), "b": torch.zeros(())}
    g = torch.Generator().manual_seed(seed)
    return {"w1": torch.randn(d, hidden, generator=g) / math.sqrt(d), "b1": torch.zeros(hidden),
            "w2": torch.randn(hidden, generator=g) / math.sqrt(hidden), "b2": torch.zeros(())}


NEWTON_MAX_DIM = 2048  # above this many features, L-BFGS instead of Newton's method


def fit(kind: str, x: Any, y: np.ndarray, l2: float, *, seed: int = 0, start: Probe | None = None,
        max_iter: int = 100) -> Probe:
    """Train a probe on (x, y): mean binary cross-entropy + ``l2/2 * ||w - w0||^2`` (the bias is not
    penalised; ``w0`` = 0, or ``start``'s weights). With ``start``, begin at its weights and
    standardisation, as the few-shot transfer does (L2-SP). ``x``: an (N, d) array or a
    :class:`~vlprobe.feature_store.FeatureFile`; every solver reads it a block of rows at a time
    (:func:`~vlprobe.feature_store.row_blocks`), so memory does not grow with N.

    Logistic regression: full-batch Newton's method with backtracking (float64; exact and fast for
    up to :data:`NEWTON_MAX_DIM` features), else full-batch L-BFGS. MLP: full-batch Adam, seeded."""
    import torch

    if start is not None:
        mean, std = start.mean, start.std
    else:
        mean, std = _moments(x)
    torch.manual_seed(seed)
    init = start.params if start is not None else _init_params(kind, x.shape[1], seed)
    anchor = {k: (v.detach().clone() if start is not None else torch.zeros_like(v)) for k, v in init.items()}
    if kind == "logreg" and x.shape[1] <= NEWTON_MAX_DIM:
        params = _newton(x, mean, std, y.astype(np.float64), l2, init, anchor, max_iter=max_iter)
        return Probe(kind, mean, std, params, l2)
    t = torch.from_numpy(y.astype(np.float32))
    n = len(t)
    params = {k: v.detach().clone().requires_grad_(True) for k, v in init.items()}
    weights = [k for k in params if k.startswith("w")]

    def loss_and_grad() -> float:
        """The full-batch loss, its gradient accumulated block by block into ``.grad``."""
        total, a = 0.0, 0
        for block in row_blocks(x):
            part = torch.nn.functional.binary_cross_entropy_with_logits(
                _forward(kind, params, _standardised(block, mean, std)), t[a:a + len(block)], reduction="sum") / n
            part.backward()
            total += float(part.detach())
            a += len(block)
        penalty = 0.5 * l2 * sum(((params[k] - anchor[k]) ** 2).sum() for k in weights)
        penalty.backward()
        return total + float(penalty.detach())

    if kind == "logreg":
        opt = torch.optim.LBFGS(list(params.values()), lr=1.0, max_iter=max_iter, line_search_fn="strong_wolfe")

        def closure() -> Any:
            opt.zero_grad()
            return torch.tensor(loss_and_grad())

        opt.step(closure)
    else:
        opt = torch.optim.Adam(list(params.values()), lr=1e-2)
        for _ in range(max_iter * 3):
            opt.zero_grad()
            loss_and_grad()
            opt.step()
    return Probe(kind, mean, std, {k: v.detach() for k, v in params.items()}, l2)


def _design(block: np.ndarray, mean: np.ndarray, std: np.ndarray) -> Any:
    """[standardised rows (computed in float32, as the other solvers see them), 1] as float64."""
    import torch

    z = _standardised(block, mean, std).double()
    return torch.cat([z, torch.ones((len(block), 1), dtype=torch.float64)], dim=1)


def _newton(x: Any, mean: np.ndarray, std: np.ndarray, y: np.ndarray, l2: float, init: dict, anchor: dict,
            max_iter: int = 100, tol: float = 1e-7) -> dict:
    """Newton's method in float64 on the standardised features, with backtracking. Each evaluation
    is one pass over the rows, a block at a time (loss, gradient and Hessian together): memory is a
    block's design matrix and the (d+1)^2 Hessian, whatever the number of rows."""
    import torch

    t = torch.from_numpy(y)
    n, d = len(t), x.shape[1]
    theta = torch.cat([init["w"].double().reshape(-1), init["b"].double().reshape(1)])
    theta0 = torch.cat([anchor["w"].double().reshape(-1), torch.zeros(1, dtype=torch.float64)])
    reg = torch.full((d + 1,), float(l2), dtype=torch.float64)
    reg[-1] = 0.0

    def evaluate(th: Any) -> tuple[Any, Any, Any]:
        loss = torch.zeros((), dtype=torch.float64)
        grad = torch.zeros(d + 1, dtype=torch.float64)
        hess = torch.diag(reg + 1e-10)
        a = 0
        for block in row_blocks(x):
            X = _design(block, mean, std)
            tb = t[a:a + len(block)]
            a += len(block)
            z = X @ th
            loss += torch.nn.functional.binary_cross_entropy_with_logits(z, tb, reduction="sum") / n
            p = torch.sigmoid(z)
            grad += X.T @ (p - tb) / n
            hess += (X.T * (p * (1 - p) / n)) @ X
        diff = th - theta0
        return loss + 0.5 * (reg * diff ** 2).sum(), grad + reg * diff, hess

    current, grad, hess = evaluate(theta)
    for _ in range(max_iter):
        step = torch.linalg.solve(hess, grad)
        scale = 1.0
        while scale > 1e-4:  # backtracking: never increase the (convex) loss
            trial = theta - scale * step
            new, new_grad, new_hess = evaluate(trial)
            if new <= current:
                break
            scale /= 2
        else:
            break
        done = (current - new).abs() < tol * max(1.0, float(current.abs()))
        theta, current, grad, hess = trial, new, new_grad, new_hess
        if done or float(step.abs().max()) * scale < tol:
            break
    return {"w": theta[:-1].float(), "b": theta[-1].float()}


def select(kind: str, xtr: np.ndarray, ytr: np.ndarray, xval: np.ndarray, yval: np.ndarray, *, seed: int = 0,
           grid: Sequence[float] = L2_GRID) -> tuple[Probe, dict[float, float]]:
    """Fit one probe per L2 strength; keep the best macro-F1 on the validation rows (ties: the
    stronger L2). Only ``validation`` is ever passed here, never a test split."""
    best, best_f1, curve = None, -1.0, {}
    for l2 in sorted(grid, reverse=True):
        p = fit(kind, xtr, ytr, l2, seed=seed)
        f1 = macro_f1(p.proba(xval) > 0.5, yval)
        curve[l2] = f1
        if f1 > best_f1 + 1e-12:
            best, best_f1 = p, f1
    return best, curve


# ---- metric -----------------------------------------------------------------------------------------

def _f1s(pred: np.ndarray, gold: np.ndarray) -> tuple[float, float]:
    out = []
    for cls in (True, False):
        tp = np.sum((pred == cls) & (gold == cls))
        fp = np.sum((pred == cls) & (gold != cls))
        fn = np.sum((pred != cls) & (gold == cls))
        out.append(0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn))
    return out[0], out[1]


def macro_f1(pred: np.ndarray, gold: np.ndarray) -> float:
    t, f = _f1s(np.asarray(pred, bool), np.asarray(gold, bool))
    return (t + f) / 2


def measure(prob: np.ndarray, gold: np.ndarray, *, bootstrap: int = 1000, confidence: float = 0.95,
            seed: int = 0) -> dict[str, Any]:
    """macro_f1, f1_true, f1_false, acc and chance for predictions ``prob > 0.5``, and a percentile
    bootstrap CI of macro-F1 (items resampled with replacement).

    The values and chance come from :func:`vlprobe.metric.compute` on 1 x 1 items (gold [[1]] / [[0]])
    when the metric has ``macro_f1``. The CI is resampled here from the confusion counts, as the
    metric does for F1, without the metric's bootstrap of every other key (its AUROC resampling was
    60% of all the probes' time)."""
    from . import metric

    prob = np.asarray(prob, dtype=np.float64).reshape(-1)
    gold = np.asarray(gold, dtype=bool).reshape(-1)
    out = _measure_here(prob, gold, bootstrap, confidence, seed)
    if "macro_f1" in getattr(metric, "METRIC_KEYS", ()):
        r = metric.compute(prob.reshape(-1, 1, 1), gold.reshape(-1, 1, 1), probabilities=prob.reshape(-1, 1, 1),
                           threshold=0.5, bootstrap=0)
        out.update({k: r.get(k) for k in ("macro_f1", "f1_true", "f1_false", "acc")})
        out["chance"] = (r.get("chance") or {}).get("macro_f1")
        out["metric"] = "vlprobe.metric (1x1 items)"
    return out


def _measure_here(prob: np.ndarray, gold: np.ndarray, bootstrap: int, confidence: float, seed: int) -> dict:
    pred = prob > 0.5
    t, f = _f1s(pred, gold)
    pi = gold.mean() if len(gold) else 0.5
    # chance: a coin flip (predicts "true" half the time): F1_true = pi / (pi + 1/2), F1_false likewise
    chance = (pi / (pi + 0.5) + (1 - pi) / (1.5 - pi)) / 2
    out = {"macro_f1": (t + f) / 2, "f1_true": t, "f1_false": f, "acc": float((pred == gold).mean()),
           "chance": float(chance), "ci_low": None, "ci_high": None, "n": len(gold), "metric": "vlprobe.probing"}
    if bootstrap > 0 and len(gold):
        # resample the 4 confusion cells' counts: each bootstrap row is a multinomial draw of the items
        cell = pred.astype(int) * 2 + gold.astype(int)  # 0 TN, 1 FN, 2 FP, 3 TP
        probs = np.bincount(cell, minlength=4) / len(cell)
        counts = np.random.default_rng(seed).multinomial(len(cell), probs, size=bootstrap).astype(np.float64)
        tn, fn, fp, tp = counts.T
        with np.errstate(invalid="ignore", divide="ignore"):
            f1t = np.where(tp > 0, 2 * tp / (2 * tp + fp + fn), 0.0)
            f1f = np.where(tn > 0, 2 * tn / (2 * tn + fp + fn), 0.0)
        alpha = (1 - confidence) / 2
        out["ci_low"], out["ci_high"] = (float(v) for v in np.percentile((f1t + f1f) / 2, [100 * alpha, 100 * (1 - alpha)]))
    return out


# ---- the protocol -----------------------------------------------------------------------------------

@dataclass(repr=False)
class ProbeResult:
    """What :func:`probe` returns, shaped as :class:`vlprobe.Evaluation`: ``rows`` (one per task x
    setting x train size x test modality x split, with macro-F1, its CI and chance), ``provenance``,
    ``results`` (the results.json document), ``summary`` (the paper's Table 2 figures), ``table()``
    (what ``vlprobe probe`` prints), ``to_pandas()``, ``plot()`` and ``save(out)``."""

    rows: list[dict]
    provenance: dict

    @property
    def results(self) -> dict[str, Any]:
        """The results.json document: provenance, the paper's figures, every row and the tables."""
        return {"provenance": self.provenance, "summary": self.summary, "rows": self.rows,
                "tables": {"same_modality": self.same_modality_table(), "transfer_test_ood": transfer_table(self.rows),
                           "transfer_test_ind": transfer_table(self.rows, "test_ind")}}

    @property
    def summary(self) -> dict[str, Any]:
        """The paper's headline figures (Table 2): per task, setting and test split, the macro-F1 of
        the full-size probe tested on its own modality, with its CI; the shape of
        ``vlprobe.Evaluation.summary`` (``{benchmark: {"source", "headline", "rows", ...}}``)."""
        from .summary import SOURCES, benchmark_of

        dataset = str((self.provenance.get("dataset") or {}).get("dataset") or DEFAULT_DATASET)
        rows = []
        for r in _final(self.rows):
            if r["transfer"] not in ("same", "zero-shot (no training)"):
                continue
            setting = r["setting"] if r["setting"] != ZERO_SHOT else f"zero-shot, {r['test_modality']}"
            row = {"config": r["task"], "label": f"{r['task']} ({setting})", "setting": setting, "split": r["split"],
                   "values": {"macro_f1": r["macro_f1"]} if r["macro_f1"] is not None else {},
                   "n_items": r.get("n"), "train_size": r["train_size"], "chance": r.get("chance")}
            if r.get("ci_low") is not None:
                row["ci"] = {"macro_f1": [r["ci_low"], r["ci_high"]]}
            rows.append(row)
        bench = benchmark_of(dataset)
        source = SOURCES.get("travlr") if bench == "travlr" else None
        return {bench: {"source": source, "headline": ["macro_f1"], "rows": rows, "complete": True,
                        "notes": ["frozen features + a trained probe (vlprobe probe); trained and tested on the "
                                  "same modality, the full training split"]}}

    def table(self) -> str:
        """The text ``vlprobe probe`` prints (also tables.md): the paper's two layouts and timings."""
        return format_report(self)

    def to_pandas(self) -> Any:
        """The rows as a DataFrame (one per task x setting x train size x test modality x split)."""
        import pandas as pd

        return pd.DataFrame(self.rows)

    def same_modality_table(self) -> str:
        return same_modality_table(self.rows)

    def transfer_table(self) -> str:
        return transfer_table(self.rows)

    def plot(self) -> Any:
        """A matplotlib figure: per task, a bar per setting and test split (same modality, full
        training split): macro-F1 with its CI and chance."""
        import matplotlib.pyplot as plt

        from .results import bar_chart

        by_task: dict[str, list[dict]] = {}
        for row in next(iter(self.summary.values()))["rows"]:
            by_task.setdefault(row["config"], []).append(row)
        n = max(1, len(by_task))
        cols = min(2, n)
        fig, axes = plt.subplots(math.ceil(n / cols), cols, figsize=(6.0 * cols, 4.0 * math.ceil(n / cols)),
                                 squeeze=False)
        for ax, (task, rows) in zip(axes.flat, by_task.items()):
            bar_chart(ax, [f"{r['setting']} {r['split']}" for r in rows],
                      [r["values"].get("macro_f1") for r in rows], ci=[(r.get("ci") or {}).get("macro_f1") for r in rows],
                      chance=[r.get("chance") for r in rows], label="macro-F1",
                      confidence=self.provenance.get("settings", {}).get("confidence"))
            ax.set_title(task, fontsize=9)
            ax.legend(fontsize=7, loc="upper right")
        for ax in list(axes.flat)[len(by_task):]:
            ax.axis("off")
        fig.tight_layout()
        return fig

    def save(self, out: str | os.PathLike) -> list[Path]:
        """Write results.json, results.csv, tables.md and the learning-curve plots into ``out`` as
        one unit (staged beside it and swapped in, as ``vlprobe evaluate`` does); ``out`` must be
        new, empty or a probe run's. Returns the paths written. A write error (a full disk, a
        read-only folder) is one :class:`~vlprobe.errors.VlprobeError`, and ``out`` is left as it was."""
        from .errors import VlprobeError
        from .results import check_output_dir

        check_output_dir(out, PROBE_RUN_FILE)
        try:
            return write_outputs(out, self)
        except OSError as err:
            cache = (self.provenance.get("features") or {}).get("cache_dir")
            rerun = (f"the features are in the cache ({cache}), so running it again computes none" if cache
                     else "nothing was cached (cache_dir none), so a rerun computes the features again")
            raise VlprobeError(f"cannot write the outputs to {out} ({err.strerror or err}); {rerun}") from None

    def __repr__(self) -> str:
        model = (self.provenance.get("model") or {}).get("model_id")
        dataset = (self.provenance.get("dataset") or {}).get("dataset")
        tasks = ", ".join(dict.fromkeys(r["task"] for r in self.rows))
        return f"<vlprobe.ProbeResult of {model} on {dataset} ({tasks}): {len(self.rows)} rows>"


def _row(task: str, setting: str, split: str, scores: dict, **kw: Any) -> dict:
    return {"task": task, "setting": setting, "split": split, **kw, **scores}


def _subset(n_total: int, n: int, seed: int, tag: str) -> np.ndarray:
    import hashlib

    s = int.from_bytes(hashlib.sha256(f"{seed}:{tag}".encode()).digest()[:8], "little")
    return np.random.default_rng(s).permutation(n_total)[:n]


def run_probes(features: dict, data: dict[str, dict[str, Split]], *, train_modalities: Sequence[str],
               test_modalities: Sequence[str], text_only: bool, zero_shot: bool, train_sizes: Sequence[int] | None,
               few_shot: int, classifier: str, bootstrap: int, confidence: float, seed: int,
               progress: bool = True) -> list[dict]:
    """Every fit and every test of the protocol on extracted features (see the module docstring)."""
    rows: list[dict] = []
    say = (lambda *a: print(*a, file=sys.stderr)) if progress else (lambda *a: None)
    mkw = {"bootstrap": bootstrap, "confidence": confidence, "seed": seed}
    for task, by_split in data.items():
        tests = [s for s in by_split if s.startswith("test")]
        if zero_shot:
            for m in test_modalities:
                for split in tests:
                    sc = measure(features[(task, split, m)], by_split[split].labels, **mkw)
                    rows.append(_row(task, ZERO_SHOT, split, sc, train_modality=None, test_modality=m,
                                     transfer="zero-shot (no training)", train_size=0, l2=None))
            continue
        t0 = time.perf_counter()
        settings = list(train_modalities) + ([TEXT_ONLY] if text_only else [])
        ytr, yval = by_split[TRAIN].labels, by_split[VALIDATION].labels
        n_train = len(ytr)
        sizes = sorted({min(int(n), n_train) for n in (train_sizes or [])} | {n_train})
        for setting in settings:
            xtr, xval = features[(task, TRAIN, setting)], features[(task, VALIDATION, setting)]
            probe = None
            for n in sizes:
                if n < n_train:  # a seeded subset, in row order (a feature file is read in order)
                    idx = np.sort(_subset(n_train, n, seed, f"{task}:train"))
                    probe, _ = select(classifier, take_rows(xtr, idx), ytr[idx], xval, yval, seed=seed)
                else:
                    probe, _ = select(classifier, xtr, ytr, xval, yval, seed=seed)
                for split in tests:
                    sc = measure(probe.proba(features[(task, split, setting)]), by_split[split].labels, **mkw)
                    rows.append(_row(task, setting, split, sc, train_modality=setting,
                                     test_modality=setting if setting != TEXT_ONLY else "caption",
                                     transfer="same", train_size=int(n), l2=probe.l2))
            if setting == TEXT_ONLY:
                continue
            for m in test_modalities:  # cross-modal transfer of the full-size probe
                if m == setting:
                    continue
                for split in tests:
                    sc = measure(probe.proba(features[(task, split, m)]), by_split[split].labels, **mkw)
                    rows.append(_row(task, setting, split, sc, train_modality=setting, test_modality=m,
                                     transfer="zero-shot", train_size=n_train, l2=probe.l2))
                if few_shot > 0:
                    idx = np.sort(_subset(n_train, min(few_shot, n_train), seed, f"{task}:few-shot:{m}"))
                    tuned = fit(classifier, take_rows(features[(task, TRAIN, m)], idx), ytr[idx], probe.l2,
                                seed=seed, start=probe)
                    for split in tests:
                        sc = measure(tuned.proba(features[(task, split, m)]), by_split[split].labels, **mkw)
                        rows.append(_row(task, setting, split, sc, train_modality=setting, test_modality=m,
                                         transfer=f"few-shot ({len(idx)})", train_size=n_train, l2=probe.l2))
        say(f"probe: {task}: {len(settings)} setting(s) x {len(sizes)} size(s) fitted in {time.perf_counter() - t0:.1f}s")
    return rows


# ---- fine-tuning (finetune=True): the model itself, with a head ------------------------------------

FINETUNE_LR = 1e-4


def finetune_rows(scorer: Any, data: dict[str, dict[str, Split]], *, train_modalities: Sequence[str],
                  test_modalities: Sequence[str], epochs: int, batch_size: int, bootstrap: int, confidence: float,
                  seed: int, progress: bool = True) -> list[dict]:
    """Fine-tune a copy of a dual encoder with a linear head on ``[u, v, u*v, |u-v|]`` (the probe's
    features, computed by the model in training mode), one copy per task and training modality; Adam,
    ``epochs`` passes, the epoch kept is the one with the best ``validation`` macro-F1. Runs under
    ``accelerate`` (``Accelerator.prepare``/``backward``) when it is installed, else in plain torch.
    The scorer's own model is not touched (the feature cache stays valid)."""
    import copy

    import torch

    from .scorers.base import DualScorer

    if not isinstance(scorer, DualScorer) or not hasattr(scorer, "tokenize"):
        raise SettingError(f"finetune=True supports dual encoders; model {scorer.model_id!r} is family {scorer.family!r}")
    try:
        from accelerate import Accelerator

        accelerator = Accelerator(cpu=str(scorer.device).startswith("cpu"))
    except ImportError:
        accelerator = None
    say = (lambda *a: print(*a, file=sys.stderr)) if progress else (lambda *a: None)
    mkw = {"bootstrap": bootstrap, "confidence": confidence, "seed": seed}
    rows: list[dict] = []
    for task, by_split in data.items():
        tests = [s for s in by_split if s.startswith("test")]
        for train_m in train_modalities:
            torch.manual_seed(seed)
            model = copy.deepcopy(scorer.model).train()
            dim = int(scorer.encode_texts(["a"]).shape[1])
            head = torch.nn.Linear(4 * dim, 1)
            opt = torch.optim.Adam(list(model.parameters()) + list(head.parameters()), lr=FINETUNE_LR)
            if accelerator is not None:
                model, head, opt = accelerator.prepare(model, head, opt)
            enc = _Encoder(scorer, model)
            train = by_split[TRAIN]
            order = np.random.default_rng(seed).permutation(len(train))
            best, best_f1, t0 = None, -1.0, time.perf_counter()
            for epoch in range(epochs):
                for start in range(0, len(train), batch_size):
                    idx = order[start:start + batch_size]
                    logit = head(enc.features(train, idx, train_m)).squeeze(-1)
                    loss = torch.nn.functional.binary_cross_entropy_with_logits(
                        logit, torch.from_numpy(train.labels[idx].astype(np.float32)).to(logit.device))
                    opt.zero_grad()
                    (accelerator.backward(loss) if accelerator is not None else loss.backward())
                    opt.step()
                val = by_split[VALIDATION]
                f1 = macro_f1(_predict(enc, head, val, train_m, batch_size) > 0.5, val.labels)
                if f1 > best_f1:
                    best_f1 = f1
                    best = (copy.deepcopy(_unwrap(model, accelerator).state_dict()),
                            copy.deepcopy(_unwrap(head, accelerator).state_dict()), epoch + 1)
            _unwrap(model, accelerator).load_state_dict(best[0])
            _unwrap(head, accelerator).load_state_dict(best[1])
            for m in test_modalities:
                for split in tests:
                    sc = measure(_predict(enc, head, by_split[split], m, batch_size), by_split[split].labels, **mkw)
                    rows.append(_row(task, train_m, split, sc, train_modality=train_m, test_modality=m,
                                     transfer="same" if m == train_m else "zero-shot", train_size=len(train),
                                     l2=None, classifier="finetune", epoch=best[2]))
            say(f"finetune: {task} on {train_m}: best epoch {best[2]} of {epochs} (validation macro-F1 "
                f"{100 * best_f1:.1f}) in {time.perf_counter() - t0:.1f}s")
    return rows


def _unwrap(module: Any, accelerator: Any) -> Any:
    return accelerator.unwrap_model(module) if accelerator is not None else module


class _Encoder:
    """The probe's features computed by a trainable copy of a dual encoder. Images are decoded and
    preprocessed per batch (a whole split's pixel tensors would be ~0.6 MB per row at 224 px)."""

    def __init__(self, scorer: Any, model: Any) -> None:
        self.scorer, self.model = scorer, model

    def _images(self, split: Split, idx: np.ndarray) -> Any:
        from .images import to_pil

        pils = [to_pil(image, where=f"{split.task}/{split.split} row {int(i)}")
                for i, image in zip(idx, split.images_at(idx))]
        return self.scorer.preprocess_images(pils)

    def _texts(self, texts: list[str]) -> Any:
        from .scorers.dual_encoder import _features

        inputs = self.scorer._to_device(self.scorer.tokenize(texts))
        return torch_normalise(_features(self._net().get_text_features(**inputs)))

    def _net(self) -> Any:
        return getattr(self.model, "module", self.model)

    def features(self, split: Split, idx: np.ndarray, modality: str) -> Any:
        from .scorers.dual_encoder import _features

        v = self._texts(split.texts_at("query", idx))
        if modality in ("image", "both"):
            inputs = self.scorer._to_device(self._images(split, idx))
            img = torch_normalise(_features(self._net().get_image_features(**inputs)))
        if modality in ("caption", "both"):
            cap = self._texts(split.texts_at("caption", idx))
        u = img if modality == "image" else cap if modality == "caption" else torch_normalise(img + cap)
        import torch

        return torch.cat([u, v, u * v, (u - v).abs()], dim=1)


def torch_normalise(x: Any) -> Any:
    return x.float() / x.float().norm(dim=-1, keepdim=True).clamp_min(1e-12)


def _predict(enc: _Encoder, head: Any, split: Split, modality: str, batch_size: int) -> np.ndarray:
    import torch

    enc.model.eval()
    out = []
    with torch.no_grad():
        for start in range(0, len(split), batch_size):
            idx = np.arange(start, min(start + batch_size, len(split)))
            out.append(torch.sigmoid(head(enc.features(split, idx, modality)).squeeze(-1)).float().cpu().numpy())
    enc.model.train()
    return np.concatenate(out)


class ProbeSettingError(ArgumentError):
    """A bad argument of :func:`probe`: an :class:`~vlprobe.errors.ArgumentError` (``str(err)``
    names it as Python spells it, ``few_shot='x': ...``; :meth:`cli` as the command line does,
    ``--few-shot x: ...``) that knows the probe's flags."""

    # Python keywords whose flag is not simply "--" + the name with dashes.
    FLAGS = {**ArgumentError.FLAGS, "dataset": "--dataset", "train_modalities": "--train-modality",
             "test_modalities": "--test-modality", "train_sizes": "--train-size",
             "text_baseline": "--no-text-baseline"}


def _whole(name: str, value: Any, low: int) -> int:
    what = {0: "0 or more", 1: "at least 1"}.get(low, f"at least {low}")
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ProbeSettingError(name, value, f"must be a whole number ({what})")
    if value < low:
        raise ProbeSettingError(name, value, f"must be {what}")
    return int(value)


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ProbeSettingError(name, value, "must be True or False")
    return bool(value)


def _optional_name(name: str, value: Any, what: str) -> str | None:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise ProbeSettingError(name, value, f"must be {what}, or None")
    return value


def _one_dataset(value: Any, name: str = "datasets") -> str:
    """The probe's one dataset: a folder or Hub id, alone or as the only element of a list (as
    ``vlprobe.evaluate(datasets=...)`` takes them)."""
    wanted = "must be one TraVLR-shaped dataset folder or Hub id (a path or a string; the probe takes one dataset)"
    if isinstance(value, (list, tuple)):
        if len(value) != 1:
            raise ProbeSettingError(name, value, wanted)
        value = value[0]
    if not isinstance(value, (str, os.PathLike)) or not str(value).strip():
        raise ProbeSettingError(name, value, wanted)
    return str(value)


def _model_ok(model: Any) -> Any:
    from .scorers.base import Scorer

    if isinstance(model, (str, os.PathLike)) and str(model).strip():
        return model
    if isinstance(model, tuple) and len(model) == 2 or isinstance(model, Scorer) or hasattr(model, "config"):
        return model
    raise ProbeSettingError("model", model, "must be a model folder or Hub id, a transformers model (with its "
                                            "processor), or a vlprobe scorer")


def check_settings(*, model: Any = DEFAULT_MODEL, datasets: Any = DEFAULT_DATASET, configs: Any = "all",
                   train_modalities: Any = MODALITIES, test_modalities: Any = MODALITIES, train_sizes: Any = None,
                   few_shot: Any = 0, classifier: Any = "logreg", text_baseline: Any = True, finetune: Any = False,
                   epochs: Any = 3, bootstrap: Any = 1000, confidence: Any = 0.95, seed: Any = 0, limit: Any = None,
                   batch_size: Any = 32, num_workers: Any = None, device: Any = None, dtype: Any = "float32",
                   family: Any = None, revision: Any = None, dataset_revision: Any = None, cache_dir: Any = None,
                   chunk_size: Any = CHUNK_ROWS, progress: Any = True, out: Any = None) -> dict[str, Any]:
    """Every setting of :func:`probe` checked (and normalised: lists of modalities and sizes, the
    dataset as a string, the device and dtype as torch names), before anything is loaded; the
    first bad one raises :class:`ProbeSettingError` naming it. Returns the settings."""
    from .evaluation import check_device

    s: dict[str, Any] = {"model": _model_ok(model), "datasets": _one_dataset(datasets)}
    if not (isinstance(configs, str) or isinstance(configs, (list, tuple)) and configs
            and all(isinstance(c, str) for c in configs)):
        raise ProbeSettingError("configs", configs, "must be 'all', a task name, a comma-separated string or a "
                                                    "list of names")
    s["configs"] = configs
    s["train_modalities"] = _modalities(train_modalities, "train_modalities")
    s["test_modalities"] = _modalities(test_modalities, "test_modalities")
    s["train_sizes"] = _sizes(train_sizes)
    s["few_shot"] = _whole("few_shot", few_shot, 0)
    if not isinstance(classifier, str) or classifier not in CLASSIFIERS:
        raise ProbeSettingError("classifier", classifier, f"unknown classifier; choose one of {', '.join(CLASSIFIERS)}")
    s["classifier"] = classifier
    s["text_baseline"] = _flag("text_baseline", text_baseline)
    s["finetune"] = _flag("finetune", finetune)
    s["progress"] = _flag("progress", progress)
    s["epochs"] = _whole("epochs", epochs, 1)
    s["bootstrap"] = _whole("bootstrap", bootstrap, 0)
    if s["bootstrap"] > MAX_BOOTSTRAP:
        # the resampled confusion counts are held in memory at once (4 floats per resample and more)
        raise ProbeSettingError("bootstrap", bootstrap, f"must be at most {MAX_BOOTSTRAP:,} resamples (1000 is the "
                                                        f"usual, 10,000 for a steadier CI)")
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float, np.number)) \
            or not math.isfinite(confidence) or not 0 < confidence < 1:
        raise ProbeSettingError("confidence", confidence, "must be a level strictly between 0 and 1 (e.g. 0.95)")
    s["confidence"] = float(confidence)
    s["seed"] = _whole("seed", seed, 0)
    s["limit"] = None if limit is None else _whole("limit", limit, 1)
    s["batch_size"] = _whole("batch_size", batch_size, 1)
    s["num_workers"] = None if num_workers is None else _whole("num_workers", num_workers, 0)
    s["chunk_size"] = _whole("chunk_size", chunk_size, 1)
    try:
        from .scorers.loading import resolve_dtype

        s["dtype"] = resolve_dtype(dtype)[0]
    except (ValueError, TypeError, AttributeError) as err:
        raise ProbeSettingError("dtype", dtype, str(err)) from None
    s["device"] = check_device(device)  # the same check (and message) as vlprobe.evaluate's
    s["family"] = _optional_name("family", family, "a scorer family name")
    s["revision"] = _optional_name("revision", revision, "a Hub revision (branch, tag or commit)")
    s["dataset_revision"] = _optional_name("dataset_revision", dataset_revision, "a Hub revision (branch, tag or "
                                                                                 "commit)")
    if cache_dir is not None and cache_dir is not False and not (
            isinstance(cache_dir, os.PathLike) or isinstance(cache_dir, str) and cache_dir.strip()):
        raise ProbeSettingError("cache_dir", cache_dir, "must be a folder path, 'none' (no cache) or None (the "
                                                        "default: $VLPROBE_CACHE, else ~/.cache/vlprobe)")
    s["cache_dir"] = "none" if cache_dir is False else cache_dir
    if out is not None and not (isinstance(out, os.PathLike) or isinstance(out, str) and out.strip()):
        raise ProbeSettingError("out", out, "must be a folder path, or None (nothing written)")
    s["out"] = out
    return s


def probe(
    model: Any = DEFAULT_MODEL,
    datasets: Any = DEFAULT_DATASET,
    configs: str | Sequence[str] = "all",
    *,
    processor: Any = None,
    train_modalities: Sequence[str] | str = MODALITIES,
    test_modalities: Sequence[str] | str = MODALITIES,
    train_sizes: Sequence[int] | str | None = None,
    few_shot: int = 0,
    classifier: str = "logreg",
    text_baseline: bool = True,
    finetune: bool = False,
    epochs: int = 3,
    bootstrap: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    limit: int | None = None,
    batch_size: int = 32,
    num_workers: int | None = None,
    device: str | None = None,
    dtype: str = "float32",
    family: str | None = None,
    revision: str | None = None,
    dataset_revision: str | None = None,
    cache_dir: str | os.PathLike | None = None,
    chunk_size: int = CHUNK_ROWS,
    progress: bool = True,
    out: str | os.PathLike | None = None,
    dataset: Any = _NONE,
) -> ProbeResult:
    """Run TraVLR's train-on-one-modality protocol on ``model``'s frozen features.

    ``model``: a model folder or Hub id, an already-loaded transformers model with its processor
    (``model=(model, processor)`` or ``processor=``), or a vlprobe scorer. ``datasets``: one
    TraVLR-shaped folder or Hub id (default: the repository's ``travlr`` build), as
    ``vlprobe.evaluate``'s argument of that name takes it (a one-element list too). ``cache_dir``:
    the engine's feature cache (default ``$VLPROBE_CACHE`` or ``~/.cache/vlprobe``; ``"none"``
    disables it). ``chunk_size``: rows read and encoded at a time (memory holds one chunk's images).
    ``num_workers``: DataLoader workers decoding images (default as `vlprobe evaluate`'s). ``out``:
    checked before anything is loaded and written at the end, as :meth:`ProbeResult.save`.

    Every setting and ``out`` are checked before anything is loaded (:class:`ProbeSettingError`, a
    :class:`~vlprobe.errors.SettingError`, naming the argument); leftovers of killed runs (feature
    folders, staging folders of ``out``) are removed first, saying so in one line. Returns a
    :class:`ProbeResult`. ``dataset=``, the old name of ``datasets``, is still taken, with a
    :class:`DeprecationWarning`.
    """
    if dataset is not _NONE:
        import warnings

        warnings.warn("vlprobe.probe(dataset=...) is now datasets=..., as in vlprobe.evaluate; dataset= will "
                      "be removed", DeprecationWarning, stacklevel=2)
        if not (isinstance(datasets, str) and datasets == DEFAULT_DATASET):
            raise ProbeSettingError("dataset", dataset, "give the dataset once, as datasets= (dataset= is its "
                                                        "old name)")
        datasets = _one_dataset(dataset, "dataset")
    s = check_settings(
        model=model, datasets=datasets, configs=configs, train_modalities=train_modalities,
        test_modalities=test_modalities, train_sizes=train_sizes, few_shot=few_shot, classifier=classifier,
        text_baseline=text_baseline, finetune=finetune, epochs=epochs, bootstrap=bootstrap, confidence=confidence,
        seed=seed, limit=limit, batch_size=batch_size, num_workers=num_workers, device=device, dtype=dtype,
        family=family, revision=revision, dataset_revision=dataset_revision, cache_dir=cache_dir,
        chunk_size=chunk_size, progress=progress, out=out)
    from .leftovers import sweep
    from .results import check_output_dir

    if out is not None:
        check_output_dir(out, PROBE_RUN_FILE)
    sweep(out)
    train_modalities, test_modalities, sizes = s["train_modalities"], s["test_modalities"], s["train_sizes"]
    dataset, chunk_size = s["datasets"], s["chunk_size"]
    started = time.perf_counter()
    from .dataset_folder import progress_bars_off
    from .evaluation import quiet_progress

    with progress_bars_off():  # datasets' bars of a first load's conversion, as vlprobe.evaluate hides them
        data = load_splits(dataset, configs, revision=dataset_revision, limit=limit)
    with quiet_progress(not progress):  # no "Loading weights" bars with progress=False, as evaluate
        scorer = _scorer(model if processor is None else (model, processor), family, s["device"], s["dtype"],
                         revision)
    zero_shot = getattr(scorer, "family", "") == "vqascore"
    _check_classes(data, dataset, limit, trained=not zero_shot)
    from .scorers.base import DualScorer

    text_only = text_baseline and isinstance(scorer, DualScorer)
    needed = sorted(set(train_modalities) | set(test_modalities), key=MODALITIES.index)
    settings = needed + ([TEXT_ONLY] if text_only else [])

    from .engine import Engine
    from .evaluation import default_workers, open_cache, throwaway_cache
    from .feature_store import FeatureStore

    cache = open_cache(s["cache_dir"], scorer)
    kept_cache = cache is not None
    temp = None
    if cache is None and any(len(sp) > chunk_size for by in data.values() for sp in by.values()):
        cache, temp = throwaway_cache(scorer)  # carries repeated texts across chunks
    workers = num_workers if num_workers is not None else default_workers()
    engine = Engine(scorer, batch_size=batch_size, num_workers=workers, cache=cache, progress=progress)
    store = FeatureStore()  # the features, on disk for the length of this call
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        try:
            features, stats = extract_features(engine, data, settings, chunk_size, store)
        finally:
            if cache is not None:
                cache.close()
            if temp is not None:
                temp.cleanup()
        feature_seconds, feature_cpu = time.perf_counter() - t0, time.process_time() - c0
        t1, c1 = time.perf_counter(), time.process_time()
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # the probes' matrices are small: threads only add contention (3x slower on 2 busy cores)
        try:
            rows = run_probes(features, data, train_modalities=train_modalities, test_modalities=test_modalities,
                              text_only=text_only, zero_shot=zero_shot, train_sizes=sizes, few_shot=few_shot,
                              classifier=classifier, bootstrap=bootstrap, confidence=confidence, seed=seed,
                              progress=progress)
        finally:
            torch.set_num_threads(threads)
    finally:
        features = None
        store.cleanup()
    for r in rows:
        r.setdefault("classifier", ZERO_SHOT if r["setting"] == ZERO_SHOT else classifier)
    if finetune:
        rows += finetune_rows(scorer, data, train_modalities=train_modalities, test_modalities=test_modalities,
                              epochs=epochs, batch_size=batch_size, bootstrap=bootstrap, confidence=confidence,
                              seed=seed, progress=progress)
    probe_seconds, probe_cpu = time.perf_counter() - t1, time.process_time() - c1
    from .results import environment, now_iso

    computed = sum(int(st.get("computed", st.get("computed_pairs", 0)) or 0) for st in stats.values())
    provenance = {
        "created": now_iso(),
        "command": command_line(s),
        "argv": list(sys.argv),
        "model": scorer.describe(),
        "dataset": {"dataset": dataset, "revision": dataset_revision,
                    "splits": {t: {name: sp.info for name, sp in by.items()} for t, by in data.items()}},
        "settings": {"configs": configs, "train_modalities": list(train_modalities),
                     "test_modalities": list(test_modalities), "train_sizes": sizes, "few_shot": few_shot,
                     "classifier": classifier, "l2_grid": list(L2_GRID), "model_selection": VALIDATION,
                     "finetune": {"epochs": epochs, "lr": FINETUNE_LR, "head": "linear on [u, v, u*v, |u-v|]"}
                     if finetune else False,
                     "text_baseline": text_only, "zero_shot": zero_shot, "bootstrap": bootstrap,
                     "confidence": confidence, "seed": seed, "limit": limit, "batch_size": batch_size,
                     "num_workers": workers, "chunk_size": chunk_size},
        "features": {"stats": stats, "computed_inputs": computed,
                     "cache_dir": str(cache.dir) if kept_cache else None,
                     "text_max_length": getattr(scorer, "max_length", None),
                     "caption_truncated": _truncation(scorer, data) if any(
                         st in ("caption", "both", TEXT_ONLY) for st in settings) else None},
        # wall-clock and CPU seconds of this process (CPU time is what a loaded machine does not distort)
        "timings": {"feature_seconds": round(feature_seconds, 3), "probe_seconds": round(probe_seconds, 3),
                    "feature_cpu_seconds": round(feature_cpu, 3), "probe_cpu_seconds": round(probe_cpu, 3),
                    "total_seconds": round(time.perf_counter() - started, 3)},
        "environment": environment(),
    }
    result = ProbeResult(rows, provenance)
    if out is not None:
        result.save(out)
    return result


def command_line(s: dict[str, Any]) -> str | None:
    """The ``vlprobe probe`` command that reruns checked settings ``s`` (:func:`check_settings`),
    every option spelled out; None when the model is an object no command line can name."""
    import shlex

    model = s["model"]
    if not isinstance(model, (str, os.PathLike)):
        return None
    values = {"dataset": s["datasets"], "config": s["configs"] if isinstance(s["configs"], str) else ",".join(s["configs"]),
              "dataset-revision": s["dataset_revision"], "model": str(model), "revision": s["revision"],
              "family": s["family"], "train-modality": ",".join(s["train_modalities"]),
              "test-modality": ",".join(s["test_modalities"]),
              "train-size": ",".join(map(str, s["train_sizes"])) if s["train_sizes"] else None,
              "few-shot": s["few_shot"], "classifier": s["classifier"], "no-text-baseline": not s["text_baseline"],
              "finetune": s["finetune"], "epochs": s["epochs"], "bootstrap": s["bootstrap"],
              "confidence": s["confidence"], "seed": s["seed"], "limit": s["limit"], "batch-size": s["batch_size"],
              "num-workers": s["num_workers"], "dtype": s["dtype"], "device": s["device"],
              "cache-dir": s["cache_dir"], "out": s["out"], "chunk-size": s["chunk_size"],
              "no-progress": not s["progress"]}
    parts = ["vlprobe", "probe"]
    for key, value in values.items():
        if value is None or value is False:
            continue
        parts += [f"--{key}"] + ([] if value is True else [str(value)])
    return " ".join(shlex.quote(p) for p in parts)


def _check_classes(data: dict[str, dict[str, Split]], dataset: str, limit: int | None, trained: bool) -> None:
    """Macro-F1 needs both classes in every test split, and fitting and choosing a probe need them
    in train and validation: refuse, naming the split (and ``limit`` when it is the cause)."""
    need = "train, validation and every test split" if trained else "every test split"
    for task, by in data.items():
        for name, sp in by.items():
            if not (name.startswith("test") or trained) or (sp.labels.any() and not sp.labels.all()):
                continue
            only = "true" if sp.labels.all() else "false"
            if limit is not None and sp.info.get("rows_in_split", 0) > limit:
                raise ProbeSettingError("limit", limit, f"the first {limit} row(s) of {task}/{name} are all {only}; "
                                                        f"the probe needs true and false rows in {need}: use more rows")
            raise DatasetError(f"{dataset} config {task!r} split {name!r}: all {len(sp)} row(s) are {only}; the probe "
                               f"needs true and false rows in {need}")


def _scorer(model: Any, family: str | None, device: str | None, dtype: str, revision: str | None) -> Any:
    """The model as a scorer, exactly as `vlprobe.evaluate` loads it (a folder or Hub id, a
    (model, processor) pair, a loaded model, or a scorer; the same errors)."""
    from .evaluation import Settings, load_model

    return load_model(_resolve_model(model), None, family, revision, Settings(device=device, dtype=dtype).check())


def _truncation(scorer: Any, data: dict) -> dict | None:
    """Share of captions (and text-only inputs) longer than the text tower's limit, per task."""
    tok = getattr(scorer, "tokenizer", None) or getattr(getattr(scorer, "processor", None), "tokenizer", None)
    limit = getattr(scorer, "max_length", None)
    if tok is None or not limit:
        return None
    out = {}
    for task, by in data.items():
        train, longer = by[TRAIN], 0
        for a, b in train.chunks(CHUNK_ROWS):
            longer += sum(len(ids) > limit for ids in tok(train.texts("caption", a, b), add_special_tokens=True)["input_ids"])
        out[task] = round(longer / len(train), 4) if len(train) else 0.0
    return out


def _modalities(value: Any, name: str) -> list[str]:
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",")]
    elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        items = [v.strip() for v in value]
    else:
        raise ProbeSettingError(name, value, f"must be modality names, a comma-separated string or a list, from "
                                             f"{', '.join(MODALITIES)}")
    items = [v for v in items if v]
    bad = [v for v in items if v not in MODALITIES]
    if bad or not items:
        raise ProbeSettingError(name, value, f"unknown modality {', '.join(bad) or '(none given)'}; choose from "
                                             f"{', '.join(MODALITIES)}")
    return list(dict.fromkeys(items))


def _sizes(value: Any) -> list[int] | None:
    if value is None or (isinstance(value, (str, list, tuple)) and not (value.strip() if isinstance(value, str) else value)):
        return None
    wanted = "must be training sizes, whole numbers of at least 2: a number, a comma-separated string or a list"
    if isinstance(value, str):
        raw: list[Any] = [v.strip() for v in value.split(",") if v.strip()]
        try:
            sizes = [int(v) for v in raw]
        except ValueError:
            raise ProbeSettingError("train_sizes", value, wanted) from None
    else:
        raw = [value] if isinstance(value, (int, np.integer)) and not isinstance(value, bool) else value
        if not isinstance(raw, (list, tuple)) or any(isinstance(v, bool) or not isinstance(v, (int, np.integer))
                                                     for v in raw):
            raise ProbeSettingError("train_sizes", value, wanted)
        sizes = [int(v) for v in raw]
    if any(n < 2 for n in sizes):
        raise ProbeSettingError("train_sizes", value, wanted)
    return sorted(set(sizes))


# ---- tables, files, plots ---------------------------------------------------------------------------

def _pct(v: Any) -> str:
    from .results import pct

    return pct(v) or "-"


def _cell(r: dict | None) -> str:
    if r is None:
        return "-"
    ci = f" [{_pct(r['ci_low'])}, {_pct(r['ci_high'])}]" if r.get("ci_low") is not None else ""
    return f"{_pct(r['macro_f1'])}{ci}"


def _final(rows: list[dict], finetuned: bool = False) -> list[dict]:
    """Rows of the full-size probes (the largest train size per task and setting), of the frozen
    probes (default) or of the fine-tuned models."""
    rows = [r for r in rows if (r.get("classifier") == "finetune") == finetuned]
    full: dict[tuple, int] = {}
    for r in rows:
        key = (r["task"], r["setting"])
        full[key] = max(full.get(key, 0), r["train_size"])
    return [r for r in rows if r["train_size"] == full[(r["task"], r["setting"])]]


def same_modality_table(rows: list[dict], finetuned: bool = False) -> str:
    """The paper's Table 2 layout, same-modality: task x setting rows, test_ind / test_ood columns
    (macro-F1 x 100 with the bootstrap CI, the OOD change from InD, chance)."""
    rows = [r for r in _final(rows, finetuned) if r["transfer"] in ("same", "zero-shot (no training)")
            and (r["train_modality"] is None or r["test_modality"] == r["train_modality"] or r["setting"] == TEXT_ONLY)]
    lines = ["| task | trained on (= tested on) | n train | test_ind macro-F1 | test_ood macro-F1 | OOD - InD | chance |",
             "|---|---|---|---|---|---|---|"]
    for task in dict.fromkeys(r["task"] for r in rows):
        for setting in SETTING_ORDER:
            mine = [r for r in rows if r["task"] == task and r["setting"] == setting]
            if setting == ZERO_SHOT:
                groups = {m: [r for r in mine if r["test_modality"] == m] for m in MODALITIES}
            else:
                groups = {setting: mine}
            for label, rs in groups.items():
                if not rs:
                    continue
                ind = next((r for r in rs if r["split"] == "test_ind"), None)
                ood = next((r for r in rs if r["split"] == "test_ood"), None)
                delta = "-" if ind is None or ood is None or None in (ind["macro_f1"], ood["macro_f1"]) else f"{100 * (ood['macro_f1'] - ind['macro_f1']):+.1f}"
                name = f"zero-shot, {label}" if setting == ZERO_SHOT else (
                    "text-only (text tower on query + caption)" if setting == TEXT_ONLY else setting)
                lines.append(f"| {task} | {name} | {rs[0]['train_size']} | {_cell(ind)} | {_cell(ood)} | {delta} | "
                             f"{_pct(rs[0]['chance'])} |")
    return "\n".join(lines)


def transfer_table(rows: list[dict], split: str = "test_ood", finetuned: bool = False) -> str:
    """Per task, train modality x test modality (macro-F1 x 100 on ``split``; the same-modality
    diagonal, zero-shot transfer off it, few-shot rows when run)."""
    rows = [r for r in _final(rows, finetuned) if r["split"] == split and r["setting"] in MODALITIES]
    if not rows:
        return f"(no transfer rows on {split})"
    tests = [m for m in MODALITIES if any(r["test_modality"] == m for r in rows)]
    lines = ["| task | trained on | transfer | " + " | ".join(f"tested on {m}" for m in tests) + " |",
             "|---|---|---|" + "---|" * len(tests)]
    for task in dict.fromkeys(r["task"] for r in rows):
        for train in MODALITIES:
            mine = [r for r in rows if r["task"] == task and r["train_modality"] == train]
            if not mine:
                continue
            kinds = ["zero-shot"] + sorted({r["transfer"] for r in mine if r["transfer"].startswith("few-shot")})
            for kind in kinds:
                cells = []
                for m in tests:
                    want = "same" if m == train else kind
                    r = next((r for r in mine if r["test_modality"] == m and r["transfer"] == want), None)
                    cells.append(_cell(r) if (m != train or kind == "zero-shot") else "(as above)")
                lines.append(f"| {task} | {train} | {kind} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def learning_curve_rows(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["transfer"] == "same" and r["setting"] != ZERO_SHOT and r.get("classifier") != "finetune"]


def plot_learning_curves(path: Path, rows: list[dict], task: str) -> bool:
    """Macro-F1 against training size, one panel per test split, one line per setting (Figure 12)."""
    mine = [r for r in learning_curve_rows(rows) if r["task"] == task]
    sizes = sorted({r["train_size"] for r in mine})
    if len(sizes) < 2:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    splits = sorted({r["split"] for r in mine})
    fig, axes = plt.subplots(1, len(splits), figsize=(4.2 * len(splits), 3.4), sharey=True, squeeze=False)
    for ax, split in zip(axes[0], splits):
        for setting in SETTING_ORDER:
            pts = sorted((r["train_size"], r["macro_f1"], r["ci_low"], r["ci_high"]) for r in mine
                         if r["split"] == split and r["setting"] == setting)
            if not pts:
                continue
            xs, ys = [p[0] for p in pts], [100 * p[1] for p in pts]
            ax.plot(xs, ys, marker="o", label=setting)
            if all(p[2] is not None for p in pts):
                ax.fill_between(xs, [100 * p[2] for p in pts], [100 * p[3] for p in pts], alpha=0.15)
        chance = next((r["chance"] for r in mine if r["split"] == split and r["chance"] is not None), None)
        if chance is not None:
            ax.axhline(100 * chance, color="grey", linestyle="--", linewidth=1, label="chance")
        ax.set_xscale("log")
        ax.set_xticks(sizes)
        ax.set_xticklabels([str(s) for s in sizes])
        ax.set_xlabel("training rows")
        ax.set_title(f"{task}: {split}")
        ax.set_ylim(0, 100)
    axes[0][0].set_ylabel("macro-F1 (%)")
    axes[0][-1].legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


CSV_COLUMNS = ("task", "setting", "train_modality", "test_modality", "transfer", "train_size", "split", "n",
               "macro_f1", "ci_low", "ci_high", "chance", "f1_true", "f1_false", "acc", "classifier", "l2", "metric")


def write_outputs(out: str | os.PathLike, result: ProbeResult) -> list[Path]:
    """Write results.json, results.csv, tables.md and one learning-curve plot per task (when there
    are several training sizes) as one folder swapped in for ``out``
    (:func:`vlprobe.results.write_run_folder`, the same staging as ``vlprobe evaluate``'s)."""
    import csv
    import io
    import json

    from .results import _jsonable, write_run_folder

    def write(folder: Path) -> list[str]:
        (folder / "results.json").write_bytes((json.dumps(_jsonable(result.results), indent=1) + "\n").encode())
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in result.rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in CSV_COLUMNS})
        (folder / "results.csv").write_bytes(buf.getvalue().encode())
        (folder / "tables.md").write_bytes(format_report(result).encode())
        names = ["results.json", "results.csv", "tables.md"]
        for task in dict.fromkeys(r["task"] for r in result.rows):
            name = f"learning_curve_{task}.png"
            if plot_learning_curves(folder / name, result.rows, task):
                names.append(name)
        return names

    return write_run_folder(out, write, PROBE_RUN_FILE)


def format_report(result: ProbeResult) -> str:
    t = result.provenance.get("timings", {})
    f = result.provenance.get("features", {})
    model = result.provenance.get("model", {}).get("model_id")
    parts = [
        f"# vlprobe probe: {model}",
        "",
        "Same modality (the paper's Table 2 layout; macro-F1 x 100 [95% bootstrap CI]):",
        "",
        result.same_modality_table(),
        "",
        "Cross-modal transfer, test_ood (rows: trained on; columns: tested on):",
        "",
        transfer_table(result.rows),
        "",
        "Cross-modal transfer, test_ind:",
        "",
        transfer_table(result.rows, "test_ind"),
        "",
    ]
    if any(r.get("classifier") == "finetune" for r in result.rows):
        parts += ["Fine-tuned model + linear head, same modality (macro-F1 x 100):", "",
                  same_modality_table(result.rows, finetuned=True), "",
                  "Fine-tuned model, cross-modal transfer, test_ood:", "",
                  transfer_table(result.rows, finetuned=True), ""]
    parts += [
        f"Feature extraction {t.get('feature_seconds', 0):.1f}s wall, {t.get('feature_cpu_seconds', 0):.1f}s CPU "
        f"({f.get('computed_inputs', 0)} inputs computed, the rest from the cache); fitting and testing every probe "
        f"{t.get('probe_seconds', 0):.1f}s wall, {t.get('probe_cpu_seconds', 0):.1f}s CPU.",
    ]
    if f.get("caption_truncated"):
        parts.append(f"Share of captions longer than the text tower's {f.get('text_max_length')} tokens (truncated): "
                     + ", ".join(f"{k} {100 * v:.0f}%" for k, v in f["caption_truncated"].items()) + ".")
    return "\n".join(parts) + "\n"
