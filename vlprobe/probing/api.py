"""``vlprobe.probe``: check every setting and ``--out``, load the splits and the model, compute the
features, run the probes (and fine-tuning), measure, write the run folder as one unit."""

from __future__ import annotations

import os
import time
import warnings
from typing import Any

from ..defaults import BATCH_SIZE
from ..evaluation.scoring import quiet_progress
from ..feature_store import FeatureStore
from ..names import find_dataset, find_model
from ..options import takes_options
from ..runner import Run, check_processor
from ..scorers.base import DualScorer
from ..scorers.loading import detect_family, load_config
from ..spec import dataset_benchmark
from .data import _check_classes, _check_train_sizes, load_splits
from .features import _truncation, extract_features
from .finetune import FINETUNE_LR, finetune_rows, schedule_plan
from .protocol import run_probes
from .result import ProbeResult
from .settings import (
    _NONE,
    L2_GRID,
    MODALITIES,
    OPTIONS,
    PROBE_RUN_FILE,
    TEXT_ONLY,
    VALIDATION,
    ZERO_SHOT,
    ProbeSettingError,
    ProbeSettings,
    _one_dataset,
    command_line,
    record,
)

# Imported where used, as they are slow to import (python -X importtime, this 2-core machine): torch 11.7 s (by the
# time it is needed the model has imported it) and vlprobe.dataset_folder (it imports datasets, 3.9 s): a misspelt
# name is refused before either.


@takes_options(OPTIONS, positional=("model", "datasets", "configs"), extra={"processor": None, "dataset": _NONE})
def probe(given: dict[str, Any], *, processor: Any = None, dataset: Any = _NONE) -> ProbeResult:
    """Run TraVLR's train-on-one-modality protocol on ``model``'s frozen features.

    ``model``: a model folder or Hub id (``mini-clip``, the default: the small CLIP vlprobe ships), an
    already-loaded transformers model with its processor (``model=(model, processor)`` or ``processor=``), or a
    vlprobe scorer. ``datasets``: one TraVLR-shaped folder, built benchmark name or Hub id (default: ``travlr``, the
    folder ``vlprobe build travlr`` writes: here in a clone, else ``$VLPROBE_ROOT`` or the user's cache folder), as
    ``vlprobe.evaluate``'s argument of that name takes it (a one-element list too). ``cache_dir``:
    the engine's feature cache (default ``$VLPROBE_CACHE`` or ``~/.cache/vlprobe``; ``"none"``
    disables it). ``chunk_size``: rows read and encoded at a time (memory holds one chunk's images).
    ``num_workers``: DataLoader workers decoding images (default as `vlprobe evaluate`'s). ``out``:
    checked before anything is loaded and written at the end, as :meth:`ProbeResult.save`.
    ``seeds``: runs per setting, seeds ``seed`` .. ``seed + seeds - 1`` (the paper: 3); ``schedule``: the
    fine-tuning schedule, ``"quick"`` (``epochs``, the best on validation kept) or ``"paper"`` (80 epochs, no early
    stopping). Every keyword but ``processor`` is an option of ``vlprobe probe``
    (:data:`vlprobe.probing.settings.OPTIONS`, where its default is written).

    Every setting and ``out`` are checked before anything is loaded (:class:`ProbeSettingError`, a
    :class:`~vlprobe.errors.SettingError`, naming the argument; a misspelt model or dataset name in about a second,
    with the closest known name); leftovers of killed runs (feature folders, staging folders of ``out``) are removed
    first, saying so in one line. Returns a :class:`ProbeResult`. ``dataset=``, the old name of ``datasets``, is
    still taken, with a :class:`DeprecationWarning`.
    """
    if dataset is not _NONE:
        warnings.warn("vlprobe.probe(dataset=...) is now datasets=..., as in vlprobe.evaluate; dataset= will "
                      "be removed", DeprecationWarning, stacklevel=3)
        if "datasets" in given:
            raise ProbeSettingError("dataset", dataset, "give the dataset once, as datasets= (dataset= is its "
                                                        "old name)")
        given["datasets"] = _one_dataset(dataset, "dataset")
    check_processor(processor, given.get("model"))
    s = ProbeSettings(**given)
    run = Run(s, own=PROBE_RUN_FILE, command=command_line)
    # a name that is neither a folder nor reachable fails in about a second, as in vlprobe.evaluate (the default,
    # travlr, unbuilt: "run `vlprobe build travlr`", vlprobe.names.check_dataset)
    run.check_names([s.datasets])
    s = run.finish_checks()
    from ..dataset_folder import progress_bars_off

    data_name = str(find_dataset(s.datasets))
    with progress_bars_off():  # datasets' bars of a first load's conversion, as vlprobe.evaluate hides them
        data = load_splits(data_name, s.configs, revision=s.dataset_revision, limit=s.limit,
                           outside_images=s.outside_images)
    # Rows that cannot train a probe are refused before the weights load when the family is known from
    # the config alone (a folder or Hub id); a model passed as an object is checked once it is wrapped.
    early_family = _family_from_config(s.model, s.family, s.revision) if processor is None else None
    _check_train_sizes(data, s.train_sizes, s.limit)  # before any weight loads
    if early_family is not None:
        _check_classes(data, s.datasets, s.limit, trained=early_family != "vqascore")
    with quiet_progress(not s.progress):  # no "Loading weights" bars with progress=False, as evaluate
        scorer = run.load_model(s.model, processor)
    zero_shot = getattr(scorer, "family", "") == "vqascore"
    if early_family is None:
        _check_classes(data, s.datasets, s.limit, trained=not zero_shot)

    text_only = s.text_baseline and isinstance(scorer, DualScorer)
    needed = sorted(set(s.train_modalities) | set(s.test_modalities), key=MODALITIES.index)
    settings = needed + ([TEXT_ONLY] if text_only else [])

    rows_total = max((len(sp) for by in data.values() for sp in by.values()), default=0)
    store = FeatureStore()  # the features, on disk for the length of this call
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        with run.open_cache(scorer, rows=rows_total) as cache:  # a throw-away one carries repeated texts across chunks
            features, stats = extract_features(run.engine(scorer, cache, progress=s.progress), data, settings,
                                               s.chunk_size, store)
        feature_seconds, feature_cpu = time.perf_counter() - t0, time.process_time() - c0
        t1, c1 = time.perf_counter(), time.process_time()
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # the probes' matrices are small: threads only add contention (3x slower on 2 busy cores)
        try:
            rows = run_probes(features, data, train_modalities=s.train_modalities, test_modalities=s.test_modalities,
                              text_only=text_only, zero_shot=zero_shot, train_sizes=s.train_sizes,
                              few_shot=s.few_shot, classifier=s.classifier, bootstrap=s.bootstrap,
                              confidence=s.confidence, seed=s.seed, seeds=s.seeds, progress=s.progress)
        finally:
            torch.set_num_threads(threads)
    finally:
        features = None
        store.cleanup()
    for r in rows:
        r.setdefault("classifier", ZERO_SHOT if r["setting"] == ZERO_SHOT else s.classifier)
    if s.finetune:
        rows += finetune_rows(scorer, data, train_modalities=s.train_modalities, test_modalities=s.test_modalities,
                              # fine-tuning's own batch: "auto" sizes the engine's encoding only
                              epochs=s.epochs, batch_size=BATCH_SIZE if s.batch_size == "auto" else s.batch_size,
                              bootstrap=s.bootstrap,
                              confidence=s.confidence, seed=s.seed, seeds=s.seeds, schedule=s.schedule,
                              progress=s.progress)
    probe_seconds, probe_cpu = time.perf_counter() - t1, time.process_time() - c1

    computed = sum(int(st.get("computed", st.get("computed_pairs", 0)) or 0) for st in stats.values())
    tuned = {**schedule_plan(s.schedule, s.epochs), "lr": FINETUNE_LR,
             "head": "linear on [u, v, u*v, |u-v|]"} if s.finetune else False
    spec = next(sp.spec for by in data.values() for sp in by.values())
    provenance = run.provenance(
        scorer, s,
        dataset={"dataset": s.datasets, "revision": s.dataset_revision,
                 "benchmark": dataset_benchmark(data_name, spec)[0],
                 "splits": {t: {name: sp.info for name, sp in by.items()} for t, by in data.items()}},
        settings=record(s, l2_grid=list(L2_GRID), model_selection=VALIDATION, finetune=tuned, text_baseline=text_only,
                        zero_shot=zero_shot, num_workers=run.workers,
                        seeds=list(range(s.seed, s.seed + s.seeds))),  # the seeds run, not their count
        features={"stats": stats, "computed_inputs": computed, "cache_dir": cache.folder,
                  "text_max_length": getattr(scorer, "max_length", None),
                  "caption_truncated": _truncation(scorer, data) if any(
                      st in ("caption", "both", TEXT_ONLY) for st in settings) else None},
        # wall-clock and CPU seconds of this process (CPU time is what a loaded machine does not distort)
        timings={"feature_seconds": round(feature_seconds, 3), "probe_seconds": round(probe_seconds, 3),
                 "feature_cpu_seconds": round(feature_cpu, 3), "probe_cpu_seconds": round(probe_cpu, 3),
                 "total_seconds": round(time.perf_counter() - run.started, 3)})
    result = ProbeResult(rows, provenance)
    if s.out is not None:
        result.save(s.out)
    return result


def _family_from_config(model: Any, family: str | None, revision: str | None) -> str | None:
    """The scorer family a model named by folder or Hub id will load as, read from its config only
    (no weights); ``None`` when that cannot be told cheaply (an object, or a config that does not
    load: loading the model then gives the error)."""
    if family is not None:
        return family
    model = find_model(model)
    if not isinstance(model, (str, os.PathLike)):
        return None
    try:
        return detect_family(load_config(str(model), revision=revision), model=str(model))
    except Exception:  # the load below reports it, with the model's own error
        return None
