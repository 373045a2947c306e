"""Benchmarks, builders and scorer families from outside vlprobe (docs/adding-a-benchmark.md): the entry points
:data:`BENCHMARK_GROUP` and :data:`SCORER_GROUP`, and the ``*.py`` of the include folders. The registries read them
when first asked, each module once per process."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

from .errors import VlprobeError

BENCHMARK_GROUP = "vlprobe.benchmarks"
SCORER_GROUP = "vlprobe.scorers"
INCLUDE_VAR = "VLPROBE_INCLUDE_PATH"
_PACKAGE = "vlprobe_include"  # the include folders' modules are imported as vlprobe_include.<stem>


class PluginError(VlprobeError):
    """A plugin (an entry point or an include folder's module) that cannot be loaded, or that clashes."""


# {entry point group, or INCLUDE_VAR: [(where it came from, the module)]}; the folders added by include_path()
_LOADED: dict[str, list[tuple[str, ModuleType]]] = {}
_FOLDERS: list[Path] = []


def _reread_folders() -> None:
    _LOADED.pop(INCLUDE_VAR, None)
    registry = sys.modules.get("vlprobe.benchmarks.base")  # (not imported: the registry imports this module)
    if registry is not None:
        registry._REGISTRY.clear()


def include_path(folder: str | os.PathLike[str]) -> list[str]:
    """Load every ``*.py`` of ``folder`` as a plugin, as ``VLPROBE_INCLUDE_PATH`` does; returns the modules' names."""
    path = Path(folder).expanduser().resolve()
    if not path.is_dir():
        raise PluginError(f"include path {folder}: not a folder")
    if path not in _FOLDERS:
        _FOLDERS.append(path)
    _reread_folders()
    return [m.__name__ for where, m in _include_modules() if Path(where).parent == path]


def include_option(folders: list[str]) -> None:
    """``--include-path DIR``: put in ``VLPROBE_INCLUDE_PATH``, so that any process the command starts reads them."""
    for folder in folders:
        if not Path(folder).expanduser().is_dir():
            raise PluginError(f"--include-path {folder}: not a folder")
    old = [p for p in os.environ.get(INCLUDE_VAR, "").split(os.pathsep) if p.strip()]
    os.environ[INCLUDE_VAR] = os.pathsep.join([str(Path(f).expanduser().resolve()) for f in folders] + old)
    _reread_folders()
    scorers = sys.modules.get("vlprobe.scorers.base")
    if scorers is not None and scorers._DISCOVERED:  # families already read in this process (a second main() call)
        load_scorers()


def _folders() -> list[Path]:
    out = [Path(p).expanduser().resolve() for p in os.environ.get(INCLUDE_VAR, "").split(os.pathsep) if p.strip()]
    for folder in out:
        if not folder.is_dir():
            raise PluginError(f"{INCLUDE_VAR}: {folder} is not a folder")
    return list(dict.fromkeys(out + _FOLDERS))


def _include_modules() -> list[tuple[str, ModuleType]]:
    if INCLUDE_VAR not in _LOADED:
        _LOADED[INCLUDE_VAR] = [(str(file), _import_file(file)) for folder in _folders()
                                for file in sorted(folder.glob("*.py")) if not file.name.startswith("_")]
    return _LOADED[INCLUDE_VAR]


def import_file(name: str, file: Path) -> ModuleType:
    """``file`` imported as module ``name``, once (the module of that name from that file is reused)."""
    if name in sys.modules and getattr(sys.modules[name], "__file__", None) == str(file):
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None  # a .py file always has a spec and a loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # before running it, as an import does (dataclasses look it up)
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _import_file(file: Path) -> ModuleType:
    if _PACKAGE not in sys.modules:
        package = ModuleType(_PACKAGE)
        package.__path__ = []  # a namespace of the include folders' modules
        sys.modules[_PACKAGE] = package
    try:
        return import_file(f"{_PACKAGE}.{file.stem}", file)
    except Exception as err:
        raise PluginError(f"plugin {file} (from {INCLUDE_VAR} or vlprobe.plugins.include_path) failed to import: "
                          f"{type(err).__name__}: {err}") from err


def _entry_point_modules(group: str) -> list[tuple[str, Any]]:
    if group not in _LOADED:
        found = []
        for ep in sorted(metadata.entry_points(group=group), key=lambda e: e.name):
            where = f"entry point {ep.name} = {ep.value} ({group}" + (
                f", package {ep.dist.name} {ep.dist.version})" if getattr(ep, "dist", None) else ")")
            try:
                found.append((where, ep.load()))
            except Exception as err:
                raise PluginError(f"plugin {where} failed to import: {type(err).__name__}: {err}") from err
        _LOADED[group] = found
    return _LOADED[group]


def _benchmark_modules() -> list[tuple[str, Any]]:
    return _entry_point_modules(BENCHMARK_GROUP) + _include_modules()


def benchmarks(known: dict[str, Any], kind: type) -> dict[str, Any]:
    """The plugins' benchmarks (``kind``: :class:`vlprobe.benchmarks.Benchmark`) by name; ``known``: vlprobe's own."""
    out: dict[str, Any] = {}
    for where, obj in _benchmark_modules():
        bench = obj if isinstance(obj, kind) else getattr(obj, "BENCHMARK", None)
        if bench is None:
            if isinstance(obj, ModuleType) and (obj.__name__.startswith(_PACKAGE + ".")):
                continue  # an include folder's module that only registers families or a builder
            raise PluginError(f"plugin {where}: defines no BENCHMARK (a vlprobe.benchmarks.Benchmark)")
        if not isinstance(bench, kind):
            raise PluginError(f"plugin {where}: BENCHMARK is a {type(bench).__name__}, not a vlprobe.benchmarks.Benchmark")
        if bench.name in known or (bench.name in out and out[bench.name] is not bench):
            raise PluginError(f"plugin {where}: benchmark {bench.name!r} is defined already; give it another name")
        out[bench.name] = bench
    return out


def builders(known: dict[str, Any], found_in: Callable[[ModuleType], dict[str, Any]]) -> dict[str, Any]:
    """The plugins' builders by name (``found_in``: :func:`vlprobe.builders.builders_in`); ``known``: vlprobe's own."""
    out: dict[str, Any] = {}
    for where, obj in _benchmark_modules():
        for name, builder in found_in(obj).items() if isinstance(obj, ModuleType) else ():
            if name in known or name in out:
                raise PluginError(f"plugin {where}: `vlprobe build {name}` is defined already; give the builder "
                                  "another name")
            out[name] = builder
    return out


def load_scorers() -> None:
    """Import the plugins that register scorer families (their ``@register`` runs on import)."""
    _entry_point_modules(SCORER_GROUP)
    _include_modules()
