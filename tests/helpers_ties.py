"""A dataset folder whose texts differ only past a short text limit, and the shipped mini-clip cut to
that limit: the inputs of the "no silent zeros" tests (issue 25)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import datasets
from helpers import png

from vlprobe.dataset.folder import ConfigDecl, card_metadata, write_card, write_split

REPO = Path(__file__).resolve().parents[1]
# Ten words the shipped model knows, longer than LIMIT tokens: texts that start with it and differ
# after it are one input to a text tower that reads LIMIT tokens.
PREFIX = "there is a red circle and a blue square and a green star and"
LIMIT = 8


def truncating_mini_clip(dst: Path, max_length: int = LIMIT) -> Path:
    """A copy of models/mini-clip whose tokenizer reads ``max_length`` tokens (the weights as shipped)."""
    folder = Path(dst) / f"mini-clip-{max_length}"
    if not folder.is_dir():
        shutil.copytree(REPO / "models" / "mini-clip", folder)
        config = folder / "tokenizer_config.json"
        data = json.loads(config.read_text())
        data["model_max_length"] = max_length
        config.write_text(json.dumps(data, indent=2))
    return folder


def tie_folder(root: Path, n: int = 6) -> Path:
    """Config ``collapsed``: every caption and foil differ only after PREFIX (all items tie at LIMIT
    tokens); config ``partly``: the first half like that, the rest differ in their first word."""
    folder = Path(root) / "ties"
    feats = datasets.Features({"id": datasets.Value("string"), "image": datasets.Image(),
                               "caption": datasets.Value("string"), "foil": datasets.Value("string"),
                               "kind": datasets.Value("string")})
    colors = [(40 * i % 256, 120, 200 - 20 * i) for i in range(n)]

    def rows(collapsed_from: int) -> dict:
        return {
            "id": [f"r{i}" for i in range(n)],
            "image": [{"bytes": png(colors[i]), "path": None} for i in range(n)],
            "caption": [f"{PREFIX} a red circle" if i < collapsed_from else "red circle" for i in range(n)],
            "foil": [f"{PREFIX} a blue square" if i < collapsed_from else "blue square" for i in range(n)],
            "kind": ["even" if i % 2 == 0 else "odd" for i in range(n)],
        }

    decls = [ConfigDecl("collapsed", feats, default=True), ConfigDecl("partly", feats)]
    write_card(folder, card_metadata(decls, license="cc0-1.0", pretty_name="ties"), "# ties\n\nFor tests.")
    write_split(folder, "collapsed", "test", datasets.Dataset.from_dict(rows(n), features=feats))
    write_split(folder, "partly", "test", datasets.Dataset.from_dict(rows(n // 2), features=feats))
    (folder / "vlprobe.yaml").write_text("id: id\nimages: [image]\ntexts: [caption, foil]\ngold: [[1, 0]]\n"
                                         "tags: [kind]\n")
    return folder
