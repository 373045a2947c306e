"""``finetune=True``: a copy of a dual encoder fine-tuned with a linear head per task and training
modality (through accelerate), tested as the probes are."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import SettingError
from .data import Split
from .metrics import macro_f1, measure
from .protocol import _row
from .settings import TRAIN, VALIDATION

FINETUNE_LR = 1e-4


PAPER_EPOCHS = 80  # TraVLR App. B.2: 80 epochs, no early stopping


def schedule_plan(schedule: str, epochs: int) -> dict[str, Any]:
    """The fine-tuning schedule: ``"quick"`` (``epochs`` passes, the epoch with the best validation
    macro-F1 kept: early stopping, a departure from the paper) or ``"paper"`` (80 epochs, the last
    one kept, as TraVLR's App. B.2; ``epochs`` is not used). Returns ``schedule``, ``epochs``,
    ``keep`` ("best validation epoch" or "last epoch") and ``as_paper``."""
    if schedule == "paper":
        return {"schedule": "paper", "epochs": PAPER_EPOCHS, "keep": "last epoch", "as_paper": True}
    if schedule == "quick":
        return {"schedule": "quick", "epochs": int(epochs), "keep": "best validation epoch", "as_paper": False}
    raise ValueError(f"unknown schedule {schedule!r}; choose quick or paper")


def schedule_note(plan: dict[str, Any]) -> str:
    """One line naming the schedule, and saying so where it departs from the paper."""
    if plan.get("as_paper"):
        return f"schedule paper: {plan['epochs']} epochs, no early stopping (the last epoch kept), as TraVLR App. B.2"
    return (f"schedule quick: {plan['epochs']} epoch(s), the best on validation kept (early stopping): a departure "
            f"from the paper's {PAPER_EPOCHS} epochs without early stopping (--schedule paper)")


def train_epochs(plan: dict[str, Any], run_epoch: Any, validate: Any, snapshot: Any) -> tuple[Any, int, float | None]:
    """Run ``plan``'s epochs: ``run_epoch(epoch)`` trains one pass; with ``keep`` "best validation
    epoch", ``validate()`` gives the macro-F1 after each and ``snapshot()`` is taken at every new best;
    with "last epoch" validation is never read and the snapshot is the last epoch's. Returns
    (snapshot, its epoch, its validation macro-F1 or None)."""
    best, best_epoch, best_f1 = None, 0, -1.0
    for epoch in range(1, plan["epochs"] + 1):
        run_epoch(epoch)
        if plan["keep"] == "last epoch":
            continue
        f1 = validate()
        if f1 > best_f1:
            best, best_epoch, best_f1 = snapshot(), epoch, f1
    if plan["keep"] == "last epoch":
        return snapshot(), plan["epochs"], None
    return best, best_epoch, best_f1


def finetune_rows(scorer: Any, data: dict[str, dict[str, Split]], *, train_modalities: Sequence[str],
                  test_modalities: Sequence[str], epochs: int, batch_size: int, bootstrap: int, confidence: float,
                  seed: int, seeds: int = 1, schedule: str = "quick", progress: bool = True) -> list[dict]:
    """Fine-tune a copy of a dual encoder with a linear head on ``[u, v, u*v, |u-v|]`` (the probe's
    features, computed by the model in training mode), one copy per task, training modality and seed
    (``seed`` ... ``seed + seeds - 1``: the head's initial weights, the order of the rows and the
    bootstrap); Adam, for the schedule's epochs (:func:`schedule_plan`: ``"quick"`` keeps the epoch
    with the best ``validation`` macro-F1 of ``epochs``, ``"paper"`` trains 80 and keeps the last).
    Runs under ``accelerate`` (``Accelerator.prepare``/``backward``) when it is installed, else in
    plain torch. The scorer's own model is not touched (the feature cache stays valid)."""
    import copy

    import torch

    from ..scorers.base import DualScorer

    if not isinstance(scorer, DualScorer) or not hasattr(scorer, "tokenize"):
        raise SettingError(f"finetune=True supports dual encoders; model {scorer.model_id!r} is family {scorer.family!r}")
    try:
        from accelerate import Accelerator

        accelerator = Accelerator(cpu=str(scorer.device).startswith("cpu"))
    except ImportError:
        accelerator = None
    say = (lambda *a: print(*a, file=sys.stderr)) if progress else (lambda *a: None)
    plan = schedule_plan(schedule, epochs)
    rows: list[dict] = []
    for task, by_split in data.items():
        tests = [s for s in by_split if s.startswith("test")]
        for train_m in train_modalities:
            for sd in range(seed, seed + seeds):
                mkw = {"bootstrap": bootstrap, "confidence": confidence, "seed": sd}
                torch.manual_seed(sd)
                model = copy.deepcopy(scorer.model).train()
                dim = int(scorer.encode_texts(["a"]).shape[1])
                head = torch.nn.Linear(4 * dim, 1)
                opt = torch.optim.Adam(list(model.parameters()) + list(head.parameters()), lr=FINETUNE_LR)
                if accelerator is not None:
                    model, head, opt = accelerator.prepare(model, head, opt)
                enc = _Encoder(scorer, model)
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

                def snapshot() -> tuple[dict, dict]:
                    return (copy.deepcopy(_unwrap(model, accelerator).state_dict()),
                            copy.deepcopy(_unwrap(head, accelerator).state_dict()))

                kept, epoch, val_f1 = train_epochs(
                    plan, run_epoch, lambda: macro_f1(_predict(enc, head, val, train_m, batch_size) > 0.5, val.labels),
                    snapshot)
                _unwrap(model, accelerator).load_state_dict(kept[0])
                _unwrap(head, accelerator).load_state_dict(kept[1])
                for m in test_modalities:
                    for split in tests:
                        sc = measure(_predict(enc, head, by_split[split], m, batch_size), by_split[split].labels, **mkw)
                        rows.append(_row(task, train_m, split, sc, train_modality=train_m, test_modality=m,
                                         transfer="same" if m == train_m else "zero-shot", train_size=len(train),
                                         l2=None, classifier="finetune", epoch=epoch, seed=sd))
                said = (f"best epoch {epoch} of {plan['epochs']} (validation macro-F1 {100 * val_f1:.1f})"
                        if val_f1 is not None else f"{plan['epochs']} epochs, the last kept")
                say(f"finetune: {task} on {train_m}, seed {sd}: {said} in {time.perf_counter() - t0:.1f}s")
    return rows


def _unwrap(module: Any, accelerator: Any) -> Any:
    return accelerator.unwrap_model(module) if accelerator is not None else module


class _Encoder:
    """The probe's features computed by a trainable copy of a dual encoder. Images are decoded and
    preprocessed per batch (a whole split's pixel tensors would be ~0.6 MB per row at 224 px)."""

    def __init__(self, scorer: Any, model: Any) -> None:
        self.scorer, self.model = scorer, model

    def _images(self, split: Split, idx: np.ndarray) -> Any:
        from ..dataset.images import to_pil

        pils = [to_pil(image, where=f"{split.task}/{split.split} row {int(i)}")
                for i, image in zip(idx, split.images_at(idx))]
        return self.scorer.preprocess_images(pils)

    def _texts(self, texts: list[str]) -> Any:
        from ..scorers.dual_encoder import embedding_of

        inputs = self.scorer._to_device(self.scorer.tokenize(texts))
        return torch_normalise(embedding_of(self._net().get_text_features(**inputs)))

    def _net(self) -> Any:
        return getattr(self.model, "module", self.model)

    def features(self, split: Split, idx: np.ndarray, modality: str) -> Any:
        from ..scorers.dual_encoder import embedding_of

        v = self._texts(split.texts_at("query", idx))
        if modality in ("image", "both"):
            inputs = self.scorer._to_device(self._images(split, idx))
            img = torch_normalise(embedding_of(self._net().get_image_features(**inputs)))
        if modality in ("caption", "both"):
            cap = self._texts(split.texts_at("caption", idx))
        u = img if modality == "image" else cap if modality == "caption" else torch_normalise(img + cap)
        import torch

        return torch.cat([u, v, u * v, (u - v).abs()], dim=1)


def torch_normalise(x: Any) -> Any:
    return x.float() / x.float().norm(dim=-1, keepdim=True).clamp_min(1e-12)


def _predict(enc: _Encoder, head: Any, split: Split, modality: str, batch_size: int) -> np.ndarray:
    import torch

    enc.model.eval()
    out = []
    with torch.no_grad():
        for start in range(0, len(split), batch_size):
            idx = np.arange(start, min(start + batch_size, len(split)))
            out.append(torch.sigmoid(head(enc.features(split, idx, modality)).squeeze(-1)).float().cpu().numpy())
    enc.model.train()
    return np.concatenate(out)
