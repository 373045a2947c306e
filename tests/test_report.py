"""`vlprobe report`: runs compared in Markdown and HTML with a plot, the papers' numbers beside
this run where benchmark, config and metric match."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from vlprobe.cli import main
from vlprobe.items import Item
from vlprobe.metric import compute
from vlprobe.report import load_runs, paper_results
from vlprobe.results import Unit, write_results_json


def _unit(dataset: str, config: str, shape: str, seed: int, n: int = 30) -> Unit:
    rng = np.random.default_rng(seed)
    gold = {"valse": [[1, 0]], "wino": [[1, 0], [0, 1]], "bla": [[1, 1, 0, 0]]}[shape]
    items = [Item(id=str(i), images=tuple([b"x"] * len(gold)), texts=tuple(f"t{j}" for j in range(len(gold[0]))),
                  gold=gold, config=config, tags=(f"kind={'ab'[i % 2]}",)) for i in range(n)]
    scores = [rng.normal(size=it.shape) for it in items]
    metrics = compute(scores, [it.gold for it in items], bootstrap=30, seed=0, tags=[list(it.tags) for it in items])
    return Unit(dataset=dataset, config=config, split="test", items=items, scores=scores, metrics=metrics)


def _write(path: Path, model: str, units: list[Unit], **settings) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    prov = {"model": {"model_id": model, "family": "dual", "dtype": "float32", "device": "cpu", "revision": None},
            "settings": {"ties": "strict", **settings}, "created": "2026-01-01T00:00:00Z"}
    write_results_json(path / "results.json", units, prov)
    return path / "results.json"


def test_paper_data_ships_with_the_package():
    rows = paper_results()
    assert len(rows) == 439
    clip = {(r["config"], r["metric"]): r["value"] for r in rows if r["benchmark"] == "winoground" and r["model"] == "CLIP (ViT-B/32)"}
    assert clip == {("winoground", "text"): 30.75, ("winoground", "image"): 10.5, ("winoground", "group"): 8.0}


def test_report_compares_runs_beside_the_papers(tmp_path, capsys):
    a = _write(tmp_path / "a", "org/model-a", [_unit("valse", "existence", "valse", 0),
                                                _unit("facebook/winoground", "default", "wino", 1),
                                                _unit("bla", "active_passive", "bla", 2),
                                                _unit("winoground_style", "swap", "wino", 3)])
    b = _write(tmp_path / "b", "org/model-b", [_unit("valse", "existence", "valse", 4)], limit=10)
    out = tmp_path / "report"
    assert main(["report", str(a), str(b.parent), "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "report.md", "report.png"]
    md = (out / "report.md").read_text()
    page = (out / "report.html").read_text()
    # both runs, their values, and the limit caveat
    assert "model-a" in md and "model-b" in md and "first 10 rows" in md
    assert "## valse" in md and "## winoground_style" in md
    # VALSE Table 2 acc_r beside this run
    assert "existence acc_r" in md and "| CLIP | paper, Table 2 |" in md
    clip_existence = next(r["value"] for r in paper_results() if r["benchmark"] == "valse" and r["table"] == "Table 2"
                          and r["model"] == "CLIP" and r["metric"] == "acc_r" and r["config"] == "existence")
    assert f"{clip_existence:.1f}" in md
    # Winoground's `default` config matched to the paper's; 30.8 is CLIP's text score, rounded
    assert "winoground group" in md and "CLIP (ViT-B/32)" in md and "30.8" in md
    # BLA with its caveat; the synthetic winoground_style gets no paper table
    assert "thesis version of the data" in md and "active_passive set_acc" in md
    assert "### winoground_style: this run beside" not in md
    assert "### valse: per tag" in md and "| existence | test | kind=a | acc_r |" in md
    assert "<table>" in page and 'class="paper"' in page and "report.png" in page
    doc = json.loads(a.read_text())
    acc = doc["results"][0]["metrics"]["acc_r"]
    assert f"{100 * acc:.1f}" in md


def test_report_errors(tmp_path, capsys):
    assert main(["report", str(tmp_path / "missing.json")]) == 2
    assert "missing.json" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("{\"hello\": 1}")
    assert main(["report", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "not a vlprobe results.json" in capsys.readouterr().err


def test_duplicate_labels_are_made_unique(tmp_path):
    a = _write(tmp_path / "a", "m", [_unit("valse", "existence", "valse", 0)])
    b = _write(tmp_path / "b", "m", [_unit("valse", "existence", "valse", 1)])
    assert [r.label for r in load_runs([a, b])] == ["m", "m #2"]
