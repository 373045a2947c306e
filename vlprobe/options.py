"""The settings of a run, typed and checked once: :class:`Settings` holds the fields ``vlprobe.evaluate`` and
``vlprobe.probe`` share (each command's subclass its own). No heavy library is imported here, so that a bad number is
refused in well under a second."""

from __future__ import annotations

import copy
import math
import numbers
import os
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import Field, dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar, TypeGuard, TypeVar

from .defaults import AUTO, CHUNK_ROWS
from .errors import ArgumentError

if TYPE_CHECKING:  # what the entry points' arguments may be (their annotations name these)
    from typing import TypeAlias

    import datasets
    from PIL import Image
    from transformers import PreTrainedModel, PreTrainedTokenizerBase, ProcessorMixin

    from .dataset.spec import ItemSpec
    from .scorers.base import Scorer

    ProcessorLike: TypeAlias = "ProcessorMixin | PreTrainedTokenizerBase"
    ModelLike: TypeAlias = "str | os.PathLike[str] | Scorer | PreTrainedModel | tuple[PreTrainedModel, ProcessorLike]"
    DatasetLike: TypeAlias = "str | os.PathLike[str] | datasets.Dataset | datasets.DatasetDict"
    DatasetsLike: TypeAlias = "DatasetLike | Sequence[DatasetLike] | Mapping[str, DatasetLike]"
    SpecLike: TypeAlias = "str | os.PathLike[str] | Mapping[str, object] | ItemSpec"
    ImageLike: TypeAlias = "str | os.PathLike[str] | Image.Image"
    ImagesLike: TypeAlias = "ImageLike | Sequence[ImageLike]"

MAX_BOOTSTRAP = 100_000  # resamples; every resample's statistics are held in memory at once
MAX_SEED = 2**32 - 1 - 100  # numpy's generators take seeds below 2**32; a probe's seeds run on to seed + seeds - 1
ROW_BYTES = 1024  # the least one row a run holds takes in memory (its scores, texts and ids; a chunk's images more)
WORKERS_PER_CORE = 4
DEVICES = "cpu, cuda, cuda:N or mps"

_SAME = object()
T = TypeVar("T")


class Refused(Exception):
    """Raised by a check: why; ``value``: the one to show, when not the value given; ``at``: its place (``[1]``)."""

    def __init__(self, detail: str, value: object = _SAME, at: str = "") -> None:
        super().__init__(detail)
        self.detail, self.value, self.at = detail, value, at


def opt(default: T, check: Callable[[Any], object] | None = None, *, flag: str | None = "", slow: bool = False) -> T:
    """A settings field: its default and ``check`` (value -> the checked value, or :class:`Refused`); ``flag``: the
    command line's (``""``: from the name; None: none); ``slow``: the check imports torch (:meth:`Settings.check`)."""
    return field(default=default, metadata={"check": check, "flag": flag, "slow": slow})


# ---- the machine -----------------------------------------------------------------------------------------------

def cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def memory_bytes() -> int | None:
    """This machine's memory, where the system says."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


# ---- checks --------------------------------------------------------------------------------------------------------

def is_number(value: object) -> TypeGuard[float]:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def whole(low: int, high: int | None = None, above: str | None = None) -> Callable[[Any], int]:
    """A whole number of at least ``low`` (at most ``high``; ``above``: what to say past it)."""
    what = {0: "0 or more", 1: "at least 1"}.get(low, f"at least {low}")

    def check_whole(value: object) -> int:
        if not isinstance(value, numbers.Integral) or isinstance(value, bool):
            raise Refused(f"must be a whole number ({what})")
        n = int(value)
        if n < low:
            raise Refused(f"must be {what}")
        if high is not None and n > high:
            raise Refused(above or f"must be at most {high:,}")
        return n

    return check_whole


def optional(inner: Callable[[Any], T]) -> Callable[[Any], T | None]:
    """``inner``'s check, None allowed."""
    return lambda value: None if value is None else inner(value)


def one_of(choices: Sequence[str], what: str) -> Callable[[Any], str]:
    def check_choice(value: object) -> str:
        if not isinstance(value, str) or value not in choices:
            raise Refused(f"unknown {what}; choose one of {', '.join(choices)}")
        return value

    return check_choice


def switch(value: object) -> bool:
    np = sys.modules.get("numpy")  # not imported: the value cannot be a numpy bool
    if not isinstance(value, bool) and not (np is not None and isinstance(value, np.bool_)):
        raise Refused("must be True or False")
    return bool(value)


def name_or_none(what: str) -> Callable[[Any], str | None]:
    def check_name(value: object) -> str | None:
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise Refused(f"must be {what}, or None")
        return value

    return check_name


def level(value: object) -> float:
    if not is_number(value) or not 0 < value < 1:
        raise Refused("must be a level strictly between 0 and 1 (e.g. 0.95)")
    return value


def row_count(value: object) -> int:
    """A number of rows a run holds in memory: at most what this machine's memory holds at :data:`ROW_BYTES` a row."""
    memory = memory_bytes()
    most = memory // ROW_BYTES if memory else None
    return whole(1, most, f"must be at most {most:,} rows (a run holds at least {ROW_BYTES:,} bytes a row in "
                          f"memory, and this machine has {(memory or 0) / 2**30:.1f} GiB)" if most else None)(value)


def worker_count(value: object) -> int | None:
    """DataLoader workers: None (the default) or 0 to 4 per CPU core."""
    most = WORKERS_PER_CORE * cpus()
    return optional(whole(0, most, f"must be at most {most} ({WORKERS_PER_CORE} per CPU core; this machine has "
                                   f"{cpus()}): each worker is a process decoding images"))(value)


def batch_size_or_auto(value: object) -> int | str:
    """:data:`~vlprobe.defaults.AUTO` or a whole number of at least 1."""
    if value == AUTO:
        return AUTO
    if isinstance(value, str):
        raise Refused(f"must be a whole number (at least 1) or {AUTO!r}")
    return whole(1)(value)


def dtype_name(value: object) -> str:
    """The canonical name of a dtype spelling (``fp16`` -> ``float16``); torch is imported only where needed."""
    from .scorers.base import _DTYPES, resolve_dtype

    if isinstance(value, str) and not value.strip():
        raise Refused("is empty; choose float32, float16 or bfloat16 (or leave it out: float32)")
    if value is None or isinstance(value, str):
        name = str(value or "float32").lower().removeprefix("torch.")
        if name in _DTYPES:
            return _DTYPES[name]
    try:
        return resolve_dtype(value)[0]
    except (ValueError, TypeError, AttributeError) as err:
        raise Refused(str(err)) from None


def device_name(value: object) -> str | None:
    """``value`` as given, once torch is known to have it; None/``"auto"``: None (the best available)."""
    if value in (None, AUTO):
        return None
    if not isinstance(value, str):
        raise Refused(f"must be a device name: {DEVICES}")
    if not value.strip():
        raise Refused(f"is empty; name a device ({DEVICES}) or leave it out for the best available")
    import torch

    try:
        dev = torch.device(value)
    except (RuntimeError, ValueError):
        raise Refused(f"unknown device; use {DEVICES}") from None
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


def path(value: object, wanted: str = "must be a folder path") -> str | os.PathLike[str]:
    """A path the file system can take: not too long, no ``~user`` of a user with no home folder here."""
    from .storage.paths import length_problem

    if not (isinstance(value, os.PathLike) or isinstance(value, str) and value.strip()):
        raise Refused(wanted)
    text = os.fspath(value)
    if text.startswith("~") and os.path.expanduser(text) == text:
        user = text[1:].split("/")[0].split(os.sep)[0]
        raise Refused(f"names the home folder of {f'user {user!r}' if user else 'the user'}, which this machine does "
                      f"not have; write the path out in full")
    problem = length_problem(value)
    if problem:
        raise Refused(problem, shown(value))
    return value


def shown(value: object) -> str:
    """A long path as an error shows it: its start and end, with its length."""
    text = str(value)
    return text if len(text) <= 120 else f"{text[:60]}...{text[-40:]} ({len(text):,} characters)"


def cache_folder(value: object) -> str | os.PathLike[str] | None:
    """None (the default folder), ``"none"`` or False (no cache: ``"none"``), or a folder path."""
    if value is False:
        return "none"
    return None if value is None else path(value, "must be a folder path, 'none' (no cache) or None (the default: "
                                                  "$VLPROBE_CACHE, else ~/.cache/vlprobe)")


def model_given(value: object) -> object:
    """A model folder or Hub id, a (model, processor) pair, a loaded transformers model, or a scorer."""
    from .scorers.base import Scorer

    if isinstance(value, (str, os.PathLike)):
        return path(value, "must be a model folder or Hub id")
    if isinstance(value, tuple) and len(value) == 2 or isinstance(value, Scorer) or hasattr(value, "config"):
        return value
    raise Refused("must be a model folder or Hub id, a transformers model (with its processor), or a vlprobe scorer")


def names_given(value: object) -> object:
    """Config or split names: a name, a comma-separated string or a list, each named once."""
    if not isinstance(value, str) and not (isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)):
        raise Refused("must be a name, a comma-separated string or a list of names")
    given = [v.strip() for v in (value.split(",") if isinstance(value, str) else value)]
    if not any(given):
        raise Refused("names nothing; give a name (or leave it out for the default)")
    if not all(given):
        raise Refused("has an empty name (between commas, or an empty string); give each name once")
    twice = sorted({v for v in given if given.count(v) > 1})
    if twice:
        raise Refused(f"names {', '.join(twice)} more than once; give each name once")
    return value


def listed(value: str | Sequence[str] | None) -> list[str] | None:
    """Checked :func:`names_given` as a list (None as it is)."""
    if value is None:
        return None
    return [v.strip() for v in (value.split(",") if isinstance(value, str) else value)]


def joined(value: object) -> object:
    """A list of names as one comma-separated string (a string or None as it is)."""
    return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else value


def callable_or_none(value: object) -> object:
    if value is not None and not callable(value):
        raise Refused("must be a function taking one line of text (e.g. print), or None")
    return value


# ---- the settings both commands have ---------------------------------------------------------------------------

REVISION = "a Hub revision (branch, tag or commit)"


@dataclass(frozen=True)
class Settings:
    """A run's settings, checked; a subclass adds its command's fields, :attr:`PROG` and :attr:`ERROR`."""

    PROG: ClassVar[str] = "vlprobe"
    ERROR: ClassVar[type[ArgumentError]] = ArgumentError
    LISTS: ClassVar[tuple[str, ...]] = ("configs",)  # names given as a list or a comma-separated string
    REPEATED: ClassVar[tuple[str, ...]] = ()  # lists whose flag is given once per element (--dataset)
    NOT_RERUN: ClassVar[tuple[str, ...]] = ("chunk_size", "progress")  # how a run goes, not what it computes

    datasets: Any = opt(None, flag="--dataset")
    configs: str | Sequence[str] = opt("all", names_given, flag="--config")
    dataset_revision: str | None = opt(None, name_or_none(REVISION))
    model: Any = opt(None, optional(model_given))
    revision: str | None = opt(None, name_or_none(REVISION))
    family: str | None = opt(None, name_or_none("a scorer family name"))
    bootstrap: int = opt(1000, whole(0, MAX_BOOTSTRAP, f"at most {MAX_BOOTSTRAP:,} resamples (all are held in memory; "
                                                      f"1000 is the usual, 10,000 for a steadier CI)"))
    confidence: float = opt(0.95, level)
    seed: int = opt(0, whole(0, MAX_SEED, f"must be at most {MAX_SEED:,} (numpy's generators take seeds below 2**32)"))
    limit: int | None = opt(None, optional(row_count))
    batch_size: int | str = opt(AUTO, batch_size_or_auto)
    num_workers: int | None = opt(None, worker_count)
    dtype: str = opt("float32", dtype_name)
    device: str | None = opt(None, device_name, slow=True)
    cache_dir: Any = opt(None, cache_folder)
    out: Any = opt(None, optional(lambda v: path(v, "must be a folder path, or None (nothing written)")))
    outside_images: bool = opt(False, switch)
    chunk_size: int = opt(CHUNK_ROWS, row_count)
    progress: bool = opt(True, switch)
    processor: Any = opt(None, flag=None)

    def __post_init__(self) -> None:
        self._check(slow=False)
        self.together()

    def check(self) -> Settings:
        """A copy with the slow checks done too: run after the names are checked."""
        done = copy.copy(self)
        done._check(slow=True)
        return done

    def _check(self, slow: bool) -> None:
        for f in fields(self):
            check = f.metadata.get("check")
            if check is None or f.metadata["slow"] != slow:
                continue
            try:
                object.__setattr__(self, f.name, check(getattr(self, f.name)))
            except Refused as why:
                raise self.refuse(f.name, why.detail, why.value, why.at) from None

    def refuse(self, name: str, detail: str, value: object = _SAME, at: str = "") -> ArgumentError:
        """The error naming setting ``name`` (its value, or ``value``) with ``detail``."""
        f = next(f for f in fields(self) if f.name == name)
        return self.ERROR(name + at, getattr(self, name) if value is _SAME else value, detail, flag=self.flag(f))

    def together(self) -> None:
        """Checks of settings against each other: a ``processor`` goes with a loaded model only."""
        p, m = self.processor, self.model
        if p is None:
            return
        from .scorers.base import Scorer

        if m is None or isinstance(m, (str, os.PathLike, tuple, Scorer)):
            raise self.refuse("processor", "is used only with an already-loaded transformers model (model=the model "
                                           "object); a model folder or Hub id loads its own processor, and a "
                                           "(model, processor) pair or a scorer has one")
        if isinstance(p, (str, os.PathLike)) or not callable(p):
            raise self.refuse("processor", "must be the model's processor or tokenizer object (e.g. "
                                           "AutoProcessor.from_pretrained(...)), not a name")

    @classmethod
    def flag(cls, f: Field[object]) -> str | None:
        """Field ``f``'s command-line flag (None: it has none)."""
        given: str | None = f.metadata.get("flag", "")
        if given != "":
            return given
        return ("--no-" if f.default is True else "--") + f.name.replace("_", "-")

    @classmethod
    def flags(cls) -> dict[str, str]:
        """{field: its flag} of every field the command line gives."""
        return {f.name: flag for f in fields(cls) if (flag := cls.flag(f)) is not None}

    def command_line(self, **resolved: object) -> str | None:
        """The command that reruns these settings (``resolved``: defaults the run filled in); None for an object."""
        values = {**vars(self), **resolved}
        parts = self.PROG.split()
        for f in fields(self):
            flag, value = self.flag(f), values[f.name]
            if flag is None or f.name in self.NOT_RERUN:
                continue
            if isinstance(f.default, bool):  # a switch, given when not at its default
                parts += [flag] if value != f.default else []
                continue
            if f.name in self.REPEATED and isinstance(value, (list, tuple)):
                given = list(value)
            else:
                given = [joined(value) if f.name in self.LISTS else value]
            for v in given:
                if v is None:
                    continue
                if isinstance(v, bool) or not isinstance(v, (str, os.PathLike, numbers.Number)):
                    return None
                parts += [flag, str(v)]
        return shlex.join(parts)
