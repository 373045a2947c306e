"""The benchmark scripts still run (tiny sizes, no timing asserted: speed figures live in the scripts'
output and docs/performance.md, never in tests). They print the figures the docs quote; a script that
rots would leave those figures unreproducible."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # the bench scripts, run end to end in subprocesses


def _run(repo_root, tmp_path, *args, timeout=300):
    env = dict(os.environ, OMP_NUM_THREADS="1", TMPDIR=str(tmp_path), VLPROBE_CACHE=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, *args], cwd=repo_root, capture_output=True, text=True, env=env,
                          timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


@pytest.mark.parametrize("what", ["evaluate", "probe"])
def test_bench_scale_runs_and_reports_memory(repo_root, tmp_path, what):
    out = _run(repo_root, tmp_path, "scripts/bench_scale.py", "--what", what, "--sizes", "40,80", "--image-size", "32",
               "--chunk-size", "25", "--work", str(tmp_path / "work"))
    assert f"vlprobe.{what}" in out and "peak RSS MB" in out
    rows = [line.split() for line in out.splitlines() if line.strip().split(" ")[0] in ("40", "80")]
    assert [r[0] for r in rows] == ["40", "80"]
    assert all(float(r[5]) > 0 for r in rows)  # peak RSS in MB
    assert "peak RSS 80 / 40 rows" in out


def test_bench_scoring_runs_every_stage(repo_root, tmp_path):
    out = _run(repo_root, tmp_path, "scripts/bench_scoring.py", "--model", "models/mini-clip", "--items", "8",
               "--skip-loop", "--repeats", "1")
    for line in ("decode", "preprocess", "encode images", "(b) engine", "(d) model-only floor",
                 "engine time / model-only floor"):
        assert line in out, out


def test_bench_scale_jpeg_case_runs(repo_root, tmp_path):
    """The photo-sized case (issue 25): JPEGs through `vlprobe build folder`, first load measured."""
    out = _run(repo_root, tmp_path, "scripts/bench_scale.py", "--images", "jpeg", "--sizes", "12,24",
               "--chunk-size", "10", "--work", str(tmp_path / "work"))
    assert "640x480 JPEGs" in out and "peak RSS 24 / 12 rows" in out, out
    rows = [line.split() for line in out.splitlines() if line.strip().split(" ")[0] in ("12", "24")]
    assert [r[0] for r in rows] == ["12", "24"] and all(float(r[5]) > 0 for r in rows)
