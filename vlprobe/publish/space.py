"""Space folders: the card's ``sdk`` and ``app_file``, the app imported with ``launch()`` disabled, and the Space
staged with the vlprobe package and the default model beside it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from ..storage.paths import is_inside, relative_problem
from .folder import CARD_FILE, IGNORE_PATTERNS, escaping_files, folder_files, read_card
from .plan import UploadPlan, ValidationError, check_repo_id


def check_space_folder(folder: str | os.PathLike[str], import_app: bool = True, notes: list[str] | None = None) -> list[str]:
    """The problems of a Space folder: its card, its app file, and (``import_app``) the app's import."""
    folder = Path(folder)
    if not folder.is_dir():
        return [f"{folder}: not a folder"]
    meta, problems = read_card(folder, "Space card (README.md whose YAML sets sdk and app_file)")
    app_file = "app.py"
    if meta is not None:
        if not meta.get("sdk"):
            problems.append(f"{folder / CARD_FILE}: the Space YAML has no 'sdk' (e.g. sdk: gradio)")
        if not meta.get("app_file"):
            problems.append(f"{folder / CARD_FILE}: the Space YAML has no 'app_file' (e.g. app_file: app.py)")
        else:
            app_file = str(meta["app_file"])
    bad = relative_problem(app_file)
    app = folder / app_file
    if bad or not is_inside(folder, app):  # the import check runs it: nothing outside the folder
        problems.append(f"{folder / CARD_FILE}: app_file {app_file!r} {bad or 'leads outside the folder'}; "
                        "it must name a file inside the Space folder")
    elif not app.is_file():
        problems.append(f"{app}: the Space's app file is missing")
    elif import_app and (meta is None or meta.get("sdk", "gradio") == "gradio"):
        problems += check_app_imports(app, notes=notes)
    return problems


_IMPORT_CHECK = r"""
import importlib.util, json, sys
app, folder = sys.argv[1], sys.argv[2]
sys.path.insert(0, folder)
try:
    import gradio as gr
    def _refuse(self, *args, **kwargs):
        raise RuntimeError("launch() was called while importing the app")
    gr.Blocks.launch = _refuse
    spec = importlib.util.spec_from_file_location("vlprobe_space_app_check", app)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    apps = [k for k, v in vars(module).items() if isinstance(v, gr.Blocks)]
    result = {"ok": True, "apps": apps}
except BaseException as err:
    result = {"ok": False, "error": f"{type(err).__name__}: {err}"}
print("VLPROBE-CHECK " + json.dumps(result))
"""


def check_app_imports(app: Path, timeout: float = 300, notes: list[str] | None = None) -> list[str]:
    """Import a Gradio app in a fresh interpreter (its imports must not leak into ours) with ``launch()`` disabled."""
    env = dict(os.environ, GRADIO_ANALYTICS_ENABLED="False", PYTHONDONTWRITEBYTECODE="1")
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _IMPORT_CHECK, str(app.resolve()), str(app.parent.resolve())],
            cwd=app.parent, env=env, capture_output=True, text=True, timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return [f"{app}: importing it took more than {timeout:.0f} s (does it do heavy work at import?)"]
    line = next((ln for ln in reversed(proc.stdout.splitlines()) if ln.startswith("VLPROBE-CHECK ")), None)
    if line is None:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return [f"{app}: importing it crashed the interpreter: {tail}"]
    result = json.loads(line[len("VLPROBE-CHECK "):])
    if not result["ok"]:
        err = result["error"]
        if "launch() was called" in err:
            return [f"{app}: calls launch() at import; guard it with `if __name__ == \"__main__\":`"]
        return [f"{app}: does not import: {err}"]
    problems = []
    if not result["apps"]:
        problems.append(f"{app}: defines no Gradio app (gr.Blocks or gr.Interface) at module level")
    if ".launch(" not in app.read_text(encoding="utf-8"):
        problems.append(f"{app}: never calls launch(); a Gradio Space runs `python {app.name}`, which must launch the app")
    if notes is not None and not problems:
        notes.append(f"{app.name}: imports with launch() disabled and defines {', '.join(result['apps'])}")
    return problems


def stage_space(folder: str | os.PathLike[str]) -> tuple[Path, Any]:
    """A self-contained copy of the Space, with the ``vlprobe`` package (the metric in ``_bundled/metric/``) and
    ``models/mini-clip`` beside ``app.py`` (vlprobe is not on PyPI): (the folder, the TemporaryDirectory owning it)."""
    import shutil
    import tempfile

    from ..metric import METRIC_FILE
    from ..storage.locations import BUNDLE, PACKAGE

    folder = Path(folder).resolve()
    root = folder.parent
    tmp = tempfile.TemporaryDirectory(prefix="vlprobe-space-")
    staged = Path(tmp.name) / folder.name
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", ".venv", ".pytest_cache", ".hypothesis")
    shutil.copytree(folder, staged, ignore=skip)
    package = root / "vlprobe"
    if folder == (BUNDLE / "space").resolve():
        package = PACKAGE  # the Space an installed vlprobe ships: stage the package it runs from
    if (package / "__init__.py").is_file() and not (staged / "vlprobe").exists():
        # "_bundled": an installed package's copy of metric/, space/ and the model; the model is staged below
        shutil.copytree(package, staged / "vlprobe", symlinks=False, ignore=shutil.ignore_patterns(
            "__pycache__", "*.pyc", ".venv", ".pytest_cache", ".hypothesis", "_bundled"))
        # The metric, where an installed package keeps it (vlprobe.storage.locations): the staged package is one.
        metric_file = root / "metric" / METRIC_FILE.name
        metric_file = metric_file if package == root / "vlprobe" and metric_file.is_file() else METRIC_FILE
        (staged / "vlprobe" / "_bundled" / "metric").mkdir(parents=True)
        shutil.copyfile(metric_file, staged / "vlprobe" / "_bundled" / "metric" / METRIC_FILE.name)
    model = root / "models" / "mini-clip"
    if model.is_dir() and not (staged / "models" / "mini-clip").exists():
        shutil.copytree(model, staged / "models" / "mini-clip", ignore=skip)
    return staged, tmp


def plan_space(folder: str | os.PathLike[str], repo_id: str) -> UploadPlan:
    """Validate a Space folder staged (so that the import check proves it runs alone) and plan pushing it."""
    check_repo_id(repo_id)
    escaping = escaping_files(Path(folder))
    if escaping:
        raise ValidationError(f"Space folder {folder}", escaping)
    staged, owner = stage_space(folder)
    notes: list[str] = [f"staged {folder} with the vlprobe package and the default model beside app.py"]
    problems = check_space_folder(staged, notes=notes)
    if problems:
        owner.cleanup()
        raise ValidationError(f"Space folder {folder}", problems)
    return _space_plan(staged, repo_id, notes, keep_alive=owner)


def _space_plan(folder: Path, repo_id: str, notes: list[str] | None = None, keep_alive: object = None) -> UploadPlan:
    meta, _ = read_card(folder)
    sdk = str((meta or {}).get("sdk") or "gradio")
    return UploadPlan(
        repo_id=repo_id, repo_type="space", folder=folder, files=folder_files(folder),
        ignore_patterns=list(IGNORE_PATTERNS), space_sdk=sdk, notes=list(notes or []), keep_alive=keep_alive,
    )
