"""What every kind of folder shares: the file names, the card's YAML header, the files an upload sends."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import yaml

from ..storage.paths import is_inside

SPEC_FILE = "vlprobe.yaml"
CARD_FILE = "README.md"
BUILD_REPORT = "data/BUILD.md"  # vlprobe.builders.cards.write_build_report
# What upload_folder never uploads whatever the patterns, so that a plan lists exactly the files an upload sends.
UPLOAD_IGNORED = [".git", ".git/*", "*/.git", "**/.git/**", ".cache/huggingface", ".cache/huggingface/*",
                  "*/.cache/huggingface", "**/.cache/huggingface/**"]
# Never uploaded from a metric or Space folder (fnmatch patterns; '*' also matches '/').
IGNORE_PATTERNS = [
    ".venv", ".venv/*", "*/.venv/*", "*__pycache__*", "*.pyc", "*.pyo",
    ".pytest_cache*", "*/.pytest_cache/*", ".cache*", "*/.cache/*", "*.ipynb_checkpoints*",
    "*.DS_Store", ".git", ".git/*", "*.egg-info*",
]


def read_card(folder: Path, what: str = "dataset card (README.md with a YAML header)") -> tuple[dict[str, Any] | None, list[str]]:
    """The card's YAML header (None when unusable) and the problems found."""
    from ..dataset.folder import read_card_metadata

    card = folder / CARD_FILE
    if not card.is_file():
        return None, [f"{card}: no {what} in the folder"]
    if not card.read_text(encoding="utf-8").startswith("---"):
        return None, [f"{card}: the card has no YAML header (it must start with a '---' line)"]
    try:
        meta = read_card_metadata(folder)
    except yaml.YAMLError as err:
        return None, [f"{card}: the YAML header does not parse: {err}"]
    except ValueError:
        return None, [f"{card}: the YAML header is not a mapping"]
    if not meta:
        return None, [f"{card}: the YAML header is empty or not closed by a '---' line"]
    return meta, []


def progress_bars_off() -> contextlib.AbstractContextManager[None]:
    """:func:`vlprobe.dataset.folder.progress_bars_off`, imported on use (it imports datasets)."""
    from ..dataset.folder import progress_bars_off as off

    return off()


def folder_files(folder: Path) -> list[str]:
    """Relative posix paths under a metric or Space ``folder`` that upload_folder sends."""
    from huggingface_hub.utils import filter_repo_objects

    rels = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    return list(filter_repo_objects(rels, ignore_patterns=IGNORE_PATTERNS + UPLOAD_IGNORED))


def escaping_files(folder: Path) -> list[str]:
    """One problem per file the upload of ``folder`` would send that is a symbolic link leading outside it."""
    return [f"{folder / f}: a symbolic link to {(folder / f).resolve()}, outside the folder; the upload would send "
            "that file: copy what is meant into the folder, or remove the link"
            for f in folder_files(folder) if not is_inside(folder, folder / f)] if folder.is_dir() else []
