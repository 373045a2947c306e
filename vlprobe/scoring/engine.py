"""The scoring engine: every item's m x n score matrix, each distinct model input computed once.

Inputs are keyed by what the model reads: an image by its content, a text by its token ids
(:meth:`~vlprobe.scorers.base.Scorer.text_keys`). Each distinct input, and each distinct (image, text) pair's score, is
computed once and **gathered** into every cell where it appears, so cells with identical inputs hold one number, bit
for bit, whatever the batch, padding or column: an exact tie for the benchmark's tie policy, not float32 noise.
Texts are encoded a share at a time between image batches; every computed batch is committed to the score cache
before the next starts, so a killed run loses nothing. Under ``accelerate launch`` the work is sharded across
processes and gathered on every one.
"""

from __future__ import annotations

import math
import os
import random
import sys
import time
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np
import numpy.typing as npt
from tqdm.auto import tqdm

from ..dataset.images import ImageError, content_hash, describe, to_pil, to_tensor
from ..dataset.items import ImageLike, Item
from ..defaults import AUTO, BATCH_SIZE
from ..scorers.base import DualScorer, PairScorer, PairScores, Scorer, is_oom, text_key
from ..storage.score_cache import ScoreCache
from . import auto_batch
from .device_images import DeviceImages, device_path, read_batch, read_for_device

if TYPE_CHECKING:
    from torch import Tensor

T = TypeVar("T")
Row = TypeVar("Row")
Vector = npt.NDArray[np.float32]
ImageRow = tuple[str, ImageLike, str]  # (key, image, where)
PairRow = tuple[str, "ImageLike | None", str, str]  # (key, image or None for a text-only scorer, text, where)
TextRow = tuple[str, str]  # (key, text)
Collated = tuple[list[str], object, "str | None"]  # (keys, the model's inputs, an unreadable image's message)
Keyed = TypeVar("Keyed", ImageRow, PairRow)  # the rows a DataLoader reads


class EngineOutOfMemory(RuntimeError):
    """The device ran out of memory; everything scored before it is in the cache."""


class EngineInterrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) during scoring; the message says what was kept and how to resume."""


@dataclass
class EngineResult:
    """Per-item matrices, in the order of the items given, and counts of what was computed."""

    scores: list[Vector]
    probabilities: list[Vector] | None
    stats: dict[str, Any] = field(default_factory=dict)


def dist_info() -> tuple[int, int]:
    """(rank, world size) of the initialised ``torch.distributed`` group, else (0, 1)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _broadcast(obj: T, world: int) -> T:
    if world == 1:
        return obj
    import torch.distributed as dist

    box = [obj]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def _all_gather(obj: T, world: int) -> list[T]:
    if world == 1:
        return [obj]
    import torch.distributed as dist

    out: list[T | None] = [None] * world
    dist.all_gather_object(out, obj)
    return [x for x in out if x is not None]


# ---- DataLoader pieces (module level so that worker processes can use them) ----------------------

class _FreshBatches(Generic[Row]):
    """Batches of rows (or row indices, for a DataLoader ``batch_sampler``) that ask the cache, just before each
    batch, which keys a concurrent run committed meanwhile (into ``found``). With a cache the batches come in a random
    order per process, so concurrent runs split the work."""

    def __init__(self, keys: Sequence[str], batch_size: int, cache: ScoreCache | None,
                 found: dict[str, Vector], rows: Sequence[Row],
                 groups: Sequence[int] | None = None) -> None:
        self.keys, self.cache, self.found, self.rows = keys, cache, found, rows
        # a batch never spans two groups (texts of one token length)
        self.batches: list[list[int]] = []
        start = 0
        while start < len(keys):
            end = start + 1
            while end < len(keys) and end - start < batch_size and (groups is None or groups[end] == groups[start]):
                end += 1
            self.batches.append(list(range(start, end)))
            start = end
        if cache is not None and len(self.batches) > 1:
            random.Random().shuffle(self.batches)

    def __len__(self) -> int:
        return len(self.batches)

    def __iter__(self) -> Iterator[list[Row]]:
        for batch in self.batches:
            if self.cache is not None:
                hits = self.cache.get_many([self.keys[i] for i in batch])
                if hits:
                    self.found.update(hits)
                    batch = [i for i in batch if self.keys[i] not in hits]
                if not batch:
                    continue
            yield [self.rows[i] for i in batch]


Decode = Callable[..., object]  # (image, where=...) -> a PIL image or a (3, H, W) uint8 tensor


def decoder(scorer: Scorer) -> Decode:
    """(3, H, W) uint8 tensors for a fast (torchvision) image processor (the same pixels), else PIL images."""
    return to_tensor if (getattr(scorer, "preprocessing", None) or {}).get("image_backend") == "torchvision" else to_pil


class _Collate:
    """(key, image, where) rows -> (keys, ``preprocess(images)``, None), or (key, image, text, where) rows ->
    (keys, ``preprocess(images, texts)``, None); an unreadable image comes back as its message, so that the main
    process raises it cleanly (not as a worker traceback)."""

    def __init__(self, preprocess: Callable[..., object], decode: Decode = to_pil, uses_images: bool = True) -> None:
        self.preprocess, self.decode, self.uses_images = preprocess, decode, uses_images

    def __call__(self, rows: list[Keyed]) -> Collated:
        keys = [r[0] for r in rows]
        texts = [r[2] for r in rows] if len(rows[0]) == 4 else None
        decoded: dict[int, object] = {}
        try:
            for row in rows:  # pairs of one image sit together: decode it once per batch
                if self.uses_images and id(row[1]) not in decoded:
                    decoded[id(row[1])] = self.decode(row[1], where=row[-1])
        except ImageError as err:
            return keys, None, str(err)
        images = [decoded.get(id(r[1])) for r in rows]  # None for a text-only scorer
        return keys, self.preprocess(images) if texts is None else self.preprocess(images, texts), None


_NOTED: set[str] = set()  # notes said once per process


def _tile(inputs: object, n: int) -> object:
    """A batch of model inputs (a dict of tensors or an array, batch first) repeated to ``n`` rows."""
    import torch

    if isinstance(inputs, dict):
        return {k: _tile(v, n) for k, v in inputs.items()}
    if isinstance(inputs, list) and inputs:
        return [inputs[i % len(inputs)] for i in range(n)]
    if isinstance(inputs, (torch.Tensor, np.ndarray)) and inputs.ndim and inputs.shape[0]:
        index = np.arange(n) % inputs.shape[0]
        return inputs[torch.as_tensor(index, device=inputs.device)] if isinstance(inputs, torch.Tensor) else inputs[index]
    return inputs


class Engine:
    """Score items with a scorer (see the module doc); ``progress``: tqdm bars, on the main process only."""

    def __init__(
        self,
        scorer: Scorer,
        *,
        batch_size: int | str = BATCH_SIZE,
        num_workers: int = 0,
        cache: ScoreCache | None = None,
        progress: bool = True,
        log: Callable[[str], None] | None = None,
    ) -> None:
        # batch_size: AUTO or a whole number >= 1, checked once, by the run's settings (vlprobe.options)
        if num_workers < 0:
            raise ValueError(f"num_workers must be 0 or more, got {num_workers}")
        self.scorer = scorer
        device = str(getattr(scorer, "device", "cpu") or "cpu")
        # "auto" searches only on an accelerator; on the CPU it is the default
        self.auto = batch_size == AUTO and device.split(":")[0] not in ("cpu", "meta")
        self.batch_size = BATCH_SIZE if batch_size == AUTO else int(batch_size)
        self.batch_sizes: dict[str, int] = {}  # per tower, as chosen (auto) or given
        self.num_workers = num_workers
        self.cache = cache
        self.progress = progress
        self.log = log if log is not None else (lambda msg: print(msg, file=sys.stderr))
        self.rank, self.world = dist_info()
        self._reused: dict[str, Vector] = {}  # committed by a concurrent run while this one ran
        self._seen: dict[str, tuple[int, ...] | None] = {}  # the last seen_texts call's ids, by text
        self._device_images: DeviceImages | None = None
        self._readers: ThreadPoolExecutor | None = None  # the device path's threads, made once per engine
        self._preparer: ThreadPoolExecutor | None = None
        if isinstance(scorer, DualScorer):
            on_device, why = device_path(scorer)
            if on_device:
                self._device_images = DeviceImages(scorer)
            elif device.split(":")[0] not in ("cpu", "meta"):
                self._note(f"images are decoded and preprocessed on the CPU, not on {device}: {why}")

    def text_keys(self, texts: Sequence[str]) -> list[str]:
        """Each text's key (:meth:`~vlprobe.scorers.base.Scorer.text_keys`), each distinct string tokenized once."""
        key_of = self._text_rows(texts)[0]
        return [key_of[t] for t in texts]

    def score(self, items: Sequence[Item]) -> EngineResult:
        start = time.perf_counter()
        self._reused = {}
        try:
            if isinstance(self.scorer, DualScorer):
                result = self._score_dual(items, self.scorer)
            elif isinstance(self.scorer, PairScorer):
                result = self._score_pairs(items, self.scorer)
            else:
                raise TypeError(f"{type(self.scorer).__name__} is neither a DualScorer nor a PairScorer")
        except KeyboardInterrupt:
            raise EngineInterrupted(self._interrupted()) from None
        reused = len(self._reused)
        stats = {**result.stats, "cached_from_concurrent_runs": reused, "cached": result.stats["cached"] + reused}
        if self.world > 1:
            # computed_* become totals over all processes; this process's share is kept apart.
            mine = {k: v for k, v in stats.items() if k.startswith("computed_")}
            totals = _all_gather(mine, self.world)
            for key, value in mine.items():
                stats[f"{key}_this_process"] = value
                stats[key] = sum(t.get(key, 0) for t in totals)
        result.stats = {**stats, "seconds": round(time.perf_counter() - start, 3), "world_size": self.world,
                        "batch_size": {"chosen": AUTO if self.auto else "given", **self.batch_sizes},
                        "image_preprocessing_on": str(self.scorer.device) if self._device_images else "cpu"}
        return result

    def _score_dual(self, items: Sequence[Item], scorer: DualScorer[Any]) -> EngineResult:
        image_rows: dict[str, ImageRow] = {}  # key -> (key, image, where), first seen
        item_images = [["i:" + h for h in hashes] for hashes in _image_hashes(items)]
        for item, ikeys in zip(items, item_images, strict=True):
            for k, (key, image) in enumerate(zip(ikeys, item.images, strict=True)):
                if key not in image_rows:
                    image_rows[key] = (key, image, _where(item, k, image))
        tkey_of, text_rows, text_ids = self._text_rows(t for item in items for t in item.texts)
        item_keys = [(ikeys, ["t:" + tkey_of[t] for t in item.texts])
                     for ikeys, item in zip(item_images, items, strict=True)]

        vectors = self._lookup(list(image_rows) + list(text_rows))
        cached = len(vectors)
        missing_images = [image_rows[k] for k in image_rows if k not in vectors][self.rank :: self.world]
        missing_texts = [(k, text_rows[k]) for k in text_rows if k not in vectors][self.rank :: self.world]

        computed: dict[str, Vector] = {}
        # texts are encoded a share at a time between image batches: while the next image batch is read, decoded and
        # preprocessed (in threads, or DataLoader workers), the model encodes texts instead of waiting
        texts = _TextSteps(self, missing_texts, scorer, text_ids)
        try:
            computed.update(self._run_images(missing_images, scorer, between=texts.step if missing_texts else None,
                                             ready=texts.settle))
            computed.update(texts.finish())
        finally:
            texts.close()
        stats = {"cached": cached, "unique_images": len(image_rows), "unique_texts": len(text_rows),
                 "computed_images": sum(k.startswith("i:") for k in computed),
                 "computed_texts": sum(k.startswith("t:") for k in computed)}
        vectors.update(self._gather(computed))

        # Each distinct (image key, text key) pair's score is computed once and gathered into every
        # cell that holds it: identical inputs get one number, whatever their column or item.
        pair_score: dict[tuple[str, str], np.float32] = {}
        scores = []
        for ikeys, tkeys in item_keys:
            if any((a, b) not in pair_score for a in ikeys for b in tkeys):
                ui, ut = list(dict.fromkeys(ikeys)), list(dict.fromkeys(tkeys))
                S = np.asarray(scorer.similarity(np.stack([vectors[k] for k in ui]), np.stack([vectors[k] for k in ut])),
                               dtype=np.float32).reshape(len(ui), len(ut))
                for i, a in enumerate(ui):
                    for j, b in enumerate(ut):
                        pair_score.setdefault((a, b), S[i, j])
            scores.append(np.array([[pair_score[a, b] for b in tkeys] for a in ikeys], dtype=np.float32))
        return EngineResult(scores=scores, probabilities=None, stats={**stats, "unique_pairs": len(pair_score)})

    def _run_images(self, rows: list[ImageRow], scorer: DualScorer[Any],
                    between: Callable[[float], None] | None = None,
                    ready: Callable[[], None] | None = None) -> dict[str, Vector]:
        """Encode (key, image, where) rows; after each batch, ``between(share of the batches done)``. ``ready()`` runs
        once the images' batch size is settled, before any batch is read (the texts' batch size search, untroubled)."""
        if not rows:
            return {}
        on_device = self._device_images_for(rows)
        collate = _Collate(scorer.preprocess_images, decoder(scorer))
        sample = rows[:BATCH_SIZE]

        def sample_inputs() -> object:  # one real batch of inputs, for the batch size search
            if on_device is not None:
                return on_device(read_batch([(r[1], r[2]) for r in sample]), [r[2] for r in sample])
            keys, inputs, error = collate(sample)
            if error:
                raise ImageError(error)
            return inputs

        size = self._tower_batch("images", scorer.encode_images, sample_inputs, len(rows))
        if ready is not None:
            ready()
        prepare = None if on_device is None else lambda batches: self._prepared(rows, batches, on_device)
        return self._run(rows, collate, lambda inputs: self._call(scorer.encode_images, inputs, size), "images", size,
                         between, prepare)

    def _prepared(self, rows: list[ImageRow], batches: Iterable[list[int]], on_device: DeviceImages) -> Generator[Collated]:
        """The device path, in threads (forking a process that holds a GPU context costs more than reading saves):
        readers (``num_workers``, at least one) read batches a few ahead, and one thread decodes and preprocesses each
        on the device one batch ahead of the model. Closing it waits for the tasks it started."""
        readers, preparer = self._pools()

        def read(batch: list[ImageRow]) -> list[Tensor]:
            return read_batch([(r[1], r[2]) for r in batch])

        def prepare(batch: list[ImageRow], payloads: Future[list[Tensor]]) -> object:
            return on_device(payloads.result(), [r[2] for r in batch])

        ahead = max(2, min(self.num_workers, 4))
        source = iter(batches)
        reads: deque[tuple[list[ImageRow], Future[list[Tensor]]]] = deque()
        jobs: list[Future[Any]] = []  # every future handed out, so that none is left running when this returns

        def next_job() -> tuple[list[ImageRow], Future[object]] | None:
            while len(reads) < ahead:
                indices = next(source, None)
                if indices is None:
                    break
                batch = [rows[i] for i in indices]
                reads.append((batch, readers.submit(read, batch)))
                jobs.append(reads[-1][1])
            if not reads:
                return None
            batch, payloads = reads.popleft()
            job = preparer.submit(prepare, batch, payloads)  # queued behind the batch being prepared now
            jobs.append(job)
            return batch, job

        try:
            job = next_job()
            while job is not None:
                batch, prepared = job
                job = next_job()  # its bytes are read and it is prepared while the model runs this batch
                yield [r[0] for r in batch], prepared.result(), None
                jobs = [j for j in jobs if not j.done()]
        finally:
            for j in jobs:
                j.cancel()
            wait(jobs)  # a task already running finishes before the caller goes on (or falls back, or raises)

    def _pools(self) -> tuple[ThreadPoolExecutor, ThreadPoolExecutor]:
        """The device path's reader threads and its preparing thread, made once per engine."""
        if self._readers is None or self._preparer is None:
            self._readers = ThreadPoolExecutor(max(1, self.num_workers), thread_name_prefix="vlprobe-read")
            self._preparer = ThreadPoolExecutor(1, thread_name_prefix="vlprobe-prepare")
        return self._readers, self._preparer

    def _device_images_for(self, rows: list[ImageRow]) -> DeviceImages | None:
        """The device path, once it has run on a first image; if the device refuses a processor step, the CPU path."""
        on_device = self._device_images
        if on_device is None or on_device.checked:
            return on_device
        try:
            on_device([read_for_device(rows[0][1], rows[0][2])], [rows[0][2]])
        except Exception as err:
            if isinstance(err, ImageError) or is_oom(err):
                raise
            self._note(f"images are decoded and preprocessed on the CPU: the device path failed on "
                       f"{self.scorer.device} ({type(err).__name__}: {err})")
            self._device_images = None
            return None
        on_device.checked = True
        return on_device

    def _tower_batch(self, tower: str, encode: Callable[[Any], object], sample: Callable[[], object], todo: int) -> int:
        """The batch size of ``tower``: given, or (auto) remembered or searched with ``encode`` on a sample batch."""
        if tower in self.batch_sizes:
            return self.batch_sizes[tower]
        if not self.auto:
            self.batch_sizes[tower] = self.batch_size
            return self.batch_size
        key = auto_batch.memo_key(self.scorer, tower)
        size = auto_batch.remembered(key)
        if size is None:
            inputs = sample()
            device = str(self.scorer.device)

            def seconds_for(n: int) -> float:
                with _inference():
                    return auto_batch.timed_call(encode, _tile(inputs, n), device)

            # a search past what is left to encode measures nothing this run needs
            largest = max(BATCH_SIZE, min(auto_batch.LARGEST, 1 << max(todo - 1, 1).bit_length()))
            size, trials = auto_batch.choose_batch_size(seconds_for, largest=largest, on_oom=_empty_device_cache)
            if largest == auto_batch.LARGEST or size < largest:  # a search cut short by a small run is not kept
                auto_batch.remember(key, size)
            tried = ", ".join(f"{t['batch_size']}: " + ("out of memory" if t.get("out_of_memory")
                                                        else f"{t['inputs_per_s']:,.0f}/s") for t in trials)
            self._say(f"batch size for the {tower} on {auto_batch.device_name(device)}: {size} (auto; tried {tried})")
        else:
            self._say(f"batch size for the {tower}: {size} (auto, remembered in {auto_batch.MEMO_FILE})")
        self.batch_sizes[tower] = size
        return size

    def _score_pairs(self, items: Sequence[Item], scorer: PairScorer[Any]) -> EngineResult:
        uses_images = scorer.uses_images
        tkey_of = self._text_rows(t for item in items for t in item.texts)[0]
        pair_rows: dict[str, PairRow] = {}
        item_keys: list[list[list[str]]] = []
        all_hashes = _image_hashes(items) if uses_images else [["-"] * len(item.images) for item in items]
        for item, hashes in zip(items, all_hashes, strict=True):
            item_keys.append([[f"p:{h}:{tkey_of[text]}" for text in item.texts] for h in hashes])
            for k, (image, row) in enumerate(zip(item.images, item_keys[-1], strict=True)):
                for text, key in zip(item.texts, row, strict=True):
                    if key not in pair_rows:
                        pair_rows[key] = (key, image if uses_images else None, text, _where(item, k, image))

        vectors = self._lookup(list(pair_rows))
        cached = len(vectors)
        self.batch_sizes.setdefault("pairs", self.batch_size)  # the search covers dual encoders' towers only
        missing = [pair_rows[k] for k in pair_rows if k not in vectors][self.rank :: self.world]

        def score(inputs: object) -> Vector:  # (n, 2): each pair's score and probability (NaN: none)
            out: PairScores = self._call(scorer.score_pairs, inputs)
            s = np.asarray(out.scores, dtype=np.float32).reshape(-1)
            p = (np.full(len(s), np.nan, dtype=np.float32) if out.probabilities is None
                 else np.asarray(out.probabilities, dtype=np.float32).reshape(-1))
            return np.stack([s, p], axis=1)

        computed = self._run(missing, _Collate(scorer.preprocess_pairs, decoder(scorer), uses_images), score, "pairs")
        stats = {"cached": cached, "unique_pairs": len(pair_rows), "computed_pairs": len(computed)}
        vectors.update(self._gather(computed))

        scores, probs, have_probs = [], [], True
        for matrix in item_keys:
            cells = np.array([[vectors[k] for k in row] for row in matrix], dtype=np.float32)
            scores.append(cells[..., 0])
            probs.append(cells[..., 1])
            have_probs = have_probs and not np.isnan(cells[..., 1]).any()
        return EngineResult(scores=scores, probabilities=probs if have_probs and items else None, stats=stats)

    def embed_images(self, images: Sequence[ImageLike],
                     labels: Sequence[str] | None = None) -> tuple[Vector, dict[str, Any]]:
        """(A DualScorer's image embeddings (N, d), stats), each distinct image computed once and cached as in
        :meth:`score`; ``labels``: how an unreadable image is named (default ``input k``)."""
        scorer = self.scorer
        assert isinstance(scorer, DualScorer)  # the probe and --modality text ask only a dual encoder
        rows: dict[str, ImageRow] = {}
        keys = []
        for k, image in enumerate(images):
            where = _input_label(image, k, labels)
            key = "i:" + _input_hash(image, where)
            keys.append(key)
            rows.setdefault(key, (key, image, where))
        return self._features(keys, rows, lambda todo: self._run_images(todo, scorer))

    def embed_texts(self, texts: Sequence[str]) -> tuple[Vector, dict[str, Any]]:
        """(A DualScorer's text embeddings (N, d), stats), each distinct text computed once and cached."""
        scorer = self.scorer
        assert isinstance(scorer, DualScorer)
        tkey_of, text_rows, text_ids = self._text_rows(texts)
        keys = ["t:" + tkey_of[t] for t in texts]
        rows = {k: (k, t) for k, t in text_rows.items()}
        return self._features(keys, rows, lambda todo: _TextSteps(self, todo, scorer, text_ids).finish())

    def pair_features(self, images: Sequence[ImageLike], texts: Sequence[str],
                      labels: Sequence[str] | None = None) -> tuple[Vector, dict[str, Any]]:
        """(A PairScorer's ``pair_features`` (N, d) of each (image, text), stats); ``labels`` as in :meth:`embed_images`."""
        scorer = self.scorer
        features = getattr(scorer, "pair_features", None)
        assert isinstance(scorer, PairScorer) and features is not None  # the probe asks only a scorer that has them
        tkey_of = self._text_rows(texts)[0]
        rows: dict[str, PairRow] = {}
        keys = []
        for k, (image, text) in enumerate(zip(images, texts, strict=True)):
            where = _input_label(image, k, labels)
            key = f"f:{_input_hash(image, where)}:{tkey_of[text]}"
            keys.append(key)
            rows.setdefault(key, (key, image, text, where))

        collate = _Collate(scorer.preprocess_pairs, decoder(scorer))
        return self._features(keys, rows, lambda todo: self._run(todo, collate, lambda inputs: self._call(features, inputs),
                                                                 "pairs"))

    def _run(self, rows: list[Keyed], collate: Callable[[list[Keyed]], Collated],
             compute: Callable[[object], npt.ArrayLike], what: str, batch_size: int | None = None,
             between: Callable[[float], None] | None = None,
             prepare: Callable[[Iterable[list[int]]], Generator[Collated]] | None = None) -> dict[str, Vector]:
        """``compute(inputs)`` for each batch a DataLoader reads with ``collate``, or ``prepare`` (the device path:
        :meth:`_prepared`) makes of the batches of row indices; then ``between(share done)``."""
        from torch.utils.data import DataLoader

        out: dict[str, Vector] = {}
        if not rows:  # (no DataLoader workers started for nothing)
            return out
        sampler = _FreshBatches([r[0] for r in rows], batch_size or self.batch_size, self.cache, self._reused,
                                rows=range(len(rows)))
        prepared = None if prepare is None else prepare(self._bar(sampler, len(rows), what))
        batches = prepared if prepared is not None else self._bar(DataLoader(
            rows,  # type: ignore[arg-type]  # a map-style dataset: __len__ and __getitem__
            batch_sampler=sampler,
            num_workers=self.num_workers,
            collate_fn=collate,
            persistent_workers=False,
        ), len(rows), what)
        try:
            for done, (keys, inputs, error) in enumerate(batches, 1):
                if error:
                    raise ImageError(error)
                self._store(out, keys, compute(inputs))
                if between is not None:
                    between(done / len(sampler))
        finally:
            if prepared is not None:
                prepared.close()  # the tasks it started finish before the caller goes on (or falls back, or raises)
        return out

    def _features(self, keys: list[str], rows: dict[str, Row],
                  run: Callable[[list[Row]], dict[str, Vector]]) -> tuple[Vector, dict[str, Any]]:
        start = time.perf_counter()
        self._reused = {}
        vectors = self._lookup(list(rows))
        cached = len(vectors)
        computed = run([rows[k] for k in rows if k not in vectors][self.rank :: self.world])
        total = sum(_all_gather(len(computed), self.world))
        vectors.update(self._gather(computed))
        stats = {"cached": cached, "unique": len(rows), "computed": total,
                 "seconds": round(time.perf_counter() - start, 3)}
        matrix = np.stack([vectors[k] for k in keys]) if keys else np.zeros((0, 0), dtype=np.float32)
        return matrix, stats

    def seen_texts(self, texts: Sequence[str]) -> list[tuple[int, ...]] | None:
        """:meth:`~vlprobe.scorers.base.Scorer.seen_texts`, each distinct string tokenized once; the last call's are
        kept, so that the run's tie check reads the ids the engine keyed its chunk by, without tokenizing again."""
        texts = list(texts)
        todo = [t for t in dict.fromkeys(texts) if t not in self._seen]
        seen: list[tuple[int, ...]] | None = self.scorer.seen_texts(todo) if todo else []
        if seen is not None and len(seen) != len(todo):
            raise ValueError(f"{type(self.scorer).__name__}.seen_texts returned {len(seen)} rows for "
                             f"{len(todo)} texts")
        known = {t: self._seen[t] for t in texts if t in self._seen}
        known.update(zip(todo, [None] * len(todo) if seen is None else seen, strict=True))
        self._seen = known  # this call's texts only: memory stays one chunk's
        out = [known[t] for t in texts]
        return [ids for ids in out if ids is not None] if all(ids is not None for ids in out) else None

    def _text_rows(self, texts: Iterable[str]) -> tuple[dict[str, str], dict[str, str], dict[str, tuple[int, ...]] | None]:
        """({text: its key}, {"t:" + key: the first text with that key}, {"t:" + key: its token ids} or None)."""
        distinct = list(dict.fromkeys(texts))
        seen = self.seen_texts(distinct)
        keys = [text_key(t, None if seen is None else seen[i]) for i, t in enumerate(distinct)]
        rows: dict[str, str] = {}
        for text, key in zip(distinct, keys, strict=True):
            rows.setdefault("t:" + key, text)
        ids = None if seen is None else {"t:" + k: row for k, row in zip(keys, seen, strict=True)}
        return dict(zip(distinct, keys, strict=True)), rows, ids

    def _lookup(self, keys: list[str]) -> dict[str, Vector]:
        """Cached vectors among ``keys``, as the main process found them (every process shards the same list)."""
        found = self.cache.get_many(keys) if self.cache is not None and self.rank == 0 else {}
        return _broadcast(found, self.world)

    def _gather(self, computed: dict[str, Vector]) -> dict[str, Vector]:
        """Every process's computed vectors (plus those a concurrent run committed meanwhile)."""
        if self.world == 1:
            return {**self._reused, **computed}
        merged: dict[str, Vector] = {}
        for part in _all_gather({**self._reused, **computed}, self.world):
            merged.update(part)
        if self.cache is not None and self.rank == 0:
            # other processes' shards went to their own part files: kept here too, for processes without a shared disk
            self.cache.put_many({k: v for k, v in merged.items() if k not in computed})
        return merged

    def _store(self, out: dict[str, Vector], keys: list[str], values: npt.ArrayLike) -> None:
        rows = np.asarray(values, dtype=np.float32)
        if rows.shape[0] != len(keys):
            raise ValueError(
                f"{type(self.scorer).__name__} returned {rows.shape[0]} rows for a batch of {len(keys)} inputs"
            )
        batch = dict(zip(keys, rows, strict=True))
        if self.cache is not None:
            self.cache.put_many(batch)  # committed before the next batch starts
        out.update(batch)

    def _call(self, fn: Callable[[Any], T], inputs: object, batch_size: int | None = None) -> T:
        try:
            with _inference():
                return fn(inputs)
        except Exception as err:
            if is_oom(err):
                raise EngineOutOfMemory(
                    f"the device ran out of memory at batch size {batch_size or self.batch_size}; try a smaller "
                    f"--batch-size (everything scored so far is cached and will not be computed again)"
                ) from err
            raise

    def _say(self, message: str) -> None:
        if self.rank == 0:
            self.log(message)

    def _note(self, message: str) -> None:
        if message not in _NOTED:
            _NOTED.add(message)
            self._say(message)

    def _interrupted(self) -> str:
        cache = self.cache
        if cache is not None and cache.enabled and not cache.temporary:
            return (f"everything computed before it is saved in the score cache ({cache.dir}); run the same "
                    f"command again to resume: nothing saved is computed again")
        return "nothing was saved (no score cache): a rerun starts from the beginning"

    def _bar(self, iterable: Iterable[T], total_inputs: int, what: str) -> Iterable[T]:
        if not self.progress or self.rank != 0 or total_inputs == 0:  # all cached: no "encoding 0 texts" bar
            return iterable
        suffix = f" (process 0 of {self.world})" if self.world > 1 else ""
        return tqdm(iterable, desc=f"encoding {total_inputs} {what}{suffix}", unit="batch", leave=False)


class _TextSteps:
    """Encode (key, text) rows a share at a time (:meth:`step`, between image batches) or all at once
    (:meth:`finish`), texts of one token length batched together (little padding, so each embedding stays close to
    the text's alone), the same batches however the steps fall; from their ids where the scorer can."""

    def __init__(self, engine: Engine, rows: list[TextRow], scorer: DualScorer[Any],
                 ids: dict[str, tuple[int, ...]] | None) -> None:
        self.engine, self.scorer = engine, scorer
        self.out: dict[str, Vector] = {}
        self.groups: list[int] | None = None
        if ids and rows:
            rows = sorted(rows, key=lambda r: len(ids.get(r[0], ())))
            self.groups = [len(ids.get(k, ())) for k, _ in rows]
        self.ids = ids if ids is not None and rows and all(k in ids for k, _ in rows) and scorer.encodes_seen_ids() \
            else None
        self.encode: Callable[[Any], Vector] = scorer.encode_seen_ids if self.ids is not None else scorer.encode_texts
        self.rows = rows
        self.size = 0
        self.batches: Iterator[list[TextRow]] | None = None
        self.bar: Iterable[list[TextRow]] | None = None
        self.total = self.done = 0

    def step(self, share: float) -> None:
        """Encode batches until ``share`` (0 to 1) of them are done."""
        if not self.rows:
            return
        engine = self.engine
        if self.batches is None:
            rows = self.rows
            self.settle()
            batches = _FreshBatches([k for k, _ in rows], self.size, engine.cache, engine._reused, rows=rows,
                                    groups=self.groups)
            self.total = len(batches)
            self.bar = engine._bar(batches, len(rows), "texts")
            self.batches = iter(self.bar)
        want = self.total if share >= 1 else math.ceil(share * self.total)
        while self.done < want:
            batch = next(self.batches, None)
            if batch is None:  # the rest was committed by a concurrent run meanwhile
                self.done = self.total
                return
            engine._store(self.out, [k for k, _ in batch], engine._call(self.encode, self._inputs(batch), self.size))
            self.done += 1

    def settle(self) -> None:
        """The texts' batch size, settled before any image batch is read (timed beside image batches, the auto search
        stopped early: 256 where 1,024 was right)."""
        if self.rows and not self.size:
            rows = self.rows
            # searched on the longest texts (the last after sorting): the batch that needs the most memory
            self.size = self.engine._tower_batch("texts", self.encode, lambda: self._inputs(rows[-BATCH_SIZE:]),
                                                 len(rows))

    def _inputs(self, rows: list[TextRow]) -> list[str] | list[tuple[int, ...]]:
        return [t for _, t in rows] if self.ids is None else [self.ids[k] for k, _ in rows]

    def finish(self) -> dict[str, np.ndarray]:
        """Encode the batches left, and close the progress bar."""
        try:
            self.step(1.0)
        finally:
            self.close()
        return self.out

    def close(self) -> None:
        """Close the progress bar now, so that a run's stop message prints after it is gone."""
        close = getattr(self.bar, "close", None)
        if close is not None:
            close()


def _inference() -> AbstractContextManager[object]:
    import torch

    return torch.inference_mode()


def _empty_device_cache() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def score_items(
    scorer: Scorer,
    items: Sequence[Item],
    *,
    batch_size: int | str = BATCH_SIZE,
    num_workers: int = 0,
    cache: ScoreCache | None = None,
    progress: bool = True,
) -> EngineResult:
    """One call: ``Engine(scorer, ...).score(items)``."""
    return Engine(scorer, batch_size=batch_size, num_workers=num_workers, cache=cache, progress=progress).score(items)


def _where(item: Item, k: int, image: ImageLike) -> str:
    cfg = f" of config {item.config!r}" if item.config else ""
    return f"item {item.id!r}{cfg}, image {k} ({describe(image)})"


def _image_hashes(items: Sequence[Item]) -> list[list[str]]:
    """Every item's image hashes (:func:`_input_hash`), in threads when there are many (sha256 releases the GIL);
    the first unreadable image, in item order, raises."""
    jobs = [(image, item, k) for item in items for k, image in enumerate(item.images)]

    def hashed(job: tuple[ImageLike, Item, int]) -> str:
        return _input_hash(job[0], lambda: _where(job[1], job[2], job[0]))

    if len(jobs) < 256:
        flat = [hashed(job) for job in jobs]
    else:
        with ThreadPoolExecutor(min(8, os.cpu_count() or 1), thread_name_prefix="vlprobe-hash") as pool:
            flat = list(pool.map(hashed, jobs, chunksize=64))
    out, at = [], 0
    for item in items:
        out.append(flat[at : at + len(item.images)])
        at += len(item.images)
    return out


def _input_label(image: ImageLike, k: int, labels: Sequence[str] | None) -> str:
    """How an error names input ``k``: its label (the probe's ``<task>/<split> row <i>``), else ``input k``."""
    return f"{labels[k] if labels is not None else f'input {k}'} ({describe(image)})"


def _input_hash(image: ImageLike, where: str | Callable[[], str]) -> str:
    """The image's content hash; an unreadable one raises an ImageError naming it (``where``, or what it returns)."""
    try:
        return content_hash(image)
    except (OSError, ImageError) as err:  # an ImageError already names the image and why
        said = str(err) if isinstance(err, ImageError) else f"cannot read image: {err}"
        raise ImageError(f"{where if isinstance(where, str) else where()}: {said}") from None
