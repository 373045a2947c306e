"""The Space as Hugging Face hosts it (``SPACE_ID`` set), in Debian's chromium at 1280 x 900 and 390 x 844:
no box can be used to probe the server's disk, and no server path reaches the page or its API page.

The owner lists the datasets (``VLPROBE_SPACE_DATASETS``: the tiny TraVLR and winoground_style folders that
tests/test_browser_space.py builds); the page offers them by name. Checked:

- every path typed where a model goes (the Score and Benchmark tabs' Model boxes), and every path sent where a
  dataset goes (the API's /run_benchmark and /load_example; the page's Dataset boxes take no typed text), gets
  the same sentence whether it exists on the server or not (``/etc/passwd``, ``/root``, ``~``, the model's and a
  dataset's own folders, against ``/etc/passwd2``, ``/root/nonexistent``, ...);
- the page's HTML, its config and its API description ("Use via API") hold no server path (the repository, the
  dataset folders, the model folder), before and after a benchmark run;
- a run chosen by dataset name works; text at 4.5:1 and controls at 3:1; every control named; on a phone the
  first result within 1,600 px of the page's top.
"""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path

import pytest
import test_browser_space as local
from helpers_space import load_space, served
from test_browser_space import (
    FIRST_RESULT_PX,
    SLOW,
    VIEWPORTS,
    _bottoms,
    _check_contrast,
    _check_names,
    _check_tables,
    _choose,
    _markdown,
    _no_error_state,
    _open,
    _set_number,
    _wait_verdict,
)

# the local walk's fixtures (chromium, the browser, the built folders, the model, the screenshots' folder)
chromium, browser, build_root, model_path, shots = local.chromium, local.browser, local.build_root, local.model_path, local.shots
pytestmark = pytest.mark.browser

HERE_PATHS = ("/etc/passwd", "/root", "~", "/etc", "/proc/self/environ")  # that exist on any Linux server
NOWHERE_PATHS = ("/etc/passwd2", "/root/nonexistent", "~/nothing", "/nothing/at/all")


@pytest.fixture(scope="module")
def hosted(repo_root, build_root, model_path):
    """space/app.py with SPACE_ID set, offline, the owner's dataset list naming two built folders."""
    pytest.importorskip("gradio")
    from vlprobe.demo import hub, settings

    mp = pytest.MonkeyPatch()
    for name in settings.ENV_ALL:
        mp.delenv(name, raising=False)
    mp.setenv("SPACE_ID", "org/vlprobe")
    mp.setenv(settings.ENV_DATASETS, ",".join(str(build_root / n) for n in ("travlr", "winoground_style")))
    mp.setenv("VLPROBE_ROOT", str(build_root))
    mp.setattr(hub, "hub_reachable", lambda: False)
    mp.setattr("huggingface_hub.try_to_load_from_cache", lambda *a, **k: None)
    module = load_space(repo_root, "vlprobe_space_app_hosted")
    try:
        with served(module) as url:
            yield module, url
    finally:
        mp.undo()


def _server_paths(repo_root, build_root, model_path):
    """The server paths no page may show: the repository, the dataset folders, the model folder."""
    return [str(p) for p in (repo_root, build_root, build_root / "travlr", build_root / "winoground_style",
                             Path(model_path).resolve())]


def _no_server_path(text, paths, where):
    found = [p for p in paths if p in text]
    assert not found, (where, found)


def _alike(answers):
    """The answers with the typed text taken out: one sentence for every path, existing or not."""
    said = {re.sub(r"'[^']*'", "'…'", text, count=1) for text in answers.values()}
    assert len(said) == 1, answers
    return said.pop()


def _typed_models(page, box, press, read, paths):
    answers = {}
    for typed in paths:
        box.fill(typed)
        box.press("Enter")
        press()
        answers[typed] = read(typed)
    return answers


def _score_tab_model_paths(page, model_path, build_root):
    """A scene loaded (so the model is the only thing wrong), each path typed in the Model box and scored."""
    page.get_by_role("button", name="Colour foil (pairwise)").click()
    _wait_verdict(page, r"^(CORRECT|WRONG|TIE): .*pairwise")
    box = page.get_by_label("Model", exact=True).filter(visible=True).first
    paths = HERE_PATHS + (str(model_path), str(build_root / "travlr")) + NOWHERE_PATHS

    def read(typed):
        _wait_verdict(page, rf"^Cannot score: model {re.escape(repr(typed))}")
        return _markdown(page, "verdict").inner_text()

    answers = _typed_models(page, box, lambda: page.get_by_role("button", name="Score", exact=True).click(), read, paths)
    said = _alike(answers)
    assert said == ("Cannot score: model '…': this hosted Space loads models from the Hugging Face Hub only; type a "
                    "Hub model id like 'openai/clip-vit-base-patch32'"), said
    box.fill("models/mini-clip")
    box.press("Enter")
    return said


def _benchmark_tab_model_paths(page, model_path):
    from playwright.sync_api import expect

    box = page.get_by_label("Model", exact=True).filter(visible=True).first
    _set_number(page, "Items", 6)
    _set_number(page, "Bootstrap resamples", 0)

    def read(typed):
        expect(_markdown(page, "bench-summary")).to_have_text(
            re.compile(rf"^⚠️ Cannot run the benchmark: model {re.escape(repr(typed))}"), timeout=SLOW, use_inner_text=True)
        return _markdown(page, "bench-summary").inner_text()

    answers = _typed_models(page, box, lambda: page.get_by_role("button", name="Run benchmark").click(), read,
                            ("/etc/passwd", str(model_path), "/etc/passwd2", "/root/nonexistent"))
    said = _alike(answers)
    box.fill("models/mini-clip")
    box.press("Enter")
    return said


def _dataset_boxes_take_no_path(page, app):
    """The Dataset box offers the listed datasets by name, and a typed path is not taken."""
    from playwright.sync_api import expect

    box = page.get_by_label("Dataset", exact=True).filter(visible=True).first
    before = box.input_value()
    assert before in {label for label, _ in app.SETTINGS.dataset_choices()}
    box.click()
    box.fill("/etc")
    box.press("Enter")
    page.keyboard.press("Escape")
    page.get_by_role("heading").first.click()  # leave the box
    expect(box).to_have_value(before, timeout=SLOW)


def _api_paths(url, build_root, model_path):
    """The API, as a script would call it: a path where a dataset goes gets one sentence, existing or not."""
    from gradio_client import Client

    client = Client(url, verbose=False)
    answers = {"run_benchmark": {}, "load_example": {}}
    for path in HERE_PATHS + (str(build_root / "travlr"),) + NOWHERE_PATHS:
        out = client.predict(path, "spatiality", "test_ind", "models/mini-clip", 4, "strict", 0, api_name="/run_benchmark")
        answers["run_benchmark"][path] = out[0]
        answers["load_example"][path] = client.predict(path, "spatiality", 0, api_name="/load_example")[0]
    said = {k: _alike(v) for k, v in answers.items()}
    assert said["run_benchmark"].startswith("⚠️ **Cannot run the benchmark:** dataset '…' is not offered on this Space; "
                                            "choose one of: travlr, winoground_style"), said
    assert said["load_example"].startswith("⚠️ dataset '…' is not offered on this Space"), said
    return said


def _api_page(page, url, paths):
    """The page's config and API description, and the "Use via API" view, name datasets, never server paths."""
    for route in ("/config", "/gradio_api/info"):
        text = urllib.request.urlopen(url.rstrip("/") + route, timeout=60).read().decode()
        _no_server_path(text, paths, route)
    info = json.loads(urllib.request.urlopen(url.rstrip("/") + "/gradio_api/info", timeout=60).read().decode())
    benchmark = info["named_endpoints"]["/run_benchmark"]["parameters"][0]
    assert benchmark["parameter_default"] == "travlr", benchmark  # the dataset by its name
    page.get_by_text("Use via API").first.click()  # the page's own view of its API
    page.get_by_text("/run_benchmark").first.wait_for(timeout=SLOW)
    shown = page.content()
    _no_server_path(shown, paths, "the API page")
    assert "travlr" in shown
    page.goto(url)
    return benchmark["parameter_default"]


@pytest.mark.parametrize("viewport", list(VIEWPORTS))
def test_the_hosted_space_answers_alike_and_shows_no_server_path(browser, hosted, repo_root, build_root, model_path,
                                                                viewport, shots):
    from playwright.sync_api import expect

    module, url = hosted
    paths = _server_paths(repo_root, build_root, model_path)
    seen = {}
    page = _open(browser, url, viewport)
    try:
        _no_server_path(page.content(), paths, "the page as it opens")
        gallery = [b.inner_text().strip() for b in page.locator(".gallery-row button").all() if b.is_visible()]
        assert {"travlr: spatiality (pairwise)", "winoground_style: spatial_swap (group)"} <= set(gallery), gallery
        seen["contrast, first look"] = _check_contrast(page, "hosted, first look")
        if viewport == "laptop":
            seen["api page default"] = _api_page(page, url, paths)
            expect(page.get_by_role("button", name="Score", exact=True)).to_be_visible(timeout=60_000)
        seen["score tab: model paths"] = _score_tab_model_paths(page, model_path, build_root)
        seen["names, score"] = _check_names(page, "hosted score tab")
        page.get_by_role("tab", name="Benchmark").click()
        _dataset_boxes_take_no_path(page, module)
        seen["benchmark tab: model paths"] = _benchmark_tab_model_paths(page, model_path)
        _choose(page, "Dataset", "winoground_style")
        _choose(page, "Config", "all")
        page.get_by_role("button", name="Run benchmark").click()
        expect(_markdown(page, "bench-summary")).to_have_text(re.compile(r"^winoground_style / all / test: 6 of "),
                                                              timeout=SLOW, use_inner_text=True)
        _no_error_state(page)
        seen["tables"] = _check_tables(page, "hosted benchmark")
        page.evaluate("window.scrollTo(0, 0)")
        seen["first result bottom"] = _bottoms(page, "bench-summary", "metrics-table")
        assert max(seen["first result bottom"].values()) < FIRST_RESULT_PX, seen["first result bottom"]
        page.screenshot(path=str(shots / f"hosted_benchmark_{viewport}.png"), full_page=True)
        _no_server_path(page.content(), paths, "the page after a run")
        seen["contrast, benchmark"] = _check_contrast(page, "hosted benchmark tab")
        seen["names, benchmark"] = _check_names(page, "hosted benchmark tab")
        if viewport == "laptop":
            seen["api"] = _api_paths(url, build_root, model_path)
    finally:
        print(f"\nhosted {viewport}: {seen}")
        page.close()
