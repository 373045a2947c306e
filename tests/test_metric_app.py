"""The metric Space (metric/app.py): launched in the test, driven through gradio_client."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys

import pytest

gr = pytest.importorskip("gradio")
gradio_client = pytest.importorskip("gradio_client")


def _load_app(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def metric_app(repo_root):
    return _load_app(repo_root / "metric" / "app.py", "vlprobe_metric_space_app")


GRADIO_APP = "metric_app"  # conftest's client serves it


def _rows(table):
    return {row[0]: row[1:] for row in table["data"]}


@pytest.mark.slow
def test_winoground_items_give_the_papers_scores(client):
    # item 1: all four comparisons right; item 2: text right, image wrong (column 0: 2.0 < 3.0).
    preds = [[[3.0, 1.0], [0.5, 2.0]], [[2.0, 1.0], [3.0, 4.0]]]
    refs = [[[1, 0], [0, 1]], [[1, 0], [0, 1]]]
    table, per_tag, raw = client.predict(
        json.dumps(preds), json.dumps(refs), "strict", 0.5, "", '[["Object"], ["Relation"]]', 0, 0.95, 0,
        api_name="/compute",
    )
    assert table["headers"] == ["metric", "value", "chance", "ci_low", "ci_high"]
    rows = _rows(table)
    assert rows["text"][:2] == ["100.00%", "25.00%"]
    assert rows["image"][:2] == ["50.00%", "25.00%"]
    assert rows["group"][:2] == ["50.00%", "16.67%"]
    assert raw["n_items"] == 2 and raw["group"] == pytest.approx(0.5)
    tags = {row[0]: row for row in per_tag["data"]}
    assert set(tags) == {"Object", "Relation"}
    group_col = per_tag["headers"].index("group")
    assert tags["Object"][group_col] == "100.00%" and tags["Relation"][group_col] == "0.00%"


def test_ties_policy_and_bootstrap_reach_the_metric(client):
    preds = json.dumps([[[1.0, 1.0]], [[2.0, 1.0]]])
    refs = json.dumps([[[1, 0]], [[1, 0]]])
    strict = _rows(client.predict(preds, refs, "strict", 0.5, "", "", 0, 0.95, 0, api_name="/compute")[0])
    half = _rows(client.predict(preds, refs, "half", 0.5, "", "", 0, 0.95, 0, api_name="/compute")[0])
    assert strict["acc_r"][0] == "50.00%" and half["acc_r"][0] == "75.00%"
    table, _, raw = client.predict(preds, refs, "strict", 0.5, "", "", 50, 0.9, 3, api_name="/compute")
    assert set(raw["ci"]) >= {"acc_r"}
    low, high = raw["ci"]["acc_r"]
    assert 0 <= low <= raw["acc_r"] <= high <= 1
    assert _rows(table)["acc_r"][2] != ""  # the CI columns are filled


def test_probabilities_give_thresholded_metrics(client):
    _, _, raw = client.predict(
        "[[[2.0, -1.0]], [[0.3, 0.8]]]", "[[[1, 0]], [[1, 0]]]", "strict", 0.5,
        "[[[0.9, 0.2]], [[0.6, 0.7]]]", "", 0, 0.95, 0, api_name="/compute",
    )
    # gold cells 0.9, 0.6 > 0.5 right; non-gold 0.2 right, 0.7 wrong.
    assert raw["p_c"] == pytest.approx(1.0) and raw["p_f"] == pytest.approx(0.5)
    assert raw["acc"] == pytest.approx(0.75) and raw["min_p"] == pytest.approx(0.5)


def test_true_false_statements_give_macro_f1(client):
    # TraVLR's framing: called T, T, F, F, T against gold T, T, T, F, F: F1 2/3 and 1/2, macro 7/12.
    probs = "[[[0.9]], [[0.6]], [[0.3]], [[0.2]], [[0.7]]]"
    gold = "[[[1]], [[1]], [[1]], [[0]], [[0]]]"
    table, _, raw = client.predict(probs, gold, "strict", 0.5, probs, "", 0, 0.95, 0, api_name="/compute")
    assert raw["macro_f1"] == pytest.approx(7 / 12) and raw["f1_true"] == pytest.approx(2 / 3)
    rows = _rows(table)
    assert rows["macro_f1"][:2] == ["58.33%", "46.64%"]  # value, exact fair-coin chance
    assert "acc_r" not in rows  # a single statement is never ranked
    # Without probabilities the scores are compared with the threshold.
    _, _, by_scores = client.predict(probs, gold, "strict", 0.5, "", "", 0, 0.95, 0, api_name="/compute")
    assert by_scores["macro_f1"] == pytest.approx(7 / 12)


@pytest.mark.parametrize(
    "preds, refs, bootstrap, expected",
    [
        ("[[[1.0, 0.5]]", "[[[1, 0]]]", 0, "not valid JSON"),
        ("", "[[[1, 0]]]", 0, "empty"),
        ("[[[1.0, 0.5]], [[1.0, 0.5]]]", "[[[1, 0]]]", 0, "2 score matrices but 1 gold"),
        ("[[[1.0, 0.5, 0.2]]]", "[[[1, 0]]]", 0, "item 0"),  # shape mismatch, named by the metric
        ("[[[1.0, 0.5]]]", "[[[0, 0]]]", 0, "item 0"),  # no gold cell
        ('[[["0.9", "0.1"]]]', "[[[1, 0]]]", 0, "must hold numbers"),  # strings are not scores
        ("[[[1.0, 0.5]]]", "[[[1, 0]]]", 10**6, "5000"),  # refused by the Number bounds
        ('{"a": 1}', "[[[1, 0]]]", 0, "expected a non-empty JSON list"),
    ],
)
def test_bad_input_is_a_readable_error(client, preds, refs, bootstrap, expected):
    with pytest.raises(Exception) as info:
        client.predict(preds, refs, "strict", 0.5, "", "", bootstrap, 0.95, 0, api_name="/compute")
    message = str(info.value)
    assert expected in message
    assert "Traceback" not in message


def test_tables_follow_the_metric_modules_one_list_of_names(metric_app, client):
    from vlprobe.metric import METRIC_KEYS

    assert metric_app.metric_order() == METRIC_KEYS  # read from valse_metric.py, not a copy of its own
    table, _, _ = client.predict("[[[0.8, 0.3, 0.5, 0.1]]]", "[[[1, 1, 0, 0]]]", "strict", 0.5, "", "", 0, 0.95, 0,
                                 api_name="/compute")
    shown = [row[0] for row in table["data"]]
    assert shown == [k for k in METRIC_KEYS if k in shown]


@pytest.mark.slow
def test_the_app_runs_alone_without_vlprobe(repo_root, tmp_path):
    """Pushed alone as a Space, metric/ has only app.py and valse_metric.py: no vlprobe import."""
    for name in ("app.py", "valse_metric.py"):
        shutil.copy(repo_root / "metric" / name, tmp_path / name)
    code = (
        "import sys, builtins\n"
        "real = builtins.__import__\n"
        "def guard(name, *a, **k):\n"
        "    if name == 'vlprobe' or name.startswith('vlprobe.'):\n"
        "        raise ImportError('vlprobe must not be imported by the metric Space')\n"
        "    return real(name, *a, **k)\n"
        "builtins.__import__ = guard\n"
        "import app\n"
        "table, _, raw = app.compute('[[[2.0, 1.0]]]', '[[[1, 0]]]')\n"
        "print('ACC_R', raw['acc_r'])\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "ACC_R 1.0" in proc.stdout
