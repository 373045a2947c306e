"""``vlprobe probe``: TraVLR's protocol on a model's frozen features (:mod:`vlprobe.probing`); each flag's ``dest``
and default are the keyword's of :func:`vlprobe.probe` (``--out`` aside: the command always writes)."""

from __future__ import annotations

import argparse
from pathlib import Path

from . import add_command

HELP = "TraVLR's protocol: train a probe on one modality's features, test on image/caption/both (macro-F1)"


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "probe", HELP, run, (
        "Train a classifier on a frozen model's features with the scene given as an image, a caption or "
        "both; test it in and out of distribution on every modality (cross-modal transfer), with "
        "learning curves and text-only baselines. Features are computed once and cached."))
    from ..cli import add_run_options, batch_size
    from ..defaults import BATCH_SIZE
    from ..probing.settings import CLASSIFIERS, DEFAULT_DATASET, DEFAULT_OUT, MAX_EPOCHS, MAX_SEEDS, MODALITIES, SCHEDULES
    from ..storage.locations import DEFAULT_MODEL

    p.add_argument("--dataset", dest="datasets", default=DEFAULT_DATASET, metavar="FOLDER_OR_HUB_ID",
                   help=f"TraVLR-shaped dataset folder or Hub id (default: {DEFAULT_DATASET}, the repository's build)")
    p.add_argument("--config", dest="configs", default="all", metavar="CONFIG",
                   help="task(s), comma-separated, or 'all' (default)")
    p.add_argument("--model", default=DEFAULT_MODEL, help=f"model folder or Hub id (default: {DEFAULT_MODEL})")
    for which in ("train", "test"):
        p.add_argument(f"--{which}-modality", dest=f"{which}_modalities", default=MODALITIES, metavar="MODALITIES",
                       help=f"modalities to {which} on, comma-separated (default: {','.join(MODALITIES)})")
    p.add_argument("--train-size", dest="train_sizes", metavar="N,N,...", help="learning curve: training rows, "
                   "comma-separated (the full train split is always added)")
    p.add_argument("--few-shot", type=int, default=0, metavar="N", help="after zero-shot transfer, train further on "
                   "N rows of the unseen modality (paper: 200)")
    p.add_argument("--classifier", default="logreg", choices=CLASSIFIERS, help="probe: logreg (default) or mlp")
    p.add_argument("--no-text-baseline", dest="text_baseline", action="store_false", help="skip the text-only "
                   "baseline (dual encoders)")
    p.add_argument("--finetune", action="store_true", help="also fine-tune a copy of the model (dual encoders) with "
                   "a linear head, per task and training modality")
    p.add_argument("--epochs", type=int, default=3, help=f"fine-tuning epochs of --schedule quick; the best on "
                   f"validation is kept (default 3; --schedule paper always runs 80; at most {MAX_EPOCHS:,})")
    p.add_argument("--schedule", default="quick", choices=SCHEDULES, help="fine-tuning schedule: quick (--epochs, "
                   "the best on validation kept: a departure from the paper) or paper (80 epochs, no early stopping, "
                   "as the paper)")
    p.add_argument("--seeds", type=int, default=3, metavar="N", help=f"runs per setting, seeds seed..seed+N-1; "
                   f"tables show mean and sd (the paper: 3; at most {MAX_SEEDS})")
    p.add_argument("--batch-size", type=batch_size, default=BATCH_SIZE, metavar="N|auto",
                   help=f"inputs per forward pass, or auto (default {BATCH_SIZE})")
    p.add_argument("--out", default=DEFAULT_OUT, help=f"output folder (default: {DEFAULT_OUT})")
    add_run_options(p)


def run(args: argparse.Namespace) -> int:
    from ..cli import keywords
    from ..probing import format_report, probe

    result = probe(**keywords(args))
    print(format_report(result))
    written = sorted(p.name for p in Path(args.out).iterdir())
    print(f"wrote {len(written)} files to {args.out}: " + ", ".join(written))
    return 0
