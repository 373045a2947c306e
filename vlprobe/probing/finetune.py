"""``finetune=True``: a copy of a dual encoder fine-tuned with a linear head (through accelerate), tested as probes."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar, cast

import numpy as np

from ..errors import SettingError
from .data import Split
from .metrics import macro_f1, measure
from .protocol import _row
from .settings import TRAIN, VALIDATION

if TYPE_CHECKING:
    import torch
    from accelerate import Accelerator

    from ..results.schema import Finetune
    from ..scorers.base import Scorer
    from ..scorers.dual_encoder import DualEncoderScorer

FINETUNE_LR = 1e-4
PAPER_EPOCHS = 80  # TraVLR App. B.2: 80 epochs, no early stopping
Snapshot = TypeVar("Snapshot")


@dataclass(frozen=True)
class Plan:
    """A fine-tuning schedule: ``quick`` (the best validation epoch kept) or ``paper`` (80 epochs, the last kept)."""

    schedule: str
    epochs: int
    keep: str  # "best validation epoch" or "last epoch"
    as_paper: bool


def schedule_plan(schedule: str, epochs: int) -> Plan:
    """The :class:`Plan` of ``schedule`` (``epochs``: the quick schedule's)."""
    if schedule == "paper":
        return Plan("paper", PAPER_EPOCHS, "last epoch", True)
    if schedule == "quick":
        return Plan("quick", int(epochs), "best validation epoch", False)
    raise ValueError(f"unknown schedule {schedule!r}; choose quick or paper")


def schedule_note(plan: Plan | Finetune) -> str:
    """One line naming the schedule, and saying so where it departs from the paper."""
    if plan.schedule == "paper":
        return f"schedule paper: {plan.epochs} epochs, no early stopping (the last epoch kept), as TraVLR App. B.2"
    return (f"schedule quick: {plan.epochs} epoch(s), the best on validation kept (early stopping): a departure "
            f"from the paper's {PAPER_EPOCHS} epochs without early stopping (--schedule paper)")


def train_epochs(plan: Plan, run_epoch: Callable[[int], None], validate: Callable[[], float],
                 snapshot: Callable[[], Snapshot]) -> tuple[Snapshot | None, int, float | None]:
    """Run ``plan``'s epochs: (the kept snapshot, its epoch, its validation macro-F1 or None)."""
    best, best_epoch, best_f1 = None, 0, -1.0
    for epoch in range(1, plan.epochs + 1):
        run_epoch(epoch)
        if plan.as_paper:
            continue
        f1 = validate()
        if f1 > best_f1:
            best, best_epoch, best_f1 = snapshot(), epoch, f1
    if plan.as_paper:
        return snapshot(), plan.epochs, None
    return best, best_epoch, best_f1


def finetune_rows(scorer: Scorer, data: Mapping[str, Mapping[str, Split]], *, train_modalities: Sequence[str],
                  test_modalities: Sequence[str], epochs: int, batch_size: int, bootstrap: int, confidence: float,
                  seed: int, seeds: int = 1, schedule: str = "quick",
                  progress: bool = True) -> list[dict[str, object]]:
    """Fine-tune a copy of a dual encoder with a linear head per task, training modality and seed (the scorer's own
    model, and so the cache, untouched)."""
    import copy

    import torch

    from ..scorers.base import DualScorer

    if not isinstance(scorer, DualScorer) or not hasattr(scorer, "tokenize"):
        raise SettingError(f"finetune=True supports dual encoders; model {scorer.model_id!r} is family {scorer.family!r}")
    dual = cast("DualEncoderScorer", scorer)
    try:
        from accelerate import Accelerator

        accelerator: Accelerator | None = Accelerator(cpu=str(dual.device).startswith("cpu"))
    except ImportError:
        accelerator = None
    say = (lambda *a: print(*a, file=sys.stderr)) if progress else (lambda *a: None)
    plan = schedule_plan(schedule, epochs)
    rows: list[dict[str, object]] = []
    for task, by_split in data.items():
        tests = [s for s in by_split if s.startswith("test")]
        for train_m in train_modalities:
            for sd in range(seed, seed + seeds):
                torch.manual_seed(sd)
                model = copy.deepcopy(dual.model).train()
                dim = int(dual.encode_texts(["a"]).shape[1])
                head = torch.nn.Linear(4 * dim, 1)
                opt = torch.optim.Adam(list(model.parameters()) + list(head.parameters()), lr=FINETUNE_LR)
                if accelerator is not None:
                    model, head, opt = accelerator.prepare(model, head, opt)
                enc = _Encoder(dual, model)
                train, val = by_split[TRAIN], by_split[VALIDATION]
                order = np.random.default_rng(sd).permutation(len(train))
                t0 = time.perf_counter()

                def run_epoch(epoch: int) -> None:
                    for start in range(0, len(train), batch_size):
                        idx = order[start:start + batch_size]
                        logit = head(enc.features(train, idx, train_m)).squeeze(-1)
                        loss = torch.nn.functional.binary_cross_entropy_with_logits(
                            logit, torch.from_numpy(train.labels[idx].astype(np.float32)).to(logit.device))
                        opt.zero_grad()
                        (accelerator.backward(loss) if accelerator is not None else loss.backward())
                        opt.step()

                def snapshot() -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
                    return (copy.deepcopy(_unwrap(model, accelerator).state_dict()),
                            copy.deepcopy(_unwrap(head, accelerator).state_dict()))

                kept, epoch, val_f1 = train_epochs(
                    plan, run_epoch, lambda: macro_f1(_predict(enc, head, val, train_m, batch_size) > 0.5, val.labels),
                    snapshot)
                assert kept is not None  # every schedule runs at least one epoch
                _unwrap(model, accelerator).load_state_dict(kept[0])
                _unwrap(head, accelerator).load_state_dict(kept[1])
                for m in test_modalities:
                    for split in tests:
                        sc = measure(_predict(enc, head, by_split[split], m, batch_size), by_split[split].labels,
                                     bootstrap=bootstrap, confidence=confidence, seed=sd)
                        rows.append(_row(task, train_m, split, sc, train_modality=train_m, test_modality=m,
                                         transfer="same" if m == train_m else "zero-shot", train_size=len(train),
                                         l2=None, classifier="finetune", epoch=epoch, seed=sd))
                said = (f"best epoch {epoch} of {plan.epochs} (validation macro-F1 {100 * val_f1:.1f})"
                        if val_f1 is not None else f"{plan.epochs} epochs, the last kept")
                say(f"finetune: {task} on {train_m}, seed {sd}: {said} in {time.perf_counter() - t0:.1f}s")
    return rows


def _unwrap(module: torch.nn.Module, accelerator: Accelerator | None) -> torch.nn.Module:
    return accelerator.unwrap_model(module) if accelerator is not None else module


class _Towers(Protocol):

    def get_text_features(self, **inputs: torch.Tensor) -> object: ...

    def get_image_features(self, **inputs: torch.Tensor) -> object: ...


class _Encoder:
    """The probe's features from a trainable copy of a dual encoder, images decoded a batch at a time."""

    def __init__(self, scorer: DualEncoderScorer, model: torch.nn.Module) -> None:
        self.scorer, self.model = scorer, model
        self.net = cast(_Towers, getattr(model, "module", model))  # the model inside a distributed wrapper

    def _texts(self, texts: list[str]) -> torch.Tensor:
        from ..scorers.dual_encoder import embedding_of

        inputs = self.scorer._to_device(self.scorer.tokenize(texts))
        return torch_normalise(embedding_of(self.net.get_text_features(**inputs)))

    def features(self, split: Split, idx: np.ndarray, modality: str) -> torch.Tensor:
        from ..dataset.images import to_pil
        from ..scorers.dual_encoder import embedding_of

        v = self._texts(split.texts_at("query", idx))
        if modality in ("image", "both"):
            pils = [to_pil(image, where=f"{split.task}/{split.split} row {int(i)}")
                    for i, image in zip(idx, split.images_at(idx))]
            inputs = self.scorer._to_device(self.scorer.preprocess_images(pils))
            img = torch_normalise(embedding_of(self.net.get_image_features(**inputs)))
        if modality in ("caption", "both"):
            cap = self._texts(split.texts_at("caption", idx))
        u = img if modality == "image" else cap if modality == "caption" else torch_normalise(img + cap)
        import torch

        return torch.cat([u, v, u * v, (u - v).abs()], dim=1)


def torch_normalise(x: torch.Tensor) -> torch.Tensor:
    return x.float() / x.float().norm(dim=-1, keepdim=True).clamp_min(1e-12)


def _predict(enc: _Encoder, head: torch.nn.Module, split: Split, modality: str, batch_size: int) -> np.ndarray:
    import torch

    enc.model.eval()
    out = []
    with torch.no_grad():
        for start in range(0, len(split), batch_size):
            idx = np.arange(start, min(start + batch_size, len(split)))
            out.append(torch.sigmoid(head(enc.features(split, idx, modality)).squeeze(-1)).float().cpu().numpy())
    enc.model.train()
    return np.concatenate(out)
