# The two commands of the README:
#   make evaluate   set everything up, then score the offline default model on the synthetic instruments
#                   and run TraVLR's probe protocol on it
#   make test       set everything up, then run the whole test suite
# (make test-fast: the tests not marked slow or browser, the subset to rerun while working; docs/development.md)
# Both are idempotent: a second run skips what is already installed, and each build from the same inputs does
# nothing and says so (vlprobe/builders/unchanged.py), so make keeps no stamps of its own for them.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# One environment for both commands. This project's machines carry torch 2.14.1 + torchvision 0.29.1 on
# local disk (a CUDA build that runs on the CPU; about 5.5 GB installed, a few minutes): with torchvision
# the fast image processors are the default, as for users who have it. An unpinned torch would pull a
# multi-GB download; on another machine, override: make test TORCH_SPEC='torch>=2.2 torchvision'
TORCH_SPEC ?= torch==2.14.1 torchvision==0.29.1
STAMP := $(VENV)/.vlprobe-installed

.PHONY: setup data evaluate test test-fast lint bench browser

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install -q --disable-pip-version-check $(TORCH_SPEC)
	$(BIN)/python -m pip install -q --disable-pip-version-check -e ".[dev]"
	touch $(STAMP)

setup: $(STAMP)

# The synthetic instruments (parquet is built, never committed). Each build compares its inputs (arguments, generator
# code, library versions) and files with the ones it recorded: unchanged, it does nothing in a few seconds.
data: setup
	$(BIN)/vlprobe build travlr
	$(BIN)/vlprobe build winoground_style

# The main job: models/mini-clip on every synthetic config (runs/default), then TraVLR's protocol on
# it: probes trained per modality, cross-modal transfer with 200 few-shot rows, a two-point learning
# curve (runs/probe).
evaluate: data
	$(BIN)/vlprobe evaluate
	$(BIN)/vlprobe probe --dataset travlr --model models/mini-clip --train-size 500 --few-shot 200 --out runs/probe

# Debian's chromium for the browser test (needs root/apt-get; the test says why when it cannot run).
browser:
	bash scripts/ensure_chromium.sh || echo "make: chromium could not be installed; the browser test will say why it skips"

# The pre-commit hook's check, then the gate (issue 44.6): ruff's wider rules and mypy (strict on the core), held
# to scripts/lint_baseline.json, which only shrinks: a new finding fails (settings in pyproject.toml; mypy's cache
# in .mypy_cache).
lint: setup
	$(BIN)/ruff check .
	$(BIN)/python scripts/lint_baseline.py

# -n auto: one pytest worker per core (pytest-xdist); loadfile keeps a file on one worker (its module fixtures are built once; the docs blocks run in order).
test: setup browser lint
	$(BIN)/python -m pytest -q -n auto --dist loadfile

# The quick subset: every test but those marked slow (builds from the real annotations, end-to-end runs in
# subprocesses, the bench-script smokes, kill/resume, installs) or browser. `make test` still runs everything.
test-fast: setup
	$(BIN)/python -m pytest -q -n auto --dist loadfile -m "not slow and not browser"

bench: setup
	$(BIN)/python scripts/bench_metric.py
	$(BIN)/python scripts/bench_scoring.py
