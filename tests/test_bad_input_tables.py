"""Wrong input accepted in silence, and errors that did not name the culprit (issue 39, sections 5 and 6): one table
per entry point, each case with the words its one-line message must hold (or, where accepting is right, its
warning). Every case here fails before a model or dataset is loaded unless said otherwise."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from helpers import engine_never_runs

import vlprobe
from vlprobe.cli import main
from vlprobe.errors import VlprobeError

REPO = Path(__file__).resolve().parent.parent


def _one_line(code: int, err: str, words: str | tuple[str, ...]) -> None:
    assert code == 2 and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1 and all(w in err for w in ([words] if isinstance(words, str) else words)), err


# ---- vlprobe evaluate (CLI) -------------------------------------------------------------------------------------

# Options vlprobe evaluate and vlprobe probe share: each command refuses these in the same words.
SHARED_CLI = [
    (["--config", ""], "--config '': names nothing"),
    (["--config", ",,"], "--config ,,: names nothing"),
    (["--device", ""], "--device '': is empty"),
    (["--dtype", ""], "--dtype '': is empty"),
    (["--model", "~nosuchuser/x"], "--model '~nosuchuser/x': names the home folder of user 'nosuchuser'"),
    (["--num-workers", "100000"], "--num-workers 100000: must be at most"),
]

EVALUATE_CLI = SHARED_CLI + [
    (["--batch-size", "0"], "--batch-size 0: must be at least 1"),
    (["--batch-size", "auto "], "--batch-size 'auto ': must be a whole number (at least 1) or 'auto'"),
    (["--bootstrap", "-5"], "--bootstrap -5: must be 0 or more"),
    (["--bootstrap", "1000000000000"], "--bootstrap 1000000000000: at most 100,000 resamples"),
    (["--cache-dir", ""], "--cache-dir '': must be a folder path"),
    (["--chunk-size", "0"], "--chunk-size 0: must be at least 1"),
    (["--chunk-size", str(2**63)], "--chunk-size 9223372036854775808: must be at most"),
    (["--confidence", "95"], "--confidence 95.0: must be a level strictly between 0 and 1"),
    (["--config", "nope"], ("unknown config(s) ['nope']", "pairs, swap")),  # and the configs there are
    (["--config", "pairs,,swap"], "has an empty name"),
    (["--config", "pairs,pairs"], "--config pairs,pairs: names pairs more than once"),
    (["--dataset", ""], "--dataset '': is empty"),
    (["--device", "tpu"], "--device tpu: unknown device"),
    (["--device", "cpu:99"], "--device cpu:99: there is one cpu device"),
    (["--family", "no-such-family"], "known families:"),
    (["--limit", str(2**63)], "--limit 9223372036854775808: must be at most"),
    (["--model", "m" * 10_000], "(10,000 characters)': has a name of 10,000 bytes"),
    (["--num-workers", "-1"], "--num-workers -1: must be 0 or more"),
    (["--num-workers", str(2**63)], "--num-workers 9223372036854775808: must be at most"),
    (["--out", ""], "--out '': is empty"),
    (["--revision", "v2"], "--revision v2: "),  # with a local model folder
    (["--seed", str(2**63)], "--seed 9223372036854775808: must be at most"),
    (["--split", "train"], "unknown split(s) ['train']"),
    (["--split", ""], "--split '': names nothing"),
    (["--split", "test,test"], "--split test,test: names test more than once"),
    (["--threshold", "2"], "--threshold 2.0: must be a probability threshold in [0, 1]"),
    (["--ties", "foo"], "--ties foo: unknown tie policy"),
]


@pytest.mark.parametrize("argv, words", EVALUATE_CLI, ids=[" ".join(a)[:30] for a, _ in EVALUATE_CLI])
def test_evaluate_cli(argv, words, folder, tiny_clip_path, tmp_path, cli, monkeypatch):
    """One line naming the flag as given (never the Python argument, ``batch_size=``), nothing scored or written."""
    engine_never_runs(monkeypatch)
    given = dict(zip(argv[::2], argv[1::2]))
    base = {"--dataset": folder, "--model": tiny_clip_path, "--out": tmp_path / "o", "--cache-dir": "none",
            "--num-workers": "0"}
    args = [a for k, v in {**base, **given}.items() for a in (k, v)]
    run = cli("evaluate", *args, "--no-progress")
    _one_line(run.code, run.err, words)
    assert "=" not in run.err.split("error:", 1)[1].split(":")[0]
    assert not (tmp_path / "o").exists() and not (Path.cwd() / "runs" / "synthetic-tiny_clip0").exists()


def test_evaluate_cli_spec_naming_no_column_of_the_dataset(folder, tiny_clip_path, tmp_path, cli):
    for text, words in [("id: nope_id\nimages: [image]\ntexts: [caption, foil]\ngold: [[1, 0]]\n",
                         "names column 'nope_id' under id:"),
                        ("id: id\nimages: [caption]\ntexts: [foil]\ngold: [[1]]\n",
                         "lists column 'caption' under images:, but it holds string, not images")]:
        spec = tmp_path / "spec.yaml"
        spec.write_text(text)
        code, _, err = cli("evaluate", "--dataset", folder, "--config", "pairs", "--spec", spec, "--model",
                           tiny_clip_path, "--out", tmp_path / "o", "--cache-dir", "none", "--no-progress")
        _one_line(code, err, words)


def test_ties_foo_fails_without_importing_evaluate():
    code = ("import sys\nfrom vlprobe.cli import main\nrc = main(['evaluate', '--ties', 'foo', '--no-progress'])\n"
            "print(rc, 'evaluate' in sys.modules, 'torch' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert out.stdout.split() == ["2", "False", "False"], (out.stdout, out.stderr)
    assert "--ties foo: unknown tie policy" in out.stderr


# ---- vlprobe probe (CLI) ----------------------------------------------------------------------------------------

PROBE_CLI = SHARED_CLI + [
    (["--config", "spatiality,spatiality"], "--config spatiality,spatiality: names spatiality more than once"),
    (["--finetune", "--epochs", "1000000000"], "--epochs 1000000000: must be at most 1,000"),
    (["--out", "o" * 300], "has a name of 300 bytes"),
    (["--revision", "v2", "--model", "models/mini-clip"], "is a local folder, which has no revisions"),
    (["--seeds", "1000000"], "--seeds 1000000: must be at most 100"),
    (["--train-modality", "image,image"], "names image more than once"),
    (["--train-size", "10,,20"], "has an empty size between commas"),
    (["--train-size", ""], "--train-size '': names no size"),
]


@pytest.mark.parametrize("argv, words", PROBE_CLI, ids=[" ".join(a)[:30] for a, _ in PROBE_CLI])
def test_probe_cli(argv, words, cli):
    run = cli("probe", *argv, "--no-progress")
    _one_line(run.code, run.err, words)


@pytest.fixture(scope="module")
def travlr_tiny(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("travlr") / "travlr"
    assert main(["build", "travlr", "--out", str(out), "--size", "tiny", "--configs", "spatiality", "--split-sizes",
                 "train=8,validation=4,test_ind=4,test_ood=4"]) in (0, None)
    return out


def test_probe_few_shot_past_the_training_rows(travlr_tiny, tmp_path, cli, monkeypatch):
    from vlprobe import runner

    monkeypatch.setattr(runner, "load_model", lambda *a, **k: pytest.fail("the model loaded before the refusal"))
    code, _, err = cli("probe", "--dataset", travlr_tiny, "--few-shot", "1000000000", "--out", tmp_path / "o",
                       "--cache-dir", "none", "--no-progress")
    _one_line(code, err, "--few-shot 1000000000: must be at most 8, the rows of spatiality/train")
    with pytest.raises(VlprobeError, match=r"^few_shot=9: must be at most 8"):
        vlprobe.probe(datasets=str(travlr_tiny), few_shot=9, cache_dir="none", progress=False)


# ---- vlprobe build / report (CLI) -------------------------------------------------------------------------------

def _source(tmp_path: Path, csv: str) -> Path:
    from helpers import png

    src = tmp_path / "src"
    (src / "images").mkdir(parents=True)
    (src / "images" / "red.png").write_bytes(png((200, 30, 30)))
    (src / "rows.csv").write_text(csv)
    return src


BUILD_CLI = [
    ("id,image,caption,foil\nr1,images/red.png,a red\0 square,a blue square\n",
     "rows.csv row 1 column 'caption': holds a NUL byte"),
    ("id,image,caption,foil\nr1,/etc/hostname,a red square,a blue square\n",
     "column 'image' holds paths ('/etc/hostname'), but not all of them name image files"),
    ("id,image,caption,foil\nr1,/tmp/elsewhere/red.png,a red square,a blue square\n", "'/tmp/elsewhere/red.png'"),
]


@pytest.mark.parametrize("csv, words", BUILD_CLI, ids=["NUL byte", "absolute non-image path", "absolute image path"])
def test_build_folder_cli(csv, words, tmp_path, cli):
    code, _, err = cli("build", "folder", _source(tmp_path, csv), "--license", "mit", "--out", tmp_path / "out")
    _one_line(code, err, words)
    assert not (tmp_path / "out").exists()


REPORT_CLI = [
    ("missing.json", "missing.json"),
    ("bad.json", "bad.json"),
]


@pytest.mark.parametrize("name, words", REPORT_CLI)
def test_report_cli(name, words, tmp_path, cli):
    if name == "bad.json":
        (tmp_path / name).write_text(json.dumps({"results": [{"n_items": -4}]}))
    code, _, err = cli("report", tmp_path / name, "--out", tmp_path / "r")
    assert code == 2 and "Traceback" not in err and words in err, err


# ---- vlprobe.evaluate / vlprobe.probe / vlprobe.score (API) ------------------------------------------------------

EVALUATE_API = [
    ({"processor": "x"}, "processor='x': is used only with an already-loaded transformers model"),
    ({"processor": 3}, "processor=3: is used only with"),
    ({"configs": ""}, "configs='': names nothing"),
    ({"splits": ""}, "splits='': names nothing"),
    ({"log": 3}, "log=3: must be a function"),
    ({"log": "print"}, "log='print': must be a function"),
    ({"root": 3}, "root=3: must be a folder path"),
    ({"bootstrap": 2.5}, "bootstrap=2.5: must be a whole number"),
    ({"device": "cpu:99"}, "device='cpu:99': there is one cpu device"),
    ({"out": "x" * 10_000}, "has a name of 10,000 bytes"),
    ({"configs": ",,"}, "configs=',,': names nothing"),
    ({"configs": "pairs,pairs"}, "configs='pairs,pairs': names pairs more than once"),
    ({"root": __file__}, "is not a folder"),
    ({"batch_size": "auto "}, "batch_size='auto ': must be a whole number (at least 1) or 'auto'"),
    ({"num_workers": 2**63}, "num_workers=9223372036854775808: must be at most"),
    ({"chunk_size": 2**63}, "chunk_size=9223372036854775808: must be at most"),
    ({"dtype": ""}, "dtype='': is empty"),
    ({"model": "~nosuchuser/x"}, "model='~nosuchuser/x': names the home folder of user 'nosuchuser'"),
]


@pytest.mark.parametrize("kw, words", EVALUATE_API, ids=[str(k)[:30] for k, _ in EVALUATE_API])
def test_evaluate_api(kw, words, folder, tiny_clip_path):
    with pytest.raises(VlprobeError) as err:
        vlprobe.evaluate(**{"model": str(tiny_clip_path), "datasets": str(folder), "cache_dir": "none",
                            "progress": False, **kw})
    assert words in str(err.value) and "\n" not in str(err.value)


def test_evaluate_api_processor_of_the_wrong_kind_with_a_loaded_model(tiny_clip_path, folder):
    from transformers import CLIPModel

    model = CLIPModel.from_pretrained(tiny_clip_path)
    with pytest.raises(VlprobeError, match="processor='x': must be the model's processor or tokenizer object"):
        vlprobe.evaluate(model, str(folder), processor="x", progress=False)


PROBE_API = [
    ({"seeds": 10**6}, "seeds=1000000: must be at most 100"),
    ({"epochs": 10**9, "finetune": True}, "epochs=1000000000: must be at most 1,000"),
    ({"train_sizes": "10,,20"}, "has an empty size between commas"),
    ({"train_modalities": ["image", "image"]}, "names image more than once"),
    ({"processor": "x"}, "processor='x': is used only with"),
    ({"configs": ",,"}, "configs=',,': names nothing"),
    ({"configs": ""}, "configs='': names nothing"),
    ({"train_sizes": []}, "train_sizes=[]: names no size"),
    ({"limit": 2**63}, "limit=9223372036854775808: must be at most"),
]


@pytest.mark.parametrize("kw, words", PROBE_API, ids=[str(k)[:30] for k, _ in PROBE_API])
def test_probe_api(kw, words):
    with pytest.raises(VlprobeError) as err:
        vlprobe.probe(**{"progress": False, **kw})
    assert words in str(err.value)


SCORE_API = [
    ({"texts": [""]}, "texts[0]='': is empty"),
    ({"texts": ["a dog", "  "]}, "texts[1]='  ': is empty"),
    ({"texts": "a", "batch_size": "auto "}, "batch_size='auto ': must be a whole number (at least 1) or 'auto'"),
    ({"texts": "a", "progress": "no"}, "progress='no': must be True or False"),
]


@pytest.mark.parametrize("kw, words", SCORE_API, ids=["empty", "blank", "auto_", "progress"])
def test_score_api(kw, words, tiny_clip_path):
    from PIL import Image

    with pytest.raises(VlprobeError) as err:
        vlprobe.score(str(tiny_clip_path), Image.new("RGB", (8, 8)), **{"progress": False, **kw})
    assert str(err.value).startswith(words) and "\n" not in str(err.value)


# ---- the metric ---------------------------------------------------------------------------------------------------

S, G = [[[0.9, 0.1]]], [[[1, 0]]]
METRIC = [
    ({"predictions": None}, "predictions=None: pass one m x n score matrix"),
    ({"references": None}, "references=None: pass one m x n score matrix"),
    ({"references": [[[0.5, 0]]]}, "item 0: gold matrix must hold only 0 and 1, got 0.5"),
    ({"references": [[[2, 0]]]}, "gold matrix must hold only 0 and 1"),
    ({"bootstrap": 2.5}, "bootstrap=2.5: must be a whole number"),
    ({"bootstrap": "10"}, "bootstrap='10': must be a whole number"),
    ({"bootstrap": 10**12}, "bootstrap=1000000000000: must be from 0 to 100,000"),
    ({"seed": "x"}, "seed='x': must be a whole number"),
    ({"seed": -1}, "seed=-1: must be from 0"),
]


@pytest.fixture(scope="module")
def metric():
    sys.path.insert(0, str(REPO / "metric"))
    try:
        import valse_metric
    finally:
        sys.path.remove(str(REPO / "metric"))
    return valse_metric


@pytest.mark.parametrize("kw, words", METRIC, ids=[str(k)[:30] for k, _ in METRIC])
def test_metric_compute(kw, words, metric):
    with pytest.raises(ValueError) as err:
        metric.compute_metrics(**{"predictions": S, "references": G, **kw})
    assert words in str(err.value) and "\n" not in str(err.value)


def test_metric_all_gold_warns(metric):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = metric.compute_metrics(predictions=S, references=[[[1, 1]]])
    assert "no text is a foil" in " ".join(str(w.message) for w in seen) and out["n_items"] == 1


def test_metric_module_names_none_arguments(metric):
    module = metric.ValseMetric() if hasattr(metric, "ValseMetric") else None
    if module is None:
        pytest.skip("the metric module class is not exposed under this name")
    with pytest.raises(ValueError, match="predictions=None"):
        module.compute(predictions=None, references=G)


def test_the_tie_policies_vlprobe_checks_are_the_metrics(metric):
    from vlprobe.benchmarks.base import TIE_POLICIES

    assert TIE_POLICIES == metric.TIE_POLICIES


def test_metric_stays_standalone():
    text = (REPO / "metric" / "valse_metric.py").read_text()
    assert "import vlprobe" not in text and "from vlprobe" not in text
    assert shutil.which  # (the metric folder is a Space of its own: it must not import vlprobe)


# ---- a damaged dataset folder names the file (section 6) -----------------------------------------------------------

def _truncate_shard(folder: Path) -> None:
    shard = sorted(folder.glob("data/pairs/*.parquet"))[0]
    shard.write_bytes(shard.read_bytes()[:100])


def _empty(folder: Path) -> None:
    sorted(folder.glob("data/pairs/*.parquet"))[0].write_bytes(b"")


def _shard_as_csv(folder: Path) -> None:
    sorted(folder.glob("data/pairs/*.parquet"))[0].write_text("id,caption\n1,a\n")


def _lfs(folder: Path) -> None:
    sorted(folder.glob("data/pairs/*.parquet"))[0].write_text(
        "version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 1234\n")


def _card_not_utf8(folder: Path) -> None:
    (folder / "README.md").write_bytes(b"\xff\xfe---\nbroken")


def _bad_build_record(folder: Path) -> None:
    (folder / ".huggingface.yaml").write_text("configs: [\n")


DAMAGED = [
    (_truncate_shard, "is not a readable parquet file"),
    (_empty, "(0 bytes) is not a readable parquet file"),
    (_shard_as_csv, "is not a readable parquet file"),
    (_lfs, "is a Git LFS pointer, not the parquet file itself"),
    (_card_not_utf8, "README.md is not UTF-8 text (byte 0xff at offset 0)"),
    (_bad_build_record, ".huggingface.yaml is not valid YAML"),
]


@pytest.mark.parametrize("damage, words", DAMAGED, ids=[d.__name__.strip("_") for d, _ in DAMAGED])
def test_a_damaged_dataset_folder_names_the_file(damage, words, folder, tiny_clip_path, tmp_path, cli):
    copy = tmp_path / "synthetic"
    shutil.copytree(folder, copy)
    damage(copy)
    code, _, err = cli("evaluate", "--dataset", copy, "--config", "pairs", "--model", tiny_clip_path,
                       "--out", tmp_path / "o", "--cache-dir", "none", "--no-progress", "--num-workers", "0")
    last = err.strip().splitlines()[-1]
    assert code == 2 and "Traceback" not in err and words in last and "is damaged" in last, err
    assert "Pass a dataset folder" not in err


def test_a_full_disk_while_converting_is_named_as_such(folder, tiny_clip_path, tmp_path, monkeypatch, cli):
    import errno

    from vlprobe.storage import arrow_cache

    def full(*args, **kwargs):
        try:
            raise OSError(errno.ENOSPC, "No space left on device", "/tmp/x.arrow")
        except OSError as inner:
            raise RuntimeError("DatasetGenerationError: An error occurred while generating the dataset") from inner

    monkeypatch.setattr(arrow_cache, "load_split", full)
    code, _, err = cli("evaluate", "--dataset", folder, "--config", "pairs", "--model", tiny_clip_path,
                       "--out", tmp_path / "o", "--cache-dir", "none", "--no-progress")
    _one_line(code, err, "no space left on the disk (/tmp/x.arrow) while converting it to Arrow")


def test_a_damaged_tokenizer_json_names_model_and_file(folder, tiny_clip_path, tmp_path, cli):
    model = tmp_path / "model"
    shutil.copytree(tiny_clip_path, model)
    (model / "tokenizer.json").write_text('{"version": "1.0", "truncation": nul')
    code, _, err = cli("evaluate", "--dataset", folder, "--config", "pairs", "--model", model,
                       "--out", tmp_path / "o", "--cache-dir", "none", "--no-progress", "--num-workers", "0")
    last = err.strip().splitlines()[-1]
    assert code == 2 and f"cannot load model '{model}': tokenizer.json is not valid JSON" in last, err
