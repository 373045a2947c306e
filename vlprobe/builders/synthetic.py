"""The base of the synthetic instruments' builders: scenes rendered by vlprobe, fixed by the arguments and code."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import datasets

from ..dataset.folder import card_metadata, progress_bars_off, write_card, write_spec, write_split
from ..scenes.model import Scene
from ..scenes.render import render_many
from . import Builder, P, cards


class SyntheticBuilder(Builder[P]):
    """A builder of rendered scenes: the shared options, the card and ``vlprobe.yaml`` (the same for every size)."""

    sizes: Mapping[str, Any] = {}
    size_help: str = ""
    configs: Sequence[str] = ()
    configs_help: str = ""
    body: str = ""  # the card's prose: vlprobe/templates/<body>
    spec_yaml: str = ""
    card: Mapping[str, Any] = {}  # the card's YAML besides its configs and licence, cc-by-4.0 (card_metadata)
    generator = Builder.generator + ("scenes/*.py",)

    def add_arguments(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("--size", choices=sorted(self.sizes), default="default", help=self.size_help)
        p.add_argument("--configs", default="all", help=self.configs_help or
                       f"comma-separated subset of {', '.join(self.configs)} (default: all)")
        p.add_argument("--seed", type=int, default=0, help="generation seed (default 0)")
        p.add_argument("--workers", type=int, default=1, help="rendering processes (default 1; 2+ for large sizes)")
        super().add_arguments(p)

    def generator_files(self) -> list[Path]:
        return super().generator_files() + [cards.TEMPLATES / self.body]

    def write_metadata(self, folder: Path) -> None:
        """The card (README.md) and vlprobe.yaml."""
        write_card(folder, card_metadata(self.config_decls(), license="cc-by-4.0", **self.card),
                   cards.body(self.body))
        write_spec(folder, self.spec_yaml, self.name)  # the folder is its benchmark whatever it is called


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

    def render(self, scenes: Sequence[Scene], workers: int, **options: bool) -> list[bytes]:
        """PNG bytes of ``scenes``; ``options`` (equal_area, centred) go to :func:`~vlprobe.scenes.render.render_many`."""
        start = time.perf_counter()
        out = list(render_many(scenes, workers=workers, **options))
        self.seconds += time.perf_counter() - start
        self.images += len(out)
        return out

    def report(self, what: str, total_seconds: float) -> None:
        rate = self.images / self.seconds if self.seconds else float("nan")
        print(f"{what}: {self.images} images rendered in {self.seconds:.1f}s ({rate:.0f} images/s); total "
              f"{total_seconds:.1f}s", file=sys.stderr)


def write_rows(folder: Path, config: str, split: str, rows: Sequence[Mapping[str, Any]], features: datasets.Features) -> Path:
    """One split as parquet, image bytes embedded (via :func:`vlprobe.dataset.folder.write_split`)."""
    dataset = datasets.Dataset.from_list([dict(r) for r in rows], features=features)
    with progress_bars_off():  # one line per split is printed by the builder instead
        return write_split(folder, config, split, dataset)
