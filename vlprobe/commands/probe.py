"""``vlprobe probe``: TraVLR's protocol (train on one modality, test on each) on a model's frozen features.

    vlprobe probe --dataset travlr --config all --model models/mini-clip \\
        --train-modality image,caption,both --test-modality image,caption,both --train-size 100,200 --out runs/probe

Parses the arguments and calls :func:`vlprobe.probing.probe` (also ``vlprobe.probe``), which checks every
setting and --out before anything is loaded and writes the output folder as one unit; see that module for
the protocol. Writes results.json (rows + provenance + tables), results.csv, tables.md and learning-curve plots.
"""

from __future__ import annotations

import argparse
from pathlib import Path

DEFAULT_OUT = "runs/probe"
HELP = "TraVLR's protocol: train a probe on one modality's features, test on image/caption/both (macro-F1)"


def register(sub: argparse._SubParsersAction) -> None:
    from ..probing import CLASSIFIERS, DEFAULT_DATASET, DEFAULT_MODEL, MODALITIES

    p = sub.add_parser(
        "probe",
        help=HELP,
        description=(
            "Train a classifier on a frozen model's features with the scene given as an image, a caption or "
            "both; test it in and out of distribution on every modality (cross-modal transfer), with "
            "learning curves and text-only baselines. Features are computed once and cached."
        ),
    )
    p.add_argument("--dataset", default=DEFAULT_DATASET,
                   help=f"TraVLR-shaped dataset folder or Hub id (default: {DEFAULT_DATASET}, the repository's build)")
    p.add_argument("--config", default="all", help="task(s), comma-separated, or 'all' (default)")
    p.add_argument("--dataset-revision", default=None, help="Hub revision of the dataset")
    p.add_argument("--model", default=DEFAULT_MODEL, help=f"model folder or Hub id (default: {DEFAULT_MODEL})")
    p.add_argument("--revision", default=None, help="Hub revision of the model")
    p.add_argument("--family", default=None, help="scorer family (default: detected from the model's config)")
    p.add_argument("--train-modality", default=",".join(MODALITIES),
                   help="modalities to train on, comma-separated (default: image,caption,both)")
    p.add_argument("--test-modality", default=",".join(MODALITIES),
                   help="modalities to test on, comma-separated (default: image,caption,both)")
    p.add_argument("--train-size", default=None, metavar="N,N,...",
                   help="learning curve: training rows, comma-separated (the full train split is always added)")
    p.add_argument("--few-shot", type=int, default=0, metavar="N",
                   help="after zero-shot transfer, train further on N rows of the unseen modality (paper: 200)")
    p.add_argument("--classifier", default="logreg", choices=CLASSIFIERS, help="probe: logreg (default) or mlp")
    p.add_argument("--no-text-baseline", action="store_true", help="skip the text-only baseline (dual encoders)")
    p.add_argument("--finetune", action="store_true",
                   help="also fine-tune a copy of the model (dual encoders) with a linear head, per task and training modality")
    p.add_argument("--epochs", type=int, default=3, help="fine-tuning epochs; the best on validation is kept (default 3)")
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for CIs (0: none; default 1000)")
    p.add_argument("--confidence", type=float, default=0.95, help="CI level (default 0.95)")
    p.add_argument("--seed", type=int, default=0, help="seed of the subsets, the MLP and the bootstrap (default 0)")
    p.add_argument("--seeds", type=int, default=3, metavar="N",
                   help="run every setting with seeds seed..seed+N-1; tables show mean and sd (default 3, as the paper)")
    p.add_argument("--schedule", default="quick", choices=("quick", "paper"),
                   help="--finetune: quick (--epochs, best on validation kept; default) or paper (80 epochs, no early "
                        "stopping, as TraVLR; --epochs not used)")
    p.add_argument("--limit", type=int, default=None, help="use only the first N rows of each split")
    p.add_argument("--batch-size", type=int, default=32, help="inputs per forward pass (default 32)")
    p.add_argument("--num-workers", type=int, default=None,
                   help="DataLoader workers decoding images (default: min(4, CPUs - 1) with more than 2 CPUs, else 0)")
    p.add_argument("--dtype", default="float32", help="float32 (default), float16 or bfloat16")
    p.add_argument("--device", default=None, help="cpu, cuda, mps (default: the best available)")
    p.add_argument("--cache-dir", default=None,
                   help="feature cache (default: $VLPROBE_CACHE or ~/.cache/vlprobe); 'none' disables it")
    p.add_argument("--out", default=DEFAULT_OUT, help=f"output folder (default: {DEFAULT_OUT})")
    p.add_argument("--chunk-size", type=int, default=None,
                   help="rows read and encoded at a time; memory holds one chunk's images (default 2000)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..errors import ArgumentError, SettingError
    from ..probing import format_report, probe

    try:
        result = probe(
            args.model, args.dataset, args.config,
            train_modalities=args.train_modality, test_modalities=args.test_modality, train_sizes=args.train_size,
            few_shot=args.few_shot, classifier=args.classifier, text_baseline=not args.no_text_baseline,
            finetune=args.finetune, epochs=args.epochs, bootstrap=args.bootstrap, confidence=args.confidence,
            seed=args.seed, seeds=args.seeds, schedule=args.schedule, limit=args.limit, batch_size=args.batch_size,
            num_workers=args.num_workers,
            device=args.device, dtype=args.dtype, family=args.family, revision=args.revision,
            dataset_revision=args.dataset_revision, cache_dir=args.cache_dir, progress=not args.no_progress,
            out=args.out, **({"chunk_size": args.chunk_size} if args.chunk_size is not None else {}),
        )
    except ArgumentError as err:  # named as the command line spells it (--few-shot, not few_shot=)
        raise SettingError(err.cli()) from None
    print(format_report(result))
    written = sorted(p.name for p in Path(args.out).iterdir())
    print(f"wrote {len(written)} files to {args.out}: " + ", ".join(written))
    return 0
