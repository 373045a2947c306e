"""The one build flow of the paper benchmarks: annotation files pinned upstream and the original images
-> a Hub dataset folder. Every paper builder (VALSE, BLA, SugarCREPE, SugarCREPE++, COLA, CREPE,
VL-CheckList) is an :class:`UpstreamBuilder` that says only what is its own: which files, how a record
becomes a row, its card and its build report. The flow, in order:

1. **resolve the files** (:func:`vlprobe.builders.upstream.annotation_folder`): ``--annotations DIR``,
   else the cache, else the benchmark's upstream at its pinned commit;
2. **verify the pins**: each file against its git blob hash (a file not pinned yet is hashed and
   reported, with one warning);
3. **read the rows** (:meth:`UpstreamBuilder.read`): rows per config and split, each naming its images
   (``_images``: ``(column, source, file)`` per image); ids checked unique within each config and split
   and across the configs a pooled config reads together;
4. **check the images**: every file looked up before anything is written; a missing one stops the
   build with a report per source, unless ``--skip-missing-images`` (its rows are then left out and
   counted); a build left with no row is refused.

Steps 1-4 are :meth:`UpstreamBuilder.plan`, which writes nothing: a ``--dry-run`` option is a print of
its :class:`Plan`. Then :meth:`UpstreamBuilder.build`:

5. **stream and stage**: each config's rows to parquet in a staging folder, image bytes read and
   checked a chunk at a time (and converted where the builder stores something else, CREPE's region);
6. **publish**: the staging folder moved in (a failed build leaves the folder as it was), then the
   card, ``vlprobe.yaml`` recording the benchmark (:func:`vlprobe.dataset_folder.write_spec`), and
   ``data/BUILD.md``: rows per config against the pinned files', the rows left out, the annotation
   files used with their hashes.

A partial build is a builder whose :meth:`~UpstreamBuilder.files` and :meth:`~UpstreamBuilder.read`
return fewer configs (BLA's ``--skip-finetune``): the card still declares every config, and a config
with no files is left out of what loads (:func:`vlprobe.dataset_folder.record_data_files`).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence
from urllib.parse import urlsplit

import datasets

from .. import image_sources as imgs
from ..benchmarks import Benchmark, Upstream
from ..dataset_folder import ConfigDecl, publish_staged, staging_folder, write_spec, write_split_rows
from . import AnnotationError, cards, upstream

SPLIT = "test"  # the split of a benchmark's test configs
Rows = dict[str, dict[str, list[dict[str, Any]]]]  # config -> split -> rows


@dataclass
class Annotations:
    """What a builder read: ``rows`` per config and split (each row's ``_images`` naming its images),
    and whatever else its card and build report need (``facts``)."""

    rows: Rows
    facts: dict[str, Any] = field(default_factory=dict)


@dataclass
class Plan:
    """A build up to the point where it would write: the annotation folder, the files read (path, git
    blob hash, size, pinned or not), the rows, the images missing and the rows they leave out."""

    folder: Path
    files: list[dict[str, Any]]
    annotations: Annotations
    missing: imgs.MissingReport
    skipped: dict[str, list[str]]  # "<config>" or "<config>/<split>" -> "<id> (<files>)" of each row left out
    resolvers: dict[str, imgs.ImageResolver]

    def counts(self) -> dict[str, dict[str, int]]:
        """Rows per config and split that the build would write."""
        return {c: {s: len(rows) for s, rows in splits.items()} for c, splits in self.annotations.rows.items()}


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class UpstreamBuilder:
    """A paper benchmark's builder; a subclass sets the class attributes and implements :meth:`read`,
    :meth:`config_decls` and :meth:`write_card` (and, where it has more to say, :meth:`report`)."""

    benchmark: Benchmark
    help: str = ""
    what: str = ""  # the annotation files, in words ("the 7 SugarCREPE JSON files")
    sources: tuple[str | imgs.SourceSpec, ...] = ()  # image sources: vlprobe's by name, or the builder's own
    images_help: str = ""
    download_help: str = ""
    spec_yaml: str = ""  # the folder's vlprobe.yaml, less the benchmark, which the flow records

    # ---- what a builder says ------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.benchmark.builder or self.benchmark.name

    @property
    def title(self) -> str:
        return self.benchmark.display

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        """The builder's own options, after the shared ones."""

    def files(self, args: argparse.Namespace) -> Upstream:
        """The pinned files this build reads (all of them, or a partial build's)."""
        assert self.benchmark.upstream is not None, f"{self.name}: the benchmark pins no upstream files"
        return self.benchmark.upstream

    def read(self, folder: Path, args: argparse.Namespace) -> Annotations:
        raise NotImplementedError

    def config_decls(self) -> list[ConfigDecl]:
        raise NotImplementedError

    def features(self, config: str, split: str) -> datasets.Features:
        return next(d.features for d in self.config_decls() if d.name == config)

    def convert(self, row: Mapping[str, Any], column: str, data: bytes) -> bytes:
        """The bytes stored for one image of a row (default: the file as it is)."""
        return data

    def write_card(self, out: Path, annotations: Annotations) -> Path:
        raise NotImplementedError

    def expected(self, args: argparse.Namespace) -> dict[str, int]:
        """Rows per config a build with every image holds (the pinned files')."""
        return dict(self.benchmark.counts)

    def report(self, plan: Plan, args: argparse.Namespace) -> list[str]:
        """``data/BUILD.md``'s account of the rows (the flow adds the rows left out and the files used)."""
        return count_lines({c: sum(n.values()) for c, n in plan.counts().items()}, self.expected(args))

    def finish(self, out: Path, plan: Plan, args: argparse.Namespace) -> None:
        """Once the parquet is in, before the card, which records the files (a partial build removes
        what an earlier build left)."""

    # ---- the flow -----------------------------------------------------------------------------
    def _source_names(self) -> list[str]:
        return [s.name if isinstance(s, imgs.SourceSpec) else s for s in self.sources]

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        specs = [s if isinstance(s, imgs.SourceSpec) else imgs.SOURCES[s] for s in self.sources]
        upstream.add_arguments(parser, self.benchmark.upstream, what=self.what, sources=self._source_names(),
                               images_help=self.images_help or images_help(specs),
                               download_help=self.download_help or download_help(specs), default_out=Path(self.name))
        self.add_options(parser)

    def plan(self, args: argparse.Namespace) -> Plan:
        """Steps 1-4 (the module doc): everything read and checked, nothing written."""
        start = time.perf_counter()
        pinned = self.files(args)
        folder = upstream.annotation_folder(pinned, args.annotations, cache_dir=args.cache_dir,
                                            base_url=getattr(args, "annotations_url", None), retries=args.retries,
                                            log=_log)
        files = upstream.file_records(pinned, folder)
        annotations = self.read(folder, args)
        self._check_ids(annotations.rows)
        resolvers = imgs.make_resolvers(self.sources, images_root=args.images,
                                        locations=imgs.parse_locations(args.image_dir, self._source_names()),
                                        download=args.download, cache_dir=args.cache_dir, retries=args.retries)
        wanted: dict[str, list[str]] = {}
        for splits in annotations.rows.values():
            for rows in splits.values():
                for r in rows:
                    for _, source, file in r["_images"]:
                        wanted.setdefault(source, []).append(file)
        missing = imgs.check_sources(wanted, resolvers, workers=args.workers)
        skipped: dict[str, list[str]] = {}
        if missing:
            if not args.skip_missing_images:
                raise imgs.MissingImagesError(
                    missing, "Pass the image folders or zips (--images ROOT, --image-dir SOURCE=PATH), --download, "
                             "or --skip-missing-images to build without these rows (data/BUILD.md will list them).")
            gone = {(s, n) for s, names in missing.missing.items() for n in names}
            for config, splits in annotations.rows.items():
                for split, rows in splits.items():
                    kept = []
                    for r in rows:
                        files_gone = [f for _, s, f in r["_images"] if (s, f) in gone]
                        if files_gone:
                            where = config if len(splits) == 1 else f"{config}/{split}"
                            skipped.setdefault(where, []).append(f"{r['id']} ({', '.join(files_gone)})")
                        else:
                            kept.append(r)
                    splits[split] = kept
            _log(f"skipping {missing.total} missing image file(s):\n" + missing.summary())
            if not any(rows for splits in annotations.rows.values() for rows in splits.values()):
                raise imgs.MissingImagesError(
                    missing, "No row has its images, so there is nothing to build (--skip-missing-images leaves "
                             "out only some rows); pass the image folders or zips (--images ROOT, --image-dir "
                             "SOURCE=PATH) or --download.")
        _log(f"{self.name}: annotations read and images checked in {time.perf_counter() - start:.1f}s")
        return Plan(folder, files, annotations, missing, skipped, resolvers)

    def build(self, args: argparse.Namespace) -> Path:
        """The whole flow (the module doc); returns the folder written."""
        start = time.perf_counter()
        plan = self.plan(args)
        out = Path(args.out)

        def stream(rows: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
            requests = ((plan.resolvers[s], f) for r in rows for _, s, f in r["_images"])
            data = imgs.read_checked_many(requests, workers=args.read_workers)
            for r in rows:
                row = {k: v for k, v in r.items() if k != "_images"}
                for column, _, file in r["_images"]:
                    row[column] = {"bytes": self.convert(r, column, next(data)), "path": file}
                yield row

        stage = staging_folder(out)  # a failed build leaves the folder as it was
        try:
            for config, splits in plan.annotations.rows.items():
                t0 = time.perf_counter()
                for split, rows in splits.items():
                    write_split_rows(stage, config, split, stream(rows), self.features(config, split))
                n = sum(len(rows) for rows in splits.values())
                _log(f"{self.name}: {config}: {n} rows in {time.perf_counter() - t0:.1f}s")
        except BaseException:
            shutil.rmtree(stage, ignore_errors=True)
            raise
        publish_staged(stage, out)
        self.finish(out, plan, args)
        self.write_card(out, plan.annotations)
        write_spec(out, self.spec_yaml, self.benchmark.name)
        lines = self.report(plan, args) + skipped_lines(plan.skipped) + file_lines(self.files(args), plan.files)
        cards.write_build_report(out, f"{self.title}: this build", lines)
        expected = self.expected(args)
        for config, n in plan.counts().items():
            if config in expected and sum(n.values()) != expected[config] and not plan.skipped:
                _log(f"{self.name}: note: {config} has {sum(n.values()):,} rows, the pinned files "
                     f"{expected[config]:,}")
        total = sum(sum(n.values()) for n in plan.counts().values())
        _log(f"{self.name}: {total} rows, built in {time.perf_counter() - start:.1f}s")
        return out

    def _check_ids(self, rows: Rows) -> None:
        """Row ids unique within each config's split, and across the configs a pooled config reads
        together (VALSE's ``all``): per-item scores are keyed by them."""
        seen: dict[tuple[str, str], dict[str, str]] = {}  # (group, split) -> id -> config
        groups = {d.name: _members(d) for d in self.config_decls()}
        for config, splits in rows.items():
            pooled = [g for g, members in groups.items() if config in members] or [config]
            for split, rs in splits.items():
                own: set[str] = set()
                for r in rs:
                    if r["id"] in own:
                        raise AnnotationError(f"{self.name}: row id {r['id']!r} occurs twice in config {config!r} "
                                              f"split {split!r}")
                    own.add(r["id"])
                    for group in pooled:
                        other = seen.setdefault((group, split), {}).setdefault(r["id"], config)
                        if other != config:
                            raise AnnotationError(f"{self.name}: row id {r['id']!r} is in configs {other!r} and "
                                                  f"{config!r}, which config {group!r} reads together")


def _members(decl: ConfigDecl) -> tuple[str, ...]:
    """The configs whose parquet a config declaration reads (itself, or a pooled config's members)."""
    if decl.paths is None:
        return (decl.name,)
    return tuple(dict.fromkeys(p.split("/")[1] for files in decl.paths.values() for p in files
                               if p.startswith("data/") and p.count("/") >= 2))


def images_help(specs: Sequence[imgs.SourceSpec]) -> str:
    """``--images``' help from the image sources: the release folders (or zips) it may hold."""
    held = "; ".join(f"{s.subdirs[0]}/" + (f" (or {s.zips[0]})" if s.zips else "") for s in specs if s.subdirs)
    flat = " ".join(f"--image-dir {s.name}=FOLDER" for s in specs)
    return f"images root: a folder holding {held}; a flat folder of the files: {flat}"


def download_help(specs: Sequence[imgs.SourceSpec]) -> str:
    """``--download``'s help from the image sources: file by file from their hosts, or their archives."""
    how = []
    for s in specs:
        if s.urls:
            how.append(f"{s.title} file by file from {urlsplit(s.urls[0]).netloc}")
        elif s.archive is not None:
            how.append(f"{s.title} as its owner's archive (downloaded once, resumable)")
    return "download the images missing locally into --cache-dir: " + "; ".join(how or ["none can be downloaded"])


# ---- data/BUILD.md ----------------------------------------------------------------------------------

def count_lines(counts: Mapping[str, int], expected: Mapping[str, int]) -> list[str]:
    """Rows per config against a build with every image."""
    lines = [f"Rows in this build: **{sum(counts.values()):,}** (a build with every image: {sum(expected.values()):,}).",
             "", "| config | rows | with every image |", "|---|---:|---:|"]
    lines += [f"| `{c}` | {counts.get(c, 0):,} | {n:,} |" for c, n in expected.items()]
    return lines


def skipped_lines(skipped: Mapping[str, Sequence[str]]) -> list[str]:
    """The rows ``--skip-missing-images`` left out, per config."""
    if not skipped:
        return []
    lines = ["", "## Rows left out", "",
             "Built with `--skip-missing-images`: these rows are **not** here, because an image file was missing.", ""]
    for where, ids in sorted(skipped.items()):
        shown = ", ".join(ids[:5]) + (f" (+{len(ids) - 5} more)" if len(ids) > 5 else "")
        lines.append(f"- `{where}`: {len(ids)} row(s): {shown}")
    return lines


def file_lines(up: Upstream, records: Sequence[Mapping[str, Any]]) -> list[str]:
    """The annotation files used: path, git blob hash, bytes, and whether the hash was checked."""
    lines = ["", "## Annotation files used", "",
             f"From github.com/{up.repo} at commit `{up.commit}`, folder `{up.folder}`. A file marked "
             "**unverified** had no pinned hash in vlprobe to check it against: its hash is what this build read; "
             f"compare it with `git ls-tree {up.commit[:8]} {up.folder}<file>` in a clone to pin it.", "",
             "| file | git blob | bytes | checked |", "|---|---|---:|---|"]
    lines += [f"| `{r['path']}` | `{r['blob']}` | {r['size']:,} | {'pinned hash' if r['pinned'] else '**unverified**'} |"
              for r in records]
    return lines


def upstream_values(up: Upstream) -> dict[str, Any]:
    """What a card says of the annotation files; a file without a pinned hash says so."""
    return dict(annotations_url=up.default_url, upstream_folder=up.folder, upstream_repo=up.repo,
                upstream_commit=up.commit, url_env=up.url_env,
                files=[{"path": f.path, "blob": f.blob or "not pinned yet",
                        "size": f"{f.size:,}" if f.size is not None else "?"} for f in up.files])


def str_field(rec: Any, name: str, where: str) -> str:
    """A record's field that must be a non-empty string."""
    value = rec.get(name) if isinstance(rec, dict) else None
    if not isinstance(value, str) or not value.strip():
        raise AnnotationError(f"{where}: field {name!r} is missing or not a non-empty string")
    return value
