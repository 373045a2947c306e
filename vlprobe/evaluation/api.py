"""``vlprobe.evaluate`` and ``vlprobe.score``: the two :class:`vlprobe.runner.Run` s that score."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..benchmarks import AUTHORS, TEXT_ONLY
from ..dataset.images import ImageError
from ..dataset.items import Item
from ..defaults import AUTO, BATCH_SIZE, CHUNK_ROWS
from ..errors import ArgumentError, ModelError, SettingError
from ..names import find_dataset
from ..results import ScoredSplit, result_entries
from ..results.summary import summarize
from ..runner import Run, RunCache
from ..scorers.base import DualScorer, Scorer
from ..scoring.engine import Engine, EngineOutOfMemory, EngineResult
from .data import SplitSource, _dataset_label, default_datasets, default_model, plan_splits
from .result import Evaluation
from .scoring import _distributed, _measure, _score
from .settings import EvaluateSettings, ScoreSettings, dataset_list

if TYPE_CHECKING:
    from ..options import DatasetsLike, ImagesLike, ModelLike, ProcessorLike, SpecLike

PathLike = str | os.PathLike[str]


def evaluate(
    model: ModelLike | None = None,
    datasets: DatasetsLike | None = None,
    *,
    configs: str | Sequence[str] = "all",
    splits: str | Sequence[str] | None = None,
    dataset_revision: str | None = None,
    spec: SpecLike | None = None,
    revision: str | None = None,
    family: str | None = None,
    ties: str = AUTHORS,
    bootstrap: int = 1000,
    confidence: float = 0.95,
    threshold: float = 0.5,
    seed: int = 0,
    limit: int | None = None,
    batch_size: int | str = AUTO,
    num_workers: int | None = None,
    dtype: str = "float32",
    device: str | None = None,
    modality: str = "image",
    control: str | None = None,
    cache_dir: PathLike | None = None,
    out: PathLike | None = None,
    exact_preprocessing: bool = False,
    outside_images: bool = False,
    chunk_size: int = CHUNK_ROWS,
    progress: bool = True,
    processor: ProcessorLike | None = None,
    root: PathLike | None = None,
    log: Callable[[str], None] | None = None,
) -> Evaluation:
    """Score ``model`` on ``datasets`` and measure it with the papers' metrics.

    ``model``: a model folder or Hub id (``mini-clip``: the small CLIP vlprobe ships), an already-loaded
    ``transformers`` model with its processor (``model=(model, processor)`` or ``processor=``), or a vlprobe scorer;
    loaded by ``family``, ``revision``, ``dtype`` and ``device``; ``exact_preprocessing``: always the model's PIL
    image processor (the one the papers ran), never the fast torchvision one.
    ``datasets``: a folder, a built benchmark's name (``travlr``: its folder here, in ``$VLPROBE_ROOT`` or where
    ``vlprobe build`` puts it), a Hub id, a ``datasets.Dataset``/``DatasetDict`` (with ``spec=``: a vlprobe.yaml
    path, a dict or an ItemSpec; default the dataset's own), a list of those, or a dict {name: any of those}. With
    neither ``model`` nor ``datasets``: the offline default (the ``travlr`` and ``winoground_style`` folders and
    ``models/mini-clip`` under ``root``, default the working directory). ``configs``: ``"all"``, ``"*"``, a
    comma-separated string or a list; ``splits``: likewise, None for the test splits; ``limit``: the first N rows
    of each split. ``modality``: image, caption, both (TraVLR's settings), or text (no image: each true text against
    the item's other true texts and its false ones, by a dual encoder's text tower; SugarCREPE++'s TOT, see
    :mod:`vlprobe.evaluation.text_only`). ``control``: blank or shuffle. ``outside_images``: open image cells that
    hold a path outside the dataset folder (refused by default).
    ``ties``: how a tied comparison counts: ``"authors"`` (the default), each split by its benchmark's authors' rule
    (CREPE's lenient, most benchmarks' strict; strict for a dataset of the user's own), or ``"strict"`` (wrong),
    ``"half"`` or ``"lenient"`` (right) for every split; each entry records the policy it was counted by.
    ``bootstrap``, ``confidence``, ``threshold``, ``seed``: the metric's.
    ``batch_size`` (``"auto"``, the default: searched per tower on an accelerator and remembered, 32 on the CPU)
    and ``num_workers``: the engine's; ``chunk_size``: rows read and scored at a time; ``cache_dir``: the score
    cache (None: the default, "none": off). ``out``: checked before scoring and written at the end (as
    :meth:`Evaluation.save`). ``log``: where status lines go (default: stderr when ``progress``). Every keyword but
    ``processor``, ``root`` and ``log`` is an option of ``vlprobe evaluate``, checked into
    :class:`~vlprobe.evaluation.settings.EvaluateSettings` before anything is loaded.

    Raises :class:`~vlprobe.errors.SettingError`, :class:`~vlprobe.errors.DatasetError` or
    :class:`~vlprobe.errors.ModelError`, before any scoring where the fault can be seen then.
    """
    return EvaluateRun(EvaluateSettings(**locals()))()


def _check_bootstrap_work(sources: Sequence[SplitSource], s: EvaluateSettings) -> None:
    """Refuse, before scoring, a ``bootstrap`` the metric would refuse (its bound, without the tags' share)."""
    if not s.bootstrap or s.modality == TEXT_ONLY:
        return
    from ..metric import module as metric

    for src in sources:
        cells = src.n * src.shape[0] * src.shape[1] if src.shape else 0
        if s.bootstrap > metric.bootstrap_that_fits(cells):
            raise ArgumentError("bootstrap", s.bootstrap, f"{src.name} has {src.n:,} items ({cells:,} cells): the "
                                f"metric's intervals take at most {metric.MAX_BOOTSTRAP_WORK:,} cell resamples (about a "
                                f"minute), so at most {metric.bootstrap_that_fits(cells):,} resamples here (or 0: no "
                                "intervals)")


Scored = tuple[list[ScoredSplit], dict[str, Any]]  # the scored splits and the engine's statistics


class EvaluateRun(Run[list[SplitSource], Scored, Evaluation]):
    """:func:`evaluate`'s run: the splits planned, the rows streamed through the engine, measured on the main process."""

    s: EvaluateSettings

    def names(self) -> list[object]:
        return dataset_list(self.s.datasets)[0] if self.s.datasets is not None else []

    def load_data(self) -> list[SplitSource]:
        s = self.s
        root = Path(s.root) if s.root is not None else Path.cwd()
        self.as_named, self.labels = dataset_list(default_datasets(root) if s.datasets is None else s.datasets)
        self.datasets = [find_dataset(d) for d in self.as_named]  # a built benchmark's name: its folder (vlprobe.names)
        self.model = default_model(root) if s.model is None else s.model
        state, self.device = _distributed(s.device)
        if state is not None:
            self.rank, self.processes = state.process_index, state.num_processes
            self.log = self.log if state.is_main_process else (lambda msg: None)
        sources = plan_splits(self.datasets, s, names=self.labels)
        _check_bootstrap_work(sources, s)
        name = self.model[0] if isinstance(self.model, tuple) else self.model
        shown = name if isinstance(name, (str, os.PathLike)) else type(name).__name__
        self.log(f"{sum(src.n for src in sources)} items in {len(sources)} config/split(s); loading {shown}")
        return sources

    def after_model(self, scorer: Scorer, sources: list[SplitSource]) -> None:
        """Text-only needs a text tower, 1 x 1 items a match probability: a dual encoder's similarity is none."""
        if self.s.modality == TEXT_ONLY:
            if not isinstance(scorer, DualScorer):
                raise ArgumentError("modality", "text", f"needs a dual encoder's text tower; {scorer.family} has none")
            return
        src = next((src for src in sources if src.shape == (1, 1)), None)
        if isinstance(scorer, DualScorer) and src is not None:
            raise ModelError(
                f"{src.name} has 1 x 1 items (one image, one statement, true or false), which are scored by a "
                f"match probability; {scorer.model_id} is a dual encoder (family {scorer.family!r}), whose "
                f"similarity is not a calibrated probability. Use a family that gives one (itm, vqascore), the "
                f"query-vs-foil framing of the dataset, or `vlprobe probe`, which fits a probe on the frozen "
                f"features as TraVLR's paper does"
            )

    def rows(self, sources: list[SplitSource]) -> int:
        return sum(src.n for src in sources)

    def engine_bars(self, rows: int) -> bool:
        return self.s.progress and rows <= self.s.chunk_size  # else one bar over the chunks (_score)

    def work(self, engine: Engine, sources: list[SplitSource], cache: RunCache) -> Scored:
        scored, stats = _score(sources, engine, self.s, self.rank == 0, throwaway=cache.temp is not None)
        return scored, {**stats, "cache_dir": cache.folder}

    def results(self, scorer: Scorer, sources: list[SplitSource], done: Scored) -> Evaluation:
        s, (scored, engine) = self.s, done
        settings = s.record(self.workers)
        provenance = self.provenance(
            scorer, s.command_line(datasets=self.as_named, model=self.model),  # the rerun names them as the user did
            settings=settings,
            datasets=[{"dataset": _dataset_label(d, self.labels[k] if self.labels else None),
                       "revision": s.dataset_revision} for k, d in enumerate(self.datasets)],
            engine=engine)
        if self.rank != 0:
            return Evaluation(scored, provenance, None, main_process=False)
        for split in scored:
            _measure(split, s, sees_images=getattr(scorer, "uses_images", True))
        return Evaluation(scored, provenance, summarize(result_entries(scored), settings, scorer.describe()))


def score(
    model: ModelLike,
    images: ImagesLike,
    texts: str | Sequence[str],
    *,
    processor: ProcessorLike | None = None,
    family: str | None = None,
    revision: str | None = None,
    probabilities: bool = False,
    batch_size: int | str = BATCH_SIZE,
    device: str | None = None,
    dtype: str = "float32",
    exact_preprocessing: bool = False,
    cache_dir: PathLike | None = None,
    progress: bool = False,
) -> np.ndarray:
    """Score every image against every text: an ``m x n`` numpy array (float64), row ``i`` for ``images[i]``,
    column ``j`` for ``texts[j]``: ``vlprobe.score("mini-clip", [Image.open("a.jpg"), "b.png"], ["a dog", "a cat"])``.

    ``model`` and its keywords as :func:`evaluate` takes them; ``images``: PIL images or image file paths (one, or a
    list); ``texts``: strings (one, or a list). The scores are the model's own (a dual encoder's scaled similarity,
    an ITM head's logit...), the numbers :func:`evaluate` measures; ``probabilities=True``: the match probabilities,
    for families that have them. Computed by the same engine through the score cache, each input encoded once."""
    return ScoreRun(ScoreSettings(**locals()))()


class ScoreRun(Run[Item, EngineResult, np.ndarray]):
    """:func:`score`'s run: one item of every image and text, through the engine and the score cache."""

    s: ScoreSettings

    def load_data(self) -> Item:
        gold = np.zeros((len(self.s.images), len(self.s.texts)), dtype=bool)
        gold[0, 0] = True  # the engine scores every cell; gold only satisfies the item's checks
        return Item(id="score", images=self.s.images, texts=self.s.texts, gold=gold)

    def work(self, engine: Engine, item: Item, cache: RunCache) -> EngineResult:
        try:
            return engine.score([item])
        except EngineOutOfMemory as err:
            raise ModelError(str(err)) from None
        except ImageError as err:
            raise SettingError(str(err)) from None

    def results(self, scorer: Scorer, item: Item, result: EngineResult) -> np.ndarray:
        if not self.s.probabilities:
            return np.asarray(result.scores[0], dtype=np.float64)
        if result.probabilities is None:
            raise ModelError(f"{scorer.model_id} (family {scorer.family!r}) gives no match probabilities; "
                             f"leave probabilities out for its scores")
        return np.asarray(result.probabilities[0], dtype=np.float64)
