# The two commands of the README:
#   make evaluate   set everything up, then score the offline default model on the synthetic instruments
#   make test       set everything up, then run the whole test suite
# Both are idempotent: a second run skips what is already installed or built.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# This project's machines carry a local CPU wheel of torch 2.13.0; an unpinned torch would pull a multi-GB
# CUDA build. On another machine, override: make test TORCH_SPEC='torch>=2.2'
TORCH_SPEC ?= torch==2.13.0
STAMP := $(VENV)/.vlprobe-installed

.PHONY: setup data evaluate test bench clean-data

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install -q --disable-pip-version-check "$(TORCH_SPEC)"
	$(BIN)/python -m pip install -q --disable-pip-version-check -e ".[dev]"
	touch $(STAMP)

setup: $(STAMP)

evaluate: setup
	$(BIN)/python -m vlprobe.cli demo-metric

test: setup
	$(BIN)/python -m pytest -q

bench: setup
	$(BIN)/python scripts/bench_metric.py
