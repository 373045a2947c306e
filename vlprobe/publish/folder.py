"""What every kind of folder shares: the file names vlprobe publishes, the card's YAML header, the
files an upload sends (and links that would send something outside the folder)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from ..storage.paths import is_inside

SPEC_FILE = "vlprobe.yaml"
CARD_FILE = "README.md"
BUILD_REPORT = "data/BUILD.md"  # vlprobe.builders.cards.write_build_report
# What upload_folder never uploads whatever the patterns (huggingface_hub's own defaults: git and
# its cache folders), so that a plan lists exactly the files an upload sends.
UPLOAD_IGNORED = [".git", ".git/*", "*/.git", "**/.git/**", ".cache/huggingface", ".cache/huggingface/*",
                  "*/.cache/huggingface", "**/.cache/huggingface/**"]
# Never uploaded from a metric or Space folder (fnmatch patterns; '*' also matches '/').
IGNORE_PATTERNS = [
    ".venv", ".venv/*", "*/.venv/*", "*__pycache__*", "*.pyc", "*.pyo",
    ".pytest_cache*", "*/.pytest_cache/*", ".cache*", "*/.cache/*", "*.ipynb_checkpoints*",
    "*.DS_Store", ".git", ".git/*", "*.egg-info*",
]


def read_card(folder: Path, what: str = "dataset card (README.md with a YAML header)") -> tuple[dict[str, Any] | None, list[str]]:
    """The card's YAML header as a dict (None when unusable) and the problems found. The header is
    read by :func:`vlprobe.dataset.folder.read_card_metadata` (huggingface_hub's card parser)."""
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


def progress_bars_off():
    """datasets' progress bars off for a block (:func:`vlprobe.dataset.folder.progress_bars_off`,
    imported on use so that importing this module does not import datasets)."""
    from ..dataset.folder import progress_bars_off as off

    return off()


def _folder_files(folder: Path, ignore: Iterable[str]) -> list[str]:
    """Relative posix paths under ``folder`` that upload_folder would send with these ignore
    patterns (it adds huggingface_hub's own: .git, .cache/huggingface)."""
    from huggingface_hub.utils import filter_repo_objects

    rels = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    return list(filter_repo_objects(rels, ignore_patterns=list(ignore) + UPLOAD_IGNORED))


def escaping_files(folder: Path, files: Iterable[str]) -> list[str]:
    """One problem per file of ``files`` (relative to ``folder``) that is a symbolic link leading
    outside ``folder``: the upload would send whatever it points at."""
    return [f"{folder / f}: a symbolic link to {(folder / f).resolve()}, outside the folder; the upload would send "
            "that file: copy what is meant into the folder, or remove the link"
            for f in files if not is_inside(folder, folder / f)]
