"""``vlprobe.evaluate`` and ``vlprobe.score``: check every setting, plan the splits, load the model,
score, measure, return an :class:`~vlprobe.evaluation.result.Evaluation`; the command line it records."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..errors import ArgumentError, ModelError, SettingError
from ..options import pick
from .data import (
    _dataset_label,
    _dataset_list,
    check_reachable,
    default_datasets,
    plan_splits,
)
from .model import _check_shapes, _check_text_tower, default_model, load_model
from .result import Evaluation, summarize
from .scoring import _distributed, _measure, _score, open_cache, quiet_progress
from .settings import CHUNK_ROWS, OPTIONS, TEXT, Settings, command_line, default_workers


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
    ``dtype``: the engine's. ``modality``: image, caption, both (TraVLR's settings), or text (no image:
    each true text against the item's other true texts and its false ones, by a dual encoder's text tower;
    SugarCREPE++'s TOT, see :mod:`vlprobe.evaluation.text_only`). ``control``:
    blank or shuffle. ``cache_dir``: the score cache (None: the default, "none": off). ``out``:
    checked before scoring and written at the end (as :meth:`Evaluation.save`). ``chunk_size``:
    rows read and scored at a time. ``exact_preprocessing``: always the model's PIL image processor
    (the one the papers ran), never the fast torchvision one. ``log``: where status lines go (default: stderr when
    ``progress``).

    Raises :class:`~vlprobe.errors.SettingError`, :class:`~vlprobe.errors.DatasetError` or
    :class:`~vlprobe.errors.ModelError`, before any scoring where the fault can be seen then.
    """
    # Every setting is checked before anything is loaded: a bad number first, in a fraction of a second; then a
    # mistyped dataset name, in about a second (both before datasets and torch are imported); then the settings
    # whose checks import them (the device, the tie policy).
    s = Settings(**pick(OPTIONS, locals())).check(slow=False)
    if s.datasets is not None:
        for d in _dataset_list(s.datasets)[0]:
            if isinstance(d, (str, os.PathLike)):
                check_reachable(str(d), s.dataset_revision)
    s = s.check()
    if s.modality == TEXT and s.control:
        raise ArgumentError("control", s.control, "--modality text looks at no image, so an image control changes "
                                                  "nothing; leave it out")
    from ..dataset_folder import progress_bars_off
    from ..results import check_output_dir, environment, now_iso

    if s.out is not None:
        check_output_dir(s.out)
    if log is None:
        log = (lambda msg: print(msg, file=sys.stderr)) if s.progress else (lambda msg: None)
    progress, out = s.progress, s.out
    root = Path(root) if root is not None else Path.cwd()
    datasets = default_datasets(root) if s.datasets is None else s.datasets
    model = default_model(root) if s.model is None else s.model
    datasets, names = _dataset_list(datasets)

    state, device_ = _distributed(s.device)
    main = state is None or state.is_main_process
    say = log if main else (lambda msg: None)
    with progress_bars_off(), quiet_progress(not progress):
        sources = plan_splits(datasets, s, spec=s.spec, dataset_revision=s.dataset_revision, names=names)
    model_name = model[0] if isinstance(model, tuple) else model
    shown = model_name if isinstance(model_name, (str, os.PathLike)) else type(model_name).__name__
    say(f"{sum(src.n for src in sources)} items in {len(sources)} config/split(s); loading {shown}")
    s_model = Settings(**{**vars(s), "device": device_})
    with quiet_progress(not progress):
        scorer = load_model(model, processor, s.family, s.revision, s_model)
    if s.modality == TEXT:
        _check_text_tower(scorer)
    else:
        _check_shapes(sources, scorer)

    workers = s.num_workers if s.num_workers is not None else default_workers()
    cache = open_cache(s.cache_dir, scorer, state.process_index if state else 0)
    cache_path = str(cache.dir) if cache is not None else None
    with progress_bars_off(), quiet_progress(not progress):
        scored, stats = _score(sources, scorer, s, cache, workers, progress, main)
    provenance = {
        "created": now_iso(),
        "command": command_line({**vars(s), "datasets": datasets, "model": model}),
        "argv": list(sys.argv),
        "model": scorer.describe(),
        "settings": s.record(workers),
        "datasets": [{"dataset": _dataset_label(d, names[k] if names else None), "revision": s.dataset_revision}
                     for k, d in enumerate(datasets)],
        "environment": environment(),
        "engine": {**stats, "cache_dir": cache_path},
    }
    if not main:
        return Evaluation(scored, provenance, None, main_process=False)
    for split in scored:
        _measure(split, s)
    from ..results import result_entries

    summary = summarize(result_entries(scored), provenance["settings"])
    result = Evaluation(scored, provenance, summary)
    if out is not None:
        result.save(out)
    return result


def score(
    model: Any,
    images: Any,
    texts: Any,
    *,
    processor: Any = None,
    family: str | None = None,
    revision: str | None = None,
    probabilities: bool = False,
    batch_size: int = 32,
    device: str | None = None,
    dtype: str = "float32",
    exact_preprocessing: bool = False,
    cache_dir: Any = None,
    progress: bool = False,
) -> np.ndarray:
    """Score every image against every text: an ``m x n`` numpy array (float64), row ``i`` for
    ``images[i]``, column ``j`` for ``texts[j]``, for a notebook::

        S = vlprobe.score("models/mini-clip", [Image.open("a.jpg"), "b.png"], ["a dog", "a cat"])

    ``model``: a model folder or Hub id, a loaded ``transformers`` model with its processor
    (``(model, processor)`` or ``processor=``), or a vlprobe scorer; loaded as :func:`evaluate`
    loads it (``family``, ``revision``, ``device``, ``dtype``, ``exact_preprocessing`` as there).
    ``images``: PIL images or image file paths (one, or a list); ``texts``: strings (one, or a
    list). The scores are the model's own (a dual encoder's scaled similarity, an ITM head's
    logit...), the numbers :func:`evaluate` measures; ``probabilities=True`` gives the match
    probabilities instead, for families that have them. Computed by the same engine, through the
    score cache (``cache_dir`` as in :func:`evaluate`), so each input is encoded once."""
    from ..engine import Engine, EngineOutOfMemory
    from ..images import ImageError
    from ..items import Item

    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, (list, tuple)) or not texts or not all(isinstance(t, str) for t in texts):
        raise ArgumentError("texts", texts, "must be a string or a non-empty list of strings")
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
    s = Settings(model=model, family=family, revision=revision, batch_size=batch_size, device=device, dtype=dtype,
                 bootstrap=0, exact_preprocessing=bool(exact_preprocessing), cache_dir=cache_dir).check()
    with quiet_progress(not progress):
        scorer = load_model(model, processor, s.family, s.revision, s)
    gold = np.zeros((len(images), len(texts)), dtype=bool)
    gold[0, 0] = True  # the engine scores every cell; gold only satisfies the item's checks
    item = Item(id="score", images=tuple(images), texts=tuple(texts), gold=gold)
    cache = open_cache(s.cache_dir, scorer)
    try:
        result = Engine(scorer, batch_size=s.batch_size, num_workers=0, cache=cache, progress=progress).score([item])
    except EngineOutOfMemory as err:
        raise ModelError(str(err)) from None
    except ImageError as err:
        raise SettingError(str(err)) from None
    finally:
        if cache is not None:
            cache.close()
    if probabilities:
        if result.probabilities is None:
            raise ModelError(f"{scorer.model_id} (family {scorer.family!r}) gives no match probabilities; "
                             f"leave probabilities out for its scores")
        return np.asarray(result.probabilities[0], dtype=np.float64)
    return np.asarray(result.scores[0], dtype=np.float64)


def _one_image(obj: Any) -> bool:
    if isinstance(obj, (str, os.PathLike)):
        return True
    try:
        from PIL import Image
    except ImportError:
        return False
    return isinstance(obj, Image.Image)
