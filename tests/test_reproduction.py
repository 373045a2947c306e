"""A run beside the figures published for its checkpoint, end to end and offline: ``vlprobe evaluate --dataset
sugar_crepe --model open_clip:ViT-B-32/openai`` on SugarCREPE built from the real annotation files with stand-in
images, the model a tiny random-weight open_clip ViT registered under that name (``$VLPROBE_OPEN_CLIP_MODELS``). The
printed summary, ``results.json``, ``vlprobe report`` and the runs the Space reads set it beside the SugarCREPE
authors' and the study's figures for ViT-B-32/openai, say why swap_obj's differ (another version of the data, 246
items against 245), and ``vlprobe report --check`` fails it (random weights reproduce nothing)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

open_clip = pytest.importorskip("open_clip", reason="open_clip_torch is not installed (pip install 'vlprobe[open_clip]')")

CONFIGS = ("swap_obj", "swap_att")  # SWAP whole


@pytest.fixture(scope="module")
def sugar_crepe(shared_data: Path, tmp_path_factory) -> Path:
    """SugarCREPE's ``CONFIGS``, built from the pinned files with a stand-in JPEG per COCO image."""
    from helpers import jpeg
    from helpers_data import run_build

    from vlprobe.builders import sugar_crepe as builder

    root = tmp_path_factory.mktemp("sugar_crepe")
    names = {r["filename"] for c in CONFIGS
             for r in json.loads((shared_data / "sugar_crepe" / f"{c}.json").read_text()).values()}
    (root / "images" / "val2017").mkdir(parents=True)
    for name in names:
        (root / "images" / "val2017" / name).write_bytes(jpeg(name, size=(40, 32)))
    run_build(builder.SugarCrepe(), "--annotations", shared_data / "sugar_crepe", "--images", root / "images",
              "--configs", ",".join(CONFIGS), "--out", root / "work" / "sugar_crepe")
    return root / "work"


@pytest.mark.slow
@pytest.mark.shared_data
def test_evaluate_sugar_crepe_beside_the_published_figures(sugar_crepe, tmp_path, monkeypatch, capsys):
    from test_open_clip import build

    from vlprobe.cli import main
    from vlprobe.demo.results import load_runs
    from vlprobe.scorers import open_clip as family

    build("vit", tmp_path / "models" / "ViT-B-32" / "openai")
    monkeypatch.setenv(family.MODELS_ENV, str(tmp_path / "models"))
    monkeypatch.chdir(sugar_crepe)
    run = tmp_path / "run"
    assert main(["evaluate", "--dataset", "sugar_crepe", "--model", "open_clip:ViT-B-32/openai", "--bootstrap", "0",
                 "--no-progress", "--cache-dir", "none", "--out", str(run)]) == 0
    printed = capsys.readouterr().out
    doc = json.loads((run / "results.json").read_text())
    assert {e["config"]: e["dataset_version"] for e in doc["results"]} == {"all": "546eb51"}  # the folder's record
    block = doc["summary"]["sugar_crepe"]
    published = {(p["source"], p["config"]): p for p in block["published"]}
    authors, study = "SugarCREPE authors (sugar-crepe#3)", "the study (Oh et al. 2024)"
    # each source: the two subsets and their aggregate, SWAP
    assert set(published) == {(s, c) for s in (authors, study) for c in (*CONFIGS, "swap")}
    rows = {r["config"]: r for r in block["rows"]}
    for (source, config), p in published.items():
        assert p["ours"] == rows[config]["values"]["acc_r"] and p["metric"] == "acc_r"
    assert published[(authors, "swap_obj")]["value"] == pytest.approx(0.6138)
    assert published[(study, "swap_obj")]["value"] == pytest.approx(150 / 245)
    assert published[(authors, "swap_obj")]["note"].startswith(
        "measured on the 6e45274 version of the data, not 546eb51 (246 items against 245)")
    assert published[(study, "swap_obj")]["dataset_version"] == "546eb51"
    assert "6e45274" not in published[(study, "swap_obj")].get("note", "")
    # SWAP: the source's swap_obj and swap_att weighted by their own items, as the benchmark declares it
    assert published[(authors, "swap")]["value"] == pytest.approx((0.6138 * 246 + 0.6396 * 666) / 912)
    assert "swap_obj: 246 items against 245" in published[(authors, "swap")]["note"]
    assert any(n.startswith("beside the figures published for checkpoint ViT-B-32/openai") for n in block["notes"])
    # the printed summary: one line per figure with the run's and the difference
    said = [line for line in printed.splitlines() if "(sugar-crepe#3)" in line and " swap_obj " in line]
    ours = rows["swap_obj"]["values"]["acc_r"]
    assert len(said) == 1 and f"{100 * ours:.2f}" in said[0] and f"{100 * (ours - 0.6138):+.2f}" in said[0], printed
    assert "246 items against 245" in said[0]
    # vlprobe report: the same rows, in a table of their own
    assert main(["report", str(run), "--out", str(tmp_path / "report")]) == 0
    md = (tmp_path / "report" / "report.md").read_text()
    assert "### sugar_crepe: beside the figures published for the run's checkpoint" in md
    assert f"| ViT-B-32/openai | {authors} | swap_obj | acc_r | 61.38 | {100 * ours:.2f} |" in md  # labelled by checkpoint
    # the Space's Results tab reads the same records
    space = load_runs([str(run / "results.json")])[0].summary["sugar_crepe"].published
    assert {(p.source, p.config) for p in space} == set(published)
    # random weights reproduce nothing: --check fails, naming the figures off
    capsys.readouterr()
    assert main(["report", str(run), "--check"]) == 1
    out = capsys.readouterr().out
    assert "off by" in out and f"{authors} 61.38" in out and out.strip().splitlines()[-1].endswith("off")


@pytest.fixture(scope="module")
def travlr(tmp_path_factory) -> Path:
    from vlprobe.cli import main

    out = tmp_path_factory.mktemp("travlr") / "travlr"
    assert main(["build", "travlr", "--out", str(out), "--size", "tiny", "--configs", "spatiality",
                 "--split-sizes", "train=8,validation=4,test_ind=4,test_ood=4"]) in (0, None)
    return out


@pytest.mark.slow
def test_runs_record_the_version_of_the_data(travlr, tiny_clip_path, tmp_path):
    """evaluate's entries and a probe's dataset record the version of the benchmark's data the folder was built from
    (its vlprobe.yaml's data_version, written by the builder); a folder that records another one is that one."""
    import vlprobe
    from vlprobe.benchmarks import get

    assert "data_version: vlprobe\n" in (travlr / "vlprobe.yaml").read_text() and get("travlr").data_version == "vlprobe"
    run = vlprobe.probe(tiny_clip_path, str(travlr), "spatiality", train_sizes=[4], bootstrap=0, progress=False,
                        cache_dir="none")
    assert run.document.provenance.dataset.dataset_version == "vlprobe"
    other = tmp_path / "travlr"
    shutil.copytree(travlr, other)
    spec = other / "vlprobe.yaml"
    spec.write_text(spec.read_text().replace("data_version: vlprobe\n", "data_version: 'abc1234'\n"))
    res = vlprobe.evaluate(model=tiny_clip_path, datasets=[str(travlr), str(other)], configs="spatiality",
                           splits="test_ood", bootstrap=0, progress=False, cache_dir="none")
    assert [e.dataset_version for e in res.entries] == ["vlprobe", "abc1234"]
