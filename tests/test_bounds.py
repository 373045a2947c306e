"""Tracebacks and unbounded runs (issue 39, section 4): names too long for the file system, CREPE regions no image
has, runs without end. Each is refused in one line naming the culprit, before anything is loaded."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from vlprobe.cli import main
from vlprobe.images import ImageError, ImageTooLargeError, check_crop_box
from vlprobe.paths import length_problem

LONG_300 = "x" * 300
LONG_10K = "y" * 10_000
DEEP_30 = "/".join(["d" * 200] * 30)  # 30 levels, over PATH_MAX in all


def _cli(capsys, *argv) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("path, words", [(LONG_300, "name of 300 bytes"), (LONG_10K, "name of 10,000 bytes"),
                                         (DEEP_30, "6,029 bytes long"), ("ok/short", None)])
def test_length_problem(path, words):
    problem = length_problem(path)
    assert (problem is None) if words is None else (words in problem)


@pytest.mark.parametrize("command", ["evaluate", "probe"])
@pytest.mark.parametrize("flag", ["--out", "--dataset", "--model", "--cache-dir"])
@pytest.mark.parametrize("name", [LONG_300, LONG_10K, DEEP_30], ids=["300", "10000", "30-levels"])
def test_long_names_are_one_line_before_anything_loads(capsys, command, flag, name):
    code, err = _cli(capsys, command, flag, name, "--no-progress")
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
def test_probe_bounds(capsys, argv, words):
    code, err = _cli(capsys, "probe", *argv, "--no-progress")
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err


def test_evaluate_seed_bound(capsys):
    code, err = _cli(capsys, "evaluate", "--seed", str(2**63), "--no-progress")
    assert code == 2 and "--seed 9223372036854775808: must be at most" in err, err


def _jpeg(size=(40, 30)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, (10, 20, 30)).save(buf, "JPEG")
    return buf.getvalue()


@pytest.mark.parametrize("row, error, words", [
    ({"x": 1e300, "y": 0.0, "width": 5.0, "height": 5.0}, ImageError, "not a region of an image"),
    ({"x": float("inf"), "y": 0.0, "width": 5.0, "height": 5.0}, ImageError, "not a region of an image"),
    ({"x": 0.0, "y": 0.0, "width": 100000.0, "height": 100000.0}, ImageTooLargeError, "10,000,000,000 pixels"),
])
def test_crepe_regions_no_image_has_are_refused_naming_the_row(row, error, words):
    from vlprobe.builders.crepe import crop

    row = {**row, "id": "prod_vg_hard_negs_swap_complexity_7/3", "image_id": "2345"}
    with pytest.raises(error, match=words) as err:
        crop(row, "image", _jpeg())
    assert "CREPE row prod_vg_hard_negs_swap_complexity_7/3 (image 2345.jpg)" in str(err.value)
    assert check_crop_box((1.4, 2.6, 10.0, 12.0), (40, 30), "w") == (1, 3, 10, 12)
