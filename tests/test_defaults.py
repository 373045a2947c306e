"""The options a new user leaves out, run as they are: the score cache's default folder
($VLPROBE_CACHE, else ~/.cache/vlprobe under a stand-in HOME), the default output folder of a
named dataset, and the report's default output folder. Each runs twice where a second run is
meant to reuse the first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import computed

import vlprobe
from vlprobe.cli import main

FOLDER_ROWS = 6  # the rows of conftest's synthetic folder here


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A stand-in HOME with no VLPROBE_CACHE / XDG_CACHE_HOME: the documented last default."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("VLPROBE_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    return home


def _evaluate_results(cli, folder, model, out) -> tuple[dict, str]:
    code, printed, err = cli("evaluate", "--dataset", folder, "--model", model, "--bootstrap", "0", "--num-workers", "0",
                             "--out", out, "--no-progress")
    assert code == 0, err
    return json.loads((Path(out) / "results.json").read_text()), printed


@pytest.mark.slow
def test_cli_second_run_with_no_cache_option_computes_nothing(folder, tiny_clip_path, tmp_path, home, cli):
    first, _ = _evaluate_results(cli, folder, tiny_clip_path, tmp_path / "a")
    default = home / ".cache" / "vlprobe"
    assert first["provenance"]["engine"]["cache_dir"] is not None
    assert Path(first["provenance"]["engine"]["cache_dir"]).parent == default
    assert computed(first["provenance"]["engine"]) > 0
    second, printed = _evaluate_results(cli, folder, tiny_clip_path, tmp_path / "b")
    assert computed(second["provenance"]["engine"]) == 0 and second["provenance"]["engine"]["cached"] > 0
    assert " 0 inputs computed" in printed and str(default) in printed
    assert [r["metrics"] for r in second["results"]] == [r["metrics"] for r in first["results"]]


@pytest.mark.slow
def test_cli_uses_vlprobe_cache_when_set(folder, tiny_clip_path, tmp_path, home, monkeypatch, cli):
    monkeypatch.setenv("VLPROBE_CACHE", str(tmp_path / "vc"))
    first, _ = _evaluate_results(cli, folder, tiny_clip_path, tmp_path / "a")
    assert Path(first["provenance"]["engine"]["cache_dir"]).parent == tmp_path / "vc"
    second, _ = _evaluate_results(cli, folder, tiny_clip_path, tmp_path / "b")
    assert computed(second["provenance"]["engine"]) == 0
    assert not (home / ".cache" / "vlprobe").exists() or not any((home / ".cache" / "vlprobe").glob("*/part-*"))


def test_api_second_run_with_no_cache_option_computes_nothing(folder, tiny_clip_path, home):
    kw = dict(model=str(tiny_clip_path), datasets=str(folder), bootstrap=0, num_workers=0, progress=False)
    first = vlprobe.evaluate(**kw)
    assert Path(first.provenance["engine"]["cache_dir"]).parent == home / ".cache" / "vlprobe"
    second = vlprobe.evaluate(**kw)
    assert computed(second.results["provenance"]["engine"]) == 0 and second.provenance["engine"]["cached"] > 0


def test_api_uses_vlprobe_cache_when_set(folder, tiny_clip_path, tmp_path, home, monkeypatch):
    monkeypatch.setenv("VLPROBE_CACHE", str(tmp_path / "vc"))
    kw = dict(model=str(tiny_clip_path), datasets=str(folder), configs="pairs", bootstrap=0, num_workers=0,
              progress=False)
    vlprobe.evaluate(**kw)
    second = vlprobe.evaluate(**kw)
    assert Path(second.provenance["engine"]["cache_dir"]).parent == tmp_path / "vc"
    assert computed(second.results["provenance"]["engine"]) == 0


@pytest.mark.slow
def test_cache_can_still_be_turned_off(folder, tiny_clip_path, home):
    kw = dict(model=str(tiny_clip_path), datasets=str(folder), configs="pairs", bootstrap=0, num_workers=0,
              progress=False)
    for off in ("none", "None", False):
        res = vlprobe.evaluate(cache_dir=off, **kw)
        assert res.provenance["engine"]["cache_dir"] is None and computed(res.results["provenance"]["engine"]) > 0
    assert not (home / ".cache" / "vlprobe").exists() or not any((home / ".cache" / "vlprobe").glob("*/part-*"))


def test_default_out_folder_of_a_named_dataset(folder, tiny_clip_path, tmp_path, home, monkeypatch, capsys):
    """--out left out: runs/<benchmark>-<model> under the working directory."""
    monkeypatch.chdir(tmp_path)
    code = main(["evaluate", "--dataset", str(folder), "--config", "pairs", "--model", str(tiny_clip_path),
                 "--bootstrap", "0", "--num-workers", "0", "--no-progress"])
    out, err = capsys.readouterr()
    assert code == 0, err
    expected = tmp_path / "runs" / f"synthetic-{Path(tiny_clip_path).name}"
    assert (expected / "results.json").is_file() and f"runs/synthetic-{Path(tiny_clip_path).name}" in out


def test_report_default_out_folder(folder, tiny_clip_path, tmp_path, home, monkeypatch, capsys):
    """`vlprobe report RUN` with no --out writes runs/report under the working directory."""
    run = tmp_path / "run"
    vlprobe.evaluate(model=str(tiny_clip_path), datasets=str(folder), configs="pairs", bootstrap=0, num_workers=0,
                     progress=False, out=run)
    monkeypatch.chdir(tmp_path)
    code = main(["report", str(run)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert (tmp_path / "runs" / "report" / "report.md").is_file()


@pytest.mark.slow
def test_cli_with_only_dataset_model_and_out_runs_every_default(folder, tiny_clip_path, tmp_path, home, capsys):
    """Every other option left out, progress on: each config's test split, 1,000 bootstrap
    resamples at 95%, strict ties, seed 0, the default workers and the default cache, recorded as
    such; a second run computes nothing and gives the same numbers, CIs included."""
    from vlprobe.runner import default_workers

    docs = []
    for out in ("a", "b"):
        code = main(["evaluate", "--dataset", str(folder), "--model", str(tiny_clip_path), "--out",
                     str(tmp_path / out)])
        printed, err = capsys.readouterr()
        assert code == 0, err
        assert "Loading weights" in err and "scored in" in printed  # progress left on
        docs.append(json.loads((tmp_path / out / "results.json").read_text()))
    first, second = docs
    settings = first["provenance"]["settings"]
    assert settings == {**settings, "ties": "authors", "bootstrap": 1000, "confidence": 0.95, "seed": 0,
                        "config": "all", "split": None, "limit": None, "control": None, "modality": "image",
                        "num_workers": default_workers(), "exact_preprocessing": False}
    assert sorted((r["config"], r["split"]) for r in first["results"]) == [("pairs", "test"), ("swap", "test")]
    assert Path(first["provenance"]["engine"]["cache_dir"]).parent == home / ".cache" / "vlprobe"
    assert computed(first["provenance"]["engine"]) > 0 and computed(second["provenance"]["engine"]) == 0
    assert [r["metrics"] for r in second["results"]] == [r["metrics"] for r in first["results"]]
    assert any(r["metrics"].get("ci") for r in first["results"])  # the default bootstrap ran
