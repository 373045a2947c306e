"""``vlprobe.probe``: a :class:`vlprobe.runner.Run` from the TraVLR-shaped splits to measured probes."""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Sequence
from dataclasses import asdict
from typing import NamedTuple

from ..dataset.spec import dataset_benchmark, dataset_version
from ..defaults import BATCH_SIZE, CHUNK_ROWS
from ..names import find_dataset, find_model
from ..options import Refused
from ..runner import Run, RunCache
from ..scorers.base import DualScorer, Scorer
from ..scorers.loading import detect_family, load_config
from ..scoring.engine import Engine
from ..storage.feature_store import FeatureStore
from ..storage.locations import DEFAULT_MODEL
from .data import Splits, check_classes, check_train_rows, load_splits
from .features import _truncation, extract_features
from .finetune import FINETUNE_LR, finetune_rows, schedule_plan
from .protocol import run_probes
from .result import ProbeResult
from .settings import (
    DEFAULT_DATASET,
    L2_GRID,
    MODALITIES,
    PROBE_RUN_FILE,
    TEXT_ONLY,
    VALIDATION,
    ProbeSettingError,
    ProbeSettings,
    one_dataset,
)

# torch is imported where used (11.7 s): the model has imported it by then, and a misspelt name is refused before.


def probe(
    model: object = DEFAULT_MODEL,
    datasets: object = DEFAULT_DATASET,  # one dataset, alone or in a one-element list: checked by one_dataset
    configs: str | Sequence[str] = "all",
    *,
    dataset_revision: str | None = None,
    revision: str | None = None,
    family: str | None = None,
    train_modalities: str | Sequence[str] = MODALITIES,
    test_modalities: str | Sequence[str] = MODALITIES,
    train_sizes: str | Sequence[int] | None = None,
    few_shot: int = 0,
    classifier: str = "logreg",
    text_baseline: bool = True,
    finetune: bool = False,
    epochs: int = 3,
    schedule: str = "quick",
    bootstrap: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    seeds: int = 3,
    limit: int | None = None,
    batch_size: int | str = BATCH_SIZE,
    num_workers: int | None = None,
    dtype: str = "float32",
    device: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    out: str | os.PathLike[str] | None = None,
    outside_images: bool = False,
    chunk_size: int = CHUNK_ROWS,
    progress: bool = True,
    processor: object = None,
    dataset: str | os.PathLike[str] | None = None,
) -> ProbeResult:
    """Run TraVLR's train-on-one-modality protocol on ``model``'s frozen features.

    ``model``: a model folder or Hub id (``mini-clip``, the default: the small CLIP vlprobe ships), an
    already-loaded transformers model with its processor (``model=(model, processor)`` or ``processor=``), or a
    vlprobe scorer. ``datasets``: one TraVLR-shaped folder, built benchmark name or Hub id (default ``travlr``, where
    ``vlprobe build travlr`` writes it), as ``vlprobe.evaluate`` takes it (a one-element list too). ``cache_dir``: the
    engine's feature cache (default ``$VLPROBE_CACHE`` or ``~/.cache/vlprobe``; ``"none"``: off). ``chunk_size``:
    rows read and encoded at a time; ``num_workers``: DataLoader workers decoding images (default as evaluate's).
    ``out``: checked first, written at the end (:meth:`ProbeResult.save`).
    ``seeds``: runs per setting, seeds ``seed`` .. ``seed + seeds - 1`` (the paper: 3); ``schedule``: fine-tuning's,
    ``"quick"`` (``epochs``, the best on validation kept) or ``"paper"`` (80 epochs, no early stopping). Every
    keyword but ``processor`` is an option of ``vlprobe probe``, checked into
    :class:`~vlprobe.probing.settings.ProbeSettings` before anything is loaded (:class:`ProbeSettingError` names the
    argument; a misspelt model or dataset name in about a second, with the closest known name); leftovers of killed
    runs are removed first, said in one line. ``dataset=``, the old name of ``datasets``, is still taken, with a
    :class:`DeprecationWarning`.
    """
    if dataset is not None:
        warnings.warn("vlprobe.probe(dataset=...) is now datasets=..., as in vlprobe.evaluate; dataset= will "
                      "be removed", DeprecationWarning, stacklevel=2)
        if datasets != DEFAULT_DATASET:
            raise ProbeSettingError("dataset", dataset, "give the dataset once, as datasets= (dataset= is its "
                                                        "old name)")
        try:
            datasets = one_dataset(dataset)
        except Refused as why:
            raise ProbeSettingError("dataset", dataset, why.detail) from None
    return ProbeRun(ProbeSettings(**{k: v for k, v in locals().items() if k != "dataset"}))()


class _Done(NamedTuple):
    rows: list[dict[str, object]]
    features: dict[str, object]
    timings: dict[str, float]


class ProbeRun(Run):
    """:func:`probe`'s run, from the splits to a :class:`ProbeResult`."""

    OWN = PROBE_RUN_FILE
    s: ProbeSettings

    def names(self) -> list[str]:
        return [self.s.datasets]

    def load_data(self) -> Splits:
        s = self.s
        self.data_name = str(find_dataset(s.datasets))
        return load_splits(self.data_name, s.configs, revision=s.dataset_revision, limit=s.limit,
                           outside_images=s.outside_images)

    def before_model(self, data: Splits) -> None:
        # Refused before the weights load when the config tells the family; a model object is checked once wrapped.
        s = self.s
        self.early_family = _family_from_config(s.model, s.family, s.revision) if s.processor is None else None
        check_train_rows(data, s.train_sizes, s.few_shot, s.limit)
        if self.early_family is not None:
            check_classes(data, s.datasets, s.limit, trained=self.early_family != "vqascore")

    def after_model(self, scorer: Scorer, data: Splits) -> None:
        self.zero_shot = getattr(scorer, "family", "") == "vqascore"
        if self.early_family is None:
            check_classes(data, self.s.datasets, self.s.limit, trained=not self.zero_shot)
        self.text_only = self.s.text_baseline and isinstance(scorer, DualScorer)
        needed = sorted(set(self.s.train_modalities) | set(self.s.test_modalities), key=MODALITIES.index)
        self.settings = needed + ([TEXT_ONLY] if self.text_only else [])

    def rows(self, data: Splits) -> int:
        return max((len(sp) for by in data.values() for sp in by.values()), default=0)

    def work(self, engine: Engine, data: Splits, cache: RunCache) -> _Done:
        s = self.s
        store = FeatureStore()  # the features, on disk for the length of this call
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            features, stats = extract_features(engine, data, self.settings, s.chunk_size, store)
            feature_seconds, feature_cpu = time.perf_counter() - t0, time.process_time() - c0
            t1, c1 = time.perf_counter(), time.process_time()
            import torch

            threads = torch.get_num_threads()
            torch.set_num_threads(1)  # the probes' matrices are small: threads only add contention (3x slower on 2 busy cores)
            try:
                rows = run_probes(features, data, train_modalities=s.train_modalities,
                                  test_modalities=s.test_modalities, text_only=self.text_only,
                                  zero_shot=self.zero_shot, train_sizes=s.train_sizes, few_shot=s.few_shot,
                                  classifier=s.classifier, bootstrap=s.bootstrap, confidence=s.confidence,
                                  seed=s.seed, seeds=s.seeds, progress=s.progress)
            finally:
                torch.set_num_threads(threads)
        finally:
            features = {}
            store.cleanup()
        if s.finetune:
            rows += finetune_rows(engine.scorer, data, train_modalities=s.train_modalities,
                                  test_modalities=s.test_modalities, epochs=s.epochs,
                                  # fine-tuning's own batch: "auto" sizes the engine's encoding only
                                  batch_size=s.batch_size if isinstance(s.batch_size, int) else BATCH_SIZE,
                                  bootstrap=s.bootstrap, confidence=s.confidence, seed=s.seed, seeds=s.seeds,
                                  schedule=s.schedule, progress=s.progress)
        probe_seconds, probe_cpu = time.perf_counter() - t1, time.process_time() - c1
        computed = sum(int(st.get("computed", st.get("computed_pairs", 0)) or 0) for st in stats.values())
        extracted: dict[str, object] = {
            "stats": stats, "computed_inputs": computed, "cache_dir": cache.folder,
            "text_max_length": getattr(engine.scorer, "max_length", None),
            "caption_truncated": _truncation(engine.scorer, data) if any(
                st in ("caption", "both", TEXT_ONLY) for st in self.settings) else None}
        # wall-clock and CPU seconds of this process (CPU time is what a loaded machine does not distort)
        timings = {"feature_seconds": round(feature_seconds, 3), "probe_seconds": round(probe_seconds, 3),
                   "feature_cpu_seconds": round(feature_cpu, 3), "probe_cpu_seconds": round(probe_cpu, 3)}
        return _Done(rows, extracted, timings)

    def results(self, scorer: Scorer, data: Splits, done: _Done) -> ProbeResult:
        s, (rows, features, timings) = self.s, done
        tuned = {**asdict(schedule_plan(s.schedule, s.epochs)), "lr": FINETUNE_LR,
                 "head": "linear on [u, v, u*v, |u-v|]"} if s.finetune else False
        spec = next(sp.spec for by in data.values() for sp in by.values())
        benchmark = dataset_benchmark(self.data_name, spec)[0]
        provenance = self.provenance(
            scorer, s.command_line(),
            dataset={"dataset": s.datasets, "revision": s.dataset_revision, "benchmark": benchmark,
                     "dataset_version": dataset_version(spec, benchmark),
                     "splits": {t: {name: sp.info for name, sp in by.items()} for t, by in data.items()}},
            settings=s.record(l2_grid=list(L2_GRID), model_selection=VALIDATION, finetune=tuned,
                              text_baseline=self.text_only, zero_shot=self.zero_shot, num_workers=self.workers,
                              seeds=list(range(s.seed, s.seed + s.seeds))),  # the seeds run, not their count
            features=features,
            timings={**timings, "total_seconds": round(time.perf_counter() - self.started, 3)})
        return ProbeResult(rows, provenance)


def _family_from_config(model: object, family: str | None, revision: str | None) -> str | None:
    """The scorer family a model folder or Hub id loads as, from its config alone (None when that is not cheap)."""
    if family is not None:
        return family
    model = find_model(model)
    if not isinstance(model, (str, os.PathLike)):
        return None
    try:
        return detect_family(load_config(str(model), revision=revision), model=str(model))
    except Exception:  # the load below reports it, with the model's own error
        return None
