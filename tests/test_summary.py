"""vlprobe.results.summary: the one rule for headline metrics, and the papers' aggregates worked by hand, from
each benchmark's declaration (vlprobe/benchmarks/)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from vlprobe.benchmarks import by_old_name, get
from vlprobe.benchmarks.valse import INSTRUMENTS as VALSE_INSTRUMENTS
from vlprobe.metric import compute
from vlprobe.results.summary import (
    dataset_name,
    display_metrics,
    headline_metrics,
    headline_present,
    primary_metric,
    summarize,
)
from vlprobe.results.upgrade import upgrade

ROOT = Path(__file__).resolve().parents[1]


def test_a_name_meant_a_benchmark_only_before_folders_recorded_it():
    # the old rule, kept for results.json files and folders from before datasets recorded their benchmark
    assert by_old_name("facebook/winoground").name == "winoground"
    assert by_old_name("./travlr/").name == "travlr"
    assert by_old_name("/data/VALSE").name == "valse"
    assert by_old_name("my-org/winoground-style").name == "winoground_style"
    assert by_old_name("my-org/My-Set") is None and by_old_name("valse_ds") is None
    assert dataset_name("my-org/My-Set") == "my-set" and dataset_name("./travlr/") == "travlr"
    # the one place an older results.json's entries are read: the recorded benchmark (format 2), the name before

    def benchmark(entry, fmt):
        return upgrade({"format": fmt, "results": [entry]})["results"][0]["benchmark"]

    new = {"benchmark": "valse", "dataset": "/tmp/x/valse_ds", "config": "all", "split": "test"}
    assert benchmark(new, "vlprobe-results/2") == "valse" and benchmark({**new, "benchmark": None}, "vlprobe-results/2") is None
    assert benchmark({**new, "benchmark": "not_a_benchmark"}, "vlprobe-results/2") is None
    old = {"benchmark": "valse_ds", "dataset": "/tmp/x/valse_ds", "config": "all", "split": "test"}
    assert benchmark(old, "vlprobe-results/1") is None
    assert benchmark({**old, "dataset": "./valse"}, "vlprobe-results/1") == "valse"
    assert benchmark({**old, "dataset": "./valse"}, None) == "valse"


def test_headline_rules():
    assert headline_metrics("valse") == ["acc_r", "acc", "min_p", "auroc"]
    assert headline_metrics("winoground") == ["text", "image", "group"]
    assert headline_metrics("facebook/winoground") == ["group", "text", "image", "acc_r", "macro_f1"]  # not a name
    assert headline_metrics("winoground_style") == ["text", "image", "group"]
    assert headline_metrics("bla") == ["sentence_acc", "set_acc", "set_error"]
    assert headline_metrics("travlr", (1, 1)) == ["macro_f1"]
    assert headline_metrics("travlr", (1, 2)) == ["acc_r"]
    assert headline_metrics("other", (2, 3)) == ["text", "image", "group"]
    # VALSE without probabilities: acc_r only (the paper's CLIP row), AUROC needs probabilities
    clip = ["acc_r", "text", "set_acc", "set_error", "sentence_acc", "auroc"]
    assert headline_present("valse", (1, 2), clip) == ["acc_r"]
    assert headline_present("valse", (1, 2), clip + ["acc", "p_c", "p_f", "min_p"]) == ["acc_r", "acc", "min_p", "auroc"]
    assert primary_metric("bla", (1, 4), ["acc_r", "sentence_acc", "set_acc"]) == "sentence_acc"
    assert primary_metric("winoground", (2, 2), ["acc_r", "text", "image", "group"]) == "group"
    assert primary_metric("travlr", (1, 1), ["acc", "macro_f1", "f1_true"]) == "macro_f1"


def test_display_shows_the_headline_metrics_once():
    r = compute([[[0.9, 0.2]], [[0.3, 0.7]]], [[[1, 0]]] * 2)
    avail = [k for k in r if isinstance(r[k], float)]
    # A 1 x 2 item: acc_r, text, set_acc and sentence_acc are one number.
    assert {"acc_r", "text", "set_acc", "set_error", "sentence_acc"} <= set(avail)
    assert display_metrics("travlr", (1, 2), avail) == ["acc_r"]
    assert display_metrics("valse", (1, 2), avail) == ["acc_r"]
    w = compute([[[0.3, 0.2], [0.1, 0.5]]], [[[1, 0], [0, 1]]])
    assert display_metrics("winoground", (2, 2), [k for k in w if isinstance(w[k], float)]) == ["text", "image", "group"]
    b = compute([[[0.8, 0.3, 0.5, 0.1]]], [[[1, 1, 0, 0]]])
    shown = display_metrics("bla", (1, 4), [k for k in b if isinstance(b[k], float)])
    assert shown == ["sentence_acc", "set_acc", "set_error"]
    assert display_metrics("x", None, ["acc_r", "text"]) == ["acc_r", "text"]
    # A 1 x 3 instrument of the user's own scored by an ITM model (13 metrics with probabilities): its shape's
    # headline, acc_r, is printed; the rest are in the files.
    p = [[[0.9, 0.4, 0.2]], [[0.3, 0.7, 0.6]]]
    itm = compute(p, [[[1, 1, 0]]] * 2, probabilities=p)
    assert len([k for k in itm if isinstance(itm[k], float)]) >= 12
    assert display_metrics(None, (1, 3), [k for k in itm if isinstance(itm[k], float)]) == ["acc_r"]


@pytest.mark.parametrize("gold,kept", [
    ([[1, 0]], {"text": "acc_r", "set_acc": "acc_r", "sentence_acc": "acc_r"}),
    ([[1, 1, 0]], {"text": "set_acc"}),
    ([[1, 0, 0, 0, 0]], {"text": "set_acc"}),
    ([[1, 0], [0, 1]], {"set_acc": "acc_r", "sentence_acc": "acc_r"}),
    ([[1, 0, 0], [0, 1, 0]], {}),
])
def test_synonyms_are_equal_for_every_item_of_the_shape(gold, kept):
    """metric_synonyms names only metrics equal whatever the scores, ties included (integer scores tie often)."""
    from vlprobe.results.summary import metric_synonyms

    gold = np.array(gold)
    scores = np.random.default_rng(0).integers(0, 4, size=(300, *gold.shape)).astype(float)
    r = compute(scores, np.broadcast_to(gold, scores.shape).copy())
    assert metric_synonyms(None, gold.shape) == kept
    for dropped, name in kept.items():
        assert r[dropped] == pytest.approx(r[name], abs=1e-12), (dropped, name)
    # The name kept is the one the benchmark's headline uses: CREPE's R@1 is `text`, BLA's `set_acc`.
    assert metric_synonyms("crepe", (1, 5)) == {"set_acc": "text"}
    assert metric_synonyms("bla", (1, 4)) == {"text": "set_acc"}


def _entry(dataset, config, split="test", benchmark=None, **metrics):
    """A results.json entry of a dataset that records ``benchmark`` (default: the dataset's own name)."""
    return {"benchmark": benchmark or dataset_name(dataset), "dataset": dataset, "config": config, "split": split,
            "metrics": metrics}


def test_valse_avg_is_the_unweighted_mean_of_the_11_instruments():
    # CLIP's Table 2 row: the mean of its 11 acc_r values is its Avg. (64.0).
    rows = list(csv.DictReader((ROOT / "vlprobe" / "data" / "paper_results.csv").open(encoding="utf-8")))
    clip = {r["config"]: float(r["value"]) / 100 for r in rows
            if r["benchmark"] == "valse" and r["table"] == "Table 2" and r["model"] == "CLIP"}
    entries = [_entry("valse", c, acc_r=clip[c], n_items=10 + i) for i, c in enumerate(VALSE_INSTRUMENTS)]
    s = summarize(entries)["valse"]
    avg = next(r for r in s.rows if r.config == "avg")
    assert avg.complete and s.complete and s.notes == ()
    assert avg.values["acc_r"] == pytest.approx(sum(clip[c] for c in VALSE_INSTRUMENTS) / 11)
    assert round(100 * avg.values["acc_r"], 1) == clip["avg"] * 100
    assert s.headline == ("acc_r",)
    assert [r.part for r in s.rows[:3]] == ["existence", "plurality", "counting"]


def test_valse_avg_with_probabilities_and_incomplete():
    e = [_entry("valse", "existence", acc_r=0.6, acc=0.5, p_c=0.9, p_f=0.1, min_p=0.1, auroc=0.55),
         _entry("valse", "plurality", acc_r=0.8, acc=0.7, p_c=0.5, p_f=0.9, min_p=0.5, auroc=0.65),
         _entry("valse", "foil_it", acc_r=0.7, acc=0.6, p_c=0.6, p_f=0.6, min_p=0.6, auroc=0.75)]
    s = summarize(e)["valse"]
    avg = s.rows[-1]
    assert avg.config == "avg" and not avg.complete and not s.complete
    assert avg.values == pytest.approx({"acc_r": 0.7, "acc": 0.6, "min_p": 0.4, "auroc": 0.65})
    assert len(avg.missing) == 8 and "Avg. over 3 of 11 instruments" in s.notes[0]


def test_an_all_tied_instrument_is_na_with_the_authors_figure_beside():
    """Every item of one instrument tied (texts identical after truncation): its metrics are N/A, vlprobe's own
    figure, and VALSE's Avg. and SugarCREPE's group over it are N/A naming it; beside each N/A, the figure the
    authors' code prints (the entry's ``authors_rule``: 0.0 under their strict rule), averaged into their Avg."""
    from vlprobe.evaluation.result import format_summary

    tied = {"acc_r": None, "auroc": None, "n_items": 10, "n_ties": 10, "na_reason": "10/10 items tied"}
    theirs = {"ties": "strict", "metrics": {"acc_r": 0.0, "auroc": 0.5, "n_items": 10, "n_ties": 10}}
    e = [{"benchmark": "valse", "dataset": "valse", "config": VALSE_INSTRUMENTS[0], "split": "test",
          "metrics": dict(tied), "authors_rule": theirs}]
    e += [_entry("valse", c, acc_r=0.6, auroc=0.7, n_items=10) for c in VALSE_INSTRUMENTS[1:]]
    s = summarize(e, {"ties": "strict"})["valse"]
    assert s.headline == ("acc_r",)
    first, avg = s.rows[0], s.rows[-1]
    assert first.values == {} and first.na == ("acc_r",) and first.authors == {"acc_r": 0.0}
    assert all(r.authors == {} for r in s.rows[1:-1])  # the run counts ties as the authors do: one figure
    assert avg.config == "avg" and avg.values == {} and avg.na == ("acc_r",)
    assert avg.na_reason == f"not available for {VALSE_INSTRUMENTS[0]}: 10/10 items tied"
    assert avg.authors["acc_r"] == pytest.approx(6 / 11)  # (0.0 + 10 x 0.6) / 11, as their code averages
    text = format_summary({"valse": s})
    assert "acc_r N/A (10/10 items tied) (strict: 0.0)" in text and "(strict: 54.5)" in text
    # under another tie policy, their figure is beside every value (the others' here: as the run's)
    e[1:] = [dict(x, authors_rule={"ties": "strict", "metrics": x["metrics"]}) for x in e[1:]]
    lenient = summarize(e, {"ties": "lenient"})["valse"]
    assert lenient.rows[1].authors == {"acc_r": 0.6}
    assert lenient.rows[0].authors == {"acc_r": 0.0} and lenient.rows[-1].authors["acc_r"] == pytest.approx(6 / 11)
    sc = [{"benchmark": "sugar_crepe", "dataset": "sugar_crepe", "config": "swap_obj", "split": "test",
           "metrics": dict(tied), "authors_rule": theirs},
          _entry("sugar_crepe", "swap_att", acc_r=0.8, n_items=30), _entry("sugar_crepe", "add_obj", acc_r=0.9, n_items=5)]
    by = {r.config: r for r in summarize(sc)["sugar_crepe"].rows}
    assert by["swap"].na == ("acc_r",) and "swap_obj: 10/10 items tied" in by["swap"].na_reason
    assert by["swap"].authors["acc_r"] == pytest.approx((0.0 * 10 + 0.8 * 30) / 40)  # over the items, as theirs
    assert by["add"].values["acc_r"] == pytest.approx(0.9) and by["add"].na == ()


def test_sugar_crepe_categories_are_the_micro_average_over_items():
    """ADD / REPLACE / SWAP are the mean over their subsets' items, the pooled accuracy, as SugarCREPE's authors
    answer (RAIVNLab/sugar-crepe#3): computed from the items themselves, not the unweighted mean of subsets."""
    from vlprobe.benchmarks.sugar_crepe import GROUPS

    rng = np.random.default_rng(3)
    sizes = {"add_obj": 41, "add_att": 9, "replace_obj": 30, "replace_att": 12, "replace_rel": 5, "swap_obj": 7,
             "swap_att": 22}
    S = {c: rng.normal(size=(n, 1, 2)) + [[0.8 if c.endswith("obj") else -0.3, 0]] for c, n in sizes.items()}
    gold = {c: np.broadcast_to(np.array([[1, 0]]), S[c].shape).copy() for c in sizes}
    entries = [{"benchmark": "sugar_crepe", "dataset": "sugar_crepe", "config": c, "split": "test", "shape": [1, 2],
                "metrics": compute(S[c], gold[c])} for c in sizes]
    rows = {r.config: r for r in summarize(entries)["sugar_crepe"].rows}
    for group, members in GROUPS.items():
        pooled = compute(np.concatenate([S[c] for c in members]), np.concatenate([gold[c] for c in members]))
        unweighted = np.mean([rows[c].values["acc_r"] for c in members])
        assert rows[group].values["acc_r"] == pytest.approx(pooled["acc_r"]), group
        assert rows[group].values["acc_r"] != pytest.approx(unweighted), group  # the sizes make them differ here
        assert rows[group].n_items == sum(sizes[c] for c in members)
        assert rows[group].source.startswith("mean over the items of")


def test_crepe_configs_from_the_all_configs_leaf_tags():
    # (VL-CheckList's per-file rows from its type_corpus= tags, and radar.py's means over them:
    # tests/test_vl_checklist.py)
    rng = np.random.default_rng(1)
    for bench, leaves in (("crepe", ["prod_atom_4", "syst_laion_seen_comp"]),):
        S = rng.normal(size=(40, 1, 3 if bench == "crepe" else 2))
        gold = np.zeros(S.shape, dtype=bool)
        gold[:, 0, 0] = True
        tags = [[f"leaf={leaves[i % 2]}"] for i in range(40)]
        m = compute(S, gold, tags=tags)
        by = {r.config: r for r in summarize([{"benchmark": bench, "dataset": f"./{bench}", "config": "all",
                                                   "split": "test", "metrics": m}])[bench].rows}
        key = "text" if bench == "crepe" else "acc_r"
        for i, leaf in enumerate(leaves):
            assert by[leaf].values[key] == pytest.approx(compute(S[i::2], gold[i::2])[key]), (bench, leaf)


def test_valse_instruments_from_the_all_configs_per_tag_results():
    rng = np.random.default_rng(0)
    S = rng.normal(size=(60, 1, 2))
    tags = [[f"instrument={VALSE_INSTRUMENTS[i % 11]}", "valid=True"] for i in range(60)]
    m = compute(S, np.broadcast_to(np.array([[1, 0]]), S.shape), tags=tags)
    s = summarize([{"benchmark": "valse", "dataset": "./valse", "config": "all", "split": "test", "metrics": m}])["valse"]
    assert s.complete
    by = {r.config: r for r in s.rows}
    for i, inst in enumerate(VALSE_INSTRUMENTS):
        own = compute(S[i::11], np.broadcast_to(np.array([[1, 0]]), S[i::11].shape))
        assert by[inst].values["acc_r"] == pytest.approx(own["acc_r"])
        assert by[inst].source.startswith("all (per tag")
    expected = np.mean([by[i].values["acc_r"] for i in VALSE_INSTRUMENTS])
    assert by["avg"].values["acc_r"] == pytest.approx(expected)
    assert by["avg"].values["acc_r"] != pytest.approx(m["acc_r"])  # not the pooled accuracy


def test_winoground_bla_and_travlr():
    e = [_entry("facebook/winoground", "default", benchmark="winoground", text=0.3, image=0.1, group=0.08, acc_r=0.5),
         _entry("bla", "active_passive", sentence_acc=0.5, set_acc=0.06, set_error=0.06, acc_r=0.5),
         _entry("bla", "coordination", sentence_acc=0.52, set_acc=0.02, set_error=0.01, acc_r=0.5),
         _entry("travlr", "spatiality", "test_ind", macro_f1=0.61, acc=0.62, f1_true=0.6, f1_false=0.62),
         _entry("travlr", "spatiality", "test_ood", macro_f1=0.55, acc=0.56, f1_true=0.5, f1_false=0.6),
         _entry("travlr", "spatiality", "train", macro_f1=0.9, acc=0.9, f1_true=0.9, f1_false=0.9)]
    s = summarize(e)
    w = s["winoground"].rows[0]
    assert w.values == {"text": 0.3, "image": 0.1, "group": 0.08} and w.paper_config == "winoground"
    bla = s["bla"]
    assert [r.config for r in bla.rows] == ["active_passive", "coordination"]
    assert bla.rows[1].values == {"sentence_acc": 0.52, "set_acc": 0.02, "set_error": 0.01}
    assert not bla.complete and "relative_clause" in bla.notes[0]
    t = s["travlr"]
    assert [(r.config, r.split) for r in t.rows] == [("spatiality", "test_ind"), ("spatiality", "test_ood")]
    assert t.rows[0].values == {"macro_f1": 0.61} and t.headline == ("macro_f1",)
    assert "2 of 8" in t.notes[0]


def test_the_travlr_heading_names_the_metric_its_values_are():
    """The zero-shot 1 x 2 framing gives acc_r: the heading says so, not the paper's macro-F1; the 1 x 1 framing
    says macro-F1."""
    from vlprobe.results.summary import summary_title

    zero_shot = [dict(_entry("travlr", "spatiality", split, acc_r=0.5), shape=[1, 2]) for split in ("test_ind", "test_ood")]
    title = summary_title("travlr", summarize(zero_shot)["travlr"])
    assert "query vs foil (1 x 2, acc_r)" in title and "macro-F1" not in title
    statements = [dict(_entry("travlr", "spatiality", "test_ind", macro_f1=0.6, acc=0.6), shape=[1, 1])]
    title = summary_title("travlr", summarize(statements)["travlr"])
    assert "true/false (1 x 1, macro-F1)" in title and "acc_r" not in title


def test_summary_is_json_serialisable():
    import json

    m = compute([[[0.9, 0.2]]] * 3, [[[1, 0]]] * 3, bootstrap=20, seed=0)
    from vlprobe.results.schema import SummaryBlock, dump, parse

    s = summarize([_entry("valse", "existence", **m)])
    assert parse(SummaryBlock, json.loads(json.dumps(dump(s["valse"])))) == s["valse"]  # read back as it was
    assert get("valse").source.startswith("VALSE")


def test_bla_tasks_from_a_pooled_config_and_other_configs_kept():
    rng = np.random.default_rng(1)
    S = rng.normal(size=(30, 1, 4))
    G = np.broadcast_to(np.array([[1, 1, 0, 0]]), S.shape)
    tasks = ["active_passive", "coordination", "relative_clause"]
    m = compute(S, G, tags=[[f"task={tasks[i % 3]}"] for i in range(30)])
    extra = compute(S[:5], G[:5])
    s = summarize([_entry("bla", "all", **m), _entry("bla", "finetune_random", **extra)])["bla"]
    assert [r.config for r in s.rows] == tasks + ["finetune_random"] and s.complete
    own = compute(S[1::3], G[1::3])
    assert s.rows[1].values["set_acc"] == pytest.approx(own["set_acc"])


def test_display_for_true_false_statements():
    p = [[[0.9]], [[0.6]], [[0.3]], [[0.2]], [[0.7]]]
    r = compute(p, [[[1]], [[1]], [[1]], [[0]], [[0]]], probabilities=p)
    shown = display_metrics("travlr", (1, 1), [k for k in r if isinstance(r[k], float)])
    assert shown == ["macro_f1"]  # acc, f1_true, f1_false, auroc: in results.json and results.csv


def test_winoground_style_all_gives_each_instrument_from_its_tags():
    """winoground_style's pooled `all` config (rows tagged instrument=...) yields one row per
    instrument beside the pooled one, as VALSE's `all` does."""
    from vlprobe.results.summary import summarize

    def m(text, image, group):
        return {"text": text, "image": image, "group": group, "n_items": 10, "n_ties": 0}

    entry = {"benchmark": "winoground_style", "dataset": "winoground_style", "config": "all", "split": "test",
             "metrics": {**m(0.3, 0.2, 0.1), "per_tag": {"instrument=spatial_swap": m(0.5, 0.4, 0.3),
                                                         "instrument=count_swap": m(0.1, 0.0, 0.0),
                                                         "collapsed_tag=Relation": m(0.5, 0.4, 0.3)}}}
    from vlprobe.evaluation.result import format_summary

    summary = summarize([entry])
    by = {r.config: r for r in summary["winoground_style"].rows}
    rows = {c: r.values for c, r in by.items()}
    # `all` pools the instruments' items: no paper's figure, and labelled so (printed after its figures)
    assert by["all"].pooled and by["all"].name == "all (pooled over items, not a paper figure)"
    (printed,) = [line for line in format_summary(summary).splitlines() if line.strip().startswith("all")]
    assert printed.split()[0] == "all/test" and printed.endswith("(pooled over items, not a paper figure)")
    assert not by["spatial_swap"].pooled
    assert rows["spatial_swap"] == {"text": 0.5, "image": 0.4, "group": 0.3}
    assert rows["count_swap"] == {"text": 0.1, "image": 0.0, "group": 0.0}
    assert rows["all"]["group"] == 0.1
    assert "Relation" not in rows


def test_bla_published_sentence_acc_agrees_with_its_set_numbers_or_says_why():
    """BLA's sentence accuracy follows from its set numbers (for distinct scores, a set that is neither
    right nor wrong has one of its two top cells right): the one row of the thesis that disagrees
    carries a note saying so."""
    rows = [r for r in csv.DictReader((ROOT / "vlprobe" / "data" / "paper_results.csv").open(encoding="utf-8"))
            if r["benchmark"] == "bla" and r["table"] == "Thesis Table 6.3"]
    value = {(r["model"], r["metric"], r["config"]): float(r["value"]) for r in rows}
    checked = flagged = 0
    for r in rows:
        if r["metric"] != "sentence_acc":
            continue
        set_acc, set_error = value[r["model"], "set_acc", r["config"]], value[r["model"], "set_error", r["config"]]
        implied = set_acc + (100 - set_acc - set_error) / 2
        if abs(implied - float(r["value"])) > 0.01:
            assert f"give {implied:.2f}" in r["note"], (r["model"], r["config"], r["value"], implied)
            flagged += 1
        checked += 1
    assert checked == 15 and flagged == 1


@pytest.mark.slow
def test_an_all_tied_config_shows_the_authors_code_figure_end_to_end(tmp_path, capsys):
    """A run under the authors' own tie rule (strict) where every item of a config ties: vlprobe's figure is N/A,
    and results.json's authors_rule, the printed summary and the report set the authors' code's 0.0 beside it
    (their main_eval.py counts pos > neg: a tie is wrong)."""
    import json

    from helpers_ties import tie_folder, truncating_mini_clip

    from vlprobe.cli import main
    from vlprobe.dataset.folder import write_spec

    folder = tie_folder(tmp_path)  # config `collapsed`: every item's caption and foil are one input at 8 tokens
    write_spec(folder, (folder / "vlprobe.yaml").read_text(), "sugar_crepe")
    run = tmp_path / "run"
    assert main(["evaluate", "--dataset", str(folder), "--config", "collapsed", "--model", str(truncating_mini_clip(
        tmp_path)), "--bootstrap", "0", "--no-progress", "--cache-dir", "none", "--out", str(run)]) == 0
    out = capsys.readouterr().out
    (entry,) = json.loads((run / "results.json").read_text())["results"]
    assert entry["metrics"]["acc_r"] is None and entry["metrics"]["na_reason"].startswith("6/6 items tied")
    assert entry["authors_rule"]["ties"] == "strict" and entry["authors_rule"]["metrics"]["acc_r"] == 0.0
    assert "acc_r N/A (6/6 items tied" in out and "tokens) (strict: 0.0)" in out
    assert main(["report", str(run), "--out", str(tmp_path / "report")]) == 0
    md = (tmp_path / "report" / "report.md").read_text()
    lines = [ln for ln in md.splitlines() if ln.startswith("| collapsed | test | acc_r | N/A (6/6")]
    assert lines[0].endswith("| 6 (n=6) | 50.0 |")  # the metrics table: the run's own figure, its ties, chance
    assert lines[1].endswith("tokens) (strict: 0.0) |")  # the aggregates: the authors' code's figure beside


def test_published_figures_for_the_checkpoint_have_their_place():
    """Where a block holds figures published for the run's own checkpoint (issue 45 fills them), the printed
    summary sets each beside the run's, with the difference and its known cause; results.json keeps them."""
    from dataclasses import replace

    from vlprobe.evaluation.result import format_summary
    from vlprobe.results.schema import Published, SummaryBlock, dump, parse

    block = summarize([_entry("valse", "existence", acc_r=0.6, n_items=10)])["valse"]
    published = Published("open_clip benchmark", "existence", "acc_r", 0.65, ours=0.6, dataset_version="v1",
                          note="their 534 items, ours 505")
    block = replace(block, published=(published,))
    assert published.difference == pytest.approx(-0.05)
    printed = format_summary({"valse": block}).splitlines()
    assert printed[-2:] == ["    source               config     metric  published  this run  difference  known causes",
                            "    open_clip benchmark  existence  acc_r       65.00     60.00       -5.00  their 534 items, "
                            "ours 505"]
    assert parse(SummaryBlock, dump(block)) == block


def _bla_entries(negative: bool = True) -> list[dict]:
    """A constructed BLA run: 10 caption sets per task of scaled cosines (x 100), all positive but, with
    ``negative``, the two false captions' of 1, 2 and 3 sets (6 of 30 items hold a negative score)."""
    rng = np.random.default_rng(0)
    entries = []
    for k, config in enumerate(("active_passive", "coordination", "relative_clause")):
        cos = rng.uniform(0.05, 0.4, size=(10, 1, 4))
        if negative:
            cos[: k + 1, 0, 2:] = -rng.uniform(0.01, 0.2, size=(k + 1, 2))
        metrics = compute(100 * cos, np.tile(np.array([[[1, 1, 0, 0]]], dtype=bool), (10, 1, 1)), bootstrap=0)
        entries.append({"dataset": "bla", "benchmark": "bla", "config": config, "split": "test", "shape": [1, 4],
                        "metrics": metrics, "ties": "strict"})
    return entries


def test_bla_s_clamped_cosines_are_a_departure_where_a_dual_encoder_scored_below_zero():
    """BLA's CLIP script ranks 2.5 * max(cos, 0): a run of a dual encoder with negative scores gets the departure
    its module declares (counted over the configs shown), in the block, its heading and the printed summary;
    not for a family whose scores are no cosines, nor without a negative score."""
    from vlprobe.evaluation.result import format_summary
    from vlprobe.results.summary import summary_title

    entries = _bla_entries()
    block = summarize(entries, {"ties": "authors"}, {"family": "dual"})["bla"]
    (departure,) = block.departures
    assert (departure.setting, departure.run, departure.authors) == ("scores", "6 of 30 items with a negative score",
                                                                     "max(cos, 0)")
    assert departure.note.startswith("6 of 30 items have a negative score") and "torch.topk" in departure.note
    assert summary_title("bla", block).endswith(
        "NOT the authors' setting: scores 6 of 30 items with a negative score (authors: max(cos, 0))")
    assert f"departs from the authors' setting: {departure.note}" in format_summary({"bla": block})
    assert summarize(entries, {"ties": "authors"}, {"family": "open_clip"})["bla"].departures == (departure,)
    assert summarize(entries, {"ties": "authors"})["bla"].departures == (departure,)  # family not recorded
    blank = summarize(entries, {"ties": "authors", "control": "blank"}, {"family": "dual+blank"})["bla"]
    assert blank.departures[-1] == departure
    assert summarize(entries, {"ties": "authors"}, {"family": "itm"})["bla"].departures == ()  # an ITM head's logits
    assert summarize(_bla_entries(negative=False), {"ties": "authors"}, {"family": "dual"})["bla"].departures == ()


def test_bla_s_clamp_departure_reaches_the_report_and_the_space(tmp_path):
    """The same record (the summary block's departures) read back from a results.json: `vlprobe report` and the
    Space's Results tab say the clamp line; the family comes from the file's provenance."""
    from vlprobe.cli import main
    from vlprobe.demo.results import compare_results
    from vlprobe.results.io import provenance_record, write_results_json
    from vlprobe.results.schema import Entry, EvaluationDocument, dump, parse

    def write(folder: Path, family: str) -> Path:
        folder.mkdir()
        prov = {"model": {"model_id": "mini-clip", "family": family}, "settings": {"ties": "authors"},
                "created": "2026-01-01T00:00:00Z"}
        entries = tuple(parse(Entry, dump(e)) for e in _bla_entries())
        write_results_json(folder / "results.json", EvaluationDocument(provenance_record(prov), entries))
        return folder / "results.json"

    note = "6 of 30 items have a negative score (for a CLIP model, a negative cosine)"
    dual, itm = write(tmp_path / "dual", "dual"), write(tmp_path / "itm", "itm")
    assert main(["report", str(dual), str(itm), "--label", "clip", "--label", "blip", "--out", str(tmp_path / "report")]) == 0
    md = (tmp_path / "report" / "report.md").read_text()
    assert f"clip: departs from the authors' setting: {note}" in md and "blip: departs" not in md
    assert note in compare_results([str(dual)]).note and note not in compare_results([str(itm)]).note
