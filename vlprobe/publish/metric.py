"""The metric folder, pushed as a Space named like the module, so that ``evaluate.load("<org>/valse_metric")`` finds
it."""

from __future__ import annotations

import doctest
import io
import os
import sys
from pathlib import Path

from ..errors import first_line
from .folder import escaping_files, progress_bars_off
from .plan import UploadPlan, ValidationError, check_repo_id
from .space import _space_plan, check_space_folder


def check_metric_folder(
    folder: str | os.PathLike[str], repo_id: str, import_app: bool = True, notes: list[str] | None = None
) -> list[str]:
    """The problems of the metric Space: ``<name>.py`` (the repo's last part), requirements.txt, the Space checks."""
    folder = Path(folder)
    if not folder.is_dir():
        return [f"{folder}: not a folder"]
    name = repo_id.split("/")[-1]
    module_file = folder / f"{name}.py"
    problems = []
    if not module_file.is_file():
        found = sorted(p.name for p in folder.glob("*.py") if p.stem not in ("app", "tests", "setup"))
        problems.append(
            f"--repo {repo_id!r}: evaluate.load({repo_id!r}) fetches {name}.py from that Space, but {folder} has "
            f"no {name}.py" + (f" (it has {', '.join(found)}; name the repo <org>/{Path(found[0]).stem})" if found else "")
        )
    else:
        problems += check_metric_module(module_file, notes=notes)
    req = folder / "requirements.txt"
    if not req.is_file() or "evaluate" not in req.read_text(encoding="utf-8"):
        problems.append(f"{req}: must list evaluate (Spaces preinstall gradio, huggingface_hub and datasets, not evaluate)")
    problems += check_space_folder(folder, import_app=import_app, notes=notes)
    return problems


def check_metric_module(module_file: Path, notes: list[str] | None = None) -> list[str]:
    """Load ``module_file`` with ``evaluate.load`` and run its docstring examples as doctests, ``evaluate.load`` of
    any name pointing at this file (as evaluate's test_metric_common does), so no example needs the network."""
    import evaluate

    try:
        with progress_bars_off():
            metric = evaluate.load(str(module_file))
    except Exception as err:
        return [f"{module_file}: evaluate.load fails: {type(err).__name__}: {first_line(err)}"]
    module = sys.modules.get(type(metric).__module__)
    if module is None:
        return [f"{module_file}: loaded, but its module could not be found for the doctests"]
    real_load = evaluate.load

    def local_load(path: str = "", *args: object, **kwargs: object) -> object:
        return real_load(str(module_file), *args, **kwargs)

    finder = doctest.DocTestFinder(exclude_empty=True)
    tests = [t for t in finder.find(module, module.__name__, globs=dict(vars(module))) if t.examples]
    if not tests:
        return [f"{module_file}: no docstring examples (>>> lines) to run; "
                "the card and _KWARGS_DESCRIPTION should show a computation"]
    out = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    from unittest import mock

    with mock.patch.object(evaluate, "load", local_load), progress_bars_off():
        for test in tests:
            runner.run(test, out=out.write)
    # runner.failures / runner.tries rather than summarize(), which prints to stdout
    if runner.failures:
        report = out.getvalue().strip()
        return [f"{module_file}: {runner.failures} of {runner.tries} docstring example(s) fail:\n{_indent(report, 6)}"]
    if notes is not None:
        notes.append(f"{module_file.name}: evaluate.load ok; "
                     f"{runner.tries} docstring example(s) in {len(tests)} docstring(s) pass")
    return []


def _indent(text: str, n: int) -> str:
    lines = text.splitlines()
    if len(lines) > 40:
        lines = lines[:40] + [f"... ({len(lines) - 40} more lines)"]
    return "\n".join(" " * n + line for line in lines)


def plan_metric(folder: str | os.PathLike[str], repo_id: str) -> UploadPlan:
    """Validate the metric folder and plan pushing it as a Gradio Space named like the module."""
    folder = Path(folder)
    check_repo_id(repo_id)
    name = repo_id.split("/")[-1]
    if folder.is_dir() and not (folder / f"{name}.py").is_file():
        # A wrong name is an argument error: say so before the slower checks.
        raise ValidationError(f"metric folder {folder}", check_metric_folder(folder, repo_id, import_app=False)[:1])
    notes: list[str] = []
    problems = escaping_files(folder) + check_metric_folder(folder, repo_id, notes=notes)
    if problems:
        raise ValidationError(f"metric folder {folder}", problems)
    return _space_plan(folder, repo_id, notes)
