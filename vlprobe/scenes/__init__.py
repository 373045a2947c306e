"""Synthetic scenes: TraVLR's 6x6-grid world, rendered offline, with captions and a truth function, e.g.::

    rng = random.Random(0)
    scene = scenes.sample_scene(rng, n_objects=(2, 8))
    image = scenes.render(scene)                # PIL.Image, 500x500 RGB
    caption = scenes.travlr_caption(scene, rng) # "Columns, left to right, ... There is a red circle at A 1, ..."
    stmt, label = scenes.sample_statement(scene, rng, label=False)   # a false statement

Training scenes are disjoint from an evaluation set when their :meth:`Scene.key` differs from every evaluation
row's ``Scene.from_records(row["objects"]).key()``.
"""

from .captions import PREFIX, object_phrase, travlr_caption
from .model import ALL_COLOURS, ALL_SHAPES, COLOURS, GRID, RGB, SHAPES, Scene, SceneError, SceneObject, sample_scene
from .render import cell_centre, render, render_png
from .statements import (
    And,
    Compare,
    Count,
    Exists,
    Quantifier,
    Spatial,
    Statement,
    StatementError,
    describe,
    foil,
    sample_statement,
    statement_from_dict,
    truth,
)

__all__ = [
    "ALL_COLOURS", "ALL_SHAPES", "COLOURS", "GRID", "PREFIX", "RGB", "SHAPES", "And", "Compare", "Count", "Exists",
    "Quantifier", "Scene", "SceneError", "SceneObject", "Spatial", "Statement", "StatementError", "cell_centre",
    "describe", "foil", "object_phrase", "render", "render_png", "sample_scene", "sample_statement",
    "statement_from_dict", "travlr_caption", "truth",
]
