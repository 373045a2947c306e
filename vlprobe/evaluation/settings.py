"""Every setting of ``vlprobe.evaluate`` / ``vlprobe evaluate``, defined once in :data:`OPTIONS` (see
:mod:`vlprobe.options`): the command's flags, ``evaluate()``'s keywords and defaults, the checks run before anything
is loaded (:class:`EvaluateSettings`), results.json's settings block and the rerun command line all come from it.
With the checks of the ``datasets`` argument, which :mod:`vlprobe.evaluation.data` reads."""

from __future__ import annotations

import os
import sys
from typing import Any, Mapping

from ..options import (
    BATCH_SIZE_AUTO,
    BOOTSTRAP,
    CACHE_DIR,
    CHUNK_ROWS,
    CHUNK_SIZE,
    CONFIDENCE,
    DATASET_REVISION,
    DEVICE,
    DTYPE,
    FAMILY,
    LIMIT,
    MAX_BOOTSTRAP,
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
    is_number,
    joined,
    one_of,
    switch,
)
from ..options import command_line as _command_line
from ..options import record as _record
from ..runner import default_workers
from ..spec import MODALITIES as IMAGE_MODALITIES
from ..spec import ItemSpec

__all__ = ["CHUNK_ROWS", "CONTROLS", "DEFAULT_OUT", "MAX_BOOTSTRAP", "MODALITIES", "OPTIONS", "TEST_LIKE", "TEXT",
           "EvaluateSettings", "Settings",
           "check_cache_dir", "check_device", "command_line", "default_workers"]

TEST_LIKE = ("test",)


DEFAULT_OUT = "runs/default"  # the offline default run's output folder


# evaluate's modalities: TraVLR's three (vlprobe.spec, the probe's too) and text-only (vlprobe/evaluation/text_only.py)
TEXT = "text"
MODALITIES = (*IMAGE_MODALITIES, TEXT)

CONTROLS = ("blank", "shuffle")  # "shuffled" is accepted as the CLI's old spelling of "shuffle"


_DATASETS_WANTED = ("must be a dataset folder, a Hub id, a datasets.Dataset/DatasetDict (with spec=), a list of "
                    "those, or a dict {name: one of those}")


def dataset_list(datasets: Any) -> tuple[list[Any], list[str] | None]:
    """``datasets`` as a list, with the names given by a dict (None otherwise); :class:`Refused` for anything else,
    and for duplicates (the same split scored twice would repeat its ids in scores.parquet and count its items twice
    in every aggregate)."""
    names: list[str] | None = None
    if isinstance(datasets, Mapping) and not _is_dataset_dict(datasets):
        names, datasets = [str(k) for k in datasets], list(datasets.values())
    elif isinstance(datasets, (str, os.PathLike)) or _is_dataset_object(datasets):
        datasets = [datasets]
    elif not isinstance(datasets, (list, tuple)):
        raise Refused(_DATASETS_WANTED)
    datasets = list(datasets)
    if not datasets:
        raise Refused("no dataset given")
    for d in datasets:
        if not isinstance(d, (str, os.PathLike)) and not _is_dataset_object(d):
            raise Refused(_DATASETS_WANTED, d)
        if isinstance(d, (str, os.PathLike)) and not str(d).strip():
            raise Refused("is empty; name a dataset folder, a built benchmark's name or a Hub id", d)
        if isinstance(d, (str, os.PathLike)):
            _short_enough(d)
    seen: dict[str, int] = {}
    for d in datasets:
        if isinstance(d, (str, os.PathLike)):
            key = os.path.normpath(os.path.abspath(d)) if os.path.exists(d) else str(d)
            seen[key] = seen.get(key, 0) + 1
    twice = [k for k, v in seen.items() if v > 1]
    if twice:
        raise Refused("given more than once (its rows would be scored and counted twice); name each dataset once",
                      twice[0])
    return datasets, names


def _is_dataset_object(obj: Any) -> bool:
    hf = sys.modules.get("datasets")  # not imported: obj cannot be one (and a name is checked without it)
    return hf is not None and isinstance(obj, (hf.Dataset, hf.DatasetDict))


def _is_dataset_dict(obj: Any) -> bool:
    hf = sys.modules.get("datasets")
    return hf is not None and isinstance(obj, hf.DatasetDict)


def _datasets(value: Any) -> Any:
    if value is not None:
        dataset_list(value)
    return value


def _names(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()] or None
    return list(value)


def _names_given(value: Any) -> Any:
    if value is not None and not isinstance(value, str) and not (
            isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)):
        raise Refused("must be a name, a comma-separated string or a list of names")
    if value is not None:
        names = [v.strip() for v in value.split(",")] if isinstance(value, str) else [v.strip() for v in value]
        if not any(names):
            raise Refused("names nothing; give a name (or leave it out for the default)")
        if not all(names):
            raise Refused("has an empty name (between commas, or an empty string); give each name once")
    return value


def _spec(value: Any) -> Any:
    if value is None or isinstance(value, (dict, ItemSpec)) or isinstance(value, (str, os.PathLike)) and str(value):
        return value
    raise Refused("must be a vlprobe.yaml path, a dict or an ItemSpec")


def _ties(value: Any) -> str:
    # vlprobe.benchmarks' copy of the metric's list (tests check they agree): importing the metric imports
    # evaluate, 4 CPU-seconds, which a misspelt policy must not wait for
    from ..benchmarks.base import TIE_POLICIES

    return one_of(TIE_POLICIES, "tie policy")(value)


def _threshold(value: Any) -> Any:
    # The threshold is applied to match probabilities (acc, p_c, p_f): one outside [0, 1] would call every
    # cell true or every cell false, so it is refused before anything is loaded.
    if not is_number(value) or not 0 <= value <= 1:
        raise Refused("must be a probability threshold in [0, 1] (e.g. 0.5): it is applied to the model's match "
                      "probabilities")
    return value


def _control(value: Any) -> str | None:
    if value == "shuffled":
        return "shuffle"
    if value is not None and value not in CONTROLS:
        raise Refused(f"unknown control; choose one of {', '.join(CONTROLS)}")
    return value


# The options of `vlprobe evaluate`, in the order of its --help and of the command line a run records.
OPTIONS: tuple[Option, ...] = (
    Option("datasets", None, "dataset folder or Hub id; repeat for several (default: the offline default datasets)",
           _datasets, flag="--dataset", action="append", metavar="FOLDER_OR_HUB_ID"),
    Option("configs", "all", "config name(s), comma-separated; 'all' (default) scores every config, or the dataset's "
           "own config named 'all' when it has one (VALSE); '*' always scores every config", _names_given,
           flag="--config", record="config", to_record=joined, to_cli=joined),
    Option("splits", None, "split(s), comma-separated (default: the splits whose name starts with 'test', else the "
           "only split)", _names_given, flag="--split", record="split", to_record=joined, to_cli=joined),
    DATASET_REVISION,
    Option("spec", None, "a vlprobe.yaml saying how rows become items (default: the dataset's)", _spec),
    MODEL,
    REVISION,
    FAMILY,
    Option("ties", "strict", "tie policy of the metric: strict (default), half, lenient", _ties, record="ties"),
    BOOTSTRAP,
    CONFIDENCE,
    Option("threshold", 0.5, "probability threshold of acc/p_c/p_f (default 0.5)", _threshold, type=float,
           record="threshold"),
    SEED.but(help="seed of the bootstrap and of the shuffled control"),
    LIMIT.but(help="score only the first N rows of each config/split"),
    BATCH_SIZE_AUTO,
    NUM_WORKERS,
    DTYPE,
    DEVICE,
    Option("modality", "image", "TraVLR's settings: image (default), caption (blank image, query + caption: the query "
           "first, so truncation cannot cut it), both (image, query + caption); text: no image, each true text "
           "against the item's other true texts and its false ones by the text tower (SugarCREPE++'s TOT)",
           one_of(MODALITIES, "modality"), choices=MODALITIES, record="modality"),
    Option("control", None, "control run: every image blank, or images shuffled across items ('shuffled' is the old "
           "name of 'shuffle')", _control, choices=(*CONTROLS, "shuffled"), record="control"),
    CACHE_DIR.but(help="score cache (default: $VLPROBE_CACHE or ~/.cache/vlprobe); 'none' disables it"),
    OUT.but(help=f"output folder (default: {DEFAULT_OUT} for the default run)"),
    Option("exact_preprocessing", False, "always the model's PIL image processor (the one the papers ran), never the "
           "fast torchvision one (default: fast when torchvision imports)", switch, action="store_true",
           record="exact_preprocessing"),
    OUTSIDE_IMAGES,
    CHUNK_SIZE.but(help="rows read and scored at a time; memory does not grow with the dataset (default 2000)",
                   rerun=False),
    PROGRESS.but(rerun=False),
)

# results.json's settings block, in the order it has always had (the workers: the number that ran)
RECORD_ORDER = ("ties", "bootstrap", "confidence", "seed", "threshold", "limit", "batch_size", "num_workers",
                "modality", "control", "split", "config", "exact_preprocessing")

_OPTION = {o.name: o for o in OPTIONS}


class EvaluateSettings(Settings):
    """A run's settings by their Python names (``s.batch_size``): every option of :data:`OPTIONS`, the ones not
    given at their defaults, checked (see :class:`vlprobe.options.Settings`: ``EvaluateSettings(**values)`` runs every
    check but the slow ones, :meth:`check` those)."""

    OPTIONS = OPTIONS

    def record(self, workers: int) -> dict[str, Any]:
        """The settings block of results.json's provenance (``workers``: the DataLoader workers that ran)."""
        return _record(OPTIONS, self, RECORD_ORDER, num_workers=workers)


Settings = EvaluateSettings  # the name it has always had here


def command_line(values: dict[str, Any]) -> str | None:
    """The ``vlprobe evaluate`` command that reruns checked settings ``values`` (with the datasets and model
    resolved), every option spelled out; None when an input is an object in memory (no command can name it)."""
    return _command_line("vlprobe evaluate", OPTIONS, values)


def check_device(device: Any) -> str | None:
    """``device`` as given, once torch is known to have it (cuda, cuda:N, mps, cpu); None/"auto" stays None
    (the best available is picked when the model loads)."""
    return check([_OPTION["device"]], {"device": device})["device"]


def check_cache_dir(cache_dir: Any) -> Any:
    """``cache_dir`` once it is one: None (the default, ``$VLPROBE_CACHE`` or ``~/.cache/vlprobe``), ``"none"``
    (no cache; False is taken for it), or a folder path."""
    return check([_OPTION["cache_dir"]], {"cache_dir": cache_dir})["cache_dir"]
