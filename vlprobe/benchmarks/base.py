"""What a benchmark is, as data (:class:`Benchmark`), and the registry of the modules beside this one, each defining
``BENCHMARK``. Of vlprobe it imports only :mod:`vlprobe.metric_registry`, so every layer can read it."""

from __future__ import annotations

import importlib
import os
import pkgutil
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace

from ..metric_registry import declared_names

__all__ = [  # what vlprobe.benchmarks gives
    "AUTHORS", "COUNTED", "METRIC_ORDER", "TEXT_ONLY", "TIE_CHOICES", "TIE_POLICIES",
    "Benchmark", "BenchmarkError", "ClampedAtZero", "Framing", "Group", "PaperTable", "TextOnly", "TieRule",
    "Upstream", "UpstreamFile", "benchmarks", "by_old_name", "find", "get", "shape_headline", "table",
    "tie_policy",
]

# Every metric the metric module returns, in table order (metric/valse_metric.py's METRIC_KEYS: a test holds them equal)
METRIC_ORDER = ("acc_r", "text", "image", "group", "sentence_acc", "set_acc", "set_error", "auroc",
                "acc", "macro_f1", "f1_true", "f1_false", "p_c", "p_f", "min_p")
TIE_POLICIES = declared_names("TIE_POLICIES")  # the metric module's one list (metric/valse_metric.py)
COUNTED = {"strict": "counted wrong", "half": "counted half right", "lenient": "counted right"}  # a tied comparison
AUTHORS = "authors"  # ties="authors": each split by its benchmark's authors' rule (tie_policy)
TIE_CHOICES = (AUTHORS, *TIE_POLICIES)
TEXT_ONLY = "text"  # the modality of a run that looks at no image


class BenchmarkError(ValueError):
    """A benchmark definition that contradicts itself, or a benchmark name that is not registered."""


def _known(metrics: Sequence[str], where: str) -> tuple[str, ...]:
    unknown = [m for m in metrics if m not in METRIC_ORDER]
    if unknown:
        raise BenchmarkError(f"{where}: unknown metric(s) {unknown}; the metric module's are {', '.join(METRIC_ORDER)}")
    return tuple(metrics)


@dataclass(frozen=True)
class TieRule:
    """How the authors' own code counts a tie, as the metric's tie policy that reproduces it."""

    policy: str  # strict / half / lenient
    rule: str  # what their code does, cited


AVERAGES = ("macro", "micro")


@dataclass(frozen=True)
class ClampedAtZero:
    """The authors' code ranks cosines clamped at 0 (BLA's CLIP script): negative ones tie there, unlike in the run."""

    families: tuple[str, ...]  # the scorer families whose scores are exp(logit_scale) * cosine
    rule: str  # what their code does, cited

    def departure(self, n: int, items: int, family: str | None = None) -> dict[str, str] | None:
        """The summary's departure for ``n`` negative scores of ``items`` items, where the ``family``'s are cosines."""
        # a control run's family is "<family>+<control>" (vlprobe.scorers.controls): its scores are the family's
        if not n or (family is not None and family.partition("+")[0] not in self.families):
            return None
        return {"setting": "scores", "run": f"{n} of {items} items with a negative score", "authors": "max(cos, 0)",
                "note": f"{n} of {items} items have a negative score (for a CLIP model, a negative cosine); {self.rule}: "
                        f"their figures can differ from these where an item has two or more"}


@dataclass(frozen=True)
class Group:
    """An aggregate row, the mean of ``members`` (configs, or groups declared before): ``"macro"``, unweighted (VALSE's
    Avg.); ``"micro"``, over their items (SugarCREPE's ADD). ``metrics``: default, the headline ones every member has."""

    name: str
    label: str
    members: tuple[str, ...]
    metrics: tuple[str, ...] = ()
    average: str = "macro"


@dataclass(frozen=True)
class Framing:
    """One way a benchmark's rows become items, told apart by the items' shape (TraVLR's 1 x 1 and 1 x 2)."""

    shape: tuple[int, int]
    headline: tuple[str, ...]
    label: str
    note: str = ""  # said under the table whenever a row is of this framing


@dataclass(frozen=True)
class TextOnly:
    """The paper's own text-only measure (SugarCREPE++'s TOT), for a ``--modality text`` run."""

    source: str
    names: Mapping[str, str]
    tie_rule: TieRule


@dataclass(frozen=True)
class PaperTable:
    """A table of ``vlprobe/data/paper_results.csv`` the report sets a run beside."""

    table: str
    label: str = ""  # the report's "source" column (default: "paper, <table>")


@dataclass(frozen=True)
class UpstreamFile:
    """One pinned annotation file."""

    path: str  # relative to the upstream's annotation folder (and to --annotations DIR)
    blob: str | None  # git blob sha1; None: not pinned yet (the file is used unchecked, with a warning)
    size: int | None = None

    @property
    def pinned(self) -> bool:
        return self.blob is not None


def table(text: str, cells: Collection[int]) -> list[list[str]]:
    """The rows of a text table, cells apart by spaces; a row of another number of cells than ``cells`` is refused."""
    rows = [line.split() for line in text.splitlines() if line.strip()]
    for row in rows:
        if len(row) not in cells:
            raise ValueError(f"table row {' '.join(row)!r} has {len(row)} cells, not {' or '.join(map(str, cells))}")
    return rows


@dataclass(frozen=True)
class Upstream:
    """A benchmark's annotation files at one commit of its repository."""

    benchmark: str  # the name messages use ("SugarCREPE++")
    repo: str  # owner/name on GitHub
    commit: str
    folder: str  # the files' folder in the repository, e.g. "data/"
    files: tuple[UpstreamFile, ...]
    url_env: str  # environment variable overriding the base URL
    license: str = ""
    third_party: str = ""  # a copy kept by someone else, never fetched: whose it is and what is known of it

    @property
    def fetched(self) -> bool:
        """Whether a build may download these files (a third-party copy is read only where the user has it)."""
        return not self.third_party

    @property
    def default_url(self) -> str:
        return f"https://raw.githubusercontent.com/{self.repo}/{self.commit}/{self.folder}"

    def base_url(self, override: str | None = None) -> str:
        url = override or os.environ.get(self.url_env) or self.default_url
        return url if url.endswith("/") else url + "/"

    def select(self, paths: Sequence[str]) -> Upstream:
        """These files only (a partial build), in the order given."""
        by_path = {f.path: f for f in self.files}
        unknown = [p for p in paths if p not in by_path]
        if unknown:
            raise KeyError(f"{self.benchmark}: no pinned annotation file(s) {unknown}")
        return replace(self, files=tuple(by_path[p] for p in paths))


@dataclass(frozen=True)
class Benchmark:
    """Everything vlprobe knows of one benchmark; only ``name`` and ``title`` are required. ``tie_rule``, ``modalities``,
    ``text_only`` and ``clamped`` are the authors' setting: the summary flags a run that departs from it."""

    name: str  # the registry key, recorded in each dataset folder's vlprobe.yaml
    title: str  # "VALSE (Parcalabescu et al., ACL 2022)"
    short: str = ""  # how messages name it ("VALSE"; default: name)
    source: str | None = None  # what the summary follows, "<paper>, <table or script>"; None: no paper's aggregates
    headline: tuple[str, ...] = ()  # the metrics its paper reports, in its order; () : by item shape
    primary: str | None = None  # the one metric a plot shows (default: the first headline metric present)
    probability_only: tuple[str, ...] = ()  # headline metrics shown only when the run has match probabilities
    framings: tuple[Framing, ...] = ()
    configs: tuple[str, ...] = ()  # the configs its paper reports, in the paper's order
    config_tag: str | None = None  # the tag whose values name configs (a pooled config's per-tag results)
    config_noun: str = "config"  # what its configs are called ("instrument", "subset")
    parts: Mapping[str, str] = field(default_factory=dict)  # config -> the paper's grouping shown beside it
    part_name: str = "part"  # what the paper calls that grouping (VALSE: "piece"), the summary rows' key
    groups: tuple[Group, ...] = ()
    splits: tuple[str, ...] = ()  # splits reported one row each (TraVLR's test_ind, test_ood); () : the test split
    paper_configs: Mapping[str, str] = field(default_factory=dict)  # a dataset's config -> the paper table's name
    metric_names: Mapping[str, str] = field(default_factory=dict)  # vlprobe's metric -> the paper's name (CREPE's R@1)
    tie_rule: TieRule | None = None
    clamped: ClampedAtZero | None = None  # the authors' code clamps negative cosines (BLA's CLIP script)
    modalities: tuple[str, ...] = ("image",)  # the settings the paper scores (TraVLR: image, caption, both)
    text_only: TextOnly | None = None
    caveat_tags: tuple[tuple[tuple[str, ...], str], ...] = ()  # (tags, note): said when a result has such a tag
    paper_tables: tuple[PaperTable, ...] = ()
    paper_note: str = ""  # said beside the published numbers
    probe_table: str | None = None  # the table a `vlprobe probe` run is set beside (TraVLR's Table 2)
    probe_note: str = ""
    builder: str | None = None  # `vlprobe build <builder>` makes its folder; None: read from the Hub
    hub_id: str | None = None  # where the dataset itself is published, when it is
    aliases: tuple[str, ...] = ()  # other names its folders went by, for runs and folders from before recording
    upstream: Upstream | None = None  # the pinned annotation files
    copies: tuple[Upstream, ...] = ()  # pinned third-party copies of upstream files, read from --annotations only
    counts: Mapping[str, int] = field(default_factory=dict)  # rows per config in the pinned files
    data_version: str = ""  # the upstream commit that last changed the data where known, else the pinned one
    citation: str = ""

    def __post_init__(self) -> None:
        where = f"benchmark {self.name!r}"
        _known([*self.headline, *self.probability_only, *([self.primary] if self.primary else [])], where)
        _known(list(self.metric_names), f"{where} metric_names")
        for framing in self.framings:
            _known(framing.headline, f"{where} framing {framing.label!r}")
        earlier: set[str] = set()
        for group in self.groups:  # members: configs, or groups declared before (a mean of means)
            _known(group.metrics, f"{where} group {group.name!r}")
            if group.average not in AVERAGES:
                raise BenchmarkError(f"{where}: group {group.name!r} averages {group.average!r}, not one of {AVERAGES}")
            unknown = set(group.members) - set(self.configs) - earlier
            if self.configs and unknown:
                raise BenchmarkError(f"{where}: group {group.name!r} has members that are neither its configs nor "
                                     f"groups declared before it: {sorted(unknown)}")
            earlier.add(group.name)
        if self.tie_rule is not None and self.tie_rule.policy not in TIE_POLICIES:
            raise BenchmarkError(f"{where}: tie policy {self.tie_rule.policy!r} is not one of {TIE_POLICIES}")

    @property
    def display(self) -> str:
        return self.short or self.name

    def headline_for(self, shape: tuple[int, int] | None) -> list[str]:
        """The paper's metrics for items of ``shape`` (None: mixed or unknown shapes)."""
        if self.framings and shape is None:
            return list(dict.fromkeys(k for f in self.framings for k in f.headline))
        framing = self.framing(shape)
        if framing is not None:
            return list(framing.headline)
        return list(self.headline) if self.headline and not self.framings else shape_headline(shape)

    def framing(self, shape: tuple[int, int] | None) -> Framing | None:
        return next((f for f in self.framings if shape is not None and f.shape == tuple(shape)), None)

    def tie_rule_for(self, modality: str | None) -> TieRule | None:
        """The authors' tie rule for a run of ``modality`` (a text-only run: the paper's text-only one, if any)."""
        if modality == TEXT_ONLY:
            return self.text_only.tie_rule if self.text_only is not None else None
        return self.tie_rule

    def paper_config(self, config: str) -> str:
        return self.paper_configs.get(config, config)

    def source_label(self, table: str) -> str:
        found = next((t for t in self.paper_tables if t.table == table), None)
        return (found.label if found and found.label else "") or f"paper, {table}"


def tie_policy(benchmark: Benchmark | None, ties: str, modality: str | None = None) -> str:
    """The tie policy a split is counted by: ``ties``, or under :data:`AUTHORS` its ``benchmark``'s rule, else strict."""
    if ties != AUTHORS:
        return ties
    rule = benchmark.tie_rule_for(modality) if benchmark is not None else None
    return rule.policy if rule is not None else "strict"


def shape_headline(shape: tuple[int, int] | None) -> list[str]:
    """The headline metrics of a dataset no paper defines, by its items' shape (None: mixed or unknown)."""
    if shape is None:
        return ["group", "text", "image", "acc_r", "macro_f1"]
    m, n = shape
    if m >= 2:
        return ["text", "image", "group"]
    if n == 1:
        return ["macro_f1"]
    return ["acc_r"]


_REGISTRY: dict[str, Benchmark] = {}


def benchmarks() -> dict[str, Benchmark]:
    """Every benchmark, by name: each module's ``BENCHMARK``, then the plugins' (:mod:`vlprobe.plugins`)."""
    if not _REGISTRY:
        from vlprobe import benchmarks as pkg

        found: dict[str, Benchmark] = {}
        for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
            if info.name == "base":
                continue
            module = importlib.import_module(f"{pkg.__name__}.{info.name}")
            bench = getattr(module, "BENCHMARK", None)
            if not isinstance(bench, Benchmark):
                raise BenchmarkError(f"{module.__name__}: defines no BENCHMARK (a vlprobe.benchmarks.Benchmark)")
            if bench.name in found:
                raise BenchmarkError(f"{module.__name__}: benchmark {bench.name!r} is defined twice")
            found[bench.name] = bench
        from vlprobe.plugins import benchmarks as plugin_benchmarks  # a user's own (entry points, include path)

        found.update(plugin_benchmarks(found, Benchmark))
        _REGISTRY.update(found)
    return dict(_REGISTRY)


def find(name: str | None) -> Benchmark | None:
    """The benchmark registered as ``name``, or None."""
    return benchmarks().get(name) if name else None


def get(name: str, where: str = "") -> Benchmark:
    """The benchmark registered as ``name``; a one-line :class:`BenchmarkError` naming the known ones."""
    bench = find(name)
    if bench is None:
        prefix = f"{where}: " if where else ""
        raise BenchmarkError(f"{prefix}unknown benchmark {name!r}; the benchmarks vlprobe knows: "
                             f"{', '.join(sorted(benchmarks()))}")
    return bench


def by_old_name(dataset: str) -> Benchmark | None:
    """The benchmark a dataset name (``./valse/``, ``facebook/winoground``) meant before folders recorded theirs."""
    name = os.path.basename(str(dataset).rstrip("/\\")).lower()
    alias = name.replace("-", "_")
    for bench in benchmarks().values():
        if alias == bench.name or name in bench.aliases or alias in bench.aliases:
            return bench
    return None
