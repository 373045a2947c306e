"""Publish to the Hub: validate a folder locally, then ``create_repo`` + ``upload_folder``.

Three kinds of folder, three checks (each returns a list of problems; an empty list means ready):

* a **dataset** folder (``valse/``, ``bla/``, a folder made by ``vlprobe build folder``):
  card YAML present and consistent with the parquet (every config's ``data_files`` match files,
  ``dataset_info`` features declared and equal to the parquet's, exactly one default), a licence,
  image bytes embedded (no path-only images), ``load_dataset(folder, config)`` works for every
  config, and ``vlprobe.yaml`` turns the first rows of every config into items;
* the **metric** folder (``metric/``): pushed as a Space whose name equals the module's file
  stem, because ``evaluate.load("<org>/valse_metric")`` fetches ``valse_metric.py`` from the
  Space ``<org>/valse_metric``; the module loads with ``evaluate.load`` and its docstring
  examples run as doctests; the Space card and ``app.py`` are checked as for a Space;
* a **Space** folder (``space/``): README YAML with ``sdk`` and ``app_file``, and ``app.py``
  imports (in a subprocess, with ``launch()`` disabled) and defines a Gradio app.

No ``eval.yaml`` (the Hub's benchmark registration) is written: the Hub documents it as a
work-in-progress beta whose ``evaluation_framework`` must be on an allow-list that vlprobe is not on.

Nothing here touches the network until :func:`publish` is called without ``dry_run``. The token
comes from ``--token``, else the usual huggingface_hub sources (``HF_TOKEN``, the stored login).

Modules: ``plan`` (the errors, :class:`UploadPlan`, the repo-id check), ``folder`` (file names,
the card header, the files an upload sends), ``dataset``, ``space`` and ``metric`` (one kind of
folder each: its checks and its ``plan_*``), ``hub`` (the token and the upload, the only network).
This module is the public surface; import from it.
"""

from __future__ import annotations

from .dataset import check_dataset_folder, plan_dataset
from .folder import (
                     BUILD_REPORT,
                     CARD_FILE,
                     IGNORE_PATTERNS,
                     SPEC_FILE,
                     UPLOAD_IGNORED,
                     escaping_files,
                     progress_bars_off,
                     read_card,
)
from .hub import publish, resolve_token
from .metric import check_metric_folder, check_metric_module, plan_metric
from .plan import PublishError, UploadPlan, ValidationError, check_repo_id
from .space import check_app_imports, check_space_folder, plan_space, stage_space

__all__ = [
    "BUILD_REPORT", "CARD_FILE", "IGNORE_PATTERNS", "SPEC_FILE", "UPLOAD_IGNORED",
    "PublishError", "UploadPlan", "ValidationError",
    "check_app_imports", "check_dataset_folder", "check_metric_folder", "check_metric_module", "check_repo_id",
    "check_space_folder", "escaping_files", "plan_dataset", "plan_metric", "plan_space", "progress_bars_off",
    "publish", "read_card", "resolve_token", "stage_space",
]
