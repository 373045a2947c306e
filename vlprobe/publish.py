"""Publish to the Hub: validate a folder locally, then ``create_repo`` + ``upload_folder``.

Three kinds of folder, three checks (each returns a list of problems; an empty list means ready):

* a **dataset** folder (``valse/``, ``bla/``, a folder made by ``vlprobe build folder``):
  card YAML present and consistent with the parquet (every config's ``data_files`` match files,
  ``dataset_info`` features declared and equal to the parquet's, exactly one default), a licence,
  image bytes embedded (no path-only images), ``load_dataset(folder, config)`` works for every
  config, and ``vlprobe.yaml`` turns the first rows of every config into items;
* the **metric** folder (``metric/``): pushed as a Space whose name equals the module's file
  stem, because ``evaluate.load("<org>/valse_metric")`` fetches ``valse_metric.py`` from the
  Space ``<org>/valse_metric``; the module loads with ``evaluate.load`` and its docstring
  examples run as doctests; the Space card and ``app.py`` are checked as for a Space;
* a **Space** folder (``space/``): README YAML with ``sdk`` and ``app_file``, and ``app.py``
  imports (in a subprocess, with ``launch()`` disabled) and defines a Gradio app.

No ``eval.yaml`` (the Hub's benchmark registration) is written: the Hub documents it as a
work-in-progress beta whose ``evaluation_framework`` must be on an allow-list that vlprobe is not on.

Nothing here touches the network until :func:`publish` is called without ``dry_run``. The token
comes from ``--token``, else the usual huggingface_hub sources (``HF_TOKEN``, the stored login).
"""

from __future__ import annotations

import doctest
import io
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import yaml
from huggingface_hub import HfApi

from .paths import config_name_problem, is_inside, relative_problem, split_name_problem

SPEC_FILE = "vlprobe.yaml"
CARD_FILE = "README.md"
BUILD_REPORT = "data/BUILD.md"  # vlprobe.builders.cards.write_build_report
# What upload_folder never uploads whatever the patterns (huggingface_hub's own defaults: git and
# its cache folders), so that a plan lists exactly the files an upload sends.
UPLOAD_IGNORED = [".git", ".git/*", "*/.git", "**/.git/**", ".cache/huggingface", ".cache/huggingface/*",
                  "*/.cache/huggingface", "**/.cache/huggingface/**"]
# Never uploaded from a metric or Space folder (fnmatch patterns; '*' also matches '/').
IGNORE_PATTERNS = [
    ".venv", ".venv/*", "*/.venv/*", "*__pycache__*", "*.pyc", "*.pyo",
    ".pytest_cache*", "*/.pytest_cache/*", ".cache*", "*/.cache/*", "*.ipynb_checkpoints*",
    "*.DS_Store", ".git", ".git/*", "*.egg-info*",
]
_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".gif", ".bmp")


class PublishError(ValueError):
    """A user-facing publishing error (the CLI prints it without a traceback)."""


class ValidationError(PublishError):
    """The folder is not ready; ``problems`` lists every reason."""

    def __init__(self, what: str, problems: list[str]):
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"{what} is not ready to publish ({len(self.problems)} problem(s)):\n{lines}")


@dataclass
class UploadPlan:
    """What :func:`publish` will do: one repo, one folder, these files."""

    repo_id: str
    repo_type: str  # "dataset" or "space"
    folder: Path
    files: list[str]  # paths relative to folder, posix
    allow_patterns: list[str] | None = None
    ignore_patterns: list[str] = field(default_factory=list)
    space_sdk: str | None = None
    notes: list[str] = field(default_factory=list)  # what the checks found (printed by the CLI)
    keep_alive: Any = None  # a staging TemporaryDirectory that must outlive the upload

    def sizes(self) -> list[tuple[str, int]]:
        return [(f, (self.folder / f).stat().st_size) for f in self.files]

    def describe(self, private: bool = False) -> str:
        sizes = self.sizes()
        total = sum(s for _, s in sizes)
        visibility = "private" if private else "public"
        width = max((len(f) for f, _ in sizes), default=0)
        lines = [
            f"{self.repo_type} repo {self.repo_id} ({visibility}"
            + (f", sdk {self.space_sdk}" if self.space_sdk else "")
            + f"): {len(sizes)} file(s), {_human(total)} from {self.folder}"
        ]
        lines += [f"  {f:<{width}}  {_human(s):>9}" for f, s in sizes]
        return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# repo ids
# ---------------------------------------------------------------------------------------------
def check_repo_id(repo_id: str) -> str:
    """``repo_id`` if it has the form ``namespace/name`` the Hub accepts, else a PublishError."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    if not isinstance(repo_id, str) or repo_id.count("/") != 1:
        raise PublishError(f"--repo {repo_id!r}: give it as <org or user>/<name>, for instance my-lab/valse")
    try:
        validate_repo_id(repo_id)
    except HFValidationError as err:
        raise PublishError(f"--repo {repo_id!r}: not a valid Hub repo id: {err}") from None
    return repo_id


# ---------------------------------------------------------------------------------------------
# dataset folders
# ---------------------------------------------------------------------------------------------
def read_card(folder: Path, what: str = "dataset card (README.md with a YAML header)") -> tuple[dict[str, Any] | None, list[str]]:
    """The card's YAML header as a dict (None when unusable) and the problems found. The header is
    read by :func:`vlprobe.dataset_folder.read_card_metadata` (huggingface_hub's card parser)."""
    from .dataset_folder import read_card_metadata

    card = folder / CARD_FILE
    if not card.is_file():
        return None, [f"{card}: no {what} in the folder"]
    if not card.read_text(encoding="utf-8").startswith("---"):
        return None, [f"{card}: the card has no YAML header (it must start with a '---' line)"]
    try:
        meta = read_card_metadata(folder)
    except yaml.YAMLError as err:
        return None, [f"{card}: the YAML header does not parse: {err}"]
    except ValueError:
        return None, [f"{card}: the YAML header is not a mapping"]
    if not meta:
        return None, [f"{card}: the YAML header is empty or not closed by a '---' line"]
    return meta, []


def _data_file_patterns(data_files: Any) -> dict[str, list[str]] | None:
    """``data_files`` in any of the card's spellings -> {split: [patterns]} (None if malformed)."""
    if isinstance(data_files, str):
        return {"train": [data_files]}
    if isinstance(data_files, Mapping):  # {split: path or [paths]}
        out = {}
        for split, paths in data_files.items():
            paths = [paths] if isinstance(paths, str) else paths
            if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
                return None
            out[str(split)] = paths
        return out
    if isinstance(data_files, list):
        out: dict[str, list[str]] = {}
        for entry in data_files:
            if isinstance(entry, str):
                out.setdefault("train", []).append(entry)
            elif isinstance(entry, Mapping) and "path" in entry:
                paths = entry["path"]
                paths = [paths] if isinstance(paths, str) else paths
                if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
                    return None
                out.setdefault(str(entry.get("split", "train")), []).extend(paths)
            else:
                return None
        return out
    return None


def _declared_features(meta: Mapping[str, Any]) -> dict[str, Any]:
    """{config_name: features YAML list} from ``dataset_info`` (a dict or a list of dicts)."""
    info = meta.get("dataset_info")
    if info is None:
        return {}
    entries = info if isinstance(info, list) else [info]
    return {
        str(e.get("config_name", "default")): e.get("features")
        for e in entries
        if isinstance(e, Mapping)
    }


def _features_from_yaml(name: str, features_yaml: Any):
    """The ``datasets.Features`` a card's ``dataset_info`` entry declares, read as datasets reads a card."""
    from datasets.info import DatasetInfosDict
    from huggingface_hub import DatasetCardData

    infos = DatasetInfosDict.from_dataset_card_data(
        DatasetCardData(dataset_info=[{"config_name": name, "features": features_yaml}]))
    features = infos[name].features
    if features is None:
        raise ValueError("no features")
    return features


def _parquet_features(path: Path):
    """The datasets Features stored in a parquet file (its ``huggingface`` schema metadata, else
    inferred from the Arrow schema) and the Arrow schema itself."""
    import datasets
    import pyarrow.parquet as pq

    schema = pq.read_schema(path)
    meta = schema.metadata or {}
    if b"huggingface" in meta:
        try:
            info = json.loads(meta[b"huggingface"])
            return datasets.Features.from_dict(info["info"]["features"]), schema
        except (KeyError, ValueError, TypeError):
            pass
    return datasets.Features.from_arrow_schema(schema), schema


def _image_columns(features) -> dict[str, bool]:
    """{column: is_list} for the Image columns of ``features`` (top level, or a list of images)."""
    import datasets

    # datasets 3 has Sequence/LargeList, datasets >= 4 List (Sequence became a helper there)
    list_kinds = tuple(k for k in (getattr(datasets, n, None) for n in ("List", "Sequence", "LargeList"))
                       if isinstance(k, type))
    out = {}
    for name, feat in features.items():
        if isinstance(feat, datasets.Image):
            out[name] = False
        else:
            inner = getattr(feat, "feature", None)
            if isinstance(feat, list_kinds) and isinstance(inner, datasets.Image):
                out[name] = True
            elif isinstance(feat, list) and feat and isinstance(feat[0], datasets.Image):
                out[name] = True
    return out


def _path_only_images(path: Path, column: str, is_list: bool) -> tuple[int, int, str | None]:
    """(images without bytes, images, an example path) for one image column of one parquet file."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    col = pq.read_table(path, columns=[column]).column(column).combine_chunks()
    if is_list:
        col = col.flatten()
    if not pa.types.is_struct(col.type) or col.type.get_field_index("bytes") < 0:
        return 0, 0, None  # not stored as {bytes, path}: the features check reports the mismatch
    present = pc.invert(col.is_null())
    data = col.field("bytes")
    missing = pc.and_(present, data.is_null())
    n_missing = pc.sum(missing.cast("int64")).as_py() or 0
    example = None
    if n_missing:
        paths = col.field("path").filter(missing)
        example = paths[0].as_py() if len(paths) else None
    return int(n_missing), int(pc.sum(present.cast("int64")).as_py() or 0), example


def check_dataset_folder(
    folder: str | os.PathLike, rows: int = 5, load: bool = True, notes: list[str] | None = None
) -> tuple[list[str], list[str]]:
    """Check a dataset folder before upload. Returns ``(problems, data_files)``: every reason the
    folder is not ready (empty when it is) and the data files the card's configs point to.

    ``rows``: how many first rows of every config must convert to items (and decode their images).
    ``load``: run ``load_dataset(folder, config)`` for every config (the authoritative check).
    ``notes``: a list that receives one line per config on what was checked.
    """
    import datasets

    folder = Path(folder)
    if not folder.is_dir():
        return [f"{folder}: not a folder"], []
    meta, problems = read_card(folder)
    data_files: list[str] = []
    configs: list[str] = []
    broken_configs = False
    if meta is not None:
        lic = meta.get("license")
        if not lic or (isinstance(lic, list) and not all(lic)):
            problems.append(f"{folder / CARD_FILE}: no licence: set 'license:' in the card YAML (a Hub licence id such as cc-by-4.0, or 'other' with license_name and license_link)")
        elif lic == "other" and not meta.get("license_name"):
            problems.append(f"{folder / CARD_FILE}: 'license: other' needs 'license_name' (and 'license_link')")
        entries = meta.get("configs")
        if not isinstance(entries, list) or not entries:
            problems.append(f"{folder / CARD_FILE}: no 'configs:' list in the card YAML; declare every config with config_name and data_files")
            entries = []
        declared = _declared_features(meta)
        defaults = []
        for i, entry in enumerate(entries):
            if not isinstance(entry, Mapping) or not entry.get("config_name"):
                problems.append(f"card configs[{i}]: needs a 'config_name'")
                broken_configs = True
                continue
            name = str(entry["config_name"])
            bad = config_name_problem(name)
            if bad:
                problems.append(f"card configs[{i}]: config_name {name!r} {bad}")
                broken_configs = True
                continue
            if name in configs:
                problems.append(f"config {name!r}: declared twice in the card")
            configs.append(name)
            if entry.get("default"):
                defaults.append(name)
            patterns = _data_file_patterns(entry.get("data_files"))
            if not patterns:
                problems.append(f"config {name!r}: 'data_files' is missing or malformed (want a list of {{split, path}})")
                broken_configs = True
                continue
            files: list[Path] = []
            for split, globs in patterns.items():
                bad = split_name_problem(split)
                if bad:
                    problems.append(f"config {name!r}: split {split!r} {bad}")
                    broken_configs = True
                    continue
                for pattern in globs:
                    bad = relative_problem(pattern)
                    if bad:  # Path.glob would read (or crash on) files outside the folder
                        problems.append(f"config {name!r} split {split!r}: data_files pattern {pattern!r} {bad}; "
                                        "data files must be inside the dataset folder")
                        broken_configs = True
                        continue
                    matched = sorted(p for p in folder.glob(pattern) if p.is_file())
                    if not matched:
                        problems.append(f"config {name!r} split {split!r}: data_files pattern {pattern!r} matches no file in {folder}")
                        broken_configs = True
                    files.extend(matched)
            for f in files:
                rel = f.relative_to(folder).as_posix()
                if rel not in data_files:
                    data_files.append(rel)
            problems += _check_config_files(folder, name, files, declared.get(name))
        if len(defaults) != 1 and configs:
            problems.append(
                f"{folder / CARD_FILE}: exactly one config must have 'default: true', found "
                + (f"{len(defaults)} ({', '.join(defaults)})" if defaults else "none")
            )

    spec = None
    spec_path = folder / SPEC_FILE
    if not spec_path.is_file():
        problems.append(f"{spec_path}: missing; write a vlprobe.yaml saying which columns hold the images, texts and gold (see vlprobe/spec.py)")
    else:
        from .spec import ItemSpec

        try:
            spec = ItemSpec.from_file(spec_path)
        except ValueError as err:
            problems.append(str(err))
        else:
            for name in spec.overrides:
                if configs and name not in configs:
                    problems.append(f"{spec_path}: configs.{name} overrides a config the card does not declare ({configs})")
    # Other specs beside it (a second framing chosen with --spec) are uploaded too, so they must parse.
    for other in sorted(folder.glob("*.yaml")):
        if other.name != SPEC_FILE and not other.name.startswith("."):
            from .spec import ItemSpec

            try:
                ItemSpec.from_file(other)
            except ValueError as err:
                problems.append(str(err))

    # load_dataset on configs whose files are missing would only repeat those problems, less clearly
    if load and meta is not None and configs and not broken_configs:
        problems += _check_loads(folder, configs, spec, rows, notes if notes is not None else [])
    return problems, data_files


def _check_config_files(folder: Path, name: str, files: list[Path], declared_yaml: Any) -> list[str]:
    import datasets

    problems = []
    declared = None
    if declared_yaml is None:
        problems.append(f"config {name!r}: no features declared in the card's dataset_info (add an entry with config_name {name!r} and its features)")
    else:
        try:
            declared = _features_from_yaml(name, declared_yaml)
        except Exception as err:  # the YAML may be malformed in many ways
            problems.append(f"config {name!r}: dataset_info features do not parse: {type(err).__name__}: {err}")
    for f in files:
        rel = f.relative_to(folder).as_posix()
        if f.suffix != ".parquet":
            problems.append(f"config {name!r}: {rel} is not a parquet file; vlprobe publishes parquet with embedded images")
            continue
        try:
            stored, schema = _parquet_features(f)
        except Exception as err:
            problems.append(f"config {name!r}: {rel} is not readable parquet: {type(err).__name__}: {err}")
            continue
        if declared is not None:
            problems += _compare_features(name, rel, declared, stored, schema)
        images = _image_columns(declared if declared is not None else stored)
        for column, is_list in images.items():
            if column not in schema.names:
                continue
            missing, total, example = _path_only_images(f, column, is_list)
            if missing:
                problems.append(
                    f"config {name!r}: {rel} column {column!r}: {missing} of {total} image(s) are stored as a path "
                    f"only, no bytes (e.g. {example!r}); embed the bytes (vlprobe.dataset_folder.write_split does)"
                )
    return problems


def _compare_features(name: str, rel: str, declared, stored, schema) -> list[str]:
    problems = []
    want, have = list(declared), list(schema.names)
    if set(want) != set(have):
        missing = [c for c in want if c not in have]
        extra = [c for c in have if c not in want]
        problems.append(
            f"config {name!r}: card features and {rel} differ in columns"
            + (f"; declared but not in the parquet: {missing}" if missing else "")
            + (f"; in the parquet but not declared: {extra}" if extra else "")
        )
    arrow_declared = declared.arrow_schema
    for col in want:
        if col not in have:
            continue
        t_decl = arrow_declared.field(col).type
        t_file = schema.field(col).type
        # Types must agree in storage; when the file carries datasets' metadata, in meaning too.
        if not t_decl.equals(t_file) or (col in stored and _canon(stored[col]) != _canon(declared[col]) and _has_hf_meta(schema)):
            problems.append(
                f"config {name!r}: column {col!r} is declared as {_short(declared[col])} in the card but "
                f"{rel} stores {_short(stored.get(col))} ({t_file})"
            )
    return problems


def _canon(feature) -> Any:
    import datasets

    return datasets.Features({"x": feature}).to_dict()


def _has_hf_meta(schema) -> bool:
    return b"huggingface" in (schema.metadata or {})


def _short(feature) -> str:
    text = repr(feature)
    return text if len(text) < 80 else text[:77] + "..."


def _check_loads(folder: Path, configs: list[str], spec, rows: int, notes: list[str]) -> list[str]:
    """``load_dataset(folder, config)`` for every config, in a throwaway cache so that a stale
    cache cannot hide a problem; then the first ``rows`` rows of each must become items."""
    import datasets

    problems = []
    with tempfile.TemporaryDirectory(prefix="vlprobe-check-") as cache:
        for name in configs:
            try:
                with progress_bars_off():
                    dsd = datasets.load_dataset(str(folder), name, cache_dir=cache)
            except Exception as err:  # anything load_dataset raises is a reason to refuse
                problems.append(f"config {name!r}: load_dataset({str(folder)!r}, {name!r}) fails: {type(err).__name__}: {_first_line(err)}")
                continue
            sizes = ", ".join(f"{split} {len(ds)} rows" for split, ds in dsd.items())
            if spec is None:
                continue
            for split, ds in dsd.items():
                if len(ds) == 0:
                    problems.append(f"config {name!r} split {split!r}: has no rows")
                    continue
                found = _check_rows(spec, ds.select(range(min(rows, len(ds)))), name, split)
                problems += found
                if not found:
                    shape = spec.for_config(name).to_item(ds[0], 0, name).shape
                    notes.append(
                        f"config {name!r}: load_dataset ok ({sizes}); first {min(rows, len(ds))} {split} rows -> "
                        f"items of {shape[0]} image(s) x {shape[1]} text(s), images decode"
                    )
                break  # the first split shows whether the spec fits this config's columns
    return problems


def _check_rows(spec, ds, config: str, split: str) -> list[str]:
    from .images import to_pil

    try:
        for item in spec.iter_items(ds, config=config):
            for k, image in enumerate(item.images):
                to_pil(image, where=f"item {item.id!r} image {k}")
    except Exception as err:  # ItemError, SpecError, ImageError: each names the row and column
        return [f"config {config!r} split {split!r}: rows do not convert to items with vlprobe.yaml: {err}"]
    return []


def progress_bars_off():
    """datasets' progress bars off for a block (:func:`vlprobe.dataset_folder.progress_bars_off`,
    imported on use so that importing this module does not import datasets)."""
    from .dataset_folder import progress_bars_off as off

    return off()


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else repr(err)


def plan_dataset(folder: str | os.PathLike, repo_id: str, rows: int = 5) -> UploadPlan:
    """Validate a dataset folder and plan its upload: the card, vlprobe.yaml (and any other spec
    ``*.yaml`` beside it) and the data files the card declares, nothing else. Raises :class:`ValidationError` listing every problem."""
    from .errors import SettingError

    folder = Path(folder)
    check_repo_id(repo_id)
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
        raise SettingError(f"--rows must be 1 or more (the first rows of every config that must convert to items), "
                           f"got {rows}")
    notes: list[str] = []
    problems, data_files = check_dataset_folder(folder, rows=rows, notes=notes)
    if problems:
        raise ValidationError(f"dataset folder {folder}", problems)
    # Other specs beside vlprobe.yaml (TraVLR's true_false.yaml: a second framing chosen with --spec).
    extra_specs = sorted(p.name for p in folder.glob("*.yaml") if p.name != SPEC_FILE and not p.name.startswith("."))
    # What a build held (rows, rows left out): written by the VALSE / BLA builders beside the parquet.
    report = [BUILD_REPORT] if (folder / BUILD_REPORT).is_file() else []
    files = [CARD_FILE, SPEC_FILE] + extra_specs + data_files + report
    return UploadPlan(repo_id=repo_id, repo_type="dataset", folder=folder, files=files,
                      allow_patterns=list(files), notes=notes)


# ---------------------------------------------------------------------------------------------
# Spaces and the metric
# ---------------------------------------------------------------------------------------------
def check_space_folder(folder: str | os.PathLike, import_app: bool = True, notes: list[str] | None = None) -> list[str]:
    """A Space folder: README YAML with ``sdk`` and ``app_file``, the app file present, and (with
    ``import_app``) the app importing without launching and defining a Gradio app."""
    folder = Path(folder)
    if not folder.is_dir():
        return [f"{folder}: not a folder"]
    meta, problems = read_card(folder, "Space card (README.md whose YAML sets sdk and app_file)")
    app_file = "app.py"
    if meta is not None:
        if not meta.get("sdk"):
            problems.append(f"{folder / CARD_FILE}: the Space YAML has no 'sdk' (e.g. sdk: gradio)")
        if not meta.get("app_file"):
            problems.append(f"{folder / CARD_FILE}: the Space YAML has no 'app_file' (e.g. app_file: app.py)")
        else:
            app_file = str(meta["app_file"])
    bad = relative_problem(app_file)
    app = folder / app_file
    if bad or not is_inside(folder, app):  # the import check runs it: nothing outside the folder
        problems.append(f"{folder / CARD_FILE}: app_file {app_file!r} {bad or 'leads outside the folder'}; "
                        "it must name a file inside the Space folder")
    elif not app.is_file():
        problems.append(f"{app}: the Space's app file is missing")
    elif import_app and (meta is None or meta.get("sdk", "gradio") == "gradio"):
        problems += check_app_imports(app, notes=notes)
    return problems


_IMPORT_CHECK = r"""
import importlib.util, json, sys
app, folder = sys.argv[1], sys.argv[2]
sys.path.insert(0, folder)
result = {"ok": False}
try:
    import gradio as gr
    def _refuse(self, *args, **kwargs):
        raise RuntimeError("launch() was called while importing the app")
    gr.Blocks.launch = _refuse
    spec = importlib.util.spec_from_file_location("vlprobe_space_app_check", app)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    apps = [k for k, v in vars(module).items() if isinstance(v, gr.Blocks)]
    result = {"ok": True, "apps": apps}
except BaseException as err:
    result = {"ok": False, "error": f"{type(err).__name__}: {err}"}
print("VLPROBE-CHECK " + json.dumps(result))
"""


def check_app_imports(app: Path, timeout: float = 300, notes: list[str] | None = None) -> list[str]:
    """Import a Gradio app in a fresh interpreter (its imports must not leak into ours) with
    ``launch()`` disabled; it must import and define a ``gr.Blocks``/``gr.Interface``."""
    env = dict(os.environ, GRADIO_ANALYTICS_ENABLED="False", PYTHONDONTWRITEBYTECODE="1")
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _IMPORT_CHECK, str(app.resolve()), str(app.parent.resolve())],
            cwd=app.parent, env=env, capture_output=True, text=True, timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return [f"{app}: importing it took more than {timeout:.0f} s (does it do heavy work at import?)"]
    line = next((l for l in reversed(proc.stdout.splitlines()) if l.startswith("VLPROBE-CHECK ")), None)
    if line is None:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return [f"{app}: importing it crashed the interpreter: {tail}"]
    result = json.loads(line[len("VLPROBE-CHECK "):])
    if not result["ok"]:
        err = result["error"]
        if "launch() was called" in err:
            return [f"{app}: calls launch() at import; guard it with `if __name__ == \"__main__\":`"]
        return [f"{app}: does not import: {err}"]
    problems = []
    if not result["apps"]:
        problems.append(f"{app}: defines no Gradio app (gr.Blocks or gr.Interface) at module level")
    if ".launch(" not in app.read_text(encoding="utf-8"):
        problems.append(f"{app}: never calls launch(); a Gradio Space runs `python {app.name}`, which must launch the app")
    if notes is not None and not problems:
        notes.append(f"{app.name}: imports with launch() disabled and defines {', '.join(result['apps'])}")
    return problems


def _folder_files(folder: Path, ignore: Iterable[str]) -> list[str]:
    """Relative posix paths under ``folder`` that upload_folder would send with these ignore
    patterns (it adds huggingface_hub's own: .git, .cache/huggingface)."""
    from huggingface_hub.utils import filter_repo_objects

    rels = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    return list(filter_repo_objects(rels, ignore_patterns=list(ignore) + UPLOAD_IGNORED))


def escaping_files(folder: Path, files: Iterable[str]) -> list[str]:
    """One problem per file of ``files`` (relative to ``folder``) that is a symbolic link leading
    outside ``folder``: the upload would send whatever it points at."""
    return [f"{folder / f}: a symbolic link to {(folder / f).resolve()}, outside the folder; the upload would send "
            "that file: copy what is meant into the folder, or remove the link"
            for f in files if not is_inside(folder, folder / f)]


def stage_space(folder: str | os.PathLike) -> tuple[Path, Any]:
    """A self-contained copy of the Space to upload: ``space/`` itself, plus, when it sits in a
    vlprobe checkout (or is the Space an installed vlprobe ships), the ``vlprobe`` package (any
    symlink resolved into a real file; the metric in ``vlprobe/_bundled/metric/``, as a wheel has
    it) and the default model ``models/mini-clip`` beside ``app.py``, where
    the app looks for them (vlprobe is not on PyPI, so a Space cannot pip-install it).
    Returns (staged folder, the TemporaryDirectory that owns it; keep it alive until uploaded)."""
    import shutil
    import tempfile

    from .locations import BUNDLE, PACKAGE
    from .metric import METRIC_FILE

    folder = Path(folder).resolve()
    root = folder.parent
    tmp = tempfile.TemporaryDirectory(prefix="vlprobe-space-")
    staged = Path(tmp.name) / folder.name
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", ".venv", ".pytest_cache", ".hypothesis")
    shutil.copytree(folder, staged, ignore=skip)
    package = root / "vlprobe"
    if folder == (BUNDLE / "space").resolve():
        package = PACKAGE  # the Space an installed vlprobe ships: stage the package it runs from
    if (package / "__init__.py").is_file() and not (staged / "vlprobe").exists():
        # "_bundled": an installed package's copy of metric/, space/ and the model; the model is staged below
        shutil.copytree(package, staged / "vlprobe", symlinks=False, ignore=shutil.ignore_patterns(
            "__pycache__", "*.pyc", ".venv", ".pytest_cache", ".hypothesis", "_bundled"))
        # The metric, where an installed package keeps it (vlprobe.locations): the staged package is one.
        metric_file = root / "metric" / METRIC_FILE.name
        metric_file = metric_file if package == root / "vlprobe" and metric_file.is_file() else METRIC_FILE
        (staged / "vlprobe" / "_bundled" / "metric").mkdir(parents=True)
        shutil.copyfile(metric_file, staged / "vlprobe" / "_bundled" / "metric" / METRIC_FILE.name)
    model = root / "models" / "mini-clip"
    if model.is_dir() and not (staged / "models" / "mini-clip").exists():
        shutil.copytree(model, staged / "models" / "mini-clip", ignore=skip)
    return staged, tmp


def plan_space(folder: str | os.PathLike, repo_id: str) -> UploadPlan:
    """Validate a Space folder and plan pushing it, made self-contained by :func:`stage_space`
    (minus caches and virtual environments). The import check runs on the staged copy, so it
    proves the Space runs without this repository around it."""
    check_repo_id(repo_id)
    source = Path(folder)
    if source.is_dir():
        escaping = escaping_files(source, _folder_files(source, IGNORE_PATTERNS))
        if escaping:
            raise ValidationError(f"Space folder {folder}", escaping)
    staged, owner = stage_space(folder)
    notes: list[str] = [f"staged {folder} with the vlprobe package and the default model beside app.py"]
    problems = check_space_folder(staged, notes=notes)
    if problems:
        owner.cleanup()
        raise ValidationError(f"Space folder {folder}", problems)
    plan = _space_plan(staged, repo_id, notes)
    plan.keep_alive = owner
    return plan


def _space_plan(folder: Path, repo_id: str, notes: list[str] | None = None) -> UploadPlan:
    meta, _ = read_card(folder)
    sdk = str((meta or {}).get("sdk") or "gradio")
    return UploadPlan(
        repo_id=repo_id, repo_type="space", folder=folder, files=_folder_files(folder, IGNORE_PATTERNS),
        ignore_patterns=list(IGNORE_PATTERNS), space_sdk=sdk, notes=list(notes or []),
    )


def check_metric_folder(
    folder: str | os.PathLike, repo_id: str, import_app: bool = True, notes: list[str] | None = None
) -> list[str]:
    """The metric Space: ``<name>.py`` (name = the repo's last part) loads with ``evaluate.load``
    and its docstring examples pass as doctests; ``requirements.txt`` names evaluate (Spaces do
    not preinstall it); the Space card and app pass :func:`check_space_folder`."""
    folder = Path(folder)
    if not folder.is_dir():
        return [f"{folder}: not a folder"]
    name = repo_id.split("/")[-1]
    module_file = folder / f"{name}.py"
    problems = []
    if not module_file.is_file():
        found = sorted(p.name for p in folder.glob("*.py") if p.stem not in ("app", "tests", "setup"))
        problems.append(
            f"--repo {repo_id!r}: evaluate.load({repo_id!r}) fetches {name}.py from that Space, but {folder} has "
            f"no {name}.py" + (f" (it has {', '.join(found)}; name the repo <org>/{Path(found[0]).stem})" if found else "")
        )
    else:
        problems += check_metric_module(module_file, notes=notes)
    req = folder / "requirements.txt"
    if not req.is_file() or "evaluate" not in req.read_text(encoding="utf-8"):
        problems.append(f"{req}: must list evaluate (Spaces preinstall gradio, huggingface_hub and datasets, not evaluate)")
    problems += check_space_folder(folder, import_app=import_app, notes=notes)
    return problems


def check_metric_module(module_file: Path, notes: list[str] | None = None) -> list[str]:
    """Load ``module_file`` with ``evaluate.load`` and run its docstring examples as doctests, with
    ``evaluate.load`` of any name inside them pointing at this local file (as evaluate's own
    test_metric_common does), so no example needs the network."""
    import evaluate

    try:
        with progress_bars_off():
            metric = evaluate.load(str(module_file))
    except Exception as err:
        return [f"{module_file}: evaluate.load fails: {type(err).__name__}: {_first_line(err)}"]
    module = sys.modules.get(type(metric).__module__)
    if module is None:
        return [f"{module_file}: loaded, but its module could not be found for the doctests"]
    real_load = evaluate.load

    def local_load(path: str = "", *args: Any, **kwargs: Any):
        return real_load(str(module_file), *args, **kwargs)

    finder = doctest.DocTestFinder(exclude_empty=True)
    tests = [t for t in finder.find(module, module.__name__, globs=dict(vars(module))) if t.examples]
    if not tests:
        return [f"{module_file}: no docstring examples (>>> lines) to run; the card and _KWARGS_DESCRIPTION should show a computation"]
    out = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    from unittest import mock

    with mock.patch.object(evaluate, "load", local_load), progress_bars_off():
        for test in tests:
            runner.run(test, out=out.write)
    # runner.failures / runner.tries rather than summarize(), which prints to stdout
    if runner.failures:
        report = out.getvalue().strip()
        return [f"{module_file}: {runner.failures} of {runner.tries} docstring example(s) fail:\n{_indent(report, 6)}"]
    if notes is not None:
        notes.append(f"{module_file.name}: evaluate.load ok; {runner.tries} docstring example(s) in {len(tests)} docstring(s) pass")
    return []


def _indent(text: str, n: int) -> str:
    lines = text.splitlines()
    if len(lines) > 40:
        lines = lines[:40] + [f"... ({len(lines) - 40} more lines)"]
    return "\n".join(" " * n + line for line in lines)


def plan_metric(folder: str | os.PathLike, repo_id: str) -> UploadPlan:
    """Validate the metric folder and plan pushing it as a Gradio Space named like the module."""
    folder = Path(folder)
    check_repo_id(repo_id)
    name = repo_id.split("/")[-1]
    if folder.is_dir() and not (folder / f"{name}.py").is_file():
        # A wrong name is an argument error: say so before the slower checks.
        raise ValidationError(f"metric folder {folder}", check_metric_folder(folder, repo_id, import_app=False)[:1])
    notes: list[str] = []
    problems = escaping_files(folder, _folder_files(folder, IGNORE_PATTERNS)) if folder.is_dir() else []
    problems += check_metric_folder(folder, repo_id, notes=notes)
    if problems:
        raise ValidationError(f"metric folder {folder}", problems)
    return _space_plan(folder, repo_id, notes)


# ---------------------------------------------------------------------------------------------
# tokens and the upload itself
# ---------------------------------------------------------------------------------------------
def resolve_token(token: str | None = None) -> str | None:
    """``token``, else huggingface_hub's usual sources (HF_TOKEN, then the stored login)."""
    if token:
        return token
    from huggingface_hub import get_token

    return get_token()


def _api(token: str):
    return HfApi(token=token)  # module-level name so that tests can mock it


def publish(
    plan: UploadPlan,
    *,
    private: bool = False,
    token: str | None = None,
    dry_run: bool = False,
    commit_message: str | None = None,
    api_factory: Callable[[str], Any] | None = None,
    echo: Callable[[str], None] = print,
) -> str | None:
    """Create the repo (``exist_ok=True``) and upload the planned files; returns the commit URL.

    With ``dry_run`` it only prints the plan (repo type and id, files and sizes) and touches
    nothing. A missing token, offline mode or a Hub refusal raise :class:`PublishError` with a
    message saying what to do.
    """
    if dry_run:
        echo("dry run: would create (if absent) and upload to the " + plan.describe(private=private))
        found = "found" if resolve_token(token) else "NOT found (pass --token, set HF_TOKEN, or run `hf auth login`)"
        echo(f"token: {found}")
        echo("nothing was uploaded")
        return None
    token = resolve_token(token)
    if not token:
        raise PublishError(
            "no Hugging Face token: pass --token, set HF_TOKEN, or log in once with `hf auth login` "
            "(a token with write access to the target namespace)"
        )
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled
    from huggingface_hub.utils import httpx

    api = (api_factory or _api)(token)
    message = commit_message or f"Upload {plan.repo_type} with vlprobe publish"
    try:
        kwargs = {"space_sdk": plan.space_sdk} if plan.repo_type == "space" else {}
        api.create_repo(plan.repo_id, repo_type=plan.repo_type, exist_ok=True, private=private, **kwargs)
        info = api.upload_folder(
            repo_id=plan.repo_id, folder_path=str(plan.folder), repo_type=plan.repo_type,
            allow_patterns=plan.allow_patterns, ignore_patterns=plan.ignore_patterns or None,
            commit_message=message,
        )
    except OfflineModeIsEnabled:
        raise PublishError(
            "offline mode is on (HF_HUB_OFFLINE=1), so nothing can be uploaded; unset HF_HUB_OFFLINE "
            "on a machine with network access, or use --dry-run to check the folder"
        ) from None
    except HfHubHTTPError as err:
        status = getattr(getattr(err, "response", None), "status_code", None)
        hint = {
            401: "the token was rejected; check it (`hf auth whoami`)",
            403: f"the token may not write to {plan.repo_id.split('/')[0]!r}; use a write token for that namespace",
        }.get(status, "the Hub refused the request")
        raise PublishError(f"{plan.repo_type} repo {plan.repo_id}: {hint} (HTTP {status}: {_first_line(err)})") from None
    except (ConnectionError, httpx.TransportError) as err:
        raise PublishError(f"cannot reach the Hub to publish {plan.repo_id}: {_first_line(err)}") from None
    url = getattr(info, "commit_url", None) or str(info)
    echo(f"uploaded {len(plan.files)} file(s) to the {plan.repo_type} repo {plan.repo_id}: {url}")
    return url


def _human(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"
