"""``vlprobe list``: the catalogue, as lm-evaluation-harness's ``--tasks list``; ``--dataset``: one dataset's."""

from __future__ import annotations

import argparse
from pathlib import Path

from . import add_command

HELP = "the catalogue: benchmarks vlprobe builds, dataset folders found, model families and architectures"


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "list", HELP, run, (
        "The catalogue: every benchmark `vlprobe build` makes (its configs, what the build needs, where it is "
        "built), every dataset folder found (here, $VLPROBE_ROOT, and <cache>/datasets, where `vlprobe build` "
        "writes outside a clone) with its configs and splits, the model families with their architectures, "
        "and the bundled model."))
    p.add_argument("--dataset", default=None, metavar="FOLDER_OR_HUB_ID",
                   help="list this dataset's configs and splits (a Hub id needs the network)")
    p.add_argument("--root", default=None,
                   help="look for dataset folders here instead of the working directory ($VLPROBE_ROOT and the "
                        "cache are looked in too)")


def describe(folder: Path, builder: bool) -> str:
    """A dataset folder's configs and splits in one line, with those not built (``builder``: it has one)."""
    from ..dataset.reader import built_configs, config_splits, declared_configs

    declared = [c.name for c in declared_configs(folder)] if (folder / "README.md").is_file() else []
    built = built_configs(folder) if declared else []
    parts = [f"{c} ({', '.join(config_splits(folder, c))})" for c in built]
    unbuilt = [c for c in declared if c not in built]
    if unbuilt:
        how = f", `vlprobe build {folder.resolve().name}`" if builder else ""
        parts.append(f"not built{how}: {', '.join(unbuilt)}")
    return "; ".join(parts) or "no config declared in its README.md card"


def dataset_folders(root: Path) -> list[Path]:
    """Every folder directly under ``root`` holding a vlprobe.yaml."""
    children = sorted(root.iterdir()) if root.is_dir() else []
    return [folder for folder in children if folder.is_dir() and (folder / "vlprobe.yaml").is_file()]


def run(args: argparse.Namespace) -> int:
    from ..builders import builders
    from ..dataset.reader import list_splits
    from ..dataset.splits import select_configs
    from ..errors import ArgumentError, first_line
    from ..scorers.base import families

    if args.dataset:
        local = Path(args.dataset)
        if local.is_dir() and (local / "vlprobe.yaml").is_file():
            print(f"{args.dataset}: {describe(local, local.resolve().name in builders())}")
            return 0
        configs = select_configs(args.dataset, "*", None)  # a DatasetError in one line when it cannot be read
        print(f"{args.dataset}: {len(configs)} config(s) (--config NAME, --split NAME)")
        for config in configs:
            try:
                splits = ", ".join(list_splits(args.dataset, config))
            except Exception as err:  # one unreadable config does not hide the others
                splits = f"cannot be read ({first_line(err)})"
            print(f"  {config:<28} {splits}")
        return 0
    root = Path(args.root) if args.root else Path.cwd()
    if not root.is_dir():
        raise ArgumentError("root", str(root), "is not a folder")
    print("\n".join(catalogue_lines(root, families())))
    return 0


# ---- the catalogue ------------------------------------------------------------------------------------------




def catalogue_lines(root: Path, fams: dict) -> list[str]:
    import textwrap

    from ..benchmarks import benchmarks
    from ..builders import builders
    from ..names import is_built, search_roots
    from ..storage.locations import MINI_CLIP, datasets_home, shipped_model

    wrap = textwrap.TextWrapper(width=118, initial_indent="      ", subsequent_indent="        ")
    lines = ["benchmarks vlprobe can build (`vlprobe build NAME`; then `--dataset NAME` from any folder):"]
    roots = search_roots(root)
    known = builders()
    for name, builder in sorted(known.items()):
        lines.append(f"  {name}")
        lines += wrap.wrap(builder.help)
        configs = [d.name for d in builder.config_decls()]
        if configs:
            more = f", ... ({len(configs)} in all)" if len(configs) > 6 else ""
            lines += wrap.wrap(f"configs: {', '.join(configs[:6])}{more}")
        if builder.needs:
            lines += wrap.wrap(f"needs: {builder.needs}")
        if name != "folder":
            built = next((base / name for base in roots if is_built(base / name)), "no")
            lines.append(f"      built: {built}")
    hub = [b for b in benchmarks().values() if b.builder is None and b.hub_id]
    if hub:
        lines += ["", "benchmarks read from the Hub (`--dataset ID`; online, or a copy in the Hugging Face cache):"]
        lines += [f"  {b.name}  {b.hub_id}: {b.title}" for b in sorted(hub, key=lambda b: b.name)]
    lines += ["", "dataset folders found (evaluate one with --dataset NAME or FOLDER), in the order a name finds them:"]
    for base in roots:
        folders = dataset_folders(base)
        where = "the cache, where `vlprobe build` writes outside a clone" if base == datasets_home() else (
            "$VLPROBE_ROOT" if base != root else "the working folder" if root.resolve() == Path.cwd().resolve() else
            "--root")
        lines.append(f"  {base} ({where}):" if folders else f"  {base} ({where}): none")
        width = max([len(d.name) for d in folders] + [8])
        lines += [f"    {d.name:<{width}}  {describe(d, d.name in known)}" for d in folders]
    lines += ["", "model families (--family NAME; detected from the model's config.json when left out):"]
    from ..scorers.base import _AUTO_CLASSES

    for name in sorted(fams):
        fam = fams[name]
        desc = (fam.description or "").strip().splitlines()
        lines.append(f"  {name}  {desc[0] if desc else ''}".rstrip())
        archs = ", ".join(sorted(fam.architectures))
        tables = " and ".join(f"any {_AUTO_CLASSES.get(t, t)} class" for t in fam.auto_mappings)
        said = "; ".join(p for p in (archs, tables) if p)
        if said:
            lines += wrap.wrap(f"architectures: {said}")
    model = shipped_model()
    lines += ["", f"bundled model: {MINI_CLIP} (--model {MINI_CLIP}, model={MINI_CLIP!r}): "
                  f"{model if model is not None else 'not in this installation'}"]
    return lines
