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


def _files(folder):
    return {p.relative_to(folder).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_second_build_with_the_same_inputs_renders_nothing(tmp_path, renders, capsys):
    out = tmp_path / "travlr"
    assert main(["build", "travlr", *ARGS, "--out", str(out)]) == 0
    assert f"built {out}" in capsys.readouterr().out and sum(renders) == 10
    before = _files(out)
    renders.clear()
    assert main(["build", "travlr", *ARGS, "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert said.startswith(f"{out} is up to date (built from the same inputs: configs spatiality, seed 0, size tiny, "
                           f"split_sizes ") and said.rstrip().endswith("nothing built; --force rebuilds it")
    assert renders == [] and _files(out) == before  # not a byte, not a time stamp changed


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
    assert unchanged.up_to_date(out, _recorded(out))  # and the record now describes this build


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
