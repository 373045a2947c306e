"""``evaluate.load("valse_metric")`` by its bare name, offline, once registered: evaluate 0.4.6, when the Hub cannot
answer, loads the most recently modified copy in its module cache, where :func:`register_metric` puts the shipped
metric, laid out as evaluate lays out a module it downloaded."""

from __future__ import annotations

import ast
import contextlib
import hashlib
import os
import re
from pathlib import Path

from .storage.locations import shipped

MODULE_NAME = "valse_metric"
# evaluate's cache folder for a canonical module it could not reach: "evaluate-metric--<name>".
CACHE_NAME = f"evaluate-metric--{MODULE_NAME}"


def metric_file() -> Path:
    """The metric this package ships (``vlprobe/_bundled/metric/`` installed, ``metric/`` in a clone)."""
    folder = shipped("metric")
    if folder is None or not (folder / f"{MODULE_NAME}.py").is_file():
        raise ImportError(f"vlprobe: the metric {MODULE_NAME}.py is missing: neither this installed package "
                          f"(vlprobe/_bundled/metric/) nor a clone around it (metric/) has it; reinstall vlprobe")
    return folder / f"{MODULE_NAME}.py"


def declared_names(name: str) -> tuple[str, ...]:
    """A tuple of names the shipped metric declares at its top level (``TIE_POLICIES``), read from its source without
    running it (that imports evaluate and datasets): the metric holds the one list and imports nothing of vlprobe."""
    source = metric_file()
    found = re.search(rf"^{re.escape(name)} = (\([^)]*\))", source.read_text(encoding="utf-8"), re.M)
    value = ast.literal_eval(found.group(1)) if found else None
    if not (isinstance(value, tuple) and all(isinstance(v, str) for v in value)):
        raise ImportError(f"vlprobe: the metric {MODULE_NAME}.py declares no tuple of names {name} (at {source}); "
                          f"reinstall vlprobe")
    return value


def modules_home() -> Path:
    """evaluate's dynamic-modules folder, computed as ``evaluate.config`` does (without importing evaluate)."""
    home = os.environ.get("HF_HOME", os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "huggingface"))
    modules = os.environ.get("HF_MODULES_CACHE") or os.path.join(home, "modules")
    return Path(modules).expanduser() / "evaluate_modules"


def registered_path(source: Path | None = None) -> Path:
    """Where the shipped metric is registered: its own folder, named by the sha256 of its bytes."""
    source = source or metric_file()
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    return modules_home() / "metrics" / CACHE_NAME / digest / f"{MODULE_NAME}.py"


def _is_current(target: Path, data: bytes) -> bool:
    """The registered copy is there, intact, and the most recently modified one (the one evaluate picks)."""
    try:
        if target.stat().st_size != len(data) or target.read_bytes() != data:
            return False
        mine = target.stat().st_mtime
        others = target.parent.parent.glob(f"*/{MODULE_NAME}.py")
        return all(p.stat().st_mtime <= mine for p in others if p != target)
    except OSError:
        return False


def register_metric() -> Path:
    """Register the shipped metric for ``evaluate.load("valse_metric")`` offline (nothing written when it is); returns
    the registered file."""
    source = metric_file()
    target = registered_path(source)
    data = source.read_bytes()
    if _is_current(target, data):
        return target
    home = modules_home()
    try:
        for folder in (home, home / "metrics", target.parent.parent, target.parent):
            folder.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(FileExistsError):  # as evaluate lays a module out: a package at every level
                (folder / "__init__.py").touch(exist_ok=False)
        if not (target.is_file() and target.read_bytes() == data):
            tmp = target.with_name(f".{target.name}.tmp{os.getpid()}")
            tmp.write_bytes(data)
            os.replace(tmp, target)
        os.utime(target)  # the most recent copy is the one evaluate loads
    except OSError as err:
        raise OSError(f"cannot register {MODULE_NAME} in evaluate's module cache {home} ({err}): set "
                      f"HF_MODULES_CACHE to a writable folder, or load the metric by path: vlprobe.metric.load()"
                      ) from None
    return target
