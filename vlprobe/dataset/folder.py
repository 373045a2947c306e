"""Write a Hub dataset folder: parquet with embedded image bytes, and a card whose YAML declares every config
(``configs`` with one default) and its features (``dataset_info``), so ``load_dataset(<folder>, <config>)`` works
offline. Layout, as ``push_to_hub`` would make it::

    <folder>/README.md                               card: YAML header + prose
    <folder>/vlprobe.yaml                            how rows become items (vlprobe/dataset/spec.py)
    <folder>/data/<config>/<split>-00000-of-00001-<sha256 of the file, 16 hex>.parquet
    <folder>/.huggingface.yaml                       the card's configs, naming this build's files

``datasets`` keys a local folder's cache by its name and YAML (the card merged with ``.huggingface.yaml``),
never by the files' content. So every shard is named after its content, and every write records in
``.huggingface.yaml`` the card's configs with each pattern replaced by the files it matches: other rows, another
cache key. The committed card keeps its patterns, which match any build.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import yaml
from datasets.table import embed_table_storage
from huggingface_hub.repocard import REGEX_YAML_BLOCK

from ..storage.keys import sha256_files
from ..storage.leftovers import OwnedDir, say_on_stderr, staging_prefix, sweep
from ..storage.locations import SPEC_FILE
from ..storage.paths import check_config_name, check_split_name
from ..storage.run_folder import swap_in
from .reading import CARD_BYTES, parse_yaml, read_text

T = TypeVar("T")
DATA_DIR = "data"
# datasets merges this file over the card's YAML (config.REPOYAML_FILENAME); see the module doc
BUILD_RECORD = ".huggingface.yaml"
RECORD_HEADER = ("# Written by vlprobe with every write of this folder's data (vlprobe/dataset/folder.py): the card's\n"
                 "# configs naming the files of this build, so that datasets' cache changes when they do. Do not edit.\n")


@dataclass(frozen=True)
class ConfigDecl:
    """One config of a dataset folder: its name, features and split names."""

    name: str
    features: datasets.Features
    splits: Sequence[str] = ("test",)
    default: bool = False
    # globs per split for a config reading other configs' parquet (VALSE's ``all``); None: its own data/<name>/
    paths: Mapping[str, Sequence[str]] | None = None

    def data_files(self) -> list[dict[str, Any]]:
        if self.paths is not None:
            missing = [s for s in self.splits if s not in self.paths]
            if missing:
                raise ValueError(f"config {self.name!r}: paths give no files for split(s) {missing}")
            return [{"split": s, "path": list(self.paths[s])} for s in self.splits]
        return [{"split": s, "path": f"{DATA_DIR}/{self.name}/{s}-*.parquet"} for s in self.splits]


def card_metadata(configs: Sequence[ConfigDecl], **fields: object) -> dict[str, Any]:
    """The card's YAML: ``fields``, then ``dataset_info`` and ``configs`` as ``push_to_hub`` writes them."""
    if sum(c.default for c in configs) != 1:
        raise ValueError(f"exactly one config must be the default, got {[c.name for c in configs if c.default]}")
    # the features as push_to_hub writes them (DatasetInfosDict.to_dataset_card_data): configs sorted by name
    return {**fields,
            "dataset_info": [{"config_name": c.name, "features": c.features._to_yaml_list()}
                             for c in sorted(configs, key=lambda c: c.name)],
            "configs": [{"config_name": c.name, "data_files": c.data_files(), **({"default": True} if c.default else {})}
                        for c in configs]}


def render_card(metadata: Mapping[str, Any], body: str) -> str:
    header = yaml.safe_dump(dict(metadata), sort_keys=False, allow_unicode=True, width=120)
    return f"---\n{header}---\n\n{body.strip()}\n"


def write_card(folder: str | Path, metadata: Mapping[str, Any], body: str) -> Path:
    path = Path(folder) / "README.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_card(metadata, body), encoding="utf-8")
    record_data_files(folder)
    return path


def write_spec(folder: str | Path, text: str, benchmark: str | None = None, name: str = SPEC_FILE) -> Path:
    """Write ``<folder>/vlprobe.yaml`` (or ``name``): ``text`` with ``benchmark:`` and its ``data_version:`` recorded."""
    if benchmark is not None:
        from ..benchmarks import get

        if yaml.safe_load(text).get("benchmark") is not None:
            raise ValueError(f"{name}: the spec text records a benchmark already; the builder records it")
        version = get(benchmark).data_version
        if version and yaml.safe_load(version) != version:  # a version YAML would read as a number: quoted
            version = f'"{version}"'
        lines = text.splitlines(keepends=True)
        head = next((i for i, line in enumerate(lines) if not line.startswith("#")), len(lines))
        text = ("".join(lines[:head]) + f"benchmark: {benchmark}\n" + (f"data_version: {version}\n" if version else "")
                + "".join(lines[head:]))
    path = Path(folder) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def read_card_metadata(folder: str | Path) -> dict[str, Any]:
    """The YAML header of ``<folder>/README.md`` (``{}`` without one), read within :mod:`.reading`'s bounds."""
    path = Path(folder) / "README.md"
    match = REGEX_YAML_BLOCK.search(read_text(path, "dataset card", CARD_BYTES))
    value = parse_yaml(match.group(2), str(path)) if match else None
    if value is not None and not isinstance(value, dict):
        raise ValueError(f"{path}: the card's YAML header is a {type(value).__name__}, not a mapping")
    return value or {}


@contextlib.contextmanager
def progress_bars_off() -> Iterator[None]:
    """Silence datasets' progress bars for the block (restored as they were)."""
    was_enabled = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if was_enabled:
            datasets.enable_progress_bars()


def write_split(folder: str | Path, config: str, split: str, dataset: datasets.Dataset) -> Path:
    """Write one split as a parquet shard named after its content, image bytes embedded (not only their paths)."""
    embedded = dataset.with_format("arrow").map(embed_table_storage, batched=True, load_from_cache_file=False)
    return _write_shard(folder, config, split, embedded.with_format(None).to_parquet)[0]


def _write_shard(folder: str | Path, config: str, split: str, write: Callable[[str], T]) -> tuple[Path, T]:
    """(The shard ``write(path)`` wrote, moved in under its content name in place of the split's old ones, its return)."""
    check_config_name(config)  # names the Hub accepts: a hostile one must not write outside folder
    check_split_name(split)
    out_dir = Path(folder) / DATA_DIR / config  # a data/ the user linked elsewhere is theirs to choose
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / f".{split}.parquet.part"
    try:
        result = write(str(tmp))
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    name = shard_name(split, tmp)
    for old in out_dir.glob(f"{split}-*.parquet"):
        if old.name != name:
            old.unlink()
    path = tmp.replace(out_dir / name)
    record_data_files(folder)
    return path, result


def shard_name(split: str, path: str | Path) -> str:
    """``<split>-00000-of-00001-<first 16 hex of the file's sha256>.parquet``, which the Arrow cache checks."""
    return f"{split}-00000-of-00001-{sha256_files([path])[1][0][:16]}.parquet"


SHARD_NAME = re.compile(r"[\w.]+-\d{5}-of-\d{5}-(?P<sha256>[0-9a-f]{16})\.parquet")


def write_split_rows(
    folder: str | Path,
    config: str,
    split: str,
    rows: Iterable[Mapping[str, Any]],
    features: datasets.Features,
    batch_size: int = 100,
) -> tuple[Path, int]:
    """Stream ``rows`` into one parquet shard, one ``batch_size`` of image bytes in memory at a time: (path, rows)."""
    schema, it = features.arrow_schema, iter(rows)

    def write(tmp: str) -> int:
        count = 0
        with pq.ParquetWriter(tmp, schema) as writer:
            while batch := [features.encode_example(dict(row)) for row in itertools.islice(it, batch_size)]:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                count += len(batch)
        return count

    return _write_shard(folder, config, split, write)


@contextlib.contextmanager
def rebuilding(folder: str | Path) -> Iterator[Path]:
    """Rebuild ``folder`` as one unit: yields a copy of it (parquet hard-linked: shards are never rewritten in
    place) that replaces ``folder`` in one step when the block ends without an error."""
    out = Path(folder)
    if out.is_symlink():  # a link stays a link: the folder it points to is rebuilt, as `vlprobe evaluate --out` does
        out = Path(os.path.realpath(out))
        say_on_stderr(f"vlprobe: --out {folder} is a symbolic link: writing the dataset into {out}, the folder it "
                      "points to, which it goes on pointing to")
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"{out} is a file, not a folder")
    out.absolute().parent.mkdir(parents=True, exist_ok=True)
    sweep(out, tmp=False)
    holder = OwnedDir(prefix=staging_prefix(out), dir=out.absolute().parent)
    try:
        stage = holder.path / "run"
        if out.is_dir():
            # a killed build of Nov 22-27 left data/.staging in the live folder: it is not carried forward
            shutil.copytree(out, stage, symlinks=True, copy_function=_link_or_copy,
                            ignore=lambda d, names: [".staging"] if Path(d).name == DATA_DIR else [])
        else:
            stage.mkdir()
        yield stage
        swap_in(stage, out, holder.path)
    finally:
        holder.cleanup()


def _link_or_copy(src: str, dst: str) -> None:
    if src.endswith(".parquet"):
        try:
            os.link(src, dst)
            return
        except OSError:
            pass
    shutil.copy2(src, dst)


def record_data_files(folder: str | Path) -> Path | None:
    """Write ``<folder>/.huggingface.yaml``: the card's ``configs`` naming the files each pattern matches now."""
    folder = Path(folder)
    if not (folder / "README.md").is_file():
        return None
    configs = read_card_metadata(folder).get("configs")
    if not isinstance(configs, list) or not configs:
        return None
    resolved, built = [], []
    for entry in configs:
        files = entry.get("data_files") if isinstance(entry, Mapping) else None
        if isinstance(files, list):
            pairs = [_resolve_data_files(folder, f) for f in files]
            entry = {**entry, "data_files": [f for f, _ in pairs]}
            if any(found for _, found in pairs):
                built.append(entry)
        else:
            built.append(entry)
        resolved.append(entry)
    resolved = built or resolved
    path = folder / BUILD_RECORD
    path.write_text(RECORD_HEADER + yaml.safe_dump({"configs": resolved}, sort_keys=False, width=120), encoding="utf-8")
    return path


def _resolve_data_files(folder: Path, entry: object) -> tuple[object, bool]:
    """(``entry`` with its patterns replaced by the files they match, whether any matched; if some, the rest go)."""
    if not isinstance(entry, Mapping) or "path" not in entry:
        return entry, True
    path = entry["path"]
    patterns = [path] if isinstance(path, str) else list(path)
    matches = [sorted(p.relative_to(folder).as_posix() for p in folder.glob(pattern) if p.is_file())
               for pattern in patterns]
    found = any(matches)
    files = [f for pattern, matched in zip(patterns, matches, strict=True) for f in (matched or ([] if found else [pattern]))]
    return {**entry, "path": files}, found
