"""README.md's code blocks and the pages that read the runs they write (metric.md, models.md, report.md), run as
written, in order, in one fresh copy of the clone where `vlprobe build winoground_style` has run
(tests/helpers_docs.py)."""

from __future__ import annotations

import pytest
from helpers_docs import params

pytestmark = pytest.mark.slow
DOCS_GROUP = "api"


@pytest.mark.parametrize("block", params(DOCS_GROUP))
def test_the_block_runs_as_written(block, docs_runner):
    docs_runner.run(block)
