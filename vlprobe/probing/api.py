"""``vlprobe.probe``: check every setting and ``--out``, load the splits and the model, compute the
features, run the probes (and fine-tuning), measure, write the run folder as one unit."""

from __future__ import annotations

import os
import sys
import time
from typing import Any, Sequence

from ..errors import DatasetError
from ..locations import DEFAULT_MODEL
from ..options import CHUNK_ROWS, pick
from ..spec import dataset_benchmark
from .data import _check_classes, _resolve_dataset, _resolve_model, load_splits
from .features import _truncation, extract_features
from .finetune import FINETUNE_LR, finetune_rows, schedule_plan
from .protocol import run_probes
from .result import ProbeResult
from .settings import (
    _NONE,
    DEFAULT_DATASET,
    L2_GRID,
    MODALITIES,
    OPTIONS,
    PROBE_RUN_FILE,
    TEXT_ONLY,
    VALIDATION,
    ZERO_SHOT,
    ProbeSettingError,
    _one_dataset,
    check_settings,
    command_line,
    record,
)


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
    schedule: str = "quick",
    bootstrap: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    seeds: int = 3,
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
    ``seeds``: runs per setting, seeds ``seed`` .. ``seed + seeds - 1`` (the paper: 3); ``schedule``: the
    fine-tuning schedule, ``"quick"`` (``epochs``, the best on validation kept) or ``"paper"`` (80 epochs, no early
    stopping). Every keyword is an option of ``vlprobe probe`` (:data:`vlprobe.probing.settings.OPTIONS`).

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
    s = check_settings(**pick(OPTIONS, locals()))
    from ..leftovers import sweep
    from ..results import check_output_dir

    out, progress, dataset_revision, limit = s["out"], s["progress"], s["dataset_revision"], s["limit"]
    if out is not None:
        check_output_dir(out, PROBE_RUN_FILE)
    sweep(out)
    train_modalities, test_modalities, sizes = s["train_modalities"], s["test_modalities"], s["train_sizes"]
    dataset, configs, chunk_size, batch_size = s["datasets"], s["configs"], s["chunk_size"], s["batch_size"]
    few_shot, classifier, bootstrap, confidence, seed = (s["few_shot"], s["classifier"], s["bootstrap"],
                                                         s["confidence"], s["seed"])
    started = time.perf_counter()
    from ..dataset_folder import progress_bars_off
    from ..evaluation import check_reachable, quiet_progress

    # a name that is neither a folder nor reachable fails in about a second, as in vlprobe.evaluate
    try:
        check_reachable(str(_resolve_dataset(dataset)), dataset_revision)
    except DatasetError as err:
        if dataset != DEFAULT_DATASET:
            raise
        raise DatasetError(f"dataset {dataset!r} (the default) is not a folder here and cannot be read from the Hub; "
                           f"run from the checkout that holds it, set VLPROBE_ROOT, or build one with `vlprobe build "
                           f"travlr --out DIR` and pass --dataset DIR ({err})") from None

    with progress_bars_off():  # datasets' bars of a first load's conversion, as vlprobe.evaluate hides them
        data = load_splits(dataset, configs, revision=dataset_revision, limit=limit)
    # Rows that cannot train a probe are refused before the weights load when the family is known from
    # the config alone (a folder or Hub id); a model passed as an object is checked once it is wrapped.
    early_family = _family_from_config(s["model"], s["family"], s["revision"]) if processor is None else None
    if early_family is not None:
        _check_classes(data, dataset, limit, trained=early_family != "vqascore")
    with quiet_progress(not progress):  # no "Loading weights" bars with progress=False, as evaluate
        scorer = _scorer(s["model"] if processor is None else (s["model"], processor), s["family"], s["device"],
                         s["dtype"], s["revision"])
    zero_shot = getattr(scorer, "family", "") == "vqascore"
    if early_family is None:
        _check_classes(data, dataset, limit, trained=not zero_shot)
    from ..scorers.base import DualScorer

    text_only = s["text_baseline"] and isinstance(scorer, DualScorer)
    needed = sorted(set(train_modalities) | set(test_modalities), key=MODALITIES.index)
    settings = needed + ([TEXT_ONLY] if text_only else [])

    from ..engine import Engine
    from ..evaluation import default_workers, open_cache, throwaway_cache
    from ..feature_store import FeatureStore

    cache = open_cache(s["cache_dir"], scorer)
    kept_cache = cache is not None
    temp = None
    if cache is None and any(len(sp) > chunk_size for by in data.values() for sp in by.values()):
        cache, temp = throwaway_cache(scorer)  # carries repeated texts across chunks
    workers = s["num_workers"] if s["num_workers"] is not None else default_workers()
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
                              seeds=s["seeds"], progress=progress)
        finally:
            torch.set_num_threads(threads)
    finally:
        features = None
        store.cleanup()
    for r in rows:
        r.setdefault("classifier", ZERO_SHOT if r["setting"] == ZERO_SHOT else classifier)
    if s["finetune"]:
        rows += finetune_rows(scorer, data, train_modalities=train_modalities, test_modalities=test_modalities,
                              epochs=s["epochs"], batch_size=batch_size, bootstrap=bootstrap, confidence=confidence,
                              seed=seed, seeds=s["seeds"], schedule=s["schedule"], progress=progress)
    probe_seconds, probe_cpu = time.perf_counter() - t1, time.process_time() - c1
    from ..results import environment, now_iso

    computed = sum(int(st.get("computed", st.get("computed_pairs", 0)) or 0) for st in stats.values())
    tuned = {**schedule_plan(s["schedule"], s["epochs"]), "lr": FINETUNE_LR,
             "head": "linear on [u, v, u*v, |u-v|]"} if s["finetune"] else False
    provenance = {
        "created": now_iso(),
        "command": command_line(s),
        "argv": list(sys.argv),
        "model": scorer.describe(),
        "dataset": {"dataset": dataset, "revision": dataset_revision,
                    "benchmark": dataset_benchmark(dataset, next(sp.spec for by in data.values() for sp in by.values()))[0],
                    "splits": {t: {name: sp.info for name, sp in by.items()} for t, by in data.items()}},
        "settings": record(s, l2_grid=list(L2_GRID), model_selection=VALIDATION, finetune=tuned, text_baseline=text_only,
                           zero_shot=zero_shot, num_workers=workers,
                           seeds=list(range(seed, seed + s["seeds"]))),  # the seeds run, not their count
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


def _family_from_config(model: Any, family: str | None, revision: str | None) -> str | None:
    """The scorer family a model named by folder or Hub id will load as, read from its config only
    (no weights); ``None`` when that cannot be told cheaply (an object, or a config that does not
    load: loading the model then gives the error)."""
    if family is not None:
        return family
    model = _resolve_model(model)
    if not isinstance(model, (str, os.PathLike)):
        return None
    from ..scorers.loading import detect_family, load_config

    try:
        return detect_family(load_config(str(model), revision=revision), model=str(model))
    except Exception:  # the load below reports it, with the model's own error
        return None


def _scorer(model: Any, family: str | None, device: str | None, dtype: str, revision: str | None) -> Any:
    """The model as a scorer, exactly as `vlprobe.evaluate` loads it (a folder or Hub id, a
    (model, processor) pair, a loaded model, or a scorer; the same errors)."""
    from ..evaluation import Settings, load_model

    return load_model(_resolve_model(model), None, family, revision, Settings(device=device, dtype=dtype).check())
