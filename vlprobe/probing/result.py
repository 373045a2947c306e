"""``vlprobe.probe``'s :class:`ProbeResult`: its tables (TraVLR's Table 2 layout, two of vlprobe's), plots and files."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..benchmarks import find
from ..errors import write_failed
from ..results import RunResult, pct
from ..results.io import provenance_record
from ..results.run import check_out
from ..results.schema import (
    DatasetSource,
    Finetune,
    ProbeDocument,
    ProbeRow,
    Stats,
    SummaryBlock,
    SummaryRow,
    Table2Cell,
    Timings,
    dataset_name,
    dump,
    parse,
)
from .settings import DEFAULT_DATASET, MODALITIES, PROBE_RUN_FILE, SETTING_ORDER, TEXT_ONLY, ZERO_SHOT

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure


def probe_rows(rows: Sequence[ProbeRow | Mapping[str, Any]]) -> list[ProbeRow]:
    """The rows as records (a :class:`~vlprobe.results.schema.SchemaError` names a row's bad field)."""
    return [r if isinstance(r, ProbeRow) else parse(ProbeRow, dump(r), f"rows[{i}]") for i, r in enumerate(rows)]


@dataclass(repr=False)
class ProbeResult(RunResult[ProbeRow]):
    """What :func:`probe` returns, on :class:`vlprobe.Evaluation`'s protocol; ``rows``: one per task x setting x train
    size x test modality x split x seed, ``entries`` the same as records; ``table2()``: TraVLR's Table 2 layout."""

    rows: list[dict[str, Any]]
    provenance: dict[str, Any]

    @cached_property
    def document(self) -> ProbeDocument:
        """results.json as records: provenance, rows, summary, TraVLR's Table 2 cells and the tables as Markdown."""
        rows = probe_rows(self.rows)
        tuned = any(r.finetuned for r in rows)
        tables = {"table2": table2_table(rows), "same_modality": same_modality_table(rows),
                  "transfer_test_ood": transfer_table(rows), "transfer_test_ind": transfer_table(rows, "test_ind"),
                  **({"table2_finetuned": table2_table(rows, finetuned=True)} if tuned else {})}
        cells = {"frozen": tuple(table2_cells(rows)),
                 **({"finetune": tuple(table2_cells(rows, finetuned=True))} if tuned else {})}
        prov = provenance_record(self.provenance)
        return ProbeDocument(prov, tuple(rows), _summary(rows, prov.dataset, prov.settings.seeds), cells, tables)

    @property
    def summary(self) -> dict[str, SummaryBlock]:
        """The full-size frozen probe's macro-F1 on its own modality per task, setting and split (a CI for one seed only)."""
        return dict(self.document.summary)

    def table(self) -> str:
        """The text ``vlprobe probe`` prints (also tables.md)."""
        return format_report(self)

    def to_pandas(self) -> pd.DataFrame:
        """The rows as a DataFrame."""
        import pandas as pd

        return pd.DataFrame([dump(r) for r in self.entries], columns=[f.name for f in fields(ProbeRow)])

    def same_modality_table(self) -> str:
        """:func:`same_modality_table` of the frozen probes."""
        return same_modality_table(self.entries)

    def transfer_table(self) -> str:
        """:func:`transfer_table` on test_ood of the frozen probes."""
        return transfer_table(self.entries)

    def table2(self, finetuned: bool = False) -> str:
        """:func:`table2_table` of the frozen probes, or of the fine-tuned models."""
        return table2_table(self.entries, finetuned)

    def plot(self) -> Figure:
        """Per task, a bar per setting and test split of :attr:`summary`, with its CI and chance."""
        import matplotlib.pyplot as plt

        from ..results import bar_chart

        by_task: dict[str, list[SummaryRow]] = {}
        for row in next(iter(self.summary.values())).rows:
            by_task.setdefault(row.config, []).append(row)
        n = max(1, len(by_task))
        cols = min(2, n)
        fig, axes = plt.subplots(math.ceil(n / cols), cols, figsize=(6.0 * cols, 4.0 * math.ceil(n / cols)),
                                 squeeze=False)
        for ax, (task, rows) in zip(axes.flat, by_task.items()):
            bar_chart(ax, [f"{r.setting} {r.split}" for r in rows], [r.values.get("macro_f1") for r in rows],
                      ci=[r.ci.get("macro_f1") for r in rows], chance=[r.chance for r in rows], label="macro-F1",
                      confidence=self.document.provenance.settings.confidence)
            ax.set_title(task, fontsize=9)
            ax.legend(fontsize=7, loc="upper right")
        for ax in list(axes.flat)[len(by_task):]:
            ax.axis("off")
        fig.tight_layout()
        return fig

    def save(self, out: str | os.PathLike) -> list[Path]:
        """Write the run's folder ``out``; a write error is one :class:`~vlprobe.errors.VlprobeError`, ``out`` as it was."""
        from ..results import check_output_dir

        check_out(out)
        check_output_dir(out, PROBE_RUN_FILE)
        try:
            return write_outputs(out, self)
        except OSError as err:
            features = self.document.provenance.features
            raise write_failed(out, err, features.cache_dir if features else None, "features", "none") from None

    def __repr__(self) -> str:
        prov = self.document.provenance
        dataset = prov.dataset.name or prov.dataset.dataset if prov.dataset else None
        tasks = ", ".join(dict.fromkeys(r.task for r in self.entries))
        return f"<vlprobe.ProbeResult of {prov.model.name} on {dataset} ({tasks}): {len(self.rows)} rows>"


def _summary(rows: Sequence[ProbeRow], dataset: DatasetSource | None, seeds: Sequence[int] | None) -> dict[str, SummaryBlock]:
    out = []
    for r in _final(seed_means(rows)):
        if r.transfer not in ("same", "zero-shot (no training)"):
            continue
        setting = r.setting if r.setting != ZERO_SHOT else f"zero-shot, {r.test_modality}"
        out.append(SummaryRow(config=r.task, label=f"{r.task} ({setting})", setting=setting, split=r.split,
                              values={"macro_f1": r.macro_f1} if r.macro_f1 is not None else {}, n_items=r.n,
                              train_size=r.train_size, chance=r.chance, sd=r.sd, seeds=r.seeds,
                              ci={"macro_f1": (r.ci_low, r.ci_high)} if r.ci_low is not None else {}))
    bench = find(dataset.benchmark) if dataset else None
    source = bench.source if bench is not None and bench.headline_for((1, 1)) == ["macro_f1"] else None  # TraVLR's
    many = len(seeds or [None]) > 1
    name = bench.name if bench is not None else dataset_name(dataset.dataset if dataset else DEFAULT_DATASET)
    note = ("frozen features + a trained probe (vlprobe probe); trained and tested on the same modality, the full "
            "training split" + (f"; mean over {len(seeds or [])} seeds (sd beside it)" if many else ""))
    return {name: SummaryBlock(bench.name if bench is not None else None, tuple(out), source, ("macro_f1",), True, (note,))}


@dataclass(frozen=True)
class SeedMean(ProbeRow):
    """The rows that differ only in their seed, as one: their mean ``macro_f1``, sample ``sd`` and ``above_chance``."""

    sd: float | None = None
    identical: bool = False
    seeds: tuple[int | None, ...] = ()
    above_chance: int = 0


GROUP_KEYS = ("classifier", "task", "setting", "train_modality", "test_modality", "transfer", "train_size", "split")


def _above_chance(r: ProbeRow) -> bool:
    """A seed's figure above chance: its bootstrap CI's lower end when it has one, else the value."""
    if r.chance is None or r.macro_f1 is None:
        return False
    return (r.ci_low if r.ci_low is not None else r.macro_f1) > r.chance


def seed_means(rows: Sequence[ProbeRow | Mapping[str, Any]]) -> list[SeedMean]:
    """One :class:`SeedMean` per group of rows that differ only in their ``seed``."""
    from .metrics import over_seeds

    groups: dict[tuple, list[ProbeRow]] = {}
    for r in probe_rows(rows):
        groups.setdefault(tuple(getattr(r, k) for k in GROUP_KEYS), []).append(r)
    out = []
    for rs in groups.values():
        st, one = over_seeds([r.macro_f1 for r in rs]), len(rs) == 1
        out.append(SeedMean(**{**dump(rs[0]), "seed": None, "macro_f1": st.mean, "sd": st.sd,
                               "identical": st.identical, "seeds": tuple(r.seed for r in rs),
                               "above_chance": sum(_above_chance(r) for r in rs),
                               "ci_low": rs[0].ci_low if one else None, "ci_high": rs[0].ci_high if one else None,
                               # a setting no seed could measure (every test row lost its query) stays N/A with its reason
                               "na_reason": rs[0].na_reason if st.mean is None else None}))
    return out


def _final(rows: list[SeedMean], finetuned: bool = False) -> list[SeedMean]:
    """Rows of the largest train size per task and setting, of the frozen probes or the fine-tuned models."""
    rows = [r for r in rows if r.finetuned == finetuned]
    full: dict[tuple, int] = {}
    for r in rows:
        full[(r.task, r.setting)] = max(full.get((r.task, r.setting), 0), r.train_size)
    return [r for r in rows if r.train_size == full[(r.task, r.setting)]]


def _pct(v: float | None) -> str:
    return pct(v) or "-"


def _mean_cell(a: SeedMean | None) -> str:
    """``70.0 ± 10.0`` (``*``: every seed alike), or one seed's figure with its CI, or N/A."""
    if a is None:
        return "-"
    if a.macro_f1 is None and a.na_reason:
        return f"N/A ({a.na_reason})"
    ci = f" [{_pct(a.ci_low)}, {_pct(a.ci_high)}]" if a.ci_low is not None else ""
    sd = f" ± {100 * a.sd:.1f}" + ("*" if a.identical else "") if a.sd is not None else ""
    return f"{_pct(a.macro_f1)}{ci}{sd}"


def _change(ind: ProbeRow | None, ood: ProbeRow | None) -> float | None:
    if ind is None or ood is None or ind.macro_f1 is None or ood.macro_f1 is None:
        return None
    return ood.macro_f1 - ind.macro_f1


def _setting_name(setting: str) -> str:
    return {TEXT_ONLY: "text-only (text tower on query + caption)", ZERO_SHOT: "zero-shot (no training)"}.get(
        setting, setting)


IDENTICAL_NOTE = ("* the same value for every seed: the setting is deterministic (a logistic-regression probe fitted "
                  "from zeros on the whole training split, or a model not trained at all), so its sd of 0 says nothing "
                  "about how the figure varies with the data; TraVLR's seeds vary its fine-tuning, which the frozen "
                  "probe does not have.")


IDENTICAL_NOTE_FINETUNED = ("* the same value for every seed: each seed's fine-tuned model (its own head, row order "
                            "and bootstrap) gave this figure.")


def _markdown(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(map(str, row)) + " |" for row in rows)]


def table2_cells(rows: Sequence[ProbeRow | Mapping[str, Any]], finetuned: bool = False) -> list[Table2Cell]:
    """TraVLR's Table 2 (Chow et al., EACL 2023) as data: per task, setting and test modality, the full-size model's OOD
    macro-F1, InD, change and sd over seeds; ``above_chance``: seeds above chance InD (the closest to the paper's #sd)."""
    agg = [a for a in _final(seed_means(rows), finetuned) if a.transfer in ("same", "zero-shot", "zero-shot (no training)")]
    cells = []
    for task in dict.fromkeys(a.task for a in agg):
        for setting in SETTING_ORDER:
            mine = [a for a in agg if a.task == task and a.setting == setting]
            own = next((a for a in mine if a.transfer == "same" and a.split == "test_ind"), None)
            for m in MODALITIES:
                ood = next((a for a in mine if a.test_modality == m and a.split == "test_ood"), None)
                if ood is None:
                    continue
                ind = next((a for a in mine if a.test_modality == m and a.split == "test_ind"), None)
                change = _change(ind, ood)
                cells.append(Table2Cell(task=task, trained_on=setting, train_modality=ood.train_modality,
                                        test_modality=m, classifier=ood.classifier, train_size=ood.train_size,
                                        ood=ood.macro_f1, ind=None if ind is None else ind.macro_f1, change=change,
                                        sd=ood.sd, identical=ood.identical, seeds=ood.seeds, chance=ood.chance,
                                        n=ood.n, na_reason=ood.na_reason,
                                        above_chance=None if own is None else own.above_chance))
    return cells


def table2_cell_text(c: Table2Cell) -> str:
    """A Table 2 cell as the paper prints it, with the sd: ``51.5 (-7.5) ± 2.1`` (x 100)."""
    if c.ood is None and c.na_reason:
        return f"N/A ({c.na_reason})"
    text = _pct(c.ood) + (f" ({100 * c.change:+.1f})" if c.change is not None else "")
    return text + (f" ± {100 * c.sd:.1f}" + ("*" if c.identical else "") if c.sd is not None else "")


def table2_grid(cells: Sequence[Table2Cell]) -> tuple[list[str], list[tuple[str, str, list[str], str]]]:
    """Table 2's test modalities, and per (task, trained on) its cells' texts and the seeds above chance."""
    tests = [m for m in MODALITIES if any(c.test_modality == m for c in cells)]
    body = []
    for task in dict.fromkeys(c.task for c in cells):
        for setting in dict.fromkeys(c.trained_on for c in cells if c.task == task):
            mine = {c.test_modality: c for c in cells if c.task == task and c.trained_on == setting}
            first = next(iter(mine.values()))
            above = "-" if first.above_chance is None else f"{first.above_chance} of {len(first.seeds)}"
            body.append((task, _setting_name(setting), [table2_cell_text(mine[m]) if m in mine else "-" for m in tests],
                         above))
    return tests, body


def table2_table(rows: Sequence[ProbeRow | Mapping[str, Any]], finetuned: bool = False) -> str:
    """:func:`table2_cells` in Markdown: rows what the model was trained on, columns the test modality."""
    cells = table2_cells(rows, finetuned)
    if not cells:
        return "(no test_ood rows)"
    tests, body = table2_grid(cells)
    lines = _markdown(["task", "trained on", *(f"tested on {m}" for m in tests),
                       "seeds above chance, InD (cf. the paper's #sd)"],
                      [(task, setting, *texts, above) for task, setting, texts, above in body])
    if any(c.identical for c in cells):
        lines += ["", IDENTICAL_NOTE_FINETUNED if finetuned else IDENTICAL_NOTE]
    return "\n".join(lines)


def same_modality_table(rows: Sequence[ProbeRow | Mapping[str, Any]], finetuned: bool = False) -> str:
    """vlprobe's same-modality table (not the paper's): task x setting rows, test_ind / test_ood macro-F1 columns."""
    means = [r for r in _final(seed_means(rows), finetuned) if r.transfer in ("same", "zero-shot (no training)")
             and (r.train_modality is None or r.test_modality == r.train_modality or r.setting == TEXT_ONLY)]
    body = []
    for task in dict.fromkeys(r.task for r in means):
        for setting in SETTING_ORDER:
            mine = [r for r in means if r.task == task and r.setting == setting]
            groups = {m: [r for r in mine if r.test_modality == m] for m in MODALITIES} if setting == ZERO_SHOT \
                else {setting: mine}
            for label, rs in groups.items():
                if not rs:
                    continue
                ind = next((r for r in rs if r.split == "test_ind"), None)
                ood = next((r for r in rs if r.split == "test_ood"), None)
                change = _change(ind, ood)
                delta = "-" if change is None else f"{100 * change:+.1f}"
                name = f"zero-shot, {label}" if setting == ZERO_SHOT else _setting_name(setting)
                body.append((task, name, rs[0].train_size, _mean_cell(ind), _mean_cell(ood), delta, _pct(rs[0].chance)))
    return "\n".join(_markdown(["task", "trained on (= tested on)", "n train", "test_ind macro-F1", "test_ood macro-F1",
                                "OOD - InD", "chance"], body))


def transfer_table(rows: Sequence[ProbeRow | Mapping[str, Any]], split: str = "test_ood", finetuned: bool = False) -> str:
    """vlprobe's transfer table: per task, train x test modality on ``split``, zero-shot and a row per few-shot size."""
    means = [r for r in _final(seed_means(rows), finetuned) if r.split == split and r.setting in MODALITIES]
    if not means:
        return f"(no transfer rows on {split})"
    tests = [m for m in MODALITIES if any(r.test_modality == m for r in means)]
    body = []
    for task in dict.fromkeys(r.task for r in means):
        for train in MODALITIES:
            mine = [r for r in means if r.task == task and r.train_modality == train]
            if not mine:
                continue
            kinds = ["zero-shot"] + sorted({r.transfer for r in mine if r.transfer.startswith("few-shot")})
            for kind in kinds:
                cells = []
                for m in tests:
                    want = "same" if m == train else kind
                    r = next((r for r in mine if r.test_modality == m and r.transfer == want), None)
                    cells.append(_mean_cell(r) if (m != train or kind == "zero-shot") else "(as above)")
                body.append((task, train, kind, *cells))
    return "\n".join(_markdown(["task", "trained on", "transfer", *(f"tested on {m}" for m in tests)], body))


def _band(a: SeedMean) -> tuple[float | None, float | None]:
    """A learning curve's band around a point: mean ± sd over seeds, else the CI."""
    if a.sd is not None and a.macro_f1 is not None:
        return a.macro_f1 - a.sd, a.macro_f1 + a.sd
    return a.ci_low, a.ci_high


def plot_learning_curves(path: Path, rows: Sequence[ProbeRow | Mapping[str, Any]], task: str) -> bool:
    """Macro-F1 against training size per test split and setting (Figure 12); False with fewer than two sizes."""
    trained = [r for r in probe_rows(rows) if r.transfer == "same" and r.setting != ZERO_SHOT and not r.finetuned]
    mine = [r for r in seed_means(trained) if r.task == task and r.macro_f1 is not None]
    sizes = sorted({r.train_size for r in mine})
    if len(sizes) < 2:
        return False
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    splits = sorted({r.split for r in mine})
    fig, axes = plt.subplots(1, len(splits), figsize=(4.2 * len(splits), 3.4), sharey=True, squeeze=False)
    for ax, split in zip(axes[0], splits):
        for setting in SETTING_ORDER:
            pts = sorted((r.train_size, r.macro_f1, *_band(r)) for r in mine if r.split == split and r.setting == setting)
            if not pts:
                continue
            xs, ys = [p[0] for p in pts], [100 * p[1] for p in pts]
            ax.plot(xs, ys, marker="o", label=setting)
            if all(None not in p[2:] for p in pts):
                ax.fill_between(xs, [100 * p[2] for p in pts], [100 * p[3] for p in pts], alpha=0.15)
        chance = next((r.chance for r in mine if r.split == split and r.chance is not None), None)
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
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return True


CSV_COLUMNS = ("task", "setting", "train_modality", "test_modality", "transfer", "train_size", "split", "seed",
               "n", "macro_f1", "ci_low", "ci_high", "chance", "f1_true", "f1_false", "acc", "classifier", "l2", "metric")


def write_outputs(out: str | os.PathLike, result: ProbeResult) -> list[Path]:
    """Write results.json, results.csv, tables.md and the learning curves as one folder swapped in for ``out``."""
    from ..results import write_run_folder
    from ..results.io import csv_bytes, results_json_bytes

    def write(folder: Path) -> list[str]:
        rows = result.entries
        (folder / "results.json").write_bytes(results_json_bytes(result.document, indent=1))
        (folder / "results.csv").write_bytes(csv_bytes(CSV_COLUMNS, [dump(r) for r in rows]))
        (folder / "tables.md").write_bytes(format_report(result).encode())
        names = ["results.json", "results.csv", "tables.md"]
        for task in dict.fromkeys(r.task for r in rows):
            name = f"learning_curve_{task}.png"
            if plot_learning_curves(folder / name, rows, task):
                names.append(name)
        return names

    return write_run_folder(out, write, PROBE_RUN_FILE)


def format_report(result: ProbeResult) -> str:
    """What ``vlprobe probe`` prints and tables.md holds: the tables (frozen, and fine-tuned), seeds and timings."""
    prov = result.document.provenance
    t, f, st, rows = prov.timings or Timings(), prov.features or Stats(), prov.settings, result.entries
    seeds = st.seeds or sorted({r.seed for r in rows if r.seed is not None})
    many = len(seeds) > 1
    figure = ("the mean over seeds ± the sample sd" if many else "one seed")
    blocks = [
        f"# vlprobe probe: {prov.model.name}",
        (f"Seeds {', '.join(map(str, seeds))}: each seed draws the learning-curve subsets, the few-shot rows, the MLP's "
         f"initial weights, the fine-tuning's head and row order, and the bootstrap; every cell below is {figure} "
         f"(per-seed figures and bootstrap CIs in results.csv); * marks a figure every seed gave alike." if many else
         "One seed: cells are that seed's figures, with their bootstrap CI where the table has room."),
        "TraVLR's Table 2 layout, frozen-feature probes (OOD macro-F1 x 100, (OOD - InD), ± sd over seeds; rows: "
        "trained on, columns: tested on). The paper's Table 2 holds fine-tuned models; a frozen probe is its App. B "
        "\"frozen pretrained representations\" setting:",
        table2_table(rows),
        "Same modality, in and out of distribution (vlprobe's table, not one of the paper's; macro-F1 x 100, "
        + ("mean ± sd" if many else "[95% bootstrap CI]") + "):",
        same_modality_table(rows),
        "Cross-modal transfer with few-shot rows, test_ood (vlprobe's table; rows: trained on; columns: tested on):",
        transfer_table(rows),
        "Cross-modal transfer with few-shot rows, test_ind:",
        transfer_table(rows, "test_ind"),
    ]
    if any(r.finetuned for r in rows):
        from .finetune import schedule_note

        plan = st.finetune if isinstance(st.finetune, Finetune) else Finetune()
        note = schedule_note(plan) if plan.schedule else "schedule not recorded"
        blocks += [f"TraVLR's Table 2 layout, fine-tuned model + linear head (the paper's setting; {note}):",
                   table2_table(rows, finetuned=True),
                   "Fine-tuned model + linear head, same modality (macro-F1 x 100):",
                   same_modality_table(rows, finetuned=True),
                   "Fine-tuned model, cross-modal transfer, test_ood:",
                   transfer_table(rows, finetuned=True)]
    timing = (f"Feature extraction {t.feature_seconds:.1f}s wall, {t.feature_cpu_seconds:.1f}s CPU "
              f"({f.computed_inputs or 0} inputs computed, the rest from the cache); fitting and testing every probe "
              f"{t.probe_seconds:.1f}s wall, {t.probe_cpu_seconds:.1f}s CPU.")
    if f.caption_truncated:
        timing += (f"\nShare of captions longer than the text tower's {f.text_max_length} tokens (truncated): "
                   + ", ".join(f"{k} {100 * v:.0f}%" for k, v in f.caption_truncated.items()) + ".")
    return "\n\n".join([*blocks, timing]) + "\n"
