"""TraVLR's protocol for any model: train a probe on one modality, test on each (``vlprobe probe``; docs/probe.md).

TraVLR (Chow, Tan, Kan, EACL 2023) trains on a task with the scene given as an image, a caption or both, and tests on
the same or another modality, in distribution (``test_ind``) and out of it (``test_ood``), by macro-F1. Here a small
classifier is trained on the frozen model's features (the paper's App. B); ``finetune=True`` also fine-tunes a copy of
a dual encoder, as the paper's main experiments do. By layer: :mod:`.settings`, :mod:`.data`, :mod:`.features`,
:mod:`.classifiers`, :mod:`.metrics`, :mod:`.protocol`, :mod:`.finetune`, :mod:`.result` and :mod:`.api`.
"""

from ..storage.locations import DEFAULT_MODEL
from .api import probe
from .classifiers import fit, select
from .data import Split, load_splits
from .features import extract_features
from .metrics import macro_f1, measure
from .protocol import run_probes
from .result import (
                     ProbeResult,
                     format_report,
                     plot_learning_curves,
                     same_modality_table,
                     seed_means,
                     table2_cells,
                     table2_table,
)
from .settings import L2_GRID, MODALITIES, TEXT_ONLY, ZERO_SHOT, ProbeSettingError, ProbeSettings, check_settings

__all__ = [
    "DEFAULT_MODEL", "L2_GRID", "MODALITIES", "TEXT_ONLY", "ZERO_SHOT", "ProbeResult", "ProbeSettingError",
    "ProbeSettings", "Split", "check_settings", "extract_features", "fit", "format_report", "load_splits", "macro_f1",
    "measure", "plot_learning_curves", "probe", "run_probes", "same_modality_table", "seed_means", "select",
    "table2_cells", "table2_table",
]
