"""Helpers several test files share to make and read dataset folders: the synthetic two-config folder, a builder run
as its command runs it, and a built folder's config read back with ``datasets``. (Shared fixtures are in conftest.py;
small images and the other small helpers in helpers.py.)"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import datasets
from helpers import png

from vlprobe.builders import Builder
from vlprobe.dataset.folder import ConfigDecl, card_metadata, write_card, write_split

Cli = Callable[..., tuple[int, str, str]]  # the conftest fixture: cli(*argv) -> (exit code, stdout, stderr)


def folder_source(src: Path) -> Path:
    """A tiny `vlprobe build folder` source at ``src``: two images (red, blue) and rows.csv, an item on each."""
    (src / "images").mkdir(parents=True)
    (src / "images" / "red.png").write_bytes(png((200, 30, 30)))
    (src / "images" / "blue.png").write_bytes(png((30, 30, 200)))
    (src / "rows.csv").write_text("id,image,caption,foil\nr1,images/red.png,a red square,a blue square\n"
                                  "r2,images/blue.png,a blue square,a red square\n")
    return src


def build_folder(root: Path, n: int = 12, broken_row: int | None = None) -> Path:
    """``root/synthetic``, two configs: ``pairs`` (1 image, caption + foil, tagged; ``n`` rows) and ``swap``
    (2 images x 2 captions; ``n // 2`` rows). ``broken_row``: that pairs row's image is not an image."""
    folder = root / "synthetic"
    colors = [(20 * i % 256, 90, 200 - 10 * i % 256) for i in range(n)]
    img = datasets.Image()
    pairs_feats = datasets.Features({"id": datasets.Value("string"), "image": img, "caption": datasets.Value("string"),
                                     "foil": datasets.Value("string"), "kind": datasets.Value("string")})
    swap_feats = datasets.Features({"id": datasets.Value("string"), "image_0": img, "image_1": img,
                                    "caption_0": datasets.Value("string"), "caption_1": datasets.Value("string")})
    pairs = {
        "id": [f"p{i}" for i in range(n)],
        "image": [{"bytes": png(colors[i % 5]), "path": f"c{i % 5}.png"} for i in range(n)],
        "caption": [f"a shape number {i % 4}" for i in range(n)],
        "foil": [f"no shape number {i % 3}" for i in range(n)],
        "kind": ["even" if i % 2 == 0 else "odd" for i in range(n)],
    }
    if broken_row is not None:
        pairs["image"][broken_row] = {"bytes": b"this is not an image", "path": "broken_file.png"}
    swap = {
        "id": [f"s{i}" for i in range(n // 2)],
        "image_0": [{"bytes": png(colors[i]), "path": None} for i in range(n // 2)],
        "image_1": [{"bytes": png(colors[-1 - i]), "path": None} for i in range(n // 2)],
        "caption_0": [f"red left of blue {i}" for i in range(n // 2)],
        "caption_1": [f"blue left of red {i}" for i in range(n // 2)],
    }
    decls = [ConfigDecl("pairs", pairs_feats, default=True), ConfigDecl("swap", swap_feats)]
    write_card(folder, card_metadata(decls, license="cc0-1.0", pretty_name="synthetic"), "# synthetic\n\nFor tests.")
    write_split(folder, "pairs", "test", datasets.Dataset.from_dict(pairs, features=pairs_feats))
    write_split(folder, "swap", "test", datasets.Dataset.from_dict(swap, features=swap_feats))
    (folder / "vlprobe.yaml").write_text(
        "id: id\nimages: [image]\ntexts: [caption, foil]\ngold: [[1, 0]]\ntags: [kind]\n"
        "configs:\n  swap: {images: [image_0, image_1], texts: [caption_0, caption_1], gold: [[1, 0], [0, 1]], tags: []}\n"
    )
    return folder


def run_build(builder: Builder, *argv: object) -> Path | str:
    """Run a builder (a :class:`vlprobe.builders.Builder`: ``valse.Valse()``) as ``vlprobe build <name> ARGV...`` runs it."""
    parser = argparse.ArgumentParser()
    builder.add_arguments(parser)
    return builder.build(parser.parse_args([str(a) for a in argv]))


def build_from(builder: Builder, annotations: Path, images: Path, out: Path, *extra: object) -> Path | str:
    """``vlprobe build <name> --annotations A --images I --out O EXTRA...``."""
    return run_build(builder, "--annotations", annotations, "--images", images, "--out", out, *extra)


def dry_run(cli: Cli, name: str, annotations: Path, tmp_path: Path) -> tuple[str, str, Path]:
    """``vlprobe build NAME --annotations A --dry-run --image-list FILE`` (``cli``: the conftest fixture), checked to
    succeed and to build nothing: its stdout, its stderr and the image list it wrote."""
    listing, out = tmp_path / "images.tsv", tmp_path / name
    code, stdout, stderr = cli("build", name, "--annotations", annotations, "--dry-run", "--image-list", listing,
                               "--out", out)
    assert code == 0, stderr
    assert not out.exists()  # nothing built
    return stdout, stderr, listing


def refused_dry_run(cli: Cli, name: str, annotations: Path, tmp_path: Path, *argv: object) -> str:
    """``vlprobe build NAME --annotations A --dry-run ARGV...``, checked to be refused (exit 2, no traceback): its
    stderr."""
    code, _, err = cli("build", name, "--annotations", annotations, "--dry-run", "--out", tmp_path / "o", *argv)
    assert code == 2 and "Traceback" not in err, err
    return err


def tampered_copy(annotations: Path, path: str, old: bytes, new: bytes, dest: Path) -> Path:
    """``dest`` holding annotation file ``path`` of ``annotations`` with its first ``old`` changed to ``new``."""
    (dest / path).parent.mkdir(parents=True)
    (dest / path).write_bytes((annotations / path).read_bytes().replace(old, new, 1))
    return dest


def load(folder: Path, config: str, split: str = "test") -> datasets.Dataset:
    """One split of a built folder, read by ``datasets`` itself. datasets caches a local folder by its name and card,
    not by the parquet's content, and several test folders share a name and card: each folder's parent gets its
    own cache."""
    return datasets.load_dataset(str(folder), config, split=split, cache_dir=str(folder.parent / ".hf_cache"))


# what a clone would not hold, when the copy cannot ask git
_NOT_IN_A_CLONE = shutil.ignore_patterns(".git", ".venv*", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache",
                                         ".hypothesis", "runs", "data")


def source_tree(repo_root: Path, dest: Path) -> Path:
    """The files a clone has (tracked, plus new files git does not ignore), copied to ``dest``, so
    that building never writes build/ or *.egg-info into the checkout under test."""
    listed = None
    if shutil.which("git"):
        proc = subprocess.run(["git", "ls-files", "-z", "-c", "-o", "--exclude-standard"], cwd=repo_root,
                              capture_output=True, timeout=60)
        if proc.returncode == 0:
            listed = [p for p in proc.stdout.decode().split("\0") if p]
    if listed is None:
        shutil.copytree(repo_root, dest, symlinks=True, ignore=_NOT_IN_A_CLONE)
        return dest
    for rel in listed:
        src, out = repo_root / rel, dest / rel
        if not src.exists() and not src.is_symlink():
            continue  # deleted in the working tree, not yet committed
        out.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), out)
        else:
            shutil.copy2(src, out)
    return dest


def build_tiny(builder: Builder, out: Path, *argv: object) -> Path | str:
    """``vlprobe build <name> --out OUT --size tiny ARGV...`` (a synthetic generator's builder)."""
    return run_build(builder, "--out", out, "--size", "tiny", *argv)
