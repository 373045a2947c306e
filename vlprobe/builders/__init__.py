"""Dataset folder builders, one protocol: every concrete :class:`Builder` subclass a module here (or a plugin,
:mod:`vlprobe.plugins`) defines becomes ``vlprobe build <name>``. Builders know nothing of models; they write a Hub
dataset folder. The families: the paper benchmarks' :class:`~vlprobe.builders.flow.UpstreamBuilder`, the rendered
instruments' :class:`~vlprobe.builders.synthetic.SyntheticBuilder`, and ``vlprobe build folder``."""

from __future__ import annotations

import abc
import argparse
import importlib
import inspect
import json
import pkgutil
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, Generic, TypeVar, cast

from ..dataset.folder import ConfigDecl, rebuilding
from ..errors import SettingError
from ..storage.locations import cache_home, dataset_folder, datasets_home, distrust_tree, home_advice, private_folder
from . import unchanged


def stderr(message: str) -> None:
    """A line of a build's log (on stderr)."""
    print(message, file=sys.stderr, flush=True)


def shown(items: Sequence[object], first: int = 6) -> str:
    """The first few of ``items``, and how many more."""
    return ", ".join(map(str, items[:first])) + (f" (+{len(items) - first} more)" if len(items) > first else "")


class AnnotationError(ValueError):
    """An annotation file or record that cannot be used; the message names the file and record."""


T = TypeVar("T")
P = TypeVar("P")  # what a builder's plan() reads and checks before writing


def read_json(path: Path, benchmark: str, expected: type[T], shape: str, missing_hint: str) -> T:
    """Load one of ``benchmark``'s annotation files, with errors that name it (missing: ``missing_hint`` says where)."""
    from ..dataset.reading import ANNOTATION_BYTES, parse_json, read_bytes

    try:  # bounded: a regular file, its size, its nesting (vlprobe.dataset.reading)
        data = parse_json(read_bytes(path, "annotation file", ANNOTATION_BYTES).decode("utf-8"), str(path))
    except FileNotFoundError:
        raise FileNotFoundError(f"{benchmark} annotation file not found: {path} ({missing_hint})") from None
    except UnicodeDecodeError as err:  # e.g. a UTF-16 file (it starts with the bytes 0xff 0xfe)
        raise AnnotationError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    except json.JSONDecodeError as err:
        raise AnnotationError(f"{path}: not valid JSON: {err}") from None
    if not isinstance(data, expected):
        raise AnnotationError(f"{path}: expected {shape}")
    return data


class Builder(abc.ABC, Generic[P]):
    """What ``vlprobe build NAME`` runs: its name, help, needs, configs, options, and a :meth:`plan` and :meth:`write`."""

    name: str = ""
    help: str = ""
    needs: str = ""  # what `vlprobe list` says a build needs
    # files under vlprobe/ (globs) whose code decides what a build writes, besides its own classes' modules: an edit rebuilds
    generator: tuple[str, ...] = ("dataset/folder.py", "builders/cards.py")
    # the parsed arguments that do not change what a build writes; every other one is an input (Builder.arguments)
    not_inputs = frozenset({"out", "force", "workers", "read_workers", "func", "command", "dataset", "up_to_date"})

    def default_out(self) -> Path | None:
        """``--out``'s default: where ``--dataset NAME`` finds it; None: ``--out`` is required."""
        return dataset_folder(self.name)

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """``--out`` and ``--force``; a subclass adds its own options and calls this."""
        default = self.default_out()
        parser.add_argument("--out", type=Path, default=default, required=default is None, help="the dataset folder to "
                            "write" + (f" (default here: {default}; ./{self.name} when it holds a vlprobe.yaml, as in a "
                                       f"clone, else $VLPROBE_ROOT/{self.name}, else <cache>/datasets/{self.name})"
                                       if default is not None else ""))
        parser.add_argument("--force", action="store_true",
                            help="build even when the folder was built from the same inputs and is intact (by default "
                                 "such a rebuild does nothing and says so)")

    def config_decls(self) -> list[ConfigDecl]:
        """The configs a build declares in its card (``vlprobe list`` shows them)."""
        return []

    def plan(self, args: argparse.Namespace) -> P:
        """Everything read and checked before anything is written; what :meth:`write` is given."""
        return cast(P, None)  # a builder that reads nothing before writing (a plugin's Builder[None])

    def arguments(self, args: argparse.Namespace) -> dict[str, Any]:
        """The arguments the folder depends on: every parsed one but :attr:`not_inputs`."""
        return {k: v for k, v in vars(args).items() if k not in self.not_inputs}

    def files_read(self, args: argparse.Namespace, plan: P) -> dict[str, unchanged.Read]:
        """The files the folder depends on, by hash or stamp (:mod:`vlprobe.builders.unchanged`)."""
        return {}

    @abc.abstractmethod
    def write(self, folder: Path, plan: P, args: argparse.Namespace) -> None:
        """Write the dataset into ``folder``: a copy of ``--out`` (empty when there was none), swapped in after."""

    def intact(self, out: Path, want: unchanged.Inputs, args: argparse.Namespace) -> bool:
        """Whether ``out`` was built from ``want`` and holds every file that build wrote, unchanged."""
        return unchanged.up_to_date(out, want)

    def generator_files(self) -> list[Path]:
        """The source files of the builder's classes and of :attr:`generator`."""
        own = [Path(inspect.getfile(c)) for c in type(self).__mro__ if issubclass(c, Builder)]
        return own + unchanged.package_files(self.generator)

    def build(self, args: argparse.Namespace) -> Path:
        """The build: :meth:`plan`, then :meth:`write` into a copy of the folder swapped in whole, unless it is up to date."""
        out = Path(args.out)
        refuse_untrusted(out)
        plan = self.plan(args)
        want = unchanged.Inputs.of(self.name, self.arguments(args), self.files_read(args, plan), self.generator_files())
        if not getattr(args, "force", False) and self.intact(out, want, args):
            args.up_to_date = (f"{out} is up to date (built from the same inputs: {want.describe()}; every file "
                               "intact): nothing built; --force rebuilds it")
            return out
        with rebuilding(out) as folder:
            self.write(folder, plan, args)
            unchanged.record(folder, want)  # last: the inputs and every file this build leaves
        return out


def refuse_untrusted(out: Path) -> None:
    """A build into vlprobe's cache refused where another user could change it (else its folders made private)."""
    home = cache_home()
    if out.absolute().parent != datasets_home().absolute():
        return
    why = distrust_tree(out, home)
    if why:
        raise SettingError(f"--out {out}: in vlprobe's cache, but {why}, who could have changed its rows; not "
                           f"building there: {home_advice(home)} (or pass --out with a folder of yours)")
    private_folder(datasets_home(), home)


def builders_in(module: ModuleType) -> dict[str, Builder]:
    """The builders ``module`` defines (its concrete :class:`Builder` subclasses), by name."""
    found = {}
    for obj in vars(module).values():
        if (isinstance(obj, type) and issubclass(obj, Builder) and obj.__module__ == module.__name__
                and not inspect.isabstract(obj)):
            builder = obj()
            found[builder.name] = builder
    return found


def builders() -> dict[str, Builder]:
    """Every ``vlprobe build`` name and its builder: vlprobe's own, then the plugins'."""
    found: dict[str, Builder] = {}
    for info in pkgutil.iter_modules(__path__):
        found.update(builders_in(importlib.import_module(f"{__name__}.{info.name}")))
    from ..plugins import builders as plugin_builders  # a user's own (entry points, include path)

    found.update(plugin_builders(found, builders_in))
    return found
