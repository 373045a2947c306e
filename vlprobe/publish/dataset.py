"""Dataset folders: the card against the parquet, ``load_dataset`` and ``vlprobe.yaml`` on every config, and
:func:`plan_dataset`, the upload of exactly the files the card declares."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import first_line
from ..storage.paths import config_name_problem, relative_problem, split_name_problem
from .folder import BUILD_REPORT, CARD_FILE, SPEC_FILE, progress_bars_off, read_card
from .plan import UploadPlan, ValidationError, check_repo_id

if TYPE_CHECKING:
    import datasets


def _data_file_patterns(data_files: object) -> dict[str, list[str]] | None:
    """``data_files`` in any of the card's spellings -> {split: [patterns]} (None if malformed)."""
    # Not vlprobe.dataset.reader.data_file_patterns: that one coerces what it finds ([{split: test}] -> {test: []},
    # 5 -> {train: ["5"]}), which here would pass a config with no files.
    if isinstance(data_files, str):
        pairs: list[tuple[object, object]] = [("train", data_files)]
    elif isinstance(data_files, Mapping):  # {split: path or [paths]}
        pairs = list(data_files.items())
    elif isinstance(data_files, list) and all(isinstance(e, str) or (isinstance(e, Mapping) and "path" in e)
                                              for e in data_files):
        pairs = [("train", e) if isinstance(e, str) else (e.get("split", "train"), e["path"]) for e in data_files]
    else:
        return None
    out: dict[str, list[str]] = {}
    for split, paths in pairs:
        paths = [paths] if isinstance(paths, str) else paths
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            return None
        out.setdefault(str(split), []).extend(paths)
    return out


def _declared_features(meta: Mapping[str, Any]) -> dict[str, Any]:
    """{config_name: features YAML list} from ``dataset_info`` (a dict or a list of dicts)."""
    info = meta.get("dataset_info")
    entries = info if isinstance(info, list) else [info]  # None: no entry, as it is no Mapping
    return {
        str(e.get("config_name", "default")): e.get("features")
        for e in entries
        if isinstance(e, Mapping)
    }


def _features_from_yaml(name: str, features_yaml: object) -> datasets.Features:
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
    """The datasets Features stored in a parquet file (else inferred from its Arrow schema), and that schema."""
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
        elif (isinstance(feat, list_kinds) and isinstance(getattr(feat, "feature", None), datasets.Image)) or \
                (isinstance(feat, list) and feat and isinstance(feat[0], datasets.Image)):
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


def spec_files(folder: Path) -> list[str]:
    """vlprobe.yaml, then the other specs beside it (a second framing chosen with --spec)."""
    others = sorted(p.name for p in folder.glob("*.yaml") if p.name != SPEC_FILE and not p.name.startswith("."))
    return ([SPEC_FILE] if (folder / SPEC_FILE).is_file() else []) + others


def check_dataset_folder(
    folder: str | os.PathLike[str], rows: int = 5, load: bool = True, notes: list[str] | None = None
) -> tuple[list[str], list[str]]:
    """``(problems, data_files)``: every reason a dataset folder is not ready to upload, and the data files its card
    points to; ``rows``: the first rows of every config that must become items; ``notes``: what was checked."""
    folder = Path(folder)
    if not folder.is_dir():
        return [f"{folder}: not a folder"], []
    meta, problems = read_card(folder)
    data_files: list[str] = []
    configs: list[str] = []
    broken: list[str] = []  # problems that leave a config unloadable: load_dataset would only repeat them

    def refuse(problem: str) -> None:
        problems.append(problem)
        broken.append(problem)

    if meta is not None:
        lic = meta.get("license")
        if not lic or (isinstance(lic, list) and not all(lic)):
            problems.append(f"{folder / CARD_FILE}: no licence: set 'license:' in the card YAML "
                            "(a Hub licence id such as cc-by-4.0, or 'other' with license_name and license_link)")
        elif lic == "other" and not meta.get("license_name"):
            problems.append(f"{folder / CARD_FILE}: 'license: other' needs 'license_name' (and 'license_link')")
        entries = meta.get("configs")
        if not isinstance(entries, list) or not entries:
            problems.append(f"{folder / CARD_FILE}: no 'configs:' list in the card YAML; "
                            "declare every config with config_name and data_files")
            entries = []
        declared = _declared_features(meta)
        defaults = []
        for i, entry in enumerate(entries):
            if not isinstance(entry, Mapping) or not entry.get("config_name"):
                refuse(f"card configs[{i}]: needs a 'config_name'")
                continue
            name = str(entry["config_name"])
            if bad := config_name_problem(name):
                refuse(f"card configs[{i}]: config_name {name!r} {bad}")
                continue
            if name in configs:
                problems.append(f"config {name!r}: declared twice in the card")
            configs.append(name)
            if entry.get("default"):
                defaults.append(name)
            patterns = _data_file_patterns(entry.get("data_files"))
            if not patterns:
                refuse(f"config {name!r}: 'data_files' is missing or malformed (want a list of {{split, path}})")
                continue
            files: list[Path] = []
            for split, globs in patterns.items():
                if bad := split_name_problem(split):
                    refuse(f"config {name!r}: split {split!r} {bad}")
                    continue
                for pattern in globs:
                    if bad := relative_problem(pattern):  # Path.glob would read (or crash on) files outside the folder
                        refuse(f"config {name!r} split {split!r}: data_files pattern {pattern!r} {bad}; "
                               "data files must be inside the dataset folder")
                        continue
                    matched = sorted(p for p in folder.glob(pattern) if p.is_file())
                    if not matched:
                        refuse(f"config {name!r} split {split!r}: data_files pattern {pattern!r} matches no file in {folder}")
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

    from ..dataset.spec import ItemSpec

    spec = None
    if not (folder / SPEC_FILE).is_file():
        problems.append(f"{folder / SPEC_FILE}: missing; write a vlprobe.yaml saying which columns hold the images, "
                        "texts and gold (see vlprobe/dataset/spec.py)")
    for name in spec_files(folder):  # every one is uploaded, so each must parse
        try:
            parsed = ItemSpec.from_file(folder / name)
        except ValueError as err:
            problems.append(str(err))
            continue
        if name == SPEC_FILE:
            spec = parsed
            for config in spec.overrides:
                if configs and config not in configs:
                    problems.append(f"{folder / SPEC_FILE}: configs.{config} overrides a config the card does not "
                                    f"declare ({configs})")

    if load and meta is not None and configs and not broken:
        problems += _check_loads(folder, configs, spec, rows, notes if notes is not None else [])
    return problems, data_files


def _check_config_files(folder: Path, name: str, files: list[Path], declared_yaml: object) -> list[str]:
    problems = []
    declared = None
    if declared_yaml is None:
        problems.append(f"config {name!r}: no features declared in the card's dataset_info "
                        f"(add an entry with config_name {name!r} and its features)")
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
                    f"only, no bytes (e.g. {example!r}); embed the bytes (vlprobe.dataset.folder.write_split does)"
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
    for col in [c for c in want if c in have]:
        t_decl = arrow_declared.field(col).type
        t_file = schema.field(col).type
        # Types must agree in storage; when the file carries datasets' metadata, in meaning too.
        if not t_decl.equals(t_file) or (col in stored and _canon(stored[col]) != _canon(declared[col])
                                                        and b"huggingface" in (schema.metadata or {})):
            problems.append(
                f"config {name!r}: column {col!r} is declared as {_short(declared[col])} in the card but "
                f"{rel} stores {_short(stored.get(col))} ({t_file})"
            )
    return problems


def _canon(feature: object) -> dict[str, object]:
    import datasets

    return datasets.Features({"x": feature}).to_dict()


def _short(feature) -> str:
    text = repr(feature)
    return text if len(text) < 80 else text[:77] + "..."


def _check_loads(folder: Path, configs: list[str], spec, rows: int, notes: list[str]) -> list[str]:
    """``load_dataset`` every config (a throwaway cache: a stale one could hide a problem); its first rows to items."""
    import datasets

    from ..dataset.images import to_pil

    problems = []
    with tempfile.TemporaryDirectory(prefix="vlprobe-check-") as cache:
        for name in configs:
            try:
                with progress_bars_off():
                    dsd = datasets.load_dataset(str(folder), name, cache_dir=cache)
            except Exception as err:  # anything load_dataset raises is a reason to refuse
                problems.append(f"config {name!r}: load_dataset({str(folder)!r}, {name!r}) fails: "
                                f"{type(err).__name__}: {first_line(err)}")
                continue
            sizes = ", ".join(f"{split} {len(ds)} rows" for split, ds in dsd.items())
            if spec is None:
                continue
            for split, ds in dsd.items():
                if len(ds) == 0:
                    problems.append(f"config {name!r} split {split!r}: has no rows")
                    continue
                try:
                    for item in spec.iter_items(ds.select(range(min(rows, len(ds)))), config=name):
                        for k, image in enumerate(item.images):
                            to_pil(image, where=f"item {item.id!r} image {k}")
                except Exception as err:  # ItemError, SpecError, ImageError: each names the row and column
                    problems.append(f"config {name!r} split {split!r}: rows do not convert to items with "
                                    f"vlprobe.yaml: {err}")
                else:
                    shape = spec.for_config(name).to_item(ds[0], 0, name).shape
                    notes.append(
                        f"config {name!r}: load_dataset ok ({sizes}); first {min(rows, len(ds))} {split} rows -> "
                        f"items of {shape[0]} image(s) x {shape[1]} text(s), images decode"
                    )
                break  # the first split shows whether the spec fits this config's columns
    return problems


def plan_dataset(folder: str | os.PathLike[str], repo_id: str, rows: int = 5) -> UploadPlan:
    """Validate a dataset folder and plan the upload of its card, specs and the data files the card declares."""
    from ..errors import SettingError

    folder = Path(folder)
    check_repo_id(repo_id)
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
        raise SettingError(f"--rows must be 1 or more (the first rows of every config that must convert to items), "
                           f"got {rows}")
    notes: list[str] = []
    problems, data_files = check_dataset_folder(folder, rows=rows, notes=notes)
    if problems:
        raise ValidationError(f"dataset folder {folder}", problems)
    # What a build held (rows, rows left out): written by the VALSE / BLA builders beside the parquet.
    report = [BUILD_REPORT] if (folder / BUILD_REPORT).is_file() else []
    files = [CARD_FILE, *spec_files(folder), *data_files, *report]
    return UploadPlan(repo_id=repo_id, repo_type="dataset", folder=folder, files=files,
                      allow_patterns=list(files), notes=notes)
