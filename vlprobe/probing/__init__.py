"""TraVLR's protocol for any model: train a probe on one modality, test on each (``vlprobe probe``).

TraVLR (Chow, Tan, Kan, EACL 2023) *trains* a model on a task with the scene given as an image, a
caption, or both, and tests it on the same or another modality, in distribution (``test_ind``) and
out of distribution (``test_ood``), scored by macro-F1 (its Table 2: the OOD train x test modality
matrix with the change from InD, mean over three seeds; Figure 12: learning curves). Here the model is
frozen and a small classifier is trained on its features (the paper's "frozen pretrained
representations" setting, Appendix B); ``finetune=True`` (dual encoders) also fine-tunes a copy of
the model with a linear head on the same features, as the paper's main experiments do
(:func:`finetune_rows`; rows with ``classifier = "finetune"``).

**Features** come through :class:`vlprobe.scoring.engine.Engine`, so each unique input is computed once and
cached on disk next to ``vlprobe evaluate``'s scores (a second probe on the same model computes
nothing). Rows are read a chunk at a time and each chunk's features are appended to float32 files
in a temporary folder (:mod:`vlprobe.storage.feature_store`), which the classifiers read a block of rows at
a time: the probe's memory does not grow with the number of rows.

* dual encoders (CLIP, SigLIP, ...): ``[u, v, u*v, |u-v|]`` with ``v`` the query's text embedding and
  ``u`` the scene's: the image embedding (image), the caption's text embedding (caption), or the
  L2-normalised sum of both (both). The text-only baseline is the text tower on
  ``query + " " + caption`` in one pass (the query first, so a short text tower's truncation cuts
  the caption, not the query; the paper's BERT baselines read caption [SEP] query).
* ITM heads (BLIP ITM, ViLT): the joint representation the matching head reads
  (:meth:`ITMScorer.pair_features`) of (image, query) / (blank image, query + caption) /
  (image, query + caption), as ``vlprobe evaluate --modality`` builds them (the query first).
  Rows whose query a text's truncation still cuts are counted and reported in one line; a test
  split whose every row lost it is N/A (:mod:`vlprobe.probing.features`).
* VQAScore VLMs: no probe; the zero-shot P(Yes | scene, query) > 0.5 is the prediction (the
  ``zero-shot`` rows).

**Classifier**: logistic regression (torch, full-batch L-BFGS from zeros, features standardised on
the training rows), or ``classifier="mlp"`` (one hidden layer, Adam, fixed seed). The L2 strength is
chosen among :data:`L2_GRID` by macro-F1 on the ``validation`` split of the training modality,
never on a test split.

**Transfer**: a probe trained on modality A is tested on every test modality B (zero-shot); with
``few_shot=N`` it is then trained further on N ``train`` rows of B, regularised towards its
zero-shot weights (L2-SP with the chosen strength) and tested again.

**Learning curves**: ``train_sizes`` trains on nested seeded subsets of ``train`` (same modality).

**Seeds**: ``seeds=3`` (as the paper) runs everything for seeds ``seed``, ``seed + 1``, ``seed + 2``
(subsets, few-shot rows, MLP initialisation, fine-tuning, bootstrap); the tables show the mean and the
sample sd over seeds (:func:`seed_means`). Features are computed once, so seeds cost only the fits.
``schedule`` (``finetune=True``): ``"quick"`` (``epochs``, the best validation epoch kept: early
stopping, a departure from the paper) or ``"paper"`` (80 epochs, no early stopping).

**Metric**: macro-F1 (the mean of the F1 of the true and of the false class, the paper's B.1), with
F1 per class, accuracy, a percentile bootstrap CI and chance, from :func:`vlprobe.metric.compute` on
1 x 1 items (gold ``[[1]]``/``[[0]]``, the probe's probability) when the metric has ``macro_f1``, else
from this module's own implementation of the same definitions.

The package, by layer: :mod:`.settings` (every setting, checked first; constants), :mod:`.data`
(the splits), :mod:`.features` (through the engine and cache, on disk), :mod:`.classifiers` (the
probes), :mod:`.metrics` (macro-F1 and its CI), :mod:`.protocol` (train on one modality, test on
each), :mod:`.finetune`, :mod:`.result` (:class:`ProbeResult`, tables, plots, files) and
:mod:`.api` (:func:`probe`).
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
