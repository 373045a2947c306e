"""``vlprobe.evaluate`` and ``vlprobe.score``: check every setting, plan the splits, load the model,
score, measure, return an :class:`~vlprobe.evaluation.result.Evaluation`; the command line it records."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

import numpy as np
from PIL import Image

from ..engine import EngineOutOfMemory
from ..errors import ArgumentError, ModelError, SettingError
from ..images import ImageError
from ..items import Item
from ..names import find_dataset
from ..options import BATCH_SIZE, CACHE_DIR, DEVICE, DTYPE, FAMILY, REVISION, takes_options
from ..results import result_entries
from ..runner import Run, check_processor
from .data import _dataset_label, default_datasets, plan_splits
from .model import _check_shapes, _check_text_tower, default_model
from .result import Evaluation, summarize
from .scoring import _distributed, _measure, _score, quiet_progress
from .settings import OPTIONS, TEXT, EvaluateSettings, command_line, dataset_list


@takes_options(OPTIONS, positional=("model", "datasets"), extra={"processor": None, "root": None, "log": None})
def evaluate(given: dict[str, Any], *, processor: Any = None, root: str | os.PathLike | None = None,
             log: Callable[[str], None] | None = None) -> Evaluation:
    """Score ``model`` on ``datasets`` and measure it with the papers' metrics.

    ``model``: a model folder or Hub id (``mini-clip``: the small CLIP vlprobe ships); an already-loaded
    ``transformers`` model with its processor (``model=(model, processor)`` or ``processor=``); or a vlprobe scorer.
    ``datasets``: a folder, a built benchmark's name (``travlr``: its folder here, in ``$VLPROBE_ROOT`` or where
    ``vlprobe build`` puts it), a Hub id, a ``datasets.Dataset``/``DatasetDict`` (with ``spec=``), a
    list of those, or a dict {name: any of those}. With neither ``model`` nor ``datasets``: the
    offline default (the ``travlr`` and ``winoground_style`` folders and ``models/mini-clip`` under
    ``root``, default the working directory).
    ``configs``: ``"all"``, ``"*"``, a comma-separated string or a list; ``splits``: likewise, None
    for the test splits. ``spec``: a vlprobe.yaml path, a dict or an ItemSpec (default: the
    dataset's). ``ties``, ``bootstrap``, ``confidence``, ``threshold``, ``seed``: the metric's.
    ``limit``: the first N rows of each split. ``batch_size``, ``num_workers``, ``device``,
    ``dtype``: the engine's (``batch_size="auto"``, the default: searched per tower on an accelerator and
    remembered, 32 on the CPU). ``modality``: image, caption, both (TraVLR's settings), or text (no image:
    each true text against the item's other true texts and its false ones, by a dual encoder's text tower;
    SugarCREPE++'s TOT, see :mod:`vlprobe.evaluation.text_only`). ``control``:
    blank or shuffle. ``cache_dir``: the score cache (None: the default, "none": off). ``out``:
    checked before scoring and written at the end (as :meth:`Evaluation.save`). ``chunk_size``:
    rows read and scored at a time. ``exact_preprocessing``: always the model's PIL image processor
    (the one the papers ran), never the fast torchvision one. ``outside_images``: open image cells that hold a path
    outside the dataset folder (refused by default). ``log``: where status lines go (default: stderr when
    ``progress``). Every keyword but ``processor``, ``root`` and ``log`` is an option of ``vlprobe evaluate``
    (:data:`vlprobe.evaluation.settings.OPTIONS`, where its default is written).

    Raises :class:`~vlprobe.errors.SettingError`, :class:`~vlprobe.errors.DatasetError` or
    :class:`~vlprobe.errors.ModelError`, before any scoring where the fault can be seen then.
    """
    # Every setting is checked before anything is loaded (vlprobe.runner): a bad number first, in a fraction of a
    # second; then a mistyped model or dataset name, in about a second (both before datasets and torch are imported);
    # then the settings whose checks import them (the device, the tie policy), and the output folder.
    if log is not None and not callable(log):
        raise ArgumentError("log", log, "must be a function taking one line of text (e.g. print), or None")
    if root is not None and not isinstance(root, (str, os.PathLike)):
        raise ArgumentError("root", root, "must be a folder path (where the offline default's folders are), or None")
    check_processor(processor, given.get("model"))
    s = EvaluateSettings(**given)
    run = Run(s, command=command_line, log=log)
    run.check_names(dataset_list(s.datasets)[0] if s.datasets is not None else ())
    s = run.finish_checks()
    if s.modality == TEXT and s.control:
        raise ArgumentError("control", s.control, "--modality text looks at no image, so an image control changes "
                                                  "nothing; leave it out")
    from ..dataset_folder import progress_bars_off  # imports datasets (3.9 s): not before the checks

    root = Path(root) if root is not None else Path.cwd()
    as_named, names = dataset_list(default_datasets(root) if s.datasets is None else s.datasets)
    datasets = [find_dataset(d) for d in as_named]  # a built benchmark's name: its folder (vlprobe.names)
    model = default_model(root) if s.model is None else s.model

    state, device = _distributed(s.device)
    main = state is None or state.is_main_process
    say = run.log if main else (lambda msg: None)
    with progress_bars_off(), quiet_progress(not s.progress):
        sources = plan_splits(datasets, s, spec=s.spec, dataset_revision=s.dataset_revision, names=names)
    model_name = model[0] if isinstance(model, tuple) else model
    shown = model_name if isinstance(model_name, (str, os.PathLike)) else type(model_name).__name__
    say(f"{sum(src.n for src in sources)} items in {len(sources)} config/split(s); loading {shown}")
    with quiet_progress(not s.progress):
        scorer = run.load_model(model, processor, device=device)
    if s.modality == TEXT:
        _check_text_tower(scorer)
    else:
        _check_shapes(sources, scorer)

    total = sum(src.n for src in sources)
    with run.open_cache(scorer, rows=total, rank=state.process_index if state else 0,
                        single_process=state is None) as cache:
        engine = run.engine(scorer, cache, progress=s.progress and total <= s.chunk_size)
        with progress_bars_off(), quiet_progress(not s.progress):
            scored, stats = _score(sources, engine, s, s.progress, main, throwaway=cache.temp is not None)
    provenance = run.provenance(
        scorer, {**s, "datasets": as_named, "model": model},  # the rerun names them as the user did
        settings=s.record(run.workers),
        datasets=[{"dataset": _dataset_label(d, names[k] if names else None), "revision": s.dataset_revision}
                  for k, d in enumerate(datasets)],
        engine={**stats, "cache_dir": cache.folder})
    if not main:
        return Evaluation(scored, provenance, None, main_process=False)
    for split in scored:
        _measure(split, s, sees_images=getattr(scorer, "uses_images", True))
    result = Evaluation(scored, provenance, summarize(result_entries(scored), provenance["settings"]))
    if s.out is not None:
        result.save(s.out)
    return result


def score(
    model: Any,
    images: Any,
    texts: Any,
    *,
    processor: Any = None,
    family: str | None = FAMILY.default,
    revision: str | None = REVISION.default,
    probabilities: bool = False,
    batch_size: int = BATCH_SIZE.default,
    device: str | None = DEVICE.default,
    dtype: str = DTYPE.default,
    exact_preprocessing: bool = False,
    cache_dir: Any = CACHE_DIR.default,
    progress: bool = False,
) -> np.ndarray:
    """Score every image against every text: an ``m x n`` numpy array (float64), row ``i`` for
    ``images[i]``, column ``j`` for ``texts[j]``, for a notebook::

        S = vlprobe.score("mini-clip", [Image.open("a.jpg"), "b.png"], ["a dog", "a cat"])

    ``model``: a model folder or Hub id (``mini-clip``: the small CLIP vlprobe ships), a loaded ``transformers``
    model with its processor (``(model, processor)`` or ``processor=``), or a vlprobe scorer; loaded as
    :func:`evaluate` loads it (``family``, ``revision``, ``device``, ``dtype``, ``exact_preprocessing`` as there).
    ``images``: PIL images or image file paths (one, or a list); ``texts``: strings (one, or a
    list). The scores are the model's own (a dual encoder's scaled similarity, an ITM head's
    logit...), the numbers :func:`evaluate` measures; ``probabilities=True`` gives the match
    probabilities instead, for families that have them. Computed by the same engine, through the
    score cache (``cache_dir`` as in :func:`evaluate`), so each input is encoded once."""
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, (list, tuple)) or not texts or not all(isinstance(t, str) for t in texts):
        raise ArgumentError("texts", texts, "must be a string or a non-empty list of strings")
    empty = [j for j, t in enumerate(texts) if not t.strip()]
    if empty:  # as vlprobe.evaluate refuses an empty text cell: no text to score
        raise ArgumentError(f"texts[{empty[0]}]", texts[empty[0]], "is empty; every text must be a non-empty string")
    if _one_image(images):
        images = [images]
    if not isinstance(images, (list, tuple)) or not images:
        raise ArgumentError("images", images, "must be a PIL image, an image file path, or a non-empty list of them")
    for i, image in enumerate(images):
        if not _one_image(image):
            raise ArgumentError(f"images[{i}]", image, "must be a PIL image or an image file path")
        if isinstance(image, (str, os.PathLike)) and not Path(image).is_file():
            raise ArgumentError(f"images[{i}]", str(image), "no such image file")
    images = [str(im) if isinstance(im, os.PathLike) else im for im in images]
    s = EvaluateSettings(model=model, family=family, revision=revision, batch_size=batch_size, device=device,
                         dtype=dtype, bootstrap=0, exact_preprocessing=bool(exact_preprocessing), cache_dir=cache_dir,
                         num_workers=0, progress=bool(progress))
    run = Run(s, command=command_line)
    run.check_names()
    s = run.finish_checks()
    with quiet_progress(not progress):
        scorer = run.load_model(model, processor)
    gold = np.zeros((len(images), len(texts)), dtype=bool)
    gold[0, 0] = True  # the engine scores every cell; gold only satisfies the item's checks
    item = Item(id="score", images=tuple(images), texts=tuple(texts), gold=gold)
    with run.open_cache(scorer, rows=1) as cache:
        try:
            result = run.engine(scorer, cache, progress=progress).score([item])
        except EngineOutOfMemory as err:
            raise ModelError(str(err)) from None
        except ImageError as err:
            raise SettingError(str(err)) from None
    if probabilities:
        if result.probabilities is None:
            raise ModelError(f"{scorer.model_id} (family {scorer.family!r}) gives no match probabilities; "
                             f"leave probabilities out for its scores")
        return np.asarray(result.probabilities[0], dtype=np.float64)
    return np.asarray(result.scores[0], dtype=np.float64)


def _one_image(obj: Any) -> bool:
    return isinstance(obj, (str, os.PathLike, Image.Image))
