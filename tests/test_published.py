"""Published figures keyed by checkpoint (vlprobe/data/published*.csv, checkpoint_names.csv; vlprobe/results/published.py):
copied exactly from their sources, measured on the dataset versions and item counts the rows say (checked by
arithmetic: every figure is k/n of its n_items), and reachable from every name users pass for a checkpoint."""

from __future__ import annotations

import csv
import math
from collections import Counter
from importlib import resources

import pytest

from vlprobe.benchmarks import METRIC_ORDER, benchmarks, find
from vlprobe.benchmarks.valse import FILES as VALSE_FILES
from vlprobe.results import published as P

STUDY = "paper_results/vl_compo_individual_results.csv"
BENCHES = {"sugarcrepe": "sugar_crepe", "valse": "valse", "vl_checklist": "vl_checklist", "crepe": "crepe",
           "winoground": "winoground"}


def rows(name: str) -> list[dict[str, str]]:
    return list(csv.DictReader(resources.files("vlprobe").joinpath(f"data/{name}").read_text().splitlines()))


def study_rows() -> list[dict[str, str]]:
    return [r for r in rows("published.csv") if r["source"] == "vl_compo"]


def is_fraction(value: float, n: int, digits: float = 1e-6) -> bool:
    """Whether a percentage is k/n for a whole k (to ``digits`` of an item)."""
    k = value * n / 100
    return abs(k - round(k)) < digits


@pytest.mark.shared_data
def test_the_study_is_copied_cell_for_cell(shared_data):
    """Every cell of the study's file for the five benchmarks vlprobe builds is a row, its text unchanged, under
    vlprobe's names of config and metric; nothing else of the study is."""
    with open(shared_data / STUDY, encoding="utf-8") as f:
        study = list(csv.DictReader(f))
    assert len(study) == 202
    valse = {file.removesuffix(".json"): config for config, file in VALSE_FILES.items()}
    names = {"sugarcrepe": lambda s: (s, "acc_r"), "valse": lambda s: (valse[s], "acc_r"),
             "vl_checklist": lambda s: (s.lower(), "acc_r"), "crepe": lambda s: (f"prod_{s}", "text"),
             "winoground": lambda s: ("default", s)}
    twice = {k for k, n in Counter((r["arch"], r["pretrained"]) for r in study).items() if n > 1}
    assert twice == {("CLIP_ViT-B-16", "cc12m")}  # LaCLIP's and SynthCLIP's: keyed with the study's family
    want = {}
    for r in study:
        key = f"{r['arch']}/{r['pretrained']}" + (f" ({r['family']})" if (r["arch"], r["pretrained"]) in twice else "")
        for column, cell in r.items():
            bench, _, sub = column.partition("::")
            if bench in BENCHES:
                want[(BENCHES[bench], *names[bench](sub), key)] = cell
    got = {(r["benchmark"], r["config"], r["metric"], r["checkpoint"]): r["value"] for r in study_rows()}
    assert len(want) == 202 * 37 and got == want


def test_each_figure_is_a_whole_number_of_its_items():
    """The dataset version and item count of a row are what its figure can be: k/n for a whole k of its n_items. So
    the study measured SugarCREPE after upstream 546eb51 (swap_obj 245 items: no figure is k/246), VALSE's valid
    items (the paper's #Valid), Winoground's 400, and CREPE on pools of another size than vlprobe's productivity
    CSVs; the SugarCREPE authors' swap_obj is 151/246, before 546eb51."""
    checked = Counter()
    for r in rows("published.csv"):
        if r["n_items"] and r["source"] == "vl_compo":
            assert is_fraction(float(r["value"]), int(r["n_items"])), r
            checked[r["benchmark"]] += 1
    assert checked == {"sugar_crepe": 202 * 7, "valse": 202 * 11, "winoground": 202 * 3, "crepe": 202 * 3}
    swap_obj = [float(r["value"]) for r in study_rows() if r["config"] == "swap_obj"]
    assert not any(is_fraction(v, 246) for v in swap_obj) and find("sugar_crepe").counts["swap_obj"] == 245
    crepe = find("crepe").counts
    for kind, n in (("atom", 17698), ("swap", 7405), ("negate", 17303)):  # vlprobe's pins pool other counts
        assert sum(v for k, v in crepe.items() if k.startswith(f"prod_{kind}_")) != n
    authors = {f.config: f for f in P.published_for("ViT-B-32/openai", "sugar_crepe") if f.source.key != "vl_compo"}
    assert authors["swap_obj"].n_items == 246 and round(100 * 151 / 246, 2) == authors["swap_obj"].value


def test_the_readme_cross_checks():
    """The shared README's cross-checks, at the figures' full precision: the study's ViT-B-32/openai SugarCREPE row
    is the authors' (issue #3) to the printed digit except swap_obj (150/245 against 151/246) and add_obj (the
    authors print 77.20; 1592/2062 = 77.2066, the study's, rounds to 77.21); its Winoground row is 125 / 44 / 35 of
    400, the paper's 123 / 42 / 32."""
    figs = P.published_for("ViT-B-32/openai")
    study = {(f.benchmark, f.config, f.metric): f.value for f in figs if f.source.key == "vl_compo"}
    authors = {f.config: f.value for f in figs if f.source.key == "sugar_crepe_issue3"}
    off = {c: round(abs(study[("sugar_crepe", c, "acc_r")] - v), 4) for c, v in authors.items()
           if round(study[("sugar_crepe", c, "acc_r")], 2) != v}
    assert off == {"swap_obj": 0.1555, "add_obj": 0.0066}
    assert study[("sugar_crepe", "swap_obj", "acc_r")] == 100 * 150 / 245
    paper = {f.metric: f.value for f in figs if f.source.key == "winoground_table3"}
    assert {m: round(study[("winoground", "default", m)] * 4) for m in ("text", "image", "group")} == \
        {"text": 125, "image": 44, "group": 35}
    assert {m: round(v * 4) for m, v in paper.items()} == {"text": 123, "image": 42, "group": 32}


def test_figures_copied_from_the_papers_equal_paper_results():
    paper = {(r["benchmark"], r["metric"], r["config"]): float(r["value"]) for r in rows("paper_results.csv")
             if (r["benchmark"], r["table"], r["model"]) in {("winoground", "Table 3", "CLIP (ViT-B/32)"),
                                                            ("bla", "Thesis Table 6.3", "CLIP")}}
    copied = {(f.benchmark, f.metric, find(f.benchmark).paper_config(f.config)): f.value for f in P.figures()
              if f.source.key in ("winoground_table3", "bla_thesis")}
    assert copied == paper and len(paper) == 12


def test_every_figure_names_what_vlprobe_names():
    """Benchmarks, metrics and configs are vlprobe's (a config, a group of the summary, or a counted config);
    CREPE's pools per negative type are the one thing vlprobe does not build (it scores them per complexity)."""
    for f in P.figures():
        bench = find(f.benchmark)
        assert bench is not None and f.metric in METRIC_ORDER, f
        known = set(bench.configs) | {g.name for g in bench.groups} | set(bench.counts)
        assert f.config in known or (f.benchmark == "crepe" and f.config in {"prod_atom", "prod_swap", "prod_negate"})
        assert f.source.rule and f.source.reference and not math.isnan(f.value)
    assert {f.source.key for f in P.figures()} == {k for k, _ in P.sources()}  # no source without figures


def test_every_benchmark_declares_its_data_version():
    """Each benchmark says which upstream version of its data it builds: its pinned commit, or for SugarCREPE the
    commit that last changed the data (546eb51, an ancestor of the pinned 0047054: swap_obj 245 items)."""
    for bench in benchmarks().values():
        assert bench.data_version, bench.name
        if bench.upstream is not None and bench.name != "sugar_crepe":
            assert bench.upstream.commit.startswith(bench.data_version), bench.name
    assert find("sugar_crepe").data_version == "546eb51" and find("sugar_crepe").upstream.commit.startswith("0047054")
    versions = {(f.source.key, f.benchmark): f.dataset_version for f in P.figures()}
    assert versions[("vl_compo", "sugar_crepe")] == "546eb51" and versions[("sugar_crepe_issue3", "sugar_crepe")] == "6e45274"


def test_version_notes_say_what_differs():
    swap = {f.source.key: f for f in P.published_for("open_clip:ViT-B-32/openai", "sugar_crepe") if f.config == "swap_obj"}
    assert P.version_note(swap["sugar_crepe_issue3"]) == \
        "measured on the 6e45274 version of the data, not 546eb51 (246 items, 1 more than vlprobe's 245)"
    assert P.version_note(swap["vl_compo"]) is None
    assert P.version_note(swap["vl_compo"], n_items=20) == "measured on 245 items, 225 more than vlprobe's 20"
    coordination = [f for f in P.published_for("ViT-B-32/openai", "bla") if f.config == "coordination"][0]
    assert P.version_note(coordination) == \
        "measured on the thesis version of the data, not 05009a7 (800 items, 146 more than vlprobe's 654)"


def test_names_map_to_one_checkpoint_each_and_resolve():
    table = rows("checkpoint_names.csv")
    names = [r["name"] for r in table]
    assert len(names) == len(set(names))  # no name stands for two checkpoints
    checkpoints = {f.checkpoint for f in P.figures()}
    for r in table:
        assert r["checkpoint"] in checkpoints and r["kind"] in ("open_clip", "hf-hub", "transformers")
        assert r["name"] not in checkpoints or r["name"] == r["checkpoint"]  # no name is another checkpoint's key
        figs = P.published_for(r["name"])
        assert figs and {f.checkpoint for f in figs} == {r["checkpoint"]}
        if r["kind"] == "open_clip":
            assert r["name"] == f"open_clip:{r['checkpoint']}"
        if r["kind"] == "transformers":
            assert r["evidence"] and ":" not in r["name"] and r["name"].count("/") == 1
    for model, checkpoint in [("openai/clip-vit-base-patch32", "ViT-B-32/openai"),
                              ("openai/clip-vit-large-patch14", "ViT-L-14/openai"),
                              ("laion/CLIP-ViT-B-32-laion2B-s34B-b79K", "ViT-B-32/laion2b_s34b_b79k"),
                              ("hf-hub:laion/CLIP-ViT-B-32-laion2B-s34B-b79K", "ViT-B-32/laion2b_s34b_b79k"),
                              ("open_clip:ViT-B-32/openai", "ViT-B-32/openai"), ("ViT-B-32/openai", "ViT-B-32/openai"),
                              ("open_clip:NegCLIP/coco-ft", "NegCLIP/coco-ft"),  # e.g. a copy registered so
                              ("hf-hub:timm/vit_base_patch32_clip_224.laion400m_e32", "ViT-B-32-quickgelu/laion400m_e32")]:
        assert P.checkpoint_of(model) == checkpoint, model
    assert P.checkpoint_of("models/mini-clip") is None and P.published_for("models/mini-clip") == []


def test_open_clip_names_are_open_clip_s_own():
    """Each open_clip: name is in open_clip's pretrained table, and each hf-hub: name is the repository that table
    loads the same checkpoint from, with the activation vlprobe builds for that name (a QuickGELU repository is the
    -quickgelu config's, or the openai weights', which open_clip built with QuickGELU)."""
    open_clip = pytest.importorskip("open_clip")
    listed = set(open_clip.list_pretrained())
    for r in rows("checkpoint_names.csv"):
        arch, tag = r["checkpoint"].split("/")
        if r["kind"] == "open_clip":
            assert (arch, tag) in listed, r
        if r["kind"] == "hf-hub":
            cfg = open_clip.get_pretrained_cfg(arch, tag)
            assert cfg["hf_hub"] == r["name"].removeprefix("hf-hub:") + "/"
            built_quick = bool((open_clip.get_model_config(arch) or {}).get("quick_gelu")) or tag == "openai"
            assert built_quick == bool(cfg.get("quick_gelu", False)), r
    study = {tuple(f.checkpoint.split("/")) for f in P.figures()}
    assert len(study & listed) == 85
    assert {r["checkpoint"] for r in rows("checkpoint_names.csv") if r["kind"] == "open_clip"} == \
        {f"{a}/{t}" for a, t in study & listed}
