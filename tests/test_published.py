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
        "measured on the 6e45274 version of the data, not 546eb51 (246 items against 245)"
    assert P.version_note(swap["vl_compo"]) is None
    assert P.version_note(swap["vl_compo"], n_items=20) == "measured on 245 items against 20"
    # a run on a folder built from the older data: the authors' figure is its own version, the study's another
    assert P.version_note(swap["sugar_crepe_issue3"], "6e45274", 246) is None
    assert P.version_note(swap["vl_compo"], "6e45274", 246) == \
        "measured on the 546eb51 version of the data, not 6e45274 (245 items against 246)"
    coordination = [f for f in P.published_for("ViT-B-32/openai", "bla") if f.config == "coordination"][0]
    assert P.version_note(coordination) == \
        "measured on the thesis version of the data, not 05009a7 (800 items against 654)"
    add_obj = [f for f in P.published_for("ViT-B-32/openai", "sugar_crepe") if f.source.key != "vl_compo"][0]
    assert P.version_note(add_obj) == "measured on the 6e45274 version of the data, not 546eb51 (the same 2,062 items)"


def test_which_checkpoint_a_run_is():
    """The checkpoint the scorer recorded (an open_clip name, or the copy registered under it), else the one the
    model's name stands for, else a Hugging Face cache snapshot's repository's; any other folder is none."""
    assert P.run_checkpoint("open_clip:ViT-B-32/openai", "ViT-B-32/openai") == "ViT-B-32/openai"
    assert P.run_checkpoint("open_clip:NegCLIP/coco-ft", "NegCLIP/coco-ft") == "NegCLIP/coco-ft"
    assert P.run_checkpoint("open_clip:ViT-B-32/my_own", "ViT-B-32/my_own") == "ViT-B-32/my_own"  # no figures
    assert P.run_checkpoint("openai/clip-vit-large-patch14") == "ViT-L-14/openai"
    assert P.run_checkpoint("hf-hub:laion/CLIP-ViT-B-32-laion2B-s34B-b79K") == "ViT-B-32/laion2b_s34b_b79k"
    snapshot = "models--laion--CLIP-ViT-B-32-laion2B-s34B-b79K/snapshots/1a25a446712ba5ee05982a381eed697ef9b435cf"
    assert P.run_checkpoint(f"/home/me/.cache/huggingface/hub/{snapshot}/") == "ViT-B-32/laion2b_s34b_b79k"
    assert P.run_checkpoint(f"C:\\hf\\hub\\{snapshot.replace('/', chr(92))}") == "ViT-B-32/laion2b_s34b_b79k"
    for model in ("./clip-vit-base-patch32", "/data/models--openai--clip-vit-base-patch32", "mini-clip", None):
        assert P.run_checkpoint(model) is None, model


# ---- a run beside them (vlprobe.results.summary.published_rows) -------------------------------------------------

OPENAI_B32 = {"model_id": "openai/clip-vit-base-patch32", "family": "dual", "dtype": "float32"}


def _accuracy_entry(config: str, right: int, n: int, bench: str = "sugar_crepe", **metrics) -> dict:
    return {"benchmark": bench, "dataset": f"./{bench}", "config": config, "split": "test",
            "dataset_version": find(bench).data_version, "metrics": {"acc_r": right / n, "n_items": n, **metrics}}


def _published(entries, settings=None, model=OPENAI_B32, name="sugar_crepe"):
    from vlprobe.results.summary import summarize

    block = summarize(entries, settings or {"ties": "strict"}, model)[name]
    return block, {(p.source.split(" (")[0], p.config, p.metric): p for p in block.published}


def test_a_run_beside_the_figures_for_its_checkpoint_by_hand():
    """Per source each config the run has and each aggregate over them: the published figure (a fraction), the run's,
    the difference; SWAP is the source's figures weighted by their own items (the benchmark's micro mean), ADD over
    the one subset this run has; the known causes beside each."""
    block, got = _published([_accuracy_entry("swap_obj", 150, 245, n_ties=3), _accuracy_entry("swap_att", 426, 666),
                             _accuracy_entry("add_att", 476, 692)])
    swap_obj = got[("SugarCREPE authors", "swap_obj", "acc_r")]
    assert (swap_obj.value, swap_obj.ours, swap_obj.dataset_version) == (0.6138, 150 / 245, "6e45274")
    assert swap_obj.difference == pytest.approx(150 / 245 - 0.6138)
    assert swap_obj.note == ("measured on the 6e45274 version of the data, not 546eb51 (246 items against 245); "
                             "3 tied comparisons in this run, counted strict")
    study = got[("the study", "swap_obj", "acc_r")]
    assert study.value == pytest.approx(150 / 245) and study.difference == pytest.approx(0, abs=1e-12)
    assert study.note == "3 tied comparisons in this run, counted strict" and study.dataset_version == "546eb51"
    swap = got[("SugarCREPE authors", "swap", "acc_r")]
    assert swap.value == pytest.approx((61.38 * 246 + 63.96 * 666) / 912 / 100)
    assert swap.ours == pytest.approx((150 + 426) / (245 + 666))
    assert swap.note == ("the mean over the items of the source's 2 figures; measured on the 6e45274 version of the "
                         "data, not 546eb51; swap_obj: 246 items against 245")
    add = got[("the study", "add", "acc_r")]
    assert add.value == got[("the study", "add_att", "acc_r")].value and "this run's 1 of 2" in add.note
    assert len(got) == 2 * 5 and ("the study", "replace", "acc_r") not in got
    assert block.notes[-1] == ("beside the figures published for checkpoint ViT-B-32/openai (model "
                               "openai/clip-vit-base-patch32): SugarCREPE authors (sugar-crepe#3), the study (Oh et al. 2024)")


def test_known_causes_are_said_beside_each_figure():
    entries = [_accuracy_entry("swap_obj", 150, 245)]
    entries[0]["data"] = {"truncation": {"tied_items": 2, "collapsed_items": 2, "text_max_length": 77}}
    _, got = _published(entries, {"ties": "lenient", "limit": 245}, {**OPENAI_B32, "dtype": "float16"})
    assert got[("the study", "swap_obj", "acc_r")].note == (
        "2 items whose texts the model reads as one input; ties lenient (authors: strict); this run scored the first "
        "245 rows of each split only (--limit); dtype float16")
    # a pooled entry's per-subset rows: their own tied comparisons, not the pooled entry's count of texts read as one
    pooled = _accuracy_entry("all", 151, 245)
    pooled["metrics"]["per_tag"] = {"subset=swap_obj": {"acc_r": 150 / 245, "n_items": 245, "n_ties": 1}}
    pooled["data"] = {"truncation": {"tied_items": 3, "collapsed_items": 3}}
    _, got = _published([pooled])
    assert got[("the study", "swap_obj", "acc_r")].note == "1 tied comparison in this run, counted strict"
    # all tied: N/A in the run, beside it the figure the authors' code prints
    na = _accuracy_entry("swap_obj", 0, 245)
    na["metrics"] = {"acc_r": None, "n_items": 245, "n_ties": 245, "na_reason": "every item tied"}
    na["authors_rule"] = {"ties": "strict", "metrics": {"acc_r": 0.0, "n_items": 245}}
    _, got = _published([na])
    assert got[("the study", "swap_obj", "acc_r")].ours == 0.0


def test_the_other_benchmarks_and_none():
    """VALSE's Avg. from the study's 11 instruments (unweighted); Winoground's text, image and group from the paper and
    the study; a benchmark with no figure for the checkpoint, and a model that is none, say so in one line."""
    valse = [_accuracy_entry(c, 3, 4, "valse") for c in find("valse").configs]
    block, got = _published(valse, name="valse")
    figures = {f.config: f.value for f in P.published_for("ViT-B-32/openai", "valse")}
    assert got[("the study", "avg", "acc_r")].value == pytest.approx(sum(figures.values()) / 11 / 100)
    assert len(got) == 12 and "version" not in got[("the study", "avg", "acc_r")].note  # the study states none
    wino = {"benchmark": "winoground", "dataset": "facebook/winoground", "config": "default", "split": "test",
            "dataset_version": "facebook/winoground",
            "metrics": {"text": 0.3125, "image": 0.11, "group": 0.0875, "n_items": 400}}
    _, got = _published([wino], name="winoground")
    assert {k: round(100 * p.difference, 2) for k, p in got.items()} == {
        ("Winoground paper, Table 3", "default", "text"): 0.5, ("Winoground paper, Table 3", "default", "image"): 0.5,
        ("Winoground paper, Table 3", "default", "group"): 0.75, ("the study", "default", "text"): 0.0,
        ("the study", "default", "image"): 0.0, ("the study", "default", "group"): 0.0}
    pp = [{**_accuracy_entry("swap_att", 1, 2, "sugar_crepe_pp"), "metrics": {"set_acc": 0.5, "n_items": 2}}]
    block, got = _published(pp, name="sugar_crepe_pp")
    assert not got and block.notes[-1] == "no published figure for checkpoint ViT-B-32/openai on SugarCREPE++"
    block, got = _published([_accuracy_entry("swap_obj", 1, 2)], model={"model_id": "/models/mini-clip"})
    assert not got and block.notes[-1] == ("no published figure for this model (mini-clip): it is no checkpoint of "
                                           "vlprobe/data/checkpoint_names.csv")
    from vlprobe.results.summary import summarize

    plain = summarize([_accuracy_entry("swap_obj", 1, 2)])["sugar_crepe"]  # no model given: nothing said
    assert plain.published == () and not any("published" in n for n in plain.notes)


def test_a_folder_records_the_version_of_its_data(tmp_path, monkeypatch):
    """A folder's vlprobe.yaml says which version of the benchmark's data it holds (its builder writes the
    benchmark's declared one); a folder without says nothing, and the benchmark's declared version stands."""
    from vlprobe.dataset.folder import write_spec
    from vlprobe.dataset.spec import ItemSpec, SpecError, dataset_version

    text = "images: [image]\ntexts: [caption, negative_caption]\ngold: [[1, 0]]\n"
    spec = ItemSpec.from_file(write_spec(tmp_path, text, "sugar_crepe"))
    assert spec.data_version == "546eb51" and dataset_version(spec, "sugar_crepe") == "546eb51"
    older = ItemSpec.from_dict({**yaml_of(text), "benchmark": "sugar_crepe", "data_version": "6e45274"})
    assert dataset_version(older, "sugar_crepe") == "6e45274"
    assert dataset_version(ItemSpec.from_dict(yaml_of(text)), "sugar_crepe") == "546eb51"
    assert dataset_version(ItemSpec.from_dict(yaml_of(text)), None) is None
    assert ItemSpec.from_dict({**yaml_of(text), "data_version": "0123456"}).data_version == "0123456"
    with pytest.raises(SpecError, match="'data_version' must name a version"):
        ItemSpec.from_dict({**yaml_of(text), "data_version": ["x"]}, source="vlprobe.yaml")
    with pytest.raises(SpecError, match="configs.swap_obj"):  # one version per folder, not per config
        ItemSpec.from_dict({**yaml_of(text), "configs": {"swap_obj": {"data_version": "x"}}})
    # a version YAML would read as a number is written quoted
    import dataclasses

    from vlprobe import benchmarks

    real = benchmarks.get
    monkeypatch.setattr(benchmarks, "get", lambda name: dataclasses.replace(real(name), data_version="0123456"))
    written = write_spec(tmp_path / "n", text, "sugar_crepe")
    assert 'data_version: "0123456"' in written.read_text() and ItemSpec.from_file(written).data_version == "0123456"


def yaml_of(text: str) -> dict:
    import yaml

    return yaml.safe_load(text)


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
