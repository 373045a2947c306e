"""Shared pieces of the cheap-cue tests (tests/test_travlr_shortcuts.py, tests/test_winoground_style_shortcuts.py):
the pixels of a shape drawn alone, dicts of features to a matrix, the two classifiers, and checking a documented table
against what a test measures."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

from vlprobe import scenes as S


class Pixels(NamedTuple):
    """Pixel statistics of a set of pixels: how many, the sums of their x and of their y, their bounding box."""

    n: int
    sx: int
    sy: int
    x0: int
    x1: int
    y0: int
    y1: int

    @classmethod
    def of(cls, mask: np.ndarray) -> Pixels:
        ys, xs = np.nonzero(mask)
        return cls(len(xs), int(xs.sum()), int(ys.sum()), int(xs.min()), int(xs.max()), int(ys.min()), int(ys.max()))

    @classmethod
    def union(cls, parts: list[Pixels]) -> Pixels | None:
        if not parts:
            return None
        return cls(sum(p.n for p in parts), sum(p.sx for p in parts), sum(p.sy for p in parts), min(p.x0 for p in parts),
                   max(p.x1 for p in parts), min(p.y0 for p in parts), max(p.y1 for p in parts))


@functools.cache
def _object_pixels(shape: str, row: int, column: int, options: tuple) -> Pixels:
    img = S.render(S.Scene((S.SceneObject(shape, "black", row, column),)), **dict(options))
    return Pixels.of(np.asarray(img)[:, :, 0] == 0)


def object_pixels(shape: str, row: int, column: int, options: dict) -> Pixels:
    """The pixels of one object as rendered alone with ``options`` (objects never overlap: each stays in its cell;
    with the paper's geometry a polygon's pixel count depends a little on its cell, by rounding)."""
    return _object_pixels(shape, row, column, tuple(sorted(options.items())))


def shape_areas(options: dict, shapes: Iterable[str] = S.SHAPES) -> dict[str, float]:
    """Mean pixels of each shape over the grid's cells, as rendered with ``options`` (what a cheap model could learn
    per shape name)."""
    return {s: float(np.mean([object_pixels(s, r, c, options).n for r in range(S.GRID) for c in range(S.GRID)]))
            for s in shapes}


class Vectoriser:
    """Dicts of features -> matrix over the keys seen in training (standardised for the linear model)."""

    def __init__(self, rows: list[dict[str, float]]):
        self.keys = sorted({k for r in rows for k in r})
        self.index = {k: i for i, k in enumerate(self.keys)}
        x = self.raw(rows)
        self.mean, self.sd = x.mean(0), x.std(0) + 1e-9

    def raw(self, rows: list[dict[str, float]]) -> np.ndarray:
        index = self.index
        r_idx, c_idx, values = [], [], []
        for r, row in enumerate(rows):
            for k, v in row.items():
                i = index.get(k)
                if i is not None:
                    r_idx.append(r)
                    c_idx.append(i)
                    values.append(v)
        x = np.zeros((len(rows), len(self.keys)))
        x[r_idx, c_idx] = values
        return x

    def columns(self, prefixes: tuple[str, ...]) -> np.ndarray:
        """The indices of the keys that start with one of ``prefixes``."""
        return np.array([i for i, k in enumerate(self.keys) if k.startswith(prefixes)], dtype=np.int64)

    def __call__(self, rows: list[dict[str, float]]) -> np.ndarray:
        return (self.raw(rows) - self.mean) / self.sd


MODELS = ("logistic", "boosting")


def fit_predict(model: str, train: list[dict], y: np.ndarray, tests: list[list[dict]]) -> list[np.ndarray]:
    """:func:`fit_predict_matrix` on dicts of features (over the keys seen in training)."""
    vec = Vectoriser(train)
    return fit_predict_matrix(model, vec.raw(train), y, [vec.raw(t) for t in tests])


def fit_predict_matrix(model: str, x: np.ndarray, y: np.ndarray, tests: list[np.ndarray]) -> list[np.ndarray]:
    """Predictions (bool) on each of ``tests`` of ``model`` trained on ``x``: an L2 logistic regression
    (L2 of 1e-2 on the mean log-loss) on features standardised on ``x``, or histogram gradient boosting (100
    trees of 15 leaves) on the raw ones. scikit-learn is a dev extra."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from threadpoolctl import threadpool_limits

    # one thread: the same sums in the same order on any machine, and no fight for 2 shared cores
    with threadpool_limits(1):
        if model == "logistic":
            mean, sd = x.mean(0), x.std(0) + 1e-9
            clf = LogisticRegression(C=1.0 / (1e-2 * len(y)), max_iter=1000)
            clf.fit((x - mean) / sd, y)
            return [clf.predict((t - mean) / sd).astype(bool) for t in tests]
        clf = HistGradientBoostingClassifier(max_iter=100, max_leaf_nodes=15, early_stopping=False, random_state=0)
        clf.fit(x, y)
        return [clf.predict(t).astype(bool) for t in tests]


def figures(line: str) -> list[float]:
    return [float(x) for x in re.findall(r"\d\.\d{3}", line)]


def assert_documented(expected: list[str], text: str, where: str) -> None:
    """Each row of ``expected`` is in ``text`` (a line starting as it does, with as many figures), its figures
    within 0.01 of the measured ones (float sums may differ in the last bits elsewhere)."""
    for line in expected:
        head = line[:line.index("0.")] if "0." in line else line
        found = [ln.strip() for ln in text.splitlines()
                 if ln.strip().startswith(head) and len(figures(ln)) == len(figures(line))]
        assert found, f"{where} lacks the row {line!r}"
        doc, now = figures(found[0]), figures(line)
        assert len(doc) == len(now) and all(abs(a - b) <= 0.01 for a, b in zip(doc, now)), (
            f"{where} is stale: it says {found[0]!r}, the test measures {line!r}")
