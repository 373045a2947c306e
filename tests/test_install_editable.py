"""An editable install reads the clone's folders (issue 26.4): the metric, the shipped model and the Space from the
clone, not copies; in a fresh environment of its own (tests/helpers_install.py), apart from test_install.py's wheel so
that the two run side by side."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import run_ok
from helpers_install import fresh_venv, offline_env, pip

# a fresh venv and an editable install: a minute on the idle 2-core machine; several times that at load ~20
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


def test_an_editable_install_reads_the_clone(clone, tmp_path):
    python = fresh_venv(tmp_path / "venv")
    proc = pip("--python", str(python), "install", "-q", "--no-deps", "--no-build-isolation", "-e", str(clone))
    assert proc.returncode == 0, proc.stderr[-3000:]
    env = offline_env(tmp_path)
    code = ("import vlprobe.metric as m, vlprobe.storage.locations as l; from vlprobe import valse_metric; "
            "print(m.METRIC_FILE); print(l.shipped_model()); print(l.shipped('space'))")
    out = run_ok([python, "-c", code], tmp_path, env).stdout.split()
    assert [Path(p) for p in out] == [clone / "metric" / "valse_metric.py", clone / "models" / "mini-clip",
                                      clone / "space"]
