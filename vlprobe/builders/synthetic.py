"""Shared plumbing of the synthetic dataset builders (``vlprobe build travlr|winoground_style``):
the output folder, size arguments, rendering with a rate report, and writing one split of rows."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

import datasets

from ..dataset.folder import progress_bars_off, write_split
from ..scenes.model import Scene
from ..scenes.render import render_many
from ..storage.locations import dataset_folder


def add_out_argument(p: argparse.ArgumentParser, name: str) -> None:
    """``--out``, defaulting to the folder the offline default of `vlprobe evaluate` / `vlprobe probe`
    reads (:func:`vlprobe.storage.locations.dataset_folder`): ``./<name>`` in a clone (its committed card
    folder), else ``$VLPROBE_ROOT/<name>`` when set, else ``~/.cache/vlprobe/datasets/<name>``, so
    that an installed vlprobe run from any folder builds and finds the same folder."""
    default = dataset_folder(name)
    p.add_argument("--out", type=Path, default=default,
                   help=f"dataset folder to write (default here: {default}; ./{name} when it holds a "
                        f"vlprobe.yaml, as in a clone, else $VLPROBE_ROOT/{name} when set, else "
                        f"$VLPROBE_CACHE/datasets/{name}, ~/.cache/vlprobe/datasets/{name} by default)")


def parse_split_sizes(text: str | None, splits: Sequence[str]) -> dict[str, int]:
    """``"train=100,test_ood=50"`` -> ``{"train": 100, "test_ood": 50}`` (errors name the bad part)."""
    if not text:
        return {}
    out: dict[str, int] = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        name = name.strip()
        if not sep or name not in splits:
            raise ValueError(f"--split-sizes: {part!r} is not SPLIT=N with SPLIT one of {list(splits)}")
        try:
            n = int(value)
        except ValueError:
            raise ValueError(f"--split-sizes: {part!r}: {value!r} is not an integer") from None
        if n < 1:  # load_dataset refuses a declared split without rows
            raise ValueError(f"--split-sizes: {part!r}: every split needs at least 1 row")
        out[name] = n
    return out


def parse_names(text: str | None, known: Sequence[str], what: str) -> list[str]:
    if not text or text == "all":
        return list(known)
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in known]
    if bad:
        raise ValueError(f"unknown {what} {bad}; choose from {list(known)} or 'all'")
    return names


class RateMeter:
    """Counts rendered images and the seconds spent rendering + encoding them."""

    def __init__(self) -> None:
        self.images = 0
        self.seconds = 0.0

    def render(self, scenes: Sequence[Scene], workers: int, **options: Any) -> list[bytes]:
        """PNG bytes of ``scenes``; ``options`` go to :func:`~vlprobe.scenes.render.render_many`."""
        start = time.perf_counter()
        out = list(render_many(scenes, workers=workers, **options))
        self.seconds += time.perf_counter() - start
        self.images += len(out)
        return out

    def report(self, what: str, total_seconds: float) -> None:
        rate = self.images / self.seconds if self.seconds else float("nan")
        print(
            f"{what}: {self.images} images rendered in {self.seconds:.1f}s ({rate:.0f} images/s); "
            f"total {total_seconds:.1f}s",
            file=sys.stderr,
        )


def write_rows(folder: Path, config: str, split: str, rows: list[Mapping[str, Any]], features: datasets.Features) -> Path:
    """One split as parquet, image bytes embedded (via :func:`vlprobe.dataset.folder.write_split`)."""
    if not rows:  # load_dataset refuses a declared split without rows
        raise ValueError(f"{folder}: config {config!r} split {split!r} has no rows; every split needs at least one")
    dataset = datasets.Dataset.from_list([dict(r) for r in rows], features=features)
    with progress_bars_off():  # one line per split is printed by the builder instead
        return write_split(folder, config, split, dataset)
