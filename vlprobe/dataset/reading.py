"""Reading a file vlprobe is given (a spec, a card, a captions file, a results.json, an annotation file), bounded: a
regular file within the bound for its kind, JSON or YAML nested at most :data:`MAX_DEPTH` levels, YAML without
aliases; else a :class:`FileError` naming the file, never a ``MemoryError``, a ``RecursionError`` or a hang."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from typing import TypeVar

import yaml
from yaml import Node

from ..errors import VlprobeError

T = TypeVar("T")

MAX_DEPTH = 64  # levels of nested lists and mappings; vlprobe's own files nest at most 6
SPEC_BYTES = 1 << 20  # 1 MiB: a spec is a few lines
CARD_BYTES = 16 << 20  # 16 MiB: a card's YAML and prose
CAPTIONS_BYTES = 512 << 20  # 512 MiB: a `vlprobe build folder` captions file (CSV, JSONL, JSON)
RESULTS_BYTES = 512 << 20  # 512 MiB: a results.json (per-item scores are in scores.parquet, not here)
ANNOTATION_BYTES = 2 << 30  # 2 GiB: a benchmark's annotation file (the largest upstream one is a few hundred MB)


class FileError(VlprobeError, ValueError):
    """A file vlprobe was given that it will not read: not a regular file, too large, not UTF-8, nested too deep."""


def _size(n: int) -> str:
    return f"{n / (1 << 30):.1f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{n:,} bytes"


def read_bytes(path: str | os.PathLike[str], what: str, limit: int) -> bytes:
    """The bytes of ``path``, a regular file of at most ``limit`` bytes, else :class:`FileError` naming it and ``what``
    it should be (FileNotFoundError, IsADirectoryError... for a path missing or a folder: the caller says what to do)."""
    st = os.stat(path)
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(21, "is a folder", str(path))
    if not stat.S_ISREG(st.st_mode):
        kind = ("a named pipe (FIFO)" if stat.S_ISFIFO(st.st_mode) else "a device" if stat.S_ISCHR(st.st_mode) or
                stat.S_ISBLK(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
        raise FileError(f"{path}: is {kind}, not a file; give the {what} as a regular file")
    if st.st_size > limit:
        raise FileError(f"{path}: is {_size(st.st_size)}, larger than the {what}s vlprobe reads (at most "
                        f"{_size(limit)}); refused")
    with open(path, "rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:  # it grew since
        raise FileError(f"{path}: is larger than the {what}s vlprobe reads (at most {_size(limit)}); refused")
    return data


def decode(data: bytes, where: str, what: str) -> str:
    """``data`` as UTF-8 text (a BOM dropped), or :class:`FileError` naming the line and byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[:err.start].count(b"\n") + 1
        raise FileError(f"{where} line {line}: not UTF-8 text (byte {data[err.start]:#04x} at offset {err.start}); "
                        f"save the {what} as UTF-8") from None


def read_text(path: str | os.PathLike[str], what: str, limit: int) -> str:
    """:func:`read_bytes`, decoded as UTF-8 (:func:`decode`)."""
    return decode(read_bytes(path, what, limit), str(path), what)


def check_depth(value: T, where: str, limit: int = MAX_DEPTH) -> T:
    """``value`` (parsed JSON or YAML), or :class:`FileError` when its lists and mappings nest deeper than ``limit``."""
    stack: list[tuple[object, int]] = [(value, 1)]
    seen: set[int] = set()
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (dict, list, tuple)):
            if depth > limit:
                raise FileError(f"{where}: nests lists or mappings more than {limit} levels deep; refused")
            if id(node) in seen:
                continue
            seen.add(id(node))
            children = list(node.keys()) + list(node.values()) if isinstance(node, dict) else node
            stack.extend((child, depth + 1) for child in children)
    return value


def _parsed(parse: Callable[[], object], where: str, what: str) -> object:
    """``parse()``'s value, refused (:class:`FileError`) when its ``what`` nest past :data:`MAX_DEPTH` levels."""
    try:
        value = parse()
    except RecursionError:
        raise FileError(f"{where}: nests {what} more than {MAX_DEPTH} levels deep; refused") from None
    return check_depth(value, where)


def parse_json(text: str, where: str) -> object:
    """JSON ``text`` parsed, nesting bounded (json.JSONDecodeError for text that is not JSON, as json raises it)."""
    return _parsed(lambda: json.loads(text), where, "lists or objects")


def load_json(path: str | os.PathLike[str], what: str, limit: int) -> object:
    """The JSON file ``path``, read and parsed within the bounds (see the module doc)."""
    return parse_json(read_text(path, what, limit), str(path))


def parse_yaml(text: str, where: str) -> object:
    """YAML ``text`` parsed as ``yaml.safe_load`` does, but refusing aliases (:class:`FileError`)."""
    class _NoAliases(yaml.SafeLoader):
        def compose_node(self, parent: Node | None, index: int) -> Node | None:
            if self.check_event(yaml.AliasEvent):
                mark = self.peek_event().start_mark
                raise FileError(f"{where} line {mark.line + 1}: uses a YAML alias (*{self.peek_event().anchor}); "
                                "write the value out instead")
            return super().compose_node(parent, index)

    return _parsed(lambda: yaml.load(text, Loader=_NoAliases), where, "lists or mappings")  # noqa: S506 (a SafeLoader)
