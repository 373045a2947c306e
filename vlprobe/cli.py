"""The ``vlprobe`` command: each module of ``vlprobe/commands/`` with ``register(subparsers)`` is a subcommand.
Only the command being run is registered in full, so ``vlprobe --help`` imports no command's dependencies."""

from __future__ import annotations

import argparse
import errno
import importlib
import pkgutil
import sys
from types import ModuleType
from typing import Any

from . import __version__, commands
from .defaults import CHUNK_ROWS
from .errors import ArgumentError, VlprobeError
from .options import shown
from .plugins import include_option


def command_modules() -> dict[str, ModuleType]:
    """Each command's module, by command name."""
    found = {}
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        if hasattr(module, "register"):
            found[info.name] = module
    return found


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser, with ``command`` registered in full and every other listed by its ``HELP`` line only."""
    parser = argparse.ArgumentParser(
        prog="vlprobe",
        description="Probe vision-and-language models on linguistic phenomena with foils.",
    )
    parser.add_argument("--version", action="version", version=f"vlprobe {__version__}")
    # (main() takes it out of the arguments wherever it stands, before the parser reads them: here for --help)
    parser.add_argument("--include-path", metavar="DIR", action="append", default=argparse.SUPPRESS,
                        help="a folder of your own benchmarks, builders and scorer families (each DIR/*.py), as "
                        "$VLPROBE_INCLUDE_PATH; repeatable, and accepted after the command too")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in command_modules().items():
        if name == command or not hasattr(module, "HELP"):
            module.register(sub)
        else:
            sub.add_parser(name, help=module.HELP)
    return parser


def batch_size(text: str) -> int | str:
    """``--batch-size``'s type: a whole number, or the text (``auto``; the settings refuse anything else)."""
    return int(text) if text.strip().isdigit() else text


def add_run_options(p: argparse.ArgumentParser) -> None:
    """The options whose default ``evaluate`` and ``probe`` share, each ``dest`` and default the keyword's."""
    p.add_argument("--dataset-revision", default=None, help="Hub revision (branch, tag or commit) of the dataset")
    p.add_argument("--revision", default=None, help="Hub revision of the model")
    p.add_argument("--family", default=None, help="scorer family (default: detected from the model's config)")
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for CIs (0: none; default 1000)")
    p.add_argument("--confidence", type=float, default=0.95, help="CI level (default 0.95)")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap, subsets and controls (default 0)")
    p.add_argument("--limit", type=int, default=None, help="use only the first N rows of each config/split")
    p.add_argument("--num-workers", type=int, default=None, help="DataLoader workers decoding images (default: "
                   "min(4, CPUs - 1) when more than 2 CPUs, else 0; at most 4 per CPU)")
    p.add_argument("--dtype", default="float32", help="float32 (default), float16 or bfloat16")
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:1, mps (default: the best available)")
    p.add_argument("--cache-dir", default=None, help="the score and feature cache (default: $VLPROBE_CACHE or "
                   "~/.cache/vlprobe); 'none' disables it")
    p.add_argument("--outside-images", action="store_true", help="read image cells that hold a path outside the "
                   "dataset folder (an absolute path, '../'); by default such a row is refused, so that a dataset "
                   "cannot make vlprobe read other files of yours")
    p.add_argument("--chunk-size", type=int, default=CHUNK_ROWS, help=f"rows read and scored (or encoded) at a "
                   f"time; memory holds one chunk's images, not the dataset's (default {CHUNK_ROWS})")
    p.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bars")


def keywords(args: argparse.Namespace) -> dict[str, Any]:
    """The Python keywords of a run command's parsed arguments."""
    return {k: v for k, v in vars(args).items() if k not in ("command", "func")}


def _include_paths(argv: list[str]) -> tuple[list[str], list[str]]:
    """(the ``--include-path`` folders, the rest of ``argv``), wherever it stands before ``--``."""
    folders: list[str] = []
    rest: list[str] = []
    args = iter(argv)
    for arg in args:
        if arg == "--":
            rest += [arg, *args]
        elif arg == "--include-path":
            folder = next(args, "-")
            if folder.startswith("-"):
                raise VlprobeError("--include-path expects a folder: --include-path DIR")
            folders.append(folder)
        elif arg.startswith("--include-path="):
            folders.append(arg.split("=", 1)[1])
        else:
            rest.append(arg)
    return folders, rest


def os_error_line(err: OSError) -> str:
    """An OSError in one line naming the file and what the system said."""
    what = err.strerror or str(err)
    if err.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", -1)):
        what = f"{what}: the disk (or your quota) is full; free some space and run it again"
    return f"{shown(err.filename)}: {what}" if err.filename is not None and str(err.filename) else what


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        folders, argv = _include_paths(argv)
        if folders:
            include_option(folders)
    except VlprobeError as err:
        print(f"vlprobe: error: {err}", file=sys.stderr)
        return 2
    command = next((a for a in argv if not a.startswith("-")), None)  # the top level's options take no value
    if command is None and not argv:
        argv, command = ["evaluate"], "evaluate"  # the offline default job, as the README's first command does
    args = build_parser(command).parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (VlprobeError, ValueError, FileNotFoundError) as err:
        text = err.cli() if isinstance(err, ArgumentError) else err  # named as a flag (``--bootstrap``) here
        print(f"vlprobe {args.command}: error: {text}", file=sys.stderr)
        return 2
    except OSError as err:  # the system's refusal (a name too long, a full disk, no permission): one line, no traceback
        print(f"vlprobe {args.command}: error: {os_error_line(err)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as err:  # the engine's EngineInterrupted says what was kept; outside it, the same holds
        hint = str(err) or ("every batch scored so far is saved in the score cache; run the same command again "
                            "to resume: nothing saved is computed again" if args.command in ("evaluate", "probe")
                            else "")
        print(f"vlprobe {args.command}: interrupted" + (f"; {hint}" if hint else ""), file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
