"""The protocol :class:`~vlprobe.Evaluation` and :class:`~vlprobe.ProbeResult` share."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from ..errors import ArgumentError
from .schema import Document, Entry, EvaluationDocument, ProbeRow, SummaryBlock, dump

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

E = TypeVar("E", Entry, ProbeRow)


def check_out(out: object) -> None:
    """``out`` names a folder (a str or os.PathLike), else one :class:`ArgumentError` naming it."""
    if not isinstance(out, (str, os.PathLike)) or not str(out).strip():
        raise ArgumentError("out", out, f"must be a folder's path (a str or os.PathLike), not {type(out).__name__}"
                            if not isinstance(out, str) else "is empty; name a folder for the outputs")


class RunResult(Generic[E]):
    """What a run returns: ``document`` (results.json as records), its entries (or a probe's rows) and ``summary``."""

    document: Document
    summary: Mapping[str, SummaryBlock]

    @property
    def entries(self) -> tuple[E, ...]:
        doc = self.document
        return cast("tuple[E, ...]", doc.results if isinstance(doc, EvaluationDocument) else doc.rows)

    @property
    def results(self) -> dict[str, Any]:
        """The results.json document, as JSON."""
        return cast("dict[str, Any]", dump(self.document))

    def table(self) -> str:
        raise NotImplementedError

    def to_pandas(self) -> pd.DataFrame:
        raise NotImplementedError

    def plot(self) -> Figure:
        raise NotImplementedError

    def save(self, out: str | os.PathLike[str]) -> list[Path]:
        raise NotImplementedError
