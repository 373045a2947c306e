"""The package layout pyproject.toml cannot say: the folders vlprobe ships that live, committed
once, at the repository root (the metric Space, the demo Space, the small offline model) are
mapped into the installed package as ``vlprobe/_bundled/<folder>`` (see vlprobe/storage/locations.py).
Everything else about the project is in pyproject.toml."""

from setuptools import find_namespace_packages, setup

BUNDLED = {
    "vlprobe._bundled.metric": "metric",
    "vlprobe._bundled.space": "space",
    "vlprobe._bundled.models": "models",
}

setup(
    # vlprobe_train: the mini CLIP trainer, a package of its own beside vlprobe (as open_clip_train). Folders of
    # data files (vlprobe/data, specs, templates) are listed as packages too, as setuptools asks: otherwise it
    # warns "Package would be ignored" for each of them.
    packages=find_namespace_packages(include=["vlprobe", "vlprobe.*", "vlprobe_train", "vlprobe_train.*"],
                                     exclude=["*.__pycache__"]) + list(BUNDLED),
    package_dir=BUNDLED,
)
