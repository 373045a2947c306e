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
from .hub import publish
from .metric import check_metric_folder, plan_metric
from .plan import PublishError, UploadPlan, ValidationError, check_repo_id
from .space import check_space_folder, plan_space

__all__ = [
    "PublishError", "UploadPlan", "ValidationError", "check_dataset_folder", "check_metric_folder", "check_repo_id",
    "check_space_folder", "plan_dataset", "plan_metric", "plan_space", "publish",
]
