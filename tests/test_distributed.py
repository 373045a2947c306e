"""Two CPU processes through ``accelerate launch`` give the same matrices as one process, each
process computing its own shard of the unique inputs (gloo backend, no GPU needed)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers_engine import ToyDual, ToyPair, toy_items

from vlprobe.scoring.engine import Engine, score_items
from vlprobe.storage.score_cache import ScoreCache

pytestmark = pytest.mark.slow  # two processes under accelerate

HERE = Path(__file__).resolve().parent

_SCRIPT = """
import json, sys
sys.path.insert(0, {tests!r})
from accelerate import PartialState
state = PartialState(cpu=True)  # gloo on CPU
import numpy as np
from vlprobe.storage.score_cache import ScoreCache
from vlprobe.scoring.engine import Engine
from helpers_engine import ToyDual, ToyPair, toy_items
items = toy_items(40, n_colors=12)
out = {{}}
for name, scorer in (("dual", ToyDual("toy")), ("pair", ToyPair("toy"))):
    with ScoreCache({cache!r}, scorer.cache_key(), rank=state.process_index) as cache:
        res = Engine(scorer, batch_size=3, cache=cache, progress=False).score(items)
    out[name] = {{"stats": res.stats, "scores": [s.tolist() for s in res.scores],
                 "probs": None if res.probabilities is None else [p.tolist() for p in res.probabilities]}}
with open({out!r} + f"/rank{{state.process_index}}.json", "w") as f:
    json.dump(out, f)
"""


def _free_port() -> str:
    import socket

    with socket.socket() as sock:  # a fixed port collides with other test runs on a shared machine
        sock.bind(("127.0.0.1", 0))
        return str(sock.getsockname()[1])


def _accelerate() -> str:
    exe = shutil.which("accelerate") or str(Path(sys.executable).with_name("accelerate"))
    if not Path(exe).exists():
        pytest.skip("accelerate is not installed")
    return exe


def test_two_processes_equal_one_process(tmp_path):
    script = tmp_path / "run.py"
    cache_dir = tmp_path / "cache"
    script.write_text(_SCRIPT.format(tests=str(HERE), cache=str(cache_dir), out=str(tmp_path)))
    # --multi_gpu only selects torchrun-style launching; the script asks for CPU (gloo) itself.
    cmd = [
        _accelerate(), "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
        "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", _free_port(), str(script),
    ]
    env = dict(os.environ, OMP_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]

    items = toy_items(40, n_colors=12)
    single_dual = score_items(ToyDual("toy"), items, batch_size=3, progress=False)
    single_pair = score_items(ToyPair("toy"), items, batch_size=3, progress=False)
    for rank in ranks:
        for got, want in zip(rank["dual"]["scores"], single_dual.scores):
            np.testing.assert_allclose(np.array(got, dtype=np.float32), want, rtol=1e-4,
                                       atol=1e-5 * max(1.0, float(np.abs(want).max())))
        for got, want in zip(rank["pair"]["scores"], single_pair.scores):
            np.testing.assert_allclose(np.array(got, dtype=np.float32), want, rtol=1e-4,
                                       atol=1e-5 * max(1.0, float(np.abs(want).max())))
        for got, want in zip(rank["pair"]["probs"], single_pair.probabilities):
            np.testing.assert_allclose(np.array(got, dtype=np.float32), want, rtol=1e-4,
                                       atol=1e-5 * max(1.0, float(np.abs(want).max())))
        assert rank["dual"]["stats"]["world_size"] == 2
    # the work was split, not repeated
    d0, d1 = ranks[0]["dual"]["stats"], ranks[1]["dual"]["stats"]
    assert d0["computed_images_this_process"] + d1["computed_images_this_process"] == single_dual.stats["unique_images"]
    assert d0["computed_texts_this_process"] + d1["computed_texts_this_process"] == single_dual.stats["unique_texts"]
    assert 0 < d1["computed_texts_this_process"] < single_dual.stats["unique_texts"]
    assert d0["computed_texts"] == d1["computed_texts"] == single_dual.stats["unique_texts"]  # totals
    p0, p1 = ranks[0]["pair"]["stats"], ranks[1]["pair"]["stats"]
    assert p0["computed_pairs_this_process"] + p1["computed_pairs_this_process"] == single_pair.stats["unique_pairs"]

    # and the cache they left serves a single-process run completely
    again = ToyDual("toy")
    with ScoreCache(cache_dir, again.cache_key()) as cache:
        res = Engine(again, batch_size=3, cache=cache, progress=False).score(items)
    assert again.images_encoded == again.texts_encoded == 0
    for x, y in zip(res.scores, single_dual.scores):
        np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(y).max())))


def test_evaluate_under_accelerate_equals_one_process(tmp_path, tiny_clip_path):
    """The user's path: `accelerate launch -m vlprobe.cli evaluate ...` with two CPU processes."""
    from helpers_data import build_folder

    folder = build_folder(tmp_path, n=8)
    common = ["--dataset", str(folder), "--model", str(tiny_clip_path), "--bootstrap", "20", "--no-progress",
              "--num-workers", "0"]
    env = dict(os.environ, OMP_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="")
    cmd = [_accelerate(), "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
           "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", _free_port(),
           "-m", "vlprobe.cli", "evaluate", *common, "--out", str(tmp_path / "two"), "--cache-dir", str(tmp_path / "c")]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    from vlprobe.cli import main

    assert main(["evaluate", *common, "--out", str(tmp_path / "one"), "--cache-dir", "none"]) == 0
    two = json.loads((tmp_path / "two" / "results.json").read_text())
    one = json.loads((tmp_path / "one" / "results.json").read_text())
    assert two["provenance"]["engine"]["world_size"] == 2
    assert [r["metrics"] for r in two["results"]] == [r["metrics"] for r in one["results"]]
    import pyarrow.parquet as pq

    s2 = pq.read_table(tmp_path / "two" / "scores.parquet").to_pydict()
    s1 = pq.read_table(tmp_path / "one" / "scores.parquet").to_pydict()
    assert s2["id"] == s1["id"]
    for a, b in zip(s2["scores"], s1["scores"]):
        np.testing.assert_allclose(np.array(a), np.array(b), rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(np.array(b)).max())))
