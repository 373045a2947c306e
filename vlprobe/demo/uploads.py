"""Uploaded files: the name a visitor gave a file is only ever shown, never used as a path, and
a path the page reads must lie in the folders the page stores uploads in.

Gradio stores each upload as ``<its upload folder>/<64 hex digits>/<the visitor's file name>``
and refuses, before any handler runs, a path that it did not store. This module checks again on
vlprobe's side (a local check: vlprobe has no shared path helper yet), so a name such as
``../../etc/passwd``, ``/etc/passwd``, ``a\\b`` or one with a NUL byte can neither be read from
outside those folders nor name anything but itself when shown.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Sequence

from .settings import SpaceError

MAX_NAME = 100
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def safe_name(name: str) -> str:
    """A file name to show: the last part of ``name`` (after ``/`` or ``\\``), without control
    characters (NUL included), never empty, ``.`` or ``..``, at most MAX_NAME characters."""
    base = re.split(r"[/\\]", _CONTROL.sub("", str(name)))[-1].strip()
    if base in ("", ".", ".."):
        return "upload"
    if len(base) > MAX_NAME:
        stem, dot, ext = base.rpartition(".")
        base = (stem[: MAX_NAME - len(ext) - 1] + "." + ext) if dot and len(ext) < 10 else base[:MAX_NAME]
    return base


def upload_path(f: object, what: str = "upload", roots: Sequence[str | os.PathLike] = ()) -> Path:
    """The server path of an uploaded file (a path, or Gradio's FileData dict or object), refused
    when it holds a NUL byte or, given ``roots`` (the app passes Gradio's upload folder and its
    gallery folder), when it resolves outside every one of them (``..``, links, absolute paths)."""
    if isinstance(f, dict):
        f = f.get("path") or f.get("name") or ""
    raw = str(f) if isinstance(f, (str, os.PathLike)) else str(getattr(f, "path", None) or getattr(f, "name", None) or f)
    if "\x00" in raw or not raw.strip():
        raise SpaceError(f"{what}: not a valid file name; upload the file again")
    path = Path(raw)
    if roots:
        resolved = path.resolve()
        if not any(resolved.is_relative_to(Path(root).resolve()) for root in roots):
            raise SpaceError(f"{what}: {safe_name(raw)!r} was not uploaded to this page; upload the file "
                             "itself (from a script: gradio_client.handle_file(path))")
    return path
