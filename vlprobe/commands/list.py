"""``vlprobe list``: what can be evaluated here, as lm-evaluation-harness's ``--tasks list``.

    vlprobe list                      the dataset folders under the working directory (or
                                      $VLPROBE_ROOT): built configs and their splits, the ones
                                      still to build, and the model families
    vlprobe list --dataset FOLDER     one dataset folder's (or, online, Hub id's) configs and splits
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

HELP = "list the dataset folders, configs and splits that can be evaluated here, and the model families"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "list",
        help=HELP,
        description=(
            "List what `vlprobe evaluate` can score here: every dataset folder under the working directory (or "
            "$VLPROBE_ROOT) with a vlprobe.yaml, its configs and splits (and the configs still to build, with the "
            "command that builds them), and the scorer families --family accepts. With --dataset: that "
            "dataset's configs and splits."
        ),
    )
    p.add_argument("--dataset", default=None, metavar="FOLDER_OR_HUB_ID",
                   help="list this dataset's configs and splits (a Hub id needs the network)")
    p.add_argument("--root", default=None,
                   help="where to look for dataset folders (default: $VLPROBE_ROOT, else the working directory)")
    p.set_defaults(func=run)


def dataset_folders(root: str | os.PathLike) -> list[dict]:
    """Every folder directly under ``root`` holding a vlprobe.yaml: {name, path, built: {config:
    [splits]}, unbuilt: [configs], build: the `vlprobe build` name or None}."""
    from ..builders import builders
    from ..dataset_folder import _declared_configs, built_configs, config_splits

    known = builders()
    out = []
    for folder in sorted(Path(root).iterdir()) if Path(root).is_dir() else []:
        if not folder.is_dir() or not (folder / "vlprobe.yaml").is_file():
            continue
        declared = [c["config_name"] for c in _declared_configs(folder)] if (folder / "README.md").is_file() else []
        built = built_configs(folder) if declared else []
        out.append({
            "name": folder.name, "path": str(folder),
            "built": {c: config_splits(folder, c) for c in built},
            "unbuilt": [c for c in declared if c not in built],
            "build": folder.name if folder.name in known else None,
        })
    return out


def _describe(d: dict) -> str:
    parts = [f"{c} ({', '.join(s)})" for c, s in d["built"].items()]
    if d["unbuilt"]:
        how = f", `vlprobe build {d['build']}`" if d["build"] else ""
        parts.append(f"not built{how}: {', '.join(d['unbuilt'])}")
    return "; ".join(parts) or "no config declared in its README.md card"


def run(args: argparse.Namespace) -> int:
    from ..dataset_folder import list_splits
    from ..errors import ArgumentError
    from ..evaluation import select_configs
    from ..scorers.base import families

    if args.dataset:
        local = Path(args.dataset)
        if local.is_dir() and (local / "vlprobe.yaml").is_file():
            d = next(x for x in dataset_folders(local.parent) if Path(x["path"]) == local or x["name"] == local.name)
            print(f"{args.dataset}: {_describe(d)}")
            return 0
        configs = select_configs(args.dataset, "*", None)  # a DatasetError in one line when it cannot be read
        print(f"{args.dataset}: {len(configs)} config(s) (--config NAME, --split NAME)")
        for config in configs:
            try:
                splits = ", ".join(list_splits(args.dataset, config))
            except Exception as err:  # one unreadable config does not hide the others
                first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
                splits = f"cannot be read ({first})"
            print(f"  {config:<28} {splits}")
        return 0
    root = Path(args.root or os.environ.get("VLPROBE_ROOT") or Path.cwd())
    if not root.is_dir():
        raise ArgumentError("root", str(root), "is not a folder")
    found = dataset_folders(root)
    if found:
        print(f"dataset folders under {root} (evaluate them with --dataset FOLDER --config NAME):")
    else:
        print(f"no dataset folder (a folder with a vlprobe.yaml) under {root}")
    width = max([len(d["name"]) for d in found] + [8])
    for d in found:
        print(f"  {d['name']:<{width}}  {_describe(d)}")
    fams = families()
    print("\nmodel families (--family NAME; detected from the model's config.json when left out):")
    fw = max([len(n) for n in fams] + [8])
    for name in sorted(fams):
        desc = (fams[name].description or "").strip().splitlines()
        print(f"  {name:<{fw}}  {desc[0] if desc else ''}".rstrip())
    return 0
