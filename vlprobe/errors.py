"""The errors vlprobe raises for bad input, each one line naming the argument, file or item at fault; the CLI prints it
without a traceback (exit status 2)."""

from __future__ import annotations

import contextlib
import os
import shlex
import sys


class VlprobeError(Exception):
    """A user-facing error: one line naming what is at fault."""


class SettingError(VlprobeError, ValueError):
    """An argument or setting is invalid (a batch size, a tie policy, an output folder...)."""


class DatasetError(VlprobeError):
    """A dataset, config, split, spec or row cannot be read or turned into items."""


class ModelError(VlprobeError):
    """A model cannot be found, loaded, or scored with the family asked for."""


class ArgumentError(SettingError):
    """A bad argument: ``str(err)`` names it as Python does (``bootstrap=-1: ...``), :meth:`cli` as the command line
    (``--bootstrap -1: ...``); ``flag``: the command line's spelling, where the caller knows it."""

    # Python arguments whose flag is not simply ``--`` + the name with dashes.
    FLAGS = {"datasets": "--dataset", "configs": "--config", "splits": "--split", "labels": "--label"}

    def __init__(self, argument: str, value: object, detail: str, flag: str | None = None) -> None:
        self.argument, self.value, self.detail, self._flag = argument, value, detail, flag
        super().__init__(f"{argument}={value!r}: {detail}")

    @property
    def flag(self) -> str:
        return self._flag or self.FLAGS.get(self.argument) or "--" + self.argument.replace("_", "-")

    def cli(self) -> str:
        values = self.value if isinstance(self.value, (list, tuple)) else [self.value]
        return f"{self.flag} {' '.join(shlex.quote(str(v)) for v in values)}: {self.detail}"


def first_line(err: BaseException) -> str:
    """The first line of what ``err`` says (its class's name when it says nothing)."""
    return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__


def warn(message: str) -> None:
    """One line on stderr, ``vlprobe: warning: ...`` (a full disk or a closed stderr loses the warning, not the run)."""
    with contextlib.suppress(OSError, ValueError):
        print(f"vlprobe: warning: {message}", file=sys.stderr, flush=True)


def write_failed(out: str | os.PathLike[str], err: OSError, cache: str | None, what: str, none: str) -> VlprobeError:
    """The error of a run's outputs that could not be written into ``out``, saying what a rerun computes again."""
    rerun = (f"the {what} are in the cache ({cache}), so running it again computes {none}" if cache
             else f"nothing was cached (cache_dir none), so a rerun computes the {what} again")
    return VlprobeError(f"cannot write the outputs to {out} ({err.strerror or err}); {rerun}")
