"""A rebuild with the same inputs does nothing, and says so (:meth:`vlprobe.builders.Builder.build`).

A build records what its output depends on (:class:`Inputs`: the builder, its arguments, the files it read by hash or
stamp, the sha256 of the code that generates it, the versions of the libraries whose bytes end up in the files) in
``<folder>/data/BUILD_INPUTS.json``, with the sha256 of every file it wrote. Any difference, a changed file, or
``--force`` rebuilds."""

from __future__ import annotations

import hashlib
import json
import os
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, NamedTuple

from ..dataset.folder import DATA_DIR
from ..storage.keys import sha256_files, stamp

RECORD = "BUILD_INPUTS.json"
LIBRARIES = ("Pillow", "pyarrow", "datasets", "numpy")  # whose bytes end up in a built folder
PACKAGE = Path(__file__).resolve().parents[1]  # vlprobe/


def package_files(patterns: Iterable[str]) -> list[Path]:
    """The files of the vlprobe package matching ``patterns`` (globs relative to ``vlprobe/``)."""
    return [p for pattern in patterns for p in PACKAGE.glob(pattern) if p.is_file()]


def generator_digest(files: Iterable[str | os.PathLike]) -> str:
    """sha256 over ``files``, each named by its path in the vlprobe package (a plugin's: its name)."""
    h = hashlib.sha256()
    for path in sorted({Path(f).resolve() for f in files}):
        name = path.relative_to(PACKAGE).as_posix() if path.is_relative_to(PACKAGE) else path.name
        h.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


class Read(NamedTuple):
    """Files a build read: how many, and a digest of what says each is unchanged (its hash, or its stamp)."""

    files: int
    sha256: str


@dataclass(frozen=True)
class Inputs:
    """What a build's output depends on (the module doc)."""

    builder: str
    arguments: dict[str, Any]
    sources: dict[str, Read]
    generator_sha256: str
    libraries: dict[str, str | None]

    @classmethod
    def of(cls, builder: str, arguments: Mapping[str, Any], sources: Mapping[str, Read],
           generator: Iterable[str | os.PathLike]) -> Inputs:
        """The inputs of a build now."""
        versions = {name: _version(name) for name in LIBRARIES}
        return cls(builder, dict(arguments), dict(sources), generator_digest(generator),
                   {**versions, "zlib": zlib.ZLIB_RUNTIME_VERSION})

    def as_json(self) -> dict[str, object]:
        return json.loads(json.dumps(asdict(self), sort_keys=True, default=str))

    def describe(self) -> str:
        """The inputs in a few words, for the "nothing built" line."""
        def shown(value: object) -> str:
            if isinstance(value, dict):
                return ",".join(f"{k}={v}" for k, v in value.items())
            return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)

        args = [f"{k} {shown(v)}" for k, v in sorted(self.arguments.items()) if v is not None and v is not False
                and v not in ({}, [], "")]
        read = [f"{k} ({v.files:,} files)" for k, v in self.sources.items()]
        return ", ".join(args + read) + f"; generator {self.generator_sha256[:12]}"


@dataclass(frozen=True)
class Record:
    """``data/BUILD_INPUTS.json``: the inputs of the build that wrote the folder, and the sha256 of each file it left."""

    inputs: Any
    files: dict[str, str]


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def stamps(paths: Mapping[str, str | os.PathLike]) -> Read:
    """Files read, each judged by its stamp (:func:`vlprobe.storage.keys.stamp`): a rebuild reads no file's bytes."""
    h = hashlib.sha256()
    for name, path in sorted(paths.items()):
        h.update(f"{name}\0{stamp(os.stat(path))}\0".encode())
    return Read(len(paths), h.hexdigest())


def hashes(files: Mapping[str, str]) -> Read:
    """Files read, each judged by the hash of its content (an annotation file's git blob hash)."""
    return Read(len(files), hashlib.sha256(json.dumps(sorted(files.items())).encode()).hexdigest())


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


def up_to_date(folder: str | os.PathLike, want: Inputs) -> bool:
    """Whether ``folder`` was built from exactly ``want`` and every file that build wrote is there, unchanged."""
    folder = Path(folder)
    try:
        record = Record(**json.loads((folder / DATA_DIR / RECORD).read_text(encoding="utf-8")))
        return bool(record.files) and record.inputs == want.as_json() and all(
            (folder / rel).is_file() and sha256_files([folder / rel])[0] == digest for rel, digest in record.files.items())
    except (OSError, ValueError, TypeError, AttributeError):
        return False


def record(target: str | os.PathLike, want: Inputs) -> Path:
    """Write the record of a build into ``target``, after its last file."""
    path = Path(target) / DATA_DIR / RECORD
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(Record(want.as_json(), _files(Path(target)))), indent=1, sort_keys=True) + "\n",
                    encoding="utf-8")
    return path
