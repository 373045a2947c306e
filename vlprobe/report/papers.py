"""The seed papers' published numbers (``vlprobe/data/paper_results.csv``) and which of their
tables a report compares with."""

from __future__ import annotations

import csv
from importlib import resources
from typing import Any

from .. import summary as summary_rules

# The published tables the report compares with, per benchmark (the CSV holds more).
SUGAR_CREPE_GPT4V = "gpt-4v-results/readme.md"  # the upstream file holding the only text figures
PAPER_TABLES = {"valse": ("Table 2",), "winoground": ("Table 3",), "bla": ("Thesis Table 6.3", "Thesis Table 6.2"),
                "sugar_crepe": (SUGAR_CREPE_GPT4V,)}

# Where a table's figures come from, as the report's "source" column says it (default: "paper, <table>").
SOURCE_LABELS = {("sugar_crepe", SUGAR_CREPE_GPT4V): "upstream README, gpt-4v-results/readme.md"}


def source_label(benchmark: str, table: str) -> str:
    return SOURCE_LABELS.get((benchmark, table), f"paper, {table}")


# A dataset's config name -> the CSV's config name, where they differ (one rule: vlprobe.summary).
CONFIG_ALIASES = summary_rules.PAPER_CONFIG


PAPER_NOTES = {
    "valse": "VALSE (Parcalabescu et al., ACL 2022), Table 2.",
    "winoground": "Winoground (Thrush et al., CVPR 2022), Table 3, all 400 items.",
    "bla": (
        "BLA (Chen, MSc thesis 2022), Table 6.3 (models) and Table 6.2 (human experts, on a small subset). "
        "Measured on the thesis version of the data (613 / 800 / 789 "
        "caption sets), not on the 2023 release (613 / 654 / 672) that vlprobe's bla folder holds: not directly "
        "comparable."
    ),
    "sugar_crepe": (
        "SugarCREPE (Hsieh et al., NeurIPS 2023): the paper's and the upstream README's model tables are images; the "
        "only figures upstream gives as text are GPT-4V's, in RAIVNLab/sugar-crepe's gpt-4v-results/readme.md: a "
        "prompted choice ('Which caption best describes the image? (1) ... (2) ... Output (1) or (2).'), the positive "
        "caption first or the negative first, not a similarity score. Its swap_obj counts 246 items; the pinned file "
        "vlprobe builds from has 245 (item 108 removed upstream)."
    ),
}


def paper_results() -> list[dict[str, Any]]:
    """The rows of ``vlprobe/data/paper_results.csv``, values as floats (percent)."""
    text = resources.files("vlprobe").joinpath("data/paper_results.csv").read_text(encoding="utf-8")
    rows = list(csv.DictReader(text.splitlines()))
    for r in rows:
        r["value"] = float(r["value"])
    return rows
