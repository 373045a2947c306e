"""The logic behind the Gradio Space (``space/app.py``), importable and testable without a browser.

Everything here goes through the same pieces as the command line: models load with
:func:`vlprobe.scorers.loading.load_scorer`, items are scored by :func:`vlprobe.engine.score_items`,
and every number comes from :func:`vlprobe.metric.compute`. Nothing here scores or computes a
metric by itself.

Settings a Space owner can make (environment variables):

=================================  ==============================================================
``VLPROBE_SPACE_MODELS``           comma-separated allow list of model ids or local paths; when
                                   set, nothing else can be loaded (the default model always can)
``VLPROBE_SPACE_DEFAULT_MODEL``    the default model (else ``models/mini-clip``, found beside the
                                   app or in the repository)
``VLPROBE_SPACE_DATASETS``         dataset folders offered in the page, separated by ``,``
                                   (else the built folders of the repository: travlr,
                                   winoground_style, valse, bla); when set, only these can be used
``VLPROBE_SPACE_MAX_UPLOAD_MB``    largest image upload, in MB (default 10)
``VLPROBE_SPACE_MAX_ITEMS``        most items one benchmark run may score (default 1000)
``VLPROBE_SPACE_MAX_MODELS``       models kept loaded at once, least recently used dropped (default 2)
=================================  ==============================================================

On Hugging Face Spaces (``SPACE_ID`` set) and without an allow list, local paths are refused: only
Hub ids and the default model load there.

Safety: ``trust_remote_code`` is never turned on (this module passes ``False``), uploads are
size-checked and decoded with PIL before anything else sees them, and every failure a user can
cause is a :class:`SpaceError` with a message for the page.
"""

from __future__ import annotations

import difflib
import os
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from .items import Item, ItemError
from .results import METRIC_ORDER  # the display order `vlprobe evaluate` uses

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MODEL = "models/mini-clip"
KNOWN_DATASET_FOLDERS = ("travlr", "winoground_style", "valse", "bla")
ENV_MODELS = "VLPROBE_SPACE_MODELS"
ENV_DEFAULT_MODEL = "VLPROBE_SPACE_DEFAULT_MODEL"
ENV_DATASETS = "VLPROBE_SPACE_DATASETS"
ENV_MAX_UPLOAD_MB = "VLPROBE_SPACE_MAX_UPLOAD_MB"
ENV_MAX_ITEMS = "VLPROBE_SPACE_MAX_ITEMS"
ENV_MAX_MODELS = "VLPROBE_SPACE_MAX_MODELS"
MAX_TEXTS = 16
MAX_TEXT_CHARS = 500
MAX_PIXELS = 40_000_000  # decompression-bomb guard, well below PIL's own hard limit
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")


class SpaceError(ValueError):
    """A problem the person using the page can fix; the message is shown in the page as it is."""


def _env_int(name: str, default: int) -> int:
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
    return _env_int(ENV_MAX_UPLOAD_MB, 10) * 1024 * 1024


def max_items() -> int:
    return _env_int(ENV_MAX_ITEMS, 1000)


# ---- models -------------------------------------------------------------------------------------

def default_model() -> str:
    """The default model: ``$VLPROBE_SPACE_DEFAULT_MODEL``, else ``models/mini-clip`` beside the
    working directory (a Space's root) or in the repository, as an absolute path when it exists."""
    configured = os.environ.get(ENV_DEFAULT_MODEL, "").strip()
    if configured:
        return configured
    for base in (Path.cwd(), REPO_ROOT):
        candidate = base / DEFAULT_MODEL
        if (candidate / "config.json").is_file():
            return str(candidate)
    return DEFAULT_MODEL


def on_hosted_space() -> bool:
    """True on Hugging Face Spaces (which set ``SPACE_ID``): there, without an allow list, only Hub
    ids and the default model may be loaded, never arbitrary paths of the server's disk."""
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


def resolve_model(choice: str | None) -> str:
    """The model id or absolute local path to load for the text in the model box.

    Empty or ``models/mini-clip`` means the default model. With an allow list set, anything not on
    it is refused; without one, a local folder must exist and anything else must look like a Hub id.
    """
    choice = (choice or "").strip()
    default = default_model()
    if choice in ("", DEFAULT_MODEL, default):
        if Path(default).is_dir() or (default != DEFAULT_MODEL and not Path(default).exists() and _HUB_ID.match(default)):
            return default
        if os.environ.get(ENV_DEFAULT_MODEL, "").strip():
            raise SpaceError(f"the default model {default!r} (set in {ENV_DEFAULT_MODEL}) cannot be found; "
                             "type a Hub model id or the path of a local model folder in the Model box")
        raise SpaceError(
            f"the default model {default} is not in this checkout yet (vlprobe trains and ships it as "
            f"{DEFAULT_MODEL}; see the README). Type a Hub model id or the path of a local model folder "
            "in the Model box instead."
        )
    allow = allowed_models()
    if allow is not None and choice not in allow:
        raise SpaceError(
            f"model {choice!r} is not allowed on this Space; allowed: {', '.join(model_choices())} "
            f"(the Space owner sets the list in {ENV_MODELS})"
        )
    local = Path(choice).expanduser()
    if local.exists():
        if allow is None and on_hosted_space():
            raise SpaceError(
                f"model {choice!r}: local paths cannot be loaded on this hosted Space unless the owner lists them "
                f"in {ENV_MODELS}; type a Hub model id instead"
            )
        if not local.is_dir():
            raise SpaceError(f"model {choice!r}: a local model must be a folder saved with save_pretrained")
        return str(local.resolve())
    if not _HUB_ID.match(choice):
        raise SpaceError(
            f"model {choice!r} is neither an existing local folder nor a Hub id like 'openai/clip-vit-base-patch32'"
        )
    return choice


class ModelCache:
    """Loaded scorers, one per model id, the least recently used dropped beyond ``capacity``
    (default ``$VLPROBE_SPACE_MAX_MODELS`` or 2). Two requests for the same model load it once;
    loading one model does not hold back requests for a model already loaded."""

    def __init__(self, capacity: int | None = None) -> None:
        self.capacity = capacity
        self._models: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()  # guards the two dicts
        self._loading: dict[str, threading.Lock] = {}  # one lock per model being loaded
        self.loads = 0

    def get(self, model_id: str, loader: Callable[[str], Any] | None = None) -> Any:
        with self._lock:
            if model_id in self._models:
                self._models.move_to_end(model_id)
                return self._models[model_id]
            key_lock = self._loading.setdefault(model_id, threading.Lock())
        with key_lock:
            with self._lock:  # another request may have loaded it while this one waited
                if model_id in self._models:
                    self._models.move_to_end(model_id)
                    return self._models[model_id]
            try:
                scorer = (loader or _load_scorer)(model_id)
            except BaseException:
                with self._lock:
                    self._loading.pop(model_id, None)
                raise
            with self._lock:  # stored before its loading lock goes, so nobody loads it twice
                self.loads += 1
                self._models[model_id] = scorer
                self._loading.pop(model_id, None)
                capacity = self.capacity or _env_int(ENV_MAX_MODELS, 2)
                while len(self._models) > capacity:
                    self._models.popitem(last=False)
            return scorer

    def __contains__(self, model_id: str) -> bool:
        return model_id in self._models

    def clear(self) -> None:
        with self._lock:
            self._models.clear()


def _load_scorer(model_id: str) -> Any:
    from .scorers.loading import load_scorer

    try:
        return load_scorer(model_id, trust_remote_code=False)  # never run a repo's own code on a Space
    except (OSError, ValueError, ImportError, KeyError) as err:
        msg = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise SpaceError(f"model {model_id!r} could not be loaded: {msg}") from None


MODELS = ModelCache()


def preload_default_model() -> str | None:
    """Load the default model into the cache (at the Space's start, so that the first person to
    score does not wait for it). Returns why it could not be loaded, or None."""
    try:
        MODELS.get(resolve_model(""))
    except SpaceError as err:
        return str(err)
    return None


# ---- uploads and texts --------------------------------------------------------------------------

def load_upload(path: Any, label: str = "image") -> Any:
    """Open an uploaded file as an RGB PIL image, refusing files that are too large or not images."""
    from PIL import Image, UnidentifiedImageError

    if path is None or path == "":
        return None
    if isinstance(path, Image.Image):
        image = path
    else:
        if isinstance(path, dict):  # gradio FileData-like
            path = path.get("path") or path.get("name")
        p = Path(str(path))
        if not p.is_file():
            raise SpaceError(f"{label}: the uploaded file is missing on the server; upload it again")
        size = p.stat().st_size
        limit = max_upload_bytes()
        if size > limit:
            raise SpaceError(f"{label}: the file is {size / 1e6:.1f} MB; this Space accepts images up to {limit // (1024 * 1024)} MB")
        try:
            with Image.open(p) as im:
                if im.size[0] * im.size[1] > MAX_PIXELS:
                    raise SpaceError(f"{label}: {im.size[0]}x{im.size[1]} pixels is too large for this Space")
                im.load()
                image = im.copy()
        except SpaceError:
            raise
        except (UnidentifiedImageError, OSError, SyntaxError, ValueError, Image.DecompressionBombError):
            raise SpaceError(f"{label}: the uploaded file {p.name!r} is not an image PIL can read (use PNG, JPEG or WebP)") from None
    if image.mode != "RGB":
        image = image.convert("RGB")
    return image


def split_lines(text: str | None) -> list[str]:
    """Non-empty lines of a text box, stripped."""
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


@dataclass
class ScoreRequest:
    images: list[Any]
    captions: list[str]
    foils: list[str]

    def item(self) -> Item:
        """The item the page describes.

        * one image: texts = captions then foils; every caption is gold for the image
          (1 caption + 1 foil is VALSE's pair; 2 captions + 2 foils is BLA's set);
        * two images: caption ``k`` describes image ``k`` (Winoground's 2 x 2 when there are no
          foils); foils, if any, describe neither image.
        """
        m, texts = len(self.images), self.captions + self.foils
        gold = np.zeros((m, len(texts)), dtype=bool)
        if m == 1:
            gold[0, : len(self.captions)] = True
        else:
            for k in range(m):
                gold[k, k] = True
        return Item(id="space", images=tuple(self.images), texts=tuple(texts), gold=gold)


def make_request(image_1: Any, image_2: Any, captions: str, foils: str) -> ScoreRequest:
    """Check the inputs of the Score tab and build the request; errors say what to change."""
    images = [im for im in (load_upload(image_1, "image 1"), load_upload(image_2, "image 2")) if im is not None]
    if not images:
        raise SpaceError("upload an image first (or two, for a Winoground-style item)")
    caps, fls = split_lines(captions), split_lines(foils)
    for line in caps + fls:
        if len(line) > MAX_TEXT_CHARS:
            raise SpaceError(f"the text {line[:40]!r}... is longer than {MAX_TEXT_CHARS} characters")
    if len(caps) + len(fls) > MAX_TEXTS:
        raise SpaceError(f"{len(caps) + len(fls)} texts is more than this Space scores at once ({MAX_TEXTS})")
    if not caps:
        raise SpaceError("type the true caption (one per line)")
    if len(images) == 1:
        if not fls:
            raise SpaceError("type at least one foil (one per line): a verdict compares the caption with foils")
    else:
        if len(caps) != 2:
            raise SpaceError(
                f"with two images, type exactly two captions, one per line: the first describes image 1, "
                f"the second image 2 (got {len(caps)})"
            )
    dupes = {t for t in caps + fls if (caps + fls).count(t) > 1}
    if dupes:
        raise SpaceError(f"the same text appears twice: {sorted(dupes)[0]!r}; every caption and foil must differ")
    return ScoreRequest(images=images, captions=caps, foils=fls)


# ---- verdicts and displays ---------------------------------------------------------------------

def item_shape(m: int, n_gold: int, n: int) -> str:
    """'pairwise' (1 image, caption vs foil), 'group' (2 images) or 'set' (1 image, more texts)."""
    if m >= 2:
        return "group"
    if n == 2 and n_gold == 1:
        return "pairwise"
    return "set"


def _pct(x: Any) -> str:
    return "n/a" if x is None else f"{100 * float(x):.0f}%"


def verdict_text(shape: str, result: dict) -> str:
    """One line for the page, from the metric's result on the single item (strict ties: a tie
    counts against the model, as the VALSE and Winoground reference codes count it)."""
    line = _verdict(shape, result)
    ties = int(result.get("n_ties") or 0)
    if ties:
        line += f"; {ties} tied comparison{'s' if ties > 1 else ''} counted as wrong"
    return line


def _verdict(shape: str, result: dict) -> str:
    if shape == "pairwise":
        ok = result["acc_r"] == 1
        return ("CORRECT: the caption scores higher than the foil (pairwise, VALSE acc_r = 100%)" if ok else
                "WRONG: the foil scores at least as high as the caption (pairwise, VALSE acc_r = 0%)")
    if shape == "group":
        parts = {k: result.get(k) for k in ("text", "image", "group")}
        if parts["group"] == 1:
            head = "CORRECT: each image prefers its own caption and each caption its own image"
        elif parts["text"] == 1 or parts["image"] == 1:
            head = "PARTLY RIGHT: only one direction is right"
        else:
            head = "WRONG: neither captions nor images are matched right"
        marks = ", ".join(f"{k} {'✓' if v == 1 else '✗'}" for k, v in parts.items() if v is not None)
        return f"{head} (group, Winoground: {marks})"
    if result.get("set_acc") == 1:
        return f"CORRECT: every caption scores higher than every foil (set, BLA set accuracy = 100%)"
    if result.get("set_error") == 1:
        return "WRONG: every foil scores at least as high as every caption (set, BLA set error = 100%)"
    return (f"MIXED: some foils outscore a caption (set, BLA: pairwise acc_r {_pct(result.get('acc_r'))}, "
            f"sentence accuracy {_pct(result.get('sentence_acc'))})")


def word_diff(caption: str, foil: str, labels: tuple[str, str] = ("caption", "foil")
              ) -> tuple[list[tuple[str, str | None]], list[tuple[str, str | None]]]:
    """Word-level difference: (caption tokens, foil tokens), each word labelled ``labels[0]`` /
    ``labels[1]`` where it is not shared with the other text (difflib's longest matching blocks;
    case-insensitive), None where it is."""
    a, b = caption.split(), foil.split()
    left: list[tuple[str, str | None]] = []
    right: list[tuple[str, str | None]] = []
    matcher = difflib.SequenceMatcher(a=[w.lower() for w in a], b=[w.lower() for w in b], autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        label_a, label_b = (None, None) if op == "equal" else labels
        left.extend((w, label_a) for w in a[i1:i2])
        right.extend((w, label_b) for w in b[j1:j2])
    return left, right


def highlight(request: ScoreRequest) -> list[tuple[str, str | None]]:
    """HighlightedText value: for each foil, the caption and the foil with their differing words
    marked (with two images, first caption 1 against caption 2: the swap Winoground tests)."""
    pairs: list[tuple[str, str, str, str, tuple[str, str]]] = []
    if len(request.images) >= 2:
        c1, c2 = request.captions[:2]
        pairs.append(("caption 1", c1, "caption 2", c2, ("caption 1", "caption 2")))
        for k, foil in enumerate(request.foils, 1):
            pairs.append(("caption 1", c1, f"foil {k}", foil, ("caption", "foil")))
    else:
        for k, foil in enumerate(request.foils, 1):
            for c, cap in enumerate(request.captions, 1):
                name = "caption" if len(request.captions) == 1 else f"caption {c}"
                foil_name = "foil" if len(request.foils) == 1 else f"foil {k}"
                pairs.append((name, cap, foil_name, foil, ("caption", "foil")))
    out: list[tuple[str, str | None]] = []
    for name_a, a, name_b, b, labels in pairs:
        left, right = word_diff(a, b, labels)
        for name, tokens in ((name_a, left), (name_b, right)):
            out.append((f"{name}: ", None))
            out.extend((w + " ", lab) for w, lab in tokens)
            out.append(("\n", None))
    return out


DIFF_COLORS = {"caption": "#2ca02c", "foil": "#d62728", "caption 1": "#2ca02c", "caption 2": "#1f77b4"}


@dataclass
class ScoreOutcome:
    shape: str
    verdict: str
    table: list[list[Any]]
    headers: list[str]
    chart: Any  # pandas DataFrame for gr.BarPlot
    highlights: list[tuple[str, str | None]]
    metrics: dict
    scores: np.ndarray


def score(image_1: Any, image_2: Any, captions: str, foils: str, model: str | None,
          cache: ModelCache | None = None) -> ScoreOutcome:
    """The Score tab: one item, scored by the engine, judged by the metric."""
    import pandas as pd

    from .engine import score_items
    from .metric import compute

    request = make_request(image_1, image_2, captions, foils)
    item = request.item()
    model_id = resolve_model(model)
    scorer = (cache or MODELS).get(model_id)
    result = _run_engine(score_items, scorer, [item], progress=False)
    S = np.asarray(result.scores[0], dtype=np.float64)
    probs = result.probabilities[0] if result.probabilities else None
    kwargs: dict[str, Any] = {"ties": "strict"}
    if probs is not None:
        kwargs["probabilities"] = [probs]
    metrics = compute([S], [item.gold.astype(int)], **kwargs)
    shape = item_shape(item.m, int(item.gold.sum()), item.n)
    headers = ["image", "text", "role", "score"] + (["probability"] if probs is not None else [])
    rows, chart = [], []
    for i in range(item.m):
        for j, text in enumerate(item.texts):
            role = "caption" if item.gold[i, j] else "foil"
            row = [i + 1, text, role, round(float(S[i, j]), 4)]
            if probs is not None:
                row.append(round(float(probs[i, j]), 4))
            rows.append(row)
            label = f"{j + 1}. {_short(text)}" if item.m == 1 else f"img {i + 1} · {j + 1}. {_short(text)}"
            chart.append({"text": label, "score": float(S[i, j]), "role": role})
    return ScoreOutcome(
        shape=shape, verdict=verdict_text(shape, metrics), table=rows, headers=headers,
        chart=pd.DataFrame(chart), highlights=highlight(request), metrics=_plain(metrics), scores=S,
    )


def _short(text: str, width: int = 32) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _run_engine(score_items: Callable[..., Any], scorer: Any, items: Sequence[Item], **kw: Any) -> Any:
    from .images import ImageError

    try:
        return score_items(scorer, items, num_workers=0, cache=None, **kw)
    except ImageError as err:
        raise SpaceError(str(err)) from None
    except RuntimeError as err:
        if type(err).__name__ == "EngineOutOfMemory":
            raise SpaceError(f"the model ran out of memory: {err}") from None
        raise


def _plain(value: Any) -> Any:
    """Metric results with numpy types turned into plain Python (JSON-safe)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


# ---- dataset folders ----------------------------------------------------------------------------

def dataset_folders() -> list[str]:
    """Dataset folders the page offers: ``$VLPROBE_SPACE_DATASETS``, else those of the repository
    (or of the working directory) that have been built (a card and parquet under ``data/``)."""
    configured = os.environ.get(ENV_DATASETS, "").strip()
    if configured:
        return [d.strip() for d in configured.split(",") if d.strip()]
    out = []
    for base in dict.fromkeys((Path.cwd(), REPO_ROOT)):
        for name in KNOWN_DATASET_FOLDERS:
            folder = base / name
            if (folder / "README.md").is_file() and any((folder / "data").glob("*/*.parquet")):
                out.append(str(folder))
    return out


def resolve_dataset(folder: str | None) -> Path:
    """A dataset folder the page may read; with ``$VLPROBE_SPACE_DATASETS`` set, only those."""
    folder = (folder or "").strip()
    if not folder:
        raise SpaceError("choose a dataset folder (build one with `vlprobe build travlr` or `vlprobe build winoground_style`)")
    if os.environ.get(ENV_DATASETS, "").strip() and folder not in dataset_folders():
        raise SpaceError(f"dataset {folder!r} is not offered on this Space; choose one of: {', '.join(dataset_folders())}")
    path = Path(folder).expanduser()
    if not path.is_absolute() and not path.exists():
        path = REPO_ROOT / folder
    if not path.is_dir():
        raise SpaceError(f"dataset folder {folder!r} does not exist")
    if not (path / "README.md").is_file():
        raise SpaceError(f"{folder!r} has no README.md card, so it is not a dataset folder")
    return path.resolve()


def _card_configs(path: Path) -> list[dict]:
    from .dataset_folder import read_card_metadata

    try:
        configs = read_card_metadata(path).get("configs") or []
    except Exception as err:  # a broken card is the folder's problem, reported as such
        raise SpaceError(f"cannot read the card of {path.name!r}: {err}") from None
    return [c for c in configs if isinstance(c, dict) and c.get("config_name")]


def dataset_configs(folder: str | None) -> list[str]:
    """The configs declared in the folder's card whose parquet has been built."""
    path = resolve_dataset(folder)
    out = []
    for c in _card_configs(path):
        files = c.get("data_files") or []
        patterns = [f["path"] if isinstance(f, dict) else f for f in (files if isinstance(files, list) else [files])]
        if any(any(path.glob(p)) for p in patterns):
            out.append(c["config_name"])
    return out


def dataset_splits(folder: str | None, config: str | None) -> list[str]:
    """The config's splits as its card declares them, ``test``-like splits first."""
    path = resolve_dataset(folder)
    for c in _card_configs(path):
        if c["config_name"] == config:
            files = c.get("data_files") or []
            splits = [f.get("split", "train") for f in files if isinstance(f, dict)] or ["train"]
            return sorted(splits, key=lambda s: (not s.startswith("test"), splits.index(s)))
    raise SpaceError(f"dataset {path.name!r} has no config {config!r}; it has: {', '.join(dataset_configs(folder))}")


def load_items(folder: str | None, config: str | None, split: str | None = None, limit: int | None = None,
               start: int = 0) -> list[Item]:
    """Rows ``start .. start+limit`` of a config's split, converted to items by the folder's spec."""
    import datasets

    from .dataset_folder import load_folder_split
    from .spec import SpecError, find_spec

    path = resolve_dataset(folder)
    if not config:
        raise SpaceError(f"choose a config of {path.name!r}")
    split = split or dataset_splits(folder, config)[0]
    try:
        spec = find_spec(str(path))
        ds = load_folder_split(path, config, split)  # never a stale cache after a rebuild
        # Images stay encoded: the engine hashes the bytes and decodes them itself.
        for name, feature in ds.features.items():
            if isinstance(feature, datasets.Image):
                ds = ds.cast_column(name, datasets.Image(decode=False))
    except SpecError as err:
        raise SpaceError(str(err)) from None
    except (ValueError, FileNotFoundError) as err:
        raise SpaceError(f"cannot load config {config!r} split {split!r} of {path.name!r}: {err}") from None
    if start < 0 or start >= len(ds):
        raise SpaceError(f"{path.name}/{config}/{split} has {len(ds)} rows; row {start} does not exist")
    stop = len(ds) if limit is None else min(len(ds), start + limit)
    rows = ds.select(range(start, stop))
    try:
        items = list(spec.iter_items(rows, config=config))
    except (ItemError, SpecError) as err:
        raise SpaceError(str(err)) from None
    return items


def example_fields(folder: str | None, config: str | None, index: int | float | None) -> tuple[Any, Any, str, str]:
    """(image 1, image 2 or None, captions text, foils text) of one dataset row, for the Score tab."""
    from .images import to_pil

    idx = int(index or 0)
    item = load_items(folder, config, None, limit=1, start=idx)[0]
    gold = item.gold
    if item.m == 1:
        captions = [t for j, t in enumerate(item.texts) if gold[0, j]]
        foils = [t for j, t in enumerate(item.texts) if not gold[0, j]]
    elif item.m == 2 and all(gold[i].sum() == 1 for i in range(2)) and gold[0].argmax() != gold[1].argmax():
        captions = [item.texts[int(gold[i].argmax())] for i in range(2)]
        foils = [t for j, t in enumerate(item.texts) if not gold[:, j].any()]
    else:
        raise SpaceError(f"item {item.id!r} is {item.m} x {item.n} with a gold matrix the Score tab cannot show; "
                         "score it in the Benchmark tab")
    if not foils and item.m == 1:
        raise SpaceError(f"item {item.id!r} has no foil (all its texts are true)")
    images = [to_pil(im, where=f"item {item.id!r}") for im in item.images]
    return images[0], (images[1] if item.m == 2 else None), "\n".join(captions), "\n".join(foils)


# ---- benchmark ----------------------------------------------------------------------------------

def margins(scores: Sequence[np.ndarray], golds: Sequence[np.ndarray]) -> np.ndarray:
    """Per item, the smallest gap "gold cell minus non-gold cell" over the pairs the metrics compare
    (same row; same column too when the item has several images). Negative or zero: the model got
    at least one comparison wrong. Used only to sort items for browsing, worst mistakes first."""
    out = np.empty(len(scores))
    for k, (S, G) in enumerate(zip(scores, golds)):
        S = np.asarray(S, dtype=np.float64)
        G = np.asarray(G, dtype=bool)
        gaps = []
        for A, B in ((S, G), (S.T, G.T)) if S.shape[0] > 1 else ((S, G),):
            for row, gold in zip(A, B):
                if gold.any() and (~gold).any():
                    gaps.append(row[gold].min() - row[~gold].max())
        out[k] = min(gaps) if gaps else np.nan
    return out


@dataclass
class BenchmarkOutcome:
    summary: str
    metric_headers: list[str]
    metric_rows: list[list[Any]]
    tag_headers: list[str]
    tag_rows: list[list[Any]]
    browse_headers: list[str]
    browse_rows: list[list[Any]]
    result: dict
    items: list[Item] = field(repr=False, default_factory=list)
    scores: list[np.ndarray] = field(repr=False, default_factory=list)
    order: list[int] = field(repr=False, default_factory=list)


def _fmt_pct(x: Any) -> str:
    return "" if x is None else f"{100 * float(x):.1f}"


def metric_rows(result: dict) -> tuple[list[str], list[list[Any]]]:
    """(headers, rows): metric, value, CI, chance (percentages), from a metric result."""
    chance, ci = result.get("chance") or {}, result.get("ci") or {}
    rows = []
    for key in METRIC_ORDER:
        if result.get(key) is None:
            continue
        low, high = (list(ci.get(key) or []) + [None, None])[:2]
        rows.append([key, _fmt_pct(result[key]), _fmt_pct(low), _fmt_pct(high), _fmt_pct(chance.get(key))])
    return ["metric", "value %", "CI low %", "CI high %", "chance %"], rows


def tag_rows(result: dict) -> tuple[list[str], list[list[Any]]]:
    per_tag = result.get("per_tag") or {}
    keys = [k for k in METRIC_ORDER if any(r.get(k) is not None for r in per_tag.values())]
    rows = [[tag, r.get("n_items", "")] + [_fmt_pct(r.get(k)) for k in keys] for tag, r in sorted(per_tag.items())]
    return ["tag", "items", *[f"{k} %" for k in keys]], rows


def benchmark(folder: str | None, config: str | None, split: str | None, model: str | None, n_items: Any,
              ties: str = "strict", bootstrap: Any = 200, progress: Callable[[float, str], None] | None = None,
              cache: ModelCache | None = None) -> BenchmarkOutcome:
    """The Benchmark tab: the first ``n_items`` items of a config, scored and measured."""
    from .engine import score_items
    from .metric import TIE_POLICIES, compute

    report = progress or (lambda frac, desc: None)
    try:
        n = int(n_items)
        n_boot = int(bootstrap or 0)
    except (TypeError, ValueError):
        raise SpaceError("the number of items and of bootstrap resamples must be whole numbers") from None
    if not 1 <= n <= max_items():
        raise SpaceError(f"the number of items must be between 1 and {max_items()} on this Space, got {n}")
    if not 0 <= n_boot <= 2000:
        raise SpaceError(f"bootstrap resamples must be between 0 and 2000 on this Space, got {n_boot}")
    if ties not in TIE_POLICIES:
        raise SpaceError(f"ties must be one of {', '.join(TIE_POLICIES)}, got {ties!r}")
    model_id = resolve_model(model)
    report(0.0, "loading the items")
    items = load_items(folder, config, split, limit=n)
    report(0.1, f"loading the model {Path(model_id).name}")
    scorer = (cache or MODELS).get(model_id)
    report(0.2, f"scoring {len(items)} items")
    run = _run_engine(score_items, scorer, items, progress=True)
    report(0.9, "computing the metrics")
    golds = [item.gold.astype(int) for item in items]
    kwargs: dict[str, Any] = {"ties": ties, "tags": [list(item.tags) for item in items]}
    if run.probabilities is not None:
        kwargs["probabilities"] = run.probabilities
    if n_boot:
        kwargs.update(bootstrap=n_boot, seed=0)
    result = _plain(compute(run.scores, golds, **kwargs))
    mh, mr = metric_rows(result)
    th, tr = tag_rows(result)
    gaps = margins(run.scores, golds)
    order = sorted(range(len(items)), key=lambda k: (np.nan_to_num(gaps[k], nan=np.inf), k))
    browse = []
    for rank, k in enumerate(order, 1):
        item = items[k]
        browse.append([rank, item.id, round(float(gaps[k]), 4), "yes" if gaps[k] <= 0 else "no",
                       " | ".join(item.texts), ", ".join(item.tags)])
    name = Path(str(folder)).name
    summary = (f"**{name} / {config} / {split or dataset_splits(folder, config)[0]}**: {len(items)} items scored by "
               f"`{model_id}` in {run.stats.get('seconds', 0):.1f} s; ties: {ties}; "
               f"{result.get('n_ties', 0)} tied comparisons"
               + (f"; {int(100 * 0.95)}% bootstrap CIs from {n_boot} resamples over items" if n_boot else "")
               + f". {sum(1 for g in gaps if g <= 0)} items have at least one comparison wrong.")
    report(1.0, "done")
    return BenchmarkOutcome(
        summary=summary, metric_headers=mh, metric_rows=mr, tag_headers=th, tag_rows=tr,
        browse_headers=["rank", "id", "margin", "mistake", "texts", "tags"], browse_rows=browse,
        result=result, items=items, scores=[np.asarray(s) for s in run.scores], order=order,
    )


def browse_item(outcome: BenchmarkOutcome | None, rank: Any) -> tuple[list[Any], list[str], list[list[Any]], str]:
    """One benchmark item by its rank (1 = worst): (images, score headers, score rows, caption)."""
    from .images import to_pil

    if outcome is None or not outcome.items:
        raise SpaceError("run a benchmark first")
    try:
        r = int(rank)
    except (TypeError, ValueError):
        raise SpaceError("the rank must be a whole number") from None
    if not 1 <= r <= len(outcome.order):
        raise SpaceError(f"rank must be between 1 and {len(outcome.order)}")
    k = outcome.order[r - 1]
    item, S = outcome.items[k], outcome.scores[k]
    rows = []
    for i in range(item.m):
        for j, text in enumerate(item.texts):
            rows.append([i + 1, text, "caption" if item.gold[i, j] else "foil", round(float(S[i, j]), 4)])
    images = [to_pil(im, where=f"item {item.id!r}") for im in item.images]
    caption = f"rank {r} of {len(outcome.order)}: item `{item.id}`" + (f" — tags: {', '.join(item.tags)}" if item.tags else "")
    return images, ["image", "text", "role", "score"], rows, caption


# ---- results ------------------------------------------------------------------------------------
# The tables come from vlprobe.report (what `vlprobe report` writes); this part only adapts them to the page.

PAPER_BENCHMARKS = ("valse", "winoground", "bla")
MAX_RESULTS_BYTES = 20 * 1024 * 1024
MAX_RESULTS_FILES = 20


@dataclass
class Comparison:
    headers: list[str]  # the runs: one row per (benchmark, config, split, metric), one column per run
    rows: list[list[Any]]
    paper_headers: list[str]  # the papers' layout: one row per system, runs first
    paper_rows: list[list[Any]]
    chart: Any  # a matplotlib Figure, or None
    note: str


def _file_path(f: Any) -> Path:
    if isinstance(f, dict):
        f = f.get("path") or f.get("name")
    return Path(str(getattr(f, "name", f)))


def _load_runs(files: Iterable[Any]) -> list[Any]:
    from . import report

    paths = [_file_path(f) for f in files]
    if len(paths) > MAX_RESULTS_FILES:
        raise SpaceError(f"{len(paths)} files is more than this page compares at once ({MAX_RESULTS_FILES})")
    for p in paths:
        if p.is_file() and p.stat().st_size > MAX_RESULTS_BYTES:
            raise SpaceError(f"{p.name}: larger than {MAX_RESULTS_BYTES // (1024 * 1024)} MB; is it a results.json?")
    try:
        runs = report.load_runs(paths)
    except (report.ReportError, FileNotFoundError) as err:
        message = str(err)
        for p in paths:  # name the file as the person uploaded it, not by the server's temporary path
            message = message.replace(str(p), p.name)
        raise SpaceError(message) from None
    for run in runs:
        for r in run.results:
            if not isinstance(r, dict) or not {"benchmark", "config", "split", "metrics"} <= set(r):
                raise SpaceError(f"{run.path.name}: not a results.json written by `vlprobe evaluate` "
                                 "(a result lacks benchmark, config, split or metrics)")
    return runs


def _papers_only(benchmark: str, papers: list[dict]) -> tuple[list[str], list[list[Any]]]:
    """The published table of ``benchmark`` alone (no run loaded): one row per system."""
    from . import report

    rows = [p for p in papers if p["benchmark"] == benchmark and p["table"] in report.PAPER_TABLES[benchmark]]
    columns = list(dict.fromkeys((p["config"], p["metric"]) for p in rows))
    out = []
    for model in dict.fromkeys(p["model"] for p in rows):
        values = {(p["config"], p["metric"]): p["value"] for p in rows if p["model"] == model}
        table = next(p["table"] for p in rows if p["model"] == model)
        out.append([model, f"paper, {table}"] + [f"{values[c]:.1f}" if c in values else "" for c in columns])
    return ["system", "source"] + [f"{c} {m}" for c, m in columns], out


def compare_results(files: Iterable[Any] | None, include_papers: bool = True, benchmark: str = "auto") -> Comparison:
    """The Results tab: the runs' metrics side by side (``vlprobe.report.long_table``), and, for one
    benchmark, the runs beside the papers' published numbers (``vlprobe.report.paper_table``)."""
    from . import report

    runs = _load_runs([f for f in (files or []) if f])
    if not runs and not include_papers:
        raise SpaceError("nothing to compare: load one or more results.json files written by `vlprobe evaluate`, "
                         "or tick 'Include the papers' published numbers'")
    benchmarks = list(dict.fromkeys(r["benchmark"] for run in runs for r in run.results))
    headers = ["benchmark", "config", "split", "metric"] + [run.label for run in runs] + ["chance"]
    rows: list[list[Any]] = []
    for bench in benchmarks:
        _, bench_rows = report.long_table(runs, bench)
        rows += [[bench] + row for row in bench_rows]

    notes = [f"{len(runs)} run(s); values in %, a run's bootstrap CI in brackets when it was run with --bootstrap."]
    notes += [f"{run.label}: {', '.join(run.caveats())}, not comparable to a paper." for run in runs if run.caveats()]
    paper_headers: list[str] = []
    paper_rows: list[list[Any]] = []
    paper_points: list[dict] = []
    if include_papers:
        papers = report.paper_results()
        if benchmark in ("auto", "all", "", None):
            bench = next((b for b in benchmarks if b in PAPER_BENCHMARKS), None if runs else "valse")
        else:
            bench = benchmark
        if bench not in PAPER_BENCHMARKS:
            notes.append("The papers published numbers for valse, winoground and bla only; none of the loaded runs is "
                         "on one of them (the synthetic instruments have no published numbers).")
        else:
            table = report.paper_table(runs, bench, papers) if runs else _papers_only(bench, papers)
            if table is None:
                notes.append(f"No loaded run has a config and metric that {bench}'s paper reports.")
            else:
                paper_headers, paper_rows = table
                notes.append(report.PAPER_NOTES.get(bench, ""))
                tables = report.PAPER_TABLES[bench]
                paper_points = [
                    {"source": f"paper: {p['model']}", "benchmark": bench, "config": p["config"], "metric": p["metric"],
                     "value": p["value"], "ci": None, "chance": None}
                    for p in papers if p["benchmark"] == bench and p["table"] in tables
                ]
    run_points = []
    for run in runs:
        for r in run.results:
            key = report.headline(r["metrics"])
            value = r["metrics"].get(key) if key else None
            if value is None:
                continue
            ci = (r["metrics"].get("ci") or {}).get(key)
            chance = (r["metrics"].get("chance") or {}).get(key)
            config = report.CONFIG_ALIASES.get((r["benchmark"], r["config"]), r["config"])
            run_points.append({
                "source": run.label, "benchmark": r["benchmark"], "config": config, "metric": key,
                "value": 100 * float(value), "ci": None if not ci or ci[0] is None else (100 * ci[0], 100 * ci[1]),
                "chance": None if chance is None else 100 * float(chance),
            })
    if run_points:  # the papers' bars only where a run has the same config and headline metric
        shown = {(p["benchmark"], p["config"], p["metric"]) for p in run_points}
        paper_points = [p for p in paper_points if (p["benchmark"], p["config"], p["metric"]) in shown]
    else:
        paper_points = [p for p in paper_points if p["metric"] == HEADLINE.get(p["benchmark"])]
    sources = [run.label for run in runs] + list(dict.fromkeys(p["source"] for p in paper_points))
    chart = comparison_chart(run_points + paper_points, sources)
    return Comparison(headers=headers, rows=rows, paper_headers=paper_headers, paper_rows=paper_rows,
                      chart=chart, note=" ".join(n for n in notes if n))


HEADLINE = {"valse": "acc_r", "winoground": "group", "bla": "sentence_acc"}  # the papers' own headline


def comparison_chart(points: list[dict], sources: list[str]) -> Any:
    """Grouped bars, one group per benchmark/config/metric and one bar per source (runs, then
    published systems), with the runs' CIs and dashed chance levels; None when there is nothing."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not points:
        return None
    groups = list(dict.fromkeys((n["benchmark"], n["config"], n["metric"]) for n in points))
    srcs = [s for s in sources if any(n["source"] == s for n in points)]
    width = 0.8 / max(1, len(srcs))
    fig, ax = plt.subplots(figsize=(min(16.0, max(6.0, 0.35 * len(groups) * len(srcs) ** 0.5 + 4)), 4.2), dpi=100)
    x = np.arange(len(groups))
    cmap = plt.get_cmap("tab20")
    for k, s in enumerate(srcs):
        vals, errs = np.full(len(groups), np.nan), np.zeros((2, len(groups)))
        for n in points:
            if n["source"] == s:
                g = groups.index((n["benchmark"], n["config"], n["metric"]))
                vals[g] = n["value"]
                if n.get("ci"):
                    errs[:, g] = [max(0.0, n["value"] - n["ci"][0]), max(0.0, n["ci"][1] - n["value"])]
        ax.bar(x - 0.4 + width * (k + 0.5), vals, width, label=s, color=cmap(k % 20),
               yerr=errs if errs.any() else None, capsize=2)
    for n in points:
        if n.get("chance") is not None:
            g = groups.index((n["benchmark"], n["config"], n["metric"]))
            ax.hlines(n["chance"], g - 0.45, g + 0.45, colors="black", linestyles="dashed", linewidth=1)
    ax.set_xticks(x, [f"{b}/{c}\n({m})" for b, c, m in groups], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("%")
    ax.set_ylim(0, 100)
    ax.legend(fontsize=7, ncol=2 if len(srcs) > 8 else 1, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.set_title("headline metric per config (dashed: chance)", fontsize=9)
    fig.tight_layout()
    plt.close(fig)
    return fig
