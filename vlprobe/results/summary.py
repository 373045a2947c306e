"""The papers' aggregates of a run (:func:`summarize`), by the rules each benchmark declares: the one place that
applies them, naming no benchmark; and which metrics a paper reports, a table shows and a plot shows."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

from ..benchmarks import METRIC_ORDER, TEXT_ONLY, Benchmark, Group, find, shape_headline
from . import published as published_data
from .schema import (
    Departure,
    Entry,
    Metrics,
    ModelInfo,
    Published,
    RunSettings,
    SummaryBlock,
    SummaryRow,
    TieRule,
    dataset_name,
    dump,
    parse,
)

# What a pooled config's row is (VALSE's `all`: every instrument's items together), said wherever it is shown.
POOLED = "pooled over items, not a paper figure"


def _shape(shape: Sequence[int] | None) -> tuple[int, int] | None:
    if not shape:
        return None
    m, n = (int(x) for x in shape)
    return m, n


def headline_metrics(benchmark: str | None, shape: tuple[int, int] | None = None,
                     modality: str | None = None) -> list[str]:
    """The metrics ``benchmark``'s paper reports, in its order; ``shape`` (m, n) decides between framings, and for a
    dataset no paper defines (m >= 2: text / image / group; 1 x 1: macro-F1; else acc_r)."""
    if modality == TEXT_ONLY:
        return ["text"]
    bench = find(benchmark)
    s = _shape(shape)
    return bench.headline_for(s) if bench is not None else shape_headline(s)


def headline_present(benchmark: str | None, shape: tuple[int, int] | None, available: Iterable[str],
                     modality: str | None = None) -> list[str]:
    """The headline metrics a result has (``probability_only`` ones only with probabilities)."""
    avail = set(available)
    keys = [k for k in headline_metrics(benchmark, shape, modality) if k in avail]
    bench = find(benchmark)
    if bench is not None and "acc" not in avail:
        keys = [k for k in keys if k not in bench.probability_only]
    return keys


def primary_metric(benchmark: str | None, shape: tuple[int, int] | None, available: Iterable[str],
                   modality: str | None = None) -> str | None:
    """The one metric a plot shows for a config: the benchmark's ``primary``, else its first headline metric present."""
    avail = list(available)
    bench = find(benchmark)
    order = headline_present(benchmark, shape, avail, modality)
    first = (bench.primary if bench is not None else "group") if modality != TEXT_ONLY else None
    if order:
        return first if first in order else order[0]
    rest = [k for k in METRIC_ORDER if k in avail] + [k for k in avail if k not in METRIC_ORDER]
    return rest[0] if rest else None


def metric_synonyms(benchmark: str | None, shape: tuple[int, int] | None) -> dict[str, str]:
    """``{metric: the name kept}`` for metrics that equal another for every item of this shape, ties included (1 x 2:
    ``acc_r`` = ``set_acc`` = ``sentence_acc`` = ``text``). Tables and CSVs carry the kept name only; results.json all."""
    s = _shape(shape)
    if s is None:
        return {}
    m, n = s
    if n == 2:
        group = ["acc_r", "set_acc", "sentence_acc"] + (["text"] if m == 1 else [])
    elif m == 1 and n > 2:
        group = ["set_acc", "text"]
    else:
        return {}
    kept = next((k for k in headline_metrics(benchmark, s) if k in group), group[0])
    return {k: kept for k in group if k != kept}


def display_metrics(benchmark: str | None, shape: tuple[int, int] | None, available: Sequence[str],
                    modality: str | None = None) -> list[str]:
    """The metrics a table and a plot show for one config: its headline metrics, else those that carry information
    for this shape, one name per quantity."""
    avail = list(available)
    bench = find(benchmark)
    s = _shape(shape)
    if (bench is not None or s is not None) and (head := headline_present(benchmark, s, avail, modality)):
        return head
    drop = set(metric_synonyms(benchmark, s))
    if s is not None:  # those that carry no information for this shape
        drop |= {"text", "image", "group"} if s[0] == 1 else set()
        drop |= {"set_acc", "set_error", "sentence_acc"} if s[0] != 1 or s[1] <= 2 else set()
    if bench is not None and "acc" not in avail:
        drop |= set(bench.probability_only)
    ordered = [k for k in METRIC_ORDER if k in avail] + [k for k in avail if k not in METRIC_ORDER]
    return [k for k in ordered if k not in drop]


def pooled(entry: Entry) -> bool:
    """Whether an entry's config pools the benchmark's configs' items (VALSE's ``all``): its per-tag results name others."""
    bench = find(entry.benchmark)
    if bench is None or not bench.config_tag or entry.config in bench.configs:
        return False
    return any(key == bench.config_tag and value != entry.config
               for key, _, value in (str(tag).partition("=") for tag in entry.metrics.per_tag))


def _pick_split(splits: Sequence[str]) -> str:
    return "test" if "test" in splits else splits[0]


@dataclass
class _Found:
    """One config's result in a run: from its own entry, or from a pooled entry's per-tag results."""

    split: str
    metrics: Metrics
    source: str  # the config itself, or "<pooled config> (per tag <tag>)"
    shape: tuple[int, int] | None
    authors: Metrics | None  # the same result under the authors' tie rule, where the entry holds it


def _row(config: str, found: _Found, keys: Sequence[str], same_rule: bool) -> SummaryRow:
    """A config's row. ``same_rule``: the run counts ties as the authors do, so theirs is kept only where the run's is N/A."""
    m, theirs = found.metrics, found.authors
    values = {k: v for k in keys if (v := m.value(k)) is not None}
    na = tuple(k for k in keys if k not in values) if m.na_reason else ()
    ci = {k: cast("tuple[float, float]", tuple(c)) for k in values if (c := m.ci.get(k)) is not None and None not in c}
    authors = {k: v for k in keys if theirs is not None and (v := theirs.value(k)) is not None
               and (k in na or (k in values and not same_rule))}
    return SummaryRow(config=config, split=found.split, values=values, n_items=m.n_items, source=found.source, ci=ci,
                      authors=authors, na=na, na_reason=m.na_reason if na else None)


def _found(entries: Sequence[Entry], tag: str | None) -> dict[str, list[_Found]]:
    """config -> its results: its own entries', else a pooled entry's per-tag results, the most specific first."""
    own: dict[str, list[_Found]] = {}
    for e in entries:
        theirs = e.authors_rule.metrics if e.authors_rule else None
        own.setdefault(e.config, []).append(_Found(e.split, e.metrics, e.config, e.shape, theirs))
    if tag:
        derived: dict[str, list[_Found]] = {}
        for e in entries:
            theirs_tags = e.authors_rule.metrics.per_tag if e.authors_rule else {}
            for name, m in e.metrics.per_tag.items():
                key, _, value = str(name).partition("=")
                if key == tag and value and value != e.config and value not in own:
                    derived.setdefault(value, []).append(_Found(e.split, m, f"{e.config} (per tag {name})", e.shape,
                                                                theirs_tags.get(name)))
        for config, found in derived.items():
            found.sort(key=lambda f: 0 if not f.source.startswith("all ") else 1)
            own[config] = found
    return own


def _mean(values: Sequence[float], weights: Sequence[float] | None) -> float:
    if weights is None:
        return sum(values) / len(values)
    return sum(v * w for v, w in zip(values, weights)) / sum(weights)


def _mean_row(group: Group, rows: list[SummaryRow], keys: Sequence[str], split: str, same_rule: bool) -> SummaryRow:
    """The members' mean as the group declares it; a metric N/A for a present member is N/A for the mean."""
    have = {r.config: r for r in rows}
    present = [c for c in group.members if c in have]
    micro = group.average == "micro"
    weights = [have[c].n_items for c in present] if micro else None
    if weights is not None and (None in weights or not sum(weights)):  # type: ignore[arg-type]  # None ruled out by `None in` above
        weights, keys = None, []  # a mean over items needs each member's items
    values, authors, na, reasons = {}, {}, [], {}
    for k in keys:
        unavailable = [c for c in present if k in have[c].na]
        reasons.update(dict.fromkeys(f"{c}: {have[c].na_reason}" for c in unavailable))
        vals = [have[c].values.get(k) for c in present]
        if unavailable:
            na.append(k)
        elif present and None not in vals:
            values[k] = _mean(vals, weights)  # type: ignore[arg-type]  # None ruled out by `None in` above
        theirs = [have[c].authors.get(k, have[c].values.get(k) if same_rule else None) for c in present]
        if present and None not in theirs and (k in na or not same_rule):
            authors[k] = _mean(theirs, weights)  # type: ignore[arg-type]  # None ruled out by `None in` above
    missing = tuple(c for c in group.members if c not in have)
    # a member that is itself a mean over fewer members than declared makes this mean one too
    partial = tuple(c for c in present if have[c].complete is False)
    how = "mean over the items" if micro else "unweighted mean"
    return SummaryRow(config=group.name, split=split, paper_config=group.name, label=group.label, aggregate=True,
                      values=values, over=tuple(present), missing=missing, complete=not missing and not partial,
                      source=f"{how} of {len(present)} of {len(group.members)}", partial=partial, authors=authors,
                      n_items=sum(weights) if weights else None, na=tuple(na),  # type: ignore[arg-type]  # None ruled out by `None in` above
                      na_reason="not available for " + "; ".join(reasons) if na else None)


def _config_rows(bench: Benchmark, entries: Sequence[Entry], modality: str | None,
                 same_rule: bool) -> tuple[list[SummaryRow], list[str], list[Metrics]]:
    """One row per config (and declared test split) in the benchmark's order; the configs missing; each row's result."""
    found = _found(entries, bench.config_tag)
    order = list(bench.configs) + [c for c in found if c not in bench.configs]
    rows: list[SummaryRow] = []
    used: list[Metrics] = []
    for config in order:
        results = found.get(config)
        if not results:
            continue
        pools = any(pooled(e) for e in entries if e.config == config)
        if bench.configs and config not in bench.configs and pools:
            continue  # a pooled config (VALSE's `all`, BLA's `all`): its per-tag values are the configs'
        if bench.splits:  # one row per test split (TraVLR's in- and out-of-distribution sets)
            picked = sorted([f for f in results if f.split.startswith("test")] or results, key=lambda f: f.split)
        else:
            split = _pick_split([f.split for f in results])
            picked = [next(f for f in results if f.split == split)]
        for f in picked:
            keys = headline_present(bench.name, f.shape, f.metrics.keys(), modality)
            framing = bench.framing(f.shape)
            rows.append(replace(_row(config, f, keys, same_rule), paper_config=bench.paper_config(config),
                                part=bench.parts.get(config), framing=framing.label if framing else None,
                                pooled=pools, label=f"{config} ({POOLED})" if pools else None))
            used.append(f.metrics)
    if bench.splits:
        have = {(r.config, r.split) for r in rows}
        missing = [f"{c}/{s}" for c in bench.configs for s in bench.splits if (c, s) not in have]
    else:
        missing = [c for c in bench.configs if c not in {r.config for r in rows}]
    return rows, missing, used


def _block(bench: Benchmark, entries: Sequence[Entry], settings: RunSettings, family: str | None) -> SummaryBlock:
    """One registered benchmark's aggregates (see :func:`summarize`)."""
    modality = TEXT_ONLY if entries and {e.modality for e in entries} == {TEXT_ONLY} else None  # all text-only
    rule = bench.tie_rule_for(modality)
    ties = next((p for e in entries if (p := e.policy(settings.ties))), None)  # what the entries count a tie by
    same_rule = rule is not None and ties in (None, rule.policy)
    rows, missing, used = _config_rows(bench, entries, modality, same_rule)
    notes: list[str] = []
    noun = bench.config_noun if bench.config_noun.endswith("s") else bench.config_noun + "s"
    expected = len(bench.configs) * max(1, len(bench.splits))
    spanning = any(set(g.members) >= set(bench.configs) for g in bench.groups)
    if missing and rows and not spanning:  # a group over every config says it instead
        what = f"{bench.config_noun}/test-split pairs" if bench.splits else noun
        notes.append(f"{expected - len(missing)} of {expected} {what} scored (missing: {', '.join(missing)})")
    if not rows:
        tag = f" (configs or per-tag {bench.config_tag} results)" if bench.config_tag else ""
        notes.append(f"no {bench.display} {bench.config_noun} scored{tag}")
    headline = [k for k in headline_metrics(bench.name, None, modality) if any(r.has(k) for r in rows)]
    config_rows = [r for r in rows if not bench.configs or r.config in bench.configs]
    if config_rows:
        split = _pick_split([r.split for r in config_rows])
        for group in bench.groups:
            keys = [k for k in (group.metrics or headline)
                    if all(r.has(k) for r in config_rows if r.config in group.members)]
            row = _mean_row(group, config_rows + [r for r in rows if r.aggregate], keys, split, same_rule)
            if not row.over or not (row.values or row.na):
                continue
            rows.append(row)
            if row.missing:
                notes.append(f"{group.label} over {len(row.over)} of {len(group.members)} {noun} (missing: "
                             f"{', '.join(row.missing)}): not the paper's {group.label}")
            elif not row.complete:
                notes.append(f"{group.label}: some of its members are means over fewer than theirs "
                             f"({', '.join(row.partial)}): not the paper's {group.label}")
    framings = {r.framing for r in rows}
    notes += [f.note for f in bench.framings if f.note and f.label in framings]
    text_only = bench.text_only if modality == TEXT_ONLY else None
    tags = {str(t).lower() for e in entries for t in e.metrics.per_tag}
    return SummaryBlock(
        benchmark=bench.name, rows=tuple(rows), headline=tuple(headline), complete=bool(rows) and not missing,
        notes=tuple(notes), framings=tuple(f.label for f in bench.framings if f.label in framings),
        # the paper's own text-only measure (SugarCREPE++'s TOT), else no paper's aggregates for a text-only run
        source=(text_only.source if text_only else None) if modality == TEXT_ONLY else bench.source,
        names=dict(text_only.names if text_only else {} if modality == TEXT_ONLY else bench.metric_names),
        tie_policy=TieRule(rule.policy, rule.rule, ties) if rule is not None else None,
        departures=tuple(_departures(bench, settings, modality, tags, ties=ties, results=used, family=family)))


def _departures(bench: Benchmark, settings: RunSettings, modality: str | None, tags: Iterable[str] = (), *,
                ties: str | None = None, results: Sequence[Metrics] = (), family: str | None = None) -> list[Departure]:
    """How the run departs from the authors' own setting, one record each (``authors``: their value)."""
    out = []
    for marks, note in bench.caveat_tags:
        found = sorted(set(tags) & set(marks))
        if found:
            out.append(Departure("items", ", ".join(found), note))
    rule = bench.tie_rule_for(modality)
    if rule is not None and ties and ties != rule.policy:
        out.append(Departure("ties", ties, f"tie policy {ties} (--ties {ties}), not the authors' rule ({rule.policy}: "
                                           f"{rule.rule}); the figure under their rule is beside each value", rule.policy))
    run_modality = modality or settings.modality
    if run_modality == TEXT_ONLY and bench.text_only is None:
        out.append(Departure("modality", TEXT_ONLY, "scored text-only (--modality text), which the paper does not do: "
                                                    "its texts compared with each other, no image", "image"))
    elif run_modality not in (None, TEXT_ONLY) and run_modality not in bench.modalities:
        out.append(Departure("modality", run_modality, f"scored with --modality {run_modality}, not a setting of the "
                                                       f"paper", bench.modalities[0]))
    if settings.control:
        out.append(Departure("control", settings.control, f"a {settings.control} control (--control "
                                                          f"{settings.control}): a baseline, not the model's own figure"))
    if settings.limit:
        out.append(Departure("limit", settings.limit, f"the first {settings.limit} rows of each split only (--limit "
                                                      f"{settings.limit}), not the paper's full set"))
    if bench.clamped is not None and results:
        negative = sum(m.scores.n_negative for m in results if m.scores is not None)
        clamped = bench.clamped.departure(negative, sum(m.n_items or 0 for m in results), family)
        if clamped is not None:
            out.append(Departure(**clamped))
    return out


def _generic(entries: Sequence[Entry]) -> SummaryBlock:
    """A dataset no paper defines (or that records no benchmark): per entry its shape's headline."""
    rows = [_row(e.config, _Found(e.split, e.metrics, e.config, e.shape, None),
                 headline_present(None, e.shape, e.metrics.keys(), e.modality), True) for e in entries]
    shown = {k for r in rows for k in (*r.values, *r.na)}
    return SummaryBlock(benchmark=None, rows=tuple(rows), headline=tuple(k for k in METRIC_ORDER if k in shown))


def table_names(entries: Sequence[Entry]) -> list[str]:
    """Per entry, the name its tables go under: its benchmark (and dataset, where a run has two), else its dataset."""
    datasets: dict[str, set[str]] = {}
    for e in entries:
        if e.benchmark:
            datasets.setdefault(e.benchmark, set()).add(e.dataset)
    return [dataset_name(e.dataset) if not e.benchmark else
            e.benchmark if len(datasets[e.benchmark]) == 1 else f"{e.benchmark} ({dataset_name(e.dataset)})"
            for e in entries]


def summarize(entries: Sequence[Entry | Mapping[str, Any]],
              settings: RunSettings | Mapping[str, Any] | None = None,
              model: ModelInfo | Mapping[str, Any] | None = None) -> dict[str, SummaryBlock]:
    """The papers' aggregates of a run's entries (records, or their JSON), ``{table name: block}``. ``settings`` and
    ``model`` (the run's provenance) say where it departs from the authors' setting; given ``model``, each block is set
    beside the figures published for its checkpoint. A dataset with no benchmark gets its shape's headline per config."""
    records = [e if isinstance(e, Entry) else parse(Entry, dump(e), f"entries[{i}]") for i, e in enumerate(entries)]
    if not isinstance(settings, RunSettings):
        settings = parse(RunSettings, dump(settings or {}), "settings")
    grouped: dict[str, list[Entry]] = {}
    for name, e in zip(table_names(records), records):
        grouped.setdefault(name, []).append(e)
    if model is not None and not isinstance(model, ModelInfo):
        model = parse(ModelInfo, dump(model), "model")
    family = model.family if model is not None else None
    out: dict[str, SummaryBlock] = {}
    for name, es in grouped.items():
        bench = find(es[0].benchmark)
        block = _block(bench, es, settings, family) if bench is not None else _generic(es)
        guessed = tuple(dict.fromkeys(e.data.benchmark_note for e in es if e.data.benchmark_note))
        block = replace(block, notes=guessed + block.notes)
        if bench is not None and model is not None:
            rows, said = published_rows(bench, block, es, settings, model)
            block = replace(block, published=rows, notes=block.notes + (said,))
        out[name] = block
    return out


def published_rows(bench: Benchmark, block: SummaryBlock, entries: Sequence[Entry], settings: RunSettings,
                   model: ModelInfo) -> tuple[tuple[Published, ...], str]:
    """The figures published for the run's checkpoint beside ``block``'s rows (an aggregate's: its members' averaged as
    the group declares), each with the known causes of a difference; and the line saying which checkpoint they are of."""
    checkpoint = published_data.run_checkpoint(model.model_id, model.checkpoint)
    figures = published_data.published_for(checkpoint, bench.name) if checkpoint else []
    if checkpoint is None:
        return (), (f"no published figure for this model ({model.name}): it is no checkpoint of "
                    f"vlprobe/data/checkpoint_names.csv")
    shown = [r for r in block.rows if not r.pooled]
    versions = {e.config: e.dataset_version for e in entries}
    run_version = next(iter(set(versions.values())), None) if len(set(versions.values())) == 1 else None
    found = _found(entries, bench.config_tag)
    groups = {g.name: g for g in bench.groups}
    common = [f"this run scored the first {d.run} rows of each split only (--limit)" if d.setting == "limit" else
              f"{d.setting} {d.run}" + (f" (authors: {d.authors})" if d.authors else "") for d in block.departures]
    common += [f"dtype {model.dtype}"] if model.dtype not in (None, "float32") else []
    out: list[Published] = []
    for source in dict.fromkeys(f.source for f in figures):
        for metric in dict.fromkeys(f.metric for f in figures if f.source == source):
            mine = {f.config: f for f in figures if f.source == source and f.metric == metric}
            # per config or aggregate: the published value (%), its items, this run's items, the data version
            have: dict[str, tuple[float, int | None, int | None, str | None]] = {}
            for row in shown:
                if not row.has(metric):
                    continue
                if row.config in mine:
                    f = mine[row.config]
                    version = versions.get((row.source or row.config).split(" ")[0], run_version)
                    items = row.n_items if not settings.limit else (
                        bench.counts.get(row.config) if version == bench.data_version else None)
                    have[row.config] = (f.value, f.n_items, items, f.dataset_version or None)
                    said = published_data.version_note(f, version, items)
                    notes = ([said] if said else []) + _row_causes(found, entries, row, settings)
                elif row.aggregate and row.over and all(c in have for c in row.over):
                    group = groups.get(row.config)
                    micro = group is not None and group.average == "micro"
                    values, counts, ours_items, versions_of = zip(*(have[c] for c in row.over), strict=True)
                    weights = counts if micro else None
                    if weights is not None and None in weights:
                        continue  # a mean over items needs each figure's items
                    version = versions_of[0] if len(set(versions_of)) == 1 else None
                    have[row.config] = (_mean(values, weights), sum(weights) if weights else None,
                                        None if None in ours_items else sum(ours_items), version)
                    how = "mean over the items" if micro else "unweighted mean"
                    part = f" (this run's {len(row.over)} of {len(group.members)})" if group and row.missing else ""
                    notes = [f"the {how} of the source's {len(row.over)} figures{part}"]
                    if version and run_version and version != run_version:
                        notes.append(f"measured on the {version} version of the data, not {run_version}")
                    notes += [f"{c}: {theirs:,} items against {ours:,}" for c, theirs, ours in zip(row.over, counts, ours_items)
                              if theirs is not None and ours is not None and theirs != ours]
                else:
                    continue
                ours = row.values.get(metric, row.authors.get(metric))  # N/A: the figure the authors' code prints
                out.append(Published(source=source.label, config=row.config, metric=metric,
                                     value=have[row.config][0] / 100, ours=ours, dataset_version=have[row.config][3],
                                     note="; ".join(dict.fromkeys(notes + common))))
    if not out:
        return (), f"no published figure for checkpoint {checkpoint} on {bench.short}"
    labels = ", ".join(dict.fromkeys(p.source for p in out))
    return tuple(out), f"beside the figures published for checkpoint {checkpoint} (model {model.name}): {labels}"


def published_table(block: SummaryBlock) -> tuple[list[str], list[list[str]]]:
    """``block``'s published rows as a table (header, rows), in points to two decimals."""
    header = ["source", "config", "metric", "published", "this run", "difference", "known causes"]
    rows = [[p.source, p.config, block.names.get(p.metric, p.metric), f"{100 * p.value:.2f}",
             "-" if p.ours is None else f"{100 * p.ours:.2f}",
             "-" if p.difference is None else f"{100 * p.difference:+.2f}", p.note] for p in block.published]
    return header, rows


def _row_causes(found: Mapping[str, list[_Found]], entries: Sequence[Entry], row: SummaryRow,
                settings: RunSettings) -> list[str]:
    """The causes of a difference a config row's result holds: tied comparisons, texts read as one input."""
    out = []
    result = next((f for f in found.get(row.config, []) if f.split == row.split), None)
    if result is not None and result.metrics.n_ties:
        n = result.metrics.n_ties
        policy = f", counted {settings.ties}" if settings.ties else ""
        out.append(f"{n:,} tied comparison{'s' if n != 1 else ''} in this run{policy}")
    entry = next((e for e in entries if e.config == row.config and e.split == row.split), None)
    truncation = entry.data.truncation if entry is not None else None
    if truncation is not None and truncation.collapsed_items:
        out.append(f"{truncation.collapsed_items:,} items whose texts the model reads as one input")
    return out


def departure_text(block: SummaryBlock | None) -> str:
    """The block's departures in a few words ("ties lenient (authors: strict), limit 10"), "" when none."""
    return ", ".join(f"{d.setting} {d.run}" + (f" (authors: {d.authors})" if d.authors else "")
                     for d in (block.departures if block else ()))


def summary_title(name: str, block: SummaryBlock, *, with_source: bool = True) -> str:
    """The heading of a benchmark's summary, saying where the run departs from the authors' setting."""
    if block.source:
        said = "; ".join([block.source, *block.framings])
        title = f"{name}: the paper's aggregates" + (f" ({said})" if with_source else "")
    else:
        title = f"{name}: headline metrics per config"
    departs = departure_text(block)
    return title + (f", NOT the authors' setting: {departs}" if departs else "")
