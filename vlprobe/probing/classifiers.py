"""The probes (logistic regression, a one-hidden-layer MLP) fitted a block of rows at a time; L2 chosen on validation."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..storage.feature_store import Features, row_blocks
from .metrics import macro_f1
from .settings import L2_GRID

if TYPE_CHECKING:
    import torch


@dataclass
class Probe:
    """A trained classifier with its standardisation; ``params``: (penalised) weights at even positions, biases at odd."""

    kind: str
    mean: np.ndarray
    std: np.ndarray
    params: tuple[torch.Tensor, ...]
    l2: float

    def logits(self, x: Features) -> np.ndarray:
        import torch

        parts = []
        with torch.no_grad():
            for block in row_blocks(x):
                parts.append(_forward(self.params, _standardised(block, self.mean, self.std)).numpy())
        return np.concatenate(parts) if parts else np.empty(0, np.float32)

    def proba(self, x: Features) -> np.ndarray:
        return 0.5 * (1.0 + np.tanh(0.5 * self.logits(x).astype(np.float64)))  # the logistic, without overflow


def _standardised(block: np.ndarray, mean: np.ndarray, std: np.ndarray) -> torch.Tensor:
    import torch

    return torch.from_numpy(((block - mean) / std).astype(np.float32))


def _moments(x: Features) -> tuple[np.ndarray, np.ndarray]:
    """Per-feature mean and standard deviation (+1e-6), in float64 over two passes of blocks; as float32."""
    n = len(x)
    total = sum(block.sum(axis=0, dtype=np.float64) for block in row_blocks(x))
    mean = total / n
    sq = sum(np.square(block - mean).sum(axis=0) for block in row_blocks(x))
    std = np.sqrt(sq / n)
    return mean.astype(np.float32), (std + 1e-6).astype(np.float32)


def _forward(params: Sequence[torch.Tensor], z: torch.Tensor) -> torch.Tensor:
    import torch

    if len(params) == 2:  # logistic regression
        w, b = params
        return z @ w + b
    w1, b1, w2, b2 = params
    return torch.relu(z @ w1 + b1) @ w2 + b2


def _init_params(kind: str, d: int, seed: int, hidden: int = 128) -> tuple[torch.Tensor, ...]:
    import torch

    if kind == "logreg":
        return torch.zeros(d), torch.zeros(())
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(d, hidden, generator=g) / math.sqrt(d), torch.zeros(hidden),
            torch.randn(hidden, generator=g) / math.sqrt(hidden), torch.zeros(()))


NEWTON_MAX_DIM = 2048  # above this many features, L-BFGS instead of Newton's method


def fit(kind: str, x: Features, y: np.ndarray, l2: float, *, seed: int = 0, start: Probe | None = None,
        max_iter: int = 100) -> Probe:
    """Train a probe on (x, y) a block at a time: mean BCE + ``l2/2 * ||w - w0||^2`` (``w0``: 0, or ``start``'s weights:
    L2-SP, for few-shot transfer); logistic regression by Newton's method (else L-BFGS past NEWTON_MAX_DIM), MLP by Adam."""
    import torch

    if start is not None:
        mean, std = start.mean, start.std
    else:
        mean, std = _moments(x)
    torch.manual_seed(seed)
    init = start.params if start is not None else _init_params(kind, x.shape[1], seed)
    anchor = tuple(v.detach().clone() if start is not None else torch.zeros_like(v) for v in init)
    if kind == "logreg" and x.shape[1] <= NEWTON_MAX_DIM:
        return Probe(kind, mean, std, _newton(x, mean, std, y.astype(np.float64), l2, init, anchor, max_iter=max_iter),
                     l2)
    t = torch.from_numpy(y.astype(np.float32))
    n = len(t)
    params = [v.detach().clone().requires_grad_(True) for v in init]

    def loss_and_grad() -> float:
        total, a = 0.0, 0
        for block in row_blocks(x):
            part = torch.nn.functional.binary_cross_entropy_with_logits(
                _forward(params, _standardised(block, mean, std)), t[a:a + len(block)], reduction="sum") / n
            part.backward()
            total += float(part.detach())
            a += len(block)
        penalty = 0.5 * l2 * sum((((params[i] - anchor[i]) ** 2).sum() for i in range(0, len(params), 2)),
                                 torch.zeros(()))
        penalty.backward()
        return total + float(penalty.detach())

    if kind == "logreg":
        opt = torch.optim.LBFGS(params, lr=1.0, max_iter=max_iter, line_search_fn="strong_wolfe")

        def closure() -> torch.Tensor:
            opt.zero_grad()
            return torch.tensor(loss_and_grad())

        opt.step(closure)
    else:
        adam = torch.optim.Adam(params, lr=1e-2)
        for _ in range(max_iter * 3):
            adam.zero_grad()
            loss_and_grad()
            adam.step()
    return Probe(kind, mean, std, tuple(v.detach() for v in params), l2)


def _design(block: np.ndarray, mean: np.ndarray, std: np.ndarray) -> torch.Tensor:
    """[standardised rows (computed in float32, as the other solvers see them), 1] as float64."""
    import torch

    z = _standardised(block, mean, std).double()
    return torch.cat([z, torch.ones((len(block), 1), dtype=torch.float64)], dim=1)


def _newton(x: Features, mean: np.ndarray, std: np.ndarray, y: np.ndarray, l2: float, init: Sequence[torch.Tensor],
            anchor: Sequence[torch.Tensor], max_iter: int = 100, tol: float = 1e-7) -> tuple[torch.Tensor, ...]:
    """Newton's method with backtracking; memory is a block of rows and the (d+1)^2 Hessian, whatever the rows."""
    import torch

    t = torch.from_numpy(y)
    n, d = len(t), x.shape[1]
    theta = torch.cat([init[0].double().reshape(-1), init[1].double().reshape(1)])
    theta0 = torch.cat([anchor[0].double().reshape(-1), torch.zeros(1, dtype=torch.float64)])
    reg = torch.full((d + 1,), float(l2), dtype=torch.float64)
    reg[-1] = 0.0

    def evaluate(th: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        loss = torch.zeros((), dtype=torch.float64)
        grad = torch.zeros(d + 1, dtype=torch.float64)
        hess = torch.diag(reg + 1e-10)
        a = 0
        for block in row_blocks(x):
            X = _design(block, mean, std)
            tb = t[a:a + len(block)]
            a += len(block)
            z = X @ th
            loss += torch.nn.functional.binary_cross_entropy_with_logits(z, tb, reduction="sum") / n
            p = torch.sigmoid(z)
            grad += X.T @ (p - tb) / n
            hess += (X.T * (p * (1 - p) / n)) @ X
        diff = th - theta0
        return loss + 0.5 * (reg * diff ** 2).sum(), grad + reg * diff, hess

    current, grad, hess = evaluate(theta)
    for _ in range(max_iter):
        step = torch.linalg.solve(hess, grad)
        scale = 1.0
        while scale > 1e-4:  # backtracking: never increase the (convex) loss
            trial = theta - scale * step
            new, new_grad, new_hess = evaluate(trial)
            if new <= current:
                break
            scale /= 2
        else:
            break
        done = (current - new).abs() < tol * max(1.0, float(current.abs()))
        theta, current, grad, hess = trial, new, new_grad, new_hess
        if done or float(step.abs().max()) * scale < tol:
            break
    return theta[:-1].float(), theta[-1].float()


def select(kind: str, xtr: Features, ytr: np.ndarray, xval: Features, yval: np.ndarray, *, seed: int = 0,
           grid: Sequence[float] = L2_GRID) -> tuple[Probe, dict[float, float]]:
    """One probe per L2 strength, the best macro-F1 on validation kept (ties: the stronger L2)."""
    best, best_f1, curve = None, -1.0, {}
    for l2 in sorted(grid, reverse=True):
        p = fit(kind, xtr, ytr, l2, seed=seed)
        f1 = macro_f1(p.proba(xval) > 0.5, yval)
        curve[l2] = f1
        if f1 > best_f1 + 1e-12:
            best, best_f1 = p, f1
    assert best is not None  # the grid is not empty, and every macro-F1 is above -1
    return best, curve
