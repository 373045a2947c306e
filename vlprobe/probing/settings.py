"""Every setting of ``vlprobe.probe`` / ``vlprobe probe``, checked before anything is loaded
(:func:`check_settings`), the probe's constants, and the command line a run records."""

from __future__ import annotations

import math
import os
import re
from typing import Any

import numpy as np

from ..errors import ArgumentError
from ..evaluation import CHUNK_ROWS
from ..locations import DEFAULT_MODEL

MODALITIES = ("image", "caption", "both")


TEXT_ONLY = "text-only"


ZERO_SHOT = "zero-shot"


CLASSIFIERS = ("logreg", "mlp")


SCHEDULES = ("quick", "paper")  # --finetune: --epochs, best on validation kept / 80 epochs, no early stopping


L2_GRID = (1e-4, 1e-3, 1e-2, 1e-1, 1.0)


TRAIN, VALIDATION = "train", "validation"


DEFAULT_DATASET = "travlr"


SETTING_ORDER = (*MODALITIES, TEXT_ONLY, ZERO_SHOT)


MAX_BOOTSTRAP = 100_000  # resamples, as vlprobe.evaluate allows


# The names a probe run writes into its output folder (and the temporary files older versions left
# there): a folder holding anything else is not a probe run's, and is never replaced.
PROBE_RUN_FILE = re.compile(r"^(results\.json|results\.csv|tables\.md|learning_curve_.*\.png|\..*\.tmp\d+)$")


TRAVLR_COLUMNS = ("image", "caption", "query", "label")


TRAVLR_SHAPE = ("a TraVLR-shaped dataset: the probe needs splits 'train', 'validation' and at least one 'test*', "
                "each with columns image, caption, query and label (true/false)")


_NONE = object()


class ProbeSettingError(ArgumentError):
    """A bad argument of :func:`probe`: an :class:`~vlprobe.errors.ArgumentError` (``str(err)``
    names it as Python spells it, ``few_shot='x': ...``; :meth:`cli` as the command line does,
    ``--few-shot x: ...``) that knows the probe's flags."""

    # Python keywords whose flag is not simply "--" + the name with dashes.
    FLAGS = {**ArgumentError.FLAGS, "dataset": "--dataset", "train_modalities": "--train-modality",
             "test_modalities": "--test-modality", "train_sizes": "--train-size",
             "text_baseline": "--no-text-baseline"}


def _whole(name: str, value: Any, low: int) -> int:
    what = {0: "0 or more", 1: "at least 1"}.get(low, f"at least {low}")
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ProbeSettingError(name, value, f"must be a whole number ({what})")
    if value < low:
        raise ProbeSettingError(name, value, f"must be {what}")
    return int(value)


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ProbeSettingError(name, value, "must be True or False")
    return bool(value)


def _optional_name(name: str, value: Any, what: str) -> str | None:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise ProbeSettingError(name, value, f"must be {what}, or None")
    return value


def _one_dataset(value: Any, name: str = "datasets") -> str:
    """The probe's one dataset: a folder or Hub id, alone or as the only element of a list (as
    ``vlprobe.evaluate(datasets=...)`` takes them)."""
    wanted = "must be one TraVLR-shaped dataset folder or Hub id (a path or a string; the probe takes one dataset)"
    if isinstance(value, (list, tuple)):
        if len(value) != 1:
            raise ProbeSettingError(name, value, wanted)
        value = value[0]
    if not isinstance(value, (str, os.PathLike)) or not str(value).strip():
        raise ProbeSettingError(name, value, wanted)
    return str(value)


def _model_ok(model: Any) -> Any:
    from ..scorers.base import Scorer

    if isinstance(model, (str, os.PathLike)) and str(model).strip():
        return model
    if isinstance(model, tuple) and len(model) == 2 or isinstance(model, Scorer) or hasattr(model, "config"):
        return model
    raise ProbeSettingError("model", model, "must be a model folder or Hub id, a transformers model (with its "
                                            "processor), or a vlprobe scorer")


def check_settings(*, model: Any = DEFAULT_MODEL, datasets: Any = DEFAULT_DATASET, configs: Any = "all",
                   train_modalities: Any = MODALITIES, test_modalities: Any = MODALITIES, train_sizes: Any = None,
                   few_shot: Any = 0, classifier: Any = "logreg", text_baseline: Any = True, finetune: Any = False,
                   epochs: Any = 3, bootstrap: Any = 1000, confidence: Any = 0.95, seed: Any = 0, limit: Any = None,
                   batch_size: Any = 32, num_workers: Any = None, device: Any = None, dtype: Any = "float32",
                   family: Any = None, revision: Any = None, dataset_revision: Any = None, cache_dir: Any = None,
                   chunk_size: Any = CHUNK_ROWS, progress: Any = True, out: Any = None, seeds: Any = 3,
                   schedule: Any = "quick") -> dict[str, Any]:
    """Every setting of :func:`probe` checked (and normalised: lists of modalities and sizes, the
    dataset as a string, the device and dtype as torch names), before anything is loaded; the
    first bad one raises :class:`ProbeSettingError` naming it. Returns the settings."""
    from ..evaluation import check_device

    s: dict[str, Any] = {"model": _model_ok(model), "datasets": _one_dataset(datasets)}
    if not (isinstance(configs, str) or isinstance(configs, (list, tuple)) and configs
            and all(isinstance(c, str) for c in configs)):
        raise ProbeSettingError("configs", configs, "must be 'all', a task name, a comma-separated string or a "
                                                    "list of names")
    s["configs"] = configs
    s["train_modalities"] = _modalities(train_modalities, "train_modalities")
    s["test_modalities"] = _modalities(test_modalities, "test_modalities")
    s["train_sizes"] = _sizes(train_sizes)
    s["few_shot"] = _whole("few_shot", few_shot, 0)
    if not isinstance(classifier, str) or classifier not in CLASSIFIERS:
        raise ProbeSettingError("classifier", classifier, f"unknown classifier; choose one of {', '.join(CLASSIFIERS)}")
    s["classifier"] = classifier
    s["text_baseline"] = _flag("text_baseline", text_baseline)
    s["finetune"] = _flag("finetune", finetune)
    s["progress"] = _flag("progress", progress)
    s["epochs"] = _whole("epochs", epochs, 1)
    s["bootstrap"] = _whole("bootstrap", bootstrap, 0)
    if s["bootstrap"] > MAX_BOOTSTRAP:
        # the resampled confusion counts are held in memory at once (4 floats per resample and more)
        raise ProbeSettingError("bootstrap", bootstrap, f"must be at most {MAX_BOOTSTRAP:,} resamples (1000 is the "
                                                        f"usual, 10,000 for a steadier CI)")
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float, np.number)) \
            or not math.isfinite(confidence) or not 0 < confidence < 1:
        raise ProbeSettingError("confidence", confidence, "must be a level strictly between 0 and 1 (e.g. 0.95)")
    s["confidence"] = float(confidence)
    s["seed"] = _whole("seed", seed, 0)
    s["seeds"] = _whole("seeds", seeds, 1)
    if not isinstance(schedule, str) or schedule not in SCHEDULES:
        raise ProbeSettingError("schedule", schedule, f"choose one of {', '.join(SCHEDULES)}")
    s["schedule"] = schedule
    s["limit"] = None if limit is None else _whole("limit", limit, 1)
    s["batch_size"] = _whole("batch_size", batch_size, 1)
    s["num_workers"] = None if num_workers is None else _whole("num_workers", num_workers, 0)
    s["chunk_size"] = _whole("chunk_size", chunk_size, 1)
    try:
        from ..scorers.loading import resolve_dtype

        s["dtype"] = resolve_dtype(dtype)[0]
    except (ValueError, TypeError, AttributeError) as err:
        raise ProbeSettingError("dtype", dtype, str(err)) from None
    s["device"] = check_device(device)  # the same check (and message) as vlprobe.evaluate's
    s["family"] = _optional_name("family", family, "a scorer family name")
    s["revision"] = _optional_name("revision", revision, "a Hub revision (branch, tag or commit)")
    s["dataset_revision"] = _optional_name("dataset_revision", dataset_revision, "a Hub revision (branch, tag or "
                                                                                 "commit)")
    if cache_dir is not None and cache_dir is not False and not (
            isinstance(cache_dir, os.PathLike) or isinstance(cache_dir, str) and cache_dir.strip()):
        raise ProbeSettingError("cache_dir", cache_dir, "must be a folder path, 'none' (no cache) or None (the "
                                                        "default: $VLPROBE_CACHE, else ~/.cache/vlprobe)")
    s["cache_dir"] = "none" if cache_dir is False else cache_dir
    if out is not None and not (isinstance(out, os.PathLike) or isinstance(out, str) and out.strip()):
        raise ProbeSettingError("out", out, "must be a folder path, or None (nothing written)")
    s["out"] = out
    return s


def command_line(s: dict[str, Any]) -> str | None:
    """The ``vlprobe probe`` command that reruns checked settings ``s`` (:func:`check_settings`),
    every option spelled out; None when the model is an object no command line can name."""
    import shlex

    model = s["model"]
    if not isinstance(model, (str, os.PathLike)):
        return None
    values = {"dataset": s["datasets"], "config": s["configs"] if isinstance(s["configs"], str) else ",".join(s["configs"]),
              "dataset-revision": s["dataset_revision"], "model": str(model), "revision": s["revision"],
              "family": s["family"], "train-modality": ",".join(s["train_modalities"]),
              "test-modality": ",".join(s["test_modalities"]),
              "train-size": ",".join(map(str, s["train_sizes"])) if s["train_sizes"] else None,
              "few-shot": s["few_shot"], "classifier": s["classifier"], "no-text-baseline": not s["text_baseline"],
              "finetune": s["finetune"], "epochs": s["epochs"], "bootstrap": s["bootstrap"],
              "confidence": s["confidence"], "seed": s["seed"], "seeds": s["seeds"],
              "schedule": s["schedule"], "limit": s["limit"], "batch-size": s["batch_size"],
              "num-workers": s["num_workers"], "dtype": s["dtype"], "device": s["device"],
              "cache-dir": s["cache_dir"], "out": s["out"], "chunk-size": s["chunk_size"],
              "no-progress": not s["progress"]}
    parts = ["vlprobe", "probe"]
    for key, value in values.items():
        if value is None or value is False:
            continue
        parts += [f"--{key}"] + ([] if value is True else [str(value)])
    return " ".join(shlex.quote(p) for p in parts)


def _modalities(value: Any, name: str) -> list[str]:
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",")]
    elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        items = [v.strip() for v in value]
    else:
        raise ProbeSettingError(name, value, f"must be modality names, a comma-separated string or a list, from "
                                             f"{', '.join(MODALITIES)}")
    items = [v for v in items if v]
    bad = [v for v in items if v not in MODALITIES]
    if bad or not items:
        raise ProbeSettingError(name, value, f"unknown modality {', '.join(bad) or '(none given)'}; choose from "
                                             f"{', '.join(MODALITIES)}")
    return list(dict.fromkeys(items))


def _sizes(value: Any) -> list[int] | None:
    if value is None or (isinstance(value, (str, list, tuple)) and not (value.strip() if isinstance(value, str) else value)):
        return None
    wanted = "must be training sizes, whole numbers of at least 2: a number, a comma-separated string or a list"
    if isinstance(value, str):
        raw: list[Any] = [v.strip() for v in value.split(",") if v.strip()]
        try:
            sizes = [int(v) for v in raw]
        except ValueError:
            raise ProbeSettingError("train_sizes", value, wanted) from None
    else:
        raw = [value] if isinstance(value, (int, np.integer)) and not isinstance(value, bool) else value
        if not isinstance(raw, (list, tuple)) or any(isinstance(v, bool) or not isinstance(v, (int, np.integer))
                                                     for v in raw):
            raise ProbeSettingError("train_sizes", value, wanted)
        sizes = [int(v) for v in raw]
    if any(n < 2 for n in sizes):
        raise ProbeSettingError("train_sizes", value, wanted)
    return sorted(set(sizes))
