"""The metric Space: paste score and gold matrices, see VALSE / Winoground / BLA metrics.

evaluate's own ``launch_gradio_widget`` is broken with Gradio >= 4 (it uses ``gr.inputs``), so this
is a small Gradio 6 app of our own. It loads the metric with ``evaluate.load`` from the file beside
it, so it runs the same in the vlprobe repository and when ``metric/`` is pushed alone as a Space;
it imports nothing from vlprobe.

Run it: ``python metric/app.py`` (then open http://127.0.0.1:7860). The computation is also an API
endpoint, ``/compute`` (inputs: predictions JSON, references JSON, ties, threshold, probabilities
JSON, tags JSON, bootstrap, confidence, seed; outputs: a metrics table, a per-tag table, the raw
result as JSON).
"""

from __future__ import annotations

import inspect
import json
import math
import threading
from pathlib import Path
from typing import Any

import evaluate
import gradio as gr

HERE = Path(__file__).resolve().parent
METRIC_FILE = HERE / "valse_metric.py"

# A shared Space must not be tied up by one request: cap what one request may ask for.
MAX_JSON_CHARS = 2_000_000
MAX_BOOTSTRAP = 5_000
TABLE_HEADERS = ["metric", "value", "chance", "ci_low", "ci_high"]

_metric = None
# One evaluate.Metric object serves every request; its compute() keeps per-call state, so calls take turns.
_lock = threading.Lock()


def load_metric():
    """The evaluate module, loaded once per process from ``valse_metric.py`` beside this file
    (kept in memory: nothing is written to the evaluate cache on a Space)."""
    global _metric
    if _metric is None:
        _metric = evaluate.load(str(METRIC_FILE), keep_in_memory=True)
    return _metric


def metric_order() -> tuple[str, ...]:
    """The metrics in the order tables show them: the metric module's own list (``METRIC_KEYS``)."""
    return _declared("METRIC_KEYS")


def tie_policies() -> tuple[str, ...]:
    """The tie policies: the metric module's own list (``TIE_POLICIES``)."""
    return _declared("TIE_POLICIES")


def _declared(name: str) -> tuple[str, ...]:
    names: tuple[str, ...] = getattr(inspect.getmodule(type(load_metric())), name)
    return names


def _parse(text: str | None, name: str, *, required: bool) -> Any:
    text = (text or "").strip()
    if not text:
        if required:
            raise gr.Error(f"{name}: this field is empty; paste a JSON list with one matrix per item.")
        return None
    if len(text) > MAX_JSON_CHARS:
        raise gr.Error(f"{name}: {len(text):,} characters is more than this Space accepts ({MAX_JSON_CHARS:,}); "
                       "run the metric locally with evaluate.load for large inputs.")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise gr.Error(f"{name}: not valid JSON ({err.msg} at line {err.lineno}, column {err.colno}).") from None
    if not isinstance(value, list) or not value:
        raise gr.Error(f"{name}: expected a non-empty JSON list (one entry per item), got {type(value).__name__}.")
    return value


def _plain(value: Any) -> Any:
    """The result with numpy scalars and arrays made JSON-friendly (NaN becomes None)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist"):
        return _plain(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _fmt(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (int, float)):
        return f"{100 * float(value):.2f}%"
    return str(value)


def metrics_table(result: dict) -> list[list[str]]:
    """One row per metric present in ``result``: value, chance level and CI, as percentages."""
    chance = result.get("chance") or {}
    ci = result.get("ci") or {}
    rows = []
    order = metric_order()
    for key in [k for k in order if k in result] + [k for k in result if k not in order]:
        value = result[key]
        if not isinstance(value, (int, float)) or key in ("n_items", "n_ties"):
            continue
        low, high = (ci.get(key) or (None, None))[:2]
        rows.append([key, _fmt(value), _fmt(chance.get(key)), _fmt(low), _fmt(high)])
    return rows


def tag_table(result: dict) -> tuple[list[str], list[list[str]]]:
    per_tag = result.get("per_tag") or {}
    keys = [k for k in metric_order() if any(k in r for r in per_tag.values())]
    rows = [[tag, str(r.get("n_items", ""))] + [_fmt(r.get(k)) for k in keys] for tag, r in per_tag.items()]
    return ["tag", "n_items", *keys], rows


def compute(
    predictions: str,
    references: str,
    ties: str = "strict",
    threshold: float = 0.5,
    probabilities: str = "",
    tags: str = "",
    bootstrap: float = 0,
    confidence: float = 0.95,
    seed: float = 0,
):
    """Compute the metrics for pasted JSON matrices; every bad input becomes a readable gr.Error."""
    preds = _parse(predictions, "Scores (predictions)", required=True)
    refs = _parse(references, "Gold (references)", required=True)
    probs = _parse(probabilities, "Probabilities", required=False)
    tag_lists = _parse(tags, "Tags", required=False)
    if len(preds) != len(refs):
        raise gr.Error(f"{len(preds)} score matrices but {len(refs)} gold matrices: give one of each per item.")
    if ties not in tie_policies():
        raise gr.Error(f"Ties must be one of {', '.join(tie_policies())}, got {ties!r}.")
    try:
        n_boot = int(bootstrap or 0)
        conf = float(confidence)
        thr = float(threshold)
        seed_int = int(seed or 0)
    except (TypeError, ValueError):
        raise gr.Error("Bootstrap, seed, confidence and threshold must be numbers.") from None
    if not 0 <= n_boot <= MAX_BOOTSTRAP:
        raise gr.Error(f"Bootstrap resamples must be between 0 and {MAX_BOOTSTRAP} on this Space, got {n_boot}.")
    if not 0 < conf < 1:
        raise gr.Error(f"Confidence must be between 0 and 1 (e.g. 0.95), got {conf}.")
    kwargs: dict[str, Any] = {"ties": ties, "threshold": thr}
    if probs is not None:
        kwargs["probabilities"] = probs
    if tag_lists is not None:
        if len(tag_lists) != len(preds):
            raise gr.Error(f"Tags: {len(tag_lists)} entries for {len(preds)} items; give one list of tags per item.")
        kwargs["tags"] = [[t] if isinstance(t, str) else t for t in tag_lists]
    if n_boot:
        kwargs.update(bootstrap=n_boot, confidence=conf, seed=seed_int)
    try:
        with _lock:
            result = load_metric().compute(predictions=preds, references=refs, **kwargs)
    except (ValueError, TypeError) as err:
        # The metric names the item and the problem; evaluate/pyarrow type errors are made readable.
        raise gr.Error(f"The metric refused this input: {err}") from None
    result = _plain(result)
    headers, rows = tag_table(result)
    return (
        {"headers": TABLE_HEADERS, "data": metrics_table(result)},
        {"headers": headers, "data": rows},
        result,
    )


EXAMPLES = [
    # VALSE-shaped: 1 image x (caption, foil); the 3rd item ties.
    ["[[[2.1, 1.3]], [[0.4, 0.9]], [[1.0, 1.0]]]", "[[[1, 0]], [[1, 0]], [[1, 0]]]", "strict", 0.5, "", "", 0, 0.95, 0],
    # Winoground-shaped: 2 images x 2 captions, gold = identity.
    ["[[[3.0, 1.0], [0.5, 2.0]], [[2.0, 2.5], [0.0, 1.0]]]", "[[[1, 0], [0, 1]], [[1, 0], [0, 1]]]",
     "strict", 0.5, "", '[["Object"], ["Relation"]]', 0, 0.95, 0],
    # BLA-shaped: 1 image x (2 true captions, 2 distractors).
    ["[[[0.9, 0.8, 0.2, 0.1]], [[0.9, 0.1, 0.5, 0.3]]]", "[[[1, 1, 0, 0]], [[1, 1, 0, 0]]]",
     "half", 0.5, "", "", 200, 0.95, 0],
    # With match probabilities (thresholded VALSE metrics acc, p_c, p_f, min_p).
    ["[[[2.0, -1.0]], [[0.3, 0.8]]]", "[[[1, 0]], [[1, 0]]]", "strict", 0.5,
     "[[[0.9, 0.2]], [[0.6, 0.7]]]", "", 0, 0.95, 0],
    # TraVLR-shaped: 1 image x 1 statement, gold [[1]] (true) or [[0]] (false): macro-F1, F1 per class.
    ["[[[0.9]], [[0.6]], [[0.3]], [[0.2]], [[0.7]]]", "[[[1]], [[1]], [[1]], [[0]], [[0]]]", "strict", 0.5,
     "[[[0.9]], [[0.6]], [[0.3]], [[0.2]], [[0.7]]]", "", 0, 0.95, 0],
]


def build_demo() -> gr.Blocks:
    with gr.Blocks(title="valse_metric") as demo:
        gr.Markdown(
            "# valse_metric\n"
            "Pairwise (VALSE `acc_r`), group (Winoground text / image / group) and set (BLA) scores "
            "from score matrices. Per item, paste an **m x n score matrix** (m images, n texts) and "
            "its **m x n gold matrix** (1 where the text truly describes the image). Items may differ "
            "in shape. A 1 x 1 item (one statement, gold `[[1]]` true or `[[0]]` false, as TraVLR) is "
            "classified: give probabilities, or its scores are compared with the threshold (macro-F1). "
            "Values are shown as percentages, with the chance level for exactly these item "
            "shapes; see the metric card for the formulas and the tie policies."
        )
        with gr.Row():
            with gr.Column():
                predictions = gr.Code(label="Scores (predictions)", language="json", lines=4,
                                      value=EXAMPLES[0][0])
                references = gr.Code(label="Gold (references)", language="json", lines=4, value=EXAMPLES[0][1])
                with gr.Accordion("Optional: probabilities and tags", open=False):
                    probabilities = gr.Code(label="Probabilities", language="json", lines=2)
                    tags = gr.Code(label="Tags", language="json", lines=2)
                with gr.Row():
                    ties = gr.Radio(list(tie_policies()), value="strict", label="Ties",
                                    info="strict: a tie counts against the model; lenient: for it; half: half")
                    threshold = gr.Number(value=0.5, label="Threshold", minimum=0, maximum=1)
                with gr.Row():
                    bootstrap = gr.Number(value=0, label="Bootstrap resamples", precision=0, minimum=0,
                                          maximum=MAX_BOOTSTRAP)
                    confidence = gr.Number(value=0.95, label="Confidence", minimum=0.5, maximum=0.999)
                    seed = gr.Number(value=0, label="Seed", precision=0)
                button = gr.Button("Compute", variant="primary")
            with gr.Column():
                table = gr.Dataframe(headers=TABLE_HEADERS, label="Metrics", interactive=False)
                per_tag = gr.Dataframe(label="Per tag", interactive=False)
                raw = gr.JSON(label="Result (raw)")
        inputs = [predictions, references, ties, threshold, probabilities, tags, bootstrap, confidence, seed]
        gr.Examples(EXAMPLES, inputs=inputs,
                    label="Examples (VALSE, Winoground, BLA shapes; with probabilities; TraVLR true/false)")
        button.click(compute, inputs=inputs, outputs=[table, per_tag, raw], api_name="compute",
                     concurrency_limit=4)
    return demo


demo = build_demo()

if __name__ == "__main__":
    demo.queue(max_size=32).launch(theme=gr.themes.Soft(), max_file_size="1mb")
