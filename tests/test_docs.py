"""Every fenced ``bash`` and ``python`` block of README.md and docs/*.md runs as written (issue 38.5), so the docs
cannot drift from the code.

The blocks run in order, offline, in one fresh working folder: a copy of the repository's files (what a clone has)
with ``.venv`` linked to this interpreter's environment, so ``vlprobe``, ``.venv/bin/python`` and the clone's
relative paths (``models/mini-clip``, ``examples/shapes``) mean what the docs say. They share that folder and one
score cache, as a reader following the docs would: the synthetic instruments are built once, by docs/datasets.md's
own block, before the others. A block is left out only where the line before it says why, in the markdown itself::

    <!-- docs-test: skip (needs network: ...) -->

and :func:`test_every_skip_says_why` keeps that list short and reasoned."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers_data import source_tree

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
PAGES = ["README.md", *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md"))]
LANGS = {"bash": "bash", "sh": "bash", "shell": "bash", "python": "python"}
SKIP = re.compile(r"<!--\s*docs-test:\s*skip\s*\((?P<reason>[^)]*(?:\([^)]*\)[^)]*)*)\)\s*-->")
FENCE = re.compile(r"^```(?P<lang>[\w-]*)[ \t]*\n(?P<code>.*?)^```[ \t]*$", re.S | re.M)
# What the other blocks need first, in the docs' own flow (docs/datasets.md: "Synthetic instruments").
SETUP = "vlprobe build travlr "


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    lang: str
    code: str
    skip: str | None  # the reason given in the markdown, or None: the block runs

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"


def doc_blocks() -> list[Block]:
    out = []
    for page in PAGES:
        text = (REPO / page).read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            lang = LANGS.get(m.group("lang"))
            if lang is None:
                continue  # diagrams and file trees (no language), YAML
            before = text[:m.start()].rstrip().splitlines()
            marker = SKIP.fullmatch(before[-1].strip()) if before else None
            out.append(Block(page, text[:m.start()].count("\n") + 1, lang, m.group("code"),
                             marker.group("reason").strip() if marker else None))
    return out


def is_setup(block: Block) -> bool:
    return block.skip is None and block.code.startswith(SETUP)


BLOCKS = doc_blocks()
# The build block first (it is the setup of the rest), then every page in order.
ORDERED = sorted(BLOCKS, key=lambda b: 0 if is_setup(b) else 1)


def test_the_blocks_are_found_and_every_skip_says_why():
    assert len(BLOCKS) >= 15 and {b.lang for b in BLOCKS} == {"bash", "python"}
    assert sum(is_setup(b) for b in BLOCKS) == 1
    for b in BLOCKS:
        if b.skip is not None:
            assert len(b.skip) >= 15, f"{b.name}: say why the block cannot run here"
    # The list stays short: network, real images, the full suite, servers, excerpts of modules.
    assert sum(b.skip is not None for b in BLOCKS) <= 14
    # Every marker in the docs sits right before a block (none left dangling).
    for page in PAGES:
        text = (REPO / page).read_text(encoding="utf-8")
        markers = len(re.findall(r"^\s*<!--\s*docs-test:", text, flags=re.M))  # a line of its own (prose may quote one)
        assert markers == sum(b.skip is not None for b in BLOCKS if b.page == page), page


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> tuple[Path, dict]:
    work = source_tree(REPO, tmp_path_factory.mktemp("docs") / "vlprobe")
    (work / ".venv").symlink_to(Path(sys.prefix))  # `make setup`'s environment: this one
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               VLPROBE_CACHE=str(work.parent / "cache"), HF_MODULES_CACHE=str(work.parent / "modules"),
               MPLBACKEND="Agg", OMP_NUM_THREADS="1")
    for var in ("PYTHONPATH", "VLPROBE_ROOT", "VLPROBE_SHARED_DATA"):
        env.pop(var, None)
    return work, env


_FAILED: dict[str, str] = {}


# A block's own budget: the build of the synthetic instruments and README's Python API block (a 3-seed probe) took
# 387 s and 542 s on the 2-core machine at load ~7, and scale with the load (docs/development.md); a block that hangs
# fails at the subprocess's limit below, naming the block, before this one.
@pytest.mark.timeout(2400)
@pytest.mark.parametrize("block", ORDERED, ids=[b.name for b in ORDERED])
def test_the_block_runs_as_written(block, workdir):
    if block.skip is not None:
        pytest.skip(block.skip)
    if "setup" in _FAILED and not is_setup(block):
        pytest.skip(f"the build block ({_FAILED['setup']}) failed")
    work, env = workdir
    args = ["bash", "-euo", "pipefail", "-c", block.code] if block.lang == "bash" else [sys.executable, "-c", block.code]
    proc = subprocess.run(args, cwd=work, env=env, capture_output=True, text=True, timeout=2100)
    if proc.returncode != 0 and is_setup(block):
        _FAILED["setup"] = block.name
    assert proc.returncode == 0, (f"{block.name} ({block.lang}) failed with {proc.returncode}:\n{block.code}\n"
                                  f"--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}")
