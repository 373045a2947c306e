"""Scorer families, one module each; see ``base.py`` for the contract and the registry."""

from .base import DuplicateFamilyError, UnknownFamilyError, families, get_family, register, unregister  # noqa: F401
from .controls import apply_control  # noqa: F401
from .loading import ModelNotFoundError, load_scorer  # noqa: F401
