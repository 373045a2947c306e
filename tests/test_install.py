"""A pip install that stands alone (issue 26.4): the wheel carries the metric, the Space files and
the small offline model inside the package; installed into a fresh environment and run offline from
an empty folder, `vlprobe build` writes to the user's folder and `vlprobe evaluate` / `vlprobe probe`
with no arguments find what it built; `publish metric|space --dry-run` find the shipped folders. An
editable install reads the clone's folders.

The fresh environment costs no download: a venv without pip whose only dependency path is a .pth
line naming this interpreter's site-packages (torch, datasets, ... already installed there); its
own site-packages comes first, so the vlprobe imported is the one installed into it, never the
checkout (PYTHONPATH is cleared)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from helpers_data import source_tree

pytestmark = pytest.mark.slow


def _pip(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("PYTHONPATH", None)
    return subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True, timeout=600, env=env)


@pytest.fixture(scope="module")
def source(repo_root, tmp_path_factory) -> Path:
    return source_tree(repo_root, tmp_path_factory.mktemp("src") / "vlprobe")


@pytest.fixture(scope="module")
def wheel_build(source, tmp_path_factory) -> tuple[Path, str]:
    """The wheel, and what the build printed (-v: setuptools' warnings included)."""
    out = tmp_path_factory.mktemp("wheel")
    proc = _pip("wheel", "--no-deps", "--no-build-isolation", "-v", "-w", str(out), str(source))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return next(out.glob("vlprobe-*.whl")), proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def wheel(wheel_build) -> Path:
    return wheel_build[0]


def test_the_build_warns_of_no_ignored_package(wheel_build):
    """Every folder of data files in the package is declared (setup.py, pyproject.toml's package-data): setuptools
    prints no "Package would be ignored" block (about 40 lines each, 4 of them before)."""
    _, log = wheel_build
    assert "Successfully built vlprobe" in log or "Stored in directory" in log, log[-2000:]
    assert "would be ignored" not in log and "absent from setuptools' `packages` configuration" not in log


def _fresh_venv(where: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120)
    python = where / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True, env={"PATH": os.environ.get("PATH", "")}
                             ).stdout.strip()
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (Path(purelib) / "vlprobe_test_deps.pth").write_text("\n".join(sorted(deps)) + "\n")
    return python


def _env(home: Path) -> dict:
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               HF_EVALUATE_OFFLINE="1", VLPROBE_CACHE=str(home / "cache"), HF_MODULES_CACHE=str(home / "modules"),
               HF_DATASETS_CACHE=str(home / "hf-datasets"), OMP_NUM_THREADS="1", MPLBACKEND="Agg")
    for var in ("PYTHONPATH", "VLPROBE_ROOT", "VLPROBE_SHARED_DATA"):
        env.pop(var, None)
    return env


def test_the_wheel_carries_the_metric_the_spaces_and_the_model(wheel, repo_root):
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        assert [n for n in names if n.endswith("valse_metric.py")] == ["vlprobe/_bundled/metric/valse_metric.py"]
        assert zf.read("vlprobe/_bundled/metric/valse_metric.py") == (repo_root / "metric" / "valse_metric.py").read_bytes()
        for folder in ("metric", "space"):
            for f in (repo_root / folder).iterdir():
                assert zf.read(f"vlprobe/_bundled/{folder}/{f.name}") == f.read_bytes()
        model = repo_root / "models" / "mini-clip"
        for f in model.iterdir():
            assert zf.read(f"vlprobe/_bundled/models/mini-clip/{f.name}") == f.read_bytes()
        assert "vlprobe/data/paper_results.csv" in names and "vlprobe/locations.py" in names
        assert {"vlprobe/specs/winoground.yaml", "vlprobe/templates/valse_card.md"} <= set(names)
        # the trainer, beside vlprobe (python -m vlprobe_train), with its card template
        assert {"vlprobe_train/__main__.py", "vlprobe_train/mini_clip.py",
                "vlprobe_train/templates/mini_clip_card.md"} <= set(names)


def _run(args: list, cwd: Path, env: dict, timeout: int = 900) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(map(str, args))}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


def test_an_installed_vlprobe_stands_alone_offline(wheel, tmp_path):
    python = _fresh_venv(tmp_path / "venv")
    proc = _pip("--python", str(python), "install", "-q", "--no-deps", str(wheel))
    assert proc.returncode == 0, proc.stderr[-3000:]
    vlprobe = tmp_path / "venv" / "bin" / "vlprobe"
    work = tmp_path / "empty"
    work.mkdir()
    env = _env(tmp_path)
    where = _run([python, "-c", "import vlprobe, vlprobe.metric as m, vlprobe.locations as l; "
                  "print(vlprobe.__file__); print(m.METRIC_FILE); print(l.shipped_model())"], work, env).stdout.split()
    installed = Path(where[0]).parent
    assert installed.is_relative_to(tmp_path / "venv")
    assert Path(where[1]) == installed / "_bundled" / "metric" / "valse_metric.py"
    assert Path(where[2]) == installed / "_bundled" / "models" / "mini-clip"

    datasets = tmp_path / "cache" / "datasets"
    out = _run([vlprobe, "build", "winoground_style", "--size", "tiny"], work, env).stdout
    assert f"built {datasets / 'winoground_style'}" in out
    # tiny, with the 500 training rows the README's Python snippet trains on
    _run([vlprobe, "build", "travlr", "--size", "tiny", "--split-sizes", "train=500"], work, env)
    assert (datasets / "travlr" / "vlprobe.yaml").is_file() and (datasets / "travlr" / "README.md").is_file()

    # The catalogue, from an empty folder: what it can build, what is built and where, the families.
    listed = _run([vlprobe, "list"], work, env).stdout
    assert f"built: {datasets / 'travlr'}" in listed and f"built: {datasets / 'winoground_style'}" in listed
    assert "VisionTextDualEncoderModel" in listed and "bundled model: mini-clip" in listed
    assert str(installed / "_bundled" / "models" / "mini-clip") in listed
    # The names the docs use, from any folder.
    _run([vlprobe, "evaluate", "--dataset", "travlr", "--model", "mini-clip", "--bootstrap", "0", "--out", "runs/named"],
         work, env)
    assert json.loads((work / "runs" / "named" / "results.json").read_text())["results"]

    _run([vlprobe, "evaluate"], work, env)
    result = json.loads((work / "runs" / "default" / "results.json").read_text())
    text = json.dumps(result)
    assert str(datasets / "winoground_style") in text and str(installed / "_bundled" / "models" / "mini-clip") in text
    _run([vlprobe, "probe", "--no-progress"], work, env)
    assert (work / "runs" / "probe" / "results.json").is_file()

    # The metric by its bare name, offline, with no register step: the vlprobe commands above registered it.
    got = _run([python, "-c", "import evaluate; m = evaluate.load('valse_metric'); "
                "print(m.compute(predictions=[[[0.9, 0.2]]], references=[[[1, 0]]])['acc_r'])"], work, env)
    assert got.stdout.split()[-1] == "1.0"
    got = _run([python, "-c", "import vlprobe; m = vlprobe.metric.load(); "
                "print(m.compute(predictions=[[[0.9, 0.2]]], references=[[[1, 0]]])['acc_r'])"], work, env)
    assert got.stdout.split()[-1] == "1.0"
    # The README's Python snippet, as written.
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    snippet = readme[readme.index("## The Python API"):].split("```python\n", 1)[1].split("```", 1)[0]
    _run([python, "-c", snippet], work, env)
    assert (work / "runs" / "api" / "results.json").is_file()

    # Publishing finds the shipped folders (dry run: checks them, uploads nothing).
    metric_plan = _run([vlprobe, "publish", "metric", "--repo", "my-lab/valse_metric", "--dry-run"], work, env).stdout
    assert str(installed / "_bundled" / "metric") in metric_plan and "nothing was uploaded" in metric_plan
    space_plan = _run([vlprobe, "publish", "space", "--repo", "my-lab/demo", "--dry-run"], work, env).stdout
    assert "models/mini-clip/config.json" in space_plan and "vlprobe/_bundled/metric/valse_metric.py" in space_plan
    assert "vlprobe/_bundled/models" not in space_plan and "nothing was uploaded" in space_plan
    assert sorted(p.name for p in work.iterdir()) == ["runs"]  # nothing else written in the working folder


def test_an_editable_install_reads_the_clone(source, tmp_path):
    python = _fresh_venv(tmp_path / "venv")
    proc = _pip("--python", str(python), "install", "-q", "--no-deps", "--no-build-isolation", "-e", str(source))
    assert proc.returncode == 0, proc.stderr[-3000:]
    env = _env(tmp_path)
    out = _run([python, "-c", "import vlprobe.metric as m, vlprobe.locations as l; from vlprobe import valse_metric; "
                "print(m.METRIC_FILE); print(l.shipped_model()); print(l.shipped('space'))"], tmp_path, env).stdout.split()
    assert [Path(p) for p in out] == [source / "metric" / "valse_metric.py", source / "models" / "mini-clip",
                                      source / "space"]
