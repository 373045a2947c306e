"""Subcommands of ``vlprobe``: one module each, each defining ``register(subparsers)``."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def add_command(sub: argparse._SubParsersAction, name: str, help: str, run: Callable[[argparse.Namespace], int],
                description: str) -> argparse.ArgumentParser:
    """The parser of ``vlprobe <name>`` (``help``: its line in ``vlprobe --help``), which calls ``run``."""
    parser: argparse.ArgumentParser = sub.add_parser(name, help=help, description=description)
    parser.set_defaults(func=run)
    return parser
