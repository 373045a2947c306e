"""Feature matrices on disk (60,000 TraVLR rows of a 512-d CLIP are 8 KB per row and setting), one ``.npy`` file per
(task, split, setting), read back a block at a time with ``pread`` (memory-mapped pages would stay resident)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

import numpy as np
import numpy.typing as npt

from .leftovers import OwnedDir

BLOCK_BYTES = 8 << 20  # bytes of float64 work space per block (the probe's design matrix is float64)
MIN_BLOCK_ROWS = 256


def block_rows(dim: int) -> int:
    return max(MIN_BLOCK_ROWS, BLOCK_BYTES // (8 * max(1, int(dim) + 1)))


class FeatureFile:
    """A float32 (rows, dim) ``.npy`` matrix read a block at a time; only rows ``index`` (sorted, unique) where given."""

    def __init__(self, path: str | os.PathLike[str], index: np.ndarray | None = None, *, owner: object = None) -> None:
        self.path = Path(path)
        with open(self.path, "rb") as fh:
            version = np.lib.format.read_magic(fh)
            read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, fortran, dtype = read(fh)
            self._offset = fh.tell()
        if dtype != np.float32 or fortran or len(shape) != 2:
            raise ValueError(f"{self.path}: not a C-ordered float32 matrix (shape {shape}, dtype {dtype})")
        self.rows, self.dim = int(shape[0]), int(shape[1])
        self.index = None if index is None else np.asarray(index, dtype=np.int64)
        self._owner = owner  # keeps the temporary folder alive while a matrix in it is in use

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self), self.dim)

    def __len__(self) -> int:
        return self.rows if self.index is None else len(self.index)

    def _read(self, fd: int, start: int, stop: int) -> np.ndarray:
        row_bytes = 4 * self.dim
        want = (stop - start) * row_bytes
        buf = bytearray(want)
        view, done = memoryview(buf), 0
        while done < want:  # pread may return fewer bytes than asked
            got = os.preadv(fd, [view[done:]], self._offset + start * row_bytes + done)
            if got <= 0:
                raise OSError(f"{self.path}: the file ends before row {stop} (is it still being written?)")
            done += got
        return np.frombuffer(buf, dtype=np.float32).reshape(stop - start, self.dim)

    def blocks(self, size: int | None = None) -> Iterator[np.ndarray]:
        size = size or block_rows(self.dim)
        fd = os.open(self.path, os.O_RDONLY)
        try:
            if self.index is None:
                for a in range(0, self.rows, size):
                    yield self._read(fd, a, min(a + size, self.rows))
                return
            idx = self.index
            for a in range(0, self.rows, size):
                lo, hi = np.searchsorted(idx, [a, a + size])
                if hi > lo:
                    yield self._read(fd, a, min(a + size, self.rows))[idx[lo:hi] - a]
        finally:
            os.close(fd)

    def take(self, index: Sequence[int] | np.ndarray) -> Features:
        """The rows ``index`` in ascending order: in memory when they fit in one block."""
        rows = np.unique(np.asarray(index, dtype=np.int64))
        if self.index is not None:
            rows = self.index[rows]
        sub = FeatureFile(self.path, rows, owner=self._owner)
        return np.asarray(sub) if len(rows) <= block_rows(self.dim) else sub

    def __array__(self, dtype: npt.DTypeLike | None = None, copy: bool | None = None) -> np.ndarray:
        out = np.concatenate(list(self.blocks())) if len(self) else np.empty((0, self.dim), np.float32)
        return out if dtype is None else out.astype(dtype)

    def __repr__(self) -> str:
        return f"FeatureFile({str(self.path)!r}, shape={self.shape})"


Features = FeatureFile | np.ndarray


def row_blocks(x: Features | npt.ArrayLike, size: int | None = None) -> Iterator[np.ndarray]:
    """The rows of an array or a :class:`FeatureFile`, a block at a time."""
    if isinstance(x, FeatureFile):
        yield from x.blocks(size)
        return
    array = np.asarray(x)
    size = size or block_rows(array.shape[1] if array.ndim > 1 else 1)
    for a in range(0, len(array), size):
        yield array[a:a + size]


def take_rows(x: Features | npt.ArrayLike, index: Sequence[int] | np.ndarray) -> Features:
    """Rows ``index`` (ascending, unique) of an array or a :class:`FeatureFile`."""
    if isinstance(x, FeatureFile):
        return x.take(index)
    return np.asarray(x)[np.unique(np.asarray(index, dtype=np.int64))]


class FeatureWriter:
    """Appends float32 row blocks to one ``.npy`` file of a known number of rows, as wide as the first block."""

    def __init__(self, path: Path, rows: int, owner: object) -> None:
        self.path, self.rows, self.owner = path, int(rows), owner
        self.written = 0
        self.dim: int | None = None
        self._fh: BinaryIO | None = None

    def write(self, block: np.ndarray) -> None:
        block = np.ascontiguousarray(block, dtype=np.float32)
        if block.ndim != 2:
            raise ValueError(f"{self.path.name}: a feature block must be (rows, dim), got shape {block.shape}")
        if self._fh is None:
            self.dim = int(block.shape[1])
            self._fh = open(self.path, "wb")  # noqa: SIM115 (open across write() calls; close() closes it)
            np.lib.format.write_array_header_1_0(
                self._fh, {"descr": np.lib.format.dtype_to_descr(np.dtype(np.float32)), "fortran_order": False,
                           "shape": (self.rows, self.dim)})
        if block.shape[1] != self.dim:
            raise ValueError(f"{self.path.name}: block of width {block.shape[1]} after blocks of width {self.dim}")
        if self.written + len(block) > self.rows:
            raise ValueError(f"{self.path.name}: more than the {self.rows} rows declared")
        self._fh.write(block.tobytes())
        self.written += len(block)

    def close(self) -> FeatureFile:
        if self._fh is None:
            raise ValueError(f"{self.path.name}: no rows were written")
        self._fh.close()
        if self.written != self.rows:
            raise ValueError(f"{self.path.name}: {self.written} rows written, {self.rows} declared")
        return FeatureFile(self.path, owner=self.owner)


class FeatureStore(OwnedDir):
    """A temporary folder of feature files, deleted by :meth:`cleanup` or when no matrix from it is referenced."""

    def __init__(self, parent: str | os.PathLike[str] | None = None) -> None:
        super().__init__(prefix="vlprobe-features-", dir=parent)
        self.dir = self.path
        self._count = 0

    def writer(self, name: str, rows: int) -> FeatureWriter:
        self._count += 1
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
        return FeatureWriter(self.dir / f"{self._count:04d}-{safe}.npy", rows, owner=self)
