"""The Space in a real browser: Debian's chromium, headless, driven by Playwright.

At a laptop's 1280 x 900 and a phone's 390 x 844: one click on a gallery example loads and scores
it, and the verdict and the score column are then on screen; no image label covers its picture;
an upload is scored with the verdict the model's own logits give; an unknown model fails in under
3 s with one sentence. On a laptop: a benchmark's item is chosen by typing its rank and pressing
Enter, and a TraVLR results file with two splits gives one chart bar per split.

Screenshots are kept under the test's tmp dir (the path is printed). Chromium comes from Debian
(``scripts/ensure_chromium.sh``); Playwright's own browser download is not used. When
/usr/bin/chromium is missing the test installs it with that script; it skips only where apt-get
itself is unavailable.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
VIEWPORTS = {"laptop": (1280, 900), "phone": (390, 844)}


@pytest.fixture(scope="module")
def chromium(repo_root) -> str:
    if not CHROMIUM.exists():
        if shutil.which("apt-get") is None:
            pytest.skip(f"{CHROMIUM} is missing and apt-get is not available to install Debian's chromium")
        proc = subprocess.run(["bash", str(repo_root / "scripts" / "ensure_chromium.sh")],
                              capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0 and CHROMIUM.exists(), (
            f"scripts/ensure_chromium.sh could not install chromium:\n{proc.stderr[-2000:]}")
    return str(CHROMIUM)


@pytest.fixture(scope="module")
def travlr_folder(tmp_path_factory):
    from vlprobe.cli import main as vlprobe_main

    out = tmp_path_factory.mktemp("browser_data") / "travlr"
    assert vlprobe_main(["build", "travlr", "--out", str(out), "--size", "tiny", "--configs", "spatiality"]) in (0, None)
    return out


@pytest.fixture(scope="module")
def model_path(repo_root, tiny_clip_path):
    shipped = repo_root / "models" / "mini-clip"
    return shipped if (shipped / "config.json").is_file() else Path(tiny_clip_path)


@pytest.fixture(scope="module")
def app_url(repo_root, travlr_folder, model_path):
    pytest.importorskip("gradio")
    from vlprobe.demo import settings

    mp = pytest.MonkeyPatch()
    for name in settings.ENV_ALL + ("SPACE_ID",):
        mp.delenv(name, raising=False)
    mp.setenv(settings.ENV_DATASETS, str(travlr_folder))
    mp.setenv(settings.ENV_DEFAULT_MODEL, str(model_path))
    spec = importlib.util.spec_from_file_location("vlprobe_space_app_browser", repo_root / "space" / "app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.preload_default_model(module.SETTINGS) is None  # as `python app.py` does before serving
    _, url, _ = module.demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True, **module.LAUNCH)
    try:
        yield url
    finally:
        module.demo.close()
        mp.undo()


@pytest.fixture(scope="module")
def browser(chromium):
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    folder = tmp_path_factory.mktemp("space_screenshots")
    yield folder
    print(f"\nscreenshots: {folder}")


def _open(browser, url, viewport):
    from playwright.sync_api import expect

    width, height = VIEWPORTS[viewport]
    page = browser.new_page(viewport={"width": width, "height": height})
    page.goto(url)
    expect(page.get_by_role("button", name="Score", exact=True)).to_be_visible(timeout=30_000)
    return page


def _verdict(page):
    return page.locator(".verdict textarea").first


def _wait_verdict(page, pattern, timeout=60_000):
    from playwright.sync_api import expect

    expect(_verdict(page)).to_have_value(re.compile(pattern), timeout=timeout)


def _inside(box, width, height):
    return box is not None and box["x"] >= 0 and box["y"] >= 0 and box["x"] + box["width"] <= width + 0.5 \
        and box["y"] + box["height"] <= height + 0.5


def _overlap(a, b):
    return not (a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"]
                or a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"])


def _labels_clear_of_images(page):
    """Every visible image block: its label's box does not overlap the picture's box, and the
    picture is not cut off by its block."""
    checked = 0
    for block in page.locator(".labelled-image").all():
        label, img = block.locator("[data-testid=block-label]").first, block.locator("img").first
        if not block.is_visible() or img.count() == 0 or not img.is_visible():
            continue
        lb, ib = label.bounding_box(), img.bounding_box()
        assert lb and ib and not _overlap(lb, ib), f"label {label.inner_text()!r} {lb} covers its image {ib}"
        bb = block.bounding_box()
        assert ib["y"] + ib["height"] <= bb["y"] + bb["height"] + 0.5, f"image {ib} cut off by its block {bb}"
        checked += 1
    return checked


@pytest.mark.parametrize("viewport", list(VIEWPORTS))
def test_a_gallery_example_scores_in_one_click_and_the_verdict_is_on_screen(browser, app_url, viewport, shots):
    width, height = VIEWPORTS[viewport]
    page = _open(browser, app_url, viewport)
    try:
        page.get_by_role("button", name=re.compile(r"Swapped relation")).click()
        _wait_verdict(page, r"^(CORRECT|PARTLY RIGHT|WRONG): .*group, Winoground")
        page.wait_for_timeout(300)  # the scroll to the verdict
        assert _inside(_verdict(page).bounding_box(), width, height), "the verdict is off screen"
        header = page.locator(".compact-table th").filter(has_text="score").filter(visible=True).first
        assert _inside(header.bounding_box(), width, height), "the score column is off screen"
        assert _labels_clear_of_images(page) == 3  # both images of the group item and the margin chart
        classes = _verdict(page).locator("xpath=ancestor::*[contains(@class,'verdict')][1]").get_attribute("class")
        assert re.search(r"verdict-(right|wrong|mixed)", classes), classes
        page.screenshot(path=str(shots / f"score_group_{viewport}.png"))

        page.get_by_role("button", name=re.compile(r"Colour foil")).click()
        _wait_verdict(page, r"^(CORRECT|WRONG): .*pairwise")
        page.wait_for_timeout(300)
        assert _inside(_verdict(page).bounding_box(), width, height)
        header = page.locator(".compact-table th").filter(has_text="score").filter(visible=True).first
        assert _inside(header.bounding_box(), width, height)
        page.screenshot(path=str(shots / f"score_pairwise_{viewport}.png"), full_page=True)
    finally:
        page.close()


@pytest.mark.parametrize("viewport", list(VIEWPORTS))
def test_an_unknown_model_fails_fast_in_one_sentence(browser, app_url, viewport, shots):
    page = _open(browser, app_url, viewport)
    try:
        page.get_by_role("button", name=re.compile(r"Colour foil")).click()
        _wait_verdict(page, r"^(CORRECT|WRONG)")
        box = page.get_by_label("Model").first
        box.fill("nobody/no-such-model-here")
        box.press("Enter")
        start = time.perf_counter()
        page.get_by_role("button", name="Score", exact=True).click()
        _wait_verdict(page, r"^Cannot score", timeout=10_000)
        seconds = time.perf_counter() - start
        message = _verdict(page).input_value()
        print(f"unknown model ({viewport}): {seconds:.2f} s: {message}")
        assert seconds < 3.0
        assert "no-such-model-here" in message and message.count(". ") == 0 and "\n" not in message
        assert not re.search(r"--|HF_HUB|/tmp|hf download|huggingface-cli", message)
        page.screenshot(path=str(shots / f"unknown_model_{viewport}.png"))
    finally:
        page.close()


def _expected_verdict(model_path: Path, image: Path, texts: list[str]) -> str:
    """'CORRECT' or 'WRONG' from the model's own logits, computed without vlprobe."""
    import torch
    from PIL import Image
    from transformers import CLIPModel, CLIPProcessor

    model = CLIPModel.from_pretrained(model_path).eval()
    processor = CLIPProcessor.from_pretrained(model_path)
    inputs = processor(text=texts, images=[Image.open(image).convert("RGB")], return_tensors="pt", padding=True)
    with torch.no_grad():
        logits = model(**inputs).logits_per_image[0]
    return "CORRECT" if logits[0] > logits[1] else "WRONG"


def test_score_an_uploaded_image(browser, app_url, model_path, tmp_path, shots):
    from playwright.sync_api import expect

    from vlprobe.scenes.model import Scene, SceneObject
    from vlprobe.scenes.render import render

    image = tmp_path / "scene.png"
    render(Scene(objects=(SceneObject("circle", "red", 2, 2), SceneObject("square", "blue", 4, 3)))).save(image)
    caption, foil = "a red circle and a blue square", "a red circle and a green square"
    expected = _expected_verdict(model_path, image, [caption, foil])
    page = _open(browser, app_url, "laptop")
    try:
        # A mistake first: no image. The message is shown in the verdict, not a traceback.
        page.get_by_label("Captions").fill(caption)
        page.get_by_label("Foils").fill(foil)
        page.get_by_role("button", name="Score", exact=True).click()
        _wait_verdict(page, r"^Cannot score: upload an image first")
        page.locator("input[type=file]").first.set_input_files(str(image))
        expect(page.locator("img[src*='scene']").first).to_be_visible(timeout=30_000)
        page.get_by_role("button", name="Score", exact=True).click()
        _wait_verdict(page, rf"^{expected}: .*pairwise")
        expect(page.get_by_text(foil, exact=True).filter(visible=True).first).to_be_visible()
        assert page.get_by_text("Traceback").count() == 0
        assert _labels_clear_of_images(page) == 2  # the image and the margin chart
    finally:
        page.close()


@pytest.mark.parametrize("viewport", list(VIEWPORTS))
def test_benchmark_rank_box_and_enter(browser, app_url, viewport, shots):
    from playwright.sync_api import expect

    page = _open(browser, app_url, viewport)
    try:
        page.get_by_role("tab", name="Benchmark").click()
        expect(page.get_by_label("Split")).to_have_value("test_ind", timeout=30_000)
        page.get_by_role("button", name="Run benchmark").click()
        caption = page.get_by_text(re.compile(r"^Rank 1 of \d+: item"))
        expect(caption).to_be_visible(timeout=60_000)
        n = int(re.search(r"of (\d+)", caption.inner_text()).group(1))
        assert n >= 2
        # only the metrics of a pairwise item: acc_r, not the set or group copies of the same number
        metrics = page.locator(".compact-table").filter(has_text="CI high").first
        assert "acc_r" in metrics.inner_text() and "sentence_acc" not in metrics.inner_text()
        page.locator("#item-image-1").scroll_into_view_if_needed()  # the picture loads lazily, when seen
        expect(page.locator("#item-image-1 img")).to_be_visible(timeout=15_000)
        assert _labels_clear_of_images(page) == 2  # the chart and one image per TraVLR item (no empty second slot)
        for table in page.locator(".compact-table table").all():  # no column cut off at the right
            if table.is_visible():
                last = table.locator("th").last.bounding_box()
                assert last["x"] + last["width"] <= VIEWPORTS[viewport][0] + 0.5, (table.inner_text()[:80], last)
        rank = page.locator("#item-rank input[type=number]")
        rank.fill(str(n))
        rank.press("Enter")
        expect(page.get_by_text(re.compile(rf"^Rank {n} of {n}: item"))).to_be_visible(timeout=15_000)
        page.screenshot(path=str(shots / f"benchmark_{viewport}.png"), full_page=True)
    finally:
        page.close()


def test_results_chart_has_one_bar_per_split(browser, app_url, tmp_path, shots):
    from playwright.sync_api import expect

    doc = {"format": "vlprobe-results/1", "provenance": {"model": {"model_id": "models/mini-clip"}, "settings": {}},
           "results": [{"benchmark": "travlr", "dataset": "travlr", "config": "spatiality", "split": split,
                        "metrics": {"acc_r": value, "n_items": 100, "chance": {"acc_r": 0.5},
                                    "ci": {"acc_r": [value - 0.05, value + 0.05]}}}
                       for split, value in (("test_ind", 0.54), ("test_ood", 0.46))]}
    path = tmp_path / "travlr_run.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    page = _open(browser, app_url, "laptop")
    try:
        page.get_by_role("tab", name="Results").click()
        page.locator("#results-files input[type=file]").set_input_files(str(path))
        # the uploaded file's download link (its name may be drawn as two spans, stem and extension)
        expect(page.locator('#results-files a[href$="/travlr_run.json"]').first).to_be_visible(timeout=30_000)
        page.get_by_role("button", name="Compare").click()
        chart = page.locator("#results-chart .results-svg svg").first
        expect(chart).to_be_visible(timeout=30_000)
        bars = chart.locator("[data-bar]")
        assert sorted(b.get_attribute("data-bar") for b in bars.all()) == [
            "travlr_run:travlr/spatiality/test_ind:acc_r", "travlr_run:travlr/spatiality/test_ood:acc_r"]
        for bar in bars.all():  # drawn, inside the page's width
            box = bar.bounding_box()
            assert box and box["height"] > 10 and box["x"] + box["width"] <= VIEWPORTS["laptop"][0]
        page.screenshot(path=str(shots / "results_laptop.png"), full_page=True)
    finally:
        page.close()
