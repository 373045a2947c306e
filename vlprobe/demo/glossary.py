"""What each metric the page shows means, in one line (vlprobe.metric's definitions), and which way is better."""

from __future__ import annotations

import html
import re
from typing import Sequence

# metric -> (what it is, "higher" or "lower" is better)
METRICS = {
    "acc_r": ("pairwise accuracy: the share of (true text, wrong text) comparisons in which the true text scores "
              "higher (VALSE's acc_r)", "higher"),
    "text": ("text score: the share of items in which each image scores its own caption above the other captions "
             "(Winoground)", "higher"),
    "image": ("image score: the share of items in which each caption scores its own image above the other images "
              "(Winoground)", "higher"),
    "group": ("group score: the share of items with both the text and the image score right (Winoground)", "higher"),
    "sentence_acc": ("sentence accuracy: the share of texts classified right when each image's top-scored texts, "
                     "as many as it has true ones, are taken as true (BLA)", "higher"),
    "set_acc": ("set accuracy: the share of items in which every true text scores above every wrong one (BLA)",
                "higher"),
    "set_error": ("set error: the share of items in which every wrong text scores above every true one (BLA); "
                  "a model that sees the difference keeps it near 0", "lower"),
    "auroc": ("AUROC: the chance that a random true image-text pair outscores a random wrong one, over all pairs",
              "higher"),
    "acc": ("accuracy of the model's match probability at 0.5, over all image-text pairs (VALSE)", "higher"),
    "p_c": ("precision on captions: the share of true pairs the probability calls a match (VALSE's p_c)", "higher"),
    "p_f": ("precision on foils: the share of wrong pairs the probability calls no match (VALSE's p_f)", "higher"),
    "min_p": ("min(p_c, p_f): the weaker of the two (VALSE)", "higher"),
    "macro_f1": ("macro-F1: the mean of the F1 of true and of false statements (TraVLR)", "higher"),
    "f1_true": ("F1 of the true statements (TraVLR)", "higher"),
    "f1_false": ("F1 of the false statements (TraVLR)", "higher"),
}


def better(metric: str) -> str:
    """"higher" or "lower" (is better) for a metric; "higher" for one the glossary lacks."""
    return METRICS.get(metric, ("", "higher"))[1]


def chart_label(metric: str) -> str:
    """A metric's name on a chart: with "(lower is better)" where lower is better."""
    return f"{metric} (lower is better)" if better(metric) == "lower" else metric


def glossary_html(metrics: Sequence[str], fold: bool = False) -> str:
    """The known ``metrics`` and which way is better ("" when none); ``fold``: in a ``<details class="vt-fold">``."""
    known = [m for m in dict.fromkeys(metrics) if m in METRICS]
    if not known:
        return ""
    items = "".join(f"<li><code>{html.escape(m)}</code> ({better(m)} is better): "
                    f"{html.escape(METRICS[m][0])}.</li>" for m in known)
    if fold:
        return (f'<details class="glossary vt-fold" open><summary class="glossary-head">What the metrics mean</summary>'
                f'<ul>{items}</ul></details>')
    return f'<div class="glossary"><p class="glossary-head">What the metrics mean</p><ul>{items}</ul></div>'


def named_in(*tables: Sequence) -> list[str]:
    """The glossary's metrics named in tables' headers and cells ("acc_r (%)", "mini-clip · acc_r"), in its order."""
    words = set()
    for table in tables:
        for row in table or []:
            for cell in row if isinstance(row, (list, tuple)) else [row]:
                if isinstance(cell, str):
                    words.update(re.findall(r"[a-z_0-9]+", cell))
    return [m for m in METRICS if m in words]
