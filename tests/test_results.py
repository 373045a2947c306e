"""results.json's declared shape (vlprobe/results/): the published JSON Schema is generated from the records, files
of every older format still open (through the one upgrade function), a bad file is one line naming the field, and
a run's outputs travel: names not paths, the same bytes from another place."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

import vlprobe
from vlprobe.cli import main
from vlprobe.errors import ArgumentError
from vlprobe.results import ResultsError, read_results
from vlprobe.results.schema import EvaluationDocument, ProbeDocument, dump, json_schema
from vlprobe.results.upgrade import upgrade

ROOT = Path(__file__).resolve().parents[1]
LEGACY = ROOT / "tests" / "data" / "results_8764aac"  # written by vlprobe at 8764aac (format vlprobe-results/2)


def test_the_published_schema_is_the_records(capsys):
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(json_schema())
    published = json.loads((ROOT / "docs" / "results.schema.json").read_text(encoding="utf-8"))
    assert published == json_schema(), "docs/results.schema.json is stale: rerun `vlprobe schema --out ...`"
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out) == published


@pytest.mark.parametrize("name, kind, n", [("evaluate_winoground_style", "evaluate", 1),
                                           ("evaluate_travlr_lenient", "evaluate", 2), ("probe_travlr", "probe", 40)])
def test_results_from_8764aac_still_open(tmp_path, results_json_follows_its_schema, name, kind, n):
    """A results.json main wrote at 8764aac opens as records, is valid under the schema once upgraded, reads back
    to the same records, and makes a report; an evaluate run opens in the Space's Results tab."""
    run = tmp_path / name
    run.mkdir()
    shutil.copy(LEGACY / f"{name}.json", run / "results.json")
    doc = read_results(run)
    assert doc.kind == kind and len(doc.results if kind == "evaluate" else doc.rows) == n
    results_json_follows_its_schema.validate(dump(doc))
    assert read_results(_written(tmp_path / "again.json", dump(doc))) == doc
    assert main(["report", str(run), "--out", str(tmp_path / "report")]) == 0
    md = (tmp_path / "report" / "report.md").read_text()
    if kind == "evaluate":
        from vlprobe.demo.results import compare_results

        out = compare_results([str(run / "results.json")], include_papers=True)
        assert out.rows and out.points and all(p.value >= 0 for p in out.points)
    if name == "evaluate_travlr_lenient":  # recorded under --ties lenient: the strict figure beside each value
        assert doc.results[0].authors_rule.ties == "strict" and "(strict: 25.0)" in md
    if kind == "probe":
        assert doc.provenance.dataset.benchmark == "travlr" and "TraVLR's published Table 2" in md


def _written(path: Path, doc: dict) -> Path:
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_a_format_1_file_reads_its_benchmark_from_the_dataset_name(tmp_path):
    old = json.loads((LEGACY / "evaluate_travlr_lenient.json").read_text())
    for e in old["results"]:
        e["benchmark"], e["dataset"] = "travlr", "./travlr"  # format 1: the benchmark was the dataset's name
    old["format"] = "vlprobe-results/1"
    doc = read_results(_written(tmp_path / "results.json", old))
    assert [e.benchmark for e in doc.results] == ["travlr", "travlr"]
    assert "read as travlr by its name" in doc.results[0].data.benchmark_note
    # an older file's stored summary is not read: the readers compute it by the current rules
    assert doc.summary == {} and "summary" in old


@pytest.mark.parametrize("doc, said", [
    ({"hello": 1}, "not a vlprobe results.json (no 'results' list)"),
    ([1, 2], "not a vlprobe results.json (a JSON list, not an object)"),
    ({"format": "vlprobe-results/9", "results": []}, "format: 'vlprobe-results/9' is not a vlprobe-results format"),
    ({"format": "vlprobe-results/3", "kind": "evaluate", "results": []}, "missing 'provenance'"),
])
def test_a_foreign_file_is_one_line_naming_it(tmp_path, doc, said):
    path = _written(tmp_path / "x.json", doc)
    with pytest.raises(ResultsError) as err:
        read_results(path)
    assert str(err.value).startswith(f"{path}: ") and said in str(err.value) and "\n" not in str(err.value)


def test_upgrade_is_the_current_format_unchanged():
    current = dump(read_results(LEGACY / "probe_travlr.json"))
    assert upgrade(current) is current and current["format"] == "vlprobe-results/3" and current["kind"] == "probe"


def test_save_and_write_report_name_a_bad_folder(tmp_path):
    """vlprobe.write_report(out=3), Evaluation.save(3), ProbeResult.save(3): one line naming the argument."""
    from vlprobe.report import write_report

    with pytest.raises(ArgumentError, match=r"^out=3: must be a folder's path \(a str or os.PathLike\), not int$"):
        vlprobe.Evaluation([], {}, None).save(3)
    with pytest.raises(ArgumentError, match=r"^out=None: must be a folder's path"):
        vlprobe.ProbeResult([], {}).save(None)
    with pytest.raises(ArgumentError, match=r"^out=3: must be a folder's path"):
        write_report([LEGACY / "probe_travlr.json"], out=3)
    with pytest.raises(ArgumentError, match=r"^paths=\[3\]: must be results.json files or run folders"):
        write_report([3], tmp_path / "r")
    # one path given as a path, not a list, is one run
    written = write_report(LEGACY / "probe_travlr.json", tmp_path / "r")
    assert [p.name for p in written] == ["report.md", "report.html", "report.tex"]


def test_the_provenance_says_which_vlprobe(monkeypatch, tmp_path):
    """From a clone: vlprobe's version and its git commit; installed from a wheel (no .git beside it): none."""
    from vlprobe.results import io

    env = io.environment()
    assert env["packages"]["vlprobe"] == vlprobe.__version__
    if (ROOT / ".git").exists():
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
        assert env["vlprobe_commit"] == head.strip() and len(env["vlprobe_commit"]) == 40
    monkeypatch.setattr(io, "__file__", str(tmp_path / "site-packages" / "vlprobe" / "results" / "io.py"))
    assert io.vlprobe_commit() is None


@pytest.mark.slow
def test_outputs_travel(folder, tiny_clip_path, tmp_path):
    """The same dataset and model from two places give the same files, but for the provenance, which says where
    they were read from (once): entries, scores.parquet, the CSVs and the plots name the dataset and the model."""
    runs = []
    for place in ("a", "b/c"):
        data, model = tmp_path / place / "synthetic", tmp_path / place / "mini"
        shutil.copytree(folder, data)
        shutil.copytree(tiny_clip_path, model)
        res = vlprobe.evaluate(model=str(model), datasets=str(data), bootstrap=20, cache_dir="none", progress=False,
                               num_workers=0, out=str(tmp_path / place / "run"))
        runs.append((tmp_path / place / "run", data, res))
    (one, data_a, res_a), (two, data_b, _) = runs
    doc = json.loads((one / "results.json").read_text())
    assert {e["dataset"] for e in doc["results"]} == {"synthetic"}
    assert str(data_a) not in json.dumps({k: v for k, v in doc.items() if k != "provenance"})
    assert doc["provenance"]["datasets"] == [{"name": "synthetic", "dataset": str(data_a), "revision": None}]
    assert set(res_a.scores()["dataset"]) == {"synthetic"}
    other = json.loads((two / "results.json").read_text())
    assert {k: v for k, v in doc.items() if k != "provenance"} == {k: v for k, v in other.items() if k != "provenance"}
    files = sorted(p.name for p in one.iterdir() if p.name != "results.json" and not p.name.startswith("."))
    assert "results_wide.csv" in files and any(f.endswith(".png") for f in files)
    for name in files:
        assert (one / name).read_bytes() == (two / name).read_bytes(), name
    assert isinstance(read_results(one), EvaluationDocument) and not isinstance(read_results(one), ProbeDocument)


def test_the_readers_take_records_not_keys():
    """The summary, the report, the Space's Results tab and the run results read records: the string-key lookups
    scripts/count_key_lookups.py counts stay at the few left there (a metric by name, a pyarrow column, the
    probe's mean and sd over seeds), not the hundreds of a dict-shaped results.json (issue 44)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("count_key_lookups", ROOT / "scripts" / "count_key_lookups.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    counts = module.per_file(ROOT)
    readers = {f: n for f, n in counts.items() if f.startswith(("vlprobe/report/", "vlprobe/results/"))
               and f != "vlprobe/results/published.py"  # reads its own CSV tables, not results.json
               or f in ("vlprobe/demo/results.py", "vlprobe/evaluation/result.py", "vlprobe/probing/result.py")}
    assert sum(readers.values()) <= 35, {f: n for f, n in readers.items() if n}
    assert "vlprobe/results/schema.py" not in counts and sum(counts.values()) < 1179  # 1,179 at 8764aac
