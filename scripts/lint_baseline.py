"""The lint gate's ratchet (issue 44.6): ruff's wider rules and mypy, held to a baseline that only shrinks.

``ruff check .`` (pyproject's ``select``, the pre-commit hook) must pass outright. On top of it, ruff's wider rules
(:data:`WIDER`) and mypy (pyproject's ``[tool.mypy]``: strict on the core modules, mypy's default level elsewhere)
are run, and their findings counted per file and rule (ruff) or per file and error code (mypy). The counts may not
exceed those in ``scripts/lint_baseline.json``: a new violation (one more in a file, or a rule or file that had none)
fails. A count below its baseline is reported; ``--update`` writes the lower counts (it never raises one). The
strict core has no entry in the baseline, so any mypy error there fails.

    python scripts/lint_baseline.py            # check (make lint runs it)
    python scripts/lint_baseline.py --update   # after fixing some: lower the baseline to today's counts
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "scripts" / "lint_baseline.json"
# bugbear, simplify, pyupgrade, no bare Any in a signature, imports at the top but for the heavy libraries that
# pyproject's banned-module-level-imports keeps out of module tops (TID253)
WIDER = ["B", "SIM", "UP", "ANN401", "PLC0415", "TID253"]
_MYPY_LINE = re.compile(r"^(?P<path>[^:]+\.py):\d+(?::\d+)?: error: .*\[(?P<code>[a-z0-9-]+)\]$")


def ruff_counts() -> Counter[str]:
    """{"path rule": findings} of ruff's wider rules over the repository."""
    out = subprocess.run([sys.executable, "-m", "ruff", "check", ".", "--extend-select", ",".join(WIDER),
                          "--output-format", "json", "--exit-zero", "--no-cache"],
                         cwd=ROOT, capture_output=True, text=True, check=True)
    counts: Counter[str] = Counter()
    for finding in json.loads(out.stdout):
        path = Path(finding["filename"]).resolve().relative_to(ROOT).as_posix()
        counts[f"{path} {finding['code']}"] += 1
    return counts


def mypy_counts() -> tuple[Counter[str], list[str]]:
    """({"path code": errors}, every error line) of mypy as pyproject configures it."""
    out = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True)
    if out.returncode not in (0, 1) or (out.returncode == 1 and "error:" not in out.stdout):
        raise SystemExit(f"lint_baseline: mypy did not run:\n{out.stdout}{out.stderr}")
    counts: Counter[str] = Counter()
    lines = []
    for line in out.stdout.splitlines():
        match = _MYPY_LINE.match(line)
        if match:
            counts[f"{match['path']} {match['code']}"] += 1
            lines.append(line)
    return counts, lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update", action="store_true", help="lower the baseline to the counts found today")
    args = parser.parse_args(argv)
    baseline = json.loads(BASELINE.read_text(encoding="utf-8")) if BASELINE.is_file() else {"ruff": {}, "mypy": {}}
    ruff = ruff_counts()
    mypy, mypy_lines = mypy_counts()
    first = args.update and not BASELINE.is_file()  # the first baseline: today's counts
    failures, lower = [], []
    for tool, counts in (("ruff", ruff), ("mypy", mypy)):
        allowed: dict[str, int] = baseline.get(tool, {})
        for key, n in sorted(counts.items()):
            if n > allowed.get(key, 0) and not first:
                failures.append(key)
                print(f"{tool}: {key}: {n} finding(s), the baseline allows {allowed.get(key, 0)}")
                if tool == "mypy":
                    path, code = key.split()
                    print(*[f"  {line}" for line in mypy_lines if line.startswith(f"{path}:") and
                            line.endswith(f"[{code}]")], sep="\n")
        lower += [f"{tool}: {key}: {counts.get(key, 0)} (baseline {n})" for key, n in sorted(allowed.items())
                  if counts.get(key, 0) < n]
    if failures:
        print("new lint findings: fix them (`ruff check . --extend-select " + ",".join(WIDER) + "` and `mypy` "
              "list them); the baseline (scripts/lint_baseline.json) only shrinks")
        return 1
    if args.update:
        BASELINE.write_text(json.dumps({"ruff": dict(sorted(ruff.items())), "mypy": dict(sorted(mypy.items()))},
                                       indent=0, sort_keys=True) + "\n", encoding="utf-8")
        print(f"lint_baseline: {BASELINE.relative_to(ROOT)} written: ruff {sum(ruff.values())}, "
              f"mypy {sum(mypy.values())} finding(s)")
    elif lower:
        print(f"lint_baseline: {len(lower)} count(s) fell below the baseline; lower it with "
              "`python scripts/lint_baseline.py --update`:", *lower[:10], sep="\n  ")
    print(f"lint_baseline: ok (ruff's wider rules: {sum(ruff.values())} finding(s), mypy: {sum(mypy.values())}, "
          "none above the baseline)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
