"""The papers' aggregates of a run, computed by the rules each benchmark declares: the one place that
applies them. Generic machinery only: what a benchmark's paper reports and how it aggregates lives in
its module under ``vlprobe/benchmarks/`` (:class:`~vlprobe.benchmarks.Benchmark`), read here.

* :func:`headline_metrics`: the metrics a benchmark's paper reports, in the paper's order (a dataset
  of the user's own: the ones its item shape calls for);
* :func:`display_metrics`: what a printed table shows for one config (only metrics that mean
  something for its benchmark and item shape; ``results.json`` keeps everything);
* :func:`primary_metric`: the one metric a plot shows;
* :func:`summarize`: the papers' aggregates from ``results.json``-style entries, each naming the
  benchmark its dataset recorded (``entry["benchmark"]``, None for a dataset of the user's own);
* :func:`summary_title`: the heading of one benchmark's block.

Every value is a fraction in [0, 1], as the metric returns it (tables print percentages). A run whose
settings depart from the authors' own (another tie policy, ``--modality``, a control, ``--limit``, items
the authors do not score: a benchmark's ``caveat_tags``) gets ``departures`` in its block, said in the
heading; where only the tie policy differs, each row also carries ``authors``: its values under the
authors' tie rule, from the entries' ``authors_rule``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from .benchmarks import METRIC_ORDER, PROBABILITY_METRICS, TEXT_ONLY, Benchmark, find, shape_headline

__all__ = [
    "PROBABILITY_METRICS", "dataset_name", "display_metrics", "headline_metrics", "headline_present", "primary_metric",
    "summarize", "summary_title", "table_names",
]

_SKIP = {"n_items", "n_ties", "chance", "support", "ci", "per_tag", "na_reason"}


def dataset_name(dataset: str) -> str:
    """A dataset's short name, as tables label it: ``facebook/winoground`` -> ``winoground``;
    ``./travlr/`` -> ``travlr``. Not its benchmark: a folder records that in its vlprobe.yaml."""
    return Path(str(dataset).rstrip("/\\")).name.lower() or str(dataset)


def _shape(shape: Any) -> tuple[int, int] | None:
    if not shape:
        return None
    m, n = (int(x) for x in shape)
    return m, n


# ---- which metrics ---------------------------------------------------------------------------------

def headline_metrics(benchmark: str | None, shape: tuple[int, int] | None = None,
                     modality: str | None = None) -> list[str]:
    """The metrics ``benchmark``'s paper reports, in its order (the first is the one a plot shows).
    Probability metrics apply only where a run has probabilities: :func:`headline_present` applies
    that rule to a result. ``shape`` (m, n) decides where the benchmark has several framings (TraVLR:
    1 x 1 true/false statements -> macro-F1; 1 x 2 query vs foil -> acc_r) and for a dataset no
    paper defines (``benchmark`` None or not registered): m >= 2 -> text / image / group; 1 x 1 ->
    macro-F1; else acc_r. ``modality="text"`` (a text-only run): ``text`` for every benchmark."""
    if modality == TEXT_ONLY:
        return ["text"]
    bench = find(benchmark)
    s = _shape(shape)
    return bench.headline_for(s) if bench is not None else shape_headline(s)


def headline_present(benchmark: str | None, shape: tuple[int, int] | None, available: Iterable[str],
                     modality: str | None = None) -> list[str]:
    """The headline metrics a result actually has, under the papers' rules: a benchmark's
    ``probability_only`` metrics (VALSE's acc, min_p, AUROC) only with probabilities (the paper gives
    CLIP-like models acc_r only)."""
    avail = set(available)
    keys = [k for k in headline_metrics(benchmark, shape, modality) if k in avail]
    bench = find(benchmark)
    if bench is not None and "acc" not in avail:
        keys = [k for k in keys if k not in bench.probability_only]
    return keys


def primary_metric(benchmark: str | None, shape: tuple[int, int] | None, available: Iterable[str],
                   modality: str | None = None) -> str | None:
    """The one metric a plot shows for a config: the benchmark's ``primary`` (Winoground's group),
    else its first headline metric present (VALSE's acc_r, BLA's sentence accuracy, TraVLR's macro-F1
    or acc_r); for a dataset of the user's own, group where it has one."""
    avail = list(available)
    bench = find(benchmark)
    order = headline_present(benchmark, shape, avail, modality)
    first = (bench.primary if bench is not None else "group") if modality != TEXT_ONLY else None
    if first in order:
        order = [first] + [k for k in order if k != first]
    if order:
        return order[0]
    rest = [k for k in METRIC_ORDER if k in avail] + [k for k in avail if k not in METRIC_ORDER]
    return rest[0] if rest else None


def metric_synonyms(benchmark: str | None, shape: tuple[int, int] | None) -> dict[str, str]:
    """``{metric: the name kept}`` for the metrics that are the same quantity as another for every item of this
    shape, whatever the scores (ties included): with one row (m = 1) ``text`` = ``set_acc``; with two texts
    (n = 2) each row holds one gold-vs-other pair, so ``acc_r`` = ``set_acc`` = ``sentence_acc`` (and, for 1 x 2,
    ``text`` too). Of each group the name kept is the first the benchmark's headline uses, else ``acc_r`` (else
    ``set_acc``). Tables, results.csv and ``to_pandas()`` carry the kept name only; results.json keeps every key
    (the metric module's full output). Mixed shapes (None): none."""
    s = _shape(shape)
    if s is None:
        return {}
    m, n = s
    groups = []
    if n == 2:
        groups.append(["acc_r", "set_acc", "sentence_acc"] + (["text"] if m == 1 else []))
    elif m == 1 and n > 2:
        groups.append(["set_acc", "text"])
    headline = list(headline_metrics(benchmark, s))
    out: dict[str, str] = {}
    for group in groups:
        kept = next((k for k in headline if k in group), group[0])
        out.update({k: kept for k in group if k != kept})
    return out


def display_metrics(benchmark: str | None, shape: tuple[int, int] | None, available: Sequence[str],
                    modality: str | None = None) -> list[str]:
    """The metrics a printed table (and a run's plot) shows for one config: its headline metrics, the benchmark's
    or, for a dataset of the user's own, its item shape's (:func:`headline_metrics`); every other metric is in
    results.json and results.csv. A benchmark's ``probability_only`` metrics show only with probabilities (VALSE's
    AUROC, as its paper shows it). When no headline metric is present (mixed shapes, ``shape=None``; a result
    without them), the others that carry information for this shape, one name per quantity
    (:func:`metric_synonyms`; for m >= 2 items the row-pooled set metrics left out)."""
    avail = list(available)
    bench = find(benchmark)
    s = _shape(shape)
    head = headline_present(benchmark, s, avail, modality) if (bench is not None or s is not None) else []
    drop: set[str] = set()
    if s is not None:
        m, n = s
        if m == 1:
            drop |= {"text", "image", "group"}
            if n <= 2:
                drop |= {"set_acc", "set_error", "sentence_acc"}
        else:
            drop |= {"set_acc", "set_error", "sentence_acc"}
    if bench is not None and "acc" not in avail:
        drop |= set(bench.probability_only)
    drop |= set(metric_synonyms(benchmark, s))
    if head:
        return head
    ordered = [k for k in METRIC_ORDER if k in avail] + [k for k in avail if k not in METRIC_ORDER]
    return [k for k in ordered if k not in drop]


# ---- aggregates ------------------------------------------------------------------------------------

def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))


def _present(metrics: dict[str, Any]) -> list[str]:
    """The metrics of a result: its finite numbers and, where its metrics are not available (every
    item tied: ``na_reason``), the metrics it would have had."""
    na = bool(metrics.get("na_reason"))
    return [k for k, v in metrics.items() if _finite(v) or (na and v is None and k not in _SKIP)]


def _pick_split(splits: Sequence[str]) -> str:
    return "test" if "test" in splits else splits[0]


@dataclass
class _Found:
    """One config's result in a run: from its own entry, or from a pooled entry's per-tag results."""

    split: str
    metrics: dict[str, Any]
    source: str  # the config itself, or "<pooled config> (per tag <tag>)"
    shape: tuple[int, int] | None
    authors: dict[str, Any] | None  # the same result under the authors' tie rule, where the run's is another


def _row(config: str, found: _Found, keys: Sequence[str], paper_config: str | None = None) -> dict[str, Any]:
    metrics = found.metrics
    ci = metrics.get("ci") or {}
    row: dict[str, Any] = {
        "config": config, "split": found.split, "paper_config": paper_config or config,
        "values": {k: float(metrics[k]) for k in keys if _finite(metrics.get(k))},
        "n_items": metrics.get("n_items"), "from": found.source,
    }
    if metrics.get("na_reason"):  # not available: shown as "N/A (reason)", never as a number
        row["na_reason"] = metrics["na_reason"]
        row["na"] = [k for k in keys if not _finite(metrics.get(k))]
    cis = {k: [float(ci[k][0]), float(ci[k][1])] for k in row["values"] if k in ci and ci[k] is not None
           and len(ci[k]) == 2 and all(_finite(x) for x in ci[k])}
    if cis:
        row["ci"] = cis
    if found.authors is not None:
        row["authors"] = {k: float(found.authors[k]) for k in row["values"] if _finite(found.authors.get(k))}
    return row


def _found(entries: Sequence[dict[str, Any]], tag: str | None) -> dict[str, list[_Found]]:
    """config -> its results, from the config's own entries, else from another entry's per-tag
    results (VALSE ``all`` -> ``instrument=existence``; the most specific first: a piece config
    before ``all``, fewer items, the same values)."""
    own: dict[str, list[_Found]] = {}
    for e in entries:
        authors = (e.get("authors_rule") or {}).get("metrics")
        own.setdefault(e["config"], []).append(_Found(e["split"], e["metrics"], e["config"], _shape(e.get("shape")),
                                                      authors))
    if tag:
        derived: dict[str, list[_Found]] = {}
        for e in entries:
            authors_tags = ((e.get("authors_rule") or {}).get("metrics") or {}).get("per_tag") or {}
            for name, m in (e["metrics"].get("per_tag") or {}).items():
                key, _, value = str(name).partition("=")
                if key == tag and value and value != e["config"] and value not in own:
                    derived.setdefault(value, []).append(_Found(e["split"], m, f"{e['config']} (per tag {name})",
                                                                _shape(e.get("shape")), authors_tags.get(name)))
        for config, found in derived.items():
            found.sort(key=lambda f: 0 if not f.source.startswith("all ") else 1)
            own[config] = found
    return own


def _pools(found: list[_Found], tag: str | None, config: str) -> bool:
    """Whether a config's results pool other configs (per-tag values ``tag=<another config>``)."""
    if not tag:
        return False
    return any(str(name).partition("=")[0] == tag and str(name).partition("=")[2] != config
               for f in found for name in (f.metrics.get("per_tag") or {}))


def _has(row: dict[str, Any], key: str) -> bool:
    """Whether a summary row shows ``key``: as a number, or as N/A with its reason."""
    return key in row["values"] or key in (row.get("na") or [])


def _mean_row(name: str, label: str, rows: list[dict[str, Any]], members: Sequence[str], keys: Sequence[str],
              split: str) -> dict[str, Any]:
    """The unweighted mean of the members' values; a metric that is N/A for a present member is N/A
    for the mean too (a mean over the others would be another aggregate), with that member named."""
    have = {r["config"]: r for r in rows}
    present = [c for c in members if c in have]
    values, authors, na, reasons = {}, {}, [], []
    for k in keys:
        unavailable = [c for c in present if k in (have[c].get("na") or [])]
        if unavailable:
            na.append(k)
            for c in unavailable:
                reason = f"{c}: {have[c]['na_reason']}"
                if reason not in reasons:
                    reasons.append(reason)
            continue
        vals = [have[c]["values"][k] for c in present if k in have[c]["values"]]
        if vals and len(vals) == len(present):
            values[k] = sum(vals) / len(vals)
        theirs = [have[c]["authors"][k] for c in present if k in (have[c].get("authors") or {})]
        if theirs and len(theirs) == len(present):
            authors[k] = sum(theirs) / len(theirs)
    missing = [c for c in members if c not in have]
    # a member that is itself a mean over fewer members than declared makes this mean one too
    partial = [c for c in present if have[c].get("complete") is False]
    row = {"config": name, "split": split, "paper_config": name, "label": label, "aggregate": True,
           "values": values, "over": present, "missing": missing, "complete": not missing and not partial,
           "from": f"unweighted mean of {len(present)} of {len(members)}"}
    if partial:
        row["partial"] = partial
    if authors:
        row["authors"] = authors
    if na:
        row["na"], row["na_reason"] = na, "not available for " + "; ".join(reasons)
    return row


def _modality(entries: Sequence[dict[str, Any]]) -> str | None:
    """``"text"`` when every entry was scored text-only (``data.modality``), else None."""
    found = {(e.get("data") or {}).get("modality") for e in entries}
    return TEXT_ONLY if entries and found == {TEXT_ONLY} else None


def _plural(noun: str) -> str:
    return noun if noun.endswith("s") else noun + "s"


def _config_rows(bench: Benchmark, entries: list[dict[str, Any]], modality: str | None,
                 notes: list[str]) -> tuple[list[dict[str, Any]], list[str]]:
    """One row per config (per declared split, where the benchmark reports several), in the
    benchmark's order, and the expected configs (or config/split pairs) the run lacks."""
    found = _found(entries, bench.config_tag)
    order = list(bench.configs) + [c for c in found if c not in bench.configs]
    rows: list[dict[str, Any]] = []
    for config in order:
        if config not in found:
            continue
        results = found[config]
        if bench.configs and config not in bench.configs and _pools(results, bench.config_tag, config):
            continue  # a pooled config (VALSE's `all`, BLA's `all`): its per-tag values are the configs'
        if bench.splits:  # one row per test split (TraVLR's in- and out-of-distribution sets)
            picked = sorted([f for f in results if f.split.startswith("test")] or results, key=lambda f: f.split)
        else:
            split = _pick_split([f.split for f in results])
            picked = [next(f for f in results if f.split == split)]
        for f in picked:
            keys = headline_present(bench.name, f.shape, _present(f.metrics), modality)
            row = _row(config, f, keys, bench.paper_config(config))
            if config in bench.parts:
                row[bench.part_name] = bench.parts[config]
            framing = bench.framing(f.shape)
            if framing is not None:
                row["framing"] = framing.label
            rows.append(row)
    if bench.splits:
        have = {(r["config"], r["split"]) for r in rows}
        missing = [f"{c}/{s}" for c in bench.configs for s in bench.splits if (c, s) not in have]
    else:
        missing = [c for c in bench.configs if c not in {r["config"] for r in rows}]
    return rows, missing


def _block(bench: Benchmark, entries: list[dict[str, Any]], settings: Mapping[str, Any]) -> dict[str, Any]:
    """One registered benchmark's aggregates (see :func:`summarize`)."""
    modality = _modality(entries)
    text_only = modality == TEXT_ONLY
    notes: list[str] = []
    rows, missing = _config_rows(bench, entries, modality, notes)
    noun = _plural(bench.config_noun)
    expected = len(bench.configs) * max(1, len(bench.splits))
    spanning = any(set(g.members) >= set(bench.configs) for g in bench.groups)
    if missing and rows and not spanning:  # a group over every config says it instead
        what = f"{bench.config_noun}/test-split pairs" if bench.splits else noun
        notes.insert(0, f"{expected - len(missing)} of {expected} {what} scored (missing: {', '.join(missing)})")
    if not rows:
        tag = f" (configs or per-tag {bench.config_tag} results)" if bench.config_tag else ""
        notes.append(f"no {bench.display} {bench.config_noun} scored{tag}")
    headline = [k for k in headline_metrics(bench.name, None, modality) if any(_has(r, k) for r in rows)]
    config_rows = [r for r in rows if not bench.configs or r["config"] in bench.configs]
    if config_rows:
        split = _pick_split([r["split"] for r in config_rows])
        for group in bench.groups:
            keys = [k for k in (group.metrics or headline)
                    if all(_has(r, k) for r in config_rows if r["config"] in group.members)]
            row = _mean_row(group.name, group.label, config_rows + [r for r in rows if r.get("aggregate")],
                            group.members, keys, split)
            if not row["over"] or not (row["values"] or row.get("na")):
                continue
            rows.append(row)
            if row["missing"]:
                notes.append(f"{group.label} over {len(row['over'])} of {len(group.members)} {noun} (missing: "
                             f"{', '.join(row['missing'])}): not the paper's {group.label}")
            elif not row["complete"]:
                notes.append(f"{group.label}: some of its members are means over fewer than theirs "
                             f"({', '.join(row['partial'])}): not the paper's {group.label}")
    framings = {r.get("framing") for r in rows}
    notes += [f.note for f in bench.framings if f.note and f.label in framings]
    block: dict[str, Any] = {"benchmark": bench.name, "source": bench.source, "headline": headline, "rows": rows,
                             "complete": bool(rows) and not missing, "notes": notes}
    used = [f.label for f in bench.framings if f.label in framings]
    if used:  # the heading names what the values are (TraVLR's 1 x 1 macro-F1, or vlprobe's 1 x 2 acc_r)
        block["framings"] = used
    rule = bench.tie_rule_for(modality)
    if text_only:  # the paper's own text-only measure (SugarCREPE++'s TOT), else no paper's aggregates
        block["source"] = bench.text_only.source if bench.text_only is not None else None
        if bench.text_only is not None:
            block["names"] = dict(bench.text_only.names)
    elif bench.metric_names:
        block["names"] = dict(bench.metric_names)
    if rule is not None:
        block["tie_policy"] = {"authors": rule.policy, "rule": rule.rule}
        if settings.get("ties"):
            block["tie_policy"]["run"] = settings["ties"]
    tags = {str(t).lower() for e in entries for t in (e["metrics"].get("per_tag") or {})}
    departures = _departures(bench, settings, modality, tags)
    if departures:
        block["departures"] = departures
    return block


def _departures(bench: Benchmark, settings: Mapping[str, Any], modality: str | None,
                tags: Iterable[str] = ()) -> list[dict[str, Any]]:
    """How the run departs from the authors' own setting, one entry each: ``{"setting", "run",
    "authors", "note"}`` (``authors``: their value of the setting, where they have one). ``tags``: the
    per-tag results' names of the run's entries; a benchmark's ``caveat_tags`` among them (items its
    authors do not score: VALSE's invalid ones, VL-CheckList's records past the first MAX_NUM/2) is one."""
    out = []
    for marks, note in bench.caveat_tags:
        found = sorted(set(tags) & set(marks))
        if found:
            out.append({"setting": "items", "run": ", ".join(found), "authors": None, "note": note})
    rule = bench.tie_rule_for(modality)
    ties = settings.get("ties")
    if rule is not None and ties and ties != rule.policy:
        out.append({"setting": "ties", "run": ties, "authors": rule.policy,
                    "note": f"tie policy {ties} (--ties {ties}), not the authors' rule ({rule.policy}: {rule.rule}); "
                            f"the figure under their rule is beside each value"})
    run_modality = modality or settings.get("modality")
    if run_modality == TEXT_ONLY and bench.text_only is None:
        out.append({"setting": "modality", "run": TEXT_ONLY, "authors": "image",
                    "note": "scored text-only (--modality text), which the paper does not do: its texts compared "
                            "with each other, no image"})
    elif run_modality not in (None, TEXT_ONLY) and run_modality not in bench.modalities:
        out.append({"setting": "modality", "run": run_modality, "authors": bench.modalities[0],
                    "note": f"scored with --modality {run_modality}, not a setting of the paper"})
    if settings.get("control"):
        control = settings["control"]
        out.append({"setting": "control", "run": control, "authors": None,
                    "note": f"a {control} control (--control {control}): a baseline, not the model's own figure"})
    if settings.get("limit"):
        limit = settings["limit"]
        out.append({"setting": "limit", "run": limit, "authors": None,
                    "note": f"the first {limit} rows of each split only (--limit {limit}), not the paper's full set"})
    return out


def _generic(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """A dataset no paper defines (or that records no benchmark): per entry its shape's headline."""
    rows = []
    for e in entries:
        f = _Found(e["split"], e["metrics"], e["config"], _shape(e.get("shape")),
                   (e.get("authors_rule") or {}).get("metrics"))
        keys = headline_present(None, f.shape, _present(f.metrics), (e.get("data") or {}).get("modality"))
        rows.append(_row(e["config"], f, keys))
    shown = {k for r in rows for k in list(r["values"]) + list(r.get("na") or [])}
    return {"benchmark": None, "source": None,
            "headline": sorted(shown, key=lambda k: METRIC_ORDER.index(k) if k in METRIC_ORDER else 99),
            "rows": rows, "complete": True, "notes": []}


def table_names(entries: Sequence[dict[str, Any]]) -> list[str]:
    """Per entry, the name its benchmark's tables and summary block go under: the benchmark it
    records, else its dataset's short name; where one run scored two datasets of one benchmark,
    ``<benchmark> (<dataset>)`` for each."""
    datasets: dict[str, set[str]] = {}
    for e in entries:
        if e.get("benchmark"):
            datasets.setdefault(e["benchmark"], set()).add(str(e.get("dataset")))
    out = []
    for e in entries:
        bench, name = e.get("benchmark"), dataset_name(str(e.get("dataset") or ""))
        if not bench:
            out.append(name)
        else:
            out.append(bench if len(datasets[bench]) == 1 else f"{bench} ({name})")
    return out


def summarize(entries: Sequence[dict[str, Any]], settings: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The papers' aggregates per benchmark, from ``results.json``-style entries (each with
    ``benchmark``: the registered benchmark its dataset records, None for a dataset of the user's
    own; ``dataset``, ``config``, ``split``, ``shape``, ``metrics``, and ``authors_rule`` where the run's
    tie policy is not the authors'). ``settings``: the run's (``provenance.settings``: ties, modality,
    control, limit), to say where it departs from the authors' own.

    Returns ``{name: block}`` (name: :func:`table_names`), each block ``{"benchmark", "source",
    "headline", "rows", "complete", "notes"}`` and, where they apply, ``names`` (the paper's names of
    metrics: CREPE's R@1, SugarCREPE++'s TOT), ``tie_policy`` (``{"authors", "rule", "run"}``) and
    ``departures``. Each row is ``{"config", "split", "paper_config", "values": {metric: fraction},
    "ci", "n_items", "from"}``, with the config's part (``piece`` for VALSE), ``framing`` (TraVLR), ``authors`` (its
    values under the authors' tie rule) and ``na``/``na_reason`` where they apply; aggregate rows
    (VALSE's ``avg``, SugarCREPE's ``add``) add ``"aggregate": True``, ``"label"``, ``"over"``,
    ``"missing"`` and ``"complete"``. ``complete`` is False (and ``notes`` says why) when the paper's
    aggregate needs configs the entries do not have, e.g. 3 of VALSE's 11 instruments.

    A registered benchmark is summarised by its declaration (:class:`~vlprobe.benchmarks.Benchmark`):
    its configs from their own entries or a pooled entry's per-tag results, its groups' unweighted
    means, its splits, framings and tie rule. A text-only run (``data.modality`` text) has ``text``
    as its headline. A dataset that records no benchmark gets its shape's headline per config and split.
    """
    settings = settings or {}
    grouped: dict[str, list[dict[str, Any]]] = {}
    for name, e in zip(table_names(entries), entries):
        grouped.setdefault(name, []).append(e)
    out: dict[str, Any] = {}
    for name, es in grouped.items():
        bench = find(es[0].get("benchmark"))
        out[name] = _block(bench, es, settings) if bench is not None else _generic(es)
        guessed = list(dict.fromkeys(n for e in es if (n := (e.get("data") or {}).get("benchmark_note"))))
        out[name]["notes"] = guessed + out[name]["notes"]
    return out


def departure_text(block: Mapping[str, Any]) -> str:
    """The block's departures from the authors' setting in a few words ("ties lenient (authors:
    strict), limit 10"), "" when there are none."""
    parts = []
    for d in block.get("departures") or []:
        theirs = f" (authors: {d['authors']})" if d.get("authors") else ""
        parts.append(f"{d['setting']} {d['run']}{theirs}")
    return ", ".join(parts)


def summary_title(name: str, block: Mapping[str, Any], *, with_source: bool = True) -> str:
    """The heading of a benchmark's summary: "the paper's aggregates (source)" only where a paper
    defines them (the benchmark's ``source``, and the framings of its rows, which name the metric shown:
    TraVLR's "true/false (1 x 1, macro-F1)"); any other dataset, a user's own or the synthetic
    winoground_style, gets "headline metrics per config". A run that departs from the authors'
    setting says so: "..., NOT the authors' setting: ties lenient (authors: strict)"."""
    if block.get("source"):
        said = "; ".join([block["source"], *block.get("framings", ())])
        title = f"{name}: the paper's aggregates" + (f" ({said})" if with_source else "")
    else:
        title = f"{name}: headline metrics per config"
    departs = departure_text(block)
    return title + (f", NOT the authors' setting: {departs}" if departs else "")
