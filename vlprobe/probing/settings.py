"""Every setting of ``vlprobe.probe`` / ``vlprobe probe``, defined once in :data:`OPTIONS` (see
:mod:`vlprobe.options`): the command's flags, ``probe()``'s keywords and defaults, the checks run before anything is
loaded (:class:`ProbeSettings`, :func:`check_settings`), results.json's settings block (:func:`record`) and the rerun
command line (:func:`command_line`) all come from it; and the probe's constants."""

from __future__ import annotations

import os
import re
from typing import Any, Mapping

from ..errors import ArgumentError
from ..locations import DEFAULT_MODEL
from ..options import (
    BATCH_SIZE,
    BOOTSTRAP,
    CACHE_DIR,
    CHUNK_SIZE,
    CONFIDENCE,
    DATASET_REVISION,
    DEVICE,
    DTYPE,
    FAMILY,
    LIMIT,
    MODEL,
    NUM_WORKERS,
    OUT,
    OUTSIDE_IMAGES,
    PROGRESS,
    REVISION,
    SEED,
    Option,
    Refused,
    Settings,
    _short_enough,
    check,
    joined,
    model_given,
    one_of,
    switch,
    whole,
)
from ..options import MAX_BOOTSTRAP as MAX_BOOTSTRAP
from ..options import command_line as _command_line
from ..options import record as _record

MODALITIES = ("image", "caption", "both")


TEXT_ONLY = "text-only"


ZERO_SHOT = "zero-shot"


CLASSIFIERS = ("logreg", "mlp")


MAX_SEEDS = 100       # runs per setting: each refits every probe (and fine-tunes again with --finetune)
MAX_EPOCHS = 1_000    # fine-tuning epochs of --schedule quick (the paper's schedule: 80)
SCHEDULES = ("quick", "paper")  # fine-tuning: --epochs with the best on validation kept, or the paper's 80 epochs


L2_GRID = (1e-4, 1e-3, 1e-2, 1e-1, 1.0)


TRAIN, VALIDATION = "train", "validation"


DEFAULT_DATASET = "travlr"


DEFAULT_OUT = "runs/probe"  # `vlprobe probe`'s output folder when --out is left out (the Python API writes none)


SETTING_ORDER = (*MODALITIES, TEXT_ONLY, ZERO_SHOT)


# The names a probe run writes into its output folder (and the temporary files older versions left
# there): a folder holding anything else is not a probe run's, and is never replaced.
PROBE_RUN_FILE = re.compile(r"^(results\.json|results\.csv|tables\.md|learning_curve_.*\.png)$")


TRAVLR_COLUMNS = ("image", "caption", "query", "label")


TRAVLR_SHAPE = ("a TraVLR-shaped dataset: the probe needs splits 'train', 'validation' and at least one 'test*', "
                "each with columns image, caption, query and label (true/false)")


_NONE = object()


def _dataset(value: Any) -> str:
    """The probe's one dataset: a folder or Hub id, alone or as the only element of a list (as
    ``vlprobe.evaluate(datasets=...)`` takes them)."""
    wanted = "must be one TraVLR-shaped dataset folder or Hub id (a path or a string; the probe takes one dataset)"
    one = value[0] if isinstance(value, (list, tuple)) and len(value) == 1 else value
    if not isinstance(one, (str, os.PathLike)) or not str(one).strip():
        raise Refused(wanted)
    return str(_short_enough(one))


def _configs(value: Any) -> Any:
    if not (isinstance(value, str) or isinstance(value, (list, tuple)) and value
            and all(isinstance(c, str) for c in value)):
        raise Refused("must be 'all', a task name, a comma-separated string or a list of names")
    return value


def _modalities(value: Any) -> list[str]:
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",")]
    elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        items = [v.strip() for v in value]
    else:
        raise Refused(f"must be modality names, a comma-separated string or a list, from {', '.join(MODALITIES)}")
    if not any(items):
        raise Refused(f"unknown modality (none given); choose from {', '.join(MODALITIES)}")
    if not all(items):
        raise Refused("has an empty name between commas; name each modality once, e.g. image,caption")
    bad = [v for v in items if v not in MODALITIES]
    if bad:
        raise Refused(f"unknown modality {', '.join(bad)}; choose from {', '.join(MODALITIES)}")
    twice = sorted({v for v in items if items.count(v) > 1})
    if twice:
        raise Refused(f"names {', '.join(twice)} more than once; name each modality once")
    return items


def _sizes(value: Any) -> list[int] | None:
    if value is None or (isinstance(value, (str, list, tuple)) and not (value.strip() if isinstance(value, str) else value)):
        return None
    wanted = "must be training sizes, whole numbers of at least 2: a number, a comma-separated string or a list"
    whole_number = whole(0)
    if isinstance(value, str):
        parts = [v.strip() for v in value.split(",")]
        if not all(parts):
            raise Refused("has an empty size between commas; give sizes like 100,500,1000")
        try:
            sizes = [int(v) for v in parts]
        except ValueError:
            raise Refused(wanted) from None
    else:
        raw = value if isinstance(value, (list, tuple)) else [value]
        try:
            sizes = [whole_number(v) for v in raw]
        except Refused:
            raise Refused(wanted) from None
    if any(n < 2 for n in sizes):
        raise Refused(wanted)
    return sorted(set(sizes))


# The options of `vlprobe probe`, in the order of its --help and of the command line a run records.
OPTIONS: tuple[Option, ...] = (
    Option("datasets", DEFAULT_DATASET, f"TraVLR-shaped dataset folder or Hub id (default: {DEFAULT_DATASET}, the "
           "repository's build)", _dataset, flag="--dataset"),
    Option("configs", "all", "task(s), comma-separated, or 'all' (default)", _configs, flag="--config",
           record="configs", to_cli=joined),
    DATASET_REVISION,
    MODEL.but(default=DEFAULT_MODEL, check=model_given),
    REVISION,
    FAMILY,
    Option("train_modalities", MODALITIES, "modalities to train on, comma-separated (default: image,caption,both)",
           _modalities, flag="--train-modality", cli_default=",".join(MODALITIES), record="train_modalities",
           to_cli=joined),
    Option("test_modalities", MODALITIES, "modalities to test on, comma-separated (default: image,caption,both)",
           _modalities, flag="--test-modality", cli_default=",".join(MODALITIES), record="test_modalities",
           to_cli=joined),
    Option("train_sizes", None, "learning curve: training rows, comma-separated (the full train split is always "
           "added)", _sizes, flag="--train-size", metavar="N,N,...", record="train_sizes", to_cli=joined),
    Option("few_shot", 0, "after zero-shot transfer, train further on N rows of the unseen modality (paper: 200)",
           whole(0), type=int, metavar="N", record="few_shot"),
    Option("classifier", "logreg", "probe: logreg (default) or mlp", one_of(CLASSIFIERS, "classifier"),
           choices=CLASSIFIERS, record="classifier"),
    Option("text_baseline", True, "skip the text-only baseline (dual encoders)", switch, flag="--no-text-baseline",
           action="store_true", negated=True, record="text_baseline"),
    Option("finetune", False, "also fine-tune a copy of the model (dual encoders) with a linear head, per task and "
           "training modality", switch, action="store_true", record="finetune"),
    Option("epochs", 3, "fine-tuning epochs of --schedule quick; the best on validation is kept (default 3; "
           f"--schedule paper always runs 80; at most {MAX_EPOCHS:,})", whole(1, MAX_EPOCHS, f"must be at most "
           f"{MAX_EPOCHS:,} epochs (the paper runs 80; each epoch fine-tunes the model once over the train split)"),
           type=int),
    Option("schedule", "quick", "fine-tuning schedule: quick (--epochs, the best on validation kept: a departure "
           "from the paper) or paper (80 epochs, no early stopping, as the paper)", one_of(SCHEDULES, "schedule"),
           choices=SCHEDULES, record="schedule"),
    BOOTSTRAP,
    CONFIDENCE,
    SEED.but(help="seed of the subsets, the MLP and the bootstrap (default 0)"),
    Option("seeds", 3, f"runs per setting, seeds seed..seed+N-1; tables show mean and sd (the paper: 3; at most "
           f"{MAX_SEEDS})", whole(1, MAX_SEEDS, f"must be at most {MAX_SEEDS} runs per setting (the paper: 3; each "
           "run fits every probe again, and fine-tunes again with --finetune)"), type=int, metavar="N", record="seeds"),
    LIMIT.but(help="use only the first N rows of each split"),
    BATCH_SIZE,
    NUM_WORKERS,
    DTYPE,
    DEVICE,
    CACHE_DIR.but(help="feature cache (default: $VLPROBE_CACHE or ~/.cache/vlprobe); 'none' disables it"),
    OUT.but(help=f"output folder (default: {DEFAULT_OUT})", cli_default=DEFAULT_OUT),
    OUTSIDE_IMAGES,
    CHUNK_SIZE.but(help="rows read and encoded at a time; memory holds one chunk's images (default 2000)",
                   record="chunk_size"),
    PROGRESS,
)

# results.json's settings block, in the order it has always had (the new seeds and schedule last); the entries no
# option gives are computed by vlprobe.probe once the model is loaded
RECORD_ORDER = ("configs", "train_modalities", "test_modalities", "train_sizes", "few_shot", "classifier", "l2_grid",
                "model_selection", "finetune", "text_baseline", "zero_shot", "bootstrap", "confidence", "seed", "limit",
                "batch_size", "num_workers", "chunk_size", "seeds", "schedule")


class ProbeSettingError(ArgumentError):
    """A bad argument of :func:`probe`: an :class:`~vlprobe.errors.ArgumentError` (``str(err)``
    names it as Python spells it, ``few_shot='x': ...``; :meth:`cli` as the command line does,
    ``--few-shot x: ...``) that knows the probe's flags (those of :data:`OPTIONS`)."""

    FLAGS = {**ArgumentError.FLAGS, "dataset": "--dataset", **{o.name: o.flag for o in OPTIONS}}


class ProbeSettings(Settings):
    """A probe's settings by their Python names (``s.seeds``): every option of :data:`OPTIONS`, the ones not given at
    their defaults, checked and normalised (lists of modalities and sizes, the dataset as a string, the dtype's
    canonical name); see :class:`vlprobe.options.Settings`. The first bad one raises :class:`ProbeSettingError`."""

    OPTIONS = OPTIONS
    ERROR = ProbeSettingError


def check_settings(**values: Any) -> ProbeSettings:
    """Every setting of :func:`probe` (keywords as there; the ones left out at their defaults) checked, the slow
    checks (the device) included: :class:`ProbeSettings`."""
    return ProbeSettings(**values).check()


def _one_dataset(value: Any, name: str = "datasets") -> str:
    """``value`` checked as the probe's one dataset, named ``name`` in the error (``dataset``, its old name)."""
    option = OPTIONS[0].but(name=name, flag="--dataset")
    return check([option], {name: value}, ProbeSettingError)[name]


def record(s: Mapping[str, Any], **computed: Any) -> dict[str, Any]:
    """The settings block of results.json's provenance: checked settings ``s`` with what the run computed
    (``l2_grid``, ``model_selection``, ``finetune``, ``text_baseline``, ``zero_shot``, ``num_workers``)."""
    return _record(OPTIONS, s, RECORD_ORDER, **computed)


def command_line(s: Mapping[str, Any]) -> str | None:
    """The ``vlprobe probe`` command that reruns checked settings ``s`` (:func:`check_settings`),
    every option spelled out; None when the model is an object no command line can name."""
    return _command_line("vlprobe probe", OPTIONS, s)
