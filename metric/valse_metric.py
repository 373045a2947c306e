"""Placeholder: the real metric is being written (issue 2)."""
METRIC_KEYS = ("acc_r", "text", "image", "group", "set_acc", "set_error", "sentence_acc", "auroc", "acc", "p_c", "p_f", "min_p")
TIE_POLICIES = ("strict", "half", "lenient")


def compute_metrics(predictions, references, **kwargs):
    raise NotImplementedError("metric/valse_metric.py is being written")
