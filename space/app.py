"""vlprobe's Gradio Space: score a model live on foils, run a benchmark, compare results.

The page is built here; what it does lives in :mod:`vlprobe.demo` (scoring through vlprobe's
engine, verdicts and numbers from vlprobe's metric), so it can be tested without a browser. Run it
from the repository: ``python space/app.py`` (http://127.0.0.1:7860).

Endpoints (named after the functions): ``/score``, ``/load_example``, ``/run_benchmark``,
``/show_item``, ``/compare_results``. A mistake in the inputs comes back as a message in the page
(the verdict, the benchmark's status or the results note), never as a traceback.
"""

from __future__ import annotations

import functools
import os
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
from vlprobe.demo import examples, results, settings  # noqa: E402
from vlprobe.demo import score as scoring  # noqa: E402
from vlprobe.demo.models import preload_default_model  # noqa: E402
from vlprobe.demo.settings import Settings, SpaceError  # noqa: E402

SETTINGS = Settings(root=ROOT)
EXAMPLE_DIR = Path(tempfile.mkdtemp(prefix="vlprobe-space-examples-"))
MAX_UPLOAD = f"{settings.max_upload_bytes() // (1024 * 1024)}mb"

PAPERS = ("[VALSE](https://aclanthology.org/2022.acl-long.567/) · "
          "[Winoground](https://arxiv.org/abs/2204.03162) · "
          "[BLA](https://aclanthology.org/2023.emnlp-main.356/) · "
          "[TraVLR](https://aclanthology.org/2023.eacl-main.242/)")

CSS = """
.verdict textarea, .verdict input { font-weight: 600; font-size: 1.05em; }
.verdict-right textarea { background: #e6f4ea !important; color: #0b5d1e !important; border-left: 6px solid #2ca02c !important; }
.verdict-wrong textarea { background: #fde8e8 !important; color: #8a1c1c !important; border-left: 6px solid #d62728 !important; }
.verdict-mixed textarea { background: #fff4e0 !important; color: #7a4a00 !important; border-left: 6px solid #ff9f1c !important; }
.verdict-error textarea { background: #f3f3f3 !important; color: #8a1c1c !important; border-left: 6px solid #888 !important; }
/* image and chart labels sit above the picture, never on it */
.labelled-image { height: auto !important; }
.labelled-image img { max-height: 200px !important; object-fit: contain !important; }
.labelled-image [data-testid="block-label"] { position: static !important; margin-bottom: 4px; box-shadow: none; }
.compact-table table { font-size: 0.9em; }
.compact-table td, .compact-table th { padding: 2px 6px !important; }
.gallery-row button { min-width: 0 !important; }
.results-svg svg { max-width: 100%; height: auto; }
/* an item with one image: no empty second slot */
.second-image:not(:has(img)) { display: none !important; }
.compact-table th, .compact-table td { word-break: normal !important; overflow-wrap: break-word !important; }
.score-table td:nth-child(n+3), .score-table td:nth-child(n+3) * { white-space: nowrap !important; }
@media (max-width: 640px) {
  .compact-table table { table-layout: fixed !important; width: 100% !important; min-width: 0 !important; }
  .compact-table th, .compact-table td { min-width: 0 !important; }
  .compact-table th, .compact-table td, .compact-table th *, .compact-table td * { font-size: 11.5px !important; }
  .compact-table td, .compact-table th { padding: 2px 3px !important; }
}
"""


# After scoring: colour the verdict by what it says (right / wrong / mixed / an error), and bring it
# to the top of the screen when it is out of sight (on a phone it sits below the inputs).
SHOW_VERDICT = """async () => {
  await new Promise(r => setTimeout(r, 60));
  const el = document.querySelector('.verdict');
  if (!el) return;
  const text = (el.querySelector('textarea') || {}).value || '';
  const kind = /^CORRECT/.test(text) ? 'right' : /^WRONG/.test(text) ? 'wrong'
             : /^(MIXED|PARTLY)/.test(text) ? 'mixed' : /^Cannot/.test(text) ? 'error' : '';
  el.classList.remove('verdict-right', 'verdict-wrong', 'verdict-mixed', 'verdict-error');
  if (kind) el.classList.add('verdict-' + kind);
  const r = el.getBoundingClientRect();
  if (r.top < 0 || r.bottom > window.innerHeight) el.scrollIntoView({block: 'start', behavior: 'instant'});
}"""


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


SCORE_WIDTHS = ["38%", "24%", "18%", "20%"]
SCORES_EMPTY = placeholder(["text", "role", "score", "margin"], "score an item to see each text's score")
METRICS_EMPTY = placeholder(["metric", "value", "CI low", "CI high", "chance"], "run a benchmark")
TAGS_EMPTY = placeholder(["tag", "items"], "run a benchmark")
BROWSE_EMPTY = placeholder(["rank", "margin", "texts", "tags", "id"], "run a benchmark to list its items")
ITEM_EMPTY = placeholder(["text", "role", "score", "margin"], "run a benchmark, then pick an item")
RUNS_EMPTY = placeholder(["benchmark", "config", "split", "metric"], "load results files and press Compare")
PAPERS_EMPTY = placeholder(["system", "source"], "no published numbers to show")


# ---- Score ----------------------------------------------------------------------------------------

def _score_failed(message):
    return f"Cannot score: {message}", SCORES_EMPTY, "", None, None, None


@_inline_errors(_score_failed)
def score(image_1, image_2, captions, foils, model):
    """Score one item: (verdict, scores table, what a score is, differing words, margin chart, metrics)."""
    out = scoring.score(SETTINGS, image_1, image_2, captions, foils, model)
    return out.verdict, _table(out.headers, out.table), out.note, out.highlights, out.chart, out.metrics


def gallery_example(index):
    return examples.gallery_example(index, EXAMPLE_DIR)


def _example_failed(message):
    return f"⚠️ {message}", gr.skip(), gr.skip(), gr.skip(), gr.skip()


@_inline_errors(_example_failed)
def load_example(dataset, config, row):
    """Fill the Score tab from one row of a built dataset folder."""
    image_1, image_2, captions, foils = examples.example_fields(SETTINGS, dataset, config, row)
    return "", image_1, image_2, captions, foils


def _dropdown_failed(message):
    return gr.Dropdown(choices=[], value=None, info=f"⚠️ {message}")


@_inline_errors(_dropdown_failed)
def list_configs(dataset):
    configs = examples.dataset_configs(SETTINGS, dataset) if dataset else []
    return gr.Dropdown(choices=configs, value=configs[0] if configs else None, info=None)


@_inline_errors(_dropdown_failed)
def list_splits(dataset, config):
    splits = examples.dataset_splits(SETTINGS, dataset, config) if dataset and config else []
    return gr.Dropdown(choices=splits, value=splits[0] if splits else None, info=None)


# ---- Benchmark ------------------------------------------------------------------------------------

def _benchmark_failed(message):
    return (f"⚠️ **Cannot run the benchmark:** {message}", None, METRICS_EMPTY, TAGS_EMPTY, BROWSE_EMPTY, None,
            gr.skip())


@_inline_errors(_benchmark_failed)
def run_benchmark(dataset, config, split, model, n_items, ties, bootstrap, progress=gr.Progress(track_tqdm=True)):
    """Score the first N items of a config: summary, chart, metrics, per-tag table, items worst first."""
    out = bench.run_benchmark(SETTINGS, dataset, config, split, model, n_items, ties, bootstrap,
                              progress=lambda frac, desc: progress(frac, desc=desc))
    return (out.summary, out.chart, _table(out.metric_headers, out.metric_rows),
            _table(out.tag_headers, out.tag_rows) if out.tag_rows else TAGS_EMPTY,
            _table(out.browse_headers, out.browse_rows),
            out, gr.Slider(minimum=1, maximum=max(2, len(out.browse_rows)), value=1, step=1, interactive=True))


def _item_failed(message):
    return f"⚠️ {message}", gr.skip(), gr.skip(), gr.skip()


@_inline_errors(_item_failed)
def show_item(outcome, rank):
    """One benchmark item by rank (1 = worst mistake): description, its (first two) images, scores."""
    images, headers, rows, caption = bench.browse_item(outcome, rank)
    if len(images) > 2:
        caption += f" (images 1-2 of {len(images)} shown)"
    return caption, images[0], images[1] if len(images) > 1 else None, _table(headers, rows)


# ---- Results --------------------------------------------------------------------------------------

def _results_failed(message):
    return f"⚠️ **Cannot compare:** {message}", "", RUNS_EMPTY, PAPERS_EMPTY


@_inline_errors(_results_failed)
def compare_results(files, include_papers, benchmark):
    """Results files side by side, beside the papers' published numbers, with a chart."""
    out = results.compare_results(files, include_papers, benchmark)
    chart = "" if out.chart is None else f'<div class="results-svg">{results.chart_svg(out.chart)}</div>'
    return (out.note, chart, _table(out.headers, out.rows) if out.rows else RUNS_EMPTY,
            _table(out.paper_headers, out.paper_rows) if out.paper_rows else PAPERS_EMPTY)


# ---- the page -------------------------------------------------------------------------------------

INTRO = f"""# vlprobe: does the model see what changed?
Score a vision-and-language model on an image against a true caption and **foils**, captions with
one thing changed, as the {PAPERS} benchmarks do. Pick an example below, or upload your own image."""


def model_card_text() -> str:
    card = ROOT / settings.DEFAULT_MODEL / "README.md"
    if not card.is_file():
        return "The default model is not in this copy of the Space."
    text = card.read_text(encoding="utf-8")
    if text.startswith("---"):
        text = text.split("---", 2)[2]
    return text.strip()


def build_demo() -> gr.Blocks:
    offered = SETTINGS.dataset_folders()
    dataset_choices = [(Path(d).name, d) for d in offered]
    custom_datasets = not os.environ.get(settings.ENV_DATASETS, "").strip()
    custom_models = settings.allowed_models() is None
    model_info = ("the small CLIP vlprobe ships, or type a model id from the Hugging Face Hub"
                  if custom_models else "the models this Space allows")

    with gr.Blocks(title="vlprobe") as demo:
        gr.Markdown(INTRO)
        with gr.Tab("Score"):
            with gr.Row(elem_classes=["gallery-row"]):
                gallery = [gr.Button(label, size="sm", variant="secondary") for label in examples.gallery_labels()]
            with gr.Row():
                with gr.Column(scale=1, min_width=300):
                    with gr.Row():
                        image_1 = gr.Image(label="Image 1", type="filepath", image_mode=None, height=200,
                                           sources=["upload", "clipboard"], elem_classes=["labelled-image"], min_width=120)
                        image_2 = gr.Image(label="Image 2 (optional)", type="filepath", image_mode=None, height=200,
                                           sources=["upload", "clipboard"], elem_classes=["labelled-image"], min_width=120)
                    captions = gr.Textbox(label="Captions", lines=2, placeholder="a red circle left of a blue square",
                                          info="one per line, true of image 1; with two images, line 2 is true of image 2")
                    foils = gr.Textbox(label="Foils", lines=2, placeholder="a blue circle left of a red square",
                                       info="one per line: texts that do not describe the image")
                    model = gr.Dropdown(choices=settings.model_choices(), value=settings.DEFAULT_MODEL, label="Model",
                                        allow_custom_value=custom_models, info=model_info)
                    score_button = gr.Button("Score", variant="primary")
                    gr.Markdown(settings.limits_text(), elem_classes=["limits"])
                    with gr.Accordion("Or take an item from a dataset", open=False, visible=bool(offered)):
                        ex_dataset = gr.Dropdown(choices=dataset_choices, label="Dataset",
                                                 value=offered[0] if offered else None,
                                                 allow_custom_value=custom_datasets)
                        ex_config = gr.Dropdown(label="Config", choices=[], allow_custom_value=True)
                        ex_row = gr.Number(label="Row", value=0, precision=0, minimum=0)
                        ex_button = gr.Button("Load this item")
                        ex_status = gr.Markdown()
                with gr.Column(scale=1, min_width=300):
                    verdict = gr.Textbox(label="Verdict", interactive=False, lines=2,
                                         elem_classes=["verdict"], placeholder="the verdict appears here")
                    scores = gr.Dataframe(SCORES_EMPTY, label="Scores", interactive=False, wrap=True, column_widths=SCORE_WIDTHS,
                                          elem_id="scores", elem_classes=["compact-table", "score-table"])
                    score_note = gr.Markdown()
                    chart = gr.Plot(label="What decides the verdict: the margins", format="png", show_label=True,
                                    elem_classes=["labelled-image"])
                    diff = gr.HighlightedText(label="Where the texts differ", color_map=scoring.DIFF_COLORS,
                                              show_legend=False, combine_adjacent=True)
                    with gr.Accordion("Every metric value for this item", open=False):
                        item_metrics = gr.JSON(show_label=False)
                    with gr.Accordion("About the default model (its card)", open=False):
                        gr.Markdown(model_card_text())
            inputs = [image_1, image_2, captions, foils, model]
            outputs = [verdict, scores, score_note, diff, chart, item_metrics]
            score_button.click(score, inputs, outputs, api_name="score", concurrency_limit=2, concurrency_id="score",
                               preprocess=False).then(None, js=SHOW_VERDICT)  # uploads are checked by vlprobe
            for k, button in enumerate(gallery):
                button.click(functools.partial(gallery_example, k), None, [image_1, image_2, captions, foils],
                             api_visibility="private").then(
                    score, inputs, outputs, api_visibility="private", concurrency_limit=2, concurrency_id="score",
                    preprocess=False).then(None, js=SHOW_VERDICT)
            ex_dataset.change(list_configs, ex_dataset, ex_config, api_visibility="private")
            ex_button.click(load_example, [ex_dataset, ex_config, ex_row], [ex_status, image_1, image_2, captions, foils],
                            api_name="load_example", concurrency_limit=2, concurrency_id="examples")
            demo.load(list_configs, ex_dataset, ex_config, api_visibility="private")

        with gr.Tab("Benchmark"):
            if not offered:
                gr.Markdown("No dataset is built on this Space yet, so there is nothing to benchmark here.")
            with gr.Row():
                b_dataset = gr.Dropdown(choices=dataset_choices, label="Dataset", value=offered[0] if offered else None,
                                        allow_custom_value=custom_datasets)
                b_config = gr.Dropdown(label="Config", choices=[], allow_custom_value=True)
                b_split = gr.Dropdown(label="Split", choices=[], allow_custom_value=True)
            with gr.Row():
                b_model = gr.Dropdown(choices=settings.model_choices(), value=settings.DEFAULT_MODEL, label="Model",
                                      allow_custom_value=custom_models, info=model_info)
                b_items = gr.Slider(1, settings.max_items(), value=min(100, settings.max_items()), step=1,
                                    label="Items (the first N rows)")
                b_ties = gr.Radio(["strict", "half", "lenient"], value="strict", label="A tie counts as",
                                  info="strict: wrong (as the papers); half: half right; lenient: right")
                b_boot = gr.Number(value=200, precision=0, minimum=0, maximum=settings.MAX_BOOTSTRAP,
                                   label="Bootstrap resamples", info="for the 95% confidence intervals; 0: none")
            b_button = gr.Button("Run benchmark", variant="primary")
            b_summary = gr.Markdown("Choose a dataset and press **Run benchmark**: the chart and tables appear here.")
            with gr.Row():
                b_chart = gr.Plot(label="Metrics (bars: 95% CI; dashed: chance)", format="png",
                                  elem_classes=["labelled-image"])
                with gr.Column():
                    b_metrics = gr.Dataframe(METRICS_EMPTY, label="Metrics (%)", interactive=False,
                                             elem_classes=["compact-table"])
                    b_tags = gr.Dataframe(TAGS_EMPTY, label="Per tag (%)", interactive=False,
                                          elem_classes=["compact-table"])
            b_browse = gr.Dataframe(BROWSE_EMPTY, column_widths=["12%", "14%", "44%", "16%", "14%"], label="Items, worst first (margin: lowest true score minus highest wrong "
                                          "score; 0 or less is a mistake)", interactive=False, max_height=320,
                                    wrap=True, elem_classes=["compact-table"])
            b_state = gr.State()
            with gr.Row():
                with gr.Column(scale=1, min_width=300):
                    b_rank = gr.Slider(1, 2, value=1, step=1, label="Item rank (1 = worst)", elem_id="item-rank")
                    b_caption = gr.Markdown()
                    b_item_scores = gr.Dataframe(ITEM_EMPTY, label="Item scores", interactive=False, wrap=True,
                                                 column_widths=SCORE_WIDTHS,
                                                 elem_classes=["compact-table", "score-table"])
                with gr.Column(scale=1, min_width=300):
                    with gr.Row():
                        b_image_1 = gr.Image(label="Item image 1", interactive=False, height=240, elem_id="item-image-1",
                                             elem_classes=["labelled-image"], min_width=120)
                        b_image_2 = gr.Image(label="Item image 2", interactive=False, height=240,
                                             elem_classes=["labelled-image", "second-image"], min_width=120)
            item_outputs = [b_caption, b_image_1, b_image_2, b_item_scores]
            b_dataset.change(list_configs, b_dataset, b_config, api_visibility="private")
            b_config.change(list_splits, [b_dataset, b_config], b_split, api_visibility="private")
            b_button.click(run_benchmark, [b_dataset, b_config, b_split, b_model, b_items, b_ties, b_boot],
                           [b_summary, b_chart, b_metrics, b_tags, b_browse, b_state, b_rank],
                           api_name="run_benchmark", concurrency_limit=1, concurrency_id="benchmark").success(
                show_item, [b_state, b_rank], item_outputs, api_name="show_first_item", api_visibility="private")
            b_rank.release(show_item, [b_state, b_rank], item_outputs, api_name="show_item",
                           concurrency_limit=4, concurrency_id="browse")
            b_rank.input(show_item, [b_state, b_rank], item_outputs, api_name="show_typed_item", api_visibility="private",
                         concurrency_limit=4, concurrency_id="browse", trigger_mode="always_last")
            demo.load(list_configs, b_dataset, b_config, api_visibility="private")

        with gr.Tab("Results"):
            gr.Markdown("Load results files written by vlprobe (`results.json`) to compare runs with each other and "
                        "with the numbers the papers published (VALSE Table 2, Winoground Table 3, BLA thesis "
                        "Table 6.3).")
            with gr.Row():
                r_files = gr.File(label="Results files", file_count="multiple", file_types=[".json"],
                                  elem_id="results-files")
                with gr.Column():
                    r_papers = gr.Checkbox(value=True, label="Include the papers' published numbers")
                    r_bench = gr.Dropdown(["auto", "valse", "winoground", "bla"], value="auto",
                                          label="Papers' benchmark", info="auto: the first loaded benchmark with a paper")
                    r_button = gr.Button("Compare", variant="primary")
            r_note = gr.Markdown("Load files and press **Compare**, or press it alone to see the papers' numbers.")
            r_plot = gr.HTML(label="Headline metric per config and split", elem_id="results-chart")
            r_table = gr.Dataframe(RUNS_EMPTY, label="Runs (%)", interactive=False, wrap=True,
                                   elem_classes=["compact-table"])
            r_paper = gr.Dataframe(PAPERS_EMPTY, label="Beside the published numbers (%)", interactive=False,
                                   wrap=True, elem_classes=["compact-table"])
            r_button.click(compare_results, [r_files, r_papers, r_bench], [r_note, r_plot, r_table, r_paper],
                           api_name="compare_results", concurrency_limit=2, concurrency_id="results")
    return demo


demo = build_demo()
# One queue for the page; each kind of work has its own concurrency group (concurrency_id above), so a
# long benchmark (limit 1) never holds back scoring (limit 2).
demo.queue(max_size=64, default_concurrency_limit=2)
LAUNCH = {"theme": gr.themes.Soft(), "css": CSS, "max_file_size": MAX_UPLOAD, "show_error": False}

if __name__ == "__main__":
    problem = preload_default_model(SETTINGS)  # the first person to score should not wait for it
    if problem:
        print(f"vlprobe Space: the default model is not loaded: {problem}", file=sys.stderr)
    demo.launch(**LAUNCH)
