"""The Python API, ``vlprobe.evaluate``: the example of docs/models.md, a loaded model, an in-memory
dataset, the CLI's folder equal to ``save()``'s, streaming equal to one pass, and every setting
refused before scoring with one line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import datasets
import numpy as np
import pyarrow.parquet as pq
import pytest
from helpers import engine_never_runs
from helpers_data import build_folder

import vlprobe
from vlprobe.cli import main
from vlprobe.errors import DatasetError, ModelError, SettingError


@pytest.mark.slow
def test_readme_example(folder, tiny_clip_path, tmp_path):
    res = vlprobe.evaluate(model=str(tiny_clip_path), datasets=[str(folder)], configs="all", splits=None,
                           ties="strict", bootstrap=20, limit=None, batch_size=4, device=None, dtype="float32",
                           cache_dir=tmp_path / "cache", progress=False)
    assert isinstance(res.summary, dict)
    frame = res.to_pandas()
    assert {"dataset", "config", "split", "metric", "value", "ci_low", "ci_high", "chance", "n_items"} <= set(frame)
    assert set(frame["config"]) == {"pairs", "swap"}
    assert ((frame["value"] >= 0) & (frame["value"] <= 1)).all()
    scores = res.scores()
    assert isinstance(scores, datasets.Dataset) and len(scores) == 18
    written = res.save(tmp_path / "run")
    assert sorted(p.name for p in written) == sorted(p.name for p in (tmp_path / "run").iterdir()
                                                     if p.name != ".vlprobe-run.json")
    fig = res.plot()
    assert len([ax for ax in fig.axes if ax.has_data()]) == 2
    doc = res.results
    assert doc["format"] == "vlprobe-results/3" and [r["config"] for r in doc["results"]] == ["pairs", "swap"]
    assert "pairs/test" in res.table() and "chance" in res.table()


@pytest.mark.slow
def test_results_csv_and_to_pandas_carry_one_name_per_quantity_and_the_tags(folder, tiny_clip_path, tmp_path):
    """1 x 2 items: acc_r, not also text / set_acc / sentence_acc (the same number); 2 x 2: acc_r, not set_acc /
    sentence_acc. to_pandas() is results.csv, per-tag rows included (tag "" for the whole split)."""
    import csv

    res = vlprobe.evaluate(model=str(tiny_clip_path), datasets=[str(folder)], bootstrap=0, cache_dir="none",
                           progress=False)
    res.save(tmp_path / "run")
    with open(tmp_path / "run" / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    by_config = {c: {r["metric"] for r in rows if r["config"] == c} for c in ("pairs", "swap")}
    assert "acc_r" in by_config["pairs"] and not by_config["pairs"] & {"text", "set_acc", "sentence_acc"}
    assert {"acc_r", "text", "image", "group"} <= by_config["swap"]
    assert not by_config["swap"] & {"set_acc", "sentence_acc"}
    assert {"text", "set_acc", "sentence_acc"} <= set(res.splits[0].metrics)  # results.json keeps every key
    frame = res.to_pandas()
    assert len(frame) == len(rows) and set(frame["tag"]) == {r["tag"] for r in rows}
    assert len(set(frame["tag"])) > 1 and "" in set(frame["tag"])
    assert "tag" not in res.to_pandas(per_tag=False)


@pytest.mark.slow
def test_loaded_model_equals_the_saved_one(folder, tiny_clip_path):
    from transformers import CLIPModel, CLIPProcessor

    kw = dict(datasets=str(folder), configs="swap", bootstrap=0, cache_dir="none", progress=False, num_workers=0)
    by_path = vlprobe.evaluate(model=str(tiny_clip_path), **kw)
    model, proc = CLIPModel.from_pretrained(tiny_clip_path), CLIPProcessor.from_pretrained(tiny_clip_path)
    by_object = vlprobe.evaluate(model=(model, proc), **kw)
    by_kwarg = vlprobe.evaluate(model=model, processor=proc, **kw)
    want = np.stack(by_path.splits[0].scores)
    for res in (by_object, by_kwarg):
        got = np.stack(res.splits[0].scores)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(want).max())))
        assert res.provenance["model"]["revision"].startswith("weights-sha256:")
        assert res.provenance["command"] is None  # no command line can name an object in memory
    # A scorer is taken as it is.
    from vlprobe.scorers import load_scorer

    by_scorer = vlprobe.evaluate(model=load_scorer(str(tiny_clip_path)), **kw)
    np.testing.assert_allclose(np.stack(by_scorer.splits[0].scores), want, rtol=1e-4,
                               atol=1e-5 * max(1.0, float(np.abs(want).max())))


def test_in_memory_dataset_with_a_spec(folder, tiny_clip_path):
    ds = datasets.load_dataset(str(folder), "pairs", split="test")
    spec = {"id": "id", "images": ["image"], "texts": ["caption", "foil"], "gold": [[1, 0]], "tags": ["kind"]}
    res = vlprobe.evaluate(model=str(tiny_clip_path), datasets={"mine": ds}, spec=spec, bootstrap=0,
                           cache_dir="none", progress=False)
    ref = vlprobe.evaluate(model=str(tiny_clip_path), datasets=str(folder), configs="pairs", bootstrap=0,
                           cache_dir="none", progress=False)
    assert res.splits[0].name == "mine/default/test" and res.splits[0].metrics["n_items"] == 12
    assert [it.id for it in res.splits[0].items] == [it.id for it in ref.splits[0].items]
    want = np.stack(ref.splits[0].scores)
    np.testing.assert_allclose(np.stack(res.splits[0].scores), want, rtol=1e-4,
                               atol=1e-5 * max(1.0, float(np.abs(want).max())))
    dd = datasets.DatasetDict({"test": ds})
    assert vlprobe.evaluate(model=str(tiny_clip_path), datasets=dd, spec=spec, bootstrap=0, cache_dir="none",
                            progress=False, limit=3).splits[0].metrics["n_items"] == 3
    with pytest.raises(DatasetError, match="needs spec="):
        vlprobe.evaluate(model=str(tiny_clip_path), datasets=ds, cache_dir="none", progress=False)


def _comparable(doc: dict) -> dict:
    prov = doc["provenance"]
    for key in ("created", "argv", "command"):
        prov.pop(key)
    prov["engine"].pop("seconds")
    return doc


@pytest.mark.slow
def test_save_equals_the_cli_folder(folder, tiny_clip_path, tmp_path, capsys):
    cache = tmp_path / "cache"
    args = ["--dataset", folder, "--model", tiny_clip_path, "--bootstrap", 30, "--batch-size", 4,
            "--num-workers", 0, "--cache-dir", cache, "--no-progress"]
    # Warm the cache so that both runs read the same numbers (and the same engine counts).
    assert main(["evaluate", *map(str, args), "--out", str(tmp_path / "warm")]) == 0
    assert main(["evaluate", *map(str, args), "--out", str(tmp_path / "cli")]) == 0
    capsys.readouterr()
    res = vlprobe.evaluate(model=str(tiny_clip_path), datasets=[str(folder)], bootstrap=30, batch_size=4,
                           num_workers=0, cache_dir=str(cache), progress=False)
    res.save(tmp_path / "api")
    cli, api = tmp_path / "cli", tmp_path / "api"
    assert sorted(p.name for p in cli.iterdir()) == sorted(p.name for p in api.iterdir())
    for name in ("results.csv",):
        assert (cli / name).read_bytes() == (api / name).read_bytes()
    assert pq.read_table(cli / "scores.parquet").equals(pq.read_table(api / "scores.parquet"))
    a = _comparable(json.loads((cli / "results.json").read_text()))
    b = _comparable(json.loads((api / "results.json").read_text()))
    # The CLI records its --out; otherwise the settings are the same.
    assert a == b
    for png in cli.glob("*.png"):
        assert (api / png.name).stat().st_size > 0


@pytest.mark.slow
def test_streaming_in_chunks_equals_one_pass(folder, tiny_clip_path, tmp_path):
    kw = dict(model=str(tiny_clip_path), datasets=str(folder), bootstrap=0, progress=False, num_workers=0)
    whole = vlprobe.evaluate(cache_dir="none", **kw)
    for cache in ("none", str(tmp_path / "c")):
        chunked = vlprobe.evaluate(cache_dir=cache, chunk_size=5, **kw)
        assert chunked.provenance["engine"]["chunks"] == 4  # 12 + 6 items, 5 at a time
        for a, b in zip(chunked.splits, whole.splits):
            assert [it.id for it in a.items] == [it.id for it in b.items]
            want = np.stack(b.scores)
            np.testing.assert_allclose(np.stack(a.scores), want, rtol=1e-4,
                                       atol=1e-5 * max(1.0, float(np.abs(want).max())))
            assert a.metrics["n_items"] == b.metrics["n_items"]
            # Chunks change batch shapes, so scores may differ in the last bits: acc_r is the same
            # unless such noise decides a near-tie (a margin inside the tolerance), never otherwise.
            tol = 1e-4 * float(np.abs(want).max()) + 1e-5 * max(1.0, float(np.abs(want).max()))
            if a.metrics["acc_r"] != b.metrics["acc_r"]:
                gold = np.stack([it.gold for it in b.items]).astype(bool)
                for got, ref_scores, g in zip(a.scores, b.scores, gold):
                    margins = [ref_scores[r, i] - ref_scores[r, j] for r in range(g.shape[0])
                               for i in np.flatnonzero(g[r]) for j in np.flatnonzero(~g[r])]
                    changed = [(got[r, i] > got[r, j]) != (ref_scores[r, i] > ref_scores[r, j])
                               for r in range(g.shape[0]) for i in np.flatnonzero(g[r]) for j in np.flatnonzero(~g[r])]
                    assert all(abs(m) <= 2 * tol for m, c in zip(margins, changed) if c), (margins, changed)


def test_chunks_keep_no_image(folder, tiny_clip_path):
    res = vlprobe.evaluate(model=str(tiny_clip_path), datasets=str(folder), bootstrap=0, cache_dir="none",
                           progress=False, chunk_size=4)
    for split in res.splits:
        assert all(not hasattr(it, "images") for it in split.items)


@pytest.mark.parametrize(
    "kw, expected",
    [
        ({"confidence": 95}, "confidence=95: must be a level strictly between 0 and 1"),
        ({"confidence": 0.0}, "confidence=0.0: must be"),
        ({"threshold": float("nan")}, "threshold=nan: must be a probability threshold in [0, 1]"),
        ({"threshold": 2}, "threshold=2: must be a probability threshold in [0, 1]"),
        ({"threshold": -0.1}, "threshold=-0.1: must be a probability threshold"),
        ({"num_workers": -1}, "num_workers=-1: must be 0 or more"),
        ({"batch_size": 0}, "batch_size=0: must be at least 1"),
        ({"batch_size": 2.5}, "batch_size=2.5: must be a whole number"),
        ({"limit": 0}, "limit=0: must be at least 1"),
        ({"bootstrap": -5}, "bootstrap=-5: must be 0 or more"),
        ({"bootstrap": 10 ** 12}, "bootstrap=1000000000000: at most 100,000 resamples"),
        ({"ties": "sometimes"}, "unknown tie policy"),
        ({"dtype": "int8"}, "unsupported dtype"),
        ({"modality": "smell"}, "unknown modality"),
        ({"control": "upside-down"}, "unknown control"),
        ({"device": "tpu"}, "device='tpu'"),
        ({"device": 3}, "device=3: must be a device name"),
        ({"cache_dir": 3}, "cache_dir=3: must be a folder path"),
        ({"datasets": 3}, "datasets=3: must be a dataset folder"),
        ({"datasets": [None]}, "datasets=None: must be a dataset folder"),
        ({"datasets": []}, "datasets=[]: no dataset given"),
        ({"num_workers": 2**63}, "num_workers=9223372036854775808: must be at most"),
        ({"chunk_size": 2**63}, "chunk_size=9223372036854775808: must be at most"),
        ({"limit": 2**63}, "limit=9223372036854775808: must be at most"),
        ({"dtype": ""}, "dtype='': is empty"),
        ({"device": ""}, "device='': is empty"),
        ({"configs": "pairs,pairs"}, "configs='pairs,pairs': names pairs more than once"),
        ({"splits": "test,test"}, "splits='test,test': names test more than once"),
        ({"batch_size": "auto "}, "batch_size='auto ': must be a whole number (at least 1) or 'auto'"),
        ({"root": __file__}, "is not a folder"),
        ({"cache_dir": "~nosuchuser/c"}, "cache_dir='~nosuchuser/c': names the home folder of user 'nosuchuser'"),
    ],
)
def test_bad_settings_are_refused_before_anything_loads(folder, tiny_clip_path, monkeypatch, kw, expected):
    from vlprobe.scorers import loading

    def no_load(*a, **k):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(loading, "load_scorer", no_load)
    engine_never_runs(monkeypatch)
    kw = {"datasets": str(folder), "cache_dir": "none", **kw}
    with pytest.raises(SettingError) as info:
        vlprobe.evaluate(model=str(tiny_clip_path), progress=False, **kw)
    assert expected in str(info.value) and "\n" not in str(info.value)
    assert "--" not in str(info.value)  # Python callers are told the argument's Python name


# The same errors on the command line name the flag: tests/test_bad_input_tables.py's EVALUATE_CLI.


def test_unavailable_device_is_one_line_before_loading(folder, tiny_clip_path, monkeypatch, capsys, tmp_path):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    mps = getattr(torch.backends, "mps", None)
    if mps is not None:
        monkeypatch.setattr(mps, "is_available", lambda: False)
    for device in ("cuda", "cuda:1", "mps"):
        code = main(["evaluate", "--dataset", str(folder), "--model", str(tiny_clip_path), "--device", device,
                     "--out", str(tmp_path / "o"), "--no-progress", "--cache-dir", "none"])
        err = capsys.readouterr().err
        assert code == 2 and f"--device {device}" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_output_folder_problems_are_refused_before_scoring(folder, tiny_clip_path, tmp_path, monkeypatch, capsys):
    engine_never_runs(monkeypatch)
    a_file = tmp_path / "file"
    a_file.write_text("x")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    readonly = tmp_path / "ro"
    readonly.mkdir()
    cases = [(a_file, "is a file"), (a_file / "sub", "is a file"), (foreign, "not a vlprobe run's")]
    if os.name == "posix":
        cases.append((readonly / "out", "cannot write in"))
    for out, expected in cases:
        if out.parent == readonly:
            _unwritable(monkeypatch, readonly)
        code = main(["evaluate", "--dataset", str(folder), "--model", str(tiny_clip_path), "--out", str(out),
                     "--no-progress", "--cache-dir", "none"])
        err = capsys.readouterr().err
        assert code == 2 and expected in err and len(err.strip().splitlines()) == 1, err
    assert (foreign / "notes.txt").read_text() == "mine"


def _unwritable(monkeypatch, folder: Path) -> None:
    """``folder`` refuses new entries (the tests run as root, for whom chmod does not)."""
    import tempfile

    real = tempfile.mkdtemp

    def mkdtemp(*a, dir=None, **k):
        if dir is not None and Path(dir) == folder:
            raise PermissionError(13, "Permission denied")
        return real(*a, dir=dir, **k)

    monkeypatch.setattr(tempfile, "mkdtemp", mkdtemp)


@pytest.mark.slow
def test_rerun_replaces_the_folder_as_a_whole(folder, tiny_clip_path, tmp_path, monkeypatch):
    out = tmp_path / "run"
    kw = dict(model=str(tiny_clip_path), datasets=str(folder), bootstrap=0, cache_dir=str(tmp_path / "c"),
              progress=False, num_workers=0)
    vlprobe.evaluate(out=out, **kw)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert len(before) == 7  # six outputs and the run's record (.vlprobe-run.json)
    # A rerun of one config that dies while writing leaves the old run whole.
    from vlprobe.results import io

    def dies(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(io, "scores_table", dies)
    with pytest.raises(vlprobe.VlprobeError, match="the scores are in the cache"):
        vlprobe.evaluate(out=out, configs="swap", **kw)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".run")] == []
    monkeypatch.undo()
    # A rerun that succeeds holds only its own files: no plot of the config it did not score.
    vlprobe.evaluate(out=out, configs="swap", **kw)
    assert sorted(p.name for p in out.iterdir()) == [".vlprobe-run.json", "plot_synthetic_swap_test.png",
                                                      "results.csv", "results.json", "results_wide.csv", "scores.parquet"]


def test_true_false_items_need_a_probability(tmp_path, tiny_clip_path, monkeypatch):
    ds = datasets.load_dataset(str(build_folder(tmp_path, n=4)), "pairs", split="test")
    spec = {"id": "id", "images": ["image"], "texts": ["caption"], "gold": [[1]]}
    engine_never_runs(monkeypatch)
    with pytest.raises(ModelError) as info:
        vlprobe.evaluate(model=str(tiny_clip_path), datasets={"tf": ds}, spec=spec, cache_dir="none",
                         progress=False)
    message = str(info.value)
    assert "dual encoder" in message and "calibrated probability" in message and "vlprobe probe" in message


def test_old_control_name_still_works(folder, tiny_clip_path, capsys, tmp_path):
    code = main(["evaluate", "--dataset", str(folder), "--config", "pairs", "--model", str(tiny_clip_path),
                 "--control", "shuffled", "--bootstrap", "0", "--cache-dir", "none", "--out", str(tmp_path / "o"),
                 "--no-progress"])
    assert code == 0, capsys.readouterr().err
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert doc["provenance"]["settings"]["control"] == "shuffle"


@pytest.mark.slow
def test_own_dataset_is_not_headed_as_a_papers_aggregates(folder, tiny_clip_path, tmp_path):
    """'the paper's aggregates' belongs to the benchmarks that have a paper; a user's own dataset
    gets 'headline metrics per config', in the printed table and in the report."""
    res = vlprobe.evaluate(model=str(tiny_clip_path), datasets=str(folder), bootstrap=0, cache_dir="none",
                           progress=False, num_workers=0, out=tmp_path / "run")
    assert "paper's aggregates" not in res.table() and "synthetic: headline metrics per config" in res.table()
    from vlprobe.report import write_report

    md = write_report([tmp_path / "run"], tmp_path / "rep")[0].read_text()
    assert "paper's aggregates" not in md and "synthetic: headline metrics per config" in md
    from vlprobe.results.schema import SummaryBlock
    from vlprobe.results.summary import summary_title

    assert summary_title("valse", SummaryBlock("valse", source="VALSE (Parcalabescu et al., ACL 2022), Table 2")).startswith(
        "valse: the paper's aggregates")


def test_plot_shows_the_tables_metrics(folder, tiny_clip_path):
    """A 1 x 2 item's set metrics equal acc_r, so the table hides them: the plot must too."""
    from vlprobe.results.display import shown_metrics

    res = vlprobe.evaluate(model=str(tiny_clip_path), datasets=str(folder), bootstrap=0, cache_dir="none",
                           progress=False, num_workers=0)
    fig = res.plot()
    for ax, entry in zip(fig.axes, res.entries):
        shown = [t.get_text() for t in ax.get_xticklabels()]
        assert shown == shown_metrics(entry), (entry.name, shown)
    pairs = next(e for e in res.entries if e.config == "pairs")
    assert pairs.metrics.value("set_acc") is not None and "set_acc" not in shown_metrics(pairs)


def test_repr_is_short(folder, tiny_clip_path):
    res = vlprobe.evaluate(model=str(tiny_clip_path), datasets=str(folder), bootstrap=0, cache_dir="none",
                           progress=False, num_workers=0)
    text = repr(res)
    assert "\n" not in text and len(text) < 200 and "synthetic/pairs/test" in text and "18 items" in text


@pytest.mark.slow
def test_score_gives_the_models_own_matrix(tiny_clip_path, tmp_path):
    """vlprobe.score(model, images, texts) -> m x n, CLIP's logits_per_image, from PIL images or paths,
    through a folder, a loaded model, or a scorer."""
    import torch
    from PIL import Image
    from tiny_models import tiny_images
    from transformers import CLIPModel, CLIPProcessor

    pics = tiny_images(3)
    path = tmp_path / "p.png"
    pics[2].save(path)
    texts = ["a red square", "a blue circle"]
    got = vlprobe.score(str(tiny_clip_path), [pics[0], pics[1], str(path)], texts, cache_dir=tmp_path / "c")
    model, proc = CLIPModel.from_pretrained(tiny_clip_path).eval(), CLIPProcessor.from_pretrained(tiny_clip_path)
    with torch.no_grad():
        ref = model(**proc(text=texts, images=[pics[0], pics[1], Image.open(path)], return_tensors="pt",
                           padding=True)).logits_per_image.numpy()
    assert got.shape == (3, 2) and got.dtype == np.float64
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(ref).max())))
    again = vlprobe.score((model, proc), pics[0], "a red square", cache_dir="none")
    assert again.shape == (1, 1)
    np.testing.assert_allclose(again[0, 0], ref[0, 0], rtol=1e-4, atol=1e-4 * max(1.0, abs(float(ref[0, 0]))))
    with pytest.raises(SettingError, match=r"images\[1\]='.*missing.png': no such image file"):
        vlprobe.score(str(tiny_clip_path), [pics[0], str(tmp_path / "missing.png")], texts)
    with pytest.raises(SettingError, match="texts=3: must be a string"):
        vlprobe.score(str(tiny_clip_path), pics[0], 3)
    with pytest.raises(ModelError, match="no match probabilities"):
        vlprobe.score(str(tiny_clip_path), pics[0], texts, probabilities=True, cache_dir="none")


def test_a_bootstrap_past_the_metrics_bound_is_refused_before_scoring(folder, tiny_clip_path, monkeypatch, capsys):
    """The metric refuses a bootstrap past its work bound (MAX_BOOTSTRAP_WORK); evaluate asks it before scoring, so a
    long run is not refused only once its scores are in."""
    from vlprobe.metric import module as metric

    engine_never_runs(monkeypatch)
    monkeypatch.setattr(metric, "MAX_BOOTSTRAP_WORK", 100)  # a few items' cells x 1,000 resamples is past it
    code = main(["evaluate", "--dataset", str(folder), "--model", str(tiny_clip_path), "--bootstrap", "1000",
                 "--no-progress", "--cache-dir", "none"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and err.startswith("vlprobe evaluate: error: --bootstrap 1000:"), err
    assert "at most" in err and "resamples here" in err
