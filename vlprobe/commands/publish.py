"""``vlprobe publish dataset|metric|space``: validate a folder locally, then push it to the Hub (:mod:`vlprobe.publish`);
``--dry-run`` prints what would be uploaded and touches nothing."""

from __future__ import annotations

import argparse
from pathlib import Path

from . import add_command

HELP = "validate a dataset folder, the metric or the Space, then push it to the Hugging Face Hub"


def register(sub: argparse._SubParsersAction) -> None:
    parser = add_command(sub, "publish", HELP, run, "Validate locally, then HfApi.create_repo(exist_ok=True) + "
                         "upload_folder. Token: --token, else HF_TOKEN, else the stored login (`hf auth login`).")
    inner = parser.add_subparsers(dest="kind", metavar="KIND", required=True)

    p = inner.add_parser("dataset", help="a dataset folder (card + vlprobe.yaml + parquet) as a dataset repo")
    p.add_argument("folder", type=Path, help="the dataset folder, e.g. valse/ or the output of `vlprobe build folder`")
    p.add_argument("--rows", type=int, default=5, help="first rows of every config that must convert to items (default 5)")
    _common(p, "<org>/<name>, e.g. my-lab/valse")
    for kind, title, what, repo in (
        ("metric", "metric", "metric/ as a Space, so that evaluate.load('<org>/valse_metric') finds it",
         "<org>/valse_metric: the last part must equal the module's file name"),
        ("space", "Space", "space/ (the Gradio demo) as a Space", "<org>/<name>, e.g. my-lab/vlprobe-demo"),
    ):
        p = inner.add_parser(kind, help=what)
        p.add_argument("--folder", type=Path, default=None,
                       help=f"the {title} folder (default: ./{kind}, else the one this vlprobe ships)")
        _common(p, repo)


def _common(p: argparse.ArgumentParser, repo_help: str) -> None:
    p.add_argument("--repo", required=True, help=repo_help)
    p.add_argument("--dry-run", action="store_true", help="validate and print what would be uploaded; touch nothing")
    p.add_argument("--private", action="store_true", help="create the repo private (an existing repo keeps its visibility)")
    p.add_argument("--token", default=None, help="a Hub write token (default: HF_TOKEN, else the stored login)")
    p.add_argument("--message", default=None, help="commit message")


def _default_folder(given: Path | None, name: str) -> Path:
    """``--folder``, else ``./<name>``, else the copy this vlprobe ships."""
    from ..errors import SettingError
    from ..storage.locations import shipped

    if given is not None:
        return given
    here = Path(name)
    if here.is_dir():
        return here
    folder = shipped(name)
    if folder is None:
        raise SettingError(f"--folder: there is no ./{name} here and this vlprobe installation ships no {name}/ "
                           f"folder; pass --folder or run from a clone of vlprobe")
    return folder


def run(args: argparse.Namespace) -> int:
    from ..publish import plan_dataset, plan_metric, plan_space, publish

    if args.kind == "dataset":
        print(f"checking dataset folder {args.folder} ...")
        plan = plan_dataset(args.folder, args.repo, rows=args.rows)
        print("ok: card YAML, licence, features vs parquet, embedded image bytes, vlprobe.yaml")
    else:
        folder = _default_folder(args.folder, args.kind)
        print(f"checking {'metric' if args.kind == 'metric' else 'Space'} folder {folder} ...")
        plan = (plan_metric if args.kind == "metric" else plan_space)(folder, args.repo)
    for note in plan.notes:
        print(f"  ok: {note}")
    publish(plan, private=args.private, token=args.token, dry_run=args.dry_run, commit_message=args.message)
    return 0
