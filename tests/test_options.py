"""The settings of ``vlprobe.evaluate``, ``vlprobe.probe`` and ``vlprobe.score``: each keyword written in the
function's signature (typed, with its default), checked once into a frozen settings dataclass
(vlprobe/options.py and the commands' settings modules), and each flag of ``vlprobe evaluate`` / ``vlprobe probe``
the same keyword with the same default; the provenance settings block and the rerun command line come from the
checked object."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import shlex
import subprocess
import sys

import pytest

import vlprobe
from vlprobe.cli import build_parser, keywords, main
from vlprobe.errors import ArgumentError
from vlprobe.evaluation.settings import EvaluateSettings, ScoreSettings
from vlprobe.probing.settings import ProbeSettingError, ProbeSettings, check_settings

SETTINGS = {"evaluate": EvaluateSettings, "probe": ProbeSettings, "score": ScoreSettings}
FUNCTIONS = {"evaluate": vlprobe.evaluate, "probe": vlprobe.probe, "score": vlprobe.score}
COMMANDS = ("evaluate", "probe")  # the ones with a command line
CLI_DEFAULT = {("evaluate", "out"): None, ("probe", "out"): "runs/probe"}  # the commands always write their outputs
SHARED = ("bootstrap", "confidence", "seed", "limit", "batch_size", "num_workers", "dtype", "device", "cache_dir",
          "out", "chunk_size", "progress", "model", "revision", "family", "dataset_revision", "outside_images")


def _subparser(command: str) -> argparse.ArgumentParser:
    parser = build_parser(command)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[command]


def _options(command: str) -> dict[str, argparse.Action]:
    return {a.dest: a for a in _subparser(command)._actions if a.dest != "help"}


# ---- one keyword, one field, one flag, one default ---------------------------------------------------------------

@pytest.mark.parametrize("command", SETTINGS)
def test_the_signature_is_the_settings(command):
    """Every keyword of the function is a field of its settings with the same default (``dataset``, the probe's old
    name of ``datasets``, aside); score's settings hold evaluate's engine fields it does not take at their
    defaults."""
    params = {n: p for n, p in inspect.signature(FUNCTIONS[command]).parameters.items() if n != "dataset"}
    fields = {f.name: f for f in dataclasses.fields(SETTINGS[command])}
    if command == "score":
        assert set(params) <= set(fields) and {"images", "texts", "probabilities"} <= set(params)
    else:
        assert set(params) == set(fields)
    for name, p in params.items():
        assert p.default in (fields[name].default, inspect.Parameter.empty), (command, name)  # or given by position
        assert p.annotation != inspect.Parameter.empty, (command, name)  # typed in the source
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for n, p in params.items()
               if n not in ("model", "datasets", "configs", "images", "texts"))


@pytest.mark.parametrize("command", COMMANDS)
def test_the_command_line_is_the_signature(command):
    """Every flag is a keyword (its ``dest``) with the keyword's default, and every keyword a command line can give
    has its flag, spelled as the settings name it in errors and in the rerun command line."""
    params = inspect.signature(FUNCTIONS[command]).parameters
    actions = _options(command)
    flags = SETTINGS[command].flags()
    assert set(actions) == set(flags), set(actions) ^ set(flags)
    for name, action in actions.items():
        assert action.option_strings == [flags[name]] and action.help, name
        assert action.default == CLI_DEFAULT.get((command, name), params[name].default), name
    python_only = {n for n in params if n not in flags}
    assert python_only == {"evaluate": {"processor", "root", "log"}, "probe": {"processor", "dataset"}}[command]
    # the parsed defaults, checked, are the Python ones
    parsed = SETTINGS[command](**{**keywords(_subparser(command).parse_args([])), "out": None})
    assert parsed == SETTINGS[command]()


def test_flags_the_tests_have_always_pinned():
    """A sample of flags and defaults as they were before the signatures were written out."""
    ev, pr = _options("evaluate"), _options("probe")
    assert ev["datasets"].option_strings == ["--dataset"] and isinstance(ev["datasets"], argparse._AppendAction)
    assert ev["configs"].option_strings == ["--config"] and ev["splits"].option_strings == ["--split"]
    assert ev["chunk_size"].default == 2000 and ev["control"].choices == ("blank", "shuffle", "shuffled")
    assert pr["train_modalities"].option_strings == ["--train-modality"] and pr["out"].default == "runs/probe"
    assert pr["text_baseline"].option_strings == ["--no-text-baseline"] and pr["text_baseline"].default is True
    assert ev["progress"].option_strings == ["--no-progress"] and pr["progress"].default is True
    assert pr["seeds"].default == 3 and pr["seeds"].type is int
    assert pr["schedule"].default == "quick" and pr["schedule"].choices == ("quick", "paper")
    args = _subparser("probe").parse_args(["--seeds", "5", "--schedule", "paper", "--no-text-baseline"])
    assert (args.seeds, args.schedule, args.text_baseline) == (5, "paper", False)


def test_settings_are_frozen_and_typed():
    s = check_settings(seeds=5, schedule="paper", train_sizes="8,4")
    assert (s.seeds, s.schedule, s.train_sizes, s.train_modalities) == (5, "paper", [4, 8], ["image", "caption", "both"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.seeds = 1
    assert inspect.signature(vlprobe.probe).parameters["seeds"].annotation == "int"


# ---- every bad value of every setting is refused before anything loads, named ------------------------------------

BAD = {
    "datasets": {"evaluate": [3, [], [None], ["a", "a"], "~nosuchuser/x"], "probe": [3, ["a", "b"], "", [None]]},
    "configs": {"evaluate": [5, [1], "", ",,", "a,a"], "probe": [5, [], "", ",,", "a,,b", "spatiality,spatiality"]},
    "splits": [5, ["test", 2], "", "test,test"],
    "dataset_revision": [3, ""],
    "spec": [3, ""],
    "model": {"evaluate": [3, "", "~nosuchuser/x"], "probe": [3, "", None, "~nosuchuser/x"], "score": [3, ""]},
    "revision": [3, " "],
    "family": [3, ""],
    "ties": ["loose", 1],
    "bootstrap": [-1, 10 ** 12, 1.5, True, "10"],
    "confidence": [0, 1, 95, float("nan"), "0.9", True],
    "threshold": [-0.1, 2, "0.5", float("inf")],
    "seed": [-1, "0", 0.5, 2 ** 63],
    "seeds": [0, -1, 1.5, "3", True],
    "limit": [0, 2.5, 2 ** 63],
    "batch_size": [0, -3, 1.0, True, "32", "auto ", "AUTO"],
    "num_workers": [-1, 1.5, 100_000, 2 ** 63],
    "dtype": ["int3", 3, ""],
    "device": ["tpu", 3, ""],
    "modality": ["video", None],
    "control": ["dark", 1],
    "cache_dir": [3, "", True, "~nosuchuser/c"],
    "out": [5, "", "~nosuchuser/o"],
    "exact_preprocessing": ["yes", 1],
    "chunk_size": [0, 100.0, 2 ** 63],
    "progress": ["no", 0],
    "outside_images": ["yes", 1],
    "train_modalities": [3, "video", "", ["image", "sound"]],
    "test_modalities": [["image", "sound"], None],
    "train_sizes": ["10,abc", [1], 1, [2.5], "x", "", []],
    "few_shot": [-1, "x", 1.0],
    "classifier": ["svm", None],
    "text_baseline": ["yes", 1],
    "finetune": ["yes", 1],
    "epochs": [0, "a"],
    "schedule": ["slow", None, 80],
    "processor": ["x", 3],
    "root": [3, "", __file__],
    "log": [3, "print"],
    "images": [[], 3, [3], ["/no/such.png"]],
    "texts": [[], 3, [""], ["a", " "]],
    "probabilities": ["yes"],
}


def _keywords(command):
    return [n for n in inspect.signature(FUNCTIONS[command]).parameters if n != "dataset"]


def _bad_cases():
    for command in SETTINGS:
        for name in _keywords(command):
            values = BAD[name]
            for value in values.get(command, []) if isinstance(values, dict) else values:
                yield pytest.param(command, name, value, id=f"{command}-{name}={value!r}"[:60])


def test_every_keyword_has_bad_values_here():
    for command in SETTINGS:
        for name in _keywords(command):
            assert name in BAD, f"add bad values of the new keyword {name!r} to BAD"


@pytest.fixture
def nothing_loads(monkeypatch):
    from vlprobe import runner
    from vlprobe.evaluation import api as eval_api
    from vlprobe.probing import api as probe_api

    def boom(*a, **k):
        raise AssertionError("something was loaded before the settings were checked")

    # (the model and dataset names are checked among the settings, in vlprobe.names: they load nothing)
    for module, name in ((eval_api, "plan_splits"), (probe_api, "load_splits"),
                         (runner, "load_model"), (runner, "Engine")):
        monkeypatch.setattr(module, name, boom)


def _call(command, **kw):
    base: dict = {"progress": False}
    if command == "score":
        from PIL import Image

        base.update(model="mini-clip", images=Image.new("RGB", (4, 4)), texts="a")  # the shipped model's name
    return FUNCTIONS[command](**{**base, **kw})


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("command,name,value", list(_bad_cases()))
def test_every_bad_value_is_refused_before_loading_naming_it(command, name, value, nothing_loads):
    with pytest.raises(ArgumentError) as info:
        _call(command, **{name: value})
    err = info.value
    assert str(err).startswith(name) and "\n" not in str(err), str(err)
    assert err.argument.startswith(name)
    field = next(f for f in dataclasses.fields(SETTINGS[command]) if f.name == name)
    flag = SETTINGS[command].flag(field)
    if flag is not None:
        assert err.flag == flag and err.cli().startswith(f"{flag} ") and f"{name}=" not in err.cli()
    if command == "probe":
        assert isinstance(err, ProbeSettingError)


@pytest.mark.parametrize("name", [n for n in SHARED if n != "model"])
def test_both_commands_refuse_a_shared_option_alike(name, nothing_loads):
    """One check, one message: ``vlprobe.evaluate(batch_size=0)`` and ``vlprobe.probe(batch_size=0)``."""
    for value in BAD[name]:
        messages = []
        for command in COMMANDS:
            with pytest.raises(ArgumentError) as info:
                _call(command, **{name: value})
            messages.append((str(info.value), info.value.cli()))
        assert messages[0] == messages[1]


CLI_BAD = [("evaluate", "--batch-size", "0", "--batch-size 0: must be at least 1"),
           ("evaluate", "--batch-size", "x", "--batch-size x: must be a whole number (at least 1) or 'auto'"),
           ("evaluate", "--family", "", "--family '': must be a scorer family name, or None"),
           ("evaluate", "--ties", "loose", "--ties loose: unknown tie policy; choose one of authors, strict, half, lenient"),
           ("probe", "--batch-size", "0", "--batch-size 0: must be at least 1"),
           ("probe", "--seeds", "0", "--seeds 0: must be at least 1"),
           ("probe", "--dataset-revision", "", "--dataset-revision '': must be a Hub revision"),
           ("probe", "--train-size", "1", "--train-size 1: must be training sizes")]


@pytest.mark.parametrize("command,flag,value,expected", CLI_BAD)
def test_the_command_line_names_the_flag(command, flag, value, expected, nothing_loads, capsys, tmp_path):
    code = main([command, flag, value, "--out", str(tmp_path / "o"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(f"vlprobe {command}: error: {expected}") and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_argparse_still_refuses_what_it_always_did(capsys):
    for argv in (["probe", "--schedule", "slow"], ["probe", "--seeds", "x"], ["evaluate", "--modality", "video"]):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 2 and "invalid" in capsys.readouterr().err


@pytest.mark.parametrize("command", COMMANDS)
def test_batch_size_0_fails_at_once_without_importing_torch(command):
    """Checked before anything heavy is imported or loaded, in a fresh interpreter: no torch, datasets or
    transformers (what makes a check slow; a wall-clock bound would depend on the machine's load)."""
    code = (f"import sys\nimport vlprobe\ntry:\n"
            f"    vlprobe.{command}(batch_size=0, progress=False)\n"
            f"except vlprobe.SettingError as err:\n    message = str(err)\n"
            f"print(message, [m for m in ('torch', 'datasets', 'transformers') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip() == "batch_size=0: must be at least 1 []", out.stdout


def test_the_machine_bounds_workers_and_rows(monkeypatch):
    from vlprobe import options

    monkeypatch.setattr(options, "cpus", lambda: 3)
    monkeypatch.setattr(options, "memory_bytes", lambda: 2 ** 30)
    assert EvaluateSettings(num_workers=12).num_workers == 12
    with pytest.raises(ArgumentError, match=r"^num_workers=13: must be at most 12 \(4 per CPU core; this machine "
                                            r"has 3\)"):
        EvaluateSettings(num_workers=13)
    assert EvaluateSettings(chunk_size=2 ** 20).chunk_size == 2 ** 20
    with pytest.raises(ArgumentError, match=r"^chunk_size=1048577: must be at most 1,048,576 rows .* 1.0 GiB"):
        EvaluateSettings(chunk_size=2 ** 20 + 1)


# ---- the provenance: settings block and the command line that reruns it ------------------------------------------

def test_the_evaluate_record_keeps_its_keys_and_order():
    s = EvaluateSettings(configs=["a", "b"], splits="test", control="shuffled", exact_preprocessing=True).check()
    block = s.record(3)
    assert list(block) == ["ties", "bootstrap", "confidence", "seed", "threshold", "limit", "batch_size", "num_workers",
                           "modality", "control", "split", "config", "exact_preprocessing"]
    assert block["config"] == "a,b" and block["control"] == "shuffle" and block["num_workers"] == 3


def test_the_probe_record_keeps_its_keys_and_order():
    s = check_settings(configs=["spatiality"], train_sizes="8,4", seeds=2, schedule="paper")
    block = s.record(l2_grid=[1.0], model_selection="validation", finetune=False, text_baseline=True,
                     zero_shot=False, num_workers=0, seeds=[0, 1])
    assert list(block) == ["configs", "train_modalities", "test_modalities", "train_sizes", "few_shot", "classifier",
                           "l2_grid", "model_selection", "finetune", "text_baseline", "zero_shot", "bootstrap",
                           "confidence", "seed", "limit", "batch_size", "num_workers", "chunk_size", "seeds", "schedule"]
    assert block["configs"] == ["spatiality"] and block["train_sizes"] == [4, 8]
    assert block["seeds"] == [0, 1] and block["schedule"] == "paper"
    with pytest.raises(TypeError):
        s.record()  # what the run computes is missing


RERUN = {
    "evaluate": dict(datasets=["data/one", "hub/two"], configs=["a", "b"], splits="test", dataset_revision="v1",
                     spec="my spec.yaml", model="models/x y", revision="main", family="dual_encoder", ties="half",
                     bootstrap=7, confidence=0.9, threshold=0.25, seed=4, limit=3, batch_size=5, num_workers=1,
                     dtype="fp16", device="cpu", modality="both", control="shuffled", cache_dir="none", out="runs/o",
                     exact_preprocessing=True, outside_images=True),
    "probe": dict(datasets=["data/travlr"], configs="spatiality,cardinality", dataset_revision="v2", model="m",
                  revision="r", family="dual_encoder", train_modalities=["caption", "image"], test_modalities="both",
                  train_sizes=[16, 8], few_shot=4, classifier="mlp", text_baseline=False, finetune=True, epochs=2,
                  schedule="paper", bootstrap=0, confidence=0.8, seed=3, seeds=5, limit=40, batch_size="auto",
                  num_workers=0, dtype="bf16", device="cpu", cache_dir="c d", out="runs/p", outside_images=True),
}


@pytest.mark.parametrize("command", COMMANDS)
def test_the_recorded_command_line_parses_back_into_the_same_settings(command):
    cls = SETTINGS[command]
    checked = cls(**RERUN[command]).check()
    words = shlex.split(checked.command_line())
    assert words[:2] == ["vlprobe", command]
    again = cls(**keywords(_subparser(command).parse_args(words[2:]))).check()
    rerun = [n for n in cls.flags() if n not in cls.NOT_RERUN]  # how a run goes (chunks, bars) is not recorded
    # the same settings (a list of names comes back as the comma-separated string it was written as)
    from vlprobe.options import joined

    assert {n: joined(getattr(again, n)) for n in rerun} == {n: joined(getattr(checked, n)) for n in rerun}
    assert set(RERUN[command]) >= set(rerun) - {"progress", "chunk_size", "text_baseline"}  # every option tried


def test_no_command_line_names_an_object_in_memory():
    assert EvaluateSettings(model=("a model", "a processor")).command_line(datasets=["d"]) is None
    assert EvaluateSettings(spec={"id": "id"}).command_line(datasets=["d"], model="m") is None
    assert check_settings(model=("a model", "a processor")).command_line() is None


def test_cache_dir_false_is_recorded_as_none():
    """cache_dir=False (no cache) was written into the command line as ``--cache-dir False``, a folder named
    False; it is ``--cache-dir none``."""
    line = EvaluateSettings(cache_dir=False).command_line(datasets=["d"], model="m")
    assert "--cache-dir none" in line and "False" not in line


def test_a_run_records_its_settings(tmp_path, tiny_clip_path):
    """End to end: the settings block and command line of a real run (json as written)."""
    from helpers_data import build_folder

    folder = build_folder(tmp_path, n=4)
    out = tmp_path / "run"
    code = main(["evaluate", "--dataset", str(folder), "--config", "pairs", "--model", str(tiny_clip_path),
                 "--bootstrap", "0", "--num-workers", "0", "--cache-dir", "none", "--out", str(out), "--no-progress"])
    assert code == 0
    prov = json.loads((out / "results.json").read_text())["provenance"]
    assert prov["command"] == shlex.join(["vlprobe", "evaluate", "--dataset", str(folder), "--config", "pairs", "--model",
                                          str(tiny_clip_path), "--bootstrap", "0", "--confidence", "0.95", "--seed",
                                          "0", "--batch-size", "auto", "--num-workers", "0", "--dtype", "float32",
                                          "--cache-dir", "none", "--out", str(out), "--ties", "authors", "--threshold",
                                          "0.5", "--modality", "image"])
    # the default: each split by its benchmark's authors' rule, strict for this dataset of the user's own (its entry)
    assert json.loads((out / "results.json").read_text())["results"][0]["ties"] == "strict"
    assert prov["settings"] == {"ties": "authors", "bootstrap": 0, "confidence": 0.95, "seed": 0, "threshold": 0.5,
                                "limit": None, "batch_size": "auto", "num_workers": 0, "modality": "image", "control": None,
                                "split": None, "config": "pairs", "exact_preprocessing": False}
