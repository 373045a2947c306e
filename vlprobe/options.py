"""Each option of a command defined once, as an :class:`Option`; everything else is derived from a table of them.

A command's table (``vlprobe.evaluation.settings.OPTIONS``, ``vlprobe.probing.settings.OPTIONS``) gives, per
option: its Python name and default (those of ``vlprobe.evaluate(...)``/``vlprobe.probe(...)``), its command-line
flag and help, its check, and whether and how it is written into results.json (the settings block, the rerun
command line). From the table:

* :func:`add_arguments` adds the options to the command's argparse parser, and :func:`from_args` turns the parsed
  arguments back into the Python keywords;
* :func:`check` checks (and normalises) every value before anything is loaded: the first bad one raises an
  :class:`~vlprobe.errors.ArgumentError` naming it as Python spells it (``batch_size=0: must be at least 1``), whose
  ``cli()`` names it as the command line does (``--batch-size 0: must be at least 1``), one message for both;
* :func:`record` writes the provenance settings block and :func:`command_line` the command that reruns the job.

Options both commands have (batch size, device, dtype, bootstrap, ...) are defined here, once, and reused by both
tables. This module imports no heavy library: checks that need torch or the metric import it when they run, and
run last (``slow``), so a bad number is refused in well under a second; the dtype and model checks import
:mod:`vlprobe.scorers` when they run (0.42 s with PIL and numpy, python -X importtime on this 2-core machine; this
module itself takes 0.14 s), so that ``vlprobe --help`` and argument parsing never pay for it.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import math
import numbers
import os
import shlex
import sys
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from .defaults import BATCH_SIZE as DEFAULT_BATCH_SIZE
from .defaults import CHUNK_ROWS
from .errors import ArgumentError
from .locations import DEFAULT_MODEL

MAX_BOOTSTRAP = 100_000  # resamples; every resample's statistics are held in memory at once

_SAME = object()


class Refused(Exception):
    """Raised by a check: why the value is refused (``must be at least 1``). :func:`check` adds the option's
    name; ``value`` is the one to show where it is not the value given (one element of a list)."""

    def __init__(self, detail: str, value: Any = _SAME) -> None:
        super().__init__(detail)
        self.detail, self.value = detail, value


@dataclass(frozen=True)
class Option:
    """One option of a command, defined once.

    ``name``/``default``: the Python keyword and its default. ``help``, ``flag`` (default ``--`` + the name with
    dashes), ``type``, ``choices``, ``metavar``, ``action`` (``"store_true"`` for a switch, ``"append"`` for a
    repeatable one), ``negated`` (a switch that turns the setting off: ``--no-progress``) and ``cli_default``
    (where argparse's default differs from the Python one): the command line's. ``check``: value -> the checked
    value, or :class:`Refused`; ``slow``: the check imports a heavy library, so it runs after the others.
    ``record``: its key in results.json's settings block (None: not there), ``to_record``: how its value is
    written there. ``to_cli``: how its value is written into the rerun command line; ``rerun=False`` leaves it
    out of that command.
    """

    name: str
    default: Any = None
    help: str = ""
    check: Callable[[Any], Any] | None = None
    flag: str = ""
    type: Callable[[str], Any] | None = None
    choices: Sequence[str] | None = None
    metavar: str | None = None
    action: str | None = None
    negated: bool = False
    cli_default: Any = _SAME
    slow: bool = False
    record: str | None = None
    to_record: Callable[[Any], Any] | None = None
    to_cli: Callable[[Any], Any] | None = None
    rerun: bool = True

    def __post_init__(self) -> None:
        if not self.flag:
            object.__setattr__(self, "flag", "--" + self.name.replace("_", "-"))

    @property
    def parser_default(self) -> Any:
        """argparse's default: ``cli_default`` where given, else the Python default."""
        return self.default if self.cli_default is _SAME else self.cli_default

    @property
    def dest(self) -> str:
        """The attribute argparse stores it under (``--batch-size`` -> ``batch_size``)."""
        return self.flag.lstrip("-").replace("-", "_")

    def but(self, **changes: Any) -> Option:
        """This option with some fields changed (a shared option's help or default in one command)."""
        return replace(self, **changes)


# ---- derived from a table -------------------------------------------------------------------------

def defaults(options: Iterable[Option]) -> dict[str, Any]:
    return {o.name: o.default for o in options}


class Settings(Mapping[str, Any]):
    """A command's settings, checked, as one read-only object: ``s.batch_size`` (and, as a mapping, ``s["batch_size"]``,
    ``dict(s)``). A subclass names its table (:attr:`OPTIONS`) and the error its checks raise (:attr:`ERROR`).

    ``Settings(**values)`` checks every value but the slow ones (the device, the tie policy: they import torch or the
    metric) and fills in the defaults; :meth:`check` adds the slow checks, so a caller can check its own fast things
    (a model name, a dataset name) in between. Values are never checked twice: both steps check different
    options, and :meth:`but` takes values vlprobe computed itself (the device one process of a distributed run got)."""

    OPTIONS: tuple[Option, ...] = ()
    ERROR: type[ArgumentError] = ArgumentError

    def __init__(self, **values: Any) -> None:
        self.__dict__.update(check(self.OPTIONS, values, self.ERROR, slow=False))

    def check(self) -> Settings:
        """These settings with the slow checks done too (a new object: settings never change)."""
        slow = [o for o in self.OPTIONS if o.slow]
        return self.but(**check(slow, {o.name: self.__dict__[o.name] for o in slow}, self.ERROR))

    def but(self, **changes: Any) -> Settings:
        """A copy with ``changes``, which are taken as they are (values vlprobe computed, not a user's)."""
        unknown = sorted(set(changes) - set(self.__dict__))
        if unknown:
            raise TypeError(f"{type(self).__name__} has no setting {', '.join(unknown)}")
        copy = object.__new__(type(self))
        copy.__dict__.update({**self.__dict__, **changes})
        return copy

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"settings are read-only; {type(self).__name__}.but({name}=...) makes a changed copy")

    def __getitem__(self, name: str) -> Any:
        return self.__dict__[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.__dict__)

    def __len__(self) -> int:
        return len(self.__dict__)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.__dict__.items())})"


def takes_options(options: Sequence[Option], *, positional: Sequence[str] = (),
                  extra: Mapping[str, Any] | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: the public signature of a command's Python function, from its option table, so each keyword and
    its default is written once (in the table). The function gets the values given, by name (a dict: the defaults
    are filled in by its :class:`Settings`), and the ``extra`` keywords (objects no command line can give:
    ``processor``, ``log``), by keyword. ``positional``: the options that may also be given by position, in order.
    A keyword that is neither is a TypeError, as Python's own."""
    by_name = {o.name: o for o in options}
    params = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=by_name[name].default)
              for name in positional]
    params += [inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, default=o.default)
               for o in options if o.name not in positional]
    params += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default)
               for name, default in (extra or {}).items()]
    signature = inspect.Signature(params)

    def decorate(run: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(run)
        def entry(*args: Any, **kwargs: Any) -> Any:
            given = dict(signature.bind(*args, **kwargs).arguments)
            extras = {name: given.pop(name) for name in list(given) if name not in by_name}
            return run(given, **extras)

        entry.__signature__ = signature  # type: ignore[attr-defined]
        return entry

    return decorate


def add_arguments(parser: argparse.ArgumentParser, options: Iterable[Option]) -> None:
    """Add each option to ``parser``: its flag, help, default, type, choices, metavar and action."""
    for o in options:
        kwargs: dict[str, Any] = {"help": o.help}
        if o.action == "store_true":
            kwargs["action"] = "store_true"
        else:
            kwargs["default"] = o.parser_default
            for key in ("type", "choices", "metavar", "action"):
                if getattr(o, key) is not None:
                    kwargs[key] = getattr(o, key)
        parser.add_argument(o.flag, **kwargs)


def from_args(options: Iterable[Option], args: argparse.Namespace) -> dict[str, Any]:
    """The Python keywords of parsed arguments; an option the command line left at None takes its Python
    default (``--chunk-size`` unset: 2000)."""
    values = {}
    for o in options:
        value = getattr(args, o.dest)
        if o.negated:
            value = not value
        if value is None and o.default is not None:
            continue
        values[o.name] = value
    return values


def check(options: Sequence[Option], values: Mapping[str, Any], error: type[ArgumentError] = ArgumentError,
          slow: bool = True) -> dict[str, Any]:
    """Every option's value checked and normalised, the defaults filled in; the first bad one raises ``error``
    naming it (``batch_size=0: must be at least 1``; ``.cli()``: ``--batch-size 0: ...``). The checks run in the
    table's order, the slow ones (torch, the metric) last; ``slow=False`` leaves those out (for a caller with
    quick checks of its own to run first). Checking checked values again changes nothing. A name that is no
    option is a TypeError."""
    unknown = sorted(set(values) - {o.name for o in options})
    if unknown:
        raise TypeError(f"unexpected setting(s): {', '.join(unknown)}")
    given = {**defaults(options), **values}
    checked = dict(given)
    for o in sorted(options, key=lambda o: o.slow):
        if o.check is None or o.slow and not slow:
            continue
        try:
            checked[o.name] = o.check(given[o.name])
        except Refused as why:
            shown = given[o.name] if why.value is _SAME else why.value
            raise error(o.name, shown, why.detail, flag=o.flag) from None
    return checked


def record(options: Iterable[Option], values: Mapping[str, Any], order: Sequence[str], **computed: Any,
           ) -> dict[str, Any]:
    """results.json's settings block: each recorded option's value (``to_record``), with ``computed`` entries
    (what is known only once the model is loaded), keyed in ``order`` (results.json's order, which has always
    been this one); ``order`` must name exactly those keys."""
    block = {o.record: (o.to_record or _same)(values[o.name]) for o in options if o.record}
    block.update(computed)
    if sorted(order) != sorted(block):
        raise ValueError(f"the record's order {sorted(order)} does not name its keys {sorted(block)}")
    return {key: block[key] for key in order}


def command_line(prog: str, options: Iterable[Option], values: Mapping[str, Any]) -> str | None:
    """The command (``prog`` = ``"vlprobe evaluate"``) that reruns ``values``, every option spelled out in the
    table's order (a switch when on, a value unless None); None when a value is an object in memory, which no
    command line can name."""
    parts = prog.split()
    for o in options:
        if not o.rerun:
            continue
        value = (o.to_cli or _same)(values[o.name])
        if o.action == "store_true":
            if bool(value) != o.negated:
                parts.append(o.flag)
            continue
        for v in value if o.action == "append" and isinstance(value, (list, tuple)) else [value]:
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, (str, os.PathLike, numbers.Number)):
                return None
            parts += [o.flag, str(v)]
    return " ".join(shlex.quote(p) for p in parts)


def _same(value: Any) -> Any:
    return value


def joined(value: Any) -> Any:
    """A list of names as one comma-separated string (a string or None as it is)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    return value


# ---- checks ---------------------------------------------------------------------------------------

def _is_whole(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def whole(low: int, high: int | None = None, above: str | None = None) -> Callable[[Any], int]:
    """A whole number of at least ``low`` (at most ``high``; ``above``: what to say past it)."""
    what = {0: "0 or more", 1: "at least 1"}.get(low, f"at least {low}")

    def check_whole(value: Any) -> int:
        if not _is_whole(value):
            raise Refused(f"must be a whole number ({what})")
        if value < low:
            raise Refused(f"must be {what}")
        if high is not None and value > high:
            raise Refused(above or f"must be at most {high:,}")
        return int(value)

    return check_whole


def optional(inner: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``inner``'s check, None allowed."""
    return lambda value: None if value is None else inner(value)


def one_of(choices: Sequence[str], what: str) -> Callable[[Any], str]:
    def check_choice(value: Any) -> str:
        if not isinstance(value, str) or value not in choices:
            raise Refused(f"unknown {what}; choose one of {', '.join(choices)}")
        return value

    return check_choice


def switch(value: Any) -> bool:
    np = sys.modules.get("numpy")  # not imported: the value cannot be a numpy bool
    if not isinstance(value, bool) and not (np is not None and isinstance(value, np.bool_)):
        raise Refused("must be True or False")
    return bool(value)


def name_or_none(what: str) -> Callable[[Any], str | None]:
    def check_name(value: Any) -> str | None:
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise Refused(f"must be {what}, or None")
        return value

    return check_name


def confidence_level(value: Any) -> Any:
    if not is_number(value) or not 0 < value < 1:
        raise Refused("must be a level strictly between 0 and 1 (e.g. 0.95)")
    return value


def dtype_name(value: Any) -> str:
    """The canonical name of a dtype spelling (``fp16`` -> ``float16``); torch is imported only for a
    ``torch.dtype`` or for the message about a spelling that is none."""
    from .scorers.loading import _DTYPES, resolve_dtype

    if value is None or isinstance(value, str):
        name = str(value or "float32").lower().removeprefix("torch.")
        if name in _DTYPES:
            return _DTYPES[name]
    try:
        return resolve_dtype(value)[0]
    except (ValueError, TypeError, AttributeError) as err:
        raise Refused(str(err)) from None


def device_name(value: Any) -> str | None:
    """``value`` as given, once torch is known to have it (cuda, cuda:N, mps, cpu); None/"auto" stays None
    (the best available is picked when the model loads)."""
    if value in (None, "", "auto"):
        return None
    if not isinstance(value, str):
        raise Refused("must be a device name: cpu, cuda, cuda:N or mps")
    import torch

    try:
        dev = torch.device(value)
    except (RuntimeError, ValueError):
        raise Refused("unknown device; use cpu, cuda, cuda:N or mps") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise Refused(f"this torch has no CUDA device (torch {torch.__version__}, CUDA "
                          f"{'not compiled in' if torch.version.cuda is None else 'no GPU visible'}); use cpu or "
                          f"leave the device out")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise Refused(f"there are only {torch.cuda.device_count()} CUDA device(s)")
    elif dev.type == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise Refused("MPS (Apple GPU) is not available here; use cpu or leave the device out")
    elif dev.type != "cpu":
        raise Refused("vlprobe runs on cpu, cuda or mps")
    elif dev.index not in (None, 0):
        raise Refused("there is one cpu device (cpu, or cpu:0); the CPU's cores are used by torch's threads")
    return value


def cache_folder(value: Any) -> Any:
    """None (the default folder), ``"none"`` or False (no cache: ``"none"``), or a folder path."""
    if value is None or isinstance(value, os.PathLike) or isinstance(value, str) and value.strip():
        return _short_enough(value)
    if value is False:
        return "none"
    raise Refused("must be a folder path, 'none' (no cache) or None (the default: $VLPROBE_CACHE, else "
                  "~/.cache/vlprobe)")


def _short_enough(value: Any) -> Any:
    from .paths import length_problem

    problem = length_problem(value) if isinstance(value, (str, os.PathLike)) else None
    if problem:
        raise Refused(problem, _shown(value))
    return value


def _shown(value: Any) -> str:
    """A long path as an error shows it: its start and end, with its length."""
    text = str(value)
    return text if len(text) <= 120 else f"{text[:60]}...{text[-40:]} ({len(text):,} characters)"


def folder_or_none(value: Any) -> Any:
    if value is None or isinstance(value, os.PathLike) or isinstance(value, str) and value.strip():
        return _short_enough(value)
    raise Refused("must be a folder path, or None (nothing written)")


def model_given(value: Any) -> Any:
    """A model folder or Hub id, a (model, processor) pair, a loaded transformers model, or a scorer."""
    from .scorers.base import Scorer

    if isinstance(value, (str, os.PathLike)) and str(value).strip():
        return _short_enough(value)
    if isinstance(value, tuple) and len(value) == 2 or isinstance(value, Scorer) or hasattr(value, "config"):
        return value
    raise Refused("must be a model folder or Hub id, a transformers model (with its processor), or a vlprobe scorer")


# ---- the options both commands have ------------------------------------------------------------------

MODEL = Option("model", None, f"model folder or Hub id (default: {DEFAULT_MODEL})", optional(model_given))
REVISION = Option("revision", None, "Hub revision of the model",
                  name_or_none("a Hub revision (branch, tag or commit)"))
FAMILY = Option("family", None, "scorer family (default: detected from the model's config)",
                name_or_none("a scorer family name"))
DATASET_REVISION = Option("dataset_revision", None, "Hub revision (branch, tag or commit) of the dataset",
                          name_or_none("a Hub revision (branch, tag or commit)"))
BOOTSTRAP = Option("bootstrap", 1000, "bootstrap resamples for CIs (0: none; default 1000)",
                   # every resample's statistics are held in memory at once (10^12 asked numpy for 36 TiB): past
                   # 10^5 the CI's last digit no longer moves anyway
                   whole(0, MAX_BOOTSTRAP, f"at most {MAX_BOOTSTRAP:,} resamples (all are held in memory; "
                                           f"1000 is the usual, 10,000 for a steadier CI)"),
                   type=int, record="bootstrap")
CONFIDENCE = Option("confidence", 0.95, "CI level (default 0.95)", confidence_level, type=float, record="confidence")
# numpy's generators take seeds below 2**32; a probe's seeds run on to seed + seeds - 1
MAX_SEED = 2**32 - 1 - 100
SEED = Option("seed", 0, "", whole(0, MAX_SEED, f"must be at most {MAX_SEED:,} (numpy's generators take seeds below "
                                                   "2**32)"), type=int, record="seed")
LIMIT = Option("limit", None, "", optional(whole(1)), type=int, record="limit")


def batch_size_or_auto(value: Any) -> Any:
    """``"auto"`` (searched per tower on an accelerator, :mod:`vlprobe.auto_batch`; the default on the CPU) or a
    whole number >= 1 (refused as any whole number is)."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return "auto"
    return whole(1)(value)


def batch_size(text: str) -> Any:
    """argparse's type for ``--batch-size``: ``auto`` or a whole number."""
    return "auto" if text.strip().lower() == "auto" else int(text)


BATCH_SIZE = Option("batch_size", DEFAULT_BATCH_SIZE, f"inputs per forward pass, or auto (default {DEFAULT_BATCH_SIZE})",
                    batch_size_or_auto, type=batch_size, metavar="N|auto", record="batch_size")
# evaluate's default: on an accelerator each tower's batch is searched and remembered; on the CPU, 32
BATCH_SIZE_AUTO = BATCH_SIZE.but(default="auto",
                                 help=f"inputs per forward pass, or auto (default): on a GPU the largest batch that "
                                      f"still speeds each tower up, searched once per model and card and remembered; "
                                      f"{DEFAULT_BATCH_SIZE} on the CPU")
NUM_WORKERS = Option("num_workers", None, "DataLoader workers decoding images (default: min(4, CPUs - 1) when more "
                     "than 2 CPUs, else 0)", optional(whole(0)), type=int, record="num_workers")
DTYPE = Option("dtype", "float32", "float32 (default), float16 or bfloat16", dtype_name)
DEVICE = Option("device", None, "cpu, cuda, cuda:1, mps (default: the best available)", device_name, slow=True)
CACHE_DIR = Option("cache_dir", None, "", cache_folder)
OUT = Option("out", None, "", folder_or_none)
CHUNK_SIZE = Option("chunk_size", CHUNK_ROWS, "", whole(1), type=int, cli_default=None)
OUTSIDE_IMAGES = Option("outside_images", False, "read image cells that hold a path outside the dataset folder (an "
                        "absolute path, '../'); by default such a row is refused, so that a dataset cannot make vlprobe "
                        "read other files of yours", switch, action="store_true")
PROGRESS = Option("progress", True, "no progress bars", switch, flag="--no-progress", action="store_true",
                  negated=True)
