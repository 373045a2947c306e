"""A rebuild with the same inputs does nothing, and says so: every builder, through :meth:`vlprobe.builders.Builder.build`.

A build records what its output depends on, in ``<folder>/data/BUILD_INPUTS.json``, with the sha256 of every file it
wrote. Asked to build again, a builder compares: the same inputs, and every recorded file there with the same bytes,
is "up to date: nothing built" in seconds instead of rendering or reading everything again; any difference (another
size or seed, an edited generator, a new Pillow, another annotation file or image, a deleted or changed shard)
rebuilds, as does ``--force``.

The inputs (:func:`inputs`): the builder's name; its arguments (those that change the output, not ``--out`` or
``--workers``); for a builder that reads files, what it read (``sources``: an upstream benchmark's annotation files
by git blob hash, the stamps of its images, a user's captions file and images); the sha256 of the source files that
generate the output (its **generator version**: the code itself, so an edit rebuilds in a clone and an upgrade
rebuilds when installed); and the versions of the libraries whose bytes end up in the files (Pillow and zlib encode
the PNGs, pyarrow and datasets write the parquet).
"""

from __future__ import annotations

import hashlib
import json
import os
import zlib
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..dataset.folder import DATA_DIR
from ..storage.keys import sha256_files, stamp

RECORD = "BUILD_INPUTS.json"
# The libraries whose bytes end up in a built folder.
LIBRARIES = ("Pillow", "pyarrow", "datasets", "numpy")
PACKAGE = Path(__file__).resolve().parents[1]  # vlprobe/


def package_files(patterns: Iterable[str]) -> list[Path]:
    """The files of the vlprobe package matching ``patterns`` (globs relative to ``vlprobe/``)."""
    return [p for pattern in patterns for p in PACKAGE.glob(pattern) if p.is_file()]


def generator_digest(files: Iterable[str | os.PathLike]) -> str:
    """sha256 over ``files`` (each named by its path in the vlprobe package, or by its name outside it: a plugin's)."""
    h = hashlib.sha256()
    for path in sorted({Path(f).resolve() for f in files}):
        name = path.relative_to(PACKAGE).as_posix() if path.is_relative_to(PACKAGE) else path.name
        h.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def _json(value: Any) -> Any:
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def inputs(builder: str, given: Mapping[str, Any], generator: Iterable[str | os.PathLike]) -> dict[str, Any]:
    """What a build's output depends on: the builder, what it says (``given``: ``arguments`` and, where it reads
    files, ``sources``; :meth:`vlprobe.builders.Builder.inputs`), the generator's digest (:func:`generator_digest` of
    ``generator``) and the libraries' versions."""
    versions = {}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    versions["zlib"] = zlib.ZLIB_RUNTIME_VERSION
    return _json({"builder": builder, "arguments": {}, **given, "generator_sha256": generator_digest(generator),
                  "libraries": versions})


def _files(folder: Path) -> dict[str, str]:
    """Every file of a built folder (less the record itself and dot-files), by its path in it."""
    paths = {}
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".staging"))
        for name in sorted(names):
            path = Path(root, name)
            rel = path.relative_to(folder).as_posix()
            if rel != f"{DATA_DIR}/{RECORD}" and not (name.startswith(".") and name != ".huggingface.yaml"):
                paths[rel] = path
    return dict(zip(paths, sha256_files(list(paths.values()))[1]))


def up_to_date(folder: str | os.PathLike, want: Mapping[str, Any]) -> bool:
    """Whether ``folder`` was built from exactly ``want`` and every file that build wrote is there, unchanged."""
    folder = Path(folder)
    try:
        record = json.loads((folder / DATA_DIR / RECORD).read_text(encoding="utf-8"))
        recorded, files = record["inputs"], record["files"]
        return bool(files) and recorded == _json(want) and all(
            (folder / rel).is_file() and sha256_files([folder / rel])[0] == digest for rel, digest in files.items())
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return False


def record(target: str | os.PathLike, want: Mapping[str, Any]) -> Path:
    """Write the record of a build into ``target`` (the folder being built), after its last file."""
    path = Path(target) / DATA_DIR / RECORD
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"inputs": _json(want), "files": _files(Path(target))}, indent=1, sort_keys=True) + "\n",
                    encoding="utf-8")
    return path


def describe(want: Mapping[str, Any]) -> str:
    """The inputs in a few words, for the "nothing built" line."""
    def shown(value: Any) -> str:
        if isinstance(value, dict):
            return ",".join(f"{k}={v}" for k, v in value.items())
        return ",".join(map(str, value)) if isinstance(value, list) else str(value)

    args = [f"{k} {shown(v)}" for k, v in want["arguments"].items() if v is not None and v is not False
            and v not in ({}, [], "")]
    read = [f"{k} ({v['files']:,} files)" for k, v in want.get("sources", {}).items()]
    return ", ".join(args + read) + f"; generator {want['generator_sha256'][:12]}"


def stamps(paths: Mapping[str, str | os.PathLike]) -> dict[str, Any]:
    """A source of files read (:func:`inputs`' ``sources``): how many, and a digest of each one's name and stamp
    (size, modification and change time, inode: :func:`vlprobe.storage.keys.stamp`), so that a rebuild looks at
    no file's bytes; a file changed, replaced or touched changes it."""
    h = hashlib.sha256()
    for name, path in sorted(paths.items()):
        h.update(f"{name}\0{stamp(os.stat(path))}\0".encode())
    return {"files": len(paths), "sha256": h.hexdigest()}
