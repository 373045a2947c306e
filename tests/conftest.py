"""Shared test set-up: everything offline, shared annotation data located, tiny-model fixtures."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

# No test may reach the network: the libraries must fail fast instead of waiting on timeouts.
for _var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_EVALUATE_OFFLINE"):
    os.environ[_var] = "1"
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
# datasets keys its cache of a local folder by the folder's name and card, not its content: test
# folders of the same name from an earlier run would be read back stale. Each session gets its own.
os.environ["HF_DATASETS_CACHE"] = _DATASETS_CACHE = tempfile.mkdtemp(prefix="vlprobe-tests-datasets-")
atexit.register(shutil.rmtree, _DATASETS_CACHE, ignore_errors=True)
# The score cache is on by default ($VLPROBE_CACHE, else ~/.cache/vlprobe): a test that leaves
# cache_dir out must not write into the real home, nor read an earlier session's scores.
os.environ["VLPROBE_CACHE"] = _SCORE_CACHE = tempfile.mkdtemp(prefix="vlprobe-tests-cache-")
atexit.register(shutil.rmtree, _SCORE_CACHE, ignore_errors=True)
# `import vlprobe` registers the metric in evaluate's module cache ($HF_MODULES_CACHE): not the real home's.
os.environ["HF_MODULES_CACHE"] = _MODULES_CACHE = tempfile.mkdtemp(prefix="vlprobe-tests-modules-")
atexit.register(shutil.rmtree, _MODULES_CACHE, ignore_errors=True)
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
# The real VALSE/BLA annotation files live outside the repository (never committed).
SHARED_DATA = Path(os.environ.get("VLPROBE_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"the real annotation files are not here: {SHARED_DATA} is absent (set VLPROBE_SHARED_DATA)")
    return SHARED_DATA


@pytest.fixture(scope="module")
def folder(tmp_path_factory, request) -> Path:
    """The synthetic dataset folder (helpers_data.build_folder: configs ``pairs`` and ``swap``), built once per test
    module; ``FOLDER_ROWS = n`` in a module changes its rows (default 12). Read it, do not change it."""
    from helpers_data import build_folder

    return build_folder(tmp_path_factory.mktemp("data"), n=getattr(request.module, "FOLDER_ROWS", 12))


@pytest.fixture(scope="session", autouse=True)
def results_json_follows_its_schema():
    """Every results.json vlprobe writes in a test's process (``vlprobe evaluate`` and ``vlprobe probe`` runs, the
    tests' own documents) is checked, as it is written, against the published JSON Schema
    (vlprobe.results.schema.json_schema, docs/results.schema.json): one that is not valid fails its test."""
    import json

    import jsonschema

    from vlprobe.results import io, schema

    validator = jsonschema.Draft202012Validator(schema.json_schema())
    write = io.results_json_bytes

    def checked(doc, indent=2):
        data = write(doc, indent)
        validator.validate(json.loads(data))
        return data

    io.results_json_bytes = checked
    yield validator
    io.results_json_bytes = write


@pytest.fixture
def clean_space_env(monkeypatch):
    """No Space setting (VLPROBE_SPACE_*, SPACE_ID) from the environment: each test sets its own."""
    from vlprobe.demo.settings import ENV_ALL

    for name in ENV_ALL + ("SPACE_ID",):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def stand_in_server():
    """A local HTTP server standing in for a download host (see tests/stand_in_server.py)."""
    from stand_in_server import StandInServer

    server = StandInServer()
    yield server
    server.close()


from tiny_models import *  # noqa: E402,F401,F403  (tiny transformers models built offline, as fixtures)
