"""``vlprobe schema``: the JSON Schema of results.json, generated from :mod:`vlprobe.results.schema`."""

from __future__ import annotations

import argparse

from . import add_command

HELP = "print the JSON Schema of results.json (what vlprobe evaluate and vlprobe probe write)"


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "schema", HELP, run, (
        "Print the JSON Schema (draft 2020-12) of results.json, generated from vlprobe's records of it, so that "
        "other tools can validate a run's file (e.g. python -m jsonschema, or check-jsonschema)."))
    p.add_argument("--out", default=None, metavar="FILE", help="write it to FILE instead of printing it")


def run(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from ..results.schema import json_schema

    text = json.dumps(json_schema(), indent=2) + "\n"
    if args.out is None:
        print(text, end="")
    else:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"wrote {args.out}")
    return 0
