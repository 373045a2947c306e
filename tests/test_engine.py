"""The engine: unique inputs computed once, results equal a per-pair computation, the cache, and
kill-and-resume (a real SIGKILL and a hard exit after k batches)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from helpers_engine import ToyDual, ToyPair, ToyTextOnly, toy_items, winoground_items

from vlprobe.dataset.images import ImageError, content_hash, to_pil
from vlprobe.dataset.items import Item
from vlprobe.scoring.engine import Engine, EngineOutOfMemory, score_items
from vlprobe.storage.score_cache import ScoreCache

HERE = Path(__file__).resolve().parent


def reference_dual(scorer, items):
    """The per-pair way: encode the image and the text anew for every cell."""
    out = []
    for item in items:
        S = np.zeros(item.shape, dtype=np.float32)
        for i, image in enumerate(item.images):
            for j, text in enumerate(item.texts):
                img = scorer.encode_images(scorer.preprocess_images([to_pil(image)]))
                txt = scorer.encode_texts([text])
                S[i, j] = scorer.similarity(img, txt)[0, 0]
        out.append(S)
    return out


def test_dual_encodes_each_unique_input_once_and_matches_per_pair():
    items = toy_items(40, n_colors=12)
    scorer = ToyDual("toy")
    res = score_items(scorer, items, batch_size=5, progress=False)
    n_images = len({content_hash(im) for it in items for im in it.images})
    n_texts = len({t for it in items for t in it.texts})
    assert scorer.images_encoded == n_images == 12
    assert scorer.texts_encoded == n_texts
    assert scorer.image_calls == -(-n_images // 5)  # batched
    assert res.stats["computed_images"] == n_images and res.stats["unique_texts"] == n_texts
    assert res.probabilities is None
    ref = reference_dual(ToyDual("toy"), items)
    for got, want, item in zip(res.scores, ref, items):
        assert got.shape == item.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(want).max())))


def test_winoground_shape_and_batch_size_and_workers_do_not_change_results():
    items = winoground_items(6)
    a = score_items(ToyDual("toy"), items, batch_size=1, progress=False)
    b = score_items(ToyDual("toy"), items, batch_size=64, num_workers=2, progress=True)
    for x, y in zip(a.scores, b.scores):
        assert x.shape == (2, 2)
        np.testing.assert_allclose(x, y, rtol=1e-4,
                                   atol=1e-5 * max(1.0, float(np.abs(y).max())))  # BLAS sums differ by batch shape


def test_pair_scorer_scores_each_unique_pair_once_with_probabilities():
    items = toy_items(30, n_colors=5) + toy_items(10, n_colors=5)  # the last 10 repeat pairs
    scorer = ToyPair("toy")
    res = score_items(scorer, items, batch_size=7, progress=False)
    unique_pairs = {(content_hash(im), t) for it in items for im in it.images for t in it.texts}
    assert scorer.pairs_scored == len(unique_pairs) < sum(it.m * it.n for it in items)
    assert res.probabilities is not None
    for s, p, item in zip(res.scores, res.probabilities, items):
        assert s.shape == p.shape == item.shape
        np.testing.assert_allclose(p, 1 / (1 + np.exp(-s)), rtol=1e-4, atol=1e-5)  # probabilities: scale 1
    # the same with a per-pair call for one item
    item = items[3]
    ref = ToyPair("toy")
    for j, text in enumerate(item.texts):
        one = ref.score_pairs(ref.preprocess_pairs([to_pil(item.images[0])], [text])).scores[0]
        assert res.scores[3][0, j] == pytest.approx(one, rel=1e-4, abs=1e-5 * max(1.0, abs(float(one))))


def test_text_only_scorer_deduplicates_by_text_alone():
    items = toy_items(30, n_colors=5)
    scorer = ToyTextOnly("toy")
    res = score_items(scorer, items, progress=False)
    assert scorer.pairs_scored == len({t for it in items for t in it.texts})
    assert res.probabilities is None


def test_cache_second_run_computes_nothing_and_is_identical(tmp_path):
    items = toy_items(20)
    first = ToyDual("toy")
    with ScoreCache(tmp_path, first.cache_key()) as cache:
        a = Engine(first, batch_size=4, cache=cache, progress=False).score(items)
    second = ToyDual("toy")
    with ScoreCache(tmp_path, second.cache_key()) as cache:
        b = Engine(second, batch_size=4, cache=cache, progress=False).score(items)
    assert first.images_encoded > 0 and second.images_encoded == 0 and second.texts_encoded == 0
    assert b.stats["cached"] == a.stats["unique_images"] + a.stats["unique_texts"]
    for x, y in zip(a.scores, b.scores):
        np.testing.assert_array_equal(x, y)
    # another dtype is another cache: nothing reused
    other = ToyDual("toy", dtype="float16")
    with ScoreCache(tmp_path, other.cache_key()) as cache:
        Engine(other, cache=cache, progress=False).score(items)
    assert other.images_encoded == a.stats["unique_images"]
    assert len(list(tmp_path.glob("toy-*"))) == 2


def test_pair_cache_keeps_probabilities(tmp_path):
    items = toy_items(10, n_colors=3)
    with ScoreCache(tmp_path, ToyPair("toy").cache_key()) as cache:
        a = Engine(ToyPair("toy"), cache=cache, progress=False).score(items)
    again = ToyPair("toy")
    with ScoreCache(tmp_path, again.cache_key()) as cache:
        b = Engine(again, cache=cache, progress=False).score(items)
    assert again.pairs_scored == 0
    for x, y in zip(a.probabilities, b.probabilities):
        np.testing.assert_array_equal(x, y)


_RUN = """
import sys; sys.path.insert(0, {tests!r})
from vlprobe.storage.score_cache import ScoreCache
from vlprobe.scoring.engine import Engine
from helpers_engine import ToyDual, toy_items
scorer = ToyDual("toy")
with ScoreCache({cache!r}, scorer.cache_key()) as cache:
    Engine(scorer, batch_size=3, cache=cache, progress=False).score(toy_items(40, n_colors=12))
print("finished")
"""


def _script(cache_dir: Path) -> list[str]:
    return [sys.executable, "-c", _RUN.format(tests=str(HERE), cache=str(cache_dir))]


def _resume_and_check(cache_dir: Path, expect_cached_at_least: int, at_most: int | None = None) -> None:
    items = toy_items(40, n_colors=12)
    fresh = score_items(ToyDual("toy"), items, batch_size=3, progress=False)
    resumed_scorer = ToyDual("toy")
    with ScoreCache(cache_dir, resumed_scorer.cache_key()) as cache:
        cached_before = len(cache)
        resumed = Engine(resumed_scorer, batch_size=3, cache=cache, progress=False).score(items)
        total = fresh.stats["unique_images"] + fresh.stats["unique_texts"]
        assert len(cache) == total
    assert expect_cached_at_least <= cached_before < total
    assert at_most is None or cached_before <= at_most  # nothing after the exit
    # nothing cached was computed again: the resumed run computed exactly the rest
    assert resumed_scorer.images_encoded + resumed_scorer.texts_encoded == total - cached_before
    assert resumed.stats["cached"] == cached_before
    for x, y in zip(fresh.scores, resumed.scores):
        np.testing.assert_array_equal(x, y)


@pytest.mark.slow
def test_hard_exit_after_k_batches_then_resume(tmp_path):
    env = dict(os.environ, TOY_CRASH_AFTER_BATCHES="3")
    proc = subprocess.run(_script(tmp_path), env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 17, proc.stderr
    assert "finished" not in proc.stdout
    # The 3 batches before the exit were committed, no more: one of images, the rest of texts (a share between image
    # batches), in the cache's random batch order; a text batch ends where its token-length group does, so it may
    # hold fewer than 3. The child says how many inputs they held.
    done = int(proc.stderr.rsplit("encoded before the exit: ", 1)[1].split()[0])
    assert 3 + 2 <= done <= 3 * 3  # the image batch of 3, then two text batches of 1 to 3
    _resume_and_check(tmp_path, expect_cached_at_least=done, at_most=done)


@pytest.mark.slow
def test_sigkill_mid_run_then_resume(tmp_path):
    env = dict(os.environ, TOY_BATCH_SLEEP="0.25")
    proc = subprocess.Popen(_script(tmp_path), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 90
        count = 0
        while time.time() < deadline and count < 6:
            time.sleep(0.1)
            parts = list(tmp_path.glob("*/part-0.sqlite"))
            if parts:
                try:
                    with sqlite3.connect(parts[0], timeout=5) as db:
                        count = db.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
                except sqlite3.OperationalError:
                    count = 0
        assert count >= 6, "the child never committed a batch"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    _resume_and_check(tmp_path, expect_cached_at_least=6)


def test_unreadable_image_names_item_and_file(tmp_path):
    bad = tmp_path / "broken.png"
    bad.write_bytes(b"not a png at all")
    items = toy_items(3) + [Item(id="row-bad", images=({"bytes": None, "path": str(bad)},), texts=("x",), gold=[[1]],
                                 config="toy")]
    for workers in (0, 1):
        with pytest.raises(ImageError) as err:
            score_items(ToyDual("toy"), items, num_workers=workers, progress=False)
        assert "row-bad" in str(err.value) and "broken.png" in str(err.value)
    missing = Item(id="row-missing", images=(str(tmp_path / "nope.jpg"),), texts=("x",), gold=[[1]])
    with pytest.raises(ImageError, match=r"row-missing.*nope\.jpg"):
        score_items(ToyPair("toy"), [missing], progress=False)


class _OOMDual(ToyDual):
    def encode_images(self, inputs):
        if self.image_calls >= 2:
            import torch

            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return super().encode_images(inputs)


def test_out_of_memory_suggests_smaller_batch_and_keeps_cache(tmp_path):
    scorer = _OOMDual("toy")
    with ScoreCache(tmp_path, scorer.cache_key()) as cache:
        with pytest.raises(EngineOutOfMemory, match="smaller --batch-size"):
            Engine(scorer, batch_size=2, cache=cache, progress=False).score(toy_items(20))
        # the two image batches before the failure, and the texts encoded between image batches before it
        assert scorer.images_encoded == 4 and 0 < scorer.texts_encoded < 68
        assert len(cache) == 4 + scorer.texts_encoded


def test_bad_options():  # the batch size is checked once, by the settings (tests/test_options.py)
    with pytest.raises(ValueError, match="num_workers"):
        Engine(ToyDual("toy"), num_workers=-1)


def test_ctrl_c_says_a_throwaway_cache_kept_nothing(tmp_path):
    """A no-cache run over several chunks scores through a throw-away cache deleted after the run: on Ctrl-C it must
    not promise a resume from it, as a kept cache's message does."""
    from vlprobe.runner import throwaway_cache

    scorer = ToyDual("toy")
    cache, temp = throwaway_cache(scorer)
    try:
        assert Engine(scorer, cache=cache, progress=False)._interrupted().startswith("nothing was saved")
    finally:
        cache.close()
        temp.cleanup()
    kept = ScoreCache(tmp_path, scorer.cache_key())
    assert "saved in the score cache" in Engine(scorer, cache=kept, progress=False)._interrupted()
    kept.close()
