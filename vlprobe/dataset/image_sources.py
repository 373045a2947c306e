"""Find the original image files that a benchmark's annotations name, and read their bytes.

A :class:`SourceSpec` describes one public image collection (:data:`SOURCES`); an :class:`ImageResolver` looks a
file up in the locations given (folders, with the release's sub-folders, and zips), then, with downloading on, in
the download cache, at the source's URLs or in its one archive (downloaded once, resumed; only the files needed
extracted).
"""

from __future__ import annotations

import functools
import itertools
import os
import re
import stat
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from PIL import UnidentifiedImageError

from ..storage.locations import UnsafeFolderError, cache_home, images_home, private_folder
from ..storage.paths import UnsafePathError, name_problem
from .downloads import (  # noqa: F401  (re-exported: the names users and builders know from here)
    Archive,
    ArchiveDownloadError,
    CorruptArchiveError,
    ImageSourceError,
    UnsafeArchiveError,
    download_file,
    read_member,
    safe_members,
)
from .images import ImageTooLargeError, encoded_file, open_checked


@dataclass(frozen=True)
class SourceSpec:
    """One image source: its id, the file-name pattern, where the release keeps the files."""

    name: str
    title: str
    pattern: str  # regular expression every file name of this source matches
    subdirs: tuple[str, ...] = ()  # sub-folders of a location (and of an images root) holding the files
    zips: tuple[str, ...] = ()  # zip file names of the original release, looked for in an images root
    urls: tuple[str, ...] = ()  # URL templates with {name}; tried in order (a 404 moves to the next)
    license: str = ""
    archive: Archive | None = None  # sources published only as an archive: downloaded whole, then extracted

    def matches(self, name: str) -> bool:
        return re.fullmatch(self.pattern, name) is not None


# The public image collections benchmarks draw on, with the original releases' folder and zip names.
SOURCES: dict[str, SourceSpec] = {
    s.name: s
    for s in (
        *(SourceSpec(f"coco{year}_{split}", f"MS COCO {year} {split}", pattern, (f"{split}{year}", f"coco/{split}{year}"),
                     (f"{split}{year}.zip",), (f"http://images.cocodataset.org/{split}{year}/{{name}}",),
                     "COCO images: Flickr terms of use of each image; COCO annotations CC BY 4.0")
          for year, split, pattern in (("2017", "val", r"\d{12}\.jpg"), ("2014", "train", r"COCO_train2014_\d{12}\.jpg"),
                                       ("2014", "val", r"COCO_val2014_\d{12}\.jpg"))),
        SourceSpec(
            "visual7w", "Visual7W images", r"v7w_\d+\.jpg", ("visual7w/images", "visual7w", "images"),
            ("visual7w_images.zip",), (),
            "Visual7W (COCO images, also in Visual Genome): data CC BY 4.0; images under Flickr terms",
            # the Visual7W project's own link (github.com/yukezhu/visual7w-toolkit); no checksum published
            Archive("http://vision.stanford.edu/yukezhu/visual7w_images.zip", "visual7w_images.zip"),
        ),
        SourceSpec(
            "swig", "SWiG / imSitu images (images_512)", r"[a-z_]+_\d+\.jpg", ("images_512", "swig/images_512"),
            ("images_512.zip",), (),
            "imSitu images: non-commercial research and educational use (imSitu terms); SWiG annotations MIT",
            # the link of the allenai/swig README; no checksum published
            Archive("https://swig-data-weights.s3.us-east-2.amazonaws.com/images_512.zip", "images_512.zip"),
        ),
        SourceSpec(
            "visdial_val2018", "VisDial v1.0 val images (VisualDialog_val2018)", r"VisualDialog_val2018_\d{12}\.jpg",
            ("VisualDialog_val2018", "visdial/VisualDialog_val2018"), ("VisualDialog_val2018.zip",), (),
            "VisDial v1.0 val images (Flickr): Flickr terms of use; VisDial annotations CC BY 4.0",
            # the link of visualdialog.org/data (v1.0 val images); no checksum published
            Archive("https://www.dropbox.com/s/twmtutniktom7tu/VisualDialog_val2018.zip?dl=1", "VisualDialog_val2018.zip"),
        ),
        SourceSpec(
            "visual_genome", "Visual Genome images (VG_100K, VG_100K_2)", r"\d+\.jpg",
            ("VG_100K", "VG_100K_2", "images", "BLA_Benchmark/images"), ("images.zip", "images2.zip", "BLA_benchmark.zip"),
            ("https://cs.stanford.edu/people/rak248/VG_100K/{name}", "https://cs.stanford.edu/people/rak248/VG_100K_2/{name}"),
            "Visual Genome: CC BY 4.0 (the images are Flickr photos from YFCC100M and COCO)",
        ),
    )
}


class CorruptImageError(ValueError):
    """An image file that does not decode; the message names the file and where it was read from."""


@dataclass
class MissingReport:
    """Per source: the file names that could not be found, and how many were looked for."""

    missing: dict[str, list[str]] = field(default_factory=dict)
    wanted: dict[str, int] = field(default_factory=dict)
    searched: dict[str, list[str]] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(len(v) for v in self.missing.values())

    def __bool__(self) -> bool:
        return self.total > 0

    def lines(self, first: int = 5) -> list[str]:
        out = []
        for source, names in sorted(self.missing.items()):
            if not names:
                continue
            shown = ", ".join(sorted(names)[:first])
            more = f" (+{len(names) - first} more)" if len(names) > first else ""
            where = "; ".join(self.searched.get(source, [])) or "no location given"
            out.append(
                f"{source}: {len(names)} of {self.wanted.get(source, len(names))} files missing: {shown}{more} "
                f"[searched: {where}]"
            )
        return out

    def summary(self) -> str:
        return "\n".join(self.lines())


class MissingImagesError(FileNotFoundError):
    def __init__(self, report: MissingReport, hint: str = ""):
        self.report = report
        lines = [f"{report.total} image file(s) are missing:"] + [f"  {line}" for line in report.lines()]
        if hint:
            lines.append(hint)
        super().__init__("\n".join(lines))

    def __str__(self) -> str:  # FileNotFoundError's default str would show only errno fields
        return self.args[0]


def _by_base_name(zf: zipfile.ZipFile, where: str) -> dict[str, str]:
    """{base name: member} of a zip's files (the first of a name), the archive refused if a member could escape."""
    index: dict[str, str] = {}
    for info in safe_members(zf, where):
        if not info.is_dir():
            index.setdefault(info.filename.rsplit("/", 1)[-1], info.filename)
    return index


class _Zip:
    """A zip of an original release; members are found by base name, whatever folder holds them."""

    def __init__(self, path: Path):
        self.path = path

    @functools.cached_property
    def _zip(self) -> zipfile.ZipFile:
        try:
            return zipfile.ZipFile(self.path)
        except (zipfile.BadZipFile, OSError) as err:
            raise ImageSourceError(f"{self.path}: not a readable zip file: {err}") from None

    @functools.cached_property
    def index(self) -> dict[str, str]:
        return _by_base_name(self._zip, str(self.path))

    def read(self, name: str) -> bytes:
        return read_member(self._zip, self.index[name], str(self.path))


class ImageResolver:
    """Resolve the file names of one source to bytes (see the module docstring for the order)."""

    def __init__(
        self,
        spec: SourceSpec,
        locations: Sequence[str | os.PathLike[str]] = (),
        download: bool = False,
        cache_dir: str | os.PathLike[str] | None = None,
        retries: int = 3,
        timeout: float = 30.0,
        fetch: Callable[[str, float], bytes] | None = None,
        looked: Sequence[str] = (),
    ):
        self.spec = spec
        self.looked = list(looked)  # where else it was looked for and nothing was found (an images root), for describe()
        self.folders: list[Path] = []
        self.zips: list[_Zip] = []
        for loc in locations:
            path = Path(loc).expanduser()
            if path.is_dir():
                # the location itself, then the release's sub-folders inside it
                self.folders.append(path)
                self.folders.extend(path / sub for sub in spec.subdirs if (path / sub).is_dir())
                self.zips.extend(_Zip(path / z) for z in spec.zips if (path / z).is_file())
            elif path.is_file() and path.suffix.lower() == ".zip":
                self.zips.append(_Zip(path))
            else:
                raise ImageSourceError(f"image location for {spec.name!r} is neither a folder nor a .zip file: {path}")
        self.download = bool(download and (spec.urls or spec.archive))
        self.cache = (Path(cache_dir).expanduser() if cache_dir else images_home()) / spec.name
        self.retries = max(1, int(retries))
        self.timeout = timeout
        self._fetch = fetch or _http_get

    def _own_cache(self) -> Path:
        """The download cache, made private; one others could write into is refused (its images could be swapped)."""
        if not getattr(self, "_cache_checked", False):
            try:
                st = self.cache.lstat()
            except FileNotFoundError:
                st = None
            if st is not None and stat.S_IMODE(st.st_mode) & 0o022 and not stat.S_ISLNK(st.st_mode):
                raise ImageSourceError(f"image cache {self.cache} is a folder others could write into (mode "
                                       f"{stat.S_IMODE(st.st_mode):o}), so its images could have been swapped; delete "
                                       "it (it is downloaded again) or set $VLPROBE_IMAGE_CACHE to a folder of yours")
            home = cache_home() if self.cache.parent == cache_home() / "images" else self.cache.parent
            try:
                private_folder(self.cache, home)  # and the folders above it, up to the cache home
            except UnsafeFolderError as err:
                raise ImageSourceError(f"image cache {err}, so its images could have been swapped; set "
                                       "$VLPROBE_IMAGE_CACHE to a folder of yours") from None
            self._cache_checked = True
        return self.cache

    def describe(self) -> list[str]:
        where = [str(f) for f in self.folders] + [str(z.path) for z in self.zips] + self.looked
        if self.download:
            where.append(f"cache {self.cache}")
            if self.spec.archive is not None:
                where.append(f"extract from {self.archive_path} (downloaded from {self.spec.archive.url})")
            else:
                where.append("download from " + " | ".join(u.replace("{name}", "<name>") for u in self.spec.urls))
        return where

    @property
    def archive_path(self) -> Path:
        assert self.spec.archive is not None
        return self.cache / ".archive" / self.spec.archive.file

    def extract(self, names: Iterable[str]) -> list[str]:
        """Extract ``names`` from the source's archive into the cache; returns the names it does not hold."""
        archive = self.spec.archive
        assert archive is not None
        self._own_cache()
        path, url = self.archive_path, archive.url
        if not path.is_file():
            download_file(url, path, size=archive.size, sha256=archive.sha256, retries=self.retries,
                          timeout=self.timeout, desc=f"{self.spec.name}: {archive.file}")
        try:
            zf = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as err:
            path.unlink(missing_ok=True)
            raise CorruptArchiveError(f"{self.spec.name}: {path} (from {url}) is not a readable "
                                      f"zip archive ({err}); removed it, rerun to download it again") from None
        absent = []
        with zf:
            index = _by_base_name(zf, f"{self.spec.name}: {path}")
            for name in names:
                member = index.get(name)
                if member is None:
                    absent.append(name)
                    continue
                try:
                    data = read_member(zf, member, f"{self.spec.name}: {path} (from {url})")
                except OSError as err:
                    raise CorruptArchiveError(f"{self.spec.name}: {path} (from {url}): member "
                                              f"{member} cannot be read ({err}); delete the archive and rerun") from None
                self._store(name, data)
        return absent

    def _store(self, name: str, data: bytes) -> Path:
        """``data`` written into the cache as file ``name`` (a checked base name), in one step."""
        tmp = self.cache / f".{name}.{os.getpid()}.part"
        tmp.write_bytes(data)
        return tmp.replace(self.cache / name)

    def check(self, name: str) -> str:
        """``name`` if it is a plain file name (no path outside the image folders), else :class:`UnsafePathError`."""
        problem = name_problem(name)
        if problem:
            raise UnsafePathError(f"{self.spec.name}: image file name {name!r} {problem}; an annotation may only name "
                                  "a file, never a path")
        return name

    def _local(self, name: str) -> Path | _Zip | None:
        """The file ``name`` in a location given, or the zip given that holds it (None: in none of them)."""
        self.check(name)
        found = next((folder / name for folder in self.folders if (folder / name).is_file()), None)
        return found or next((z for z in self.zips if name in z.index), None)

    def locate(self, name: str) -> str | None:
        """Where ``name`` is available locally (a path, or ``zip!member``), without reading it."""
        found = self._local(name)
        if found is not None:
            return f"{found.path}!{found.index[name]}" if isinstance(found, _Zip) else str(found)
        if self.download:
            cached = self._own_cache() / name
            if cached.is_file():
                return str(cached)
        return None

    def read(self, name: str) -> bytes:
        """The bytes of ``name``; FileNotFoundError naming the file and the places searched."""
        found = self._local(name)
        if found is not None:
            return found.read(name) if isinstance(found, _Zip) else encoded_file(found, self.spec.name)
        if self.download:
            cached = self._own_cache() / name
            if not cached.is_file():
                if self.spec.archive is not None:
                    if self.extract([name]):
                        raise FileNotFoundError(f"{self.spec.name}: image {name} is not in {self.archive_path}")
                else:
                    self.fetch(name)
            return encoded_file(cached, self.spec.name)
        raise FileNotFoundError(f"{self.spec.name}: image {name} not found [searched: {'; '.join(self.describe())}]")

    def fetch(self, name: str) -> Path:
        """Download ``name`` into the cache, trying each URL template; transient failures are retried."""
        self.check(name)
        self._own_cache()
        errors = []
        for template in self.spec.urls:
            url = template.format(name=name)
            for attempt in range(self.retries):
                try:
                    data = self._fetch(url, self.timeout)
                except urllib.error.HTTPError as err:
                    errors.append(f"{url}: HTTP {err.code}")
                    if err.code in (404, 403, 410):
                        break  # not there: no point retrying this URL
                except (urllib.error.URLError, OSError, TimeoutError) as err:
                    errors.append(f"{url}: {err}")
                else:
                    return self._store(name, data)
                if attempt + 1 < self.retries:
                    time.sleep(min(0.5 * 2**attempt, 8.0))
        raise FileNotFoundError(f"{self.spec.name}: could not download {name}: {'; '.join(errors[-3:])}")

    def missing(self, names: Iterable[str], workers: int = 8) -> list[str]:
        """The names not available; with downloading on, the absent ones are fetched first."""
        absent = [n for n in dict.fromkeys(names) if self.locate(n) is None]
        if not absent or not self.download:
            return absent
        if self.spec.archive is not None:
            return self.extract(absent)

        def try_fetch(name: str) -> str | None:
            try:
                self.fetch(name)
                return None
            except FileNotFoundError:
                return name

        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            return [n for n in pool.map(try_fetch, absent) if n is not None]


def _http_get(url: str, timeout: float) -> bytes:
    request = urllib.request.Request(url, headers={"User-Agent": "vlprobe-image-fetch"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.read()


def check_sources(wanted: Mapping[str, Iterable[str]], resolvers: Mapping[str, ImageResolver], workers: int = 8) -> MissingReport:
    """Look every wanted file up (fetching when enabled) and report the missing ones per source."""
    report = MissingReport()
    for source, names in wanted.items():
        names = list(dict.fromkeys(names))
        resolver = resolvers[source]
        report.wanted[source] = len(names)
        report.searched[source] = resolver.describe()
        missing = resolver.missing(names, workers=workers)
        if missing:
            report.missing[source] = missing
    return report


def read_checked(resolver: ImageResolver, name: str) -> bytes:
    """The bytes of ``name``, checked to decode (a JPEG at reduced size: the whole stream is still read)."""
    data = resolver.read(name)
    try:
        with open_checked(data) as im:  # refuses images too large to decode, by their header
            im.draft("RGB", (64, 64))
            im.load()
    except ImageTooLargeError as err:
        where = resolver.locate(name) or name
        raise CorruptImageError(f"{resolver.spec.name}: image file {name} ({where}) "
                                f"{str(err).removeprefix('image <bytes> ')}") from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as err:  # ImageError is a ValueError
        where = resolver.locate(name) or name
        raise CorruptImageError(
            f"{resolver.spec.name}: image file {name} is corrupt or not an image ({where}): "
            f"{str(err).removeprefix('corrupt or unreadable image <bytes>: ')}"
        ) from None
    return data


def read_checked_many(
    requests: Iterable[tuple[ImageResolver, str]], workers: int = 2, chunk: int = 64
) -> Iterator[bytes]:
    """:func:`read_checked` over ``(resolver, name)`` pairs, in order, ``workers`` threads at a time."""
    it = iter(requests)
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        while batch := list(itertools.islice(it, chunk)):
            yield from pool.map(lambda pair: read_checked(*pair), batch)


def parse_locations(pairs: Sequence[str] | None, known: Iterable[str]) -> dict[str, list[str]]:
    """``SOURCE=PATH`` command-line pairs -> {source: [paths]}, checking the source names."""
    known = set(known)
    out: dict[str, list[str]] = {}
    for pair in pairs or ():
        source, sep, path = pair.partition("=")
        if not sep or not path:
            raise ImageSourceError(f"--image-dir expects SOURCE=PATH, got {pair!r}")
        if source not in known:
            raise ImageSourceError(f"--image-dir: unknown image source {source!r}; known: {sorted(known)}")
        out.setdefault(source, []).append(path)
    return out


def make_resolvers(
    sources: Iterable[str | SourceSpec],
    images_root: str | os.PathLike[str] | None = None,
    locations: Mapping[str, Sequence[str]] | None = None,
    download: bool = False,
    cache_dir: str | os.PathLike[str] | None = None,
    retries: int = 3,
) -> dict[str, ImageResolver]:
    """One resolver per source (a name in :data:`SOURCES` or a :class:`SourceSpec`), by name."""
    resolvers = {}
    root = Path(images_root).expanduser() if images_root else None
    if root is not None and not root.is_dir():
        raise ImageSourceError(f"--images: not a folder: {root}")
    for source in sources:
        spec = source if isinstance(source, SourceSpec) else SOURCES[source]
        name = spec.name
        locs: list[str | os.PathLike[str]] = list((locations or {}).get(name, []))
        looked: list[str] = []
        if root is not None:
            found = [root / sub for sub in spec.subdirs if (root / sub).is_dir()]
            found += [root / z for z in spec.zips if (root / z).is_file()]
            locs += found
            if not found:  # say where and what was looked for, not that no location was given
                looked.append(f"--images {root}: none of {', '.join(f'{sub}/' for sub in spec.subdirs)}"
                              f"{', ' if spec.subdirs and spec.zips else ''}{', '.join(spec.zips)} in it")
        resolvers[name] = ImageResolver(
            spec, locs, download=download, cache_dir=cache_dir, retries=retries, looked=looked
        )
    return resolvers
