"""Scorer families, one module each; see ``base.py`` for the contract and the registry."""

from .base import DualScorer, PairScorer, PairScores, Scorer, families, get_family, register  # noqa: F401
from .base import DuplicateFamilyError, Family, ScoringError, UnknownFamilyError, unregister  # noqa: F401,E402
from .loading import ModelNotFoundError, detect_family, load_scorer  # noqa: F401,E402
from .loading import MissingWeightsError, UnknownArchitectureError, UnmappedArchitectureError  # noqa: F401,E402
from .controls import CONTROLS, apply_control, mark_control  # noqa: F401,E402
