"""Run output folders (issue 39): judged by the provenance vlprobe writes (``.vlprobe-run.json``), never by file
names; swapped in whole, so a kill at any step of the swap leaves ``--out`` a complete run (old or new); a
symbolic link stays a link; a run says when another run replaced its ``--out`` meanwhile."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import Killed

from vlprobe.errors import ArgumentError
from vlprobe.probing.settings import PROBE_RUN_FILE
from vlprobe.storage import leftovers, run_folder
from vlprobe.storage.run_folder import RUN_FILE, RUN_RECORD, check_output_dir, write_run_folder

REPO = Path(__file__).resolve().parent.parent


def _writer(text: str, names=("results.json",)):
    def write(folder: Path):
        for n in names:
            (folder / n).write_text(text)
        return list(names)
    return write


def _contents(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in folder.iterdir() if p.name != RUN_RECORD}


@pytest.mark.parametrize("files, own, words", [
    ({"results.json": "{}"}, RUN_FILE, "not a vlprobe run's .*no record of a vlprobe run"),
    ({"results.json": "{}", "tables.md": "x"}, PROBE_RUN_FILE, "not a vlprobe run's .*no record of a vlprobe run"),
    ({"learning_curve_mine.png": "x"}, PROBE_RUN_FILE, "not a vlprobe run's .*no record of a vlprobe run"),
], ids=["hand-made results.json", "hand-made results.json + tables.md", "a user's plot"])
def test_a_folder_without_vlprobe_provenance_is_refused(tmp_path, files, own, words):
    out = tmp_path / "out"
    out.mkdir()
    for name, text in files.items():
        (out / name).write_text(text)
    with pytest.raises(ArgumentError, match=words) as err:
        check_output_dir(out, own)
    assert "\n" not in str(err.value) and str(out) in str(err.value)
    with pytest.raises(ArgumentError):
        write_run_folder(out, _writer("new"), own)
    assert _contents(out) == files


def test_another_commands_run_and_a_users_extra_files_are_refused(tmp_path):
    evaluate_run = tmp_path / "eval"
    write_run_folder(evaluate_run, _writer("e", ("results.json", "results.csv")))
    assert json.loads((evaluate_run / RUN_RECORD).read_text())["command"] == "evaluate"
    with pytest.raises(ArgumentError, match=r"holds a `vlprobe evaluate` run, which `vlprobe probe` would replace"):
        check_output_dir(evaluate_run, PROBE_RUN_FILE)
    probe_run = tmp_path / "probe"
    write_run_folder(probe_run, _writer("p", ("results.json", "tables.md")), PROBE_RUN_FILE)
    check_output_dir(probe_run, PROBE_RUN_FILE)  # its own kind of run: may be replaced
    for extra in ("learning_curve_mine.png", ".notes.tmp1"):
        (probe_run / extra).write_text("mine")
        with pytest.raises(ArgumentError, match=rf"files that are not the vlprobe run's \({re.escape(extra)}\)"):
            check_output_dir(probe_run, PROBE_RUN_FILE)
        (probe_run / extra).unlink()
    (probe_run / "tables.md").write_text("edited by hand")
    with pytest.raises(ArgumentError, match=r"changed since the run wrote them \(tables.md\)"):
        check_output_dir(probe_run, PROBE_RUN_FILE)
    (tmp_path / "empty").mkdir()
    check_output_dir(tmp_path / "empty")  # an empty folder may be taken


# Where the system cannot exchange two folders in one step, the fallback (two renames, the previous run put back by
# the next run's sweep) is tested with a real kill in tests/test_probe_outputs.py.
@pytest.mark.parametrize("step", ["before the swap", "inside the swap", "after the swap"])
def test_a_kill_at_each_step_of_the_swap_leaves_out_a_complete_run(tmp_path, monkeypatch, step):
    out = tmp_path / "run"
    write_run_folder(out, _writer("old", ("results.json", "results.csv")))
    real_exchange = run_folder.exchange
    monkeypatch.setattr(leftovers.OwnedDir, "cleanup", lambda self: None)  # a killed process cleans nothing

    def exchange(a, b):
        if step == "before the swap":
            raise Killed
        done = real_exchange(a, b)
        assert done, "this file system cannot exchange two folders: the fallback is tested below"
        raise Killed

    monkeypatch.setattr(run_folder, "exchange", exchange)
    with pytest.raises(Killed):
        write_run_folder(out, _writer("new", ("results.json", "results.csv")))
    monkeypatch.undo()
    texts = set(_contents(out).values())
    assert sorted(_contents(out)) == ["results.csv", "results.json"] and len(texts) == 1, _contents(out)
    assert texts == ({"new"} if step in ("inside the swap", "after the swap") else {"old"})
    write_run_folder(out, _writer("next"))  # and the next run takes it as usual
    assert _contents(out) == {"results.json": "next"}


def test_a_symbolic_link_out_stays_a_link_to_the_new_run(tmp_path, capfd):
    real = tmp_path / "runs" / "2024"
    write_run_folder(real, _writer("old"))
    link = tmp_path / "latest"
    link.symlink_to(real)
    write_run_folder(link, _writer("new"))
    assert link.is_symlink() and os.path.realpath(link) == str(real.resolve())
    assert _contents(link) == {"results.json": "new"}
    err = capfd.readouterr().err
    assert f"--out {link} is a symbolic link: writing the run into {real.resolve()}" in err


def test_a_run_says_when_another_run_replaced_out_meanwhile(tmp_path, capfd):
    out = tmp_path / "run"
    write_run_folder(out, _writer("first"))
    check_output_dir(out)  # this run checks --out, then works; meanwhile another process writes the same --out
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    other = ("import sys\nfrom pathlib import Path\nfrom vlprobe.storage.run_folder import write_run_folder\n"
             "def write(folder):\n    (folder / 'results.json').write_text('other')\n    return ['results.json']\n"
             "write_run_folder(sys.argv[1], write)\n")
    subprocess.run([sys.executable, "-c", other, str(out)], env=env, check=True, timeout=120)
    capfd.readouterr()
    write_run_folder(out, _writer("this run's"))
    err = capfd.readouterr().err
    assert f"{out} was replaced by another run while this one worked" in err
    assert _contents(out) == {"results.json": "this run's"}


def test_a_run_from_before_the_record_is_taken_by_its_own_command_only(tmp_path):
    old = tmp_path / "old"
    old.mkdir()
    (old / "results.json").write_text(json.dumps({"provenance": {"command": "vlprobe evaluate --dataset x"}}))
    (old / "scores.parquet").write_text("x")
    check_output_dir(old)  # an evaluate run of an older vlprobe: its provenance says so
    with pytest.raises(ArgumentError, match="no record of a vlprobe run"):
        check_output_dir(old, PROBE_RUN_FILE)
    (old / "notes.txt").write_text("mine")
    with pytest.raises(ArgumentError, match=r"not a vlprobe run's \(notes.txt"):
        check_output_dir(old)


def test_a_same_size_hand_edit_of_a_run_file_is_recognised_by_content(tmp_path):
    """Issue 48: an edit that keeps the size (a digit changed in results.json) used to pass the record's size check,
    and the next run replaced the user's edit as if vlprobe had written it."""
    out = tmp_path / "run"
    write_run_folder(out, _writer('{"acc": 0.40}'))
    (out / "results.json").write_text('{"acc": 0.43}')
    with pytest.raises(ArgumentError, match=r"changed since the run wrote them \(results.json\)"):
        check_output_dir(out)
    assert (out / "results.json").read_text() == '{"acc": 0.43}'


def test_a_record_from_before_the_hash_is_judged_by_size(tmp_path):
    out = tmp_path / "run"
    write_run_folder(out, _writer("{}"))
    (out / RUN_RECORD).write_text(json.dumps({"command": "evaluate", "files": {"results.json": 2}}))
    check_output_dir(out)  # its own file, its recorded size: a run of this command
    (out / "results.json").write_text("{ }")
    with pytest.raises(ArgumentError, match=r"changed since the run wrote them"):
        check_output_dir(out)


def test_cleanup_deletes_the_owner_mark_last(tmp_path, monkeypatch):
    """Issue 48: a kill while a staging folder is deleted must leave a folder the sweep recognises (its lock file, the
    owner mark) so that the next run finishes deleting it; so the mark goes last."""
    holder = leftovers.OwnedDir(prefix=leftovers.staging_prefix(tmp_path / "out"), dir=tmp_path)
    for i in range(40):
        (holder.path / f"f{i:02d}").write_text("x")
    (holder.path / "run").mkdir()
    (holder.path / "run" / "results.json").write_text("{}")
    gone = []
    unlink = os.unlink

    def spy(path, *args, **kwargs):
        gone.append(os.path.basename(path))
        return unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", spy)
    holder.cleanup()
    assert not holder.path.exists() and gone[-1] == leftovers.LOCK_NAME and gone.count(leftovers.LOCK_NAME) == 1


def test_a_cleanup_killed_half_way_is_swept_by_the_next_run(tmp_path):
    """A real kill -9 inside the cleanup (after its first deletion): the next run's sweep removes what is left."""
    out = tmp_path / "out"
    script = f"""
import os, sys
from pathlib import Path
from vlprobe.storage import leftovers
holder = leftovers.OwnedDir(prefix=leftovers.staging_prefix({str(out)!r}), dir={str(tmp_path)!r})
for i in range(40):
    (holder.path / f"f{{i:02d}}").write_text("x")
real = os.unlink
os.unlink = lambda *a, **k: (real(*a, **k), os.kill(os.getpid(), 9))
holder.cleanup()
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == -9, done.stderr
    (left,) = [p for p in tmp_path.iterdir() if p.name.startswith(".out.new-")]
    assert (left / leftovers.LOCK_NAME).exists() and len(list(left.iterdir())) == 40
    assert leftovers.sweep(out, tmp=False, log=None) == [left] and not left.exists()
