"""The shared build flow (vlprobe/builders/flow.py), on what every paper builder gets from it: --dry-run
(counts per config and the image files needed, nothing written, no image fetched) and --configs on a
builder that reads every file (SugarCREPE's real files, ../shared), and the rule "the first N rows of a
unit whose images can be had" (Annotations.first: VL-CheckList's MAX_NUM) worked on hand-made rows.
CREPE's and VL-CheckList's partial builds are in their own test files."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from vlprobe.benchmarks import get as get_benchmark
from vlprobe.builders import sugar_crepe
from vlprobe.builders.flow import Annotations, Image, Row
from vlprobe.dataset import image_sources as imgs


def test_dry_run_of_a_builder_that_reads_every_file(shared_data: Path, tmp_path: Path, cli) -> None:
    counts = get_benchmark("sugar_crepe").counts
    listing = tmp_path / "list.tsv"
    code, out, err = cli("build", "sugar_crepe", "--annotations", str(shared_data / "sugar_crepe"), "--dry-run",
                         "--image-list", str(listing), "--out", str(tmp_path / "sc"))
    assert code == 0, err
    assert not (tmp_path / "sc").exists() and "dry run, nothing built" in out and "no image is looked at" in out
    for config, n in counts.items():
        assert f"| `{config}` | {n:,} | {n:,} |" in out
    lines = listing.read_text().splitlines()
    names = {r.images[0].file for c in counts for r in sugar_crepe.SugarCrepe().read_leaf(shared_data / "sugar_crepe", c)}
    assert lines[0] == "source\tfile\trows\tfound" and {line.split("\t")[1] for line in lines[1:]} == names
    assert sum(int(line.split("\t")[2]) for line in lines[1:]) == sum(counts.values())
    # --configs keeps the configs asked for (the files are still all read and verified)
    code, out, err = cli("build", "sugar_crepe", "--annotations", str(shared_data / "sugar_crepe"), "--dry-run",
                         "--configs", "swap_obj", "--image-list", "-", "--out", str(tmp_path / "sc"))
    assert code == 0, err
    assert f"Rows in this build: **{counts['swap_obj']:,}**" in out and "| `swap_att` | 0 |" in out
    # told where the images are, a dry run looks them up there (and fetches nothing)
    images = tmp_path / "val2017"
    images.mkdir()
    first = sorted(names)[0]
    (images / first).write_bytes(b"x")
    code, out, err = cli("build", "sugar_crepe", "--annotations", str(shared_data / "sugar_crepe"), "--dry-run",
                         "--image-dir", f"coco2017_val={images}", "--image-list", str(listing), "--out", str(tmp_path / "sc"))
    assert code == 0, err
    assert f"Of these, 1 are where --images / --image-dir say and {len(names) - 1:,} are not" in out
    found = {line.split("\t")[1]: line.split("\t")[3] for line in listing.read_text().splitlines()[1:]}
    assert found[first] == "yes" and set(found.values()) == {"yes", "no"}


class _Resolver:
    """Stands in for an ImageResolver: the files it has, and every name it was asked for."""

    def __init__(self, have: set[str]):
        self.have, self.asked = have, []

    def missing(self, names, workers=8):
        names = list(names)
        self.asked += names
        return [n for n in names if n not in self.have]

    def describe(self):
        return ["here"]


def _unit_rows(unit: str, n: int) -> list[Row]:
    return [Row(f"{unit}/{i}", {}, (Image("image", "src", f"{unit}{i}.jpg"),), unit=unit) for i in range(n)]


def _take(have: set[str], first: int | None, skip: bool, refill: bool = True):
    builder = sugar_crepe.SugarCrepe()  # any builder on the flow
    annotations = Annotations({"leaf": {"test": _unit_rows("a", 6) + _unit_rows("b", 2)}}, first=first)
    resolver = _Resolver(have)
    args = argparse.Namespace(workers=1, skip_missing_images=skip, dry_run=not refill)
    report, skipped = builder._take_rows(annotations, {"src": resolver}, args, refill=refill)
    return [r.id for r in annotations.rows["leaf"]["test"]], skipped, resolver.asked, report


def test_the_first_rows_of_each_unit_whose_images_can_be_had() -> None:
    every = {f"a{i}.jpg" for i in range(6)} | {"b0.jpg", "b1.jpg"}
    kept, skipped, asked, _ = _take(every, 3, skip=False)
    assert kept == ["a/0", "a/1", "a/2", "b/0", "b/1"] and not skipped
    assert sorted(asked) == ["a0.jpg", "a1.jpg", "a2.jpg", "b0.jpg", "b1.jpg"]  # nothing past the first 3 looked up
    # a missing image stops the build ...
    with pytest.raises(imgs.MissingImagesError, match="1 image file"):
        _take(every - {"a1.jpg"}, 3, skip=False)
    # ... or, with --skip-missing-images, its row is left out and the unit's next row taken, as a loader
    # that skips a record without its image before it counts
    kept, skipped, asked, report = _take(every - {"a1.jpg", "a3.jpg"}, 3, skip=True)
    assert kept == ["a/0", "a/2", "a/4", "b/0", "b/1"] and "a5.jpg" not in asked  # a/5: past the first 3 found
    assert skipped == {"leaf": ["a/1 (a1.jpg)", "a/3 (a3.jpg)"]} and report.total == 2
    assert asked.count("a1.jpg") == 1  # each file looked up once
    # without a cap every row is looked at, as before
    kept, skipped, asked, _ = _take(every - {"a1.jpg"}, None, skip=True)
    assert kept == ["a/0", "a/2", "a/3", "a/4", "a/5", "b/0", "b/1"] and sorted(asked) == sorted(every)
    # a dry run keeps each unit's first N and only reports what is missing
    kept, skipped, _, report = _take(every - {"a1.jpg"}, 3, skip=False, refill=False)
    assert kept == ["a/0", "a/1", "a/2", "b/0", "b/1"] and not skipped and report.missing == {"src": ["a1.jpg"]}
