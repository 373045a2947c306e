"""Names that become paths (a config, a split, an image file named by annotations, an archive member) may be hostile:
checked here, each refusal an :class:`UnsafePathError` naming what and why."""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..errors import VlprobeError

# datasets.naming._split_re, matched in full (re.match's '$' would let a trailing newline through)
SPLIT_RE = re.compile(r"\w+(\.\w+)*")
# A config name: what the Hub's configs and datasets' BuilderConfig accept, and a plain folder name.
CONFIG_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_DRIVE = re.compile(r"^[A-Za-z]:")


class UnsafePathError(VlprobeError, ValueError):
    """A name or path that would leave the folder it must stay in (or is no valid name at all)."""


def name_problem(name: object) -> str | None:
    """Why ``name`` is not one plain path component, or None when it is."""
    if not isinstance(name, str):
        return f"is a {type(name).__name__}, not a string"
    if not name:
        return "is empty"
    if "\0" in name:
        return "contains a NUL character"
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return "contains a control character"
    if name in (".", ".."):
        return f"is {name!r}, which names a folder, not a file in it"
    if "/" in name or "\\" in name:
        return "contains a path separator ('/' or '\\')"
    if _DRIVE.match(name):
        return "starts with a drive ('C:')"
    return None


def relative_problem(path: object) -> str | None:
    """Why ``path`` is not a relative path that stays below the folder it is joined to, or None."""
    if not isinstance(path, str) or not path or "\0" in path:
        return name_problem(path)  # said as of a name: its type, its emptiness, its NUL
    if path.startswith(("/", "\\")) or _DRIVE.match(path) or os.path.isabs(path):
        return "is an absolute path"
    for part in re.split(r"[/\\]", path):
        if part == "..":
            return "has a '..' component"
        if part and any(ord(c) < 32 or ord(c) == 127 for c in part):
            return "contains a control character"
    return None


def check_name(name: object, what: str) -> str:
    """``name`` if it is one plain path component, else :class:`UnsafePathError` naming ``what``."""
    problem = name_problem(name)
    if problem:
        raise UnsafePathError(f"{what} {name!r} {problem}; it becomes a file name, so it must be one plain name")
    return name  # type: ignore[return-value]


def inside(folder: str | os.PathLike[str], relative: str, what: str, resolve: bool = True) -> Path:
    """``folder / relative``, refused where it leaves ``folder`` (through links too, unless ``resolve`` is False)."""
    problem = relative_problem(relative)
    if problem:
        raise UnsafePathError(f"{what} {relative!r} {problem}; it must stay inside {folder}")
    path = Path(folder) / relative
    if resolve and not is_inside(folder, path):
        raise UnsafePathError(f"{what} {relative!r} leads outside {folder} (to {path.resolve()}, through a symbolic "
                              "link); refusing it")
    return path


def is_inside(folder: str | os.PathLike[str], path: str | os.PathLike[str]) -> bool:
    """Whether ``path``, symbolic links resolved, is ``folder`` or inside it."""
    root, real = Path(folder).resolve(), Path(path).resolve()
    return real == root or root in real.parents


def _pattern_problem(name: object, pattern: re.Pattern[str], rule: str) -> str | None:
    return name_problem(name) or (rule if not isinstance(name, str) or not pattern.fullmatch(name) else None)


def config_name_problem(name: object) -> str | None:
    """Why ``name`` is not a config name the Hub accepts that is also a plain folder name, or None."""
    return _pattern_problem(name, CONFIG_RE, "is not a config name the Hub accepts: use letters, digits, '_', '-' or "
                                             "'.', starting with a letter or digit")


def split_name_problem(name: object) -> str | None:
    """Why ``name`` is not a split name ``datasets`` accepts (``test``, ``train.v2``), or None."""
    return _pattern_problem(name, SPLIT_RE, "is not a split name datasets accepts: word characters (letters, digits, "
                                            "'_') in dot-separated parts, e.g. 'test' or 'validation'")


def check_config_name(name: object, what: str = "config") -> str:
    """``name`` if :func:`config_name_problem` finds nothing, else :class:`UnsafePathError`."""
    return _checked(name, what, config_name_problem(name))


def check_split_name(name: object, what: str = "split") -> str:
    """``name`` if :func:`split_name_problem` finds nothing, else :class:`UnsafePathError`."""
    return _checked(name, what, split_name_problem(name))


def _checked(name: object, what: str, problem: str | None) -> str:
    if problem or not isinstance(name, str):
        raise UnsafePathError(f"{what} {name!r} {problem}")
    return name


NAME_MAX = 255    # bytes in one file name (ext4, xfs, btrfs, APFS, NTFS alike)
PATH_MAX = 4095   # bytes in a whole path (Linux's PATH_MAX less the NUL)


def length_problem(path: object) -> str | None:
    """Why ``path`` is too long for the file system, or None: one line before ``OSError: [Errno 36]`` could be."""
    try:
        whole = os.fsencode(os.fspath(path))  # type: ignore[call-overload]  # anything: a TypeError is caught
    except (TypeError, UnicodeError):
        return None
    longest = max(whole.split(b"/"), key=len)
    if len(longest) > NAME_MAX:
        return (f"has a name of {len(longest):,} bytes ({os.fsdecode(longest[:24])}...); file names may be at most "
                f"{NAME_MAX} bytes")
    if len(whole) > PATH_MAX:
        return f"is {len(whole):,} bytes long; a path may be at most {PATH_MAX:,} bytes"
    return None

