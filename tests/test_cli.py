"""The ``vlprobe`` command itself: only the command being run is registered in full, so the top-level
help is light; every command and builder is still reachable."""

from __future__ import annotations

import subprocess
import sys

import pytest

from vlprobe.cli import build_parser, command_modules, main

HEAVY = ("torch", "datasets", "pandas", "transformers", "numpy", "PIL")


def _imported_after(code: str) -> list[str]:
    probe = (f"import sys\n{code}\n"
             f"print('IMPORTED:' + ','.join(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    line = next(x for x in out.stdout.splitlines() if x.startswith("IMPORTED:"))
    return [m for m in line.removeprefix("IMPORTED:").split(",") if m]


def test_the_top_level_help_and_import_vlprobe_load_no_heavy_library():
    assert _imported_after("import vlprobe") == []
    assert _imported_after("from vlprobe.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass") == []


def test_every_command_is_listed_with_its_help_line(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    for name, module in command_modules().items():
        assert name in out
        assert getattr(module, "HELP", "")[:20] in " ".join(out.split())


def test_the_command_run_is_registered_in_full(capsys):
    parser = build_parser("build")
    with pytest.raises(SystemExit):
        parser.parse_args(["build", "valse", "--help"])
    assert "--annotations" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_:
        main(["nosuch"])
    assert exit_.value.code == 2 and "invalid choice: 'nosuch'" in capsys.readouterr().err


def test_python_api_names_resolve_lazily():
    import vlprobe

    assert callable(vlprobe.evaluate) and callable(vlprobe.probe) and callable(vlprobe.score)
    assert issubclass(vlprobe.SettingError, vlprobe.VlprobeError)
    assert {"evaluate", "probe", "Evaluation", "ProbeResult"} <= set(dir(vlprobe))
    with pytest.raises(AttributeError, match="no attribute 'nosuch'"):
        vlprobe.nosuch  # noqa: B018
