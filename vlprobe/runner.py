"""The pipeline every run follows: ``vlprobe.evaluate``, ``vlprobe.probe`` and ``vlprobe.score`` are each a
:class:`Run` whose hooks do the command's own work; :meth:`Run.__call__` is the order of the steps."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, NamedTuple, TypeVar

from .errors import ModelError, SettingError, VlprobeError, first_line
from .names import check_dataset, check_family, check_model, find_dataset, find_model
from .options import Settings, cpus
from .results import RunResult, environment, now_iso
from .scorers.base import Scorer, UnknownFamilyError, get_family
from .scorers.controls import mark_control
from .scorers.loading import detect_family, load_scorer
from .scoring.engine import Engine
from .storage.leftovers import OwnedDir, sweep
from .storage.locations import cache_home
from .storage.run_folder import RUN_FILE, check_output_dir
from .storage.score_cache import ScoreCache

if TYPE_CHECKING:
    from transformers import PreTrainedModel

Data = TypeVar("Data")  # what a run scores (load_data's)
Done = TypeVar("Done")  # what its work gives
Result = TypeVar("Result")  # what it returns


def default_workers() -> int:
    """DataLoader workers decoding images (on 2 cores one worker made mini-clip 2.2x slower: README)."""
    return min(4, cpus() - 1) if cpus() > 2 else 0


@contextlib.contextmanager
def silenced(quiet: bool) -> Iterator[None]:
    """datasets' progress bars off, with ``quiet`` transformers' and huggingface_hub's too; restored after."""
    import datasets

    switches = [(datasets.is_progress_bar_enabled, datasets.disable_progress_bars, datasets.enable_progress_bars)]
    if quiet:
        import huggingface_hub.utils as hub
        from transformers.utils import logging as hf_logging

        switches += [(hf_logging.is_progress_bar_enabled, hf_logging.disable_progress_bar, hf_logging.enable_progress_bar),
                     (lambda: not hub.are_progress_bars_disabled(), hub.disable_progress_bars, hub.enable_progress_bars)]
    restore = []
    for on, off, back in switches:
        if on():
            off()
            restore.append(back)
    try:
        yield
    finally:
        for back in restore:
            back()


class Run(Generic[Data, Done, Result]):
    """One run of a command around its checked settings ``s``; :attr:`OWN`: the names it writes into ``out``."""

    OWN: ClassVar[re.Pattern[str]] = RUN_FILE

    def __init__(self, s: Settings) -> None:
        self.s = s
        self.started = time.perf_counter()
        log = getattr(s, "log", None)
        self.log: Callable[[str], None] = log if log is not None else (
            (lambda msg: print(msg, file=sys.stderr)) if s.progress else (lambda msg: None))
        self.workers = s.num_workers if s.num_workers is not None else default_workers()
        self.model = s.model  # what load_model loads (a command may fill in a default)
        self.device: str | None = None  # this process's device (None: the settings')
        self.rank, self.processes = 0, 1  # this process and how many score (under ``accelerate launch``)

    def __call__(self) -> Result:
        self.check_names(self.names())
        self.s = s = self.s.check()
        if s.out is not None:
            check_output_dir(s.out, self.OWN)
        sweep(s.out)
        with silenced(not s.progress):
            data = self.load_data()
            self.before_model(data)
            scorer = load_model(self.model, s.processor, family=s.family, revision=s.revision,
                                device=self.device if self.device is not None else s.device, dtype=s.dtype,
                                exact_preprocessing=getattr(s, "exact_preprocessing", False),
                                control=getattr(s, "control", None), seed=s.seed)
            self.after_model(scorer, data)
            rows = self.rows(data)
            with self.open_cache(scorer, rows=rows) as cache:
                engine = Engine(scorer, batch_size=s.batch_size, num_workers=self.workers, cache=cache.cache,
                                progress=self.engine_bars(rows), log=self.log)
                done = self.work(engine, data, cache)
        result = self.results(scorer, data, done)
        if s.out is not None and self.rank == 0 and isinstance(result, RunResult):
            result.save(s.out)
        return result

    # -- the hooks ------------------------------------------------------------------------------------------------

    def names(self) -> Iterable[object]:
        """The datasets :meth:`check_names` checks."""
        return ()

    def load_data(self) -> Data:
        raise NotImplementedError

    def before_model(self, data: Data) -> None:
        """Refuse what the data alone shows cannot run, before any weight loads."""

    def after_model(self, scorer: Scorer, data: Data) -> None:
        """Refuse what the model cannot do with the data, before any scoring."""

    def rows(self, data: Data) -> int:
        """The rows one pass reads (more than a chunk: a throw-away cache carries inputs across chunks)."""
        return 1

    def engine_bars(self, rows: int) -> bool:
        return self.s.progress

    def work(self, engine: Engine, data: Data, cache: RunCache) -> Done:
        raise NotImplementedError

    def results(self, scorer: Scorer, data: Data, done: Done) -> Result:
        """The command's result (a :class:`~vlprobe.results.RunResult` is saved to ``out``)."""
        raise NotImplementedError

    # -- the steps ------------------------------------------------------------------------------------------------

    def check_names(self, datasets: Iterable[object] = ()) -> None:
        """The names, before torch or ``datasets`` is imported: the model first, whose typo is the commonest."""
        check_model(self.s.model, self.s.revision)
        check_family(self.s.family)
        for d in datasets:
            if isinstance(d, (str, os.PathLike)):
                check_dataset(str(find_dataset(d)), self.s.dataset_revision)

    @contextlib.contextmanager
    def open_cache(self, scorer: Scorer, *, rows: int) -> Iterator[RunCache]:
        """The score cache asked for, or, when none and ``rows`` span several chunks, a throw-away one in a
        single-process run; closed (and removed) after."""
        where, cache = self.s.cache_dir, None
        if not (isinstance(where, str) and where.strip().lower() == "none"):  # None: the default folder
            cache = ScoreCache(Path(where).expanduser() if where is not None else cache_home(),
                               scorer.cache_key(), rank=self.rank)
        if cache is not None and not cache.enabled:
            cache = None
        opened = RunCache(cache, None)
        if cache is None and rows > self.s.chunk_size and self.processes == 1:
            opened = RunCache(*throwaway_cache(scorer))
        try:
            yield opened
        finally:
            if opened.cache is not None:
                opened.cache.close()
            if opened.temp is not None:
                opened.temp.cleanup()

    def provenance(self, scorer: Scorer, command: str | None, **sections: object) -> dict[str, Any]:
        """results.json's provenance, ``sections`` between the model and the environment."""
        return {"created": now_iso(), "command": command, "argv": list(sys.argv), "model": scorer.describe(),
                **sections, "environment": environment()}


class RunCache(NamedTuple):
    """The cache a run scores through (None: none), and the temporary folder of a throw-away one."""

    cache: ScoreCache | None
    temp: OwnedDir | None

    @property
    def folder(self) -> str | None:
        """The folder of a cache kept for later runs."""
        return str(self.cache.dir) if self.cache is not None and self.temp is None else None


def throwaway_cache(scorer: Scorer) -> tuple[ScoreCache, OwnedDir]:
    """(cache, its folder) carrying inputs across chunks; a later run removes the folder should this one be killed."""
    sweep()
    temp = OwnedDir(prefix="vlprobe-chunk-cache-")
    cache = ScoreCache(temp.name, scorer.cache_key())
    cache.temporary = True  # a Ctrl-C then says nothing was saved (the folder goes with the run)
    return cache, temp


# ---- the model ----------------------------------------------------------------------------------------------------

def load_model(model: object, processor: object = None, *, family: str | None = None, revision: str | None = None,
               device: str | None = None, dtype: str = "float32", exact_preprocessing: bool = False,
               control: str | None = None, seed: int = 0) -> Scorer:
    """A ready scorer from a model name, a (model, processor) pair, a loaded model, or a scorer."""
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
            raise ModelError(first_line(err)) from None
    else:
        scorer = _loaded_scorer(model, processor, family, device, dtype)
    if control and "+" not in scorer.family:
        try:
            mark_control(scorer, control, seed)
        except ValueError as err:
            raise SettingError(str(err)) from None
    return scorer


def _loaded_scorer(model: PreTrainedModel, processor: object, family: str | None, device: str | None, dtype: str) -> Scorer:
    """A scorer around a loaded transformers model, wrapped by its family (named, or detected from its class)."""
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
        raise ModelError(f"cannot wrap model {model_id!r} as family {fam.name!r}: {first_line(err)}") from err
    # The weights identify a model in memory (it may be mid-training): its cache key is their digest.
    h = hashlib.sha256()
    with torch.no_grad():
        for key, tensor in sorted(model.state_dict().items()):
            h.update(key.encode())
            h.update(tensor.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes())
    scorer.revision = f"weights-sha256:{h.hexdigest()[:32]}"
    return scorer
