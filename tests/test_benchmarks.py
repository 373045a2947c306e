"""vlprobe/benchmarks/: one module per benchmark, found by the registry; builders, the summary, the report
and the Space read them and name no benchmark; a dataset folder is the benchmark it records, whatever it
is called; a run that departs from the authors' setting says so, with the authors'-rule figure beside."""

from __future__ import annotations

import ast
import json
import re
import shutil
from pathlib import Path

import datasets
import numpy as np
import pyarrow.parquet as pq
import pytest
from helpers import png

import vlprobe
from vlprobe import metric
from vlprobe.benchmarks import METRIC_ORDER, Benchmark, BenchmarkError, Group, benchmarks, get
from vlprobe.benchmarks.valse import INSTRUMENTS
from vlprobe.builders import builders
from vlprobe.dataset.folder import ConfigDecl, card_metadata, write_card, write_spec, write_split
from vlprobe.results.summary import summarize

PACKAGE = Path(vlprobe.__file__).resolve().parent
NAMES = r"valse|bla|travlr|winoground|sugar_crepe|cola|crepe|vl_checklist"


# ---- the registry ------------------------------------------------------------------------------------

def test_every_benchmark_module_defines_its_benchmark():
    found = benchmarks()
    modules = sorted(p.stem for p in (PACKAGE / "benchmarks").glob("*.py") if p.stem not in ("__init__", "base"))
    assert sorted(found) == modules  # the registry is the folder: nothing hand-listed
    for name, bench in found.items():
        assert bench.name == name and bench.title
        if bench.builder:  # its builder exists and builds it
            assert bench.builder in builders(), name
        if bench.upstream is not None:
            assert bench.builder and bench.upstream.files, name
        for group in bench.groups:
            assert set(group.members) <= set(bench.configs) | {g.name for g in bench.groups}, (name, group.name)
    with pytest.raises(BenchmarkError, match="unknown benchmark 'valse_ds'; the benchmarks vlprobe knows: bla, "):
        get("valse_ds")


def test_each_committed_card_folder_records_its_benchmark(repo_root: Path):
    from vlprobe.dataset.spec import ItemSpec

    for bench in benchmarks().values():
        if bench.builder:
            # travlr's true_false.yaml too; not the .huggingface.yaml a local build writes beside them
            for spec in sorted(p for p in (repo_root / bench.builder).glob("*.yaml") if not p.name.startswith(".")):
                assert ItemSpec.from_file(spec).benchmark == bench.name, spec


def test_a_definition_that_contradicts_itself_is_refused():
    with pytest.raises(BenchmarkError, match="unknown metric"):
        Benchmark("x", "X", headline=("accuracy",))
    with pytest.raises(BenchmarkError, match="neither its configs nor groups declared before"):
        Benchmark("x", "X", configs=("a", "b"), groups=(Group("all", "All", ("a", "c")),))
    # a mean of means: a group may average groups declared before it (VL-CheckList's per-source -> overall)
    Benchmark("x", "X", configs=("a", "b", "c"), groups=(Group("ab", "AB", ("a", "b")), Group("all", "All", ("ab", "c"))))


def test_one_list_of_metric_names_in_one_order():
    # the metric module keeps its own (it imports nothing of vlprobe); vlprobe's copy is the same list
    assert METRIC_ORDER == metric.METRIC_KEYS
    assert set(metric.compute([[[0.9, 0.2]]], [[[1, 0]]], probabilities=[[[0.9, 0.2]]])) - {
        "n_items", "n_ties", "chance", "support", "scores"} <= set(METRIC_ORDER)


# ---- the layering --------------------------------------------------------------------------------------

def _code_strings(path: Path) -> list[tuple[int, str]]:
    """Every identifier and string constant of a module that is not a docstring (comments are not in the AST)."""
    tree = ast.parse(path.read_text())
    docstrings = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            docstrings.add(id(body[0].value))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            out.append((node.lineno, node.value))
        elif isinstance(node, ast.Name):
            out.append((node.lineno, node.id))
        elif isinstance(node, ast.Attribute):
            out.append((node.lineno, node.attr))
    return out


def test_summary_report_and_space_name_no_benchmark():
    """The issue's check: no benchmark name in the code of summary.py, report/ and demo/ (docstrings aside)."""
    files = [PACKAGE / "results" / "summary.py", *sorted((PACKAGE / "report").glob("*.py")),
             *sorted((PACKAGE / "demo").glob("*.py"))]
    found = [f"{p.relative_to(PACKAGE)}:{line}: {text!r}" for p in files for line, text in _code_strings(p)
             if re.search(rf"\b({NAMES})(_pp|_style)?\b", text) and not re.fullmatch(r"black", text)]
    assert found == []


def _imports(path: Path) -> list[str]:
    """The modules a module imports (at its top or inside a function), as written: ``.x``, ``..y.z``, ``a.b``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            base = "." * node.level + (node.module or "")
            out += [f"{base}.{a.name}" if node.module else f"{base}{a.name}" for a in node.names] + [base]
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names]
    return out


def test_no_builder_imports_another_builder():
    names = set(builders())
    for path in sorted((PACKAGE / "builders").glob("*.py")):
        others = {m.split(".")[1] for m in _imports(path) if m.startswith(".") and not m.startswith("..")
                  and len(m.split(".")) > 1} & (names - {path.stem})
        assert not others, f"builders/{path.name} imports builder(s) {sorted(others)}"


# ---- a folder is the benchmark it records ----------------------------------------------------------------

SPEC = "id: id\nimages: [image]\ntexts: [caption, foil]\ngold: [[1, 0]]\ntags: [instrument]\n"


def _valse_like(folder: Path, benchmark: str | None) -> Path:
    """A folder of VALSE's shape: config ``all``, two items per instrument tagged instrument=<name>;
    its vlprobe.yaml records ``benchmark`` (None: as a folder built before vlprobe recorded it)."""
    feats = datasets.Features({k: datasets.Value("string") for k in ("id", "caption", "foil", "instrument")}
                              | {"image": datasets.Image()})
    n = 2 * len(INSTRUMENTS)
    images = [png((30 * i % 256, 100, 200 - 15 * i % 256), (16, 16)) for i in range(n)]
    rows = {"id": [f"r{i}" for i in range(n)], "image": [{"bytes": b, "path": None} for b in images],
            "caption": [f"a shape number {i}" for i in range(n)], "foil": [f"no shape at all {i % 5}" for i in range(n)],
            "instrument": [INSTRUMENTS[i % len(INSTRUMENTS)] for i in range(n)]}
    write_card(folder, card_metadata([ConfigDecl("all", feats, default=True)], license="cc0-1.0", pretty_name="v"), "# v")
    write_split(folder, "all", "test", datasets.Dataset.from_dict(rows, features=feats))
    write_spec(folder, SPEC, benchmark)
    return folder


def _evaluate_folder(model: Path, folder: Path, **kw):
    return vlprobe.evaluate(model=str(model), datasets=[str(folder)], bootstrap=0, progress=False, cache_dir="none", **kw)


def test_a_folder_is_the_benchmark_it_records_whatever_it_is_called(tiny_clip_path: Path, tmp_path: Path):
    built = _valse_like(tmp_path / "x" / "valse_ds", "valse")
    res = _evaluate_folder(tiny_clip_path, built)
    block = res.summary["valse"]  # VALSE's tables, not "valse_ds/all"
    assert block.benchmark == "valse" and block.source.startswith("VALSE") and block.complete
    rows = {r.config: r for r in block.rows}
    assert list(rows) == [*INSTRUMENTS, "avg"] and rows["existence"].part == "existence"
    per_tag = res.splits[0].metrics["per_tag"]
    assert rows["avg"].values["acc_r"] == pytest.approx(np.mean([per_tag[f"instrument={i}"]["acc_r"] for i in INSTRUMENTS]))
    assert res.results["results"][0]["benchmark"] == "valse" and res.results["format"] == "vlprobe-results/3"
    assert "valse: the paper's aggregates (VALSE" in res.table() and "valse_ds/all/test" in res.table()
    # renamed: the same tables, the same numbers
    renamed = tmp_path / "y" / "anything"
    shutil.move(str(built), renamed)
    again = _evaluate_folder(tiny_clip_path, renamed)
    assert again.summary == res.summary
    # `vlprobe report` puts it beside the paper's VALSE numbers
    again.save(tmp_path / "run")
    from vlprobe.report import write_report

    write_report([tmp_path / "run"], tmp_path / "report")
    md = (tmp_path / "report" / "report.md").read_text()
    assert "### valse: the paper's aggregates" in md and "| CLIP | paper, Table 2 |" in md


def test_a_folder_of_ones_own_gets_generic_tables_and_an_old_one_says_what_it_assumes(tiny_clip_path: Path,
                                                                                        tmp_path: Path):
    # no benchmark recorded, a name of its own: the user's own dataset, by its item shape
    mine = _evaluate_folder(tiny_clip_path, _valse_like(tmp_path / "mine", None)).summary
    assert list(mine) == ["mine"] and mine["mine"].benchmark is None and mine["mine"].source is None
    assert [r.config for r in mine["mine"].rows] == ["all"] and mine["mine"].headline == ("acc_r",)
    # no benchmark recorded, a committed card folder's name: a folder built before vlprobe recorded it
    old = _evaluate_folder(tiny_clip_path, _valse_like(tmp_path / "valse", None))
    block = old.summary["valse"]
    assert block.benchmark == "valse" and [r.config for r in block.rows][-1] == "avg"
    note = block.notes[0]
    assert "no benchmark recorded in" in note and "taken as valse from the folder's name" in note
    assert "`benchmark: valse`" in note and f"note: {note}" in old.table()
    # a benchmark this vlprobe does not know: refused in one line naming the file
    bad = _valse_like(tmp_path / "bad", None)
    (bad / "vlprobe.yaml").write_text("benchmark: valsee\n" + SPEC)
    with pytest.raises(vlprobe.DatasetError, match=r"vlprobe.yaml: unknown benchmark 'valsee'; the benchmarks"):
        _evaluate_folder(tiny_clip_path, bad)


# ---- a run that departs from the authors' setting says so ------------------------------------------------

def test_a_tie_policy_not_the_authors_shows_their_figure_beside(tmp_path: Path, capsys):
    """SugarCREPE's authors count a tie wrong; --ties lenient counts it right. The printed summary, results.json
    and `vlprobe report` say the run is not under the authors' rule, and give the strict figure, computed from
    the same scores, beside each value; for a run from before that figure was recorded, the report
    recomputes it from the run's scores.parquet."""
    from helpers_ties import tie_folder, truncating_mini_clip

    from vlprobe.cli import main

    folder = tie_folder(tmp_path)  # config `partly`: half of its items' texts are one input to the model
    write_spec(folder, (folder / "vlprobe.yaml").read_text(), "sugar_crepe")
    model = truncating_mini_clip(tmp_path)
    run = tmp_path / "run"
    assert main(["evaluate", "--dataset", str(folder), "--config", "partly", "--model", str(model), "--ties",
                 "lenient", "--bootstrap", "0", "--no-progress", "--cache-dir", "none", "--out", str(run)]) == 0
    out = capsys.readouterr().out
    doc = json.loads((run / "results.json").read_text())
    (entry,) = doc["results"]
    rows = pq.read_table(run / "scores.parquet").to_pylist()
    strict = metric.compute([r["scores"] for r in rows], [r["gold"] for r in rows], ties="strict")["acc_r"]
    lenient = entry["metrics"]["acc_r"]
    assert lenient > strict  # the tied items: right under lenient, wrong under the authors' rule
    assert entry["authors_rule"]["ties"] == "strict"
    assert entry["authors_rule"]["metrics"]["acc_r"] == pytest.approx(strict)
    block = doc["summary"]["sugar_crepe"]
    assert block["tie_policy"] == {"authors": "strict", "rule": get("sugar_crepe").tie_rule.rule, "run": "lenient"}
    assert block["departures"][0]["setting"] == "ties" and block["departures"][0]["authors"] == "strict"
    (row,) = [r for r in block["rows"] if r["config"] == "partly"]
    assert row["values"]["acc_r"] == pytest.approx(lenient) and row["authors"]["acc_r"] == pytest.approx(strict)
    heading = "sugar_crepe: the paper's aggregates (SugarCREPE"
    assert f"{heading}" in out and "NOT the authors' setting: ties lenient (authors: strict)" in out
    pct = f"{100 * lenient:.1f} (strict: {100 * strict:.1f})"
    assert f"acc_r {pct}" in out and "departs from the authors' setting: tie policy lenient" in out
    assert main(["report", str(run), "--out", str(tmp_path / "report")]) == 0
    md = (tmp_path / "report" / "report.md").read_text()
    assert "NOT the authors' setting: mini-clip-8: ties lenient (authors: strict)" in md
    assert f"| partly | test | acc_r | {pct} |" in md
    # a run from before the authors'-rule figure was recorded: the report recomputes it from scores.parquet
    del doc["results"][0]["authors_rule"]
    (run / "results.json").write_text(json.dumps(doc))
    assert main(["report", str(run), "--out", str(tmp_path / "report2")]) == 0
    assert f"| partly | test | acc_r | {pct} |" in (tmp_path / "report2" / "report.md").read_text()


def test_limit_control_and_modality_are_said_too():
    entries = [{"benchmark": "bla", "dataset": "bla", "config": "active_passive", "split": "test", "shape": [1, 4],
                "metrics": {"sentence_acc": 0.6, "set_acc": 0.3, "set_error": 0.1, "n_items": 10}}]
    block = summarize(entries, {"ties": "strict", "limit": 10, "control": "blank"})["bla"]
    assert [d.setting for d in block.departures] == ["control", "limit"]
    assert summarize(entries, {"ties": "strict"})["bla"].departures == ()
    travlr = [{**entries[0], "benchmark": "travlr", "dataset": "travlr", "config": "spatiality", "split": "test_ood",
               "shape": [1, 2], "metrics": {"acc_r": 0.6, "n_items": 10}}]
    assert summarize(travlr, {"ties": "strict", "modality": "caption"})["travlr"].departures == ()  # a paper's setting
    assert summarize(entries, {"ties": "strict", "modality": "caption"})["bla"].departures[0].run == "caption"


# ---- BLA's set criterion under ties, as docs/metric.md states it -----------------------------------------

@pytest.mark.parametrize("scores,strict,lenient,half", [
    # every true caption strictly above every false one: a right set under every policy
    ([0.9, 0.8, 0.5, 0.1], (1.0, 0.0), (1.0, 0.0), (1.0, 0.0)),
    # a true caption tied with a false one at the boundary: strict not right, lenient right; no set error
    ([0.9, 0.5, 0.5, 0.1], (0.0, 0.0), (1.0, 0.0), (0.5, 0.0)),
    # all four tied: strict counts the set wrong and a set error, lenient right and no error
    ([0.5, 0.5, 0.5, 0.5], (0.0, 1.0), (1.0, 0.0), (1 / 6, 1 / 6)),
    # the false captions at or above the true ones, one tie: set error only when strict
    ([0.5, 0.1, 0.9, 0.5], (0.0, 1.0), (0.0, 0.0), (0.0, 0.5)),
])
def test_bla_set_accuracy_and_set_error_under_each_tie_policy(scores, strict, lenient, half):
    for ties, (set_acc, set_error) in (("strict", strict), ("lenient", lenient), ("half", half)):
        r = metric.compute([[scores]], [[[1, 1, 0, 0]]], ties=ties)
        assert (r["set_acc"], r["set_error"]) == pytest.approx((set_acc, set_error)), ties
