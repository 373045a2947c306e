"""What ``vlprobe.evaluate`` keeps per row, and how it reads rows: score matrices stacked per chunk
(:class:`~vlprobe.results.ScoreMatrices`) give the same metrics and the same output files as one
pass; a chunked read leaves no page of the memory-mapped Arrow file resident; the parquet -> Arrow
conversion borrows a pool that gives its memory back, and puts the default pool back."""

from __future__ import annotations

import json
import sys

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import vlprobe
from vlprobe import metric as metric_module
from vlprobe.dataset.folder import ConfigDecl, card_metadata, write_card, write_split_rows
from vlprobe.dataset.reader import read_rows, release_mapped_pages, undecoded_features
from vlprobe.evaluation.scoring import _metric_inputs
from vlprobe.results import ScoredItem, ScoredSplit, ScoreMatrices
from vlprobe.storage.arrow_cache import conversion_arrow_pool, load_folder_split

# ---- ScoreMatrices ------------------------------------------------------------------------------

def test_score_matrices_is_a_sequence_of_the_matrices_given():
    rng = np.random.default_rng(0)
    mats = [rng.normal(size=(1, 2)) for _ in range(5)] + [rng.normal(size=(2, 2)) for _ in range(3)]
    mats += [rng.normal(size=(1, 2)) for _ in range(2)]
    seq = ScoreMatrices()
    seq.extend(mats[:4])
    seq.extend(mats[4:])
    assert len(seq) == 10
    want = [np.asarray(m, dtype=np.float32) for m in mats]
    for i in range(10):
        np.testing.assert_array_equal(seq[i], want[i])
        assert seq[i].dtype == np.float32
    np.testing.assert_array_equal(seq[-1], want[-1])
    assert [m.shape for m in seq] == [m.shape for m in want]
    assert [m.shape for m in seq[3:7]] == [(1, 2), (1, 2), (2, 2), (2, 2)]
    with pytest.raises(IndexError):
        seq[10]
    assert seq.stacked() is None  # shapes differ
    same = ScoreMatrices(mats[:5])
    same.extend(mats[-2:])
    np.testing.assert_array_equal(same.stacked(), np.stack(want[:5] + want[-2:]))
    assert np.stack(same).shape == (7, 1, 2) and len(list(same)) == 7 and same  # np.stack takes it
    assert not ScoreMatrices() and ScoreMatrices().stacked() is None
    with pytest.raises(ValueError):
        ScoreMatrices([np.zeros(3)])


def test_score_matrices_keep_no_array_per_item():
    seq = ScoreMatrices()
    for _ in range(10):  # ten chunks of 2,000 1 x 2 matrices
        seq.extend([np.zeros((1, 2), dtype=np.float32) for _ in range(2000)])
    assert len(seq._blocks) == 10 and seq.nbytes == 20_000 * 8


def _split(scores, gold, probs=None, tags=None):
    items = [ScoredItem(id=str(i), texts=("a", "b"), gold=g, tags=tuple(tags[i]) if tags else ())
             for i, g in enumerate(gold)]
    return ScoredSplit(dataset="d", config="c", split="test", items=items, scores=scores, probabilities=probs)


@pytest.mark.parametrize("shape, ties", [((1, 2), "strict"), ((2, 2), "half"), ((1, 4), "lenient"), ((1, 1), "strict")])
def test_stacked_metric_inputs_give_the_metric_of_the_lists(shape, ties):
    rng = np.random.default_rng(1)
    n = 300
    scores = [rng.normal(size=shape).astype(np.float32) for _ in range(n)]
    scores[3] = np.zeros(shape, dtype=np.float32)  # ties
    probs = [rng.uniform(size=shape).astype(np.float32) for _ in range(n)]
    if shape == (1, 1):
        gold = [np.array([[bool(rng.integers(2))]]) for _ in range(n)]
    elif shape == (2, 2):
        gold = [np.eye(2, dtype=bool)] * n
    else:
        gold = [np.eye(shape[1], dtype=bool)[rng.integers(shape[1])][None, :] for _ in range(n)]
    tags = [["k=even" if i % 2 == 0 else "k=odd", "x"] for i in range(n)]
    kw = dict(ties=ties, threshold=0.5, bootstrap=50, seed=3, confidence=0.9)
    for with_probs in (False, True):
        want = metric_module.compute(scores, gold, probabilities=probs if with_probs else None, tags=tags, **kw)
        chunked = _split(ScoreMatrices(scores[:120]), gold, ScoreMatrices(probs[:120]) if with_probs else None, tags)
        chunked.scores.extend(scores[120:])
        if with_probs:
            chunked.probabilities.extend(probs[120:])
        s, g, p = _metric_inputs(chunked)
        assert isinstance(s, np.ndarray) and s.shape == (n, *shape) and s.dtype == np.float64
        got = metric_module.compute(s, g, probabilities=p, tags=[it.tags for it in chunked.items], **kw)
        assert json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True)


def test_mixed_shapes_go_to_the_metric_as_lists():
    scores = [np.zeros((1, 2)), np.zeros((2, 2))]
    gold = [np.array([[True, False]]), np.eye(2, dtype=bool)]
    s, g, p = _metric_inputs(_split(ScoreMatrices(scores), gold))
    assert isinstance(s, ScoreMatrices) and isinstance(g, list) and p is None


# ---- chunked runs: the same files -----------------------------------------------------------------

def _run_outputs(run_dir):
    doc = json.loads((run_dir / "results.json").read_text())
    return ((run_dir / "results.csv").read_bytes(), pq.read_table(run_dir / "scores.parquet"),
            doc["results"], doc.get("summary"))


@pytest.mark.parametrize("model", ["tiny_clip_path", "tiny_blip_itm_path"])
@pytest.mark.slow
def test_chunked_run_writes_the_files_of_one_chunk(folder, model, request, tmp_path):
    """With the vectors in the cache (so that batch shapes cannot move the last bits), a run in
    chunks of 5 and 7 rows writes the results.csv, scores.parquet and results of one chunk."""
    path = request.getfixturevalue(model)
    kw = dict(model=str(path), datasets=str(folder), bootstrap=30, progress=False, num_workers=0,
              cache_dir=str(tmp_path / "cache"))
    whole = vlprobe.evaluate(out=tmp_path / "whole", **kw)
    assert "chunks" not in whole.provenance["engine"]
    want = _run_outputs(tmp_path / "whole")
    for size in (5, 7):
        run = vlprobe.evaluate(out=tmp_path / f"c{size}", chunk_size=size, **kw)
        assert run.provenance["engine"]["chunks"] > 2
        csv, table, results, summary = _run_outputs(tmp_path / f"c{size}")
        assert csv == want[0]
        assert table.equals(want[1])
        assert results == want[2] and summary == want[3]
        for a, b in zip(run.splits, whole.splits):
            np.testing.assert_array_equal(np.stack(a.scores), np.stack(b.scores))
            assert (a.probabilities is None) == (b.probabilities is None)


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


# ---- issue 25: photo-sized images (what is held while the next chunk is read) ------------------

class _Row:
    """A row that can be watched with a weak reference."""

    def __init__(self, i: int) -> None:
        self.i = i


class _WatchedSource:
    """A SplitSource stand-in whose row batches check, before each new batch is read, that no row of
    the batches handed out earlier is still alive (the consumer drops each chunk, as _score does)."""

    name = "watched"

    def __init__(self, n: int) -> None:
        self.n, self.refs, self.alive_at_read = n, [], []

    def row_batches(self, size):
        import gc
        import weakref

        for start in range(0, self.n, size):
            gc.collect()
            self.alive_at_read.append(sum(r() is not None for r in self.refs))
            rows = [[_Row(i) for i in range(start, min(start + size, self.n))]]
            self.refs += [weakref.ref(r) for r in rows[0]]
            yield start, rows.pop()  # kept nowhere here, as SplitSource.row_batches

    def items(self, start, rows, modality):
        return list(rows)


@pytest.mark.slow
def test_chunks_hold_no_row_of_the_previous_chunk_while_reading_the_next():
    from types import SimpleNamespace

    from vlprobe.evaluation.scoring import _chunks

    src = _WatchedSource(10)
    settings = SimpleNamespace(control=None, chunk_size=4, modality="image", seed=0)
    seen = 0
    for chunk in _chunks([src], settings):
        seen += len(chunk)
        del chunk
    assert seen == 10
    # a chunk's items hold their image bytes: 2,000 photos of 90 KB must not be kept beside the next 2,000
    assert src.alive_at_read == [0, 0, 0]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/smaps")
@pytest.mark.slow
def test_read_rows_keeps_one_slice_of_the_file_resident_at_a_time(image_folder, monkeypatch):
    import vlprobe.dataset.reader as folder_reader

    ds = load_folder_split(image_folder, "main", "test")
    paths = {f["filename"] for f in ds.cache_files}
    want = _plain_read(ds, 0, 600)
    release_mapped_pages(paths)
    resident = []
    release = folder_reader.release_mapped_pages

    def measured(files):
        resident.append(_arrow_rss_kb(paths))  # what the slice just read brought in
        return release(files)

    monkeypatch.setattr(folder_reader, "release_mapped_pages", measured)
    monkeypatch.setattr(folder_reader, "READ_SLICE_ROWS", 50)
    assert read_rows(ds, 0, 600) == want  # same rows across slice boundaries
    assert read_rows(ds, 33, 177) == want[33:177]
    # 600 rows x 4 KB read in one go had 2.4 MB of the file resident at once; 50 rows at a time ~200 KB
    assert resident and max(resident) < 600, resident


def test_first_load_converts_without_prebuffering(image_folder, monkeypatch, tmp_path):
    import vlprobe.storage.arrow_cache as arrow_cache

    seen = {}
    load = datasets.load_dataset

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return load(*args, **kwargs)

    monkeypatch.setattr(arrow_cache.datasets, "load_dataset", spy)
    monkeypatch.setenv("VLPROBE_CACHE", str(tmp_path))  # a fresh conversion, not an earlier test's Arrow copy
    ds = load_folder_split(image_folder, "main", "test")
    assert len(ds) == 600 and ds.select_columns(["caption"])[599]["caption"] == "row 599"
    # pyarrow's pre-buffering kept every row group read until the file closed: the whole parquet
    # was held during the conversion (969 MB anon for 6,000 photo rows, 707 MB without)
    assert seen["fragment_scan_options"].pre_buffer is False
