"""The skeleton every run shares: ``vlprobe.evaluate`` and ``vlprobe.probe`` each do their own work (scoring and
measuring; features and probes) inside these steps, in this order.

1. **Settings**, checked once, as one object (a :class:`vlprobe.options.Settings`): every number and name first;
   then the model and dataset names (:meth:`Run.check_names`: a typo fails in about a second, with the closest
   known name, before torch or ``datasets`` is imported); then the checks that import torch or the metric (the
   device, the tie policy).
2. **The output folder** checked before any work (:func:`vlprobe.run_folder.check_output_dir`), and the leftovers
   of killed runs swept (:func:`vlprobe.leftovers.sweep`).
3. **The model**, named as every command names it (:func:`vlprobe.names.find_model`: ``mini-clip`` works
   anywhere), loaded through its scorer family or wrapped when it is already in memory (:func:`load_model`).
4. **The score cache** (``cache_dir``: the default folder, another, or none; a throw-away one when there is none
   but the rows span several chunks), **the DataLoader workers** and **the engine** (:meth:`Run.engine`).
5. **The provenance** every results.json starts with (:meth:`Run.provenance`): when, the command that reruns it,
   ``argv``, the model, and the environment last.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterable

from .cache import ScoreCache, default_cache_dir
from .engine import Engine
from .errors import ArgumentError, ModelError, SettingError, VlprobeError
from .leftovers import OwnedDir, sweep
from .names import check_dataset, check_family, check_model, find_dataset, find_model
from .options import Settings
from .results import environment, now_iso
from .run_folder import RUN_FILE, check_output_dir
from .scorers.base import Scorer, UnknownFamilyError, get_family
from .scorers.controls import mark_control
from .scorers.loading import detect_family, load_scorer


def default_workers() -> int:
    """DataLoader workers decoding and preprocessing images: min(4, CPUs - 1) where there are more
    than 2 CPUs, else 0. Workers pay only with cores beyond the one running the model (on 2 cores
    one worker made mini-clip 2.2x slower: README, performance notes)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return min(4, cpus - 1) if cpus > 2 else 0


class Run:
    """One run's shared steps (see the module doc), around its settings ``s`` (made with every check but the slow
    ones): :meth:`check_names`, then :meth:`finish_checks` complete the checks before anything is loaded.
    ``own``: the names a run of this kind writes into its output folder; ``command``: the function that writes the
    command line rerunning it (the command's ``command_line``); ``log``: where status lines go (default: stderr
    when ``s.progress``)."""

    def __init__(self, s: Settings, *, own: re.Pattern[str] = RUN_FILE, command: Callable[..., str | None],
                 log: Callable[[str], None] | None = None) -> None:
        self.s = s
        self.started = time.perf_counter()
        self.log = log if log is not None else ((lambda msg: print(msg, file=sys.stderr)) if s.progress
                                                 else (lambda msg: None))
        self._own = own
        self._command = command
        self.workers = s.num_workers if s.num_workers is not None else default_workers()

    # -- 1. settings ----------------------------------------------------------------------------------------------

    def check_names(self, datasets: Iterable[Any] = ()) -> None:
        """The model's, the family's and each dataset's name (as :mod:`vlprobe.names` resolves them), in about a
        second, before torch or ``datasets`` is imported: the model first, whose typo is the commonest."""
        check_model(self.s.model, self.s.revision)
        check_family(self.s.family)
        for d in datasets:
            if isinstance(d, (str, os.PathLike)):
                check_dataset(str(find_dataset(d)), self.s.dataset_revision)

    # -- 2. the output folder --------------------------------------------------------------------------------------

    def finish_checks(self) -> Settings:
        """The slow checks (the device, the tie policy), then the output folder; sweeps the leftovers of killed runs
        (``out``'s staging folders, feature and chunk-cache folders in ``$TMPDIR``). Returns the settings, complete."""
        self.s = self.s.check()
        if self.s.out is not None:
            check_output_dir(self.s.out, self._own)
        sweep(self.s.out)
        return self.s

    # -- 3. the model ---------------------------------------------------------------------------------------------

    def load_model(self, model: Any, processor: Any = None, *, device: str | None = None) -> Scorer:
        """``model`` (as named, or in memory) as a scorer, loaded as every command loads it: :func:`load_model` with
        the run's family, revision, dtype and device (``device``: this process's, under ``accelerate launch``), and
        the preprocessing and image control of a command that has those options (evaluate)."""
        return load_model(model, processor, family=self.s.family, revision=self.s.revision,
                          device=device if device is not None else self.s.device, dtype=self.s.dtype,
                          exact_preprocessing=getattr(self.s, "exact_preprocessing", False),
                          control=getattr(self.s, "control", None), seed=self.s.seed)

    # -- 4. cache, workers, engine --------------------------------------------------------------------------------

    def open_cache(self, scorer: Scorer, *, rows: int, rank: int = 0, single_process: bool = True) -> "RunCache":
        """The score cache asked for, or, when there is none and ``rows`` span more than one chunk, a throw-away one
        (it carries repeated inputs across chunks; removed after the run) in a single-process run."""
        cache = open_cache(self.s.cache_dir, scorer, rank)
        if cache is not None or rows <= self.s.chunk_size or not single_process:
            return RunCache(cache, None)
        return RunCache(*throwaway_cache(scorer))

    def engine(self, scorer: Scorer, cache: "RunCache", *, progress: bool) -> Engine:
        return Engine(scorer, batch_size=self.s.batch_size, num_workers=self.workers, cache=cache.cache,
                      progress=progress, log=self.log)

    # -- 5. provenance --------------------------------------------------------------------------------------------

    def provenance(self, scorer: Scorer, command_values: Any, **sections: Any) -> dict[str, Any]:
        """results.json's provenance: created, the rerun command (from ``command_values``: the checked settings,
        the defaults a run filled in included), argv, the model, then ``sections``, then the environment."""
        return {"created": now_iso(), "command": self._command(command_values), "argv": list(sys.argv),
                "model": scorer.describe(), **sections, "environment": environment()}


class RunCache:
    """The cache a run scores through: ``cache`` (None: none), and the temporary folder of a throw-away one. Closed
    (and the folder removed) by :meth:`close`, as a context manager too."""

    def __init__(self, cache: ScoreCache | None, temp: OwnedDir | None) -> None:
        self.cache, self.temp = cache, temp

    @property
    def kept(self) -> bool:
        """Whether what is computed stays for a later run (a cache asked for, not a throw-away one)."""
        return self.cache is not None and self.temp is None

    @property
    def folder(self) -> str | None:
        return str(self.cache.dir) if self.kept else None

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()
        if self.temp is not None:
            self.temp.cleanup()

    def __enter__(self) -> RunCache:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def open_cache(cache_dir: Any, scorer: Any, rank: int = 0) -> ScoreCache | None:
    """The score cache asked for (``cache_dir``: a folder, None for the default, ``"none"`` for no
    cache), or None when there is none or it cannot be written (it has warned)."""
    # Only the string "none" (or False) turns the cache off: None is the default folder. (str(None)
    # is "None", which once made every default run uncached.)
    if cache_dir is False or (isinstance(cache_dir, str) and cache_dir.strip().lower() == "none"):
        return None
    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    # ScoreCache never raises: an unwritable one has warned once (vlprobe/cache.py) and is off.
    cache = ScoreCache(root, scorer.cache_key(), rank=rank)
    return cache if cache.enabled else None


def throwaway_cache(scorer: Any) -> tuple[ScoreCache, OwnedDir]:
    """(cache, its temporary folder) for a run that asked for no cache but reads several chunks:
    it carries inputs across chunks, and the caller deletes it after the run (an interrupted run
    cannot resume from it, and EngineInterrupted says so). The folder is a
    :class:`vlprobe.leftovers.OwnedDir` in ``$TMPDIR``: should this run be killed, a later run
    removes it; this one first removes those of killed runs (:func:`vlprobe.leftovers.sweep`)."""
    sweep()
    temp = OwnedDir(prefix="vlprobe-chunk-cache-")
    cache = ScoreCache(temp.name, scorer.cache_key())
    cache.temporary = True
    return cache, temp


# ---- the model ----------------------------------------------------------------------------------------------------

def check_processor(processor: Any, model: Any) -> None:
    """Refuse a ``processor=`` that would be ignored or cannot be one: it goes with an already-loaded transformers
    model only (a folder or Hub id loads its own), and it is a processor or tokenizer (callable), not a name."""
    if processor is None:
        return
    if model is None or isinstance(model, (str, os.PathLike, tuple)) or isinstance(model, Scorer):
        raise ArgumentError("processor", processor, "is used only with an already-loaded transformers model "
                                                    "(model=the model object); a model folder or Hub id loads its own "
                                                    "processor, and a (model, processor) pair or a scorer has one")
    if isinstance(processor, (str, os.PathLike)) or not callable(processor):
        raise ArgumentError("processor", processor, "must be the model's processor or tokenizer object (e.g. "
                                                    "AutoProcessor.from_pretrained(...)), not a name")


def load_model(model: Any, processor: Any = None, *, family: str | None = None, revision: str | None = None,
               device: str | None = None, dtype: str = "float32", exact_preprocessing: bool = False,
               control: str | None = None, seed: int = 0) -> Scorer:
    """A ready scorer from a model folder or Hub id (``mini-clip`` and the other names of
    :func:`vlprobe.names.find_model` resolved), a (model, processor) pair, a loaded model, or a scorer."""
    if isinstance(model, tuple) and len(model) == 2 and processor is None:
        model, processor = model
    if isinstance(model, Scorer):
        scorer = model
    elif isinstance(model, (str, os.PathLike)):
        try:
            scorer = load_scorer(str(find_model(model)), family, device=device, dtype=dtype, revision=revision,
                                 exact_preprocessing=exact_preprocessing)
        except UnknownFamilyError as err:
            raise ModelError(str(err)) from None
        except (FileNotFoundError, OSError, ValueError, TypeError) as err:
            raise ModelError(str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__) from None
    else:
        scorer = _loaded_scorer(model, processor, family, device, dtype)
    if control:
        if "+" not in scorer.family:
            try:
                mark_control(scorer, control, seed)
            except ValueError as err:
                raise SettingError(str(err)) from None
    return scorer


def _loaded_scorer(model: Any, processor: Any, family: str | None, device: str | None, dtype: str) -> Scorer:
    """A scorer around an already-loaded transformers model and its processor (or tokenizer): the
    family (named, or detected from the model's own class) wraps it (``Family.wrap``)."""
    import torch  # a loaded model: torch is imported already

    config = getattr(model, "config", None)
    if config is None:
        raise ModelError(f"model is a {type(model).__name__}: pass a model folder or Hub id, a transformers "
                         f"model (with processor=...), or a vlprobe scorer")
    try:
        # The model's own classes (a subclass of CLIPModel is still a CLIPModel), not the config's list.
        classes = [type(model).__name__] + [c.__name__ for c in type(model).__mro__[1:]
                                            if c.__module__.startswith("transformers.models.")]
        fam = get_family((family or detect_family(config, architectures=classes)).split("+")[0])
    except UnknownFamilyError as err:
        raise ModelError(str(err)) from None
    if fam.wrap is None:
        raise ModelError(f"family {fam.name!r} cannot wrap an already-loaded model; save it with save_pretrained and "
                         f"pass the folder")
    if processor is None:
        raise ModelError("a loaded model needs its processor (a tokenizer for family 'causal_lm'): "
                         "evaluate(model=(model, processor), ...) or evaluate(model=model, processor=processor, ...)")
    if device is not None:
        model = model.to(device)
    param = next(iter(model.parameters()), None)
    device = device or (str(param.device) if param is not None else "cpu")
    dtype = str(param.dtype).removeprefix("torch.") if param is not None else dtype
    model_id = str(getattr(config, "_name_or_path", "") or getattr(model, "name_or_path", "") or type(model).__name__)
    model = model.eval()
    try:
        scorer = fam.wrap(model_id, model, processor, device=device, dtype=dtype, revision=None)
    except VlprobeError:
        raise
    except Exception as err:
        line = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ModelError(f"cannot wrap model {model_id!r} as family {fam.name!r}: {line}") from err
    # The weights identify a model in memory (it may be mid-training): its cache key is their digest.
    h = hashlib.sha256()
    with torch.no_grad():
        for key, tensor in sorted(model.state_dict().items()):
            h.update(key.encode())
            h.update(tensor.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes())
    scorer.revision = f"weights-sha256:{h.hexdigest()[:32]}"
    return scorer
