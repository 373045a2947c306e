"""A rebuild with the same inputs and generator does nothing and says so (issue 47.5): `vlprobe build travlr` twice
renders once; another seed, --force, a changed or missing file, another generator rebuild
(vlprobe/builders/unchanged.py)."""

from __future__ import annotations

import shutil

import pytest

from vlprobe.builders import synthetic, unchanged
from vlprobe.cli import main

ARGS = ["--size", "tiny", "--configs", "spatiality", "--split-sizes", "train=4,validation=2,test_ind=2,test_ood=2"]


@pytest.fixture
def renders(monkeypatch) -> list[int]:
    """The number of scenes each render call was given."""
    calls: list[int] = []
    real = synthetic.RateMeter.render

    def counting(self, scenes, workers, **options):
        calls.append(len(scenes))
        return real(self, scenes, workers, **options)

    monkeypatch.setattr(synthetic.RateMeter, "render", counting)
    return calls


def _files_and_mtimes(folder):
    return {p.relative_to(folder).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_second_build_with_the_same_inputs_renders_nothing(tmp_path, renders, capsys):
    out = tmp_path / "travlr"
    assert main(["build", "travlr", *ARGS, "--out", str(out)]) == 0
    assert f"built {out}" in capsys.readouterr().out and sum(renders) == 10
    before = _files_and_mtimes(out)
    renders.clear()
    assert main(["build", "travlr", *ARGS, "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert said.startswith(f"{out} is up to date (built from the same inputs: configs spatiality, seed 0, size tiny, "
                           f"split_sizes ") and said.rstrip().endswith("nothing built; --force rebuilds it")
    assert renders == [] and _files_and_mtimes(out) == before  # not a byte, not a time stamp changed


@pytest.mark.parametrize("change", ["--seed 1", "--force", "a shard deleted", "a shard changed", "the card edited",
                                    "another Pillow"])
def test_anything_else_rebuilds(tmp_path, renders, capsys, monkeypatch, change):
    out = tmp_path / "travlr"
    assert main(["build", "travlr", *ARGS, "--out", str(out)]) == 0
    renders.clear()
    extra = change.split() if change.startswith("--") else []
    shard = sorted((out / "data" / "spatiality").glob("train-*.parquet"))[0]
    if change == "a shard deleted":
        shard.unlink()
    elif change == "a shard changed":
        shard.write_bytes(shard.read_bytes()[:-10])
    elif change == "the card edited":
        (out / "README.md").write_text((out / "README.md").read_text() + "\nmy notes\n")
    elif change == "another Pillow":
        real = unchanged.metadata.version
        monkeypatch.setattr(unchanged.metadata, "version", lambda name: "0.0" if name == "Pillow" else real(name))
    capsys.readouterr()
    assert main(["build", "travlr", *ARGS, *extra, "--out", str(out)]) == 0
    assert f"built {out}" in capsys.readouterr().out and sum(renders) == 10
    assert unchanged.up_to_date(out, unchanged.Inputs(**_recorded(out)))  # and the record now describes this build


def _recorded(folder):
    import json

    return json.loads((folder / "data" / unchanged.RECORD).read_text())["inputs"]


def test_the_generator_digest_follows_the_code(tmp_path, monkeypatch):
    package = tmp_path / "vlprobe"
    shutil.copytree(unchanged.PACKAGE / "scenes", package / "scenes")
    monkeypatch.setattr(unchanged, "PACKAGE", package)
    first = unchanged.generator_digest(unchanged.package_files(["scenes/*.py"]))
    assert unchanged.generator_digest(unchanged.package_files(["scenes/*.py"])) == first
    source = sorted((package / "scenes").glob("*.py"))[0]
    source.write_text(source.read_text() + "\n# an edit\n")
    assert unchanged.generator_digest(unchanged.package_files(["scenes/*.py"])) != first


# ---- every builder, through the protocol (vlprobe.builders.Builder.build) ---------------------------------------------

def test_winoground_style_twice_renders_once_and_a_private_copy_elsewhere_is_checked_too(tmp_path, renders, capsys):
    import datasets as hf
    from helpers import png

    from vlprobe.builders.winoground_style import WINOGROUND_FEATURES

    copy = tmp_path / "winoground.parquet"  # the user's own copy of facebook/winoground, two rows
    rows = [{"id": i, "image_0": {"bytes": png((10 * i, 0, 0)), "path": None},
             "image_1": {"bytes": png((0, 10 * i, 0)), "path": None}, "caption_0": "a", "caption_1": "b",
             "tag": "t", "secondary_tag": "", "num_main_preds": 1, "collapsed_tag": "Object"} for i in range(2)]
    hf.Dataset.from_list(rows, features=WINOGROUND_FEATURES).to_parquet(str(copy))
    out, private = tmp_path / "ws", tmp_path / "private"
    argv = ["build", "winoground_style", "--items", "2", "--configs", "spatial_swap", "--out", str(out),
            "--winoground", str(copy), "--winoground-out", str(private)]
    assert main(argv) == 0 and sum(renders) == 4 and (private / "README.md").is_file()
    capsys.readouterr()
    renders.clear()
    assert main(argv) == 0 and renders == []
    said = capsys.readouterr().out
    assert said.startswith(f"{out} is up to date") and "winoground (1 files)" in said
    shutil.rmtree(private)  # the private copy elsewhere is part of the build: gone, it is built again
    assert main(argv) == 0 and sum(renders) == 4 and (private / "README.md").is_file()
    renders.clear()
    copy.write_bytes(copy.read_bytes())  # the user's copy touched: its stamp changed
    assert main(argv) == 0 and sum(renders) == 4


def test_a_folder_build_from_the_same_source_does_nothing(tmp_path, capsys, monkeypatch):
    from helpers import png
    from helpers_data import folder_source

    import vlprobe.builders.folder as fb

    src = folder_source(tmp_path / "src")
    out = tmp_path / "ds"
    argv = ["build", "folder", str(src), "--license", "mit", "--out", str(out), "--config", "one"]
    assert main(argv) == 0 and capsys.readouterr().out.strip() == f"built {out}"
    embedded = []
    real = fb._embed
    monkeypatch.setattr(fb, "_embed", lambda plan: embedded.append(1) or real(plan))
    assert main(argv) == 0 and embedded == []
    said = capsys.readouterr().out
    assert said.startswith(f"{out} is up to date (built from the same inputs: config one, ") and "captions (1 files)" \
        in said and "images (2 files)" in said and said.rstrip().endswith("nothing built; --force rebuilds it")
    for change in ("an image", "the captions", "another option"):
        if change == "an image":
            (src / "images" / "red.png").write_bytes(png((201, 30, 30)))
        elif change == "the captions":
            (src / "rows.csv").write_text((src / "rows.csv").read_text().replace("a red square,", "a scarlet square,"))
        else:
            argv += ["--pretty-name", "Mine"]
        assert main(argv) == 0 and capsys.readouterr().out.strip() == f"built {out}" and len(embedded) == 1, change
        embedded.clear()


def test_a_build_into_a_cache_others_could_change_is_refused_in_one_line(tmp_path, monkeypatch, capsys, renders):
    """Issue 48: `vlprobe build travlr` outside a clone writes <cache>/datasets/travlr; a cache home (or a folder in it)
    another user could write into is refused before anything is rendered, as `--dataset travlr` would refuse it."""
    home = tmp_path / "cache"
    home.mkdir()
    home.chmod(0o777)
    monkeypatch.setenv("VLPROBE_CACHE", str(home))
    monkeypatch.delenv("VLPROBE_ROOT", raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    for out in ([], ["--out", str(home / "datasets" / "travlr")]):
        assert main(["build", "travlr", *ARGS, *out]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "Traceback" not in err, err
        assert f"{home / 'datasets' / 'travlr'}: in vlprobe's cache, but {home} is writable by others (mode 777), who " \
               "could have changed its rows; not building there: make" in err and "chmod 700" in err
        assert renders == [] and list(home.iterdir()) == []
    home.chmod(0o700)  # the user's own: built there, its folders made private
    assert main(["build", "travlr", *ARGS]) == 0 and (home / "datasets" / "travlr" / "vlprobe.yaml").is_file()
    assert (home / "datasets").stat().st_mode & 0o777 == 0o700
    (home / "datasets" / "travlr" / "data").chmod(0o777)  # a folder in the built one: refused the same way
    assert main(["build", "travlr", *ARGS]) == 2 and "data is writable by others (mode 777)" in capsys.readouterr().err
