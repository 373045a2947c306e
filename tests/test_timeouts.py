"""A test that runs past its timeout is reported as a failure of that test, by name, as it happens, and the run goes
on: never an INTERNALERROR that takes the xdist worker down (issue 47.1). pytest-timeout raises from a signal handler, between
any two bytecodes; where the interpreter has no line number for the instruction, the traceback entry's tb_lineno is
None, which pytest's traceback formatter cannot handle. tests/conftest.py gives such entries a line number."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import repair_line_numbers

HERE = Path(__file__).resolve().parent


def _no_locations(code):
    """``code`` with every instruction marked "no location" (the 3.11+ line table's entry kind 15), as the interpreter
    marks some cleanup instructions: an exception raised in it has tb_lineno None."""
    units = len(code.co_code) // 2
    table = bytearray()
    while units:
        n = min(units, 8)
        table.append(0x80 | (15 << 3) | (n - 1))
        units -= n
    return code.replace(co_linetable=bytes(table))


def _raises():
    raise RuntimeError("raised where no line number is known")


_raises.__code__ = _no_locations(_raises.__code__)


@pytest.mark.skipif(sys.version_info < (3, 11), reason="the 3.11 line table format")
def test_an_entry_without_a_line_number_gets_one_and_pytest_formats_it():
    try:
        _raises()
    except RuntimeError as err:
        exc = err
    assert [tb.tb_lineno for tb in _walk(exc.__traceback__)][-1] is None
    with pytest.raises(TypeError):  # what broke the run: pytest's own formatter
        pytest.ExceptionInfo.from_exception(exc).getrepr()
    assert repair_line_numbers(exc) and not repair_line_numbers(exc)
    assert None not in [tb.tb_lineno for tb in _walk(exc.__traceback__)]
    assert "raised where no line number is known" in str(pytest.ExceptionInfo.from_exception(exc).getrepr())


def _walk(tb):
    while tb is not None:
        yield tb
        tb = tb.tb_next


SESSION = '''
import time
import pytest


def _sleeper():
    time.sleep(60)


_sleeper.__code__ = _no_locations(_sleeper.__code__)


@pytest.mark.timeout(2)
def test_times_out_where_no_line_is_known():
    _sleeper()


def test_after_it():
    assert True
'''


@pytest.mark.slow
@pytest.mark.skipif(sys.version_info < (3, 11), reason="the 3.11 line table format")
def test_a_timeout_under_xdist_names_its_test_and_the_run_goes_on(tmp_path):
    """The INTERNALERROR reproduced (a timeout where no line is known, in an xdist worker) with this conftest: one
    failure naming the test, the other test passed."""
    import inspect

    (tmp_path / "test_slow.py").write_text(inspect.getsource(_no_locations) + SESSION)
    (tmp_path / "conftest.py").write_text("from vlprobe_conftest import *  # noqa: F401,F403 (its hooks too)\n")
    (tmp_path / "vlprobe_conftest.py").write_text((HERE / "conftest.py").read_text())
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), str(tmp_path)]))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "1", "-p", "no:cacheprovider", "-rfE",
                           "-o", "addopts=", str(tmp_path)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    out = proc.stdout + proc.stderr
    assert "INTERNALERROR" not in out, out[-3000:]
    # named as it happens (the line before the summary, in full), and in the summary
    assert "\nFAILED test_slow.py::test_times_out_where_no_line_is_known - Failed: Timeout (>2.0s) from pytest-timeout."\
        in out, out[-3000:]
    assert out.count("FAILED test_slow.py::test_times_out_where_no_line_is_known") == 2, out[-3000:]
    assert "1 failed, 1 passed" in out, out[-3000:]  # (within the 300 s bound above: the sleep is 60 s)
