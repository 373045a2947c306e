"""The VALSE builder, on the real annotation files (../shared/data/valse) with stand-in images:
one small JPEG's bytes under every referenced file name, in each source's release layout."""

from __future__ import annotations

import argparse
import functools
import io
import json
import time
import zipfile
from pathlib import Path

import datasets
import pytest
from helpers import jpeg
from helpers_data import build_from, load

from vlprobe.benchmarks import get as get_benchmark
from vlprobe.builders import valse
from vlprobe.dataset import image_sources as imgs
from vlprobe.dataset.spec import find_spec

VALSE_UP = get_benchmark("valse").upstream  # its pinned annotation files

pytestmark = [pytest.mark.shared_data, pytest.mark.slow]  # builds VALSE from the real annotations (7,702 rows)

LAYOUT = {  # source -> folder under the images root, as the original releases unpack
    "coco2017_val": "val2017", "coco2014_train": "train2014", "coco2014_val": "val2014",
    "visual7w": "visual7w/images", "visdial_val2018": "VisualDialog_val2018",
}
PIECE_COUNTS = {"counting": 868 + 900 + 691, "actions": 648 + 949, "coreference": 708 + 104}


def referenced(annotations: Path) -> dict[str, set[str]]:
    """Every image file name the 11 files reference (valid or not), per source."""
    out: dict[str, set[str]] = {}
    for file in valse.FILES.values():
        for key, rec in json.loads((annotations / file).read_text()).items():
            out.setdefault(valse.image_source(rec["image_file"], key), set()).add(rec["image_file"])
    return out


def make_standins(root: Path, annotations: Path, skip: set[str] = frozenset(), corrupt: str | None = None) -> Path:
    """Stand-in images for every referenced file; SWiG goes into its release zip (images_512.zip),
    so every build here also reads a zip source."""
    data = jpeg(color=(120, 40, 200))
    for source, names in referenced(annotations).items():
        names = sorted(names - set(skip))
        if source == "swig":
            with zipfile.ZipFile(root / "images_512.zip", "w", zipfile.ZIP_STORED) as zf:
                for name in names:
                    zf.writestr(f"images_512/{name}", b"not an image" if name == corrupt else data)
            continue
        folder = root / LAYOUT[source]
        folder.mkdir(parents=True, exist_ok=True)
        for name in names:
            (folder / name).write_bytes(b"\xff\xd8 truncated" if name == corrupt else data)
    return root


run_build = functools.partial(build_from, valse.Valse())  # run_build(annotations, images, out, *extra)


@pytest.fixture(scope="module")
def annotations(shared_data: Path) -> Path:
    return shared_data / "valse"


@pytest.fixture(scope="module")
def images_root(annotations: Path, tmp_path_factory) -> Path:
    t0 = time.perf_counter()
    root = make_standins(tmp_path_factory.mktemp("valse_images"), annotations)
    print(f"\nVALSE stand-ins for 8,782 records: {time.perf_counter() - t0:.2f}s")
    return root


@pytest.fixture(scope="module")
def built(annotations: Path, images_root: Path, tmp_path_factory) -> Path:
    t0 = time.perf_counter()
    out = run_build(annotations, images_root, tmp_path_factory.mktemp("valse_folder") / "valse")
    print(f"\nVALSE build (7,702 rows, every image read and decoded): {time.perf_counter() - t0:.2f}s")
    return out


def test_counts_per_config_are_the_papers(built: Path) -> None:
    names = datasets.get_dataset_config_names(str(built))
    expected = {**valse.PAPER_VALID, **PIECE_COUNTS, "all": 7702}
    assert sorted(names) == sorted(expected)
    assert datasets.get_dataset_default_config_name(str(built)) == "all"
    for config, n in expected.items():
        ds = load(built, config)
        assert len(ds) == n, config
        assert ds.features == valse.FEATURES, config
    # piece configs point at the instrument parquet: nothing stored twice
    assert sorted(p.name for p in (built / "data").iterdir() if p.is_dir()) == sorted(valse.FILES)


def test_ids_unique_and_rows_normalised(built: Path) -> None:
    ds = load(built, "all")
    ids = ds["id"]
    assert len(set(ids)) == len(ids) == 7702
    assert all(i.startswith(f"{inst}/") for i, inst in zip(ids, ds["instrument"]))
    rows = {r["id"]: r for r in ds.remove_columns("image")}
    assert all(r["valid"] and r["mturk_caption"] >= 2 for r in rows.values())
    assert all(r["mturk_caption"] + r["mturk_foil"] + r["mturk_other"] == 3 for r in rows.values())
    ex = rows["existence/existence_visual7w_2371044"]
    assert (ex["caption"], ex["foil"]) == ("There are no people in the picture.", "There are people in the picture.")
    assert (ex["classes"], ex["classes_foil"], ex["answer"]) == ("0", "[2, 1, 8]", 0)
    assert ex["declarative_statement_foils"] == ["There are people in the picture."]
    assert ex["image_source"] == "visual7w" and ex["piece"] == "existence"
    pl = rows["plurality/plurals:coco2017:308510"]
    assert pl["nli_pred"] == "contradict" and pl["grammaticality_score"] == pytest.approx(0.8041676009745868)
    assert pl["orig_caption"].startswith("Two young men") and pl["foil_method"].startswith("checklist")
    # the same key in two files is two rows
    assert "action_replacement/actions_test_0" in rows and "actant_swap/actions_test_0" in rows
    assert rows["actant_swap/actions_test_0"]["foil"] == "A torso exercises for a man."
    assert rows["action_replacement/actions_test_0"]["foil_method"] == "change_action"
    coref = rows["coreference_standard/coref_train_528"]
    assert coref["only_caption"].startswith("a group of giraffe") and coref["dataset_idx"] is None
    assert coref["image_source"] == "coco2014_train"
    assert all(isinstance(r["classes"], str) and isinstance(r["classes_foil"], str) for r in rows.values())


def test_items_are_1x2_with_tags(built: Path) -> None:
    spec = find_spec(str(built))
    for config in ("actions", "coreference_clean"):
        ds = load(built, config)
        items = list(spec.iter_items(ds.select(range(5)), config=config))
        for item, row in zip(items, ds.select(range(5))):
            assert item.shape == (1, 2) and item.gold.tolist() == [[True, False]]
            assert item.texts == (row["caption"], row["foil"])
            assert item.id == row["id"]
            assert f"piece={row['piece']}" in item.tags and f"instrument={row['instrument']}" in item.tags
            assert f"image_source={row['image_source']}" in item.tags
            assert item.images[0].size == (8, 8)


def test_committed_card_and_spec_are_what_a_build_writes(built: Path, repo_root: Path) -> None:
    assert (repo_root / "valse" / "README.md").read_text() == (built / "README.md").read_text()
    assert (repo_root / "valse" / "vlprobe.yaml").read_text() == (built / "vlprobe.yaml").read_text()
    card = (built / "README.md").read_text()
    assert "7,702" in card and "Rows left out" not in card


def test_include_invalid_gives_all_8782(annotations: Path, images_root: Path, tmp_path: Path) -> None:
    out = run_build(annotations, images_root, tmp_path / "valse", "--include-invalid")
    ds = load(out, "all")
    assert len(ds) == 8782
    by_inst = {c: 0 for c in valse.PAPER_ALL}
    for inst in ds["instrument"]:
        by_inst[inst] += 1
    assert by_inst == valse.PAPER_ALL
    assert sum(not v for v in ds["valid"]) == 8782 - 7702
    assert "All 8,782 candidate records (`--include-invalid`)" in (out / "data" / "BUILD.md").read_text()
    # the one boolean classes_foil, kept as JSON text
    plural = ds.filter(lambda r: r["id"] == "plurality/plurals:coco2017:215792").remove_columns("image")[0]
    assert (plural["classes"], plural["classes_foil"]) == ("cattle", "false")


def test_missing_images_stop_the_build_with_a_report(annotations: Path, tmp_path: Path) -> None:
    gone = {"v7w_2371044.jpg", "000000291619.jpg", "VisualDialog_val2018_000000284024.jpg"}
    root = make_standins(tmp_path / "img", annotations, skip=gone)
    with pytest.raises(imgs.MissingImagesError) as err:
        run_build(annotations, root, tmp_path / "out")
    msg = str(err.value)
    assert "3 image file(s) are missing" in msg
    for source, name in (("visual7w", "v7w_2371044.jpg"), ("coco2017_val", "000000291619.jpg"),
                         ("visdial_val2018", "VisualDialog_val2018_000000284024.jpg")):
        assert f"{source}: 1 of" in msg and name in msg
    assert "--skip-missing-images" in msg
    assert not (tmp_path / "out" / "data").exists()  # stopped before writing anything

    out = run_build(annotations, root, tmp_path / "out", "--skip-missing-images")
    report = (out / "data" / "BUILD.md").read_text()  # what this build left out goes with its data
    assert "## Rows left out" in report and "v7w_2371044.jpg" in report
    assert f"Rows in this build: **{len(load(out, 'all')):,}** (a build with every image: 7,702)" in report
    ds = load(out, "existence")
    assert len(ds) == 505 - 1 and "existence/existence_visual7w_2371044" not in ds["id"]


def test_a_partial_build_writes_the_committed_card(annotations: Path, tmp_path: Path, repo_root: Path) -> None:
    """Building into the committed folder must change no tracked file: with a few stand-in images (and
    --skip-missing-images) the card is still byte for byte the committed one."""
    folder = tmp_path / "img" / "val2017"
    folder.mkdir(parents=True)
    few = sorted(referenced(annotations)["coco2017_val"])[:3]
    for name in few:
        (folder / name).write_bytes(jpeg(color=(120, 40, 200)))
    out = run_build(annotations, tmp_path / "img", tmp_path / "valse", "--skip-missing-images")
    assert (out / "README.md").read_text() == (repo_root / "valse" / "README.md").read_text()
    assert (out / "vlprobe.yaml").read_text() == (repo_root / "valse" / "vlprobe.yaml").read_text()
    report = (out / "data" / "BUILD.md").read_text()
    n = len(load(out, "all"))
    assert 1 <= n <= 2 * len(few) and f"Rows in this build: **{n}**" in report and "## Rows left out" in report


def test_a_build_left_with_no_rows_is_refused(annotations: Path, tmp_path: Path, capsys) -> None:
    from vlprobe.cli import main

    (tmp_path / "img").mkdir()
    code = main(["build", "valse", "--annotations", str(annotations), "--images", str(tmp_path / "img"),
                 "--skip-missing-images", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "nothing to build" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_an_images_folder_without_the_sources_is_named(annotations: Path, tmp_path: Path, capsys) -> None:
    """`--images DIR` holding none of the releases' folders: the error names DIR and what was looked for in it."""
    from vlprobe.cli import main

    (tmp_path / "img").mkdir()
    code = main(["build", "valse", "--annotations", str(annotations), "--images", str(tmp_path / "img"),
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "no location given" not in err and "Traceback" not in err
    assert "coco2017_val: 1192 of 1192 files missing: 000000000872.jpg" in err
    assert f"[searched: --images {tmp_path / 'img'}: none of val2017/, coco/val2017/, val2017.zip in it]" in err
    assert not (tmp_path / "out").exists()


def test_corrupt_image_names_the_file(annotations: Path, tmp_path: Path) -> None:
    root = make_standins(tmp_path / "img", annotations, corrupt="exercising_255.jpg")
    with pytest.raises(imgs.CorruptImageError, match=r"swig: image file exercising_255\.jpg is corrupt.*images_512\.zip"):
        run_build(annotations, root, tmp_path / "out")
    assert not list((tmp_path / "out").rglob("*.parquet*"))  # nothing half-written is left


def test_cli_reports_missing_annotations_cleanly(tmp_path: Path, capsys) -> None:
    from vlprobe.cli import main

    assert main(["build", "valse", "--annotations", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "VALSE annotation file not found" in capsys.readouterr().err


def test_fresh_clone_download_needs_nothing_else(annotations: Path, tmp_path: Path, monkeypatch, stand_in_server) -> None:
    """`vlprobe build valse --download` with no annotation folder and no images: the 11 files come
    from the pinned commit (a stand-in for raw.githubusercontent.com), verified; COCO files one by
    one, Visual7W / SWiG / VisDial val2018 as their owners' archives (stand-ins on 127.0.0.1)."""
    from vlprobe.builders import upstream

    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    data = jpeg(color=(120, 40, 200))
    refs = referenced(annotations)
    archive_folder = {"visual7w": "images", "swig": "images_512", "visdial_val2018": "VisualDialog_val2018"}
    files = stand_in_server.files
    files.update({f"/valse/data/{f.path}": (annotations / f.path).read_bytes() for f in VALSE_UP.files})
    for source, folder in archive_folder.items():
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
            for name in sorted(refs[source]):
                zf.writestr(f"{folder}/{name}", data)
            zf.writestr(f"{folder}/not_referenced_1.jpg", data)
        files[f"/archives/{imgs.SOURCES[source].archive.file}"] = buf.getvalue()
    coco = {"coco2017_val": "val2017", "coco2014_train": "train2014", "coco2014_val": "val2014"}
    for source, folder in coco.items():
        files.update({f"/coco/{folder}/{name}": data for name in refs[source]})
    base, hits = stand_in_server.url, stand_in_server.hits
    for source, spec in list(imgs.SOURCES.items()):
        if source in coco:
            monkeypatch.setitem(imgs.SOURCES, source, imgs.SourceSpec(
                spec.name, spec.title, spec.pattern, spec.subdirs, spec.zips, (f"{base}/coco/{coco[source]}/{{name}}",)))
        elif source in archive_folder:
            monkeypatch.setitem(imgs.SOURCES, source, imgs.SourceSpec(
                spec.name, spec.title, spec.pattern, spec.subdirs, spec.zips, (), spec.license,
                imgs.Archive(f"{base}/archives/{spec.archive.file}", spec.archive.file)))
    monkeypatch.setenv("VLPROBE_VALSE_ANNOTATIONS_URL", f"{base}/valse/data/")
    parser = argparse.ArgumentParser()
    valse.Valse().add_arguments(parser)
    args = parser.parse_args(["--download", "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "valse")])
    t0 = time.perf_counter()
    out = valse.Valse().build(args)
    print(f"\nVALSE --download from stand-in servers ({len(hits)} requests): {time.perf_counter() - t0:.1f}s")
    assert len(load(out, "all")) == 7702
    assert sum(h.startswith("/valse/data/") for h in hits) == 11
    assert sorted(h for h in hits if h.startswith("/archives/")) == sorted(
        f"/archives/{imgs.SOURCES[s].archive.file}" for s in archive_folder)  # each archive once
    # only the referenced files are extracted, not the whole archive
    assert not (tmp_path / "cache" / "swig" / "not_referenced_1.jpg").exists()
    assert (annotations / "existence.json").read_bytes() == (
        upstream.cache_folder(VALSE_UP, tmp_path / "cache") / "existence.json").read_bytes()


def test_offline_without_annotations_names_the_files(tmp_path: Path, monkeypatch, capsys) -> None:
    from vlprobe.cli import main

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    assert main(["build", "valse", "--out", str(tmp_path / "o"), "--cache-dir", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert "VALSE: 11 annotation file(s) are not in the cache" in err
    for f in VALSE_UP.files:
        assert f"https://raw.githubusercontent.com/Heidelberg-NLP/VALSE/{VALSE_UP.commit}/data/{f.path}" in err
    assert not (tmp_path / "o").exists()
