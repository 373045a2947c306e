"""Every setting of ``vlprobe.evaluate`` / ``vlprobe evaluate``, checked before anything is loaded
(:class:`Settings`), with the checks the other layers share (device, cache folder, workers)."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ArgumentError

TEST_LIKE = ("test",)


CHUNK_ROWS = 2000


MAX_BOOTSTRAP = 100_000  # resamples; see Settings.check


CONTROLS = ("blank", "shuffle")  # "shuffled" is accepted as the CLI's old spelling of "shuffle"


@dataclass
class Settings:
    """Every setting of a run, validated by :meth:`check` before anything is loaded."""

    configs: Any = "all"
    splits: Any = None
    ties: str = "strict"
    bootstrap: int = 1000
    confidence: float = 0.95
    threshold: float = 0.5
    seed: int = 0
    limit: int | None = None
    batch_size: int = 32
    num_workers: int | None = None
    device: str | None = None
    dtype: str = "float32"
    modality: str = "image"
    control: str | None = None
    chunk_size: int = CHUNK_ROWS
    exact_preprocessing: bool = False

    def check(self) -> "Settings":
        from .. import metric as metric_module
        from ..spec import MODALITIES

        def integer(name: str, value: Any, low: int, high: int | None = None) -> None:
            what = "at least 1" if low == 1 else "0 or more"
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise ArgumentError(name, value, f"must be a whole number ({what})")
            if value < low:
                raise ArgumentError(name, value, f"must be {what}")
            if high is not None and value > high:
                raise ArgumentError(name, value, f"must be at most {high:,}")

        integer("batch_size", self.batch_size, 1)
        integer("bootstrap", self.bootstrap, 0)
        if self.bootstrap > MAX_BOOTSTRAP:
            # Every resample's statistics are held in memory at once (10^12 asked numpy for 36 TiB) and
            # AUROC is recomputed per resample: past 10^5 the CI's last digit no longer moves anyway.
            raise ArgumentError("bootstrap", self.bootstrap,
                                f"at most {MAX_BOOTSTRAP:,} resamples (all are held in memory; 1000 is the usual, "
                                f"10,000 for a steadier CI)")
        integer("seed", self.seed, 0)
        integer("chunk_size", self.chunk_size, 1)
        if self.limit is not None:
            integer("limit", self.limit, 1)
        if self.num_workers is not None:
            integer("num_workers", self.num_workers, 0)
        if not _number(self.confidence) or not 0 < self.confidence < 1:
            raise ArgumentError("confidence", self.confidence, "must be a level strictly between 0 and 1 (e.g. 0.95)")
        # The threshold is applied to match probabilities (acc, p_c, p_f): one outside [0, 1] would
        # call every cell true or every cell false, so it is refused before anything is loaded.
        if not _number(self.threshold) or not 0 <= self.threshold <= 1:
            raise ArgumentError("threshold", self.threshold,
                                "must be a probability threshold in [0, 1] (e.g. 0.5): it is applied to the "
                                "model's match probabilities")
        if not isinstance(self.ties, str) or self.ties not in metric_module.TIE_POLICIES:
            raise ArgumentError("ties", self.ties, f"unknown tie policy; choose one of "
                                                   f"{', '.join(metric_module.TIE_POLICIES)}")
        if not isinstance(self.modality, str) or self.modality not in MODALITIES:
            raise ArgumentError("modality", self.modality, f"unknown modality; choose one of {', '.join(MODALITIES)}")
        if self.control == "shuffled":
            self.control = "shuffle"
        if self.control not in (None, *CONTROLS):
            raise ArgumentError("control", self.control, f"unknown control; choose one of {', '.join(CONTROLS)}")
        try:
            from ..scorers.loading import resolve_dtype

            self.dtype = resolve_dtype(self.dtype)[0]
        except (ValueError, TypeError) as err:
            raise ArgumentError("dtype", self.dtype, str(err)) from None
        for name in ("configs", "splits"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str) and not (
                    isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)):
                raise ArgumentError(name, value, "must be a name, a comma-separated string or a list of names")
        self.device = check_device(self.device)
        return self

    def record(self, workers: int) -> dict[str, Any]:
        """The settings block of results.json's provenance."""
        return {
            "ties": self.ties, "bootstrap": self.bootstrap, "confidence": self.confidence, "seed": self.seed,
            "threshold": self.threshold, "limit": self.limit, "batch_size": self.batch_size, "num_workers": workers,
            "modality": self.modality, "control": self.control, "split": _joined(self.splits),
            "config": _joined(self.configs), "exact_preprocessing": self.exact_preprocessing,
        }


def _number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float, np.number)) and math.isfinite(value)


def _joined(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return ",".join(value)


def _names(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()] or None
    return list(value)


def check_device(device: str | None) -> str | None:
    """``device`` as given, once torch is known to have it (cuda, cuda:N, mps, cpu); None/"auto"
    stays None (the best available is picked when the model loads)."""
    if device in (None, "", "auto"):
        return None
    if not isinstance(device, str):
        raise ArgumentError("device", device, "must be a device name: cpu, cuda, cuda:N or mps")
    import torch

    try:
        dev = torch.device(str(device))
    except (RuntimeError, ValueError):
        raise ArgumentError("device", device, "unknown device; use cpu, cuda, cuda:N or mps") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ArgumentError("device", device, f"this torch has no CUDA device (torch {torch.__version__}, "
                                f"CUDA {'not compiled in' if torch.version.cuda is None else 'no GPU visible'}); "
                                f"use cpu or leave the device out")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ArgumentError("device", device, f"there are only {torch.cuda.device_count()} CUDA device(s)")
    elif dev.type == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise ArgumentError("device", device, "MPS (Apple GPU) is not available here; use cpu or leave the "
                                                  "device out")
    elif dev.type != "cpu":
        raise ArgumentError("device", device, "vlprobe runs on cpu, cuda or mps")
    return str(device)


def default_workers() -> int:
    """DataLoader workers decoding and preprocessing images: min(4, CPUs - 1) where there are more
    than 2 CPUs, else 0. Workers pay only with cores beyond the one running the model (on 2 cores
    one worker made mini-clip 2.2x slower: README, performance notes)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return min(4, cpus - 1) if cpus > 2 else 0


def check_cache_dir(cache_dir: Any) -> Any:
    """``cache_dir`` as given once it is one: None (the default, ``$VLPROBE_CACHE`` or
    ``~/.cache/vlprobe``), ``"none"`` or False (no cache), or a folder path."""
    if cache_dir is None or cache_dir is False:
        return cache_dir
    if isinstance(cache_dir, os.PathLike):
        return cache_dir
    if isinstance(cache_dir, str) and cache_dir.strip():
        return cache_dir
    raise ArgumentError("cache_dir", cache_dir, "must be a folder path, 'none' (no cache) or None (the default: "
                                                "$VLPROBE_CACHE, else ~/.cache/vlprobe)")
