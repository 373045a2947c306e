"""Tracebacks and unbounded runs (issue 39, section 4): names too long for the file system, CREPE regions no image
has, runs without end. Each is refused in one line naming the culprit, before anything is loaded."""

from __future__ import annotations

import pytest
from helpers import jpeg

from vlprobe.dataset.images import ImageError, ImageTooLargeError, check_crop_box
from vlprobe.storage.paths import length_problem

LONG_300 = "x" * 300
LONG_10K = "y" * 10_000
DEEP_30 = "/".join(["d" * 200] * 30)  # 30 levels, over PATH_MAX in all


@pytest.mark.parametrize("path, words", [(LONG_300, "name of 300 bytes"), (LONG_10K, "name of 10,000 bytes"),
                                         (DEEP_30, "6,029 bytes long"), ("ok/short", None)])
def test_length_problem(path, words):
    problem = length_problem(path)
    assert (problem is None) if words is None else (words in problem)


@pytest.mark.parametrize("command", ["evaluate", "probe"])
@pytest.mark.parametrize("flag", ["--out", "--dataset", "--model", "--cache-dir"])
@pytest.mark.parametrize("name", [LONG_300, LONG_10K, DEEP_30], ids=["300", "10000", "30-levels"])
def test_long_names_are_one_line_before_anything_loads(cli, command, flag, name):
    code, _, err = cli(command, flag, name, "--no-progress")
    assert code == 2 and "Traceback" not in err and "Errno 36" not in err, err
    assert len(err.strip().splitlines()) == 1 and err.startswith(f"vlprobe {command}: error: {flag} ")
    assert "bytes" in err and len(err) < 600  # the name is shown shortened, not 10,000 characters


@pytest.mark.parametrize("argv, words", [
    (["--seeds", "1000000"], "--seeds 1000000: must be at most 100 runs per setting"),
    (["--finetune", "--epochs", "1000000000"], "--epochs 1000000000: must be at most 1,000 epochs"),
    (["--seed", str(2**63)], "must be at most 4,294,967,195"),
    (["--train-size", "10,,20"], "--train-size 10,,20: has an empty size between commas"),
    (["--train-modality", "image,image"], "--train-modality image,image: names image more than once"),
    (["--test-modality", "image,,caption"], "has an empty name between commas"),
])
def test_probe_bounds(cli, argv, words):
    code, _, err = cli("probe", *argv, "--no-progress")
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err


def test_evaluate_seed_bound(cli):
    code, _, err = cli("evaluate", "--seed", str(2**63), "--no-progress")
    assert code == 2 and "--seed 9223372036854775808: must be at most" in err, err


@pytest.mark.parametrize("row, error, words", [
    ({"x": 1e300, "y": 0.0, "width": 5.0, "height": 5.0}, ImageError, "not a region of an image"),
    ({"x": float("inf"), "y": 0.0, "width": 5.0, "height": 5.0}, ImageError, "not a region of an image"),
    ({"x": 0.0, "y": 0.0, "width": 100000.0, "height": 100000.0}, ImageTooLargeError, "10,000,000,000 pixels"),
])
def test_crepe_regions_no_image_has_are_refused_naming_the_row(row, error, words):
    from vlprobe.builders.crepe import Region, crop
    from vlprobe.builders.flow import Row

    region = Region(3, 2345, (row["x"], row["y"], row["width"], row["height"]), "a caption", ["a negative"], False)
    with pytest.raises(error, match=words) as err:
        crop(Row("prod_vg_hard_negs_swap_complexity_7/3", {}, (), record=region), "image",
             jpeg(size=(40, 30), color=(10, 20, 30)))
    assert "CREPE row prod_vg_hard_negs_swap_complexity_7/3 (image 2345.jpg)" in str(err.value)
    assert check_crop_box((1.4, 2.6, 10.0, 12.0), (40, 30), "w") == (1, 3, 10, 12)


# ---- issue 48: the metric's inputs, bounded; builds' counts bounded by the machine ----------------------------------

def _metric_cases():
    import numpy as np

    many = np.random.default_rng(0).random((200_000, 1, 2))
    gold = np.zeros_like(many)
    gold[:, 0, 0] = 1
    return [
        ("scalar", dict(predictions=5, references=1), "predictions=5: a single int; pass one m x n matrix"),
        ("4-D", dict(predictions=np.zeros((2, 1, 1, 2)), references=np.zeros((2, 1, 1, 2))),
         "predictions: a stacked array must have shape (N, m, n), got (2, 1, 1, 2)"),
        ("1 x 100,000", dict(predictions=[np.arange(100_000.0)[None]], references=[np.eye(1, 100_000)]),
         "predictions[0]: a 1 x 100,000 item compares every gold cell with every other cell of its row and column, "
         "10,000,100,000 comparisons"),
        ("200,000 x bootstrap 1,000", dict(predictions=many, references=gold, bootstrap=1000),
         "bootstrap=1,000: resampling 200,000 items (400,000 cells) 1,000 times is 400,000,000 cell resamples, more "
         "than the 200,000,000 the metric does (about a minute on one core); use bootstrap=500 or fewer"),
    ]


@pytest.mark.parametrize("case", _metric_cases(), ids=lambda c: c[0])
@pytest.mark.parametrize("door", ["compute", "evaluate.load"])
def test_the_metric_refuses_what_it_cannot_hold_in_one_line(case, door):
    """Issue 48: a scalar or a 4-D array was evaluate's raw format dump (or a TypeError); a 1 x 100,000 item tried to
    allocate 9.3 GiB; 200,000 items with 1,000 resamples ran past a minute. Each is one line, at once."""
    from vlprobe import metric

    _, kwargs, words = case
    if door == "evaluate.load" and kwargs.get("bootstrap"):
        pytest.skip("evaluate's Arrow round trip of 200,000 items takes a minute before the metric is reached")
    with pytest.raises(ValueError) as err:
        metric.compute(**kwargs) if door == "compute" else metric.load().compute(**kwargs)
    assert words in str(err.value) and "\n" not in str(err.value), str(err.value)


def test_the_metric_holds_many_large_items_in_blocks(monkeypatch):
    """Items are compared in blocks of at most MAX_COMPARISONS: the same numbers as all at once."""
    import numpy as np

    from vlprobe import metric

    rng = np.random.default_rng(1)
    S, G = rng.random((40, 6, 6)).round(1), np.tile(np.eye(6), (40, 1, 1))
    whole = metric.compute(S, G, ties="lenient")
    sizes, per_item = [], metric.module._per_item
    monkeypatch.setattr(metric.module, "_per_item", lambda S, *a, **k: sizes.append(len(S)) or per_item(S, *a, **k))
    monkeypatch.setattr(metric.module, "MAX_COMPARISONS", 6 * 6 * 12 * 7)  # 7 items a block
    assert metric.compute(S, G, ties="lenient") == whole
    assert max(sizes) == 7 and sum(sizes) > 40


@pytest.mark.parametrize("argv, words", [
    (["build", "travlr", "--workers", "500"], "--workers 500: must be at most"),
    (["build", "valse", "--read-workers", "100000"], "--read-workers 100000: must be at most"),
    (["build", "winoground_style", "--items", str(2**63)], f"--items {2**63}: must be at most 1,000,000"),
    (["build", "valse", "--retries", "1000000"], "--retries 1000000: must be at most 100"),
    (["build", "travlr", "--out", ""], "--out '.': names the working directory"),
    (["build", "travlr", "--out", "."], "--out '.': names the working directory"),
    (["build", "travlr", "--out", ".."], "is the working directory or a folder that holds it"),
])
def test_build_counts_and_outs_are_bounded(argv, words, tmp_path, monkeypatch, cli):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    code, _, err = cli(*argv)
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"] and not any(work.iterdir())  # nothing written


def test_an_image_refused_in_python_is_a_vlprobe_error():
    """Issue 48: a 50,000 x 50,000 PNG through vlprobe.probe surfaced as a bare ValueError subclass (ImageError), not
    the VlprobeError every other refusal of the API is."""
    from vlprobe.errors import VlprobeError

    assert issubclass(ImageTooLargeError, VlprobeError) and issubclass(ImageError, ValueError)
    with pytest.raises(VlprobeError, match="2,500,000,000 pixels"):
        check_crop_box((0, 0, 50_000, 50_000), (10, 10), "row 1")
