"""What a Space owner can set (the variables: space/README.md), and what the page may load: models, dataset folders,
limits. Hosted (``SPACE_ID`` set), a typed path is refused before the disk is looked at, so an existing and a missing
one get the same sentence, and the Dataset boxes name datasets, never server paths."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..storage.locations import DEFAULT_DATASETS, DEFAULT_MODEL, MINI_CLIP, SPEC_FILE, datasets_home
from . import hub

ENV_MODELS = "VLPROBE_SPACE_MODELS"
ENV_DEFAULT_MODEL = "VLPROBE_SPACE_DEFAULT_MODEL"
ENV_DATASETS = "VLPROBE_SPACE_DATASETS"
ENV_MAX_UPLOAD_MB = "VLPROBE_SPACE_MAX_UPLOAD_MB"
ENV_MAX_ITEMS = "VLPROBE_SPACE_MAX_ITEMS"
ENV_MAX_MODELS = "VLPROBE_SPACE_MAX_MODELS"
ENV_ALL = (ENV_MODELS, ENV_DEFAULT_MODEL, ENV_DATASETS, ENV_MAX_UPLOAD_MB, ENV_MAX_ITEMS, ENV_MAX_MODELS)
OFFLINE_MODEL = DEFAULT_MODEL  # the model the page always has: vlprobe's mini-clip, under the root
MAX_TEXTS = 16
MAX_TEXT_CHARS = 500
MAX_PIXELS = 40_000_000  # decompression-bomb guard, well below PIL's own hard limit
MAX_BOOTSTRAP = 2000
HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")
HOSTED_MODELS = ("this hosted Space loads models from the Hugging Face Hub only; type a Hub model id like "
                 "'openai/clip-vit-base-patch32'")


class SpaceError(ValueError):
    """A problem the person using the page can fix; the message is shown in the page as it is."""


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SpaceError(f"environment variable {name}={raw!r} must be a whole number") from None
    if value < 1:
        raise SpaceError(f"environment variable {name}={raw!r} must be at least 1")
    return value


def max_upload_bytes() -> int:
    return env_int(ENV_MAX_UPLOAD_MB, 10) * 1024 * 1024


def max_items() -> int:
    return env_int(ENV_MAX_ITEMS, 1000)


def max_models() -> int:
    return env_int(ENV_MAX_MODELS, 2)


def on_hosted_space() -> bool:
    """True on Hugging Face Spaces (which set ``SPACE_ID``)."""
    return bool(os.environ.get("SPACE_ID", "").strip())


def _listed(name: str) -> list[str] | None:
    raw = os.environ.get(name, "").strip()
    return [m.strip() for m in raw.split(",") if m.strip()] if raw else None


def allowed_models() -> list[str] | None:
    """The owner's allow list (``$VLPROBE_SPACE_MODELS``), or None when anything may be loaded."""
    return _listed(ENV_MODELS)


def listed_datasets() -> list[str] | None:
    """The owner's dataset list (``$VLPROBE_SPACE_DATASETS``), or None."""
    return _listed(ENV_DATASETS)


def limits_text() -> str:
    """The limits, said before anyone hits them."""
    return (f"Up to {MAX_TEXTS} texts per item, {MAX_TEXT_CHARS} characters each; images up to "
            f"{max_upload_bytes() // (1024 * 1024)} MB and {MAX_PIXELS // 1_000_000} megapixels; "
            f"benchmarks of up to {max_items():,} items.")


@dataclass(frozen=True)
class ModelEntry:
    """One model of the menu: what the Model box shows and one line saying what it can read."""

    id: str
    about: str = ""


def read_model_menu(path: str | os.PathLike | None) -> list[ModelEntry]:
    """The models a menu file lists (``id | what it can read`` a line); a bad id refused naming its line."""
    if path is None or not Path(path).is_file():
        return []
    out = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        model, _, about = (part.strip() for part in line.partition("|"))
        if not model or not (HUB_ID.match(model) or model == OFFLINE_MODEL):
            raise SpaceError(f"{Path(path).name} line {n}: {model!r} is not a Hub model id like "
                             f"'openai/clip-vit-base-patch32' (or {OFFLINE_MODEL})")
        out.append(ModelEntry(model, about))
    return out


@dataclass(frozen=True)
class Settings:
    """The page's root folder (the Space's, or a vlprobe checkout) and model menu file (None: the offline model only)."""

    root: Path
    models_file: Path | None = None

    def offline_model_path(self) -> str | None:
        """Where the offline model is: ``models/mini-clip`` under the root, else the installed package's; or None."""
        from ..storage.locations import shipped_model  # looked up at each call (tests replace it)

        candidate = Path(self.root) / OFFLINE_MODEL
        if (candidate / "config.json").is_file():
            return str(candidate.resolve())
        packaged = shipped_model()
        return str(packaged) if packaged is not None else None

    def model_menu(self) -> list[ModelEntry]:
        """What the Model box offers: the owner's allow list, else the menu file's; the offline model last."""
        described = {e.id: e for e in read_model_menu(self.models_file)}
        allow = allowed_models()
        entries = [described.get(m, ModelEntry(m)) for m in allow] if allow is not None else list(described.values())
        default = os.environ.get(ENV_DEFAULT_MODEL, "").strip()
        if default and default not in {e.id for e in entries}:
            entries.insert(0, described.get(default, ModelEntry(default)))
        if OFFLINE_MODEL not in {e.id for e in entries}:
            entries.append(described.get(OFFLINE_MODEL, ModelEntry(OFFLINE_MODEL)))
        else:  # the offline model stays last: the menu reads "real models, then the toy"
            entries.append(entries.pop([e.id for e in entries].index(OFFLINE_MODEL)))
        return entries

    def model_choices(self) -> list[str]:
        return [e.id for e in self.model_menu()]

    def models_at_hand(self) -> tuple[list[str], list[str]]:
        """(the menu's models that can be loaded now, those that cannot: :func:`.hub.model_at_hand`)."""
        keep = {OFFLINE_MODEL, os.environ.get(ENV_DEFAULT_MODEL, "").strip()}
        ok, missing = [], []
        for m in self.model_choices():
            (ok if m in keep or hub.model_at_hand(m, Path(self.root)) else missing).append(m)
        return ok, missing

    def unavailable_text(self, missing: list[str]) -> str:
        """One sentence naming the models the Model box leaves out and why ("" when none)."""
        if not missing:
            return ""
        names = [self.about_model(m).split(" (")[0].split(":")[0].strip() or m for m in missing]
        listed = ", ".join(names[:-1]) + (" and " if len(names) > 1 else "") + names[-1]
        return (f"{listed} {'are' if len(names) > 1 else 'is'} not offered: this Space cannot reach the Hugging Face "
                f"Hub now, and {'they are' if len(names) > 1 else 'it is'} not in its cache.")

    def about_model(self, choice: str | None) -> str:
        """The menu's line about a model ("" when it has none)."""
        choice = (choice or "").strip()
        return next((e.about for e in self.model_menu() if e.id == choice), "")

    def default_choice(self) -> str:
        """The owner's default model, else the menu's first that can be had now (the offline model last)."""
        configured = os.environ.get(ENV_DEFAULT_MODEL, "").strip()
        return configured or self.models_at_hand()[0][0]

    def resolve_model(self, choice: str | None) -> str:
        """The model id or absolute local path to load for the Model box's text (empty: the default model). With an
        allow list, anything not on it is refused; hosted, anything else must be a Hub id (the disk is not looked
        at); else a local folder must exist and anything else must look like a Hub id."""
        choice = (choice or "").strip()
        if not choice:
            choice = self.default_choice()
        configured = os.environ.get(ENV_DEFAULT_MODEL, "").strip()
        if choice in (OFFLINE_MODEL, MINI_CLIP):
            path = self.offline_model_path()
            if path is None:
                raise SpaceError(f"the offline model {OFFLINE_MODEL} is not in this copy of the Space (vlprobe "
                                 "trains and ships it; see the README); type a Hub model id in the Model box instead")
            return path
        allow = allowed_models()
        if allow is not None and choice not in allow and choice != configured:
            raise SpaceError(f"model {choice!r} is not allowed on this Space; choose one of: "
                             f"{', '.join(self.model_choices())}")
        # open_clip's names, which name no path (the registry's claims take folders too: a hosted Space's disk)
        if choice.startswith(("open_clip:", "hf-hub:")):
            return choice
        if allow is None and on_hosted_space() and choice != configured:
            # hosted: a Hub id, never looked up on the disk (one answer whether a path exists or not)
            if not HUB_ID.match(choice):
                raise SpaceError(f"model {choice!r}: {HOSTED_MODELS}")
            return choice
        local = Path(choice).expanduser()
        if not local.is_absolute() and (Path(self.root) / local).is_dir() and not HUB_ID.match(choice):
            local = Path(self.root) / local
        if local.exists():
            if not local.is_dir():
                raise SpaceError(f"model {choice!r}: a local model must be a folder saved with save_pretrained")
            return str(local.resolve())
        if choice == configured and (Path(choice).is_absolute() or choice.startswith(".")):
            raise SpaceError(f"the default model {choice!r} (set in {ENV_DEFAULT_MODEL}) cannot be found; "
                             "type a Hub model id or the path of a local model folder in the Model box")
        if not HUB_ID.match(choice):
            raise SpaceError(f"model {choice!r} is neither an existing local folder nor a Hub id "
                             "like 'openai/clip-vit-base-patch32'")
        return choice

    def _built_under(self, root: Path) -> list[Path]:
        if not root.is_dir():
            return []
        return [f for f in sorted(root.iterdir())
                if (f / SPEC_FILE).is_file() and (f / "README.md").is_file() and any((f / "data").glob("*/*.parquet"))]

    def dataset_folders(self) -> list[str]:
        """What the Dataset boxes offer: ``$VLPROBE_SPACE_DATASETS`` when set; else every built dataset folder under
        the root and, off a hosted Space, where ``vlprobe build`` writes; the offline defaults first."""
        listed = listed_datasets()
        if listed is not None:
            return listed
        found = {f.name: f for f in self._built_under(Path(self.root))}
        if not on_hosted_space():
            home = os.environ.get("VLPROBE_ROOT", "").strip()
            for f in self._built_under(Path(home) if home else datasets_home()):
                found.setdefault(f.name, f)
        order = list(DEFAULT_DATASETS)
        names = sorted(found, key=lambda n: (n not in order, order.index(n) if n in order else 0, n))
        return [str(found[n]) for n in names]

    def dataset_choices(self) -> list[tuple[str, str]]:
        """The Dataset boxes' (label, value): a folder by its name (no server path), a listed Hub id as itself."""
        out, seen = [], set()
        for d in self.dataset_folders():
            name = Path(d).name
            is_folder = (Path(d).expanduser() if Path(d).is_absolute() else Path(self.root) / d).is_dir()
            value = name if is_folder and name not in seen else d
            seen.add(value)
            out.append((name if is_folder else d, value))
        return out

    def may_type_datasets(self) -> bool:
        """Whether the Dataset boxes accept a typed folder: only off a hosted Space without a list."""
        return listed_datasets() is None and not on_hosted_space()

    def resolve_dataset(self, folder: str | None) -> Path | str:
        """A dataset the page may read: a folder (absolute Path) or an owner-listed Hub id; with a list, or hosted,
        only what the boxes offer, anything else refused before the disk is looked at."""
        folder = (folder or "").strip()
        if not folder:
            raise SpaceError("choose a dataset in the Dataset box")
        offered = self.dataset_folders()
        if not self.may_type_datasets():  # what the boxes offer (hosted: by its name only, never a path)
            choices = self.dataset_choices()
            hosted = on_hosted_space()
            match = next((d for d, (label, value) in zip(offered, choices)
                          if folder in (label, value) or (folder == d and not hosted)), None)
            if match is None:
                names = ", ".join(label for label, _ in choices) or "none"
                raise SpaceError(f"dataset {Path(folder).name!r} is not offered on this Space; choose one of: {names}")
            folder = match
        else:
            folder = next((d for d in offered if folder == Path(d).name), folder)
        path = Path(folder).expanduser()
        if not path.is_absolute() and not path.exists():
            path = Path(self.root) / folder
        if not path.is_dir():
            if listed_datasets() is not None and folder in listed_datasets() and HUB_ID.match(folder):
                return folder  # a Hub dataset id the owner listed
            raise SpaceError(f"dataset folder {Path(folder).name!r} does not exist")
        if not (path / "README.md").is_file():
            raise SpaceError(f"{Path(folder).name!r} has no README.md card, so it is not a dataset folder")
        return path.resolve()
