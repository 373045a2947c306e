"""``vlprobe evaluate``: score a model on a benchmark and write the papers' metrics, with provenance.

    vlprobe evaluate --dataset travlr --config all --model models/mini-clip --bootstrap 1000 --out runs/x

With no ``--dataset`` and no ``--model`` it runs the offline default: the dataset folders
``travlr`` and ``winoground_style`` of the repository (all configs, their test splits) with the
small CLIP in ``models/mini-clip``, written to ``runs/default``.

Rows are read with ``datasets.load_dataset`` (a local folder or a Hub id), turned into items by the
dataset's ``vlprobe.yaml`` (:func:`vlprobe.spec.find_spec`), scored by :mod:`vlprobe.engine` (all
configs at once, so an image shared by two configs is encoded once; cached on disk) and measured
by :func:`vlprobe.metric.compute`. Outputs: see :mod:`vlprobe.results`.

Under ``accelerate launch`` every process scores its shard of the unique inputs and only the main
process writes outputs.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shlex
import sys
from pathlib import Path
from typing import Any

DEFAULT_DATASETS = ("travlr", "winoground_style")
DEFAULT_MODEL = "models/mini-clip"
DEFAULT_OUT = "runs/default"
TEST_LIKE = ("test",)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "evaluate",
        help="score a model on a benchmark; write results.json, scores.parquet, results.csv, plots",
        description=(
            "Score a model on a benchmark and write metrics with CIs, per config and per tag. With no "
            f"--dataset/--model: the offline default ({', '.join(DEFAULT_DATASETS)} with {DEFAULT_MODEL})."
        ),
    )
    p.add_argument("--dataset", action="append", metavar="FOLDER_OR_HUB_ID",
                   help="dataset folder or Hub id; repeat for several (default: the offline default datasets)")
    p.add_argument("--config", default="all", help="config name(s), comma-separated; 'all' (default) scores every config, or the dataset's own "
                   "config named 'all' when it has one (VALSE); '*' always scores every config")
    p.add_argument("--split", default=None,
                   help="split(s), comma-separated (default: the splits whose name starts with 'test', "
                        "else the only split)")
    p.add_argument("--dataset-revision", default=None, help="Hub revision (branch, tag or commit) of the dataset")
    p.add_argument("--spec", default=None, help="a vlprobe.yaml saying how rows become items (default: the dataset's)")
    p.add_argument("--model", default=None, help=f"model folder or Hub id (default: {DEFAULT_MODEL})")
    p.add_argument("--revision", default=None, help="Hub revision of the model")
    p.add_argument("--family", default=None, help="scorer family (default: detected from the model's config)")
    p.add_argument("--ties", default="strict", help="tie policy of the metric: strict (default), half, lenient")
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for CIs (0: none; default 1000)")
    p.add_argument("--confidence", type=float, default=0.95, help="CI level (default 0.95)")
    p.add_argument("--threshold", type=float, default=0.5, help="probability threshold of acc/p_c/p_f (default 0.5)")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and of the shuffled control")
    p.add_argument("--limit", type=int, default=None, help="score only the first N rows of each config/split")
    p.add_argument("--batch-size", type=int, default=32, help="inputs per forward pass (default 32)")
    p.add_argument("--num-workers", type=int, default=None,
                   help="DataLoader workers decoding images (default: min(4, CPUs - 1) when more than 2 CPUs, else 0)")
    p.add_argument("--dtype", default="float32", help="float32 (default), float16 or bfloat16")
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:1, mps (default: the best available)")
    p.add_argument("--modality", default="image", choices=("image", "caption", "both"),
                   help="TraVLR's settings: image (default), caption (blank image, caption + query), both")
    p.add_argument("--control", default=None, choices=("blank", "shuffled"),
                   help="control run: every image blank, or images shuffled across items")
    p.add_argument("--cache-dir", default=None,
                   help="score cache (default: $VLPROBE_CACHE or ~/.cache/vlprobe); 'none' disables it")
    p.add_argument("--out", default=None, help=f"output folder (default: {DEFAULT_OUT} for the default run)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=run)


# ---- helpers ------------------------------------------------------------------------------------

def _repo_root() -> Path:
    """Where the default dataset folders live: the working directory if it has them, else the
    checkout this package was installed from."""
    cwd = Path.cwd()
    if any((cwd / d).is_dir() for d in DEFAULT_DATASETS):
        return cwd
    return Path(__file__).resolve().parents[2]


def _is_built(folder: Path) -> bool:
    return any((folder / "data").rglob("*.parquet")) if (folder / "data").is_dir() else False


def _default_job(args: argparse.Namespace) -> None:
    from ..errors import CommandError

    root = _repo_root()
    if not args.dataset:
        args.out = args.out or DEFAULT_OUT
        datasets_ = []
        for name in DEFAULT_DATASETS:
            folder = root / name
            if not _is_built(folder):
                raise CommandError(
                    f"the default dataset folder {folder} has not been built yet; build it with "
                    f"`vlprobe build {name}` (or pass --dataset FOLDER_OR_HUB_ID)"
                )
            datasets_.append(str(folder))
        args.dataset = datasets_
    if not args.model:
        model = root / DEFAULT_MODEL
        if not (model / "config.json").is_file():
            trainer = root / "scripts" / "train_mini_clip.py"
            how = f" train it with `python {trainer.relative_to(root)}`, or" if trainer.is_file() else ""
            raise CommandError(
                f"the default model {model} is not there (the small offline CLIP has not been made in this "
                f"checkout);{how} pass --model with a local folder written by save_pretrained, or a Hub id"
            )
        args.model = str(model)


def _undecoded(features: Any) -> Any:
    """The same features with every Image left undecoded: the engine hashes the bytes and decodes
    in DataLoader workers instead of in the main process."""
    import datasets

    if isinstance(features, datasets.Image):
        return datasets.Image(decode=False)
    if isinstance(features, dict):
        return type(features)({k: _undecoded(v) for k, v in features.items()})
    if isinstance(features, (list, tuple)):
        return type(features)(_undecoded(v) for v in features)
    for attr in ("feature",):  # List / Sequence / LargeList
        inner = getattr(features, attr, None)
        if inner is not None:
            try:
                import copy

                new = copy.copy(features)
                setattr(new, attr, _undecoded(inner))
                return new
            except Exception:
                return features
    return features


def _configs(dataset: str, wanted: str, revision: str | None) -> list[str]:
    import datasets
    from ..errors import CommandError

    try:
        names = datasets.get_dataset_config_names(dataset, revision=revision)
    except Exception as err:  # not found, offline, gated: say what to do
        raise CommandError(_dataset_error(dataset, err)) from None
    # "all" means every config, unless the dataset has a config of that name (VALSE's "all" holds
    # every instrument once); "*" always means every config.
    if wanted in (None, "", "*") or (wanted == "all" and "all" not in names):
        return list(names)
    chosen = [c.strip() for c in wanted.split(",") if c.strip()]
    unknown = [c for c in chosen if c not in names]
    if unknown:
        raise CommandError(f"unknown config(s) {unknown} of {dataset}; its configs are: {', '.join(names)}")
    return chosen


def _splits(dataset: str, config: str, wanted: str | None, revision: str | None) -> list[str]:
    import datasets
    from ..errors import CommandError

    try:
        names = list(datasets.get_dataset_split_names(dataset, config, revision=revision))
    except Exception as err:
        raise CommandError(_dataset_error(dataset, err)) from None
    if wanted:
        chosen = [s.strip() for s in wanted.split(",") if s.strip()]
        unknown = [s for s in chosen if s not in names]
        if unknown:
            raise CommandError(f"unknown split(s) {unknown} of {dataset} config {config!r}; its splits are: {', '.join(names)}")
        return chosen
    test_like = [s for s in names if s.lower().startswith(TEST_LIKE)]
    if test_like:
        return test_like
    if len(names) == 1:
        return names
    raise CommandError(f"{dataset} config {config!r} has no test split; name one with --split ({', '.join(names)})")


def _dataset_error(dataset: str, err: BaseException) -> str:
    first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    local = "" if Path(dataset).exists() else " It is not a local folder either."
    return (
        f"cannot read dataset {dataset!r} ({type(err).__name__}: {first}).{local} Pass a dataset folder "
        f"(one built by `vlprobe build ...` or downloaded on a networked machine with "
        f"`hf download {dataset} --repo-type dataset --local-dir DIR`), or a Hub id when online"
    )


def _load_split(dataset: str, config: str, split: str, revision: str | None) -> tuple[Any, dict]:
    """One split as a Dataset, plus what identifies its data.

    A local folder is read through :func:`vlprobe.dataset_folder.load_folder_split`, whose cache
    follows the parquet files (a rebuilt folder is never read from a stale cache). Its identity
    is the sha256 of its parquet files.
    """
    import datasets

    from ..errors import CommandError
    from ..dataset_folder import load_folder_split

    try:
        if Path(dataset).is_dir():
            builder = datasets.load_dataset_builder(dataset, config)
            files = sorted(str(f) for f in (builder.config.data_files or {}).get(split, []))
            h = hashlib.sha256()
            for f in files:
                with open(f, "rb") as fh:
                    for block in iter(lambda: fh.read(1 << 22), b""):
                        h.update(block)
            ds = load_folder_split(dataset, config, split)
            info = {"data_sha256": h.hexdigest(), "data_files": [os.path.relpath(f, dataset) for f in files]}
        else:
            ds = datasets.load_dataset(dataset, config, split=split, revision=revision)
            info = {"fingerprint": getattr(ds, "_fingerprint", None), "resolved_revision": _hub_sha(dataset, revision)}
    except CommandError:
        raise
    except Exception as err:
        raise CommandError(_dataset_error(dataset, err)) from None
    return ds, info


def _hub_sha(dataset: str, revision: str | None) -> str | None:
    """The commit a Hub dataset id resolves to (None offline or when it cannot be asked)."""
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        return None
    try:
        from huggingface_hub import HfApi

        return HfApi().dataset_info(dataset, revision=revision, timeout=10).sha
    except Exception:
        return None


def _load_units(args: argparse.Namespace) -> list:
    import datasets

    # datasets' own bars (generating, casting) say nothing useful here; ours follow.
    was_enabled = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        return _load_units_quiet(args)
    finally:
        if was_enabled:
            datasets.enable_progress_bars()


def _load_units_quiet(args: argparse.Namespace) -> list:
    import datasets

    from ..errors import CommandError
    from ..results import Unit
    from ..spec import find_spec

    units = []
    for dataset in args.dataset:
        spec = find_spec(dataset, args.spec)
        for config in _configs(dataset, args.config, args.dataset_revision):
            for split in _splits(dataset, config, args.split, args.dataset_revision):
                ds, data_info = _load_split(dataset, config, split, args.dataset_revision)
                n_rows = len(ds)
                if args.limit is not None:
                    ds = ds.select(range(min(args.limit, len(ds))))
                ds = ds.cast(_undecoded(ds.features))
                items = list(spec.iter_items(ds, config=config, modality=args.modality))
                if not items:
                    raise CommandError(f"{dataset} config {config!r} split {split!r} has no rows")
                units.append(Unit(
                    dataset=dataset, config=config, split=split, items=items,
                    data={**data_info, "rows_in_split": n_rows, "rows_scored": len(items),
                          "revision": args.dataset_revision, "spec": spec.source, "modality": args.modality},
                ))
    return units


def _apply_control(units: list, control: str, seed: int) -> None:
    from ..errors import CommandError

    try:
        from ..scorers.controls import apply_control
    except ImportError:
        raise CommandError("controls are not available in this version of vlprobe (vlprobe/scorers/controls.py)") from None
    name = "shuffle" if control == "shuffled" else control
    for u in units:
        u.items = list(apply_control(u.items, name, seed=seed))


def _distributed(device: str | None) -> tuple[Any, str | None]:
    """Under ``accelerate launch`` (WORLD_SIZE > 1): the initialised state and this process's device."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return None, device
    import torch
    from accelerate import PartialState

    cpu = (device or "").startswith("cpu") or not torch.cuda.is_available()
    state = PartialState(cpu=cpu)
    return state, (device if device else str(state.device))


def _command_line(args: argparse.Namespace) -> str:
    """The effective command, every option spelled out, so that pasting it reruns the same job."""
    parts = ["vlprobe", "evaluate"]
    for d in args.dataset:
        parts += ["--dataset", d]
    skip = {"dataset", "func", "command", "no_progress"}
    for key, value in vars(args).items():
        if key in skip or value is None or value is False:
            continue
        parts += [f"--{key.replace('_', '-')}"] + ([] if value is True else [str(value)])
    return " ".join(shlex.quote(p) for p in parts)


# ---- the command --------------------------------------------------------------------------------

def run(args: argparse.Namespace) -> int:
    from ..errors import CommandError

    if args.batch_size < 1:
        raise CommandError(f"--batch-size must be at least 1, got {args.batch_size}")
    if args.limit is not None and args.limit < 1:
        raise CommandError(f"--limit must be at least 1, got {args.limit}")
    if args.bootstrap < 0:
        raise CommandError(f"--bootstrap must be 0 or more, got {args.bootstrap}")
    from .. import metric as metric_module

    if args.ties not in metric_module.TIE_POLICIES:
        raise CommandError(f"unknown tie policy {args.ties!r}; choose one of {', '.join(metric_module.TIE_POLICIES)}")
    if not args.dataset or not args.model:
        _default_job(args)
    if not args.out:
        from ..results import _slug, benchmark_name

        args.out = f"runs/{_slug(benchmark_name(args.dataset[0]))}-{_slug(Path(args.model).name)}"

    state, device = _distributed(args.device)

    return _evaluate(args, state, device)


def _evaluate(args: argparse.Namespace, state: Any, device: str | None) -> int:
    from .. import metric as metric_module
    from ..errors import CommandError

    main = state is None or state.is_main_process
    say = print if main else (lambda *a, **k: None)
    units = _load_units(args)
    say(f"{sum(len(u.items) for u in units)} items in {len(units)} config/split(s); loading {args.model}")

    from ..scorers.loading import load_scorer

    scorer = load_scorer(args.model, args.family, device=device, dtype=args.dtype, revision=args.revision,
                         **({"control": "shuffle" if args.control == "shuffled" else args.control, "control_seed": args.seed}
                            if args.control else {}))
    if args.control:
        _apply_control(units, args.control, args.seed)

    from ..cache import ScoreCache, default_cache_dir
    from ..engine import Engine, EngineOutOfMemory

    cache = None
    if str(args.cache_dir).lower() != "none":
        cache_root = Path(args.cache_dir) if args.cache_dir else default_cache_dir()
        cache = ScoreCache(cache_root, scorer.cache_key(), rank=state.process_index if state else 0)
    cpus = os.cpu_count() or 1
    # Decoding in workers pays only when there are cores beyond the one running the model.
    workers = args.num_workers if args.num_workers is not None else (min(4, cpus - 1) if cpus > 2 else 0)
    engine = Engine(scorer, batch_size=args.batch_size, num_workers=workers, cache=cache,
                    progress=not args.no_progress)
    all_items = [item for u in units for item in u.items]
    try:
        result = engine.score(all_items)
    except EngineOutOfMemory as err:
        raise CommandError(str(err)) from None
    finally:
        if cache is not None:
            cache.close()
    if not main:
        return 0

    start = 0
    for u in units:
        end = start + len(u.items)
        u.scores = result.scores[start:end]
        u.probabilities = result.probabilities[start:end] if result.probabilities is not None else None
        tags = [list(it.tags) for it in u.items]
        u.metrics = metric_module.compute(
            u.scores, [it.gold for it in u.items], ties=args.ties, probabilities=u.probabilities,
            threshold=args.threshold, tags=tags if any(tags) else None, bootstrap=args.bootstrap,
            confidence=args.confidence, seed=args.seed,
        )
        start = end

    from ..results import environment, format_table, now_iso, write_outputs

    provenance = {
        "created": now_iso(),
        "command": _command_line(args),
        "argv": list(sys.argv),
        "model": scorer.describe(),
        "settings": {
            "ties": args.ties, "bootstrap": args.bootstrap, "confidence": args.confidence, "seed": args.seed,
            "threshold": args.threshold, "limit": args.limit, "batch_size": args.batch_size, "num_workers": workers,
            "modality": args.modality, "control": args.control, "split": args.split, "config": args.config,
        },
        "datasets": [{"dataset": d, "revision": args.dataset_revision} for d in args.dataset],
        "environment": environment(),
        "engine": {**result.stats, "cache_dir": str(cache.dir) if cache is not None else None},
    }
    written = write_outputs(args.out, units, provenance)
    print()
    print(format_table(units))
    stats = result.stats
    computed = sum(v for k, v in stats.items() if k.startswith("computed_"))
    print(f"\nscored in {stats.get('seconds', 0):.1f}s: {computed} inputs computed, {stats.get('cached', 0)} from the cache"
          + (f" ({cache.dir})" if cache is not None else ""))
    print(f"wrote {len(written)} files to {args.out}: " + ", ".join(p.name for p in written))
    return 0
