"""Where vlprobe keeps things, decided in one place: what it ships (from the clone's root, or a wheel's
``vlprobe/_bundled/``), the folders ``vlprobe build`` writes, and every cache (all under :func:`cache_home`)."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from pathlib import Path

from ..errors import warn

PACKAGE = Path(__file__).resolve().parents[1]
BUNDLE = PACKAGE / "_bundled"
CHECKOUT = PACKAGE.parent  # a clone's root (when it holds pyproject.toml; else site-packages, never used)
# The offline default job: the shipped model and the two synthetic instruments it is scored on.
DEFAULT_MODEL = "models/mini-clip"
MINI_CLIP = "mini-clip"  # the bundled model's name, which works from any folder
DEFAULT_DATASETS = ("travlr", "winoground_style")
SPEC_FILE = "vlprobe.yaml"


def cache_home() -> Path:
    """``$VLPROBE_CACHE``, else ``$XDG_CACHE_HOME/vlprobe``, else ``~/.cache/vlprobe`` (read at each call)."""
    if home := os.environ.get("VLPROBE_CACHE"):
        return Path(home).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base).expanduser() / "vlprobe"


def images_home() -> Path:
    """Downloaded images: ``$VLPROBE_IMAGE_CACHE`` (they are large: another disk, perhaps), else under the home."""
    if home := os.environ.get("VLPROBE_IMAGE_CACHE"):
        return Path(home).expanduser()
    return cache_home() / "images"


def datasets_home() -> Path:
    """Where an installed vlprobe builds dataset folders that are not in the working directory."""
    return cache_home() / "datasets"


def arrow_home() -> Path:
    """The ``datasets`` library's Arrow copies of dataset folders (:mod:`vlprobe.storage.arrow_cache`)."""
    return cache_home() / "arrow"


class UnsafeFolderError(OSError):
    """A cache folder another user could change, and vlprobe cannot make private."""


def is_mine(st: os.stat_result) -> bool:
    """Owned by this user (or by root, who can change anything anyway)."""
    return not hasattr(os, "geteuid") or st.st_uid in (os.geteuid(), 0)


def _owner(st: os.stat_result) -> str:
    try:
        import pwd  # noqa: PLC0415 (Unix only)

        return f"user {pwd.getpwuid(st.st_uid).pw_name} (uid {st.st_uid})"
    except (ImportError, KeyError):
        return f"uid {st.st_uid}"


def others_may_write(st: os.stat_result) -> bool:
    """Whether others may write into it: world-writable, or group-writable beyond this user's private group."""
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o002:
        return True
    if not mode & 0o020:
        return False
    try:
        import grp  # noqa: PLC0415 (Unix only)
        import pwd  # noqa: PLC0415 (Unix only)

        me, group = pwd.getpwuid(os.geteuid()), grp.getgrgid(st.st_gid)
        return not (st.st_gid == me.pw_gid and group.gr_name == me.pw_name and set(group.gr_mem) <= {me.pw_name})
    except (ImportError, KeyError, AttributeError):
        return True


def untrusted(path: Path, st: os.stat_result, link_ok: bool = False) -> str | None:
    """Why another user could have changed ``path`` (its ``lstat``), or None; ``link_ok``: a link is judged by its target."""
    if stat.S_ISLNK(st.st_mode):
        if not link_ok:
            return f"{path} is a symbolic link"
        if not is_mine(st):
            return f"{path} is a symbolic link of another user, {_owner(st)}"
        st = os.stat(path)  # a cache home the user linked elsewhere: what it points to is judged
    if not is_mine(st):
        return f"{path} belongs to another user, {_owner(st)}"
    if others_may_write(st):
        return f"{path} is writable by others (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def distrust(path: str | os.PathLike[str], home: str | os.PathLike[str]) -> str | None:
    """:func:`untrusted` of ``path`` and each folder from ``home`` to it, or None (what does not exist yet is fine)."""
    home, path = Path(home), Path(path)
    try:
        parts = path.relative_to(home).parts
    except ValueError:
        parts = (path.name,)
        home = path.parent
    chain = [home] + [home.joinpath(*parts[:i + 1]) for i in range(len(parts))]
    for i, p in enumerate(chain):
        try:
            st = p.lstat()
        except FileNotFoundError:
            return None
        except OSError as err:
            return f"{p} cannot be looked at ({err.strerror or err})"
        why = untrusted(p, st, link_ok=i == 0)
        if why:
            return why
    return None


def distrust_tree(folder: str | os.PathLike[str], home: str | os.PathLike[str]) -> str | None:
    """:func:`distrust` of ``folder`` inside ``home``, and :func:`untrusted` of everything in it."""
    why = distrust(folder, home)
    if why:
        return why
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(root) / name
            try:
                why = untrusted(path, path.lstat())
            except OSError as err:
                why = f"{path} cannot be looked at ({err.strerror or err})"
            if why:
                return why
    return None


def home_advice(home: str | os.PathLike[str]) -> str:
    """What to do about a cache home another user could change: one clause."""
    return (f"make {home} a folder of your own that only you can write (chmod 700 {home}), or set VLPROBE_CACHE to "
            "one")


_REFUSED: set[str] = set()  # cache homes this process has said it does not use


def refused_home(home: str | os.PathLike[str]) -> str | None:
    """Why the cache home ``home`` is not used (:func:`distrust`), said once per process with what to do; or None."""
    why = distrust(home, home)
    if why and str(home) not in _REFUSED:
        _REFUSED.add(str(home))
        warn(f"not using the cache folder {home}: {why}, who could have changed what it holds (scores, copies of "
             f"datasets); running without it. To use it, {home_advice(home)}")
    return why


def private_folder(path: str | os.PathLike[str], home: str | os.PathLike[str] | None = None) -> Path:
    """``path`` as a folder only this user can use, made (mode 0700, from ``home`` down) when absent, or an
    :class:`UnsafeFolderError`; a folder of ours others could write into is emptied (anything in it may be planted)."""
    folder = Path(path)
    home = Path(home) if home is not None else cache_home()
    try:
        inner = folder.relative_to(home).parts
    except ValueError:
        home, inner = folder, ()
    home.parent.mkdir(parents=True, exist_ok=True)
    for p in [home] + [home.joinpath(*inner[:i + 1]) for i in range(len(inner))]:
        with contextlib.suppress(FileExistsError):
            p.mkdir(mode=0o700)
    why = distrust(folder.parent, home) if inner else None
    if why:
        raise UnsafeFolderError(why)
    st = folder.lstat()
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise UnsafeFolderError(f"{folder} is {'a symbolic link' if stat.S_ISLNK(st.st_mode) else 'not a folder'}")
    if not is_mine(st):
        raise UnsafeFolderError(f"{folder} belongs to another user, {_owner(st)}")
    mode = stat.S_IMODE(st.st_mode)
    if others_may_write(st):
        shutil.rmtree(folder)
        folder.mkdir(mode=0o700)
        warn(f"the cache folder {folder} was writable by others (mode {mode:o}), so anything in it could have been "
             "planted: emptied it (what it held is made again when needed)")
    elif mode & 0o077:
        os.chmod(folder, 0o700)
    return folder


def shipped(name: str) -> Path | None:
    """The shipped folder ``name`` (``metric``, ``space``, ``models/mini-clip``) from the wheel or the clone, or None."""
    candidates = [BUNDLE / name]
    if (CHECKOUT / "pyproject.toml").is_file():
        candidates.append(CHECKOUT / name)
    return next((p for p in candidates if p.is_dir()), None)


def shipped_model() -> Path | None:
    """The small offline CLIP that vlprobe ships (``models/mini-clip``), or None."""
    folder = shipped(DEFAULT_MODEL)
    return folder if folder is not None and (folder / "config.json").is_file() else None


def dataset_folder(name: str, root: str | os.PathLike[str] | None = None) -> Path:
    """Where ``vlprobe build <name>`` writes by default: ``root/<name>`` (``root``: ``$VLPROBE_ROOT``, else the
    working directory) when it holds a ``vlprobe.yaml`` or ``$VLPROBE_ROOT`` is set, else under :func:`datasets_home`."""
    env_root = os.environ.get("VLPROBE_ROOT")
    base = Path(root) if root is not None else Path(env_root or "")  # "": relative, as `--out travlr` was
    here = base / name
    if (here / SPEC_FILE).is_file() or (env_root and base == Path(env_root)):
        return here
    return datasets_home() / name

