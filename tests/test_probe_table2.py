"""TraVLR's Table 2 layout (OOD train x test modality, (OOD - InD), ± sd over seeds), the probe's
seeds and fine-tuning schedule, and `vlprobe report` of a probe run beside the published Table 2."""

from __future__ import annotations

import json
from dataclasses import asdict

import numpy as np
import pytest
from helpers_probe import fake_features

from vlprobe import probing as P
from vlprobe.cli import main as vlprobe_main
from vlprobe.probing.finetune import PAPER_EPOCHS, schedule_note, schedule_plan, train_epochs


def _row(setting, test, split, f1, seed, *, transfer=None, size=100, ci_low=None, classifier="logreg"):
    return {"task": "spatiality", "setting": setting, "train_modality": setting, "test_modality": test,
            "transfer": transfer or ("same" if test == setting else "zero-shot"), "train_size": size, "split": split,
            "seed": seed, "macro_f1": f1, "ci_low": ci_low, "ci_high": None if ci_low is None else 1.0,
            "chance": 0.5, "n": 200, "classifier": classifier}


def _hand_rows():
    """Three seeds of a probe trained on image (tested on image, caption) and on caption (caption)."""
    rows = []
    image_ood, image_ind = (0.60, 0.70, 0.80), (0.70, 0.80, 0.90)
    image_ci = (0.55, 0.45, 0.80)  # the InD CI's low end: seeds 0 and 2 above chance 0.5
    for k, seed in enumerate((0, 1, 2)):
        rows += [_row("image", "image", "test_ood", image_ood[k], seed),
                 _row("image", "image", "test_ind", image_ind[k], seed, ci_low=image_ci[k]),
                 _row("image", "caption", "test_ood", 0.50, seed),  # the same for every seed
                 _row("image", "caption", "test_ind", 0.40, seed),
                 _row("caption", "caption", "test_ood", (0.90, 0.96, 0.93)[k], seed),
                 _row("caption", "caption", "test_ind", 0.95, seed, ci_low=0.40),
                 # neither of these is in Table 2: a learning-curve point and few-shot transfer
                 _row("image", "image", "test_ood", 0.10, seed, size=50),
                 _row("image", "caption", "test_ood", 0.99, seed, transfer="few-shot (6)")]
    return rows


def test_table2_cells_worked_by_hand():
    cells = {(c.trained_on, c.test_modality): c for c in P.table2_cells(_hand_rows())}
    assert set(cells) == {("image", "image"), ("image", "caption"), ("caption", "caption")}
    ii = cells[("image", "image")]
    # OOD mean (60 + 70 + 80) / 3 = 70; InD mean 80; change -10; sample sd of 60, 70, 80 = 10
    assert ii.ood == pytest.approx(0.70) and ii.ind == pytest.approx(0.80)
    assert ii.change == pytest.approx(-0.10) and ii.sd == pytest.approx(0.10)
    assert ii.seeds == (0, 1, 2) and ii.above_chance == 2 and not ii.identical
    ic = cells[("image", "caption")]
    assert ic.ood == pytest.approx(0.5) and ic.change == pytest.approx(0.10) and ic.sd == 0.0
    assert ic.identical and ic.above_chance == 2  # the row's count: image's own InD
    cc = cells[("caption", "caption")]
    # mean of 90, 96, 93 = 93; sd = sqrt((9 + 9 + 0) / 2) = 3; InD 95 -> change -2; CI low 0.40: none above
    assert cc.ood == pytest.approx(0.93) and cc.sd == pytest.approx(0.03) and cc.change == pytest.approx(-0.02)
    assert cc.above_chance == 0
    table = P.table2_table(_hand_rows())
    lines = table.splitlines()
    assert lines[0] == ("| task | trained on | tested on image | tested on caption | seeds above chance, InD (cf. the "
                        "paper's #sd) |")
    assert "| spatiality | image | 70.0 (-10.0) ± 10.0 | 50.0 (+10.0) ± 0.0* | 2 of 3 |" in lines
    assert "| spatiality | caption | - | 93.0 (-2.0) ± 3.0 | 0 of 3 |" in lines
    assert lines[-1] == P.result.IDENTICAL_NOTE and "deterministic" in lines[-1]


def test_one_seed_has_no_sd_and_keeps_its_ci():
    rows = [r for r in _hand_rows() if r["seed"] == 0]
    cell = next(c for c in P.table2_cells(rows) if c.test_modality == "image")
    assert cell.sd is None and cell.seeds == (0,)
    assert "| spatiality | image | 60.0 (-10.0) | 50.0 (+10.0) | 1 of 1 |" in P.table2_table(rows)
    assert "*" not in P.table2_table(rows)
    # the same-modality table shows that seed's bootstrap CI
    assert "70.0 [55.0, 100.0]" in P.same_modality_table(rows)
    means = P.seed_means(_hand_rows())
    assert all(m.ci_low is None for m in means)  # a CI is of one seed's figure, not of the mean


@pytest.mark.slow
def test_seeds_give_an_sd_over_seeds_and_sd_0_where_the_setting_is_deterministic(monkeypatch):
    data, feats = fake_features(shift=0.8, noise=0.5)
    calls = []
    real = P.select
    monkeypatch.setattr(P.protocol, "select", lambda *a, **k: calls.append(len(a[2])) or real(*a, **k))
    rows = P.run_probes(feats, data, train_modalities=["image"], test_modalities=["image", "caption"],
                        text_only=False, zero_shot=False, train_sizes=[10], few_shot=8, classifier="logreg",
                        bootstrap=50, confidence=0.95, seed=5, seeds=3, progress=False)
    assert {r["seed"] for r in rows} == {5, 6, 7}
    # the full-size logistic regression is fitted once (from zeros on the same rows for every seed);
    # the 10-row subset is drawn, and fitted, once per seed
    assert calls == [10, 80, 10, 10]
    means = {(m.transfer, m.train_size, m.test_modality, m.split): m for m in P.seed_means(rows)}
    full = means[("same", 80, "image", "test_ood")]
    assert full.sd == 0.0 and full.identical and full.seeds == (5, 6, 7)
    # its bootstrap is seeded per seed: the same figure, different CIs
    cis = {(r["ci_low"], r["ci_high"]) for r in rows if (r["transfer"], r["train_size"], r["split"]) ==
           ("same", 80, "test_ood") and r["test_modality"] == "image"}
    assert len(cis) > 1
    subset = [r["macro_f1"] for r in rows if r["train_size"] == 10 and r["split"] == "test_ood"]
    few = [r["macro_f1"] for r in rows if r["transfer"] == "few-shot (8)" and r["split"] == "test_ood"]
    assert len(subset) == 3 and len(few) == 3
    assert means[("same", 10, "image", "test_ood")].sd == pytest.approx(np.std(subset, ddof=1))
    assert means[("few-shot (8)", 80, "caption", "test_ood")].sd == pytest.approx(np.std(few, ddof=1))
    assert np.std(subset) > 0 or np.std(few) > 0  # different rows per seed move the figure
    # the MLP starts from seeded weights: every seed is fitted
    calls.clear()
    P.run_probes(feats, data, train_modalities=["image"], test_modalities=["image"], text_only=False,
                 zero_shot=False, train_sizes=None, few_shot=0, classifier="mlp", bootstrap=0, confidence=0.95,
                 seed=0, seeds=2, progress=False)
    assert calls == [80, 80]


def test_schedules():
    assert asdict(schedule_plan("paper", 3)) == {"schedule": "paper", "epochs": PAPER_EPOCHS, "keep": "last epoch",
                                                 "as_paper": True} and PAPER_EPOCHS == 80
    assert schedule_plan("quick", 3).epochs == 3 and not schedule_plan("quick", 3).as_paper
    assert "departure" in schedule_note(schedule_plan("quick", 3)) and "departure" not in schedule_note(
        schedule_plan("paper", 3))
    with pytest.raises(ValueError, match="unknown schedule"):
        schedule_plan("slow", 3)

    def run(plan, f1s):
        seen = {"trained": [], "validated": 0}
        state = {"epoch": 0}

        def run_epoch(epoch):
            seen["trained"].append(epoch)
            state["epoch"] = epoch

        def validate():
            seen["validated"] += 1
            return f1s[state["epoch"] - 1]

        kept = train_epochs(plan, run_epoch, validate, lambda: f"weights after epoch {state['epoch']}")
        return kept, seen

    # paper: 80 epochs, validation never read (no early stopping), the last epoch kept
    (snap, epoch, f1), seen = run(schedule_plan("paper", 3), [])
    assert seen == {"trained": list(range(1, 81)), "validated": 0}
    assert (snap, epoch, f1) == ("weights after epoch 80", 80, None)
    # quick: --epochs of them, the best on validation kept
    (snap, epoch, f1), seen = run(schedule_plan("quick", 3), [0.5, 0.7, 0.6])
    assert seen == {"trained": [1, 2, 3], "validated": 3}
    assert (snap, epoch, f1) == ("weights after epoch 2", 2, 0.7)


@pytest.mark.parametrize("kw,said", [
    ({"seeds": 0}, "seeds=0: must be at least 1"),
    ({"seeds": "3"}, "seeds='3': must be a whole number"),
    ({"seeds": True}, "seeds=True: must be a whole number"),
    ({"schedule": "slow"}, "schedule='slow': unknown schedule; choose one of quick, paper"),
])
def test_seeds_and_schedule_are_checked(kw, said):
    with pytest.raises(P.ProbeSettingError, match=said.replace("(", r"\(")):
        P.check_settings(**kw)


def test_cli_names_seeds_and_schedule(capsys, tmp_path):
    assert vlprobe_main(["probe", "--seeds", "0", "--out", str(tmp_path / "x")]) == 2
    assert "--seeds 0: must be at least 1" in capsys.readouterr().err
    s = P.check_settings(seeds=2, schedule="paper")
    assert "--seeds 2" in s.command_line() and "--schedule paper" in s.command_line()


def _probe_result(rows, finetune=None):
    return P.ProbeResult(rows, {"model": {"model_id": "models/mini-clip"},
                                "dataset": {"dataset": "travlr", "benchmark": "travlr"},
                                "settings": {"seeds": [0, 1, 2], "classifier": "logreg", "finetune": finetune or False},
                                "timings": {}, "features": {}})


def test_results_json_and_tables_md_hold_table2(tmp_path):
    res = _probe_result(_hand_rows())
    res.save(tmp_path / "run")
    doc = json.loads((tmp_path / "run" / "results.json").read_text())
    assert doc["tables"]["table2"] == P.table2_table(res.rows)
    assert [c["ood"] for c in doc["table2"]["frozen"]] == pytest.approx([0.70, 0.50, 0.93])
    md = (tmp_path / "run" / "tables.md").read_text()
    assert "TraVLR's Table 2 layout, frozen-feature probes" in md and "70.0 (-10.0) ± 10.0" in md
    assert "Same modality, in and out of distribution (vlprobe's table, not one of the paper's" in md
    assert "the paper's Table 2 layout" not in md


def test_report_of_a_probe_run_beside_the_paper(tmp_path, capsys):
    from vlprobe.report import paper_results

    tuned = [dict(r, classifier="finetune", epoch=3) for r in _hand_rows() if r["transfer"] != "few-shot (6)"]
    plan = schedule_plan("quick", 3)
    res = _probe_result(_hand_rows() + tuned, finetune=plan)
    res.save(tmp_path / "probe")
    assert vlprobe_main(["report", str(tmp_path / "probe"), "--out", str(tmp_path / "report")]) == 0
    md = (tmp_path / "report" / "report.md").read_text()
    assert not (tmp_path / "report" / "report.png").exists()  # the plot is of evaluate runs
    # the note under a fine-tuned table does not speak of a frozen probe
    assert P.table2_table(res.rows, finetuned=True).splitlines()[-1] == P.result.IDENTICAL_NOTE_FINETUNED
    assert "## TraVLR probe: mini-clip probe" in md
    assert "### mini-clip probe: frozen probe (logreg)" in md and "### mini-clip probe: fine-tuned (quick schedule" in md
    paper = next(p for p in paper_results() if p.benchmark == "travlr" and p.model == "VisualBERT"
                 and p.config == "spatiality/train=image/test=image/test_ood")
    assert paper.value == 65.94
    line = next(ln for ln in md.splitlines() if ln.startswith("| frozen probe (logreg) | spatiality | image | image |"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    # ours 70.0 (-10.0) ± 10.0; VisualBERT 65.94 (-1.02) over 3 converged runs; 70.0 - 65.94 = +4.1
    assert cells[4] == "70.0 (-10.0) ± 10.0" and cells[5] == "65.94 (-1.02) [3]" and cells[6] == "+4.1"
    assert "departure from the paper" in md and "not its fine-tuning" in md
    tex = (tmp_path / "report" / "report.tex").read_text()
    assert "beside TraVLR" in tex
    # an evaluate run beside it is reported as before, with its plot
    ev = {"results": [{"dataset": "travlr", "config": "spatiality", "split": "test_ood",
                       "metrics": {"acc_r": 0.5, "n_items": 10}}], "provenance": {"model": {"model_id": "m"}}}
    (tmp_path / "ev.json").write_text(json.dumps(ev))
    assert vlprobe_main(["report", str(tmp_path / "ev.json"), str(tmp_path / "probe"), "--out",
                         str(tmp_path / "both")]) == 0
    both = (tmp_path / "both" / "report.md").read_text()
    assert (tmp_path / "both" / "report.png").is_file() and "## travlr" in both and "## TraVLR probe" in both
    # a broken probe file: one line per problem, naming the file and the row
    doc = json.loads((tmp_path / "probe" / "results.json").read_text())
    doc["rows"][0]["macro_f1"] = 7
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    assert vlprobe_main(["report", str(tmp_path / "bad.json"), "--out", str(tmp_path / "r2")]) == 2
    err = capsys.readouterr().err
    assert "bad.json: rows[0] (spatiality image image test_ood).macro_f1: must be in [0, 1], got 7" in err
