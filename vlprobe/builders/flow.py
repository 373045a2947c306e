"""The one build flow of the paper benchmarks: annotation files pinned upstream and the original images -> a Hub
dataset folder. A paper builder is an :class:`UpstreamBuilder` that says only what is its own.

:meth:`UpstreamBuilder.plan` writes nothing: it resolves the files (:mod:`vlprobe.builders.upstream`), reads the rows
and looks up every image; ``--dry-run`` stops there. :meth:`~UpstreamBuilder.write` streams each config's rows to
parquet and writes the card, ``vlprobe.yaml`` and ``data/BUILD.md``. A builder that says which files each config reads
(:meth:`~UpstreamBuilder.config_files`) builds the configs whose files are at hand, in part where some are missing;
one that does not needs every file."""

from __future__ import annotations

import abc
import argparse
import os
import shutil
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, NamedTuple, TypeVar
from urllib.parse import urlsplit

import datasets

from ..benchmarks import Benchmark, Upstream, UpstreamFile
from ..dataset import image_sources as imgs
from ..dataset.folder import ConfigDecl, card_metadata, write_spec, write_split_rows
from ..storage.locations import cache_home, images_home
from . import AnnotationError, Builder, cards, read_json, shown, stderr, unchanged, upstream

SPLIT = "test"  # the split of a benchmark's test configs
R = TypeVar("R")


class Image(NamedTuple):
    """An image a row holds: the folder's column, the image source and the file's name there."""

    column: str
    source: str
    file: str


@dataclass
class Row:
    """One row of a build: its id, other columns, images, unit (:attr:`Annotations.first`) and the record it came from."""

    id: str
    columns: dict[str, Any]
    images: tuple[Image, ...]
    unit: str | None = None
    record: Any = None


Rows = dict[str, dict[str, list[Row]]]  # config -> split -> rows
# Per config, per file it reads, the paths any one of which will do (an upstream file, or a third-party copy)
Needs = tuple[tuple[str, ...], ...]


@dataclass
class Annotations:
    """What a builder read: ``rows`` per config and split, ``facts`` for its card and report, and ``first``:
    keep only the first ``first`` rows of each unit whose images can be had."""

    rows: Rows
    facts: Any = None
    first: int | None = None

    def images(self) -> Iterator[Image]:
        """Every image of every row, once per row."""
        return (i for splits in self.rows.values() for rows in splits.values() for r in rows for i in r.images)


@dataclass(frozen=True)
class Selection:
    """What :meth:`UpstreamBuilder.read` is asked to read (``args.selection``): the leaf configs, the files at hand."""

    configs: tuple[str, ...]
    files: frozenset[str]


@dataclass
class Plan:
    """A build up to where it would write: what was read, and what is missing (images, files, configs)."""

    files: list[upstream.FileRecord]
    annotations: Annotations
    missing: imgs.MissingReport
    skipped: dict[str, list[str]]  # "<config>" or "<config>/<split>" -> "<id> (<files>)" of each row left out
    resolvers: dict[str, imgs.ImageResolver]
    absent: dict[str, tuple[UpstreamFile, Upstream, str]] = field(default_factory=dict)  # path -> (pin, set, why)
    unbuilt: dict[str, list[str]] = field(default_factory=dict)  # config -> the files it lacks (none at hand)
    partial: dict[str, list[str]] = field(default_factory=dict)  # config -> the files it lacks (built from the rest)

    def counts(self) -> dict[str, dict[str, int]]:
        """Rows per config and split."""
        return {c: {s: len(rows) for s, rows in splits.items()} for c, splits in self.annotations.rows.items()}


@dataclass
class _Unit:  # the rows of one unit of one config's split, and how far they were taken
    config: str
    split: str
    where: str
    rows: list[Row]
    taken: int = 0
    kept: list[Row] = field(default_factory=list)


class UpstreamBuilder(Builder[Plan]):
    """A paper benchmark's builder: a subclass says its benchmark, attributes and :meth:`row` (or :meth:`read`)."""

    @property
    @abc.abstractmethod
    def benchmark(self) -> Benchmark:
        """The benchmark built (a subclass's class attribute)."""

    what: str = ""  # the annotation files, in words ("the 7 SugarCREPE JSON files")
    sources: tuple[str | imgs.SourceSpec, ...] = ()  # image sources: vlprobe's by name, or the builder's own
    images_help: str = ""
    download_help: str = ""
    spec_yaml: str = ""  # the folder's vlprobe.yaml, less the benchmark, which the flow records
    # the card's YAML besides the configs, English and licence "other"; pretty_name and task_categories have defaults
    card: Mapping[str, Any] = {}
    shape: str = ""  # a leaf file's JSON, in words (read_leaf)
    keyed: bool = False  # a leaf file is a JSON object of records by key, not a list
    # the configs: those reading other configs' parquet (name -> members), then the leaves with parquet of their own
    features_all: datasets.Features
    aggregates: Mapping[str, Sequence[str]] = {}
    leaves: Sequence[str] = ()
    default_config: str = "all"
    generator = Builder.generator + ("builders/upstream.py", "dataset/image_sources.py", "dataset/images.py")
    # where the annotations and images are, and how they are fetched: not inputs (what they hold is, by hash and stamp)
    not_inputs = Builder.not_inputs | {"annotations", "annotations_url", "images", "image_dir", "download", "cache_dir",
                                       "retries", "dry_run", "image_list"}

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.benchmark.builder or self.benchmark.name

    @property
    def title(self) -> str:
        return self.benchmark.display

    @property
    def needs(self) -> str:  # type: ignore[override]
        up = self.benchmark.upstream
        assert up is not None, f"{self.name}: the benchmark pins no upstream files"
        how = "downloaded by the build, checked by hash" if up.fetched else "from --annotations DIR"
        text = f"annotations: {len(up.files)} file(s) of github.com/{up.repo} at {up.commit[:7]} ({how})"
        titles = [s.title for s in self._specs()]
        return text + (f"; images: {', '.join(titles)} (--images DIR or downloaded)" if titles else "")

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        """The builder's own options, after the shared ones."""

    def files(self, args: argparse.Namespace) -> Upstream:
        """The pinned files this build reads."""
        assert self.benchmark.upstream is not None, f"{self.name}: the benchmark pins no upstream files"
        return self.benchmark.upstream

    def config_files(self) -> Mapping[str, Needs] | None:
        """Per leaf config, the files it reads (:data:`Needs`); None: every config needs every file."""
        return None

    def read(self, folder: Path, args: argparse.Namespace) -> Annotations:
        """The rows of ``args.selection`` (a :class:`Selection`); by default each leaf's file (:meth:`read_leaf`)."""
        return Annotations({c: {SPLIT: self.read_leaf(folder, c)} for c in self.leaves})

    def leaf_file(self, config: str) -> str:
        """The annotation file of a leaf config."""
        return f"{config}.json"

    def row(self, config: str, n: int, key: str, rec: object, where: str) -> Row:
        """One record of a leaf's file as a row (the arguments are what :func:`records_of` yields)."""
        raise NotImplementedError(f"{self.name}: a builder on the default read() says row()")

    def read_leaf(self, folder: Path, config: str) -> list[Row]:
        """A leaf's file, a row per record (:meth:`row`), in file order."""
        assert self.benchmark.upstream is not None
        return [self.row(config, *record) for record in
                records_of(folder, self.leaf_file(config), self.benchmark.upstream, self.shape, self.keyed)]

    def config_decls(self) -> list[ConfigDecl]:
        """:attr:`aggregates`, then :attr:`leaves`, all of split ``test`` with :attr:`features_all`."""
        return [ConfigDecl(name, self.features_all, (SPLIT,), default=name == self.default_config,
                           paths={SPLIT: [f"data/{c}/{SPLIT}-*.parquet" for c in members]})
                for name, members in self.aggregates.items()] + [
            ConfigDecl(c, self.features_all, (SPLIT,), default=c == self.default_config) for c in self.leaves]

    def features(self, config: str, split: str) -> datasets.Features:
        return next(d.features for d in self.config_decls() if d.name == config)

    def convert(self, row: Row, column: str, data: bytes) -> bytes:
        """The bytes stored for one image of a row (default: the file as it is)."""
        return data

    def card_values(self, annotations: Annotations) -> dict[str, Any]:
        """What the card's template is filled with besides the citation and pins: the same for every build."""
        return {}

    def write_card(self, out: Path, annotations: Annotations) -> Path:
        """The card: ``vlprobe/templates/<name>_card.md``."""
        up = self.benchmark.upstream
        assert up is not None
        meta = card_metadata(self.config_decls(), language=["en"], license="other", **{
            "pretty_name": self.title, "task_categories": ["image-to-text", "zero-shot-image-classification"], **self.card})
        files = [{"path": f.path, "blob": f.blob or "not pinned yet",  # a file without a pinned hash says so
                  "size": f"{f.size:,}" if f.size is not None else "not known"} for f in up.files]
        return cards.write(out, f"{self.name}_card.md", meta, citation=self.benchmark.citation.strip(), **{
            "annotations_url": up.default_url, "upstream_folder": up.folder, "upstream_repo": up.repo,
            "upstream_commit": up.commit, "url_env": up.url_env, "files": files, **self.card_values(annotations)})

    def expected(self, args: argparse.Namespace) -> dict[str, int]:
        """Rows per config a build with every image holds."""
        return dict(self.benchmark.counts)

    def report(self, plan: Plan, args: argparse.Namespace) -> list[str]:
        """``data/BUILD.md``'s account of the rows: per config, against a build with every image."""
        counts, expected = {c: sum(n.values()) for c, n in plan.counts().items()}, self.expected(args)
        lines = [f"Rows in this build: **{sum(counts.values()):,}** (a build with every image: {sum(expected.values()):,}).",
                 "", "| config | rows | with every image |", "|---|---:|---:|"]
        return lines + [f"| `{c}` | {counts.get(c, 0):,} | {n:,} |" for c, n in expected.items()]

    def finish(self, out: Path, plan: Plan, args: argparse.Namespace) -> None:
        """Once the parquet is in, before the card (which records the files)."""

    def generator_files(self) -> list[Path]:
        """Besides the code, the card's template and the benchmark's module."""
        return super().generator_files() + unchanged.package_files(
            (f"templates/{self.name}_card.md", f"benchmarks/{self.benchmark.name}.py"))

    def _specs(self) -> list[imgs.SourceSpec]:
        return [s if isinstance(s, imgs.SourceSpec) else imgs.SOURCES[s] for s in self.sources]

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        specs = self._specs()
        up = self.benchmark.upstream
        assert up is not None
        parser.add_argument("--annotations", type=Path, default=None,
                            help=f"a local copy of {self.what} (the {up.folder} folder of github.com/{up.repo} at "
                                 f"{up.commit[:12]}), " + ("each file checked against its git blob hash; default: fetch "
                                                          "them from there into the cache, verified"
                                                          if all(f.pinned for f in up.files) else
                                                          "not pinned by hash yet: used unchecked, each file's git blob "
                                                          "hash recorded in data/BUILD.md; default: fetch them from "
                                                          "there into the cache"))
        parser.add_argument("--annotations-url", default=None, metavar="URL",
                            help=f"where to fetch the annotation files from instead (a mirror; default: ${up.url_env} "
                                 f"or {up.default_url})")
        parser.add_argument("--images", type=Path, default=None, help=self.images_help or images_help(specs))
        parser.add_argument("--image-dir", action="append", default=[], metavar="SOURCE=PATH",
                            help=f"a folder or zip for one source (repeatable); sources: {', '.join(s.name for s in specs)}")
        parser.add_argument("--download", action="store_true", help=self.download_help or download_help(specs))
        parser.add_argument("--cache-dir", type=Path, default=None,
                            help=f"download cache (default {images_home()} for images, "
                                 f"{cache_home() / 'annotations'} for annotations)")
        parser.add_argument("--retries", type=int, default=3, help="download attempts per URL (default: 3)")
        parser.add_argument("--workers", type=int, default=8, help="parallel downloads (default: 8)")
        parser.add_argument("--read-workers", type=int, default=2, help="threads reading and checking images (default: 2)")
        parser.add_argument("--skip-missing-images", action="store_true",
                            help="leave out rows whose image is missing (data/BUILD.md lists them) instead of stopping")
        parser.add_argument("--configs", default=None, metavar="NAME[,NAME...]",
                            help="build only these configs (leaves, or configs that read several, such as all); "
                                 "default: every config whose annotation files are at hand")
        parser.add_argument("--dry-run", action="store_true",
                            help="read and check the annotations (fetched as for a build), print the rows per config "
                                 "and the files missing, and list the image files the rows need (--image-list); fetch "
                                 "no image, look none up unless told where they are (--images, --image-dir), write no "
                                 "dataset")
        parser.add_argument("--image-list", type=Path, default=None, metavar="FILE",
                            help="where --dry-run lists the image files needed, one per line as "
                                 "source<TAB>file<TAB>rows<TAB>found ('-': standard output; default: <out>.images.tsv)")
        self.add_options(parser)
        super().add_arguments(parser)

    def _leaves(self) -> list[str]:
        """The configs with parquet of their own, in the card's order."""
        return [d.name for d in self.config_decls() if d.paths is None]

    def _requested(self, args: argparse.Namespace) -> dict[str, list[str]] | None:
        """``--configs``: each name asked for -> its leaf configs; None: every config."""
        given = getattr(args, "configs", None)
        if not given:
            return None
        decls = {d.name: d for d in self.config_decls()}
        names = [n.strip() for n in str(given).split(",") if n.strip()]
        unknown = [n for n in names if n not in decls]
        if unknown or not names:
            raise AnnotationError(f"--configs: unknown config(s) {unknown or [given]}; {self.name}'s configs: "
                                  f"{', '.join(decls)}")
        return {n: list(_members(decls[n])) for n in names}

    def _select(self, needs: Mapping[str, Needs], requested: dict[str, list[str]] | None,
                located: upstream.Located) -> tuple[list[str], dict[str, list[str]], dict[str, list[str]]]:
        """(the leaves to build, those with none of their files, those with some)."""
        wanted = list(dict.fromkeys(c for leaves in requested.values() for c in leaves)) if requested else list(needs)
        unknown = [c for c in wanted if c not in needs]
        assert not unknown, f"{self.name}: config_files() names no files for {unknown}"
        build, unbuilt, partial = [], {}, {}
        for config in wanted:
            lacking = [alts for alts in needs[config] if not any(p in located.found for p in alts)]
            if len(lacking) == len(needs[config]):
                unbuilt[config] = [p for alts in lacking for p in alts]  # any of them would do: each named
            else:
                build.append(config)
                if lacking:
                    partial[config] = [alts[0] for alts in lacking]
        cannot = [n for n, leaves in (requested or {}).items() if not any(c in build for c in leaves)]
        if cannot or not build:
            what = cannot or list(needs)
            files = list(dict.fromkeys(p for c in wanted if c in unbuilt for p in unbuilt[c]))
            raise upstream.AnnotationDownloadError(
                f"{self.title}: cannot build {shown(what)}: none of {'its' if len(what) == 1 else 'their'} "
                f"annotation files is at hand.\n" + "\n".join(absent_files(files, located.absent))
                + "\nGive them with --annotations DIR (or run online once), or build other configs (--configs).")
        return build, unbuilt, partial

    def plan(self, args: argparse.Namespace, images: bool = True) -> Plan:
        """Everything read and checked, nothing written; a dry run (``images`` False) fetches no image."""
        start = time.perf_counter()
        requested = self._requested(args)
        needs = self.config_files()
        sets, base_url = (self.files(args), *self.benchmark.copies), getattr(args, "annotations_url", None)
        located = upstream.locate(sets, args.annotations, cache_dir=args.cache_dir, base_url=base_url,
                                  retries=args.retries, log=stderr)
        missing: dict[str, Any] = {}
        if needs is None:
            upstream.require_all(located, sets[0], args.annotations, base_url)
            leaves = list(dict.fromkeys(c for ls in requested.values() for c in ls)) if requested else self._leaves()
        else:
            leaves, unbuilt, partial = self._select(needs, requested, located)
            missing = dict(absent=located.absent, unbuilt=unbuilt, partial=partial)
            for line in missing_lines(unbuilt, partial, located.absent, markdown=False):
                stderr(f"{self.name}: {line}")
        files = [upstream.FileRecord.read(located.folder, f, up) for f, up in located.found.values()]
        selection = Selection(tuple(leaves), frozenset(located.found))
        annotations = self.read(located.folder, argparse.Namespace(**vars(args), selection=selection))
        if requested:  # a builder that reads every file: keep what was asked for
            annotations.rows = {c: splits for c, splits in annotations.rows.items() if c in leaves}
        self._check_ids(annotations.rows)
        look = images or bool(args.images or args.image_dir)
        resolvers = imgs.make_resolvers(self.sources, images_root=args.images,
                                        locations=imgs.parse_locations(args.image_dir, [s.name for s in self._specs()]),
                                        download=args.download and images, cache_dir=args.cache_dir,
                                        retries=args.retries) if look else {}
        report, skipped = self._take_rows(annotations, resolvers, args, refill=images)
        if images:
            stderr(f"{self.name}: annotations read and images checked in {time.perf_counter() - start:.1f}s")
        return Plan(files, annotations, report, skipped, resolvers, **missing)

    def _take_rows(self, annotations: Annotations, resolvers: dict[str, imgs.ImageResolver],
                   args: argparse.Namespace, refill: bool) -> tuple[imgs.MissingReport, dict[str, list[str]]]:
        """Each unit's first N rows whose images can be had, in place; with ``--skip-missing-images``
        a row missing one is left out and the unit's next taken. A dry run (``refill`` False) only reports."""
        first = annotations.first
        units: list[_Unit] = []
        for config, splits in annotations.rows.items():
            for split, rows in splits.items():
                grouped: dict[str | None, list[Row]] = {}
                for r in rows:
                    grouped.setdefault(r.unit, []).append(r)
                where = config if len(splits) == 1 else f"{config}/{split}"
                units += [_Unit(config, split, where, rs) for rs in grouped.values()]
        report = imgs.MissingReport()
        known: dict[tuple[str, str], bool] = {}  # (source, file) -> can be had
        skipped: dict[str, list[str]] = {}
        batches = [u.rows[:first] if first else u.rows for u in units]
        while any(batches):
            self._look_up([r for b in batches for r in b], resolvers, known, report, args)
            for u, batch in zip(units, batches):
                u.taken += len(batch)
                for r in batch:
                    gone = [f for _, s, f in r.images if not known.get((s, f), True)]
                    if gone and refill:
                        skipped.setdefault(u.where, []).append(f"{r.id} ({', '.join(gone)})")
                    else:
                        u.kept.append(r)
            batches = [u.rows[u.taken:u.taken + first - len(u.kept)] if refill and first and len(u.kept) < first else []
                       for u in units]
        for config, splits in annotations.rows.items():
            for split in splits:
                splits[split] = [r for u in units if (u.config, u.split) == (config, split) for r in u.kept]
        if report and refill:
            stderr(f"skipping {report.total} missing image file(s):\n" + report.summary())
            if not any(rows for splits in annotations.rows.values() for rows in splits.values()):
                raise imgs.MissingImagesError(
                    report, "No row has its images, so there is nothing to build (--skip-missing-images leaves "
                            "out only some rows); pass the image folders or zips (--images ROOT, --image-dir "
                            "SOURCE=PATH) or --download.")
        return report, skipped

    def _look_up(self, rows: list[Row], resolvers: dict[str, imgs.ImageResolver],
                 known: dict[tuple[str, str], bool], report: imgs.MissingReport, args: argparse.Namespace) -> None:
        """Look up the images not looked at before; a missing one stops the build unless told otherwise."""
        if not resolvers:
            return
        wanted: dict[str, list[str]] = {}
        for r in rows:
            for _, source, file in r.images:
                if (source, file) not in known:
                    wanted.setdefault(source, []).append(file)
        if not wanted:
            return
        found = imgs.check_sources(wanted, resolvers, workers=args.workers)
        for source, names in wanted.items():
            gone = set(found.missing.get(source, ()))
            for name in names:
                known[(source, name)] = name not in gone
            report.wanted[source] = report.wanted.get(source, 0) + len(dict.fromkeys(names))
            report.searched[source] = found.searched.get(source, [])
            if gone:
                report.missing.setdefault(source, []).extend(sorted(gone))
        if report and not args.skip_missing_images and not getattr(args, "dry_run", False):
            raise imgs.MissingImagesError(
                report, "Pass the image folders or zips (--images ROOT, --image-dir SOURCE=PATH), --download, "
                        "or --skip-missing-images to build without these rows (data/BUILD.md will list them).")

    def dry_run(self, args: argparse.Namespace) -> Path | str:
        """``--dry-run``: print what ``data/BUILD.md`` would say, list the images needed; returns where."""
        plan = self.plan(args, images=False)
        needed = Counter((i.source, i.file) for i in plan.annotations.images())
        looked = bool(plan.resolvers)
        gone = {(s, n) for s, names in plan.missing.missing.items() for n in names}
        listing = ["source\tfile\trows\tfound"] + [
            f"{s}\t{f}\t{n}\t{('no' if (s, f) in gone else 'yes') if looked else '-'}" for (s, f), n in sorted(needed.items())]
        target = args.image_list or Path(f"{Path(args.out)}.images.tsv")
        lines = [f"{self.title}: dry run: the annotations are read and checked; nothing is built, and no image is "
                 + ("fetched." if looked else "looked at."), ""]
        lines += self.account(plan, args)
        per_source = Counter(s for s, _ in needed)
        lines += ["", "## Images", "", f"The rows need **{len(needed):,}** image files ("
                  + ", ".join(f"{s}: {n:,}" for s, n in sorted(per_source.items())) + "), listed in "
                  + ("the list below" if str(target) == "-" else f"`{target}`") + "."]
        if looked:
            lines.append(f"Of these, {len(needed) - len(gone):,} are where --images / --image-dir say and {len(gone):,} "
                         "are not (found = no in the list).")
        if plan.annotations.first:
            lines.append(f"Each unit's first {plan.annotations.first:,} rows are listed; where one of their images is "
                         "missing, a build with --skip-missing-images takes the unit's next rows instead, whose images "
                         "are not listed.")
        print("\n".join(lines))
        if str(target) == "-":
            print("\n".join(listing))
            return "-"
        target = Path(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join(listing) + "\n", encoding="utf-8")
        return target

    def account(self, plan: Plan, args: argparse.Namespace) -> list[str]:
        """What ``data/BUILD.md`` says (and a dry run prints): the rows, those left out, what is missing, the files."""
        return (self.report(plan, args) + skipped_lines(plan.skipped)
                + missing_lines(plan.unbuilt, plan.partial, plan.absent) + file_lines(self.files(args), plan.files))

    def build(self, args: argparse.Namespace) -> Path | str:  # type: ignore[override]
        """The whole flow; returns the folder written (a dry run: where the image list went)."""
        if getattr(args, "dry_run", False):
            return self.dry_run(args)
        return super().build(args)

    def files_read(self, args: argparse.Namespace, plan: Plan) -> dict[str, unchanged.Read]:
        """The annotation files (by git blob hash) and the rows' images (by stamp)."""
        named = {f"{i.source}/{i.file}": i for i in plan.annotations.images()}
        images = {name: _file_of(plan.resolvers[i.source].locate(i.file) or i.file) for name, i in named.items()}
        return {"annotations": unchanged.hashes({f.path: f.blob for f in plan.files}), "images": unchanged.stamps(images)}

    def write(self, folder: Path, plan: Plan, args: argparse.Namespace) -> None:
        """The parquet, card, ``vlprobe.yaml`` and ``data/BUILD.md``."""
        start = time.perf_counter()

        def stream(rows: list[Row]) -> Iterator[dict[str, Any]]:
            requests = ((plan.resolvers[s], f) for r in rows for _, s, f in r.images)
            data = imgs.read_checked_many(requests, workers=args.read_workers)
            for r in rows:
                yield {"id": r.id, **r.columns, **{column: {"bytes": self.convert(r, column, next(data)), "path": file}
                                                   for column, _, file in r.images}}

        for config, splits in plan.annotations.rows.items():
            t0 = time.perf_counter()
            for split, rows in splits.items():
                write_split_rows(folder, config, split, stream(rows), self.features(config, split))
            n = sum(len(rows) for rows in splits.values())
            stderr(f"{self.name}: {config}: {n} rows in {time.perf_counter() - t0:.1f}s")
        for config in self._leaves():  # the folder holds this build: configs an earlier build wrote go
            if config not in plan.annotations.rows:
                shutil.rmtree(folder / "data" / config, ignore_errors=True)
        self.finish(folder, plan, args)
        self.write_card(folder, plan.annotations)
        write_spec(folder, self.spec_yaml, self.benchmark.name)
        cards.write_build_report(folder, f"{self.title}: this build", self.account(plan, args))
        expected = self.expected(args)
        for config, n in plan.counts().items():
            if (config in expected and sum(n.values()) != expected[config] and not plan.skipped
                    and config not in plan.partial):
                stderr(f"{self.name}: note: {config} has {sum(n.values()):,} rows, the pinned files "
                     f"{expected[config]:,}")
        total = sum(sum(n.values()) for n in plan.counts().values())
        stderr(f"{self.name}: {total} rows, built in {time.perf_counter() - start:.1f}s")

    def _check_ids(self, rows: Rows) -> None:
        """Row ids unique per config's split and across a pooled config's members: scores are keyed by them."""
        seen: dict[tuple[str, str], dict[str, str]] = {}  # (group, split) -> id -> config
        groups = {d.name: _members(d) for d in self.config_decls()}
        for config, splits in rows.items():
            pooled = [g for g, members in groups.items() if config in members] or [config]
            for split, rs in splits.items():
                own: set[str] = set()
                for r in rs:
                    if r.id in own:
                        raise AnnotationError(f"{self.name}: row id {r.id!r} occurs twice in config {config!r} "
                                              f"split {split!r}")
                    own.add(r.id)
                    for group in pooled:
                        other = seen.setdefault((group, split), {}).setdefault(r.id, config)
                        if other != config:
                            raise AnnotationError(f"{self.name}: row id {r.id!r} is in configs {other!r} and "
                                                  f"{config!r}, which config {group!r} reads together")


def _file_of(located: str) -> str:
    """The file an image is read from: itself, or the zip holding it (``zip!member``)."""
    head = located
    while not os.path.isfile(head) and "!" in head:
        head = head.rsplit("!", 1)[0]
    return head


def _members(decl: ConfigDecl) -> tuple[str, ...]:
    if decl.paths is None:
        return (decl.name,)
    return tuple(dict.fromkeys(p.split("/")[1] for files in decl.paths.values() for p in files
                               if p.startswith("data/") and p.count("/") >= 2))


def images_help(specs: Sequence[imgs.SourceSpec]) -> str:
    """``--images``' help from the image sources."""
    held = "; ".join(f"{s.subdirs[0]}/" + (f" (or {s.zips[0]})" if s.zips else "") for s in specs if s.subdirs)
    flat = " ".join(f"--image-dir {s.name}=FOLDER" for s in specs)
    return f"images root: a folder holding {held}; a flat folder of the files: {flat}"


def download_help(specs: Sequence[imgs.SourceSpec]) -> str:
    """``--download``'s help from the image sources."""
    how = []
    for s in specs:
        if s.urls:
            how.append(f"{s.title} file by file from {urlsplit(s.urls[0]).netloc}")
        elif s.archive is not None:
            how.append(f"{s.title} as its owner's archive (downloaded once, resumable)")
    return "download the images missing locally into --cache-dir: " + "; ".join(how or ["none can be downloaded"])


def skipped_lines(skipped: Mapping[str, Sequence[str]]) -> list[str]:
    """The rows ``--skip-missing-images`` left out, per config."""
    if not skipped:
        return []
    lines = ["", "## Rows left out", "",
             "Built with `--skip-missing-images`: these rows are **not** here, because an image file was missing.", ""]
    for where, ids in sorted(skipped.items()):
        lines.append(f"- `{where}`: {len(ids)} row(s): {shown(ids, 5)}")
    return lines


def pct(n: float, d: float = 1) -> str:
    """``n / d`` as a percentage with one decimal ("-" for no ``d``)."""
    return f"{100 * n / d:.1f}" if d else "-"


def has_upper(text: str) -> bool:
    return any(ch.isupper() for ch in text)


def absent_files(paths: Sequence[str], absent: Mapping[str, tuple[UpstreamFile, Upstream, str]]) -> list[str]:
    """One line per missing file: its path, why it is not here and where to get it."""
    out = []
    for path in paths:
        if path in absent:
            f, up, why = absent[path]
            out.append(f"  {path}: {why}; get it from {upstream.where_to_get(f, up)}")
        else:
            out.append(f"  {path}")
    return out


def missing_lines(unbuilt: Mapping[str, Sequence[str]], partial: Mapping[str, Sequence[str]],
                  absent: Mapping[str, tuple[UpstreamFile, Upstream, str]], markdown: bool = True) -> list[str]:
    """The configs not built or built in part, and the files missing: as markdown, or as the log's lines."""
    if not unbuilt and not partial:
        return []
    files = list(dict.fromkeys(p for lacking in (*unbuilt.values(), *partial.values()) for p in lacking))
    if not markdown:
        out = []
        if unbuilt:
            out.append(f"{len(unbuilt)} config(s) not built, none of their annotation files at hand: {shown(list(unbuilt))}")
        if partial:
            out.append(f"{len(partial)} config(s) built from part of their annotation files: "
                       + "; ".join(f"{c} (lacking {len(ls)})" for c, ls in partial.items()))
        return out + [f"missing {line.strip()}" for line in absent_files(files, absent)]
    lines = ["", "## Configs not built, or built in part", "",
             "This build had only some of the annotation files. "
             + (f"**Not built** (none of their files at hand): {', '.join(f'`{c}`' for c in unbuilt)}. " if unbuilt else "")
             + ("**Built in part** (from the files at hand; their figures are not the benchmark's): "
                + ", ".join(f"`{c}` (lacking {len(ls)} of its files)" for c, ls in partial.items()) + "." if partial else ""),
             "", "| missing file | why | where to get it |", "|---|---|---|"]
    for path in files:
        if path in absent:
            f, up, why = absent[path]
            lines.append(f"| `{path}` | {why} | {upstream.where_to_get(f, up)} |")
    return lines


def file_lines(up: Upstream, records: Sequence[upstream.FileRecord]) -> list[str]:
    """The annotation files used, per pinned set: path, git blob hash, bytes, whether the hash was checked."""
    lines = ["", "## Annotation files used"]
    sets: dict[int, tuple[Upstream, list[upstream.FileRecord]]] = {}
    for r in records:
        sets.setdefault(id(r.set), (r.set, []))[1].append(r)
    for s, rows in sets.values() or [(up, [])]:
        whose = (f"From the third-party copy github.com/{s.repo} at commit `{s.commit}` ({s.third_party})"
                 if s.third_party else f"From github.com/{s.repo} at commit `{s.commit}`")
        lines += ["", f"{whose}, folder `{s.folder or '/'}`. A file marked **unverified** had no pinned hash in vlprobe to "
                      f"check it against: its hash is what this build read; compare it with `git ls-tree {s.commit[:8]} "
                      f"{s.folder}<file>` in a clone to pin it.", "",
                  "| file | git blob | bytes | checked |", "|---|---|---:|---|"]
        lines += [f"| `{r.path}` | `{r.blob}` | {r.size:,} | {'pinned hash' if r.pinned else '**unverified**'} |"
                  for r in rows]
    return lines


def records_of(folder: Path, file: str, up: Upstream, shape: str, keyed: bool = False) -> Iterator[tuple[int, str, object, str]]:
    """Each record of an annotation file (a list, or by key): (its position, its key, the record, where it is)."""
    data = read_json(folder / file, up.benchmark, dict if keyed else list, shape,
                     f"pass --annotations DIR, the {up.folder} folder of github.com/{up.repo}")
    for n, (key, rec) in enumerate(data.items() if isinstance(data, dict) else enumerate(data)):
        yield n, str(key), rec, f"{file} record {key!r}"


def parse_record(kind: type[R], rec: object, where: str, source: str | None = None) -> R:
    """An annotation record as ``kind``, a dataclass of its keys, or one :class:`AnnotationError` naming ``where``."""
    if not isinstance(rec, dict):
        raise AnnotationError(f"{where}: expected a JSON object")
    declared = fields(kind)  # type: ignore[arg-type]
    unknown = set(rec) - {f.name for f in declared}
    if unknown:
        raise AnnotationError(f"{where}: unknown field(s) {sorted(unknown)}; the builder would drop them")
    values = {}
    for f in declared:
        value = rec.get(f.name, None if f.default is MISSING else f.default)
        if f.type == "str" and (not isinstance(value, str) or not value.strip()):
            raise AnnotationError(f"{where}: field {f.name!r} is missing or not a non-empty string")
        if f.type == "int" and (not isinstance(value, int) or isinstance(value, bool)):
            raise AnnotationError(f"{where}: field {f.name!r} is missing or not an integer")
        if f.default is MISSING and f.name not in rec:
            raise AnnotationError(f"{where}: field {f.name!r} is missing")
        values[f.name] = value
    record = kind(**values)
    filename = getattr(record, "filename", None)
    if source is not None and not (isinstance(filename, str) and imgs.SOURCES[source].matches(filename)):
        spec = imgs.SOURCES[source]
        raise AnnotationError(f"{where}: filename {filename!r} is not a {spec.title} file name (it must match "
                              f"{spec.pattern})")
    return record
