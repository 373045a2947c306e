"""``vlprobe.evaluate(...)``: score a model on benchmarks and measure it, the one pipeline that the
CLI (``vlprobe evaluate``), the Space and the probe command call.

    import vlprobe
    res = vlprobe.evaluate(model="models/mini-clip", datasets=["winoground_style"], bootstrap=1000)
    res.summary            # the papers' aggregates per benchmark
    res.to_pandas()        # one row per dataset/config/split/metric (value, ci_low, ci_high, chance, n)
    res.scores()           # a datasets.Dataset of the per-item scores (= scores.parquet)
    res.save("runs/x")     # results.json, scores.parquet, results.csv, plots: what the CLI writes
    res.plot()             # a matplotlib figure

The flow: every setting is checked first (and the output folder, the device), before anything is
loaded; each (dataset, config, split) is opened as a memory-mapped Arrow table; rows are read in
bounded chunks (``chunk_size`` rows, across splits), turned into items by the dataset's
``vlprobe.yaml`` (:mod:`vlprobe.spec`) and scored by :mod:`vlprobe.engine`, which computes each
unique input once per chunk; the on-disk cache (:mod:`vlprobe.cache`) carries what was computed
from one chunk to the next. Only the score matrices, gold matrices, ids, texts and tags are kept:
image bytes are dropped after each chunk, so memory does not grow with the dataset. A run whose
rows fit in one chunk scores everything in one engine call, exactly as before streaming.

Errors are the named errors of :mod:`vlprobe.errors` (the CLI prints them as one line).
"""

from __future__ import annotations

import hashlib
import math
import os
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from .errors import DatasetError, ModelError, SettingError, VlprobeError
from .results import ScoreMatrices, ScoredItem, ScoredSplit

DEFAULT_DATASETS = ("travlr", "winoground_style")
DEFAULT_MODEL = "models/mini-clip"
TEST_LIKE = ("test",)
CHUNK_ROWS = 2000
CONTROLS = ("blank", "shuffle")  # "shuffled" is accepted as the CLI's old spelling of "shuffle"


# ---- settings -----------------------------------------------------------------------------------

@dataclass
class Settings:
    """Every setting of a run, validated by :meth:`check` before anything is loaded."""

    configs: Any = "all"
    splits: Any = None
    ties: str = "strict"
    bootstrap: int = 1000
    confidence: float = 0.95
    threshold: float = 0.5
    seed: int = 0
    limit: int | None = None
    batch_size: int = 32
    num_workers: int | None = None
    device: str | None = None
    dtype: str = "float32"
    modality: str = "image"
    control: str | None = None
    chunk_size: int = CHUNK_ROWS
    exact_preprocessing: bool = False

    def check(self) -> "Settings":
        from . import metric as metric_module
        from .spec import MODALITIES

        def integer(name: str, value: Any, low: int) -> None:
            what = "at least 1" if low == 1 else "0 or more"
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise SettingError(f"--{name.replace('_', '-')} must be a whole number ({what}), got {value!r}")
            if value < low:
                raise SettingError(f"--{name.replace('_', '-')} must be {what}, got {value!r}")

        integer("batch_size", self.batch_size, 1)
        integer("bootstrap", self.bootstrap, 0)
        integer("seed", self.seed, 0)
        integer("chunk_size", self.chunk_size, 1)
        if self.limit is not None:
            integer("limit", self.limit, 1)
        if self.num_workers is not None:
            integer("num_workers", self.num_workers, 0)
        if not _number(self.confidence) or not 0 < self.confidence < 1:
            raise SettingError(f"--confidence must be a level strictly between 0 and 1 (e.g. 0.95), got "
                               f"{self.confidence!r}")
        if not _number(self.threshold):
            raise SettingError(f"--threshold must be a finite number (a probability threshold, e.g. 0.5), got "
                               f"{self.threshold!r}")
        if self.ties not in metric_module.TIE_POLICIES:
            raise SettingError(f"unknown tie policy {self.ties!r}; choose one of {', '.join(metric_module.TIE_POLICIES)}")
        if self.modality not in MODALITIES:
            raise SettingError(f"unknown modality {self.modality!r}; choose one of {', '.join(MODALITIES)}")
        if self.control == "shuffled":
            self.control = "shuffle"
        if self.control not in (None, *CONTROLS):
            raise SettingError(f"unknown control {self.control!r}; choose one of {', '.join(CONTROLS)}")
        try:
            from .scorers.loading import resolve_dtype

            self.dtype = resolve_dtype(self.dtype)[0]
        except ValueError as err:
            raise SettingError(str(err)) from None
        for name in ("configs", "splits"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str) and not (
                    isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)):
                raise SettingError(f"{name} must be a name, a comma-separated string or a list of names, got {value!r}")
        self.device = check_device(self.device)
        return self

    def record(self, workers: int) -> dict[str, Any]:
        """The settings block of results.json's provenance."""
        return {
            "ties": self.ties, "bootstrap": self.bootstrap, "confidence": self.confidence, "seed": self.seed,
            "threshold": self.threshold, "limit": self.limit, "batch_size": self.batch_size, "num_workers": workers,
            "modality": self.modality, "control": self.control, "split": _joined(self.splits),
            "config": _joined(self.configs), "exact_preprocessing": self.exact_preprocessing,
        }


def _number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float, np.number)) and math.isfinite(value)


def _joined(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return ",".join(value)


def _names(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()] or None
    return list(value)


def check_device(device: str | None) -> str | None:
    """``device`` as given, once torch is known to have it (cuda, cuda:N, mps, cpu); None/"auto"
    stays None (the best available is picked when the model loads)."""
    if device in (None, "", "auto"):
        return None
    import torch

    try:
        dev = torch.device(str(device))
    except (RuntimeError, ValueError):
        raise SettingError(f"unknown --device {device!r}; use cpu, cuda, cuda:N or mps") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise SettingError(f"--device {device}: this torch has no CUDA device (torch {torch.__version__}, "
                               f"CUDA {'not compiled in' if torch.version.cuda is None else 'no GPU visible'}); "
                               f"use --device cpu or leave --device out")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise SettingError(f"--device {device}: there are only {torch.cuda.device_count()} CUDA device(s)")
    elif dev.type == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise SettingError(f"--device {device}: MPS (Apple GPU) is not available here; use --device cpu "
                               f"or leave --device out")
    elif dev.type != "cpu":
        raise SettingError(f"--device {device}: vlprobe runs on cpu, cuda or mps")
    return str(device)


# ---- what is scored -----------------------------------------------------------------------------

@dataclass
class SplitSource:
    """One (dataset, config, split) to score: a memory-mapped Dataset read in chunks."""

    dataset: str            # the name results use: a folder, a Hub id, or a given name
    config: str
    split: str
    rows: Any               # datasets.Dataset
    n: int                  # rows to score (after limit)
    spec: Any               # ItemSpec (already for this config)
    data: dict[str, Any] = field(default_factory=dict)
    shape: tuple[int, int] | None = None

    @property
    def name(self) -> str:
        from .results import benchmark_name

        return f"{benchmark_name(self.dataset)}/{self.config}/{self.split}"

    def row_batches(self, size: int) -> Iterator[tuple[int, list[dict[str, Any]]]]:
        """(first row index, rows) of at most ``size`` rows, images as undecoded dicts."""
        from .dataset_folder import read_rows

        for start in range(0, self.n, size):
            yield start, read_rows(self.rows, start, min(start + size, self.n))

    def items(self, start: int, rows: Sequence[Mapping[str, Any]], modality: str) -> list[Any]:
        from .items import ItemError
        from .spec import SpecError

        try:
            return [self.spec.to_item(row, index=start + i, config=self.config, modality=modality)
                    for i, row in enumerate(rows)]
        except (ItemError, SpecError) as err:
            raise DatasetError(f"{self.name}: {err}") from None


def default_workers() -> int:
    """DataLoader workers decoding and preprocessing images: min(4, CPUs - 1) where there are more
    than 2 CPUs, else 0. Workers pay only with cores beyond the one running the model (on 2 cores
    one worker made mini-clip 2.2x slower: README, performance notes)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return min(4, cpus - 1) if cpus > 2 else 0


def _dataset_error(dataset: str, err: BaseException) -> str:
    first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    local = "" if Path(dataset).exists() else " It is not a local folder either."
    return (
        f"cannot read dataset {dataset!r} ({type(err).__name__}: {first}).{local} Pass a dataset folder "
        f"(one built by `vlprobe build ...` or downloaded on a networked machine with "
        f"`hf download {dataset} --repo-type dataset --local-dir DIR`), or a Hub id when online"
    )


def select_configs(dataset: str, wanted: Any, revision: str | None) -> list[str]:
    """The configs of ``dataset`` to score. ``"all"`` means every config, unless the dataset has a
    config of that name (VALSE's ``all`` holds every instrument once); ``"*"`` always means every
    config; else names (comma-separated, or a list)."""
    from .dataset_folder import list_configs

    try:
        names = list_configs(dataset, revision)
    except Exception as err:  # not found, offline, gated: say what to do
        raise DatasetError(_dataset_error(dataset, err)) from None
    if wanted in (None, "", "*") or (wanted == "all" and "all" not in names):
        return list(names)
    chosen = _names(wanted) or []
    unknown = [c for c in chosen if c not in names]
    if unknown:
        raise DatasetError(f"unknown config(s) {unknown} of {dataset}; its configs are: {', '.join(names)}")
    return chosen


def select_splits(dataset: str, config: str, wanted: Any, names: Sequence[str] | None = None,
                  revision: str | None = None) -> list[str]:
    """The splits to score: those named, else the ones whose name starts with ``test``, else the
    only one."""
    if names is None:
        from .dataset_folder import list_splits

        try:
            names = list_splits(dataset, config, revision)
        except Exception as err:
            raise DatasetError(_dataset_error(dataset, err)) from None
    names = list(names)
    chosen = _names(wanted)
    if chosen:
        unknown = [s for s in chosen if s not in names]
        if unknown:
            raise DatasetError(f"unknown split(s) {unknown} of {dataset} config {config!r}; its splits are: "
                               f"{', '.join(names)}")
        return chosen
    test_like = [s for s in names if s.lower().startswith(TEST_LIKE)]
    if test_like:
        return test_like
    if len(names) == 1:
        return names
    raise DatasetError(f"{dataset} config {config!r} has no test split; name one with --split ({', '.join(names)})")


def load_split(dataset: str, config: str, split: str, revision: str | None) -> tuple[Any, dict]:
    """One split as a memory-mapped Dataset, plus what identifies its data (a local folder: the
    sha256 of its parquet files; a Hub dataset: its fingerprint and resolved commit)."""
    import datasets

    from .dataset_folder import conversion_arrow_pool, load_folder_split

    try:
        if Path(dataset).is_dir():
            builder = datasets.load_dataset_builder(dataset, config)
            files = sorted(str(f) for f in (builder.config.data_files or {}).get(split, []))
            h = hashlib.sha256()
            for f in files:
                with open(f, "rb") as fh:
                    for block in iter(lambda: fh.read(1 << 22), b""):
                        h.update(block)
            ds = load_folder_split(dataset, config, split)
            info = {"data_sha256": h.hexdigest(), "data_files": [os.path.relpath(f, dataset) for f in files]}
        else:
            with conversion_arrow_pool():  # a first load converts the files to Arrow
                ds = datasets.load_dataset(dataset, config, split=split, revision=revision)
            info = {"fingerprint": getattr(ds, "_fingerprint", None), "resolved_revision": _hub_sha(dataset, revision)}
    except VlprobeError:
        raise
    except Exception as err:
        raise DatasetError(_dataset_error(dataset, err)) from None
    return ds, info


def _hub_sha(dataset: str, revision: str | None) -> str | None:
    """The commit a Hub dataset id resolves to (None offline or when it cannot be asked)."""
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        return None
    try:
        from huggingface_hub import HfApi

        return HfApi().dataset_info(dataset, revision=revision, timeout=10).sha
    except Exception:
        return None


def _spec_of(dataset: Any, spec: Any) -> Any:
    """An ItemSpec from ``spec`` (an ItemSpec, a dict, a path) or, for a folder or Hub id, the
    dataset's own."""
    from .spec import ItemSpec, SpecError, find_spec

    try:
        if isinstance(spec, ItemSpec):
            return spec
        if isinstance(spec, Mapping):
            return ItemSpec.from_dict(spec, source="spec=")
        if spec is None and not isinstance(dataset, str):
            raise SpecError("an in-memory dataset needs spec=... (an ItemSpec, a dict or a vlprobe.yaml path) "
                            "saying how its rows become items")
        return find_spec(dataset, None if spec is None else str(spec))
    except SpecError as err:
        raise DatasetError(str(err)) from None


def plan_splits(datasets_: Sequence[Any], s: Settings, *, spec: Any = None,
                dataset_revision: str | None = None, names: Sequence[str] | None = None) -> list[SplitSource]:
    """Every (dataset, config, split) to score, opened (memory-mapped) but not read."""
    import datasets as hf

    sources: list[SplitSource] = []
    for k, dataset in enumerate(datasets_):
        name = names[k] if names else None
        if isinstance(dataset, (hf.Dataset, hf.DatasetDict)):
            label = _dataset_label(dataset, name)
            if isinstance(dataset, hf.Dataset):
                parts = {str(dataset.split) if dataset.split is not None else "test": dataset}
            else:
                parts = dict(dataset)
            item_spec = _spec_of(dataset, spec)
            config = (_names(s.configs) or ["default"])[0] if s.configs not in (None, "all", "*") else "default"
            for split in select_splits(label, config, s.splits, names=list(parts)):
                ds = parts[split]
                info = {"fingerprint": getattr(ds, "_fingerprint", None), "in_memory": True}
                sources.append(_source(label, config, split, ds, item_spec, info, s, dataset_revision))
            continue
        if isinstance(dataset, os.PathLike):
            dataset = str(dataset)
        if not isinstance(dataset, str):
            raise DatasetError(f"datasets must be folders, Hub ids or datasets.Dataset/DatasetDict objects, got "
                               f"{type(dataset).__name__}")
        item_spec = _spec_of(dataset, spec)
        for config in select_configs(dataset, s.configs, dataset_revision):
            for split in select_splits(dataset, config, s.splits, revision=dataset_revision):
                ds, info = load_split(dataset, config, split, dataset_revision)
                sources.append(_source(name or dataset, config, split, ds, item_spec, info, s, dataset_revision))
    return sources


def _source(dataset: str, config: str, split: str, ds: Any, spec: Any, info: dict, s: Settings,
            revision: str | None) -> SplitSource:
    n_rows = len(ds)
    n = min(s.limit, n_rows) if s.limit is not None else n_rows
    try:
        config_spec = spec.for_config(config)
    except ValueError as err:
        raise DatasetError(str(err)) from None
    src = SplitSource(dataset=dataset, config=config, split=split, rows=ds, n=n, spec=config_spec,
                      data={**info, "rows_in_split": n_rows, "rows_scored": n, "revision": revision,
                            "spec": spec.source, "modality": s.modality})
    if n == 0:
        raise DatasetError(f"{dataset} config {config!r} split {split!r} has no rows")
    config_spec.check_unique_ids(ds, limit=n, where=src.name)  # DuplicateIdError names the ids
    # The first row as an item: the spec works, and the item shape is known before any model loads.
    _, first = next(src.row_batches(1))
    src.shape = src.items(0, first, s.modality)[0].shape
    return src


# ---- the model ------------------------------------------------------------------------------------

def _loaded_scorer(model: Any, processor: Any, family: str | None, s: Settings) -> Any:
    """A scorer around an already-loaded transformers model and its processor (or tokenizer): the
    family (named, or detected from the model's own class) wraps it (``Family.wrap``)."""
    import torch

    from .scorers.base import UnknownFamilyError, get_family
    from .scorers.loading import detect_family

    config = getattr(model, "config", None)
    if config is None:
        raise ModelError(f"model is a {type(model).__name__}: pass a model folder or Hub id, a transformers "
                         f"model (with processor=...), or a vlprobe scorer")
    try:
        # The model's own classes (a subclass of CLIPModel is still a CLIPModel), not the config's list.
        classes = [type(model).__name__] + [c.__name__ for c in type(model).__mro__[1:]
                                            if c.__module__.startswith("transformers.models.")]
        fam = get_family((family or detect_family(config, architectures=classes)).split("+")[0])
    except UnknownFamilyError as err:
        raise ModelError(str(err)) from None
    if fam.wrap is None:
        raise ModelError(f"family {fam.name!r} cannot wrap an already-loaded model; save it with save_pretrained and "
                         f"pass the folder")
    if processor is None:
        raise ModelError(f"a loaded model needs its processor (a tokenizer for family 'causal_lm'): "
                         f"evaluate(model=(model, processor), ...) or evaluate(model=model, processor=processor, ...)")
    if s.device is not None:
        model = model.to(s.device)
    param = next(iter(model.parameters()), None)
    device = s.device or (str(param.device) if param is not None else "cpu")
    dtype = str(param.dtype).removeprefix("torch.") if param is not None else s.dtype
    model_id = str(getattr(config, "_name_or_path", "") or getattr(model, "name_or_path", "") or type(model).__name__)
    model = model.eval()
    try:
        scorer = fam.wrap(model_id, model, processor, device=device, dtype=dtype, revision=None)
    except VlprobeError:
        raise
    except Exception as err:
        line = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ModelError(f"cannot wrap model {model_id!r} as family {fam.name!r}: {line}") from err
    # The weights identify a model in memory (it may be mid-training): its cache key is their digest.
    h = hashlib.sha256()
    with torch.no_grad():
        for key, tensor in sorted(model.state_dict().items()):
            h.update(key.encode())
            h.update(tensor.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes())
    scorer.revision = f"weights-sha256:{h.hexdigest()[:32]}"
    return scorer


def load_model(model: Any, processor: Any, family: str | None, revision: str | None, s: Settings) -> Any:
    """A ready scorer from a path/Hub id, a (model, processor) pair, a loaded model, or a scorer."""
    from .scorers.base import Scorer, UnknownFamilyError
    from .scorers.loading import load_scorer

    if isinstance(model, tuple) and len(model) == 2 and processor is None:
        model, processor = model
    if isinstance(model, Scorer):
        scorer = model
    elif isinstance(model, (str, os.PathLike)):
        try:
            scorer = load_scorer(str(model), family, device=s.device, dtype=s.dtype, revision=revision,
                                 exact_preprocessing=s.exact_preprocessing)
        except UnknownFamilyError as err:
            raise ModelError(str(err)) from None
        except (FileNotFoundError, OSError, ValueError, TypeError) as err:
            raise ModelError(str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__) from None
    else:
        scorer = _loaded_scorer(model, processor, family, s)
    if s.control:
        from .scorers.controls import mark_control

        if "+" not in scorer.family:
            try:
                mark_control(scorer, s.control, s.seed)
            except ValueError as err:
                raise SettingError(str(err)) from None
    return scorer


def _check_shapes(sources: Sequence[SplitSource], scorer: Any) -> None:
    """TraVLR's true/false framing (1 x 1 items) needs a match probability; a dual encoder's
    similarity is not one, and vlprobe does not invent one."""
    from .scorers.base import DualScorer

    if not isinstance(scorer, DualScorer):
        return
    for src in sources:
        if src.shape == (1, 1):
            raise ModelError(
                f"{src.name} has 1 x 1 items (one image, one statement, true or false), which are scored by a "
                f"match probability; {scorer.model_id} is a dual encoder (family {scorer.family!r}), whose "
                f"similarity is not a calibrated probability. Use a family that gives one (itm, vqascore), the "
                f"query-vs-foil framing of the dataset, or `vlprobe probe`, which fits a probe on the frozen "
                f"features as TraVLR's paper does"
            )


# ---- the result -----------------------------------------------------------------------------------

class Evaluation:
    """What :func:`evaluate` returns: the scored splits, their metrics, the papers' aggregates and
    the provenance; :meth:`save` writes what ``vlprobe evaluate`` writes."""

    def __init__(self, splits: list[ScoredSplit], provenance: dict[str, Any], summary: dict[str, Any] | None,
                 *, main_process: bool = True) -> None:
        self.splits = splits
        self.provenance = provenance
        self.summary = summary or {}
        self.main_process = main_process

    @property
    def results(self) -> dict[str, Any]:
        """The results.json document."""
        from .results import results_document

        return results_document(self.splits, self.provenance, self.summary)

    def to_pandas(self, per_tag: bool = False) -> Any:
        """One row per dataset/config/split/metric (and per tag with ``per_tag=True``): value,
        ci_low, ci_high, chance, support, n_items, n_ties."""
        import pandas as pd

        from .results import CSV_COLUMNS, csv_rows

        rows = [r for r in csv_rows(self.splits) if per_tag or not r["tag"]]
        frame = pd.DataFrame(rows, columns=list(CSV_COLUMNS))
        return frame if per_tag else frame.drop(columns=["tag"])

    def scores(self) -> Any:
        """The per-item scores as a ``datasets.Dataset`` (the rows of scores.parquet)."""
        import datasets

        from .results import scores_table

        return datasets.Dataset(scores_table(self.splits))

    def table(self) -> str:
        """The table ``vlprobe evaluate`` prints."""
        from .results import format_table

        return format_table(self.splits, keys_of=display_keys) + format_summary(self.summary)

    def save(self, out_dir: str | os.PathLike) -> list[Path]:
        """Write results.json, scores.parquet, results.csv and one plot per split into ``out_dir``,
        as one unit (a temporary folder swapped in). Returns the paths written."""
        from .results import check_output_dir, write_outputs

        if not self.main_process:
            return []
        check_output_dir(out_dir)
        try:
            return write_outputs(out_dir, self.splits, self.provenance, self.summary)
        except OSError as err:
            cache = (self.provenance.get("engine") or {}).get("cache_dir")
            rerun = (f"the scores are in the cache ({cache}), so running it again computes nothing" if cache
                     else "nothing was cached (cache_dir none), so a rerun scores again")
            raise VlprobeError(f"cannot write the outputs to {out_dir} ({err.strerror or err}); {rerun}") from None

    def plot(self) -> Any:
        """A matplotlib figure: one panel per split, a bar per metric with its CI and chance."""
        import matplotlib.pyplot as plt

        from .results import plot_split

        n = max(1, len(self.splits))
        cols = min(3, n)
        rows = math.ceil(n / cols)
        fig, axes = plt.subplots(rows, cols, figsize=(5.0 * cols, 3.8 * rows), squeeze=False)
        for ax, split in zip(axes.flat, self.splits):
            plot_split(ax, split)
        for ax in list(axes.flat)[len(self.splits):]:
            ax.axis("off")
        fig.tight_layout()
        return fig

    def __repr__(self) -> str:
        names = ", ".join(s.name for s in self.splits)
        return f"<vlprobe.Evaluation of {self.provenance.get('model', {}).get('model_id')} on {names}>"


def _summary_module() -> Any:
    try:
        from . import summary
    except ImportError:
        return None
    return summary


def display_keys(split: ScoredSplit) -> list[str]:
    """The metrics the printed table shows for a split: those meaningful for its benchmark and item
    shape (:func:`vlprobe.summary.display_metrics`); every metric when that module is absent."""
    from .results import metric_keys

    available = metric_keys(split.metrics)
    mod = _summary_module()
    if mod is None or not hasattr(mod, "display_metrics"):
        return available
    bench = mod.benchmark_of(split.dataset) if hasattr(mod, "benchmark_of") else split.benchmark
    keys = mod.display_metrics(bench, split.shape, available)
    return [k for k in keys if k in available] or available


def summarize(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The papers' aggregates per benchmark (:func:`vlprobe.summary.summarize`), {} without it."""
    mod = _summary_module()
    if mod is None or not hasattr(mod, "summarize"):
        return {}
    return mod.summarize(entries) or {}


def format_summary(summary: dict[str, Any]) -> str:
    """The papers' aggregates as text under the table ("" when there are none): per benchmark its
    source, one line per row (config or aggregate, split, headline values with CIs), its notes."""
    from .results import pct

    lines: list[str] = []
    for bench, block in (summary or {}).items():
        rows = block.get("rows") or []
        if not rows:
            continue
        source = f" ({block['source']})" if block.get("source") else ""
        lines += ["", f"{bench}: the paper's aggregates{source}"]
        for row in rows:
            name = f"{row.get('label') or row.get('config')}/{row.get('split')}"
            cis = row.get("ci") or {}
            cells = []
            for key, value in (row.get("values") or {}).items():
                ci = cis.get(key)
                cells.append(f"{key} {pct(value)}" + (f" [{pct(ci[0])},{pct(ci[1])}]" if ci else ""))
            extra = f"  ({row['framing']})" if row.get("framing") else ""
            n = f"  n={row['n_items']}" if row.get("n_items") is not None else ""
            lines.append(f"  {name:<32} " + "  ".join(cells) + n + extra)
        lines += [f"  note: {note}" for note in block.get("notes") or []]
    return ("\n" + "\n".join(lines)) if lines else ""


# ---- scoring, streamed --------------------------------------------------------------------------

def _chunks(sources: Sequence[SplitSource], s: Settings) -> Iterator[list[tuple[int, Any]]]:
    """(source index, item) lists of at most ``chunk_size`` items, in order, across splits. With the
    shuffle control a split is one chunk (its images are permuted across all its items)."""
    from .scorers.controls import apply_control

    buffer: list[tuple[int, Any]] = []
    for k, src in enumerate(sources):
        size = src.n if s.control == "shuffle" else s.chunk_size
        for start, rows in src.row_batches(size):
            items = src.items(start, rows, s.modality)
            del rows
            if s.control:
                try:
                    items = list(apply_control(items, s.control, seed=s.seed))
                except ValueError as err:
                    raise DatasetError(f"{src.name}: {err}") from None
            for item in items:
                buffer.append((k, item))
                if len(buffer) >= s.chunk_size and s.control != "shuffle":
                    yield buffer
                    buffer = []
            if s.control == "shuffle" and len(buffer) >= s.chunk_size:
                yield buffer
                buffer = []
            # Nothing of this batch may stay referenced here while the next one is read: the items
            # hold their image bytes (2,000 photos of 90 KB: 180 MB), and the old chunk was kept
            # alive beside the next one while it was read (issue 25).
            items = item = None
    if buffer:
        yield buffer


def _distributed(device: str | None) -> tuple[Any, str | None]:
    """Under ``accelerate launch`` (WORLD_SIZE > 1): the initialised state and this process's device."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return None, device
    import torch
    from accelerate import PartialState

    cpu = (device or "").startswith("cpu") or not torch.cuda.is_available()
    state = PartialState(cpu=cpu)
    return state, (device if device else str(state.device))


def open_cache(cache_dir: Any, scorer: Any, rank: int = 0) -> Any:
    """The score cache asked for (``cache_dir``: a folder, None for the default, ``"none"`` for no
    cache), or None when there is none or it cannot be written (it has warned)."""
    from .cache import ScoreCache, default_cache_dir

    if str(cache_dir).lower() == "none":
        return None
    root = Path(cache_dir) if cache_dir else default_cache_dir()
    # ScoreCache never raises: an unwritable one has warned once (vlprobe/cache.py) and is off.
    cache = ScoreCache(root, scorer.cache_key(), rank=rank)
    return cache if cache.enabled else None


def throwaway_cache(scorer: Any) -> tuple[Any, Any]:
    """(cache, its TemporaryDirectory) for a run that asked for no cache but reads several chunks:
    it carries inputs across chunks, and the caller deletes it after the run (an interrupted run
    cannot resume from it, and EngineInterrupted says so)."""
    import tempfile

    from .cache import ScoreCache

    temp = tempfile.TemporaryDirectory(prefix="vlprobe-chunk-cache-")
    cache = ScoreCache(temp.name, scorer.cache_key())
    cache.temporary = True
    return cache, temp


def _score(sources: list[SplitSource], scorer: Any, s: Settings, cache: Any, workers: int,
           progress: bool, main: bool) -> tuple[list[ScoredSplit], dict[str, Any]]:
    """Stream every source through the engine; the scored splits (no images) and the engine stats."""
    from .engine import Engine, EngineOutOfMemory
    from .images import ImageError

    splits = [ScoredSplit(dataset=src.dataset, config=src.config, split=src.split, items=[], scores=ScoreMatrices(),
                          probabilities=ScoreMatrices(), data=src.data) for src in sources]
    total = sum(src.n for src in sources)
    temp = None
    if cache is None and total > s.chunk_size and int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        cache, temp = throwaway_cache(scorer)
    engine = Engine(scorer, batch_size=s.batch_size, num_workers=workers, cache=cache,
                    progress=progress and total <= s.chunk_size)
    bar = None
    if progress and main and total > s.chunk_size:
        from tqdm.auto import tqdm

        bar = tqdm(total=total, desc="scoring", unit="item")
    stats: dict[str, Any] = {}
    chunks = 0
    start = time.perf_counter()
    try:
        for chunk in _chunks(sources, s):
            try:
                result = engine.score([item for _, item in chunk])
            except EngineOutOfMemory as err:
                raise ModelError(str(err)) from None
            except ImageError as err:
                raise DatasetError(str(err)) from None
            chunks += 1
            for key, value in result.stats.items():
                if key != "world_size" and isinstance(value, (int, float)):
                    stats[key] = stats.get(key, 0) + value
                else:
                    stats[key] = value
            probs = result.probabilities
            rows: dict[int, list[int]] = {}  # source -> its items' places in the chunk
            for i, (k, item) in enumerate(chunk):
                splits[k].items.append(ScoredItem.of(item))
                rows.setdefault(k, []).append(i)
            for k, places in rows.items():
                out = splits[k]
                out.scores.extend([result.scores[i] for i in places])  # one stacked block per chunk
                if out.probabilities is not None:
                    if probs is None:
                        out.probabilities = None
                    else:
                        out.probabilities.extend([probs[i] for i in places])
            if bar is not None:
                bar.update(len(chunk))
            del result, probs, chunk  # the chunk's items (image bytes) and per-item arrays go now
    finally:
        if bar is not None:
            bar.close()
        if cache is not None:
            cache.close()
        if temp is not None:
            temp.cleanup()
    if chunks > 1:
        stats["seconds"] = round(time.perf_counter() - start, 3)
        stats["chunks"] = chunks
        stats["chunk_size"] = s.chunk_size
        if temp is not None:
            stats["cached"] = 0  # only the throw-away cache served them: nothing came from a cache kept
    for out in splits:
        if out.probabilities is not None and len(out.probabilities) != len(out.items):
            out.probabilities = None
    return splits, stats


def _measure(split: ScoredSplit, s: Settings) -> None:
    from . import metric as metric_module

    scores, gold, probs = _metric_inputs(split)
    tags = [it.tags for it in split.items]  # tuples: the metric copies them into lists itself
    try:
        split.metrics = metric_module.compute(
            scores, gold, ties=s.ties, probabilities=probs, threshold=s.threshold,
            tags=tags if any(tags) else None, bootstrap=s.bootstrap, confidence=s.confidence, seed=s.seed,
        )
    except ValueError as err:
        raise DatasetError(f"{split.name}: {err}") from None


def _metric_inputs(split: ScoredSplit) -> tuple[Any, Any, Any]:
    """(scores, gold, probabilities) for the metric: when every item has one shape, stacked
    ``(N, m, n)`` arrays (float64 scores and probabilities, boolean gold), the metric's own fast
    path, which stacks a list of per-item matrices into exactly these arrays; else the lists."""
    golds = [it.gold for it in split.items]
    scores, probs = split.scores, split.probabilities
    if isinstance(scores, ScoreMatrices) and (probs is None or isinstance(probs, ScoreMatrices)) and golds:
        shape = golds[0].shape
        stacked = scores.stacked()
        stacked_probs = None if probs is None else probs.stacked()
        if stacked is not None and stacked.shape == (len(golds), *shape) and \
                (probs is None or (stacked_probs is not None and stacked_probs.shape == stacked.shape)) and \
                all(g.shape == shape for g in golds):
            return (stacked.astype(np.float64), np.stack(golds).astype(bool, copy=False),
                    None if probs is None else stacked_probs.astype(np.float64))
    return scores, golds, probs


# ---- the default job and the command line ---------------------------------------------------------

def _is_built(folder: Path) -> bool:
    return any((folder / "data").rglob("*.parquet")) if (folder / "data").is_dir() else False


def default_datasets(root: str | os.PathLike) -> list[str]:
    """The offline default's dataset folders: ``root/<name>`` where it holds a ``vlprobe.yaml`` (a
    clone's committed card folders), else the folder an installed vlprobe builds into,
    ``~/.cache/vlprobe/datasets/<name>`` (see :func:`vlprobe.locations.dataset_folder`): wherever
    ``vlprobe build <name>`` with no ``--out`` writes, run from the same folder."""
    from .locations import dataset_folder

    out = []
    for name in DEFAULT_DATASETS:
        folder = dataset_folder(name, root)
        if not _is_built(folder):
            raise DatasetError(
                f"the default dataset folder {folder} has not been built yet; build it with "
                f"`vlprobe build {name}` (or pass --dataset FOLDER_OR_HUB_ID)"
            )
        out.append(str(folder))
    return out


def default_model(root: str | os.PathLike) -> str:
    """The offline default's model folder: ``root/models/mini-clip`` in a clone, else the copy
    this package ships (inside the installed package, see :mod:`vlprobe.locations`)."""
    from .locations import shipped_model

    root = Path(root)
    model = root / DEFAULT_MODEL
    if (model / "config.json").is_file():
        return str(model)
    packaged = shipped_model()
    if packaged is not None:
        return str(packaged)
    trainer = root / "scripts" / "train_mini_clip.py"
    how = f" train it with `python {trainer.relative_to(root)}`, or" if trainer.is_file() else ""
    raise ModelError(
        f"the default model {model} is not there and this vlprobe installation ships none (the small "
        f"offline CLIP has not been made in this checkout);{how} pass --model with a local folder written "
        f"by save_pretrained, or a Hub id"
    )


def command_line(datasets_: Sequence[Any], model: Any, s: Settings, *, spec: Any, family: str | None,
                 revision: str | None, dataset_revision: str | None, cache_dir: Any, out: Any) -> str | None:
    """The ``vlprobe evaluate`` command that reruns this job, every option spelled out; None when
    an input is an object in memory (no command can name it)."""
    if not isinstance(model, (str, os.PathLike)) or not all(isinstance(d, (str, os.PathLike)) for d in datasets_):
        return None
    if spec is not None and not isinstance(spec, (str, os.PathLike)):
        return None
    parts = ["vlprobe", "evaluate"]
    for d in datasets_:
        parts += ["--dataset", str(d)]
    options = [
        ("config", _joined(s.configs)), ("split", _joined(s.splits)), ("dataset-revision", dataset_revision),
        ("spec", spec), ("model", model), ("revision", revision), ("family", family), ("ties", s.ties),
        ("bootstrap", s.bootstrap), ("confidence", s.confidence), ("threshold", s.threshold), ("seed", s.seed),
        ("limit", s.limit), ("batch-size", s.batch_size), ("num-workers", s.num_workers), ("dtype", s.dtype),
        ("device", s.device), ("modality", s.modality), ("control", s.control), ("cache-dir", cache_dir),
        ("out", out),
    ]
    for key, value in options:
        if value is not None:
            parts += [f"--{key}", str(value)]
    if s.exact_preprocessing:
        parts.append("--exact-preprocessing")
    return " ".join(shlex.quote(p) for p in parts)


# ---- the API --------------------------------------------------------------------------------------

def evaluate(
    model: Any = None,
    datasets: Any = None,
    *,
    processor: Any = None,
    configs: Any = "all",
    splits: Any = None,
    spec: Any = None,
    family: str | None = None,
    revision: str | None = None,
    dataset_revision: str | None = None,
    ties: str = "strict",
    bootstrap: int = 1000,
    confidence: float = 0.95,
    threshold: float = 0.5,
    seed: int = 0,
    limit: int | None = None,
    batch_size: int = 32,
    num_workers: int | None = None,
    device: str | None = None,
    dtype: str = "float32",
    modality: str = "image",
    control: str | None = None,
    cache_dir: Any = None,
    progress: bool = True,
    out: str | os.PathLike | None = None,
    root: str | os.PathLike | None = None,
    chunk_size: int = CHUNK_ROWS,
    exact_preprocessing: bool = False,
    log: Callable[[str], None] | None = None,
) -> Evaluation:
    """Score ``model`` on ``datasets`` and measure it with the papers' metrics.

    ``model``: a model folder or Hub id; an already-loaded ``transformers`` model with its
    processor (``model=(model, processor)`` or ``processor=``); or a vlprobe scorer.
    ``datasets``: a folder, a Hub id, a ``datasets.Dataset``/``DatasetDict`` (with ``spec=``), a
    list of those, or a dict {name: any of those}. With neither ``model`` nor ``datasets``: the
    offline default (the ``travlr`` and ``winoground_style`` folders and ``models/mini-clip`` under
    ``root``, default the working directory).
    ``configs``: ``"all"``, ``"*"``, a comma-separated string or a list; ``splits``: likewise, None
    for the test splits. ``spec``: a vlprobe.yaml path, a dict or an ItemSpec (default: the
    dataset's). ``ties``, ``bootstrap``, ``confidence``, ``threshold``, ``seed``: the metric's.
    ``limit``: the first N rows of each split. ``batch_size``, ``num_workers``, ``device``,
    ``dtype``: the engine's. ``modality``: image, caption, both (TraVLR's settings). ``control``:
    blank or shuffle. ``cache_dir``: the score cache (None: the default, "none": off). ``out``:
    checked before scoring and written at the end (as :meth:`Evaluation.save`). ``chunk_size``:
    rows read and scored at a time. ``exact_preprocessing``: always the model's PIL image processor
    (the one the papers ran), never the fast torchvision one. ``log``: where status lines go (default: stderr when
    ``progress``).

    Raises :class:`~vlprobe.errors.SettingError`, :class:`~vlprobe.errors.DatasetError` or
    :class:`~vlprobe.errors.ModelError`, before any scoring where the fault can be seen then.
    """
    from .dataset_folder import progress_bars_off
    from .results import check_output_dir, environment, now_iso

    s = Settings(configs=configs, splits=splits, ties=ties, bootstrap=bootstrap, confidence=confidence,
                 threshold=threshold, seed=seed, limit=limit, batch_size=batch_size, num_workers=num_workers,
                 device=device, dtype=dtype, modality=modality, control=control, chunk_size=chunk_size,
                 exact_preprocessing=bool(exact_preprocessing)).check()
    if out is not None:
        check_output_dir(out)
    if log is None:
        log = (lambda msg: print(msg, file=sys.stderr)) if progress else (lambda msg: None)
    root = Path(root) if root is not None else Path.cwd()
    if datasets is None:
        datasets = default_datasets(root)
    if model is None:
        model = default_model(root)
    names: list[str] | None = None
    if isinstance(datasets, Mapping) and not _is_dataset_dict(datasets):
        names, datasets = [str(k) for k in datasets], list(datasets.values())
    elif isinstance(datasets, (str, os.PathLike)) or _is_dataset_object(datasets):
        datasets = [datasets]
    datasets = list(datasets)
    if not datasets:
        raise SettingError("no dataset given")

    state, device_ = _distributed(s.device)
    main = state is None or state.is_main_process
    say = log if main else (lambda msg: None)
    with progress_bars_off():
        sources = plan_splits(datasets, s, spec=spec, dataset_revision=dataset_revision, names=names)
    model_name = model[0] if isinstance(model, tuple) else model
    shown = model_name if isinstance(model_name, (str, os.PathLike)) else type(model_name).__name__
    say(f"{sum(src.n for src in sources)} items in {len(sources)} config/split(s); loading {shown}")
    s_model = Settings(**{**s.__dict__, "device": device_})
    with _quiet_transformers(not progress):
        scorer = load_model(model, processor, family, revision, s_model)
    _check_shapes(sources, scorer)

    workers = s.num_workers if s.num_workers is not None else default_workers()
    cache = open_cache(cache_dir, scorer, state.process_index if state else 0)
    cache_path = str(cache.dir) if cache is not None else None
    with progress_bars_off():
        scored, stats = _score(sources, scorer, s, cache, workers, progress, main)
    provenance = {
        "created": now_iso(),
        "command": command_line(datasets, model, s, spec=spec, family=family, revision=revision,
                                dataset_revision=dataset_revision, cache_dir=cache_dir, out=out),
        "argv": list(sys.argv),
        "model": scorer.describe(),
        "settings": s.record(workers),
        "datasets": [{"dataset": _dataset_label(d, names[k] if names else None), "revision": dataset_revision}
                     for k, d in enumerate(datasets)],
        "environment": environment(),
        "engine": {**stats, "cache_dir": cache_path},
    }
    if not main:
        return Evaluation(scored, provenance, None, main_process=False)
    for split in scored:
        _measure(split, s)
    from .results import result_entries

    summary = summarize(result_entries(scored))
    result = Evaluation(scored, provenance, summary)
    if out is not None:
        result.save(out)
    return result


class _quiet_transformers:
    """No "Loading weights" bars from transformers inside, when ``quiet``."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.was = False

    def __enter__(self) -> None:
        if self.quiet:
            from transformers.utils import logging as hf_logging

            self.was = hf_logging.is_progress_bar_enabled()
            hf_logging.disable_progress_bar()

    def __exit__(self, *exc: Any) -> None:
        if self.quiet and self.was:
            from transformers.utils import logging as hf_logging

            hf_logging.enable_progress_bar()


def _dataset_label(dataset: Any, name: str | None) -> str:
    if name:
        return name
    if isinstance(dataset, (str, os.PathLike)):
        return str(dataset)
    info = getattr(dataset, "info", None)
    return getattr(info, "dataset_name", None) or "dataset"


def _is_dataset_object(obj: Any) -> bool:
    try:
        import datasets as hf
    except ImportError:
        return False
    return isinstance(obj, (hf.Dataset, hf.DatasetDict))


def _is_dataset_dict(obj: Any) -> bool:
    try:
        import datasets as hf
    except ImportError:
        return False
    return isinstance(obj, hf.DatasetDict)
