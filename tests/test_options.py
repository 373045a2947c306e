"""Each option of ``vlprobe evaluate`` and ``vlprobe probe`` is defined once, in its command's option table
(vlprobe/options.py; ``vlprobe.evaluation.settings.OPTIONS``, ``vlprobe.probing.settings.OPTIONS``): the parser,
the Python signature, the checks, the provenance settings block and the rerun command line all follow the table."""

from __future__ import annotations

import argparse
import inspect
import json
import shlex
import subprocess
import sys

import pytest

import vlprobe
from vlprobe import options
from vlprobe.cli import build_parser, main
from vlprobe.errors import ArgumentError
from vlprobe.evaluation import settings as eval_settings
from vlprobe.probing import settings as probe_settings

TABLES = {"evaluate": eval_settings.OPTIONS, "probe": probe_settings.OPTIONS}
FUNCTIONS = {"evaluate": vlprobe.evaluate, "probe": vlprobe.probe}
# the keywords of each function that are objects, not settings: no command line can give them
NOT_OPTIONS = {"evaluate": {"processor", "root", "log"}, "probe": {"processor", "dataset"}}
SHARED = ("bootstrap", "confidence", "seed", "limit", "batch_size", "num_workers", "dtype", "device", "cache_dir",
          "out", "chunk_size", "progress", "model", "revision", "family", "dataset_revision", "outside_images")


def _subparser(command: str) -> argparse.ArgumentParser:
    parser = build_parser(command)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[command]


# ---- the table drives the parser ------------------------------------------------------------------

@pytest.mark.parametrize("command", TABLES)
def test_the_table_drives_the_parser(command):
    """Every option's flag, help, default, type, choices and metavar are the parser's; the parser has no option
    the table does not define."""
    actions = {a.option_strings[0]: a for a in _subparser(command)._actions if a.option_strings[0] != "-h"}
    table = TABLES[command]
    assert sorted(actions) == sorted(o.flag for o in table)
    assert len({o.name for o in table}) == len(table)
    for o in table:
        action = actions[o.flag]
        assert o.help and action.help == o.help, o.name
        if o.action == "store_true":
            assert isinstance(action, argparse._StoreTrueAction) and action.default is False
            continue
        assert action.default == o.parser_default, o.name
        assert action.type is o.type and action.metavar == o.metavar, o.name
        assert (tuple(action.choices) if action.choices else None) == (tuple(o.choices) if o.choices else None)
    # the command line's defaults are the Python ones, once checked (--out aside: the command always writes)
    from_cli = options.check(table, options.from_args(table, _subparser(command).parse_args([])))
    from_python = options.check(table, {})
    assert {k: v for k, v in from_cli.items() if k != "out"} == {k: v for k, v in from_python.items() if k != "out"}


def test_flags_the_tests_have_always_pinned():
    """A sample of flags and defaults as they were before the tables (tests elsewhere pin more)."""
    ev = {o.flag: o for o in eval_settings.OPTIONS}
    pr = {o.flag: o for o in probe_settings.OPTIONS}
    assert ev["--dataset"].action == "append" and ev["--dataset"].name == "datasets"
    assert ev["--config"].name == "configs" and ev["--split"].name == "splits"
    assert ev["--chunk-size"].cli_default is None and ev["--chunk-size"].default == 2000
    assert ev["--control"].choices == ("blank", "shuffle", "shuffled")
    assert pr["--train-modality"].cli_default == "image,caption,both" and pr["--out"].cli_default == "runs/probe"
    assert pr["--no-text-baseline"].negated and pr["--no-progress"].negated and ev["--no-progress"].negated
    assert pr["--seeds"].default == 3 and pr["--seeds"].type is int
    assert pr["--schedule"].default == "quick" and pr["--schedule"].choices == ("quick", "paper")
    args = _subparser("probe").parse_args(["--seeds", "5", "--schedule", "paper"])
    assert options.from_args(probe_settings.OPTIONS, args)["seeds"] == 5
    assert options.from_args(probe_settings.OPTIONS, args)["schedule"] == "paper"


def test_shared_options_are_defined_once():
    """The options both commands have are the same definition (a help or default may differ by command)."""
    for name in SHARED:
        ev = next(o for o in eval_settings.OPTIONS if o.name == name)
        pr = next(o for o in probe_settings.OPTIONS if o.name == name)
        assert ev.flag == pr.flag and ev.type is pr.type, name
        if name != "model":  # the probe's model has a default (mini-clip), so None is not one
            assert ev.check is pr.check, name


# ---- the Python signatures are the tables' ----------------------------------------------------------

@pytest.mark.parametrize("command", TABLES)
def test_the_python_signature_is_the_table(command):
    params = inspect.signature(FUNCTIONS[command]).parameters
    keywords = {name: p.default for name, p in params.items() if name not in NOT_OPTIONS[command]}
    assert keywords == options.defaults(TABLES[command])
    assert NOT_OPTIONS[command] <= set(params)


def test_probe_takes_seeds_and_schedule():
    params = inspect.signature(vlprobe.probe).parameters
    assert params["seeds"].default == 3 and params["schedule"].default == "quick"
    assert params["seeds"].kind is inspect.Parameter.KEYWORD_ONLY
    s = probe_settings.check_settings(seeds=5, schedule="paper")
    assert s["seeds"] == 5 and s["schedule"] == "paper"
    assert probe_settings.check_settings()["seeds"] == 3


# ---- every bad value of every option is refused before anything loads, named ---------------------------

BAD = {
    "datasets": {"evaluate": [3, [], [None]], "probe": [3, ["a", "b"], "", [None]]},
    "configs": {"evaluate": [5, [1]], "probe": [5, []]},
    "splits": [5, ["test", 2]],
    "dataset_revision": [3, ""],
    "spec": [3, ""],
    "model": {"evaluate": [3, ""], "probe": [3, "", None]},
    "revision": [3, " "],
    "family": [3, ""],
    "ties": ["loose", 1],
    "bootstrap": [-1, 10 ** 12, 1.5, True, "10"],
    "confidence": [0, 1, 95, float("nan"), "0.9", True],
    "threshold": [-0.1, 2, "0.5", float("inf")],
    "seed": [-1, "0", 0.5],
    "seeds": [0, -1, 1.5, "3", True],
    "limit": [0, 2.5],
    "batch_size": [0, -3, 1.0, True, "32"],
    "num_workers": [-1, 1.5],
    "dtype": ["int3", 3],
    "device": ["tpu", 3],
    "modality": ["video", None],
    "control": ["dark", 1],
    "cache_dir": [3, "", True],
    "out": [5, ""],
    "exact_preprocessing": ["yes", 1],
    "chunk_size": [0, 100.0],
    "progress": ["no", 0],
    "outside_images": ["yes", 1],
    "train_modalities": [3, "video", "", ["image", "sound"]],
    "test_modalities": [["image", "sound"], None],
    "train_sizes": ["10,abc", [1], 1, [2.5], "x"],
    "few_shot": [-1, "x", 1.0],
    "classifier": ["svm", None],
    "text_baseline": ["yes", 1],
    "finetune": ["yes", 1],
    "epochs": [0, "a"],
    "schedule": ["slow", None, 80],
}


def _bad_cases():
    for command, table in TABLES.items():
        for o in table:
            values = BAD[o.name]
            for value in values[command] if isinstance(values, dict) else values:
                yield pytest.param(command, o.name, value, id=f"{command}-{o.name}={value!r}"[:60])


def test_every_option_has_bad_values_here():
    for table in TABLES.values():
        for o in table:
            assert o.name in BAD, f"add bad values of the new option {o.name!r} to BAD"


@pytest.fixture
def nothing_loads(monkeypatch):
    from vlprobe import evaluation, runner
    from vlprobe.evaluation import api as eval_api
    from vlprobe.probing import api as probe_api

    def boom(*a, **k):
        raise AssertionError("something was loaded before the settings were checked")

    # (the model and dataset names are checked among the settings, in vlprobe.names: they load nothing)
    for module, name in ((eval_api, "plan_splits"), (evaluation, "load_model"), (probe_api, "load_splits"),
                         (runner, "load_model"), (runner, "Engine")):
        monkeypatch.setattr(module, name, boom)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("command,name,value", list(_bad_cases()))
def test_every_bad_value_is_refused_before_loading_naming_it(command, name, value, nothing_loads):
    option = next(o for o in TABLES[command] if o.name == name)
    kw = {name: value} if name == "progress" else {name: value, "progress": False}
    with pytest.raises(ArgumentError) as info:
        FUNCTIONS[command](**kw)
    err = info.value
    assert str(err).startswith(f"{name}=") and "\n" not in str(err), str(err)
    assert err.argument == name and err.flag == option.flag
    assert err.cli().startswith(f"{option.flag} ") and f"{name}=" not in err.cli()
    if command == "probe":
        assert isinstance(err, probe_settings.ProbeSettingError)


@pytest.mark.parametrize("name", [n for n in SHARED if n != "model"])
def test_both_commands_refuse_a_shared_option_alike(name, nothing_loads):
    """One definition, one message: ``vlprobe.evaluate(batch_size=0)`` and ``vlprobe.probe(batch_size=0)``."""
    for value in BAD[name]:
        messages = []
        for command in TABLES:
            with pytest.raises(ArgumentError) as info:
                FUNCTIONS[command](**{name: value, **({} if name == "progress" else {"progress": False})})
            messages.append((str(info.value), info.value.cli()))
        assert messages[0] == messages[1]


CLI_BAD = [("evaluate", "--batch-size", "0", "--batch-size 0: must be at least 1"),
           ("evaluate", "--family", "", "--family '': must be a scorer family name, or None"),
           ("evaluate", "--ties", "loose", "--ties loose: unknown tie policy; choose one of strict, half, lenient"),
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


@pytest.mark.parametrize("command", TABLES)
def test_batch_size_0_fails_at_once_without_importing_torch(command):
    """Checked before anything heavy is imported or loaded, in a fresh interpreter: no torch, datasets or
    transformers (what makes a check slow; a wall-clock bound would depend on the machine's load)."""
    code = (f"import sys\nimport vlprobe\ntry:\n"
            f"    vlprobe.{command}(batch_size=0, progress=False)\n"
            f"except vlprobe.SettingError as err:\n    message = str(err)\n"
            f"print(message, [m for m in ('torch', 'datasets', 'transformers') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip() == "batch_size=0: must be at least 1 []", out.stdout


# ---- the provenance: settings block and the command line that reruns it ------------------------------

def test_the_evaluate_record_keeps_its_keys_and_order():
    s = eval_settings.Settings(configs=["a", "b"], splits="test", control="shuffled", exact_preprocessing=True).check()
    block = s.record(3)
    assert list(block) == ["ties", "bootstrap", "confidence", "seed", "threshold", "limit", "batch_size", "num_workers",
                           "modality", "control", "split", "config", "exact_preprocessing"]
    assert block["config"] == "a,b" and block["control"] == "shuffle" and block["num_workers"] == 3


def test_the_probe_record_keeps_its_keys_and_order():
    s = probe_settings.check_settings(configs=["spatiality"], train_sizes="8,4", seeds=2, schedule="paper")
    block = probe_settings.record(s, l2_grid=[1.0], model_selection="validation", finetune=False, text_baseline=True,
                                  zero_shot=False, num_workers=0)
    assert list(block) == ["configs", "train_modalities", "test_modalities", "train_sizes", "few_shot", "classifier",
                           "l2_grid", "model_selection", "finetune", "text_baseline", "zero_shot", "bootstrap",
                           "confidence", "seed", "limit", "batch_size", "num_workers", "chunk_size", "seeds", "schedule"]
    assert block["configs"] == ["spatiality"] and block["train_sizes"] == [4, 8]
    assert block["seeds"] == 2 and block["schedule"] == "paper"
    with pytest.raises(ValueError, match="does not name its keys"):
        probe_settings.record(s)  # what the run computes is missing


RERUN = {
    "evaluate": dict(datasets=["data/one", "hub/two"], configs=["a", "b"], splits="test", dataset_revision="v1",
                     spec="my spec.yaml", model="models/x y", revision="main", family="dual_encoder", ties="half",
                     bootstrap=7, confidence=0.9, threshold=0.25, seed=4, limit=3, batch_size=5, num_workers=1,
                     dtype="fp16", device="cpu", modality="both", control="shuffled", cache_dir="none", out="runs/o",
                     exact_preprocessing=True),
    "probe": dict(datasets=["data/travlr"], configs="spatiality,cardinality", dataset_revision="v2", model="m",
                  revision="r", family="dual_encoder", train_modalities=["caption", "image"], test_modalities="both",
                  train_sizes=[16, 8], few_shot=4, classifier="mlp", text_baseline=False, finetune=True, epochs=2,
                  schedule="paper", bootstrap=0, confidence=0.8, seed=3, seeds=5, limit=40, batch_size=8,
                  num_workers=0, dtype="bf16", device="cpu", cache_dir="c d", out="runs/p", chunk_size=9,
                  progress=False),
}


@pytest.mark.parametrize("command", TABLES)
def test_the_recorded_command_line_parses_back_into_the_same_settings(command):
    table = TABLES[command]
    checked = options.check(table, RERUN[command])
    line = options.command_line(f"vlprobe {command}", table, checked)
    words = shlex.split(line)
    assert words[:2] == ["vlprobe", command]
    again = options.check(table, options.from_args(table, _subparser(command).parse_args(words[2:])))
    rerun = [o.name for o in table if o.rerun]  # evaluate records neither --chunk-size nor --no-progress
    assert len(rerun) >= len(table) - 2
    # the same settings (a list of names comes back as the comma-separated string it was written as)
    assert {k: options.joined(again[k]) for k in rerun} == {k: options.joined(checked[k]) for k in rerun}
    if command == "probe":  # every option is spelled out, the new ones included
        assert "--seeds 5" in line and "--schedule paper" in line and "--no-text-baseline" in line
    # the command line is what the commands record
    module = eval_settings if command == "evaluate" else probe_settings
    assert module.command_line(checked) == line


def test_no_command_line_names_an_object_in_memory():
    checked = options.check(eval_settings.OPTIONS, {"model": ("a model", "a processor")})
    assert eval_settings.command_line({**checked, "datasets": ["d"]}) is None
    assert eval_settings.command_line({**options.check(eval_settings.OPTIONS, {"spec": {"id": "id"}}),
                                       "datasets": ["d"], "model": "m"}) is None
    assert probe_settings.command_line(probe_settings.check_settings(model=("a model", "a processor"))) is None


def test_cache_dir_false_is_recorded_as_none():
    """cache_dir=False (no cache) was written into the command line as ``--cache-dir False``, a folder named
    False; it is ``--cache-dir none`` now."""
    s = eval_settings.Settings(cache_dir=False).check()
    line = eval_settings.command_line({**vars(s), "datasets": ["d"], "model": "m"})
    assert "--cache-dir none" in line and "False" not in line


def test_a_run_records_its_settings_from_the_table(tmp_path, tiny_clip_path):
    """End to end: the settings block and command line of a real run come from the table (json as written)."""
    from helpers_data import build_folder

    folder = build_folder(tmp_path, n=4)
    out = tmp_path / "run"
    code = main(["evaluate", "--dataset", str(folder), "--config", "pairs", "--model", str(tiny_clip_path),
                 "--bootstrap", "0", "--num-workers", "0", "--cache-dir", "none", "--out", str(out), "--no-progress"])
    assert code == 0
    prov = json.loads((out / "results.json").read_text())["provenance"]
    assert prov["command"] == shlex.join(["vlprobe", "evaluate", "--dataset", str(folder), "--config", "pairs", "--model",
                                          str(tiny_clip_path), "--ties", "strict", "--bootstrap", "0", "--confidence",
                                          "0.95", "--threshold", "0.5", "--seed", "0", "--batch-size", "auto",
                                          "--num-workers", "0", "--dtype", "float32", "--modality", "image",
                                          "--cache-dir", "none", "--out", str(out)])
    assert prov["settings"] == {"ties": "strict", "bootstrap": 0, "confidence": 0.95, "seed": 0, "threshold": 0.5,
                                "limit": None, "batch_size": "auto", "num_workers": 0, "modality": "image", "control": None,
                                "split": None, "config": "pairs", "exact_preprocessing": False}
