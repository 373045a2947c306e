"""The code blocks of the pages test_docs.py does not run: docs/datasets.md's build of the synthetic instruments
first (the setup of the rest), then adding-a-benchmark.md, datasets.md, probe.md, ..., as written, in order, in one
fresh copy of the clone (tests/helpers_docs.py)."""

from __future__ import annotations

import pytest
from helpers_docs import params

pytestmark = pytest.mark.slow
DOCS_GROUP = "pages"


@pytest.mark.parametrize("block", params(DOCS_GROUP))
def test_the_block_runs_as_written(block, docs_runner):
    docs_runner.run(block)
