"""What a Space owner can set, and what the page may load: models, dataset folders, limits.

The root folder (where ``models/mini-clip`` and the built dataset folders are looked up) is passed
in by the app (``Settings(root)``); nothing here works it out from its own location.

=================================  ==============================================================
``VLPROBE_SPACE_MODELS``           comma-separated allow list of model ids or local paths; when
                                   set, nothing else can be loaded (the default model always can)
``VLPROBE_SPACE_DEFAULT_MODEL``    the default model (else ``models/mini-clip`` under the root, else the package's)
``VLPROBE_SPACE_DATASETS``         dataset folders offered, separated by ``,`` (else the built
                                   folders under the root: travlr, winoground_style, valse, bla);
                                   when set, only these can be used
``VLPROBE_SPACE_MAX_UPLOAD_MB``    largest image upload, in MB (default 10)
``VLPROBE_SPACE_MAX_ITEMS``        most items one benchmark run may score (default 1000)
``VLPROBE_SPACE_MAX_MODELS``       models kept loaded at once, least recently used dropped (default 2)
=================================  ==============================================================

The variables are read at each call, so an owner's change (or a test's) takes effect at once. On
Hugging Face Spaces (``SPACE_ID`` set) and without an allow list, local paths are refused.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..locations import DEFAULT_DATASETS, DEFAULT_MODEL, MINI_CLIP, SPEC_FILE

ENV_MODELS = "VLPROBE_SPACE_MODELS"
ENV_DEFAULT_MODEL = "VLPROBE_SPACE_DEFAULT_MODEL"
ENV_DATASETS = "VLPROBE_SPACE_DATASETS"
ENV_MAX_UPLOAD_MB = "VLPROBE_SPACE_MAX_UPLOAD_MB"
ENV_MAX_ITEMS = "VLPROBE_SPACE_MAX_ITEMS"
ENV_MAX_MODELS = "VLPROBE_SPACE_MAX_MODELS"
ENV_ALL = (ENV_MODELS, ENV_DEFAULT_MODEL, ENV_DATASETS, ENV_MAX_UPLOAD_MB, ENV_MAX_ITEMS, ENV_MAX_MODELS)
MAX_TEXTS = 16
MAX_TEXT_CHARS = 500
MAX_PIXELS = 40_000_000  # decompression-bomb guard, well below PIL's own hard limit
MAX_BOOTSTRAP = 2000
HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")


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


def allowed_models() -> list[str] | None:
    """The owner's allow list (``$VLPROBE_SPACE_MODELS``), or None when anything may be loaded."""
    raw = os.environ.get(ENV_MODELS, "").strip()
    if not raw:
        return None
    return [m.strip() for m in raw.split(",") if m.strip()]


def model_choices() -> list[str]:
    """What the model box offers: the default first, then the allow list."""
    out = [DEFAULT_MODEL]
    for m in allowed_models() or []:
        if m not in out:
            out.append(m)
    return out


def limits_text() -> str:
    """The limits, said before anyone hits them."""
    return (f"Up to {MAX_TEXTS} texts per item, {MAX_TEXT_CHARS} characters each; images up to "
            f"{max_upload_bytes() // (1024 * 1024)} MB and {MAX_PIXELS // 1_000_000} megapixels; "
            f"benchmarks of up to {max_items():,} items.")


@dataclass(frozen=True)
class Settings:
    """The page's view of its root folder: the Space's root, or a vlprobe checkout."""

    root: Path

    def default_model(self) -> str:
        """``$VLPROBE_SPACE_DEFAULT_MODEL``, else ``models/mini-clip`` under the root (absolute), else
        the copy the installed vlprobe package ships (:func:`vlprobe.locations.shipped_model`)."""
        from ..locations import shipped_model

        configured = os.environ.get(ENV_DEFAULT_MODEL, "").strip()
        if configured:
            return configured
        candidate = Path(self.root) / DEFAULT_MODEL
        if (candidate / "config.json").is_file():
            return str(candidate)
        packaged = shipped_model()
        return str(packaged) if packaged is not None else DEFAULT_MODEL

    def resolve_model(self, choice: str | None) -> str:
        """The model id or absolute local path to load for the text in the model box.

        Empty, ``mini-clip`` or ``models/mini-clip`` means the default model. With an allow list set, anything not
        on it is refused; without one, a local folder must exist and anything else must look like a
        Hub id.
        """
        choice = (choice or "").strip()
        default = self.default_model()
        if choice in ("", DEFAULT_MODEL, MINI_CLIP, default):
            return self._resolve_default(default)
        allow = allowed_models()
        if allow is not None and choice not in allow:
            raise SpaceError(f"model {choice!r} is not allowed on this Space; choose one of: "
                             f"{', '.join(model_choices())}")
        local = Path(choice).expanduser()
        if local.exists():
            if allow is None and on_hosted_space():
                raise SpaceError(f"model {choice!r}: local paths cannot be loaded on this hosted Space; "
                                 "type a Hub model id instead")
            if not local.is_dir():
                raise SpaceError(f"model {choice!r}: a local model must be a folder saved with save_pretrained")
            return str(local.resolve())
        if not HUB_ID.match(choice):
            raise SpaceError(f"model {choice!r} is neither an existing local folder nor a Hub id "
                             "like 'openai/clip-vit-base-patch32'")
        return choice

    @staticmethod
    def _resolve_default(default: str) -> str:
        if Path(default).is_dir() or (default != DEFAULT_MODEL and not Path(default).exists() and HUB_ID.match(default)):
            return default
        if os.environ.get(ENV_DEFAULT_MODEL, "").strip():
            raise SpaceError(f"the default model {default!r} (set in {ENV_DEFAULT_MODEL}) cannot be found; "
                             "type a Hub model id or the path of a local model folder in the Model box")
        raise SpaceError(f"the default model {DEFAULT_MODEL} is not in this checkout yet (vlprobe trains and "
                         "ships it; see the README). Type a Hub model id or the path of a local model folder "
                         "in the Model box instead.")

    def dataset_folders(self) -> list[str]:
        """``$VLPROBE_SPACE_DATASETS``, else every built dataset folder under the root (a ``vlprobe.yaml``,
        a card and parquet): the offline default's first, then the others by name, so a new benchmark's
        folder is offered as soon as it is built."""
        configured = os.environ.get(ENV_DATASETS, "").strip()
        if configured:
            return [d.strip() for d in configured.split(",") if d.strip()]
        root = Path(self.root)
        found = [f for f in (sorted(root.iterdir()) if root.is_dir() else [])
                 if (f / SPEC_FILE).is_file() and (f / "README.md").is_file() and any((f / "data").glob("*/*.parquet"))]
        first = [root / name for name in DEFAULT_DATASETS]
        return [str(f) for f in sorted(found, key=lambda f: (f not in first, first.index(f) if f in first else 0, f.name))]

    def resolve_dataset(self, folder: str | None) -> Path:
        """A dataset folder the page may read; with ``$VLPROBE_SPACE_DATASETS`` set, only those."""
        folder = (folder or "").strip()
        if not folder:
            raise SpaceError("choose a dataset")
        if os.environ.get(ENV_DATASETS, "").strip() and folder not in self.dataset_folders():
            names = ", ".join(Path(d).name for d in self.dataset_folders())
            raise SpaceError(f"dataset {Path(folder).name!r} is not offered on this Space; choose one of: {names}")
        path = Path(folder).expanduser()
        if not path.is_absolute() and not path.exists():
            path = Path(self.root) / folder
        if not path.is_dir():
            raise SpaceError(f"dataset folder {Path(folder).name!r} does not exist")
        if not (path / "README.md").is_file():
            raise SpaceError(f"{Path(folder).name!r} has no README.md card, so it is not a dataset folder")
        return path.resolve()
