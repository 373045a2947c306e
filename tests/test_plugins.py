"""A benchmark and a scorer family from outside vlprobe (issue 47.4): the two modules of docs/adding-a-benchmark.md's
plugin example, as written there, found through a folder (VLPROBE_INCLUDE_PATH, vlprobe.plugins.include_path) and
through the entry points of a package installed into a fresh environment, run from a folder outside the clone:
`vlprobe list` shows them, `vlprobe build` builds the benchmark, `vlprobe evaluate` scores it with the family."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import run_ok
from helpers_install import fresh_venv, offline_env, pip

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "adding-a-benchmark.md"


def _doc_modules() -> dict[str, str]:
    """{"benchmark.py": source, "scorer.py": source}: the doc's python blocks that start with their file's name."""
    text = DOC.read_text(encoding="utf-8")
    found = {}
    for code in re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M):
        first = code.splitlines()[0]
        if first.startswith("# shapes_plugin/"):
            found[first.split()[1].split("/")[1].rstrip(":")] = code
    return found


def _write_package(root: Path) -> Path:
    """The doc's plugin as a package (its pyproject.toml as the doc gives it, less the dependency on vlprobe: the
    environment has it)."""
    modules = _doc_modules()
    assert set(modules) == {"benchmark.py", "scorer.py"}
    package = root / "shapes-plugin"
    (package / "shapes_plugin").mkdir(parents=True)
    (package / "shapes_plugin" / "__init__.py").write_text("")
    for name, code in modules.items():
        (package / "shapes_plugin" / name).write_text(code)
    toml = re.search(r"^```toml\n(.*?)^```", DOC.read_text(encoding="utf-8"), flags=re.S | re.M).group(1)
    (package / "pyproject.toml").write_text('[build-system]\nrequires = ["setuptools"]\n'
                                            'build-backend = "setuptools.build_meta"\n\n'
                                            + toml.replace('dependencies = ["vlprobe"]\n', ""))
    return package


def _reset() -> None:
    """The registries as vlprobe's own: no plugin of a test stays."""
    from vlprobe import plugins
    from vlprobe.benchmarks import base
    from vlprobe.scorers import families, unregister

    plugins._FOLDERS.clear()
    plugins._LOADED.clear()
    base._REGISTRY.clear()
    for name in ("cosine",):
        if name in families():
            unregister(name)
    for name in [m for m in sys.modules if m.startswith("vlprobe_include.")]:
        del sys.modules[name]


@pytest.fixture
def plugins_reset():
    """The registries as vlprobe's own, before and after."""
    _reset()
    yield
    _reset()


def test_a_folder_of_modules_adds_a_benchmark_a_builder_and_a_family(tmp_path, plugins_reset):
    from vlprobe import plugins
    from vlprobe.benchmarks import benchmarks, find
    from vlprobe.builders import builders
    from vlprobe.scorers import families

    folder = _write_package(tmp_path) / "shapes_plugin"
    assert "shapes" not in benchmarks()
    assert plugins.include_path(folder) == ["vlprobe_include.benchmark", "vlprobe_include.scorer"]
    assert find("shapes").title == "Shapes (A. Author, 2025)" and "valse" in benchmarks()  # vlprobe's own stay
    assert type(builders()["shapes"]).__module__ == "vlprobe_include.benchmark" and "travlr" in builders()
    assert families()["cosine"].description == "any dual encoder, scored by the plain cosine of its embeddings"


def test_a_plugin_that_fails_or_clashes_is_one_line_naming_it(tmp_path, plugins_reset, monkeypatch, capsys):
    from vlprobe import plugins
    from vlprobe.benchmarks import benchmarks
    from vlprobe.cli import main

    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "mine.py").write_text("import no_such_module_here\n")
    with pytest.raises(plugins.PluginError, match=r"^plugin .*broken/mine\.py \(from VLPROBE_INCLUDE_PATH or "
                                                  r"vlprobe\.plugins\.include_path\) failed to import: "
                                                  r"ModuleNotFoundError: No module named 'no_such_module_here'$"):
        plugins.include_path(broken)
    plugins._FOLDERS.clear()
    plugins._LOADED.clear()
    monkeypatch.setenv(plugins.INCLUDE_VAR, str(broken))  # the command line: one line, no traceback
    assert main(["list"]) == 2
    assert capsys.readouterr().err.startswith("vlprobe list: error: plugin ")
    with pytest.raises(SystemExit) as stop:
        main(["build", "travlr", "--help"])
    err = capsys.readouterr().err.strip()
    assert stop.value.code == 2 and len(err.splitlines()) == 1 and err.startswith("vlprobe build: error: plugin ")
    plugins._LOADED.clear()
    clash = tmp_path / "clash"
    clash.mkdir()
    (clash / "valse_again.py").write_text("from vlprobe.benchmarks import Benchmark\n"
                                          "BENCHMARK = Benchmark(name='valse', title='another VALSE')\n")
    monkeypatch.setenv(plugins.INCLUDE_VAR, str(clash))
    with pytest.raises(plugins.PluginError, match=r"valse_again\.py: benchmark 'valse' is defined already"):
        benchmarks()
    monkeypatch.setenv(plugins.INCLUDE_VAR, str(tmp_path / "nowhere"))
    plugins._LOADED.clear()
    with pytest.raises(plugins.PluginError, match=r"^VLPROBE_INCLUDE_PATH: .*nowhere is not a folder$"):
        benchmarks()


def test_include_path_option_is_the_variable_for_one_command(tmp_path, plugins_reset, monkeypatch, capsys):
    """`vlprobe --include-path DIR COMMAND` (lm-eval's --include_path) reads DIR as VLPROBE_INCLUDE_PATH does, given
    before the command or after it; a folder that is not one, or no DIR, is one line."""
    from vlprobe import plugins
    from vlprobe.cli import main

    # setenv, not delenv: an absent variable that delenv meets is not restored, and main() sets it (it leaked the
    # plugin into the next test of this process)
    monkeypatch.setenv(plugins.INCLUDE_VAR, "")
    folder = _write_package(tmp_path) / "shapes_plugin"
    assert main(["list"]) == 0 and "\n  shapes\n" not in capsys.readouterr().out
    for argv in (["--include-path", str(folder), "list"], ["list", f"--include-path={folder}"]):
        _reset()
        monkeypatch.delenv(plugins.INCLUDE_VAR, raising=False)
        assert main(argv) == 0, capsys.readouterr().err
        listed = capsys.readouterr().out
        assert "\n  shapes\n" in listed and "\n  cosine  any dual encoder" in listed, argv
        assert os.environ[plugins.INCLUDE_VAR] == str(folder)  # what a process the command starts reads too
    for argv, said in ((["--include-path", str(tmp_path / "nowhere"), "list"],
                        f"vlprobe: error: --include-path {tmp_path / 'nowhere'}: not a folder"),
                       (["list", "--include-path"], "vlprobe: error: --include-path expects a folder: --include-path DIR")):
        assert main(argv) == 2
        assert capsys.readouterr().err.strip() == said


# ---- installed as a package, used from outside the clone ----------------------------------------------------------

@pytest.mark.slow
def test_an_installed_plugin_package_is_listed_built_and_evaluated(tmp_path):
    python = fresh_venv(tmp_path / "venv")
    # vlprobe from this checkout (tests/test_install.py installs the wheel itself); the plugin as a user installs it
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (Path(site) / "vlprobe_checkout.pth").write_text(str(REPO) + "\n")
    package = _write_package(tmp_path / "src")
    proc = pip("--python", str(python), "install", "-q", "--no-deps", "--no-build-isolation", str(package))
    assert proc.returncode == 0, proc.stderr[-3000:]
    work = tmp_path / "empty"
    work.mkdir()
    env = offline_env(tmp_path)
    env.pop("VLPROBE_INCLUDE_PATH", None)
    vlprobe = [python, "-m", "vlprobe.cli"]

    listed = run_ok([*vlprobe, "list"], work, env).stdout
    assert "\n  shapes\n" in listed and "Shapes (A. Author, 2025): a square of one colour" in listed
    assert "\n  cosine  any dual encoder, scored by the plain cosine of its embeddings" in listed
    built = run_ok([*vlprobe, "build", "shapes"], work, env).stdout
    folder = tmp_path / "cache" / "datasets" / "shapes"
    assert f"built {folder}" in built and "benchmark: shapes" in (folder / "vlprobe.yaml").read_text()
    run_ok([*vlprobe, "evaluate", "--dataset", "shapes", "--model", "mini-clip", "--family", "cosine", "--bootstrap", "0",
           "--no-progress", "--out", "runs/shapes"], work, env)
    doc = json.loads((work / "runs" / "shapes" / "results.json").read_text())
    [entry] = doc["results"]
    assert entry["benchmark"] == "shapes" and entry["config"] == "colour" and entry["metrics"]["n_items"] == 4
    assert doc["provenance"]["model"]["family"] == "cosine"
    assert "shapes" in doc["summary"]  # summarised as the plugin's benchmark (its headline: acc_r)
    scores = subprocess.run([str(python), "-c", "import pyarrow.parquet as pq, json; print(json.dumps("
                             "pq.read_table('runs/shapes/scores.parquet').column('scores').to_pylist()))"],
                            cwd=work, env=env, capture_output=True, text=True, check=True).stdout
    cells = [c for item in json.loads(scores) for row in item for c in row]
    assert len(cells) == 8 and all(-1.0 <= c <= 1.0 for c in cells)  # plain cosines: no logit scale
    assert sorted(p.name for p in work.iterdir()) == ["runs"]


@pytest.mark.slow
def test_include_path_from_outside_the_clone_lists_builds_and_evaluates(tmp_path):
    """The doc's plugin as a plain folder of modules (no package installed), named on each command line with
    --include-path, from a folder outside the clone."""
    folder = _write_package(tmp_path / "src") / "shapes_plugin"
    work = tmp_path / "empty"
    work.mkdir()
    env = offline_env(tmp_path)
    env.pop("VLPROBE_INCLUDE_PATH", None)
    vlprobe = [sys.executable, "-m", "vlprobe.cli"]
    listed = run_ok([*vlprobe, "--include-path", folder, "list"], work, env).stdout
    assert "\n  shapes\n" in listed and "\n  cosine  any dual encoder" in listed
    assert "\n  shapes\n" not in run_ok([*vlprobe, "list"], work, env).stdout  # the option, not a leftover, found it
    built = run_ok([*vlprobe, "--include-path", folder, "build", "shapes"], work, env).stdout
    assert f"built {tmp_path / 'cache' / 'datasets' / 'shapes'}" in built
    run_ok([*vlprobe, "evaluate", "--include-path", folder, "--dataset", "shapes", "--model", "mini-clip", "--family",
          "cosine", "--bootstrap", "0", "--no-progress", "--out", "runs/shapes"], work, env)
    doc = json.loads((work / "runs" / "shapes" / "results.json").read_text())
    [entry] = doc["results"]
    assert entry["benchmark"] == "shapes" and entry["metrics"]["n_items"] == 4
    assert doc["provenance"]["model"]["family"] == "cosine"
    assert sorted(p.name for p in work.iterdir()) == ["runs"]
