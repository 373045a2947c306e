"""Compare runs: ``results.json`` files -> a Markdown and an HTML report, plus one plot.

Every file is checked against the format this module reads first (:func:`validate_document`): one
line per problem, naming the file and the entry, raised as a :class:`ReportError`.

For every benchmark in the runs the report has:

1. a long table, one row per (config, split, metric), one column per run (value and 95% CI in %),
   and the chance level; only the metrics that mean something for the benchmark and the item shape
   (:func:`vlprobe.summary.display_metrics`: a 1 x 2 item shows acc_r, not five copies of it);
   and, where items carry tags, a per-tag table of each config's headline metric
   (:func:`vlprobe.summary.primary_metric`) with the item count;
2. the papers' aggregates (:func:`vlprobe.summary.summarize`: VALSE per instrument and its Avg. over
   the 11 instruments, Winoground text / image / group, BLA per task, TraVLR per task and test
   split), with a note wherever an aggregate is incomplete;
3. where the seed papers published numbers for that benchmark (``vlprobe/data/paper_results.csv``:
   VALSE Table 2, Winoground Table 3, BLA thesis Tables 6.3 and 6.2), a table in the papers'
   layout: one row per system, "this run" rows first, then the papers' systems, one column per
   (config, metric) that both the paper and a run's aggregates have (VALSE's ``avg`` included).

Caveats carried into the report: the published numbers are percentages as printed; the BLA
numbers were measured on the thesis version of the data (613 / 800 / 789 caption sets), not on
the 2023 release (613 / 654 / 672) that vlprobe's ``bla`` folder holds; a run on a ``--limit``-ed
subset, or on a control, is not comparable to a paper. Matching is by benchmark name (the dataset
folder's or Hub repo's name: ``valse``, ``winoground``, ``bla``), config and metric; the synthetic
``winoground_style`` is *not* Winoground and gets no paper column.
"""

from __future__ import annotations

import csv
import html
import json
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from . import summary as summary_rules
from .errors import ArgumentError, DatasetError, SettingError
from .results import _atomic_write_bytes, metric_keys

# The published tables the report compares with, per benchmark (the CSV holds more).
PAPER_TABLES = {"valse": ("Table 2",), "winoground": ("Table 3",), "bla": ("Thesis Table 6.3", "Thesis Table 6.2")}
# A dataset's config name -> the CSV's config name, where they differ (one rule: vlprobe.summary).
CONFIG_ALIASES = summary_rules.PAPER_CONFIG
PAPER_NOTES = {
    "valse": "VALSE (Parcalabescu et al., ACL 2022), Table 2.",
    "winoground": "Winoground (Thrush et al., CVPR 2022), Table 3, all 400 items.",
    "bla": (
        "BLA (Chen, MSc thesis 2022), Table 6.3 (models) and Table 6.2 (human experts, on a small subset). Measured on the thesis version of the data (613 / 800 / 789 "
        "caption sets), not on the 2023 release (613 / 654 / 672) that vlprobe's bla folder holds: not directly "
        "comparable."
    ),
}


class ReportError(DatasetError, ValueError):
    """A results file that cannot be read; one line per problem, naming the file and the entry."""


@dataclass
class Run:
    path: Path
    label: str
    doc: dict[str, Any]

    @property
    def results(self) -> list[dict[str, Any]]:
        """The entries, each with its ``benchmark`` decided by :func:`vlprobe.summary.benchmark_of`."""
        if not hasattr(self, "_entries"):
            self._entries = [dict(r, benchmark=_benchmark(r)) for r in self.doc.get("results", [])]
        return self._entries

    @property
    def summary(self) -> dict[str, Any]:
        """The papers' aggregates of this run, recomputed under the current rules."""
        if not hasattr(self, "_summary"):
            self._summary = summary_rules.summarize(self.results)
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


def _benchmark(entry: dict[str, Any]) -> str:
    return summary_rules.benchmark_of(entry.get("dataset") or entry.get("benchmark") or "")


_SKIP = {"n_items", "n_ties", "chance", "support", "ci", "per_tag"}


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


def load_runs(paths: Sequence[str | os.PathLike], labels: Sequence[str] | None = None) -> list[Run]:
    """Read and check every file; all problems of all files are raised together (one line each).
    ``labels``: one name per run, shown in every table instead of the model folder's name."""
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
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            problems.append(f"{path}: not a JSON file ({err})")
            continue
        found = validate_document(doc, path)
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
    bits = [name]
    if model.get("dtype") and model["dtype"] != "float32":
        bits.append(model["dtype"])
    s = doc.get("provenance", {}).get("settings", {})
    if s.get("control"):
        bits.append(s["control"])
    if s.get("modality") not in (None, "image"):
        bits.append(s["modality"])
    return " ".join(bits)


def paper_results() -> list[dict[str, Any]]:
    """The rows of ``vlprobe/data/paper_results.csv``, values as floats (percent)."""
    text = resources.files("vlprobe").joinpath("data/paper_results.csv").read_text(encoding="utf-8")
    rows = list(csv.DictReader(text.splitlines()))
    for r in rows:
        r["value"] = float(r["value"])
    return rows


# ---- assembling the tables ---------------------------------------------------------------------

def _pct(v: Any) -> str:
    """A fraction as a percentage, ``-`` where there is none (an empty table cell reads as missing)."""
    from .results import pct

    return pct(v) or "-"


def _cell(metrics: dict[str, Any], key: str) -> str:
    v = metrics.get(key)
    if v is None:
        return ""
    ci = (metrics.get("ci") or {}).get(key)
    return _pct(v) + (f" [{_pct(ci[0])}, {_pct(ci[1])}]" if ci else "")


def _benchmarks(runs: Sequence[Run]) -> list[str]:
    out: list[str] = []
    for run in runs:
        for r in run.results:
            if r.get("benchmark") not in out:
                out.append(r.get("benchmark"))
    return out


def _ties(metrics: dict[str, Any] | None) -> str:
    """A run's tied comparisons and items for one config/split: "98 (n=100)"."""
    if not metrics or metrics.get("n_ties") is None:
        return ""
    return f"{metrics['n_ties']} (n={metrics.get('n_items', '?')})"


def long_table(runs: Sequence[Run], benchmark: str) -> tuple[list[str], list[list[str]]]:
    """One row per (config, split, metric); per run its value [CI] and a ties column: the gold vs
    non-gold comparisons that tied, and the items (a 0.0 [0.0, 0.0] where nearly everything tied
    says "the scores are constant", not "always wrong")."""
    header = ["config", "split", "metric"] + [h for r in runs for h in (r.label, f"{r.label} ties")] + ["chance"]
    keys: list[tuple[str, str]] = []
    by: dict[tuple[int, str, str], dict[str, Any]] = {}
    shapes: dict[tuple[str, str], tuple[int, int] | None] = {}
    for i, run in enumerate(runs):
        for r in run.results:
            if r.get("benchmark") != benchmark:
                continue
            unit = (r["config"], r["split"])
            if unit not in keys:
                keys.append(unit)
            by[(i, *unit)] = r["metrics"]
            shapes.setdefault(unit, _shape(r))
    rows = []
    for config, split in keys:
        present = [by[(i, config, split)] for i in range(len(runs)) if (i, config, split) in by]
        metrics: list[str] = []
        for m in present:
            shown = summary_rules.display_metrics(benchmark, shapes.get((config, split)), metric_keys(m))
            metrics += [k for k in shown if k not in metrics]
        for key in metrics:
            chance = next(((m.get("chance") or {}).get(key) for m in present if (m.get("chance") or {}).get(key) is not None), None)
            rows.append([config, split, key]
                        + [c for i in range(len(runs)) for c in (_cell(by.get((i, config, split), {}), key),
                                                                 _ties(by.get((i, config, split))))]
                        + [_pct(chance) if chance is not None else ""])
    return header, rows


def tag_table(runs: Sequence[Run], benchmark: str) -> tuple[list[str], list[list[str]]] | None:
    """Per-tag breakdown: one row per (config, split, tag) with the config's headline metric."""
    header = ["config", "split", "tag", "metric"] + [f"{r.label} (n)" for r in runs]
    keys: list[tuple[str, str, str, str]] = []
    by: dict[tuple[int, str, str, str], dict[str, Any]] = {}
    for i, run in enumerate(runs):
        for r in run.results:
            if r.get("benchmark") != benchmark:
                continue
            key = headline(r["metrics"], benchmark, _shape(r))
            for tag, m in sorted((r["metrics"].get("per_tag") or {}).items()):
                unit = (r["config"], r["split"], tag, key)
                if unit not in keys:
                    keys.append(unit)
                by[(i, r["config"], r["split"], tag)] = m
    if not keys:
        return None
    rows = []
    for config, split, tag, key in keys:
        cells = []
        for i in range(len(runs)):
            m = by.get((i, config, split, tag))
            cells.append("" if m is None or m.get(key) is None else f"{_cell(m, key)} ({m.get('n_items', '')})")
        rows.append([config, split, tag, key] + cells)
    return header, rows


def _shape(entry: dict[str, Any]) -> tuple[int, int] | None:
    shape = entry.get("shape")
    if shape:
        return (int(shape[0]), int(shape[1]))
    return summary_rules.infer_shape(entry.get("metrics") or {})


def _pct_cell(values: dict[str, Any], ci: dict[str, Any], key: str) -> str:
    v = values.get(key)
    if v is None:
        return ""
    c = ci.get(key)
    return _pct(v) + (f" [{_pct(c[0])}, {_pct(c[1])}]" if c else "")


def _summary_cell(row: dict[str, Any] | None, metric: str) -> str:
    """A summary row's value in %, with its CI, and "(k of n)" on an incomplete aggregate."""
    if row is None or metric not in row["values"]:
        return ""
    text = _pct_cell(row["values"], row.get("ci") or {}, metric)
    if row.get("aggregate") and not row.get("complete", True):
        text += f" ({len(row['over'])} of {len(row['over']) + len(row['missing'])})"
    return text


def summary_table(runs: Sequence[Run], benchmark: str) -> tuple[list[str], list[list[str]], list[str]] | None:
    """The papers' aggregates of each run: one row per (config, split, headline metric), and the
    notes (incomplete aggregates, framings) per run."""
    keys: list[tuple[str, str, str]] = []
    by: dict[tuple[int, str, str], dict[str, Any]] = {}
    notes: list[str] = []
    for i, run in enumerate(runs):
        block = run.summary.get(benchmark)
        if not block:
            continue
        for row in block["rows"]:
            by[(i, row["config"], row["split"])] = row
            for metric in row["values"]:
                if (row["config"], row["split"], metric) not in keys:
                    keys.append((row["config"], row["split"], metric))
        notes += [f"{run.label}: {n}" for n in block.get("notes", [])]
    if not keys:
        return None
    order = summary_rules.headline_metrics(benchmark)
    keys.sort(key=lambda k: order.index(k[2]) if k[2] in order else len(order))  # stable: configs in run order
    header = ["config", "split", "metric"] + [r.label for r in runs]
    rows = [[config, split, metric] + [_summary_cell(by.get((i, config, split)), metric) for i in range(len(runs))]
            for config, split, metric in keys]
    return header, rows, notes


def _run_value(run: Run, benchmark: str, config: str, metric: str) -> dict[str, Any] | None:
    """The run's summary row for the paper's (config, metric) (VALSE's ``avg`` included)."""
    block = run.summary.get(benchmark) or {}
    return next((r for r in block.get("rows", []) if r["paper_config"] == config and metric in r["values"]), None)


def paper_table(runs: Sequence[Run], benchmark: str, papers: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]] | None:
    tables = PAPER_TABLES.get(benchmark)
    if not tables:
        return None
    rows = [p for p in papers if p["benchmark"] == benchmark and p["table"] in tables]
    columns: list[tuple[str, str]] = []
    for p in rows:
        col = (p["config"], p["metric"])
        if col not in columns and any(_run_value(run, benchmark, *col) is not None for run in runs):
            columns.append(col)
    if not columns:
        return None
    header = ["system", "source"] + [f"{c} {m}" for c, m in columns]
    out = []
    for run in runs:
        cells = [_summary_cell(_run_value(run, benchmark, config, metric), metric) for config, metric in columns]
        out.append([f"this run: {run.label}", "vlprobe"] + cells)
    models: list[str] = []
    for p in rows:
        if p["model"] not in models:
            models.append(p["model"])
    for model in models:
        values = {(p["config"], p["metric"]): p["value"] for p in rows if p["model"] == model}
        if not any(c in values for c in columns):
            continue
        table = next(p["table"] for p in rows if p["model"] == model)
        out.append([model, f"paper, {table}"] + [f"{values[c]:.1f}" if c in values else "" for c in columns])
    return header, out


# ---- rendering ----------------------------------------------------------------------------------

def _md_table(header: list[str], rows: list[list[str]]) -> str:
    esc = lambda s: str(s).replace("|", "\\|")  # noqa: E731
    lines = ["| " + " | ".join(esc(h) for h in header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _html_table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join(
        "<tr" + (' class="paper"' if len(row) > 1 and str(row[1]).startswith("paper") else "") + ">"
        + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _runs_section(runs: Sequence[Run]) -> list[tuple[str, str]]:
    """(label, description) per run."""
    out = []
    for run in runs:
        prov = run.doc.get("provenance", {})
        model = prov.get("model", {})
        desc = (f"{model.get('model_id')} (revision {model.get('revision') or 'local'}, family {model.get('family')}, "
                f"{model.get('dtype')}, {model.get('device')}); ties {prov.get('settings', {}).get('ties')}; "
                f"{_ci_of(run)}; {prov.get('created', '')}; {run.path}")
        if run.caveats():
            desc += "; " + ", ".join(run.caveats())
        out.append((run.label, desc))
    return out


def _ci_of(run: Run) -> str:
    st = run.doc.get("provenance", {}).get("settings", {}) or {}
    level, resamples = st.get("confidence"), st.get("bootstrap")
    if resamples == 0:
        return "no CI"
    if level is None or resamples is None:
        return "CI level not recorded"
    return f"{100 * level:g}% CI, {resamples} resamples, seed {st.get('seed', 0)}"


def ci_sentence(runs: Sequence[Run]) -> str:
    """What the brackets are, said once when every run made the same kind of CI, and run by run
    (with a warning) when they differ: two brackets side by side are only comparable at one level."""
    kinds = {r.label: _ci_of(r) for r in runs}
    made = {k for k in kinds.values() if k != "no CI"}
    base = "Values are percentages; brackets hold the percentile-bootstrap CI over items"
    if len(made) <= 1:
        return f"{base} ({made.pop()})." if made else "Values are percentages; no run made a CI."
    listing = "; ".join(f"{label}: {kind}" for label, kind in kinds.items())
    return f"{base}, each run's own, and they differ ({listing}): compare their widths with care."


def latex_tables(runs: Sequence[Run]) -> str:
    """The report's tables as LaTeX (pandas' Styler; booktabs rules), one ``table`` float each, to
    paste into a paper: per benchmark the metrics with ties, the headline metrics (the paper's
    aggregates where it has a paper) and the published numbers beside this run."""
    import pandas as pd

    papers = paper_results()
    parts = ["% vlprobe report: tables for LaTeX; needs \\usepackage{booktabs}", f"% {ci_sentence(runs)}", ""]

    def table(header: list[str], rows: list[list[str]], caption: str, label: str) -> str:
        frame = pd.DataFrame(rows, columns=_unique(header))
        styler = frame.style.hide(axis="index").format(escape="latex").format_index(escape="latex", axis=1)
        return styler.to_latex(hrules=True, caption=_latex_escape(caption), label=label,
                               position_float="centering", column_format="l" * len(header))

    for bench in _benchmarks(runs):
        slug = "".join(ch if ch.isalnum() else "-" for ch in bench)
        parts.append(table(*long_table(runs, bench), f"{bench}: metrics per config (%), ties = tied comparisons",
                           f"tab:vlprobe-{slug}"))
        agg = summary_table(runs, bench)
        if agg:
            source = next((r.summary[bench].get("source") for r in runs if r.summary.get(bench, {}).get("source")),
                          None)
            parts.append(table(agg[0], agg[1], summary_rules.summary_title(bench, {"source": source}),
                               f"tab:vlprobe-{slug}-summary"))
        paper = paper_table(runs, bench, papers)
        if paper:
            parts.append(table(*paper, f"{bench}: this run beside the published numbers. {PAPER_NOTES.get(bench, '')}",
                               f"tab:vlprobe-{slug}-paper"))
    return "\n".join(parts)


def _unique(header: list[str]) -> list[str]:
    """Column names made unique (two runs may show the same model name before labels)."""
    out: list[str] = []
    for h in header:
        name, k = h, 2
        while name in out:
            name, k = f"{h} #{k}", k + 1
        out.append(name)
    return out


def _latex_escape(text: str) -> str:
    """Plain text for LaTeX (a caption): its special characters escaped, one pass."""
    special = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
               "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\^{}"}
    return "".join(special.get(ch, ch) for ch in text)


def build_report(runs: Sequence[Run], plot_name: str | None = "report.png") -> tuple[str, str]:
    """The Markdown and HTML texts of the report."""
    papers = paper_results()
    lead = ci_sentence(runs)
    md = ["# vlprobe report", "", lead, ""]
    hb = ["<h1>vlprobe report</h1>", f"<p>{html.escape(lead)}</p>"]
    md += ["## Runs", ""]
    hb += ["<h2>Runs</h2>", "<ul>"]
    for label, desc in _runs_section(runs):
        md.append(f"- **{label}**: {desc}")
        hb.append(f"<li><b>{html.escape(label)}</b>: {html.escape(desc)}</li>")
    md.append("")
    hb.append("</ul>")
    if plot_name:
        md += [f"![headline metric per config]({plot_name})", ""]
        hb.append(f'<img src="{html.escape(plot_name)}" alt="headline metric per config">')
    for bench in _benchmarks(runs):
        header, rows = long_table(runs, bench)
        md += [f"## {bench}", "", _md_table(header, rows), ""]
        hb += [f"<h2>{html.escape(bench)}</h2>", _html_table(header, rows)]
        agg = summary_table(runs, bench)
        if agg:
            header, rows, notes = agg
            source = next((r.summary[bench].get("source") for r in runs if r.summary.get(bench, {}).get("source")), None)
            title = summary_rules.summary_title(bench, {"source": source}, with_source=False)
            lead = (f"As {source} reports them." if source else "Headline metrics per config.")
            md += [f"### {title}", "", lead, "", _md_table(header, rows), ""]
            md += [f"- {n}" for n in notes] + ([""] if notes else [])
            hb += [f"<h3>{html.escape(title)}</h3>", f"<p>{html.escape(lead)}</p>", _html_table(header, rows)]
            if notes:
                hb.append("<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>")
        tags = tag_table(runs, bench)
        if tags:
            md += [f"### {bench}: per tag", "", _md_table(*tags), ""]
            hb += [f"<h3>{html.escape(bench)}: per tag</h3>", _html_table(*tags)]
        paper = paper_table(runs, bench, papers)
        if paper:
            note = PAPER_NOTES.get(bench, "")
            md += [f"### {bench}: this run beside the published numbers", "", note, "", _md_table(*paper), ""]
            hb += [f"<h3>{html.escape(bench)}: this run beside the published numbers</h3>",
                   f"<p>{html.escape(note)}</p>", _html_table(*paper)]
    style = ("body{font-family:sans-serif;margin:2em;max-width:90em}table{border-collapse:collapse;margin:1em 0}"
             "td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left}tr.paper{color:#555;background:#f7f7f7}"
             "img{max-width:100%}")
    page = ("<!doctype html><html><head><meta charset='utf-8'><title>vlprobe report</title>"
            f"<style>{style}</style></head><body>" + "\n".join(hb) + "</body></html>\n")
    return "\n".join(md) + "\n", page


def headline(metrics: dict[str, Any], benchmark: str | None = None,
             shape: tuple[int, int] | None = None) -> str | None:
    """The metric a plot shows for a config, by the one rule (:func:`vlprobe.summary.primary_metric`):
    Winoground's group, VALSE's acc_r, BLA's sentence accuracy, TraVLR's macro-F1 or acc_r. Without
    a benchmark, the rule for the item shape (inferred from the metrics when not given)."""
    available = [k for k in metric_keys(metrics) if metrics.get(k) is not None]
    if shape is None:
        shape = summary_rules.infer_shape(metrics)
    return summary_rules.primary_metric(benchmark or "", shape, available)


def plot_runs(runs: Sequence[Run], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    units: list[tuple[str, str, str, str]] = []
    for run in runs:
        for r in run.results:
            key = headline(r["metrics"], r["benchmark"], _shape(r))
            unit = (r["benchmark"], r["config"], r["split"], key)
            if key and unit not in units:
                units.append(unit)
    fig, ax = plt.subplots(figsize=(max(5.0, 0.55 * len(units) * max(1, len(runs)) + 2), 4.0), dpi=110)
    width = 0.8 / max(1, len(runs))
    x = np.arange(len(units))
    for i, run in enumerate(runs):
        vals, lo, hi = [], [], []
        for bench, config, split, key in units:
            m = next((r["metrics"] for r in run.results
                      if (r["benchmark"], r["config"], r["split"]) == (bench, config, split)), {})
            v = m.get(key)
            ci = (m.get("ci") or {}).get(key) or [v, v]
            vals.append(np.nan if v is None else 100 * v)
            lo.append(0 if v is None or ci[0] is None else 100 * (v - ci[0]))
            hi.append(0 if v is None or ci[1] is None else 100 * (ci[1] - v))
        ax.bar(x + (i - (len(runs) - 1) / 2) * width, vals, width, yerr=[lo, hi], capsize=2, label=run.label)
    for j, (bench, config, split, key) in enumerate(units):
        chance = next(((r["metrics"].get("chance") or {}).get(key) for run in runs for r in run.results
                       if (r["benchmark"], r["config"], r["split"]) == (bench, config, split)), None)
        if chance is not None:
            ax.hlines(100 * chance, j - 0.45, j + 0.45, colors="#d62728", linestyles="dashed",
                      label="chance" if j == 0 else None)
    ax.set_xticks(x, [f"{b}/{c}/{s}\n{k}" for b, c, s, k in units], rotation=40, ha="right", fontsize=7)
    ax.set_ylim(0, 100)
    ax.set_ylabel("%")
    ax.legend(fontsize=7)
    fig.tight_layout()
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    _atomic_write_bytes(path, buf.getvalue())


def write_report(paths: Sequence[str | os.PathLike], out_dir: str | os.PathLike,
                 labels: Sequence[str] | None = None) -> list[Path]:
    """Check every results file, then write report.md, report.html, report.tex and report.png into
    ``out_dir`` (created; other files in it are left alone). ``labels``: one name per run."""
    out = Path(out_dir).expanduser()
    if out.exists() and not out.is_dir():
        raise ArgumentError("out", str(out), "is a file, not a folder; choose a folder for the report")
    runs = load_runs(paths, labels)
    md, page = build_report(runs, plot_name="report.png")
    tex = latex_tables(runs)
    try:
        out.mkdir(parents=True, exist_ok=True)
        written = [out / "report.md", out / "report.html", out / "report.tex", out / "report.png"]
        _atomic_write_bytes(written[0], md.encode("utf-8"))
        _atomic_write_bytes(written[1], page.encode("utf-8"))
        _atomic_write_bytes(written[2], tex.encode("utf-8"))
        plot_runs(runs, written[3])
    except OSError as err:
        raise ArgumentError("out", str(out), f"cannot write the report there ({err.strerror or err})") from None
    return written
