"""Installs into a fresh environment, for the tests of a pip install (test_install.py) and of plugin packages
(test_plugins.py). The environment costs no download: a venv without pip whose only dependency path is a .pth line
naming this interpreter's site-packages (torch, datasets, ... already installed there); its own site-packages comes
first, so the vlprobe imported is the one installed into it, never the checkout (PYTHONPATH is cleared)."""

from __future__ import annotations

import os
import site
import subprocess
import sys
from pathlib import Path


def pip(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("PYTHONPATH", None)
    return subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True, timeout=600, env=env)


def dependency_paths() -> list[str]:
    """The folders this interpreter imports installed packages from: its site-packages and what their .pth files
    add (a venv whose packages come from another's, as a worktree's may), less the checkout. Read from the
    site-packages, not sys.path: evaluate, datasets and transformers append their module cache to sys.path when
    they load a module, and one put before the fresh venv's own would shadow its registered metric."""
    repo = Path(__file__).resolve().parents[1]
    out = []
    for site_dir in map(Path, site.getsitepackages()):
        out.append(site_dir)
        for pth in sorted(site_dir.glob("*.pth")):
            lines = pth.read_text(encoding="utf-8", errors="replace").splitlines()
            added = [(site_dir / line.strip()).resolve() for line in lines
                     if line.strip() and not line.startswith(("#", "import ", "import\t"))]
            out += [p for p in added if p != repo and repo not in p.parents]  # not an editable install's clone
    return list(dict.fromkeys(str(p) for p in out if p.is_dir()))


def fresh_venv(where: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120)
    python = where / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True, env={"PATH": os.environ.get("PATH", "")}
                             ).stdout.strip()
    (Path(purelib) / "vlprobe_test_deps.pth").write_text("\n".join(dependency_paths()) + "\n")
    return python


def offline_env(home: Path) -> dict:
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               HF_EVALUATE_OFFLINE="1", VLPROBE_CACHE=str(home / "cache"), HF_MODULES_CACHE=str(home / "modules"),
               HF_DATASETS_CACHE=str(home / "hf-datasets"), OMP_NUM_THREADS="1", MPLBACKEND="Agg")
    for var in ("PYTHONPATH", "VLPROBE_ROOT", "VLPROBE_SHARED_DATA"):
        env.pop(var, None)
    return env
