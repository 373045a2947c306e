"""The result of ``vlprobe.probe``: :class:`ProbeResult` (shaped as ``vlprobe.evaluate``'s), its
tables (TraVLR's Table 2 layout, and two of vlprobe's own), learning-curve plots and the files a run
writes. Every table shows the mean over seeds and the sample standard deviation (:func:`seed_means`)."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..benchmarks import by_old_name, find
from ..summary import dataset_name
from .settings import DEFAULT_DATASET, MODALITIES, PROBE_RUN_FILE, SETTING_ORDER, TEXT_ONLY, ZERO_SHOT


@dataclass(repr=False)
class ProbeResult:
    """What :func:`probe` returns, shaped as :class:`vlprobe.Evaluation`: ``rows`` (one per task x
    setting x train size x test modality x split x seed, with macro-F1, its CI and chance),
    ``provenance``, ``results`` (the results.json document), ``summary`` (the same-modality figures),
    ``table2()`` (TraVLR's Table 2 layout), ``table()`` (what ``vlprobe probe`` prints),
    ``to_pandas()``, ``plot()`` and ``save(out)``."""

    rows: list[dict]
    provenance: dict

    @property
    def results(self) -> dict[str, Any]:
        """The results.json document: provenance, the same-modality figures (``summary``), every row
        (one per seed), TraVLR's Table 2 cells (``table2``: mean over seeds, OOD - InD change, sd)
        and the tables as Markdown."""
        tables = {"table2": table2_table(self.rows), "same_modality": self.same_modality_table(),
                  "transfer_test_ood": transfer_table(self.rows), "transfer_test_ind": transfer_table(self.rows, "test_ind")}
        cells = {"frozen": table2_cells(self.rows)}
        if any(r.get("classifier") == "finetune" for r in self.rows):
            tables["table2_finetuned"] = table2_table(self.rows, finetuned=True)
            cells["finetune"] = table2_cells(self.rows, finetuned=True)
        return {"provenance": self.provenance, "summary": self.summary, "rows": self.rows, "table2": cells,
                "tables": tables}

    @property
    def summary(self) -> dict[str, Any]:
        """Per task, setting and test split, the macro-F1 of the full-size frozen probe tested on
        its own modality (the same-modality figures, not TraVLR's Table 2, which is of fine-tuned
        models and crosses modalities: :func:`table2_cells`), in the shape of
        ``vlprobe.Evaluation.summary`` (``{benchmark: {"source", "headline", "rows", ...}}``). The
        value is the mean over seeds, with ``sd`` and ``seeds``; ``ci`` (the bootstrap CI over
        items) only for a single seed, as a CI of one seed's figure is not one of the mean."""
        recorded = self.provenance.get("dataset") or {}
        dataset = str(recorded.get("dataset") or DEFAULT_DATASET)
        rows = []
        for r in _final(seed_means(self.rows)):
            if r["transfer"] not in ("same", "zero-shot (no training)"):
                continue
            setting = r["setting"] if r["setting"] != ZERO_SHOT else f"zero-shot, {r['test_modality']}"
            row = {"config": r["task"], "label": f"{r['task']} ({setting})", "setting": setting, "split": r["split"],
                   "values": {"macro_f1": r["macro_f1"]} if r["macro_f1"] is not None else {},
                   "n_items": r.get("n"), "train_size": r["train_size"], "chance": r.get("chance"),
                   "sd": r["sd"], "seeds": r["seeds"]}
            if r.get("ci_low") is not None:
                row["ci"] = {"macro_f1": [r["ci_low"], r["ci_high"]]}
            rows.append(row)
        # the benchmark the dataset recorded (a run from before: the one its name meant); its paper's
        # source only where the paper reports macro-F1 of true/false statements (TraVLR)
        bench = find(recorded["benchmark"]) if "benchmark" in recorded else by_old_name(dataset)
        source = bench.source if bench is not None and bench.headline_for((1, 1)) == ["macro_f1"] else None
        seeds = len(self.provenance.get("settings", {}).get("seeds") or [None])
        name = bench.name if bench is not None else dataset_name(dataset)
        return {name: {"benchmark": bench.name if bench is not None else None, "source": source,
                       "headline": ["macro_f1"], "rows": rows, "complete": True,
                        "notes": ["frozen features + a trained probe (vlprobe probe); trained and tested on the "
                                  "same modality, the full training split"
                                  + (f"; mean over {seeds} seeds (sd beside it)" if seeds > 1 else "")]}}

    def table(self) -> str:
        """The text ``vlprobe probe`` prints (also tables.md): TraVLR's Table 2 layout, the
        same-modality and transfer tables, and timings."""
        return format_report(self)

    def to_pandas(self) -> Any:
        """The rows as a DataFrame (one per task x setting x train size x test modality x split)."""
        import pandas as pd

        return pd.DataFrame(self.rows)

    def same_modality_table(self) -> str:
        return same_modality_table(self.rows)

    def transfer_table(self) -> str:
        return transfer_table(self.rows)

    def table2(self, finetuned: bool = False) -> str:
        """TraVLR's Table 2 layout (:func:`table2_table`) of the frozen probes, or of the fine-tuned models."""
        return table2_table(self.rows, finetuned)

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


# What tells two rows apart other than their seed.
GROUP_KEYS = ("classifier", "task", "setting", "train_modality", "test_modality", "transfer", "train_size", "split")


def _above_chance(r: dict) -> bool:
    """A seed's figure above chance: its bootstrap CI's lower end when it has one, else the value."""
    chance = r.get("chance")
    if chance is None or r.get("macro_f1") is None:
        return False
    low = r.get("ci_low")
    return (low if low is not None else r["macro_f1"]) > chance


def seed_means(rows: list[dict]) -> list[dict]:
    """One row per group of rows that differ only in their ``seed`` (in first-seen order): the
    group's fields, ``macro_f1`` the mean over seeds, ``sd`` the sample standard deviation (None for
    one seed), ``identical`` (every seed gave the same value), ``seeds``, ``above_chance`` (how many
    seeds' figures are above chance: :func:`_above_chance`), and ``ci_low``/``ci_high`` only for a
    single seed (a bootstrap CI is of one seed's figure). Rows without ``seed`` count as one seed."""
    from .metrics import over_seeds

    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault(tuple(r.get(k) for k in GROUP_KEYS), []).append(r)
    out = []
    for key, rs in groups.items():
        st = over_seeds([r.get("macro_f1") for r in rs])
        one = len(rs) == 1
        out.append({**dict(zip(GROUP_KEYS, key)), "macro_f1": st["mean"], "sd": st["sd"], "identical": st["identical"],
                    "seeds": [r.get("seed") for r in rs], "above_chance": sum(_above_chance(r) for r in rs),
                    "ci_low": rs[0].get("ci_low") if one else None, "ci_high": rs[0].get("ci_high") if one else None,
                    "chance": rs[0].get("chance"), "n": rs[0].get("n"), "l2": rs[0].get("l2"),
                    # a setting no seed could measure (e.g. every test row lost its query) stays N/A with its reason
                    "na_reason": rs[0].get("na_reason") if st["mean"] is None else None})
    return out


def _sd(a: dict | None) -> str:
    """`` ± sd`` (x 100) of a :func:`seed_means` row, marked ``*`` where every seed gave the same value."""
    if a is None or a.get("sd") is None:
        return ""
    return f" ± {100 * a['sd']:.1f}" + ("*" if a.get("identical") else "")


def _mean_cell(a: dict | None) -> str:
    return "-" if a is None else _cell(a) + _sd(a)


def _setting_name(setting: str) -> str:
    return {TEXT_ONLY: "text-only (text tower on query + caption)", ZERO_SHOT: "zero-shot (no training)"}.get(
        setting, setting)


IDENTICAL_NOTE = ("* the same value for every seed: the setting is deterministic (a logistic-regression probe fitted "
                  "from zeros on the whole training split, or a model not trained at all), so its sd of 0 says nothing "
                  "about how the figure varies with the data; TraVLR's seeds vary its fine-tuning, which the frozen "
                  "probe does not have.")


IDENTICAL_NOTE_FINETUNED = ("* the same value for every seed: each seed's fine-tuned model (its own head, row order "
                            "and bootstrap) gave this figure.")


def table2_cells(rows: list[dict], finetuned: bool = False) -> list[dict]:
    """TraVLR's Table 2 (Chow et al., EACL 2023) as data: per task, training setting and test
    modality, the full-size model's OOD macro-F1 (``ood``, mean over seeds), its InD (``ind``), the
    change ``ood - ind`` (the paper's figure in parentheses), the sample sd of the OOD figure over
    seeds (``sd``; None for one seed), ``identical``, ``seeds``, ``chance`` and ``above_chance``:
    how many seeds' probes, tested in distribution on their own modality, are above chance (CI low >
    chance; the closest vlprobe has to the paper's #sd, its number of converged runs). Rows:
    image, caption, both, then the text-only baseline (tested on captions) and the zero-shot
    rows of an untrained model. Fractions, not percentages. Frozen probes, or (``finetuned``) the
    fine-tuned models, which is what the paper's table holds."""
    agg = [a for a in _final(seed_means(rows), finetuned)
           if a["transfer"] in ("same", "zero-shot", "zero-shot (no training)")]
    cells = []
    for task in dict.fromkeys(a["task"] for a in agg):
        for setting in SETTING_ORDER:
            mine = [a for a in agg if a["task"] == task and a["setting"] == setting]
            if not mine:
                continue
            own = next((a for a in mine if a["transfer"] == "same" and a["split"] == "test_ind"), None)
            for m in MODALITIES:
                ood = next((a for a in mine if a["test_modality"] == m and a["split"] == "test_ood"), None)
                if ood is None:
                    continue
                ind = next((a for a in mine if a["test_modality"] == m and a["split"] == "test_ind"), None)
                change = (None if ind is None or None in (ind["macro_f1"], ood["macro_f1"])
                          else ood["macro_f1"] - ind["macro_f1"])
                cells.append({"task": task, "trained_on": setting, "train_modality": ood["train_modality"],
                              "test_modality": m, "classifier": ood["classifier"], "train_size": ood["train_size"],
                              "ood": ood["macro_f1"], "ind": None if ind is None else ind["macro_f1"], "change": change,
                              "sd": ood["sd"], "identical": ood["identical"], "seeds": ood["seeds"],
                              "chance": ood["chance"], "n": ood["n"], "na_reason": ood.get("na_reason"),
                              "above_chance": None if own is None else own["above_chance"]})
    return cells


def table2_cell_text(c: dict) -> str:
    """A Table 2 cell as the paper prints it, with the sd: ``51.5 (-7.5) ± 2.1`` (x 100)."""
    if c.get("ood") is None and c.get("na_reason"):
        return f"N/A ({c['na_reason']})"
    text = _pct(c["ood"]) + (f" ({100 * c['change']:+.1f})" if c.get("change") is not None else "")
    if c.get("sd") is not None:
        text += f" ± {100 * c['sd']:.1f}" + ("*" if c.get("identical") else "")
    return text


def table2_table(rows: list[dict], finetuned: bool = False) -> str:
    """TraVLR's Table 2 layout: per task, rows = what the model was trained on, columns = the test
    modality, each cell the OOD macro-F1 x 100, mean over seeds, (OOD - InD) and ± the sd over seeds;
    the last column the seeds above chance in distribution (the paper's #sd: converged runs).
    Cells that repeat over seeds are marked ``*`` with :data:`IDENTICAL_NOTE` below the table."""
    cells = table2_cells(rows, finetuned)
    if not cells:
        return "(no test_ood rows)"
    tests = [m for m in MODALITIES if any(c["test_modality"] == m for c in cells)]
    lines = ["| task | trained on | " + " | ".join(f"tested on {m}" for m in tests)
             + " | seeds above chance, InD (cf. the paper's #sd) |", "|---|---|" + "---|" * (len(tests) + 1)]
    for task in dict.fromkeys(c["task"] for c in cells):
        for setting in dict.fromkeys(c["trained_on"] for c in cells if c["task"] == task):
            mine = {c["test_modality"]: c for c in cells if c["task"] == task and c["trained_on"] == setting}
            first = next(iter(mine.values()))
            above = "-" if first["above_chance"] is None else f"{first['above_chance']} of {len(first['seeds'])}"
            lines.append(f"| {task} | {_setting_name(setting)} | "
                         + " | ".join(table2_cell_text(mine[m]) if m in mine else "-" for m in tests) + f" | {above} |")
    if any(c.get("identical") for c in cells):
        lines += ["", IDENTICAL_NOTE_FINETUNED if finetuned else IDENTICAL_NOTE]
    return "\n".join(lines)


def same_modality_table(rows: list[dict], finetuned: bool = False) -> str:
    """vlprobe's same-modality table (not one of the paper's): task x setting rows, test_ind /
    test_ood columns (macro-F1 x 100, the mean over seeds ± sd, or one seed's figure with its
    bootstrap CI), the OOD change from InD, chance."""
    rows = [r for r in _final(seed_means(rows), finetuned) if r["transfer"] in ("same", "zero-shot (no training)")
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
                lines.append(f"| {task} | {name} | {rs[0]['train_size']} | {_mean_cell(ind)} | {_mean_cell(ood)} | "
                             f"{delta} | {_pct(rs[0]['chance'])} |")
    return "\n".join(lines)


def transfer_table(rows: list[dict], split: str = "test_ood", finetuned: bool = False) -> str:
    """vlprobe's transfer table: per task, train modality x test modality on ``split`` (macro-F1 x
    100, mean over seeds ± sd; the same-modality diagonal, zero-shot transfer off it, and a row per
    few-shot size when run, which TraVLR's Table 2 does not have)."""
    rows = [r for r in _final(seed_means(rows), finetuned) if r["split"] == split and r["setting"] in MODALITIES]
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
                    cells.append(_mean_cell(r) if (m != train or kind == "zero-shot") else "(as above)")
                lines.append(f"| {task} | {train} | {kind} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def learning_curve_rows(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["transfer"] == "same" and r["setting"] != ZERO_SHOT and r.get("classifier") != "finetune"]


def _band(a: dict) -> tuple[float | None, float | None]:
    """The band a learning curve shows around a point: mean ± sd over seeds, else the CI."""
    if a.get("sd") is not None:
        return a["macro_f1"] - a["sd"], a["macro_f1"] + a["sd"]
    return a.get("ci_low"), a.get("ci_high")


def plot_learning_curves(path: Path, rows: list[dict], task: str) -> bool:
    """Macro-F1 against training size, one panel per test split, one line per setting (Figure 12):
    the mean over seeds with a band of ± 1 sd, or one seed's figure with its bootstrap CI."""
    mine = [r for r in seed_means(learning_curve_rows(rows)) if r["task"] == task]
    sizes = sorted({r["train_size"] for r in mine})
    if len(sizes) < 2:
        return False
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    splits = sorted({r["split"] for r in mine})
    fig, axes = plt.subplots(1, len(splits), figsize=(4.2 * len(splits), 3.4), sharey=True, squeeze=False)
    for ax, split in zip(axes[0], splits):
        for setting in SETTING_ORDER:
            pts = sorted((r["train_size"], r["macro_f1"], *_band(r)) for r in mine
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
        # a log axis labels its minor ticks too ("6x10^2" beside "500"): the training sizes only
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.set_xlabel("training rows")
        ax.set_title(f"{task}: {split}")
        ax.set_ylim(0, 100)
    axes[0][0].set_ylabel("macro-F1 (%)")
    axes[0][-1].legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


CSV_COLUMNS = ("task", "setting", "train_modality", "test_modality", "transfer", "train_size", "split", "seed",
               "n", "macro_f1", "ci_low", "ci_high", "chance", "f1_true", "f1_false", "acc", "classifier", "l2", "metric")


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
    """What ``vlprobe probe`` prints and tables.md holds: TraVLR's Table 2 layout (of the frozen
    probes, and of the fine-tuned models with ``finetune``), then vlprobe's same-modality and
    transfer tables, the seeds, the schedule, and timings."""
    t = result.provenance.get("timings", {})
    f = result.provenance.get("features", {})
    st = result.provenance.get("settings", {})
    model = result.provenance.get("model", {}).get("model_id")
    seeds = st.get("seeds") or sorted({r.get("seed") for r in result.rows if r.get("seed") is not None})
    many = len(seeds) > 1
    figure = ("the mean over seeds ± the sample sd" if many else "one seed")
    parts = [
        f"# vlprobe probe: {model}",
        "",
        (f"Seeds {', '.join(map(str, seeds))}: each seed draws the learning-curve subsets, the few-shot rows, the MLP's "
         f"initial weights, the fine-tuning's head and row order, and the bootstrap; every cell below is {figure} "
         f"(per-seed figures and bootstrap CIs in results.csv); * marks a figure every seed gave alike." if many else
         "One seed: cells are that seed's figures, with their bootstrap CI where the table has room."),
        "",
        "TraVLR's Table 2 layout, frozen-feature probes (OOD macro-F1 x 100, (OOD - InD), ± sd over seeds; rows: "
        "trained on, columns: tested on). The paper's Table 2 holds fine-tuned models; a frozen probe is its App. B "
        "\"frozen pretrained representations\" setting:",
        "",
        table2_table(result.rows),
        "",
        "Same modality, in and out of distribution (vlprobe's table, not one of the paper's; macro-F1 x 100, "
        + ("mean ± sd" if many else "[95% bootstrap CI]") + "):",
        "",
        result.same_modality_table(),
        "",
        "Cross-modal transfer with few-shot rows, test_ood (vlprobe's table; rows: trained on; columns: tested on):",
        "",
        transfer_table(result.rows),
        "",
        "Cross-modal transfer with few-shot rows, test_ind:",
        "",
        transfer_table(result.rows, "test_ind"),
        "",
    ]
    if any(r.get("classifier") == "finetune" for r in result.rows):
        from .finetune import schedule_note

        plan = st.get("finetune") or {}
        note = schedule_note(plan) if plan.get("schedule") else "schedule not recorded"
        parts += [f"TraVLR's Table 2 layout, fine-tuned model + linear head (the paper's setting; {note}):", "",
                  table2_table(result.rows, finetuned=True), "",
                  "Fine-tuned model + linear head, same modality (macro-F1 x 100):", "",
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
