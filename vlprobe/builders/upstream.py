"""Annotation files from their source, verified: the files a builder needs, pinned to one commit of
the upstream GitHub repository, each checked against its git blob hash before use.

:func:`annotation_folder` returns a folder holding every file of an :class:`Upstream`, verified:

* ``local`` given (``--annotations DIR``): the files are read from there, and each must match;
* else the cache (``<cache>/annotations/<owner>--<repo>--<commit>/``) is used, and what it lacks is
  downloaded from ``<base_url><path>`` (by default ``raw.githubusercontent.com`` at the pinned
  commit; ``--annotations-url`` or the upstream's environment variable points elsewhere, e.g. at a
  mirror or a test server), verified, then moved into the cache.

A git blob hash is ``sha1(b"blob <size>\\0" + content)``: the id ``git ls-tree`` prints, so a copy
can be checked against the repository without trusting the host that served it. A file that does
not match is refused (:class:`AnnotationChecksumError`, naming the file, where it came from and
both hashes). A file the table does not pin yet (``blob`` None: vlprobe has no copy of it to take the
hash from) is used unchecked: its hash is computed, returned by :func:`file_records` for the build
report, and one warning line says so (:func:`warn_unpinned`); known hashes are enforced as before.
Offline (``HF_DATASETS_OFFLINE`` / ``HF_HUB_OFFLINE`` set, or the host unreachable) with files
missing, :class:`AnnotationDownloadError` lists every file needed and its URL.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..locations import cache_home, images_home
from . import AnnotationError


def default_cache() -> Path:
    """vlprobe's cache folder (:func:`vlprobe.locations.cache_home`): annotations go under ``annotations/``."""
    return cache_home()


class AnnotationChecksumError(AnnotationError):
    """An annotation file whose git blob hash is not the pinned one."""


class AnnotationDownloadError(AnnotationError, FileNotFoundError):
    """Annotation files that are not available locally and could not be downloaded."""

    def __str__(self) -> str:  # FileNotFoundError's default str would show only errno fields
        return self.args[0]


@dataclass(frozen=True)
class UpstreamFile:
    path: str  # relative to the upstream's annotation folder (and to --annotations DIR)
    blob: str | None  # git blob sha1; None: not pinned yet (the file is used unchecked, with a warning)
    size: int | None = None

    @property
    def pinned(self) -> bool:
        return self.blob is not None


@dataclass(frozen=True)
class Upstream:
    """The annotation files of one benchmark at one commit of its repository."""

    benchmark: str
    repo: str  # owner/name on GitHub
    commit: str
    folder: str  # the files' folder in the repository, e.g. "data/"
    files: tuple[UpstreamFile, ...]
    url_env: str  # environment variable overriding the base URL
    license: str = ""

    @property
    def default_url(self) -> str:
        return f"https://raw.githubusercontent.com/{self.repo}/{self.commit}/{self.folder}"

    def base_url(self, override: str | None = None) -> str:
        url = override or os.environ.get(self.url_env) or self.default_url
        return url if url.endswith("/") else url + "/"

    def cache_folder(self, cache_dir: str | os.PathLike | None = None) -> Path:
        owner, name = self.repo.split("/")
        root = Path(cache_dir).expanduser() if cache_dir else default_cache()
        return root / "annotations" / f"{owner}--{name}--{self.commit[:12]}"

    def select(self, paths: Sequence[str]) -> "Upstream":
        by_path = {f.path: f for f in self.files}
        unknown = [p for p in paths if p not in by_path]
        if unknown:
            raise KeyError(f"{self.benchmark}: no pinned annotation file(s) {unknown}")
        return Upstream(self.benchmark, self.repo, self.commit, self.folder, tuple(by_path[p] for p in paths),
                        self.url_env, self.license)


def git_blob_sha1(data: bytes) -> str:
    """The id git gives a file with this content (``git hash-object``)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def verify(data: bytes, file: UpstreamFile, where: str, upstream: Upstream) -> str:
    """The file's git blob hash, refused (:class:`AnnotationChecksumError`) when it is pinned to another."""
    got = git_blob_sha1(data)
    if file.blob is not None and got != file.blob:
        raise AnnotationChecksumError(
            f"{upstream.benchmark} annotation file {file.path} from {where} is not the pinned one: git blob "
            f"{got} ({len(data):,} bytes), expected {file.blob} ({file.size:,} bytes) as in "
            f"{upstream.repo}@{upstream.commit[:12]}:{upstream.folder}{file.path}; refusing to use it"
        )
    return got


def file_records(upstream: Upstream, folder: Path) -> list[dict]:
    """Per file of ``upstream`` in ``folder`` (as :func:`annotation_folder` returned it): its path,
    git blob hash, size and whether that hash was checked against a pinned one."""
    out = []
    for f in upstream.files:
        data = (Path(folder) / f.path).read_bytes()
        out.append({"path": f.path, "blob": git_blob_sha1(data), "size": len(data), "pinned": f.pinned})
    return out


def warn_unpinned(upstream: Upstream, log=None) -> None:
    """One line, when some of ``upstream``'s files have no pinned hash: they were used unchecked."""
    unpinned = [f.path for f in upstream.files if not f.pinned]
    if not unpinned:
        return
    shown = ", ".join(unpinned[:3]) + (f" (+{len(unpinned) - 3} more)" if len(unpinned) > 3 else "")
    line = (f"{upstream.benchmark}: warning: {len(unpinned)} annotation file(s) could not be checked against a "
            f"pinned git blob hash, because vlprobe has none recorded for them yet ({shown}); the hashes of the "
            f"files used are in the build's data/BUILD.md; to pin one, compare it with what `git ls-tree "
            f"{upstream.commit[:8]} {upstream.folder}<file>` prints in a clone of github.com/{upstream.repo}")
    (log or _stderr)(line)


def _stderr(msg: str) -> None:
    import sys

    print(msg, file=sys.stderr, flush=True)


def _offline() -> bool:
    return any(os.environ.get(v, "").strip().upper() in ("1", "ON", "YES", "TRUE")
               for v in ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE"))


def _get(url: str, timeout: float) -> bytes:
    request = urllib.request.Request(url, headers={"User-Agent": "vlprobe-annotations"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.read()


def _needed_message(upstream: Upstream, missing: Sequence[UpstreamFile], base: str, why: str, cache: Path) -> str:
    lines = [f"{upstream.benchmark}: {len(missing)} annotation file(s) are not in the cache ({cache}) and {why}.",
             f"Needed from {upstream.repo} at commit {upstream.commit} (folder {upstream.folder}):"]
    lines += [f"  {f.path}  <- {base}{f.path}  " + (f"(git blob {f.blob}, {f.size:,} bytes)" if f.pinned
                                                   else "(no pinned git blob hash yet)") for f in missing]
    lines.append(f"Download them (e.g. `git clone https://github.com/{upstream.repo}` and `git checkout "
                 f"{upstream.commit}`) and pass --annotations DIR, the folder holding {upstream.folder}'s files; "
                 f"or run online once, or point --annotations-url / {upstream.url_env} at a mirror.")
    return "\n".join(lines)


def annotation_folder(
    upstream: Upstream,
    local: str | os.PathLike | None = None,
    cache_dir: str | os.PathLike | None = None,
    base_url: str | None = None,
    retries: int = 3,
    timeout: float = 60.0,
    log=None,
) -> Path:
    """A folder holding every file of ``upstream``, each verified against its git blob hash."""
    if local is not None:
        folder = Path(local).expanduser()
        absent = [f for f in upstream.files if not (folder / f.path).is_file()]
        if absent:
            shown = ", ".join(f.path for f in absent[:5]) + (f" (+{len(absent) - 5} more)" if len(absent) > 5 else "")
            raise FileNotFoundError(
                f"{upstream.benchmark} annotation file not found: {folder / absent[0].path} "
                f"({len(absent)} of {len(upstream.files)} missing in --annotations {folder}: {shown}; it should "
                f"hold {upstream.folder} of github.com/{upstream.repo} at commit {upstream.commit[:12]})")
        for f in upstream.files:
            verify((folder / f.path).read_bytes(), f, str(folder / f.path), upstream)
        warn_unpinned(upstream, log)
        return folder

    cache = upstream.cache_folder(cache_dir)
    missing = []
    for f in upstream.files:
        path = cache / f.path
        if path.is_file():
            try:
                verify(path.read_bytes(), f, str(path), upstream)
                continue
            except AnnotationChecksumError:
                path.unlink()  # a damaged cache entry: fetch it again
        missing.append(f)
    if not missing:
        warn_unpinned(upstream, log)
        return cache
    base = upstream.base_url(base_url)
    if _offline():
        raise AnnotationDownloadError(_needed_message(
            upstream, missing, base, "offline mode is on (HF_DATASETS_OFFLINE / HF_HUB_OFFLINE)", cache))
    for n, f in enumerate(missing):
        url = base + f.path
        data = None
        errors: list[str] = []
        for attempt in range(max(1, retries)):
            try:
                data = _get(url, timeout)
                break
            except urllib.error.HTTPError as err:
                errors.append(f"HTTP {err.code}")
                if err.code in (401, 403, 404, 410):
                    break
            except (urllib.error.URLError, OSError, TimeoutError) as err:
                errors.append(str(getattr(err, "reason", err)))
            if attempt + 1 < retries:
                time.sleep(min(0.5 * 2**attempt, 8.0))
        if data is None:
            raise AnnotationDownloadError(_needed_message(
                upstream, missing[n:], base, f"downloading {url} failed ({'; '.join(errors)})", cache))
        verify(data, f, url, upstream)
        target = cache / f.path
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.part")
        tmp.write_bytes(data)
        os.replace(tmp, target)
        if log:
            log(f"{upstream.benchmark}: fetched {f.path} ({len(data):,} bytes, "
                + ("git blob verified)" if f.pinned else "no pinned git blob hash to check it against)"))
    warn_unpinned(upstream, log)
    return cache


# ---- the command line every upstream builder shares ----------------------------------------------
def add_arguments(parser: argparse.ArgumentParser, up: Upstream, *, what: str, sources: Sequence[str],
                  images_help: str, download_help: str, default_out: Path) -> None:
    """The options of every ``vlprobe build <benchmark>`` whose annotations come from ``up`` and whose
    images come from original sources (``sources``): where the annotations and images are, the
    download cache and workers, what to do with missing images, ``--out``. A builder adds only its
    own options after these."""

    parser.add_argument("--annotations", type=Path, default=None,
                        help=f"a local copy of {what} (the {up.folder} folder of github.com/{up.repo} at "
                             f"{up.commit[:12]}), " + ("each file checked against its git blob hash; default: fetch "
                                                      "them from there into the cache, verified"
                                                      if all(f.pinned for f in up.files) else
                                                      "not pinned by hash yet: used unchecked, each file's git blob "
                                                      "hash recorded in data/BUILD.md; default: fetch them from "
                                                      "there into the cache"))
    parser.add_argument("--annotations-url", default=None, metavar="URL",
                        help=f"where to fetch the annotation files from instead (a mirror; default: ${up.url_env} "
                             f"or {up.default_url})")
    parser.add_argument("--images", type=Path, default=None, help=images_help)
    parser.add_argument("--image-dir", action="append", default=[], metavar="SOURCE=PATH",
                        help=f"a folder or zip for one source (repeatable); sources: {', '.join(sources)}")
    parser.add_argument("--download", action="store_true", help=download_help)
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help=f"download cache (default {images_home()} for images, "
                             f"{default_cache() / 'annotations'} for annotations)")
    parser.add_argument("--retries", type=int, default=3, help="download attempts per URL (default: 3)")
    parser.add_argument("--workers", type=int, default=8, help="parallel downloads (default: 8)")
    parser.add_argument("--read-workers", type=int, default=2, help="threads reading and checking images (default: 2)")
    parser.add_argument("--skip-missing-images", action="store_true",
                        help="leave out rows whose image is missing (data/BUILD.md lists them) instead of stopping")
    parser.add_argument("--out", type=Path, default=default_out, help="dataset folder to write (default: %(default)s)")


# ---- the pinned files -------------------------------------------------------------------------------
VALSE = Upstream(
    "VALSE", "Heidelberg-NLP/VALSE", "2152d90d4aecd11f7f74cf03420abcb63efff9c5", "data/",
    tuple(UpstreamFile(p, b, s) for p, b, s in (
        ("existence.json", "b3a65479f36ddc60f419c243a14da1fbfcba71db", 420403),
        ("plurals.json", "040fc8c011599574d38ca8ef46376bac5e4204a1", 1097122),
        ("counting-hard.json", "80db438e1c27393a7d90217cfd52d4be96484154", 537197),
        ("counting-small-quant.json", "8458f64b94d02275d2d270781000b79aab964b6c", 534996),
        ("counting-adversarial.json", "72f5ac7a2c45a59a58c44f9d80cbc555324c3cb2", 407394),
        ("relations.json", "b3f0a30d41ecd3eec6e36a253ba4de00621eae41", 664587),
        ("action-replacement.json", "7ba2fd2c2039b82755eef5c16283161063759124", 664129),
        ("actant-swap.json", "6ca5b8ea4031c953a8a2de4a5e06377a5a11ba17", 503017),
        ("coreference-standard.json", "3dc00f694e14d52f3534e9180e0e2900e5a4d952", 592329),
        ("coreference-hard.json", "7db2ec7b4b2a02723f4dd3c3e14c81f23e456cc8", 95649),
        ("foil-it.json", "1f2f1c30631c52b98be3bd2383d40dbe855ba908", 538911),
    )),
    "VLPROBE_VALSE_ANNOTATIONS_URL", "MIT",
)

BLA = Upstream(
    "BLA", "shin-ee-chen/BLA", "05009a73b910457c04c7d0f692d028954bbf7dbd", "BLA_Benchmark/annotations/",
    tuple(UpstreamFile(p, b, s) for p, b, s in (
        ("active_passive_captions.json", "8ec13c6ba25ecf52fc814bb83f3974e8164470f3", 222547),
        ("coordination_captions.json", "643fda0b05de6571ee7473d0c3a813d9bea6a4fe", 383899),
        ("relative_clause_captions.json", "b025eed99193d65aa6f444d6853dfbdb24129364", 397272),
        ("finetune/finetune_random/active_passive/train.json", "2880b198efb57aa2331104a1e4203dbe430803b9", 9790),
        ("finetune/finetune_random/active_passive/valid.json", "d102125d990ea309f0175a818a917d395b7bf2ab", 35658),
        ("finetune/finetune_random/active_passive/test.json", "7b69545568e7a9eede543ecc8e44674c24bd657b", 35637),
        ("finetune/finetune_random/coord/train.json", "8a5b26d66adfc3e18116d7b19e01d53e188abb6a", 14470),
        ("finetune/finetune_random/coord/valid.json", "fcb028b9eb6598d02f9ee436ea67f2d7f59fccb4", 53305),
        ("finetune/finetune_random/coord/test.json", "0577249b78619ef248cd549153a5d1ffe9a4e399", 52988),
        ("finetune/finetune_random/rc/train.json", "1d6201f9265ab313cea776d6c0d63f28fed21e25", 14520),
        ("finetune/finetune_random/rc/valid.json", "41885d85dc9e29c2fac49dc2dd4f934cdd34a1cb", 54319),
        ("finetune/finetune_random/rc/test.json", "4bb883539e275900663cab760f2bd3daf26b9c0b", 53866),
        ("finetune/finetune_test_golden/active_passive/train.json", "5dfb26d5bfb299e1f491a937a151ad953c287ca5", 9885),
        ("finetune/finetune_test_golden/active_passive/valid.json", "38cd486231769b172b3f4a27ce07b7e671faad62", 35853),
        ("finetune/finetune_test_golden/active_passive/test.json", "dfa61d3fdfd35c18a7f29183080987b9ea854b8f", 7475),
        ("finetune/finetune_test_golden/coord/train.json", "9c9384964122a288598f529ff062980108e878f6", 14352),
        ("finetune/finetune_test_golden/coord/valid.json", "45a271e09cb1a0050e44a9a2a30a8bca65799973", 53316),
        ("finetune/finetune_test_golden/coord/test.json", "0ee2494040f7f01bd45c887df889bc587605adc1", 9633),
        ("finetune/finetune_test_golden/rc/train.json", "832731eb317d5146770668bdaa18a6590196039e", 14561),
        ("finetune/finetune_test_golden/rc/valid.json", "83522ce731bb880f53a130ca16d2e8f8e6867fde", 54184),
        ("finetune/finetune_test_golden/rc/test.json", "4d7ed10741fbb1bf027389dec1da83947babc8ab", 6818),
        ("finetune/finetune_train_golden/active_passive/train.json", "86647ba55ec0c52b740bc4bfc8afaab45bbe2a62", 4158),
        ("finetune/finetune_train_golden/active_passive/valid.json", "a6ca73b5ff6ddb6228e132bddc16283e222a3975", 35206),
        ("finetune/finetune_train_golden/active_passive/test.json", "2f52525ebe76c19167b0e99ca094b1a6b6ce7d5b", 35806),
        ("finetune/finetune_train_golden/coord/train.json", "b9e84072929229e1290ef79636df0c61136d5754", 5193),
        ("finetune/finetune_train_golden/coord/valid.json", "20cb20fc383ebe255f3ead42bd488b9ff99db5d4", 53429),
        ("finetune/finetune_train_golden/coord/test.json", "4fae9365498255c40163e1213a5ed371b2c02afd", 53132),
        ("finetune/finetune_train_golden/rc/train.json", "cca2c513b1d7cb0d2f0112c2e0aad3286095bbb4", 3674),
        ("finetune/finetune_train_golden/rc/valid.json", "c085d88d0be15bc8900c23b5ee3247812c8b5868", 53933),
        ("finetune/finetune_train_golden/rc/test.json", "f29b92563f32dbdbc666c2ba78f4c0795d9392fd", 54020),
    )),
    "VLPROBE_BLA_ANNOTATIONS_URL", "MIT",
)

# Blob hashes checked against the files mirrored from these commits (git hash-object of each).
SUGAR_CREPE = Upstream(
    "SugarCREPE", "RAIVNLab/sugar-crepe", "0047054b243992f0fad63d6f64f7544862daf846", "data/",
    tuple(UpstreamFile(p, b, s) for p, b, s in (
        ("add_obj.json", "289b22a04690f6f542bb048346021d768ec9b24d", 484593),
        ("add_att.json", "71c463725f3f9bae0a9227a01ae5d431db235396", 158863),
        ("replace_obj.json", "1585a4a6998d785c043fb923d8e0248436d9da51", 361126),
        ("replace_att.json", "6393e04971c06cb62a8fed62ef2805ff6c7c5666", 176843),
        ("replace_rel.json", "8716359e17fa36d37e75c6eff5e94826cdb047e5", 312629),
        ("swap_obj.json", "db5abe6b488fa38c4b67d1d3da87b6b5c2e1e626", 57569),
        ("swap_att.json", "375fdd6d372e22e43c0dfbe898c1ec1494016b8c", 154665),
    )),
    "VLPROBE_SUGAR_CREPE_ANNOTATIONS_URL", "MIT",
)

SUGAR_CREPE_PP = Upstream(
    "SugarCREPE++", "Sri-Harsha/scpp", "c083bbf039a5ca215acaf25e7ee736d2ea6f3864", "data/",
    tuple(UpstreamFile(p, b, s) for p, b, s in (
        ("replace_obj.json", "3b62823c003659737a68c3d78cfe721c57b44f5f", 456601),
        ("replace_att.json", "be89e623f6fd54d015f6a437ba9a34ffa39cc465", 226275),
        ("replace_rel.json", "69d447e3fcb33817b866bd5688741f42bad7c26a", 392738),
        ("swap_obj.json", "8e9c3f66a2c2d3369146dec5324b1926b2fc1d40", 74611),
        ("swap_att.json", "61ea987bbac7d8c99e6a88f3c1028609fbea6c73", 198206),
    )),
    "VLPROBE_SUGAR_CREPE_PP_ANNOTATIONS_URL", "CC BY 4.0 (README; the repository's LICENSE file is MIT)",
)

COLA = Upstream(
    "COLA", "arijitray1993/COLA", "1fa52fba9cff4e6ffb7bfcf3550838748347273b", "data/",
    (UpstreamFile("COLA_multiobjects_matching_benchmark.json", "77fd828bc38e73f80a8e587e6357d3c2a16405cf", 56746),),
    "VLPROBE_COLA_ANNOTATIONS_URL", "MIT",
)

# Not pinned yet (blob None): vlprobe has had no copy of these files to take the hashes from. A build
# uses them unchecked, records each file's hash in data/BUILD.md and warns once (warn_unpinned).
CREPE = Upstream(
    "CREPE", "RAIVNLab/CREPE", "1fa81c425f442396fe304f170c8eb6dc0747c814", "data/",
    (UpstreamFile("syst_hard_negatives.zip", None), UpstreamFile("prod_hard_negatives.zip", None)),
    "VLPROBE_CREPE_ANNOTATIONS_URL",
)


def _vl_checklist_files() -> tuple[UpstreamFile, ...]:
    """The files the corpus yamls (``corpus/<type>/<corpus>.yaml``, ``ANNO_PATH``) point at, under data/."""
    paths = []
    for kind, leaves in (("Location", ("center", "margin", "mid")), ("Size", ("large", "medium", "small"))):
        low = kind.lower()
        paths += [f"Object/{kind}/hake_{low}/hake_obj_{leaf}.json" for leaf in leaves]
        paths += [f"Object/{kind}/swig_{low}/swig_{role}/swig_{role}_{leaf}.json"
                  for role in ("agent", "destination", "item", "tool") for leaf in leaves]
        paths += [f"Object/{kind}/vg_{low}/vg_{role}_{leaf}.json" for role in ("obj", "subj") for leaf in leaves]
    paths += [f"Attribute/{corpus}/{leaf}.json" for corpus in ("vaw", "vg")
              for leaf in ("action", "color", "material", "size", "state")]
    paths += ["Relation/hake_action.json", "Relation/swig_action.json", "Relation/vg/action.json",
              "Relation/vg/spatial.json"]
    return tuple(UpstreamFile(p, None) for p in paths)


# The issue pins the abbreviated commit 6f8d6a32; its full id was not available here.
VL_CHECKLIST = Upstream(
    "VL-CheckList", "om-ai-lab/VL-CheckList", "6f8d6a32", "data/", _vl_checklist_files(),
    "VLPROBE_VL_CHECKLIST_ANNOTATIONS_URL",
)
