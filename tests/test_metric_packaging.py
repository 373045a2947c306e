"""The metric has one source (metric/valse_metric.py) and two byte-identical copies, and
`evaluate.load("valse_metric")` works by its bare name offline: from the repository root, and
anywhere once `python -m vlprobe.metric register` has run."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from vlprobe import metric

COPIES = ("vlprobe/valse_metric.py", "valse_metric/valse_metric.py")

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


def test_the_copies_are_real_files_identical_to_the_one_source(repo_root):
    source = (repo_root / "metric" / "valse_metric.py").read_bytes()
    for rel in COPIES:
        path = repo_root / rel
        assert not path.is_symlink(), f"{rel} must be a real file (a symlink breaks a Windows checkout)"
        assert path.read_bytes() == source, (
            f"{rel} differs from metric/valse_metric.py, the one source: run `python -m vlprobe.metric sync`")
    assert metric.METRIC_FILE.read_bytes() == source


def test_sync_copies_the_source_over_drifted_copies(tmp_path):
    (tmp_path / "metric").mkdir()
    (tmp_path / "metric" / "valse_metric.py").write_text("# v2\n")
    (tmp_path / "vlprobe").mkdir()
    (tmp_path / "vlprobe" / "valse_metric.py").write_text("# v1\n")
    changed = metric.sync(tmp_path)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in changed) == sorted(COPIES)
    assert all((tmp_path / rel).read_text() == "# v2\n" for rel in COPIES)
    assert metric.sync(tmp_path) == []
    assert metric.main(["sync", str(tmp_path / "nowhere")]) == 2


def _run(code_or_args, cwd: Path, modules: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, HF_MODULES_CACHE=str(modules), HF_EVALUATE_OFFLINE="1", HF_HUB_OFFLINE="1",
               OMP_NUM_THREADS="1")
    args = ["-c", code_or_args] if isinstance(code_or_args, str) else code_or_args
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _result(proc: subprocess.CompletedProcess) -> dict:
    import json

    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_bare_name_loads_from_the_repository_root_offline(repo_root, tmp_path):
    got = _result(_run(_CHECK, repo_root, tmp_path / "modules"))
    # Cells: gold 0.9 (TP), 0.3 (FN); non-gold 0.2 (TN), 0.7 and 0.8 (FP): F1 = 2/5 for both classes.
    assert got["acc_r"] == 0.5 and got["macro_f1"] == pytest.approx(0.4)
    assert got["module"].endswith(".valse_metric")


@pytest.mark.slow
def test_bare_name_loads_anywhere_once_registered_offline(tmp_path):
    elsewhere, modules = tmp_path / "elsewhere", tmp_path / "modules"
    elsewhere.mkdir()
    before = _result(_run(_CHECK, elsewhere, modules))
    assert "error" in before and "valse_metric" in before["error"]
    proc = _run(["-m", "vlprobe.metric", "register"], elsewhere, modules)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "registered valse_metric at" in proc.stdout
    registered = next((modules / "evaluate_modules" / "metrics" / "evaluate-metric--valse_metric").glob("*/valse_metric.py"))
    assert registered.read_bytes() == metric.METRIC_FILE.read_bytes()
    after = _result(_run(_CHECK, elsewhere, modules))
    assert after["acc_r"] == 0.5 and "evaluate-metric--valse_metric" in after["module"]
    # Registering again is idempotent.
    assert _run(["-m", "vlprobe.metric", "register"], elsewhere, modules).returncode == 0
    assert len(list(registered.parent.parent.glob("*/valse_metric.py"))) == 1


@pytest.mark.slow
def test_the_wheel_carries_the_metric_as_a_real_file(repo_root, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(tmp_path), str(repo_root)], capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PIP_NO_INDEX="1"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    wheel = next(tmp_path.glob("vlprobe-*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        assert zf.read("vlprobe/valse_metric.py") == (repo_root / "metric" / "valse_metric.py").read_bytes()
        assert "vlprobe/data/paper_results.csv" in zf.namelist()
