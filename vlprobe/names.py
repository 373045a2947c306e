"""What a dataset or model name stands for, the same for every command (:func:`find_dataset`, :func:`find_model`);
a name that stands for nothing fails in about a second, naming the closest known name, before torch or ``datasets``
is imported (:func:`check_model`, :func:`check_dataset`, :func:`check_family`)."""

from __future__ import annotations

import contextlib
import difflib
import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TypeVar

# HfApi is imported where the Hub is asked (1.0 s to import): a name that is a folder never needs it
from huggingface_hub import constants as hub_constants  # 6 ms: the package's top level is lazy

from .errors import ArgumentError, DatasetError, ModelError, VlprobeError
from .scorers.base import families, get_family
from .scorers.loading import family_of_name
from .storage import locations
from .storage.locations import DEFAULT_MODEL, MINI_CLIP, SPEC_FILE, datasets_home

T = TypeVar("T")  # a name given (a str or os.PathLike), or an object in memory, returned as it is


def _roots(root: str | os.PathLike[str] | None = None) -> list[Path]:
    given = os.environ.get("VLPROBE_ROOT")
    return [Path(root) if root is not None else Path.cwd(), *([Path(given).expanduser()] if given else [])]


def search_roots(root: str | os.PathLike[str] | None = None) -> list[Path]:
    """Where a dataset name is looked for: ``root`` (default here), ``$VLPROBE_ROOT``, where ``vlprobe build`` writes."""
    out: list[Path] = []
    for base in [*_roots(root), datasets_home()]:
        if base.resolve() not in [b.resolve() for b in out]:
            out.append(base)
    return out


# ---- models -------------------------------------------------------------------------------------------------

def is_model_folder(path: str | os.PathLike[str]) -> bool:
    return (Path(path).expanduser() / "config.json").is_file()


def is_bundled_name(model: object) -> bool:
    """Whether ``model`` names the bundled model (``mini-clip``, or ``models/mini-clip``)."""
    return isinstance(model, (str, os.PathLike)) and str(model).strip().rstrip("/") in (MINI_CLIP, DEFAULT_MODEL)


def find_model(model: T) -> T | str:
    """The model ``model`` stands for: a folder that exists, as given; the bundled model's name is that folder here
    or in ``$VLPROBE_ROOT``, else the copy the package ships; anything else as it is (a Hub id, an object)."""
    if not is_bundled_name(model) or Path(str(model)).expanduser().is_dir():
        return model
    for base in _roots():
        if is_model_folder(base / DEFAULT_MODEL):
            return str(base / DEFAULT_MODEL)
    packaged = locations.shipped_model()  # (through the module: a test replaces it)
    return str(packaged) if packaged is not None else model


def looks_like_path(name: str) -> bool:
    """A name that can only be a path (``./x``, ``/x``, ``~/x``, ``a/b/c``), never a Hub id (NAME or OWNER/NAME)."""
    return name.startswith(("/", "./", "../", "~", ".\\")) or name.count("/") > 1 or "\\" in name


def known_models(near: str) -> list[str]:
    """Model names worth suggesting: the bundled one, folders here, in ``models/`` and beside ``near``, the Hub's cached."""
    names = [MINI_CLIP, DEFAULT_MODEL]
    bases = [Path("."), Path("models")]
    if str(Path(near).parent) not in (".", ""):
        bases.append(Path(near).expanduser().parent)
    for base in bases:
        try:
            children = sorted(base.iterdir())
        except OSError:
            continue
        names += [child.name if str(base) == "." else str(base / child.name)
                  for child in children if is_model_folder(child)]
    with contextlib.suppress(OSError):
        names += sorted(p.name[len("models--"):].replace("--", "/") for p in Path(hub_constants.HF_HUB_CACHE).iterdir()
                        if p.name.startswith("models--"))
    return list(dict.fromkeys(names))


_MODEL_HOW = ("; pass a local folder (one written by save_pretrained, or a snapshot downloaded on a networked machine "
              "with `hf download ID --local-dir DIR`)")


def check_model(model: object, revision: str | None = None) -> None:
    """Fail in about a second where loading ``model`` would fail only after importing torch."""
    if not isinstance(model, (str, os.PathLike)):
        return
    text = str(model)
    own = family_of_name(text.strip())  # a name a family reads itself (open_clip:, hf-hub:): the family's own check
    if own is not None:
        check = get_family(own).check_name
        if check is not None:
            check(text.strip(), revision)
        return
    path = Path(str(find_model(model))).expanduser()
    if path.is_dir():
        if revision is not None:  # recorded in results.json, yet a folder has no revisions: it would change nothing
            raise ArgumentError("revision", revision, f"{text} is a local folder, which has no revisions; leave it out "
                                                      "(it picks a branch, tag or commit of a Hub model)")
        return
    if path.exists():
        raise ModelError(f"model {text!r} is a file; pass a model folder (one written by save_pretrained) or a Hub id")
    hint = did_you_mean(text, known_models(near=text))
    if is_bundled_name(model):
        raise ModelError(f"model {text!r}: the bundled model is not in this installation of vlprobe (nor in the "
                         f"working directory); pass --model with a local folder written by save_pretrained, or a "
                         f"Hub id")
    if looks_like_path(text) or not all(text.split("/")):
        raise ModelError(f"model {text!r} is not a local folder{hint or _MODEL_HOW}")
    _check_hub("model", text, revision, ModelError, hint, _MODEL_HOW,
               f"model {text!r} is not a local folder, and the Hub ({hub_constants.ENDPOINT}) has no model of that name")


def check_family(family: str | None) -> None:
    """Refuse a family that is not registered, listing the known ones."""
    if family is None:
        return
    known = sorted(families())
    if family.split("+")[0] not in known:
        raise ArgumentError("family", family, f"unknown scorer family{did_you_mean(family, known)}; known families: "
                                              f"{', '.join(known)}")


# ---- datasets -----------------------------------------------------------------------------------------------

def is_built(folder: str | os.PathLike[str]) -> bool:
    """Whether ``folder`` holds a ``vlprobe.yaml`` and parquet under ``data/``."""
    folder = Path(folder)
    return (folder / SPEC_FILE).is_file() and (folder / "data").is_dir() and any((folder / "data").rglob("*.parquet"))


def find_dataset(name: T) -> T | str:
    """The dataset ``name`` stands for: a path, as given; else a built folder of that name in :func:`search_roots`
    (one in vlprobe's cache refused when another user could have changed it); else ``name`` (a Hub id, an object)."""
    if not isinstance(name, (str, os.PathLike)):
        return name
    text = str(name)
    if not text.strip() or Path(text).expanduser().exists() or "/" in text.strip("/") or looks_like_path(text):
        return name  # a path (that exists or not), or OWNER/NAME: a Hub id, never a built folder's name
    for folder in [base / text for base in search_roots()]:
        if is_built(folder):
            if folder.parent == datasets_home():  # the cache: built by vlprobe, so it must be this user's alone
                why = locations.distrust_tree(folder, locations.cache_home())
                if why:
                    raise DatasetError(f"dataset {text!r}: found {folder} in vlprobe's cache, but {why}, who could "
                                       f"have changed its rows; not using it: {locations.home_advice(locations.cache_home())} "
                                       "and build it again there (or pass the folder's path, if you trust it)")
            return str(folder)
    return name


def known_datasets() -> dict[str, Path]:
    """{name: folder} of the folders holding a ``vlprobe.yaml`` in :func:`search_roots`, the first found of each."""
    found: dict[str, Path] = {}
    for base in search_roots():
        try:
            children = sorted(p for p in base.iterdir() if (p / SPEC_FILE).is_file())
        except OSError:
            continue
        for child in children:
            found.setdefault(child.name, child)
    return found


_OFFLINE_HOW = ("to work offline, pass a dataset folder (built with `vlprobe build NAME`, or downloaded on a "
                "networked machine with `hf download ID --repo-type dataset --local-dir DIR`); a Hub dataset "
                "loaded once before is read from the cache with HF_HUB_OFFLINE=1")


def check_dataset(dataset: str, revision: str | None = None) -> None:
    """Fail in about a second where ``datasets`` would spend half a minute retrying."""
    if Path(dataset).expanduser().exists():
        return
    known = known_datasets()
    builder = catalogue().get(dataset)
    if builder and builder.startswith("vlprobe build "):  # a benchmark vlprobe builds, not built yet
        raise DatasetError(f"dataset {dataset!r} is not built yet: run `{builder}` (it writes "
                           f"{locations.dataset_folder(dataset)}, where --dataset {dataset} then finds it from any "
                           f"folder), or point at a built one (--dataset DIR, or VLPROBE_ROOT=DIR holding {dataset}/); "
                           f"`vlprobe list` shows what can be built and what is")
    hint = dataset_hint(dataset, known)
    parts = dataset.split("/")
    if len(parts) == 2 and parts[0] in known:  # FOLDER/CONFIG, which reads as a Hub id OWNER/NAME
        hint = f"; {parts[0]} is a dataset folder here: to score its config {parts[1]!r}, pass --dataset {parts[0]} " \
               f"--config {parts[1]}"
    if dataset.startswith((".", "/", "~")) or len(parts) > 2 or not all(parts):
        raise DatasetError(f"dataset {dataset!r}: no such folder"
                           f"{hint or ' (and not a Hub id, which is NAME or OWNER/NAME)'}")
    _check_hub("dataset", dataset, revision, DatasetError, hint, "; " + _OFFLINE_HOW,
               f"dataset {dataset!r}: no such local folder, and no such dataset on the Hub ({hub_constants.ENDPOINT})")


# ---- the Hub ------------------------------------------------------------------------------------------------

_REACHED: set[tuple[str, str, str | None]] = set()  # Hub models and datasets found this process: asked once


def _check_hub(kind: str, name: str, revision: str | None, error: type[VlprobeError], hint: str, how: str,
               absent: str) -> None:
    """The Hub's part of :func:`check_model` and :func:`check_dataset`, asked once per process, 2 s at most: ``name``
    refused in one line ending with ``hint`` else ``how``; ``absent``: how "the Hub has none" is said. Gated, a bad
    revision, a server error or a slow answer go on: the library that loads it says what exactly."""
    variables = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE" if kind == "model" else "HF_DATASETS_OFFLINE")
    offline = next((v for v in variables if os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on")), None)
    if offline:
        if not _hub_cached(kind, name):
            raise error(f"{kind} {name!r} is not a local folder, and {offline} is set with no copy of it in the Hugging "
                        f"Face cache{hint or how}")
        return
    if (kind, name, revision) in _REACHED:
        return
    from huggingface_hub import HfApi
    from huggingface_hub.errors import GatedRepoError, HfHubHTTPError, RepositoryNotFoundError

    ask = HfApi().model_info if kind == "model" else HfApi().dataset_info
    logger = logging.getLogger("huggingface_hub")  # its retry lines off: the one-line error says it all
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        ask(name, revision=revision, timeout=2)
    except GatedRepoError:  # a RepositoryNotFoundError too, but it exists
        return
    except RepositoryNotFoundError:
        raise error(f"{absent}{hint or '; check the name'}") from None
    except HfHubHTTPError:
        return
    except Exception as err:  # noqa: BLE001
        if type(err).__name__ == "ReadTimeout":  # connected, but slow to answer
            return
        why = f"the Hub ({hub_constants.ENDPOINT}) cannot be reached ({type(err).__name__})"
        if _hub_cached(kind, name):
            raise error(f"{kind} {name!r}: {why}; a copy is cached: rerun with HF_HUB_OFFLINE=1 to read it") from None
        raise error(f"{kind} {name!r} is not a local folder, and {why}{hint or how}") from None
    finally:
        logger.setLevel(level)
    _REACHED.add((kind, name, revision))


def _hub_cached(kind: str, repo_id: str) -> bool:
    """Whether a copy of Hub ``kind`` ``repo_id`` lies in the Hub cache (or, for a dataset, in the datasets cache)."""
    if (Path(hub_constants.HF_HUB_CACHE) / f"{kind}s--{repo_id.replace('/', '--')}").is_dir():
        return True
    if kind != "dataset":
        return False
    base = Path(os.environ.get("HF_DATASETS_CACHE") or Path(hub_constants.HF_HOME) / "datasets")
    return (base / repo_id.replace("/", "___")).is_dir()


# ---- suggestions --------------------------------------------------------------------------------------------

def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """``"; did you mean X?"`` for the candidate nearest ``name`` by spelling, else ``""``."""
    hits = difflib.get_close_matches(name, [c for c in dict.fromkeys(candidates) if c != name], n=1, cutoff=0.6)
    return f"; did you mean {hits[0]}?" if hits else ""


def catalogue() -> dict[str, str]:
    """{dataset name: how it is had (``"vlprobe build NAME"``, ``"the Hub"``)} of every benchmark, built or not."""
    from .benchmarks import benchmarks

    out: dict[str, str] = {}
    for bench in sorted(benchmarks().values(), key=lambda b: b.name):
        if bench.builder:
            out[bench.builder] = f"vlprobe build {bench.builder}"
        elif bench.hub_id:
            out[bench.hub_id] = "the Hub"
    return out


def dataset_hint(name: str, known: Mapping[str, Path]) -> str:
    """``"; did you mean X (...)?"``: a Hub benchmark's own name means its Hub id (``winoground`` ->
    ``facebook/winoground``), else the closest names among the folders found (``known``) and the catalogue."""
    from .benchmarks import benchmarks

    notes: dict[str, str] = {k: "" for k in known}
    for entry, how in catalogue().items():
        if how == "the Hub":
            notes[entry] = " (from the Hub)"
        elif not is_built(known[entry]) if entry in known else find_dataset(entry) == entry:
            notes[entry] = f" (not built yet: `{how}`)"
        else:
            notes.setdefault(entry, "")
    # a Hub benchmark is also found by its own name (winoground) and its id's last part
    spelled = {c: c for c in notes}
    for b in benchmarks().values():
        if b.hub_id and not b.builder:
            for short in (b.name, *b.aliases, b.hub_id.split("/")[-1].lower()):
                spelled.setdefault(short, b.hub_id)
    lowered = name.strip().lower()
    hits = [spelled[lowered]] if lowered in spelled and spelled[lowered] != name else []
    pool = [c for c in spelled if c != name and spelled[c] not in hits]
    hits += [spelled[c] for c in difflib.get_close_matches(name, pool, n=3, cutoff=0.6)]
    hits = list(dict.fromkeys(hits))[:2]
    return "; did you mean " + " or ".join(f"{h}{notes.get(h, '')}" for h in hits) + "?" if hits else ""
