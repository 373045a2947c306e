"""Downloading an image source's release archive (resumed, retried, checked), and reading archives safely (no
member may escape its folder; inflated sizes bounded).
"""

from __future__ import annotations

import http.client
import os
import re
import stat
import sys
import time
import urllib.error
import urllib.request
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from tqdm.auto import tqdm

from ..storage.keys import sha256_files
from ..storage.paths import relative_problem


@dataclass(frozen=True)
class Archive:
    """A source's files as its owner publishes them: one archive; ``size`` / ``sha256`` checked when published."""

    url: str
    file: str  # the archive's name in the cache (and in the release)
    size: int | None = None
    sha256: str | None = None


class ImageSourceError(ValueError):
    """Bad image-source arguments (unknown source name, a location that does not exist)."""


class ArchiveError(ImageSourceError):
    """A source archive that cannot be used; the message names the archive (and URL or member)."""


class ArchiveDownloadError(ArchiveError):
    """An archive that could not be downloaded (the message names the URL and the HTTP status)."""


class CorruptArchiveError(ArchiveError):
    """A downloaded archive that is not the published one (size, checksum, not a zip, bad CRC)."""


class UnsafeArchiveError(ArchiveError):
    """An archive member whose path would escape the folder it is extracted to: the archive is refused."""


class ArchiveBombError(ArchiveError):
    """A member that inflates past :data:`MAX_MEMBER_BYTES` or :data:`MAX_RATIO` times its size (a zip bomb)."""


# Bounds on one archive member: the largest real one is a few hundred MB of CSV; text deflates 3-10x, a bomb 1000x.
MAX_MEMBER_BYTES = 1 << 30  # 1 GiB inflated
MAX_RATIO = 200             # inflated / compressed, judged on members over RATIO_FLOOR
RATIO_FLOOR = 1 << 20       # small members may compress well (a blank PNG, a short JSON file)
_READ_BLOCK = 1 << 20


def _bomb(where: str, name: str, what: str) -> ArchiveBombError:
    return ArchiveBombError(f"{where}: member {name!r} {what}; refused as a possible zip bomb (vlprobe reads members "
                            f"up to {MAX_MEMBER_BYTES:,} bytes and {MAX_RATIO}x compression)")


def read_member(zf: zipfile.ZipFile, member: str | zipfile.ZipInfo, where: str) -> bytes:
    """The bytes of one archive member, refused (:class:`ArchiveBombError`) before it inflates past the bounds."""
    info = member if isinstance(member, zipfile.ZipInfo) else zf.getinfo(member)
    declared, packed = info.file_size, max(1, info.compress_size)
    if declared > MAX_MEMBER_BYTES:
        raise _bomb(where, info.filename, f"declares {declared:,} bytes inflated")
    if declared > RATIO_FLOOR and declared / packed > MAX_RATIO:
        raise _bomb(where, info.filename, f"inflates {packed:,} bytes to {declared:,} ({declared // packed:,}x)")
    limit = min(MAX_MEMBER_BYTES, max(declared, RATIO_FLOOR, packed * MAX_RATIO))
    out = bytearray()
    try:
        with zf.open(info) as fh:
            while block := fh.read(_READ_BLOCK):
                out += block
                if len(out) > declared or len(out) > limit:  # a header that lies about the size
                    raise _bomb(where, info.filename, f"inflates past its declared {declared:,} bytes")
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as err:
        # a bad CRC-32, a damaged deflate stream, a member cut short, an unknown compression or an encrypted member
        raise CorruptArchiveError(f"{where}: member {info.filename!r} cannot be read ({err}); the archive is damaged "
                                  "(delete it and get it again)") from None
    return bytes(out)


def safe_members(zf: zipfile.ZipFile, where: str) -> list[zipfile.ZipInfo]:
    """The archive's members, refusing the archive if any path could escape the target folder."""
    infos = zf.infolist()
    for info in infos:
        link = info.create_system == 3 and stat.S_ISLNK(info.external_attr >> 16)
        reason = "is a symbolic link" if link else relative_problem(info.filename)  # absolute, '..', NUL...
        if reason:
            raise UnsafeArchiveError(f"{where}: member {info.filename!r} {reason}, which could write outside "
                                     "the folder it is extracted to; refusing the archive")
    return infos


def download_file(
    url: str,
    target: Path,
    *,
    size: int | None = None,
    sha256: str | None = None,
    retries: int = 3,
    timeout: float = 60.0,
    desc: str | None = None,
    chunk: int = 1 << 20,
) -> Path:
    """Download ``url`` to ``target`` through ``target.part`` (resumed, retried), its size and ``sha256`` checked."""
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(target.name + ".part")
    errors: list[str] = []
    expected = size
    for attempt in range(max(1, retries)):
        have = part.stat().st_size if part.is_file() else 0
        headers = {"User-Agent": "vlprobe-image-fetch"}
        if have:
            headers["Range"] = f"bytes={have}-"
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout) as resp:
                length = resp.headers.get("Content-Length")
                if have and resp.status == 206:
                    mode = "ab"
                    m = re.search(r"/(\d+)\s*$", resp.headers.get("Content-Range", ""))
                    total = int(m.group(1)) if m else (have + int(length) if length else None)
                else:
                    mode, have = "wb", 0
                    total = int(length) if length else None
                if total is not None:
                    if expected is not None and total != expected:
                        raise CorruptArchiveError(f"{url}: the server announces {total:,} bytes, the published size "
                                                  f"is {expected:,}; refusing it")
                    expected = total
                with open(part, mode) as fh, tqdm(total=total, initial=have, unit="B", unit_scale=True,
                                                  desc=desc or target.name, disable=None, file=sys.stderr) as bar:
                    while block := resp.read(chunk):
                        fh.write(block)
                        bar.update(len(block))
            got = part.stat().st_size
            if expected is not None and got < expected:
                raise http.client.IncompleteRead(b"", expected - got)
            break
        except urllib.error.HTTPError as err:
            if err.code == 416 and have:  # the part already holds everything
                break
            errors.append(f"HTTP {err.code}")
            if 400 <= err.code < 500 and err.code not in (408, 429):
                raise ArchiveDownloadError(f"could not download {url}: HTTP {err.code} ({err.reason})") from None
        except (urllib.error.URLError, http.client.HTTPException, OSError, TimeoutError) as err:
            errors.append(f"{type(err).__name__}: {getattr(err, 'reason', err)}")
        if attempt + 1 < retries:
            time.sleep(min(0.5 * 2**attempt, 8.0))
    else:
        raise ArchiveDownloadError(f"could not download {url} after {retries} attempt(s): {'; '.join(errors[-3:])} "
                                   f"(the part downloaded so far is kept in {part}; rerun to resume)")
    got = part.stat().st_size
    if expected is not None and got != expected:
        part.unlink()
        raise CorruptArchiveError(f"{url}: downloaded {got:,} bytes, expected {expected:,}; removed it, rerun to retry")
    digest = sha256_files([part])[0] if sha256 else None
    if sha256 and digest != sha256.lower():
        part.unlink()
        raise CorruptArchiveError(f"{url}: sha256 {digest} is not the published {sha256}; removed it")
    os.replace(part, target)
    return target
