"""Shared pieces of the probing tests (tests/test_probe.py, tests/test_probe_table2.py)."""

from __future__ import annotations

import numpy as np

from vlprobe import probing as P


def fake_features(seed: int = 0, n_feat: int = 6, shift: float = 1.5, noise: float | None = None) -> tuple[dict, dict]:
    """(data, features) of one task "t" whose first feature predicts the label (moved by ``shift`` up or down); each
    modality's features are the same, or each the same plus its own gaussian ``noise`` (that sd)."""
    rng = np.random.default_rng(seed)
    data, feats = {"t": {}}, {}
    for split, n in (("train", 80), ("validation", 40), ("test_ind", 40), ("test_ood", 40)):
        y = rng.random(n) < 0.5
        x = rng.normal(size=(n, n_feat)).astype(np.float32)
        x[:, 0] += np.where(y, shift, -shift)
        data["t"][split] = P.Split("t", split, y)
        for m in P.MODALITIES:
            feats[("t", split, m)] = x if noise is None else x + rng.normal(scale=noise, size=x.shape).astype(np.float32)
    return data, feats
