"""The one place results.json files of older formats are read: :func:`upgrade` brings a parsed file to the current
format. Format 1 (or none): an entry's ``benchmark`` was its dataset's name, read as the benchmark that name meant
(the summary says so). Format 2: entries name their dataset's benchmark. A probe's file had no format."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from ..benchmarks import by_old_name, find
from .schema import (
    RESULTS_FORMAT,
    AuthorsRule,
    Document,
    EvaluationDocument,
    Metrics,
    ProbeDocument,
    SchemaError,
    dump,
    parse,
    portable_name,
)

OLD_FORMATS = ("vlprobe-results/1", "vlprobe-results/2")


def upgrade(doc: object, source: str = "this file") -> dict[str, Any]:
    """``doc`` (a parsed results.json) in the current format. ``source``: how messages name the file."""
    if not isinstance(doc, dict):
        raise SchemaError("", f"not a vlprobe results.json (a JSON {type(doc).__name__}, not an object)")
    fmt = doc.get("format")
    if fmt == RESULTS_FORMAT:
        return doc
    if fmt is not None and fmt not in OLD_FORMATS:
        raise SchemaError("format", f"{fmt!r} is not a vlprobe-results format this vlprobe reads "
                                    f"({', '.join((*OLD_FORMATS, RESULTS_FORMAT))})")
    provenance = doc.get("provenance", {})
    if isinstance(doc.get("rows"), list) and "results" not in doc:  # a probe run's, which had no format
        dataset = provenance.get("dataset") if isinstance(provenance, dict) else None
        if isinstance(dataset, dict) and "benchmark" not in dataset:
            bench = by_old_name(str(dataset.get("dataset") or ""))
            provenance = {**provenance, "dataset": {**dataset, "benchmark": bench.name if bench else None}}
        return {"format": RESULTS_FORMAT, "kind": "probe", "provenance": provenance, "rows": doc["rows"]}
    if not isinstance(doc.get("results"), list):
        raise SchemaError("", "not a vlprobe results.json (no 'results' list); write one with `vlprobe evaluate`")
    return {"format": RESULTS_FORMAT, "kind": "evaluate", "provenance": named(provenance),
            "results": [_entry(e, fmt, source) if isinstance(e, dict) else e for e in doc["results"]]}


def named(provenance: object) -> object:
    """A provenance (JSON) whose datasets each have their ``name`` (a file's from before they had one too)."""
    if isinstance(provenance, dict) and isinstance(provenance.get("datasets"), list):
        return {**provenance, "datasets": [
            {"name": portable_name(str(d.get("dataset"))), **d} if isinstance(d, dict) else d
            for d in provenance["datasets"]]}
    return provenance


def parse_document(doc: object, source: str = "this file") -> Document:
    """A parsed results.json of any format vlprobe wrote, as records; a :class:`SchemaError` names the field at fault."""
    doc = upgrade(doc, source)
    return parse(ProbeDocument, doc) if doc.get("kind") == "probe" else parse(EvaluationDocument, doc)


def _entry(entry: dict[str, Any], fmt: str | None, source: str) -> dict[str, Any]:
    if fmt == "vlprobe-results/2":
        known = isinstance(entry.get("benchmark"), str) and find(entry["benchmark"]) is not None
        return entry if known or entry.get("benchmark") is None else {**entry, "benchmark": None}
    named = entry.get("dataset") or entry.get("benchmark")
    bench = by_old_name(str(named or ""))
    out = {**entry, "dataset": named, "benchmark": bench.name if bench else None}
    if bench is not None:
        out["data"] = {**(entry.get("data") or {}), "benchmark_note": (
            f"{source} was written before vlprobe recorded each dataset's benchmark: dataset {named!r} is read "
            f"as {bench.name} by its name")}
    return out


def authors_from_scores(doc: EvaluationDocument, folder: Path) -> EvaluationDocument:
    """The figures under the benchmark's tie rule an older run lacks, recomputed from ``folder``'s scores.parquet."""
    wanted = {}
    for k, e in enumerate(doc.results):
        ties = e.policy(doc.provenance.settings.ties)
        bench = find(e.benchmark)
        rule = bench.tie_rule_for(e.modality) if bench is not None else None
        if rule is not None and e.authors_rule is None and ((ties and rule.policy != ties) or _not_available(e.metrics)):
            wanted[(e.dataset, e.config, e.split)] = (k, rule.policy)
    scores = Path(folder) / "scores.parquet"
    if not wanted or not scores.is_file():
        return doc
    import pyarrow.parquet as pq

    from .. import metric  # the metric module (evaluate, datasets): loaded only for such runs

    columns = pq.read_table(scores, columns=["dataset", "config", "split", "scores", "gold", "probabilities",
                                             "tags"]).to_pydict()
    keys = list(zip(columns["dataset"], columns["config"], columns["split"]))
    entries = list(doc.results)
    for key, (k, policy) in wanted.items():
        rows = [i for i, x in enumerate(keys) if x == key]
        if not rows:
            continue
        scored, gold, probs, tags = ([columns[name][i] for i in rows] for name in ("scores", "gold", "probabilities", "tags"))
        m = metric.compute(scored, gold, ties=policy, probabilities=probs if None not in probs else None,
                           threshold=doc.provenance.settings.threshold or 0.5, tags=tags if any(tags) else None,
                           bootstrap=0)
        entries[k] = replace(entries[k], authors_rule=AuthorsRule(policy, parse(Metrics, dump(m)), "scores.parquet"))
    return replace(doc, results=tuple(entries))


def _not_available(m: Metrics) -> bool:
    return bool(m.na_reason) or any(_not_available(t) for t in m.per_tag.values())
