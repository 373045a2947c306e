"""A ``vlprobe probe`` run in the report: its train x test modality table (the layout of TraVLR's
Table 2, which the probe's protocol follows), and each cell beside the published table its dataset's
benchmark declares (``probe_table``, in ``vlprobe/data/paper_results.csv``): the paper's figure (with
its change from InD and #sd), ours, and the difference."""

from __future__ import annotations

import re
from typing import Any, Sequence

from ..benchmarks import Benchmark, by_old_name, find
from ..probing.result import _setting_name, table2_cell_text, table2_cells
from .runs import Run


def probe_benchmark(run: Run) -> Benchmark | None:
    """The benchmark of the dataset a probe run trained and tested on: the one it recorded
    (``provenance.dataset.benchmark``), or, for a run from before that was recorded, the one its
    dataset's name meant; None for a dataset of the user's own."""
    dataset = (run.doc.get("provenance") or {}).get("dataset") or {}
    if "benchmark" in dataset:
        return find(dataset["benchmark"])
    return by_old_name(str(dataset.get("dataset") or ""))


def probe_note(run: Run) -> str:
    """What the published table beside a probe run is, and what makes the two differ."""
    bench = probe_benchmark(run)
    return bench.probe_note if bench is not None else ""


def probe_paper(run: Run) -> str:
    """The published table a probe run is set beside, in words ("TraVLR's published Table 2"), "" when none."""
    bench = probe_benchmark(run)
    return f"{bench.display}'s published {bench.probe_table}" if bench is not None and bench.probe_table else ""


def _paper_rows(papers: list[dict[str, Any]], bench: Benchmark | None) -> dict[tuple[str, str, str],
                                                                             dict[str, dict[str, Any]]]:
    """{(task, train, test): {model: {"value", "change", "sd_runs"}}} of the benchmark's published
    probe table (OOD cells, ``<task>/train=<modality>/test=<modality>/test_ood`` in the CSV)."""
    out: dict[tuple[str, str, str], dict[str, dict[str, Any]]] = {}
    if bench is None or not bench.probe_table:
        return out
    for p in papers:
        if p["benchmark"] != bench.name or p["table"] != bench.probe_table or p["metric"] != "macro_f1":
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


def paper_models(papers: list[dict[str, Any]], bench: Benchmark | None) -> list[str]:
    models: list[str] = []
    for cells in _paper_rows(papers, bench).values():
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
    """The run's train x test modality table (TraVLR's Table 2 layout), per kind of rows: (title, (header, rows))."""
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
    (change) ± sd), then per paper model its figure (change) [#sd] and ours minus it; None where the
    run's benchmark declares no published probe table (or no cell matches)."""
    bench = probe_benchmark(run)
    published = _paper_rows(papers, bench)
    models = paper_models(papers, bench)
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
