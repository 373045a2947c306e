"""`vlprobe probe` keeps `vlprobe evaluate`'s promises: every setting and the output folder checked
before anything is loaded (one line naming the argument), the output folder written as one unit and
only over a run's own folder, a write error leaving nothing half-written, and the leftovers of
killed runs (staging, feature and chunk-cache folders) swept by the next run, never a live run's.
Also ProbeResult's public shape (that of vlprobe.Evaluation)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from helpers import kill_at

import vlprobe
from vlprobe import probing as P
from vlprobe.errors import ArgumentError, DatasetError, SettingError, VlprobeError
from vlprobe.storage import leftovers, run_folder

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


@pytest.fixture
def own_tmp(tmp_path, monkeypatch):
    """$TMPDIR of this test only, so that a sweep never looks at anyone else's folders."""
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.setenv("TMPDIR", str(tmp))
    return tmp


def _nothing_loads(monkeypatch):
    """Fail the test if the probe reads a dataset or loads a model."""
    from vlprobe import runner

    def boom(*a, **k):
        raise AssertionError("loaded something before checking the settings")

    monkeypatch.setattr(P.api, "load_splits", boom)
    monkeypatch.setattr(runner, "load_model", boom)  # where the run loads the model


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir()}


# ---- 1. (28.1) a folder that is not a probe run's is refused, as evaluate refuses it ----------------

@pytest.mark.slow
def test_a_folder_holding_a_users_files_is_refused_before_loading(travlr_small, tiny_clip_path, tmp_path,
                                                                  monkeypatch, cli):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("my notes")
    (mine / "results.json").write_text('{"mine": true}')
    _nothing_loads(monkeypatch)
    code, _, err = cli("probe", "--dataset", travlr_small, "--model", tiny_clip_path, "--out", mine, "--no-progress")
    assert code == 2 and "not a vlprobe run's (notes.txt, results.json)" in err and len(err.strip().splitlines()) == 1, err
    assert _files(mine) == {"notes.txt": b"my notes", "results.json": b'{"mine": true}'}
    with pytest.raises(SettingError, match="not a vlprobe run's"):
        P.probe(tiny_clip_path, str(travlr_small), out=mine, progress=False)
    # an evaluate run's folder is not a probe run's either (its scores.parquet would be lost)
    other = tmp_path / "evaluate-run"
    other.mkdir()
    (other / "scores.parquet").write_bytes(b"x")
    with pytest.raises(SettingError, match=r"not a vlprobe run's \(scores.parquet\)"):
        P.probe(tiny_clip_path, str(travlr_small), out=other, progress=False)


# ---- 2. (28.2) the output folder is one unit ----------------------------------------------------------

_SLOW_WRITE = """
import os, sys, time
from pathlib import Path
from vlprobe.probing import result as probing  # where write_outputs looks it up
real = probing.plot_learning_curves
def slow(path, rows, task):
    done = real(path, rows, task)
    Path(os.environ["MARK"]).write_text(str(path))  # the first plot is written: now kill me
    time.sleep(120)
    return done
probing.plot_learning_curves = slow
from vlprobe.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_a_kill_while_writing_leaves_the_previous_run_whole_and_the_next_run_sweeps(
        travlr_small, tiny_clip_path, tmp_path, own_tmp, cli):
    out, cache = tmp_path / "run", tmp_path / "cache"
    common = ["--dataset", travlr_small, "--config", "spatiality", "--model", tiny_clip_path, "--bootstrap", "0",
              "--cache-dir", cache, "--out", out, "--no-progress", "--num-workers", "0"]
    code, _, err = cli("probe", *common, "--train-size", "8")
    assert code == 0, err
    before = _files(out)
    assert "learning_curve_spatiality.png" in before
    mark = tmp_path / "writing"
    env = dict(os.environ, MARK=str(mark), TMPDIR=str(own_tmp), PYTHONPATH=os.pathsep.join(
        [str(REPO), str(HERE), os.environ.get("PYTHONPATH", "")]))
    # the same run with another learning curve, killed (SIGKILL) while it writes its plots
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_WRITE, "probe", *map(str, common), "--train-size", "12"],
                            env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    kill_at(proc, mark)
    assert proc.returncode == -signal.SIGKILL
    assert _files(out) == before  # the previous run, byte for byte: no new results.json beside old plots
    staged = [p for p in tmp_path.iterdir() if p.name.startswith(".run.new-")]
    assert len(staged) == 1 and (staged[0] / "run" / "results.json").is_file()
    # The next run (no learning curve this time) sweeps the dead run's staging folder, says so in one
    # line, and replaces the folder whole: no plot of an older run survives.
    code, _, err = cli("probe", *common)
    assert code == 0, err
    said = [line for line in err.splitlines() if "leftover" in line]
    assert len(said) == 1 and str(staged[0]) in said[0] and said[0].startswith("vlprobe: removed 1 leftover")
    assert not staged[0].exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".run.")]
    assert sorted(p.name for p in out.iterdir()) == [".vlprobe-run.json", "results.csv", "results.json", "tables.md"]


@pytest.mark.slow
def test_the_output_folder_gets_the_umask_mode(travlr_small, tiny_clip_path, tmp_path):
    """mkdtemp makes 0700 folders; an output folder is the user's, made with the usual mode."""
    umask = os.umask(0o022)
    try:
        res = P.probe(tiny_clip_path, str(travlr_small), "spatiality", train_modalities="image",
                      test_modalities="image", bootstrap=0, cache_dir=tmp_path / "c", progress=False,
                      out=tmp_path / "run")
        assert (tmp_path / "run").stat().st_mode & 0o777 == 0o755
        from vlprobe.results import write_run_folder

        def write(folder):
            (folder / "results.json").write_text("{}")
            return ["results.json"]

        write_run_folder(tmp_path / "other", write)  # vlprobe evaluate's outputs go the same way
        assert (tmp_path / "other").stat().st_mode & 0o777 == 0o755
    finally:
        os.umask(umask)
    assert res.rows


# ---- 3. (28.3) --out is checked first; a write error is one line and leaves nothing ----------------

def test_out_problems_are_refused_before_anything_is_loaded(travlr_small, tiny_clip_path, tmp_path, monkeypatch,
                                                            cli):
    _nothing_loads(monkeypatch)
    a_file = tmp_path / "file"
    a_file.write_text("x")
    readonly = tmp_path / "ro"
    readonly.mkdir()
    real = tempfile.mkdtemp

    def mkdtemp(*a, dir=None, **k):  # the tests run as root, for whom chmod does not stop writes
        if dir is not None and Path(dir) == readonly:
            raise OSError(30, "Read-only file system")
        return real(*a, dir=dir, **k)

    monkeypatch.setattr(tempfile, "mkdtemp", mkdtemp)
    for out, expected in ((a_file, "is a file"), (a_file / "sub", "is a file"),
                          (readonly / "out", "cannot write in")):
        code, _, err = cli("probe", "--dataset", travlr_small, "--model", tiny_clip_path, "--out", out)
        assert code == 2 and expected in err and len(err.strip().splitlines()) == 1, err
        assert "Traceback" not in err
    assert list(readonly.iterdir()) == []


@pytest.mark.slow
def test_a_full_disk_while_writing_is_one_line_and_leaves_nothing(travlr_small, tiny_clip_path, tmp_path,
                                                                  monkeypatch, cli):
    out = tmp_path / "run"
    kw = dict(train_modalities="image", test_modalities="image", bootstrap=0, cache_dir=tmp_path / "c",
              progress=False)
    res = P.probe(tiny_clip_path, str(travlr_small), "spatiality", train_sizes=[8], out=out, **kw)
    before = _files(out)
    real = P.plot_learning_curves

    def disk_full(path, rows, task):
        real(path, rows, task)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(P.result, "plot_learning_curves", disk_full)
    with pytest.raises(VlprobeError) as info:
        res.save(out)
    assert str(info.value).startswith(f"cannot write the outputs to {out} (No space left on device); the features "
                                      f"are in the cache ({tmp_path / 'c'}")
    assert str(info.value).endswith("so running it again computes none")
    code, _, err = cli("probe", "--dataset", travlr_small, "--config", "spatiality", "--model", tiny_clip_path,
                       "--train-modality", "image", "--test-modality", "image", "--train-size", "8",
                       "--bootstrap", "0", "--cache-dir", tmp_path / "c", "--out", out, "--no-progress")
    # the error is one line; beside it only the one-line truncation warning (issue 25: the tiny CLIP's
    # 32-token text tower cuts some queries of its text-only baseline, and the probe says so)
    lines = [line for line in err.strip().splitlines() if not line.startswith("probe: warning:")]
    assert code == 2 and len(lines) == 1 and "No space left on device" in err, err
    assert _files(out) == before  # nothing half-written: the previous run, whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c", "run"]  # no staging folder, no .tmp file


# ---- 4. (22.3) every setting checked before anything is loaded, named as the caller spells it --------

BAD_SETTINGS = [
    ("batch_size", 0, "--batch-size", "0"),
    ("few_shot", "x", None, None),
    ("few_shot", -1, "--few-shot", "-1"),
    ("datasets", 3, None, None),
    ("dataset", 3, None, None),  # the old name, still taken (with a DeprecationWarning), checked alike
    ("datasets", ["a", "b"], None, None),
    ("configs", 5, None, None),
    ("train_modalities", 3, None, None),
    ("train_modalities", "video", "--train-modality", "video"),
    ("test_modalities", ["image", "sound"], "--test-modality", "image,sound"),
    ("train_sizes", "10,abc", "--train-size", "10,abc"),
    ("train_sizes", [1], "--train-size", "1"),
    ("classifier", "svm", None, None),
    ("epochs", 0, "--epochs", "0"),
    ("epochs", "a", None, None),
    ("bootstrap", -5, "--bootstrap", "-5"),
    ("bootstrap", 10 ** 12, "--bootstrap", str(10 ** 12)),
    ("confidence", 95, "--confidence", "95"),
    ("seed", -1, "--seed", "-1"),
    ("limit", 0, "--limit", "0"),
    ("num_workers", -1, "--num-workers", "-1"),
    ("chunk_size", 0, "--chunk-size", "0"),
    ("dtype", "int3", "--dtype", "int3"),
    ("text_baseline", "yes", None, None),
    ("cache_dir", 5, None, None),
    ("out", 5, None, None),
    ("model", 3, None, None),
]


@pytest.mark.filterwarnings("ignore:vlprobe.probe\\(dataset=:DeprecationWarning")
@pytest.mark.parametrize("name,value,flag,arg", BAD_SETTINGS, ids=[f"{b[0]}={b[1]!r}"[:40] for b in BAD_SETTINGS])
def test_every_bad_setting_is_refused_at_once_naming_it(name, value, flag, arg, monkeypatch, cli, tmp_path):
    _nothing_loads(monkeypatch)
    with pytest.raises(ArgumentError) as info:
        vlprobe.probe(**{name: value}, progress=False)
    message = str(info.value)
    assert message.startswith(f"{name}={value!r}: ") and "\n" not in message, message
    if flag is not None:  # the command line names the flag
        code, _, err = cli("probe", flag, arg, "--out", tmp_path / "o")
        assert code == 2 and err.startswith(f"vlprobe probe: error: {flag} ") and len(err.strip().splitlines()) == 1, err
        assert not (tmp_path / "o").exists()


def test_a_device_that_is_not_here_is_refused_before_loading(monkeypatch):
    _nothing_loads(monkeypatch)
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(SettingError, match="device"):
        vlprobe.probe(device="cuda", progress=False)


# ---- 5. (27.2) what used to be tracebacks -------------------------------------------------------------

def _not_travlr(root: Path, listed: bool = False) -> Path:
    """A dataset folder with train/validation/test splits but VALSE-like columns (no query, no label);
    ``listed``: its card gives each split's files as a list (``path: [...]``, as the Hub allows), the
    form that once made the probe fail with ``TypeError: intern() argument must be str, not list``."""
    import datasets

    from vlprobe.dataset.folder import ConfigDecl, card_metadata, write_card, write_split

    folder = root / "pairs"
    root.mkdir(exist_ok=True)
    feats = datasets.Features({"id": datasets.Value("string"), "caption": datasets.Value("string"),
                               "foil": datasets.Value("string")})
    rows = {"id": ["a", "b"], "caption": ["one", "two"], "foil": ["three", "four"]}
    write_card(folder, card_metadata([ConfigDecl("pairs", feats, ("train", "validation", "test"), default=True)],
                                     license="cc0-1.0", pretty_name="pairs"), "# pairs\n")
    for split in ("train", "validation", "test"):
        write_split(folder, "pairs", split, datasets.Dataset.from_dict(rows, features=feats))
    (folder / "vlprobe.yaml").write_text("id: id\ntexts: [caption, foil]\ngold: [[1, 0]]\n")
    if listed:
        card = (folder / "README.md").read_text()
        for split in ("train", "validation", "test"):
            card = card.replace(f"path: data/pairs/{split}-*.parquet", f"path:\n    - data/pairs/{split}-*.parquet")
        assert card.count("path:\n    - ") == 3
        (folder / "README.md").write_text(card)
    return folder


def test_a_dataset_that_is_not_travlr_shaped_is_one_line_naming_the_columns(tmp_path, tiny_clip_path, capsys, cli):
    from helpers_data import build_folder  # test splits only, VALSE- and Winoground-shaped configs

    folders = (_not_travlr(tmp_path), _not_travlr(tmp_path / "listed", listed=True), build_folder(tmp_path))
    capsys.readouterr()
    for folder in folders:
        code, _, err = cli("probe", "--dataset", folder, "--model", tiny_clip_path, "--out", tmp_path / "o")
        assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
        assert "columns image, caption, query and label" in err and "train" in err, err
        with pytest.raises(DatasetError, match="TraVLR-shaped"):
            P.probe(tiny_clip_path, str(folder), progress=False)


@pytest.mark.slow
def test_a_limit_too_small_for_both_classes_is_one_line(travlr_small, tiny_clip_path, tmp_path, cli, monkeypatch):
    import vlprobe.runner as runner

    def no_weights(*a, **k):
        raise AssertionError("the model's weights were loaded before the rows were checked")

    monkeypatch.setattr(runner, "load_model", no_weights)  # the refusal comes from the config alone
    code, _, err = cli("probe", "--dataset", travlr_small, "--model", tiny_clip_path, "--limit", "1",
                       "--cache-dir", "none", "--out", tmp_path / "o", "--no-progress")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("vlprobe probe: error: --limit 1: the first 1 row(s) of spatiality/") and \
        "true and false rows" in err
    with pytest.raises(SettingError, match=r"^limit=1: "):
        P.probe(tiny_clip_path, str(travlr_small), limit=1, cache_dir="none", progress=False)
    assert not (tmp_path / "o").exists()


# ---- 6. (27.3, 28.6) leftovers of killed runs are swept, never a live run's ------------------------

_HOLD = """
import os, sys, time
import vlprobe.storage.leftovers
vlprobe.storage.leftovers.sweep = lambda *a, **k: []  # this helper only holds folders; the test does the sweeping
from vlprobe.storage.feature_store import FeatureStore
from vlprobe.runner import throwaway_cache
from vlprobe.scorers.loading import load_scorer
store = FeatureStore()
cache, temp = throwaway_cache(load_scorer(sys.argv[1]))
print(store.dir, temp.name, flush=True)
if sys.argv[2] == "die":
    os.kill(os.getpid(), 9)
time.sleep(300)
"""


def _temporary(tmp: Path) -> list[Path]:
    """The probe's temporary folders in ``tmp`` (not, e.g., the datasets cache kept there on purpose)."""
    return [p for p in tmp.iterdir() if p.name.startswith(leftovers.TMP_PREFIXES)]


def _hold(tiny_clip_path, own_tmp, how):
    env = dict(os.environ, TMPDIR=str(own_tmp), PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, "-c", _HOLD, str(tiny_clip_path), how], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline().split()
    return proc, [Path(p) for p in line]


@pytest.mark.slow
def test_folders_of_killed_runs_are_swept_and_live_ones_kept(tiny_clip_path, own_tmp, capsys):
    dead, dead_dirs = _hold(tiny_clip_path, own_tmp, "die")
    dead.wait(timeout=60)
    alive, live_dirs = _hold(tiny_clip_path, own_tmp, "live")
    try:
        assert dead.returncode == -signal.SIGKILL and len(dead_dirs) == len(live_dirs) == 2
        assert {p.name.split("-")[1] for p in dead_dirs} == {"features", "chunk"}
        assert all(p.is_dir() for p in dead_dirs + live_dirs)
        assert "pid " in (dead_dirs[0] / leftovers.LOCK_NAME).read_text()  # who made it, for a person to read
        unlocked = own_tmp / "vlprobe-features-older"  # no lock file (an older vlprobe's): not provably dead
        unlocked.mkdir()
        from vlprobe.storage.feature_store import FeatureStore

        mine = FeatureStore()  # this very process's, alive
        lines: list[str] = []
        removed = leftovers.sweep(log=lines.append)
        assert sorted(removed) == sorted(dead_dirs)
        assert len(lines) == 1 and lines[0].startswith("vlprobe: removed 2 leftover folder(s) of killed runs")
        assert not any(p.exists() for p in dead_dirs)
        assert all(p.is_dir() for p in live_dirs) and unlocked.is_dir() and mine.dir.is_dir()
        assert leftovers.sweep(log=lines.append) == [] and len(lines) == 1  # nothing more: says nothing
    finally:
        alive.kill()
        alive.wait()
    # once its owner has gone, the live run's folders go too
    assert sorted(leftovers.sweep(log=None)) == sorted(live_dirs)
    mine.cleanup()


_SLOW_FEATURES = """
import os, sys, time
from pathlib import Path
from vlprobe.scorers import dual_encoder as de
real = de.DualEncoderScorer.encode_images
def slow(self, inputs):
    Path(os.environ["MARK"]).touch()
    time.sleep(0.5)
    return real(self, inputs)
de.DualEncoderScorer.encode_images = slow
from vlprobe.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_a_probe_killed_mid_features_leaves_a_folder_the_next_probe_sweeps(travlr_small, tiny_clip_path, tmp_path,
                                                                            own_tmp, cli):
    mark = tmp_path / "encoding"
    args = ["probe", "--dataset", str(travlr_small), "--config", "spatiality", "--model", str(tiny_clip_path),
            "--bootstrap", "0", "--cache-dir", "none", "--chunk-size", "8", "--batch-size", "4", "--num-workers", "0",
            "--out", str(tmp_path / "run"), "--no-progress"]
    env = dict(os.environ, MARK=str(mark), TMPDIR=str(own_tmp),
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_FEATURES, *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    kill_at(proc, mark)
    left = sorted(p.name.rsplit("-", 1)[0] for p in _temporary(own_tmp))
    assert left == ["vlprobe-chunk-cache", "vlprobe-features"], left
    code, _, err = cli("probe", *args[1:])
    assert code == 0, err
    said = [line for line in err.splitlines() if "leftover" in line]
    assert len(said) == 1 and said[0].startswith("vlprobe: removed 2 leftover folder(s) of killed runs"), err
    assert _temporary(own_tmp) == []  # and this run removed its own


# ---- 7. (26.6) ProbeResult has Evaluation's public shape; probe takes datasets= as evaluate does -----

@pytest.mark.slow
def test_probe_result_has_the_shape_of_an_evaluation(travlr_small, tiny_clip_path, tmp_path):
    res = vlprobe.probe(model=tiny_clip_path, datasets=str(travlr_small), configs="spatiality", train_sizes=[8],
                        bootstrap=20, cache_dir=tmp_path / "c", progress=False)
    for name in ("results", "summary", "table", "to_pandas", "plot", "save", "provenance"):
        assert hasattr(res, name), name
    text = repr(res)
    assert len(text) < 200 and "provenance" not in text and "spatiality" in text and text.startswith(
        "<vlprobe.ProbeResult of ")
    assert res.table() == P.format_report(res)
    summary = res.summary["travlr"]
    assert summary.headline == ("macro_f1",)
    got = {(r.config, r.setting, r.split): r.values["macro_f1"] for r in summary.rows}
    want = {(r["task"], r["setting"], r["split"]): r["macro_f1"] for r in res.rows
            if r["transfer"] == "same" and r["train_size"] == 24}
    assert got == want and len(got) == 8  # image, caption, both, text-only x test_ind, test_ood
    # three seeds (the default): the mean over seeds with its sd; a full-size logistic regression is the
    # same probe for every seed (sd 0), and a bootstrap CI is of one seed's figure, so the mean has none
    assert all(r.seeds == (0, 1, 2) and r.sd == 0.0 and r.ci == {} for r in summary.rows)
    frame = res.to_pandas()
    assert len(frame) == len(res.rows) and {"macro_f1", "ci_low", "chance"} <= set(frame.columns)
    fig = res.plot()
    assert fig.axes and fig.axes[0].get_title() == "spatiality"
    written = res.save(tmp_path / "run")
    doc = json.loads((tmp_path / "run" / "results.json").read_text())
    assert set(doc) == set(res.results) == {"format", "kind", "provenance", "summary", "rows", "table2", "tables"}
    assert doc["kind"] == "probe" and doc["summary"]["travlr"]["rows"][0]["values"] == summary.rows[0].values
    assert {p.name for p in written} == {"results.json", "results.csv", "tables.md", "learning_curve_spatiality.png"}
    assert doc["provenance"]["command"].startswith("vlprobe probe --dataset ")
    # the one dataset may be given as evaluate takes a list of them
    again = vlprobe.probe(tiny_clip_path, [str(travlr_small)], "spatiality", bootstrap=0, cache_dir=tmp_path / "c",
                          progress=False)
    assert again.provenance["dataset"]["dataset"] == str(travlr_small)
    assert again.provenance["features"]["computed_inputs"] == 0
    assert again.summary["travlr"].headline == ("macro_f1",)


def test_the_old_dataset_keyword_is_taken_with_a_deprecation_warning(travlr_small, tiny_clip_path, tmp_path,
                                                                     monkeypatch):
    seen = []
    monkeypatch.setattr(P.api, "load_splits", lambda dataset, *a, **k: seen.append(dataset) or (_ for _ in ()).throw(
        DatasetError("stop here")))
    with pytest.warns(DeprecationWarning, match=r"dataset=\.\.\.\) is now datasets="):
        with pytest.raises(DatasetError, match="stop here"):
            vlprobe.probe(tiny_clip_path, dataset=str(travlr_small), cache_dir=tmp_path / "c", progress=False)
    assert seen == [str(travlr_small)]
    with pytest.warns(DeprecationWarning), pytest.raises(ArgumentError, match=r"^dataset='x': give the dataset once"):
        vlprobe.probe(tiny_clip_path, str(travlr_small), dataset="x", progress=False)


_KILLED_MID_SWAP = """
import os, sys
from pathlib import Path
from vlprobe import results
from vlprobe.storage import run_folder
run_folder.exchange = lambda a, b: False  # where the system cannot swap two folders in one step
real = os.replace
def replace(src, dst):
    if Path(src).name == "run" and Path(dst) == Path(sys.argv[1]):
        os.kill(os.getpid(), 9)  # the previous run is moved aside, the new one not yet in: die here
    return real(src, dst)
os.replace = replace
def write(folder):
    (folder / "results.json").write_text("new")
    return ["results.json"]
results.write_run_folder(sys.argv[1], write)
"""


def _old_run(out: Path) -> None:
    from vlprobe.results import write_run_folder

    def write(folder):
        (folder / "results.json").write_text("old")
        return ["results.json"]

    write_run_folder(out, write)


def test_a_kill_between_the_two_renames_of_the_swap_gets_the_previous_run_put_back(tmp_path):
    """The one instant the output folder is absent: the next run's sweep restores the previous run
    from the dead run's staging folder instead of deleting it with the rest."""
    from vlprobe.results import write_run_folder

    out = tmp_path / "run"
    _old_run(out)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", _KILLED_MID_SWAP, str(out)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert not out.exists()
    staged = [p for p in tmp_path.iterdir() if p.name.startswith(".run.new-")]
    assert len(staged) == 1 and (staged[0] / leftovers.PREVIOUS / "results.json").read_text() == "old"
    # the staging folder of another output folder whose name begins like this one's is not ours
    other = leftovers.OwnedDir(prefix=leftovers.staging_prefix(tmp_path / "run.new-x"), dir=tmp_path)
    os.close(other._finalizer.detach()[2][1])  # as if its owner were dead: its lock released, the folder kept
    lines: list[str] = []
    assert leftovers.sweep(out, tmp=False, log=lines.append) == staged
    assert (out / "results.json").read_text() == "old" and other.path.is_dir()
    assert len(lines) == 1 and f"put back {out}" in lines[0]

    def write(folder):
        (folder / "results.json").write_text("new")
        return ["results.json"]

    write_run_folder(out, write)  # and the next run replaces it as usual
    assert (out / "results.json").read_text() == "new"
    assert leftovers.sweep(tmp_path / "run.new-x", tmp=False, log=None) == [other.path]


def test_an_error_between_the_two_renames_of_the_swap_puts_the_previous_run_back(tmp_path, monkeypatch):
    from vlprobe import results

    out = tmp_path / "run"
    _old_run(out)
    real = os.replace
    monkeypatch.setattr(run_folder, "exchange", lambda a, b: False)  # where the system cannot swap in one step

    def replace(src, dst):
        if Path(src).name == "run" and Path(dst) == out:
            raise OSError(5, "Input/output error")
        return real(src, dst)

    def write(folder):
        (folder / "results.json").write_text("new")
        return ["results.json"]

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(OSError, match="Input/output error"):
        results.write_run_folder(out, write)
    assert (out / "results.json").read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_a_no_cache_run_of_evaluate_sweeps_chunk_caches_of_killed_runs(own_tmp, capsys):
    """vlprobe evaluate --cache-dir none reads several chunks through a throw-away cache in $TMPDIR
    (runner.throwaway_cache): a killed run's is removed by the next such run, in one line."""
    from vlprobe.runner import throwaway_cache

    dead = leftovers.OwnedDir(prefix="vlprobe-chunk-cache-")
    os.close(dead._finalizer.detach()[2][1])  # as if its owner were killed: lock released, folder kept

    class Scorer:
        def cache_key(self):
            return {"model_id": "stub"}

    cache, temp = throwaway_cache(Scorer())
    try:
        err = capsys.readouterr().err
        assert not dead.path.exists() and Path(temp.name).is_dir() and Path(temp.name).parent == own_tmp
        assert err.count("\n") == 1 and err.startswith("vlprobe: removed 1 leftover folder(s) of killed runs") \
            and str(dead.path) in err
    finally:
        temp.cleanup()
    assert _temporary(own_tmp) == []


def test_learning_curve_axis_labels_only_the_training_sizes(tmp_path, monkeypatch):
    """A log axis labels its minor ticks too ("500" beside "6x10^2"): the curve's x axis names the sizes alone."""
    import matplotlib.figure

    from vlprobe.probing.result import plot_learning_curves

    rows = [{"task": "spatiality", "setting": "image", "train_modality": "image", "test_modality": "image",
             "transfer": "same", "train_size": n, "split": split, "seed": seed, "classifier": "logreg",
             "macro_f1": 0.5 + n / 1e5 + seed / 100, "chance": 0.5}
            for n in (500, 1000, 2000) for split in ("test_ind", "test_ood") for seed in (0, 1)]
    seen = []
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda fig, *a, **k: seen.append(fig))
    assert plot_learning_curves(tmp_path / "curve.png", rows, "spatiality")
    [fig] = seen
    fig.canvas.draw()
    for ax in fig.axes:
        if not ax.has_data():
            continue
        assert [t.get_text() for t in ax.get_xticklabels()] == ["500", "1000", "2000"]
        assert [t.get_text() for t in ax.get_xticklabels(minor=True) if t.get_text()] == []
