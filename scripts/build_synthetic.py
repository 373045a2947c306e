#!/usr/bin/env python
"""Build the two synthetic dataset folders, travlr/ and winoground_style/, in the repository root.

    python scripts/build_synthetic.py                 # default sizes (seconds)
    python scripts/build_synthetic.py --size tiny     # tests
    python scripts/build_synthetic.py --size paper --workers 2   # TraVLR's 32k/10k/10k/20k per task

Thin: the same as ``vlprobe build travlr ...`` then ``vlprobe build winoground_style ...``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from vlprobe.cli import main  # noqa: E402


def run() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", choices=("tiny", "default", "paper"), default="default")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=1)
    args = p.parse_args()
    for name in ("travlr", "winoground_style"):
        start = time.perf_counter()
        rc = main(["build", name, "--out", str(ROOT / name), "--size", args.size,
                   "--seed", str(args.seed), "--workers", str(args.workers)])
        if rc:
            return rc
        print(f"{name}: {time.perf_counter() - start:.1f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(run())
