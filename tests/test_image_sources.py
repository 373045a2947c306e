"""Image sources: folders with the release layout, zips read in place, downloads with a cache and
retries (against a local HTTP server), the missing-images report, corrupt files. No shared data."""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

import pytest
from helpers import jpeg

from vlprobe.dataset import image_sources as imgs


def test_folder_subdirs_and_zip_by_base_name(tmp_path: Path) -> None:
    data = jpeg()
    (tmp_path / "val2017").mkdir()
    (tmp_path / "val2017" / "000000000001.jpg").write_bytes(data)
    with zipfile.ZipFile(tmp_path / "val2017.zip", "w") as zf:
        zf.writestr("some/deep/folder/000000000002.jpg", data + b"zip")
    resolvers = imgs.make_resolvers(["coco2017_val"], images_root=tmp_path)
    r = resolvers["coco2017_val"]
    assert r.read("000000000001.jpg") == data
    assert r.read("000000000002.jpg") == data + b"zip"
    assert r.locate("000000000002.jpg").endswith("val2017.zip!some/deep/folder/000000000002.jpg")
    assert r.locate("000000000003.jpg") is None
    with pytest.raises(FileNotFoundError, match="000000000003.jpg not found.*val2017"):
        r.read("000000000003.jpg")
    # an explicit location: a folder holding the release sub-folder, or a zip
    direct = imgs.ImageResolver(imgs.SOURCES["coco2017_val"], [tmp_path])
    assert direct.read("000000000001.jpg") == data


def test_missing_report_counts_and_names_per_source(tmp_path: Path) -> None:
    (tmp_path / "images_512").mkdir()
    (tmp_path / "images_512" / "jumping_1.jpg").write_bytes(jpeg())
    resolvers = imgs.make_resolvers(["swig", "visual7w"], images_root=tmp_path)
    wanted = {"swig": ["jumping_1.jpg", "jumping_2.jpg"], "visual7w": [f"v7w_{i}.jpg" for i in range(8)] * 2}
    report = imgs.check_sources(wanted, resolvers)
    assert report.total == 9 and report.wanted == {"swig": 2, "visual7w": 8}
    text = report.summary()
    assert "swig: 1 of 2 files missing: jumping_2.jpg" in text
    assert "visual7w: 8 of 8 files missing: v7w_0.jpg, v7w_1.jpg, v7w_2.jpg, v7w_3.jpg, v7w_4.jpg (+3 more)" in text
    # visual7w had no folder in the root: the root is named, with what was looked for in it (issue 47.10: it said
    # "no location given" though --images gave one)
    assert f"[searched: --images {tmp_path}: none of visual7w/images/, visual7w/, images/, visual7w_images.zip in it]" in text
    assert f"[searched: {tmp_path / 'images_512'}]" in text and "no location given" not in text
    assert "[searched: no location given]" in imgs.check_sources({"swig": ["a_1.jpg"]}, imgs.make_resolvers(["swig"])).summary()
    err = imgs.MissingImagesError(report, "hint here")
    assert isinstance(err, FileNotFoundError) and str(err).startswith("9 image file(s) are missing:") and "hint here" in str(err)


def test_bad_arguments_are_named(tmp_path: Path) -> None:
    with pytest.raises(imgs.ImageSourceError, match="unknown image source 'cocoa'"):
        imgs.parse_locations(["cocoa=/x"], imgs.SOURCES)
    with pytest.raises(imgs.ImageSourceError, match="SOURCE=PATH"):
        imgs.parse_locations(["swig"], imgs.SOURCES)
    assert imgs.parse_locations(["swig=/a", "swig=/b"], imgs.SOURCES) == {"swig": ["/a", "/b"]}
    with pytest.raises(imgs.ImageSourceError, match="neither a folder nor a .zip"):
        imgs.ImageResolver(imgs.SOURCES["swig"], [tmp_path / "nope"])
    with pytest.raises(imgs.ImageSourceError, match="--images: not a folder"):
        imgs.make_resolvers(["swig"], images_root=tmp_path / "nope")
    (tmp_path / "broken.zip").write_bytes(b"not a zip")
    with pytest.raises(imgs.ImageSourceError, match="not a readable zip"):
        imgs.ImageResolver(imgs.SOURCES["swig"], [tmp_path / "broken.zip"]).locate("a_1.jpg")


def test_corrupt_and_truncated_images_name_the_file(tmp_path: Path) -> None:
    folder = tmp_path / "images_512"
    folder.mkdir()
    good = jpeg(size=(64, 48))
    (folder / "ok_1.jpg").write_bytes(good)
    (folder / "junk_1.jpg").write_bytes(b"hello")
    (folder / "cut_1.jpg").write_bytes(good[: len(good) // 2])
    r = imgs.ImageResolver(imgs.SOURCES["swig"], [folder])
    assert imgs.read_checked(r, "ok_1.jpg") == good
    for name in ("junk_1.jpg", "cut_1.jpg"):
        with pytest.raises(imgs.CorruptImageError, match=rf"swig: image file {name} is corrupt.*{folder}"):
            imgs.read_checked(r, name)


def test_download_with_cache_retries_and_second_url(stand_in_server, tmp_path: Path, monkeypatch) -> None:
    server = stand_in_server.url
    monkeypatch.setattr(imgs.time, "sleep", lambda s: None)  # no real backoff in tests
    spec = imgs.SourceSpec("vg_test", "VG (test)", r"\d+\.jpg",
                           urls=(f"{server}/VG_100K/{{name}}", f"{server}/VG_100K_2/{{name}}"))
    data = jpeg()
    stand_in_server.files = {"/VG_100K/1.jpg": data, "/VG_100K_2/2.jpg": data + b"2"}
    stand_in_server.flaky = {"/VG_100K/1.jpg": 2}
    r = imgs.ImageResolver(spec, [], download=True, cache_dir=tmp_path / "cache", retries=3, timeout=5)
    missing = r.missing(["1.jpg", "2.jpg", "3.jpg"], workers=2)
    assert missing == ["3.jpg"]
    assert stand_in_server.hits.count("/VG_100K/1.jpg") == 3  # two 503s, then the file
    assert "/VG_100K_2/2.jpg" in stand_in_server.hits  # 404 on the first template -> the second
    assert stand_in_server.hits.count("/VG_100K/3.jpg") == 1  # a 404 is not retried
    assert (tmp_path / "cache" / "vg_test" / "2.jpg").read_bytes() == data + b"2"
    hits = len(stand_in_server.hits)
    assert imgs.read_checked(r, "1.jpg") == data and len(stand_in_server.hits) == hits  # served from the cache
    with pytest.raises(FileNotFoundError, match=r"could not download 3\.jpg.*HTTP 404"):
        r.fetch("3.jpg")
    # without --download the same resolver reports the file missing and never calls out
    offline = imgs.ImageResolver(spec, [], download=False, cache_dir=tmp_path / "cache")
    assert offline.missing(["1.jpg"]) == ["1.jpg"]


def test_sources_without_urls_never_download(tmp_path: Path) -> None:
    spec = imgs.SourceSpec("local_only", "no URL, no archive", r"[a-z_]+_\d+\.jpg")
    r = imgs.ImageResolver(spec, [], download=True, cache_dir=tmp_path)
    assert not r.download and r.missing(["a_1.jpg"]) == ["a_1.jpg"]
    assert imgs.SOURCES["coco2014_val"].urls and imgs.SOURCES["visual_genome"].urls
    # every VALSE source can be downloaded: per file (COCO) or as the owner's archive
    for name in ("visual7w", "swig", "visdial_val2018"):
        archive = imgs.SOURCES[name].archive
        assert archive is not None and archive.url.startswith(("http://", "https://")), name
        assert archive.file in imgs.SOURCES[name].zips, name


# ---- sources published as one archive (Visual7W, SWiG images_512, VisDial VisualDialog_val2018) ----------
ARCHIVE_SOURCES = {  # source -> (archive name, the folder the release zip puts files in, two file names)
    "visual7w": ("visual7w_images.zip", "images", ["v7w_1.jpg", "v7w_2.jpg"]),
    "swig": ("images_512.zip", "images_512", ["jumping_1.jpg", "eating_22.jpg"]),
    "visdial_val2018": ("VisualDialog_val2018.zip", "VisualDialog_val2018",
                        ["VisualDialog_val2018_000000000001.jpg", "VisualDialog_val2018_000000000002.jpg"]),
}


def _zip_bytes(members: dict[str, bytes], symlink: str | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        if symlink:
            info = zipfile.ZipInfo(symlink)
            info.create_system = 3
            info.external_attr = (0o120777 << 16)
            zf.writestr(info, "/etc/passwd")
    return buf.getvalue()


def _served_source(name: str, base: str, monkeypatch) -> imgs.SourceSpec:
    spec = imgs.SOURCES[name]
    archive = imgs.Archive(f"{base}/dl/{spec.archive.file}?dl=1", spec.archive.file)
    served = imgs.SourceSpec(spec.name, spec.title, spec.pattern, spec.subdirs, spec.zips, spec.urls, spec.license, archive)
    monkeypatch.setitem(imgs.SOURCES, name, served)
    return served


@pytest.mark.parametrize("source", sorted(ARCHIVE_SOURCES))
def test_archive_download_resumes_and_extracts_only_what_is_needed(source, stand_in_server, tmp_path, monkeypatch):
    monkeypatch.setattr(imgs.time, "sleep", lambda s: None)
    file, folder, names = ARCHIVE_SOURCES[source]
    images = {n: jpeg(size=(8 + i, 8)) for i, n in enumerate(names)}
    others = {f"{folder}/unused_{i}.jpg": jpeg() for i in range(5)}
    body = _zip_bytes({**{f"{folder}/{n}": d for n, d in images.items()}, **others})
    stand_in_server.files = {f"/dl/{file}?dl=1": body}
    stand_in_server.cut = {f"/dl/{file}?dl=1": 1}  # the first response drops half-way
    _served_source(source, stand_in_server.url, monkeypatch)
    r = imgs.make_resolvers([source], download=True, cache_dir=tmp_path / "cache", retries=3)[source]
    missing = r.missing(names + ["not_in_it_9.jpg" if source == "swig" else names[0].replace("1", "7")])
    assert len(missing) == 1
    ranges = [rng for _, rng in stand_in_server.requests]
    assert ranges[0] is None and ranges[1] is not None and ranges[1].startswith("bytes=")  # resumed, not restarted
    assert len(stand_in_server.requests) == 2
    assert r.archive_path.read_bytes() == body
    extracted = sorted(p.name for p in (tmp_path / "cache" / source).iterdir() if p.is_file())
    assert extracted == sorted(names)  # just the files needed, not the whole archive
    for n in names:
        assert imgs.read_checked(r, n) == images[n]
    # a second resolver reuses the archive in the cache: no request
    before = len(stand_in_server.requests)
    again = imgs.make_resolvers([source], download=True, cache_dir=tmp_path / "cache")[source]
    assert again.missing(names) == [] and len(stand_in_server.requests) == before


def test_archive_resumes_a_part_left_by_an_earlier_run(stand_in_server, tmp_path, monkeypatch) -> None:
    file, folder, names = ARCHIVE_SOURCES["swig"]
    body = _zip_bytes({f"{folder}/{n}": jpeg() for n in names})
    stand_in_server.files = {f"/dl/{file}?dl=1": body}
    _served_source("swig", stand_in_server.url, monkeypatch)
    r = imgs.make_resolvers(["swig"], download=True, cache_dir=tmp_path)["swig"]
    r.archive_path.parent.mkdir(parents=True)
    r.archive_path.with_name(file + ".part").write_bytes(body[:100])  # killed after 100 bytes
    assert r.missing(names) == []
    assert stand_in_server.requests == [(f"/dl/{file}?dl=1", "bytes=100-")]
    assert r.archive_path.read_bytes() == body


def test_archive_404_names_the_url(stand_in_server, tmp_path, monkeypatch) -> None:
    served = _served_source("visdial_val2018", stand_in_server.url, monkeypatch)
    r = imgs.make_resolvers(["visdial_val2018"], download=True, cache_dir=tmp_path)["visdial_val2018"]
    with pytest.raises(imgs.ArchiveDownloadError, match=rf"could not download {re.escape(served.archive.url)}: HTTP 404"):
        r.missing(["VisualDialog_val2018_000000000001.jpg"])
    assert len(stand_in_server.requests) == 1  # a 404 is not retried


def test_corrupt_archive_is_refused(stand_in_server, tmp_path, monkeypatch) -> None:
    file, folder, names = ARCHIVE_SOURCES["visual7w"]
    served = _served_source("visual7w", stand_in_server.url, monkeypatch)
    stand_in_server.files = {f"/dl/{file}?dl=1": b"<html>quota exceeded</html>" * 10}
    r = imgs.make_resolvers(["visual7w"], download=True, cache_dir=tmp_path)["visual7w"]
    with pytest.raises(imgs.CorruptArchiveError, match=r"visual7w: .*visual7w_images\.zip .*not a readable zip"):
        r.missing(names)
    assert not r.archive_path.exists()  # removed, so a rerun downloads it again
    # a member whose bytes do not match its CRC
    good = _zip_bytes({f"{folder}/{n}": jpeg() for n in names})
    data = jpeg()
    at = good.index(data)
    stand_in_server.files = {f"/dl/{file}?dl=1": good[:at + 40] + bytes([good[at + 40] ^ 0xFF]) + good[at + 41:]}
    with pytest.raises(imgs.CorruptArchiveError, match=r"member 'images/v7w_1\.jpg' cannot be read \(Bad CRC-32"):
        r.missing(names)
    # a published size that does not match
    monkeypatch.setitem(imgs.SOURCES, "visual7w", imgs.SourceSpec(
        served.name, served.title, served.pattern, archive=imgs.Archive(served.archive.url, file, size=len(good) + 1)))
    stand_in_server.files = {f"/dl/{file}?dl=1": good}
    r = imgs.make_resolvers(["visual7w"], download=True, cache_dir=tmp_path / "2")["visual7w"]
    with pytest.raises(imgs.CorruptArchiveError,
                       match=rf"announces {len(good):,} bytes, the published size is {len(good) + 1:,}"):
        r.missing(names)


@pytest.mark.parametrize("bad", ["../escape.jpg", "/abs/escape.jpg", "images_512/../../escape.jpg", "symlink"])
def test_archive_members_escaping_the_folder_are_refused(bad, stand_in_server, tmp_path, monkeypatch) -> None:
    file, folder, names = ARCHIVE_SOURCES["swig"]
    members = {f"{folder}/{n}": jpeg() for n in names}
    body = _zip_bytes(members, symlink=f"{folder}/link_1.jpg") if bad == "symlink" else _zip_bytes({**members, bad: jpeg()})
    stand_in_server.files = {f"/dl/{file}?dl=1": body}
    _served_source("swig", stand_in_server.url, monkeypatch)
    r = imgs.make_resolvers(["swig"], download=True, cache_dir=tmp_path / "cache")["swig"]
    with pytest.raises(imgs.UnsafeArchiveError, match="refusing the archive") as err:
        r.missing(names)
    assert ("symbolic link" if bad == "symlink" else repr(bad)) in str(err.value)
    assert not (tmp_path / "escape.jpg").exists() and not any((tmp_path / "cache" / "swig").glob("*.jpg"))
    # the same check guards a zip given as a location
    (tmp_path / "local").mkdir()
    (tmp_path / "local" / file).write_bytes(body)
    local = imgs.make_resolvers(["swig"], images_root=tmp_path / "local")["swig"]
    with pytest.raises(imgs.UnsafeArchiveError):
        local.locate(names[0])


def test_threaded_reads_keep_order_from_a_zip(tmp_path: Path) -> None:
    images = {f"act_{i}.jpg": jpeg(size=(8 + i, 8)) for i in range(40)}
    with zipfile.ZipFile(tmp_path / "images_512.zip", "w") as zf:
        for name, data in images.items():
            zf.writestr(f"images_512/{name}", data)
    r = imgs.make_resolvers(["swig"], images_root=tmp_path)["swig"]
    names = list(images)[::-1]
    got = list(imgs.read_checked_many(((r, n) for n in names), workers=2, chunk=7))
    assert got == [images[n] for n in names]
    assert list(imgs.read_checked_many(((r, n) for n in names[:3]), workers=1)) == [images[n] for n in names[:3]]
