"""Time the metric on the two workloads of issue 2 and print the figures.

    python scripts/bench_metric.py [--items 1000000] [--boot-items 10000] [--resamples 1000]

(a) Winoground-shaped items (2 x 2, identity gold), stacked as (N, 2, 2) arrays, no bootstrap;
(b) a percentile bootstrap over Winoground-shaped items; (c) the exact chance level (a Poisson-binomial over
the items' probabilities) for 200,000 VALSE-shaped items. Targets on the project's 2-core machine:
(a) 1,000,000 items well under 5 s, (b) 1,000 resamples over 10,000 items under 10 s, (c) under 20 s
(this last was a timed test; no test depends on the machine's speed).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from vlprobe import metric


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--boot-items", type=int, default=10_000)
    parser.add_argument("--resamples", type=int, default=1_000)
    parser.add_argument("--chance-items", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)

    def timed(label, fn):
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            out = fn()
            times.append(time.perf_counter() - t0)
        print(f"{label}: best {min(times):.3f} s, median {sorted(times)[len(times) // 2]:.3f} s over {args.repeat} runs")
        return out

    scores = rng.normal(size=(args.items, 2, 2))
    gold = np.broadcast_to(np.eye(2, dtype=np.int8), (args.items, 2, 2))
    r = timed(f"(a) {args.items:,} Winoground-shaped items, no bootstrap, ties=strict",
              lambda: metric.compute(scores, gold))
    print(f"    text={r['text']:.4f} image={r['image']:.4f} group={r['group']:.4f} (chance 0.25/0.25/0.1667)")
    # Ties force the exact per-pattern enumeration of ties="half"; measure that path too.
    tied = np.round(scores, 1)
    r = timed("(a') same items rounded to 0.1 (many ties), ties=half",
              lambda: metric.compute(tied, gold, ties="half"))
    print(f"    n_ties={r['n_ties']:,} group={r['group']:.4f}")

    b_scores, b_gold = scores[: args.boot_items], gold[: args.boot_items]
    r = timed(f"(b) bootstrap {args.resamples:,} resamples over {args.boot_items:,} items",
              lambda: metric.compute(b_scores, b_gold, bootstrap=args.resamples, seed=0))
    print(f"    group={r['group']:.4f} CI={[round(x, 4) for x in r['ci']['group']]} "
          f"auroc CI={[round(x, 4) for x in r['ci']['auroc']]}")

    n = args.chance_items
    probabilities = np.full((n, 1, 2), 0.5)
    valse_gold = np.broadcast_to(np.array([[[1, 0]]], dtype=np.int8), probabilities.shape)
    r = timed(f"(c) exact chance over {n:,} VALSE-shaped items",
              lambda: metric.compute(np.zeros((n, 1, 2)), valse_gold, probabilities=probabilities))
    print(f"    chance min_p={r['chance']['min_p']:.4f} macro_f1={r['chance']['macro_f1']:.4f}")


if __name__ == "__main__":
    main()
