"""The settings of ``vlprobe.probe`` / ``vlprobe probe`` (:class:`ProbeSettings`), and the probe's constants."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, cast

from ..defaults import BATCH_SIZE
from ..errors import ArgumentError
from ..options import Refused, Settings, batch_size_or_auto, listed, model_given, names_given, one_of, opt, path, switch, whole
from ..storage.locations import DEFAULT_MODEL

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

# The names a probe run writes into its output folder: a folder holding anything else is never replaced.
PROBE_RUN_FILE = re.compile(r"^(results\.json|results\.csv|tables\.md|learning_curve_.*\.png)$")
TRAVLR_COLUMNS = ("image", "caption", "query", "label")
TRAVLR_SHAPE = ("a TraVLR-shaped dataset: the probe needs splits 'train', 'validation' and at least one 'test*', "
                "each with columns image, caption, query and label (true/false)")


def one_dataset(value: object) -> str:
    """The probe's one dataset: a folder or Hub id, alone or as a list's only element."""
    one = value[0] if isinstance(value, (list, tuple)) and len(value) == 1 else value
    if not isinstance(one, (str, os.PathLike)):
        raise Refused("must be one TraVLR-shaped dataset folder or Hub id (a path or a string; the probe takes one "
                      "dataset)")
    return str(path(one, "is empty; name one TraVLR-shaped dataset folder, a built benchmark's name or a Hub id"))


def _modalities(value: object) -> list[str]:
    parts = value.split(",") if isinstance(value, str) else value
    if isinstance(parts, (list, tuple)) and len(parts) > 1 and any(isinstance(v, str) and not v.strip() for v in parts):
        raise Refused("has an empty name between commas; name each modality once, e.g. image,caption")
    try:
        items = listed(cast("str | Sequence[str]", names_given(value))) or []
    except Refused as err:
        raise Refused(f"{err}; choose from {', '.join(MODALITIES)}") from None
    bad = [v for v in items if v not in MODALITIES]
    if bad:
        raise Refused(f"unknown modality {', '.join(bad)}; choose from {', '.join(MODALITIES)}")
    return items


def _sizes(value: object) -> list[int] | None:
    wanted = "must be training sizes, whole numbers of at least 2: a number, a comma-separated string or a list"
    if value is None:
        return None
    if isinstance(value, str):
        parts = [v.strip() for v in value.split(",")]
        if not any(parts):
            raise Refused("names no size; give sizes like 100,500,1000 (or leave it out: no learning curve)")
        if not all(parts):
            raise Refused("has an empty size between commas; give sizes like 100,500,1000")
        try:
            sizes = [int(v) for v in parts]
        except ValueError:
            raise Refused(wanted) from None
    else:
        raw = value if isinstance(value, (list, tuple)) else [value]
        if not raw:
            raise Refused("names no size; give sizes like [100, 500] (or leave it out: no learning curve)")
        try:
            sizes = [whole(0)(v) for v in raw]
        except Refused:
            raise Refused(wanted) from None
    if any(n < 2 for n in sizes):
        raise Refused(wanted)
    return sorted(set(sizes))


class ProbeSettingError(ArgumentError):
    """A bad argument of :func:`probe`: an :class:`~vlprobe.errors.ArgumentError` that knows the probe's flags."""


@dataclass(frozen=True)
class ProbeSettings(Settings):
    """The settings of one ``vlprobe.probe`` run, checked and normalised; see :class:`vlprobe.options.Settings`."""

    PROG: ClassVar[str] = "vlprobe probe"
    ERROR: ClassVar[type[ArgumentError]] = ProbeSettingError
    LISTS: ClassVar[tuple[str, ...]] = ("configs", "train_modalities", "test_modalities", "train_sizes")

    datasets: str = opt(DEFAULT_DATASET, one_dataset, flag="--dataset")
    model: Any = opt(DEFAULT_MODEL, model_given)
    batch_size: int | str = opt(BATCH_SIZE, batch_size_or_auto)
    train_modalities: Sequence[str] = opt(MODALITIES, _modalities, flag="--train-modality")
    test_modalities: Sequence[str] = opt(MODALITIES, _modalities, flag="--test-modality")
    train_sizes: Sequence[int] | None = opt(None, _sizes, flag="--train-size")
    few_shot: int = opt(0, whole(0))
    classifier: str = opt("logreg", one_of(CLASSIFIERS, "classifier"))
    text_baseline: bool = opt(True, switch)
    finetune: bool = opt(False, switch)
    epochs: int = opt(3, whole(1, MAX_EPOCHS, f"must be at most {MAX_EPOCHS:,} epochs (the paper runs 80; each epoch "
                                              f"fine-tunes the model once over the train split)"))
    schedule: str = opt("quick", one_of(SCHEDULES, "schedule"))
    seeds: int = opt(3, whole(1, MAX_SEEDS, f"must be at most {MAX_SEEDS} runs per setting (the paper: 3; each run "
                                            f"fits every probe again, and fine-tunes again with --finetune)"))

    def record(self, *, l2_grid: list[float], model_selection: str, finetune: Mapping[str, object] | bool, text_baseline: bool,
               zero_shot: bool, num_workers: int, seeds: list[int]) -> dict[str, Any]:
        """The settings block of results.json's provenance, with what the run computed (``seeds``: the seeds run)."""
        return {"configs": self.configs, "train_modalities": self.train_modalities,
                "test_modalities": self.test_modalities, "train_sizes": self.train_sizes, "few_shot": self.few_shot,
                "classifier": self.classifier, "l2_grid": l2_grid, "model_selection": model_selection,
                "finetune": finetune, "text_baseline": text_baseline, "zero_shot": zero_shot,
                "bootstrap": self.bootstrap, "confidence": self.confidence, "seed": self.seed, "limit": self.limit,
                "batch_size": self.batch_size, "num_workers": num_workers, "chunk_size": self.chunk_size,
                "seeds": seeds, "schedule": self.schedule}


ProbeSettingError.FLAGS = {**ArgumentError.FLAGS, **ProbeSettings.flags()}


def check_settings(**values: Any) -> ProbeSettings:
    """Every setting of :func:`vlprobe.probe` checked, the device included."""
    return ProbeSettings(**values).check()  # type: ignore[return-value]
