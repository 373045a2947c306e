"""TraVLR's protocol for any model (``vlprobe probe``; docs/probe.md): a small classifier trained on the frozen
model's features with the scene given as an image, a caption or both, tested on each modality in distribution
(``test_ind``) and out of it (``test_ood``) by macro-F1; ``finetune=True`` also fine-tunes a copy of a dual encoder."""

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
from .settings import (
    L2_GRID,
    MODALITIES,
    TEXT_ONLY,
    ZERO_SHOT,
    ProbeSettingError,
    ProbeSettings,
    check_settings,
)

__all__ = [
    "DEFAULT_MODEL", "L2_GRID", "MODALITIES", "TEXT_ONLY", "ZERO_SHOT", "ProbeResult", "ProbeSettingError",
    "ProbeSettings", "Split", "check_settings", "extract_features", "fit", "format_report", "load_splits", "macro_f1",
    "measure", "plot_learning_curves", "probe", "run_probes", "same_modality_table", "seed_means", "select",
    "table2_cells", "table2_table",
]
