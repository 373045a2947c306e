"""Runs read back into their records (:func:`vlprobe.results.read_results`) and labelled."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from ..errors import ArgumentError, SettingError
from ..results import ResultsError, read_results
from ..results import summary as summary_rules
from ..results.schema import Document, Entry, EvaluationDocument, ProbeDocument, RunSettings, SummaryBlock


class ReportError(ResultsError):
    """Results files that cannot be read; one line per file, naming the file and the field."""


@dataclass
class Run:
    """One run in a report: its file, label and records."""

    path: Path
    label: str
    doc: Document
    file_name: str | None = None  # the file as a visitor named it (the Space's uploads), for notes

    @property
    def kind(self) -> str:
        """``"evaluate"``, or ``"probe"`` (rows instead of results: it adds nothing to the evaluate tables)."""
        return self.doc.kind

    @property
    def settings(self) -> RunSettings:
        return self.doc.provenance.settings

    @property
    def results(self) -> tuple[Entry, ...]:
        return self.doc.results if isinstance(self.doc, EvaluationDocument) else ()

    @cached_property
    def named(self) -> list[tuple[str, Entry]]:
        """(the name its tables go under, entry) per entry (:func:`vlprobe.results.summary.table_names`)."""
        return list(zip(summary_rules.table_names(self.results), self.results))

    def entries(self, name: str) -> list[Entry]:
        """The entries whose tables go under ``name``."""
        return [e for n, e in self.named if n == name]

    @cached_property
    def summary(self) -> dict[str, SummaryBlock]:
        """The papers' aggregates of this run, by the current rules (not read from the file)."""
        return summary_rules.summarize(self.results, self.settings, self.doc.provenance.model)

    def caveats(self) -> list[str]:
        """What keeps the run from being comparable to a paper's."""
        s = self.settings
        said = [f"first {s.limit} rows per config only (--limit)" if s.limit else "",
                f"{s.control} control" if s.control else "",
                f"modality {s.modality}" if s.modality not in (None, "image") else ""]
        return [x for x in said if x]


def load_runs(paths: Sequence[str | os.PathLike], labels: Sequence[str] | None = None, *,
              probes: bool = False) -> list[Run]:
    """Read and check every file, the problems of all raised together (a line per file)."""
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
            doc = read_results(path)
        except ResultsError as err:
            problems.append(str(err))
            continue
        if isinstance(doc, ProbeDocument) and not probes:
            problems.append(f"{path}: a `vlprobe probe` run's results.json; this compares `vlprobe evaluate` runs")
            continue
        runs.append(Run(path, labels[k] if labels is not None else _label(doc, path), doc))
    if problems:
        raise ReportError("\n".join(problems))
    for run, label in zip(runs, unique([r.label for r in runs]), strict=True):  # labels given are unique already
        run.label = label
    return runs


def unique(names: list[str]) -> list[str]:
    """The names made unique: a name seen before gets " #2", " #3"..."""
    out: list[str] = []
    for h in names:
        name, k = h, 2
        while name in out:
            name, k = f"{h} #{k}", k + 1
        out.append(name)
    return out


def _label(doc: Document, path: Path) -> str:
    """A run's default label: its model's name, with the dtype, control and modality where they are not the defaults."""
    model, s = doc.provenance.model, doc.provenance.settings
    name = model.name if model.model_id else path.parent.name
    if name.startswith("open_clip:"):  # an open_clip checkpoint goes by ARCH/PRETRAINED
        name = name.removeprefix("open_clip:")
    else:
        name = Path(name.removeprefix("hf-hub:").removeprefix("local-dir:")).name
    bits = [name, "probe" if doc.kind == "probe" else "", model.dtype if model.dtype != "float32" else "",
            s.control, s.modality if s.modality != "image" else ""]
    return " ".join(b for b in bits if b)
