"""Publish to the Hub (``vlprobe publish``): check a dataset folder (:mod:`.dataset`), the metric (:mod:`.metric`) or
a Space (:mod:`.space`) for every problem, then ``create_repo`` + ``upload_folder`` (:mod:`.hub`, the only network).
No ``eval.yaml`` is written: the Hub's benchmark registration is a beta behind an allow-list."""

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
