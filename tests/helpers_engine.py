"""Small scorers implementing the base.py contract, with call counters, for the engine tests (also
imported by the subprocesses of the kill-and-resume and two-process tests). No tests here.

The numbers are deterministic functions of the content: an image embedding is a fixed random
projection of its 8 x 8 thumbnail, a text embedding is seeded by the text's sha256.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass, field

import numpy as np
from helpers import png

from vlprobe.dataset.items import Item
from vlprobe.scorers.base import DualScorer, PairScorer, PairScores

DIM = 16
_PROJ = np.random.default_rng(0).standard_normal((8 * 8 * 3, DIM)).astype(np.float32) / 8.0


def _text_vec(text: str) -> np.ndarray:
    seed = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
    return np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)


def _thumbnails(images) -> np.ndarray:
    """Each image's 8 x 8 thumbnail, flattened, in [0, 1]."""
    return np.stack([np.asarray(im.resize((8, 8)), dtype=np.float32).reshape(-1) / 255.0 for im in images])


def _call_counter() -> int:
    """A call counter: a dataclass field starting at 0, not an argument."""
    return field(default=0, init=False)


def _crash_check(counter: int, done: int) -> None:
    # A stand-in for a kill in subprocess runs: exit at once, no cleanup, no finally blocks. ``done``: the inputs the
    # batches before this one encoded, said on stderr (which of them came first depends on the cache's batch order).
    limit = os.environ.get("TOY_CRASH_AFTER_BATCHES")
    if limit is not None and counter > int(limit):
        os.write(2, f"encoded before the exit: {done}\n".encode())
        os._exit(17)
    delay = os.environ.get("TOY_BATCH_SLEEP")
    if delay:
        time.sleep(float(delay))


@dataclass
class ToyDual(DualScorer):
    family = "toy-dual"
    image_calls: int = _call_counter()
    text_calls: int = _call_counter()
    images_encoded: int = _call_counter()
    texts_encoded: int = _call_counter()
    batches: int = _call_counter()

    def preprocess_images(self, images):
        return _thumbnails(images)

    def encode_images(self, inputs):
        self.image_calls += 1
        self.batches += 1
        _crash_check(self.batches, self.images_encoded + self.texts_encoded)
        self.images_encoded += len(inputs)
        return inputs @ _PROJ

    def encode_texts(self, texts):
        self.text_calls += 1
        self.batches += 1
        _crash_check(self.batches, self.images_encoded + self.texts_encoded)
        self.texts_encoded += len(texts)
        return np.stack([_text_vec(t) for t in texts])

    def similarity(self, image_emb, text_emb):
        return image_emb @ text_emb.T


@dataclass
class ToyPair(PairScorer):
    family = "toy-pair"
    pairs_scored: int = _call_counter()
    calls: int = _call_counter()

    def preprocess_pairs(self, images, texts):
        return _thumbnails(images) @ _PROJ, np.stack([_text_vec(t) for t in texts])

    def score_pairs(self, inputs):
        img, txt = inputs
        self.calls += 1
        _crash_check(self.calls, self.pairs_scored)
        self.pairs_scored += len(img)
        s = (img * txt).sum(axis=1)
        return PairScores(scores=s, probabilities=1.0 / (1.0 + np.exp(-s)))


@dataclass
class ToyTextOnly(PairScorer):
    family = "toy-text"
    uses_images = False
    pairs_scored: int = _call_counter()

    def preprocess_pairs(self, images, texts):
        assert all(im is None for im in images)
        return list(texts)

    def score_pairs(self, inputs):
        self.pairs_scored += len(inputs)
        return PairScores(scores=np.array([_text_vec(t)[0] for t in inputs]))


def toy_items(n_items: int = 40, n_colors: int = 12, texts_per_item: int = 4) -> list[Item]:
    """BLA-shaped items (1 image x 4 texts) sharing images and texts across items."""
    colors = [((37 * i) % 256, (91 * i) % 256, (53 * i + 7) % 256) for i in range(n_colors)]
    items = []
    for i in range(n_items):
        image = {"bytes": png(colors[i % n_colors]), "path": f"img{i % n_colors}.png"}
        texts = tuple(f"caption {(i + j) % 17} of {j}" for j in range(texts_per_item))
        gold = [[1] * (texts_per_item // 2) + [0] * (texts_per_item - texts_per_item // 2)]
        items.append(Item(id=f"row{i}", images=(image,), texts=texts, gold=gold, tags=(f"kind={i % 3}",), config="toy"))
    return items


def winoground_items(n_items: int = 10) -> list[Item]:
    items = []
    for i in range(n_items):
        a, b = png((i * 20 % 256, 10, 200)), png((200, i * 20 % 256, 10))
        items.append(
            Item(id=str(i), images=(a, b), texts=(f"a {i} b", f"b {i} a"), gold=[[1, 0], [0, 1]], config="wino")
        )
    return items
