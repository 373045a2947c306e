"""Where vlprobe keeps things, decided in one place: what it ships (the metric, the Space, the small offline
model), the folders a name given on the command line or to the API stands for, and every cache.

**Caches**, all under one folder, :func:`cache_home`: ``$VLPROBE_CACHE``, else ``$XDG_CACHE_HOME/vlprobe``, else
``~/.cache/vlprobe``, for every kind alike:

* ``<home>/<model>-<key>/``: the score cache (:mod:`vlprobe.cache`; ``--cache-dir`` moves it, ``none`` turns it
  off), ``<home>/model-digests/``, the memo of local model folders' digests, and ``<home>/batch-sizes.json``,
  ``--batch-size auto``'s choices (:mod:`vlprobe.auto_batch`);
* ``<home>/annotations/``: downloaded annotation files, checked against their pinned hashes;
* ``<home>/images/``: downloaded images (``$VLPROBE_IMAGE_CACHE`` moves them alone);
* ``<home>/datasets/<name>``: the dataset folders ``vlprobe build`` writes outside a clone;
* ``<home>/arrow/``: the ``datasets`` library's Arrow copies of dataset folders (:mod:`vlprobe.arrow_cache`),
  made private (0700) and checked against the parquet they came from.

**Shipped folders** have one committed copy each, at the repository root: ``metric/``, ``space/``,
``models/mini-clip/``. A wheel carries them inside the package, under ``vlprobe/_bundled/`` (``setup.py`` maps
those package names onto the root folders; nothing is copied in git). In a clone, an editable install or with
``PYTHONPATH`` on a checkout, ``vlprobe/_bundled/`` does not exist and the root folders themselves are used.

What a name given on the command line or to the API stands for (a built dataset's name, ``mini-clip``) is
decided by :mod:`vlprobe.names`, from these places.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
BUNDLE = PACKAGE / "_bundled"
# A clone (or an editable install) has the shipped folders beside the package, under the root
# that holds pyproject.toml; an installed package's parent is site-packages, never used.
CHECKOUT = PACKAGE.parent
# The offline default job, the one place these are written: the shipped model and the two synthetic
# instruments it is scored on (`vlprobe evaluate`, `vlprobe probe`, the Space).
DEFAULT_MODEL = "models/mini-clip"
MINI_CLIP = "mini-clip"  # the bundled model's name, which works from any folder
DEFAULT_DATASETS = ("travlr", "winoground_style")
SPEC_FILE = "vlprobe.yaml"


# ---- caches -------------------------------------------------------------------------------------------

def cache_home() -> Path:
    """The folder every vlprobe cache lives under: ``$VLPROBE_CACHE``, else ``$XDG_CACHE_HOME/vlprobe``, else
    ``~/.cache/vlprobe`` (read at each call, so a changed environment is followed)."""
    if os.environ.get("VLPROBE_CACHE"):
        return Path(os.environ["VLPROBE_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base).expanduser() / "vlprobe"


def annotations_home() -> Path:
    """Downloaded annotation files: ``<cache_home>/annotations``."""
    return cache_home() / "annotations"


def images_home() -> Path:
    """Downloaded images: ``$VLPROBE_IMAGE_CACHE`` when set (images are large: they may live on another disk),
    else ``<cache_home>/images``."""
    if os.environ.get("VLPROBE_IMAGE_CACHE"):
        return Path(os.environ["VLPROBE_IMAGE_CACHE"]).expanduser()
    return cache_home() / "images"


def datasets_home() -> Path:
    """Where an installed vlprobe builds its dataset folders when no folder of that name is in the working
    directory: ``<cache_home>/datasets``."""
    return cache_home() / "datasets"


def arrow_home() -> Path:
    """The ``datasets`` library's Arrow copies of dataset folders: ``<cache_home>/arrow`` (kept private; see
    :mod:`vlprobe.arrow_cache`)."""
    return cache_home() / "arrow"


class UnsafeFolderError(OSError):
    """A cache folder another user could change (not ours, or writable by others, and not fixable)."""


def private_folder(path: str | os.PathLike) -> Path:
    """``path`` as a folder only this user can read or write: made with mode 0700 when absent (its parents with
    the umask's mode), its mode set back to 0700 when it is ours but others may write into it. Raises
    :class:`UnsafeFolderError` for a folder (or a symbolic link) owned by someone else: what it holds cannot be
    trusted, and another user could swap it at any time."""
    folder = Path(path)
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass
    st = folder.lstat()
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise UnsafeFolderError(f"{folder} is {'a symbolic link' if stat.S_ISLNK(st.st_mode) else 'not a folder'}")
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        raise UnsafeFolderError(f"{folder} belongs to another user (uid {st.st_uid})")
    if stat.S_IMODE(st.st_mode) & 0o077:
        os.chmod(folder, 0o700)
    return folder


def temporary_private_folder(prefix: str) -> Path:
    """A fresh folder of this process (:func:`tempfile.mkdtemp`: mode 0700, an unpredictable name), for when the
    cache folder cannot be used."""
    return Path(tempfile.mkdtemp(prefix=prefix))


# ---- shipped folders --------------------------------------------------------------------------------------

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


# ---- where `vlprobe build` writes ---------------------------------------------------------------------------

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

