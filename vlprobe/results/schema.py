"""The declared shape of ``results.json``: frozen records it is written from (:func:`dump`), read and checked by
(:func:`parse`: a :class:`SchemaError` names the field) and published as a JSON Schema by (:func:`json_schema`)."""

from __future__ import annotations

import math
import types
from collections.abc import Callable, Mapping
from collections.abc import Mapping as _Mapping
from collections.abc import Sequence as _Sequence
from dataclasses import MISSING, dataclass, field, fields, is_dataclass
from functools import cache
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    Literal,
    TypeAlias,
    TypeVar,
    Union,
    cast,
    get_args,
    get_origin,
    get_type_hints,
    overload,
)

import numpy as np

from ..benchmarks import METRIC_ORDER, TIE_CHOICES, TIE_POLICIES

T = TypeVar("T")
RESULTS_FORMAT = "vlprobe-results/3"  # 3: records (kind, names not paths, dataset_version); 2: recorded benchmarks


@dataclass(frozen=True)
class Range:
    """Bounds of a number, checked on reading and published in the schema."""

    minimum: float | None = None
    maximum: float | None = None
    exclusive: bool = False

    def problem(self, v: float) -> str | None:
        lo, hi, ex = self.minimum, self.maximum, self.exclusive
        below = lo is not None and (v <= lo if ex else v < lo - 1e-9)
        above = hi is not None and (v >= hi if ex else v > hi + 1e-9)
        if not (below or above):
            return None
        if lo is not None and hi is not None:
            return f"must be strictly between {lo:g} and {hi:g}" if ex else f"must be in [{lo:g}, {hi:g}]"
        return f"must be at least {lo:g}" if lo is not None else f"must be at most {hi:g}"


Fraction = Annotated[float, Range(0.0, 1.0)]  # a metric's value: tables print it in %
Count = Annotated[int, Range(0)]
Positive = Annotated[int, Range(1)]
if TYPE_CHECKING:  # a type checker takes no Literal of a variable: to it these are strings
    MetricName: TypeAlias = str
    TiePolicy: TypeAlias = str
    TieChoice: TypeAlias = str
    ResultsFormat: TypeAlias = str
else:
    MetricName = Literal[METRIC_ORDER]  # the metric module's metrics (vlprobe.benchmarks.METRIC_ORDER)
    TiePolicy = Literal[TIE_POLICIES]
    TieChoice = Literal[TIE_CHOICES]  # a run's ties setting: a policy, or "authors" (each split by its benchmark's rule)
    ResultsFormat = Literal[RESULTS_FORMAT]
Interval = tuple[Fraction | None, Fraction | None]  # [low, high] of a bootstrap CI


def flat() -> dict[str, Any]:
    """A mapping whose keys sit in the record's own JSON object."""
    return field(default_factory=dict, metadata={"flat": True})


def rest() -> dict[str, Any]:
    """An open record's JSON object as recorded, written back as it was: its typed fields are checked views of it."""
    return field(default_factory=dict, metadata={"rest": True})


@overload
def opt(*, key: str | None = None) -> None: ...
@overload
def opt(default: T, *, key: str | None = None) -> T: ...
@overload
def opt(*, factory: Callable[[], T]) -> T: ...
def opt(default: object = None, *, key: str | None = None, factory: Callable[[], object] | None = None) -> object:
    """A field left out of the JSON while it holds its default. ``key``: its JSON name, where not its own."""
    meta = {"omit": True, **({"key": key} if key else {})}
    return field(default_factory=factory, metadata=meta) if factory is not None else field(default=default, metadata=meta)


class SchemaError(ValueError):
    """JSON that is not the declared shape: ``where`` names the field (``results[0].metrics.n_items``)."""

    def __init__(self, where: str, message: str) -> None:
        self.where, self.detail = where, message
        super().__init__(f"{where}: {message}" if where else message)


@dataclass(frozen=True)
class ScoreRange:
    """The lowest and highest score of a split's items, and the items scoring below 0 (BLA's CLIP script clamps at 0)."""

    min: float
    max: float
    n_negative: Count = 0


@dataclass(frozen=True)
class Metrics:
    """One result of the metric module: each metric's value as a fraction (null where not available: ``na_reason``);
    ``n_ties``: tied gold vs non-gold comparisons, not items."""

    values: Mapping[MetricName, Fraction | None] = flat()
    n_items: Positive | None = opt()
    n_ties: Count | None = opt()
    chance: Mapping[MetricName, Fraction] = field(default_factory=dict)
    support: Mapping[MetricName, Count] = field(default_factory=dict)
    ci: Mapping[MetricName, Interval | None] = opt(factory=dict)
    per_tag: Mapping[str, Metrics] = opt(factory=dict)
    na_reason: str | None = opt()
    scores: ScoreRange | None = opt()

    def __post_init__(self) -> None:
        for key, c in self.ci.items():
            low, high = c if c is not None else (None, None)
            if low is not None and high is not None and low > high:
                raise ValueError(f"ci.{key}: [low, high] with low <= high, got {[low, high]}")

    def keys(self) -> list[str]:
        """The metrics present, in display order (not available: those it would have had)."""
        return [k for k in METRIC_ORDER if k in self.values and (self.values[k] is not None or self.na_reason)]

    def value(self, key: str | None) -> float | None:
        v = self.values.get(key) if key else None
        return v if v is None or math.isfinite(v) else None


@dataclass(frozen=True)
class AuthorsRule:
    """An entry's metrics under its benchmark's own tie rule, where they differ from the run's; no CI."""

    ties: TiePolicy
    metrics: Metrics
    source: str | None = opt(key="from")  # "scores.parquet": recomputed for a run that did not record them


@dataclass(frozen=True)
class Truncation:
    """The items of a split that hold a tie, and those whose texts the model reads as one input."""

    tied_items: Count = 0
    collapsed_items: Count | None = opt()
    text_max_length: int | None = opt()
    warning: str | None = opt()
    raw: Mapping[str, Any] = rest()


@dataclass(frozen=True)
class DataInfo:
    """Where an entry's rows came from (``spec``: the item spec's name in the dataset folder); other keys as written."""

    revision: str | None = opt()
    rows_in_split: Count | None = opt()
    rows_scored: Count | None = opt()
    spec: str | None = opt()
    modality: str | None = opt()
    truncation: Truncation | None = opt()
    benchmark_note: str | None = opt()  # the benchmark was inferred from the dataset's name: said in the summary
    raw: Mapping[str, Any] = rest()


@dataclass(frozen=True)
class Entry:
    """One scored (dataset, config, split). ``dataset``: its name, never a path; ``benchmark``: null for a dataset of
    the user's own; ``shape``: null when mixed; ``ties``: the tie policy its metrics count by (absent: settings.ties)."""

    dataset: str
    config: str
    split: str
    metrics: Metrics
    benchmark: str | None = None
    shape: tuple[Positive, Positive] | None = None
    dataset_version: str | None = None
    data: DataInfo = field(default_factory=DataInfo)
    authors_rule: AuthorsRule | None = opt()
    ties: TiePolicy | None = opt()

    @property
    def name(self) -> str:
        return f"{dataset_name(self.dataset)}/{self.config}/{self.split}"

    @property
    def modality(self) -> str | None:
        return self.data.modality

    def policy(self, run: str | None) -> str | None:
        """The tie policy its metrics count a tie by: its own ``ties``, else ``run``, the run's ``settings.ties``."""
        return self.ties or (run if run in TIE_POLICIES else None)

    @staticmethod
    def where(raw: Mapping[str, Any]) -> str:
        parts = [str(raw[k]) for k in ("dataset", "config", "split") if isinstance(raw.get(k), str)]
        return f" ({'/'.join(parts)})" if parts else ""


@dataclass(frozen=True)
class ModelInfo:
    """The model scored: ``model_id`` as given (a Hub id or a folder's path), its resolved revision or weights' hash."""

    model_id: str | None = None
    revision: str | None = None
    family: str | None = opt()
    dtype: str | None = opt()
    device: str | None = opt()
    raw: Mapping[str, Any] = rest()

    @property
    def name(self) -> str:
        """The model's name in tables and titles: a Hub id as it is, a folder by its own name (not its path)."""
        return portable_name(str(self.model_id or "?"))

    @property
    def checkpoint(self) -> str | None:
        """The checkpoint its scorer recorded (``preprocessing.checkpoint``: open_clip's ``ARCH/PRETRAINED``)."""
        preprocessing = self.raw.get("preprocessing")
        found = preprocessing.get("checkpoint") if isinstance(preprocessing, Mapping) else None
        return str(found) if found else None


@dataclass(frozen=True)
class Finetune:
    """A probe run's fine-tuning plan: its schedule (quick or paper), epochs, and the rest as recorded."""

    schedule: str | None = opt()
    epochs: int | None = opt()
    raw: Mapping[str, Any] = rest()


@dataclass(frozen=True)
class RunSettings:
    """The settings a run recorded (``vlprobe.options``' record): those the readers use are typed, the rest kept."""

    ties: TieChoice | None = opt()
    modality: str | None = opt()
    control: str | None = opt()
    limit: Positive | None = opt()
    bootstrap: Count | None = opt()
    confidence: Annotated[float, Range(0.0, 1.0, exclusive=True)] | None = opt()
    seed: Count | None = opt()
    threshold: float | None = opt()
    seeds: tuple[int, ...] | None = opt()
    classifier: str | None = opt()
    finetune: Finetune | bool | None = opt()
    raw: Mapping[str, Any] = rest()


@dataclass(frozen=True)
class DatasetSource:
    """A dataset a run read: ``dataset`` as given (a folder's path or a Hub id), ``name`` as entries call it."""

    dataset: str
    name: str | None = opt()
    revision: str | None = None
    benchmark: str | None = opt()
    dataset_version: str | None = opt()
    splits: Mapping[str, Any] = opt(factory=dict)


@dataclass(frozen=True)
class Environment:
    """Python, the platform, the packages' versions, and vlprobe's git commit when it runs from a clone."""

    python: str | None = None
    platform: str | None = None
    packages: Mapping[str, str | None] = field(default_factory=dict)
    vlprobe_commit: str | None = opt()
    raw: Mapping[str, Any] = rest()


@dataclass(frozen=True)
class Stats:
    """The engine's (or a probe's feature extraction's) statistics (``cache_dir`` null: none kept), as recorded."""

    cache_dir: str | None = opt()
    computed_inputs: Count | None = opt()
    text_max_length: int | None = opt()
    caption_truncated: Mapping[str, float] | None = opt()
    raw: Mapping[str, Any] = rest()

    @property
    def computed(self) -> int:
        """The inputs computed (every kind, over every process: the engine's ``computed_*``)."""
        return sum(int(v) for k, v in self.raw.items() if k.startswith("computed_") and not k.endswith("_this_process"))

    @property
    def cached(self) -> int:
        """The inputs read from the cache."""
        return int(self.raw.get("cached") or 0)

    @property
    def seconds(self) -> float:
        """The scoring's wall-clock seconds."""
        return float(self.raw.get("seconds") or 0)


@dataclass(frozen=True)
class Timings:
    """A probe run's wall-clock and CPU seconds (CPU time is what a loaded machine does not distort)."""

    feature_seconds: float = opt(0.0)
    probe_seconds: float = opt(0.0)
    feature_cpu_seconds: float = opt(0.0)
    probe_cpu_seconds: float = opt(0.0)
    raw: Mapping[str, Any] = rest()


@dataclass(frozen=True)
class Provenance:
    """What produced a run: when, the command that reruns it, the model, settings, datasets, statistics, environment."""

    created: str | None = None
    command: str | None = opt()
    argv: tuple[str, ...] = opt(factory=tuple)
    model: ModelInfo = field(default_factory=ModelInfo)
    settings: RunSettings = field(default_factory=RunSettings)
    datasets: tuple[DatasetSource, ...] = opt(factory=tuple)
    dataset: DatasetSource | None = opt()
    engine: Stats | None = opt()
    features: Stats | None = opt()
    timings: Timings | None = opt()
    environment: Environment | None = opt()
    raw: Mapping[str, Any] = rest()


@dataclass(frozen=True)
class TieRule:
    """The authors' tie rule (``authors``: the tie policy that reproduces it; ``rule``: what their code does) and
    the run's policy (``run``)."""

    authors: TiePolicy
    rule: str
    run: str | None = opt()


@dataclass(frozen=True)
class Departure:
    """How a run departs from the authors' own setting: the setting, the run's value, theirs, a note."""

    setting: str
    run: Any
    note: str
    authors: Any = None


@dataclass(frozen=True)
class SummaryRow:
    """One row of a benchmark's aggregates: a config or an ``aggregate`` (a mean over ``over``); ``authors``: the
    figures under the authors' tie rule where they differ; ``pooled``: a config pooling the others' items; ``from``:
    where the figures come from (the entry, a pooled entry's per-tag results, or "mean of k of n"). A probe's rows add
    ``setting``, ``train_size``, ``sd`` and ``seeds``."""

    config: str
    split: str
    values: Mapping[MetricName, Fraction] = field(default_factory=dict)
    paper_config: str | None = opt()
    label: str | None = opt()
    n_items: Count | None = opt()
    source: str | None = opt(key="from")
    ci: Mapping[MetricName, Interval] = opt(factory=dict)
    authors: Mapping[MetricName, Fraction] = opt(factory=dict)
    na: tuple[MetricName, ...] = opt(factory=tuple)
    na_reason: str | None = opt()
    part: str | None = opt()
    framing: str | None = opt()
    pooled: bool = opt(False)
    aggregate: bool = opt(False)
    over: tuple[str, ...] | None = opt()  # an aggregate's: its members present, and missing
    missing: tuple[str, ...] | None = opt()
    partial: tuple[str, ...] = opt(factory=tuple)
    complete: bool | None = opt()  # an aggregate's: over every member, each complete
    setting: str | None = opt()
    train_size: Count | None = opt()
    chance: Fraction | None = opt()
    sd: float | None = opt()
    seeds: tuple[int | None, ...] = opt(factory=tuple)

    @property
    def name(self) -> str:
        """How the printed summary names the row: its label (an aggregate's, a pooled config's), else its config."""
        return self.label or self.config

    def has(self, key: str) -> bool:
        """Whether the row shows ``key``: as a number, or as N/A with its reason."""
        return key in self.values or key in self.na


@dataclass(frozen=True)
class Published:
    """A figure published for the run's own checkpoint beside the run's, and the known causes of a difference."""

    source: str
    config: str
    metric: MetricName
    value: Fraction
    ours: Fraction | None = None
    dataset_version: str | None = opt()
    note: str = opt("")

    @property
    def difference(self) -> float | None:
        return None if self.ours is None else self.ours - self.value


@dataclass(frozen=True)
class SummaryBlock:
    """One benchmark's aggregates in a run: ``source``: the paper's table it follows (null: none defines them);
    ``names``: the paper's names of metrics; ``framings``: what its values are of; ``tie_policy``: the run's;
    ``departures``: the run's departures from the authors' setting; ``published``: figures for this checkpoint."""

    benchmark: str | None
    rows: tuple[SummaryRow, ...] = ()
    source: str | None = None
    headline: tuple[MetricName, ...] = ()
    complete: bool = True
    notes: tuple[str, ...] = ()
    names: Mapping[str, str] = opt(factory=dict)
    framings: tuple[str, ...] = opt(factory=tuple)
    tie_policy: TieRule | None = opt()
    departures: tuple[Departure, ...] = opt(factory=tuple)
    published: tuple[Published, ...] = opt(factory=tuple)


@dataclass(frozen=True)
class EvaluationDocument:
    """``results.json`` of ``vlprobe evaluate``."""

    provenance: Provenance
    results: tuple[Entry, ...]
    summary: Mapping[str, SummaryBlock] = opt(factory=dict)
    format: ResultsFormat = RESULTS_FORMAT
    kind: Literal["evaluate"] = "evaluate"


@dataclass(frozen=True)
class ProbeRow:
    """One fit and test of ``vlprobe probe``: ``setting``: what it was trained on; ``macro_f1`` with its bootstrap
    CI (null where nothing could be measured: ``na_reason``); ``n``: test rows."""

    task: str
    setting: str
    split: str
    test_modality: str
    transfer: str
    train_size: Count
    train_modality: str | None = None
    l2: float | None = None
    seed: int | None = None
    classifier: str | None = opt()
    epoch: int | None = opt()
    macro_f1: Fraction | None = None
    f1_true: Fraction | None = None
    f1_false: Fraction | None = None
    acc: Fraction | None = None
    chance: Fraction | None = None
    ci_low: Fraction | None = None
    ci_high: Fraction | None = None
    n: Count | None = None
    metric: str | None = None
    na_reason: str | None = opt()

    @property
    def finetuned(self) -> bool:
        return self.classifier == "finetune"

    @staticmethod
    def where(raw: Mapping[str, Any]) -> str:
        parts = [str(raw[k]) for k in ("task", "setting", "test_modality", "split") if isinstance(raw.get(k), str)]
        return f" ({' '.join(parts)})" if parts else ""


@dataclass(frozen=True)
class Table2Cell:
    """A cell of TraVLR's Table 2 layout: the full-size model's OOD macro-F1, mean over seeds, and its InD;
    ``change``: OOD - InD; ``above_chance``: the seeds whose probe beats chance in distribution; ``identical``:
    every seed gave the same figure."""

    task: str
    trained_on: str
    test_modality: str
    ood: Fraction | None
    train_modality: str | None = None
    classifier: str | None = None
    train_size: Count | None = None
    ind: Fraction | None = None
    change: float | None = None
    sd: float | None = None
    identical: bool = False
    seeds: tuple[int | None, ...] = ()
    chance: Fraction | None = None
    n: Count | None = None
    na_reason: str | None = None
    above_chance: Count | None = None


@dataclass(frozen=True)
class ProbeDocument:
    """``results.json`` of ``vlprobe probe``."""

    provenance: Provenance
    rows: tuple[ProbeRow, ...]
    summary: Mapping[str, SummaryBlock] = opt(factory=dict)
    table2: Mapping[str, tuple[Table2Cell, ...]] = opt(factory=dict)
    tables: Mapping[str, str] = opt(factory=dict)
    format: ResultsFormat = RESULTS_FORMAT
    kind: Literal["probe"] = "probe"


Document = Union[EvaluationDocument, ProbeDocument]


def dataset_name(dataset: str) -> str:
    """A dataset's short name, as tables label it: ``facebook/winoground`` -> ``winoground``."""
    return Path(str(dataset).rstrip("/\\")).name.lower() or str(dataset)


def portable_name(location: str) -> str:
    """A dataset's or model's name that travels: a Hub id as it is, a folder by its own name (not its path)."""
    text = str(location).rstrip("/\\")
    local = text.startswith((".", "/", "~", "\\")) or Path(text).is_absolute() or Path(text).expanduser().exists()
    return (Path(text).name or text) if local else text


@cache
def _hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls, include_extras=True)


def _at(where: str, key: object, attribute: bool = True) -> str:
    if attribute and isinstance(key, str) and key.isidentifier():
        return f"{where}.{key}" if where else key
    return f"{where}[{key!r}]"


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


def parse(tp: type[T], value: object, where: str = "") -> T:
    """``value`` (parsed JSON) as the record ``tp``; a :class:`SchemaError` names the first field at fault."""
    return cast(T, _parse(tp, value, where))


def _parse(tp: object, value: object, where: str = "") -> object:
    origin, args = get_origin(tp), get_args(tp)
    if tp is Any:
        return value
    if origin is Annotated:
        out = _parse(args[0], value, where)
        for bound in args[1:]:
            said = bound.problem(out) if isinstance(bound, Range) and isinstance(out, (int, float)) else None
            if said and math.isfinite(out):  # type: ignore[arg-type]  # a number: said is None for anything else
                raise SchemaError(where, f"{said}, got {value!r}")
        return out
    if origin in (Union, types.UnionType):
        if value is None:
            if type(None) in args:
                return None
            raise SchemaError(where, "must not be null")
        arms = [a for a in args if a is not type(None)]
        first: SchemaError | None = None
        for arm in arms:
            try:
                return _parse(arm, value, where)
            except SchemaError as err:
                first = first or err
        raise first  # type: ignore[misc]
    if origin is Literal:
        if value in args and not isinstance(value, bool):
            return value
        raise SchemaError(where, f"must be one of {', '.join(map(repr, args))}, got {value!r}")
    if isinstance(tp, type) and is_dataclass(tp):
        return _record(tp, value, where)
    if origin in (list, tuple, _Sequence):
        if not isinstance(value, (list, tuple)):
            raise SchemaError(where, f"must be a list, got {_kind(value)}")
        if origin is tuple and args and args[-1] is not Ellipsis:
            if len(value) != len(args):
                raise SchemaError(where, f"must be a list of {len(args)}, got {list(value)!r}")
            return tuple(_parse(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, value)))
        item = args[0] if args else Any
        named = getattr(item, "where", None) if is_dataclass(item) else None
        return tuple(_parse(item, v, f"{where}[{i}]" + (named(v) if named and isinstance(v, dict) else ""))
                     for i, v in enumerate(value))
    if origin in (dict, _Mapping):
        if not isinstance(value, dict):
            raise SchemaError(where, f"must be a mapping, got {_kind(value)}")
        kt, vt = args or (str, Any)
        mapping: dict[object, object] = {}
        for k, v in value.items():
            if get_origin(kt) is Literal and k not in get_args(kt):
                raise SchemaError(_at(where, k), f"unknown metric {k!r} (the metrics: {', '.join(get_args(kt))})")
            mapping[k] = _parse(vt, v, _at(where, k, get_origin(kt) is Literal))
        return mapping
    return _scalar(tp, value, where)


_NAMES: dict[object, str] = {float: "a number", int: "a whole number", str: "a string", bool: "true or false"}


def _scalar(tp: object, value: object, where: str) -> object:
    if tp is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if tp is int and isinstance(value, (int, float)) and not isinstance(value, bool) and float(value).is_integer():
        return int(value)
    if (tp is str and isinstance(value, str)) or (tp is bool and isinstance(value, bool)):
        return value
    raise SchemaError(where, f"must be {_NAMES.get(tp, str(tp))}, got {value!r}")


def _record(cls: type, value: object, where: str) -> object:
    if not isinstance(value, dict):
        raise SchemaError(where, f"must be a mapping, got {_kind(value)}")
    hints, kwargs, used = _hints(cls), {}, set()
    spill = None
    for f in fields(cls):
        if f.metadata.get("flat") or f.metadata.get("rest"):
            spill = f
            continue
        key = f.metadata.get("key", f.name)
        used.add(key)
        if key in value:
            kwargs[f.name] = _parse(hints[f.name], value[key], _at(where, key))
        elif f.default is MISSING and f.default_factory is MISSING:
            raise SchemaError(where, f"missing {key!r}")
    others = {k: v for k, v in value.items() if k not in used}
    if spill is not None:
        kwargs[spill.name] = _parse(hints[spill.name], others, where) if spill.metadata.get("flat") else dict(value)
    elif others:
        raise SchemaError(_at(where, next(iter(others))), f"not a field of {cls.__name__} "
                                                         f"({', '.join(f.name for f in fields(cls))})")
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as err:
        raise SchemaError(where, str(err)) from None


def dump(obj: object) -> Any:
    """Records (and numpy values, paths, tuples) as JSON: NaN and infinities as null."""
    if is_dataclass(obj) and not isinstance(obj, type):
        out: dict[str, Any] = {}
        tail: dict[str, Any] = {}
        for f in fields(obj):
            v = getattr(obj, f.name)
            if f.metadata.get("flat"):
                out.update(dump(v))
            elif f.metadata.get("rest"):
                tail = dump(v)
            elif not (f.metadata.get("omit") and v == (f.default if f.default is not MISSING or not callable(f.default_factory)
                                                        else f.default_factory())):
                out[f.metadata.get("key", f.name)] = dump(v)
        return {**tail, **{k: v for k, v in out.items() if k not in tail}}
    if isinstance(obj, _Mapping):
        return {str(k): dump(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [dump(v) for v in obj]
    if isinstance(obj, (np.ndarray, np.generic)):  # an array as nested lists, a numpy scalar as Python's
        return dump(obj.tolist())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return str(obj) if isinstance(obj, Path) else obj


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a results.json, generated from the records."""
    defs: dict[str, Any] = {}
    root = _schema(Document, defs)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "vlprobe results.json",
            "description": f"What `vlprobe evaluate` or `vlprobe probe` writes (format {RESULTS_FORMAT}); "
                           "older files are upgraded on reading (vlprobe.results.upgrade).",
            **root, "$defs": dict(sorted(defs.items()))}


def _schema(tp: object, defs: dict[str, Any]) -> dict[str, Any]:
    origin, args = get_origin(tp), get_args(tp)
    if tp is Any:
        return {}
    if origin is Annotated:
        out = _schema(args[0], defs)
        for b in args[1:]:
            if isinstance(b, Range):
                for name, v in (("Minimum", b.minimum), ("Maximum", b.maximum)):
                    if v is not None:
                        out[("exclusive" + name) if b.exclusive else name.lower()] = v
        return out
    if origin in (Union, types.UnionType):
        return {"anyOf": [_schema(a, defs) for a in args]}
    if origin is Literal:
        return {"const": args[0]} if len(args) == 1 else {"enum": list(args)}
    if isinstance(tp, type) and is_dataclass(tp):
        if tp.__name__ not in defs:
            defs[tp.__name__] = {}
            defs[tp.__name__] = _record_schema(tp, defs)
        return {"$ref": f"#/$defs/{tp.__name__}"}
    if origin in (list, tuple, _Sequence):
        if origin is tuple and args and args[-1] is not Ellipsis:
            return {"type": "array", "prefixItems": [_schema(a, defs) for a in args], "items": False,
                    "minItems": len(args)}
        return {"type": "array", "items": _schema(args[0] if args else Any, defs)}
    if origin in (dict, _Mapping):
        kt, vt = args or (str, Any)
        out = {"type": "object", "additionalProperties": _schema(vt, defs)}
        if get_origin(kt) is Literal:
            out["propertyNames"] = {"enum": list(get_args(kt))}
        return out
    if tp is type(None):
        return {"type": "null"}
    return {"type": _JSON_TYPES[tp]}


_JSON_TYPES: dict[object, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _record_schema(cls: type, defs: dict[str, Any]) -> dict[str, Any]:
    hints = _hints(cls)
    props: dict[str, Any] = {}
    required: list[str] = []
    extra: Any = False
    for f in fields(cls):
        if f.metadata.get("rest"):
            extra = True
        elif f.metadata.get("flat"):
            kt, vt = get_args(hints[f.name])
            props.update({k: _schema(vt, defs) for k in get_args(kt)})
        else:
            key = f.metadata.get("key", f.name)
            props[key] = _schema(hints[f.name], defs)
            if f.default is MISSING and f.default_factory is MISSING:
                required.append(key)
    doc = " ".join((cls.__doc__ or "").split())
    return {"type": "object", "description": doc, "properties": props, "required": required,
            "additionalProperties": extra}
