"""The result of ``vlprobe.probe``: :class:`ProbeResult` (shaped as ``vlprobe.evaluate``'s), its
tables in the paper's layouts, learning-curve plots and the files a run writes."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .settings import DEFAULT_DATASET, MODALITIES, PROBE_RUN_FILE, SETTING_ORDER, TEXT_ONLY, ZERO_SHOT


@dataclass(repr=False)
class ProbeResult:
    """What :func:`probe` returns, shaped as :class:`vlprobe.Evaluation`: ``rows`` (one per task x
    setting x train size x test modality x split, with macro-F1, its CI and chance), ``provenance``,
    ``results`` (the results.json document), ``summary`` (the paper's Table 2 figures), ``table()``
    (what ``vlprobe probe`` prints), ``to_pandas()``, ``plot()`` and ``save(out)``."""

    rows: list[dict]
    provenance: dict

    @property
    def results(self) -> dict[str, Any]:
        """The results.json document: provenance, the paper's figures, every row and the tables."""
        return {"provenance": self.provenance, "summary": self.summary, "rows": self.rows,
                "tables": {"same_modality": self.same_modality_table(), "transfer_test_ood": transfer_table(self.rows),
                           "transfer_test_ind": transfer_table(self.rows, "test_ind")}}

    @property
    def summary(self) -> dict[str, Any]:
        """The paper's headline figures (Table 2): per task, setting and test split, the macro-F1 of
        the full-size probe tested on its own modality, with its CI; the shape of
        ``vlprobe.Evaluation.summary`` (``{benchmark: {"source", "headline", "rows", ...}}``)."""
        from ..summary import SOURCES, benchmark_of

        dataset = str((self.provenance.get("dataset") or {}).get("dataset") or DEFAULT_DATASET)
        rows = []
        for r in _final(self.rows):
            if r["transfer"] not in ("same", "zero-shot (no training)"):
                continue
            setting = r["setting"] if r["setting"] != ZERO_SHOT else f"zero-shot, {r['test_modality']}"
            row = {"config": r["task"], "label": f"{r['task']} ({setting})", "setting": setting, "split": r["split"],
                   "values": {"macro_f1": r["macro_f1"]} if r["macro_f1"] is not None else {},
                   "n_items": r.get("n"), "train_size": r["train_size"], "chance": r.get("chance")}
            if r.get("ci_low") is not None:
                row["ci"] = {"macro_f1": [r["ci_low"], r["ci_high"]]}
            rows.append(row)
        bench = benchmark_of(dataset)
        source = SOURCES.get("travlr") if bench == "travlr" else None
        return {bench: {"source": source, "headline": ["macro_f1"], "rows": rows, "complete": True,
                        "notes": ["frozen features + a trained probe (vlprobe probe); trained and tested on the "
                                  "same modality, the full training split"]}}

    def table(self) -> str:
        """The text ``vlprobe probe`` prints (also tables.md): the paper's two layouts and timings."""
        return format_report(self)

    def to_pandas(self) -> Any:
        """The rows as a DataFrame (one per task x setting x train size x test modality x split)."""
        import pandas as pd

        return pd.DataFrame(self.rows)

    def same_modality_table(self) -> str:
        return same_modality_table(self.rows)

    def transfer_table(self) -> str:
        return transfer_table(self.rows)

    def plot(self) -> Any:
        """A matplotlib figure: per task, a bar per setting and test split (same modality, full
        training split): macro-F1 with its CI and chance."""
        import matplotlib.pyplot as plt

        from ..results import bar_chart

        by_task: dict[str, list[dict]] = {}
        for row in next(iter(self.summary.values()))["rows"]:
            by_task.setdefault(row["config"], []).append(row)
        n = max(1, len(by_task))
        cols = min(2, n)
        fig, axes = plt.subplots(math.ceil(n / cols), cols, figsize=(6.0 * cols, 4.0 * math.ceil(n / cols)),
                                 squeeze=False)
        for ax, (task, rows) in zip(axes.flat, by_task.items()):
            bar_chart(ax, [f"{r['setting']} {r['split']}" for r in rows],
                      [r["values"].get("macro_f1") for r in rows], ci=[(r.get("ci") or {}).get("macro_f1") for r in rows],
                      chance=[r.get("chance") for r in rows], label="macro-F1",
                      confidence=self.provenance.get("settings", {}).get("confidence"))
            ax.set_title(task, fontsize=9)
            ax.legend(fontsize=7, loc="upper right")
        for ax in list(axes.flat)[len(by_task):]:
            ax.axis("off")
        fig.tight_layout()
        return fig

    def save(self, out: str | os.PathLike) -> list[Path]:
        """Write results.json, results.csv, tables.md and the learning-curve plots into ``out`` as
        one unit (staged beside it and swapped in, as ``vlprobe evaluate`` does); ``out`` must be
        new, empty or a probe run's. Returns the paths written. A write error (a full disk, a
        read-only folder) is one :class:`~vlprobe.errors.VlprobeError`, and ``out`` is left as it was."""
        from ..errors import VlprobeError
        from ..results import check_output_dir

        check_output_dir(out, PROBE_RUN_FILE)
        try:
            return write_outputs(out, self)
        except OSError as err:
            cache = (self.provenance.get("features") or {}).get("cache_dir")
            rerun = (f"the features are in the cache ({cache}), so running it again computes none" if cache
                     else "nothing was cached (cache_dir none), so a rerun computes the features again")
            raise VlprobeError(f"cannot write the outputs to {out} ({err.strerror or err}); {rerun}") from None

    def __repr__(self) -> str:
        model = (self.provenance.get("model") or {}).get("model_id")
        dataset = (self.provenance.get("dataset") or {}).get("dataset")
        tasks = ", ".join(dict.fromkeys(r["task"] for r in self.rows))
        return f"<vlprobe.ProbeResult of {model} on {dataset} ({tasks}): {len(self.rows)} rows>"


def _pct(v: Any) -> str:
    from ..results import pct

    return pct(v) or "-"


def _cell(r: dict | None) -> str:
    if r is None:
        return "-"
    if r.get("macro_f1") is None and r.get("na_reason"):
        return f"N/A ({r['na_reason']})"
    ci = f" [{_pct(r['ci_low'])}, {_pct(r['ci_high'])}]" if r.get("ci_low") is not None else ""
    return f"{_pct(r['macro_f1'])}{ci}"


def _final(rows: list[dict], finetuned: bool = False) -> list[dict]:
    """Rows of the full-size probes (the largest train size per task and setting), of the frozen
    probes (default) or of the fine-tuned models."""
    rows = [r for r in rows if (r.get("classifier") == "finetune") == finetuned]
    full: dict[tuple, int] = {}
    for r in rows:
        key = (r["task"], r["setting"])
        full[key] = max(full.get(key, 0), r["train_size"])
    return [r for r in rows if r["train_size"] == full[(r["task"], r["setting"])]]


def same_modality_table(rows: list[dict], finetuned: bool = False) -> str:
    """The paper's Table 2 layout, same-modality: task x setting rows, test_ind / test_ood columns
    (macro-F1 x 100 with the bootstrap CI, the OOD change from InD, chance)."""
    rows = [r for r in _final(rows, finetuned) if r["transfer"] in ("same", "zero-shot (no training)")
            and (r["train_modality"] is None or r["test_modality"] == r["train_modality"] or r["setting"] == TEXT_ONLY)]
    lines = ["| task | trained on (= tested on) | n train | test_ind macro-F1 | test_ood macro-F1 | OOD - InD | chance |",
             "|---|---|---|---|---|---|---|"]
    for task in dict.fromkeys(r["task"] for r in rows):
        for setting in SETTING_ORDER:
            mine = [r for r in rows if r["task"] == task and r["setting"] == setting]
            if setting == ZERO_SHOT:
                groups = {m: [r for r in mine if r["test_modality"] == m] for m in MODALITIES}
            else:
                groups = {setting: mine}
            for label, rs in groups.items():
                if not rs:
                    continue
                ind = next((r for r in rs if r["split"] == "test_ind"), None)
                ood = next((r for r in rs if r["split"] == "test_ood"), None)
                delta = ("-" if ind is None or ood is None or None in (ind["macro_f1"], ood["macro_f1"])
                         else f"{100 * (ood['macro_f1'] - ind['macro_f1']):+.1f}")
                name = f"zero-shot, {label}" if setting == ZERO_SHOT else (
                    "text-only (text tower on query + caption)" if setting == TEXT_ONLY else setting)
                lines.append(f"| {task} | {name} | {rs[0]['train_size']} | {_cell(ind)} | {_cell(ood)} | {delta} | "
                             f"{_pct(rs[0]['chance'])} |")
    return "\n".join(lines)


def transfer_table(rows: list[dict], split: str = "test_ood", finetuned: bool = False) -> str:
    """Per task, train modality x test modality (macro-F1 x 100 on ``split``; the same-modality
    diagonal, zero-shot transfer off it, few-shot rows when run)."""
    rows = [r for r in _final(rows, finetuned) if r["split"] == split and r["setting"] in MODALITIES]
    if not rows:
        return f"(no transfer rows on {split})"
    tests = [m for m in MODALITIES if any(r["test_modality"] == m for r in rows)]
    lines = ["| task | trained on | transfer | " + " | ".join(f"tested on {m}" for m in tests) + " |",
             "|---|---|---|" + "---|" * len(tests)]
    for task in dict.fromkeys(r["task"] for r in rows):
        for train in MODALITIES:
            mine = [r for r in rows if r["task"] == task and r["train_modality"] == train]
            if not mine:
                continue
            kinds = ["zero-shot"] + sorted({r["transfer"] for r in mine if r["transfer"].startswith("few-shot")})
            for kind in kinds:
                cells = []
                for m in tests:
                    want = "same" if m == train else kind
                    r = next((r for r in mine if r["test_modality"] == m and r["transfer"] == want), None)
                    cells.append(_cell(r) if (m != train or kind == "zero-shot") else "(as above)")
                lines.append(f"| {task} | {train} | {kind} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def learning_curve_rows(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["transfer"] == "same" and r["setting"] != ZERO_SHOT and r.get("classifier") != "finetune"]


def plot_learning_curves(path: Path, rows: list[dict], task: str) -> bool:
    """Macro-F1 against training size, one panel per test split, one line per setting (Figure 12)."""
    mine = [r for r in learning_curve_rows(rows) if r["task"] == task]
    sizes = sorted({r["train_size"] for r in mine})
    if len(sizes) < 2:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    splits = sorted({r["split"] for r in mine})
    fig, axes = plt.subplots(1, len(splits), figsize=(4.2 * len(splits), 3.4), sharey=True, squeeze=False)
    for ax, split in zip(axes[0], splits):
        for setting in SETTING_ORDER:
            pts = sorted((r["train_size"], r["macro_f1"], r["ci_low"], r["ci_high"]) for r in mine
                         if r["split"] == split and r["setting"] == setting)
            if not pts:
                continue
            xs, ys = [p[0] for p in pts], [100 * p[1] for p in pts]
            ax.plot(xs, ys, marker="o", label=setting)
            if all(p[2] is not None for p in pts):
                ax.fill_between(xs, [100 * p[2] for p in pts], [100 * p[3] for p in pts], alpha=0.15)
        chance = next((r["chance"] for r in mine if r["split"] == split and r["chance"] is not None), None)
        if chance is not None:
            ax.axhline(100 * chance, color="grey", linestyle="--", linewidth=1, label="chance")
        ax.set_xscale("log")
        ax.set_xticks(sizes)
        ax.set_xticklabels([str(s) for s in sizes])
        ax.set_xlabel("training rows")
        ax.set_title(f"{task}: {split}")
        ax.set_ylim(0, 100)
    axes[0][0].set_ylabel("macro-F1 (%)")
    axes[0][-1].legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


CSV_COLUMNS = ("task", "setting", "train_modality", "test_modality", "transfer", "train_size", "split", "n",
               "macro_f1", "ci_low", "ci_high", "chance", "f1_true", "f1_false", "acc", "classifier", "l2", "metric")


def write_outputs(out: str | os.PathLike, result: ProbeResult) -> list[Path]:
    """Write results.json, results.csv, tables.md and one learning-curve plot per task (when there
    are several training sizes) as one folder swapped in for ``out``
    (:func:`vlprobe.results.write_run_folder`, the same staging as ``vlprobe evaluate``'s)."""
    import csv
    import io
    import json

    from ..results import _jsonable, write_run_folder

    def write(folder: Path) -> list[str]:
        (folder / "results.json").write_bytes((json.dumps(_jsonable(result.results), indent=1) + "\n").encode())
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in result.rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in CSV_COLUMNS})
        (folder / "results.csv").write_bytes(buf.getvalue().encode())
        (folder / "tables.md").write_bytes(format_report(result).encode())
        names = ["results.json", "results.csv", "tables.md"]
        for task in dict.fromkeys(r["task"] for r in result.rows):
            name = f"learning_curve_{task}.png"
            if plot_learning_curves(folder / name, result.rows, task):
                names.append(name)
        return names

    return write_run_folder(out, write, PROBE_RUN_FILE)


def format_report(result: ProbeResult) -> str:
    t = result.provenance.get("timings", {})
    f = result.provenance.get("features", {})
    model = result.provenance.get("model", {}).get("model_id")
    parts = [
        f"# vlprobe probe: {model}",
        "",
        "Same modality (the paper's Table 2 layout; macro-F1 x 100 [95% bootstrap CI]):",
        "",
        result.same_modality_table(),
        "",
        "Cross-modal transfer, test_ood (rows: trained on; columns: tested on):",
        "",
        transfer_table(result.rows),
        "",
        "Cross-modal transfer, test_ind:",
        "",
        transfer_table(result.rows, "test_ind"),
        "",
    ]
    if any(r.get("classifier") == "finetune" for r in result.rows):
        parts += ["Fine-tuned model + linear head, same modality (macro-F1 x 100):", "",
                  same_modality_table(result.rows, finetuned=True), "",
                  "Fine-tuned model, cross-modal transfer, test_ood:", "",
                  transfer_table(result.rows, finetuned=True), ""]
    parts += [
        f"Feature extraction {t.get('feature_seconds', 0):.1f}s wall, {t.get('feature_cpu_seconds', 0):.1f}s CPU "
        f"({f.get('computed_inputs', 0)} inputs computed, the rest from the cache); fitting and testing every probe "
        f"{t.get('probe_seconds', 0):.1f}s wall, {t.get('probe_cpu_seconds', 0):.1f}s CPU.",
    ]
    if f.get("caption_truncated"):
        parts.append(f"Share of captions longer than the text tower's {f.get('text_max_length')} tokens (truncated): "
                     + ", ".join(f"{k} {100 * v:.0f}%" for k, v in f["caption_truncated"].items()) + ".")
    return "\n".join(parts) + "\n"
