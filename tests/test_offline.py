"""A dataset name that is neither a folder nor reachable fails at once, in one line, instead of
datasets' half a minute of `Retrying in 8s [Retry 5/5]`. The Hub is stood in for by a closed
port on this machine (HF_ENDPOINT), and by HF_HUB_OFFLINE=1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import closed_port

REPO = Path(__file__).resolve().parents[1]

SCRIPT = """
import sys, time
import vlprobe
t = time.perf_counter()
try:
    vlprobe.evaluate(model=sys.argv[1], datasets=sys.argv[2], progress=False, cache_dir="none")
except vlprobe.DatasetError as err:
    print(f"{time.perf_counter() - t:.2f}")
    print(err)
    print("datasets imported" if "datasets" in sys.modules else "datasets not imported")
"""


def _online_env(tmp_path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_ENDPOINT")}
    env.update(PYTHONPATH=str(REPO), HF_HOME=str(tmp_path / "hf"), HF_DATASETS_CACHE=str(tmp_path / "hf" / "ds"),
               **extra)
    return env


@pytest.mark.parametrize("how", ["unreachable", "offline"])
def test_unknown_dataset_fails_fast_in_one_line(tmp_path, tiny_clip_path, how):
    extra = ({"HF_ENDPOINT": f"http://127.0.0.1:{closed_port()}"} if how == "unreachable"
             else {"HF_HUB_OFFLINE": "1"})
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tiny_clip_path), "nosuch"], capture_output=True,
                          text=True, timeout=300, env=_online_env(tmp_path, **extra), cwd=tmp_path)
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 3, proc.stdout + proc.stderr
    seconds, message = float(lines[0]), lines[1]
    assert seconds < 8, seconds  # datasets alone retried for 30 s (5 x 8 s) before saying anything
    assert lines[2] == "datasets not imported"  # told before datasets' (and torch's) imports: a second or two
    assert "Retrying" not in proc.stderr
    assert "'nosuch'" in message and "not a local folder" in message and "vlprobe build" in message
    assert ("cannot be reached" in message) if how == "unreachable" else ("HF_HUB_OFFLINE is set" in message)


def test_cli_says_it_in_one_line(tmp_path, tiny_clip_path, cli):
    env = _online_env(tmp_path, HF_ENDPOINT=f"http://127.0.0.1:{closed_port()}")
    code, _, err = cli.subprocess("evaluate", "--dataset", "nosuch", "--model", tiny_clip_path, "--out", tmp_path / "o",
                                  env=env, cwd=tmp_path)
    assert code == 2
    assert err.strip().splitlines() == [err.strip()] and "vlprobe evaluate: error: dataset 'nosuch'" in err


def test_the_probe_fails_as_fast_on_an_unreachable_name(tmp_path, tiny_clip_path, cli):
    """`vlprobe probe --dataset nosuch` spent 28 s in datasets' retries: now the same one line as evaluate."""
    env = _online_env(tmp_path, HF_ENDPOINT=f"http://127.0.0.1:{closed_port()}", HOME=str(tmp_path / "home"))
    code, _, err = cli.subprocess("probe", "--dataset", "nosuch", "--model", tiny_clip_path, "--out", tmp_path / "o",
                                  env=env, cwd=tmp_path)
    assert code == 2, err
    assert err.strip().splitlines() == [err.strip()] and "vlprobe probe: error: dataset 'nosuch'" in err \
        and "cannot be reached" in err
    assert "Retrying" not in err  # the retries took the 28 s (no clock: no test times the machine)


def test_a_path_that_is_not_there_is_not_asked_of_the_hub(tmp_path, tiny_clip_path):
    from vlprobe.dataset.splits import check_reachable
    from vlprobe.errors import DatasetError

    for name in ("./nosuch", str(tmp_path / "nosuch"), "a/b/c"):
        with pytest.raises(DatasetError, match="no such folder"):
            check_reachable(name)


def _hub_answers(monkeypatch, answer, kind="dataset"):
    """HfApi.dataset_info (or model_info) stood in for: raises ``answer``, or returns when it is None."""
    import huggingface_hub

    calls = []

    def info(self, repo_id, **kw):
        calls.append((repo_id, kw.get("timeout")))
        if answer is not None:
            raise answer

    monkeypatch.setattr(huggingface_hub.HfApi, f"{kind}_info", info)
    return calls


def _no_cache(tmp_path, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "ds"))
    for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(v, raising=False)
    return tmp_path / "hub"


def test_hub_answers_are_told_apart(tmp_path, monkeypatch):
    """Not on the Hub: 'check the name'; unreachable with a cached copy: 'rerun with
    HF_HUB_OFFLINE=1'; gated or a server error: left to datasets; found: asked once."""
    import httpx
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    from vlprobe.dataset.splits import check_reachable
    from vlprobe.errors import DatasetError

    hub = _no_cache(tmp_path, monkeypatch)
    response = httpx.Response(404, request=httpx.Request("GET", "http://hub"))
    _hub_answers(monkeypatch, RepositoryNotFoundError("no", response=response))
    with pytest.raises(DatasetError, match="no such dataset on the Hub .*check the name"):
        check_reachable("owner/nosuch")

    (hub / "datasets--owner--cached").mkdir(parents=True)
    _hub_answers(monkeypatch, ConnectionError("refused"))
    with pytest.raises(DatasetError, match="a copy is cached: rerun with HF_HUB_OFFLINE=1"):
        check_reachable("owner/cached")

    _hub_answers(monkeypatch, GatedRepoError("gated", response=response))
    check_reachable("owner/gated")  # datasets says what a gated dataset needs

    class ReadTimeout(Exception):  # as httpx names it: the Hub answered the connection, slowly
        pass

    _hub_answers(monkeypatch, ReadTimeout("slow"))
    check_reachable("owner/slow")  # a slow link is not refused: datasets waits longer

    calls = _hub_answers(monkeypatch, None)
    check_reachable("owner/found")
    check_reachable("owner/found")
    assert calls == [("owner/found", 2)]


def test_hub_answers_about_a_model_are_told_apart(tmp_path, monkeypatch):
    """The same answers for --model: absent, unreachable with and without a cached copy, gated, slow, found."""
    import httpx
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    from vlprobe.errors import ModelError
    from vlprobe.names import check_model

    hub = _no_cache(tmp_path, monkeypatch)
    for v in ("TRANSFORMERS_OFFLINE",):
        monkeypatch.delenv(v, raising=False)
    response = httpx.Response(404, request=httpx.Request("GET", "http://hub"))
    _hub_answers(monkeypatch, RepositoryNotFoundError("no", response=response), "model")
    with pytest.raises(ModelError, match="has no model of that name"):
        check_model("owner/nosuch")
    _hub_answers(monkeypatch, ConnectionError("refused"), "model")
    with pytest.raises(ModelError, match=r"is not a local folder, and the Hub .* cannot be reached \(ConnectionError\)"):
        check_model("owner/nocopy")
    (hub / "models--owner--cached").mkdir(parents=True)
    with pytest.raises(ModelError, match="a copy is cached: rerun with HF_HUB_OFFLINE=1"):
        check_model("owner/cached")

    class ReadTimeout(Exception):
        pass

    for answer in (GatedRepoError("gated", response=response), ReadTimeout("slow"), None):
        calls = _hub_answers(monkeypatch, answer, "model")
        check_model("owner/there")  # loading says what a gated model needs; a slow link is waited for
        assert calls == [("owner/there", 2)]


def test_a_folder_and_config_joined_by_a_slash_names_the_config_option(tmp_path, monkeypatch):
    """`--dataset travlr/spatiality` is a Hub id to the Hub; with a travlr folder here, the error says --config."""
    from vlprobe.errors import DatasetError
    from vlprobe.names import check_dataset

    _no_cache(tmp_path, monkeypatch)
    (tmp_path / "work" / "travlr").mkdir(parents=True)
    (tmp_path / "work" / "travlr" / "vlprobe.yaml").write_text("benchmark: travlr\n")
    monkeypatch.chdir(tmp_path / "work")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DatasetError, match=r"travlr is a dataset folder here: to score its config 'spatiality', "
                                           r"pass --dataset travlr --config spatiality$"):
        check_dataset("travlr/spatiality")
    monkeypatch.delenv("HF_HUB_OFFLINE")
    _hub_answers(monkeypatch, ConnectionError("refused"))
    with pytest.raises(DatasetError, match=r"cannot be reached \(ConnectionError\); travlr is a dataset folder"):
        check_dataset("travlr/nosuch")


def test_offline_with_a_cached_copy_goes_on(tmp_path, monkeypatch):
    """HF_HUB_OFFLINE=1: a copy in the Hub cache or datasets' cache is left to datasets to read;
    the Hub is never asked."""
    from vlprobe.dataset.splits import check_reachable
    from vlprobe.errors import DatasetError

    hub = _no_cache(tmp_path, monkeypatch)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    calls = _hub_answers(monkeypatch, AssertionError("the Hub was asked"))
    with pytest.raises(DatasetError, match="HF_HUB_OFFLINE is set with no copy"):
        check_reachable("owner/ds")
    (hub / "datasets--owner--ds").mkdir(parents=True)
    check_reachable("owner/ds")
    (tmp_path / "ds" / "other___ds").mkdir(parents=True)
    check_reachable("other/ds")
    assert calls == []
