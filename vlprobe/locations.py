"""Where vlprobe finds what it ships (the metric, the Space, the small offline model) and where
``vlprobe build`` puts the synthetic dataset folders, in a clone and when installed.

What it ships has one committed copy each, at the repository root: ``metric/``, ``space/``,
``models/mini-clip/``. A wheel carries them inside the package, under ``vlprobe/_bundled/``
(``setup.py`` maps those package names onto the root folders; nothing is copied in git). In a
clone, an editable install or with ``PYTHONPATH`` on a checkout, ``vlprobe/_bundled/`` does not
exist and the root folders themselves are used.

Built dataset folders (``travlr``, ``winoground_style``): a folder of that name holding a
``vlprobe.yaml`` in the working directory (the repository's committed card folders, where
``make`` runs), else ``$VLPROBE_ROOT/<name>`` when that is set, else
``$VLPROBE_CACHE/datasets/<name>`` (default ``~/.cache/vlprobe/datasets/<name>``) -- the folder a
pip-installed vlprobe builds into and reads its offline default from, wherever it is run.
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
BUNDLE = PACKAGE / "_bundled"
# A clone (or an editable install) has the shipped folders beside the package, under the root
# that holds pyproject.toml; an installed package's parent is site-packages, never used.
CHECKOUT = PACKAGE.parent
# The offline default job, the one place these are written: the shipped model and the two synthetic
# instruments it is scored on (`vlprobe evaluate`, `vlprobe probe`, the Space).
DEFAULT_MODEL = "models/mini-clip"
DEFAULT_DATASETS = ("travlr", "winoground_style")
SPEC_FILE = "vlprobe.yaml"


def shipped(name: str) -> Path | None:
    """The shipped folder ``name`` (``metric``, ``space`` or ``models/mini-clip``): inside the
    package when installed from a wheel, else at the root of the clone this package runs from;
    None when neither has it."""
    candidates = [BUNDLE / name]
    if (CHECKOUT / "pyproject.toml").is_file():
        candidates.append(CHECKOUT / name)
    return next((p for p in candidates if p.is_dir()), None)


def shipped_model() -> Path | None:
    """The small offline CLIP that vlprobe ships (``models/mini-clip``), or None."""
    folder = shipped(DEFAULT_MODEL)
    return folder if folder is not None and (folder / "config.json").is_file() else None


def datasets_home() -> Path:
    """Where an installed vlprobe builds its synthetic dataset folders when no folder of that name
    is in the working directory: ``$VLPROBE_CACHE/datasets`` (default ``~/.cache/vlprobe/datasets``,
    beside the score cache and the downloaded annotation files)."""
    from .cache import default_cache_dir

    return Path(default_cache_dir()) / "datasets"


def dataset_folder(name: str, root: str | os.PathLike | None = None) -> Path:
    """The folder ``vlprobe build <name>`` writes to by default, which is also where the offline
    default of `vlprobe evaluate` / `vlprobe probe` reads it: ``root/<name>`` when it holds a
    ``vlprobe.yaml`` (the clone's committed card folder, or an earlier build there) or when
    ``$VLPROBE_ROOT`` is set (``root`` defaults to ``$VLPROBE_ROOT``, else the working directory),
    else ``datasets_home()/<name>``."""
    env_root = os.environ.get("VLPROBE_ROOT")
    base = Path(root) if root is not None else Path(env_root or "")  # "": relative, as `--out travlr` was
    here = base / name
    if (here / SPEC_FILE).is_file() or (env_root and base == Path(env_root)):
        return here
    return datasets_home() / name
