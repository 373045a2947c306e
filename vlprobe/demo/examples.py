"""Items to try: a one-click gallery of rendered scenes (one per item shape: pairwise, set, group),
and rows of the built dataset folders, read through the dataset-folder code and the folder's spec."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from ..items import Item, ItemError
from .settings import Settings, SpaceError

# (name, shape, scenes as (shape, colour, row, column) objects, captions, foils)
GALLERY = (
    ("Colour foil", "pairwise", ([("circle", "red", 1, 1), ("square", "blue", 3, 3)],),
     ["a red circle and a blue square"], ["a red circle and a green square"]),
    ("Two captions, two foils", "set", ([("triangle", "green", 2, 1)],),
     ["a green triangle", "there is a green triangle"], ["a yellow triangle", "there is a green circle"]),
    ("Swapped relation", "group", ([("circle", "red", 2, 0), ("square", "blue", 2, 3)],
                                   [("square", "blue", 2, 0), ("circle", "red", 2, 3)]),
     ["a red circle left of a blue square", "a blue square left of a red circle"], []),
)


def gallery_labels() -> list[str]:
    return [f"{name} ({shape})" for name, shape, *_ in GALLERY]


def gallery_example(index: int, folder: Path | None = None) -> tuple[str, str | None, str, str]:
    """(image 1 path, image 2 path or None, captions, foils) of a gallery example; the images are
    rendered by vlprobe's scene renderer into ``folder`` (a temporary folder by default)."""
    from ..scenes.model import Scene, SceneObject
    from ..scenes.render import render

    try:
        name, _, scenes, captions, foils = GALLERY[int(index)]
    except (IndexError, ValueError, TypeError):
        raise SpaceError(f"there is no example {index!r}") from None
    folder = Path(folder or tempfile.mkdtemp(prefix="vlprobe-examples-"))
    paths = []
    for k, objects in enumerate(scenes, 1):
        path = folder / f"example{int(index)}_{k}.png"
        if not path.is_file():
            render(Scene(objects=tuple(SceneObject(*o) for o in objects)), size=256).save(path)
        paths.append(str(path))
    return paths[0], (paths[1] if len(paths) > 1 else None), "\n".join(captions), "\n".join(foils)


# ---- dataset folders ----------------------------------------------------------------------------

def dataset_configs(settings: Settings, folder: str | None) -> list[str]:
    from ..dataset_folder import built_configs
    from ..errors import DatasetError

    try:
        return built_configs(settings.resolve_dataset(folder))
    except DatasetError as err:
        raise SpaceError(str(err)) from None


def dataset_splits(settings: Settings, folder: str | None, config: str | None) -> list[str]:
    from ..dataset_folder import config_splits
    from ..errors import DatasetError

    try:
        return config_splits(settings.resolve_dataset(folder), config or "")
    except DatasetError as err:
        raise SpaceError(str(err)) from None


def load_items(settings: Settings, folder: str | None, config: str | None, split: str | None = None,
               limit: int | None = None, start: int = 0) -> list[Item]:
    """Rows ``start .. start+limit`` of a config's split, made items by the folder's spec."""
    from ..dataset_folder import load_folder_split, undecoded_features
    from ..spec import SpecError, find_spec

    path = settings.resolve_dataset(folder)
    if not config:
        raise SpaceError(f"choose a config of {path.name!r}")
    split = split or dataset_splits(settings, folder, config)[0]
    try:
        spec = find_spec(str(path))
        ds = load_folder_split(path, config, split)  # never a stale cache after a rebuild
        for name, feature in ds.features.items():  # the engine hashes the encoded bytes and decodes them itself
            if feature != undecoded_features(feature):
                ds = ds.cast_column(name, undecoded_features(feature))
    except SpecError as err:
        raise SpaceError(str(err)) from None
    except (ValueError, FileNotFoundError) as err:
        raise SpaceError(f"cannot load {path.name}/{config}/{split}: {str(err).splitlines()[0]}") from None
    if not 0 <= start < len(ds):
        raise SpaceError(f"{path.name}/{config}/{split} has {len(ds)} row{'s' if len(ds) != 1 else ''}; "
                         f"row {start} does not exist")
    rows = ds.select(range(start, len(ds) if limit is None else min(len(ds), start + limit)))
    try:
        return list(spec.iter_items(rows, config=config))
    except (ItemError, SpecError) as err:
        raise SpaceError(str(err)) from None


def example_fields(settings: Settings, folder: str | None, config: str | None, index: Any) -> tuple[Any, Any, str, str]:
    """(image 1, image 2 or None, captions text, foils text) of one dataset row, for the Score tab."""
    from ..images import to_pil

    item = load_items(settings, folder, config, None, limit=1, start=int(index or 0))[0]
    gold = item.gold
    if item.m == 1:
        captions = [t for j, t in enumerate(item.texts) if gold[0, j]]
        foils = [t for j, t in enumerate(item.texts) if not gold[0, j]]
    elif item.m == 2 and all(gold[i].sum() == 1 for i in range(2)) and gold[0].argmax() != gold[1].argmax():
        captions = [item.texts[int(gold[i].argmax())] for i in range(2)]
        foils = [t for j, t in enumerate(item.texts) if not gold[:, j].any()]
    else:
        raise SpaceError(f"item {item.id!r} has {item.m} images and {item.n} texts, more than the Score tab "
                         "shows; score it in the Benchmark tab")
    if not foils and item.m == 1:
        raise SpaceError(f"item {item.id!r} has no foil (all its texts are true)")
    images = [to_pil(im, where=f"item {item.id!r}") for im in item.images]
    return images[0], (images[1] if item.m == 2 else None), "\n".join(captions), "\n".join(foils)
