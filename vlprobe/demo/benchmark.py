"""The Benchmark tab: the first N items of a dataset folder's config, scored and measured by
``vlprobe.evaluate`` (the library's API, with the page's already-loaded model), shown as a chart
(each metric with its CI and chance line), a table of the metrics that fit the items' shape, a
per-tag table and the items, worst mistakes first."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from .examples import dataset_splits, load_items
from .models import MODELS, ModelCache
from .score import item_shape, plain
from .settings import MAX_BOOTSTRAP, Settings, SpaceError, max_items


def plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def items_shape(items: Sequence[Any]) -> str:
    """The shape of a run: 'group' if any item has two images, else 'pairwise' if every item is one
    caption against one foil, else 'set'."""
    shapes = {item_shape(np.shape(i.gold)[0], int(np.asarray(i.gold).sum()), np.shape(i.gold)[1]) for i in items}
    return "group" if "group" in shapes else "pairwise" if shapes == {"pairwise"} else "set"


def shown_metrics(split: Any) -> list[str]:
    """The metrics that mean something for the split's benchmark and item shape, headline first
    (:func:`vlprobe.evaluation.display_keys`: a 1 x 2 item shows acc_r, not five copies of it); a
    split whose every item tied keeps them, each shown as "N/A (reason)"."""
    from ..evaluation import display_keys
    from ..results import NA_KEY

    na = bool(split.metrics.get(NA_KEY))
    return [k for k in display_keys(split) if split.metrics.get(k) is not None or (na and k in split.metrics)]


def metric_rows(result: dict, keys: Sequence[str]) -> tuple[list[str], list[list[Any]]]:
    """(headers, rows): metric, value, CI low, CI high, chance, in %; "N/A (reason)" for a value
    computed over nothing but ties."""
    from ..results import na_text, pct

    chance, ci = result.get("chance") or {}, result.get("ci") or {}
    rows = []
    for key in keys:
        low, high = (list(ci.get(key) or []) + [None, None])[:2]
        value = pct(result[key]) if result.get(key) is not None else na_text(result)
        rows.append([key, value, pct(low), pct(high), pct(chance.get(key))])
    return ["metric", "value", "CI low", "CI high", "chance"], rows


def tag_rows(result: dict, keys: Sequence[str]) -> tuple[list[str], list[list[Any]]]:
    from ..results import na_text, pct

    per_tag = result.get("per_tag") or {}
    keys = [k for k in keys if any(r.get(k) is not None or na_text(r) for r in per_tag.values())]
    rows = [[tag, r.get("n_items", "")] + [pct(r.get(k)) if r.get(k) is not None else na_text(r) for k in keys]
            for tag, r in sorted(per_tag.items())]
    return ["tag", "items", *keys], rows


def margins(scores: Sequence[np.ndarray], golds: Sequence[np.ndarray]) -> np.ndarray:
    """Per item, the smallest gap "gold cell minus non-gold cell" over the pairs the metrics compare
    (same row; same column too when the item has several images). At most 0: the model got at
    least one comparison wrong. Used to sort items for browsing, worst mistakes first."""
    out = np.empty(len(scores))
    for k, (S, G) in enumerate(zip(scores, golds)):
        S, G = np.asarray(S, dtype=np.float64), np.asarray(G, dtype=bool)
        gaps = [row[gold].min() - row[~gold].max()
                for A, B in (((S, G), (S.T, G.T)) if S.shape[0] > 1 else ((S, G),))
                for row, gold in zip(A, B) if gold.any() and (~gold).any()]
        out[k] = min(gaps) if gaps else np.nan
    return out


def chart(split: Any, keys: Sequence[str]) -> Any:
    """A matplotlib figure of the shown metrics (CI error bars, dashed chance lines), drawn by
    vlprobe.results' one bar chart, its text at the page's chart size, as wide as its bars need."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..results import bar_chart, na_text
    from .display import chart_rc

    m = split.metrics
    ci, chance = m.get("ci") or {}, m.get("chance") or {}
    keys = [k for k in keys if m.get(k) is not None]  # no bar for a value that is not available
    with matplotlib.rc_context(chart_rc()):
        fig, ax = plt.subplots(figsize=(min(4.5, 2.2 + 0.6 * len(keys)), 4.0), dpi=100, layout="constrained")
        bar_chart(ax, list(keys), [m[k] for k in keys], ci=[ci.get(k) for k in keys] if ci else None,
                  chance=[chance.get(k) for k in keys])
        ax.set_title(f"{split.name} (n={m.get('n_items', len(split.items)):,})"
                     + (f"\n{na_text(m)}" if na_text(m) else ""))
        # the legend under the axes (constrained layout keeps it clear of the labels), never over a bar
        fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncol=2, frameon=False)
    plt.close(fig)
    return fig


@dataclass
class BenchmarkOutcome:
    summary: str
    metric_headers: list[str]
    metric_rows: list[list[Any]]
    tag_headers: list[str]
    tag_rows: list[list[Any]]
    browse_headers: list[str]
    browse_rows: list[list[Any]]
    result: dict
    chart: Any = None  # a matplotlib Figure of the metrics
    source: tuple = ()  # (settings, folder, config, split): where browsing reads an item's images
    items: list[Any] = field(repr=False, default_factory=list)  # scored items (texts, gold, tags; no images)
    scores: list[np.ndarray] = field(repr=False, default_factory=list)
    order: list[int] = field(repr=False, default_factory=list)


def _check(n_items: Any, bootstrap: Any) -> tuple[int, int]:
    try:
        n, n_boot = int(n_items), int(bootstrap or 0)
    except (TypeError, ValueError):
        raise SpaceError("the number of items and of bootstrap resamples must be whole numbers") from None
    if not 1 <= n <= max_items():
        raise SpaceError(f"the number of items must be between 1 and {max_items()} on this Space, got {n}")
    if not 0 <= n_boot <= MAX_BOOTSTRAP:
        raise SpaceError(f"bootstrap resamples must be between 0 and {MAX_BOOTSTRAP} on this Space, got {n_boot}")
    return n, n_boot


def evaluate_split(scorer: Any, folder: Path, config: str, split: str, n: int, ties: str, n_boot: int) -> Any:
    """``vlprobe.evaluate`` on one split with an already-loaded scorer: the scored split."""
    from .. import evaluate
    from ..errors import VlprobeError

    try:
        run = evaluate(model=scorer, datasets=str(folder), configs=[config], splits=[split], ties=ties,
                       bootstrap=n_boot, limit=n, progress=False, cache_dir="none", num_workers=0)
    except VlprobeError as err:
        raise SpaceError(str(err).replace(str(folder), folder.name)) from None
    return run, run.splits[0]


def run_benchmark(settings: Settings, folder: str | None, config: str | None, split: str | None,
                  model: str | None, n_items: Any, ties: str = "strict", bootstrap: Any = 200,
                  progress: Callable[[float, str], None] | None = None,
                  cache: ModelCache | None = None) -> BenchmarkOutcome:
    """Score the first ``n_items`` items of a config through ``vlprobe.evaluate`` and show them."""
    report = progress or (lambda frac, desc: None)
    n, n_boot = _check(n_items, bootstrap)
    path = settings.resolve_dataset(folder)
    if not config:
        raise SpaceError(f"choose a config of {path.name!r}")
    split = split or dataset_splits(settings, folder, config)[0]
    model_id = settings.resolve_model(model)
    report(0.05, f"loading the model {Path(model_id).name}")
    scorer = (cache or MODELS).get(model_id)
    report(0.2, f"scoring up to {plural(n, 'item')}")
    run, scored = evaluate_split(scorer, path, config, split, n, ties, n_boot)
    from ..results import na_text, truncation_warning

    result = plain(scored.metrics)
    keys = shown_metrics(scored)
    mh, mr = metric_rows(result, keys)
    th, tr = tag_rows(result, keys)
    items = list(scored.items)
    gaps = margins(scored.scores, [item.gold for item in items])
    order = sorted(range(len(items)), key=lambda k: (np.nan_to_num(gaps[k], nan=np.inf), k))
    browse = [[rank, round(float(gaps[k]), 3), " | ".join(items[k].texts), ", ".join(items[k].tags), items[k].id]
              for rank, k in enumerate(order, 1)]
    wrong = int(sum(1 for g in gaps if g <= 0))
    ties_n = int(result.get("n_ties") or 0)
    seconds = float((run.provenance.get("engine") or {}).get("seconds") or 0)
    summary = (f"**{path.name} / {config} / {split}**: {plural(len(items), 'item')} ({items_shape(items)}) scored by "
               f"**{Path(model_id).name}** in {seconds:.1f} s. "
               f"{plural(wrong, 'item')} with at least one comparison wrong; ties counted as {ties}"
               f" ({plural(ties_n, 'tied comparison')})"
               + (f"; 95% confidence intervals from {n_boot} bootstrap resamples of the items." if n_boot else ".")
               + (f" **No metric is shown as a number: {na_text(result)}.**" if na_text(result) else "")
               + (f" {truncation_warning(scored).removeprefix('warning: ')}." if truncation_warning(scored) else ""))
    report(1.0, "done")
    return BenchmarkOutcome(
        summary=summary, metric_headers=mh, metric_rows=mr, tag_headers=th, tag_rows=tr,
        browse_headers=["rank", "margin", "texts", "tags", "id"], browse_rows=browse, result=result,
        chart=chart(scored, keys), source=(settings, str(path), config, split), items=items,
        scores=[np.asarray(s) for s in scored.scores], order=order)


def browse_item(outcome: BenchmarkOutcome | None, rank: Any) -> tuple[list[Any], list[str], list[list[Any]], str]:
    """One benchmark item by its rank (1 = worst): (images, score headers, score rows, caption)."""
    from ..images import to_pil
    from .score import table

    if outcome is None or not outcome.items:
        raise SpaceError("run a benchmark first")
    try:
        r = int(rank)
    except (TypeError, ValueError):
        raise SpaceError("the rank must be a whole number") from None
    if not 1 <= r <= len(outcome.order):
        raise SpaceError(f"the rank must be between 1 and {len(outcome.order)}")
    k = outcome.order[r - 1]
    item, S = outcome.items[k], np.asarray(outcome.scores[k], dtype=np.float64)
    headers, rows = table(item, S, None)
    settings, folder, config, split = outcome.source
    row = load_items(settings, folder, config, split, limit=1, start=k)[0]  # item k is row k (the first N rows)
    images = [to_pil(im, where=f"item {item.id!r}") for im in row.images]
    caption = f"Rank {r} of {len(outcome.order)}: item `{item.id}`" + (f"; tags: {', '.join(item.tags)}" if item.tags else "")
    return images, headers, rows, caption
