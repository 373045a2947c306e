"""The errors vlprobe raises for bad input. Each says, in one line, which argument, file or item is
at fault and what to do; the CLI prints it without a traceback (exit status 2), the Python API raises
it as is. Every class is a :class:`VlprobeError`; the ones for bad arguments are also ``ValueError``.
"""

from __future__ import annotations


class VlprobeError(Exception):
    """A user-facing error: one line naming what is at fault."""


class SettingError(VlprobeError, ValueError):
    """An argument or setting is invalid (a batch size, a tie policy, an output folder...)."""


class DatasetError(VlprobeError):
    """A dataset, config, split, spec or row cannot be read or turned into items."""


class ModelError(VlprobeError):
    """A model cannot be found, loaded, or scored with the family asked for."""


# The CLI's historical name; every command raises these.
CommandError = VlprobeError
