"""A rebuild with the same inputs does nothing, and says so.

A builder whose output is fixed by its inputs (the synthetic instruments: arguments and generator code; an upstream
benchmark: its pinned files) records them when it builds, in ``<folder>/data/BUILD_INPUTS.json``, with the sha256
of every file the build wrote. Asked to build again, it compares: the same inputs, and every recorded file there
with the same bytes, is "up to date: nothing built" in about a second instead of rendering everything again; any
difference (another size or seed, an edited generator, a new Pillow, a deleted or changed shard) rebuilds, as does
``--force``.

The inputs are a dict the builder gives (:func:`inputs`): its name, its arguments (those that change the output,
not ``--out`` or ``--workers``), the sha256 of the source files that generate the output (its **generator
version**: the code itself, so an edit rebuilds in a clone and an upgrade rebuilds when installed) and the versions
of the libraries whose bytes end up in the files (Pillow and zlib encode the PNGs, pyarrow and datasets write the
parquet).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import zlib
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..dataset.folder import DATA_DIR

RECORD = "BUILD_INPUTS.json"
# The libraries whose bytes end up in a built folder.
LIBRARIES = ("Pillow", "pyarrow", "datasets", "numpy")
PACKAGE = Path(__file__).resolve().parents[1]  # vlprobe/


def add_force_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--force", action="store_true",
                   help="build even when the folder was built from the same inputs and is intact (by default such a "
                        "rebuild does nothing and says so)")


def generator_digest(patterns: Iterable[str]) -> str:
    """sha256 over the files of the vlprobe package matching ``patterns`` (globs relative to ``vlprobe/``), each
    named by its path there."""
    h = hashlib.sha256()
    for path in sorted({p for pattern in patterns for p in PACKAGE.glob(pattern) if p.is_file()}):
        h.update(path.relative_to(PACKAGE).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def inputs(builder: str, arguments: Mapping[str, Any], generator: Iterable[str]) -> dict[str, Any]:
    """What a build's output depends on: the builder, its arguments, the generator's digest (:func:`generator_digest`
    of ``generator``) and the libraries' versions."""
    versions = {}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    versions["zlib"] = zlib.ZLIB_RUNTIME_VERSION
    return {"builder": builder, "arguments": json.loads(json.dumps(dict(arguments), sort_keys=True)),
            "generator_sha256": generator_digest(generator), "libraries": versions}


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _files(folder: Path) -> dict[str, str]:
    """Every file of a built folder (less the record itself and dot-files such as make's stamp), by its path in it."""
    out = {}
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".staging"))
        for name in sorted(names):
            path = Path(root, name)
            rel = path.relative_to(folder).as_posix()
            if rel != f"{DATA_DIR}/{RECORD}" and not (name.startswith(".") and name != ".huggingface.yaml"):
                out[rel] = _sha256(path)
    return out


def up_to_date(folder: str | Path, want: Mapping[str, Any]) -> bool:
    """Whether ``folder`` was built from exactly ``want`` and every file that build wrote is there, unchanged."""
    folder = Path(folder)
    try:
        record = json.loads((folder / DATA_DIR / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(record, dict) or record.get("inputs") != json.loads(json.dumps(dict(want), sort_keys=True)):
        return False
    files = record.get("files")
    if not isinstance(files, dict) or not files:
        return False
    for rel, digest in files.items():
        path = folder / rel
        try:
            if not path.is_file() or _sha256(path) != digest:
                return False
        except OSError:
            return False
    return True


def record(target: str | Path, want: Mapping[str, Any]) -> Path:
    """Write the record of a build into ``target`` (the folder being built), after its last file."""
    target = Path(target)
    path = target / DATA_DIR / RECORD
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"inputs": json.loads(json.dumps(dict(want), sort_keys=True)), "files": _files(target)}
    path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def describe(want: Mapping[str, Any]) -> str:
    """The inputs in a few words, for the "nothing built" line."""
    def shown(value: Any) -> str:
        if isinstance(value, dict):
            return ",".join(f"{k}={v}" for k, v in value.items())
        return ",".join(map(str, value)) if isinstance(value, list) else str(value)

    args = ", ".join(f"{k} {shown(v)}" for k, v in want["arguments"].items() if v not in (None, {}, []))
    return f"{args}; generator {want['generator_sha256'][:12]}"
