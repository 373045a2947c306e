"""A ``vlprobe probe`` run in the report: its results.json checked, its TraVLR Table 2 layout, and
each cell beside TraVLR's published Table 2 (Chow et al., EACL 2023; ``vlprobe/data/paper_results.csv``):
the paper's figure (with its change from InD and #sd), ours, and the difference."""

from __future__ import annotations

import os
import re
from typing import Any, Sequence

from .runs import Run

PROBE_TABLE = "Table 2"

PROBE_NOTE = (
    "TraVLR (Chow et al., EACL 2023), Table 2: mean macro-F1 on the OOD test sets of VisualBERT, UNITER, LXMERT and "
    "ALBEF, each fine-tuned for 80 epochs without early stopping in one modality and tested in each, with the change "
    "from InD in parentheses; the mean is over the converged runs of three seeds (#sd) when any converged, else over "
    "all three; trained on TraVLR's own data (32k spatiality / 8k other training rows, 20k OOD test rows). "
    "vlprobe's figures are the mean over all of the run's seeds, on the dataset and training size the run names: "
    "a frozen-feature probe is the paper's App. B frozen setting, not its fine-tuning, and only the fine-tuned rows "
    "(--finetune) are the same kind of experiment. Differences are vlprobe minus the paper, in points."
)


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


def _paper_rows(papers: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, dict[str, Any]]]:
    """{(task, train, test): {model: {"value", "change", "sd_runs"}}} of TraVLR's Table 2 (OOD)."""
    out: dict[tuple[str, str, str], dict[str, dict[str, Any]]] = {}
    for p in papers:
        if p["benchmark"] != "travlr" or p["table"] != PROBE_TABLE or p["metric"] != "macro_f1":
            continue
        m = re.fullmatch(r"(.+)/train=(\w+)/test=(\w+)/test_ood", p["config"])
        if not m:
            continue
        change = re.search(r"change from InD ([+-]?\d+(?:\.\d+)?)", p.get("note") or "")
        runs = re.search(r"#sd = (\d+)", p.get("note") or "")
        out.setdefault(m.groups(), {})[p["model"]] = {
            "value": p["value"], "change": float(change.group(1)) if change else None,
            "sd_runs": int(runs.group(1)) if runs else None}
    return out


def paper_models(papers: list[dict[str, Any]]) -> list[str]:
    models: list[str] = []
    for cells in _paper_rows(papers).values():
        models += [m for m in cells if m not in models]
    return models


def _kinds(run: Run) -> list[tuple[str, bool]]:
    """(what the rows are, finetuned) for the kinds of rows the run has."""
    rows = run.doc["rows"]
    st = run.doc.get("provenance", {}).get("settings", {}) or {}
    out = []
    if any(r.get("classifier") != "finetune" for r in rows):
        out.append((f"frozen probe ({st.get('classifier') or 'logreg'})", False))
    if any(r.get("classifier") == "finetune" for r in rows):
        plan = st.get("finetune") if isinstance(st.get("finetune"), dict) else {}
        sched = plan.get("schedule")
        what = (f"fine-tuned ({sched} schedule, {plan.get('epochs')} epochs)" if sched
                else "fine-tuned (schedule not recorded)")
        out.append((what, True))
    return out


def table2_of(run: Run) -> list[tuple[str, tuple[list[str], list[list[str]]]]]:
    """The run's TraVLR Table 2 layout, per kind of rows: (title, (header, rows))."""
    from ..probing.result import _setting_name, table2_cell_text, table2_cells

    out = []
    for what, finetuned in _kinds(run):
        cells = table2_cells(run.doc["rows"], finetuned)
        if not cells:
            continue
        tests = [m for m in ("image", "caption", "both") if any(c["test_modality"] == m for c in cells)]
        header = ["task", "trained on"] + [f"tested on {m}" for m in tests] + ["seeds above chance (InD)"]
        body = []
        for task in dict.fromkeys(c["task"] for c in cells):
            for setting in dict.fromkeys(c["trained_on"] for c in cells if c["task"] == task):
                mine = {c["test_modality"]: c for c in cells if c["task"] == task and c["trained_on"] == setting}
                first = next(iter(mine.values()))
                above = "-" if first["above_chance"] is None else f"{first['above_chance']} of {len(first['seeds'])}"
                body.append([task, _setting_name(setting)]
                            + [table2_cell_text(mine[m]) if m in mine else "-" for m in tests] + [above])
        out.append((f"{run.label}: {what}", (header, body)))
    return out


def beside_paper(run: Run, papers: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]] | None:
    """One row per (kind, task, trained on, tested on) that TraVLR's Table 2 has: ours (OOD mean
    (change) ± sd), then per paper model its figure (change) [#sd] and ours minus it."""
    from ..probing.result import table2_cell_text, table2_cells

    published = _paper_rows(papers)
    models = paper_models(papers)
    header = ["vlprobe", "task", "trained on", "tested on", "ours: OOD (change) ± sd"]
    for m in models:
        header += [f"{m} (change) [#sd]", f"ours - {m}"]
    body = []
    for what, finetuned in _kinds(run):
        for c in table2_cells(run.doc["rows"], finetuned):
            paper = published.get((c["task"], c["trained_on"], c["test_modality"]))
            if not paper or c["ood"] is None:
                continue
            row = [what, c["task"], c["trained_on"], c["test_modality"], table2_cell_text(c)]
            for m in models:
                p = paper.get(m)
                if p is None:
                    row += ["", ""]
                    continue
                change = f" ({p['change']:+.2f})" if p["change"] is not None else ""
                runs = f" [{p['sd_runs']}]" if p["sd_runs"] is not None else ""
                row += [f"{p['value']:.2f}{change}{runs}", f"{100 * c['ood'] - p['value']:+.1f}"]
            body.append(row)
    return (header, body) if body else None


def describe(run: Run) -> str:
    """One line: model, dataset, seeds, classifier, training rows, schedule, caveats."""
    prov = run.doc.get("provenance", {}) or {}
    st = prov.get("settings", {}) or {}
    model = (prov.get("model") or {}).get("model_id")
    dataset = (prov.get("dataset") or {}).get("dataset")
    seeds = st.get("seeds") or sorted({r.get("seed") for r in run.doc["rows"] if r.get("seed") is not None}) or [None]
    sizes = sorted({r["train_size"] for r in run.doc["rows"] if r.get("train_size")})
    bits = [f"vlprobe probe of {model} on {dataset}", f"seeds {', '.join(map(str, seeds))}",
            f"training rows {', '.join(map(str, sizes)) or '-'}"]
    if st.get("limit"):
        bits.append(f"first {st['limit']} rows per split only (--limit): not comparable to the paper")
    if isinstance(st.get("finetune"), dict) and st["finetune"].get("schedule") == "quick":
        bits.append("fine-tuning schedule quick (early stopping on validation): a departure from the paper")
    return "; ".join(bits) + f"; {prov.get('created', '')}; {run.path}"


def probe_runs(runs: Sequence[Run]) -> list[Run]:
    return [r for r in runs if r.kind == "probe"]
