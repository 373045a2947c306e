"""`vlprobe evaluate` end to end on a small synthetic dataset folder with the tiny random CLIP,
and each of its error paths (clear message, exit status 2, no traceback)."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import numpy as np
import pyarrow.parquet as pq
import pytest
from helpers_data import build_folder

from vlprobe.cli import main

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_evaluate_end_to_end_writes_all_outputs(folder, tiny_clip_path, tmp_path, cli):
    out_dir, cache = tmp_path / "run", tmp_path / "cache"
    code, out, err = cli("evaluate", "--dataset", folder, "--model", tiny_clip_path, "--bootstrap", 50,
                         "--batch-size", 4, "--num-workers", 0, "--cache-dir", cache, "--out", out_dir, "--no-progress")
    assert code == 0, err
    assert "pairs/test" in out and "swap/test" in out and "chance" in out
    files = sorted(p.name for p in out_dir.iterdir())
    assert files == [".vlprobe-run.json", "plot_synthetic_pairs_test.png", "plot_synthetic_swap_test.png",
                     "results.csv", "results.json", "results_wide.csv", "scores.parquet"]
    doc = json.loads((out_dir / "results.json").read_text())
    prov = doc["provenance"]
    assert prov["model"]["model_id"] == str(tiny_clip_path) and prov["model"]["family"]
    assert prov["model"]["dtype"] == "float32" and prov["model"]["device"] == "cpu"
    assert prov["settings"]["ties"] == "authors" and prov["environment"]["packages"]["torch"]
    assert {e["ties"] for e in doc["results"]} == {"strict"}  # a dataset of the user's own: strict
    assert "--model" in prov["command"] and prov["created"].endswith("Z")
    by_config = {r["config"]: r for r in doc["results"]}
    pairs, swap = by_config["pairs"]["metrics"], by_config["swap"]["metrics"]
    assert pairs["n_items"] == 12 and swap["n_items"] == 6
    assert set(pairs["per_tag"]) == {"kind=even", "kind=odd"}
    assert "acc_r" in pairs["ci"] and {"text", "image", "group"} <= set(swap)
    assert len(by_config["pairs"]["data"]["data_sha256"]) == 64

    table = pq.read_table(out_dir / "scores.parquet").to_pandas()
    assert len(table) == 18 and {"config", "id", "scores", "gold", "probabilities", "tags"} <= set(table.columns)
    row = table[table["id"] == "s0"].iloc[0]
    S = np.array([list(r) for r in row["scores"]])
    assert S.shape == (2, 2) and np.array([list(r) for r in row["gold"]]).tolist() == [[True, False], [False, True]]

    # The scores are CLIP's own logits_per_image for the same inputs.
    import torch
    from transformers import CLIPModel, CLIPProcessor

    model, proc = CLIPModel.from_pretrained(tiny_clip_path).eval(), CLIPProcessor.from_pretrained(tiny_clip_path)
    ds = datasets.load_dataset(str(folder), "swap", split="test")
    inputs = proc(text=[ds[0]["caption_0"], ds[0]["caption_1"]], images=[ds[0]["image_0"], ds[0]["image_1"]],
                  return_tensors="pt", padding=True)
    with torch.no_grad():
        logits = model(**inputs).logits_per_image.numpy()
    np.testing.assert_allclose(S, logits, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(logits).max())))

    csv = (out_dir / "results.csv").read_text().splitlines()
    assert csv[0].startswith("dataset,config,split,tag,metric,value,ci_low,ci_high,chance")
    assert any(",kind=even,acc_r," in line for line in csv)

    # A second run is served by the cache and gives the same numbers.
    code, out2, err = cli("evaluate", "--dataset", folder, "--model", tiny_clip_path, "--bootstrap", 50,
                          "--cache-dir", cache, "--out", tmp_path / "run2", "--no-progress")
    assert code == 0, err
    doc2 = json.loads((tmp_path / "run2" / "results.json").read_text())
    assert doc2["provenance"]["engine"]["computed_images"] == 0 and doc2["provenance"]["engine"]["computed_texts"] == 0
    assert [r["metrics"] for r in doc2["results"]] == [r["metrics"] for r in doc["results"]]


def test_config_limit_and_split(folder, tiny_clip_path, tmp_path, cli):
    code, out, err = cli("evaluate", "--dataset", folder, "--config", "swap", "--split", "test", "--limit", 3,
                         "--model", tiny_clip_path, "--bootstrap", 0, "--cache-dir", "none", "--out", tmp_path / "o",
                         "--no-progress")
    assert code == 0, err
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert [r["config"] for r in doc["results"]] == ["swap"]
    assert doc["results"][0]["metrics"]["n_items"] == 3 and "ci" not in doc["results"][0]["metrics"]


# A bad --config, --split, --family, --ties or --batch-size: tests/test_bad_input_tables.py's EVALUATE_CLI.


def test_model_not_found_says_how_to_pass_a_local_path(folder, tmp_path, cli):
    code, out, err = cli("evaluate", "--dataset", folder, "--model", "someone/not-a-model", "--out", tmp_path / "o",
                         "--cache-dir", "none", "--no-progress")
    assert code == 2 and "not-a-model" in err and "local folder" in err and "Traceback" not in err


def test_dataset_not_found(tmp_path, tiny_clip_path, cli):
    code, out, err = cli("evaluate", "--dataset", tmp_path / "missing", "--model", tiny_clip_path, "--out", tmp_path / "o")
    assert code == 2 and "missing" in err and "Traceback" not in err


def test_an_unbuilt_card_folder_says_how_to_build_it(tmp_path, tiny_clip_path, cli):
    # A clone's committed card folder (card + vlprobe.yaml, no data/): the error names the build command.
    import shutil

    card = shutil.copytree(Path(__file__).resolve().parents[1] / "crepe", tmp_path / "crepe",
                           ignore=shutil.ignore_patterns("data"))
    code, _, err = cli("evaluate", "--dataset", card, "--model", tiny_clip_path, "--out", tmp_path / "o")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "holds a card but no data yet" in err and f"`vlprobe build crepe --out {card}`" in err, err


def test_unreadable_image_names_item_and_file(tmp_path, tiny_clip_path, cli):
    bad = build_folder(tmp_path, n=6, broken_row=4)
    code, out, err = cli("evaluate", "--dataset", bad, "--config", "pairs", "--model", tiny_clip_path, "--out",
                         tmp_path / "o", "--cache-dir", "none", "--num-workers", "1", "--no-progress")
    assert code == 2 and "'p4'" in err and "broken_file.png" in err and "Traceback" not in err


def test_out_of_memory_suggests_smaller_batch(folder, tiny_clip_path, tmp_path, cli, monkeypatch):
    import torch

    from vlprobe.scorers import dual_encoder

    calls = {"n": 0}
    original = dual_encoder.DualEncoderScorer.encode_images

    def flaky(self, inputs):
        calls["n"] += 1
        if calls["n"] >= 2:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")
        return original(self, inputs)

    monkeypatch.setattr(dual_encoder.DualEncoderScorer, "encode_images", flaky)
    cache = tmp_path / "cache"
    code, out, err = cli("evaluate", "--dataset", folder, "--model", tiny_clip_path, "--batch-size", 2, "--out",
                         tmp_path / "o", "--cache-dir", cache, "--num-workers", "0", "--no-progress")
    assert code == 2 and "smaller --batch-size" in err and "Traceback" not in err
    parts = list(cache.glob("*/part-0.sqlite"))
    import sqlite3

    with sqlite3.connect(parts[0]) as db:
        keys = [k for (k,) in db.execute("SELECT key FROM entries")]
    # the image batch before the failure (entries "i:<image>"), and the texts the engine encoded between image
    # batches before it ("t:<text key>")
    assert sum(k.startswith("i:") for k in keys) == 2 and all(k.startswith(("i:", "t:")) for k in keys)


def test_default_run_without_built_datasets_says_how_to_build(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "travlr").mkdir()  # present but not built
    code = main(["evaluate"])
    err = capsys.readouterr().err
    assert code == 2 and "vlprobe build travlr" in err


def test_default_run_without_model_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    import vlprobe.storage.locations

    monkeypatch.setattr(vlprobe.storage.locations, "shipped_model", lambda: None)  # an installation that ships none
    for name in ("travlr", "winoground_style"):
        (tmp_path / name / "data" / "x").mkdir(parents=True)
        (tmp_path / name / "vlprobe.yaml").write_text("")  # a dataset folder, as a clone's
        (tmp_path / name / "data" / "x" / "test-00000-of-00001.parquet").write_bytes(b"")
    code = main([])  # plain `vlprobe` runs the default job too
    err = capsys.readouterr().err
    assert code == 2 and "models/mini-clip" in err and "--model" in err


def test_console_entry_point_help(cli):
    code, out, _ = cli.subprocess("evaluate", "--help", timeout=60)
    assert code == 0 and "--bootstrap" in out and "--cache-dir" in out


@pytest.mark.slow
def test_blank_control_is_recorded_and_cached_apart(folder, tiny_clip_path, tmp_path, cli):
    cache = tmp_path / "cache"
    base = ["--dataset", folder, "--config", "pairs", "--model", tiny_clip_path, "--bootstrap", 0,
            "--cache-dir", cache, "--no-progress"]
    assert cli("evaluate", *base, "--out", tmp_path / "real").code == 0
    code, out, err = cli("evaluate", *base, "--control", "blank", "--out", tmp_path / "blank")
    assert code == 0, err
    real = json.loads((tmp_path / "real" / "results.json").read_text())
    blank = json.loads((tmp_path / "blank" / "results.json").read_text())
    assert blank["provenance"]["settings"]["control"] == "blank"
    assert blank["provenance"]["model"]["family"] != real["provenance"]["model"]["family"]
    assert len(list(cache.iterdir())) == 2  # never mixed with the real run's cache
    # every image is one blank of one size: one image encoded, texts as in the real run
    assert blank["provenance"]["engine"]["unique_images"] == 1


@pytest.mark.slow
def test_itm_probabilities_flow_to_metrics_and_parquet(folder, tiny_blip_itm_path, tmp_path, cli):
    code, out, err = cli("evaluate", "--dataset", folder, "--config", "pairs", "--limit", 4, "--model",
                         tiny_blip_itm_path, "--bootstrap", 0, "--cache-dir", "none", "--out", tmp_path / "o",
                         "--no-progress", "--num-workers", 0)
    assert code == 0, err
    metrics = json.loads((tmp_path / "o" / "results.json").read_text())["results"][0]["metrics"]
    assert {"acc", "p_c", "p_f", "min_p"} <= set(metrics)
    probs = pq.read_table(tmp_path / "o" / "scores.parquet").to_pydict()["probabilities"]
    assert all(p is not None and 0 <= p[0][0] <= 1 for p in probs)


def test_text_only_model(folder, tiny_gpt2_path, tmp_path, cli):
    code, out, err = cli("evaluate", "--dataset", folder, "--config", "pairs", "--limit", 5, "--model", tiny_gpt2_path,
                         "--bootstrap", 0, "--cache-dir", tmp_path / "c", "--out", tmp_path / "o", "--no-progress")
    assert code == 0, err
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    # 5 rows, texts only: pairs are deduplicated by text
    assert doc["provenance"]["engine"]["unique_pairs"] == len({f"a shape number {i % 4}" for i in range(5)}
                                                              | {f"no shape number {i % 3}" for i in range(5)})


@pytest.mark.slow
def test_exact_preprocessing_reaches_the_scorer_and_the_provenance(folder, tiny_clip_path, tmp_path, cli):
    """--exact-preprocessing loads the model's PIL image processor, and results.json says so (the
    setting, the backend that ran, and a command line that reruns it)."""
    out_dir = tmp_path / "exact"
    code, _, err = cli("evaluate", "--dataset", folder, "--config", "pairs", "--model", tiny_clip_path, "--limit", 4,
                       "--bootstrap", 0, "--cache-dir", tmp_path / "cache", "--out", out_dir, "--no-progress",
                       "--exact-preprocessing")
    assert code == 0, err
    prov = json.loads((out_dir / "results.json").read_text())["provenance"]
    assert prov["settings"]["exact_preprocessing"] is True
    assert prov["model"]["preprocessing"]["image_backend"] == "pil"
    assert "--exact-preprocessing" in prov["command"]


def test_same_dataset_twice_is_refused(folder, tiny_clip_path, tmp_path, cli):
    """--dataset X --dataset X once wrote every item twice into scores.parquet: refused, one line."""
    code, out, err = cli("evaluate", "--dataset", folder, "--dataset", f"{folder}/", "--model", tiny_clip_path,
                         "--out", tmp_path / "o", "--cache-dir", "none", "--no-progress")
    assert code == 2 and "--dataset" in err and "given more than once" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "o").exists()


def test_dataset_revision_on_a_local_folder_is_refused(folder, tiny_clip_path, tmp_path, cli):
    code, out, err = cli("evaluate", "--dataset", folder, "--dataset-revision", "v2", "--model", tiny_clip_path,
                         "--out", tmp_path / "o", "--cache-dir", "none", "--no-progress")
    assert code == 2 and "--dataset-revision v2" in err and "local folder" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "o").exists()


def test_no_progress_silences_every_librarys_bars(folder, tiny_clip_path, tmp_path, cli, monkeypatch):
    """--no-progress: transformers', huggingface_hub's and datasets' bars are off while the model
    loads and the rows are read and scored, and are as they were afterwards."""
    import datasets as hf_datasets
    import huggingface_hub.utils as hub_utils
    from transformers.utils import logging as hf_logging

    from vlprobe import runner as evaluation  # where evaluate() looks load_model up (the run loads the model)
    from vlprobe.scoring import engine

    seen = []

    def state(where):
        seen.append((where, hf_logging.is_progress_bar_enabled(), not hub_utils.are_progress_bars_disabled(),
                     hf_datasets.is_progress_bar_enabled()))

    load, score = evaluation.load_model, engine.Engine.score
    monkeypatch.setattr(evaluation, "load_model", lambda *a, **k: (state("load"), load(*a, **k))[1])
    monkeypatch.setattr(engine.Engine, "score", lambda self, items: (state("score"), score(self, items))[1])
    before = (hf_logging.is_progress_bar_enabled(), not hub_utils.are_progress_bars_disabled(),
              hf_datasets.is_progress_bar_enabled())
    assert before == (True, True, True)
    code, out, err = cli("evaluate", "--dataset", folder, "--config", "pairs", "--model", tiny_clip_path, "--bootstrap",
                         0, "--cache-dir", "none", "--out", tmp_path / "o", "--no-progress")
    assert code == 0, err
    assert [s[0] for s in seen] == ["load", "score"] and all(s[1:] == (False, False, False) for s in seen), seen
    assert (hf_logging.is_progress_bar_enabled(), not hub_utils.are_progress_bars_disabled(),
            hf_datasets.is_progress_bar_enabled()) == before


# ---- no silent zeros (issue 25): a split whose every item tied is N/A, with the reason ----------------

@pytest.mark.slow
def test_an_all_tied_split_is_na_with_its_reason_in_the_table_csv_json_and_report(tmp_path, capsys, cli):
    from helpers_ties import LIMIT, tie_folder, truncating_mini_clip

    folder, model = tie_folder(tmp_path / "data"), truncating_mini_clip(tmp_path / "models")
    out_dir = tmp_path / "run"
    code, out, err = cli("evaluate", "--dataset", folder, "--model", model, "--bootstrap", 20, "--num-workers", 0,
                         "--cache-dir", "none", "--out", out_dir, "--no-progress")
    assert code == 0, err
    reason = f"6/6 items tied: texts identical after truncation to {LIMIT} tokens"
    table = {line.split()[0]: line for line in out.splitlines() if line.startswith("ties/")}
    assert f"N/A ({reason})" in table["ties/collapsed/test"]
    assert "0.0" not in table["ties/collapsed/test"]  # no number computed over nothing but ties
    # the summary under the table says it too, never "acc_r 0.0"
    summary_line = next(line for line in out.splitlines() if line.strip().startswith("collapsed/test"))
    assert f"N/A ({reason})" in summary_line and "0.0" not in summary_line
    # only some items collapsed: the numbers stay (a tie counts as wrong), with a one-line warning
    assert "N/A" not in table["ties/partly/test"]
    warning = [line for line in out.splitlines() if line.startswith("warning: ties/partly/test")]
    assert len(warning) == 1 and f"3/6 items have texts identical after the model's truncation to {LIMIT} tokens" \
        in warning[0] and "ties=strict" in warning[0]
    doc = json.loads((out_dir / "results.json").read_text())
    by = {r["config"]: r for r in doc["results"]}
    collapsed, partly = by["collapsed"], by["partly"]
    assert collapsed["metrics"]["acc_r"] is None and collapsed["metrics"]["na_reason"] == reason
    assert collapsed["metrics"]["n_ties"] == 6 and collapsed["metrics"]["chance"]["acc_r"] == 0.5
    assert collapsed["metrics"]["per_tag"]["kind=even"]["acc_r"] is None  # its tags too
    assert collapsed["data"]["truncation"] == {"tied_items": 6, "collapsed_items": 6, "text_max_length": LIMIT}
    assert partly["metrics"]["acc_r"] is not None and partly["metrics"]["acc_r"] <= 0.5 and "na_reason" not in \
        partly["metrics"] and partly["data"]["truncation"]["collapsed_items"] == 3
    assert doc["summary"]["ties"]["rows"][0]["na_reason"] == reason
    csv_rows = list(__import__("csv").DictReader((out_dir / "results.csv").open()))
    acc = next(r for r in csv_rows if r["config"] == "collapsed" and r["metric"] == "acc_r" and not r["tag"])
    assert acc["value"] == "" and acc["ci_low"] == "" and acc["na_reason"] == reason
    acc = next(r for r in csv_rows if r["config"] == "partly" and r["metric"] == "acc_r" and not r["tag"])
    assert acc["value"] != "" and acc["na_reason"] == ""
    # vlprobe report: the long table (and the summary table) print the reason, not 0.0
    report_dir = tmp_path / "report"
    assert main(["report", str(out_dir / "results.json"), "--out", str(report_dir)]) == 0
    md = (report_dir / "report.md").read_text()
    row = next(line for line in md.splitlines() if line.startswith("| collapsed | test | acc_r"))
    assert f"N/A ({reason})" in row and "| 0.0" not in row
    capsys.readouterr()


def test_a_constant_scorer_gets_na_without_a_truncation_cause():
    from vlprobe.evaluation.tied_metrics import all_tied, comparison_ties, mark_ties
    from vlprobe.metric import compute
    from vlprobe.results import ScoredItem, ScoredSplit

    scores = np.zeros((4, 1, 2))
    gold = np.array([[[True, False]]] * 4)
    split = ScoredSplit("d", "c", "test", items=[ScoredItem("i", ("a", "b"), g) for g in gold], scores=list(scores))
    split.metrics = compute(scores, gold, ties="lenient")
    assert split.metrics["acc_r"] == 1.0  # lenient: every tie counted right, a constant scorer gets 100%
    mark_ties(split, comparison_ties(scores, gold), "lenient")
    assert split.metrics["acc_r"] is None and split.metrics["na_reason"] == "4/4 items tied"
    # a 2 x 2 item whose texts tie but whose images differ is not all tied: its image score is real
    S = np.array([[[1.0, 1.0], [2.0, 2.0]]])
    assert not all_tied(comparison_ties(S, np.eye(2, dtype=bool)[None])).any()
    assert all_tied(comparison_ties([np.ones((2, 2))], [np.eye(2, dtype=bool)])).all()
