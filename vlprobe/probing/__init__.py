"""TraVLR's protocol for any model: train a probe on one modality, test on each (``vlprobe probe``; docs/probe.md).

TraVLR (Chow, Tan, Kan, EACL 2023) trains a model on a task with the scene given as an image, a caption or both, and
tests it on the same or another modality, in distribution (``test_ind``) and out of it (``test_ood``), by macro-F1.
Here the model is frozen and a small classifier is trained on its features (the paper's App. B "frozen pretrained
representations"); ``finetune=True`` (dual encoders) also fine-tunes a copy of the model with a linear head, as the
paper's main experiments do. Features come through the engine and its cache, a chunk of rows at a time, into feature
files on disk, so the probe's memory does not grow with the rows. The L2 strength is chosen on ``validation``, never
on a test split; ``seeds`` repeat every fit but the deterministic full-size logistic regression, fitted once (the
tables show the mean and sd over seeds).

By layer: :mod:`.settings` (every setting, checked first; constants), :mod:`.data` (the splits), :mod:`.features`
(dual-encoder ``[u, v, u*v, |u-v|]``, an ITM head's joint representation, or a VQAScore model's zero-shot P(Yes)),
:mod:`.classifiers` (logistic regression, an MLP), :mod:`.metrics` (macro-F1 and its CI), :mod:`.protocol` (train on
one modality, test on each; transfer, learning curves), :mod:`.finetune`, :mod:`.result` (:class:`ProbeResult`,
tables, plots, files) and :mod:`.api` (:func:`probe`).
"""

from ..storage.locations import DEFAULT_MODEL
from .api import probe
from .classifiers import NEWTON_MAX_DIM, Probe, fit, select
from .data import Split, load_splits
from .features import extract_features, text_only_input
from .finetune import finetune_rows
from .metrics import macro_f1, measure
from .protocol import run_probes
from .result import (
                     ProbeResult,
                     format_report,
                     learning_curve_rows,
                     plot_learning_curves,
                     same_modality_table,
                     seed_means,
                     table2_cells,
                     table2_table,
                     transfer_table,
                     write_outputs,
)
from .settings import (
                     CLASSIFIERS,
                     DEFAULT_DATASET,
                     L2_GRID,
                     MODALITIES,
                     TEXT_ONLY,
                     ZERO_SHOT,
                     ProbeSettingError,
                     ProbeSettings,
                     check_settings,
)

__all__ = [
    "CLASSIFIERS", "DEFAULT_DATASET", "DEFAULT_MODEL", "L2_GRID", "MODALITIES", "NEWTON_MAX_DIM", "TEXT_ONLY",
    "ZERO_SHOT", "Probe", "ProbeResult", "ProbeSettingError", "ProbeSettings", "Split", "check_settings",
    "extract_features", "finetune_rows", "fit", "format_report", "learning_curve_rows", "load_splits", "macro_f1",
    "measure", "plot_learning_curves", "probe", "run_probes", "same_modality_table", "seed_means", "select",
    "table2_cells", "table2_table", "text_only_input", "transfer_table", "write_outputs",
]
