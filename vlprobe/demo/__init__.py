"""The Gradio Space's logic, testable without a browser (``space/app.py`` builds the page from it); thin over the
library: scorers load the models, the engine scores, :mod:`vlprobe.metric` gives every number."""

from .settings import Settings, SpaceError

__all__ = ["Settings", "SpaceError"]
