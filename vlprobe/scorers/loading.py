"""``load_scorer``: a model id or local folder -> a ready :class:`~vlprobe.scorers.base.Scorer`, and the helpers the
family modules share. The family is named, claimed by the name itself (open_clip's), or detected from the config by
:func:`detect_family` from explicit maps, never from substrings of class names. Every failure is one line naming the
model. A local folder is identified by a digest of its files, so a model retrained into it never reads old scores.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..errors import ModelError, VlprobeError
from .base import Family, Scorer, UnknownFamilyError, _first_line, families, get_family, resolve_dtype

if TYPE_CHECKING:
    import torch
    from transformers import (
        ImageProcessingMixin,
        PretrainedConfig,
        PreTrainedModel,
        PreTrainedTokenizerBase,
        ProcessorMixin,
    )

    from ..dataset.items import ImageLike
    from .base import Picture

T = TypeVar("T")
S = TypeVar("S", bound=Scorer)
T_co = TypeVar("T_co", covariant=True)


class Loadable(Protocol[T_co]):
    """What :func:`from_pretrained` calls: a transformers Auto class (or any class with ``from_pretrained``)."""

    def from_pretrained(self, name: str, /, **kw: object) -> T_co: ...


class ModelNotFoundError(FileNotFoundError):
    """The model (or its config, weights or processor) cannot be found or downloaded."""


class UnknownArchitectureError(UnknownFamilyError, ModelError):
    """The model's config names a model type (architecture) that transformers does not know."""


class UnmappedArchitectureError(UnknownFamilyError, ModelError):
    """transformers knows the model's architecture, but no vlprobe family's map takes it."""


class MissingWeightsError(ModelError):
    """The checkpoint has no weights for the head the family reads (they would be random)."""


def _unknown_architecture(model: str) -> UnknownArchitectureError:
    import json

    import transformers

    model_type: str | None = None
    archs: list[str] = []
    try:
        cfg = json.loads((Path(model).expanduser() / "config.json").read_text(encoding="utf-8"))
        model_type, archs = cfg.get("model_type"), cfg.get("architectures") or []
    except (OSError, ValueError, AttributeError):
        pass
    fams = "; ".join(f"{f.name}: {f.description}" if f.description else f.name
                     for f in sorted(families().values(), key=lambda f: f.name))
    return UnknownArchitectureError(
        f"cannot load model {model!r}: its config names model_type {model_type!r} (architectures {archs}), which "
        f"transformers {transformers.__version__} does not know, so no vlprobe scorer family can load it. vlprobe "
        f"knows these families [{fams}]; --family names one for a model transformers can load (a newer "
        f"architecture may need a newer transformers)"
    )


def resolve_device(device: str | None = None) -> str:
    """``None``/``"auto"`` -> ``"cuda"`` if available, else ``"mps"``, else ``"cpu"``; else as given."""
    import torch

    if device not in (None, "", "auto"):
        return str(device)
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def _not_found(model: str, err: BaseException) -> ModelNotFoundError:
    offline = any(os.environ.get(v, "").lower() in ("1", "true", "yes", "on")
                  for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))
    cause = f" [{_first_line(err)}]"
    if Path(model).expanduser().is_dir():
        return ModelNotFoundError(
            f"cannot load model {model!r}: the folder does not hold a complete saved model (config.json, "
            f"weights and processor/tokenizer files written by save_pretrained).{cause}")
    if model.startswith(("/", "./", "../", "~", ".\\")) or model.count("/") > 1 or "\\" in model:  # a path
        return ModelNotFoundError(
            f"cannot load model {model!r}: there is no such folder. Pass an existing local folder "
            f"(one written by save_pretrained) or a Hub id such as openai/clip-vit-base-patch32.{cause}")
    if offline:
        what = "it is not a local folder, and HF_HUB_OFFLINE is set so nothing can be downloaded"
    else:
        what = ("it is not a local folder and could not be fetched from the Hugging Face Hub "
                "(a typo in the id, no network, or a private/gated repo?)")
    return ModelNotFoundError(
        f"cannot load model {model!r}: {what}. Pass a local folder instead (one written by "
        f"save_pretrained, or a snapshot downloaded on a networked machine with "
        f"`hf download {model} --local-dir DIR`), or unset HF_HUB_OFFLINE to download.{cause}"
    )


def from_pretrained(cls: Loadable[T], model: str, **kw: object) -> T:
    """``cls.from_pretrained(model, **kw)`` with transformers' errors made one line."""
    try:
        return cls.from_pretrained(model, **kw)
    except OSError as err:
        # transformers reports a missing repo, revision or file as OSError (EnvironmentError).
        raise _not_found(model, err) from None
    except ValueError as err:
        from huggingface_hub.errors import HFValidationError

        if isinstance(err, HFValidationError):  # a malformed id, e.g. "a/b/c"
            raise _not_found(model, err) from None
        if "Unrecognized model in" in str(err) and Path(model).expanduser().is_dir():  # no model_type
            if (Path(model).expanduser() / "config.json").is_file():
                raise _unknown_architecture(model) from None
            raise _not_found(model, err) from None
        if "trust_remote_code" in str(err):  # transformers' advice would be to run the repository's code
            raise ModelError(f"model {model!r} needs its own code (config.json's auto_map or a custom model_type) to "
                             "load; vlprobe never runs code from a model repository, and no option turns that on: use "
                             "a model whose architecture transformers ships") from None
        if "does not recognize this architecture" in str(err):  # a model_type transformers does not know
            raise _unknown_architecture(model) from None
        if "Unrecognized configuration class" in str(err):
            config_name = str(err).split("<class '")[-1].split("'>")[0].rsplit(".", 1)[-1]
            raise ValueError(
                f"model {model!r} ({config_name}) cannot be loaded with {getattr(cls, '__name__', cls)}: it is not the kind "
                f"of model this scorer family takes; leave --family out to detect it, or pick another "
                f"family"
            ) from None
        raise


def _unreadable_json(model: str) -> str | None:
    """Which JSON file of local model folder ``model`` does not parse, and where (None: all do)."""
    import json

    folder = Path(model).expanduser()
    if not folder.is_dir():
        return None
    for path in sorted(folder.glob("*.json")):
        try:
            json.loads(path.read_text(encoding="utf-8"))
        except UnicodeDecodeError as err:
            return f"{path.name} is not UTF-8 text (byte {err.object[err.start]:#04x} at offset {err.start})"
        except ValueError as err:
            return f"{path.name} is not valid JSON ({err})"
        except OSError:
            continue
    return None


def load_config(model: str, *, revision: str | None = None, trust_remote_code: bool = False) -> PretrainedConfig:
    """The model's transformers config (``AutoConfig``), with :func:`from_pretrained`'s one-line errors."""
    from transformers import AutoConfig

    return from_pretrained(AutoConfig, model, revision=revision, trust_remote_code=trust_remote_code)


def resolved_revision(model: str, config: PretrainedConfig, revision: str | None) -> str | None:
    """The commit a Hub model was loaded from (from its config's path in the Hub cache, as ``config._commit_hash``
    is gone in transformers 5), else the requested revision; None for a local folder."""
    if Path(model).is_dir():
        return None
    try:
        from transformers.utils.hub import cached_file, extract_commit_hash

        path = cached_file(model, "config.json", revision=revision,
                           _raise_exceptions_for_missing_entries=False)
        commit = extract_commit_hash(path, None) if path else None
        if commit:
            return str(commit)
    except Exception:  # provenance is best effort: the model itself is already loaded
        pass
    commit = getattr(config, "_commit_hash", None)
    return str(commit) if commit else revision


def family_of_name(model: object) -> str | None:
    """The family whose own names include ``model`` (``Family.claims``), else None (the model's config decides)."""
    return next((f.name for f in _by_priority(families()) if f.claims is not None and f.claims(model)), None)


def _by_priority(fams: dict[str, Family]) -> list[Family]:
    return sorted(fams.values(), key=lambda f: (-f.priority, f.name))


def detect_family(config: PretrainedConfig, *, model: str | None = None, architectures: list[str] | None = None) -> str:
    """The family that takes this config: each listed architecture in the families' own maps, then their
    ``detect(config)`` hooks, then their Auto tables (by priority within a step); a config without architectures
    by its ``model_type``. ``architectures`` replaces the config's list; ``model`` names the model in the error."""
    fams = _by_priority(families())
    archs = [str(a) for a in (architectures if architectures is not None
                              else getattr(config, "architectures", None) or [])]
    model_type = getattr(config, "model_type", None)
    base = _base_class(model_type)

    def hooked() -> str | None:  # the families' own detect(config) hooks (plugins)
        return next((f.name for f in fams if f.detect is not None and f.detect(config)), None)

    if archs:
        found = (next((f.name for a in archs for f in fams if f.takes(a) == "explicit"), None) or hooked()
                 or next((f.name for a in archs for f in fams if f.takes(a) == "auto"), None)
                 # a task head no table lists (CLIPSegForImageSegmentation) is its model type's base class
                 # (CLIPSegModel) where a family takes that: the family loads the base model from the checkpoint
                 or next((f.name for f in fams if base and f.takes(base)), None))
    elif model_type:  # no architecture listed (a config saved by hand): the base class, then the Auto tables
        found = (next((f.name for f in fams if base and f.takes(base) == "explicit"), None) or hooked()
                 or next((f.name for f in fams if model_type in f.auto_architectures()), None))
    else:
        found = hooked()
    if found is None:
        raise UnmappedArchitectureError(_unmapped(config, model, archs, model_type, fams))
    return found


def _base_class(model_type: str | None) -> str | None:
    """The model type's ``AutoModel`` class (``clipseg`` -> ``CLIPSegModel``), or None."""
    if not model_type:
        return None
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    base = MODEL_MAPPING_NAMES.get(model_type)
    return base if isinstance(base, str) else None


def _unmapped(config: PretrainedConfig, model: str | None, archs: list[str], model_type: str | None, fams: list[Family]) -> str:
    """The one line refusing a model no family takes, naming the family that takes another class of its type."""
    import re

    who = f"model {model!r}" if model else "this model"
    arch = archs[0] if archs else None
    task = arch.split("For", 1)[1] if arch and "For" in arch else ""
    words = [w if w.isupper() else w.lower() for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z][a-z]+|[a-z]+|\d+", task)]
    what = (f"a {model_type!r} model" if model_type else "a model of unknown type") + (
        f" for {' '.join(words)}" if words else " with no task head" if arch else "")
    sides = [side for side, key in (("image", "vision_config"), ("text", "text_config")) if getattr(config, key, None)]
    if len(sides) == 1:
        what += f" (its config has a {sides[0]} side only)"
    near: dict[str, str] = {}
    for cls in _classes_of(model_type):
        # the family detection gives a config listing cls: an explicit map first, then the Auto tables (by priority)
        fam = next((f.name for kind in ("explicit", "auto") for f in fams if f.takes(cls) == kind), None)
        if fam is not None and cls != arch:
            near.setdefault(fam, cls)
    if near:
        tries = " or ".join(f"--family {name} (loads it as {cls})" for name, cls in near.items())
        advice = f"closest: {tries}"
    else:
        advice = f"no family takes a model of type {model_type!r}"
    return (f"no vlprobe scorer family takes {who}: {arch or 'its config'} is {what}; {advice}; `vlprobe list` shows "
            f"each family and the architectures it takes (family='NAME' in Python)")


def _classes_of(model_type: str | None) -> list[str]:
    """Every class transformers' Auto tables list for ``model_type``, base class first."""
    from transformers.models.auto import modeling_auto

    if not model_type:
        return []
    out = []
    for table in ["MODEL_MAPPING_NAMES", *sorted(n for n in dir(modeling_auto) if n.endswith("_MAPPING_NAMES"))]:
        names = getattr(modeling_auto, table, {}).get(model_type)
        out += [names] if isinstance(names, str) else list(names or ())
    return list(dict.fromkeys(out))


def load_checked(cls: Loadable[tuple[PreTrainedModel, dict[str, list[str]]]], model: str, *, family: str,
                 head: Callable[[PreTrainedModel], list[str]], device: str, dtype: str, revision: str | None,
                 trust_remote_code: bool = False) -> PreTrainedModel:
    """A family's model in ``dtype``, on ``device``, in eval mode. Refuses (MissingWeightsError) a checkpoint missing
    a weight, or with one of the wrong shape, under the prefixes ``head(net)`` names (``""``: the whole model)."""
    net, info = from_pretrained(cls, model, output_loading_info=True, revision=revision,
                                trust_remote_code=trust_remote_code, dtype=resolve_dtype(dtype)[1])
    missing = set(info.get("missing_keys") or ())
    missing |= {k[0] if isinstance(k, tuple) else k for k in info.get("mismatched_keys") or ()}
    prefixes = list(head(net))
    hit = sorted(k for k in missing if any(p == "" or k == p or k.startswith(p + ".") for p in prefixes))
    if hit:
        archs = getattr(getattr(net, "config", None), "architectures", None)
        shown = ", ".join(hit[:3]) + (f" and {len(hit) - 3} more" if len(hit) > 3 else "")
        raise MissingWeightsError(
            f"cannot score model {model!r} as family {family!r}: loaded as {type(net).__name__}, its checkpoint "
            f"(architectures {archs}) has no weights for what the family reads ({shown}), which would be "
            f"random; it is another kind of model: leave --family out to detect its family, or name the one "
            f"that fits"
        )
    return net.to(device).eval()


def load_transformers(cls: Loadable[tuple[PreTrainedModel, dict[str, list[str]]]], model: str, *, family: str,
                      head: Callable[[PreTrainedModel], list[str]], wrap: Callable[..., S], device: str, dtype: str,
                      revision: str | None, trust_remote_code: bool, exact_preprocessing: bool, tokenizer: bool = False,
                      check: Callable[[str, PreTrainedModel], None] | None = None, **options: object) -> S:
    """A transformers family's loader: the model (:func:`load_checked`), ``check(model, net)``, then its processor
    (:func:`load_processor`; ``tokenizer``: its ``AutoTokenizer``), made a scorer by ``wrap(..., **options)``."""
    from transformers import AutoTokenizer

    net = load_checked(cls, model, family=family, head=head, device=device, dtype=dtype, revision=revision,
                       trust_remote_code=trust_remote_code)
    if check is not None:
        check(model, net)
    processor = (from_pretrained(AutoTokenizer, model, revision=revision, trust_remote_code=trust_remote_code)
                 if tokenizer else load_processor(model, exact_preprocessing=exact_preprocessing, revision=revision,
                                                  trust_remote_code=trust_remote_code))
    return wrap(model, net, processor, device=device, dtype=dtype, revision=revision, **options)


def no_options(family: str, kw: Mapping[str, object]) -> None:
    """Refuse options a family's loader does not take."""
    if kw:
        raise TypeError(f"family {family!r} takes no options {sorted(kw)}")


def embedding_head(net: PreTrainedModel) -> list[str]:
    """The names of a language model's output and input embeddings, the head a next-token reader needs."""
    wanted = [m for m in (net.get_output_embeddings(), net.get_input_embeddings()) if m is not None]
    return [name for name, module in net.named_modules(remove_duplicate=False)
            if name and any(module is w for w in wanted)]


def load_scorer(
    model: str,
    family: str | None = None,
    *,
    device: str | None = None,
    dtype: str = "float32",
    revision: str | None = None,
    trust_remote_code: bool = False,
    control: str | None = None,
    control_seed: int = 0,
    **kw: object,
) -> Scorer:
    """Load ``model`` (a Hub id or a local folder) as a scorer of ``family`` (detected if None). ``control``
    ("blank" or "shuffle") is only recorded (:func:`~vlprobe.scorers.controls.mark_control`); extra keyword arguments
    go to the family's loader (e.g. ``prompt=`` for ``vqascore``)."""
    model = str(model)
    if not model.strip():
        raise ValueError("no model given: pass a Hub id (e.g. openai/clip-vit-base-patch32) or a local folder")
    family = family or family_of_name(model)
    if family is not None:
        fam = get_family(family)  # UnknownFamilyError lists the known ones
    # a family that reads names of its own (open_clip) loads without a transformers config
    own_names = family is not None and fam.claims is not None
    config = None if own_names else load_config(model, revision=revision, trust_remote_code=trust_remote_code)
    custom = getattr(config, "auto_map", None)
    if custom and not trust_remote_code:
        print(f"vlprobe: warning: model {model!r} names code of its own (auto_map: {', '.join(sorted(custom))}), which "
              f"vlprobe never runs; scoring it as transformers' stock {type(config).__name__.replace('Config', '')} "
              "classes, whose results may differ from what its code computes", file=sys.stderr, flush=True)
    if family is None:
        fam = get_family(detect_family(config, model=model))
    dtype_name, _ = resolve_dtype(dtype)
    try:
        scorer = fam.load(
            model, device=resolve_device(device), dtype=dtype_name, revision=revision,
            trust_remote_code=trust_remote_code, config=config, **kw,
        )
    except (VlprobeError, OSError):
        raise  # vlprobe's own one-line refusals, and transformers' "not found" ones
    except Exception as err:
        bad = _unreadable_json(model)
        if bad is not None:  # e.g. a damaged tokenizer.json: json's or tokenizers' error names no file
            raise ModelError(f"cannot load model {model!r}: {bad}") from None
        if isinstance(err, (ValueError, TypeError)):
            raise  # transformers' "wrong kind of model" ones, already one line
        raise ModelError(f"cannot load model {model!r} as family {fam.name!r}: {_first_line(err)}") from err
    if config is not None:  # (a family of its own names records its revision and content digest itself)
        scorer.revision = resolved_revision(model, config, revision)
        if Path(model).expanduser().is_dir():
            from ..storage.keys import folder_digest

            scorer.model_sha256 = folder_digest(Path(model).expanduser())
    if control:
        from .controls import mark_control

        mark_control(scorer, control, control_seed)
    return scorer


def to_images(images: Sequence[ImageLike | torch.Tensor]) -> list[Picture]:
    """Dataset images -> RGB PIL images; (3, H, W) uint8 tensors (decoded for a fast image processor) pass through."""
    import torch

    from vlprobe.dataset.images import to_pil

    return [im if isinstance(im, torch.Tensor) else to_pil(im) for im in images]


def model_max_text_length(tokenizer: PreTrainedTokenizerBase | None, config: PretrainedConfig,
                          default: int = 512) -> int:
    """The longest text the model takes: the tokenizer's limit, capped by the position table."""
    limits = []
    tok_max = getattr(tokenizer, "model_max_length", None)
    if isinstance(tok_max, int) and 0 < tok_max < 1_000_000:
        limits.append(tok_max)
    for cfg in (getattr(config, "text_config", None), config):
        mpe = getattr(cfg, "max_position_embeddings", None) if cfg is not None else None
        if isinstance(mpe, int) and mpe > 0:
            limits.append(mpe)
            break
    return min(limits) if limits else default


def load_processor(model: str, *, exact_preprocessing: bool = False, revision: str | None = None,
                   trust_remote_code: bool = False) -> ProcessorMixin:
    """``AutoProcessor`` with the fast (torchvision) image processor where there is one, or with
    ``exact_preprocessing=True`` the PIL one, which the papers' numbers were computed with, to match them bit for bit."""
    import transformers
    from transformers import AutoProcessor

    fast = torchvision_available() and not exact_preprocessing
    if int(transformers.__version__.split(".")[0]) >= 5:
        kw: dict[str, Any] = {"backend": "torchvision" if fast else "pil"}
    else:  # transformers 4: use_fast picks the torchvision ("...Fast") image processor
        kw = {"use_fast": fast}
    return from_pretrained(AutoProcessor, model, revision=revision, trust_remote_code=trust_remote_code, **kw)


def torchvision_available() -> bool:
    """Whether ``torchvision`` imports here (a wheel built for another torch fails to)."""
    try:
        from transformers.utils.import_utils import is_torchvision_available

        if not is_torchvision_available():
            return False
        import torchvision  # noqa: F401
    except Exception:  # e.g. RuntimeError "operator torchvision::nms does not exist"
        return False
    return True


def processor_preprocessing(image_processor: ImageProcessingMixin | None,
                            processor: ProcessorMixin | None = None) -> dict[str, Any]:
    """The image preprocessing parameters worth recording; a processor class's own ``images_kwargs`` defaults
    (SigLIP 2's ``max_num_patches``) win, as they do when it runs."""
    if image_processor is None:
        return {}
    keys = ("size", "crop_size", "do_resize", "do_center_crop", "do_rescale", "rescale_factor",
            "do_normalize", "image_mean", "image_std", "resample", "do_pad", "size_divisor",
            "do_convert_rgb", "patch_size", "max_num_patches")
    fast = {c.__name__ for c in type(image_processor).__mro__} & {"TorchvisionBackend", "BaseImageProcessorFast"}
    out: dict[str, Any] = {"image_processor": type(image_processor).__name__,
                           "image_backend": "torchvision" if fast else "pil"}
    for k in keys:
        v = getattr(image_processor, k, None)
        if v is None:
            continue
        if dataclasses.is_dataclass(v) and not isinstance(v, type):  # transformers 5 SizeDict
            v = {kk: vv for kk, vv in dataclasses.asdict(v).items() if vv is not None}
        elif hasattr(v, "items"):
            v = {kk: vv for kk, vv in dict(v).items() if vv is not None}
        elif isinstance(v, tuple):
            v = list(v)
        elif not isinstance(v, (int, float, str, bool, list)):
            v = str(v)
        out[k] = v
    overrides = getattr(type(processor), "images_kwargs", None) if processor is not None else None
    if isinstance(overrides, dict):
        out.update({k: v for k, v in overrides.items() if isinstance(v, (int, float, str, bool))})
    return out
