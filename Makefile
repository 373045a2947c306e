# The two commands of the README:
#   make evaluate   set everything up, then score the offline default model on the synthetic instruments
#                   and run TraVLR's probe protocol on it
#   make test       set everything up, then run the whole test suite (and, in a second environment
#                   with torchvision, the tests that depend on the image processor)
# Both are idempotent: a second run skips what is already installed or built.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# This project's machines carry a local CPU wheel of torch 2.13.0; an unpinned torch would pull a multi-GB
# CUDA build. On another machine, override: make test TORCH_SPEC='torch>=2.2'
TORCH_SPEC ?= torch==2.13.0
STAMP := $(VENV)/.vlprobe-installed
# A second environment with torchvision, where the fast (torchvision) image processors run: PyPI's
# torchvision does not import beside the CPU wheel above, so it takes the torch 2.14.1 + torchvision
# 0.29.1 pair this project's machines carry (a CUDA build, ~5.5 GB; it runs on the CPU).
# `make test VISION=0` leaves it out.
VISION ?= 1
VISION_VENV ?= .venv-vision
VISION_TORCH_SPEC ?= torch==2.14.1 torchvision==0.29.1
VISION_STAMP := $(VISION_VENV)/.vlprobe-installed
# The tests whose results depend on the image processor: run again where the fast one is the default.
VISION_TESTS ?= tests/test_preprocessing.py tests/test_engine.py tests/test_scorers.py tests/test_vqascore_batching.py \
	tests/test_mini_clip.py tests/test_probe.py tests/test_api.py tests/test_reliability.py tests/test_space.py
SCENE_SOURCES := $(wildcard vlprobe/scenes/*.py) vlprobe/dataset_folder.py vlprobe/builders/synthetic.py

.PHONY: setup setup-vision data evaluate test bench browser

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install -q --disable-pip-version-check "$(TORCH_SPEC)"
	$(BIN)/python -m pip install -q --disable-pip-version-check -e ".[dev]"
	touch $(STAMP)

setup: $(STAMP)

$(VISION_STAMP): pyproject.toml
	test -x $(VISION_VENV)/bin/python || $(PYTHON) -m venv $(VISION_VENV)
	$(VISION_VENV)/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
	$(VISION_VENV)/bin/python -m pip install -q --disable-pip-version-check $(VISION_TORCH_SPEC)
	$(VISION_VENV)/bin/python -m pip install -q --disable-pip-version-check -e ".[dev]"
	touch $(VISION_STAMP)

setup-vision: $(VISION_STAMP)

# The synthetic instruments (parquet is built, never committed); rebuilt when their generator changes.
travlr/data/.built: $(STAMP) $(SCENE_SOURCES) vlprobe/builders/travlr.py
	$(BIN)/vlprobe build travlr
	touch $@

winoground_style/data/.built: $(STAMP) $(SCENE_SOURCES) vlprobe/builders/winoground_style.py
	$(BIN)/vlprobe build winoground_style
	touch $@

data: travlr/data/.built winoground_style/data/.built

# The main job: models/mini-clip on every synthetic config (runs/default), then TraVLR's protocol on
# it: probes trained per modality, cross-modal transfer with 200 few-shot rows, a two-point learning
# curve (runs/probe).
evaluate: data
	$(BIN)/vlprobe evaluate
	$(BIN)/vlprobe probe --dataset travlr --model models/mini-clip --train-size 500 --few-shot 200 --out runs/probe

# Debian's chromium for the browser test (needs root/apt-get; the test says why when it cannot run).
browser:
	bash scripts/ensure_chromium.sh || echo "make: chromium could not be installed; the browser test will say why it skips"

test: setup browser $(if $(filter 1,$(VISION)),setup-vision)
	$(BIN)/python -m pytest -q
ifeq ($(VISION),1)
	@echo "--- again with torchvision (the fast image processors) in $(VISION_VENV):"
	$(VISION_VENV)/bin/python -m pytest -q -p no:cacheprovider $(VISION_TESTS)
endif

bench: setup
	$(BIN)/python scripts/bench_metric.py
	$(BIN)/python scripts/bench_scoring.py
