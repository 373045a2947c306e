"""vlprobe's Gradio Space: score a model live on foils, run a benchmark, compare results.

The page is built here; what it does lives in :mod:`vlprobe.demo` (scoring through vlprobe's
engine, verdicts and numbers from vlprobe's metric), so it can be tested without a browser. Run it
from the repository: ``python space/app.py`` (http://127.0.0.1:7860).

Endpoints (named after the functions): ``/score``, ``/load_example``, ``/run_benchmark``,
``/show_item``, ``/compare_results``. Every input is checked by vlprobe, not by Gradio's
components (``preprocess=False``): a mistake comes back as one sentence in the page naming the box
and what it allows (in the verdict, the benchmark's status or the results note), never as a
traceback, a toast or an "Error" badge, and the page never stays "running".
"""

from __future__ import annotations

import functools
import html
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
# vlprobe is found beside this file (a Space pushed with the package copied in) or one level up
# (this repository); that folder is also where models/ and the dataset folders are looked up.
ROOT = next((r for r in (HERE, HERE.parent) if (r / "vlprobe" / "__init__.py").is_file()), HERE)
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import gradio as gr  # noqa: E402

from vlprobe.demo import benchmark as bench  # noqa: E402
from vlprobe.demo import display, examples, glossary, models, results, settings, uploads  # noqa: E402
from vlprobe.demo import score as scoring  # noqa: E402
from vlprobe.demo.models import preload_default_model  # noqa: E402
from vlprobe.demo.settings import Settings, SpaceError  # noqa: E402

SETTINGS = Settings(root=ROOT, models_file=HERE / "models.txt")
WORK_DIR = Path(tempfile.mkdtemp(prefix="vlprobe-space-"))
EXAMPLE_DIR = WORK_DIR / "examples"
RESULTS_DIR = WORK_DIR / "runs"
EXAMPLE_DIR.mkdir()
RESULTS_DIR.mkdir()
# Uploads are read only from Gradio's upload folder and the gallery's own folder (Gradio refuses
# other paths too; this is vlprobe's own check, see vlprobe.demo.uploads).
UPLOAD_ROOTS = (gr.utils.get_upload_folder(), EXAMPLE_DIR, RESULTS_DIR)
# Gradio's own upload cap, far above vlprobe's image limit: a file between the two reaches vlprobe,
# which says in the page what the limit is (Gradio's refusal is a toast naming no box).
HARD_UPLOAD_LIMIT = "200mb"
TIES = ["strict", "half", "lenient"]
TIES_INFO = "strict: wrong, as the papers count it; half: half right; lenient: right"
# the Benchmark tab scores a benchmark's items: by default as its authors count a tie (vlprobe.evaluate's default)
BENCH_TIES = ["authors", *TIES]
BENCH_TIES_INFO = "authors: as the benchmark's authors' code counts it; strict: wrong; half: half right; lenient: right"


def checked_uploads(files, what):
    """Each uploaded file's path, refused (one sentence) when it lies outside UPLOAD_ROOTS. ``what``:
    the box's name, or one name per file."""
    names = [what] * len(files) if isinstance(what, str) else list(what)
    return [None if f in (None, "") else uploads.upload_path(f, name, UPLOAD_ROOTS) for f, name in zip(files, names)]


def text_too(component):
    """The component, its API input allowed to be plain text too (a path string typed into a script):
    that reaches vlprobe's own check, which answers in one sentence naming the box, rather than
    failing Gradio's validation with its generic "upstream Gradio app has raised an exception". The
    API page keeps the component's own schema."""
    from typing import Union

    from gradio.data_classes import GradioRootModel

    component.api_info()  # kept (cached) before the model changes
    own = component.data_model
    root = Union[own, str, list[str]]  # a runtime type, which pydantic reads
    component.data_model = type(f"{own.__name__}OrText", (GradioRootModel,), {"__annotations__": {"root": root}})
    return component


PAPERS = ("[VALSE](https://aclanthology.org/2022.acl-long.567/) · "
          "[Winoground](https://arxiv.org/abs/2204.03162) · "
          "[BLA](https://aclanthology.org/2023.emnlp-main.356/) · "
          "[TraVLR](https://aclanthology.org/2023.eacl-main.242/)")

CSS = display.CSS + """
.verdict { padding: 8px 12px; border-radius: 6px; border-left: 6px solid #d1d5db; background: #f9fafb; }
.verdict p { margin: 0.2em 0; }
/* the class is on the block and on its Markdown inside: only the block is the coloured box */
.prose.verdict { padding: 0 !important; border: none !important; background: none !important; color: inherit !important; }
.verdict p:first-child { font-weight: 600; font-size: 1.05em; }
.verdict-right { background: #e6f4ea; color: #0b5d1e; border-left-color: #2ca02c; }
.verdict-wrong { background: #fde8e8; color: #8a1c1c; border-left-color: #d62728; }
.verdict-mixed { background: #fff4e0; color: #6b4000; border-left-color: #ff9f1c; }
.verdict-tie { background: #eef2ff; color: #312e81; border-left-color: #6b7280; }
.verdict-error { background: #f3f3f3; color: #8a1c1c; border-left-color: #888; }
.intro p { margin: 0.2em 0 0.4em; }
/* a placeholder reads as an instruction, not as a caption already typed */
textarea::placeholder, input::placeholder { font-style: italic; }
#bad-upload { display: none !important; }
/* image labels sit above the picture, never on it */
.labelled-image { height: auto !important; }
.labelled-image img { max-height: 220px !important; object-fit: contain !important; }
.labelled-image .upload-container .wrap { min-height: 130px !important; }
.labelled-image [data-testid="block-label"] { position: static !important; margin-bottom: 4px; box-shadow: none; }
.gallery-row { gap: 6px !important; }
.gallery-row button { min-width: 0 !important; flex: 0 1 auto !important; }
/* an item with one image: no empty second slot */
.second-image:not(:has(img)) { display: none !important; }
.chart-block .chart-svg svg { margin: 0 auto; }
/* the Results chart is drawn twice: wide (labels left of the rows) and, for a phone, narrow (labels above) */
.chart-narrow, .phone-only { display: none; }
details.vt-fold > summary { cursor: pointer; }
.vt-count { font-weight: 400; }
#item-caption code { overflow-wrap: anywhere; }
.model-about p, .tie-notes p { margin: 0.2em 0; font-size: 0.92em; color: #374151; }
#model-about { align-self: center; }
.tie-notes p { color: #6b4000; }
.glossary { font-size: 0.88em; color: #374151; margin-top: 6px; }
.glossary ul { margin: 0.2em 0 0 1.1em; padding: 0; }
.glossary li { margin: 0.15em 0; }
.glossary-head { font-weight: 600; margin: 0; }
/* Gradio's chips and slider bounds, dark enough for WCAG AA (4.5:1) */
[data-testid="highlighted-text"] span.label { color: #ffffff !important; font-size: 12px !important;
  opacity: 1 !important; }
.min_value, .max_value { color: #4b5563 !important; }
/* a slider's track, and a dropdown's outline (the theme gives it none), at 3:1 against the page */
input[type=range] { --neutral-200: #80868f; }
.wrap:has(> .wrap-inner input[role=combobox]) { border: 1px solid #80868f; }
.wrap:has(> .wrap-inner input[role=combobox]):focus-within { border-color: var(--input-border-color-focus); }
/* the two upload zones side by side on a phone too, each half the row */
.image-pair { flex-wrap: nowrap !important; gap: 8px !important; }
.image-pair > * { min-width: 0 !important; flex: 1 1 0 !important; }
/* on a phone: the verdict and the numbers first (under the gallery; the inputs and Score after them,
   the parts that are empty before a first score hidden), the benchmark's tables before its chart, the
   results' numbers before their chart */
@media (max-width: 640px) {
  .intro h1 { font-size: 1.5em !important; }
  .intro p { font-size: 0.92em; }
  .model-about p { font-size: 0.85em; margin: 0 !important; }
  .gallery-row button { font-size: 0.82em !important; padding: 2px 8px !important; min-height: 0 !important; }
  .gr-accordion { padding-top: 2px !important; padding-bottom: 2px !important; }
  .labelled-image img { max-height: 110px !important; }
  .score-inputs .labelled-image .upload-container .wrap { min-height: 80px !important; }
  .score-row { flex-direction: column !important; }
  .score-row > .score-outputs { order: -1; }
  .model-row { order: 1; }
  .score-outputs:not(.scored) > :not(.verdict) { display: none !important; }
  .chart-block, .chart-block .html-container { padding-left: 0 !important; padding-right: 0 !important; }
  .bench-out { flex-direction: column !important; }
  #bench-config, #bench-split { min-width: 140px !important; }  /* side by side, under Dataset */
  .named-radio { flex-basis: 100% !important; }  /* the tie policy on its own line, Items and Bootstrap beside */
  #tie-notes:not(:has(p)) { display: none !important; }  /* no empty gap where there is no note */
  .bench-out > .bench-tables { order: -1; }
  .results-out { display: flex; flex-direction: column; }
  /* the Results tab: its results (the note, the numbers) first, then its files and options; the tables compact */
  .results-tab > .results-inputs { order: 2; }
  .results-out > :has(.vt-empty):not(:has(table)), .results-out > #results-chart:not(:has(svg)) { display: none; }
  .phone-only { display: block; }
  .results-out table.vt td, .results-out table.vt th { font-size: 12.5px; padding: 3px 4px; }
  .results-out .vt-note { font-size: 0.8em; margin-top: 1px; }
  .results-out > #results-chart { order: 3; }
  .chart-wide { display: none; }
  .chart-narrow { display: block; }
}
"""


# After scoring: colour the verdict by what it says (right / wrong / mixed / tie / an error), and
# bring it to the top of the screen when it is out of sight (on a phone it sits below the inputs).
SHOW_VERDICT = """async () => {
  const y0 = window.scrollY;
  let moved = false;  // the page is scrolled at most once, and never after the visitor has scrolled it
  for (const wait of [60, 250, 600]) {  // again once the page has laid the new verdict out
    await new Promise(r => setTimeout(r, wait));
    const el = document.querySelector('.verdict');
    if (!el) return;
    const text = ((el.querySelector('[data-testid=markdown]') || el).innerText || '').trim();
    const kind = /^CORRECT/.test(text) ? 'right' : /^WRONG/.test(text) ? 'wrong' : /^TIE/.test(text) ? 'tie'
               : /^(MIXED|PARTLY)/.test(text) ? 'mixed' : /^Cannot/.test(text) ? 'error' : '';
    el.classList.remove('verdict-right', 'verdict-wrong', 'verdict-mixed', 'verdict-tie', 'verdict-error');
    if (kind) el.classList.add('verdict-' + kind);
    const results = el.closest('.score-outputs');  // its tables and chart shown (on a phone) once there is a score
    if (results) results.classList.toggle('scored', !!kind && kind !== 'error');
    const r = el.getBoundingClientRect();
    if (!moved && window.scrollY === y0 && (r.top < 0 || r.bottom > window.innerHeight)) {
      el.scrollIntoView({block: 'start', behavior: 'instant'});
      moved = true;
    }
  }
}"""


# After Compare: on a phone, fold all but the first numbers (the runs beside the papers; with no papers' table, the
# first run's table) under their labels; bring the
# results' note to the top of the screen when it is out of sight (on a phone it sits below the files and options).
SHOW_RESULTS = """async () => {
  const y0 = window.scrollY;
  await new Promise(r => setTimeout(r, 30));  // the tables drawn
  if (window.matchMedia('(max-width: 640px)').matches) {  // on a phone all but the first numbers wait for a tap
    const first = document.querySelector('#papers-table table') ? null : document.querySelector('#runs-table details');
    for (const d of document.querySelectorAll('.results-out details.vt-fold')) d.open = d === first;
  }
  for (const wait of [60, 250, 600]) {
    await new Promise(r => setTimeout(r, wait));
    const el = document.querySelector('#results-note');
    if (!el || window.scrollY !== y0) return;  // once, and not after the visitor has scrolled
    const r = el.getBoundingClientRect();
    if (el.offsetParent && (r.top < 0 || r.bottom > window.innerHeight)) {
      el.scrollIntoView({block: 'start', behavior: 'instant'});
      return;
    }
  }
}"""


# After a benchmark run: on a phone, the glossary, the per-tag table, the items list and the item viewer folded
# under their labels (a tap opens them).
FOLD_BENCH = """() => { if (!window.matchMedia('(max-width: 640px)').matches) return;
  const folds = '.bench-tables details.glossary, #tags-table details, #browse-table details';
  document.querySelectorAll(folds).forEach(d => { d.open = false; });
  const viewer = document.querySelector('#item-viewer button.label-wrap.open');
  if (viewer) viewer.click(); }"""


# The phone's side margins (a rule Gradio's css= cannot reach: it scopes it inside the page), and
# accessible names Gradio does not give: images get alt text (their block's label and the file's
# name); each upload zone its own name ("Upload Image 1", not the shared "Drop an image file here
# to upload"); each radio group the name of its label; the verdict is read out (role=status).
HEAD = """<style>
/* the page's own side margins, outside the part Gradio's css= reaches: narrower on a phone */
@media (max-width: 640px) { .gradio-container .main.fillable.app { padding-left: 10px !important;
  padding-right: 10px !important; } }
</style>
<script>
(() => {
  const label = b => ((b.querySelector('[data-testid="block-label"], [data-testid="block-info"]') || {})
                      .innerText || '').trim();
  const fix = () => {
    document.querySelectorAll('.labelled-image').forEach(b => {
      const name = label(b);
      if (!name) return;
      b.querySelectorAll('img').forEach(img => {
        if (!img.getAttribute('alt')) {
          const file = decodeURIComponent((img.getAttribute('src') || '').split('/').pop().split('?')[0]);
          img.setAttribute('alt', name + (file && !file.startsWith('data:') ? ': ' + file : ''));
        }
      });
      b.querySelectorAll('button, [role=button], input[type=file]').forEach(el => {
        if (!el.dataset.gradioLabel) {  // what Gradio called it, kept: the name below is derived from it once
          el.dataset.gradioLabel = (el.getAttribute('aria-label') || '') + ' ' + (el.innerText || '') + ' ' + (el.type || '');
        }
        const said = el.dataset.gradioLabel, tool = said.match(/^ *(download|share|fullscreen|exit fullscreen|clear|remove)/i);
        const want = /clipboard|paste/i.test(said) ? 'Paste into ' + name
                   : el.closest('.source-selection') && /upload/i.test(said) ? 'Choose a file for ' + name
                   : tool ? tool[1][0].toUpperCase() + tool[1].slice(1).toLowerCase() + ' ' + name  // "Download Item image 1"
                   : /drop|upload|click|file/i.test(said) ? 'Upload ' + name : null;
        if (want && el.getAttribute('aria-label') !== want) el.setAttribute('aria-label', want);
      });
    });
    document.querySelectorAll('.named-radio').forEach(b => {
      const group = b.querySelector('.wrap') || b;
      const name = label(b);
      if (name && group.getAttribute('aria-label') !== name) {
        group.setAttribute('role', 'radiogroup');
        group.setAttribute('aria-label', name);
      }
    });
    // a dropdown's open list of choices: named after its box ("Model choices"), as Gradio leaves it unnamed
    document.querySelectorAll('[role=listbox]:not([aria-label])').forEach(list => {
      const name = label(list.closest('.block') || list);
      if (name) list.setAttribute('aria-label', name + ' choices');
    });
    // a file list's "Remove this file" buttons, one per file: each named after its file and place
    document.querySelectorAll('button[aria-label="Remove this file"], button[data-remove-file]').forEach(b => {
      const row = b.closest('tr, li'), rows = row && row.parentElement ? [...row.parentElement.children] : [];
      const file = row ? (row.querySelector('td, a') || row).textContent.trim().slice(0, 60) : '';
      const want = `Remove file ${rows.indexOf(row) + 1}: ${file}`;
      b.dataset.removeFile = '1';
      if (b.getAttribute('aria-label') !== want) b.setAttribute('aria-label', want);
    });
    const v = document.querySelector('.verdict');
    if (v && !v.getAttribute('role')) { v.setAttribute('role', 'status'); v.setAttribute('aria-live', 'polite'); }
  };
  new MutationObserver(fix).observe(document.documentElement, {childList: true, subtree: true});
  // Choosing a dataset (or a config) disables the button that would run with the old choice at once,
  // before Gradio's change event fires (tens of ms later); the server's answer enables it again once
  // the boxes that depend on the choice have their new values. A choice that changes nothing (the same
  // option again) enables it again after a moment.
  const LOCKS = {'bench-dataset': 'bench-run', 'bench-config': 'bench-run', 'example-dataset': 'example-load'};
  const chooser = e => e.target.closest && e.target.closest(Object.keys(LOCKS).map(k => '#' + k).join(','));
  document.addEventListener('focusin', e => {
    const block = chooser(e), input = block && block.querySelector('input');
    if (input) input.dataset.committed = input.value;
  }, true);
  const choose = e => {
    const block = chooser(e);
    if (!block || (e.type === 'keydown' && e.key !== 'Enter')
        || (e.type === 'mousedown' && !e.target.closest('[role=option]'))) return;
    const input = block.querySelector('input'), button = document.getElementById(LOCKS[block.id]);
    if (!input || !button) return;
    button.disabled = true;
    setTimeout(() => {
      if (input.value === input.dataset.committed) button.disabled = false;
      input.dataset.committed = input.value;
    }, 400);
  };
  document.addEventListener('keydown', choose, true);
  document.addEventListener('mousedown', choose, true);
  // A file a box cannot take (not an image on an image box, not .json on the results box) is kept
  // from Gradio, whose refusal is a toast naming no box: its name goes to the hidden #bad-upload box,
  // and the server says it in the page in one sentence naming the box.
  const image = f => (f.type || '').startsWith('image/');
  const CHECKED = {'image-1': ['Image 1', image], 'image-2': ['Image 2', image],
                   'results-files': ['Results files', f => f.name.toLowerCase().endsWith('.json')]};
  const refuse = e => {
    const block = e.target.closest && e.target.closest(Object.keys(CHECKED).map(k => '#' + k).join(','));
    const files = e.type === 'drop' ? (e.dataTransfer || {}).files : e.target.files;
    if (!block || !files || !files.length) return;
    const [box, ok] = CHECKED[block.id], bad = [...files].filter(f => !ok(f));
    if (!bad.length) return;
    e.preventDefault();
    e.stopImmediatePropagation();
    if (e.type === 'change') e.target.value = '';
    else e.target.dispatchEvent(new DragEvent('dragleave', {bubbles: true}));  // the drop zone's highlight off
    const report = document.querySelector('#bad-upload textarea, #bad-upload input');
    if (!report) return;
    report.value = JSON.stringify({box, names: bad.map(f => f.name), at: Date.now()});
    report.dispatchEvent(new Event('input', {bubbles: true}));
  };
  document.addEventListener('change', refuse, true);
  document.addEventListener('drop', refuse, true);
})();
</script>"""


def _message(err: Exception) -> str:
    if isinstance(err, (SpaceError, ValueError, FileNotFoundError)):
        return str(err)
    first = (str(err).strip().splitlines() or [""])[0][:300]
    return f"something went wrong ({type(err).__name__}: {first})"


def _inline_errors(on_error):
    """Run the handler; a failure becomes ``on_error(message)``: the page's outputs with the
    message shown next to what failed, never a traceback or a vanishing pop-up."""

    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except Exception as err:  # noqa: BLE001  (the page must never show a traceback)
                return on_error(_message(err))

        return wrapper

    return decorate


def _table(headers, rows):
    return {"headers": headers, "data": rows}


def placeholder(headers, text):
    """An empty table that says what will fill it (rather than Gradio's "1 2 3" headers)."""
    return {"headers": headers, "data": [[text] + [""] * (len(headers) - 1)]}


SCORES_EMPTY = placeholder(["text", "role", "score", "margin"], "score an item to see each text's score")
METRICS_EMPTY = placeholder(["metric", "value", "CI low", "CI high", "chance"], "run a benchmark")
TAGS_EMPTY = placeholder(["tag", "items"], "run a benchmark")
BROWSE_EMPTY = placeholder(["rank", "margin", "texts", "tags", "id"], "run a benchmark to list its items")
ITEM_EMPTY = placeholder(["text", "role", "score", "margin"], "run a benchmark, then pick an item")
RUNS_EMPTY = placeholder(results.RUN_HEADERS, "load results files and press Compare")
PAPERS_EMPTY = placeholder(["config", "system"], "no published numbers to show")
PUBLISHED_EMPTY = placeholder(["source", "config", "metric", "published", "this run", "difference", "known causes"],
                              "no figure is published for the loaded runs' checkpoints")

# The page shows HTML tables (vlprobe.demo.display: they scroll sideways on a phone, nothing in them
# breaks or is cut); the same tables also come back as data from the API (hidden Dataframes).
LABELS = {"scores": "Scores", "metrics": "Metrics (%)", "tags": "Per tag (%)",
          "browse": "Items, worst first (margin: lowest true score minus highest wrong score; 0 or less is a mistake)",
          "item": "Item scores", "runs": "Runs (%)", "papers": "Beside the published numbers (%)"}


def shown_table(key, headers, rows, **kw):
    return display.html_table(headers, rows, label=LABELS[key], table_id=f"{key}-table", **kw)


def table_html(table, key=None, **kw):
    """A vlprobe.demo Table as the page shows it (named by LABELS where the library leaves its label to the page)."""
    return display.html_table(table.headers, table.rows, label=kw.pop("label", table.label or LABELS[table.key]),
                              table_id=f"{key or table.key}-table", notes=table.notes, wrap=table.wrap,
                              marked=table.marked, marked_rows=table.marked_rows, **kw)


def empty_table(key, text):
    return display.message_table(LABELS[key], text, table_id=f"{key}-table")


SCORES_HTML = empty_table("scores", "score an item to see each text's score")
METRICS_HTML = empty_table("metrics", "run a benchmark")
TAGS_HTML = empty_table("tags", "run a benchmark to see its metrics per tag")
BROWSE_HTML = empty_table("browse", "run a benchmark to list its items")
ITEM_HTML = empty_table("item", "run a benchmark, then pick an item")
RUNS_HTML = empty_table("runs", "load results files (or send a benchmark run here) and press Compare")
PAPERS_HTML = empty_table("papers", "press Compare to see the papers' published numbers")
SCORE_CHART_TEXT = ("Bar chart of the margins that decide the verdict: for each comparison, the true text's score "
                    "minus the wrong one's; above 0 the model is right, 0 is a tie")
RESULTS_START = ("**Nothing to compare yet.** Run a benchmark in the Benchmark tab and press **Compare in the Results "
                 "tab**, or load `results.json` files here (written by `vlprobe evaluate` or downloaded from the "
                 "Benchmark tab) and press **Compare**; press it alone to see the papers' published numbers.")


# ---- Score ----------------------------------------------------------------------------------------

def _score_failed(message):
    return f"Cannot score: {message}", SCORES_EMPTY, "", None, "", None, SCORES_HTML


@_inline_errors(_score_failed)
def score(image_1, image_2, captions, foils, model, ties="strict"):
    """Score one item: (verdict, scores table, what a score is, differing words, margin chart, metrics,
    the scores as the page shows them). ``ties``: the tie policy (strict, half, lenient)."""
    checked_uploads([image_1, image_2], ["Image 1", "Image 2"])
    out = scoring.score(SETTINGS, image_1, image_2, captions, foils, model, ties=ties)
    chart = display.svg(out.chart, f"{SCORE_CHART_TEXT}: " + "; ".join(
        f"{label} {value:+.3f}" for label, value in scoring.comparisons(out.item, out.scores)), chart_id="margin-chart")
    return (out.verdict, _table(out.headers, out.table), out.note, out.highlights, chart, out.metrics,
            shown_table("scores", out.headers, out.table, prose=("text",), lists=("role",), notes=[out.note]))


def check_upload(path, which):
    """Right after an upload: a file too large or not an image is refused in the verdict at once
    (and taken out of its box), before anyone presses Score."""
    if path in (None, ""):
        return gr.skip(), gr.skip()
    try:
        checked_uploads([path], which)
        scoring.load_upload(path, which)
    except Exception as err:  # noqa: BLE001
        return f"Cannot score: {_message(err)}", None
    return gr.skip(), gr.skip()


# What each upload box takes, as the browser tells it before Gradio does (HEAD's script keeps a file
# the box cannot take from Gradio, whose refusal is a toast naming no box, and sends its name here).
IMAGE_FILES = ("is not an image", "are not images", "use PNG, JPEG or WebP")
REFUSED_UPLOADS = {"Image 1": IMAGE_FILES, "Image 2": IMAGE_FILES,
                   "Results files": ("is not a results file", "are not results files",
                                     "the results.json that vlprobe evaluate or the Benchmark tab writes")}


def refused_upload(report):
    """A file dropped or chosen on a box that cannot take it, said in one sentence naming the box: in
    the verdict (an image box) or the results note (the results files). ``report``: the browser's
    JSON {box, names}."""
    import json

    try:
        said = json.loads(report or "{}")
        box, names = str(said.get("box", "")), [uploads.safe_name(n) for n in said.get("names") or []][:3]
    except (ValueError, AttributeError, TypeError):
        box, names = "", []
    if box not in REFUSED_UPLOADS or not names:
        return gr.skip(), gr.skip()
    one, many, hint = REFUSED_UPLOADS[box]
    message = f"{box}: {' and '.join(repr(n) for n in names)} {many if len(names) > 1 else one} ({hint})"
    if box == "Results files":
        return gr.skip(), f"⚠️ **Cannot compare:** {message}"
    return f"Cannot score: {message}", gr.skip()


@functools.lru_cache(maxsize=1)
def _all_examples(datasets: tuple[str, ...]) -> tuple[examples.Example, ...]:
    return tuple(examples.gallery(SETTINGS, EXAMPLE_DIR, datasets))


def offered_datasets():
    """The datasets the boxes offer, as the boxes name them (a hosted Space takes names, never its folders' paths)."""
    return tuple(value for _, value in SETTINGS.dataset_choices())


def gallery_for(model):
    """The gallery examples the model can read (every word in its vocabulary), at most GALLERY_SLOTS."""
    try:
        every = _all_examples(offered_datasets())
        tok = models.tokenizer_of(SETTINGS.resolve_model(model))
    except Exception:  # noqa: BLE001  (a model that cannot be had: its scoring says why)
        every, tok = _all_examples(()), None
    return examples.readable(every, tok)[: examples.GALLERY_SLOTS]


def update_model(model):
    """When the model changes: the line saying what it reads, and the gallery it can read."""
    shown = gallery_for(model)
    about = SETTINGS.about_model(model) or ("A model typed by hand: vlprobe loads it from the Hugging Face Hub"
                                            + ("" if settings.on_hosted_space() else " (or this machine)")
                                            + " when you press Score.")
    buttons = [gr.Button(value=shown[k].label, visible=True) if k < len(shown) else gr.Button(visible=False)
               for k in range(examples.GALLERY_SLOTS)]
    return [about, [e.key for e in shown], *buttons]


def _gallery_failed(message):
    return (gr.skip(), gr.skip(), gr.skip(), gr.skip(), *_score_failed(message))


@_inline_errors(_gallery_failed)
def score_example(index, keys, model, ties):
    """A gallery button: its example (the slot's key; else the model's gallery, when the page has not
    filled the slots yet) loaded into the inputs and scored: (image 1, image 2, captions, foils, then
    what :func:`score` returns)."""
    every = {e.key: e for e in _all_examples(offered_datasets())}
    keys = list(keys or []) or [e.key for e in gallery_for(model)]
    example = every.get(keys[index]) if index < len(keys) else None
    if example is None:
        raise SpaceError("this example is not offered for this model any more; pick another one")
    image_1, image_2, captions, foils = example.fields()
    return (image_1, image_2, captions, foils, *score(image_1, image_2, captions, foils, model, ties))


def _example_failed(message):
    return f"⚠️ {message}", gr.skip(), gr.skip(), gr.skip(), gr.skip()


@_inline_errors(_example_failed)
def load_example(dataset, config, row):
    """Fill the Score tab from one row of a built dataset folder."""
    image_1, image_2, captions, foils = examples.example_fields(SETTINGS, dataset, config, row)
    return "", image_1, image_2, captions, foils


def _config_choices(dataset):
    """(configs with rows, a warning for the Config box or None): ([], the reason) when none can be listed."""
    try:
        configs = examples.dataset_configs(SETTINGS, dataset) if dataset else []
    except Exception as err:  # noqa: BLE001  (said in the box; the run says it again)
        return [], f"⚠️ {_message(err)}"
    return configs, None if configs or not dataset else "⚠️ no config of this dataset has rows in this build"


def _split_choices(dataset, config):
    try:
        return (examples.dataset_splits(SETTINGS, dataset, config) if dataset and config else []), None
    except Exception as err:  # noqa: BLE001
        return [], f"⚠️ {_message(err)}"


def config_box(dataset):
    """The Config box for a dataset: its configs with rows, the first chosen."""
    configs, info = _config_choices(dataset)
    return gr.Dropdown(choices=configs, value=configs[0] if configs else None, info=info)


def first_config(dataset):
    return (_config_choices(dataset)[0] or [None])[0]


def split_box(dataset, config):
    splits, info = _split_choices(dataset, config)
    return gr.Dropdown(choices=splits, value=splits[0] if splits else None, info=info)


# Switching dataset (or config) and pressing Run at once must not run the new dataset with the old
# config: the button is disabled in the browser at once (js), and by the server's answer, until the
# boxes that depend on the choice have their new values (then it is enabled again).
def lock_js(button_id):
    return f"() => {{ const b = document.getElementById('{button_id}'); if (b) b.disabled = true; }}"


def locked():
    return gr.Button(interactive=False)


def example_boxes(dataset):
    """The Score tab's dataset chosen: its Config box, and Load this item enabled again."""
    return config_box(dataset), gr.Button(interactive=True)


def benchmark_boxes(dataset):
    """The Benchmark tab's dataset chosen: its Config and Split boxes, and Run enabled again."""
    return config_box(dataset), split_box(dataset, first_config(dataset)), gr.Button(interactive=True)


def benchmark_splits(dataset, config):
    """The Benchmark tab's config chosen: its Split box, and Run enabled again."""
    return split_box(dataset, config), gr.Button(interactive=True)


# ---- Benchmark ------------------------------------------------------------------------------------

def _benchmark_failed(message):
    """The message, and every result of the previous run cleared: nothing stale stays on screen."""
    return (f"⚠️ **Cannot run the benchmark:** {message}", "", METRICS_EMPTY, TAGS_EMPTY, BROWSE_EMPTY, None,
            gr.Slider(minimum=1, maximum=2, value=1), METRICS_HTML, TAGS_HTML, BROWSE_HTML, "",
            gr.DownloadButton(value=None, visible=False), gr.Button(visible=False), None,
            "", None, None, ITEM_EMPTY, ITEM_HTML)


def benchmark_running():
    """Shown while a benchmark runs: the last run's message (an error, say) does not linger."""
    return "Running the benchmark…"


@_inline_errors(_benchmark_failed)
def run_benchmark(dataset, config, split, model, n_items, ties, bootstrap, progress=gr.Progress(track_tqdm=True)):
    """Score N items of a config (a stratified sample across its tags): summary, chart, metrics,
    per-tag table, items worst first, the tables as the page shows them, the notes and glossary
    beside them, the results.json download (and the button sending it to the Results tab), the
    file's path, and the item panel (cleared: the first item is shown next)."""
    out = bench.run_benchmark(SETTINGS, dataset, config, split, model, n_items, ties, bootstrap,
                              progress=lambda frac, desc: progress(frac, desc=desc), results_dir=RESULTS_DIR)
    chart = display.svg(out.chart, "Bar chart of the metrics in %: " + "; ".join(
        f"{r[0]} {r[1]}" + (f" (95% CI {r[2]} to {r[3]})" if r[2] else "") + (f", chance {r[4]}" if r[4] else "")
        for r in out.metrics.rows), chart_id="benchmark-chart") if out.keys else ""
    notes = "".join(f"<p>{html.escape(n)}</p>" for n in out.notes)
    tags_html = (table_html(out.tags, decimals=1, cards=True, fold=True) if out.tags.rows
                 else empty_table("tags", out.tags_note))
    return (out.summary, chart, _table(out.metrics.headers, out.metrics.rows),
            _table(out.tags.headers, out.tags.rows) if out.tags.rows else TAGS_EMPTY,
            _table(out.browse.headers, out.browse.rows),
            out, gr.Slider(minimum=1, maximum=max(2, len(out.browse.rows)), value=1, step=1, interactive=True),
            table_html(out.metrics, decimals=1) + glossary.glossary_html(out.keys, fold=True),
            tags_html,
            table_html(out.browse, prose=("texts",), lists=("tags",), tall=True, cards=True, fold=True),
            f'<div class="tie-notes">{notes}</div>' if notes else "",
            gr.DownloadButton(value=out.results_file, visible=True), gr.Button(visible=True), out.results_file,
            gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip())


def _item_failed(message):
    return f"⚠️ {message}", gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()


@_inline_errors(_item_failed)
def show_item(outcome, rank):
    """One benchmark item by rank (1 = worst mistake): description, its (first two) images, scores.
    A rank out of range is refused in the description, the item shown before kept (and the rank
    box set back to it); with no run (a failed one), the panel stays empty."""
    n = len(outcome.order) if outcome is not None and outcome.items else 0
    if not n:
        return "", None, None, ITEM_EMPTY, ITEM_HTML, gr.skip()
    try:
        r = float(rank)
    except (TypeError, ValueError):
        r = float("nan")
    if not (1 <= r <= n and r == int(r)):
        last = getattr(outcome, "shown_rank", 1)
        return (f"⚠️ There is no item of rank {rank}: choose 1 to {n:,}. Still showing rank {last}: "
                + getattr(outcome, "shown_caption", ""), gr.skip(), gr.skip(), gr.skip(), gr.skip(), last)
    images, headers, rows, caption = bench.browse_item(outcome, rank)
    if len(images) > 2:
        caption += f" (images 1-2 of {len(images)} shown)"
    outcome.shown_rank, outcome.shown_caption = int(r), caption
    return (caption, images[0], images[1] if len(images) > 1 else None, _table(headers, rows),
            shown_table("item", headers, rows, prose=("text",), lists=("role",)), gr.skip())


# ---- Results --------------------------------------------------------------------------------------

def _results_failed(message):
    return (f"⚠️ **Cannot compare:** {message}", "", RUNS_EMPTY, PAPERS_EMPTY, RUNS_HTML, PAPERS_HTML,
            PUBLISHED_EMPTY)


def results_table(table, key=None, **kw):
    """A table of the Results tab as the page shows it. The runs beside the papers: on a phone a compact table,
    the published systems' columns summed up as their range (each system's figure a folded list of cards under it,
    ``key`` "papers-systems"). The others (the runs', the figures published for their checkpoints): on a phone a
    card per row, its numbers first, folded under their label (SHOW_RESULTS folds them), open on a laptop."""
    kw.setdefault("cards", table.key != "papers")
    kw.setdefault("fold", table.key != "papers")
    return table_html(table, key, decimals=1, tall=len(table.rows) > 12, prose=("source", "note", "known causes"), **kw)


def papers_html(table):
    """The runs beside the papers: compact (see :func:`results_table`), with, on a phone, each system's figure as
    a folded list of cards."""
    out = results_table(table, ranged=("papers (range)", table.ranged))
    if table.ranged:
        out += ('<div class="phone-only">' + results_table(table, "papers-systems", cards=True, fold=True,
                                                           label="Each system's figure (%)") + "</div>")
    return out


@_inline_errors(_results_failed)
def compare_results(files, include_papers, benchmark, names=""):
    """Results files side by side, beside the papers' published numbers, with a chart. ``names``:
    the runs' names, one per line in the files' order (optional). Returns the note, the chart, the
    runs' metrics (tidy rows), the table beside the papers, the page's runs tables, its papers and
    published tables (with the glossary), and the figures published for the runs' checkpoints."""
    checked_uploads(files or [], "Results files")
    out = results.compare_results(files, include_papers, benchmark, names or "")
    chart = "" if out.chart is None else (
        '<details class="vt-fold" open><summary class="vt-label">Chart: the headline metric per config</summary>'
        + results.chart_svg(out.chart, out.chart_narrow) + "</details>")  # on a phone folded, as the tables
    runs_html = ('<div id="runs-table">' + "".join(results_table(t) for t in out.runs) + "</div>") if out.runs else ""
    if out.papers:
        shown_papers = papers_html(out.papers)
    else:
        shown_papers = empty_table("papers", "no published numbers for these runs" if include_papers
                                   else "the papers' numbers are not included (tick the box to see them)")
    if out.published:
        shown_papers += results_table(out.published)
    shown = [t for t in (*out.runs, out.papers, out.published) if t]
    return (out.note, chart, _table(out.headers, out.rows) if out.rows else RUNS_EMPTY,
            _table(out.papers.headers, out.papers.rows) if out.papers else PAPERS_EMPTY, runs_html,
            # what each metric in the tables means, and which way is better (the Benchmark tab's glossary)
            shown_papers + glossary.glossary_html(glossary.named_in(*([t.label, *t.headers] for t in shown),
                                                                    *(t.rows for t in shown)), fold=True),
            _table(out.published.headers, out.published.rows) if out.published else PUBLISHED_EMPTY)


def send_to_results(path, files):
    """The Benchmark tab's run, added to the Results tab's files (once), and that tab shown."""
    current = [f if isinstance(f, str) else getattr(f, "path", None) or (f or {}).get("path") for f in (files or [])]
    chosen = current + ([path] if path and path not in current else [])
    return chosen, gr.Tabs(selected="results")


# ---- the page -------------------------------------------------------------------------------------

INTRO = f"""# vlprobe: does the model see what changed?
Score a vision-and-language model on an image against a true caption and **foils**, captions with
one thing changed, as the {PAPERS} benchmarks do. Pick an example, or upload your own image."""


def model_card_text() -> str:
    card = Path(SETTINGS.offline_model_path() or ROOT / settings.OFFLINE_MODEL) / "README.md"
    if not card.is_file():
        return "The offline model is not in this copy of the Space."
    text = card.read_text(encoding="utf-8")
    if text.startswith("---"):
        text = text.split("---", 2)[2]
    return text.strip()


def build_demo() -> gr.Blocks:
    dataset_choices = SETTINGS.dataset_choices()  # by name: no server path in the page
    offered = [value for _, value in dataset_choices]
    typed_datasets = SETTINGS.may_type_datasets()
    typed_models = settings.allowed_models() is None
    model_choices, missing = SETTINGS.models_at_hand()  # offline: no model offered that cannot be had
    default_model = SETTINGS.default_choice()
    model_info = ("choose one, or type a model id from the Hugging Face Hub" if typed_models
                  else "the models this Space allows")
    first_gallery = [label for label in gallery_labels(default_model)]

    with gr.Blocks(title="vlprobe") as demo:
        gr.Markdown(INTRO, elem_classes=["intro"])
        bad_upload = gr.Textbox(elem_id="bad-upload", show_label=False, container=False)  # hidden (CSS), see HEAD
        with gr.Tabs() as tabs:
            with gr.Tab("Score", id="score"):
                with gr.Row(equal_height=False, elem_classes=["model-row"]):  # on a phone (CSS): under Score
                    model = gr.Dropdown(choices=model_choices, value=default_model, label="Model",
                                        allow_custom_value=typed_models, info=model_info, min_width=260, scale=1)
                    with gr.Column(min_width=260, scale=1):
                        model_about = gr.Markdown(SETTINGS.about_model(default_model), elem_classes=["model-about"],
                                                  elem_id="model-about")
                        gr.Markdown(SETTINGS.unavailable_text(missing), elem_classes=["model-about"],
                                    elem_id="models-missing", visible=bool(missing))
                gallery_keys = gr.State([])
                gr.Markdown("**Examples this model can read** (a click loads and scores one):",
                            elem_classes=["gallery-head"])
                with gr.Row(elem_classes=["gallery-row"]):
                    gallery = [gr.Button(first_gallery[k] if k < len(first_gallery) else "", size="sm",
                                         variant="secondary", visible=k < len(first_gallery))
                               for k in range(examples.GALLERY_SLOTS)]
                # on a laptop: the inputs and Score left, the results right; on a phone (CSS): the verdict and
                # the numbers first, under the gallery, then the inputs and Score
                with gr.Row(elem_classes=["score-row"]):
                    with gr.Column(scale=1, min_width=300, elem_classes=["score-inputs"]):
                        with gr.Row(elem_classes=["image-pair"]):
                            image_1 = text_too(gr.Image(label="Image 1", type="filepath", image_mode=None, height=150,
                                                        elem_id="image-1",
                                                        sources=["upload", "clipboard"], elem_classes=["labelled-image"],
                                                        min_width=120))
                            image_2 = text_too(gr.Image(label="Image 2", type="filepath", image_mode=None, height=150,
                                                        elem_id="image-2",
                                                        sources=["upload", "clipboard"], elem_classes=["labelled-image"],
                                                        min_width=120))
                        captions = gr.Textbox(label="Captions", lines=1, max_lines=8,
                                              placeholder="Type the true caption here, one per line",
                                              info="one per line, true of image 1; with a second image, line 2 is "
                                                   "true of image 2")
                        foils = gr.Textbox(label="Foils", lines=1, max_lines=8,
                                           placeholder="Type each foil (a wrong caption) here, one per line",
                                           info="one per line: texts that do not describe the image")
                        score_button = gr.Button("Score", variant="primary", elem_id="score-button")
                        with gr.Accordion("Tie policy and limits", open=False, elem_id="score-options"):
                            ties = gr.Radio(TIES, value="strict", label="A tie counts as", info=TIES_INFO,
                                            elem_classes=["named-radio"])
                            gr.Markdown(settings.limits_text(), elem_classes=["limits"])
                        with gr.Accordion("Or take an item from a dataset", open=False, visible=bool(offered)):
                            ex_dataset = gr.Dropdown(choices=dataset_choices, label="Dataset", elem_id="example-dataset",
                                                     value=offered[0] if offered else None,
                                                     allow_custom_value=typed_datasets)
                            first_configs, _ = _config_choices(offered[0] if offered else None)
                            ex_config = gr.Dropdown(label="Config", choices=first_configs, allow_custom_value=True,
                                                    value=first_configs[0] if first_configs else None)
                            ex_row = gr.Number(label="Row", value=0, precision=0, info="from 0")
                            ex_button = gr.Button("Load this item", elem_id="example-load")
                            ex_status = gr.Markdown(elem_id="example-status")
                    with gr.Column(scale=1, min_width=300, elem_classes=["score-outputs"]):
                        # plain text, not a disabled box, so screen readers read it (role=status, see HEAD)
                        verdict = gr.Markdown("Click an example above, or upload an image, type its captions and foils and "
                                              "press Score: the verdict appears here.", elem_classes=["verdict"],
                                              elem_id="verdict")
                        scores = gr.Dataframe(SCORES_EMPTY, label="Scores", interactive=False, visible=False)
                        scores_html = gr.HTML(SCORES_HTML)
                        score_note = gr.Markdown(visible=False)  # for the API: the page says it under the table
                        gr.Markdown("**What decides the verdict: the margins**")
                        chart = gr.HTML(elem_classes=["chart-block"])
                        diff = gr.HighlightedText(label="Where the texts differ", color_map=scoring.DIFF_COLORS,
                                                  show_legend=False, combine_adjacent=True)
                        with gr.Accordion("Every metric value for this item", open=False):
                            item_metrics = gr.JSON(show_label=False)
                        with gr.Accordion("About the offline model, mini-clip (its card)", open=False):
                            gr.Markdown(model_card_text())
                inputs = [image_1, image_2, captions, foils, model, ties]
                outputs = [verdict, scores, score_note, diff, chart, item_metrics, scores_html]
                # preprocess=False: uploads and every box are checked by vlprobe, in words
                score_button.click(score, inputs, outputs, api_name="score", concurrency_limit=2, concurrency_id="score",
                                   preprocess=False).then(None, js=SHOW_VERDICT)
                for box, which in ((image_1, "Image 1"), (image_2, "Image 2")):
                    box.upload(functools.partial(check_upload, which=which), box, [verdict, box],
                               api_visibility="private", preprocess=False).then(None, js=SHOW_VERDICT)
                for k, button in enumerate(gallery):
                    button.click(functools.partial(score_example, k), [gallery_keys, model, ties],
                                 [image_1, image_2, captions, foils, *outputs], api_visibility="private",
                                 concurrency_limit=2, concurrency_id="score", preprocess=False).then(
                        None, js=SHOW_VERDICT)
                model.change(update_model, model, [model_about, gallery_keys, *gallery], api_visibility="private",
                             preprocess=False, show_progress="hidden")
                demo.load(update_model, model, [model_about, gallery_keys, *gallery], api_visibility="private",
                          preprocess=False, show_progress="hidden")
                ex_dataset.change(locked, None, ex_button, js=lock_js("example-load"), queue=False,
                                  api_visibility="private", show_progress="hidden").then(
                    example_boxes, ex_dataset, [ex_config, ex_button], api_visibility="private", preprocess=False)
                ex_button.click(load_example, [ex_dataset, ex_config, ex_row],
                                [ex_status, image_1, image_2, captions, foils], api_name="load_example",
                                concurrency_limit=2, concurrency_id="examples", preprocess=False)

            with gr.Tab("Benchmark", id="benchmark"):
                if not offered:
                    gr.Markdown("No dataset is built on this Space yet, so there is nothing to benchmark here.")
                # min_width 220: on a phone each box gets its own line, its value not cut under the arrow
                with gr.Row():
                    b_dataset = gr.Dropdown(choices=dataset_choices, label="Dataset", elem_id="bench-dataset",
                                            value=offered[0] if offered else None,
                                            allow_custom_value=typed_datasets, min_width=220)
                    first_splits, _ = _split_choices(offered[0] if offered else None,
                                                     first_configs[0] if first_configs else None)
                    b_config = gr.Dropdown(label="Config", choices=first_configs, allow_custom_value=True, min_width=220,
                                           elem_id="bench-config",
                                           value=first_configs[0] if first_configs else None,
                                           info="only configs with rows in this build")
                    b_split = gr.Dropdown(label="Split", choices=first_splits, allow_custom_value=True, min_width=220,
                                          value=first_splits[0] if first_splits else None, elem_id="bench-split")
                # on a phone (CSS): Model, then the tie policy, then Items and Bootstrap resamples side by side
                with gr.Row():
                    b_model = gr.Dropdown(choices=model_choices, value=default_model, label="Model",
                                          allow_custom_value=typed_models, info=model_info, min_width=220)
                    b_ties = gr.Radio(BENCH_TIES, value="authors", label="A tie counts as", info=BENCH_TIES_INFO,
                                      elem_classes=["named-radio"], min_width=220)
                    # a number box, not a slider: a slider's box clamps a typed 5000 to its maximum without a word
                    b_items = gr.Number(value=min(100, settings.max_items()), precision=0, label="Items", min_width=150,
                                        info=f"1 to {settings.max_items():,}, sampled across the config's tags")
                    b_boot = gr.Number(value=200, precision=0, label="Bootstrap resamples", min_width=150,
                                       info=f"0 to {settings.MAX_BOOTSTRAP:,}, for 95% confidence intervals; 0: none")
                b_button = gr.Button("Run benchmark", variant="primary", elem_id="bench-run")
                b_summary = gr.Markdown("Choose a dataset and press **Run benchmark**: the chart and tables appear "
                                        "here.", elem_id="bench-summary")
                with gr.Row(elem_classes=["bench-out"]):  # on a phone (CSS): the tables first, then the chart
                    with gr.Column(min_width=300, elem_classes=["bench-chart"]):
                        gr.Markdown("**Metrics** (bars: 95% CI; dashed: chance)")
                        b_chart = gr.HTML(elem_classes=["chart-block"])
                    with gr.Column(min_width=300, elem_classes=["bench-tables"]):
                        b_metrics = gr.Dataframe(METRICS_EMPTY, label="Metrics (%)", interactive=False, visible=False)
                        b_tags = gr.Dataframe(TAGS_EMPTY, label="Per tag (%)", interactive=False, visible=False)
                        b_metrics_html = gr.HTML(METRICS_HTML)
                        b_notes = gr.HTML(elem_id="tie-notes")
                        b_tags_html = gr.HTML(TAGS_HTML)
                        with gr.Row():
                            b_download = gr.DownloadButton("Download results.json", visible=False, size="sm",
                                                           elem_id="results-download")
                            b_to_results = gr.Button("Compare in Results", visible=False, size="sm",
                                                     elem_id="to-results")
                b_file = gr.State()
                b_browse = gr.Dataframe(BROWSE_EMPTY, interactive=False, visible=False)
                b_browse_html = gr.HTML(BROWSE_HTML)
                b_state = gr.State()
                with gr.Accordion("One item at a time: its images and scores", elem_id="item-viewer"), gr.Row():
                    with gr.Column(scale=1, min_width=300):
                        b_rank = gr.Slider(1, 2, value=1, step=1, label="Item rank (1 = worst)", elem_id="item-rank")
                        b_caption = gr.Markdown(elem_id="item-caption")
                        b_item_scores = gr.Dataframe(ITEM_EMPTY, label="Item scores", interactive=False, visible=False)
                        b_item_html = gr.HTML(ITEM_HTML)
                    with gr.Column(scale=1, min_width=300):
                        with gr.Row(elem_classes=["image-pair"]):
                            b_image_1 = gr.Image(label="Item image 1", interactive=False, height=220,
                                                 buttons=["download", "fullscreen"],
                                                 elem_id="item-image-1", elem_classes=["labelled-image"], min_width=120)
                            b_image_2 = gr.Image(label="Item image 2", interactive=False, height=220,
                                                 buttons=["download", "fullscreen"],
                                                 elem_classes=["labelled-image", "second-image"], min_width=120)
                item_outputs = [b_caption, b_image_1, b_image_2, b_item_scores, b_item_html, b_rank]
                b_dataset.change(locked, None, b_button, js=lock_js("bench-run"), queue=False, api_visibility="private",
                                 show_progress="hidden").then(
                    benchmark_boxes, b_dataset, [b_config, b_split, b_button], api_visibility="private", preprocess=False)
                b_config.input(locked, None, b_button, js=lock_js("bench-run"), queue=False, api_visibility="private",
                               show_progress="hidden").then(
                    benchmark_splits, [b_dataset, b_config], [b_split, b_button], api_visibility="private",
                    preprocess=False)
                # preprocess=False: out-of-range numbers reach vlprobe, which answers in the summary
                # naming the box (Gradio's own check raised a toast and left the page "running")
                b_button.click(benchmark_running, None, b_summary, queue=False, api_visibility="private").then(
                    run_benchmark, [b_dataset, b_config, b_split, b_model, b_items, b_ties, b_boot],
                    [b_summary, b_chart, b_metrics, b_tags, b_browse, b_state, b_rank, b_metrics_html, b_tags_html,
                     b_browse_html, b_notes, b_download, b_to_results, b_file,
                     b_caption, b_image_1, b_image_2, b_item_scores, b_item_html],
                    api_name="run_benchmark", concurrency_limit=1, concurrency_id="benchmark", preprocess=False).then(
                    show_item, [b_state, b_rank], item_outputs, api_name="show_first_item", api_visibility="private",
                    preprocess=False).then(None, js=FOLD_BENCH)
                # preprocess=False: a rank out of range reaches show_item, which refuses it in words and keeps
                # the item shown (Gradio's own check would turn every output into an 'Error' badge)
                b_rank.release(show_item, [b_state, b_rank], item_outputs, api_name="show_item",
                               concurrency_limit=4, concurrency_id="browse", preprocess=False)
                b_rank.input(show_item, [b_state, b_rank], item_outputs, api_name="show_typed_item",
                             api_visibility="private", concurrency_limit=4, concurrency_id="browse",
                             trigger_mode="always_last", preprocess=False)

            with gr.Tab("Results", id="results"), gr.Column(elem_classes=["results-tab"]):
                gr.Markdown("Compare runs with each other and with the numbers the papers published (VALSE Table 2, "
                            "Winoground Table 3, BLA thesis Table 6.3, SugarCREPE's GPT-4V).")
                with gr.Row(elem_classes=["results-inputs"]):  # on a phone (CSS): under the results
                    r_files = text_too(gr.File(label="Results files", file_count="multiple", file_types=[".json"],
                                               elem_id="results-files"))
                    with gr.Column():
                        r_papers = gr.Checkbox(value=True, label="Include the papers' published numbers")
                        r_bench = gr.Dropdown(["auto", *results.PAPER_BENCHMARKS], value="auto",
                                              label="Papers' benchmark", info="auto: the first loaded benchmark with a paper")
                        r_names = gr.Textbox("", label="Run names (optional)", lines=2, elem_id="run-names",
                                             info="one per line, in the order of the files; else each run is named "
                                                  "by its file, its folder or its model and dataset")
                        r_button = gr.Button("Compare", variant="primary")
                r_note = gr.Markdown(RESULTS_START, elem_id="results-note")
                with gr.Column(elem_classes=["results-out"]):
                    r_plot = gr.HTML(label="Headline metric per config and split", elem_id="results-chart",
                                     elem_classes=["chart-block"])
                    r_table = gr.Dataframe(RUNS_EMPTY, label="Runs (%)", interactive=False, visible=False)
                    r_paper = gr.Dataframe(PAPERS_EMPTY, label="Beside the published numbers (%)", interactive=False,
                                           visible=False)
                    r_published = gr.Dataframe(PUBLISHED_EMPTY, label="Published for the runs' checkpoints (%)",
                                               interactive=False, visible=False)
                    r_paper_html = gr.HTML(PAPERS_HTML)  # the runs beside the papers first, then the runs alone
                    r_table_html = gr.HTML(RUNS_HTML)
                compare_inputs = [r_files, r_papers, r_bench, r_names]
                compare_outputs = [r_note, r_plot, r_table, r_paper, r_table_html, r_paper_html, r_published]
                bad_upload.change(refused_upload, bad_upload, [verdict, r_note], api_visibility="private",
                                  queue=False, show_progress="hidden").then(None, js=SHOW_VERDICT).then(None, js=SHOW_RESULTS)
                r_button.click(lambda: "Comparing…", None, r_note, queue=False, api_visibility="private").then(
                    compare_results, compare_inputs, compare_outputs, api_name="compare_results",
                    concurrency_limit=2, concurrency_id="results", preprocess=False).then(None, js=SHOW_RESULTS)
                b_to_results.click(send_to_results, [b_file, r_files], [r_files, tabs], api_visibility="private",
                                   preprocess=False).then(
                    compare_results, compare_inputs, compare_outputs, api_visibility="private",
                    concurrency_limit=2, concurrency_id="results", preprocess=False).then(None, js=SHOW_RESULTS)
    return demo


def gallery_labels(model):
    try:
        return [e.label for e in gallery_for(model)]
    except Exception:  # noqa: BLE001  (no gallery: the page still works)
        return []


demo = build_demo()
# One queue for the page; each kind of work has its own concurrency group (concurrency_id above), so a
# long benchmark (limit 1) never holds back scoring (limit 2).
demo.queue(max_size=64, default_concurrency_limit=2)
# Text dark enough for WCAG AA (4.5:1 on its background): help text and placeholders gray-600/500
# (the theme's gray-400 is 2.5:1), labels and the selected tab indigo-700, primary buttons white on
# indigo-600 (6.3:1; the theme's indigo-500 is 4.47:1).
# Controls' outlines (text boxes, dropdowns, number boxes, radio circles, check boxes) at 3:1 or more
# against what is around them (WCAG 1.4.11): CONTROL_EDGE is 3.7:1 on white (the theme's are 1.1-1.25:1).
CONTROL_EDGE = "#80868f"
THEME = gr.themes.Soft().set(
    block_info_text_color="#4b5563", block_info_text_color_dark="#d1d5db", body_text_color_subdued="#4b5563",
    input_border_color=CONTROL_EDGE, input_border_width="1px", input_border_color_hover="*neutral_600",
    input_border_color_focus="*primary_600", checkbox_border_color=CONTROL_EDGE, checkbox_border_width="1px",
    checkbox_border_color_hover="*neutral_600", checkbox_border_color_focus="*primary_600",
    checkbox_background_color="white",
    input_placeholder_color="#6b7280", block_title_text_color="*primary_700", block_label_text_color="*primary_700",
    color_accent="*primary_600", checkbox_label_background_fill_selected="*primary_600",
    button_primary_background_fill="*primary_600",
    button_primary_background_fill_hover="*primary_700", button_primary_text_color="white", slider_color="*primary_600")
LAUNCH = {"theme": THEME, "css": CSS, "head": HEAD, "max_file_size": HARD_UPLOAD_LIMIT, "show_error": False}

if __name__ == "__main__":
    problem = preload_default_model(SETTINGS)  # the first person to score should not wait for it
    if problem:
        print(f"vlprobe Space: the default model is not loaded: {problem}", file=sys.stderr)
    gallery_labels(SETTINGS.default_choice())  # the gallery's dataset items, read once before serving
    demo.launch(**LAUNCH)
