"""A pip install that stands alone (issue 26.4): the wheel carries the metric, the Space files and
the small offline model inside the package; installed into a fresh environment and run offline from
an empty folder, `vlprobe build` writes to the user's folder and `vlprobe evaluate` / `vlprobe probe`
with no arguments find what it built; `publish metric|space --dry-run` find the shipped folders. (An
editable install: test_install_editable.py.)

The fresh environment costs no download: a venv without pip whose only dependency path is a .pth
line naming this interpreter's site-packages (torch, datasets, ... already installed there); its
own site-packages comes first, so the vlprobe imported is the one installed into it, never the
checkout (PYTHONPATH is cleared)."""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import run_ok
from helpers_install import fresh_venv, offline_env, pip

# Each test here has this budget, the module fixture's install and builds included in the first: several times the
# slowest one's 174 s at load ~20 (docs/development.md)
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


@pytest.fixture(scope="module")
def wheel_build(clone, tmp_path_factory) -> tuple[Path, str]:
    """The wheel, and what the build printed (-v: setuptools' warnings included)."""
    out = tmp_path_factory.mktemp("wheel")
    proc = pip("wheel", "--no-deps", "--no-build-isolation", "-v", "-w", str(out), str(clone))
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
        assert "vlprobe/data/paper_results.csv" in names and "vlprobe/storage/locations.py" in names
        assert {"vlprobe/specs/winoground.yaml", "vlprobe/templates/valse_card.md"} <= set(names)
        # the trainer, beside vlprobe (python -m vlprobe_train), with its card template
        assert {"vlprobe_train/__main__.py", "vlprobe_train/mini_clip.py",
                "vlprobe_train/templates/mini_clip_card.md"} <= set(names)


@dataclass(frozen=True)
class Installed:
    """The wheel installed into a fresh venv, with the tiny synthetic instruments built from an empty folder."""

    home: Path  # the venv (venv/), the user's caches (cache/)
    python: Path
    vlprobe: Path
    env: dict
    package: Path  # the installed vlprobe/ folder
    datasets: Path  # where `vlprobe build` wrote outside a clone
    imported: list  # what `import vlprobe` said: its file, the metric file, the shipped model
    built: str  # what `vlprobe build winoground_style` printed


# The install and the two tiny builds are done once for the tests below (each runs its commands in an empty folder
# of its own); a command that hangs fails its test at 600 s, naming the command.
@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Installed:
    home = tmp_path_factory.mktemp("installed")
    python = fresh_venv(home / "venv")
    proc = pip("--python", str(python), "install", "-q", "--no-deps", str(wheel))
    assert proc.returncode == 0, proc.stderr[-3000:]
    env = offline_env(home)
    here = home / "empty"
    here.mkdir()
    imported = run_ok([python, "-c", "import vlprobe, vlprobe.metric as m, vlprobe.storage.locations as l; "
                      "print(vlprobe.__file__); print(m.METRIC_FILE); print(l.shipped_model())"], here, env).stdout.split()
    vlprobe = home / "venv" / "bin" / "vlprobe"
    built = run_ok([vlprobe, "build", "winoground_style", "--size", "tiny"], here, env).stdout
    run_ok([vlprobe, "build", "travlr", "--size", "tiny"], here, env)
    assert sorted(here.iterdir()) == []  # the builds wrote into the user's folder, not here
    return Installed(home, python, vlprobe, env, Path(imported[0]).parent, home / "cache" / "datasets", imported, built)


@pytest.fixture
def work(tmp_path) -> Path:
    """An empty working folder; the test's commands write nothing there but runs/."""
    here = tmp_path / "empty"
    here.mkdir()
    yield here
    assert sorted(p.name for p in here.iterdir()) in ([], ["runs"])


def test_the_installed_package_is_the_one_imported_and_builds_into_the_users_folder(installed):
    assert installed.package.is_relative_to(installed.home / "venv")  # never the checkout
    assert Path(installed.imported[1]) == installed.package / "_bundled" / "metric" / "valse_metric.py"
    assert Path(installed.imported[2]) == installed.package / "_bundled" / "models" / "mini-clip"
    assert f"built {installed.datasets / 'winoground_style'}" in installed.built
    assert (installed.datasets / "travlr" / "vlprobe.yaml").is_file()
    assert (installed.datasets / "travlr" / "README.md").is_file()


def test_the_catalogue_from_an_empty_folder(installed, work):
    """What it can build, what is built and where, the families."""
    listed = run_ok([installed.vlprobe, "list"], work, installed.env).stdout
    datasets = installed.datasets
    assert f"built: {datasets / 'travlr'}" in listed and f"built: {datasets / 'winoground_style'}" in listed
    assert "VisionTextDualEncoderModel" in listed and "bundled model: mini-clip" in listed
    assert str(installed.package / "_bundled" / "models" / "mini-clip") in listed


def test_evaluate_by_the_names_the_docs_use_and_with_no_arguments(installed, work):
    run_ok([installed.vlprobe, "evaluate", "--dataset", "travlr", "--model", "mini-clip", "--bootstrap", "0",
           "--out", "runs/named"], work, installed.env)
    assert json.loads((work / "runs" / "named" / "results.json").read_text())["results"]
    run_ok([installed.vlprobe, "evaluate"], work, installed.env)
    text = (work / "runs" / "default" / "results.json").read_text()
    assert str(installed.datasets / "winoground_style") in text
    assert str(installed.package / "_bundled" / "models" / "mini-clip") in text


def test_the_probe_finds_the_default_dataset_and_model(installed, work):
    """No --dataset, no --model: the travlr build and the bundled model (one task, no CIs; docs/probe.md's Python
    block, run by tests/test_docs_pages.py, is the whole protocol)."""
    run_ok([installed.vlprobe, "probe", "--config", "spatiality", "--bootstrap", "0", "--no-progress"], work,
          installed.env)
    assert (work / "runs" / "probe" / "results.json").is_file()


def test_the_metric_by_path_and_by_its_bare_name(installed, work):
    """By path with nothing registered; by its bare name, offline, in a process that never imports vlprobe, once
    registered (in an evaluate module cache of this test's own)."""
    env = dict(installed.env, HF_MODULES_CACHE=str(work.parent / "modules"))
    registered = work.parent / "modules" / "evaluate_modules" / "metrics" / "evaluate-metric--valse_metric"
    compute = "print(m.compute(predictions=[[[0.9, 0.2]]], references=[[[1, 0]]])['acc_r'])"
    got = run_ok([installed.python, "-c", f"import vlprobe; m = vlprobe.metric.load(); {compute}; "
                 "assert not vlprobe.metric.metric_registry.registered_path().exists(); vlprobe.register_metric()"],
                work, env)
    assert got.stdout.split()[-1] == "1.0" and registered.is_dir()
    got = run_ok([installed.python, "-c", f"import evaluate; m = evaluate.load('valse_metric'); {compute}"], work, env)
    assert got.stdout.split()[-1] == "1.0"


def test_the_readme_python_snippet_as_written(installed, work):
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    snippet = readme[readme.index("## The Python API"):].split("```python\n", 1)[1].split("```", 1)[0]
    run_ok([installed.python, "-c", snippet], work, installed.env)
    assert (work / "runs" / "api" / "results.json").is_file()


def test_publishing_finds_the_shipped_folders(installed, work):
    """A dry run: checks them, uploads nothing."""
    metric_plan = run_ok([installed.vlprobe, "publish", "metric", "--repo", "my-lab/valse_metric", "--dry-run"], work,
                        installed.env).stdout
    assert str(installed.package / "_bundled" / "metric") in metric_plan and "nothing was uploaded" in metric_plan
    space_plan = run_ok([installed.vlprobe, "publish", "space", "--repo", "my-lab/demo", "--dry-run"], work,
                       installed.env).stdout
    assert "models/mini-clip/config.json" in space_plan and "vlprobe/_bundled/metric/valse_metric.py" in space_plan
    assert "vlprobe/_bundled/models" not in space_plan and "nothing was uploaded" in space_plan
