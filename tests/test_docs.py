"""Every fenced ``bash`` and ``python`` block of README.md and docs/*.md runs as written (issue 38.5), so the docs
cannot drift from the code. Here: every block is found, belongs to one group of pages, and every block left out says
why; then the blocks of README.md and of the pages that read the runs they write (metric.md, models.md, report.md),
in order, in one fresh copy of the clone where `vlprobe build winoground_style` has run. The other pages' blocks run
in test_docs_pages.py, so that the two groups run side by side under ``pytest -n 2 --dist loadfile``
(tests/helpers_docs.py)."""

from __future__ import annotations

import re

import pytest
from helpers_docs import GROUPS, MARKER, PAGES, REPO, doc_blocks, group_blocks, group_pages, is_setup, params

BLOCKS = doc_blocks()
DOCS_GROUP = "readme"


def test_the_blocks_are_found_and_every_skip_says_why():
    assert len(BLOCKS) >= 15 and {b.lang for b in BLOCKS} == {"bash", "python"}
    assert sum(is_setup(b) for b in BLOCKS) == 1
    for b in BLOCKS:
        for reason in (b.skip, b.slow):
            assert reason is None or len(reason) >= 15, f"{b.name}: say why the block cannot run here, or takes minutes"
    # The list stays short: network, real images, the full suite, servers, excerpts of modules.
    assert sum(b.skip is not None for b in BLOCKS) <= 14
    # Every marker in the docs sits right before a block (none left dangling), and is one of the two kinds.
    for page in PAGES:
        text = (REPO / page).read_text(encoding="utf-8")
        markers = re.findall(r"^\s*<!--\s*docs-test:.*$", text, flags=re.M)  # a line of its own (prose may quote one)
        assert len(markers) == sum(b.skip is not None or b.slow is not None for b in BLOCKS if b.page == page), page
        assert all(MARKER.fullmatch(m.strip()) for m in markers), page


def test_every_page_runs_in_one_group_in_order():
    assert sorted(p for g in GROUPS for p in group_pages(g)) == sorted(PAGES)
    assert sorted(b.name for g in GROUPS for b in group_blocks(g)) == sorted(b.name for b in BLOCKS)
    for group in GROUPS:
        blocks = [b for b in group_blocks(group) if not is_setup(b)]
        assert blocks == sorted(blocks, key=lambda b: (group_pages(group).index(b.page), b.line))


@pytest.mark.slow
@pytest.mark.parametrize("block", params(DOCS_GROUP))
def test_the_block_runs_as_written(block, docs_runner):
    docs_runner.run(block)
