"""The Benchmark tab: a stratified sample of a config, measured by ``vlprobe.evaluate`` with the page's loaded model."""

from __future__ import annotations

import json
import math
import re
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from ..benchmarks import find
from ..errors import VlprobeError
from ..results import bar_chart, na_text, pct, truncation_warning
from ..results.display import shown_metrics
from ..results.schema import Metrics, dump
from .display import CHART_FONT_SIZE, Table, figure
from .examples import dataset_configs, dataset_name, load_items, open_split, sample_rows
from .glossary import chart_label
from .models import MODELS, ModelCache
from .score import TIE_POLICY_WORDS, check_ties, gaps, item_shape, table, unknown_words
from .settings import MAX_BOOTSTRAP, Settings, SpaceError, max_items

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..dataset.items import Item
    from ..evaluation.result import Evaluation
    from ..results import ScoredItem
    from ..results.schema import Entry
    from ..scorers.base import Scorer
    from .examples import Sample


def plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def items_shape(items: Sequence[Any]) -> str:
    """'group' if any item has two images, else 'pairwise' if every item is one caption against one foil, else 'set'."""
    shapes = {item_shape(np.shape(i.gold)[0], int(np.asarray(i.gold).sum()), np.shape(i.gold)[1]) for i in items}
    return "group" if "group" in shapes else "pairwise" if shapes == {"pairwise"} else "set"


class Footnotes:
    """The notes under a table: a cell says "N/A¹", its reason said once under the table."""

    MARKS = "¹²³⁴⁵⁶⁷⁸⁹"

    def __init__(self) -> None:
        self.texts: list[str] = []

    def mark(self, text: str) -> str:
        if text not in self.texts:
            self.texts.append(text)
        k = self.texts.index(text)
        return self.MARKS[k] if k < len(self.MARKS) else f"[{k + 1}]"

    def lines(self) -> list[str]:
        return [f"{self.mark(t)} {t}" for t in self.texts]


def metric_table(m: Metrics, keys: Sequence[str], reason: Callable[[str], str] = str) -> Table:
    """Metric, value, CI low, CI high, chance, in %; a value over nothing but ties is "N/A¹", why a note."""
    notes = Footnotes()
    rows = []
    for key in keys:
        low, high = m.ci.get(key) or (None, None)
        value = pct(m.value(key)) if m.value(key) is not None else f"N/A{notes.mark(reason(str(m.na_reason)))}"
        rows.append([key, value, pct(low), pct(high), pct(m.chance.get(key))])
    return Table("metrics", "", ["metric", "value", "CI low", "CI high", "chance"], rows, notes.lines())


def tag_table(m: Metrics, keys: Sequence[str], reason: Callable[[str], str] = str) -> Table:
    """Tag, items, then each metric in %; a tag whose every item tied is "N/A¹", why a note."""
    notes = Footnotes()

    def na(r: Metrics) -> str:
        why = re.sub(r"^(\d+)/\1 items tied", "every item of the tag tied", reason(str(r.na_reason)))
        return f"N/A{notes.mark(why)}"

    keys = [k for k in keys if any(r.value(k) is not None or r.na_reason for r in m.per_tag.values())]
    rows = [[tag, r.n_items if r.n_items is not None else ""]
            + [pct(r.value(k)) if r.value(k) is not None else na(r) if r.na_reason else "" for k in keys]
            for tag, r in sorted(m.per_tag.items())]
    return Table("tags", "", ["tag", "items", *keys], rows, notes.lines())


def margins(scores: Sequence[np.ndarray], golds: Sequence[np.ndarray]) -> np.ndarray:
    """Per item, its smallest :func:`~.score.gaps` (NaN: none), at most 0 when a comparison is wrong."""
    return np.array([min((v for *_, v in gaps(S, G)), default=np.nan) for S, G in zip(scores, golds)], dtype=float)


def marked_texts(item: Item | ScoredItem) -> str:
    """An item's texts, each marked "✓" (true; with several images "✓1": of image 1) or "✗" (a foil)."""
    G = np.asarray(item.gold, dtype=bool)
    many = G.shape[0] > 1

    def mark(j: int) -> str:
        rows = np.flatnonzero(G[:, j])
        if not len(rows):
            return "✗"
        return "✓" + ("/".join(str(i + 1) for i in rows) if many else "")

    return " | ".join(f"{mark(j)} {text}" for j, text in enumerate(item.texts))


def browse_notes(items: Sequence[Any]) -> list[str]:
    """The notes under the items table: what the marks mean, and TraVLR's ``label=`` tag where items carry it."""
    many = any(np.shape(i.gold)[0] > 1 for i in items)
    notes = ["✓: the true text (the gold one); ✗: a wrong text (a foil)"
             + ("; ✓1, ✓2: true of image 1, of image 2." if many else ".")]
    if any(t.startswith("label=") for i in items for t in i.tags):
        notes.append("label=True/False: the dataset's own label column, whether the item's first text is the "
                     "true one (✓ marks it either way).")
    return notes


def chart(m: Metrics, keys: Sequence[str], title: str) -> Figure:
    """The shown metrics by vlprobe.results' bar chart (CI bars, dashed chance), as wide as its bars need."""
    keys = [k for k in keys if m.value(k) is not None]  # no bar for a value that is not available
    with figure(min(4.8, 2.4 + 0.65 * len(keys)), 4.2) as (fig, (ax,)):
        bar_chart(ax, [chart_label(k) for k in keys], [m.value(k) for k in keys],
                  ci=[m.ci.get(k) for k in keys] if m.ci else None, chance=[m.chance.get(k) for k in keys])
        ax.set_title(title, pad=CHART_FONT_SIZE)  # above the "100" tick label, which rises half a line
        # the legend under the axes (constrained layout keeps it clear of the labels), never over a bar
        fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncol=2, frameon=False)
    return fig


@dataclass
class BenchmarkOutcome:
    summary: str
    metrics: Table
    tags: Table
    browse: Table  # the items, worst first
    result: Metrics
    chart: Figure | None = None  # the metrics
    source: tuple = ()  # (settings, dataset, config, split): where browsing reads an item's images
    items: list[Any] = field(repr=False, default_factory=list)  # scored items (texts, gold, tags; no images)
    scores: list[np.ndarray] = field(repr=False, default_factory=list)
    order: list[int] = field(repr=False, default_factory=list)
    rows: list[int] = field(repr=False, default_factory=list)  # item k is row rows[k] of the split
    keys: list[str] = field(default_factory=list)  # the metrics shown
    notes: list[str] = field(default_factory=list)  # beside the table: the tie policy against the authors' rule
    results_file: str | None = None  # the run's results.json
    tags_note: str = ""  # when there is no per-tag table: why


def _whole(value: str | float | None, box: str, low: int, high: int) -> int:
    """A box's value as a whole number from ``low`` to ``high``, or one sentence naming the box."""
    if value is None or (isinstance(value, str) and not value.strip()):
        raise SpaceError(f"{box}: the box is empty; type a whole number from {low:,} to {high:,}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number) or number != int(number) or not low <= number <= high:
        shown = value if isinstance(value, str) else f"{number:g}" if math.isfinite(number) else repr(value)
        raise SpaceError(f"{box}: {shown} is not allowed; choose a whole number from {low:,} to {high:,}")
    return int(number)


def check_inputs(n_items: str | float | None, bootstrap: str | float | None, ties: str | None) -> tuple[int, int, str]:
    """The Items, Bootstrap resamples and tie policy boxes, checked: (n, resamples, ties)."""
    n = _whole(n_items, "Items", 1, max_items())
    n_boot = _whole(bootstrap, "Bootstrap resamples", 0, MAX_BOOTSTRAP)
    return n, n_boot, check_ties(ties, authors=True)


def tie_policy_notes(run: Evaluation, scored: Entry, ties: str, keys: Sequence[str] = ()) -> list[str]:
    """Where the run's tie policy is not its benchmark's authors' rule, say so, with the shown metrics under their
    rule; for a dataset without a rule, a policy other than strict is not the papers' usual one."""
    block = next((b for b in (run.summary or {}).values() if scored.benchmark and b.benchmark == scored.benchmark),
                 None)
    rule = block.tie_policy if block is not None else None
    if rule is not None and rule.authors != ties:
        bench = find(scored.benchmark)
        name = bench.display if bench is not None else scored.benchmark
        theirs = scored.authors_rule.metrics if scored.authors_rule else Metrics()
        figures = ", ".join(f"{k} {pct(theirs.value(k))}%" for k in keys if theirs.value(k) is not None)
        return [f"Ties are {TIE_POLICY_WORDS[ties]} here ({ties}), not as the {name} authors count them "
                f"({rule.authors}: {rule.rule})." + (f" Under their rule: {figures}." if figures else "")
                + f" Choose {rule.authors} to compare with the paper."]
    if not rule and ties != "strict":
        return [f"Ties are {TIE_POLICY_WORDS[ties]} here ({ties}); the papers count a tie as wrong (strict), so "
                "these numbers are not comparable with theirs."]
    return []


def collapse_cause(scorer: Scorer, items: Sequence[Any]) -> str:
    """Why some items' texts are one input to the model: "unknown words", "the tokenizer", "truncation", or ""."""
    tok = getattr(scorer, "tokenizer", None) or getattr(getattr(scorer, "processor", None), "tokenizer", None)
    seen_texts = getattr(scorer, "seen_texts", None)
    if tok is None or seen_texts is None:
        return ""
    causes = set()
    for item in items:
        texts = list(dict.fromkeys(item.texts))
        seen = seen_texts(texts)
        if seen is None or len(set(seen)) == len(texts):
            continue
        full = [tuple(ids) for ids in tok(texts).input_ids]
        causes.add("unknown words" if len(set(full)) < len(texts) and unknown_words(scorer, texts) else
                   "the tokenizer" if len(set(full)) < len(texts) else "truncation")
    return " and ".join(sorted(causes))


def explain_collapse(text: str, cause: str, words: Sequence[str]) -> str:
    """The library's "texts identical after truncation" (or "…the same token ids") with this run's cause."""
    if not cause or cause == "truncation":
        return text
    shown = ", ".join(f"“{w}”" for w in words[:6]) + (" …" if len(words) > 6 else "")
    why = (f"texts the model reads as the same: it does not know {shown} (one unknown word to it)"
           if cause == "unknown words" else f"texts the model reads as the same ({cause})")
    return re.sub(r"texts identical after (the model's )?truncation( to \d+ tokens)?|texts the model reads as the same "
                  r"token ids", why, text)


def write_results(run: Evaluation, folder: Path, root: Path, sample: Sample) -> str:
    """The path of the run's results.json, with how the items were sampled and no server path in it."""
    provenance = run.document.provenance
    doc = replace(run.document, provenance=replace(provenance, raw={**provenance.raw, "space_sample": sample.record()}))
    text = json.dumps(dump(doc), indent=2, ensure_ascii=False).replace(str(Path(root).resolve()) + "/", "")
    out = Path(tempfile.mkdtemp(prefix="run-", dir=folder)) / "results.json"
    out.write_text(text, encoding="utf-8")
    return str(out)


def run_benchmark(settings: Settings, dataset: str | None, config: str | None, split: str | None,
                  model: str | None, n_items: str | float | None, ties: str | None = "authors",
                  bootstrap: str | float | None = 200,
                  progress: Callable[[float, str], None] | None = None,
                  cache: ModelCache | None = None, results_dir: Path | None = None) -> BenchmarkOutcome:
    """Score a stratified sample of a config through ``vlprobe.evaluate``; ``ties``: "authors" or a tie policy."""
    from .. import evaluate

    report = progress or (lambda frac, desc: None)
    n, n_boot, ties = check_inputs(n_items, bootstrap, ties)
    name = dataset_name(settings, dataset)
    ds, spec, split = open_split(settings, dataset, config, split)
    sample = sample_rows(ds, spec, n, dataset_configs(settings, dataset))
    model_id = settings.resolve_model(model)
    report(0.05, f"loading the model {Path(model_id).name}")
    scorer = (cache or MODELS).get(model_id)
    report(0.2, f"scoring {plural(len(sample.rows), 'item')}")
    start = time.perf_counter()
    try:  # the dataset named after its folder, so the benchmark is known
        run = evaluate(model=scorer, datasets={name: ds.select(sample.rows)}, spec=spec, splits=[split], ties=ties,
                       configs=[config] if config else None, bootstrap=n_boot, progress=False, cache_dir="none",
                       num_workers=0)
    except VlprobeError as err:
        raise SpaceError(str(err)) from None
    scored = run.splits[0]
    seconds = time.perf_counter() - start
    entry, ties = run.document.results[0], scored.ties or ties  # the policy it was counted by ("authors": its rule)
    result, items = entry.metrics, list(scored.items)
    cause = collapse_cause(scorer, items) if (truncation_warning(scored) or result.na_reason) else ""
    words = unknown_words(scorer, [t for it in items for t in it.texts]) if cause else []

    def reason(text: str) -> str:
        return explain_collapse(text, cause, words)

    keys = shown_metrics(entry)
    tags = tag_table(result, keys, reason)
    gaps = margins(scored.scores, [item.gold for item in items])
    order = sorted(range(len(items)), key=lambda k: (np.nan_to_num(gaps[k], nan=np.inf), k))
    browse = [[rank, round(float(gaps[k]), 3), marked_texts(items[k]), ", ".join(items[k].tags), items[k].id]
              for rank, k in enumerate(order, 1)]
    wrong = int(sum(1 for g in gaps if g <= 0))
    ties_n = result.n_ties or 0
    warning = reason(truncation_warning(scored).removeprefix("warning: "))
    summary = (f"**{name} / {config} / {split}**: {sample.describe()} ({items_shape(items)}), scored by "
               f"**{Path(model_id).name}** in {seconds:.1f} s. "
               f"{plural(wrong, 'item')} with at least one comparison wrong or tied; ties {TIE_POLICY_WORDS[ties]} "
               f"({ties}; {plural(ties_n, 'tied comparison')})"
               + (f"; 95% confidence intervals from {n_boot:,} bootstrap resamples of the items." if n_boot else ".")
               + (f" **No metric is shown as a number: {reason(na_text(result))}.**" if na_text(result) else "")
               + (f" {warning}." if warning else ""))
    notes = tie_policy_notes(run, entry, ties, keys)
    # BLA's clamped cosines (the summary block's departure "scores"): the authors' script can rank these otherwise
    notes += [f"{d.note}." for block in run.summary.values() for d in block.departures if d.setting == "scores"]
    results_file = write_results(run, results_dir, settings.root, sample) if results_dir is not None else None
    report(1.0, "done")
    return BenchmarkOutcome(
        summary=summary, metrics=metric_table(result, keys, reason), tags=tags, result=result,
        browse=Table("browse", "", ["rank", "margin", "texts", "tags", "id"], browse, browse_notes(items)),
        chart=chart(result, keys, f"{name}/{config}/{split} (n={len(items):,})"),
        source=(settings, dataset, config, split), items=items,
        scores=[np.asarray(s) for s in scored.scores], order=order, rows=list(sample.rows), keys=keys,
        notes=notes, results_file=results_file,
        tags_note="" if tags.rows else "This config's items have no tags, so there is no per-tag table.")


def browse_item(outcome: BenchmarkOutcome, rank: str | float) -> tuple[list[Any], list[str], list[list[Any]], str]:
    """One benchmark item by its rank (1 = worst): (images, score headers, score rows, caption)."""
    from ..dataset.images import to_pil

    r = int(float(rank))  # the page's show_item has checked it against the run
    k = outcome.order[r - 1]
    item, S = outcome.items[k], np.asarray(outcome.scores[k], dtype=np.float64)
    headers, rows = table(item, S, None)
    settings, dataset, config, split = outcome.source
    row = load_items(settings, dataset, config, split, rows=[outcome.rows[k]] if outcome.rows else [k])[0]
    images = [to_pil(im, where=f"item {item.id!r}") for im in row.images]
    caption = f"Rank {r} of {len(outcome.order)}: item `{item.id}`" + (f"; tags: {', '.join(item.tags)}" if item.tags else "")
    return images, headers, rows, caption
