#!/usr/bin/env python
"""Time ``vlprobe probe``: feature extraction (engine, fresh cache) against fitting and testing every probe.

    .venv/bin/python scripts/bench_probe.py                         # models/mini-clip on ./travlr, sizes 100,200
    .venv/bin/python scripts/bench_probe.py --dataset /tmp/travlr --train-size 100,200 --few-shot 50

Runs the probe twice with a new cache folder: the first run extracts every feature, the second reads
them all from the cache (it must compute 0 inputs). Prints both runs' timings; the probe's own cost
(fitting with L2 selection on validation, transfer, learning curve, bootstrap CIs) is
``probe_seconds``. Not a test: numbers depend on the machine and its load (CPU seconds, summed over threads, less so).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="models/mini-clip")
    p.add_argument("--dataset", default="travlr")
    p.add_argument("--config", default="all")
    p.add_argument("--train-size", default="100,200")
    p.add_argument("--few-shot", type=int, default=0)
    p.add_argument("--bootstrap", type=int, default=1000)
    p.add_argument("--classifier", default="logreg")
    args = p.parse_args(argv)

    import torch

    from vlprobe.probing import probe

    print(f"torch threads: {torch.get_num_threads()}, CPUs: {os.cpu_count()}, OMP_NUM_THREADS="
          f"{os.environ.get('OMP_NUM_THREADS')}")
    with tempfile.TemporaryDirectory(prefix="vlprobe-bench-probe-") as cache:
        for run in ("fresh cache", "warm cache"):
            start = time.perf_counter()
            res = probe(args.model, args.dataset, args.config, train_sizes=args.train_size, few_shot=args.few_shot,
                        bootstrap=args.bootstrap, classifier=args.classifier, cache_dir=cache, progress=False)
            wall = time.perf_counter() - start
            t = res.provenance["timings"]
            f = res.provenance["features"]
            print(f"{run}: feature extraction {t['feature_seconds']:.2f}s wall / {t['feature_cpu_seconds']:.2f}s CPU "
                  f"({f['computed_inputs']} inputs computed); probes {t['probe_seconds']:.2f}s wall / "
                  f"{t['probe_cpu_seconds']:.2f}s CPU ({len(res.rows)} result rows); "
                  f"total {t['total_seconds']:.2f}s (wall {wall:.2f}s incl. loading the model)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
