"""What a run keeps of its scored splits in memory (:class:`ScoredSplit`), and their records (:func:`result_entries`)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, overload

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

if TYPE_CHECKING:
    from ..dataset.items import Item

from .schema import AuthorsRule, DataInfo, Entry, Metrics, dataset_name, dump, parse, portable_name


@dataclass(frozen=True, slots=True)
class ScoredItem:
    """What a run keeps of a scored item, small: no images, texts interned, tag sets and gold matrices shared."""

    id: str
    texts: tuple[str, ...]
    gold: np.ndarray
    tags: tuple[str, ...] = ()

    @classmethod
    def of(cls, item: Item) -> ScoredItem:
        tags = tuple(sys.intern(str(t)) for t in item.tags)
        gold = np.asarray(item.gold, dtype=bool)
        return cls(id=item.id, texts=tuple(sys.intern(t) for t in item.texts), tags=_shared(_TAGS, tags, lambda: tags),
                   gold=_shared(_GOLDS, (gold.shape, gold.tobytes()), lambda: _read_only(gold)))

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(self.gold.shape)


@dataclass
class ScoredSplit:
    """One evaluated (dataset, config, split): its items, their score matrices and the metric output."""

    dataset: str
    config: str
    split: str
    items: list[Any]
    benchmark: str | None = None
    dataset_version: str | None = None
    scores: Sequence[np.ndarray] = field(default_factory=list)  # per item m x n: evaluate keeps a ScoreMatrices
    probabilities: Sequence[np.ndarray] | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)
    # The items whose gold and a non-gold text are one input to the model (the same token ids), so they tie
    # exactly (None: the scorer cannot say); ``truncated``: those whose texts differ only past the limit.
    collapsed: list[int] | None = None
    truncated: list[int] | None = None
    text_limit: int | None = None  # in tokens
    ties: str | None = None  # the tie policy its metrics count a tie by; None: not measured yet
    authors_rule: dict[str, Any] | None = None  # {"ties", "metrics"} under the benchmark's rule, where another

    @property
    def name(self) -> str:
        return f"{dataset_name(self.dataset)}/{self.config}/{self.split}"

    @property
    def shape(self) -> tuple[int, int] | None:
        """The items' m x n shape when they all share one, else None."""
        shapes = {tuple(np.shape(it.gold)) for it in self.items}
        return shapes.pop() if len(shapes) == 1 else None


class ScoreMatrices(Sequence[np.ndarray]):
    """Per-item m x n matrices kept as a few stacked ``(k, m, n)`` blocks, without the ~200 bytes of an ndarray each."""

    def __init__(self, matrices: Iterable[ArrayLike] = (), dtype: DTypeLike = np.float32) -> None:
        self.dtype = np.dtype(dtype)
        self._blocks: list[np.ndarray] = []
        self._ends: list[int] = []  # items up to the end of each block
        self.extend(matrices)

    def extend(self, matrices: Iterable[ArrayLike]) -> None:
        """Append ``matrices`` (a sequence of m x n arrays, or one (k, m, n) array)."""
        for _, run in groupby((np.asarray(m, dtype=self.dtype) for m in matrices), key=np.shape):
            block = np.stack(list(run))
            if block.ndim != 3:
                raise ValueError(f"each item needs an m x n matrix, got shape {block.shape[1:]}")
            self._ends.append(len(self) + len(block))
            self._blocks.append(block)

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    @overload
    def __getitem__(self, index: int) -> np.ndarray: ...
    @overload
    def __getitem__(self, index: slice) -> list[np.ndarray]: ...
    def __getitem__(self, index: int | slice) -> np.ndarray | list[np.ndarray]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        i = range(len(self))[index]  # a negative index counted from the end; IndexError out of range
        k = int(np.searchsorted(self._ends, i, side="right"))
        matrix: np.ndarray = self._blocks[k][i - (self._ends[k - 1] if k else 0)]
        return matrix

    def __iter__(self) -> Iterator[np.ndarray]:
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


_GOLDS: dict[tuple[Any, ...], np.ndarray] = {}
_TAGS: dict[tuple[str, ...], tuple[str, ...]] = {}
K = TypeVar("K")
V = TypeVar("V")


def _shared(cache: dict[K, V], key: K, make: Callable[[], V]) -> V:
    """One object per distinct key, kept while the cache holds under 10,000."""
    shared = cache.get(key)
    if shared is None:
        shared = make()
        if len(cache) < 10_000:
            cache[key] = shared
    return shared


def _read_only(gold: np.ndarray) -> np.ndarray:
    shared = np.array(gold, dtype=bool, copy=True)
    shared.setflags(write=False)
    return shared


def result_entries(splits: Sequence[ScoredSplit]) -> list[Entry]:
    """The ``results`` of results.json, each dataset by its portable name (two of one name: as given)."""
    names = {u.dataset: portable_name(u.dataset) for u in splits}
    taken = [names[d] for d in dict.fromkeys(u.dataset for u in splits)]
    return [entry_of(u, names[u.dataset] if taken.count(names[u.dataset]) == 1 else u.dataset) for u in splits]


def entry_of(split: ScoredSplit, name: str | None = None) -> Entry:
    """The record of one scored split (``name``: its dataset's)."""
    data = parse(DataInfo, dump(split.data), f"{split.name}.data")
    if data.spec and Path(data.spec).is_absolute():  # the item spec by its place in the folder, not its path
        folder, spec = Path(str(split.dataset)).expanduser(), Path(data.spec)
        relative = spec.relative_to(folder).as_posix() if spec.is_relative_to(folder) else spec.name
        data = parse(DataInfo, {**data.raw, "spec": relative}, f"{split.name}.data")  # raw: what is written
    authors = split.authors_rule
    return Entry(dataset=name or portable_name(split.dataset), config=split.config, split=split.split,
                 metrics=parse(Metrics, dump(split.metrics), f"{split.name}.metrics"), benchmark=split.benchmark,
                 shape=split.shape, dataset_version=split.dataset_version, ties=split.ties,
                 data=data,
                 authors_rule=None if authors is None else parse(AuthorsRule, dump(authors), f"{split.name}.authors_rule"))
