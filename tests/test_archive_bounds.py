"""Zip bombs (issue 39): every archive member vlprobe reads, annotation files and images alike, is refused in
one line naming the archive and the member when it inflates past the bounds, before memory grows."""

from __future__ import annotations

import os
import tracemalloc
import zipfile
from pathlib import Path

import pytest

from vlprobe.builders import AnnotationError
from vlprobe.builders.crepe import read_zip_csv, zip_members
from vlprobe.dataset import downloads
from vlprobe.dataset.downloads import ArchiveBombError, CorruptArchiveError, read_member
from vlprobe.dataset.image_sources import SOURCES, ImageResolver

BOMB = 64 << 20  # 64 MiB of zeros: about 64 KB deflated


def _bomb_zip(path: Path, member: str, size: int = BOMB) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        with zf.open(member, "w", force_zip64=True) as fh:
            block = bytes(1 << 20)
            for _ in range(size >> 20):
                fh.write(block)
    return path


def _peak_while(fn) -> tuple[int, str]:
    tracemalloc.start()
    try:
        with pytest.raises(ArchiveBombError) as err:
            fn()
        return tracemalloc.get_traced_memory()[1], str(err.value)
    finally:
        tracemalloc.stop()


@pytest.fixture(scope="module")
def bomb_zip(tmp_path_factory) -> Path:
    return _bomb_zip(tmp_path_factory.mktemp("bomb") / "bomb.zip", "deep/000000000139.jpg")


def test_declared_size_over_the_bound_is_refused_before_reading(bomb_zip, monkeypatch):
    monkeypatch.setattr(downloads, "MAX_MEMBER_BYTES", 16 << 20)
    with zipfile.ZipFile(bomb_zip) as zf:
        peak, message = _peak_while(lambda: read_member(zf, "deep/000000000139.jpg", str(bomb_zip)))
    assert peak < 4 << 20, f"memory grew by {peak:,} bytes"
    assert "bomb.zip" in message and "deep/000000000139.jpg" in message and "67,108,864" in message
    assert "\n" not in message


def test_ratio_over_the_bound_is_refused_at_the_default_size_bound(bomb_zip):
    assert BOMB < downloads.MAX_MEMBER_BYTES  # so the ratio alone refuses it
    with zipfile.ZipFile(bomb_zip) as zf:
        peak, message = _peak_while(lambda: read_member(zf, "deep/000000000139.jpg", "x.zip"))
    assert peak < 4 << 20 and "x" in message and "zip bomb" in message


def test_a_header_that_understates_the_size_is_stopped_while_reading(tmp_path, monkeypatch):
    path = _bomb_zip(tmp_path / "liar.zip", "a.csv", 8 << 20)
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("a.csv")
        info.file_size = 2 << 20  # as a forged local/central header would say
        monkeypatch.setattr(downloads, "MAX_RATIO", 10**9)
        with pytest.raises((ArchiveBombError, CorruptArchiveError)):  # never a bare BadZipFile
            read_member(zf, info, str(path))


def test_ordinary_members_read_whole(tmp_path):
    path = tmp_path / "ok.zip"
    payload = bytes(range(256)) * 4096  # 1 MiB, barely compressible
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("a/b.bin", payload)
        zf.writestr("small.json", b"{}" * 1000)  # compresses far over the ratio, but is small
    with zipfile.ZipFile(path) as zf:
        assert read_member(zf, "a/b.bin", "ok.zip") == payload
        assert read_member(zf, "small.json", "ok.zip") == b"{}" * 1000


def test_image_archives_refuse_a_bomb(bomb_zip, monkeypatch):
    monkeypatch.setattr(downloads, "MAX_MEMBER_BYTES", 16 << 20)
    resolver = ImageResolver(SOURCES["coco2017_val"], [bomb_zip])
    tracemalloc.start()
    try:
        with pytest.raises(ArchiveBombError, match=r"bomb\.zip.*deep/000000000139\.jpg"):
            resolver.zips[0].read("000000000139.jpg")
        assert tracemalloc.get_traced_memory()[1] < 4 << 20
    finally:
        tracemalloc.stop()


def test_annotation_archives_refuse_a_bomb(tmp_path, monkeypatch):
    path = _bomb_zip(tmp_path / "syst_hard_negatives.zip", "syst/swap_hard_negatives.csv", 16 << 20)
    monkeypatch.setattr(downloads, "MAX_MEMBER_BYTES", 8 << 20)
    tracemalloc.start()
    try:
        with pytest.raises((ArchiveBombError, AnnotationError), match=r"syst_hard_negatives\.zip.*swap_hard_negatives"):
            read_zip_csv(path, "swap_hard_negatives.csv", zip_members(path))
        assert tracemalloc.get_traced_memory()[1] < 4 << 20
    finally:
        tracemalloc.stop()


def test_an_image_cache_others_could_write_is_refused(tmp_path):
    from vlprobe.dataset.image_sources import ImageSourceError

    cache = tmp_path / "images"
    (cache / "coco2017_val").mkdir(parents=True)
    os.chmod(cache / "coco2017_val", 0o777)
    resolver = ImageResolver(SOURCES["coco2017_val"], download=True, cache_dir=cache)
    with pytest.raises(ImageSourceError, match=r"coco2017_val is a folder others could write into \(mode 777\)"):
        resolver.read("000000000139.jpg")
    fresh = ImageResolver(SOURCES["coco2017_val"], download=True, cache_dir=tmp_path / "new",
                          fetch=lambda url, timeout: b"jpeg bytes")
    assert fresh.read("000000000139.jpg") == b"jpeg bytes"
    assert os.stat(tmp_path / "new" / "coco2017_val").st_mode & 0o777 == 0o700


def test_a_member_with_a_bad_crc_names_the_zip_and_the_member(tmp_path):
    """Issue 48: an images zip with a bad CRC was a zipfile.BadZipFile traceback."""
    path = tmp_path / "images.zip"
    payload = bytes(range(256)) * 64
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr("val2017/000000000139.jpg", payload)
    data = path.read_bytes()
    at = data.index(payload) + 100
    path.write_bytes(data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:])  # one byte flipped: its CRC-32 fails
    with zipfile.ZipFile(path) as zf:
        with pytest.raises(CorruptArchiveError) as err:
            read_member(zf, "val2017/000000000139.jpg", str(path))
    assert str(path) in str(err.value) and "member 'val2017/000000000139.jpg' cannot be read (Bad CRC-32" in str(err.value)
    resolver = ImageResolver(SOURCES["coco2017_val"], [path])
    with pytest.raises(CorruptArchiveError, match="Bad CRC-32"):
        resolver.read("000000000139.jpg")
