"""Scorer families, one module each; see ``base.py`` for the contract and the registry."""

from .base import (  # noqa: F401  # noqa: F401,E402
    DualScorer,
    DuplicateFamilyError,
    Family,
    PairScorer,
    PairScores,
    Scorer,
    ScoringError,
    UnknownFamilyError,
    families,
    get_family,
    register,
    unregister,
)
from .controls import CONTROLS, apply_control, mark_control  # noqa: F401,E402
from .loading import (  # noqa: F401,E402  # noqa: F401,E402
    MissingWeightsError,
    ModelNotFoundError,
    UnknownArchitectureError,
    UnmappedArchitectureError,
    detect_family,
    load_scorer,
)
