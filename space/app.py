"""vlprobe's Gradio Space: score a model live on foils, run a benchmark, compare results.

The page is built here; what it does lives in :mod:`vlprobe.space_logic` (scoring through
vlprobe's engine, verdicts and numbers from vlprobe's metric), so it can be tested without a
browser. Run it from the repository: ``python space/app.py`` (http://127.0.0.1:7860).

Endpoints (named after the functions, as Gradio 6 does): ``/score``, ``/load_example``,
``/run_benchmark``, ``/show_item``, ``/compare_results``.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# vlprobe is found beside this file (a Space pushed with the package copied in) or one level up
# (this repository); an installed vlprobe works too.
for _root in (HERE, HERE.parent):
    if (_root / "vlprobe" / "__init__.py").is_file() and str(_root) not in sys.path:
        sys.path.insert(0, str(_root))
        break

import functools  # noqa: E402

import gradio as gr  # noqa: E402

from vlprobe import space_logic as logic  # noqa: E402

MAX_UPLOAD = f"{logic.max_upload_bytes() // (1024 * 1024)}mb"


def _page_errors(fn):
    """Every failure becomes a gr.Error with a readable message: SpaceError and ValueError as they
    are written; anything unexpected as its type and first line, never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except gr.Error:
            raise
        except (logic.SpaceError, ValueError, FileNotFoundError) as err:
            raise gr.Error(str(err)) from None
        except Exception as err:  # noqa: BLE001  (the page must never show a traceback)
            first = (str(err).strip().splitlines() or [""])[0][:300]
            raise gr.Error(f"Something went wrong ({type(err).__name__}: {first}).") from None

    return wrapper


# ---- handlers: thin wrappers around vlprobe.space_logic ------------------------------------------

@_page_errors
def score(image_1, image_2, captions, foils, model):
    """Score one item: (verdict, scores table, highlighted differences, bar chart, metrics)."""
    out = logic.score(image_1, image_2, captions, foils, model)
    table = {"headers": out.headers, "data": out.table}
    return out.verdict, table, out.highlights, out.chart, out.metrics


@_page_errors
def load_example(dataset, config, row):
    """Fill the Score tab from one row of a built dataset folder."""
    image_1, image_2, captions, foils = logic.example_fields(dataset, config, row)
    return image_1, image_2, captions, foils


@_page_errors
def list_configs(dataset):
    configs = logic.dataset_configs(dataset) if dataset else []
    return gr.Dropdown(choices=configs, value=configs[0] if configs else None)


@_page_errors
def list_splits(dataset, config):
    splits = logic.dataset_splits(dataset, config) if dataset and config else []
    return gr.Dropdown(choices=splits, value=splits[0] if splits else None)


@_page_errors
def run_benchmark(dataset, config, split, model, n_items, ties, bootstrap, progress=gr.Progress(track_tqdm=True)):
    """Score the first N items of a config: summary, metrics, per-tag table, items worst first."""
    out = logic.benchmark(dataset, config, split, model, n_items, ties, bootstrap,
                          progress=lambda frac, desc: progress(frac, desc=desc))
    return (
        out.summary,
        {"headers": out.metric_headers, "data": out.metric_rows},
        {"headers": out.tag_headers, "data": out.tag_rows},
        {"headers": out.browse_headers, "data": out.browse_rows},
        out,
        gr.Slider(minimum=1, maximum=max(2, len(out.browse_rows)), value=1, step=1, interactive=True),
    )


@_page_errors
def show_item(outcome, rank):
    """One benchmark item by rank (1 = worst mistake): its (first two) images, scores, description."""
    images, headers, rows, caption = logic.browse_item(outcome, rank)
    second = images[1] if len(images) > 1 else None
    if len(images) > 2:
        caption += f" (images 1-2 of {len(images)} shown)"
    return images[0], second, {"headers": headers, "data": rows}, caption


@_page_errors
def compare_results(files, include_papers, benchmark):
    """results.json files side by side, beside the papers' published numbers, with a plot."""
    out = logic.compare_results(files, include_papers, benchmark)
    return ({"headers": out.headers, "data": out.rows}, {"headers": out.paper_headers, "data": out.paper_rows},
            out.chart, out.note)


# ---- the page -----------------------------------------------------------------------------------

INTRO = """# vlprobe: probe vision-and-language models with foils
Score a model on an image and a caption against **foils** (captions with one thing changed), as in
VALSE, Winoground and BLA. The verdict comes from the same metric as `vlprobe evaluate`:
*pairwise* for one caption and one foil, *set* for several captions or foils, *group* for two
images with two captions (Winoground)."""


def build_demo() -> gr.Blocks:
    datasets_offered = logic.dataset_folders()
    dataset_choices = [(Path(d).name, d) for d in datasets_offered]
    custom_datasets = not logic.os.environ.get(logic.ENV_DATASETS, "").strip()
    custom_models = logic.allowed_models() is None
    model_info = ("the shipped small CLIP by default; or a Hub model id or a local folder"
                  if custom_models else "models allowed on this Space")

    with gr.Blocks(title="vlprobe") as demo:
        gr.Markdown(INTRO)
        with gr.Tab("Score"):
            with gr.Row():
                with gr.Column():
                    with gr.Row():
                        image_1 = gr.Image(label="Image 1", type="filepath", image_mode=None,
                                           sources=["upload", "clipboard"], height=220)
                        image_2 = gr.Image(label="Image 2 (optional, for a 2 x 2 Winoground-style item)",
                                           type="filepath", image_mode=None, sources=["upload", "clipboard"],
                                           height=220)
                    captions = gr.Textbox(label="Captions", lines=2, placeholder="a red circle left of a blue square",
                                          info="one per line: true descriptions of image 1; with two images, "
                                               "line 1 describes image 1 and line 2 describes image 2")
                    foils = gr.Textbox(label="Foils", lines=3, placeholder="a blue circle left of a red square",
                                       info="one per line: texts that do not describe the image")
                    model = gr.Dropdown(choices=logic.model_choices(), value=logic.DEFAULT_MODEL, label="Model",
                                        allow_custom_value=custom_models, info=model_info)
                    score_button = gr.Button("Score", variant="primary")
                    with gr.Accordion("Pick an example from a built dataset folder", open=False):
                        ex_dataset = gr.Dropdown(choices=dataset_choices, label="Dataset folder",
                                                 value=datasets_offered[0] if datasets_offered else None,
                                                 allow_custom_value=custom_datasets)
                        ex_config = gr.Dropdown(label="Config", choices=[], allow_custom_value=True)
                        ex_row = gr.Number(label="Row", value=0, precision=0, minimum=0)
                        ex_button = gr.Button("Load example")
                with gr.Column():
                    verdict = gr.Textbox(label="Verdict", interactive=False)
                    scores = gr.Dataframe(label="Scores", interactive=False,
                                          headers=["image", "text", "role", "score"])
                    diff = gr.HighlightedText(label="Where the texts differ", color_map=logic.DIFF_COLORS,
                                              show_legend=False, combine_adjacent=True)
                    chart = gr.BarPlot(x="text", y="score", color="role", label="Scores",
                                       color_map={"caption": "#2ca02c", "foil": "#d62728"}, x_label_angle=-30,
                                       sort=None, height=280)
                    with gr.Accordion("The metric on this item", open=False):
                        item_metrics = gr.JSON(label="valse_metric output")
            score_button.click(score, [image_1, image_2, captions, foils, model],
                               [verdict, scores, diff, chart, item_metrics],
                               api_name="score", concurrency_limit=2, concurrency_id="score",
                               preprocess=False)  # uploads are checked by vlprobe, not decoded by Gradio
            ex_dataset.change(list_configs, ex_dataset, ex_config, api_visibility="private")
            ex_button.click(load_example, [ex_dataset, ex_config, ex_row], [image_1, image_2, captions, foils],
                            api_name="load_example", concurrency_limit=2, concurrency_id="examples")

        with gr.Tab("Benchmark"):
            with gr.Row():
                b_dataset = gr.Dropdown(choices=dataset_choices, label="Dataset folder",
                                        value=datasets_offered[0] if datasets_offered else None,
                                        allow_custom_value=custom_datasets,
                                        info="built with `vlprobe build travlr` / `vlprobe build winoground_style`")
                b_config = gr.Dropdown(label="Config", choices=[], allow_custom_value=True)
                b_split = gr.Dropdown(label="Split", choices=[], allow_custom_value=True)
            with gr.Row():
                b_model = gr.Dropdown(choices=logic.model_choices(), value=logic.DEFAULT_MODEL, label="Model",
                                      allow_custom_value=custom_models, info=model_info)
                b_items = gr.Slider(1, logic.max_items(), value=min(100, logic.max_items()), step=1,
                                    label="Number of items (the first N rows)")
                b_ties = gr.Radio(["strict", "half", "lenient"], value="strict", label="Ties")
                b_boot = gr.Number(value=200, precision=0, minimum=0, maximum=2000, label="Bootstrap resamples")
            b_button = gr.Button("Run benchmark", variant="primary")
            b_summary = gr.Markdown(label="Summary")
            with gr.Row():
                b_metrics = gr.Dataframe(label="Metrics (with CIs and chance levels)", interactive=False)
                b_tags = gr.Dataframe(label="Per tag", interactive=False)
            b_browse = gr.Dataframe(label="Items, worst mistakes first (margin: lowest true score minus highest "
                                          "foil score; at most 0 is a mistake)", interactive=False, max_height=320)
            b_state = gr.State()
            with gr.Row():
                with gr.Column(scale=1):
                    b_rank = gr.Slider(1, 2, value=1, step=1, label="Item rank (1 = worst)")
                    b_caption = gr.Markdown(label="Item")
                    b_item_scores = gr.Dataframe(label="Item scores", interactive=False)
                with gr.Column(scale=1):
                    with gr.Row():
                        b_image_1 = gr.Image(label="Item image 1", interactive=False, height=260)
                        b_image_2 = gr.Image(label="Item image 2", interactive=False, height=260)
            b_dataset.change(list_configs, b_dataset, b_config, api_visibility="private")
            b_config.change(list_splits, [b_dataset, b_config], b_split, api_visibility="private")
            b_button.click(run_benchmark, [b_dataset, b_config, b_split, b_model, b_items, b_ties, b_boot],
                           [b_summary, b_metrics, b_tags, b_browse, b_state, b_rank],
                           api_name="run_benchmark", concurrency_limit=1, concurrency_id="benchmark").success(
                show_item, [b_state, b_rank], [b_image_1, b_image_2, b_item_scores, b_caption], api_name="show_first_item",
                api_visibility="private")
            b_rank.release(show_item, [b_state, b_rank], [b_image_1, b_image_2, b_item_scores, b_caption],
                           api_name="show_item", concurrency_limit=4, concurrency_id="browse")

        with gr.Tab("Results"):
            gr.Markdown("Load `results.json` files written by `vlprobe evaluate` and compare them, and with the "
                        "numbers the papers published (VALSE Table 2, Winoground Table 3, BLA thesis Table 6.3).")
            with gr.Row():
                r_files = gr.File(label="results.json files", file_count="multiple", file_types=[".json"],
                                  elem_id="results-files")
                with gr.Column():
                    r_papers = gr.Checkbox(value=True, label="Include the papers' published numbers")
                    r_bench = gr.Dropdown(["auto", "valse", "winoground", "bla"], value="auto",
                                          label="Papers' benchmark",
                                          info="auto: the first loaded benchmark the papers report on")
                    r_button = gr.Button("Compare", variant="primary")
            r_note = gr.Markdown(label="Note")
            r_plot = gr.Plot(label="Headline metric per config")
            r_table = gr.Dataframe(label="Runs (%)", interactive=False)
            r_paper = gr.Dataframe(label="Beside the published numbers (%)", interactive=False)
            r_button.click(compare_results, [r_files, r_papers, r_bench], [r_table, r_paper, r_plot, r_note],
                           api_name="compare_results", concurrency_limit=2, concurrency_id="results")

        # Fill the dataset dropdowns' configs when the page opens.
        demo.load(list_configs, ex_dataset, ex_config, api_visibility="private")
        demo.load(list_configs, b_dataset, b_config, api_visibility="private")
    return demo


demo = build_demo()
# One queue for the page; each kind of work has its own concurrency group (concurrency_id above), so a
# long benchmark (limit 1) never holds back scoring (limit 2).
demo.queue(max_size=64, default_concurrency_limit=2)

if __name__ == "__main__":
    problem = logic.preload_default_model()  # the first person to score should not wait for it
    if problem:
        print(f"vlprobe Space: the default model is not loaded: {problem}", file=sys.stderr)
    demo.launch(theme=gr.themes.Soft(), max_file_size=MAX_UPLOAD, show_error=False)
