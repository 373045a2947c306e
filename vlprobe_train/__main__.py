"""Train vlprobe's offline default model, mini-clip, on the synthetic scenes (CPU, about 23 min for the shipped settings).

    .venv/bin/python -m vlprobe_train                       # the shipped model -> models/mini-clip
    .venv/bin/python -m vlprobe_train --scenes 2000 --epochs 1 --out /tmp/mc   # a quick trial

The logic is in :mod:`vlprobe_train.mini_clip`; this entry point parses arguments, trains, saves, then
scores the saved folder on held-out scenes through ``load_scorer`` (the path ``vlprobe evaluate`` takes).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from vlprobe_train import mini_clip


def write_card(out: Path, results: str | None, root: str = ".", note: str | None = None) -> None:
    log = out / "training_log.json"
    if not log.is_file():
        raise SystemExit(f"error: {log} is missing (train first)")
    record = json.loads(log.read_text())
    # checked again now, against the built folders as they are: kept in the log and stated in the card
    if note:
        record["note"] = note
    record["checks"] = {"disjointness": mini_clip.disjointness_check(out, root),
                        "text_lengths": mini_clip.text_lengths(out, root)}
    log.write_text(json.dumps(record, indent=1) + "\n")
    table = mini_clip.instruments_table(results) if results else None
    card = out / "README.md"
    # the card counts its own size: write it once, measure the folder, write it again
    for _ in range(2):
        record["megabytes"] = mini_clip.folder_megabytes(out)
        card.write_text(mini_clip.model_card(record, table))


def main(argv: list[str] | None = None) -> int:
    defaults = mini_clip.TrainConfig()
    p = argparse.ArgumentParser(prog="python -m vlprobe_train", description=__doc__.splitlines()[0])
    p.add_argument("--out", default="models/mini-clip", help="folder to save the model in (default: models/mini-clip)")
    p.add_argument("--root", default=".", help="repository root: built dataset folders under it are excluded too")
    for field in dataclasses.fields(defaults):
        p.add_argument(f"--{field.name.replace('_', '-')}", type=type(field.default), default=field.default,
                       help=f"default: {field.default}")
    p.add_argument("--no-final-eval", action="store_true", help="skip scoring the saved model on held-out items")
    p.add_argument("--card-only", action="store_true",
                   help="do not train: rewrite OUT/README.md from OUT/training_log.json (and --results)")
    p.add_argument("--note", default=None, help="a sentence about how the run was made, kept in the log and the card")
    p.add_argument("--results", default=None, metavar="RESULTS_JSON",
                   help="a `vlprobe evaluate` results.json of this model, tabulated in the card")
    args = p.parse_args(argv)
    out = Path(args.out)
    if args.card_only:
        write_card(out, args.results, args.root, args.note)
        return 0
    cfg = mini_clip.TrainConfig(**{f.name: getattr(args, f.name) for f in dataclasses.fields(defaults)})
    record = mini_clip.train(cfg, args.out, root=args.root)
    summary = {k: record[k] for k in ("parameters", "training_scenes", "steps", "train_seconds", "total_seconds",
                                      "final_loss", "final_logit_scale")}
    if not args.no_final_eval:
        results = mini_clip.evaluate_saved(args.out, n=cfg.heldout_per_kind, seed=cfg.seed, root=args.root)
        summary["heldout_via_load_scorer"] = results
        log = Path(args.out) / "training_log.json"
        data = json.loads(log.read_text())
        data["heldout_via_load_scorer"] = results
        log.write_text(json.dumps(data, indent=1) + "\n")
    write_card(out, args.results, args.root, args.note)
    summary["megabytes"] = round(mini_clip.folder_megabytes(out), 2)
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
