"""Family ``open_clip``: models of `open_clip <https://github.com/mlfoundations/open_clip>`_ (``pip install
'vlprobe[open_clip]'``), the library the field's compositionality numbers were measured with, by name alone:
``open_clip:ARCH/PRETRAINED`` (a copy registered under ``$VLPROBE_OPEN_CLIP_MODELS/ARCH/PRETRAINED`` first),
``hf-hub:ORG/REPO``, or ``local-dir:PATH`` (or a folder holding ``open_clip_config.json`` and no ``config.json``).

**Activation** (QuickGELU or GELU: mertyg/vision-language-models-are-bows#35, RAIVNLab/sugar-crepe#7): vlprobe builds
what open_clip built when the published numbers were measured: the config's own, except for the ``openai`` tag,
which open_clip before 2.29 always loaded with QuickGELU; a mismatch with the weights' own is warned about once.
Images go through the model's ``image_transform_v2``, by default on (3, H, W) uint8 tensors (on CUDA, on the device;
the resize within about a grey level of PIL's), with ``exact_preprocessing=True`` on PIL images.
"""

from __future__ import annotations

import contextlib
import difflib
import importlib.util
import json
import logging
import os
import sys
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np

from ..errors import ModelError
from .base import DualScorer, _first_line, register, resolve_dtype
from .dual_encoder import LogitSimilarity, logit_of

if TYPE_CHECKING:
    import torch
    from open_clip import CLIP, CustomTextCLIP
    from torch import Tensor
    from torchvision.transforms import Compose, InterpolationMode
    from transformers import PretrainedConfig

    from .base import Picture

FAMILY = "open_clip"
PREFIXES = ("open_clip:", "hf-hub:", "local-dir:")
CONFIG_FILE = "open_clip_config.json"
# A folder of local-dir copies registered under open_clip names: $VLPROBE_OPEN_CLIP_MODELS/ARCH/PRETRAINED/
MODELS_ENV = "VLPROBE_OPEN_CLIP_MODELS"
INSTALL = "pip install 'vlprobe[open_clip]'"
# open_clip < 2.29 loaded these tags through OpenAI's TorchScript archive, always with QuickGELU
QUICK_GELU_TAGS = frozenset({"openai"})
_PRECISION = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}


class TextTokenizer(Protocol):
    """What the scorer calls of ``open_clip.get_tokenizer``'s tokenizer: texts -> (N, context length) token ids."""

    context_length: int

    def __call__(self, texts: list[str]) -> Tensor: ...


def claims(model: object) -> bool:
    """Whether ``model`` is an open_clip name (see the module doc)."""
    if not isinstance(model, (str, os.PathLike)):
        return False
    text = str(model).strip()
    if text.startswith(PREFIXES):
        return True
    path = Path(text).expanduser()
    try:
        return path.is_dir() and (path / CONFIG_FILE).is_file() and not (path / "config.json").is_file()
    except OSError:
        return False


@dataclass(frozen=True)
class Source:
    """What an open_clip name stands for."""

    name: str  # as given
    kind: str  # "pretrained" (open_clip's table), "copy" (a registered local copy), "hf-hub", "local-dir"
    create: str  # what open_clip.create_model and get_tokenizer are given
    pretrained: str | None = None  # the tag, for "pretrained"
    checkpoint: str | None = None  # ARCH/PRETRAINED, the key of the published figures
    folder: Path | None = None
    repo: str | None = None

    def describe(self) -> str:
        if self.kind == "pretrained":
            return f"open_clip's pretrained table: config {self.create}, weights {self.pretrained}"
        # (no folder path: a local folder is keyed in the score cache by its content, wherever it is)
        if self.kind == "copy":
            return f"a local copy registered as {self.checkpoint} in ${MODELS_ENV} ({CONFIG_FILE} and weights)"
        if self.kind == "hf-hub":
            return f"the Hub repository {self.repo} ({CONFIG_FILE} and weights)"
        return f"a local folder ({CONFIG_FILE} and weights)"


def _module() -> ModuleType:
    if importlib.util.find_spec("open_clip") is None:
        raise ModelError(f"open_clip models need the open_clip_torch package, which is not installed: {INSTALL}")
    import open_clip

    return open_clip


def copies_home() -> Path | None:
    """``$VLPROBE_OPEN_CLIP_MODELS``, the folder of local copies registered under open_clip names, when set."""
    home = os.environ.get(MODELS_ENV, "").strip()
    return Path(home).expanduser() if home else None


def registered_copies() -> dict[str, Path]:
    """``{ARCH/PRETRAINED: folder}`` of the local copies under ``$VLPROBE_OPEN_CLIP_MODELS``."""
    home = copies_home()
    if home is None or not home.is_dir():
        return {}
    return {f"{cfg.parent.parent.name}/{cfg.parent.name}": cfg.parent for cfg in sorted(home.glob(f"*/*/{CONFIG_FILE}"))}


def resolve(model: str) -> Source:
    """The :class:`Source` an open_clip name stands for, or a one-line :class:`ModelError` naming close ones."""
    name = str(model).strip()
    if name.startswith("local-dir:") or not name.startswith(PREFIXES):
        path = name.removeprefix("local-dir:")
        folder = Path(path).expanduser()
        if not path:
            raise ModelError(f"model {name!r}: local-dir: needs a folder, e.g. local-dir:./my-open-clip-model")
        if not folder.is_dir():
            raise ModelError(f"model {name!r}: there is no folder {path!r} (local-dir: names a folder holding "
                             f"{CONFIG_FILE} and the weights)")
        if not (folder / CONFIG_FILE).is_file():
            raise ModelError(f"model {name!r}: the folder has no {CONFIG_FILE}, so it is no open_clip model "
                             f"(a transformers model folder needs no prefix)")
        return Source(name, "local-dir", f"local-dir:{folder}", folder=folder)
    if name.startswith("hf-hub:"):
        repo = name.removeprefix("hf-hub:").strip("/")
        if repo.count("/") != 1 or not all(repo.split("/")):
            raise ModelError(f"model {name!r}: hf-hub: names a Hub repository, ORG/REPO (e.g. "
                             f"hf-hub:laion/CLIP-ViT-B-32-laion2B-s34B-b79K)")
        return Source(name, "hf-hub", f"hf-hub:{repo}", repo=repo)
    arch, sep, tag = name.removeprefix("open_clip:").partition("/")
    if not sep or not arch or not tag or "/" in tag:
        raise ModelError(f"model {name!r}: an open_clip name is open_clip:ARCH/PRETRAINED, e.g. "
                         f"open_clip:ViT-B-32/laion2b_s34b_b79k (open_clip.list_pretrained() lists them)")
    copies = registered_copies()
    if f"{arch}/{tag}" in copies:
        folder = copies[f"{arch}/{tag}"]
        return Source(name, "copy", f"local-dir:{folder}", checkpoint=f"{arch}/{tag}", folder=folder)
    oc = _module()
    if oc.pretrained.is_pretrained_cfg(arch, tag):
        canonical = next(t for a, t in oc.list_pretrained() if a == arch and t == oc.pretrained._clean_tag(tag))
        return Source(name, "pretrained", arch, pretrained=canonical, checkpoint=f"{arch}/{canonical}")
    raise ModelError(_unknown(name, arch, tag, list(copies)))


def _unknown(name: str, arch: str, tag: str, copies: list[str]) -> str:
    oc = _module()
    known = [f"{a}/{t}" for a, t in oc.list_pretrained()] + copies  # open_clip's table is local: no network
    tags = oc.pretrained.list_pretrained_tags_by_model(arch)
    if tags:
        what = f"open_clip has no weights {tag!r} for {arch}; its tags are {', '.join(tags)}"
    elif arch in oc.list_models():
        what = f"open_clip has a config {arch} but no pretrained weights for it"
    else:
        what = f"open_clip has no architecture {arch!r}"
    close = difflib.get_close_matches(f"{arch}/{tag}", known, n=5, cutoff=0.5)
    hint = f"; did you mean {', '.join('open_clip:' + c for c in close)}?" if close else ""
    home = copies_home()
    where = f" (nor is there a local copy {home / arch / tag} under ${MODELS_ENV})" if home else ""
    return f"model {name!r}: {what}{where}{hint}"


def check_name(model: str, revision: str | None = None) -> Source:
    """The quick check of an open_clip name (:func:`vlprobe.names.check_model`), and what it stands for."""
    if revision is not None:
        raise ModelError(f"model {model!r}: open_clip loads no revision (--revision picks a branch, tag or commit of a "
                         f"transformers Hub model); leave it out")
    _module()
    source = resolve(model)
    if source.kind == "hf-hub" and _offline():
        from huggingface_hub import try_to_load_from_cache

        if not isinstance(try_to_load_from_cache(source.repo, CONFIG_FILE), str):
            raise ModelError(f"model {model!r}: HF_HUB_OFFLINE is set and the Hugging Face cache has no copy of "
                             f"{source.repo}; download it on a networked machine, or pass local-dir:FOLDER")
    return source


def _offline() -> bool:
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """open_clip's own warnings (logging and warnings.warn) while vlprobe loads: vlprobe says what matters itself."""
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(previous)


def _hub_commit(repo: str | None, filenames: Sequence[str]) -> str | None:
    """The commit of the Hugging Face cache snapshot holding the first of ``filenames`` (None: not a cached Hub file)."""
    if not repo:
        return None
    from huggingface_hub import try_to_load_from_cache

    for filename in filenames:
        path = try_to_load_from_cache(repo, filename)
        parts = Path(path).parts if isinstance(path, str) else ()
        if "snapshots" in parts[:-1]:  # .../snapshots/<commit>/<file>: the last "snapshots" folder of the path
            return parts[len(parts) - 1 - parts[::-1].index("snapshots") + 1]
    return None


def _model_config(oc: ModuleType, source: Source) -> dict[str, Any]:
    """The model config open_clip builds from (before vlprobe's activation choice)."""
    if source.kind == "pretrained":
        return dict(oc.get_model_config(source.create) or {})
    if source.kind == "hf-hub":
        from huggingface_hub import hf_hub_download

        with open(hf_hub_download(source.repo, CONFIG_FILE), encoding="utf-8") as f:
            config = json.load(f)
    else:
        config = json.loads((source.folder / CONFIG_FILE).read_text(encoding="utf-8"))
    return dict(config.get("model_cfg", config))


def _activations(tower: torch.nn.Module | None) -> list[str]:
    """The activation modules a tower holds (GELU, QuickGELU, ...), by class name."""
    if tower is None:
        return []
    keys = ("gelu", "relu", "silu", "swish", "tanh", "sigmoid", "mish")
    return sorted({type(m).__name__ for m in tower.modules() if any(k in type(m).__name__.lower() for k in keys)})


def _fail(source: Source, err: BaseException) -> ModelError:
    if source.kind in ("pretrained", "hf-hub") and _offline():
        where = source.repo or f"the weights of {source.checkpoint}"
        return ModelError(f"cannot load model {source.name!r}: HF_HUB_OFFLINE is set and {where} is not in the Hugging "
                          f"Face cache; download it on a networked machine, or register a local copy "
                          f"({MODELS_ENV}=DIR with DIR/ARCH/PRETRAINED/{CONFIG_FILE} and weights) [{_first_line(err)}]")
    return ModelError(f"cannot load model {source.name!r} ({source.describe()}): {_first_line(err)}")


@register(FAMILY, priority=0, claims=claims, check_name=check_name,
          description="open_clip models (open_clip:ARCH/PRETRAINED, hf-hub:ORG/REPO, local-dir:PATH): the model's "
                      "own image-text logit")
def load_open_clip(model: str, *, device: str = "cpu", dtype: str = "float32", revision: str | None = None,
                   trust_remote_code: bool = False, config: PretrainedConfig | None = None,
                   exact_preprocessing: bool = False, **kw: object) -> OpenCLIPScorer:
    """An open_clip name -> a scorer (see the module doc)."""
    if kw:
        raise TypeError(f"family {FAMILY!r} takes no options {sorted(kw)}")
    oc = _module()
    name = str(model).strip()
    if not name.startswith(PREFIXES):  # a plain folder, or a Hub id forced with --family open_clip
        name = f"local-dir:{name}" if Path(name).expanduser().is_dir() else f"hf-hub:{name}"
    source = check_name(name, revision)
    dtype_name, _ = resolve_dtype(dtype)
    try:
        cfg = _model_config(oc, source)
    except Exception as err:  # noqa: BLE001
        raise _fail(source, err) from None
    tag_cfg = oc.get_pretrained_cfg(source.create, source.pretrained) if source.kind == "pretrained" else {}
    weights_quick = bool(tag_cfg.get("quick_gelu", False)) if tag_cfg else None
    own_quick = bool(cfg.get("quick_gelu", False))
    force = source.kind == "pretrained" and source.pretrained in QUICK_GELU_TAGS and not own_quick
    try:
        with _quiet():
            net = oc.create_model(source.create, pretrained=source.pretrained, precision=_PRECISION[dtype_name],
                                  device=device, force_quick_gelu=force, require_pretrained=True)
            tokenizer = oc.get_tokenizer(source.create)
    except ModelError:
        raise
    except Exception as err:  # noqa: BLE001  (open_clip reports a missing file or a bad config as many types)
        raise _fail(source, err) from None
    quick = own_quick or force
    note = ("QuickGELU forced: open_clip before 2.29 loaded the openai weights with it whatever the config, and the "
            "published numbers for this name were measured so" if force else "the config's own activation")
    if weights_quick is not None and weights_quick != quick:
        own = "QuickGELU" if weights_quick else "GELU"
        match = f"{source.create}-quickgelu" if weights_quick else source.create.removesuffix("-quickgelu")
        note = f"the config's own activation; the weights were trained with {own} ({match}/{source.pretrained} builds that)"
        print(f"vlprobe: warning: {source.name}: its {source.pretrained} weights were trained with {own}, but config "
              f"{source.create} builds {'QuickGELU' if quick else 'GELU'} (as open_clip builds it, and as the published "
              f"figures for this name were measured); open_clip:{match}/{source.pretrained} builds {own}",
              file=sys.stderr, flush=True)
    details = {"source": source.describe(), "model_config": source.create if source.kind == "pretrained" else
               f"{CONFIG_FILE} of {source.repo or 'the folder'}", "model_cfg": {**cfg, "quick_gelu": quick},
               "quick_gelu": quick, "weights_quick_gelu": weights_quick, "activation_note": note,
               "precision": _PRECISION[dtype_name]}
    revision = _hub_commit(source.repo, (CONFIG_FILE,)) if source.kind == "hf-hub" else None
    if source.kind == "pretrained":
        # open_clip's table names a Hub repository (ORG/REPO/ or ORG/REPO/FILE) or a download URL
        hub = str(tag_cfg.get("hf_hub") or "")
        if hub:
            repo, _, filename = hub.partition("/")[2].partition("/")
            repo = f"{hub.split('/')[0]}/{repo}"
            revision = _hub_commit(repo, (filename,) if filename else
                                   ("open_clip_model.safetensors", "open_clip_pytorch_model.bin"))
        details["weights"] = hub or str(tag_cfg.get("url") or "")
    scorer = OpenCLIPScorer(str(model), net, tokenizer, device=device, dtype=dtype_name,
                            exact_preprocessing=exact_preprocessing, checkpoint=source.checkpoint, details=details)
    scorer.revision = revision
    if source.folder is not None:
        from vlprobe.storage.keys import folder_digest

        scorer.model_sha256 = folder_digest(source.folder)
    return scorer


def _tensor_steps(transform: Compose) -> tuple[bool, str]:
    """Whether every step of open_clip's inference transform can run on a (3, H, W) uint8 tensor (on any device)."""
    from open_clip.transform import CenterCropOrPad, MaybeConvertMode, MaybeToTensor, ResizeKeepRatio
    from torchvision.transforms import CenterCrop, InterpolationMode, Normalize, Resize

    resamples = (InterpolationMode.BILINEAR, InterpolationMode.BICUBIC)
    for step in getattr(transform, "transforms", [transform]):
        if isinstance(step, (Resize, ResizeKeepRatio)) and step.interpolation not in resamples:
            return False, f"{type(step).__name__} with {step.interpolation} runs on PIL images only"
        if not isinstance(step, (Resize, ResizeKeepRatio, CenterCrop, CenterCropOrPad, MaybeConvertMode, MaybeToTensor,
                                 Normalize)):
            return False, f"step {type(step).__name__} is not known to run on tensors"
    return True, ""


class OpenCLIPScorer(LogitSimilarity, DualScorer["Tensor"]):
    """An open_clip model as a dual scorer (see the module doc)."""

    family: ClassVar[str] = FAMILY

    def __init__(self, model_id: str, model: CLIP | CustomTextCLIP, tokenizer: TextTokenizer, *, device: str = "cpu",
                 dtype: str = "float32", exact_preprocessing: bool = False, checkpoint: str | None = None,
                 details: dict[str, Any] | None = None) -> None:
        from open_clip.transform import PreprocessCfg, image_transform_v2

        super().__init__(model_id=model_id, device=device, dtype=dtype)
        self.model = model.eval()
        self.text_tokenizer = tokenizer  # (not "tokenizer": vlprobe's helpers read that as a transformers one)
        self.checkpoint = checkpoint
        self._torch_dtype = resolve_dtype(dtype)[1]
        cfg = PreprocessCfg(**model.visual.preprocess_cfg)
        self.transform = image_transform_v2(cfg, is_train=False)
        on_tensors, why = _tensor_steps(self.transform)
        self.on_tensors = on_tensors and not exact_preprocessing
        self.max_length = int(tokenizer.context_length)
        probe = tokenizer(["", "a"])
        # the id the tokenizer pads a row to its context length with (None: the empty text fills its row)
        self.pad_id = int(probe[0, -1]) if probe.shape[1] > 3 and int(probe[0, -1]) != int(probe[0, 0]) else None
        self.scale, self.bias, score = logit_of(model)
        self.preprocessing = {
            "library": f"open_clip {_module().__version__}",
            "checkpoint": checkpoint,
            **(details or {}),
            "model_class": type(model).__name__,
            "activation": {"image": _activations(getattr(model, "visual", None)),
                           "text": _activations(getattr(model, "text", None) or getattr(model, "transformer", None))},
            "image_size": list(cfg.size) if isinstance(cfg.size, (list, tuple)) else [cfg.size] * 2,
            "resize_mode": cfg.resize_mode, "interpolation": cfg.interpolation,
            "image_mean": list(cfg.mean or []), "image_std": list(cfg.std or []),
            "fill_color": cfg.fill_color,
            "preprocess": repr(self.transform),
            "image_backend": "torchvision" if self.on_tensors else "pil",
            "tokenizer": type(tokenizer).__name__, "text_max_length": self.max_length, "text_padding": "max_length",
            "text_truncation": True, "text_pad_id": self.pad_id, "prompt": None,
            "score": score,
        }
        if not on_tensors:
            self.preprocessing["image_backend_note"] = why

    def preprocess_images(self, images: Sequence[Picture]) -> Tensor:
        import torch

        if not self.on_tensors:
            from torchvision.transforms.functional import to_pil_image

            from vlprobe.dataset.images import to_pil

            return torch.stack([self.transform(to_pil_image(im.cpu()) if isinstance(im, torch.Tensor) else to_pil(im))
                                for im in images])
        from vlprobe.dataset.images import to_tensor

        return torch.stack([self._on_tensor(im if isinstance(im, torch.Tensor) else to_tensor(im)) for im in images])

    def _on_tensor(self, image: Tensor) -> Tensor:
        """open_clip's inference transform, step by step, on a (3, H, W) uint8 tensor on its own device."""
        from open_clip.transform import MaybeConvertMode, MaybeToTensor, ResizeKeepRatio
        from torchvision.transforms import Resize

        x = image
        for step in self.transform.transforms:
            if isinstance(step, ResizeKeepRatio):
                pil_like = SimpleNamespace(size=(int(x.shape[-1]), int(x.shape[-2])))  # what get_params reads of an image
                x = _resize(x, step.get_params(pil_like, step.size, step.longest), step.interpolation)
            elif isinstance(step, Resize):
                x = _resize(x, _output_size(int(x.shape[-2]), int(x.shape[-1]), step.size), step.interpolation)
            elif isinstance(step, MaybeToTensor):
                x = x if x.is_floating_point() else x.float().div(255)  # as ToTensor does to PIL's bytes
            elif isinstance(step, MaybeConvertMode):
                continue  # the engine's tensors are RGB already
            else:  # CenterCrop, CenterCropOrPad, Normalize: torchvision's own tensor code
                x = step(x)
        return x

    def encode_images(self, inputs: Tensor) -> np.ndarray:
        import torch

        with torch.inference_mode():
            emb = self.model.encode_image(inputs.to(self.device, dtype=self._torch_dtype), normalize=True)
        return emb.float().cpu().numpy()

    def tokenize(self, texts: list[str]) -> Tensor:
        return self.text_tokenizer(list(texts))

    def seen_texts(self, texts: Sequence[str]) -> list[tuple[int, ...]] | None:
        rows = self.tokenize(list(texts)).tolist()
        if self.pad_id is None:
            return [tuple(row) for row in rows]
        out = []
        for row in rows:
            end = len(row)
            while end and row[end - 1] == self.pad_id:
                end -= 1
            out.append(tuple(row[:end]))
        return out

    def encode_texts(self, texts: list[str]) -> np.ndarray:
        return self._encode_tokens(self.tokenize(texts))

    def encodes_seen_ids(self) -> bool:
        return type(self).tokenize is OpenCLIPScorer.tokenize and type(self).seen_texts is OpenCLIPScorer.seen_texts

    def encode_seen_ids(self, ids: list[tuple[int, ...]]) -> np.ndarray:
        import torch

        width = self.max_length
        tokens = torch.full((len(ids), width), self.pad_id if self.pad_id is not None else 0, dtype=torch.long)
        for i, row in enumerate(ids):
            tokens[i, :len(row)] = torch.tensor(row, dtype=torch.long)
        return self._encode_tokens(tokens)

    def _encode_tokens(self, tokens: Tensor) -> np.ndarray:
        import torch

        with torch.inference_mode():
            emb = self.model.encode_text(tokens.to(self.device), normalize=True)
        return emb.float().cpu().numpy()


def _output_size(height: int, width: int, size: int | Sequence[int]) -> list[int]:
    """[h, w] that torchvision's ``Resize(size)`` gives an image of ``height`` x ``width``."""
    if isinstance(size, int) or len(size) == 1:
        short_side = size if isinstance(size, int) else int(size[0])
        short, long = (width, height) if width <= height else (height, width)
        new_short, new_long = short_side, int(short_side * long / short)
        return [new_long, new_short] if width <= height else [new_short, new_long]
    return [int(size[0]), int(size[1])]


def _resize(image: Tensor, size: Sequence[int], interpolation: InterpolationMode,
            float_path: bool | None = None) -> Tensor:
    """A (3, H, W) uint8 tensor resized as PIL resizes (within a grey level): torch's antialiased kernel on uint8 on
    the CPU; elsewhere (``float_path``) in float, one pass per axis rounded to bytes as PIL's are, which is within a
    grey level of PIL only when shrinking, so an image is enlarged on the CPU."""
    import torch
    from torch.nn.functional import interpolate
    from torchvision.transforms import InterpolationMode

    mode = "bicubic" if interpolation == InterpolationMode.BICUBIC else "bilinear"
    height, width = int(image.shape[-2]), int(image.shape[-1])
    size = [int(size[0]), int(size[1])]
    if float_path is None:
        float_path = image.device.type != "cpu"
    if not float_path or size[0] > height or size[1] > width:
        out = interpolate(image.cpu()[None], size=size, mode=mode, antialias=True, align_corners=False)[0]
        return out.to(image.device, non_blocking=True)
    # as PIL does: the horizontal pass, rounded and clipped to bytes, then the vertical one
    out = image[None].float()
    for step in ([height, size[1]], size):
        out = interpolate(out, size=step, mode=mode, antialias=True, align_corners=False).round_().clamp_(0, 255)
    return out[0].to(torch.uint8)
