"""Each test helper is defined once (issue 44.6): the helpers test files share live in tests/helpers.py,
helpers_*.py, tiny_*.py and conftest.py, and no test file keeps a copy of one.

Read by AST over every module of tests/: two definitions (module-level functions, fixtures, classes) whose code is
the same but for the names they bind (arguments, variables) are one helper written twice, whatever they are called
(a function that only hands its arguments to one call holds nothing to share);
and a name the shared modules define (``cli``, ``png``, ``jpeg``, ...) is not defined again by a test file, with or
without a leading underscore (``_cli``, ``_png``), except a fixture that overrides a conftest fixture for its module,
as pytest means fixtures to be."""

from __future__ import annotations

import ast
import copy
from collections import defaultdict
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
SHARED = ("conftest.py", "helpers.py")
SHARED_PREFIXES = ("helpers_", "tiny_")


def _modules() -> dict[str, ast.Module]:
    return {p.name: ast.parse(p.read_text(encoding="utf-8"), filename=p.name) for p in sorted(TESTS.glob("*.py"))}


def _is_shared(name: str) -> bool:
    return name in SHARED or name.startswith(SHARED_PREFIXES)


def _is_fixture(node: ast.AST) -> bool:
    return any("fixture" in ast.unparse(d) for d in getattr(node, "decorator_list", []))


def _definitions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]:
    return [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


class _Anonymise(ast.NodeTransformer):
    """Every name the definition binds (its arguments, its variables) replaced by its order of first use; the names
    it reads from outside (the functions it calls, globals), constants and attributes kept."""

    def __init__(self, local: set[str]) -> None:
        self.local = local
        self.names: dict[str, str] = {}

    def _name(self, name: str) -> str:
        return self.names.setdefault(name, f"v{len(self.names)}") if name in self.local else name

    def visit_Name(self, node: ast.Name) -> ast.AST:
        node.id = self._name(node.id)
        return node

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.arg = self._name(node.arg)
        node.annotation = None
        return node


def _bound(node: ast.AST) -> set[str]:
    return ({n.arg for n in ast.walk(node) if isinstance(n, ast.arg)}
            | {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)})


def shape(node: ast.AST) -> str:
    """The code of a definition without its name, docstring, decorators and annotations, its names anonymised."""
    node = copy.deepcopy(node)
    node.name = ""
    node.decorator_list = []
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        node.returns = None
    node.body = _body(node) or [ast.Pass()]
    return ast.dump(_Anonymise(_bound(node)).visit(node), annotate_fields=False)


def _body(node: ast.AST) -> list[ast.stmt]:
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        return body[1:]
    return body


def delegates(node: ast.AST) -> bool:
    """A function whose body is one call handing on its arguments (``runner.run(block)``, ``return f(x, 3)``): it
    names what it hands on and holds no logic of its own to copy."""
    body = _body(node)
    if len(body) != 1 or not isinstance(body[0], (ast.Expr, ast.Return)) or not isinstance(body[0].value, ast.Call):
        return False
    call = body[0].value
    return all(isinstance(a, (ast.Name, ast.Attribute, ast.Starred, ast.Constant))
               for a in [*call.args, *(k.value for k in call.keywords)])


def copies(modules: dict[str, ast.Module]) -> list[list[str]]:
    """Groups of definitions with the same shape (two or more), as ``file:line name``; one-call delegations left
    out."""
    by_shape = defaultdict(list)
    for file, tree in modules.items():
        for node in _definitions(tree):
            if not delegates(node):
                by_shape[shape(node)].append(f"{file}:{node.lineno} {node.name}")
    return [places for places in by_shape.values() if len(places) > 1]


def redefined(modules: dict[str, ast.Module]) -> list[str]:
    """Test files' definitions of a name a shared module defines (leading underscores ignored), fixtures that override
    a conftest fixture left out."""
    shared = {n.name.lstrip("_"): f for f, tree in modules.items() if _is_shared(f) for n in _definitions(tree)}
    conftest_fixtures = {n.name for n in _definitions(modules["conftest.py"]) if _is_fixture(n)}
    out = []
    for file, tree in modules.items():
        if _is_shared(file):
            continue
        for node in _definitions(tree):
            if node.name.lstrip("_") in shared and not (_is_fixture(node) and node.name in conftest_fixtures):
                out.append(f"{file}:{node.lineno} {node.name} (defined in {shared[node.name.lstrip('_')]})")
    return out


def test_no_helper_is_written_twice():
    found = copies(_modules())
    assert not found, "one helper in several places; keep one, in tests/helpers.py or a conftest fixture:\n" + \
        "\n".join("  " + ", ".join(group) for group in found)


def named_twice(modules: dict[str, ast.Module]) -> list[str]:
    """Helpers (not tests, not fixtures, which are per file) of one name in two or more test files."""
    files = defaultdict(list)
    for file, tree in modules.items():
        if not _is_shared(file):
            for node in _definitions(tree):
                if not node.name.startswith("test_") and not _is_fixture(node):
                    files[node.name].append(file)
    return [f"{name}: {', '.join(where)}" for name, where in files.items() if len(where) > 1]


def test_no_two_test_files_define_a_helper_of_one_name():
    found = named_twice(_modules())
    assert not found, "one job, one helper in a shared module; another job, a name of its own:\n" + "\n".join(
        "  " + line for line in found)


def test_the_name_check_bites():
    one = ast.parse("def _rows():\n    return 1\n")
    assert named_twice({"conftest.py": one, "test_a.py": one, "test_b.py": ast.parse("def _rows(x):\n    return x\n")})
    assert not named_twice({"conftest.py": one, "test_a.py": one})


def test_no_test_file_redefines_a_shared_helper():
    found = redefined(_modules())
    assert not found, "use the shared helper:\n" + "\n".join("  " + line for line in found)


@pytest.mark.parametrize("source, expect", [
    # a local copy of the cli helper under another name and other variable names: one helper written twice
    ("def _run(capsys, *argv):\n    code = main([str(a) for a in argv])\n    return code, capsys.readouterr().err\n"
     "def call(cap, *args):\n    '''Run it.'''\n    rc = main([str(x) for x in args])\n    return rc, cap.readouterr().err\n",
     True),
    # same words, other values: two helpers
    ("def a():\n    return tiny(2, size=(40, 30)) * 2\ndef b():\n    return tiny(3, size=(40, 30)) * 2\n", False),
    # the same one-call delegation in two places: nothing to share
    ("def test_a(block, runner):\n    runner.run(block)\ndef test_b(block, runner):\n    runner.run(block)\n", False),
])
def test_the_copy_check_bites(source, expect):
    assert bool(copies({"test_x.py": ast.parse(source)})) is expect


def test_the_redefinition_check_bites():
    modules = {"conftest.py": ast.parse("import pytest\n@pytest.fixture\ndef folder():\n    pass\n"),
               "helpers.py": ast.parse("def png():\n    pass\n"),
               "test_a.py": ast.parse("def _png(color):\n    return color\n"),
               "test_b.py": ast.parse("import pytest\n@pytest.fixture\ndef folder(tmp_path):\n    return tmp_path\n")}
    assert redefined(modules) == ["test_a.py:1 _png (defined in helpers.py)"]
