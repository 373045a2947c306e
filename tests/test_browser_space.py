"""The Space in a real browser: Debian's chromium, headless, driven by Playwright.

Uploads an image, types a caption and a foil, clicks Score, and checks the verdict the page
shows against the model's own logits; then checks that a mistake (no image) is shown as a
readable message. A screenshot of the page is saved in the test's tmp dir.

Chromium comes from Debian (``scripts/ensure_chromium.sh``, which ``.ci/run`` calls); Playwright's
own browser download is not used. When /usr/bin/chromium is missing the test installs it with that
script; it skips only where apt-get itself is unavailable.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


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
def app_url(repo_root):
    pytest.importorskip("gradio")
    spec = importlib.util.spec_from_file_location("vlprobe_space_app_browser", repo_root / "space" / "app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _, url, _ = module.demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True)
    try:
        yield url
    finally:
        module.demo.close()


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


def test_score_an_uploaded_image_in_chromium(chromium, app_url, repo_root, tiny_clip_path, tmp_path, monkeypatch):
    sync_api = pytest.importorskip("playwright.sync_api")
    from vlprobe import space_logic as logic
    from vlprobe.scenes.model import Scene, SceneObject
    from vlprobe.scenes.render import render

    shipped = repo_root / logic.DEFAULT_MODEL
    for name in (logic.ENV_MODELS, logic.ENV_DATASETS, logic.ENV_MAX_UPLOAD_MB):
        monkeypatch.delenv(name, raising=False)
    if (shipped / "config.json").is_file():
        model = shipped
        monkeypatch.delenv(logic.ENV_DEFAULT_MODEL, raising=False)
    else:  # until the shipped model is in the checkout, the page's default is the tiny test model
        model = tiny_clip_path
        monkeypatch.setenv(logic.ENV_DEFAULT_MODEL, str(tiny_clip_path))

    image = tmp_path / "scene.png"
    render(Scene(objects=(SceneObject("circle", "red", 2, 2), SceneObject("square", "blue", 4, 3)))).save(image)
    caption, foil = "a red circle and a blue square", "a red circle and a green square"
    expected = _expected_verdict(model, image, [caption, foil])

    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1100})
            page.goto(app_url)
            score = page.get_by_role("button", name="Score", exact=True)
            sync_api.expect(score).to_be_visible(timeout=30_000)

            # A mistake first: no image. The page shows the message, not a traceback.
            page.get_by_label("Captions").fill(caption)
            page.get_by_label("Foils").fill(foil)
            score.click()
            sync_api.expect(page.get_by_text("upload an image first").first).to_be_visible(timeout=30_000)

            page.locator("input[type=file]").first.set_input_files(str(image))
            sync_api.expect(page.locator("img[src*='scene']").first).to_be_visible(timeout=30_000)
            score.click()
            verdict = page.get_by_label("Verdict")
            sync_api.expect(verdict).to_have_value(re.compile(rf"^{expected}: .*pairwise"), timeout=60_000)
            # the scores table lists both texts; the differing words are highlighted
            sync_api.expect(page.get_by_text(foil, exact=True).filter(visible=True).first).to_be_visible()
            assert page.get_by_text("Traceback").count() == 0
            # the bar chart (Vega) has drawn its marks
            sync_api.expect(page.locator("canvas.marks, svg.marks").first).to_be_visible(timeout=15_000)
            page.wait_for_timeout(500)
            shot = tmp_path / "space_score.png"
            page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 10_000
            print(f"screenshot: {shot}")
        finally:
            browser.close()
