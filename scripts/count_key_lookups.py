"""Count string-key lookups in vlprobe/: ``x["key"]``, ``x.get("key")``, ``x.setdefault("key", ...)``, ``x.pop("key")``.

Issue 44's measure of how much data flows as raw dicts. The results schema module (``vlprobe/results/schema.py``)
and the one upgrade function (``vlprobe/results/upgrade.py``) are left out: reading keys is their job.

    python scripts/count_key_lookups.py            # the total
    python scripts/count_key_lookups.py --files    # per file, largest first
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXCLUDED = {"vlprobe/results/schema.py", "vlprobe/results/upgrade.py"}
METHODS = {"get", "setdefault", "pop"}


def _is_str(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def count(source: str) -> int:
    """The string-key lookups in one module's source."""
    n = 0
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript) and _is_str(node.slice):
            n += 1
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in METHODS
              and node.args and _is_str(node.args[0])):
            n += 1
    return n


def per_file(root: Path = ROOT) -> Counter[str]:
    counts: Counter[str] = Counter()
    for path in sorted((root / "vlprobe").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel not in EXCLUDED:
            counts[rel] = count(path.read_text(encoding="utf-8"))
    return counts


def main(argv: list[str] | None = None, counted: Callable[[], Counter[str]] = per_file, doc: str = __doc__) -> int:
    """The command line of this script and of scripts/count_bare_any.py (``counted``: its per-file counts)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--files", action="store_true", help="print the count per file, largest first")
    args = parser.parse_args(argv)
    counts = counted()
    if args.files:
        for rel, n in counts.most_common():
            if n:
                print(f"{n:5d}  {rel}")
    print(sum(counts.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
