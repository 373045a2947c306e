"""The Gradio Space (space/app.py + vlprobe/demo/).

The app is launched in the test and driven through gradio_client, as a person's browser would
call it; the scores are checked against the model's own ``logits_per_image``, the verdicts
against those scores, and the benchmark numbers against ``vlprobe.metric.compute``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

gr = pytest.importorskip("gradio")
gradio_client = pytest.importorskip("gradio_client")
from gradio_client import handle_file  # noqa: E402
from helpers_space import load_space  # noqa: E402

from vlprobe.cli import main as vlprobe_main  # noqa: E402
from vlprobe.demo import benchmark as bench  # noqa: E402
from vlprobe.demo import examples, hub, models, settings  # noqa: E402
from vlprobe.demo import score as scoring  # noqa: E402
from vlprobe.demo.settings import Settings, SpaceError  # noqa: E402

pytestmark = pytest.mark.usefixtures("clean_space_env")  # tests/conftest.py


@pytest.fixture(scope="module")
def space_app(repo_root):
    mp = pytest.MonkeyPatch()
    mp.setattr(hub, "hub_reachable", lambda: False)  # offline, whatever the machine: mini-clip is the default
    yield load_space(repo_root, "vlprobe_space_app")
    mp.undo()


GRADIO_APP = "space_app"  # conftest's client serves it


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    """Two small distinct PNGs on disk."""
    from tiny_models import tiny_images

    folder = tmp_path_factory.mktemp("space_images")
    paths = []
    for k, im in enumerate(tiny_images(2, size=(48, 40))):
        paths.append(folder / f"image{k}.png")
        im.save(paths[-1])
    return paths


@pytest.fixture(scope="module")
def clip_logits(tiny_clip_path):
    """The model's own image-text logits, computed without vlprobe."""
    import torch
    from PIL import Image
    from transformers import CLIPModel, CLIPProcessor

    model = CLIPModel.from_pretrained(tiny_clip_path).eval()
    processor = CLIPProcessor.from_pretrained(tiny_clip_path)

    def logits(image_paths, texts):
        ims = [Image.open(p).convert("RGB") for p in image_paths]
        inputs = processor(text=list(texts), images=ims, return_tensors="pt", padding=True)
        with torch.no_grad():
            return model(**inputs).logits_per_image.numpy()

    return logits


@pytest.fixture(scope="module")
def travlr_folder(tmp_path_factory):
    """A tiny TraVLR folder built by `vlprobe build travlr` (1 image x (query, minimal foil))."""
    out = tmp_path_factory.mktemp("space_data") / "travlr"
    assert vlprobe_main(["build", "travlr", "--out", str(out), "--size", "tiny", "--configs", "spatiality"]) in (0, None)
    return out


@pytest.fixture(scope="module")
def swap_folder(tmp_path_factory, images):
    """A 2 x 2 Winoground-shaped folder built by `vlprobe build folder` from two images."""
    src = tmp_path_factory.mktemp("swap_src")
    (src / "images").mkdir()
    for k, p in enumerate(images):
        (src / "images" / f"{k}.png").write_bytes(Path(p).read_bytes())
    (src / "captions.csv").write_text(
        "id,image_0,image_1,caption_0,caption_1,kind\n"
        "s1,images/0.png,images/1.png,a red ball left of a box,a box left of a red ball,relation\n"
        "s2,images/1.png,images/0.png,a green cube on a mat,a mat on a green cube,object\n",
        encoding="utf-8",
    )
    (src / "vlprobe.yaml").write_text(
        "id: id\nimages: [image_0, image_1]\ntexts: [caption_0, caption_1]\ngold: [[1, 0], [0, 1]]\ntags: [kind]\n",
        encoding="utf-8",
    )
    out = tmp_path_factory.mktemp("space_data") / "swaps"
    assert vlprobe_main(["build", "folder", str(src), "--out", str(out), "--config", "swaps",
                         "--license", "cc0-1.0", "--default"]) in (0, None)
    return out


def _scores(table):
    k = table["headers"].index("score")
    return [row[k] for row in table["data"]]


# ---- the score endpoint ----------------------------------------------------------------------------

@pytest.mark.slow
def test_score_pairwise_item_gives_the_models_scores_and_verdict(client, images, tiny_clip_path, clip_logits):
    texts = ["a red square", "a blue square"]
    verdict, table, note, diff, chart, metrics, *_ = client.predict(
        handle_file(str(images[0])), None, texts[0], texts[1], str(tiny_clip_path), api_name="/score")
    expected = clip_logits([images[0]], texts)[0]
    assert table["headers"] == ["text", "role", "score", "margin"]
    assert [row[:2] for row in table["data"]] == [[texts[0], "caption"], [texts[1], "foil"]]
    np.testing.assert_allclose(_scores(table), expected, atol=1e-3 * max(1.0, float(np.abs(expected).max())))
    # the margin (caption minus foil, 3 decimals) decides the verdict; what a score is is said once
    assert table["data"][1][3] == pytest.approx(expected[0] - expected[1], abs=2e-3 * max(1.0, float(np.abs(expected).max())))
    assert table["data"][0][3] == "" and "logits" in note and chart is not None
    assert expected[0] != expected[1]
    if expected[0] > expected[1]:
        assert verdict.startswith("CORRECT") and metrics["acc_r"] == 1
    else:
        assert verdict.startswith("WRONG") and metrics["acc_r"] == 0
    assert "pairwise" in verdict
    # the differing words are highlighted, the shared ones are not
    marked = {(d["token"].strip(), d["class_or_confidence"]) for d in diff if d["class_or_confidence"]}
    assert marked == {("red", "caption"), ("blue", "foil")}


def test_score_two_images_is_a_group_item(client, images, tiny_clip_path, clip_logits):
    captions = ["a red ball left of a box", "a box left of a red ball"]
    verdict, table, _, diff, _, metrics, *_ = client.predict(
        handle_file(str(images[0])), handle_file(str(images[1])), "\n".join(captions), "", str(tiny_clip_path),
        api_name="/score")
    S = clip_logits(images, captions)
    np.testing.assert_allclose(np.array(_scores(table)).reshape(2, 2), S, atol=1e-3 * max(1.0, float(np.abs(S).max())))
    text_ok = S[0, 0] > S[0, 1] and S[1, 1] > S[1, 0]
    image_ok = S[0, 0] > S[1, 0] and S[1, 1] > S[0, 1]
    assert metrics["text"] == text_ok and metrics["image"] == image_ok and metrics["group"] == (text_ok and image_ok)
    assert "group, Winoground" in verdict
    assert f"text {'✓' if text_ok else '✗'}" in verdict and f"image {'✓' if image_ok else '✗'}" in verdict
    assert {d["class_or_confidence"] for d in diff} >= {"caption 1", "caption 2"}


def test_score_several_captions_and_foils_is_a_set_item(client, images, tiny_clip_path, clip_logits):
    caps, foils = ["a red square", "the square is red"], ["a blue square", "the square is blue"]
    verdict, table, _, _, _, metrics, *_ = client.predict(
        handle_file(str(images[0])), None, "\n".join(caps), "\n".join(foils), str(tiny_clip_path), api_name="/score")
    S = clip_logits([images[0]], caps + foils)[0]
    np.testing.assert_allclose(_scores(table), S, atol=1e-3 * max(1.0, float(np.abs(S).max())))
    assert "set, BLA" in verdict
    set_acc = min(S[:2]) > max(S[2:])
    set_error = max(S[:2]) < min(S[2:])
    assert metrics["set_acc"] == set_acc and metrics["set_error"] == set_error
    assert verdict.startswith("CORRECT" if set_acc else "WRONG" if set_error else "MIXED")


def test_a_model_is_loaded_once_and_reused(client, images, tiny_clip_path):
    for _ in range(2):
        client.predict(handle_file(str(images[0])), None, "a cat", "a dog", str(tiny_clip_path), api_name="/score")
    assert str(Path(tiny_clip_path).resolve()) in models.MODELS
    loads = models.MODELS.loads
    client.predict(handle_file(str(images[1])), None, "a cat", "a dog", str(tiny_clip_path), api_name="/score")
    assert models.MODELS.loads == loads


def test_the_shipped_model_gets_a_clear_item_right(client, repo_root, tmp_path):
    """The default model (models/mini-clip) on a rendered synthetic scene: colour foils are what it
    was trained to tell apart."""
    if not (repo_root / settings.DEFAULT_MODEL / "config.json").is_file():
        pytest.skip(f"the shipped model {settings.DEFAULT_MODEL} is not in this checkout yet")
    from vlprobe.scenes.model import Scene, SceneObject
    from vlprobe.scenes.render import render

    path = tmp_path / "scene.png"
    render(Scene(objects=(SceneObject("circle", "red", 2, 2),))).save(path)
    verdict, table, *_ = client.predict(
        handle_file(str(path)), None, "a red circle", "a blue circle", settings.DEFAULT_MODEL, api_name="/score")
    assert verdict.startswith("CORRECT"), (verdict, table)


# ---- readable errors ---------------------------------------------------------------------------------

# A mistake is shown in the page next to what failed: in the verdict (/score), in the status line
# (/load_example, /run_benchmark, /compare_results, /show_item); checks of Gradio's own components
# (a slider's bounds) still raise.
ERROR_OUTPUT = {"/score": (0, "Cannot score: "), "/load_example": (0, "⚠️ "),
                "/run_benchmark": (0, "⚠️ **Cannot run the benchmark:** "),
                "/compare_results": (0, "⚠️ **Cannot compare:** "), "/show_item": (0, "⚠️ ")}


def _error(client, *args, api_name="/score"):
    try:
        out = client.predict(*args, api_name=api_name)
    except Exception as err:  # noqa: BLE001
        message = str(err)
    else:
        k, prefix = ERROR_OUTPUT[api_name]
        message = out[k] if isinstance(out, (list, tuple)) else out
        assert message.startswith(prefix), message
        message = message[len(prefix):]
        assert "\n" not in message.strip(), message  # one sentence, not a wall of text
    assert "Traceback" not in message and "File \"" not in message
    return message


@pytest.mark.slow
def test_bad_inputs_are_readable_errors(client, images, tiny_clip_path, tmp_path, monkeypatch):
    img, model = handle_file(str(images[0])), str(tiny_clip_path)
    not_image = tmp_path / "notes.png"
    not_image.write_text("this is not an image")
    assert "not an image" in _error(client, handle_file(str(not_image)), None, "a cat", "a dog", model)
    assert "upload an image" in _error(client, None, None, "a cat", "a dog", model)
    assert "at least one foil" in _error(client, img, None, "a cat", "", model)
    assert "true caption" in _error(client, img, None, "", "a dog", model)
    assert "exactly two captions" in _error(client, img, handle_file(str(images[1])), "a cat", "a dog", model)
    assert "appears twice" in _error(client, img, None, "a cat", "a cat", model)
    many = "\n".join(f"foil {k}" for k in range(settings.MAX_TEXTS + 1))
    assert "more than this Space scores" in _error(client, img, None, "a cat", many, model)
    assert "neither an existing local folder nor a Hub id" in _error(client, img, None, "a cat", "a dog", "../a b")
    asked = []  # offline: refused before the model is loaded or the Hub asked (so at once, whatever the machine)
    monkeypatch.setattr("vlprobe.scorers.loading.load_scorer", lambda *a, **k: asked.append(("load", a)))
    monkeypatch.setattr("huggingface_hub.model_info", lambda *a, **k: asked.append(("hub", a)))
    message = _error(client, img, None, "a cat", "a dog", "nobody/no-such-model-here")
    assert asked == []
    assert "'nobody/no-such-model-here' is not on this Space" in message and "HF_HUB" not in message
    assert "a local model must be a folder" in _error(client, img, None, "a cat", "a dog", str(not_image))


def test_a_plain_path_string_sent_to_the_api_is_one_sentence_naming_the_box(client, images, tiny_clip_path, tmp_path):
    """A script passing a path where the API wants a file (no handle_file) gets vlprobe's one sentence, not Gradio's
    generic "upstream Gradio app has raised an exception"; the same for a path that exists and one that does not."""
    said = set()
    for path in (str(images[0]), "/etc/passwd", "/no/such/file.png"):
        message = _error(client, path, None, "a cat", "a dog", str(tiny_clip_path))
        said.add(message.replace(repr(Path(path).name), "NAME"))
    assert said == {"Image 1: NAME was not uploaded to this page; upload the file itself (from a script: "
                    "gradio_client.handle_file(path))"}
    note = client.predict([str(tmp_path / "results.json")], True, "auto", "", api_name="/compare_results")[0]
    assert note.startswith("⚠️ **Cannot compare:** Results files: 'results.json' was not uploaded to this page"), note


def test_uploads_over_the_size_limit_are_refused(client, tiny_clip_path, tmp_path, monkeypatch):
    monkeypatch.setenv(settings.ENV_MAX_UPLOAD_MB, "1")
    big = tmp_path / "big.png"
    big.write_bytes(b"\x89PNG" + os.urandom(1024 * 1024 + 10))
    message = _error(client, handle_file(str(big)), None, "a cat", "a dog", str(tiny_clip_path))
    assert "accepts images up to 1 MB" in message


def test_an_open_clip_name_gets_its_familys_quick_check_from_the_registry():
    """models.check_available asks the scorer registry which family reads a name itself (open_clip's), and runs
    that family's own check: a misspelt tag is one sentence naming the close ones, before any load."""
    pytest.importorskip("open_clip")
    with pytest.raises(settings.SpaceError, match=r"no weights 'openia' .* did you mean open_clip:ViT-B-32/openai"):
        models.check_available("open_clip:ViT-B-32/openia")
    models.check_available("open_clip:ViT-B-32/openai")  # known: passes without loading


def test_the_allow_list_refuses_other_models(client, images, tiny_clip_path, monkeypatch):
    monkeypatch.setenv(settings.ENV_MODELS, "openai/clip-vit-base-patch32")
    message = _error(client, handle_file(str(images[0])), None, "a cat", "a dog", str(tiny_clip_path))
    assert "not allowed on this Space" in message and "openai/clip-vit-base-patch32" in message
    # the default model stays allowed; here it is the tiny model, set by the owner's variable
    monkeypatch.setenv(settings.ENV_DEFAULT_MODEL, str(tiny_clip_path))
    for choice in (str(tiny_clip_path), ""):
        verdict = client.predict(handle_file(str(images[0])), None, "a cat", "a dog", choice, api_name="/score")[0]
        assert verdict.startswith(("CORRECT", "WRONG", "TIE")), verdict


def test_missing_default_model_says_what_to_do(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    import vlprobe.storage.locations

    monkeypatch.setattr(vlprobe.storage.locations, "shipped_model", lambda: None)  # an installation that ships none
    monkeypatch.setattr(hub, "hub_reachable", lambda: False)
    with pytest.raises(SpaceError, match="offline model models/mini-clip is not in this copy.*type a Hub model id"):
        Settings(root=tmp_path).resolve_model("")


def test_remote_code_is_never_trusted(monkeypatch):
    seen = {}

    def fake_load_scorer(model, *args, **kwargs):
        seen.update(kwargs, model=model)
        return object()

    import vlprobe.scorers.loading as loading

    monkeypatch.setattr(loading, "load_scorer", fake_load_scorer)
    monkeypatch.setattr(models, "check_available", lambda model_id: None)  # offline here; the id is made up
    models.ModelCache(capacity=1).get("some/model")
    assert seen["model"] == "some/model" and seen["trust_remote_code"] is False


def test_model_cache_keeps_one_per_id_and_drops_the_least_recent():
    cache, calls = models.ModelCache(capacity=2), []

    def loader(model_id):
        calls.append(model_id)
        return {"id": model_id}

    a = cache.get("a", loader)
    assert cache.get("a", loader) is a
    cache.get("b", loader)
    cache.get("a", loader)
    cache.get("c", loader)  # drops b, the least recently used
    assert "a" in cache and "c" in cache and "b" not in cache
    assert calls == ["a", "b", "c"]


def test_concurrency_groups_keep_benchmarks_from_blocking_scoring(space_app):
    fns = {fn.api_name: fn for fn in space_app.demo.fns.values() if fn.api_name}
    assert fns["score"].concurrency_id != fns["run_benchmark"].concurrency_id
    assert fns["run_benchmark"].concurrency_limit == 1
    assert fns["score"].concurrency_limit >= 1


# ---- examples from dataset folders -----------------------------------------------------------------------

def test_load_example_from_a_travlr_folder(client, travlr_folder):
    from vlprobe.dataset.spec import find_spec

    status, image_1, image_2, captions, foils = client.predict(str(travlr_folder), "spatiality", 1,
                                                               api_name="/load_example")
    assert status == ""
    from vlprobe.storage.arrow_cache import load_folder_split

    row = load_folder_split(travlr_folder, "spatiality", "test_ind")[1]
    item = find_spec(str(travlr_folder)).to_item(row, 1, "spatiality")
    gold = item.gold[0]
    assert captions == item.texts[int(gold.argmax())] and foils == item.texts[int((~gold).argmax())]
    assert image_1 and Path(image_1).is_file() and image_2 is None


def test_load_example_from_a_two_by_two_folder(client, swap_folder):
    _, image_1, image_2, captions, foils = client.predict(str(swap_folder), "swaps", 1, api_name="/load_example")
    assert captions.splitlines() == ["a green cube on a mat", "a mat on a green cube"] and foils == ""
    assert Path(image_1).is_file() and Path(image_2).is_file()


def test_load_example_errors(client, travlr_folder, tmp_path):
    assert "does not exist" in _error(client, str(tmp_path / "nothing"), "x", 0, api_name="/load_example")
    assert _error(client, str(travlr_folder), "spatiality", 10000, api_name="/load_example") == (
        "Row: travlr/spatiality/test_ind has rows 0 to 3; row 10000 does not exist")
    for bad in (-1, 2.5):  # Gradio's own check turned captions, foils and images into 'Error' badges
        assert _error(client, str(travlr_folder), "spatiality", bad, api_name="/load_example") == (
            f"Row: {bad} is not a row number; type a whole number from 0")
    for empty in (None, "", " "):  # an empty box does not quietly load row 0
        assert _error(client, str(travlr_folder), "spatiality", empty, api_name="/load_example") == (
            "Row: the box is empty; type a row number from 0")


# ---- benchmark -----------------------------------------------------------------------------------

def test_benchmark_matches_the_engine_and_metric(client, travlr_folder, tiny_clip_path):
    from vlprobe.metric import compute
    from vlprobe.scorers.loading import load_scorer
    from vlprobe.scoring.engine import score_items

    summary, chart, metrics, per_tag, browse, rank, *_ = client.predict(
        str(travlr_folder), "spatiality", "test_ind", str(tiny_clip_path), 4, "half", 40,
        api_name="/run_benchmark")
    items = examples.load_items(Settings(Path.cwd()), str(travlr_folder), "spatiality", "test_ind", limit=4)
    run = score_items(load_scorer(str(tiny_clip_path)), items, progress=False)
    expected = compute(run.scores, [i.gold for i in items], ties="half", tags=[list(i.tags) for i in items])
    rows = {r[0]: r for r in metrics["data"]}
    assert metrics["headers"] == ["metric", "value", "CI low", "CI high", "chance"]  # in % (the table's label)
    assert float(rows["acc_r"][1]) == pytest.approx(100 * expected["acc_r"], abs=0.06)
    assert rows["acc_r"][4] == "50.0" and rows["acc_r"][2] != ""  # chance level and a CI
    assert {r[0] for r in per_tag["data"]} == set(expected["per_tag"])
    assert "4 items" in summary and "spatiality" in summary and chart is not None
    # only the metrics that fit the items' shape (TraVLR: one caption, one foil): no copies of acc_r
    assert "acc_r" in rows and not {"sentence_acc", "set_acc", "group"} & set(rows)
    assert browse["headers"] == ["rank", "margin", "texts", "tags", "id"]
    gaps = [r[1] for r in browse["data"]]
    assert gaps == sorted(gaps) and len(gaps) == 4  # worst mistakes first
    assert [r[0] for r in browse["data"]] == [1, 2, 3, 4]
    for row in browse["data"]:  # the true text marked, as the item's gold says
        item = next(i for i in items if i.id == row[4])
        assert row[2] == " | ".join(("✓ " if g else "✗ ") + t for t, g in zip(item.texts, np.asarray(item.gold)[0]))
    # browsing: the run's items stay in the session; rank 1 is the worst one
    caption, image_1, image_2, item_scores, *_ = client.predict(1, api_name="/show_item")
    worst = browse["data"][0][4]
    assert f"item `{worst}`" in caption and Path(image_1).is_file() and image_2 is None
    k = next(i for i, item in enumerate(items) if item.id == worst)
    np.testing.assert_allclose(_scores(item_scores), run.scores[k].ravel(),
                               atol=1e-3 * max(1.0, float(np.abs(run.scores[k]).max())))
    # a rank out of range (typed in the rank box) is refused in words; the item shown is kept, and the
    # rank box is set back to it (Gradio's own bound check turned every output into an 'Error' badge)
    for bad in (9, 0):
        out = client.predict(bad, api_name="/show_item")
        assert out[0].startswith(f"⚠️ There is no item of rank {bad}: choose 1 to 4. Still showing rank 1: Rank 1 of 4")
        assert out[-1] == 1


def test_benchmark_errors(client, travlr_folder, tiny_clip_path, monkeypatch):
    args = [str(travlr_folder), "spatiality", "test_ind", str(tiny_clip_path)]
    assert "no config 'nope'" in _error(client, str(travlr_folder), "nope", None, str(tiny_clip_path), 4,
                                        "strict", 0, api_name="/run_benchmark")
    monkeypatch.setenv(settings.ENV_MAX_ITEMS, "3")
    assert _error(client, *args, 4, "strict", 0, api_name="/run_benchmark") == (
        "Items: 4 is not allowed; choose a whole number from 1 to 3")
    monkeypatch.delenv(settings.ENV_MAX_ITEMS)
    # numbers Gradio's own components refused with a toast naming no box, the page left "running"
    for bad, box, allowed in ((5000, "Bootstrap resamples", "0 to 2,000"), (99999, "Bootstrap resamples", "0 to 2,000"),
                              (-1, "Bootstrap resamples", "0 to 2,000")):
        assert _error(client, *args, 4, "strict", bad, api_name="/run_benchmark") == (
            f"{box}: {bad} is not allowed; choose a whole number from {allowed}")
    assert _error(client, *args, 4, "sometimes", 0, api_name="/run_benchmark") == (
        "A tie counts as: 'sometimes' is not a tie policy; choose authors, strict, half or lenient")


def test_browse_items_worst_first():
    from vlprobe.dataset.items import Item

    items = [Item(id=str(k), images=(None,), texts=("a", "b"), gold=[[1, 0]]) for k in range(3)]
    scores = [np.array([[2.0, 1.0]]), np.array([[0.0, 3.0]]), np.array([[1.0, 1.0]])]
    gaps = bench.margins(scores, [i.gold for i in items])
    np.testing.assert_allclose(gaps, [1.0, -3.0, 0.0])
    # a 2 x 2 item: the column comparison (image score) counts too
    gaps = bench.margins([np.array([[3.0, 1.0], [4.0, 5.0]])], [np.eye(2, dtype=bool)])  # rows right, column 0 wrong
    np.testing.assert_allclose(gaps, [-1.0])


def test_the_items_list_marks_the_true_text_and_explains_a_label_tag():
    """The items table marks which text is gold, whatever its place (TraVLR's label=False item has its foil first), and
    says what the marks and a label= tag mean."""
    from vlprobe.dataset.items import Item

    flipped = Item(id="t", images=(None,), texts=("above", "below"), gold=[[0, 1]], tags=("label=False",))
    assert bench.marked_texts(flipped) == "✗ above | ✓ below"
    group = Item(id="g", images=(None, None), texts=("c1", "c2", "f"), gold=[[1, 0, 0], [0, 1, 0]])
    assert bench.marked_texts(group) == "✓1 c1 | ✓2 c2 | ✗ f"
    assert bench.browse_notes([flipped]) == [
        "✓: the true text (the gold one); ✗: a wrong text (a foil).",
        "label=True/False: the dataset's own label column, whether the item's first text is the true one (✓ marks it "
        "either way)."]
    assert bench.browse_notes([group]) == ["✓: the true text (the gold one); ✗: a wrong text (a foil); ✓1, ✓2: true of "
                                           "image 1, of image 2."]


# ---- results ---------------------------------------------------------------------------------------

def _results_json(path, model_id, acc_r, ci=None, config="existence", benchmark="valse"):
    metrics = {"acc_r": acc_r, "n_items": 10, "n_ties": 0, "chance": {"acc_r": 0.5}}
    if ci:
        metrics["ci"] = {"acc_r": ci}
    doc = {"format": "vlprobe-results/1", "provenance": {"model": {"model_id": model_id}, "settings": {}},
           "results": [{"benchmark": benchmark, "dataset": benchmark, "config": config, "split": "test",
                        "metrics": metrics}]}
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_compare_results_files_and_papers(client, tmp_path):
    from vlprobe import report

    a = _results_json(tmp_path / "a.json", "/models/mini-clip", 0.75, [0.7, 0.8])
    b = _results_json(tmp_path / "b.json", "org/other-clip", 0.6)
    note, plot, table, papers, runs_html, papers_html, published = client.predict(
        [handle_file(str(a)), handle_file(str(b))], True, "auto", api_name="/compare_results")
    # the runs, named by their files: tidy rows (one per run, config, split and metric) for the API
    assert table["headers"] == ["run", "benchmark", "config", "split", "metric", "value", "CI low", "CI high", "chance",
                                "items", "ties"]
    assert table["data"] == [["a", "valse", "existence", "test", "acc_r", "75.0", "70.0", "80.0", "50.0", 10, 0],
                             ["b", "valse", "existence", "test", "acc_r", "60.0", "", "", "50.0", 10, 0]]
    # the page: one row per run and config
    assert runs_html.count("<tr>") == 3 and "valse-table" in runs_html
    # beside the papers: one config, so a row per system, the runs first, then VALSE Table 2's systems
    clip = next(p for p in report.paper_results()
                if p.benchmark == "valse" and p.model == "CLIP" and p.config == "existence"
                and p.metric == "acc_r" and p.table == "Table 2")
    assert papers["headers"] == ["system", "existence", "Avg."]
    rows = {r[0]: r for r in papers["data"]}
    assert rows["this run: a"][1] == "75.0 [70.0, 80.0]" and rows["this run: b"][1] == "60.0"
    # the runs' Avg. is over 1 of the 11 instruments: marked, the note saying it is not the paper's Avg.
    assert rows["this run: a"][2] == "75.0¹" and rows["this run: b"][2] == "60.0²"
    assert "¹ a, Avg. over 1 of 11 instruments (missing: plurality," in papers_html
    assert rows["CLIP"][1] == f"{clip.value:.1f}" and [r[0] for r in papers["data"][:2]] == ["this run: a", "this run: b"]
    assert "paper, Table 2" not in str(papers["data"]) and "VALSE (Parcalabescu et al., ACL 2022), Table 2." in papers_html
    assert plot is not None and "2 runs;" in note
    assert published["data"] == [["no figure is published for the loaded runs' checkpoints", "", "", "", "", "", ""]]


def test_compare_results_papers_alone_and_synthetic_runs(client, tmp_path):
    note, plot, _, papers, *_ = client.predict(None, True, "winoground", api_name="/compare_results")
    # the long side down: Winoground's 19 systems a row each, its three scores a column each
    assert papers["headers"] == ["system", "text", "image", "group"] and len(papers["data"]) == 19
    assert "CLIP (ViT-B/32)" in [r[0] for r in papers["data"]]
    assert plot is not None
    _, _, _, papers, _, papers_html, _ = client.predict(None, True, "sugar_crepe", api_name="/compare_results")
    assert papers["headers"] == ["config", "GPT-4V (positive-first)", "GPT-4V (negative-first)"]
    assert "swap_obj" in [r[0] for r in papers["data"]] and "gpt-4v-results/readme.md" in papers_html
    syn = _results_json(tmp_path / "syn.json", "mini-clip", 0.9, config="spatial_swap", benchmark="winoground_style")
    note, _, table, papers, *_ = client.predict([handle_file(str(syn))], True, "auto", api_name="/compare_results")
    assert table["data"][0][1:3] == ["winoground_style", "spatial_swap"]
    assert papers["data"] == [["no published numbers to show", ""]]
    assert "none of the loaded runs" in note


def test_compare_results_errors(client, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    message = _error(client, [handle_file(str(bad))], True, "auto", api_name="/compare_results")
    assert "bad.json: not a JSON file" in message and "/tmp" not in message.split("bad.json")[0]
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}')
    assert "not a vlprobe results.json" in _error(client, [handle_file(str(other))], True, "auto",
                                                  api_name="/compare_results")
    assert "nothing to compare" in _error(client, None, False, "auto", api_name="/compare_results")


def test_results_chart_has_one_point_per_split_and_bla_runs_get_the_papers_points(tmp_path):
    from vlprobe.demo import results

    doc = {"format": "vlprobe-results/1", "provenance": {"model": {"model_id": "m"}, "settings": {}},
           "results": [{"benchmark": "travlr", "dataset": "travlr", "config": "spatiality", "split": split,
                        "metrics": {"acc_r": v, "n_items": 100, "chance": {"acc_r": 0.5}}}
                       for split, v in (("test_ind", 0.54), ("test_ood", 0.46))]}
    path = tmp_path / "travlr_run.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    out = results.compare_results([str(path)], include_papers=False)
    assert sorted((p.split, p.value) for p in out.points) == [("test_ind", 54.0), ("test_ood", 46.0)]
    svg = results.chart_svg(out.chart)
    assert svg.count('data-point="travlr_run:travlr/spatiality/') == 2
    # a BLA run: the chart shows its sentence accuracy, the paper's headline, beside the paper's systems
    bla = {"format": "vlprobe-results/1", "provenance": {"model": {"model_id": "m"}, "settings": {}},
           "results": [{"benchmark": "bla", "dataset": "bla", "config": "active_passive", "split": "test",
                        "metrics": {"acc_r": 0.7, "sentence_acc": 0.6, "set_acc": 0.5, "n_items": 10}}]}
    path = tmp_path / "bla_run.json"
    path.write_text(json.dumps(bla), encoding="utf-8")
    out = results.compare_results([str(path)], include_papers=True)
    mine = [p for p in out.points if p.source == "bla_run"]
    assert [(p.metric, p.value) for p in mine] == [("sentence_acc", 60.0)]
    assert any(p.source.startswith("paper: ") and p.config == "active_passive" and p.metric == "sentence_acc"
               for p in out.points)


def test_score_chart_shows_the_margins_that_decide_the_verdict():
    from vlprobe.dataset.items import Item

    item = Item(id="x", images=(None, None), texts=("c1", "c2"), gold=np.eye(2, dtype=bool))
    S = np.array([[3.0, 1.0], [4.0, 5.0]])
    got = dict(scoring.comparisons(item, S))
    assert sorted(got.values()) == [-1.0, 1.0, 2.0, 4.0]  # rows: 3-1, 5-4; columns: 3-4, 5-1
    headers, rows = scoring.table(item, S, None)
    assert headers == ["text", "role", "score", "margin"]
    assert [r[1:] for r in rows] == [["caption, image 1", 3.0, ""], ["foil, image 1", 1.0, 2.0],
                                     ["foil, image 2", 4.0, 1.0], ["caption, image 2", 5.0, ""]]


def test_the_gallery_has_one_example_per_shape_and_each_scores(tiny_clip_path, tmp_path):
    shapes = []
    for example in examples.scene_examples(tmp_path):
        image_1, image_2, caps, foils = example.fields()
        out = scoring.score(Settings(tmp_path), image_1, image_2, caps, foils, str(tiny_clip_path),
                            cache=models.ModelCache(capacity=1))
        assert out.shape == example.shape and out.kind in ("right", "wrong", "mixed", "tie") and out.verdict
        shapes.append(example.shape)
    assert shapes == ["pairwise", "set", "group"]


# ---- pieces of the logic ------------------------------------------------------------------------------

def test_word_diff_marks_only_the_changed_words():
    left, right = scoring.word_diff("There are two dogs on the grass", "There are three dogs on the grass")
    assert [w for w, lab in left if lab] == ["two"] and [w for w, lab in right if lab] == ["three"]
    left, right = scoring.word_diff("a dog", "a dog")
    assert not any(lab for _, lab in left + right)


def test_verdicts_say_when_ties_were_counted_as_wrong():
    line = scoring.verdict_text("pairwise", {"acc_r": 0.0, "n_ties": 1})
    assert line.startswith("WRONG") and line.endswith(
        "1 tied comparison (exactly equal scores), counted as wrong under the strict policy, as the papers count it")
    line = scoring.verdict_text("group", {"text": 1.0, "image": 0.0, "group": 0.0, "n_ties": 0})
    assert line.startswith("PARTLY RIGHT") and "text ✓, image ✗, group ✗" in line


def test_item_shapes_follow_the_inputs():
    req = scoring.ScoreRequest(images=[None], captions=["c1", "c2"], foils=["f1", "f2"])
    np.testing.assert_array_equal(req.item().gold, [[1, 1, 0, 0]])
    req = scoring.ScoreRequest(images=[None, None], captions=["c1", "c2"], foils=["f"])
    np.testing.assert_array_equal(req.item().gold, [[1, 0, 0], [0, 1, 0]])
    assert scoring.item_shape(1, 1, 2) == "pairwise"
    assert scoring.item_shape(1, 2, 4) == "set"
    assert scoring.item_shape(2, 2, 2) == "group"


def test_model_cache_loads_a_model_once_under_concurrent_requests():
    import threading

    cache, calls = models.ModelCache(capacity=2), []
    slow_started, fast_served = threading.Event(), threading.Event()
    waited = []

    def loader(model_id):
        calls.append(model_id)
        if model_id == "slow":  # holds its load until the cached model has been served (or 30 s pass)
            slow_started.set()
            waited.append(fast_served.wait(timeout=30))
        return object()

    cache.get("fast", loader)
    threads = [threading.Thread(target=cache.get, args=("slow", loader)) for _ in range(4)]
    for t in threads:
        t.start()
    assert slow_started.wait(timeout=30)
    cache.get("fast", loader)  # not held back by the slow load in progress: it returns while that load waits
    fast_served.set()
    for t in threads:
        t.join()
    assert waited == [True] and calls == ["fast", "slow"]


def test_hosted_space_refuses_local_paths_without_an_allow_list(monkeypatch, tiny_clip_path):
    monkeypatch.setenv("SPACE_ID", "org/vlprobe")
    with pytest.raises(SpaceError, match="this hosted Space loads models from the Hugging Face Hub only"):
        Settings(Path.cwd()).resolve_model(str(tiny_clip_path))
    assert Settings(Path.cwd()).resolve_model("openai/clip-vit-base-patch32") == "openai/clip-vit-base-patch32"
    monkeypatch.setenv(settings.ENV_MODELS, str(tiny_clip_path))
    assert Settings(Path.cwd()).resolve_model(str(tiny_clip_path)) == str(Path(tiny_clip_path).resolve())


def test_hosted_the_model_box_answers_alike_whether_a_server_path_exists_or_not(monkeypatch, tiny_clip_path, tmp_path):
    """Hosted, a typed model is a Hub id or refused, and the disk is never asked: an existing server
    path and a missing one get the same sentence (the typed text aside), a path-shaped Hub id
    naming a folder here the same Hub answer as one naming nothing."""
    monkeypatch.setenv("SPACE_ID", "org/vlprobe")
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "models" / "here").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    here = Settings(tmp_path)
    answers = {}
    for typed in ("/etc/passwd", "/root/.cache", "~", str(tiny_clip_path), "/etc", ".", "./models/here",
                  "/etc/passwd2", "/root/nonexistent", "~/nothing", "./models/nothing", "../models"):
        with pytest.raises(SpaceError) as err:
            here.resolve_model(typed)
        answers[typed] = str(err.value).replace(repr(typed), "MODEL")
    assert set(answers.values()) == {"model MODEL: " + settings.HOSTED_MODELS}, answers
    hub_answers = set()
    for typed in ("models/here", "models/nothing"):  # Hub-id shaped: asked of the Hub (offline here), not the disk
        assert here.resolve_model(typed) == typed
        with pytest.raises(SpaceError) as err:
            models.check_available(typed)
        hub_answers.add(str(err.value).replace(repr(typed), "MODEL"))
    assert len(hub_answers) == 1, hub_answers


def test_a_long_benchmark_does_not_block_scoring(client, images, tiny_clip_path, monkeypatch):
    """Benchmarks and scoring run in separate concurrency groups: while a benchmark runs (here one
    that waits until released), a person can still score."""
    import threading

    started, release = threading.Event(), threading.Event()

    def long_benchmark(*args, **kwargs):
        started.set()
        release.wait(30)
        raise SpaceError("benchmark stopped by the test")

    monkeypatch.setattr(bench, "run_benchmark", long_benchmark)
    job = client.submit("travlr", "spatiality", None, str(tiny_clip_path), 1, "strict", 0, api_name="/run_benchmark")
    try:
        assert started.wait(20), "the benchmark never started"
        verdict = client.predict(handle_file(str(images[0])), None, "a cat", "a dog", str(tiny_clip_path),
                                 api_name="/score")[0]
        assert verdict.startswith(("CORRECT", "WRONG"))
        assert not job.done()  # the benchmark was still running while the item was scored
    finally:
        release.set()
    assert "benchmark stopped by the test" in job.result(timeout=30)[0]  # shown in the page, not a traceback


def test_preloading_the_default_model(monkeypatch, tiny_clip_path, tmp_path):
    cache, here = models.ModelCache(capacity=1), Settings(root=tmp_path)
    monkeypatch.setenv(settings.ENV_DEFAULT_MODEL, str(tiny_clip_path))
    assert models.preload_default_model(here, cache) is None and str(tiny_clip_path) in cache
    monkeypatch.setenv(settings.ENV_DEFAULT_MODEL, str(tmp_path / "missing"))
    assert f"(set in {settings.ENV_DEFAULT_MODEL}) cannot be found" in models.preload_default_model(here, cache)
