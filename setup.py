"""The package layout pyproject.toml cannot say: the folders vlprobe ships that live, committed
once, at the repository root (the metric Space, the demo Space, the small offline model) are
mapped into the installed package as ``vlprobe/_bundled/<folder>`` (see vlprobe/locations.py).
Everything else about the project is in pyproject.toml."""

from setuptools import find_packages, setup

BUNDLED = {
    "vlprobe._bundled.metric": "metric",
    "vlprobe._bundled.space": "space",
    "vlprobe._bundled.models": "models",
}

setup(
    # vlprobe_train: the mini CLIP trainer, a package of its own beside vlprobe (as open_clip_train)
    packages=find_packages(include=["vlprobe", "vlprobe.*", "vlprobe_train"]) + list(BUNDLED),
    package_dir=BUNDLED,
)
