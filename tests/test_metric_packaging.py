"""The metric has one committed file, metric/valse_metric.py: vlprobe imports it from there (or from
the installed package's copy, made by the wheel build: tests/test_install.py), and
`evaluate.load("valse_metric")` works by its bare name offline: from the repository root (the
committed symlink valse_metric -> metric), and anywhere once registered (`vlprobe.register_metric()`,
`python -m vlprobe.metric register`: the module in evaluate's module cache, nothing written when it is there
already). `import vlprobe` writes nothing there. vlprobe.metric.load() reads the package's file by its path."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vlprobe import metric

_CHECK = """
import evaluate, json
try:
    m = evaluate.load("valse_metric")
except FileNotFoundError as err:
    print(json.dumps({"error": str(err)}))
else:
    r = m.compute(predictions=[[[0.9, 0.2]], [[0.3, 0.7]], [[0.8]]], references=[[[1, 0]], [[1, 0]], [[0]]],
                  probabilities=[[[0.9, 0.2]], [[0.3, 0.7]], [[0.8]]])
    print(json.dumps({"module": type(m).__module__, "acc_r": r["acc_r"], "macro_f1": r["macro_f1"]}))
"""


def _git(repo_root: Path, *args: str) -> str:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    proc = subprocess.run(["git", *args], cwd=repo_root, capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        pytest.skip(f"not a git checkout: {proc.stderr.strip()}")
    return proc.stdout


def test_one_committed_metric_file(repo_root):
    files = _git(repo_root, "ls-files").splitlines()
    assert [f for f in files if f.endswith("valse_metric.py")] == ["metric/valse_metric.py"]
    # The folder evaluate resolves the bare name through, at the root, is a symlink to metric/ (mode
    # 120000), not a copy; git lists it under its own name.
    mode, *_ = _git(repo_root, "ls-files", "-s", "valse_metric").split()
    assert mode == "120000"
    assert (repo_root / "valse_metric" / "valse_metric.py").resolve() == (repo_root / "metric" / "valse_metric.py").resolve()


def test_vlprobe_imports_the_one_file(repo_root):
    assert metric.METRIC_FILE == (repo_root / "metric" / "valse_metric.py").resolve()
    assert not (repo_root / "vlprobe" / "valse_metric.py").exists()
    from vlprobe import valse_metric

    assert valse_metric is metric.module and Path(valse_metric.__file__).resolve() == metric.METRIC_FILE
    assert valse_metric.compute_metrics is metric.module.compute_metrics
    assert metric.compute([[[0.9, 0.2]]], [[[1, 0]]])["acc_r"] == 1.0


def _run_python(code_or_args, cwd: Path, modules: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, HF_MODULES_CACHE=str(modules), HF_EVALUATE_OFFLINE="1", HF_HUB_OFFLINE="1",
               OMP_NUM_THREADS="1")
    args = ["-c", code_or_args] if isinstance(code_or_args, str) else code_or_args
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _result(proc: subprocess.CompletedProcess) -> dict:
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_bare_name_loads_from_the_repository_root_offline(repo_root, tmp_path):
    got = _result(_run_python(_CHECK, repo_root, tmp_path / "modules"))
    # Cells: gold 0.9 (TP), 0.3 (FN); non-gold 0.2 (TN), 0.7 and 0.8 (FP): F1 = 2/5 for both classes.
    assert got["acc_r"] == 0.5 and got["macro_f1"] == pytest.approx(0.4)
    assert got["module"].endswith(".valse_metric")


@pytest.mark.slow
def test_load_after_import_vlprobe_reads_the_package_file(tmp_path):
    """`import vlprobe; vlprobe.metric.load()` (the documented spelling) loads the file vlprobe carries by its
    path: no 'latest cached version' from evaluate's cache of downloaded modules."""
    elsewhere, modules = tmp_path / "elsewhere", tmp_path / "modules"
    elsewhere.mkdir()
    code = ("import vlprobe, json\n"
            "for _ in range(2):\n"
            "    m = vlprobe.metric.load()\n"
            "print(json.dumps({'acc_r': m.compute(predictions=[[[0.9, 0.2]]], references=[[[1, 0]]])['acc_r'], "
            "'file': str(vlprobe.metric.METRIC_FILE)}))")
    proc = _run_python(code, elsewhere, modules)
    assert _result(proc) == {"acc_r": 1.0, "file": str(metric.METRIC_FILE)}
    assert "Using the latest cached version" not in proc.stderr


def _registered(modules: Path) -> list[Path]:
    return sorted((modules / "evaluate_modules" / "metrics" / metric.CACHE_NAME).glob("*/valse_metric.py"))


@pytest.mark.slow
def test_importing_vlprobe_writes_nothing_and_registering_makes_the_bare_name_load_anywhere_offline(tmp_path):
    elsewhere, modules = tmp_path / "elsewhere", tmp_path / "modules"
    elsewhere.mkdir()
    assert _run_python("import vlprobe, vlprobe.metric", elsewhere, modules).returncode == 0
    assert not modules.exists()  # import vlprobe wrote nothing into evaluate's cache
    assert _run_python("import vlprobe; vlprobe.metric.load()", elsewhere, modules).returncode == 0
    assert _registered(modules) == []  # loading by path is evaluate's own copy by path, not the bare name's
    before = _result(_run_python(_CHECK, elsewhere, modules))  # not registered: evaluate cannot find it
    assert "error" in before and "valse_metric" in before["error"]
    proc = _run_python("import vlprobe; print(vlprobe.register_metric())", elsewhere, modules)
    assert proc.returncode == 0, proc.stderr[-2000:]
    [registered] = _registered(modules)
    assert proc.stdout.split()[-1] == str(registered) and registered.read_bytes() == metric.METRIC_FILE.read_bytes()
    stamp = registered.stat().st_mtime_ns
    after = _result(_run_python(_CHECK, elsewhere, modules))  # a process that never imports vlprobe
    assert after["acc_r"] == 0.5 and "evaluate-metric--valse_metric" in after["module"]
    # Registering again writes nothing new: the same one copy, untouched.
    proc = _run_python(["-m", "vlprobe.metric", "register"], elsewhere, modules)
    assert proc.returncode == 0 and "registered valse_metric at" in proc.stdout
    assert _registered(modules) == [registered] and registered.stat().st_mtime_ns == stamp
    assert metric.main(["sync"]) == 2  # the copies and their sync command are gone


def test_an_older_registered_copy_is_superseded_and_a_broken_one_repaired(tmp_path, monkeypatch):
    from vlprobe import metric_registry

    monkeypatch.setenv("HF_MODULES_CACHE", str(tmp_path))
    old = tmp_path / "evaluate_modules" / "metrics" / metric.CACHE_NAME / ("0" * 64) / "valse_metric.py"
    old.parent.mkdir(parents=True)
    old.write_text("# an older vlprobe's metric\n")
    mine = metric_registry.register_metric()
    os.utime(mine, (1, 1))
    assert not metric_registry._is_current(mine, metric.METRIC_FILE.read_bytes())  # the older copy is newer now
    assert metric_registry.register_metric() == mine and mine.stat().st_mtime > old.stat().st_mtime
    mine.write_text("truncated")
    metric_registry.register_metric()
    assert mine.read_bytes() == metric.METRIC_FILE.read_bytes()


def test_an_unwritable_cache_is_one_error_naming_the_fix(tmp_path, monkeypatch):
    from vlprobe import metric_registry

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("HF_MODULES_CACHE", str(blocker))
    with pytest.raises(OSError, match=r"^cannot register valse_metric in evaluate's module cache .*not-a-folder.*: set "
                                      r"HF_MODULES_CACHE to a writable folder, or load the metric by path: "
                                      r"vlprobe\.metric\.load\(\)$"):
        metric_registry.register_metric()
    assert metric.main(["register"]) == 1
