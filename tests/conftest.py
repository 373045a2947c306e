"""Shared test set-up: everything offline, shared annotation data located, tiny-model fixtures."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import types
from pathlib import Path
from typing import Any

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
# evaluate copies a metric it loads (and vlprobe.register_metric() puts one) into its module cache
# ($HF_MODULES_CACHE): not the real home's.
os.environ["HF_MODULES_CACHE"] = _MODULES_CACHE = tempfile.mkdtemp(prefix="vlprobe-tests-modules-")
atexit.register(shutil.rmtree, _MODULES_CACHE, ignore_errors=True)
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]


# ---- a failure is always named ----------------------------------------------------------------------------------
# pytest-timeout raises its Timeout from a signal handler, which runs between any two bytecodes: where the
# interpreter has no line number for the instruction (cleanup code, some calls), the traceback entry's tb_lineno is
# None and pytest's traceback formatter fails on it (TypeError: None - 1), an INTERNALERROR that takes the xdist
# worker down and leaves the test unnamed. Each such entry gets its function's first line before pytest reads the
# traceback, so the timeout is reported as a failure of its test (tests/test_timeouts.py reproduces it).

def _with_line_numbers(tb: Any) -> Any:
    """``tb`` rebuilt with every entry's line number set (None where none was missing)."""
    entries = []
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    if all(e.tb_lineno is not None for e in entries):
        return None
    rebuilt = None
    for e in reversed(entries):
        line = e.tb_lineno if e.tb_lineno is not None else e.tb_frame.f_code.co_firstlineno
        rebuilt = types.TracebackType(rebuilt, e.tb_frame, e.tb_lasti, line)
    return rebuilt


def repair_line_numbers(exc: BaseException | None, seen: set | None = None) -> bool:
    """Give every traceback entry of ``exc`` and of the exceptions chained to it a line number; True if any lacked
    one."""
    seen = set() if seen is None else seen
    changed = False
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        fixed = _with_line_numbers(exc.__traceback__)
        if fixed is not None:
            exc.__traceback__ = fixed
            changed = True
        if exc.__cause__ is not None:
            changed |= repair_line_numbers(exc.__cause__, seen)
        exc = exc.__context__
    return changed


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    if call.excinfo is not None and repair_line_numbers(call.excinfo.value):
        call.excinfo = pytest.ExceptionInfo.from_exception(call.excinfo.value)
    yield


# `pytest -q` (make test) shows a failure as one letter until the summary at the end: a run stopped before its end
# (Ctrl-C, a CI limit) named none. Each failure or error is also named on a line of its own as it happens.
_CONFIG: list = []


def pytest_configure(config):
    _CONFIG[:] = [config]


def pytest_runtest_logreport(report):
    config = _CONFIG[0] if _CONFIG else None
    if not report.failed or config is None or hasattr(config, "workerinput") or config.option.verbose > 0:
        return  # an xdist worker's report is named by the controller; -v names every test already
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    crash = getattr(report.longrepr, "reprcrash", None)
    why = str(getattr(crash, "message", "") or "").strip().splitlines()
    kind = "FAILED" if report.when == "call" else f"ERROR at {report.when} of"
    reporter.write_line(f"\n{kind} {report.nodeid}" + (f" - {why[0][:200]}" if why else ""))
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
def clone(tmp_path_factory) -> Path:
    """A copy of the files a clone of this checkout has (tracked, and new files git does not ignore), to build or
    install from without writing into the checkout; one per module."""
    from helpers_data import source_tree

    return source_tree(REPO, tmp_path_factory.mktemp("clone") / "vlprobe")


@pytest.fixture(scope="module")
def travlr_small(tmp_path_factory) -> Path:
    """Two TraVLR tasks (spatiality, cardinality), 24/12/12/12 rows, built by `vlprobe build travlr`; once per
    module."""
    from vlprobe.cli import main

    out = tmp_path_factory.mktemp("travlr_small") / "travlr"
    code = main(["build", "travlr", "--out", str(out), "--size", "tiny", "--configs", "spatiality,cardinality",
                 "--split-sizes", "train=24,validation=12,test_ind=12,test_ood=12"])
    assert code in (0, None)
    return out


@pytest.fixture(scope="module")
def real_sugar_crepe_pp(shared_data, tmp_path_factory) -> tuple[Path, Path]:
    """The real SugarCREPE++ files (../shared/data) built by `vlprobe build sugar_crepe_pp` with stand-in images (an
    8 x 8 JPEG per COCO file name, its colour from the name): the built folder and the images' folder; once per
    module."""
    import json

    from helpers import jpeg
    from helpers_data import build_from

    from vlprobe.benchmarks.sugar_crepe_pp import UPSTREAM
    from vlprobe.builders.sugar_crepe_pp import SugarCrepePP

    root = tmp_path_factory.mktemp("sugar_crepe_pp")
    images = root / "images" / "val2017"
    images.mkdir(parents=True)
    for f in UPSTREAM.files:
        for rec in json.loads((shared_data / "sugar_crepe_pp" / f.path).read_text()):
            (images / rec["filename"]).write_bytes(jpeg(rec["filename"]))
    return build_from(SugarCrepePP(), shared_data / "sugar_crepe_pp", images.parent, root / "sugar_crepe_pp"), images


@pytest.fixture(scope="module")
def folder(tmp_path_factory, request) -> Path:
    """The synthetic dataset folder (helpers_data.build_folder: configs ``pairs`` and ``swap``), built once per test
    module; ``FOLDER_ROWS = n`` in a module changes its rows (default 12). Read it, do not change it."""
    from helpers_data import build_folder

    return build_folder(tmp_path_factory.mktemp("data"), n=getattr(request.module, "FOLDER_ROWS", 12))


@pytest.fixture(scope="module")
def client(request):
    """A ``gradio_client.Client`` of a Gradio app served on 127.0.0.1 for the module's tests: the app module is the
    fixture the test module names in ``GRADIO_APP`` (``GRADIO_APP = "space_app"``)."""
    import gradio_client

    demo = request.getfixturevalue(request.module.GRADIO_APP).demo
    _, url, _ = demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True)
    try:
        yield gradio_client.Client(url, verbose=False)
    finally:
        demo.close()


@pytest.fixture(scope="module")
def images():
    """Four small distinct images of two sizes (so processors really resize, and ViLT really pads); a module that
    needs others overrides it."""
    from tiny_models import tiny_images

    return tiny_images(2, size=(40, 30)) + tiny_images(2, size=(24, 36))


@pytest.fixture(scope="module")
def docs_runner(tmp_path_factory, request):
    """Runs the docs' code blocks of the module's ``DOCS_GROUP``, in order, in one fresh copy of the clone
    (tests/helpers_docs.py)."""
    from helpers_docs import Runner, workdir

    return Runner(*workdir(tmp_path_factory, request.module.DOCS_GROUP))


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
def cli(capsys):
    """``cli(*argv)``: ``vlprobe ARGV...`` run in this process, as a :class:`helpers.CliRun` (``code, out, err``);
    ``cli.subprocess(*argv, env=, cwd=)`` runs it in a fresh interpreter (tests/helpers.py)."""
    from helpers import Cli

    return Cli(capsys)


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
