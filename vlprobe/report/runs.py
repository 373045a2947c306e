"""Runs read back: ``results.json`` files checked field by field (one line per problem, naming the file
and the entry) and labelled; ``vlprobe evaluate``'s and ``vlprobe probe``'s alike."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .. import summary as summary_rules
from ..benchmarks import find
from ..errors import ArgumentError, DatasetError, SettingError
from ..reading import RESULTS_BYTES, FileError, load_json
from ..results import entry_benchmark, records_benchmark


class ReportError(DatasetError, ValueError):
    """A results file that cannot be read; one line per problem, naming the file and the entry."""


@dataclass
class Run:
    path: Path
    label: str
    doc: dict[str, Any]

    @property
    def kind(self) -> str:
        """``"evaluate"``, or ``"probe"`` for a ``vlprobe probe`` run (:mod:`.probes`), which has rows
        instead of results: it adds no entries to the evaluate tables."""
        return "probe" if is_probe_document(self.doc) else "evaluate"

    @property
    def settings(self) -> dict[str, Any]:
        return (self.doc.get("provenance") or {}).get("settings") or {}

    @property
    def results(self) -> list[dict[str, Any]]:
        """The entries, each with ``registered``: the benchmark its dataset records (read by the one
        rule, :func:`vlprobe.results.entry_benchmark`, which reads a file from before datasets recorded
        it by its dataset's name, and says so in a note), and ``benchmark``: the name its tables go
        under (:func:`vlprobe.summary.table_names`: that benchmark, else the dataset's own name); and,
        where the run's tie policy is not the authors' rule and the file does not hold the figures
        under theirs, ``authors_rule`` recomputed from the run's scores.parquet when it is beside."""
        if not hasattr(self, "_entries"):
            fmt = self.doc.get("format")
            entries = []
            for r in self.doc.get("results", []):
                registered = entry_benchmark(r, fmt)
                entry = dict(r, benchmark=registered)
                if registered and not records_benchmark(fmt):
                    entry["data"] = {**(r.get("data") or {}), "benchmark_note": (
                        f"{self.path} was written before vlprobe recorded each dataset's benchmark: dataset "
                        f"{r.get('dataset') or r.get('benchmark')!r} is read as {registered} by its name")}
                entries.append(entry)
            _authors_from_scores(self, entries)
            names = summary_rules.table_names(entries)
            self._entries = [dict(e, registered=e["benchmark"], benchmark=name) for e, name in zip(entries, names)]
        return self._entries

    @property
    def summary(self) -> dict[str, Any]:
        """The papers' aggregates of this run, recomputed under the current rules."""
        if not hasattr(self, "_summary"):
            entries = [dict(r, benchmark=r["registered"]) for r in self.results]
            self._summary = summary_rules.summarize(entries, self.settings)
        return self._summary

    def caveats(self) -> list[str]:
        s = self.doc.get("provenance", {}).get("settings", {})
        out = []
        if s.get("limit"):
            out.append(f"first {s['limit']} rows per config only (--limit)")
        if s.get("control"):
            out.append(f"{s['control']} control")
        if s.get("modality") not in (None, "image"):
            out.append(f"modality {s['modality']}")
        return out


def _authors_from_scores(run: Run, entries: list[dict[str, Any]]) -> None:
    """Where the run's tie policy is not an entry's benchmark's authors' rule and the entry holds no
    figures under theirs (a run from before vlprobe recorded them), recompute them from the run's
    scores.parquet, when it lies beside its results.json; else leave the entry as it is."""
    ties = run.settings.get("ties")
    wanted = {}
    for k, e in enumerate(entries):
        bench = find(e.get("benchmark"))
        rule = bench.tie_rule_for((e.get("data") or {}).get("modality")) if bench is not None else None
        if rule is not None and ties and rule.policy != ties and not e.get("authors_rule"):
            wanted[(str(e.get("dataset")), e["config"], e["split"])] = (k, rule.policy)
    scores = Path(run.path).parent / "scores.parquet"
    if not wanted or not scores.is_file():
        return
    import pyarrow.parquet as pq

    from .. import metric  # the metric module (evaluate, datasets): loaded only for such old runs

    table = pq.read_table(scores, columns=["dataset", "config", "split", "scores", "gold", "probabilities", "tags"])
    rows: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for row in table.to_pylist():
        key = (row["dataset"], row["config"], row["split"])
        if key in wanted:
            rows.setdefault(key, []).append(row)
    threshold = run.settings.get("threshold", 0.5)
    for key, (k, policy) in wanted.items():
        found = rows.get(key)
        if not found:
            continue
        probs = [r["probabilities"] for r in found]
        tags = [r["tags"] for r in found]
        m = metric.compute([r["scores"] for r in found], [r["gold"] for r in found], ties=policy,
                           probabilities=probs if all(p is not None for p in probs) else None,
                           threshold=threshold, tags=tags if any(tags) else None, bootstrap=0)
        entries[k]["authors_rule"] = {"ties": policy, "metrics": m, "from": "scores.parquet"}


_SKIP = {"n_items", "n_ties", "chance", "support", "ci", "per_tag", "na_reason"}


def _number(v: Any) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))


def _fraction(v: Any) -> bool:
    """None, a non-finite number (a metric with nothing to average), or a number in [0, 1]."""
    return v is None or not np.isfinite(v) or -1e-9 <= v <= 1 + 1e-9


def _metrics_problems(m: dict[str, Any], where: str) -> list[str]:
    out = []
    for key in ("n_items", "n_ties"):
        low = 1 if key == "n_items" else 0
        v = m.get(key)
        if key in m and (isinstance(v, bool) or not isinstance(v, (int, float)) or not float(v).is_integer()
                         or v < low):
            what = "items (1 or more)" if key == "n_items" else "tied comparisons (0 or more)"
            out.append(f"{where}: {key!r} must be a whole number of {what}, got {v!r}")
    for key, v in m.items():
        if key in _SKIP or isinstance(v, (dict, list)):
            continue
        if not _number(v):
            out.append(f"{where}: metric {key!r} is {v!r}, not a number")
        elif not _fraction(v):
            out.append(f"{where}: metric {key!r} is {v!r}, outside [0, 1] (metrics are fractions)")
    for block in ("chance", "support"):
        if block in m and not isinstance(m[block], dict):
            out.append(f"{where}: {block!r} must be a mapping of metric -> number")
        elif block in m and any(not _number(v) for v in m[block].values()):
            out.append(f"{where}: {block!r} holds a value that is not a number")
        elif block == "chance" and block in m and any(not _fraction(v) for v in m[block].values()):
            out.append(f"{where}: 'chance' holds a value outside [0, 1]")
        elif block == "support" and block in m and any(v is not None and v < 0 for v in m[block].values()):
            out.append(f"{where}: 'support' holds a negative count")
    ci = m.get("ci")
    if ci is not None:
        if not isinstance(ci, dict):
            out.append(f"{where}: 'ci' must be a mapping of metric -> [low, high]")
        else:
            for key, v in ci.items():
                if v is not None and not (isinstance(v, list) and len(v) == 2 and all(_number(x) for x in v)):
                    out.append(f"{where}: ci[{key!r}] must be [low, high], got {v!r}")
                elif v is not None and None not in v and not (_fraction(v[0]) and _fraction(v[1]) and v[0] <= v[1]):
                    out.append(f"{where}: ci[{key!r}] must be [low, high] with 0 <= low <= high <= 1, got {v!r}")
    tags = m.get("per_tag")
    if tags is not None:
        if not isinstance(tags, dict) or any(not isinstance(v, dict) for v in tags.values()):
            out.append(f"{where}: 'per_tag' must be a mapping of tag -> metrics")
        else:
            for tag, tm in tags.items():
                out += _metrics_problems(tm, f"{where} per_tag[{tag!r}]")
    return out


def is_probe_document(doc: Any) -> bool:
    """A ``vlprobe probe`` results.json: a ``rows`` list and no ``results`` list."""
    return isinstance(doc, dict) and isinstance(doc.get("rows"), list) and "results" not in doc


def validate_probe_document(doc: dict[str, Any], path: str | os.PathLike) -> list[str]:
    """Problems of a probe's results.json against what the report reads, one line each, naming the
    file and the row: ``rows`` of mappings with ``task``, ``setting``, ``transfer``, ``split``,
    ``test_modality`` (strings), ``train_modality`` (a string or null), ``train_size`` (a whole
    number), ``macro_f1`` (a fraction or null), and optionally ``seed`` (a whole number or null) and
    ``ci_low``/``ci_high``/``chance`` (fractions or null); ``provenance`` a mapping."""
    problems = []
    if not isinstance(doc.get("provenance", {}), dict):
        problems.append(f"{path}: 'provenance' must be a mapping")
    if not doc["rows"]:
        problems.append(f"{path}: a probe run with no rows")
    for i, r in enumerate(doc["rows"]):
        where = f"{path}: rows[{i}]"
        if not isinstance(r, dict):
            problems.append(f"{where}: a row must be a mapping, got {type(r).__name__}")
            continue
        where += "".join(f" {r.get(k)}" for k in ("task", "setting", "test_modality", "split") if isinstance(r.get(k), str))
        for key in ("task", "setting", "transfer", "split", "test_modality"):
            if not isinstance(r.get(key), str):
                problems.append(f"{where}: {key!r} must be a string, got {r.get(key)!r}")
        if r.get("train_modality") is not None and not isinstance(r["train_modality"], str):
            problems.append(f"{where}: 'train_modality' must be a string or null, got {r['train_modality']!r}")
        for key in ("train_size", "seed"):
            v = r.get(key)
            if (key == "train_size" or v is not None) and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
                problems.append(f"{where}: {key!r} must be a whole number (0 or more), got {v!r}")
        for key in ("macro_f1", "ci_low", "ci_high", "chance"):
            v = r.get(key)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1):
                problems.append(f"{where}: {key!r} must be a fraction in [0, 1] or null, got {v!r}")
    return problems



def validate_document(doc: Any, path: str | os.PathLike) -> list[str]:
    """Problems of a results.json against the format this module reads, one line each, naming the
    file and the entry: a ``results`` list of entries, each with ``dataset`` (or ``benchmark``),
    ``config``, ``split`` (strings) and ``metrics`` (a mapping of metric -> number, with optional
    ``chance``, ``support``, ``ci``, ``per_tag``); optional ``provenance`` and ``summary`` mappings."""
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        return [f"{path}: not a vlprobe results.json (no 'results' list); write one with `vlprobe evaluate`"]
    problems = []
    fmt = doc.get("format")
    if fmt is not None and not str(fmt).startswith("vlprobe-results/"):
        problems.append(f"{path}: format {fmt!r} is not a vlprobe-results format")
    for key in ("provenance", "summary"):
        if key in doc and not isinstance(doc[key], dict):
            problems.append(f"{path}: {key!r} must be a mapping, got {type(doc[key]).__name__}")
    if isinstance(doc.get("provenance"), dict):
        for key in ("model", "settings"):
            if key in doc["provenance"] and not isinstance(doc["provenance"][key], dict):
                problems.append(f"{path}: provenance.{key} must be a mapping")
        settings = doc["provenance"].get("settings")
        if isinstance(settings, dict):
            problems += _settings_problems(settings, f"{path}: provenance.settings")
    for i, entry in enumerate(doc["results"]):
        if not isinstance(entry, dict):
            problems.append(f"{path}: results[{i}]: an entry must be a mapping, got {type(entry).__name__}")
            continue
        name = "/".join(str(entry.get(k)) for k in ("dataset", "config", "split") if entry.get(k) is not None)
        where = f"{path}: results[{i}]" + (f" ({name})" if name else "")
        if not isinstance(entry.get("dataset") or entry.get("benchmark"), str):
            problems.append(f"{where}: missing 'dataset' (or 'benchmark'): the dataset's name")
        for key in ("config", "split"):
            if key not in entry:
                problems.append(f"{where}: missing {key!r}")
            elif not isinstance(entry[key], str):
                problems.append(f"{where}: {key!r} must be a string, got {entry[key]!r}")
        if "metrics" not in entry:
            problems.append(f"{where}: missing 'metrics'")
        elif not isinstance(entry["metrics"], dict):
            problems.append(f"{where}: 'metrics' must be a mapping of metric -> value, got "
                            f"{type(entry['metrics']).__name__}")
        else:
            problems += _metrics_problems(entry["metrics"], where)
        shape = entry.get("shape")
        if shape is not None and not (isinstance(shape, list) and len(shape) == 2
                                      and all(isinstance(x, int) and x >= 1 for x in shape)):
            problems.append(f"{where}: 'shape' must be [m, n] or null, got {shape!r}")
    return problems


def _settings_problems(st: dict[str, Any], where: str) -> list[str]:
    """The settings the report reads (caveats, the CI level) must be what evaluate writes."""
    out = []

    def whole(key: str, low: int) -> None:
        v = st.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < low):
            out.append(f"{where}.{key} must be a whole number ({low} or more) or null, got {v!r}")

    whole("limit", 1)
    whole("bootstrap", 0)
    whole("seed", 0)
    c = st.get("confidence")
    if c is not None and (isinstance(c, bool) or not isinstance(c, (int, float)) or not 0 < c < 1):
        out.append(f"{where}.confidence must be a level strictly between 0 and 1 or null, got {c!r}")
    for key in ("control", "modality", "ties"):
        if st.get(key) is not None and not isinstance(st[key], str):
            out.append(f"{where}.{key} must be a string or null, got {st[key]!r}")
    return out


def load_runs(paths: Sequence[str | os.PathLike], labels: Sequence[str] | None = None, *,
              probes: bool = False) -> list[Run]:
    """Read and check every file; all problems of all files are raised together (one line each).
    ``labels``: one name per run, shown in every table instead of the model folder's name.
    ``probes``: also take ``vlprobe probe`` runs (:mod:`.probes`; ``vlprobe report`` does), which
    are otherwise refused as files with no 'results' list."""
    if not paths:
        raise SettingError("give at least one results.json file or run folder")
    if labels is not None:
        if isinstance(labels, str) or not all(isinstance(x, str) and x.strip() for x in labels):
            raise ArgumentError("labels", labels, "must be a list of non-empty names, one per run")
        if len(labels) != len(paths):
            raise ArgumentError("labels", list(labels), f"give one label per run: {len(paths)} run(s), "
                                                        f"{len(labels)} label(s)")
        if len(set(labels)) != len(labels):
            raise ArgumentError("labels", list(labels), "each run needs its own label")
    runs, problems = [], []
    for k, p in enumerate(paths):
        path = Path(p)
        if path.is_dir():
            path = path / "results.json"
        if not path.is_file():
            raise SettingError(f"{path}: no such results file (give results.json files or run folders)")
        try:
            doc = load_json(path, "results file", RESULTS_BYTES)  # bounded: size, nesting (vlprobe.reading)
        except FileError as err:
            problems.append(str(err))
            continue
        except json.JSONDecodeError as err:
            problems.append(f"{path}: not a JSON file ({err})")
            continue
        probe = probes and is_probe_document(doc)
        found = validate_probe_document(doc, path) if probe else validate_document(doc, path)
        problems += found
        if not found:
            runs.append(Run(path, labels[k] if labels is not None else _label(doc, path), doc))
    if problems:
        raise ReportError("\n".join(problems))
    seen: dict[str, int] = {}
    for run in runs:  # make labels unique (labels given are unique already)
        seen[run.label] = seen.get(run.label, 0) + 1
        if seen[run.label] > 1:
            run.label = f"{run.label} #{seen[run.label]}"
    return runs


def _label(doc: dict[str, Any], path: Path) -> str:
    model = doc.get("provenance", {}).get("model", {})
    name = Path(str(model.get("model_id") or path.parent.name)).name
    bits = [name] + (["probe"] if is_probe_document(doc) else [])
    if model.get("dtype") and model["dtype"] != "float32":
        bits.append(model["dtype"])
    s = doc.get("provenance", {}).get("settings", {})
    if s.get("control"):
        bits.append(s["control"])
    if s.get("modality") not in (None, "image"):
        bits.append(s["modality"])
    return " ".join(bits)
