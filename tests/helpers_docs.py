"""The docs' code blocks, found and run as tests/test_docs.py and test_docs_pages.py run them (issue 38.5: every
fenced ``bash`` and ``python`` block of README.md and docs/*.md runs as written, so the docs cannot drift from the
code).

The pages are run in groups, one test file each, so that ``pytest -n 2 --dist loadfile`` runs the groups on both
workers (GROUPS): within a group the blocks run in order, offline, in one fresh working folder, a copy of the
repository's files (what a clone has) with ``.venv`` linked to this interpreter's environment, so ``vlprobe``,
``.venv/bin/python`` and the clone's relative paths (``models/mini-clip``, ``examples/shapes``) mean what the docs say.
A group's blocks share that folder and one score cache, as a reader following its pages would. The synthetic
instruments are built once per group before its blocks, by the lines of docs/datasets.md's own build block that the
group's pages need (the group holding docs/datasets.md runs that block whole, as its first test).

A block is left out only where the line before it says why, in the markdown itself::

    <!-- docs-test: skip (needs network: ...) -->

and a block that takes minutes says so on that line, which gives it a longer budget than the others::

    <!-- docs-test: slow (the whole protocol: ...) -->"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers_data import source_tree

REPO = Path(__file__).resolve().parents[1]
PAGES = ["README.md", *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md"))]
LANGS = {"bash": "bash", "sh": "bash", "shell": "bash", "python": "python"}
_REASON = r"\((?P<reason>[^)]*(?:\([^)]*\)[^)]*)*)\)"
MARKER = re.compile(r"<!--\s*docs-test:\s*(?P<kind>skip|slow)\s*" + _REASON + r"\s*-->")
FENCE = re.compile(r"^```(?P<lang>[\w-]*)[ \t]*\n(?P<code>.*?)^```[ \t]*$", re.S | re.M)
# What the other blocks need first, in the docs' own flow (docs/datasets.md: "Synthetic instruments").
SETUP = "vlprobe build travlr "
# Each group's pages, in the order they run; "pages" takes every page no other group names (a new page included).
# The Python API of README.md and the pages that read its runs (report.md reads runs/api and models.md's runs/quick)
# go together; docs/datasets.md (the build block), probe.md (the probe, on the travlr build) and the rest in the other.
GROUPS = {
    "readme": ["README.md", "docs/metric.md", "docs/models.md", "docs/report.md"],
    "pages": [],
}
# What a group without the build block needs built (the lines of that block that build it).
NEEDS = {"readme": ("winoground_style",)}
# A block's budget (the subprocess's limit); a block marked slow gets the longer one. Measured on the 2-core machine
# (docs/development.md): the longest ordinary block about 100 s of CPU, the slow probe block and the build block a few
# minutes, times the load.
BUDGET, SLOW_BUDGET = 900, 2100


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    lang: str
    code: str
    skip: str | None  # the reason given in the markdown, or None: the block runs
    slow: str | None = None  # the reason it takes minutes, or None

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def budget(self) -> int:
        return SLOW_BUDGET if self.slow is not None or is_setup(self) else BUDGET


def doc_blocks(pages: list[str] = PAGES) -> list[Block]:
    out = []
    for page in pages:
        text = (REPO / page).read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            lang = LANGS.get(m.group("lang"))
            if lang is None:
                continue  # diagrams and file trees (no language), YAML
            before = text[:m.start()].rstrip().splitlines()
            marker = MARKER.fullmatch(before[-1].strip()) if before else None
            kind, reason = (marker.group("kind"), marker.group("reason").strip()) if marker else (None, None)
            out.append(Block(page, text[:m.start()].count("\n") + 1, lang, m.group("code"),
                             reason if kind == "skip" else None, reason if kind == "slow" else None))
    return out


def is_setup(block: Block) -> bool:
    return block.skip is None and block.code.startswith(SETUP)


def group_pages(group: str) -> list[str]:
    named = {p for pages in GROUPS.values() for p in pages}
    return GROUPS[group] or [p for p in PAGES if p not in named]


def group_blocks(group: str) -> list[Block]:
    """The group's blocks in the order they run: the build block first (where the group has it), then page by page."""
    blocks = doc_blocks(group_pages(group))
    return sorted(blocks, key=lambda b: 0 if is_setup(b) else 1)


def params(group: str) -> list:
    """``group_blocks`` as pytest parameters, each with its budget as its timeout (its subprocess's limit, plus the
    time to say so)."""
    return [pytest.param(b, id=b.name, marks=pytest.mark.timeout(b.budget + 300)) for b in group_blocks(group)]


def build_lines(names: tuple[str, ...]) -> str:
    """The lines of the build block that build ``names`` (``vlprobe build <name> ...``), as written."""
    (setup,) = [b for b in doc_blocks() if is_setup(b)]
    lines = [line for line in setup.code.splitlines() if re.match(r"vlprobe build (\w+)", line)
             and re.match(r"vlprobe build (\w+)", line).group(1) in names]
    assert {re.match(r"vlprobe build (\w+)", line).group(1) for line in lines} == set(names), setup.code
    return "\n".join(lines) + "\n"


def workdir(tmp_path_factory, group: str) -> tuple[Path, dict]:
    """A fresh copy of the clone for ``group``, its own score cache beside it; built there: what the group needs,
    unless the group runs the build block itself."""
    work = source_tree(REPO, tmp_path_factory.mktemp(f"docs_{group}") / "vlprobe")
    (work / ".venv").symlink_to(Path(sys.prefix))  # `make setup`'s environment: this one
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               VLPROBE_CACHE=str(work.parent / "cache"), HF_MODULES_CACHE=str(work.parent / "modules"),
               MPLBACKEND="Agg", OMP_NUM_THREADS="1")
    for var in ("PYTHONPATH", "VLPROBE_ROOT", "VLPROBE_SHARED_DATA"):
        env.pop(var, None)
    if not any(is_setup(b) for b in group_blocks(group)):
        code = build_lines(NEEDS[group])
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=work, env=env, capture_output=True,
                              text=True, timeout=SLOW_BUDGET)
        assert proc.returncode == 0, f"the build for {group}:\n{code}\n{proc.stderr[-3000:]}"
    return work, env


class Runner:
    """Runs a group's blocks in order in its working folder; after a failed build block the others skip."""

    def __init__(self, work: Path, env: dict):
        self.work, self.env = work, env
        self.failed_setup: str | None = None

    def run(self, block: Block) -> None:
        if block.skip is not None:
            pytest.skip(block.skip)
        if self.failed_setup and not is_setup(block):
            pytest.skip(f"the build block ({self.failed_setup}) failed")
        args = (["bash", "-euo", "pipefail", "-c", block.code] if block.lang == "bash"
                else [sys.executable, "-c", block.code])
        proc = subprocess.run(args, cwd=self.work, env=self.env, capture_output=True, text=True, timeout=block.budget)
        if proc.returncode != 0 and is_setup(block):
            self.failed_setup = block.name
        assert proc.returncode == 0, (f"{block.name} ({block.lang}) failed with {proc.returncode}:\n{block.code}\n"
                                      f"--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}")
