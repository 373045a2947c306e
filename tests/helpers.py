"""The one copy of the small helpers test files share (tests/test_test_helpers.py keeps each defined once):
``vlprobe`` run as a command (the ``cli`` fixture of conftest.py is a :class:`Cli`), small images, listings and digests
of a folder, the warning lines a run printed, float comparisons scaled to the values. Dataset folders and builders:
helpers_data.py; toy scorers: helpers_engine.py."""

from __future__ import annotations

import hashlib
import io
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from PIL import Image, ImageDraw, ImageFilter

# ---- vlprobe as a command ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CliRun:
    """What one ``vlprobe`` command gave: its exit code and what it printed. Unpacks as ``code, out, err``."""

    code: int | None
    out: str
    err: str

    def __iter__(self) -> Iterator[Any]:
        return iter((self.code, self.out, self.err))


class Cli:
    """``cli("evaluate", "--dataset", folder, ...)`` runs ``vlprobe.cli.main`` in this process (each argument as
    ``str``) and returns its :class:`CliRun`, with only what this command printed (pytest's capsys);
    ``cli.subprocess(...)`` runs ``python -m vlprobe.cli`` in a fresh interpreter, where a test needs one (imports not
    yet made, an environment of its own)."""

    def __init__(self, capsys: pytest.CaptureFixture[str]):
        self.capsys = capsys

    def __call__(self, *argv: object) -> CliRun:
        from vlprobe.cli import main

        self.capsys.readouterr()  # what came before is not this command's
        code = main([str(a) for a in argv])
        printed = self.capsys.readouterr()
        return CliRun(code, printed.out, printed.err)

    @staticmethod
    def subprocess(*argv: object, env: Mapping[str, str] | None = None, cwd: Path | str | None = None,
                   timeout: float = 300) -> CliRun:
        proc = subprocess.run([sys.executable, "-m", "vlprobe.cli", *map(str, argv)], env=env, cwd=cwd,
                              capture_output=True, text=True, timeout=timeout)
        return CliRun(proc.returncode, proc.stdout, proc.stderr)


def warning_lines(text: str) -> list[str]:
    """The ``vlprobe: warning:`` lines of what a run printed."""
    return [line for line in text.splitlines() if line.startswith("vlprobe: warning:")]


# ---- small images -----------------------------------------------------------------------------------------------


def solid(color: tuple[int, int, int] = (200, 30, 30), size: tuple[int, int] = (24, 20), mode: str = "RGB"
          ) -> Image.Image:
    """An image of one colour."""
    return Image.new(mode, size, color)


def encode(image: Image.Image, fmt: str = "PNG", **options: object) -> bytes:
    """``image`` saved as ``fmt`` (PIL's save options: quality, exif, ...)."""
    buf = io.BytesIO()
    image.save(buf, format=fmt, **options)
    return buf.getvalue()


def png(color: tuple[int, int, int] = (200, 30, 30), size: tuple[int, int] = (24, 20)) -> bytes:
    """A small PNG of ``color`` with one pixel of another (at (2, 3)), so that it is not a flat image."""
    im = solid(color, size)
    im.putpixel((2, 3), (255 - color[0], color[1], 255 - color[2]))
    return encode(im, "PNG")


def jpeg(name: str | None = None, size: tuple[int, int] = (8, 8), color: tuple[int, int, int] | None = None,
         **options: object) -> bytes:
    """A tiny JPEG of one colour: ``color``, else a colour that depends on ``name`` (so that a model's scores differ
    between names), else (1, 2, 3)."""
    if color is None:
        color = tuple(hashlib.sha1(name.encode()).digest()[:3]) if name is not None else (1, 2, 3)
    return encode(solid(color, size), "JPEG", **options)


def jpeg_photo(seed: int, size=(640, 480)) -> Image.Image:
    """A photo-like JPEG: a smooth colour gradient, sensor-like noise, blurred shapes."""
    rng = np.random.default_rng(seed)
    w, h = size
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    base = np.stack([128 + 100 * np.sin(x / (60 + 20 * c) + y / (90 + 15 * c) + seed + c) for c in range(3)], -1)
    img = Image.fromarray(np.clip(base + rng.normal(0, 8, base.shape), 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(img)
    for _ in range(8):
        x0, y0 = int(rng.integers(0, w - 100)), int(rng.integers(0, h - 100))
        draw.ellipse([x0, y0, x0 + int(rng.integers(20, 150)), y0 + int(rng.integers(20, 150))],
                     fill=tuple(int(c) for c in rng.integers(0, 255, 3)))
    img = img.filter(ImageFilter.GaussianBlur(1.2))
    return Image.open(io.BytesIO(encode(img, "JPEG", quality=90))).convert("RGB")


# ---- folders ----------------------------------------------------------------------------------------------------


def digests(folder: Path) -> dict[str, str]:
    """sha256 of every file below ``folder``, by its path relative to it."""
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def tree(root: Path) -> set[str]:
    """Every path below ``root`` (files and folders), relative to it."""
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


# ---- numbers ----------------------------------------------------------------------------------------------------


def assert_close(got: npt.ArrayLike, want: npt.ArrayLike, rtol: float = 1e-4) -> None:
    """Float32 model outputs equal up to BLAS's summation order: relative ``rtol``, and an absolute 1e-5 of the
    largest value (at least 1e-5)."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-5 * max(1.0, float(np.abs(want).max())))


def engine_never_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Scoring fails the test if it starts (for settings that must be refused before anything is scored)."""
    from vlprobe.scoring import engine

    def boom(self: object, items: object) -> None:
        raise AssertionError("scoring started")

    monkeypatch.setattr(engine.Engine, "score", boom)


def computed(engine: Mapping[str, int]) -> int:
    """How many scores a run computed (its engine's ``computed_*`` counts, this process's share left out)."""
    return sum(v for k, v in engine.items() if k.startswith("computed_") and not k.endswith("_this_process"))


# ---- processes --------------------------------------------------------------------------------------------------


class Killed(BaseException):
    """A kill -9 at this step: nothing after it runs, not even cleanup."""


def kill_at(proc: subprocess.Popen, mark: Path, wait: float = 300) -> None:
    """SIGKILL ``proc`` once it has written ``mark`` (a point the test controls, never a time); the test fails with what
    the process printed if it ends, or ``wait`` seconds pass, first."""
    try:
        deadline = time.time() + wait
        while time.time() < deadline and not mark.exists() and proc.poll() is None:
            time.sleep(0.05)
        assert mark.exists(), proc.communicate()[1]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ok(args: list, cwd: Path, env: Mapping[str, str], timeout: float = 600) -> subprocess.CompletedProcess:
    """``args`` run as a command (each as ``str``); it must succeed, else the test fails with the command and the
    ends of its output."""
    proc = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(map(str, args))}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc
