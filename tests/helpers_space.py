"""The Space's app (space/app.py) loaded as `python app.py` runs it, as a module of its own, and served for a browser."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType


def load_space(repo_root: Path, name: str) -> ModuleType:
    """space/app.py run as the module ``name`` (each test file its own, so its settings are read afresh)."""
    spec = importlib.util.spec_from_file_location(name, repo_root / "space" / "app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextmanager
def served(module: ModuleType) -> Iterator[str]:
    """The app's page served on 127.0.0.1 with its own launch settings (theme, CSS, head, upload cap): its URL."""
    _, url, _ = module.demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True, **module.LAUNCH)
    try:
        yield url
    finally:
        module.demo.close()
