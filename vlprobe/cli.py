"""The ``vlprobe`` command. Subcommands are discovered: each module in ``vlprobe/commands/`` that
defines ``register(subparsers)`` adds one; adding a command is adding one module."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from . import __version__, commands
from .errors import ArgumentError, CommandError, VlprobeError  # noqa: F401  (CommandError: the commands' name for it)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vlprobe",
        description="Probe vision-and-language models on linguistic phenomena with foils.",
    )
    parser.add_argument("--version", action="version", version=f"vlprobe {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        if hasattr(module, "register"):
            module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        # `vlprobe` alone runs the offline default job, as the README's first command does.
        args = parser.parse_args(["evaluate"] if "evaluate" in _choices(parser) else ["--help"])
    try:
        return int(args.func(args) or 0)
    except (VlprobeError, ValueError, FileNotFoundError) as err:
        # ArgumentError names its argument as a flag here (``--bootstrap``), as ``bootstrap=`` in Python.
        text = err.cli() if isinstance(err, ArgumentError) else err
        print(f"vlprobe {args.command}: error: {text}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as err:  # the engine's EngineInterrupted says what was kept and how to resume
        # Outside the engine (between chunks, measuring, writing) every scored batch is already in the
        # score cache and the output folder is only swapped in at the end, so the advice is the same.
        hint = str(err) or ("every batch scored so far is saved in the score cache; run the same command again "
                            "to resume: nothing saved is computed again" if args.command in ("evaluate", "probe")
                            else "")
        print(f"vlprobe {args.command}: interrupted" + (f"; {hint}" if hint else ""), file=sys.stderr)
        return 130


def _choices(parser: argparse.ArgumentParser) -> list[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices)
    return []


if __name__ == "__main__":
    sys.exit(main())
