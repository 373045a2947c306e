"""Count bare ``Any`` in vlprobe/'s function signatures: a parameter or return annotated ``Any`` (or ``Any | None``).

Issue 44's measure of how much of the code's interface is untyped, the sense of ruff's ANN401 (429 at 8764aac by
either count): ``dict[str, Any]`` is not bare, ``x: Any`` and ``-> Any | None`` are.

    python scripts/count_bare_any.py            # the total
    python scripts/count_bare_any.py --files    # per file, largest first
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

from count_key_lookups import main  # the same command line, over this script's count

ROOT = Path(__file__).resolve().parents[1]


def _is_any(node: ast.expr) -> bool:
    if isinstance(node, ast.Name | ast.Attribute):
        return (node.id if isinstance(node, ast.Name) else node.attr) == "Any"
    # Any | None, None | Any
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr) and (_is_any(node.left) or _is_any(node.right))


def count(source: str) -> int:
    """The bare ``Any`` annotations of one module's function parameters and returns."""
    n = 0
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            a = node.args
            params = [*a.posonlyargs, *a.args, *a.kwonlyargs, *filter(None, [a.vararg, a.kwarg])]
            annotations = [p.annotation for p in params] + [node.returns]
            n += sum(1 for ann in annotations if ann is not None and _is_any(ann))
    return n


def per_file(root: Path = ROOT) -> Counter[str]:
    return Counter({path.relative_to(root).as_posix(): count(path.read_text(encoding="utf-8"))
                    for path in sorted((root / "vlprobe").rglob("*.py"))})


if __name__ == "__main__":
    sys.exit(main(counted=per_file, doc=__doc__))
