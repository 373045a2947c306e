"""Subcommands of ``vlprobe``: one module each, each defining ``register(subparsers)``."""
