"""The Space in a real browser: Debian's chromium, headless, driven by Playwright.

One page per screen size, a laptop's 1280 x 900 and a phone's 390 x 844, each taken through the
whole page in one visit (a page load and a benchmark are the slow parts on a shared machine):

- Score: one click on a gallery example loads and scores it; the verdict (text a screen reader
  reads, role=status) and the score column are then on screen; no image label covers its picture,
  every picture has alt text; a group verdict names the comparisons that failed; an unknown model
  fails in under 3 s with one sentence. On a laptop, an uploaded image is scored with the verdict
  the model's own logits give.
- Benchmark: winoground_style's 'all' config (a list of data files in its card) runs as a 2 x 2
  benchmark, 100 items on a phone; the item's rank is typed and Enter pressed; a rank out of range
  (one past the last, and 0) is refused in words and the item shown stays. On a laptop a TraVLR
  split gives pairwise metrics and one image per item.
- Results: two uploads both called results.json get short, distinct names (no hashes) and a typed
  name wins; a TraVLR file with two splits gives one chart bar per split.
- Throughout: no table cell or header is broken over two lines or cut, measured on the rendered
  text's line boxes, and a table wider than its box scrolls; every chart's text is drawn at 11 px or
  more, inside its chart; help text and labels have a contrast of 4.5:1 or more (WCAG AA).

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
# Items of the winoground_style benchmark: the phone gets the 100-item table the issue was about; the
# laptop a short run (its tables have the same cells, only fewer rows).
BENCH_ITEMS = {"laptop": 12, "phone": 100}


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
def dataset_folders(tmp_path_factory):
    """A tiny TraVLR folder, and winoground_style with 34 items per config: its 'all' config (a list
    of data files in the card) has 102 group items."""
    from vlprobe.cli import main as vlprobe_main

    root = tmp_path_factory.mktemp("browser_data")
    assert vlprobe_main(["build", "travlr", "--out", str(root / "travlr"), "--size", "tiny",
                         "--configs", "spatiality"]) in (0, None)
    assert vlprobe_main(["build", "winoground_style", "--out", str(root / "winoground_style"),
                         "--items", "34"]) in (0, None)
    return [root / "travlr", root / "winoground_style"]


@pytest.fixture(scope="module")
def model_path(repo_root, request):
    shipped = repo_root / "models" / "mini-clip"  # a tiny model is built only where it is missing
    return shipped if (shipped / "config.json").is_file() else Path(request.getfixturevalue("tiny_clip_path"))


@pytest.fixture(scope="module")
def app_url(repo_root, dataset_folders, model_path):
    pytest.importorskip("gradio")
    from vlprobe.demo import settings

    mp = pytest.MonkeyPatch()
    for name in settings.ENV_ALL + ("SPACE_ID",):
        mp.delenv(name, raising=False)
    mp.setenv(settings.ENV_DATASETS, ",".join(str(d) for d in dataset_folders))
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
    return page.locator("#verdict").first


def _wait_verdict(page, pattern, timeout=60_000):
    """The verdict's text (as drawn: innerText, without the markup's white space) matches."""
    from playwright.sync_api import expect

    expect(_verdict(page)).to_have_text(re.compile(pattern), timeout=timeout, use_inner_text=True)


def _inside(box, width, height):
    return box is not None and box["x"] >= 0 and box["y"] >= 0 and box["x"] + box["width"] <= width + 0.5 \
        and box["y"] + box["height"] <= height + 0.5


def _overlap(a, b):
    return not (a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"]
                or a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"])


def _labels_clear_of_images(page):
    """Every visible image block: its label's box does not overlap the picture's box, the picture
    is not cut off by its block, and it has alt text. Returns how many were checked."""
    checked = 0
    for block in page.locator(".labelled-image").all():
        label, img = block.locator("[data-testid=block-label]").first, block.locator("img").first
        if not block.is_visible() or img.count() == 0 or not img.is_visible():
            continue
        lb, ib = label.bounding_box(), img.bounding_box()
        assert lb and ib and not _overlap(lb, ib), f"label {label.inner_text()!r} {lb} covers its image {ib}"
        bb = block.bounding_box()
        assert ib["y"] + ib["height"] <= bb["y"] + bb["height"] + 0.5, f"image {ib} cut off by its block {bb}"
        alt = img.get_attribute("alt") or ""
        assert alt.startswith(label.inner_text().strip()), (alt, label.inner_text())
        checked += 1
    return checked


# ---- measured on the rendered page ----------------------------------------------------------------------

# Every cell of every table: not clipped (its content fits its box); headers, numbers, ids and each
# tag on one line; in running text (class prose) no word split over two lines. A table wider than
# its box must be scrollable. Returns the problems found.
TABLE_PROBLEMS = """() => {
  const problems = [];
  const tops = (range) => new Set([...range.getClientRects()].filter(b => b.width > 0.5)
                                   .map(b => Math.round(b.top))).size;
  const lines = (node) => { const r = document.createRange(); r.selectNodeContents(node); return tops(r); };
  const tables = [...document.querySelectorAll('table.vt')].filter(t => t.offsetParent !== null);
  for (const t of tables) {
    const wrap = t.closest('.vt-wrap');
    const ox = getComputedStyle(wrap).overflowX;
    if (wrap.scrollWidth > wrap.clientWidth + 1 && !['auto', 'scroll'].includes(ox)) problems.push('table cut: ' + ox);
    const box = wrap.getBoundingClientRect();
    if (box.right > window.innerWidth + 0.5) problems.push('table box past the screen: ' + box.right);
    for (const c of t.querySelectorAll('th, td')) {
      if (c.scrollWidth > c.clientWidth + 1) problems.push('clipped: ' + c.innerText);
      if (c.classList.contains('prose')) {
        const walker = document.createTreeWalker(c, NodeFilter.SHOW_TEXT);
        for (let n = walker.nextNode(); n; n = walker.nextNode()) {
          const re = /\\S+/g; let m;
          while ((m = re.exec(n.data))) {
            const r = document.createRange(); r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
            if (tops(r) > 1) problems.push('word broken: ' + m[0]);
          }
        }
      } else if (c.classList.contains('list')) {
        for (const s of c.querySelectorAll('span')) if (lines(s) > 1) problems.push('value broken: ' + s.innerText);
      } else if (c.innerText.trim() && lines(c) > 1) {
        problems.push('broken: ' + c.innerText);
      }
    }
  }
  return tables.length ? problems : ['no table'];
}"""

# Every text of every chart: its drawn size in CSS px (font size x the SVG's scale) and whether it
# lies inside its chart.
CHART_TEXT = """() => [...document.querySelectorAll('.chart-svg svg')].filter(s => s.getBoundingClientRect().width > 0)
  .flatMap(svg => { const outer = svg.getBoundingClientRect();
    return [...svg.querySelectorAll('text')].filter(t => t.textContent.trim()).map(t => {
      const m = t.getScreenCTM(), b = t.getBoundingClientRect();
      return {text: t.textContent, px: parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b),
              inside: b.left >= outer.left - 1 && b.right <= outer.right + 1 && b.top >= outer.top - 1
                      && b.bottom <= outer.bottom + 1};
    }); })"""

# WCAG contrast of each visible help text (a block's info line, the limits line, a table's label)
# and label (a block's title, an image's label chip) against its background.
HELP_CONTRAST = ("""() => {
  const rgb = s => (s.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
                              return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
  const background = el => { for (let e = el; e; e = e.parentElement) { const c = rgb(getComputedStyle(e).backgroundColor);
"""
    "                             if (c.length === 3 || (c.length === 4 && c[3] > 0.5)) return c.slice(0, 3); }"
    " return [255, 255, 255]; };\n"
    """  return [...document.querySelectorAll('.info-text, [data-testid="block-info"], [data-testid="block-label"], """
    """.vt-label, .limits p')].filter(e => e.offsetParent !== null)
    .map(e => { const a = lum(rgb(getComputedStyle(e).color).slice(0, 3)), b = lum(background(e));
                return {text: e.innerText.slice(0, 40), ratio: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)}; });
}""")

# Each visible dropdown whose value is drawn cut or under its arrow: the value's drawn width (the
# input's own font, measured on a canvas) must end before the arrow icon.
DROPDOWNS_CUT = """() => [...document.querySelectorAll('input[role=combobox]')].filter(e => e.offsetParent !== null)
  .map(e => { const s = getComputedStyle(e), r = e.getBoundingClientRect(), c = document.createElement('canvas').getContext('2d');
              c.font = s.font; const icon = e.parentElement.querySelector('.icon-wrap');
              const end = r.left + parseFloat(s.paddingLeft) + c.measureText(e.value).width;
              return {value: e.value, end, limit: icon ? icon.getBoundingClientRect().left : r.right}; })
  .filter(d => d.end > d.limit + 0.5)"""


def _table_problems(page):
    return page.evaluate(TABLE_PROBLEMS)


def _check_tables(page, where):
    problems = _table_problems(page)
    assert problems == [], (where, problems[:10])


def _check_chart_text(page, where):
    """Every chart text at 11 px or more and inside its chart; returns the smallest size."""
    texts = page.evaluate(CHART_TEXT)
    assert texts, f"{where}: no chart text on the page"
    small = [t for t in texts if t["px"] < 11.0]
    outside = [t["text"] for t in texts if not t["inside"]]
    assert not small and not outside, (where, small[:5], outside[:5])
    return min(t["px"] for t in texts)


def _check_contrast(page, where):
    found = page.evaluate(HELP_CONTRAST)
    assert found, f"{where}: no help text found"
    low = [c for c in found if c["ratio"] < 4.5]
    assert not low, (where, low)
    return min(c["ratio"] for c in found)


def _choose(page, label, option):
    box = page.get_by_label(label, exact=True).filter(visible=True).first
    box.click()
    page.get_by_role("option", name=option, exact=True).click()


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


def _run_doc(model, value):
    return {"format": "vlprobe-results/1",
            "provenance": {"model": {"model_id": model}, "settings": {}},
            "results": [{"benchmark": "winoground", "dataset": "winoground", "config": "winoground", "split": "test",
                         "metrics": {"text": value, "image": value / 2, "group": value / 3, "n_items": 400,
                                     "chance": {"text": 0.25, "image": 0.25, "group": 1 / 6}}}]}


def _travlr_doc():
    return {"format": "vlprobe-results/1", "provenance": {"model": {"model_id": "models/mini-clip"}, "settings": {}},
            "results": [{"benchmark": "travlr", "dataset": "travlr", "config": "spatiality", "split": split,
                         "metrics": {"acc_r": value, "n_items": 100, "chance": {"acc_r": 0.5},
                                     "ci": {"acc_r": [value - 0.05, value + 0.05]}}}
                        for split, value in (("test_ind", 0.54), ("test_ood", 0.46))]}


# ---- the steps of a visit -----------------------------------------------------------------------------

def _score_an_upload(page, model_path, tmp_path):
    from playwright.sync_api import expect

    from vlprobe.scenes.model import Scene, SceneObject
    from vlprobe.scenes.render import render

    image = tmp_path / "scene.png"
    render(Scene(objects=(SceneObject("circle", "red", 2, 2), SceneObject("square", "blue", 4, 3)))).save(image)
    caption, foil = "a red circle and a blue square", "a red circle and a green square"
    expected = _expected_verdict(model_path, image, [caption, foil])
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
    assert _labels_clear_of_images(page) == 1  # the image (the margin chart is SVG, its title above it)
    assert page.locator(".labelled-image img").first.get_attribute("alt") == "Image 1: scene.png"


def _score_gallery_examples(page, viewport, shots):
    width, height = VIEWPORTS[viewport]
    page.get_by_role("button", name=re.compile(r"Swapped relation")).click()
    _wait_verdict(page, r"^(CORRECT|PARTLY RIGHT|WRONG): .*group, Winoground")
    page.wait_for_timeout(300)  # the scroll to the verdict
    verdict = _verdict(page)
    assert _inside(verdict.bounding_box(), width, height), "the verdict is off screen"
    header = page.locator("#scores-table th").filter(has_text="score").first
    assert _inside(header.bounding_box(), width, height), "the score column is off screen"
    widths = page.locator("#scores-table .vt-wrap").evaluate("e => [e.scrollWidth, e.clientWidth]")
    assert widths[0] <= widths[1] + 1, f"the scores table must be scrolled to see its margins: {widths}"
    assert re.search(r"verdict-(right|wrong|mixed)", verdict.get_attribute("class"))
    assert verdict.get_attribute("role") == "status"  # read out, unlike a disabled text box
    text = verdict.inner_text()
    assert "neither" not in text
    if not text.startswith("CORRECT"):  # the group verdict names the comparisons that failed
        assert re.search(r"Failed: .*\(\d of 4 comparisons right\)", text), text
    page.screenshot(path=str(shots / f"score_group_{viewport}.png"))
    assert _labels_clear_of_images(page) == 2  # both images of the group item
    label = page.locator("#margin-chart svg").get_attribute("aria-label")
    assert label.startswith("Bar chart of the margins") and "undefined" not in label
    _check_tables(page, "score, group")
    smallest = _check_chart_text(page, "score, group")
    page.screenshot(path=str(shots / f"score_group_full_{viewport}.png"), full_page=True)

    page.get_by_role("button", name=re.compile(r"Colour foil")).click()
    _wait_verdict(page, r"^(CORRECT|WRONG): .*pairwise")
    page.wait_for_timeout(300)
    assert _inside(_verdict(page).bounding_box(), width, height)
    header = page.locator("#scores-table th").filter(has_text="score").first
    assert _inside(header.bounding_box(), width, height)
    return smallest


def _unknown_model(page, viewport, shots):
    box = page.get_by_label("Model").first
    box.fill("nobody/no-such-model-here")
    box.press("Enter")
    start = time.perf_counter()
    page.get_by_role("button", name="Score", exact=True).click()
    _wait_verdict(page, r"^Cannot score", timeout=10_000)
    seconds = time.perf_counter() - start
    message = _verdict(page).inner_text().strip()
    assert seconds < 3.0, seconds
    assert "no-such-model-here" in message and message.count(". ") == 0 and "\n" not in message, message
    assert not re.search(r"--|HF_HUB|/tmp|hf download|huggingface-cli", message)
    page.screenshot(path=str(shots / f"unknown_model_{viewport}.png"))
    return seconds


def _run_benchmark(page, dataset, config, split, items):
    """Choose the dataset, config and split, set the items, run; returns the first item's caption."""
    from playwright.sync_api import expect

    _choose(page, "Dataset", dataset)
    _choose(page, "Config", config)
    expect(page.get_by_label("Split", exact=True).filter(visible=True).first).to_have_value(split, timeout=30_000)
    cut = page.evaluate(DROPDOWNS_CUT)
    assert cut == [], cut  # each choice readable, not cut under its arrow
    n = page.get_by_label("number input for Items (the first N rows)")
    n.fill(str(items))
    n.press("Enter")
    page.get_by_role("button", name="Run benchmark").click()
    caption = page.locator("#item-caption")
    expect(caption).to_have_text(re.compile(rf"^Rank 1 of {items}: item"), timeout=180_000, use_inner_text=True)
    return caption


def _rank_typed_and_out_of_range(page, caption, n):
    """Type the last rank and press Enter: that item is shown. Then one past the last, and 0: refused
    in words, the item shown (caption, picture, scores) stays and the box is set back to it."""
    from playwright.sync_api import expect

    rank = page.locator("#item-rank input[type=number]")
    rank.fill(str(n))
    rank.press("Enter")
    expect(caption).to_have_text(re.compile(rf"^Rank {n} of {n}: item"), timeout=15_000, use_inner_text=True)
    page.locator("#item-image-1").scroll_into_view_if_needed()  # the picture loads lazily, when seen
    image = page.locator("#item-image-1 img")
    expect(image).to_be_visible(timeout=15_000)
    shown_caption = caption.inner_text()
    before = (image.get_attribute("src"), page.locator("#item-table").inner_text())
    for bad in (n + 1, 0):
        rank.fill(str(bad))
        rank.press("Enter")
        expect(caption).to_have_text(re.compile(rf"There is no item of rank {bad}: choose 1 to {n}\. "
                                                rf"Still showing rank {n}"), timeout=15_000, use_inner_text=True)
        assert shown_caption in caption.inner_text()
        assert (image.get_attribute("src"), page.locator("#item-table").inner_text()) == before
        assert page.get_by_text(re.compile(r"^Error$")).count() == 0
        expect(rank).to_have_value(str(n), timeout=5_000)  # set back to the item shown


def _winoground_benchmark(page, viewport, shots):
    items = BENCH_ITEMS[viewport]
    caption = _run_benchmark(page, "winoground_style", "all", "test", items)  # 'all': a list of data files
    summary = page.locator("#bench-summary").inner_text()
    assert summary.startswith(f"winoground_style / all / test: {items} items (group)"), summary
    metrics = page.locator("#metrics-table").inner_text()
    assert all(k in metrics for k in ("text", "image", "group")), metrics
    assert page.locator("#browse-table tbody tr").count() == items
    assert "something went wrong" not in page.content()
    _check_tables(page, f"benchmark, {items} items")
    smallest = _check_chart_text(page, "benchmark")
    page.screenshot(path=str(shots / f"benchmark_{viewport}.png"), full_page=True)
    _rank_typed_and_out_of_range(page, caption, items)
    assert _labels_clear_of_images(page) == 2  # both images of a 2 x 2 item
    page.screenshot(path=str(shots / f"benchmark_rank_{viewport}.png"), full_page=True)
    return smallest


def _travlr_benchmark(page):
    caption = _run_benchmark(page, "travlr", "spatiality", "test_ind", 4)
    # only the metrics of a pairwise item: acc_r, not the set or group copies of the same number
    metrics = page.locator("#metrics-table").inner_text()
    assert "acc_r" in metrics and "sentence_acc" not in metrics
    page.locator("#item-image-1").scroll_into_view_if_needed()
    from playwright.sync_api import expect

    expect(page.locator("#item-image-1 img")).to_be_visible(timeout=15_000)
    assert _labels_clear_of_images(page) == 1  # one image per TraVLR item (no empty second slot)
    _check_tables(page, "travlr benchmark")
    assert caption.inner_text().startswith("Rank 1 of 4")


def _results(page, viewport, tmp_path, shots):
    from playwright.sync_api import expect

    from vlprobe.demo.results import MAX_LABEL, short

    paths = []
    for folder, model, value in (("one", "models/mini-clip", 0.3), ("two", "openai/clip-vit-base-patch32", 0.4)):
        (tmp_path / folder).mkdir()
        paths.append(tmp_path / folder / "results.json")  # the name every run writes
        paths[-1].write_text(json.dumps(_run_doc(model, value)), encoding="utf-8")
    paths.append(tmp_path / "travlr_run.json")
    paths[-1].write_text(json.dumps(_travlr_doc()), encoding="utf-8")
    page.locator("#results-files input[type=file]").set_input_files([str(p) for p in paths])
    # the uploaded files' download links (a name may be drawn as two spans, stem and extension)
    expect(page.locator('#results-files a[href$="/results.json"]')).to_have_count(2, timeout=30_000)
    page.get_by_role("button", name="Compare").click()
    chart = page.locator("#results-svg svg")
    expect(chart).to_be_visible(timeout=30_000)
    names = page.locator("#runs-table th").all_inner_texts()[4:-1:2]
    assert names == ["mini-clip · winoground", short("clip-vit-base-patch32 · winoground"), "travlr_run"], names
    assert all(len(n) <= MAX_LABEL for n in names)
    hashes = re.compile(r"[0-9a-f]{16,}")
    shown = " ".join(page.locator(f"#{key}").inner_text() for key in ("results-chart", "runs-table", "papers-table"))
    shown += page.get_by_text(re.compile(r"^3 runs")).inner_text()
    assert not hashes.search(shown), hashes.search(shown)
    legend = " ".join(chart.locator("text").all_text_contents())
    assert all(n in legend for n in names), legend
    assert "this run: mini-clip · winoground" in page.locator("#papers-table").inner_text()
    # one bar per split of the TraVLR run
    bars = sorted(b.get_attribute("data-bar") for b in chart.locator("[data-bar^='travlr_run:']").all())
    assert bars == ["travlr_run:travlr/spatiality/test_ind:acc_r", "travlr_run:travlr/spatiality/test_ood:acc_r"]
    for bar in chart.locator("[data-bar]").all():
        box = bar.bounding_box()
        assert box and box["height"] > 5
    _check_tables(page, "results")
    smallest = _check_chart_text(page, "results")
    page.screenshot(path=str(shots / f"results_{viewport}.png"), full_page=True)
    # names the visitor types win
    page.locator("#run-names textarea").fill("baseline\nB/32")
    page.get_by_role("button", name="Compare").click()
    expect(page.locator("#runs-table th").filter(has_text=re.compile(r"^\s*baseline\s*$"))).to_have_count(1, timeout=30_000)
    assert page.locator("#runs-table th").all_inner_texts()[4:-1:2] == ["baseline", "B/32", "travlr_run"]
    return smallest


@pytest.mark.parametrize("viewport", list(VIEWPORTS))
def test_the_space_at_both_sizes(browser, app_url, model_path, viewport, tmp_path, shots):
    seen, clock = {}, time.perf_counter()

    def step(name, fn, *args):
        nonlocal clock
        seen[name] = fn(*args)
        seen[name + " s"] = round(time.perf_counter() - clock, 1)
        clock = time.perf_counter()

    page = _open(browser, app_url, viewport)
    try:
        step("contrast, score tab", _check_contrast, page, "score tab")
        if viewport == "laptop":
            step("upload", _score_an_upload, page, model_path, tmp_path)
        step("gallery chart px", _score_gallery_examples, page, viewport, shots)
        step("unknown model s", _unknown_model, page, viewport, shots)
        page.get_by_role("tab", name="Benchmark").click()
        step("contrast, benchmark tab", _check_contrast, page, "benchmark tab")
        step("benchmark chart px", _winoground_benchmark, page, viewport, shots)
        if viewport == "laptop":
            step("travlr", _travlr_benchmark, page)
        page.get_by_role("tab", name="Results").click()
        step("contrast, results tab", _check_contrast, page, "results tab")
        step("results chart px", _results, page, viewport, tmp_path, shots)
    finally:
        print(f"\n{viewport}: {seen}")
        page.close()
