"""Scorer families, one module each; see ``base.py`` for the contract and the registry."""

from .base import DualScorer, PairScorer, PairScores, Scorer, families, get_family, register  # noqa: F401
