"""Bad inputs and accidents that must never give wrong numbers, a traceback, or a failed run
(issue 17): a changed model never reads another's cached scores; a damaged or unwritable cache is
set aside with one warning and the run goes on; Ctrl-C stops cleanly and the rerun resumes;
concurrent runs sharing a cache split the work; duplicate row ids and unknown architectures are
refused in one line."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import assert_close, computed, warning_lines
from helpers_engine import ToyDual, toy_items

from vlprobe.cli import main
from vlprobe.scorers.loading import UnknownArchitectureError, load_scorer
from vlprobe.scoring.engine import Engine, score_items
from vlprobe.storage.score_cache import ScoreCache

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

# vlprobe's CLI with every forward pass slowed down, so that a signal or a second process lands
# mid-run (the tiny model is otherwise done in a blink).
_SLOW_CLI = """
import os, sys, time
from vlprobe.scorers import dual_encoder as de
delay = float(os.environ["VLPROBE_TEST_BATCH_SLEEP"])
def slow(fn):
    def wrapper(self, inputs):
        time.sleep(delay)
        return fn(self, inputs)
    return wrapper
de.DualEncoderScorer.encode_images = slow(de.DualEncoderScorer.encode_images)
de.DualEncoderScorer.encode_texts = slow(de.DualEncoderScorer.encode_texts)
from vlprobe.cli import main
sys.exit(main(sys.argv[1:]))
"""

# vlprobe's CLI that, once it has computed VLPROBE_TEST_GATE_AFTER batches, writes the file
# VLPROBE_TEST_GATE_REACHED and waits there (for up to 10 minutes) before its next forward pass: a signal sent
# once the file exists always lands mid-run, however fast or loaded the machine.
_GATED_CLI = """
import os, sys, time
from pathlib import Path
from vlprobe.scorers import dual_encoder as de
after, reached = int(os.environ["VLPROBE_TEST_GATE_AFTER"]), Path(os.environ["VLPROBE_TEST_GATE_REACHED"])
calls = [0]
def gated(fn):
    def wrapper(self, inputs):
        calls[0] += 1
        if calls[0] > after:
            reached.touch()
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:
                time.sleep(0.05)
        return fn(self, inputs)
    return wrapper
de.DualEncoderScorer.encode_images = gated(de.DualEncoderScorer.encode_images)
de.DualEncoderScorer.encode_texts = gated(de.DualEncoderScorer.encode_texts)
from vlprobe.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _count(part: Path) -> int:
    with sqlite3.connect(part, timeout=10) as db:
        return db.execute("SELECT COUNT(*) FROM entries").fetchone()[0]


FOLDER_ROWS = 12  # the rows of conftest's synthetic folder here


@pytest.fixture(autouse=True)
def _own_default_cache(tmp_path, monkeypatch):
    # model-folder digests are memoised under the default cache dir: keep them out of ~/.cache
    monkeypatch.setenv("VLPROBE_CACHE", str(tmp_path / "default-cache"))


def _engine_stats(out: Path) -> dict:
    return json.loads((out / "results.json").read_text())["provenance"]["engine"]


def _saved_scores(out: Path) -> dict:
    import pyarrow.parquet as pq

    t = pq.read_table(out / "scores.parquet").to_pydict()
    return {(c, i): np.array(s) for c, i, s in zip(t["config"], t["id"], t["scores"])}


# ---- 1. the cache key is what the model is, not where it was typed --------------------------------

def _retrain(folder: Path, seed: int) -> None:
    """'Retrain' a saved CLIP in place: other weights, same shapes, saved into the same folder."""
    import torch
    from transformers import CLIPModel

    model = CLIPModel.from_pretrained(folder)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.5 * torch.randn(p.shape, generator=gen))
    model.save_pretrained(folder)


def _score_with_cache(model: str, cache_dir: Path, items) -> tuple:
    scorer = load_scorer(model, device="cpu")
    with ScoreCache(cache_dir, scorer.cache_key()) as cache:
        res = Engine(scorer, batch_size=8, cache=cache, progress=False).score(items)
    fresh = score_items(load_scorer(model, device="cpu"), items, batch_size=8, progress=False)
    return scorer, res, fresh


@pytest.mark.slow
def test_a_model_retrained_into_the_same_folder_gets_new_scores(tiny_clip_path, tmp_path):
    model = tmp_path / "my-clip"
    shutil.copytree(tiny_clip_path, model)
    items, cache = toy_items(12, n_colors=4), tmp_path / "cache"
    before, first, _ = _score_with_cache(str(model), cache, items)
    assert first.stats["cached"] == 0 and before.describe()["model_sha256"]
    _retrain(model, seed=1)  # model.safetensors overwritten: same size, other numbers
    after, second, truth = _score_with_cache(str(model), cache, items)
    assert after.describe()["model_sha256"] != before.describe()["model_sha256"]
    assert second.stats["cached"] == 0 and computed(second.stats) == computed(first.stats)
    for got, want, old in zip(second.scores, truth.scores, first.scores):
        assert_close(got, want)  # the retrained model's own numbers ...
    assert max(np.abs(g - o).max() for g, o in zip(second.scores, first.scores)) > 1e-3  # ... not the old ones
    assert len(list(cache.iterdir())) == 2  # one cache per model content
    # the folder unchanged: everything from the cache again
    _, third, _ = _score_with_cache(str(model), cache, items)
    assert computed(third.stats) == 0


def test_the_same_relative_path_in_two_directories_does_not_share_entries(tiny_clip_path, tmp_path, monkeypatch):
    for name, seed in (("a", None), ("b", 2)):
        shutil.copytree(tiny_clip_path, tmp_path / name / "model")
        if seed is not None:
            _retrain(tmp_path / name / "model", seed)
    items, cache = toy_items(12, n_colors=4), tmp_path / "cache"
    results = {}
    for name in ("a", "b"):
        monkeypatch.chdir(tmp_path / name)
        scorer, res, truth = _score_with_cache("model", cache, items)
        assert scorer.model_id == "model" and res.stats["cached"] == 0  # b reads nothing of a's
        for got, want in zip(res.scores, truth.scores):
            assert_close(got, want)
        results[name] = res
    assert max(np.abs(a - b).max() for a, b in zip(results["a"].scores, results["b"].scores)) > 1e-3


# ---- 2. a damaged cache is moved aside; an unwritable one is no cache ------------------------------

def _filled_cache(root: Path) -> tuple[Path, list[np.ndarray]]:
    scorer = ToyDual("toy")
    with ScoreCache(root, scorer.cache_key()) as cache:
        res = Engine(scorer, batch_size=4, cache=cache, progress=False).score(toy_items(200, n_colors=60))
        part = cache.path
    assert not part.with_name(part.name + "-wal").exists()  # checkpointed: the damage hits the real file
    return part, res.scores


def _damage_garbage(part: Path) -> None:
    part.write_bytes(b"this is not an SQLite file, it was overwritten by something else\n" * 64)


def _damage_truncate(part: Path) -> None:
    with open(part, "r+b") as fh:
        fh.truncate(part.stat().st_size // 2)


def _damage_one_page(part: Path) -> None:
    size = part.stat().st_size
    with open(part, "r+b") as fh:  # one 4 KiB page in the middle, the rest intact
        fh.seek((size // 4096 // 2) * 4096)
        fh.write(bytes(range(256)) * 16)


@pytest.mark.parametrize("damage", [_damage_garbage, _damage_truncate, _damage_one_page],
                         ids=["garbage", "truncated", "one-page"])
def test_a_damaged_cache_is_moved_aside_and_the_run_goes_on(tmp_path, capfd, damage):
    part, want = _filled_cache(tmp_path)
    damage(part)
    capfd.readouterr()
    scorer = ToyDual("toy")
    with ScoreCache(tmp_path, scorer.cache_key()) as cache:
        res = Engine(scorer, batch_size=4, cache=cache, progress=False).score(toy_items(200, n_colors=60))
        assert cache.enabled
        aside = cache.moved_aside
    lines = warning_lines(capfd.readouterr().err)
    assert len(lines) == 1 and len(aside) == 1 and aside[0].exists(), lines
    assert re.fullmatch(
        rf"vlprobe: warning: the score cache file {re.escape(str(part))} is damaged \(.+\); moved it to "
        rf"{re.escape(str(aside[0]))} and continuing with a fresh cache file \(its entries will be computed again\)",
        lines[0])
    for got, expected in zip(res.scores, want):
        assert_close(got, expected)  # batch shapes differ from the filling run: BLAS sums may too
    # nothing this run computed is lost: a third run computes nothing
    again = ToyDual("toy")
    with ScoreCache(tmp_path, again.cache_key()) as cache:
        Engine(again, batch_size=4, cache=cache, progress=False).score(toy_items(200, n_colors=60))
    assert again.images_encoded == again.texts_encoded == 0
    assert warning_lines(capfd.readouterr().err) == []


def test_a_damaged_part_of_another_process_is_moved_aside_while_reading(tmp_path, capfd):
    part, want = _filled_cache(tmp_path)
    other = part.with_name("part-1.sqlite")  # as another rank of a multi-process run would leave it
    _damage_garbage(other)
    scorer = ToyDual("toy")
    with ScoreCache(tmp_path, scorer.cache_key()) as cache:
        res = Engine(scorer, batch_size=4, cache=cache, progress=False).score(toy_items(200, n_colors=60))
    assert scorer.images_encoded == scorer.texts_encoded == 0  # the sound part still serves everything
    for got, expected in zip(res.scores, want):
        assert_close(got, expected)  # batch shapes differ from the filling run: BLAS sums may too
    lines = warning_lines(capfd.readouterr().err)
    assert len(lines) == 1 and f"the score cache file {other} is damaged (file is not a database)" in lines[0]
    assert not other.exists() and list(part.parent.glob("part-1.sqlite.damaged-*"))


def _make_read_only(path: Path) -> list[list[str]]:
    """chmod a-w, and as root (whom modes do not stop) chattr +i; skip if the folder stays writable."""
    undo = []
    path.chmod(0o555)
    if os.geteuid() == 0 and shutil.which("chattr"):
        if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode == 0:
            undo.append(["chattr", "-i", str(path)])
    try:
        (path / ".probe").touch()
    except OSError:
        return undo
    (path / ".probe").unlink()
    for cmd in undo:
        subprocess.run(cmd)
    path.chmod(0o755)
    pytest.skip(f"cannot make {path} read-only here")


@pytest.mark.parametrize("case", ["file", "read-only new", "read-only existing"])
def test_an_unwritable_cache_means_no_cache_said_once(tmp_path, capfd, case):
    root = tmp_path / "cache"
    items = toy_items(40, n_colors=12)
    want = score_items(ToyDual("toy"), items, batch_size=4, progress=False).scores
    undo = []
    if case == "file":
        root.write_text("not a folder")
        why = "it is a file, not a folder"
    elif case == "read-only new":
        root.mkdir()
        undo = _make_read_only(root)
        why = "Permission denied|Operation not permitted|Read-only file system"
    else:
        _filled_cache(root)
        folder = next(root.iterdir())
        undo = _make_read_only(folder)
        why = "unable to open database file|attempt to write a readonly database"
    capfd.readouterr()
    try:
        scorer = ToyDual("toy")
        with ScoreCache(root, scorer.cache_key()) as cache:
            res = Engine(scorer, batch_size=4, cache=cache, progress=False).score(items)
            assert not cache.enabled
    finally:
        for cmd in undo:
            subprocess.run(cmd)
        for p in (root, *root.glob("*")) if root.is_dir() else ():
            p.chmod(0o755)
    lines = warning_lines(capfd.readouterr().err)
    assert len(lines) == 1, lines
    assert re.fullmatch(rf"vlprobe: warning: cannot write the score cache in {re.escape(str(root))} \(({why})\); "
                        rf"running without a cache: scores computed from now on are not saved for a rerun", lines[0])
    assert scorer.images_encoded == 12  # all computed, nothing lost
    for got, expected in zip(res.scores, want):
        assert_close(got, expected)  # batch shapes differ from the filling run: BLAS sums may too


def test_evaluate_with_cache_dir_a_file_runs_without_a_cache(folder, tiny_clip_path, tmp_path, capsys):
    not_a_dir = tmp_path / "cache.txt"
    not_a_dir.write_text("a file")
    code = main(["evaluate", "--dataset", str(folder), "--model", str(tiny_clip_path), "--bootstrap", "0",
                 "--no-progress", "--num-workers", "0", "--cache-dir", str(not_a_dir), "--out", str(tmp_path / "o")])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert warning_lines(err) == [f"vlprobe: warning: cannot write the score cache in {not_a_dir} (it is a file, not a "
                              f"folder); running without a cache: scores computed from now on are not saved for a rerun"]
    assert "Traceback" not in err and len(_saved_scores(tmp_path / "o")) == 18


# ---- 3. Ctrl-C ---------------------------------------------------------------------------------------

@pytest.mark.slow
def test_sigint_stops_cleanly_and_the_rerun_resumes(folder, tiny_clip_path, tmp_path, capsys):
    cache, out, reached = tmp_path / "cache", tmp_path / "out", tmp_path / "gate-reached"
    args = ["evaluate", "--dataset", str(folder), "--model", str(tiny_clip_path), "--bootstrap", "0",
            "--batch-size", "1", "--cache-dir", str(cache), "--out", str(out)]
    # the run waits before its 4th batch until the signal comes: never done before it (as on a loaded machine)
    env = dict(os.environ, VLPROBE_TEST_GATE_AFTER="3", VLPROBE_TEST_GATE_REACHED=str(reached), OMP_NUM_THREADS="1")
    # its own process group, as a terminal's: Ctrl-C reaches the DataLoader workers too
    proc = subprocess.Popen([sys.executable, "-c", _GATED_CLI, *args, "--num-workers", "2"], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        while not reached.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert reached.exists(), f"the run never reached its 4th batch: {proc.poll()=}"
        seen = max(_count(part) for part in cache.glob("*/part-0.sqlite"))  # committed before the 4th started
        assert seen >= 3, "the run never committed a batch"
        os.killpg(proc.pid, signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "Error" not in stderr, stderr
    part = next(cache.glob("*/part-0.sqlite"))
    # what a terminal shows: a closing progress bar's cursor movements (tqdm's ESC [A) are not text
    line = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", stderr).strip().splitlines()[-1].strip()
    assert line == (f"vlprobe evaluate: interrupted; everything computed before it is saved in the score cache "
                    f"({part.parent}); run the same command again to resume: nothing saved is computed again")
    kept = _count(part)
    assert kept >= seen and not (out / "results.json").exists()
    # the same command again: computes exactly what was not kept, and equals an uninterrupted run
    assert main([*args, "--no-progress", "--num-workers", "0"]) == 0
    assert main([*args[:-4], "--cache-dir", "none", "--out", str(tmp_path / "fresh"), "--no-progress",
                 "--num-workers", "0"]) == 0
    capsys.readouterr()
    resumed, fresh = _engine_stats(out), _engine_stats(tmp_path / "fresh")
    assert resumed["cached"] == kept and computed(resumed) == computed(fresh) - kept
    want = _saved_scores(tmp_path / "fresh")
    got = _saved_scores(out)
    assert got.keys() == want.keys()
    for key in want:
        assert_close(got[key], want[key])


# ---- 4. concurrent runs on one cache --------------------------------------------------------------

@pytest.mark.slow
def test_concurrent_runs_share_the_cache_and_split_the_work(folder, tiny_clip_path, tmp_path, capsys, monkeypatch):
    """A subprocess starts; once it has committed a few inputs, a second run (this process) starts on
    the same cache. Both finish with the right scores, and together they compute far fewer inputs
    than twice the whole: the second reads what the first committed, before and while it runs."""
    cache = tmp_path / "cache"
    common = ["evaluate", "--dataset", str(folder), "--model", str(tiny_clip_path), "--bootstrap", "0",
              "--batch-size", "1", "--num-workers", "0", "--no-progress", "--cache-dir", str(cache)]
    env = dict(os.environ, VLPROBE_TEST_BATCH_SLEEP="0.15", OMP_NUM_THREADS="1")
    first = subprocess.Popen([sys.executable, "-c", _SLOW_CLI, *common, "--out", str(tmp_path / "one")], env=env,
                             cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline, seen = time.time() + 240, 0
        while time.time() < deadline and seen < 3 and first.poll() is None:
            time.sleep(0.05)
            for part in cache.glob("*/part-0.sqlite"):
                try:
                    seen = _count(part)
                except sqlite3.Error:
                    pass
        assert seen >= 3, "the first run never committed a batch"
        from vlprobe.scorers import dual_encoder as de

        for name in ("encode_images", "encode_texts", "encode_seen_ids"):
            fn = getattr(de.DualEncoderScorer, name)
            monkeypatch.setattr(de.DualEncoderScorer, name,
                                (lambda f: lambda self, x: (time.sleep(0.15), f(self, x))[1])(fn))
        assert main([*common, "--out", str(tmp_path / "two")]) == 0
        _, stderr = first.communicate(timeout=240)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert first.returncode == 0, stderr
    monkeypatch.undo()
    assert main([*common[:-1], "none", "--out", str(tmp_path / "alone")]) == 0
    capsys.readouterr()
    alone = computed(_engine_stats(tmp_path / "alone"))
    one, two = _engine_stats(tmp_path / "one"), _engine_stats(tmp_path / "two")
    assert computed(one) + computed(two) < 2 * alone - seen
    assert two["cached"] >= seen and computed(two) < alone
    want = _saved_scores(tmp_path / "alone")
    for run in ("one", "two"):
        got = _saved_scores(tmp_path / run)
        assert got.keys() == want.keys()
        for key in want:
            assert_close(got[key], want[key])


# ---- 5. duplicate row ids, 6. unknown architectures -------------------------------------------------

def test_duplicate_row_ids_are_refused_naming_them(tmp_path, tiny_clip_path, capsys):
    import pyarrow.parquet as pq
    from helpers_data import build_folder

    from vlprobe.dataset.folder import record_data_files, shard_name

    data = build_folder(tmp_path, n=8)
    (parquet,) = (data / "data").glob("pairs/test*.parquet") or (data / "data").rglob("*pairs*test*.parquet")
    table = pq.read_table(parquet)
    ids = table.column("id").to_pylist()
    ids[5], ids[7] = ids[1], ids[1]  # p1 three times
    ids[6] = ids[2]
    pq.write_table(table.set_column(table.column_names.index("id"), "id", [ids]), parquet)
    parquet.rename(parquet.with_name(shard_name("test", parquet)))  # named after its content, as a build names it
    record_data_files(data)
    capsys.readouterr()
    code = main(["evaluate", "--dataset", str(data), "--config", "pairs", "--model", str(tiny_clip_path),
                 "--cache-dir", "none", "--no-progress", "--out", str(tmp_path / "o")])
    out, err = capsys.readouterr()
    assert code == 2 and "Traceback" not in err
    assert err.strip() == (
        "vlprobe evaluate: error: synthetic/pairs/test: 2 id(s) of column 'id' occur more than once: 'p1' (rows 1, 5, 7), "
        "'p2' (rows 2, 6); per-item scores are keyed by the id, so each row needs its own (fix the data, or point "
        "the spec's 'id' at a unique column)")
    assert not (tmp_path / "o").exists()


def test_an_unknown_architecture_names_the_families(tmp_path, folder, capsys):
    import transformers

    model = tmp_path / "strange-model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"architectures": ["NoSuchModel"], "model_type": "no_such_model"}))
    (model / "model.safetensors").write_bytes(b"")
    expected = (
        f"cannot load model '{model}': its config names model_type 'no_such_model' (architectures ['NoSuchModel']), "
        f"which transformers {transformers.__version__} does not know, so no vlprobe scorer family can load it. "
        f"vlprobe knows these families [causal_lm: ")
    with pytest.raises(UnknownArchitectureError) as err:
        load_scorer(str(model))
    assert str(err.value).startswith(expected) and "\n" not in str(err.value)
    assert "--family names one" in str(err.value) and "dual: dual encoders" in str(err.value)
    code = main(["evaluate", "--dataset", str(folder), "--model", str(model), "--cache-dir", "none", "--no-progress",
                 "--out", str(tmp_path / "o")])
    _, stderr = capsys.readouterr()
    assert code == 2 and len(stderr.strip().splitlines()) == 1 and expected in stderr, stderr
    # no model_type at all: the same line, not "the folder is incomplete"
    (model / "config.json").write_text(json.dumps({"architectures": ["NoSuchModel"]}))
    with pytest.raises(UnknownArchitectureError, match=r"model_type None \(architectures \['NoSuchModel'\]\)"):
        load_scorer(str(model))


def test_ctrl_c_outside_the_engine_still_says_how_to_resume(monkeypatch, capsys):
    """Ctrl-C between chunks, while measuring or writing, is a bare KeyboardInterrupt: the CLI still
    says that what was scored is in the cache and how to resume, in one line, exit 130."""
    import vlprobe.commands.evaluate as evaluate_command
    from vlprobe.cli import main

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(evaluate_command, "run", interrupted)
    assert main(["evaluate", "--dataset", "x", "--model", "y"]) == 130
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith("vlprobe evaluate: interrupted; ") and "run the same command again to resume" in err
