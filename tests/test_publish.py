"""`vlprobe publish`: each kind of broken folder is refused with a clear problem; publishing calls
HfApi (mocked with create_autospec) with the right repo types, ids and folders; --dry-run touches
nothing; a missing token and offline mode give a message, not a traceback."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from unittest import mock

import datasets
import huggingface_hub
import pytest
import yaml
from helpers import digests
from huggingface_hub import HfApi

from vlprobe import publish as pub
from vlprobe.builders.folder import build_folder
from vlprobe.cli import main


# ---------------------------------------------------------------------------------------------
# fixtures: a good dataset folder (the worked example), a good metric Space and a good Space
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def good_dataset(repo_root, tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("src") / "shapes"
    shutil.copytree(repo_root / "examples/shapes", src, ignore=shutil.ignore_patterns("images", "__pycache__"))
    spec = importlib.util.spec_from_file_location("shapes_make_images_p", repo_root / "examples/shapes/make_images.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.make_images(src / "images")
    out = tmp_path_factory.mktemp("good") / "shapes_dataset"
    build_folder(src, out, captions="captions.csv", config="shapes", license="cc0-1.0")
    build_folder(src, out, captions="swaps.jsonl", config="swaps", license="cc0-1.0")
    return out


@pytest.fixture
def folder(good_dataset, tmp_path) -> Path:
    """A fresh copy of the good dataset folder, to break."""
    dst = tmp_path / "instrument"
    shutil.copytree(good_dataset, dst)
    return dst


def _edit_card(folder: Path, change) -> None:
    text = (folder / "README.md").read_text()
    _, header, body = text.split("---", 2)
    meta = yaml.safe_load(header)
    change(meta)
    (folder / "README.md").write_text("---\n" + yaml.safe_dump(meta, sort_keys=False) + "---" + body)


def _shards(folder: Path) -> list[str]:
    """The folder's parquet shards (named after their content: <split>-00000-of-00001-<hash>.parquet)."""
    return sorted(p.relative_to(folder).as_posix() for p in (folder / "data").glob("*/*.parquet"))


def _problems(folder: Path) -> list[str]:
    return pub.check_dataset_folder(folder)[0]


def _one(problems: list[str], needle: str) -> str:
    hits = [p for p in problems if needle in p]
    assert hits, f"no problem mentions {needle!r}: {problems}"
    return hits[0]


METRIC_PY = '''
"""A tiny metric with the layout of valse_metric.py (for testing the publishing checks only)."""
import datasets
import evaluate

_DESCRIPTION = "Pairwise accuracy of a caption score over a foil score."
_KWARGS_DESCRIPTION = """
Args:
    predictions: list of [caption score, foil score].
    references: list of int (unused; 0).
Examples:
    >>> import evaluate
    >>> metric = evaluate.load("my-lab/valse_metric")
    >>> metric.compute(predictions=[[0.9, 0.1], [0.2, 0.8]], references=[0, 0])
    {'acc_r': RESULT}
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class ValseMetric(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION, citation="", inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Sequence(datasets.Value("float32")),
                                        "references": datasets.Value("int32")}),
        )

    def _compute(self, predictions, references):
        return {"acc_r": sum(p[0] > p[1] for p in predictions) / len(predictions)}
'''

SPACE_README = """---
title: {title}
sdk: gradio
sdk_version: 6.31.0
app_file: app.py
---

# {title}
"""

APP_PY = '''
import gradio as gr

def score(text):
    return text.upper()

demo = gr.Interface(score, gr.Textbox(), gr.Textbox())
{launch}
'''


def _write_space(folder: Path, title: str, launch="if __name__ == '__main__':\n    demo.launch()") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "README.md").write_text(SPACE_README.format(title=title))
    (folder / "app.py").write_text(APP_PY.format(launch=launch))
    (folder / "requirements.txt").write_text("evaluate==0.4.6\n")
    # what must never be uploaded
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "app.cpython-311.pyc").write_bytes(b"\0")
    (folder / ".venv" / "lib").mkdir(parents=True)
    (folder / ".venv" / "lib" / "x.py").write_text("")
    return folder


@pytest.fixture
def metric_folder(tmp_path) -> Path:
    folder = _write_space(tmp_path / "metric", "VALSE metric")
    (folder / "valse_metric.py").write_text(METRIC_PY.replace("RESULT", "0.5"))
    return folder


# ---------------------------------------------------------------------------------------------
# dataset folder validation: one test per kind of breakage
# ---------------------------------------------------------------------------------------------
def test_good_folder_has_no_problems(good_dataset):
    problems, files = pub.check_dataset_folder(good_dataset)
    assert problems == []
    assert len(files) == 2


def test_missing_card(folder):
    (folder / "README.md").unlink()
    _one(_problems(folder), "no dataset card")


def test_card_without_yaml(folder):
    (folder / "README.md").write_text("# just prose\n")
    _one(_problems(folder), "no YAML header")


def test_missing_default(folder):
    _edit_card(folder, lambda m: [c.pop("default", None) for c in m["configs"]])
    _one(_problems(folder), "exactly one config must have 'default: true', found none")


def test_two_defaults(folder):
    _edit_card(folder, lambda m: [c.update(default=True) for c in m["configs"]])
    _one(_problems(folder), "found 2 (shapes, swaps)")


def test_config_pointing_to_missing_files(folder):
    def change(meta):
        meta["configs"][1]["data_files"][0]["path"] = "data/swap/test-*.parquet"

    _edit_card(folder, change)
    msg = _one(_problems(folder), "matches no file")
    assert "config 'swaps'" in msg and "data/swap/test-*.parquet" in msg


def test_features_type_mismatch(folder):
    def change(meta):
        feats = meta["dataset_info"][0]["features"]
        next(f for f in feats if f["name"] == "caption")["dtype"] = "int64"

    _edit_card(folder, change)
    msg = _one(_problems(folder), "column 'caption' is declared as")
    assert "config 'shapes'" in msg


def test_features_column_mismatch(folder):
    _edit_card(folder, lambda m: m["dataset_info"][0]["features"].append({"name": "difficulty", "dtype": "int32"}))
    _one(_problems(folder), "declared but not in the parquet: ['difficulty']")


def test_features_not_declared(folder):
    _edit_card(folder, lambda m: m.pop("dataset_info"))
    problems = _problems(folder)
    _one(problems, "config 'shapes': no features declared")
    _one(problems, "config 'swaps': no features declared")


def test_path_only_images(folder, tmp_path):
    """A parquet written from image file paths stores the paths, not the bytes."""
    shapes = datasets.load_dataset(str(folder), "shapes", split="test", cache_dir=str(tmp_path / "c"))
    paths = []
    for i, row in enumerate(shapes.cast_column("image", datasets.Image(decode=False))):
        p = tmp_path / f"img{i}.png"
        p.write_bytes(row["image"]["bytes"])
        paths.append(str(p))
    bad = shapes.remove_columns("image").add_column("image", paths).cast_column("image", datasets.Image())
    bad = bad.select_columns(list(shapes.column_names))
    (shard,) = (folder / "data/shapes").glob("test-*.parquet")  # shards are named after their content
    bad.to_parquet(str(shard))
    msg = _one(_problems(folder), "stored as a path only")
    assert "8 of 8 image(s)" in msg and "column 'image'" in msg


def test_no_licence(folder):
    _edit_card(folder, lambda m: m.pop("license"))
    _one(_problems(folder), "no licence")


def test_licence_other_needs_a_name(folder):
    _edit_card(folder, lambda m: m.update(license="other"))
    _one(_problems(folder), "license_name")


def test_missing_spec(folder):
    (folder / "vlprobe.yaml").unlink()
    _one(_problems(folder), "vlprobe.yaml: missing")


def test_rows_that_do_not_convert(folder):
    (folder / "vlprobe.yaml").write_text("images: [image]\ntexts: [caption, foils]\ngold: [[1, 0]]\n"
                                         "configs:\n  swaps: {images: [images], texts: [captions], gold: [[1, 0], [0, 1]]}\n")
    msg = _one(_problems(folder), "rows do not convert")
    assert "config 'shapes'" in msg and "no column 'foils'" in msg


def test_gold_that_does_not_fit(folder):
    (folder / "vlprobe.yaml").write_text("images: [image]\ntexts: [caption, foil]\ngold: [[1, 0, 0]]\n"
                                         "configs:\n  swaps: {images: [images], texts: [captions], gold: [[1, 0], [0, 1]]}\n")
    _one(_problems(folder), "gold matrix has shape")


def test_spec_overriding_an_unknown_config(folder):
    text = (folder / "vlprobe.yaml").read_text().replace("  swaps:", "  swap:")
    (folder / "vlprobe.yaml").write_text(text)
    problems = _problems(folder)
    _one(problems, "configs.swap overrides a config the card does not declare")
    _one(problems, "config 'swaps' split 'test': rows do not convert")  # the base spec does not fit swaps


def test_loading_script_blocks_load_dataset(folder):
    """datasets >= 4 refuses a folder holding <folder name>.py; the check runs load_dataset itself."""
    (folder / "instrument.py").write_text("# an old loading script\n")
    _one(_problems(folder), "load_dataset(")


def test_plan_lists_only_card_spec_and_data(folder):
    (folder / "notes.txt").write_text("not for the Hub")
    plan = pub.plan_dataset(folder, "my-lab/shapes")
    assert plan.repo_type == "dataset" and plan.repo_id == "my-lab/shapes"
    assert plan.files == ["README.md", "vlprobe.yaml", *_shards(folder)]
    assert [f.rsplit("-", 1)[0] for f in _shards(folder)] == ["data/shapes/test-00000-of-00001",
                                                              "data/swaps/test-00000-of-00001"]
    assert plan.allow_patterns == plan.files


def test_plan_uploads_other_specs_and_checks_them(folder):
    """A second framing (TraVLR's true_false.yaml, chosen with --spec) travels with the dataset."""
    (folder / "true_false.yaml").write_text("id: id\nimages: [image]\ntexts: [caption]\ngold: [[1]]\n")
    plan = pub.plan_dataset(folder, "my-lab/shapes")
    assert plan.files[:3] == ["README.md", "vlprobe.yaml", "true_false.yaml"]
    (folder / "true_false.yaml").write_text("images: [image]\n")  # no texts, no gold
    with pytest.raises(pub.ValidationError, match="true_false.yaml"):
        pub.plan_dataset(folder, "my-lab/shapes")


def test_plan_refuses_with_the_whole_list(folder):
    (folder / "vlprobe.yaml").unlink()
    _edit_card(folder, lambda m: m.pop("license"))
    with pytest.raises(pub.ValidationError) as info:
        pub.plan_dataset(folder, "my-lab/shapes")
    assert len(info.value.problems) == 2
    assert "not ready to publish (2 problem(s))" in str(info.value)


@pytest.mark.parametrize("repo", ["shapes", "a/b/c", "my lab/shapes", "my-lab/sh apes"])
def test_bad_repo_ids(repo):
    with pytest.raises(pub.PublishError, match="--repo"):
        pub.check_repo_id(repo)


# ---------------------------------------------------------------------------------------------
# publishing through the CLI with a mocked HfApi
# ---------------------------------------------------------------------------------------------
@pytest.fixture
def api_cls(monkeypatch):
    cls = mock.create_autospec(HfApi)
    cls.return_value.upload_folder.return_value = mock.Mock(commit_url="https://huggingface.co/fake/commit/1")
    monkeypatch.setattr(pub.hub, "HfApi", cls)  # where publish() builds its client
    return cls


def test_publish_dataset_calls_hfapi(folder, api_cls, monkeypatch, capsys):
    monkeypatch.setenv("HF_TOKEN", "hf_from_env")
    assert main(["publish", "dataset", str(folder), "--repo", "my-lab/shapes", "--private"]) == 0
    api_cls.assert_called_once_with(token="hf_from_env")
    api = api_cls.return_value
    api.create_repo.assert_called_once_with("my-lab/shapes", repo_type="dataset", exist_ok=True, private=True)
    api.upload_folder.assert_called_once()
    kw = api.upload_folder.call_args.kwargs
    assert kw["repo_id"] == "my-lab/shapes" and kw["repo_type"] == "dataset"
    assert kw["folder_path"] == str(folder)
    assert kw["allow_patterns"] == ["README.md", "vlprobe.yaml", *_shards(folder)]
    assert "https://huggingface.co/fake/commit/1" in capsys.readouterr().out


def test_token_flag_wins(folder, api_cls, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_from_env")
    assert main(["publish", "dataset", str(folder), "--repo", "my-lab/shapes", "--token", "hf_flag"]) == 0
    api_cls.assert_called_once_with(token="hf_flag")


def test_refused_folder_uploads_nothing(folder, api_cls, monkeypatch, capsys):
    monkeypatch.setenv("HF_TOKEN", "hf_x")
    (folder / "vlprobe.yaml").unlink()
    assert main(["publish", "dataset", str(folder), "--repo", "my-lab/shapes"]) == 2
    assert "vlprobe.yaml: missing" in capsys.readouterr().err
    api_cls.assert_not_called()


def test_dry_run_touches_nothing(folder, api_cls, monkeypatch, capsys):
    monkeypatch.setenv("HF_TOKEN", "hf_x")
    before = digests(folder)
    assert main(["publish", "dataset", str(folder), "--repo", "my-lab/shapes", "--dry-run"]) == 0
    api_cls.assert_not_called()
    assert digests(folder) == before
    out = capsys.readouterr().out
    assert "dataset repo my-lab/shapes (public)" in out and "4 file(s)" in out
    assert _shards(folder)[1] in out and "KB" in out
    assert "nothing was uploaded" in out and "token: found" in out
    assert "config 'swaps': load_dataset ok (test 3 rows)" in out and "items of 2 image(s) x 2 text(s)" in out


def test_missing_token_message(folder, api_cls, monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty_home"))  # no stored login either
    monkeypatch.setattr(huggingface_hub.constants, "HF_TOKEN_PATH", str(tmp_path / "empty_home/token"))
    assert main(["publish", "dataset", str(folder), "--repo", "my-lab/shapes"]) == 2
    err = capsys.readouterr().err
    assert "no Hugging Face token" in err and "HF_TOKEN" in err and "Traceback" not in err
    api_cls.assert_not_called()


def test_offline_message_with_the_real_hfapi(folder, monkeypatch, capsys):
    """The real HfApi under HF_HUB_OFFLINE=1 raises OfflineModeIsEnabled before any request."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    assert main(["publish", "dataset", str(folder), "--repo", "my-lab/shapes", "--token", "hf_fake"]) == 2
    err = capsys.readouterr().err
    assert "offline mode is on (HF_HUB_OFFLINE=1)" in err and "Traceback" not in err


def test_http_refusal_message(folder, api_cls, capsys):
    from huggingface_hub.errors import HfHubHTTPError

    response = mock.Mock(status_code=403, headers={}, request=None)
    api_cls.return_value.create_repo.side_effect = HfHubHTTPError("403 Forbidden", response=response)
    assert main(["publish", "dataset", str(folder), "--repo", "other-org/shapes", "--token", "hf_x"]) == 2
    assert "may not write to 'other-org'" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# the metric Space and the demo Space
# ---------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_metric_checks_pass_and_publish_as_space(metric_folder, api_cls, capsys):
    assert pub.check_metric_folder(metric_folder, "my-lab/valse_metric", import_app=False) == []
    args = ["publish", "metric", "--folder", str(metric_folder), "--repo", "my-lab/valse_metric", "--token", "hf_x"]
    assert main(args) == 0
    api = api_cls.return_value
    api.create_repo.assert_called_once_with(
        "my-lab/valse_metric", repo_type="space", exist_ok=True, private=False, space_sdk="gradio")
    kw = api.upload_folder.call_args.kwargs
    assert kw["repo_type"] == "space" and kw["folder_path"] == str(metric_folder)
    assert "*__pycache__*" in kw["ignore_patterns"] and ".venv/*" in kw["ignore_patterns"]


def test_metric_plan_leaves_out_caches(metric_folder):
    plan = pub.space._space_plan(metric_folder, "my-lab/valse_metric")
    assert plan.files == ["README.md", "app.py", "requirements.txt", "valse_metric.py"]


def test_metric_repo_name_must_match_module(metric_folder, api_cls, capsys):
    assert main(["publish", "metric", "--folder", str(metric_folder), "--repo", "my-lab/valse_score", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "no valse_score.py" in err and "<org>/valse_metric" in err
    api_cls.assert_not_called()


def test_metric_failing_doctest(metric_folder):
    (metric_folder / "valse_metric.py").write_text(METRIC_PY.replace("RESULT", "0.75"))
    msg = _one(pub.check_metric_folder(metric_folder, "my-lab/valse_metric", import_app=False), "docstring example")
    assert "1 of 3" in msg and "0.75" in msg


def test_metric_without_examples(metric_folder):
    text = METRIC_PY.replace(">>>", "   ")
    (metric_folder / "valse_metric.py").write_text(text)
    _one(pub.check_metric_folder(metric_folder, "my-lab/valse_metric", import_app=False), "no docstring examples")


def test_metric_that_does_not_load(metric_folder):
    (metric_folder / "valse_metric.py").write_text("import datasets\nraise ImportError('broken on purpose')\n")
    _one(pub.check_metric_folder(metric_folder, "my-lab/valse_metric", import_app=False), "evaluate.load fails")


def test_metric_needs_evaluate_in_requirements(metric_folder):
    (metric_folder / "requirements.txt").write_text("numpy\n")
    _one(pub.check_metric_folder(metric_folder, "my-lab/valse_metric", import_app=False), "must list evaluate")


def test_space_yaml_needs_sdk_and_app_file(tmp_path):
    folder = _write_space(tmp_path / "space", "Demo")
    (folder / "README.md").write_text("---\ntitle: Demo\n---\n")
    problems = pub.check_space_folder(folder, import_app=False)
    _one(problems, "no 'sdk'")
    _one(problems, "no 'app_file'")


@pytest.mark.slow
def test_space_app_imports_and_publishes(tmp_path, api_cls):
    folder = _write_space(tmp_path / "space", "Demo")
    assert main(["publish", "space", "--folder", str(folder), "--repo", "my-lab/vlprobe-demo", "--token", "t"]) == 0
    api_cls.return_value.create_repo.assert_called_once_with(
        "my-lab/vlprobe-demo", repo_type="space", exist_ok=True, private=False, space_sdk="gradio")
    # The upload is a staged, self-contained copy of the Space folder (see stage_space).
    uploaded = Path(api_cls.return_value.upload_folder.call_args.kwargs["folder_path"])
    assert uploaded.name == folder.name and uploaded != folder


@pytest.mark.slow
def test_space_app_that_launches_at_import_or_fails(tmp_path):
    folder = _write_space(tmp_path / "space", "Demo", launch="demo.launch()\n")
    _one(pub.check_space_folder(folder), "calls launch() at import")
    (folder / "app.py").write_text("import no_such_module_xyz\n")
    _one(pub.check_space_folder(folder), "does not import: ModuleNotFoundError")


def test_repository_metric_folder_is_publishable(repo_root):
    """The real metric/ (the lead's valse_metric.py): loads, its doctests pass, names evaluate.
    The Gradio app import is left to test_space_app_imports_and_publishes' kind of check, to keep
    this fast; `vlprobe publish metric --dry-run` runs it too."""
    folder = repo_root / "metric"
    if not (folder / "README.md").is_file():
        pytest.skip("metric/README.md is not written yet")
    notes: list[str] = []
    assert pub.check_metric_folder(folder, "my-lab/valse_metric", import_app=False, notes=notes) == []
    assert any("docstring example(s)" in n for n in notes)


@pytest.mark.slow
def test_real_space_is_staged_self_contained(repo_root):
    """space/ alone cannot import vlprobe (not on PyPI): the plan carries the package, with the
    metric symlink resolved into a real file, and the default model; the app imports from there."""
    plan = pub.plan_space(repo_root / "space", "my-lab/vlprobe-demo")
    staged = plan.folder
    assert staged != (repo_root / "space").resolve()
    assert "app.py" in plan.files and "vlprobe/__init__.py" in plan.files
    metric_copy = staged / "vlprobe" / "_bundled" / "metric" / "valse_metric.py"  # where a wheel has it
    assert metric_copy.is_file() and not metric_copy.is_symlink()
    assert metric_copy.read_bytes() == (repo_root / "metric" / "valse_metric.py").read_bytes()
    if (repo_root / "models" / "mini-clip" / "config.json").is_file():
        assert "models/mini-clip/config.json" in plan.files
    assert not any("__pycache__" in f for f in plan.files)
