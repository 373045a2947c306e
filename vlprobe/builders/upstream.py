"""Annotation files from their source, verified: each file pinned to one commit of the upstream GitHub repository
(a benchmark's :class:`~vlprobe.benchmarks.Upstream`) and checked against its git blob hash (what ``git ls-tree``
prints), so a copy is checked without trusting its host.

:func:`locate` finds each file in ``--annotations DIR``, else in the cache, else downloads it into the cache (from
``--annotations-url``, the upstream's environment variable, or raw.githubusercontent.com at the commit); a third-party
copy is read only from ``--annotations``. A file not matching its pin is refused; one not pinned yet is used with a
warning, its hash recorded in the build report."""

from __future__ import annotations

import os
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..benchmarks import Upstream, UpstreamFile
from ..storage.keys import git_blob_sha1
from ..storage.locations import cache_home, distrust, home_advice
from . import AnnotationError, shown, stderr

TIMEOUT = 60.0  # seconds per annotation file download


class AnnotationChecksumError(AnnotationError):
    """An annotation file whose git blob hash is not the pinned one."""


class AnnotationDownloadError(AnnotationError, FileNotFoundError):
    """Annotation files that are not available locally and could not be downloaded."""

    def __str__(self) -> str:  # FileNotFoundError's default str would show only errno fields
        return self.args[0]


def cache_folder(upstream: Upstream, cache_dir: str | os.PathLike | None = None) -> Path:
    """Where ``upstream``'s files are kept once fetched; refused where another user could have changed it."""
    owner, name = upstream.repo.split("/")
    root = Path(cache_dir).expanduser() if cache_dir else cache_home()
    folder = root / "annotations" / f"{owner}--{name}--{upstream.commit[:12]}"
    why = distrust(folder, root)
    if why:
        raise AnnotationError(f"not using the annotation cache {folder}: {why}, who could have changed its files; "
                              f"{home_advice(root)}, or pass --cache-dir with one (or --annotations DIR)")
    return folder


def verify(data: bytes, file: UpstreamFile, where: str, upstream: Upstream) -> str:
    """The file's git blob hash, refused (:class:`AnnotationChecksumError`) when it is pinned to another."""
    got = git_blob_sha1(data)
    if file.blob is not None and got != file.blob:
        raise AnnotationChecksumError(
            f"{upstream.benchmark} annotation file {file.path} from {where} is not the pinned one: git blob "
            f"{got} ({len(data):,} bytes), expected {file.blob}{_bytes(file, '(')} as in "
            f"{upstream.repo}@{upstream.commit[:12]}:{upstream.folder}{file.path}; refusing to use it"
        )
    return got


def _bytes(file: UpstreamFile, before: str = ",") -> str:
    """``", 1,234 bytes"`` (or ``" (1,234 bytes)"``); nothing where the pin records no size."""
    if file.size is None:
        return ""
    return f" ({file.size:,} bytes)" if before == "(" else f", {file.size:,} bytes"


@dataclass(frozen=True)
class FileRecord:
    """An annotation file a build read: path, git blob hash, size, whether its hash was pinned, and its pinned set."""

    path: str
    blob: str
    size: int
    pinned: bool
    set: Upstream

    @classmethod
    def read(cls, folder: Path, f: UpstreamFile, up: Upstream) -> FileRecord:
        data = (Path(folder) / f.path).read_bytes()
        return cls(f.path, git_blob_sha1(data), len(data), f.pinned, up)


def _offline() -> bool:
    return any(os.environ.get(v, "").strip().upper() in ("1", "ON", "YES", "TRUE")
               for v in ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE"))


def _fetch(url: str, timeout: float, retries: int) -> tuple[bytes | None, list[str], bool]:
    """(the bytes or None, each try's error, whether the host answered): up to ``retries`` tries; an HTTP answer
    that will not change (401, 403, 404, 410) ends them."""
    data, errors, reachable = None, [], True
    for attempt in range(max(1, retries)):
        try:
            request = urllib.request.Request(url, headers={"User-Agent": "vlprobe-annotations"})
            with urllib.request.urlopen(request, timeout=timeout) as response:
                data = response.read()
            break
        except urllib.error.HTTPError as err:
            errors.append(f"HTTP {err.code}")
            if err.code in (401, 403, 404, 410):
                break
        except (urllib.error.URLError, OSError, TimeoutError) as err:
            errors.append(str(getattr(err, "reason", err)))
            reachable = False
        if attempt + 1 < retries:
            time.sleep(min(0.5 * 2**attempt, 8.0))
    return data, errors, reachable


def _write_atomically(target: Path, data: bytes) -> None:
    """Write beside ``target`` and rename: a killed fetch leaves no partial file under the real name."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.part")
    tmp.write_bytes(data)
    os.replace(tmp, target)


def require_all(located: Located, upstream: Upstream, local: str | os.PathLike | None, base_url: str | None) -> None:
    """For a build that needs every file of ``upstream``: one missing stops it, naming each and where to get it."""
    absent = [f for f in upstream.files if f.path in located.absent]
    if not absent:
        return
    if local is not None:
        raise FileNotFoundError(
            f"{upstream.benchmark} annotation file not found: {located.folder / absent[0].path} ({len(absent)} of "
            f"{len(upstream.files)} missing in --annotations {located.folder}: {shown([f.path for f in absent], 5)}; it "
            f"should hold {upstream.folder} of github.com/{upstream.repo} at commit {upstream.commit[:12]})")
    why = located.absent[absent[0].path][2].removeprefix(f"not in the cache ({located.folder}) and ")
    base = upstream.base_url(base_url)
    lines = [f"{upstream.benchmark}: {len(absent)} annotation file(s) are not in the cache ({located.folder}) and {why}.",
             f"Needed from {upstream.repo} at commit {upstream.commit} (folder {upstream.folder}):"]
    lines += [f"  {f.path}  <- {base}{f.path}  " + (f"(git blob {f.blob}{_bytes(f)})" if f.pinned
                                                   else "(no pinned git blob hash yet)") for f in absent]
    lines.append(f"Download them (e.g. `git clone https://github.com/{upstream.repo}` and `git checkout "
                 f"{upstream.commit}`) and pass --annotations DIR, the folder holding {upstream.folder}'s files; "
                 f"or run online once, or point --annotations-url / {upstream.url_env} at a mirror.")
    raise AnnotationDownloadError("\n".join(lines))


@dataclass
class Located:
    """Where each annotation file of a build is: the folder, the files found (with their set), why each other is not."""

    folder: Path
    found: dict[str, tuple[UpstreamFile, Upstream]]  # path -> (its pin, its set)
    absent: dict[str, tuple[UpstreamFile, Upstream, str]]  # path -> (its pin, its set, why it is not here)


def where_to_get(f: UpstreamFile, up: Upstream) -> str:
    """One line: where a file comes from and how it is checked."""
    pin = f"git blob {f.blob}{_bytes(f)}" if f.pinned else "no pinned git blob hash"
    if up.fetched:
        return f"{up.base_url()}{f.path} ({pin})"
    return f"{f.path} of the third-party copy github.com/{up.repo}@{up.commit[:12]} ({pin}; {up.third_party})"


def locate(sets: Sequence[Upstream], local: str | os.PathLike | None = None,
           cache_dir: str | os.PathLike | None = None, base_url: str | None = None, retries: int = 3,
           log=None) -> Located:
    """The files of ``sets`` that can be had, each verified, and why each other cannot: from ``local`` if given,
    else the upstream's from the cache or downloaded (unless offline or unreachable)."""
    found: dict[str, tuple[UpstreamFile, Upstream]] = {}
    absent: dict[str, tuple[UpstreamFile, Upstream, str]] = {}
    if local is not None:
        folder = Path(local).expanduser()
        for up in sets:
            for f in up.files:
                path = folder / f.path
                if path.is_file():
                    verify(path.read_bytes(), f, str(path), up)
                    found[f.path] = (f, up)
                else:
                    absent[f.path] = (f, up, f"not in --annotations {folder}")
        _warn_unpinned_found(found, log)
        return Located(folder, found, absent)

    assert all(not up.fetched for up in sets[1:]), "only the first set (the upstream) is fetched into the cache"
    up = sets[0]
    folder = cache_folder(up, cache_dir)
    for other in sets[1:]:
        for f in other.files:
            absent[f.path] = (f, other, "a third-party copy, read only from --annotations DIR")
    wanted = []
    for f in up.files:
        path = folder / f.path
        if path.is_file():
            try:
                verify(path.read_bytes(), f, str(path), up)
                found[f.path] = (f, up)
                continue
            except AnnotationChecksumError:
                path.unlink()  # a damaged cache entry: fetch it again
        wanted.append(f)
    base = up.base_url(base_url)
    unreachable = "offline mode is on (HF_DATASETS_OFFLINE / HF_HUB_OFFLINE)" if _offline() else ""
    for f in wanted:
        if unreachable:
            absent[f.path] = (f, up, f"not in the cache ({folder}) and {unreachable}")
            continue
        url = base + f.path
        data, errors, reachable = _fetch(url, TIMEOUT, retries)
        if data is None:
            why = f"downloading {url} failed ({'; '.join(errors)})"
            absent[f.path] = (f, up, why)
            if not reachable:
                unreachable = f"the host could not be reached ({errors[-1]})"
            continue
        verify(data, f, url, up)
        _write_atomically(folder / f.path, data)
        found[f.path] = (f, up)
        if log:
            log(f"{up.benchmark}: fetched {f.path} ({len(data):,} bytes, "
                + ("git blob verified)" if f.pinned else "no pinned git blob hash to check it against)"))
    _warn_unpinned_found(found, log)
    return Located(folder, {f.path: found[f.path] for f in up.files if f.path in found}, absent)  # in the pinned order


def _warn_unpinned_found(found: dict[str, tuple[UpstreamFile, Upstream]], log=None) -> None:
    """One line per pinned set with files found that have no pinned hash: they were used unchecked."""
    by_set: dict[int, tuple[Upstream, list[str]]] = {}
    for f, up in found.values():
        if not f.pinned:
            by_set.setdefault(id(up), (up, []))[1].append(f.path)
    for up, unpinned in by_set.values():
        (log or stderr)(f"{up.benchmark}: warning: {len(unpinned)} annotation file(s) could not be checked against a "
                        f"pinned git blob hash, because vlprobe has none recorded for them yet ({shown(unpinned, 3)}); "
                        f"the hashes of the files used are in the build's data/BUILD.md; to pin one, compare it with "
                        f"what `git ls-tree {up.commit[:8]} {up.folder}<file>` prints in a clone of github.com/{up.repo}")
