"""How ``vlprobe.evaluate`` reads rows: a chunked read leaves no page of the memory-mapped Arrow
file resident; the parquet -> Arrow conversion borrows a pool that gives its memory back, and puts
the default pool back."""

from __future__ import annotations

import sys

import datasets
import numpy as np
import pyarrow as pa
import pytest

from vlprobe.dataset_folder import (
    ConfigDecl,
    card_metadata,
    conversion_arrow_pool,
    load_folder_split,
    read_rows,
    release_mapped_pages,
    undecoded_features,
    write_card,
    write_split_rows,
)


# ---- reading rows ---------------------------------------------------------------------------------

def _arrow_rss_kb(paths) -> int:
    total, current = 0, None
    with open("/proc/self/smaps") as fh:
        for line in fh:
            parts = line.split()
            if len(parts) >= 5 and "-" in parts[0] and ":" in parts[3]:
                current = parts[5] if len(parts) > 5 else None
            elif parts and parts[0] == "Rss:" and current in paths:
                total += int(parts[1])
    return total


@pytest.fixture(scope="module")
def image_folder(tmp_path_factory):
    """600 rows of 4 KB incompressible "images" (bytes: read_rows does not decode them)."""
    folder = tmp_path_factory.mktemp("mapped") / "ds"
    feats = datasets.Features({"id": datasets.Value("string"), "image": datasets.Image(),
                               "caption": datasets.Value("string")})
    rng = np.random.default_rng(0)
    rows = ({"id": f"r{i}", "image": {"bytes": rng.bytes(4096), "path": None}, "caption": f"row {i}"}
            for i in range(600))
    write_card(folder, card_metadata([ConfigDecl("main", feats, default=True)], license="mit"), "# t")
    write_split_rows(folder, "main", "test", rows, feats, batch_size=50)
    return folder


def _plain_read(ds, start, stop):
    features = undecoded_features(ds.features)
    chunk = ds.with_format("arrow")[start:stop]
    batch = features.decode_batch(chunk.to_pydict())
    return [{c: batch[c][i] for c in batch} for i in range(chunk.num_rows)]


def test_read_rows_reads_what_a_slice_holds(image_folder):
    ds = load_folder_split(image_folder, "main", "test")
    for start, stop in ((0, 100), (100, 350), (590, 600)):
        assert read_rows(ds, start, stop) == _plain_read(ds, start, stop)
    picked = ds.select([5, 590, 17])
    assert read_rows(picked, 0, 3) == _plain_read(picked, 0, 3)
    renamed = ds.select_columns(["id", "image"]).rename_column("id", "key")
    assert read_rows(renamed, 10, 20) == _plain_read(renamed, 10, 20)
    in_memory = datasets.Dataset.from_dict({"a": [1, 2, 3]})
    assert read_rows(in_memory, 1, 3) == [{"a": 2}, {"a": 3}]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/smaps")
def test_read_rows_leaves_no_page_of_the_file_resident(image_folder):
    ds = load_folder_split(image_folder, "main", "test")
    paths = {f["filename"] for f in ds.cache_files}
    _plain_read(ds, 0, 600)
    assert _arrow_rss_kb(paths) >= 2000  # 600 x 4 KB read through the map: resident
    rows = []
    for start in range(0, 600, 100):
        rows += read_rows(ds, start, start + 100)
        assert _arrow_rss_kb(paths) < 100  # at most what the kernel maps back around a fault
    assert [r["id"] for r in rows] == [f"r{i}" for i in range(600)]
    again = ds.with_format("arrow")[599:600].to_pylist()[0]  # the map still reads (from the page cache)
    assert again["caption"] == "row 599" and again["image"]["bytes"] == rows[599]["image"]["bytes"]


def test_release_mapped_pages_touches_only_read_only_maps_of_the_files(tmp_path):
    other = tmp_path / "not-mapped.bin"
    other.write_bytes(b"x" * 10000)
    assert release_mapped_pages([other]) == 0
    assert release_mapped_pages([]) == 0
    data = bytearray(b"keep me" * 1000)  # anonymous memory is never advised
    assert release_mapped_pages(["[heap]", ""]) == 0
    assert bytes(data[:7]) == b"keep me"


def test_conversion_pool_is_put_back():
    before = pa.default_memory_pool().backend_name
    with conversion_arrow_pool():
        inside = pa.default_memory_pool().backend_name
        kept = pa.array(np.arange(100_000))  # made inside, used after
    assert pa.default_memory_pool().backend_name == before
    assert inside in ("jemalloc", "system") or inside == before
    assert kept.sum().as_py() == sum(range(100_000))
    with pytest.raises(RuntimeError):
        with conversion_arrow_pool():
            raise RuntimeError("boom")
    assert pa.default_memory_pool().backend_name == before
