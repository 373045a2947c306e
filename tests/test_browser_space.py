"""The Space in a real browser: Debian's chromium, headless, driven by Playwright.

One page per screen size, a laptop's 1280 x 900 and a phone's 390 x 844, each walked as a first
visitor would, with the app's own dataset discovery (no VLPROBE_SPACE_DATASETS): the folders built
under the repository root, if any, and those `vlprobe build` wrote where it writes by default
(here a temporary $VLPROBE_ROOT holding a tiny TraVLR and Winoground-style build).

- Score: mini-clip is the offline model, with its one line saying what it reads; the gallery offers
  only examples it can read; a click scores one (verdict read out, scores on screen, no label on a
  picture); two texts the model reads as the same tokens give a TIE verdict saying how the tie
  policy counts it, and a margin chart without a meaningless axis; an unknown model fails in one
  sentence in under 3 s. On a laptop: the Score button is above the fold, an upload over the limit
  is refused in the verdict at once, an uploaded scene gets the verdict of the model's own logits.
- Benchmark: every offered dataset offers only configs with rows and runs; bad numbers (Items 0
  and 5000, Bootstrap 5000, 99999 and -1) and a bad Row are answered in one sentence naming the box
  and its range, with no "Error" badge, no toast and no page left "running"; winoground_style/all
  is sampled across its instruments (stratified); a rank out of range is refused in words.
- Results: the run's results.json is downloaded and loaded into the Results tab, and sent there by
  its button; Compare with no file shows each paper's chart and a long table; runs get short names.
- Throughout, at both sizes, on every chart the page draws: no two chart texts overlap (bounding
  boxes of the SVG's text elements, as drawn), chart text at 11 px or more inside its chart; every
  piece of text (placeholders and chart text included) has WCAG AA contrast (4.5:1, 3:1 large)
  computed from computed styles; every control in the accessibility tree (Chromium's, over CDP)
  has a name, the upload zones distinct ones; no table cell is broken or cut.

Screenshots are kept under the test's tmp dir (the path is printed). Chromium comes from Debian
(``scripts/ensure_chromium.sh``); Playwright's own browser download is not used. When
/usr/bin/chromium is missing the test installs it with that script; it skips only where apt-get
itself is unavailable. No step waits a fixed time: each waits for what it expects, generously.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from helpers_space import load_space, served

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
VIEWPORTS = {"laptop": (1280, 900), "phone": (390, 844)}
# Items of the winoground_style benchmark: the phone gets a 100-item table; the laptop a short run
# (its tables have the same cells, only fewer rows).
BENCH_ITEMS = {"laptop": 12, "phone": 100}
SLOW = 240_000  # ms: a benchmark or a model load on a loaded 2-core machine
# ~15% over what was measured, as fonts differ between machines:
RESULTS_PHONE_PX = 2300  # the phone's Results page with a VALSE run beside the papers, folded (1,979 px; 3,439 before)
FIRST_RESULT_PX = 1600  # the first result's bottom edge, from the page's top (a phone's page included)
BENCH_PHONE_PX = 2350  # the phone's Benchmark page after a 100-item run, folded (2,030 px; 3,651 before)
# Each drawn element that scrolls inside its own box (the page's one scroll is the document's)
INNER_SCROLLS = """() => [...document.querySelectorAll('body *')].filter(e => { const s = getComputedStyle(e);
  return e.offsetParent !== null && /auto|scroll/.test(s.overflowY) && e.scrollHeight > e.clientHeight + 2; })
  .map(e => (e.closest('[id]') || {}).id + ' ' + e.tagName + '.' + String(e.className).slice(0, 50))"""
INTERACTIVE = {"button", "textbox", "combobox", "slider", "spinbutton", "radio", "radiogroup", "checkbox", "tab",
               "link", "listbox", "searchbox", "switch", "menuitem", "option"}


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
def build_root(tmp_path_factory):
    """Where `vlprobe build` writes by default when $VLPROBE_ROOT is set: a tiny TraVLR (spatiality)
    and winoground_style with 34 items per config (its 'all' config, a list of data files in the
    card, has 102 group items), built with no --out; and a folder named valse whose 40 items
    (config words, tags kind) all tie for mini-clip (their texts differ only in words it does not know)."""
    from test_space_visitor import word_folder

    from vlprobe.cli import main as vlprobe_main

    root = tmp_path_factory.mktemp("browser_root")
    mp = pytest.MonkeyPatch()
    mp.setenv("VLPROBE_ROOT", str(root))
    try:
        assert vlprobe_main(["build", "travlr", "--size", "tiny", "--configs", "spatiality"]) in (0, None)
        assert vlprobe_main(["build", "winoground_style", "--items", "34"]) in (0, None)
    finally:
        mp.undo()
    word_folder(root)  # "valse": 40 items whose caption and foil mini-clip reads alike (every item ties)
    assert (root / "travlr" / "vlprobe.yaml").is_file() and (root / "winoground_style" / "vlprobe.yaml").is_file()
    return root


@pytest.fixture(scope="module")
def model_path(repo_root):
    shipped = repo_root / "models" / "mini-clip"
    if not (shipped / "config.json").is_file():
        pytest.skip("models/mini-clip is not in this checkout: the page's offline model")
    return shipped


@pytest.fixture(scope="module")
def app(repo_root, build_root, model_path):
    """space/app.py as `python app.py` runs it, offline (the Hub check answers no), its dataset
    discovery left alone (only $VLPROBE_ROOT says where `vlprobe build` wrote), images limited to
    1 MB so that an over-limit upload stays small."""
    pytest.importorskip("gradio")
    from vlprobe.demo import hub, settings

    mp = pytest.MonkeyPatch()
    for name in settings.ENV_ALL + ("SPACE_ID",):
        mp.delenv(name, raising=False)
    mp.setenv("VLPROBE_ROOT", str(build_root))
    mp.setenv(settings.ENV_MAX_UPLOAD_MB, "1")
    mp.setattr(hub, "hub_reachable", lambda: False)
    mp.setattr("huggingface_hub.try_to_load_from_cache", lambda *a, **k: None)  # nothing cached, whatever the machine
    module = load_space(repo_root, "vlprobe_space_app_browser")
    assert module.preload_default_model(module.SETTINGS) is None  # as `python app.py` does before serving
    try:
        with served(module) as url:
            yield module, url
    finally:
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
    // a table of cards keeps its header row for screen readers only (each card names its cells): not drawn
    const heads = getComputedStyle(t.tHead || t).position === 'absolute' ? 'td' : 'th, td';
    for (const c of t.querySelectorAll(heads)) {
      if (c.scrollWidth > c.clientWidth + 1) problems.push('clipped: ' + c.innerText);
      if (c.classList.contains('prose') || c.classList.contains('wrap')) {
        const walker = document.createTreeWalker(c, NodeFilter.SHOW_TEXT);
        for (let n = walker.nextNode(); n; n = walker.nextNode()) {
          const re = /\\S+/g; let m;
          while ((m = re.exec(n.data))) {
            const r = document.createRange(); r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
            if (tops(r) > 1) problems.push('word broken: ' + m[0]);
          }
        }
      } else if (c.classList.contains('list') || c.classList.contains('ci')) {  // a value and its CI: each whole
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

# Per chart on the page, the pairs of its texts whose boxes (as the browser draws them) intersect by
# more than half a pixel both ways; two lines of one label (one matplotlib text: one SVG group) are
# one text, spaced by matplotlib.
CHART_OVERLAPS = """() => [...document.querySelectorAll('.chart-svg svg')].filter(s => s.getBoundingClientRect().width > 0)
  .map(svg => {
    const texts = [...svg.querySelectorAll('text')].filter(t => t.textContent.trim())
      .map(t => ({t: t.textContent.trim(), g: t.parentElement, b: t.getBoundingClientRect()}));
    const pairs = [];
    for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++) {
      const a = texts[i], c = texts[j];
      if (a.g === c.g) continue;
      const w = Math.min(a.b.right, c.b.right) - Math.max(a.b.left, c.b.left);
      const h = Math.min(a.b.bottom, c.b.bottom) - Math.max(a.b.top, c.b.top);
      if (w > 0.5 && h > 0.5) pairs.push([a.t, c.t, +w.toFixed(1), +h.toFixed(1)]);
    }
    return {chart: (svg.closest('.chart-svg') || {}).id || '?', texts: texts.length, overlaps: pairs};
  })"""

# WCAG 2 contrast of every visible piece of text: an element's own text, an input's value or
# placeholder, SVG text; against what is drawn behind it (the ancestors' background colours
# composited, a gradient by its worst stop), the text's colour faded by its and its ancestors'
# opacity. Text at (nearly) zero opacity is not drawn and not counted; disabled controls are exempt.
# Need: 4.5:1, or 3:1 for large text (24 px, or 18.66 px bold).
CONTRAST = """() => {
  const parse = s => { const m = (s || '').match(/rgba?\\(([^)]+)\\)/); if (!m) return null;
    const v = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number); return [v[0], v[1], v[2], v.length > 3 ? v[3] : 1]; };
  const over = (top, bottom) => [0, 1, 2].map(i => top[i] * top[3] + bottom[i] * (1 - top[3])).concat([1]);
  const lum = c => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
                     return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const ratio = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
  const backgrounds = el => {
    const layers = [];
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
      const s = getComputedStyle(e);
      const stops = ((s.backgroundImage || '').match(/rgba?\\([^)]+\\)/g) || []).map(parse);
      if (stops.length) { layers.push(stops); if (stops.every(c => c[3] >= 0.99)) break; }
      const c = parse(s.backgroundColor);
      if (c && c[3] > 0) { layers.push([c]); if (c[3] >= 0.99) break; }
    }
    let result = [[255, 255, 255, 1]];
    for (const layer of layers.reverse()) result = result.flatMap(b => layer.map(c => over(c, b)));
    return result;
  };
  const opacity = el => {
    let o = 1;
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) o *= +getComputedStyle(e).opacity;
    return o;
  };
  const shown = el => { const r = el.getBoundingClientRect(), s = getComputedStyle(el);
    return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && !el.closest('[hidden], [aria-hidden=true]'); };
  const large = s => {
    const px = parseFloat(s.fontSize), w = parseInt(s.fontWeight) || 400;
    return px >= 24 || (px >= 18.66 && w >= 700);
  };
  const out = [];
  const check = (el, text, colour, style) => {
    if (!colour) return;
    const fade = opacity(el);
    if (fade < 0.05) return;
    const fg = colour.slice(); fg[3] *= fade;
    const worst = Math.min(...backgrounds(el).map(b => ratio(over(fg, b), b)));
    out.push({text: text.slice(0, 40), ratio: +worst.toFixed(2), need: large(style) ? 3 : 4.5,
              where: el.id || String(el.className || el.tagName).slice(0, 40)});
  };
  for (const el of document.querySelectorAll('body *')) {
    if (!shown(el) || el.closest('button[disabled], input[disabled], textarea[disabled]')) continue;
    const s = getComputedStyle(el);
    if (el instanceof SVGElement) {
      if (el.tagName === 'text' && el.textContent.trim()) check(el, el.textContent.trim(), parse(s.fill), s);
      continue;
    }
    const own = [...el.childNodes].filter(n => n.nodeType === 3 && n.data.trim()).map(n => n.data.trim()).join(' ');
    if (own) check(el, own, parse(s.color), s);
    if ((el.tagName === 'INPUT' || el.tagName === 'TEXTAREA') && !['checkbox', 'radio', 'range', 'file'].includes(el.type)) {
      if (el.value) check(el, el.value, parse(s.color), s);
      else if (el.placeholder) check(el, 'placeholder: ' + el.placeholder, parse(getComputedStyle(el, '::placeholder').color), s);
    }
  }
  return out;
}"""

# WCAG 1.4.11 (non-text contrast) of every visible control: what shows where a text box, dropdown, number
# box, radio circle or check box is (its border, fill or shadow, or that of a wrapper about its size; a
# radio's or check box's label pill counts), a slider's track (Gradio draws it in --neutral-200), and an
# icon-only button's icon, each against what is drawn around it. Need: 3:1.
NON_TEXT = """() => {
  const parse = s => { const m = (s || '').match(/rgba?\\(([^)]+)\\)/); if (!m) return null;
    const v = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number); return [v[0], v[1], v[2], v.length > 3 ? v[3] : 1]; };
  const hex = h => (h.match(/^#(..)(..)(..)$/) || []).slice(1).map(x => parseInt(x, 16)).concat([1]);
  const over = (top, bottom) => [0, 1, 2].map(i => top[i] * top[3] + bottom[i] * (1 - top[3])).concat([1]);
  const lum = c => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
                     return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const ratio = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
  const behind = el => {  // the colour drawn behind el: its ancestors' backgrounds, composited
    const layers = [];
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 0.99) break; }
    }
    return layers.reverse().reduce((acc, c) => over(c, acc), [255, 255, 255, 1]);
  };
  const shown = el => { const r = el.getBoundingClientRect(), s = getComputedStyle(el);
    return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && !el.closest('[hidden], [aria-hidden=true]'); };
  const out = [];
  const add = (what, q, how) => out.push({what: what.slice(0, 40), ratio: +q.toFixed(2), how});
  const controls = [...document.querySelectorAll('input, textarea')]
    .filter(el => shown(el) && !['hidden', 'file'].includes(el.type) && !el.disabled);
  for (const el of controls) {
    const name = (el.type || el.tagName) + ' ' + (el.getAttribute('aria-label') || el.name || el.placeholder || '');
    if (el.type === 'range') {  // its track: Gradio draws it in --neutral-200 (and --slider-color up to the value)
      const track = hex(getComputedStyle(el).getPropertyValue('--neutral-200').trim());
      add(name, track.length === 4 ? ratio(track, behind(el)) : 0, 'track');
      continue;
    }
    const r0 = el.getBoundingClientRect(), pill = ['radio', 'checkbox'].includes(el.type) ? el.closest('label') : null;
    let best = 0, how = '';
    const consider = (colour, outside, what) => {
      if (!colour || colour[3] === 0) return;
      const q = ratio(over(colour, outside), outside);
      if (q > best) { best = q; how = what; }
    };
    // the control, then ancestors about its size (a radio's label pill too): the first whose edge stands out
    for (let e = el, k = 0; e && k < 4; e = e.parentElement, k++) {
      const r = e.getBoundingClientRect();
      if (k && !(pill && pill.contains(e)) && (r.width > r0.width + 40 || r.height > r0.height + 40)) break;
      const s = getComputedStyle(e), outside = behind(e.parentElement);
      const sides = ['Top', 'Right', 'Bottom', 'Left'].map(side => parseFloat(s['border' + side + 'Width']) || 0);
      if (Math.max(...sides) >= 1) consider(parse(s.borderTopColor), outside, 'border of ' + e.tagName);
      consider(parse(s.backgroundColor), outside, 'fill of ' + e.tagName);
      const shadow = s.boxShadow.match(/rgba?\\([^)]+\\)/);
      if (shadow && /\\dpx/.test(s.boxShadow)) consider(parse(shadow[0]), outside, 'shadow of ' + e.tagName);
    }
    add(name, best, how);
  }
  // icon-only buttons: the icon (drawn in the button's colour) against what is behind it
  for (const b of document.querySelectorAll('button, [role=button]')) {
    if (!shown(b) || b.disabled || (b.innerText || '').trim() || !b.querySelector('svg')) continue;
    const s = getComputedStyle(b.querySelector('svg')), outside = behind(b);
    const ink = [s.stroke, s.fill, s.color].map(parse).filter(c => c && c[3] > 0.05);
    add('icon ' + (b.getAttribute('aria-label') || b.title || '?'),
        Math.max(0, ...ink.map(c => ratio(over(c, outside), outside))), 'icon');
  }
  return out;
}"""

# Each table on the page: its width against its box (no sideways scroll: no cell wider than its column
# holds) and its widest cell.
TABLE_FIT = """() => [...document.querySelectorAll('.vt-outer[id]')]
  .filter(e => e.offsetParent !== null && e.querySelector('table'))
  .map(e => { const wrap = e.querySelector('.vt-wrap'), t = e.querySelector('table');
    const cells = [...t.querySelectorAll('td')].map(c => [c.getBoundingClientRect().width, c.innerText.slice(0, 40)]);
    const [widest, cell] = cells.reduce((a, b) => (b[0] > a[0] ? b : a), [0, '']);
    return {id: e.id, table: Math.round(t.scrollWidth), box: Math.round(wrap.clientWidth), widest: Math.round(widest),
            cell}; })"""

# Every chart on the page against its box: drawn whole, no sideways scroll (a phone's "100" tick not cut).
CHART_FIT = """() => [...document.querySelectorAll('.chart-svg')].filter(c => c.offsetParent !== null)
  .map(c => ({chart: c.id || (c.closest('[id]') || {}).id || '?', svg: Math.round(c.scrollWidth), box: Math.round(c.clientWidth),
              height: Math.round(c.querySelector('svg').getBoundingClientRect().height)}))"""

# Each visible dropdown whose value is drawn cut or under its arrow: the value's drawn width (the
# input's own font, measured on a canvas) must end before the arrow icon.
DROPDOWNS_CUT = """() => [...document.querySelectorAll('input[role=combobox]')].filter(e => e.offsetParent !== null)
  .map(e => { const s = getComputedStyle(e), r = e.getBoundingClientRect(), c = document.createElement('canvas').getContext('2d');
              c.font = s.font; const icon = e.parentElement.querySelector('.icon-wrap');
              const end = r.left + parseFloat(s.paddingLeft) + c.measureText(e.value).width;
              return {value: e.value, end, limit: icon ? icon.getBoundingClientRect().left : r.right}; })
  .filter(d => d.end > d.limit + 0.5)"""


def _open(browser, url, viewport):
    from playwright.sync_api import expect

    width, height = VIEWPORTS[viewport]
    page = browser.new_page(viewport={"width": width, "height": height}, accept_downloads=True)
    page.goto(url)
    expect(page.get_by_role("button", name="Score", exact=True)).to_be_visible(timeout=60_000)
    _settled(page)
    return page


def _settled(page):
    """No output of the page is pending (Gradio's status overlays are hidden)."""
    page.wait_for_function("() => !document.querySelector('[data-testid=status-tracker]:not(.hide)')", timeout=SLOW)


def _verdict(page):
    return page.locator("#verdict").first


def _markdown(page, elem_id):
    """A Markdown block's own text (its status tracker, which keeps its last timer text, left out)."""
    return page.locator(f"#{elem_id} [data-testid=markdown]").first


def _wait_verdict(page, pattern, timeout=SLOW):
    """The verdict's text (as drawn: innerText, without the markup's white space) matches."""
    from playwright.sync_api import expect

    expect(_markdown(page, "verdict")).to_have_text(re.compile(pattern), timeout=timeout, use_inner_text=True)
    _settled(page)


def _bottoms(page, *ids):
    """Each element's bottom edge, in px from the page's top (each must be drawn)."""
    out = page.evaluate("""(ids) => Object.fromEntries(ids.map(id => { const e = document.getElementById(id);
      return [id, e && e.offsetParent !== null ? Math.round(e.getBoundingClientRect().bottom + scrollY) : null]; }))""",
                        list(ids))
    assert all(v is not None for v in out.values()), ("not drawn", out)
    return out


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


def _check_tables(page, where):
    """No cell clipped or broken; every table no wider than its box (no sideways scroll: on a phone the per-tag
    and item lists, and the Results tab's tables, are cards). Returns their widths and widest cells."""
    problems = page.evaluate(TABLE_PROBLEMS)
    assert problems == [], (where, problems[:10])
    fits = page.evaluate(TABLE_FIT)
    wide = [f for f in fits if f["table"] > f["box"] + 1]
    assert not wide, (where, wide)
    return fits


def _check_charts(page, where, seen):
    """Every chart on the page: no two texts overlap, every text at 11 px or more inside its chart, each drawn
    whole in its box (no sideways scroll: on a phone the Results tab shows its chart laid out narrow). Records
    each chart measured in ``seen``; returns the smallest text size."""
    charts = page.evaluate(CHART_OVERLAPS)
    assert charts, f"{where}: no chart on the page"
    bad = [c for c in charts if c["overlaps"]]
    assert not bad, (where, bad)
    seen.extend(f"{where}: {c['chart']} ({c['texts']} texts)" for c in charts)
    texts = page.evaluate(CHART_TEXT)
    small = [t for t in texts if t["px"] < 11.0]
    outside = [t["text"] for t in texts if not t["inside"]]
    assert not small and not outside, (where, small[:5], outside[:5])
    fits = page.evaluate(CHART_FIT)
    cut = [c for c in fits if c["svg"] > c["box"] + 1]
    assert not cut, (where, "a chart wider than its box", cut)
    seen.extend(f"{where}: {c['chart']} {c['svg']} px in its {c['box']} px box" for c in fits)
    return min(t["px"] for t in texts)


def _check_contrast(page, where):
    """Every piece of text on the page at WCAG AA; returns the lowest ratio found. Measured once no
    CSS transition runs (a radio label fading to its new colour is not what the visitor reads)."""
    _settled(page)
    page.wait_for_function("() => document.getAnimations().every(a => a.playState !== 'running')", timeout=SLOW)
    found = page.evaluate(CONTRAST)
    assert found, f"{where}: no text found"
    low = [c for c in found if c["ratio"] < c["need"]]
    assert not low, (where, low[:10])
    controls = page.evaluate(NON_TEXT)
    assert controls, f"{where}: no control found"
    faint = [c for c in controls if c["ratio"] < 3.0]
    assert not faint, (where, "controls under 3:1", faint[:10])
    return {"text": min(c["ratio"] for c in found), "controls": min(c["ratio"] for c in controls)}


def _check_names(page, where):
    """Every control in Chromium's accessibility tree (not ignored) has a name; no two upload
    zones, radio groups or text boxes share one. Returns how many controls were checked."""
    cdp = page.context.new_cdp_session(page)
    try:
        nodes = cdp.send("Accessibility.getFullAXTree")["nodes"]
    finally:
        cdp.detach()
    controls = [((n.get("role") or {}).get("value"), str((n.get("name") or {}).get("value") or "").strip())
                for n in nodes if not n.get("ignored") and (n.get("role") or {}).get("value") in INTERACTIVE]
    unnamed = [role for role, name in controls if not name]
    assert not unnamed, (where, unnamed)
    for role in ("radiogroup", "textbox", "combobox", "spinbutton"):
        names = [name for r, name in controls if r == role]
        assert len(names) == len(set(names)), (where, role, names)
    uploads = [name for r, name in controls if r == "button" and re.match(r"(Upload|Choose a file for|Paste into) ", name)]
    assert len(uploads) == len(set(uploads)), (where, uploads)
    # an image's tool buttons name their image ("Download Item image 1"): never two alike, never a bare "Download"
    tools = [name for r, name in controls if r == "button" and re.match(r"(Download|Share|Fullscreen|Exit fullscreen|Clear|"
                                                                         r"Remove)\b", name, re.IGNORECASE)]
    assert len(tools) == len(set(tools)), (where, tools)
    radios = sum(1 for r, _ in controls if r == "radio")
    assert not radios or any(r == "radiogroup" for r, _ in controls), (where, "radios without a named group")
    return len(controls)


def _no_error_state(page):
    """No Gradio 'Error' badge, no toast, nothing left running."""
    _settled(page)
    assert page.get_by_text(re.compile(r"^\s*Error\s*$")).count() == 0
    assert page.locator(".toast-body").count() == 0
    summary = " ".join(page.locator("#bench-summary [data-testid=markdown]").all_inner_texts())  # once the tab is drawn
    assert "Running the benchmark" not in summary


def _dropdown_options(page, box):
    """A dropdown's options, as its own list shows them (the list closed again)."""
    from playwright.sync_api import expect

    box.click()
    listbox = page.locator(f"#{box.get_attribute('aria-controls')}")
    expect(listbox.get_by_role("option").first).to_be_visible(timeout=SLOW)
    options = [o.inner_text().replace("✓", "").strip() for o in listbox.get_by_role("option").all()]  # ✓: chosen
    expect(listbox).to_have_attribute("aria-label", re.compile(r"\S choices$"), timeout=SLOW)  # named, as Gradio leaves it not
    page.keyboard.press("Escape")
    return options


def _choose(page, label, option):
    """Choose a dropdown's option as a keyboard user does: type it (the list narrows to it) and press
    Enter; a list that opens near the screen's edge moves under a pointer."""
    from playwright.sync_api import expect

    box = page.get_by_label(label, exact=True).filter(visible=True).first
    box.click()
    box.fill(option)
    expect(page.get_by_role("option", name=option, exact=True)).to_be_visible(timeout=SLOW)
    box.press("Enter")
    expect(box).to_have_value(option, timeout=SLOW)


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

def _first_look(page, app, viewport, shots, seen):
    """What a visitor sees first: the offline model and its line, a gallery it can read, the Score
    button above the fold (laptop), the upload zones side by side and level."""
    from playwright.sync_api import expect

    from vlprobe.demo import examples

    width, height = VIEWPORTS[viewport]
    model_box = page.get_by_label("Model", exact=True).filter(visible=True).first
    expect(model_box).to_have_value("models/mini-clip")
    about = _markdown(page, "model-about").inner_text()
    assert about.startswith("mini-clip (offline") and "cannot read photos" in about, about
    # offline with nothing cached: the menu's Hub models are not offered, and why is said once
    assert _dropdown_options(page, model_box) == ["models/mini-clip"]
    missing = _markdown(page, "models-missing").inner_text()
    assert missing == ("CLIP ViT-B/32, SigLIP base and BLIP ITM base are not offered: this Space cannot reach the "
                       "Hugging Face Hub now, and they are not in its cache."), missing
    assert page.get_by_text(re.compile("not offered: this Space cannot reach")).count() == 1
    # placeholders read as instructions (italic), not as captions already typed
    for box in ("Captions", "Foils"):
        field = page.get_by_label(box).first
        assert field.get_attribute("placeholder").startswith("Type "), box
        assert field.evaluate("e => getComputedStyle(e, '::placeholder').fontStyle") == "italic", box
    labels = [b.inner_text().strip() for b in page.locator(".gallery-row button").all() if b.is_visible()]
    readable = {e.label for e in app.gallery_for("models/mini-clip")}
    assert labels and set(labels) == readable and len(labels) <= examples.GALLERY_SLOTS, (labels, readable)
    assert {"Colour foil (pairwise)", "Two captions, two foils (set)", "Swapped relation (group)"} <= set(labels)
    if viewport == "laptop":
        box = page.get_by_role("button", name="Score", exact=True).bounding_box()
        assert box["y"] + box["height"] <= height, f"the Score button is below the fold: {box}"
    zones = [page.get_by_role("button", name=f"Upload Image {k}", exact=True).bounding_box() for k in (1, 2)]
    assert abs(zones[0]["y"] - zones[1]["y"]) <= 1 and abs(zones[0]["height"] - zones[1]["height"]) <= 1, zones
    assert zones[0]["x"] + zones[0]["width"] <= zones[1]["x"] + 0.5  # side by side, not stacked
    page.screenshot(path=str(shots / f"first_look_{viewport}.png"))
    seen.append(f"first look: {len(labels)} gallery examples")
    return _check_contrast(page, "score tab, first look")


def _score_gallery_examples(page, viewport, shots, seen):
    from playwright.sync_api import expect

    width, height = VIEWPORTS[viewport]
    page.get_by_role("button", name="Swapped relation (group)").click()
    _wait_verdict(page, r"^(CORRECT|PARTLY RIGHT|WRONG|TIE): .*group, Winoground")
    verdict = _verdict(page)
    page.wait_for_function("() => { const r = document.querySelector('#verdict').getBoundingClientRect();"
                           " return r.top >= -1 && r.bottom <= window.innerHeight + 1; }", timeout=SLOW)
    # the first result, from the page's top: the verdict and the scores (on a phone, right under the gallery)
    page.wait_for_function("() => document.querySelector('.score-outputs.scored')", timeout=SLOW)
    first = _bottoms(page, "verdict", "scores-table")
    assert max(first.values()) < FIRST_RESULT_PX, first
    header = page.locator("#scores-table th").filter(has_text="score").first
    assert _inside(header.bounding_box(), width, height) or viewport == "phone", "the score column is off screen"
    widths = page.locator("#scores-table .vt-wrap").evaluate("e => [e.scrollWidth, e.clientWidth]")
    assert widths[0] <= widths[1] + 1, f"the scores table must be scrolled to see its margins: {widths}"
    expect(verdict).to_have_class(re.compile(r"\bverdict-(right|wrong|mixed|tie)\b"), timeout=SLOW)
    assert verdict.get_attribute("role") == "status"  # read out, unlike a disabled text box
    text = _markdown(page, "verdict").inner_text()
    if not text.startswith(("CORRECT", "TIE")):  # the group verdict names the comparisons that failed
        assert re.search(r"\(\d of 4 comparisons right\)", text), text
    page.screenshot(path=str(shots / f"score_group_{viewport}.png"))
    assert _labels_clear_of_images(page) == 2  # both images of the group item
    label = page.locator("#margin-chart svg").get_attribute("aria-label")
    assert label.startswith("Bar chart of the margins") and "undefined" not in label
    _check_tables(page, "score, group")
    smallest = _check_charts(page, "score, group", seen)
    page.get_by_role("button", name="Two captions, two foils (set)").click()
    _wait_verdict(page, r"^(CORRECT|MIXED|WRONG|TIE): .*set, BLA")
    _check_charts(page, "score, set", seen)
    page.get_by_role("button", name="Colour foil (pairwise)").click()
    _wait_verdict(page, r"^(CORRECT|WRONG|TIE): .*pairwise")
    _check_charts(page, "score, pairwise", seen)
    assert viewport == "laptop" or page.evaluate(INNER_SCROLLS) == []
    return {"chart px": round(smallest, 1), "first result bottom": first,
            "page height": page.evaluate("document.documentElement.scrollHeight")}


def _tie(page, viewport, shots, seen):
    """Two texts mini-clip reads as the same tokens (it maps 'dog' and 'cat' to its one unknown id):
    on the 'Colour foil' scene they score identically, and the verdict says TIE and how the chosen
    policy counts it; the chart has no '1e-6' axis. (Once the engine gathers each distinct pair's
    score, identical inputs tie on any image.)"""
    from playwright.sync_api import expect

    page.get_by_label("Captions").fill("a brown dog")
    page.get_by_label("Foils").fill("a brown cat")
    page.get_by_role("button", name="Score", exact=True).click()
    _wait_verdict(page, r"^TIE: the caption and the foil score exactly the same \(-?\d+\.\d{3} each\); a tie is "
                        r"counted as wrong under the strict policy, as the papers count it")
    text = _markdown(page, "verdict").inner_text()
    assert "CORRECT" not in text and "acc_r = 0%" in text and "“dog”, “cat”" in text
    expect(_verdict(page)).to_have_class(re.compile(r"\bverdict-tie\b"), timeout=SLOW)  # coloured as a tie
    chart_text = " ".join(page.locator("#margin-chart svg text").all_text_contents())
    assert "0 (tie)" in chart_text and "1e" not in chart_text, chart_text
    zero = page.locator("#margin-chart g#zero-line").bounding_box()
    tie = page.locator("#margin-chart g#tie-label").bounding_box()
    assert tie["x"] > zero["x"] + zero["width"] + 2, ("'0 (tie)' on the zero line", tie, zero)
    _check_charts(page, "score, tie", seen)
    page.get_by_role("button", name=re.compile(r"^Tie policy and limits")).click()  # folded away until needed
    page.get_by_role("radio", name="lenient").click()
    page.get_by_role("button", name="Score", exact=True).click()
    _wait_verdict(page, r"^TIE: .*a tie is counted as right under the lenient policy; the papers count a tie as wrong "
                        r"\(pairwise, VALSE acc_r = 100%\)")
    page.screenshot(path=str(shots / f"tie_{viewport}.png"))
    page.get_by_role("radio", name="strict").click()


def _long_and_many_texts(page, viewport, shots, seen):
    """A 480-character foil: its chart label is two lines at most; an item of 16 texts: its chart shows its 8
    lowest margins in a bounded height (it was 1,423 px)."""
    page.get_by_label("Captions").fill("a red circle and a blue square")
    page.get_by_label("Foils").fill(" ".join(["a green triangle above a yellow star"] * 14)[:480])
    page.get_by_role("button", name="Score", exact=True).click()
    _wait_verdict(page, r"^(CORRECT|WRONG|TIE): .*pairwise")
    lines = page.evaluate("""() => { const first = [...document.querySelectorAll('#margin-chart svg text')]
      .find(t => t.textContent.startsWith('caption − '));
      return first ? first.parentElement.querySelectorAll('text').length : 0; }""")  # one text element a line
    assert 1 <= lines <= 2, f"a long foil's chart label has {lines} lines"
    _check_charts(page, "score, a 480-character foil", seen)
    foils = [f"a {c} {shape}" for c in ("green", "yellow", "purple") for shape in ("circle", "square", "triangle",
                                                                                   "star", "hexagon")]
    page.get_by_label("Foils").fill("\n".join(foils))  # 1 caption + 15 foils: 16 texts, the most an item may have
    page.get_by_role("button", name="Score", exact=True).click()
    _wait_verdict(page, r"^(CORRECT|WRONG|MIXED|TIE): .*set, BLA")
    title = " ".join(page.locator("#margin-chart svg text").all_text_contents())
    assert "8 lowest of 15 margins" in title, title
    chart = page.evaluate(CHART_FIT)
    assert chart and max(c["height"] for c in chart) <= 600, chart
    _check_charts(page, "score, 16 texts", seen)
    page.screenshot(path=str(shots / f"sixteen_texts_{viewport}.png"))
    return max(c["height"] for c in chart)


def _bad_files(page, tmp_path):
    """A file an image box cannot take (chosen or dropped): no Gradio toast, one sentence naming the box."""
    notes = tmp_path / "notes.txt"
    notes.write_text("not an image")
    said = []
    for k in (1, 2):
        page.locator(f"#image-{k} input[type=file]").set_input_files(str(notes))
        _wait_verdict(page, rf"^Cannot score: Image {k}: 'notes\.txt' is not an image \(use PNG, JPEG or WebP\)$")
        said.append(_markdown(page, "verdict").inner_text())
        assert page.locator(".toast-body").count() == 0
    page.evaluate("""() => { const dt = new DataTransfer(); dt.items.add(new File(['x'], 'dropped.txt', {type: 'text/plain'}));
      document.querySelector('#image-1 .upload-container').dispatchEvent(
        new DragEvent('drop', {dataTransfer: dt, bubbles: true, cancelable: true})); }""")
    _wait_verdict(page, r"^Cannot score: Image 1: 'dropped\.txt' is not an image")
    assert page.locator(".toast-body").count() == 0
    return said


def _unknown_model(page, viewport, shots):
    box = page.get_by_label("Model", exact=True).filter(visible=True).first
    box.fill("nobody/no-such-model-here")
    box.press("Enter")
    page.get_by_role("button", name="Score", exact=True).click()
    # refused before any load or Hub call (tests/test_space.py checks that in-process, with no clock)
    _wait_verdict(page, r"^Cannot score", timeout=10_000)
    message = _markdown(page, "verdict").inner_text().strip()
    assert "no-such-model-here" in message and message.count(". ") == 0 and "\n" not in message, message
    assert not re.search(r"--|HF_HUB|/tmp|hf download|huggingface-cli", message)
    page.screenshot(path=str(shots / f"unknown_model_{viewport}.png"))
    box.fill("models/mini-clip")
    box.press("Enter")
    return message


def _uploads(page, model_path, tmp_path):
    """An image over the limit is refused in the verdict at once (not a toast, not "upload an image
    first" later); a scene is scored with the verdict of the model's own logits."""
    from PIL import Image
    from playwright.sync_api import expect

    from vlprobe.scenes.model import Scene, SceneObject
    from vlprobe.scenes.render import render

    big = tmp_path / "big.png"
    Image.frombytes("RGB", (700, 700), os.urandom(700 * 700 * 3)).save(big)  # 1.5 MB, the limit here is 1 MB
    page.locator("input[type=file]").first.set_input_files(str(big))
    _wait_verdict(page, r"^Cannot score: Image 1: the file is 1\.5 MB; this Space accepts images up to 1 MB$")
    assert page.locator(".toast-body").count() == 0
    image = tmp_path / "scene.png"
    render(Scene(objects=(SceneObject("circle", "red", 2, 2), SceneObject("square", "blue", 4, 3)))).save(image)
    caption, foil = "a red circle and a blue square", "a red circle and a green square"
    expected = _expected_verdict(model_path, image, [caption, foil])
    page.get_by_label("Captions").fill(caption)
    page.get_by_label("Foils").fill(foil)
    page.locator("input[type=file]").first.set_input_files(str(image))
    expect(page.locator("img[src*='scene']").first).to_be_visible(timeout=60_000)
    page.get_by_role("button", name="Score", exact=True).click()
    _wait_verdict(page, rf"^{expected}: .*pairwise")
    assert page.get_by_text("Traceback").count() == 0
    assert page.locator(".labelled-image img").first.get_attribute("alt") == "Image 1: scene.png"


def _bad_row(page):
    """Row -1 in 'Or take an item from a dataset': one sentence, no 'Error' badge on the images or texts."""
    from playwright.sync_api import expect

    page.get_by_role("button", name=re.compile(r"^Or take an item from a dataset")).click()
    row = page.get_by_label("Row", exact=True)
    _fill_number(page, row, "-1")  # committed, as a visitor leaving the box
    page.get_by_role("button", name="Load this item").click()
    expect(_markdown(page, "example-status")).to_have_text("⚠️ Row: -1 is not a row number; type a whole number from 0",
                                                         timeout=SLOW, use_inner_text=True)
    _no_error_state(page)
    _fill_number(page, row, "")  # an empty box is said, not quietly row 0
    page.get_by_role("button", name="Load this item").click()
    expect(_markdown(page, "example-status")).to_have_text("⚠️ Row: the box is empty; type a row number from 0",
                                                         timeout=SLOW, use_inner_text=True)
    _no_error_state(page)
    _fill_number(page, row, "0")


def _switch_and_go(page, app, tab):
    """Choose another dataset and at once press the button that uses it (Run benchmark, Load this item): the
    button is disabled until the boxes that depend on the dataset have their new values, so the press runs the
    new dataset with its own config, never with the old one's. Returns how long the button stayed disabled."""
    from playwright.sync_api import expect

    from vlprobe.demo import examples

    button = "Run benchmark" if tab == "benchmark" else "Load this item"
    box = page.locator("#bench-dataset input" if tab == "benchmark" else "#example-dataset input")
    names = [label for label, _ in app.SETTINGS.dataset_choices()]
    target = next(n for n in ("winoground_style", "travlr") if n in names and n != box.input_value())
    page.evaluate("""(id) => { const b = document.getElementById(id); window.__lock = [];
      new MutationObserver(() => window.__lock.push([performance.now(), b.disabled]))
        .observe(b, {attributes: true, attributeFilter: ['disabled']}); }""",
                  "bench-run" if tab == "benchmark" else "example-load")
    box.click()
    box.fill(target)
    expect(page.get_by_role("option", name=target, exact=True)).to_be_visible(timeout=SLOW)
    box.press("Enter")
    page.get_by_role("button", name=button).click(timeout=SLOW)  # Playwright waits while it is disabled
    config = examples.dataset_configs(app.SETTINGS, target)[0]
    if tab == "benchmark":
        expect(_markdown(page, "bench-summary")).to_have_text(re.compile(rf"^{target} / {config} / "), timeout=SLOW,
                                                              use_inner_text=True)
    else:
        captions = examples.example_fields(app.SETTINGS, target, config, 0)[2]
        expect(page.get_by_label("Captions")).to_have_value(captions, timeout=SLOW)
        expect(_markdown(page, "example-status")).to_have_text("", timeout=SLOW, use_inner_text=True)
    lock = page.evaluate("window.__lock")
    assert lock and lock[0][1] is True, ("the button was never disabled while the boxes updated", lock)
    _no_error_state(page)
    return round(next((t for t, d in lock if not d), lock[-1][0]) - lock[0][0])


def _fill_number(page, box, value):
    """Type into a number box and leave it; again if the box, drawn just now (an accordion opened), set itself
    back to its value as it finished drawing (each try waits for the page to draw twice, not for a time)."""
    for _ in range(5):
        box.fill(value)
        box.press("Tab")
        page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
        if box.input_value() == value:
            return
    assert box.input_value() == value, (value, box.input_value())


def _set_number(page, label, value):
    _fill_number(page, page.get_by_label(label, exact=True).filter(visible=True).first, str(value))


def _bad_numbers(page):
    """Out-of-range numbers in the Benchmark tab: answered in the summary naming the box and its range;
    no badge, no toast, nothing left running."""
    from playwright.sync_api import expect

    _choose(page, "Dataset", "travlr")
    expect(page.get_by_label("Split", exact=True).filter(visible=True).first).to_have_value("test_ind", timeout=SLOW)
    for box, value, message in (("Bootstrap resamples", 5000, "Bootstrap resamples: 5000 is not allowed; choose a "
                                                              "whole number from 0 to 2,000"),
                                ("Bootstrap resamples", 99999, "Bootstrap resamples: 99999 is not allowed; choose a "
                                                               "whole number from 0 to 2,000"),
                                ("Bootstrap resamples", -1, "Bootstrap resamples: -1 is not allowed; choose a whole "
                                                            "number from 0 to 2,000"),
                                ("Items", 0, "Items: 0 is not allowed; choose a whole number from 1 to 1,000"),
                                ("Items", 5000, "Items: 5000 is not allowed; choose a whole number from 1 to 1,000")):
        _set_number(page, box, value)
        page.get_by_role("button", name="Run benchmark").click()
        expect(_markdown(page, "bench-summary")).to_have_text(f"⚠️ Cannot run the benchmark: {message}",
                                                              timeout=SLOW, use_inner_text=True)
        _no_error_state(page)
        _set_number(page, box, {"Items": 10, "Bootstrap resamples": 100}[box])


def _every_dataset(page, app, seen):
    """Every dataset the page offers (its own discovery): only configs with rows, each one runs."""
    from playwright.sync_api import expect

    from vlprobe.demo import examples

    offered = app.SETTINGS.dataset_folders()
    assert {Path(d).name for d in offered} >= {"travlr", "winoground_style"}, offered
    for folder in offered:
        name = Path(folder).name
        _choose(page, "Dataset", name)
        config_box = page.get_by_label("Config", exact=True).filter(visible=True).first
        expected = examples.dataset_configs(app.SETTINGS, folder)
        assert expected and all(any(examples.split_rows(Path(folder), c).values()) for c in expected)
        expect(config_box).to_have_value(expected[0], timeout=SLOW)
        config_box.click()
        listbox = page.locator(f"#{config_box.get_attribute('aria-controls')}")  # this box's own list
        expect(listbox.get_by_role("option").first).to_be_visible(timeout=SLOW)
        options = [o.inner_text().replace("✓", "").strip() for o in listbox.get_by_role("option").all()]  # ✓: chosen
        page.keyboard.press("Escape")
        assert options == expected, (name, options, expected)
        _set_number(page, "Items", 6)
        _set_number(page, "Bootstrap resamples", 0)
        page.get_by_role("button", name="Run benchmark").click()
        expect(_markdown(page, "bench-summary")).to_have_text(re.compile(rf"^{name} / {expected[0]} / "), timeout=SLOW,
                                                              use_inner_text=True)
        expect(_markdown(page, "item-caption")).to_have_text(re.compile(r"^Rank 1 of \d+: item"), timeout=SLOW,
                                                             use_inner_text=True)
        _no_error_state(page)
        _check_tables(page, f"benchmark {name}")
        if name == "valse":  # every item ties: no number, so no bar to draw
            _all_tied(page)
        else:
            _check_charts(page, f"benchmark {name}", seen)
        assert page.locator(".glossary li").count() >= 1  # each metric shown is explained
        if name == "travlr":  # the true text marked, whatever its place; TraVLR's label tag explained
            _gold_marked(page, single=True)
    return len(offered)


def _tied_run(page):
    """The folder whose every item ties, run (on a phone: its per-tag table as cards)."""
    from playwright.sync_api import expect

    _choose(page, "Dataset", "valse")
    expect(page.get_by_label("Config", exact=True).filter(visible=True).first).to_have_value("words", timeout=SLOW)
    _set_number(page, "Items", 6)
    _set_number(page, "Bootstrap resamples", 0)
    page.get_by_role("button", name="Run benchmark").click()
    expect(_markdown(page, "bench-summary")).to_have_text(re.compile(r"^valse / words / test"), timeout=SLOW,
                                                          use_inner_text=True)
    _no_error_state(page)
    _bench_folds(page).evaluate_all("ds => ds.forEach(d => { d.open = true; })")  # tapped open (a phone's)
    return _all_tied(page)


def _bench_folds(page):
    """The Benchmark tab's folds (the glossary, the per-tag table, the items list), once a phone's page has folded
    them after a run (a laptop's stay open)."""
    if page.viewport_size["width"] <= 640:
        page.wait_for_function("() => !document.querySelector('#browse-table details').open", timeout=SLOW)
    return page.locator(".bench-tables details.glossary, #tags-table details.vt-fold, #browse-table details.vt-fold")


def _gold_marked(page, single):
    """Each item of the list marks its true text: ✓ (✓1, ✓2 with two images) and ✗ a foil; the marks (and a
    label= tag) are explained under the table."""
    texts = page.locator("#browse-table td.prose").all_inner_texts()
    assert texts, "no items listed"
    marks = (r"✓ ", r"✗ ") if single else (r"✓1 ", r"✓2 ")
    assert all(all(m in t for m in marks) for t in texts), texts[:3]
    notes = " ".join(page.locator("#browse-table .vt-note").all_inner_texts())
    assert "✓: the true text (the gold one); ✗: a wrong text (a foil)" in notes, notes
    if single:
        assert "label=True/False: the dataset's own label column" in notes, notes
    return len(texts)


def _all_tied(page):
    """A config whose every item ties: short "N/A¹" cells, the reason once under each table, and every table
    within its box (the VALSE per-tag table was 1,258 px wide in a 576 px box)."""
    metrics = page.locator("#metrics-table td").all_inner_texts()
    assert "N/A¹" in metrics, metrics
    tags = page.locator("#tags-table td").all_inner_texts()
    assert sum(t.endswith("N/A¹") for t in tags) == 3, tags  # kind=a, b, c (a card's cell says "acc_r: N/A¹")
    notes = page.locator("#tags-table .vt-note").all_inner_texts()
    assert len(notes) == 1 and notes[0].startswith("¹ every item of the tag tied: texts the model reads as the same"), notes
    assert all(len(t) <= 20 for t in tags), tags
    return _check_tables(page, "every item tied")


def _test_rows(module, name):
    """The test rows of every config of the dataset folder the page offers as ``name``: build_root's 102, or the
    checkout's own 1,200 where `make evaluate` built winoground_style there (the Space looks beside it first)."""
    import pyarrow.parquet as pq

    folder = next(Path(d) for d in module.SETTINGS.dataset_folders() if Path(d).name == name)
    return sum(pq.ParquetFile(f).metadata.num_rows for f in folder.glob("data/*/test-*.parquet"))


def _winoground_benchmark(page, viewport, shots, seen, total):
    """winoground_style/all (``total`` test items): a sample across its three instruments (its first 100 rows are
    all spatial_swap), the tables, the chart, browsing by rank, the results download."""
    from playwright.sync_api import expect

    items = BENCH_ITEMS[viewport]
    _choose(page, "Dataset", "winoground_style")
    _choose(page, "Config", "all")
    expect(page.get_by_label("Split", exact=True).filter(visible=True).first).to_have_value("test", timeout=SLOW)
    assert page.evaluate(DROPDOWNS_CUT) == []  # each choice readable, not cut under its arrow
    _set_number(page, "Items", items)
    _set_number(page, "Bootstrap resamples", 50)
    page.get_by_role("button", name="Run benchmark").click()
    expect(_markdown(page, "bench-summary")).to_have_text(re.compile(
        rf"^winoground_style / all / test: {items} of {total:,} items, sampled across instrument \(stratified, seed 0\): "),
        timeout=SLOW, use_inner_text=True)
    caption = _markdown(page, "item-caption")
    # its text, not as drawn: on a phone the item viewer is folded after the run
    expect(caption).to_have_text(re.compile(rf"^\s*Rank 1 of {items}: item"), timeout=SLOW)
    _settled(page)
    folded = _phone_benchmark(page, shots) if viewport == "phone" else {}
    tags = page.locator("#browse-table").inner_text()
    assert all(f"instrument={k}" in tags for k in ("attribute_swap", "count_swap", "spatial_swap")), tags[:500]
    metrics = page.locator("#metrics-table").inner_text()
    assert all(k in metrics for k in ("text", "image", "group")), metrics
    assert page.locator("#browse-table tbody tr").count() == items
    assert "something went wrong" not in page.content()
    tables = _check_tables(page, f"benchmark, {items} items")
    smallest = _check_charts(page, "benchmark winoground_style/all", seen)
    _gold_marked(page, single=False)
    page.evaluate("window.scrollTo(0, 0)")
    first = _bottoms(page, "bench-summary", "metrics-table")
    assert max(first.values()) < FIRST_RESULT_PX, first  # the summary and the numbers, before the chart on a phone
    height = page.evaluate("document.documentElement.scrollHeight")
    page.screenshot(path=str(shots / f"benchmark_{viewport}.png"), full_page=True)
    _rank_typed_and_out_of_range(page, caption, items)
    assert _labels_clear_of_images(page) == 2  # both images of a 2 x 2 item
    return {"chart px": round(smallest, 1), "first result bottom": first, "page height": height, "tables": tables,
            **folded}


def _phone_benchmark(page, shots):
    """The phone's Benchmark page as a run leaves it: the glossary, the per-tag table, the items list and the item
    viewer folded (a tap opens them); nothing scrolls in its own box; the page at most BENCH_PHONE_PX long. Then
    the folds opened, as a visitor taps them."""
    folds = _bench_folds(page)
    assert folds.count() == 3 and not any(folds.evaluate_all("ds => ds.map(d => d.open)"))
    page.evaluate("window.scrollTo(0, 0)")
    first = _bottoms(page, "bench-summary", "metrics-table")
    assert max(first.values()) < FIRST_RESULT_PX, first
    assert page.evaluate(INNER_SCROLLS) == []
    length = page.evaluate("() => document.documentElement.scrollHeight")
    page.screenshot(path=str(shots / "benchmark_phone_folded.png"), full_page=True)
    assert length <= BENCH_PHONE_PX, length
    assert page.locator("#item-viewer button.label-wrap.open").count() == 0  # the item viewer folded too
    folds.evaluate_all("ds => ds.forEach(d => { d.open = true; })")
    page.get_by_role("button", name=re.compile(r"^One item at a time")).click()
    assert page.evaluate(INNER_SCROLLS) == []  # the 100 items too: the page's one scroll
    return {"folded page px": length, "folded first result bottom": first}


def _rank_typed_and_out_of_range(page, caption, n):
    """Type the last rank and press Enter: that item is shown. Then one past the last, and 0: refused
    in words, the item shown (caption, picture, scores) stays and the box is set back to it."""
    from playwright.sync_api import expect

    rank = page.locator("#item-rank input[type=number]")
    rank.fill(str(n))
    rank.press("Enter")
    expect(caption).to_have_text(re.compile(rf"^Rank {n} of {n}: item"), timeout=SLOW, use_inner_text=True)
    page.locator("#item-image-1").scroll_into_view_if_needed()  # the picture loads lazily, when seen
    image = page.locator("#item-image-1 img")
    expect(image).to_be_visible(timeout=SLOW)
    shown_caption = caption.inner_text()
    before = (image.get_attribute("src"), page.locator("#item-table").inner_text())
    for bad in (n + 1, 0):
        rank.fill(str(bad))
        rank.press("Enter")
        expect(caption).to_have_text(re.compile(rf"There is no item of rank {bad}: choose 1 to {n}\. "
                                                rf"Still showing rank {n}"), timeout=SLOW, use_inner_text=True)
        assert shown_caption in caption.inner_text()
        assert (image.get_attribute("src"), page.locator("#item-table").inner_text()) == before
        _no_error_state(page)
        expect(rank).to_have_value(str(n), timeout=SLOW)  # set back to the item shown


def _download_feeds_results(page, tmp_path, viewport, shots, seen):
    """The run's results.json, downloaded from the Benchmark tab and loaded in the Results tab,
    compares; the 'Compare in Results' button does the same in one click."""
    from playwright.sync_api import expect

    with page.expect_download(timeout=SLOW) as download:
        page.get_by_role("button", name="Download results.json").click()
    saved = tmp_path / "downloaded" / "results.json"
    saved.parent.mkdir()
    download.value.save_as(saved)
    doc = json.loads(saved.read_text())
    assert doc["results"][0]["config"] == "all" and doc["provenance"]["space_sample"]["stratified_on"] == "instrument"
    page.get_by_role("button", name="Compare in Results").click()
    expect(page.get_by_role("tab", name="Results", selected=True)).to_be_visible(timeout=SLOW)
    expect(page.locator("#runs-table")).to_contain_text("winoground_style", timeout=SLOW)
    _settled(page)
    if viewport == "phone":  # no papers' table for it: the run's own numbers stay open, first; the rest folded
        _folded(page)
        opened = page.evaluate("() => [...document.querySelectorAll('.results-out details.vt-fold')]"
                               ".filter(d => d.open).map(d => d.closest('[id]').id)")
        assert opened == ["runs-winoground-style-table"], opened
        first = _bottoms(page, "results-note", "runs-winoground-style-table")
        assert max(first.values()) < FIRST_RESULT_PX, first
    _unfold(page)
    _check_charts(page, "results, the run sent from the Benchmark tab", seen)
    page.locator("#results-files").get_by_role("button", name=re.compile(r"^Clear", re.IGNORECASE)).first.click()
    expect(page.locator('#results-files a[href$=".json"]')).to_have_count(0, timeout=SLOW)
    page.locator("#results-files input[type=file]").set_input_files([str(saved)])  # the downloaded copy alone
    expect(page.locator('#results-files a[href$="/results.json"]')).to_have_count(1, timeout=SLOW)
    page.get_by_role("button", name="Compare", exact=True).click()
    expect(_markdown(page, "results-note")).to_have_text(re.compile(r"^1 run;"), timeout=SLOW, use_inner_text=True)
    _unfold(page)
    table = page.locator("#runs-table").inner_text()
    assert "winoground_style" in table and "mini-clip · winoground_style" in table, table[:300]
    _check_charts(page, "results, the downloaded file", seen)
    page.screenshot(path=str(shots / f"results_from_download_{viewport}.png"), full_page=True)


def _results_svg(page):
    """The Results tab's chart as the screen shows it: the wide one on a laptop, the narrow one on a phone."""
    return page.locator("#results-chart .chart-svg").filter(visible=True).locator("svg")


def _folded(page):
    """Once the page has folded the last comparison on a phone (its chart folded): whether each fold is open."""
    page.wait_for_function("() => { const c = document.querySelector('#results-chart details.vt-fold');"
                           " return c && !c.open; }", timeout=SLOW)
    return page.evaluate("() => [...document.querySelectorAll('.results-out details.vt-fold')].map(d => d.open)")


def _unfold(page):
    """On a phone, the Results tab's folded parts (the chart, the runs' tables, the published figures, each system's
    figure, the glossary) opened, as a visitor taps them, once the page has folded the last comparison's."""
    if page.viewport_size["width"] > 640:
        return
    _folded(page)
    page.evaluate("() => document.querySelectorAll('.results-out details.vt-fold').forEach(d => { d.open = true; })")


def _glossed(page):
    """Every metric the Results tab's tables name is defined under them (the Benchmark tab's glossary)."""
    from vlprobe.demo import glossary

    shown = " ".join(page.locator(".results-out .vt-label, .results-out th, .results-out td").all_inner_texts())
    named = [m for m in glossary.METRICS if re.search(rf"(?<![a-z_]){m}(?![a-z_])", shown)]
    defined = " ".join(page.locator(".results-out .glossary li").all_inner_texts())
    assert named and all(f"{m} (" in defined for m in named), (named, defined[:300])
    return named


def _papers_alone(page, viewport, shots, seen):
    """Compare with no file: each paper's published numbers as a table the long side down (a row per config and
    metric, or per system where there are more systems: Winoground), within its box, and a readable chart; on a
    phone the numbers come before the chart, a card per row."""
    from playwright.sync_api import expect

    expect(page.locator('#results-files a[href$=".json"]')).to_have_count(0, timeout=SLOW)  # no file loaded yet
    expect(_markdown(page, "results-note")).to_have_text(re.compile(r"^Nothing to compare yet\."), use_inner_text=True)
    first = {"valse": "config", "winoground": "system", "bla": "config", "sugar_crepe": "config"}
    for bench in first:
        _choose(page, "Papers' benchmark", bench)
        page.get_by_role("button", name="Compare", exact=True).click()
        expect(_markdown(page, "results-note")).to_have_text(re.compile(r"^No results file loaded: the papers' published "
                                                                        r"numbers alone"), timeout=SLOW, use_inner_text=True)
        _unfold(page)
        expect(_results_svg(page).locator("text").filter(has_text=f"{bench}: headline metric")).to_have_count(
            1, timeout=SLOW)  # this benchmark's chart, not the last one
        _settled(page)
        headers = page.locator("#papers-table th").all_inner_texts()
        assert headers[0] == first[bench] and len(headers) <= 25, headers
        _check_charts(page, f"results, papers alone: {bench}", seen)  # whole, its "100" tick not cut
        _check_tables(page, f"papers alone: {bench}")
        _glossed(page)
        if viewport == "phone":
            table_top = page.locator("#papers-table").bounding_box()["y"]
            chart_top = page.locator("#results-chart").bounding_box()["y"]
            assert table_top < chart_top, "on a phone the numbers come first"
    page.screenshot(path=str(shots / f"papers_alone_{viewport}.png"), full_page=True)
    _choose(page, "Papers' benchmark", "auto")


def _load_results(page, paths):
    """The results files loaded in place of those there (cleared first), and compared."""
    from playwright.sync_api import expect

    clear = page.locator("#results-files").get_by_role("button", name=re.compile(r"^Clear", re.IGNORECASE))
    if clear.count():
        clear.first.click()
    expect(page.locator('#results-files a[href$=".json"]')).to_have_count(0, timeout=SLOW)
    page.locator("#results-files input[type=file]").set_input_files([str(p) for p in paths])
    expect(page.locator('#results-files a[href$=".json"]')).to_have_count(len(paths), timeout=SLOW)
    page.get_by_role("button", name="Compare", exact=True).click()
    expect(_markdown(page, "results-note")).to_have_text(re.compile(rf"^{len(paths)} runs?;"), timeout=SLOW,
                                                         use_inner_text=True)
    _settled(page)


def _valse_beside_papers(page, tmp_path, viewport, shots, seen):
    """A valse/all run (its instruments from the pooled config's per-tag results, two of them all tied) and a
    Winoground run: the chart puts the run's point beside the paper's systems on each instrument's row and on
    the Avg.'s (the run's N/A said in words there), the papers table the same rows with the run's column first
    and no column for the Winoground run, the figures published for the run's checkpoint a row each; every
    table within its box. On a phone: the note and the numbers first, within FIRST_RESULT_PX of the page's top,
    the papers table compact (the run's column, then the systems' range; each system's figure folded under it),
    the rest folded, the page at most RESULTS_PHONE_PX long. Returns the rows' positions and the page's lengths."""
    from playwright.sync_api import expect
    from test_space_display import VALSE, valse_all_doc

    folder = tmp_path / "valse_beside_papers"
    folder.mkdir()
    valse, wino = folder / "valse_all.json", folder / "wino.json"
    # a checkpoint with figures published for it (vl_compo's ViT-B-32/openai): a row each, instruments and Avg.
    valse.write_text(json.dumps(valse_all_doc("openai/clip-vit-base-patch32", na=("relations",))), encoding="utf-8")
    wino.write_text(json.dumps(_run_doc("models/mini-clip", 0.3)), encoding="utf-8")
    _load_results(page, [valse, wino])
    phone = _phone_results(page, shots) if viewport == "phone" else {}
    _unfold(page)
    chart = _results_svg(page)
    expect(chart.locator("[data-point='valse_all:valse/existence/test:acc_r']")).to_have_count(1, timeout=SLOW)
    rows = [*VALSE, "avg"]
    # each row: the run's point and the paper's systems' points at one height (a row's band), rows in order
    centre = """(g) => { const b = g.getBoundingClientRect(); return b.top + b.height / 2; }"""
    heights = {}
    for config in rows:
        papers = chart.locator(f"[data-point^='paper: '][data-point*=':valse/{config}/paper:acc_r']")
        assert papers.count() == 8, (config, papers.count())  # VALSE Table 2's eight systems
        ys = [papers.nth(k).evaluate(centre) for k in range(8)]
        mine = chart.locator(f"[data-point='valse_all:valse/{config}/test:acc_r']")
        if config in ("relations", "avg"):  # every item tied (and so the Avg. over it): no point, "N/A" on its row
            assert mine.count() == 0
            heights[config] = sum(ys) / len(ys)
            continue
        y = mine.evaluate(centre)
        assert max(abs(y - v) for v in ys) < 40, (config, y, ys)
        heights[config] = y
    assert list(heights.values()) == sorted(heights.values()), heights  # the Avg. last, under the instruments
    assert chart.locator("text").filter(has_text=re.compile(r"^N/A")).count() == 2  # relations, and the Avg. over it
    # the table: a row per instrument and the Avg., the run's column first; no column for the Winoground run
    table = page.locator("#papers-table")
    first = table.locator("tbody td:first-child").all_inner_texts()
    assert first == [*VALSE, "Avg."], first
    headers = table.locator("th").all_inner_texts()
    assert headers[1] == "this run: valse_all" and not any("wino" in h for h in headers), headers
    assert table.locator("td.mark").count() == 12  # the run's column, shaded
    published = page.locator("#published-table tbody tr").all_text_contents()  # folded on a phone
    assert len(published) == 12 and all("the study (Oh et al. 2024)" in r for r in published), published
    assert "existence" in published[0] and "69.3" in published[0] and "-19.3" in published[0], published[0]
    assert page.locator("#runs-valse-table tbody tr").count() == 1 and page.locator(
        "#runs-winoground-table tbody tr").count() == 1  # a row per run and config, no empty row
    causes = page.locator("#published-table tbody tr").last.locator("td").last.text_content().strip()
    assert len(causes) <= 80 and causes.endswith("¹"), causes  # the Avg.'s members' item counts: a footnote
    assert "checkpoint_names.csv" not in page.locator(".results-out").inner_text()
    # a panel per benchmark: the row labels are config names, the plot keeps its width beside them
    plots = chart.locator("[data-plot]")
    assert plots.count() == 2, plots.count()
    width = min(p.bounding_box()["width"] for p in plots.all())
    assert width >= (560 if viewport == "laptop" else 330), width  # about 350 px on a laptop before the panels
    assert chart.locator("text").filter(has_text=re.compile(r"^valse/")).count() == 0
    fits = _check_tables(page, "valse beside the papers")
    smallest = _check_charts(page, "results, valse/all beside VALSE Table 2", seen)
    _glossed(page)
    if viewport == "phone":  # the numbers before the chart, unfolded too
        assert table.bounding_box()["y"] < page.locator("#results-chart").bounding_box()["y"]
    page.screenshot(path=str(shots / f"results_valse_{viewport}{'_unfolded' if phone else ''}.png"), full_page=True)
    return {"rows": len(heights), "chart px": round(smallest, 1), "plot px": round(width), **phone,
            "page px": page.evaluate("() => document.documentElement.scrollHeight"), "tables": fits}


def _phone_results(page, shots):
    """The phone's Results page as a valse/all run's comparison leaves it: the note and the runs beside the papers
    first (before the files and options), within FIRST_RESULT_PX of the page's top; the papers table compact (no
    cards, no inner scroll box: config, the run's value with its CI under it, the systems' range; the systems'
    own columns left out) with each system's figure folded under it; the chart, the runs' tables, the figures
    published for the run's checkpoint and the glossary folded; the page at most RESULTS_PHONE_PX long."""
    assert not any(_folded(page))  # the papers table is no fold: all the rest is folded
    first = _bottoms(page, "results-note", "papers-table")
    assert max(first.values()) < FIRST_RESULT_PX, first
    files = page.locator("#results-files").bounding_box()["y"] + page.evaluate("scrollY")
    assert files > max(first.values()), ("the numbers come before the files", files, first)
    table = page.locator("#papers-table")
    assert table.locator("table.cards").count() == 0
    wrap = table.locator(".vt-wrap").evaluate("w => [w.scrollHeight, w.clientHeight, getComputedStyle(w).overflowY]")
    assert wrap[0] <= wrap[1] + 1, ("an inner scroll box", wrap)
    shown = [h for h in table.locator("th").all() if h.is_visible()]
    assert [h.inner_text() for h in shown] == ["config", "this run: valse_all", "papers (range)"], shown
    ranges = table.locator("td.phone").all_inner_texts()
    assert len(ranges) == 12 and ranges[0] == "39.7–95.6", ranges  # existence: VisualBERT's to ViLBERT 12-in-1's
    assert table.locator("td.ci").first.evaluate("c => c.querySelector('span.ci').getBoundingClientRect().top"
                                                 " > c.querySelector('span').getBoundingClientRect().top")  # CI under
    for folded in ("#papers-systems-table", "#published-table", "#runs-valse-table", "#results-chart", ".glossary"):
        fold = page.locator(".results-out").locator(f"{folded} details.vt-fold, details.vt-fold{folded}").first
        assert fold.evaluate("d => !d.open"), folded  # the Results tab's (the Benchmark tab has a glossary too)
    fits = _check_tables(page, "valse beside the papers, folded")
    assert page.evaluate(INNER_SCROLLS) == []
    length = page.evaluate("() => document.documentElement.scrollHeight")
    assert length <= RESULTS_PHONE_PX, length
    page.screenshot(path=str(shots / "results_valse_phone.png"), full_page=True)
    return {"first result bottom": first, "folded page px": length, "folded tables": fits}


def _bad_results_file(page, tmp_path):
    """A file that is not .json dropped on the results files: no toast, one sentence naming the box."""
    from playwright.sync_api import expect

    notes = tmp_path / "notes.txt"
    notes.write_text("not results")
    page.locator("#results-files input[type=file]").set_input_files(str(notes))
    expect(_markdown(page, "results-note")).to_have_text(
        "⚠️ Cannot compare: Results files: 'notes.txt' is not a results file (the results.json that vlprobe evaluate or "
        "the Benchmark tab writes)", timeout=SLOW, use_inner_text=True)
    assert page.locator(".toast-body").count() == 0


def _named_runs(page, tmp_path, viewport, shots, seen):
    from playwright.sync_api import expect

    from vlprobe.demo.results import MAX_LABEL, short

    paths = []
    for folder, model, value in (("one", "models/mini-clip", 0.3), ("two", "openai/clip-vit-base-patch32", 0.4)):
        (tmp_path / folder).mkdir()
        paths.append(tmp_path / folder / "results.json")  # the name every run writes
        paths[-1].write_text(json.dumps(_run_doc(model, value)), encoding="utf-8")
    paths.append(tmp_path / "travlr_run.json")
    paths[-1].write_text(json.dumps(_travlr_doc()), encoding="utf-8")
    _load_results(page, paths)
    _unfold(page)
    chart = _results_svg(page)
    expect(chart).to_be_visible(timeout=SLOW)
    # a table per benchmark, a row per run and config: the two Winoground runs in one, named; TraVLR's in its own
    names = page.locator("#runs-winoground-table td:first-child").all_inner_texts()
    assert names == ["mini-clip · winoground", short("clip-vit-base-patch32 · winoground")], names
    assert page.locator("#runs-travlr-table .vt-label").inner_text() == "travlr: travlr_run (%) (2 rows)"
    names.append("travlr_run")
    assert all(len(n) <= MAX_LABEL for n in names)
    hashes = re.compile(r"[0-9a-f]{16,}")
    shown = " ".join(page.locator(f"#{key}").inner_text() for key in ("results-chart", "runs-table", "papers-table"))
    assert not hashes.search(shown + _markdown(page, "results-note").inner_text()), hashes.search(shown)
    legend = " ".join(chart.locator("text").all_text_contents())
    assert all(n in legend for n in names), legend
    papers = page.locator("#papers-table").inner_text()
    assert "this run: mini-clip · winoground" in papers and "travlr_run" not in papers  # no empty row for it
    points = sorted(b.get_attribute("data-point") for b in chart.locator("[data-point^='travlr_run:']").all())
    assert points == ["travlr_run:travlr/spatiality/test_ind:acc_r", "travlr_run:travlr/spatiality/test_ood:acc_r"]
    for point in chart.locator("[data-point]").all():
        box = point.bounding_box()
        assert box and box["height"] > 5
    _check_tables(page, "results")
    smallest = _check_charts(page, "results, three runs beside Winoground's table", seen)
    page.screenshot(path=str(shots / f"results_{viewport}.png"), full_page=True)
    page.locator("#run-names textarea").fill("baseline\nB/32")
    page.get_by_role("button", name="Compare", exact=True).click()
    expect(page.locator("#runs-winoground-table td").filter(has_text=re.compile(r"^\s*baseline\s*$"))).to_have_count(
        1, timeout=SLOW)
    _unfold(page)
    assert page.locator("#runs-winoground-table td:first-child").all_inner_texts() == ["baseline", "B/32"]
    assert page.locator("#runs-travlr-table .vt-label").inner_text() == "travlr: travlr_run (%) (2 rows)"
    page.locator("#run-names textarea").fill("")
    return smallest


@pytest.mark.parametrize("viewport", list(VIEWPORTS))
def test_the_space_at_both_sizes(browser, app, model_path, viewport, tmp_path, shots):
    module, url = app
    seen, charts, clock = {}, [], time.perf_counter()

    def step(name, fn, *args):
        nonlocal clock
        seen[name] = fn(*args)
        seen[name + " s"] = round(time.perf_counter() - clock, 1)
        clock = time.perf_counter()

    page = _open(browser, url, viewport)
    try:
        step("contrast, first look", _first_look, page, module, viewport, shots, charts)
        step("names, score tab", _check_names, page, "score tab")
        step("bad files", _bad_files, page, tmp_path)
        step("score: first result", _score_gallery_examples, page, viewport, shots, charts)
        step("tie", _tie, page, viewport, shots, charts)
        step("16 texts: chart height", _long_and_many_texts, page, viewport, shots, charts)
        step("contrast, scored", _check_contrast, page, "score tab, scored")
        step("unknown model", _unknown_model, page, viewport, shots)
        if viewport == "laptop":
            step("uploads", _uploads, page, model_path, tmp_path)
        step("bad row", _bad_row, page)
        step("load: disabled ms", _switch_and_go, page, module, "score")
        step("names, score tab with every part open", _check_names, page, "score tab, opened")
        page.get_by_role("tab", name="Benchmark").click()
        step("bad numbers", _bad_numbers, page)
        step("run: disabled ms", _switch_and_go, page, module, "benchmark")
        if viewport == "laptop":
            step("every dataset", _every_dataset, page, module, charts)
        else:
            step("every item tied", _tied_run, page)
        step("benchmark", _winoground_benchmark, page, viewport, shots, charts, _test_rows(module, "winoground_style"))
        step("contrast, benchmark", _check_contrast, page, "benchmark tab")
        step("names, benchmark", _check_names, page, "benchmark tab")
        page.get_by_role("tab", name="Results").click()
        step("papers alone", _papers_alone, page, viewport, shots, charts)
        step("bad results file", _bad_results_file, page, tmp_path)
        page.get_by_role("tab", name="Benchmark").click()
        step("download feeds results", _download_feeds_results, page, tmp_path, viewport, shots, charts)
        step("results chart px", _named_runs, page, tmp_path, viewport, shots, charts)
        step("valse beside the papers", _valse_beside_papers, page, tmp_path, viewport, shots, charts)
        step("contrast, results", _check_contrast, page, "results tab")
        step("names, results", _check_names, page, "results tab")
        assert len(charts) >= 12, charts  # every kind of chart the page draws was measured
    finally:
        print(f"\n{viewport}: {seen}\ncharts measured, no overlap: {charts}")
        page.close()
