"""Image sources: folders with the release layout, zips read in place, downloads with a cache and
retries (against a local HTTP server), the missing-images report, corrupt files. No shared data."""

from __future__ import annotations

import http.server
import io
import threading
import zipfile
from pathlib import Path

import pytest
from PIL import Image

from vlprobe import image_sources as imgs


def jpeg(size=(8, 8)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, (1, 2, 3)).save(buf, "JPEG")
    return buf.getvalue()


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
    assert "no location given" in text  # visual7w had no folder
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
    good = jpeg((64, 48))
    (folder / "ok_1.jpg").write_bytes(good)
    (folder / "junk_1.jpg").write_bytes(b"hello")
    (folder / "cut_1.jpg").write_bytes(good[: len(good) // 2])
    r = imgs.ImageResolver(imgs.SOURCES["swig"], [folder])
    assert imgs.read_checked(r, "ok_1.jpg") == good
    for name in ("junk_1.jpg", "cut_1.jpg"):
        with pytest.raises(imgs.CorruptImageError, match=rf"swig: image file {name} is corrupt.*{folder}"):
            imgs.read_checked(r, name)


class _Handler(http.server.BaseHTTPRequestHandler):
    files: dict[str, bytes] = {}
    flaky: dict[str, int] = {}  # path -> number of 503s still to give
    hits: list[str] = []

    def do_GET(self):  # noqa: N802
        self.hits.append(self.path)
        if self.flaky.get(self.path, 0) > 0:
            self.flaky[self.path] -= 1
            self.send_error(503)
            return
        body = self.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    _Handler.files, _Handler.flaky, _Handler.hits = {}, {}, []
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_download_with_cache_retries_and_second_url(server: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(imgs.time, "sleep", lambda s: None)  # no real backoff in tests
    spec = imgs.SourceSpec("vg_test", "VG (test)", r"\d+\.jpg", urls=(f"{server}/VG_100K/{{name}}", f"{server}/VG_100K_2/{{name}}"))
    data = jpeg()
    _Handler.files = {"/VG_100K/1.jpg": data, "/VG_100K_2/2.jpg": data + b"2"}
    _Handler.flaky = {"/VG_100K/1.jpg": 2}
    r = imgs.ImageResolver(spec, [], download=True, cache_dir=tmp_path / "cache", retries=3, timeout=5)
    missing = r.missing(["1.jpg", "2.jpg", "3.jpg"], workers=2)
    assert missing == ["3.jpg"]
    assert _Handler.hits.count("/VG_100K/1.jpg") == 3  # two 503s, then the file
    assert "/VG_100K_2/2.jpg" in _Handler.hits  # 404 on the first template -> the second
    assert _Handler.hits.count("/VG_100K/3.jpg") == 1  # a 404 is not retried
    assert (tmp_path / "cache" / "vg_test" / "2.jpg").read_bytes() == data + b"2"
    hits = len(_Handler.hits)
    assert imgs.read_checked(r, "1.jpg") == data and len(_Handler.hits) == hits  # served from the cache
    with pytest.raises(FileNotFoundError, match=r"could not download 3\.jpg.*HTTP 404"):
        r.fetch("3.jpg")
    # without --download the same resolver reports the file missing and never calls out
    offline = imgs.ImageResolver(spec, [], download=False, cache_dir=tmp_path / "cache")
    assert offline.missing(["1.jpg"]) == ["1.jpg"]


def test_sources_without_urls_never_download(tmp_path: Path) -> None:
    r = imgs.ImageResolver(imgs.SOURCES["swig"], [], download=True, cache_dir=tmp_path)
    assert not r.download and r.missing(["a_1.jpg"]) == ["a_1.jpg"]
    assert imgs.SOURCES["coco2014_val"].urls and imgs.SOURCES["visual_genome"].urls


def test_threaded_reads_keep_order_from_a_zip(tmp_path: Path) -> None:
    images = {f"act_{i}.jpg": jpeg((8 + i, 8)) for i in range(40)}
    with zipfile.ZipFile(tmp_path / "images_512.zip", "w") as zf:
        for name, data in images.items():
            zf.writestr(f"images_512/{name}", data)
    r = imgs.make_resolvers(["swig"], images_root=tmp_path)["swig"]
    names = list(images)[::-1]
    got = list(imgs.read_checked_many(((r, n) for n in names), workers=2, chunk=7))
    assert got == [images[n] for n in names]
    assert list(imgs.read_checked_many(((r, n) for n in names[:3]), workers=1)) == [images[n] for n in names[:3]]
