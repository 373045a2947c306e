"""The Space never shows a number computed over nothing but ties (issue 25): the Benchmark tab and
the Results tab show "N/A¹" for a split whose every item tied, the reason under the table, and the Benchmark tab's
summary says when only some items' texts collapsed under the model's truncation."""

from __future__ import annotations

import json

import pytest

from vlprobe.demo import benchmark, results
from vlprobe.demo.models import ModelCache
from vlprobe.demo.settings import Settings

pytestmark = pytest.mark.usefixtures("clean_space_env")  # tests/conftest.py


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    from helpers_ties import tie_folder, truncating_mini_clip

    root = tmp_path_factory.mktemp("space_ties")
    return tie_folder(root / "data"), truncating_mini_clip(root / "models")


def test_benchmark_tab_shows_na_with_the_reason_for_an_all_tied_split(inputs, tmp_path):
    from helpers_ties import LIMIT

    folder, model = inputs
    reason = f"6/6 items tied: texts identical after truncation to {LIMIT} tokens"
    out = benchmark.run_benchmark(Settings(tmp_path), str(folder), "collapsed", "test", str(model), 6,
                                  bootstrap=0, cache=ModelCache())
    rows = {r[0]: r for r in out.metrics.rows}
    assert rows["acc_r"][1] == "N/A¹" and out.metrics.notes == [f"¹ {reason}"]  # not "0.0"; the reason under the table
    assert f"N/A ({reason})" in out.summary
    # short cells, each tag's reason said once under the table (the items column counts the items)
    assert {r[0]: r[2] for r in out.tags.rows} == {"kind=even": "N/A¹", "kind=odd": "N/A¹"}
    assert out.tags.notes == [f"¹ every item of the tag tied: texts identical after truncation to {LIMIT} tokens"]
    assert out.result.value("acc_r") is None and out.result.na_reason == reason
    # only some items collapsed: numbers, and the summary names how many tied and why
    out = benchmark.run_benchmark(Settings(tmp_path), str(folder), "partly", "test", str(model), 6,
                                  bootstrap=0, cache=ModelCache())
    rows = {r[0]: r for r in out.metrics.rows}
    assert "N/A" not in rows["acc_r"][1] and float(rows["acc_r"][1]) <= 50.0
    assert f"3/6 items have texts identical after the model's truncation to {LIMIT} tokens" in out.summary


def test_results_tab_shows_na_with_the_reason(inputs, tmp_path):
    from helpers_ties import LIMIT

    import vlprobe

    folder, model = inputs
    run = vlprobe.evaluate(model=str(model), datasets=str(folder), bootstrap=0, progress=False, cache_dir="none",
                           num_workers=0, out=tmp_path / "run")
    assert run.results["results"][0]["metrics"]["na_reason"]
    doc = json.loads((tmp_path / "run" / "results.json").read_text())
    assert doc["results"][0]["metrics"]["acc_r"] is None
    out = results.compare_results([str(tmp_path / "run" / "results.json")], include_papers=False)
    (table,) = out.runs
    k = table.headers.index("acc_r (chance 50.0)")
    row = next(r for r in table.rows if r[0] == "collapsed")
    assert row[k] == "N/A¹" and f"¹ collapsed: 6/6 items tied: texts identical after truncation to {LIMIT} tokens" \
        in table.notes  # a short cell, the reason under the table
    # on the chart: no point at 0 for it, its row says N/A in words
    (point,) = [p for p in out.points if p.config == "collapsed"]
    assert point.value is None
    svg = results.chart_svg(out.chart)
    assert ">N/A<" in svg
    assert not any(line.get_gid() == f"point:{point.source}:{point.benchmark}/collapsed/{point.split}:acc_r"
                   for line in out.chart.axes[0].get_lines())
