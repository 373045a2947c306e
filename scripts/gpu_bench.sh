#!/usr/bin/env bash
# One GPU run of scripts/bench_scoring.py, made for a short lent slot (about 4 minutes on an H100 / H200):
# ViT-B/32-shaped random CLIP, float16, 2,048 BLA-shaped JPEG items, 12 DataLoader workers. Run from the
# repository root. Wheels in .whl/ (datasets, evaluate and what they need that the machine lacks; only the
# `vlprobe evaluate` stage needs them) are installed into /tmp/site first. Writes bench.txt, bench.json,
# bench.stderr and env.txt to $OUT (default /tmp/vlprobe-bench-out); the table also goes to stdout.
#
#   bash scripts/gpu_bench.sh            # or: ITEMS=512 bash scripts/gpu_bench.sh
set -u
OUT=${OUT:-/tmp/vlprobe-bench-out}
export OUT
mkdir -p "$OUT"
PY=${PYTHON:-python3}
# The target's path must contain "site-packages": dill (datasets' fingerprinting) pickles modules from any other
# folder by value and fails on pyarrow ("Can't pickle <class 'MonthDayNano'>"; unslothai/unsloth#9791).
SITE=/tmp/vlprobe-wheels/site-packages
if ls .whl/*.whl >/dev/null 2>&1; then
  "$PY" -m pip install -q --no-index --no-deps --target "$SITE" .whl/*.whl >"$OUT/pip.txt" 2>&1 \
    || echo "pip install of .whl/ failed (see pip.txt): the evaluate stage may fail, the rest runs"
  export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH}
fi
{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1
  nproc
  "$PY" -c "import sys, torch, torchvision, transformers; print(sys.version.split()[0], torch.__version__, torchvision.__version__, transformers.__version__, torch.version.cuda)" 2>&1
} >"$OUT/env.txt"
cat "$OUT/env.txt"
# The script stops its own stages at --time-cap and exits at the cap + 60 s; timeout is the last guard.
timeout 330 "$PY" scripts/bench_scoring.py --device cuda --dtype float16 --items "${ITEMS:-2048}" \
  --num-workers "${WORKERS:-12}" --time-cap "${TIME_CAP:-200}" ${PROFILE:+--profile} --out "$OUT" 2>"$OUT/bench.stderr"
rc=$?
echo "bench_scoring.py exit status $rc"
tail -c 3000 "$OUT/bench.stderr"
exit $rc
