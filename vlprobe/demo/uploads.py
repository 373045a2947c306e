"""Uploaded files: the name a visitor gave a file is only ever shown, never used as a path, and a path the page reads
must lie in the page's upload folders (Gradio checks too; this is vlprobe's own check)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Sequence

from .settings import SpaceError

MAX_NAME = 100
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def safe_name(name: str) -> str:
    """A file name to show: the last part of ``name``, no control characters, never empty, at most MAX_NAME."""
    base = re.split(r"[/\\]", _CONTROL.sub("", str(name)))[-1].strip()
    if base in ("", ".", ".."):
        return "upload"
    if len(base) > MAX_NAME:
        stem, dot, ext = base.rpartition(".")
        base = (stem[: MAX_NAME - len(ext) - 1] + "." + ext) if dot and len(ext) < 10 else base[:MAX_NAME]
    return base


def upload_path(f: object, what: str = "upload", roots: Sequence[str | os.PathLike] = ()) -> Path:
    """The server path of an upload, refused when it holds a NUL byte or lies outside every one of ``roots``."""
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
