"""A name means the same in every command and the Python API (vlprobe/names.py), inside a clone and outside it: a
built benchmark's name finds its folder (the working folder, $VLPROBE_ROOT, then the cache), and the bundled model
is `mini-clip` anywhere. A misspelt name fails in about a second, in one line, with the closest known name and only
the advice that applies, before torch is imported. Run outside a clone: a temporary working folder and
VLPROBE_CACHE, the package imported from this checkout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import Cli, CliRun, closed_port

REPO = Path(__file__).resolve().parents[1]
TRAVLR_SIZES = "train=48,validation=16,test_ind=16,test_ood=16"


@pytest.fixture(scope="module")
def outside(tmp_path_factory) -> dict[str, Path]:
    """A working folder outside any clone, with its own cache and home."""
    base = tmp_path_factory.mktemp("outside")
    where = {"work": base / "work", "cache": base / "cache", "home": base / "home"}
    for p in where.values():
        p.mkdir()
    return where


@pytest.fixture(scope="module")
def built(outside) -> dict[str, Path]:
    """``outside``, where `vlprobe build travlr` (small) has run."""
    proc = _vlprobe(outside, "build", "travlr", "--size", "tiny", "--split-sizes", TRAVLR_SIZES, "--configs",
                    "spatiality")
    assert proc.code == 0, proc.err
    return outside


def _env(where: dict[str, Path], **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VLPROBE_ROOT", "XDG_CACHE_HOME")}
    env.update(PYTHONPATH=str(REPO), VLPROBE_CACHE=str(where["cache"]), HOME=str(where["home"]), HF_HUB_OFFLINE="1",
               OMP_NUM_THREADS="1")
    env.update(extra)
    return env


def _vlprobe(where: dict[str, Path], *argv: str, **env: str) -> CliRun:
    return Cli.subprocess(*argv, cwd=where["work"], env=_env(where, **env), timeout=900)


def _python(where: dict[str, Path], code: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=where["work"], env=_env(where, **env), capture_output=True,
                          text=True, timeout=900)


@pytest.mark.slow
def test_build_outside_a_clone_writes_to_the_cache(built):
    assert (built["cache"] / "datasets" / "travlr" / "vlprobe.yaml").is_file()
    assert not (built["work"] / "travlr").exists()


@pytest.mark.slow
@pytest.mark.parametrize("model", ["mini-clip", "models/mini-clip"])
def test_evaluate_and_probe_find_travlr_and_mini_clip_outside_a_clone(built, model):
    outside = built
    out = outside["work"] / f"eval-{model.replace('/', '_')}"
    proc = _vlprobe(outside, "evaluate", "--dataset", "travlr", "--model", model, "--limit", "4", "--bootstrap", "0",
                    "--num-workers", "0", "--no-progress", "--out", str(out))
    assert proc.code == 0, proc.err
    doc = json.loads((out / "results.json").read_text())
    assert {r["dataset"] for r in doc["results"]} == {"travlr"}  # its name; where it was read from, once:
    assert doc["provenance"]["datasets"][0]["dataset"] == str(outside["cache"] / "datasets" / "travlr")
    assert "--dataset travlr" in doc["provenance"]["command"]  # the rerun names it as the user did
    assert Path(doc["provenance"]["model"]["model_id"]).name == "mini-clip"
    if model != "mini-clip":
        return
    proc = _vlprobe(outside, "probe", "--dataset", "travlr", "--model", model, "--train-modality", "image",
                    "--test-modality", "image", "--no-text-baseline", "--seeds", "1", "--bootstrap", "0",
                    "--num-workers", "0", "--no-progress", "--out", str(outside["work"] / "probe"))
    assert proc.code == 0, proc.err


@pytest.mark.slow
def test_the_python_api_takes_the_same_names_outside_a_clone(built):
    outside = built
    code = ("import vlprobe\n"
            "for model in ('mini-clip', 'models/mini-clip'):\n"
            "    res = vlprobe.evaluate(model=model, datasets='travlr', limit=2, bootstrap=0, num_workers=0, "
            "progress=False)\n"
            "    print(res.splits[0].dataset)\n"
            "from PIL import Image\n"
            "print(vlprobe.score('mini-clip', Image.new('RGB', (16, 16)), ['a red square', 'a blue circle']).shape)\n")
    proc = _python(outside, code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [str(outside["cache"] / "datasets" / "travlr")] * 2 + ["(1,", "2)"]


# ---- a misspelt name: fast, one line, the closest known name, the advice that applies --------------------------

# Runs the command in this interpreter, then says whether torch was imported (a name check that needs torch, or a
# dataset read, is what took 29 s).
_IN_PROCESS = ("import sys\nfrom vlprobe.cli import main\ncode = main(sys.argv[1:])\n"
               "print(code, 'torch' in sys.modules, 'datasets' in sys.modules)\n")


def _typo(where, *argv, **env) -> tuple[str, str]:
    proc = subprocess.run([sys.executable, "-c", _IN_PROCESS, *argv], cwd=where["work"], env=_env(where, **env),
                          capture_output=True, text=True, timeout=300)
    assert proc.stdout.split() == ["2", "False", "False"], proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0], proc.stderr


def test_a_misspelt_model_or_family_offline(outside):
    line, _ = _typo(outside, "evaluate", "--dataset", "travlr", "--model", "models/mini-clp", "--out", "o")
    assert line.startswith("vlprobe evaluate: error: model 'models/mini-clp'")
    assert line.endswith("did you mean models/mini-clip?") and "HF_HUB_OFFLINE is set" in line
    line, _ = _typo(outside, "probe", "--dataset", "travlr", "--model", "mini-clp")
    assert line.endswith("did you mean mini-clip?")
    line, _ = _typo(outside, "evaluate", "--dataset", "travlr", "--model", "mini-clip", "--family", "dul", "--out", "o")
    assert "--family dul: unknown scorer family; did you mean dual?" in line


def test_a_misspelt_model_with_the_hub_unreachable_says_nothing_of_hf_hub_offline(outside):
    line, stderr = _typo(outside, "evaluate", "--dataset", "travlr", "--model", "models/mini-clp", "--out", "o",
                         HF_HUB_OFFLINE="0", TRANSFORMERS_OFFLINE="0", HF_DATASETS_OFFLINE="0",
                         HF_ENDPOINT=f"http://127.0.0.1:{closed_port()}")
    assert "cannot be reached" in line and line.endswith("did you mean models/mini-clip?")
    assert "OFFLINE" not in line and "thrown while requesting" not in stderr and "Errno" not in stderr


@pytest.mark.slow
def test_a_misspelt_dataset(built):
    outside = built
    line, _ = _typo(outside, "evaluate", "--dataset", "travlrr", "--model", "mini-clip", "--out", "o")
    assert "dataset 'travlrr'" in line and line.endswith("did you mean travlr?")


@pytest.mark.slow
def test_a_misspelt_config_names_the_closest(built):
    outside = built
    proc = _vlprobe(outside, "evaluate", "--dataset", "travlr", "--config", "spatialty", "--model", "mini-clip",
                    "--out", "o")
    assert proc.code == 2 and "did you mean spatiality?" in proc.err, proc.err


def test_the_space_takes_mini_clip_too(tmp_path, monkeypatch):
    from vlprobe.demo.settings import ENV_DEFAULT_MODEL, Settings

    monkeypatch.delenv(ENV_DEFAULT_MODEL, raising=False)
    here = Settings(root=tmp_path)  # no models/ here: the package's copy
    assert here.resolve_model("mini-clip") == here.resolve_model("") == here.resolve_model("models/mini-clip")
    assert Path(here.resolve_model("mini-clip")).name == "mini-clip"


# ---- names before any build: suggested from the catalogue, built or not ----------------------------------------

@pytest.fixture
def nothing_built(tmp_path) -> dict[str, Path]:
    where = {"work": tmp_path / "work", "cache": tmp_path / "cache", "home": tmp_path / "home"}
    for p in where.values():
        p.mkdir()
    return where


@pytest.mark.parametrize("how", ["offline", "unreachable"])
def test_a_benchmark_not_built_yet_says_run_vlprobe_build(nothing_built, how):
    """Not that the Hub cannot be reached: the name is the catalogue's, and a build makes it."""
    env = {} if how == "offline" else dict(HF_HUB_OFFLINE="0", HF_DATASETS_OFFLINE="0",
                                           HF_ENDPOINT=f"http://127.0.0.1:{closed_port()}")
    for command in (["evaluate", "--out", "o"], ["probe"]):
        line, _ = _typo(nothing_built, command[0], "--dataset", "travlr", "--model", "mini-clip", *command[1:], **env)
        assert line == (f"vlprobe {command[0]}: error: dataset 'travlr' is not built yet: run `vlprobe build travlr` (it "
                        f"writes {nothing_built['cache'] / 'datasets' / 'travlr'}, where --dataset travlr then finds it "
                        f"from any folder), or point at a built one (--dataset DIR, or VLPROBE_ROOT=DIR holding "
                        f"travlr/); `vlprobe list` shows what can be built and what is")


@pytest.mark.parametrize("typed,said", [
    ("travrl", "did you mean travlr (not built yet: `vlprobe build travlr`)?"),
    ("winoground", "did you mean facebook/winoground (from the Hub) or winoground_style (not built yet: "
                   "`vlprobe build winoground_style`)?"),
    ("vlase", "did you mean valse (not built yet: `vlprobe build valse`)?"),
])
def test_a_misspelt_name_before_any_build_gets_the_catalogues_name(nothing_built, typed, said):
    line, _ = _typo(nothing_built, "evaluate", "--dataset", typed, "--model", "mini-clip", "--out", "o")
    assert line.startswith(f"vlprobe evaluate: error: dataset '{typed}' is not a local folder") and line.endswith(said)


@pytest.mark.slow
def test_a_built_benchmark_is_suggested_without_the_build_advice(built):
    line, _ = _typo(built, "evaluate", "--dataset", "travrl", "--model", "mini-clip", "--out", "o")
    assert line.endswith("did you mean travlr?")
