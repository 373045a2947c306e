"""vlprobe's modules import one another in one direction: the graph of every import in vlprobe/ (at module top and
inside functions alike, where a circle hides best) has no circle."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "vlprobe"



def _vlprobe_modules() -> dict[str, tuple[Path, bool]]:
    """{dotted name: (file, is a package's __init__)} of every module of vlprobe (the bundled copies aside)."""
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if "_bundled" in parts:
            continue
        is_package = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return out


def import_graph() -> dict[str, set[str]]:
    """{module: the vlprobe modules it imports}. ``from .x import y`` is an edge to ``x.y`` when that is a module
    (a submodule imported by name), else to ``x``; a package's ``__init__`` is a module like any other. A module's own
    parent packages are no edge: Python imports them before the module, so they cannot close a circle (a registry
    that scans its own package, as ``benchmarks/`` and ``scorers/`` do, imports it)."""
    modules = _vlprobe_modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, (path, is_package) in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)] + ([node.module] if node.module else [])
                    module = ".".join(base)
                else:
                    module = node.module or ""
                targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in modules else module for a in node.names]
            else:
                continue
            graph[name] |= {t for t in targets if t in modules and t != name and not name.startswith(t + ".")}
    return graph


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def test_the_graph_sees_imports_inside_functions():
    graph = import_graph()
    assert "vlprobe.runner" in graph["vlprobe.evaluation.api"]  # at module top
    assert "vlprobe.dataset.reader" in graph["vlprobe.evaluation.data"]  # inside a function
    assert "vlprobe.report.runs" in graph["vlprobe.report.probes"]  # and not back: the circle the registry removed
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [frozenset("abc")]


def test_no_import_circle():
    found = circles(import_graph())
    assert not found, "import circles: " + "; ".join(" <-> ".join(sorted(c)) for c in found)


def _reached(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for child in graph[todo.pop()] - seen:
            seen.add(child)
            todo.append(child)
    return seen


def test_builders_do_not_reach_the_engines_store():
    """A builder writes a dataset folder and knows nothing of models: it reaches neither the score cache nor the Arrow
    cache the engine reads through, directly or through another module (content hashes come from vlprobe.storage.keys)."""
    graph = import_graph()
    store = {"vlprobe.storage.score_cache", "vlprobe.storage.arrow_cache", "vlprobe.scoring.engine"}
    reached = {name: sorted(_reached(graph, name) & store) for name in graph if name.startswith("vlprobe.builders")}
    assert not any(reached.values()), {k: v for k, v in reached.items() if v}
    assert "vlprobe.storage.keys" in _reached(graph, "vlprobe.builders.upstream")


def test_the_probe_does_not_import_evaluate():
    """vlprobe.probing and vlprobe.evaluation are two commands on one pipeline (vlprobe.runner) and one way of reading
    splits (vlprobe.dataset.splits): neither imports the other."""
    graph = import_graph()
    crossing = sorted((a, b) for a, targets in graph.items() for b in targets
                      for x, y in (("vlprobe.probing", "vlprobe.evaluation"), ("vlprobe.evaluation", "vlprobe.probing"))
                      if (a == x or a.startswith(x + ".")) and (b == y or b.startswith(y + ".")))
    assert not crossing, crossing
