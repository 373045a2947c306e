"""Publish to the Hub: check a folder locally, then ``create_repo`` + ``upload_folder`` (``vlprobe publish``).

Three kinds of folder, each checked for every problem before anything is sent (:class:`ValidationError` lists them):
a **dataset** folder (:mod:`.dataset`: the card against the parquet, a licence, embedded images, ``load_dataset``
and ``vlprobe.yaml`` on every config), the **metric** (:mod:`.metric`: a Space named like the module, so that
``evaluate.load("<org>/valse_metric")`` finds it; its doctests pass) and a **Space** (:mod:`.space`: the card's
``sdk`` and ``app_file``, the app imports with ``launch()`` disabled). :mod:`.folder` holds what they share,
:mod:`.plan` the :class:`UploadPlan` and errors, and :mod:`.hub` the token and the upload, the only network (none
with ``dry_run``). No ``eval.yaml`` is written: the Hub's benchmark registration is a beta behind an allow-list.
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
