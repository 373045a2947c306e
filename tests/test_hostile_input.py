"""Bad and hostile input to the builders and to publishing: names that would become paths outside the
folder they belong in, oversized images, empty texts, undecodable files, bad counts. Each gets one line
naming what is at fault, and nothing is written."""

from __future__ import annotations

import os
import shutil
import struct
import zlib
from pathlib import Path

import datasets
import pytest
from helpers import png, tree

from vlprobe.builders.folder import build_folder
from vlprobe.dataset import image_sources as imgs
from vlprobe.dataset.folder import ConfigDecl, card_metadata, read_card_metadata, render_card, write_card, write_split
from vlprobe.dataset.images import ImageError, to_pil, to_tensor
from vlprobe.dataset.spec import ItemSpec, SpecError
from vlprobe.publish import check_dataset_folder, check_space_folder, plan_dataset, plan_space

HOSTILE = ["../escaped", "/tmp/vlprobe_abs", "a/b", "a\\b", "a\0b", "..", ".", "", "C:evil", "new\nline"]


def big_png(width: int = 20_000, height: int = 20_000) -> bytes:
    """A real, valid 1-bit PNG of ``width`` x ``height`` pixels (all black): about 50 KB on disk,
    1.2 GB once decoded to RGB. Written row by row so that the test never holds the pixels."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    comp = zlib.compressobj(9)
    row = b"\0" * (1 + (width + 7) // 8)  # filter byte + packed bits
    body = b"".join(comp.compress(row) for _ in range(height)) + comp.flush()
    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", body) + chunk(b"IEND", b"")


@pytest.fixture()
def source(tmp_path) -> Path:
    """A tiny source folder: two images, a captions CSV."""
    from helpers_data import folder_source

    return folder_source(tmp_path / "src")


# ---- the one helper ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", HOSTILE + ["tab\tname"])
def test_check_name_refuses_anything_but_one_plain_name(name):
    from vlprobe.storage.paths import UnsafePathError, check_name

    with pytest.raises(UnsafePathError):
        check_name(name, "split")


@pytest.mark.parametrize("path", ["../x", "a/../../x", "/etc/passwd", "\\evil", "C:\\evil", "a\0b", ""])
def test_relative_paths_that_leave_the_folder_are_refused(path, tmp_path):
    from vlprobe.storage.paths import UnsafePathError, inside, relative_problem

    assert relative_problem(path)
    with pytest.raises(UnsafePathError):
        inside(tmp_path, path, "member")


def test_inside_follows_symbolic_links_unless_told_not_to(tmp_path):
    from vlprobe.storage.paths import UnsafePathError, inside

    (tmp_path / "root").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "root" / "link").symlink_to(tmp_path / "outside")
    assert inside(tmp_path / "root", "a/b.png", "image") == tmp_path / "root" / "a" / "b.png"
    with pytest.raises(UnsafePathError, match="outside"):
        inside(tmp_path / "root", "link/x.png", "image")
    assert inside(tmp_path / "root", "link/x.png", "image", resolve=False) == tmp_path / "root" / "link" / "x.png"


def test_split_names_are_what_datasets_accepts():
    from vlprobe.storage.paths import UnsafePathError, check_split_name

    assert check_split_name("train.v2") == "train.v2"
    for bad in ("test\n", "te st", "test-1", "a..b"):
        with pytest.raises(UnsafePathError):
            check_split_name(bad)


# ---- build folder: names that become paths (27.1) ---------------------------------------------------
@pytest.mark.parametrize("option", ["--split", "--config"])
@pytest.mark.parametrize("name", HOSTILE)
def test_build_folder_refuses_names_that_would_leave_out(option, name, source, tmp_path, cli):
    out = tmp_path / "work" / "out"
    before = tree(tmp_path)
    code, _, err = cli("build", "folder", source, "--license", "mit", "--out", out, option, name)
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert option in err
    assert tree(tmp_path) == before  # nothing written anywhere: not in out, not beside it


@pytest.mark.parametrize("image", ["../outside.png", "/ABS/outside.png", "images/../../outside.png"])
def test_build_folder_refuses_image_paths_outside_the_captions_folder(image, source, tmp_path, cli):
    (tmp_path / "outside.png").write_bytes(png())
    image = image.replace("/ABS", str(tmp_path))
    (source / "rows.csv").write_text(f"id,image,caption,foil\nr1,{image},a red square,a blue square\n")
    code, _, err = cli("build", "folder", source, "--license", "mit", "--out", tmp_path / "out")
    assert code == 2 and "row 1 column 'image'" in err and "Traceback" not in err, err
    assert not (tmp_path / "out").exists()


# ---- build folder: crashes and leftovers (26.2, 27.2) -------------------------------------------------
def test_build_folder_without_config_writes_a_card_that_publishes(source, tmp_path):
    out = build_folder(source, tmp_path / "out", license="cc0-1.0")  # KeyError: 'config_name' before
    meta = read_card_metadata(out)
    assert [c["config_name"] for c in meta["configs"]] == ["default"]
    problems, files = check_dataset_folder(out)
    assert problems == [] and files and all(f.startswith("data/default/test-") for f in files)
    assert len(datasets.load_dataset(str(out), "default", split="test", cache_dir=str(tmp_path / "c"))) == 2
    # a second config beside the lone "default" one keeps it
    build_folder(source, out, license="cc0-1.0", config="more")
    assert sorted(c["config_name"] for c in read_card_metadata(out)["configs"]) == ["default", "more"]
    assert check_dataset_folder(out)[0] == []


def test_build_folder_out_is_a_file(source, tmp_path, cli):
    (tmp_path / "afile").write_text("mine")
    code, _, err = cli("build", "folder", source, "--license", "mit", "--out", tmp_path / "afile")
    assert code == 2 and "is a file, not a folder" in err and "Traceback" not in err
    assert (tmp_path / "afile").read_text() == "mine"


def test_a_failed_build_leaves_nothing_behind(source, tmp_path, monkeypatch):
    import vlprobe.dataset.folder as df

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(df, "write_card", broken)
    with pytest.raises(OSError, match="disk full"):
        build_folder(source, tmp_path / "new", license="mit")
    assert not (tmp_path / "new").exists()
    monkeypatch.undo()
    out = build_folder(source, tmp_path / "kept", license="mit", config="one")
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    monkeypatch.setattr(df, "write_card", broken)
    with pytest.raises(OSError):
        build_folder(source, out, license="mit", config="two")
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


# ---- oversized images (27.2) -----------------------------------------------------------------------------
@pytest.mark.parametrize("size", [(20_000, 20_000), (10_000, 10_000)])
def test_oversized_images_are_refused_by_header(size):
    data = big_png(*size)
    assert len(data) < 100_000
    for decode in (to_pil, to_tensor):
        with pytest.raises(ImageError, match=r"row 7 \(big\.png\): image .*pixels, more than the 89,478,485"):
            decode({"bytes": data, "path": "big.png"}, where="row 7 (big.png)")


def test_build_folder_names_the_oversized_image(source, tmp_path, cli):
    (source / "images" / "big.png").write_bytes(big_png())
    (source / "rows.csv").write_text("id,image,caption,foil\nr1,images/red.png,a red square,a blue square\n"
                                     "r2,images/big.png,a black square,a white square\n")
    code, _, err = cli("build", "folder", source, "--license", "mit", "--out", tmp_path / "out")
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "rows.csv row 2 column 'image'" in err and "big.png" in err and "400,000,000 pixels" in err
    assert not (tmp_path / "out").exists()


def test_evaluate_names_the_row_of_an_oversized_image(tmp_path, tiny_clip_path, cli):
    feats = datasets.Features({"id": datasets.Value("string"), "image": datasets.Image(),
                               "caption": datasets.Value("string"), "foil": datasets.Value("string")})
    rows = {"id": ["ok1", "huge", "ok2"],
            "image": [{"bytes": png(), "path": "a.png"}, {"bytes": big_png(), "path": "bomb.png"},
                      {"bytes": png((0, 90, 0)), "path": "b.png"}],
            "caption": ["a", "b", "c"], "foil": ["x", "y", "z"]}
    folder = tmp_path / "ds"
    write_card(folder, card_metadata([ConfigDecl("pairs", feats, default=True)], license="mit"), "# test")
    write_split(folder, "pairs", "test", datasets.Dataset.from_dict(rows, features=feats))
    (folder / "vlprobe.yaml").write_text("id: id\nimages: [image]\ntexts: [caption, foil]\ngold: [[1, 0]]\n")
    code, _, err = cli("evaluate", "--dataset", folder, "--model", tiny_clip_path, "--out", tmp_path / "o",
                       "--cache-dir", "none", "--num-workers", "0", "--no-progress", "--bootstrap", "0")
    assert code == 2 and "Traceback" not in err, err
    assert "'huge'" in err and "bomb.png" in err and "pixels" in err


def test_valse_and_bla_builds_refuse_an_oversized_image(tmp_path):
    (tmp_path / "val2017").mkdir()
    (tmp_path / "val2017" / "000000000001.jpg").write_bytes(big_png())
    resolver = imgs.make_resolvers(["coco2017_val"], images_root=tmp_path)["coco2017_val"]
    with pytest.raises(imgs.CorruptImageError, match=r"000000000001\.jpg \(.*val2017.*\) is 400,000,000 pixels"):
        imgs.read_checked(resolver, "000000000001.jpg")


# ---- image sources: names from annotations (27.1) --------------------------------------------------------
@pytest.mark.parametrize("name", ["../secret.jpg", "/etc/passwd", "a/b.jpg", "a\\b.jpg", "a\0b.jpg", ".."])
def test_image_names_from_annotations_are_plain_names(name, tmp_path):
    (tmp_path / "images" / "VG_100K").mkdir(parents=True)
    (tmp_path / "images" / "secret.jpg").write_bytes(b"private")
    fetched = []
    resolver = imgs.ImageResolver(imgs.SOURCES["visual_genome"], [tmp_path / "images" / "VG_100K"], download=True,
                                  cache_dir=tmp_path / "cache", fetch=lambda url, timeout: fetched.append(url) or b"x")
    for call in (resolver.locate, resolver.read, resolver.fetch, lambda n: resolver.missing([n])):
        with pytest.raises(ValueError, match="visual_genome: image file name"):
            call(name)
    assert fetched == [] and not (tmp_path / "cache").exists()


# ---- empty texts (28.4) --------------------------------------------------------------------------------------
def test_empty_csv_cell_and_jsonl_null_are_refused_alike(source, tmp_path):
    (source / "rows.csv").write_text("id,image,caption,foil\nr1,images/red.png,a red square,\n")
    with pytest.raises(ValueError, match=r"row 0 \(id 'r1'\).*\['foil'\] hold no text") as csv_err:
        build_folder(source, tmp_path / "a", license="mit")
    (source / "rows.csv").unlink()
    (source / "rows.jsonl").write_text('{"id": "r1", "image": "images/red.png", "caption": "a red square", "foil": null}\n')
    with pytest.raises(ValueError, match=r"\['foil'\] hold no text") as jsonl_err:
        build_folder(source, tmp_path / "b", license="mit")
    assert str(csv_err.value).split(":", 1)[1] == str(jsonl_err.value).split(":", 1)[1]
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    spec = ItemSpec.from_dict({"images": ["image"], "texts": ["caption", "foil"], "gold": [[1, 0]]})
    with pytest.raises(ValueError, match="hold no text"):  # what evaluate converts rows with
        spec.to_item({"image": None, "caption": "a cat", "foil": "   "})


# ---- undecodable files, YAML errors (28.6) ------------------------------------------------------------------
def test_undecodable_captions_name_the_file_and_line(source, tmp_path, cli):
    (source / "rows.csv").write_bytes(b"id,image,caption,foil\nr1,images/red.png,a caf\xe9,a tea\n")
    code, _, err = cli("build", "folder", source, "--license", "mit", "--out", tmp_path / "out")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "rows.csv line 2: not UTF-8" in err and "0xe9" in err


def test_bad_spec_is_one_line_naming_file_line_and_column(source, tmp_path, cli):
    (source / "vlprobe.yaml").write_text("images: [image]\ntexts: [caption, foil\ngold: [[1, 0]]\n")
    code, _, err = cli("build", "folder", source, "--license", "mit", "--out", tmp_path / "out")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "vlprobe.yaml line 3 column " in err and "not valid YAML" in err
    (source / "vlprobe.yaml").write_bytes(b"images: [image]\n# caf\xe9\ntexts: [caption, foil]\ngold: [[1, 0]]\n")
    with pytest.raises(SpecError, match=r"vlprobe\.yaml line 2: not UTF-8 text \(byte 0xe9"):
        ItemSpec.from_file(source / "vlprobe.yaml")


# ---- counts (28.4) ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv, message", [
    (["build", "travlr", "--workers", "-1"], "--workers must be 1 or more, got -1"),
    (["build", "winoground_style", "--workers", "0"], "--workers must be 1 or more, got 0"),
    (["build", "valse", "--retries", "0"], "--retries must be 1 or more, got 0"),
    (["build", "bla", "--read-workers", "-2"], "--read-workers must be 1 or more, got -2"),
])
def test_builder_counts_below_one_are_refused(argv, message, tmp_path, cli):
    code, _, err = cli(*argv, "--out", tmp_path / "out")
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out").exists()


def test_publish_rows_below_one_is_refused(source, tmp_path, cli):
    out = build_folder(source, tmp_path / "out", license="mit")
    code, _, err = cli("publish", "dataset", out, "--repo", "me/x", "--rows", "-1", "--dry-run")
    assert code == 2 and "--rows must be 1 or more" in err and "got -1" in err and "Traceback" not in err


# ---- publish staging (27.1) ----------------------------------------------------------------------------------
def _recard(folder: Path, edit) -> None:
    meta = read_card_metadata(folder)
    edit(meta)
    (folder / "README.md").write_text(render_card(meta, "# edited"), encoding="utf-8")


@pytest.mark.parametrize("pattern", ["../elsewhere/*.parquet", "/ABS/elsewhere/*.parquet",
                                     "data/../../elsewhere/*.parquet", "data/a\0b/*.parquet"])
def test_publish_refuses_data_files_outside_the_folder(pattern, source, tmp_path):
    out = build_folder(source, tmp_path / "out", license="mit")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(next((out / "data" / "default").glob("*.parquet")), elsewhere / "test-0.parquet")
    pattern = pattern.replace("/ABS", str(tmp_path))
    _recard(out, lambda m: m["configs"][0].update(data_files=[{"split": "test", "path": pattern}]))
    problems, files = check_dataset_folder(out, load=False)
    assert any("must be inside the dataset folder" in p for p in problems), problems
    assert files == []
    with pytest.raises(ValueError, match="not ready to publish"):
        plan_dataset(out, "me/x")


@pytest.mark.parametrize("field, name", [("config_name", "../x"), ("config_name", "a\0b"), ("split", "../../x"),
                                         ("split", "a/b"), ("split", "/abs")])
def test_publish_refuses_config_and_split_names_that_are_paths(field, name, source, tmp_path):
    out = build_folder(source, tmp_path / "out", license="mit")

    def edit(meta):
        if field == "config_name":
            meta["configs"][0]["config_name"] = meta["dataset_info"][0]["config_name"] = name
        else:
            meta["configs"][0]["data_files"][0]["split"] = name
    _recard(out, edit)
    problems, _ = check_dataset_folder(out, load=False)
    assert any(repr(name) in p for p in problems), problems


def test_space_app_file_outside_the_folder_is_never_run(tmp_path):
    marker = tmp_path / "ran"
    (tmp_path / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    space = tmp_path / "space"
    space.mkdir()
    (space / "README.md").write_text("---\nsdk: gradio\napp_file: ../evil.py\n---\n# s\n")
    problems = check_space_folder(space)
    assert any("app_file '../evil.py'" in p for p in problems) and not marker.exists()


def test_space_with_a_link_out_of_the_folder_is_refused(tmp_path):
    (tmp_path / "secret.txt").write_text("token")
    space = tmp_path / "space"
    space.mkdir()
    (space / "README.md").write_text("---\nsdk: gradio\napp_file: app.py\n---\n# s\n")
    (space / "app.py").write_text("import gradio as gr\ndemo = gr.Blocks()\nif __name__ == '__main__':\n    demo.launch()\n")
    (space / "notes.txt").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(ValueError, match="notes.txt: a symbolic link to .*secret.txt, outside the folder"):
        plan_space(space, "me/demo")


# ---- issue 48: nesting, sizes, non-regular files, symbolic links; one line each --------------------------------------

DEEP = 20_000  # levels: past Python's recursion limit, where json and yaml raised RecursionError


def _sparse(path: Path, size: int = 20 << 30) -> Path:
    with open(path, "wb") as fh:  # 20 GB that take no disk: a file the reader must refuse by its size
        fh.truncate(size)
    return path


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _spec_case(kind: str, tmp_path: Path) -> str:
    path = tmp_path / "spec.yaml"
    if kind == "/dev/zero":
        return "/dev/zero"
    if kind == "fifo":
        return str(_fifo(path))
    if kind == "deep":
        path.write_text("images: " + "[" * DEEP + "]" * DEEP + "\n")
    elif kind == "large":
        path.write_text("# " + "x" * (2 << 20) + "\n")
    elif kind == "alias":
        path.write_text("a: &a [image]\nimages: *a\ntexts: [caption]\ngold: [[1]]\n")
    return str(path)


@pytest.mark.parametrize("kind, words", [
    ("/dev/zero", "/dev/zero: is a device, not a file"),
    ("fifo", "is a named pipe (FIFO), not a file"),
    ("deep", "nests lists or mappings more than 64 levels deep"),
    ("large", "larger than the specs vlprobe reads (at most 1.0 MiB)"),
    ("alias", "line 2: uses a YAML alias (*a)"),
])
def test_a_spec_that_is_no_file_too_large_or_too_deep_is_one_line(kind, words, tmp_path, cli):
    code, _, err = cli("evaluate", "--spec", _spec_case(kind, tmp_path), "--dataset", "winoground_style",
                       "--no-progress", "--out", tmp_path / "o")
    assert code == 2 and words in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def _captions_case(kind: str, source: Path) -> None:
    (source / "rows.csv").unlink()
    if kind == "deep json":
        (source / "rows.json").write_text('[{"id": "r1", "image": "images/red.png", "caption": "a", "foil": "b", '
                                          '"x": ' + "[" * DEEP + "]" * DEEP + "}]")
    elif kind == "deep jsonl":
        (source / "rows.jsonl").write_text('{"id": "r1", "image": "images/red.png", "caption": "a", "foil": '
                                           + "[" * DEEP + "]" * DEEP + "}\n")
    elif kind == "too many rows":
        rows = "".join(f"r{i},images/red.png,a red square,a blue square\n" for i in range(100_001))
        (source / "rows.csv").write_text("id,image,caption,foil\n" + rows)
    elif kind == "sparse captions":
        _sparse(source / "rows.csv", 1 << 30)
    elif kind == "sparse image":
        _sparse(source / "images" / "huge.png")
        (source / "rows.csv").write_text("id,image,caption,foil\nr1,images/huge.png,a red square,a blue square\n")
    elif kind == "fifo image":
        _fifo(source / "images" / "pipe.png")
        (source / "rows.csv").write_text("id,image,caption,foil\nr1,images/pipe.png,a red square,a blue square\n")
    elif kind == "image linked out":
        (source.parent / "secret.png").write_bytes(png())
        (source / "images" / "link.png").symlink_to(source.parent / "secret.png")
        (source / "rows.csv").write_text("id,image,caption,foil\nr1,images/link.png,a red square,a blue square\n")


@pytest.mark.parametrize("kind, words", [
    ("deep json", "rows.json: nests lists or objects more than 64 levels deep"),
    ("deep jsonl", "rows.jsonl line 1: nests lists or objects more than 64 levels deep"),
    ("too many rows", "rows.csv: has more than 100,000 rows"),
    ("sparse captions", "rows.csv: is 1.0 GiB, larger than the captions files vlprobe reads (at most 512.0 MiB)"),
    ("sparse image", "row 1 column 'image' (images/huge.png): "),
    ("fifo image", "is a named pipe (FIFO), not a file"),
    ("image linked out", "leads outside"),
])
def test_build_folder_bounds_every_file_it_reads(kind, words, source, tmp_path, cli):
    _captions_case(kind, source)
    code, _, err = cli("build", "folder", source, "--license", "mit", "--out", tmp_path / "out")
    assert code == 2 and words in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    if kind == "sparse image":
        assert "is 20.0 GiB, larger than the image files vlprobe reads" in err
    assert not (tmp_path / "out").exists()


def test_a_deeply_nested_card_is_one_line(source, tmp_path, cli):
    out = build_folder(source, tmp_path / "ds", license="mit")
    card = (out / "README.md").read_text()
    (out / "README.md").write_text(card.replace("---\n", "---\nnested: " + "[" * DEEP + "]" * DEEP + "\n", 1))
    code, _, err = cli("evaluate", "--dataset", out, "--no-progress", "--out", tmp_path / "o")
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "README.md: nests lists or mappings more than 64 levels deep" in err


def test_an_image_cell_naming_a_20_gb_file_is_refused_by_size(tmp_path):
    from vlprobe.dataset.images import ImageTooLargeError

    huge = _sparse(tmp_path / "huge.png")
    with pytest.raises(ImageTooLargeError, match=r"huge.png: is 20.0 GiB, larger than the image files vlprobe reads"):
        to_pil({"bytes": None, "path": str(huge)}, where="row 3")


def test_a_results_json_nested_too_deep_is_one_line(tmp_path, cli):
    path = tmp_path / "results.json"
    path.write_text('{"results": ' + "[" * DEEP + "]" * DEEP + "}")
    code, _, err = cli("report", path, "--out", tmp_path / "r")
    assert code == 2 and "Traceback" not in err and "nests lists or objects more than 64 levels deep" in err, err


def test_build_folder_into_a_symbolic_link_says_where_it_writes(source, tmp_path, cli):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    code, _, err = cli("build", "folder", source, "--license", "mit", "--out", tmp_path / "link")
    assert code == 0 and f"--out {tmp_path / 'link'} is a symbolic link: writing the dataset into {real}" in err, err
    assert (real / "vlprobe.yaml").is_file() and (tmp_path / "link").is_symlink()
