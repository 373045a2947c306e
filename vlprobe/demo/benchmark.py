"""The Benchmark tab: the first N items of a dataset folder's config, scored and measured by
vlprobe's engine and metric, shown as a chart (each metric with its CI and chance line), a table of
the metrics that fit the items' shape, a per-tag table and the items, worst mistakes first."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from ..items import Item
from .examples import dataset_splits, load_items
from .models import MODELS, ModelCache
from .score import item_shape, plain, run_engine
from .settings import MAX_BOOTSTRAP, Settings, SpaceError, max_items



def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def pct(x: Any) -> str:
    return "" if x is None else f"{100 * float(x):.1f}"


def items_shape(items: Sequence[Item]) -> str:
    """The shape of a run: 'group' if any item has two images, else 'pairwise' if every item is one
    caption against one foil, else 'set'."""
    shapes = {item_shape(i.m, int(np.asarray(i.gold).sum()), i.n) for i in items}
    return "group" if "group" in shapes else "pairwise" if shapes == {"pairwise"} else "set"


def shown_metrics(folder: str, items: Sequence[Item], result: dict) -> list[str]:
    """The metrics that mean something for the benchmark and its items' shape, headline first
    (:func:`vlprobe.summary.display_metrics`: a 1 x 2 item shows acc_r, not five copies of it)."""
    from ..results import metric_keys
    from ..summary import benchmark_of, display_metrics

    shapes = {(i.m, i.n) for i in items}
    available = [k for k in metric_keys(result) if result.get(k) is not None]
    return display_metrics(benchmark_of(folder), shapes.pop() if len(shapes) == 1 else None, available)


def metric_rows(result: dict, keys: Sequence[str]) -> tuple[list[str], list[list[Any]]]:
    """(headers, rows): metric, value, CI low, CI high, chance, in %."""
    chance, ci = result.get("chance") or {}, result.get("ci") or {}
    rows = []
    for key in keys:
        low, high = (list(ci.get(key) or []) + [None, None])[:2]
        rows.append([key, pct(result[key]), pct(low), pct(high), pct(chance.get(key))])
    return ["metric", "value %", "CI low %", "CI high %", "chance %"], rows


def tag_rows(result: dict, keys: Sequence[str]) -> tuple[list[str], list[list[Any]]]:
    per_tag = result.get("per_tag") or {}
    keys = [k for k in keys if any(r.get(k) is not None for r in per_tag.values())]
    rows = [[tag, r.get("n_items", "")] + [pct(r.get(k)) for k in keys] for tag, r in sorted(per_tag.items())]
    return ["tag", "items", *[f"{k} %" for k in keys]], rows


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


def chart(name: str, config: str, split: str, result: dict, keys: Sequence[str]) -> str:
    """The PNG of the metrics (CI error bars, dashed chance lines), drawn by vlprobe.results."""
    from ..results import Unit, plot_unit

    metrics = dict(result)
    for key in set(metrics) - set(keys) - {"n_items", "n_ties", "chance", "ci", "support", "per_tag"}:
        metrics.pop(key)
    path = Path(tempfile.mkdtemp(prefix="vlprobe-benchmark-")) / "metrics.png"
    plot_unit(path, Unit(dataset=name, config=config, split=split, items=[], metrics=metrics))
    return str(path)


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
    chart: str | None = None  # path of the metrics chart (PNG)
    items: list[Item] = field(repr=False, default_factory=list)
    scores: list[np.ndarray] = field(repr=False, default_factory=list)
    order: list[int] = field(repr=False, default_factory=list)


def _check(n_items: Any, bootstrap: Any, ties: str) -> tuple[int, int]:
    from ..metric import TIE_POLICIES

    try:
        n, n_boot = int(n_items), int(bootstrap or 0)
    except (TypeError, ValueError):
        raise SpaceError("the number of items and of bootstrap resamples must be whole numbers") from None
    if not 1 <= n <= max_items():
        raise SpaceError(f"the number of items must be between 1 and {max_items()} on this Space, got {n}")
    if not 0 <= n_boot <= MAX_BOOTSTRAP:
        raise SpaceError(f"bootstrap resamples must be between 0 and {MAX_BOOTSTRAP} on this Space, got {n_boot}")
    if ties not in TIE_POLICIES:
        raise SpaceError(f"ties must be one of {', '.join(TIE_POLICIES)}, got {ties!r}")
    return n, n_boot


def _measure(scorer: Any, items: list[Item], ties: str, n_boot: int) -> tuple[Any, dict]:
    from ..metric import compute

    run = run_engine(scorer, items, progress=True)
    kwargs: dict[str, Any] = {"ties": ties, "tags": [list(item.tags) for item in items]}
    if run.probabilities is not None:
        kwargs["probabilities"] = run.probabilities
    if n_boot:
        kwargs.update(bootstrap=n_boot, seed=0)
    return run, plain(compute(run.scores, [item.gold.astype(int) for item in items], **kwargs))


def run_benchmark(settings: Settings, folder: str | None, config: str | None, split: str | None,
                  model: str | None, n_items: Any, ties: str = "strict", bootstrap: Any = 200,
                  progress: Callable[[float, str], None] | None = None,
                  cache: ModelCache | None = None) -> BenchmarkOutcome:
    """Score the first ``n_items`` items of a config and measure them."""
    report = progress or (lambda frac, desc: None)
    n, n_boot = _check(n_items, bootstrap, ties)
    model_id = settings.resolve_model(model)
    report(0.0, "loading the items")
    split = split or dataset_splits(settings, folder, config)[0]
    items = load_items(settings, folder, config, split, limit=n)
    report(0.1, f"loading the model {Path(model_id).name}")
    scorer = (cache or MODELS).get(model_id)
    report(0.2, f"scoring {plural(len(items), 'item')}")
    run, result = _measure(scorer, items, ties, n_boot)
    report(0.9, "computing the metrics")
    shape = items_shape(items)
    keys = shown_metrics(str(folder), items, result)
    mh, mr = metric_rows(result, keys)
    th, tr = tag_rows(result, keys)
    gaps = margins(run.scores, [item.gold for item in items])
    order = sorted(range(len(items)), key=lambda k: (np.nan_to_num(gaps[k], nan=np.inf), k))
    browse = [[rank, round(float(gaps[k]), 3), " | ".join(items[k].texts), ", ".join(items[k].tags), items[k].id]
              for rank, k in enumerate(order, 1)]
    name = Path(str(folder)).name
    wrong = int(sum(1 for g in gaps if g <= 0))
    ties_n = int(result.get("n_ties") or 0)
    summary = (f"**{name} / {config} / {split}**: {plural(len(items), 'item')} ({shape}) scored by "
               f"**{Path(model_id).name}** in {run.stats.get('seconds', 0):.1f} s. "
               f"{plural(wrong, 'item')} with at least one comparison wrong; ties counted as {ties}"
               f" ({plural(ties_n, 'tied comparison')})"
               + (f"; 95% confidence intervals from {n_boot} bootstrap resamples of the items." if n_boot else "."))
    report(1.0, "done")
    return BenchmarkOutcome(
        summary=summary, metric_headers=mh, metric_rows=mr, tag_headers=th, tag_rows=tr,
        browse_headers=["rank", "margin", "texts", "tags", "id"], browse_rows=browse,
        result=result, chart=chart(name, str(config), split, result, keys), items=items,
        scores=[np.asarray(s) for s in run.scores], order=order)


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
    images = [to_pil(im, where=f"item {item.id!r}") for im in item.images]
    caption = f"Rank {r} of {len(outcome.order)}: item `{item.id}`" + (f"; tags: {', '.join(item.tags)}" if item.tags else "")
    return images, headers, rows, caption
