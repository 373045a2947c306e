"""What a first visitor meets in the Space (issue 37), without a browser: the model menu and its
default (a real model when the Hub answers, mini-clip offline), a gallery the chosen model can read,
TIE verdicts, every bad number answered in one sentence naming its box, only configs with rows,
stratified samples, the run's results.json feeding the Results tab, the tie policy beside the
authors' rule, the cause of collapsed texts, the metric glossary, and hosted mode's dataset list.
(test_browser_space.py checks the same in Chromium.)"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import datasets
import numpy as np
import pytest
from helpers import png

from vlprobe.dataset.folder import ConfigDecl, card_metadata, write_card, write_split
from vlprobe.dataset.items import Item
from vlprobe.demo import benchmark as bench
from vlprobe.demo import examples, glossary, hub, models, settings
from vlprobe.demo import score as scoring
from vlprobe.demo.settings import Settings, SpaceError

pytestmark = pytest.mark.usefixtures("clean_space_env")  # tests/conftest.py
REPO = Path(__file__).resolve().parents[1]
MINI_CLIP = REPO / "models" / "mini-clip"
needs_mini_clip = pytest.mark.skipif(not (MINI_CLIP / "config.json").is_file(), reason="models/mini-clip is not here")


def word_folder(root: Path) -> Path:
    """A folder named ``valse`` (so its benchmark is VALSE) with config ``words`` (40 rows: the caption
    and foil differ only in a word mini-clip does not know; tag ``kind``: 30 a, 6 b, 4 c) and config
    ``plurality`` built with 0 rows, as a partial build leaves it."""
    folder = Path(root) / "valse"
    feats = datasets.Features({"id": datasets.Value("string"), "image": datasets.Image(),
                               "caption": datasets.Value("string"), "foil": datasets.Value("string"),
                               "kind": datasets.Value("string")})
    kinds = ["a"] * 30 + ["b"] * 6 + ["c"] * 4
    rows = {"id": [f"r{i}" for i in range(40)], "image": [{"bytes": png((6 * i, 90, 200)), "path": None} for i in range(40)],
            "caption": ["a red dog"] * 40, "foil": ["a red cat"] * 40,
            "kind": kinds}
    decls = [ConfigDecl("words", feats, default=True), ConfigDecl("plurality", feats)]
    write_card(folder, card_metadata(decls, license="cc0-1.0", pretty_name="words"), "# words\n\nFor tests.")
    write_split(folder, "words", "test", datasets.Dataset.from_dict(rows, features=feats))
    write_split(folder, "plurality", "test", datasets.Dataset.from_dict({k: [] for k in rows}, features=feats))
    (folder / "vlprobe.yaml").write_text("benchmark: valse\nid: id\nimages: [image]\ntexts: [caption, foil]\n"
                                         "gold: [[1, 0]]\ntags: [kind]\n")
    return folder


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return word_folder(tmp_path_factory.mktemp("visitor"))


@pytest.fixture
def offline(monkeypatch):
    monkeypatch.setattr(hub, "hub_reachable", lambda: False)


@pytest.fixture
def app(repo_root, tmp_path_factory):
    """space/app.py imported offline, its root's dataset discovery pointed at nothing built."""
    mp = pytest.MonkeyPatch()
    mp.setattr(hub, "hub_reachable", lambda: False)
    mp.setenv("VLPROBE_ROOT", str(tmp_path_factory.mktemp("empty_root")))
    spec = importlib.util.spec_from_file_location("vlprobe_space_app_visitor", repo_root / "space" / "app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    mp.undo()


# ---- item 1: the model menu ------------------------------------------------------------------------

def test_the_menu_file_offers_well_known_models_and_mini_clip_last(repo_root, offline):
    here = Settings(repo_root, repo_root / "space" / "models.txt")
    menu = here.model_menu()
    assert [e.id for e in menu] == ["openai/clip-vit-base-patch32", "google/siglip-base-patch16-224",
                                    "Salesforce/blip-itm-base-coco", "models/mini-clip"]
    assert all(e.about for e in menu)
    about = here.about_model("models/mini-clip")
    assert "shapes" in about and "colours" in about and "cannot read photos" in about and "\n" not in about


def test_the_default_is_a_real_model_when_the_hub_answers_and_mini_clip_offline(repo_root, monkeypatch):
    here = Settings(repo_root, repo_root / "space" / "models.txt")
    monkeypatch.setattr(hub, "hub_reachable", lambda: False)
    assert here.default_choice() == "models/mini-clip"
    assert here.resolve_model("") == str((repo_root / "models" / "mini-clip").resolve())
    monkeypatch.setattr(hub, "hub_reachable", lambda: True)
    assert here.default_choice() == "openai/clip-vit-base-patch32"
    assert here.resolve_model("") == "openai/clip-vit-base-patch32"
    assert here.resolve_model("models/mini-clip") == str((repo_root / "models" / "mini-clip").resolve())
    monkeypatch.setenv(settings.ENV_DEFAULT_MODEL, "google/siglip-base-patch16-224")  # the owner's choice wins
    assert here.default_choice() == "google/siglip-base-patch16-224"
    monkeypatch.setenv(settings.ENV_MODELS, "org/one,org/two")  # an allow list: these, then the offline model
    assert here.model_choices() == ["google/siglip-base-patch16-224", "org/one", "org/two", "models/mini-clip"]
    with pytest.raises(SpaceError, match="not allowed on this Space"):
        here.resolve_model("openai/clip-vit-base-patch32")


def test_the_hub_is_asked_once_with_a_short_timeout_and_the_answer_kept(monkeypatch):
    from huggingface_hub import constants

    calls = []

    class Session:
        def head(self, url, timeout):
            calls.append((url, timeout))
            raise OSError("no network")

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr("huggingface_hub.get_session", lambda: Session())
    monkeypatch.setattr(hub, "_hub_answer", [])
    assert hub.hub_reachable() is False and hub.hub_reachable() is False
    assert len(calls) == 1 and calls[0][1] <= 3.0
    monkeypatch.setattr(hub, "_hub_answer", [])
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    assert hub.hub_reachable() is False and len(calls) == 1  # offline mode: not even asked


def test_a_bad_menu_line_is_refused_naming_the_file_and_line(tmp_path):
    menu = tmp_path / "models.txt"
    menu.write_text("# a comment\nopenai/clip-vit-base-patch32 | CLIP\n../secret | nothing\n")
    with pytest.raises(SpaceError, match=r"^models.txt line 3: '../secret' is not a Hub model id"):
        settings.read_model_menu(menu)


@needs_mini_clip
def test_the_gallery_offers_only_examples_the_model_can_read(tmp_path):
    from transformers import AutoTokenizer

    shapes = examples.scene_examples(tmp_path)
    photo = examples.Example("dataset:sugar_crepe/add_obj", "sugar_crepe: add_obj (pairwise)", "pairwise",
                             shapes[0].images, ("a brown dog on the grass",), ("a brown cat on the grass",))
    mini = AutoTokenizer.from_pretrained(MINI_CLIP)
    assert examples.readable([photo, *shapes], mini) == shapes  # mini-clip: its own vocabulary only
    assert examples.readable([photo, *shapes], None) == [photo, *shapes]  # a sub-word tokenizer reads all


def test_the_offline_page_offers_mini_clip_and_its_readable_gallery(app):
    about, keys, *buttons = app.update_model("models/mini-clip")
    assert about.startswith("mini-clip (offline") and {"scene:0", "scene:1", "scene:2"} <= set(keys)
    assert len(buttons) == examples.GALLERY_SLOTS


def test_offline_the_models_that_cannot_be_had_are_not_offered_and_why_is_said_once(repo_root, offline, monkeypatch):
    """No Hub and nothing cached: the menu's Hub models are left out, and one sentence names them and says why; one
    in the local Hugging Face cache is offered."""
    here = Settings(repo_root, repo_root / "space" / "models.txt")
    monkeypatch.setattr("huggingface_hub.try_to_load_from_cache", lambda *a, **k: None)
    ok, missing = here.models_at_hand()
    assert ok == ["models/mini-clip"] and missing == ["openai/clip-vit-base-patch32", "google/siglip-base-patch16-224",
                                                      "Salesforce/blip-itm-base-coco"]
    assert here.unavailable_text(missing) == (
        "CLIP ViT-B/32, SigLIP base and BLIP ITM base are not offered: this Space cannot reach the Hugging Face Hub now, "
        "and they are not in its cache.")
    assert here.unavailable_text(["org/other"]) == ("org/other is not offered: this Space cannot reach the Hugging Face "
                                                    "Hub now, and it is not in its cache.")
    assert here.unavailable_text([]) == ""
    monkeypatch.setattr("huggingface_hub.try_to_load_from_cache",
                        lambda repo, name, **k: "/cache/config.json" if repo.startswith("openai/") else None)
    assert here.models_at_hand()[0] == ["openai/clip-vit-base-patch32", "models/mini-clip"]
    monkeypatch.setattr(hub, "hub_reachable", lambda: True)  # online: every one
    assert here.models_at_hand() == (here.model_choices(), [])


@pytest.mark.slow
def test_the_offline_page_offers_only_the_models_it_can_have(app, monkeypatch):
    """The page built offline with an empty cache: both Model boxes offer mini-clip alone, and the sentence saying
    why is shown once, under the Score tab's box."""
    monkeypatch.setattr("huggingface_hub.try_to_load_from_cache", lambda *a, **k: None)
    spec = importlib.util.spec_from_file_location("vlprobe_space_app_visitor_offline", app.__file__)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    boxes = [b for b in module.demo.blocks.values() if getattr(b, "label", None) == "Model"]
    assert len(boxes) == 2 and all([v for _, v in b.choices] == ["models/mini-clip"] for b in boxes)
    notes = [b for b in module.demo.blocks.values() if getattr(b, "elem_id", None) == "models-missing"]
    assert len(notes) == 1 and notes[0].visible and notes[0].value.startswith("CLIP ViT-B/32, SigLIP base and BLIP")


# ---- item 2: ties ---------------------------------------------------------------------------------

@pytest.mark.parametrize("ties, counted, value", [("strict", "counted as wrong", "0%"),
                                                  ("half", "counted as half right", "50%"),
                                                  ("lenient", "counted as right", "100%")])
def test_a_pairwise_tie_says_tie_and_how_the_policy_counts_it(ties, counted, value):
    from vlprobe.metric import compute

    item = Item(id="t", images=(None,), texts=("a brown dog", "a brown cat"), gold=[[1, 0]])
    S = np.array([[3.974, 3.974]])
    line = scoring.verdict_text("pairwise", compute([S], [item.gold.astype(int)], ties=ties), item, S, ties)
    assert line.startswith("TIE: the caption and the foil score exactly the same (3.974 each)")
    assert f"; a tie is {counted} under the {ties} policy" in line and line.endswith(f"(pairwise, VALSE acc_r = {value})")
    assert "CORRECT" not in line


def test_group_and_set_ties():
    from vlprobe.metric import compute

    group = Item(id="g", images=(None, None), texts=("c1", "c2"), gold=np.eye(2, dtype=bool))
    S = np.full((2, 2), 1.5)
    line = scoring.verdict_text("group", compute([S], [group.gold.astype(int)]), group, S)
    assert line.startswith("TIE: all four image-caption scores are exactly equal (1.500)")
    one = Item(id="s", images=(None,), texts=("c1", "c2", "f1", "f2"), gold=[[1, 1, 0, 0]])
    S = np.array([[2.0, 1.0, 1.0, 0.5]])  # c2 ties with f1: one of four comparisons
    line = scoring.verdict_text("set", compute([S], [one.gold.astype(int)]), one, S)
    assert line.startswith("MIXED") and line.endswith(
        "1 tied comparison (exactly equal scores), counted as wrong under the strict policy, as the papers count it")


@needs_mini_clip
def test_texts_the_model_reads_as_the_same_tokens_tie(tmp_path):
    """mini-clip maps 'dog' and 'cat' to its one unknown id: both texts are one input, one score.
    (Identical inputs score identically on every image once the engine gathers each distinct pair's
    score; this scene already gives bit-identical scores.)"""
    image, _, _, _ = examples.scene_examples(tmp_path)[0].fields()
    out = scoring.score(Settings(tmp_path), image, None, "a brown dog", "a brown cat", str(MINI_CLIP),
                        cache=models.ModelCache(capacity=1))
    assert out.scores[0, 0] == out.scores[0, 1]
    assert out.kind == "tie" and out.verdict.startswith("TIE: the caption and the foil score exactly the same")
    assert "counted as wrong under the strict policy" in out.verdict and "“dog”, “cat”" in out.verdict
    ax = out.chart.axes[0]
    assert ax.get_xlim() == (-1.8, 1.8) and not ax.xaxis.get_offset_text().get_text()  # no '1e-6' axis


# ---- item 3: every input answered in one sentence naming its box --------------------------------------

@pytest.mark.parametrize("items, boot, ties, message", [
    (0, 0, "strict", "Items: 0 is not allowed; choose a whole number from 1 to 1,000"),
    (5000, 0, "strict", "Items: 5000 is not allowed; choose a whole number from 1 to 1,000"),
    (2.5, 0, "strict", "Items: 2.5 is not allowed; choose a whole number from 1 to 1,000"),
    ("many", 0, "strict", "Items: many is not allowed; choose a whole number from 1 to 1,000"),
    (10, 5000, "strict", "Bootstrap resamples: 5000 is not allowed; choose a whole number from 0 to 2,000"),
    (10, 99999, "strict", "Bootstrap resamples: 99999 is not allowed; choose a whole number from 0 to 2,000"),
    (10, -1, "strict", "Bootstrap resamples: -1 is not allowed; choose a whole number from 0 to 2,000"),
    (10, 0, "often", "A tie counts as: 'often' is not a tie policy; choose authors, strict, half or lenient"),
    (None, 0, "strict", "Items: the box is empty; type a whole number from 1 to 1,000"),
    (10, "", "strict", "Bootstrap resamples: the box is empty; type a whole number from 0 to 2,000"),
])
def test_bad_numbers_are_answered_naming_the_box_and_its_range(items, boot, ties, message):
    with pytest.raises(SpaceError) as err:
        bench.check_inputs(items, boot, ties)
    assert str(err.value) == message


def test_a_failed_run_clears_every_result_of_the_previous_one(app):
    """The failure's outputs are as many as a run's, and none keeps the last run's results."""
    out = app.run_benchmark("valse", "words", None, "models/mini-clip", 10, "strict", 5000)
    assert out[0] == ("⚠️ **Cannot run the benchmark:** Bootstrap resamples: 5000 is not allowed; "
                      "choose a whole number from 0 to 2,000")
    assert len(out) == len(app._benchmark_failed("x"))
    assert out[1] == "" and out[5] is None and out[13] is None  # chart, the run, the results file
    assert out[14] == "" and out[15] is None and out[16] is None  # the item shown: caption and images


# ---- item 5: only configs with rows ---------------------------------------------------------------------

def test_a_config_without_rows_is_not_offered_and_typing_it_says_how_to_build_it(folder, monkeypatch):
    monkeypatch.setenv(settings.ENV_DATASETS, str(folder))
    here = Settings(folder.parent)
    assert examples.dataset_configs(here, str(folder)) == ["words"]
    with pytest.raises(SpaceError) as err:
        examples.dataset_splits(here, str(folder), "plurality")
    assert str(err.value) == ("valse/plurality has no rows in this build; build it with `vlprobe build valse` "
                              "(with its images) or choose another config")


# ---- item 7: stratified samples -----------------------------------------------------------------------

def test_samples_spread_over_the_tags_in_proportion_seeded_in_order():
    from vlprobe.dataset.spec import ItemSpec

    kinds = ["a"] * 30 + ["b"] * 6 + ["c"] * 4  # the first 10 rows are all 'a'
    ds = datasets.Dataset.from_dict({"id": [str(i) for i in range(40)], "kind": kinds, "sub": ["x", "y"] * 20})
    spec = ItemSpec.from_dict({"id": "id", "images": [], "texts": [], "gold": [[1]], "tags": ["kind", "sub"]})
    sample = examples.sample_rows(ds, spec, 10)
    assert sample.column == "kind" and sample.counts == {"a": 7, "b": 2, "c": 1}
    assert sample.rows == sorted(sample.rows) and len(set(sample.rows)) == 10
    assert [kinds[i] for i in sample.rows].count("c") == 1
    assert examples.sample_rows(ds, spec, 10).rows == sample.rows  # seeded
    assert examples.sample_rows(ds, spec, 10, seed=1).rows != sample.rows
    assert examples.sample_rows(ds, spec, 2).counts == {"a": 2}  # fewer rows than values: by the largest shares
    assert examples.sample_rows(ds, spec, 3).counts == {"a": 1, "b": 1, "c": 1}  # every value when n allows
    assert examples.sample_rows(ds, spec, 40).rows == list(range(40))
    assert "10 of 40 items, sampled across kind (stratified, seed 0): 7 a, 2 b, 1 c" == sample.describe()
    # the column naming the folder's other configs wins (an 'all' config's sub-configs)
    assert examples.sample_rows(ds, spec, 10, configs=["x", "y", "all"]).column == "sub"


# ---- items 4-8 on a run: results file, glossary, ties beside the authors' rule, the collapse's cause -----

@needs_mini_clip
def test_a_run_on_a_sample_writes_a_results_file_the_results_tab_reads(app, folder, monkeypatch):
    monkeypatch.setenv(settings.ENV_DATASETS, str(folder))
    out = bench.run_benchmark(app.SETTINGS, str(folder), "words", None, "models/mini-clip", 10, "lenient", 0,
                              cache=models.ModelCache(capacity=1), results_dir=app.RESULTS_DIR)
    assert "10 of 40 items, sampled across kind (stratified, seed 0): 7 a, 2 b, 1 c" in out.summary
    # the texts differ only in words mini-clip does not know: the cause is named, not truncation
    assert "does not know “dog”, “cat”" in out.summary and "truncation" not in out.summary
    assert all("truncation" not in str(r) for r in out.metrics.rows)
    # the folder records VALSE, whose authors count a tie as wrong: a lenient run says so, with their figure
    assert out.notes and out.notes[0].startswith("Ties are counted as right here (lenient), not as the VALSE authors "
                                                 "count them (strict: ")
    doc = json.loads(Path(out.results_file).read_text())
    theirs = ((doc["results"][0].get("authors_rule") or {}).get("metrics") or {}).get("acc_r")
    from vlprobe.results import pct

    assert (f"Under their rule: acc_r {pct(theirs)}%." in out.notes[0]) if theirs is not None else (
        "Under their rule" not in out.notes[0])  # the figure results.json records under the authors' rule
    assert doc["provenance"]["space_sample"] == {"rows": 10, "of": 40, "stratified_on": "kind",
                                                 "per_value": {"a": 7, "b": 2, "c": 1}, "seed": 0}
    assert str(REPO) not in Path(out.results_file).read_text()  # no server path in a download
    note, _, table, *_ = app.compare_results([out.results_file], False, "auto", "")
    assert note.startswith("1 run;") and table["data"][0][1:4] == ["valse", "words", "test"]
    # browsing reads the sampled rows, not the first ones
    shown = {bench.browse_item(out, r)[3].split("`")[1] for r in range(1, 11)}
    assert shown == {out.items[k].id for k in range(10)} == {f"r{i}" for i in out.rows}


def test_the_glossary_explains_each_metric_and_which_way_is_better():
    text = glossary.glossary_html(["acc_r", "set_error", "unknown_metric"])
    assert "<code>acc_r</code> (higher is better)" in text and "<code>set_error</code> (lower is better)" in text
    assert "unknown_metric" not in text
    assert glossary.chart_label("set_error") == "set_error (lower is better)" and glossary.chart_label("group") == "group"
    assert set(glossary.METRICS) >= set(__import__("vlprobe.benchmarks.base", fromlist=["METRIC_ORDER"]).METRIC_ORDER)


def test_the_papers_tables_come_with_the_glossary(app):
    """The Results tab's papers' tables show acc, auroc, min_p, sentence_acc, set_error...: each is defined under
    them, with which way is better, as in the Benchmark tab."""
    assert glossary.named_in([["config", "metric", "mini-clip · acc_r (%)"]], [["all", "min_p", 0.3]]) == ["acc_r", "min_p"]
    for paper, metrics in (("valse", ("acc_r", "acc", "min_p")), ("bla", ("sentence_acc", "set_acc", "set_error"))):
        papers_html = app.compare_results([], True, paper)[5]
        assert "What the metrics mean" in papers_html, paper
        for m in metrics:
            assert f"<code>{m}</code> ({glossary.better(m)} is better)" in papers_html, (paper, m)


def test_a_tie_policy_other_than_the_authors_rule_is_said_beside_the_table():
    """The summary block of results.json says where a run departs from the authors' tie rule; the
    page says so beside the table, with the figures under their rule."""
    from types import SimpleNamespace

    from vlprobe.benchmarks import get
    from vlprobe.results.schema import AuthorsRule, Departure, Metrics, SummaryBlock, TieRule

    sugar = get("sugar_crepe")
    rule = sugar.tie_rule_for(None)
    run = SimpleNamespace(summary={"sugar_crepe": SummaryBlock(
        "sugar_crepe", tie_policy=TieRule(rule.policy, rule.rule, "lenient"),
        departures=(Departure("ties", "lenient", "...", rule.policy),))})
    scored = SimpleNamespace(benchmark="sugar_crepe", authors_rule=AuthorsRule("strict", Metrics({"acc_r": 0.61})))
    assert bench.tie_policy_notes(run, scored, "lenient", ["acc_r"]) == [
        f"Ties are counted as right here (lenient), not as the {sugar.display} authors count them "
        f"({rule.policy}: {rule.rule}). Under their rule: acc_r 61.0%. Choose {rule.policy} to compare with the paper."]
    same = SimpleNamespace(summary={"sugar_crepe": SummaryBlock("sugar_crepe", tie_policy=TieRule("strict", rule.rule))})
    assert bench.tie_policy_notes(same, scored, "strict", ["acc_r"]) == []
    own = SimpleNamespace(benchmark=None, authors_rule=None)  # a dataset of one's own: no rule recorded
    assert "not comparable" in bench.tie_policy_notes(SimpleNamespace(summary={}), own, "half")[0]


def test_the_collapse_cause_replaces_the_truncation_wording():
    text = "3/6 items have texts identical after the model's truncation to 320 tokens, so they tie"
    assert bench.explain_collapse(text, "truncation", []) == text
    assert bench.explain_collapse(text, "unknown words", ["dog", "cat"]) == (
        "3/6 items have texts the model reads as the same: it does not know “dog”, “cat” (one unknown word to "
        "it), so they tie")


# ---- item 10: hosted mode ------------------------------------------------------------------------------

def test_hosted_the_dataset_box_offers_only_the_deployed_folders_and_probes_no_path(folder, monkeypatch, tmp_path):
    monkeypatch.setenv("SPACE_ID", "org/vlprobe")
    monkeypatch.setenv("VLPROBE_ROOT", str(folder.parent))  # where `vlprobe build` writes: not looked at when hosted
    here = Settings(tmp_path)
    assert here.dataset_folders() == [] and not here.may_type_datasets()
    messages = set()
    for typed in ("/etc", "/no/such/folder", str(folder), "../valse"):
        with pytest.raises(SpaceError) as err:
            here.resolve_dataset(typed)
        messages.add(str(err.value).replace(repr(Path(typed).name), "NAME"))
    assert messages == {"dataset NAME is not offered on this Space; choose one of: none"}
    deployed = Settings(folder.parent)  # the folder beside app.py: offered, by name too
    assert deployed.dataset_folders() == [str(folder)]
    assert deployed.resolve_dataset("valse") == folder.resolve()


def test_online_the_page_starts_on_clip_and_its_gallery_leads_with_the_benchmarks(repo_root, tmp_path):
    """The Hub check stubbed to answer: the Model box starts on the menu's first model, and the
    gallery offers the datasets' items (the benchmark examples) before the rendered scenes."""
    from vlprobe.cli import main as vlprobe_main

    mp = pytest.MonkeyPatch()
    mp.setattr(hub, "hub_reachable", lambda: True)
    mp.setattr(models, "tokenizer_of", lambda model_id, cache=None: None)  # a sub-word tokenizer: reads any text
    mp.setenv("VLPROBE_ROOT", str(tmp_path))
    try:
        assert vlprobe_main(["build", "travlr", "--size", "tiny", "--configs", "spatiality"]) in (0, None)
        spec = importlib.util.spec_from_file_location("vlprobe_space_app_online", repo_root / "space" / "app.py")
        app = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(app)
        boxes = [b for b in app.demo.blocks.values() if getattr(b, "label", None) == "Model"]
        assert boxes and all(b.value == "openai/clip-vit-base-patch32" for b in boxes)
        about, keys, *_ = app.update_model("openai/clip-vit-base-patch32")
        assert about.startswith("CLIP ViT-B/32 (OpenAI)") and keys[0].startswith("dataset:")
        assert keys[-3:] == ["scene:0", "scene:1", "scene:2"]
    finally:
        mp.undo()


def test_a_hub_dataset_the_owner_lists_is_listed_through_datasets(monkeypatch, tmp_path):
    import vlprobe.dataset.reader as dataset_folder

    monkeypatch.setenv(settings.ENV_DATASETS, "org/foils")
    monkeypatch.setattr(dataset_folder, "list_configs", lambda dataset, revision=None: ["a", "b"])
    monkeypatch.setattr(dataset_folder, "list_splits", lambda dataset, config, revision=None: ["test"])
    here = Settings(tmp_path)
    assert here.resolve_dataset("org/foils") == "org/foils"
    assert examples.dataset_configs(here, "org/foils") == ["a", "b"]
    assert examples.dataset_splits(here, "org/foils", "a") == ["test"]
    with pytest.raises(SpaceError, match="dataset 'other' is not offered on this Space; choose one of: org/foils"):
        here.resolve_dataset("org/other")


@needs_mini_clip
def test_a_config_without_tags_says_so_in_the_per_tag_table(app, tmp_path, monkeypatch):
    folder = word_folder(tmp_path)
    (folder / "vlprobe.yaml").write_text("id: id\nimages: [image]\ntexts: [caption, foil]\ngold: [[1, 0]]\n")
    monkeypatch.setenv(settings.ENV_DATASETS, str(folder))
    out = app.run_benchmark(str(folder), "words", None, "models/mini-clip", 4, "strict", 0)
    assert out[0].startswith("**valse / words / test**: 4 of 40 items, drawn at random (seed 0)")
    assert "This config&#x27;s items have no tags, so there is no per-tag table." in out[8]  # HTML-escaped


@needs_mini_clip
def test_a_gallery_click_scores_its_example_even_before_the_page_filled_the_slots(app):
    out = app.score_example(0, [], "models/mini-clip", "strict")  # the slots' keys not sent yet
    first = app.gallery_for("models/mini-clip")[0]
    assert out[2] == "\n".join(first.captions) and out[4].startswith(("CORRECT", "WRONG", "MIXED", "PARTLY", "TIE"))
    out = app.score_example(5, ["scene:0"], "models/mini-clip", "strict")  # a slot no example fills: in the verdict
    assert out[4] == "Cannot score: this example is not offered for this model any more; pick another one"
