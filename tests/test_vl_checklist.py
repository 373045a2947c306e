"""VL-CheckList: built through `vlprobe build vl_checklist` from synthetic files in the upstream format
(the real files are not available here), served by a stand-in for raw.githubusercontent.com, with
images laid out as the authors' DATASETS.md says; every config loads, POS[0] is the true text, the
accuracy is the metric's acc_r with ties wrong, records whose image is missing are counted and
reported, the unpinned files are hashed into data/BUILD.md with one warning, offline and bad records
name what is wrong."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import datasets
import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

from vlprobe.benchmarks import get as get_benchmark
from vlprobe.builders import AnnotationError, upstream, vl_checklist
from vlprobe.spec import find_spec

VL_CHECKLIST_UP = get_benchmark("vl_checklist").upstream  # its pinned annotation files

UP = VL_CHECKLIST_UP
PREFIX = f"/{UP.repo}/{UP.commit}/{UP.folder}"
HAKE_PATHS = ["openimages/0030feaa83a02c0d.jpg", "hcvrd/1246.jpg", "pic/7.jpg", "hake_images_20190730/a_1.jpg",
              "hico_20160224_det/images/test2015/HICO_test2015_00000001.jpg",
              "vcoco/train2014/COCO_train2014_000000000009.jpg"]
MISSING = "hcvrd/1246.jpg"  # the one HAKE image not given: its records are dropped and counted


def _jpeg(name: str) -> bytes:
    h = hashlib.sha1(name.encode()).digest()
    buf = io.BytesIO()
    Image.new("RGB", (8, 8), (h[0], h[1], h[2])).save(buf, "JPEG")
    return buf.getvalue()


def records(corpus: str, file: str) -> list:
    """Three records per file, the image path in the layout of the corpus's image root."""
    k = int(hashlib.sha1(file.encode()).hexdigest()[:6], 16) % 1000
    if corpus.startswith("hake"):
        paths = [HAKE_PATHS[(k + i) % len(HAKE_PATHS)] for i in range(3)]
    elif corpus.startswith("swig"):
        paths = [f"jumping_{k + i}.jpg" for i in range(3)]
    else:
        paths = [f"{'VG_100K' if i % 2 else 'VG_100K_2'}/{2360000 + k * 3 + i}.jpg" for i in range(3)]
    return [[p, {"POS": [f"{file} pos {i}", f"{file} pos {i} b"], "NEG": [f"{file} neg {i}"]}]
            for i, p in enumerate(paths)]


def make_files(folder: Path) -> Path:
    for leaf in vl_checklist.LEAVES:
        for corpus, file in leaf.corpora:
            (folder / file).parent.mkdir(parents=True, exist_ok=True)
            (folder / file).write_text(json.dumps(records(corpus, file)))
    return folder


def image_root(folder: Path) -> Path:
    """vg/VG_100K[_2]/, swig/, hake/<sub-folder>/, as DATASETS.md lays them out."""
    for leaf in vl_checklist.LEAVES:
        for corpus, file in leaf.corpora:
            for path, _ in records(corpus, file):
                root = "hake" if corpus.startswith("hake") else "swig" if corpus.startswith("swig") else "vg"
                if root == "hake" and path == MISSING:
                    continue
                target = folder / root / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(_jpeg(path))
    return folder


def expected_rows(leaf: vl_checklist.Leaf) -> list:
    out = []
    for corpus, file in leaf.corpora:
        for n, (path, texts) in enumerate(records(corpus, file)):
            if not (corpus.startswith("hake") and path == MISSING):
                out.append((f"{leaf.config}/{corpus}/{n}", path, texts))
    return out


def load(folder: Path, config: str) -> datasets.Dataset:
    return datasets.load_dataset(str(folder), config, split="test", cache_dir=str(folder.parent / ".hf_cache"))


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path, str]:
    from stand_in_server import StandInServer

    from vlprobe.cli import main

    base = tmp_path_factory.mktemp("vlc")
    files = make_files(base / "upstream")
    images = image_root(base / "dataset")
    server = StandInServer()
    mp = pytest.MonkeyPatch()
    try:
        server.serve_folder(files, PREFIX)
        mp.delenv("HF_DATASETS_OFFLINE", raising=False)
        mp.delenv("HF_HUB_OFFLINE", raising=False)
        err = io.StringIO()
        mp.setattr("sys.stderr", err)
        code = main(["build", "vl_checklist", "--annotations-url", server.url + PREFIX, "--images", str(images),
                     "--skip-missing-images", "--cache-dir", str(base / "cache"), "--out", str(base / "vl_checklist")])
        assert code == 0, err.getvalue()
        assert len(server.hits) == len(UP.files) == 56
    finally:
        mp.undo()
        server.close()
    return base / "vl_checklist", files, err.getvalue()


def test_every_config_loads_with_pos0_true(built) -> None:
    out = built[0]
    assert set(datasets.get_dataset_config_names(str(out))) == set(vl_checklist.BY_CONFIG) | set(vl_checklist.AGGREGATES)
    total = 0
    for leaf in vl_checklist.LEAVES:
        ds = load(out, leaf.config)
        expected = expected_rows(leaf)
        assert ds["id"] == [e[0] for e in expected], leaf.config
        for row, (_, path, texts) in zip(ds, expected):
            assert (row["image_path"], row["caption"], row["negative_caption"]) == (path, texts["POS"][0], texts["NEG"][0])
            assert row["positives"] == texts["POS"] and row["negatives"] == texts["NEG"]
            assert row["image"].size == (8, 8) and row["leaf"] == leaf.config and row["aspect"] == leaf.aspect
        total += len(ds)
    assert len(load(out, "all")) == total and len(load(out, "relation")) == len(load(out, "relation_action")) + 3
    item = next(iter(find_spec(str(out)).iter_items(load(out, "attribute_color"), config="attribute_color")))
    assert item.gold.tolist() == [[True, False]] and "corpus=vaw" in item.tags and "aspect=Attribute" in item.tags


def test_missing_images_are_counted_and_reported(built) -> None:
    out, _, err = built
    dropped = {(leaf.config, corpus): sum(p == MISSING for p, _ in records(corpus, file))
               for leaf in vl_checklist.LEAVES for corpus, file in leaf.corpora if corpus.startswith("hake")}
    gone, total = sum(dropped.values()), 3 * len(UP.files)
    assert gone > 0
    assert f"VL-CheckList: {gone:,} of {total:,} records dropped because their image could not be had" in err
    report = (out / "data" / "BUILD.md").read_text()
    assert f"**{gone:,} dropped because their image could not be had**" in report
    for (config, corpus), d in dropped.items():
        file = dict(vl_checklist.BY_CONFIG[config].corpora)[corpus]
        assert f"| `{config}` | {corpus} | `{file}` | 3 | {3 - d} | {d} |" in report
    assert "## Rows left out" in report and "hcvrd/1246.jpg" not in load(out, "all")["image_path"]


def test_unpinned_files_are_hashed_with_one_warning(built) -> None:
    out, files, err = built
    warnings = [line for line in err.splitlines() if "could not be checked against a pinned git blob hash" in line]
    assert len(warnings) == 1 and warnings[0].startswith("VL-CheckList: warning: 56 annotation file(s)")
    report = (out / "data" / "BUILD.md").read_text()
    for f in UP.files:
        data = (files / f.path).read_bytes()
        assert f"| `{f.path}` | `{upstream.git_blob_sha1(data)}` | {len(data):,} | **unverified** |" in report


def test_accuracy_is_acc_r_with_ties_wrong(built, tiny_clip_path: Path, tmp_path: Path, capsys) -> None:
    from vlprobe.cli import main
    from vlprobe.metric import compute

    scores = [[[0.9, 0.2]], [[0.5, 0.5]], [[0.1, 0.3]], [[0.7, 0.6]]]
    r = compute(predictions=scores, references=[[[1, 0]]] * 4, bootstrap=0)
    assert r["acc_r"] == r["text"] == pytest.approx(0.5) and r["n_ties"] == 1
    code = main(["evaluate", "--dataset", str(built[0]), "--model", str(tiny_clip_path), "--config", "attribute_color",
                 "--limit", "4", "--bootstrap", "0", "--no-progress", "--cache-dir", "none", "--out", str(tmp_path / "run")])
    assert code == 0, capsys.readouterr().err
    doc = json.loads((tmp_path / "run" / "results.json").read_text())
    rows = pq.read_table(tmp_path / "run" / "scores.parquet").to_pylist()
    (entry,) = doc["results"]
    assert len(rows) == 4
    assert entry["metrics"]["acc_r"] == pytest.approx(np.mean([r["scores"][0][0] > r["scores"][0][1] for r in rows]))
    assert "corpus=vaw" in entry["metrics"]["per_tag"] and "corpus=vg" in entry["metrics"]["per_tag"]
    block = doc["summary"]["vl_checklist"]
    assert block["headline"] == ["acc_r"] and block["tie_policy"] == {
        "authors": "strict", "rule": "a tie is wrong: the authors' evaluate.py (itc) counts pos > neg", "run": "strict"}
    assert "authors_rule" not in entry  # the run's tie policy is the authors': no second figure


def test_committed_card_spec_and_the_space_listing(built, repo_root: Path) -> None:
    from vlprobe.demo.settings import Settings
    from vlprobe.publish import check_dataset_folder

    out = built[0]
    assert check_dataset_folder(out, rows=2, load=False)[0] == []
    assert (repo_root / "vl_checklist" / "README.md").read_text() == (out / "README.md").read_text()
    assert (repo_root / "vl_checklist" / "vlprobe.yaml").read_text() == (out / "vlprobe.yaml").read_text()
    assert str(out) in Settings(root=out.parent).dataset_folders()


def test_missing_images_stop_the_build_without_the_flag(tmp_path: Path, capsys) -> None:
    from vlprobe.cli import main

    files = make_files(tmp_path / "up")
    images = image_root(tmp_path / "dataset")
    assert main(["build", "vl_checklist", "--annotations", str(files), "--images", str(images),
                 "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "hake_hcvrd: 1 of 1 files missing: 1246.jpg" in err and "--skip-missing-images" in err
    assert not (tmp_path / "o").exists()


def test_offline_names_every_file_and_its_url(tmp_path: Path, monkeypatch, capsys) -> None:
    from vlprobe.cli import main

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    assert main(["build", "vl_checklist", "--out", str(tmp_path / "o"), "--cache-dir", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert "VL-CheckList: 56 annotation file(s) are not in the cache" in err and "Traceback" not in err
    for f in UP.files:
        assert f"https://raw.githubusercontent.com/om-ai-lab/VL-CheckList/6f8d6a32/data/{f.path}" in err


def test_bad_records_name_the_file_and_record(tmp_path: Path) -> None:
    files = make_files(tmp_path / "a")
    leaf = vl_checklist.BY_CONFIG["relation_action"]
    bad = records("hake", "Relation/hake_action.json")
    bad[1][0] = "elsewhere/1.jpg"
    (files / "Relation/hake_action.json").write_text(json.dumps(bad))
    with pytest.raises(AnnotationError, match=r"Relation/hake_action\.json record 1: HAKE image path 'elsewhere/1\.jpg'"):
        vl_checklist.read_file(files, leaf, "hake", "Relation/hake_action.json")
    files = make_files(tmp_path / "b")
    bad = records("vg", "Relation/vg/action.json")
    bad[2][1]["NEG"] = []
    (files / "Relation/vg/action.json").write_text(json.dumps(bad))
    with pytest.raises(AnnotationError, match=r"Relation/vg/action\.json record 2: NEG should be a non-empty list"):
        vl_checklist.read_all(files)
    bad[2] = ["../../etc/passwd", {"POS": ["a"], "NEG": ["b"]}]
    (files / "Relation/vg/action.json").write_text(json.dumps(bad))
    with pytest.raises(AnnotationError, match=r"record 2: Visual Genome image path '\.\./\.\./etc/passwd'"):
        vl_checklist.read_all(files)
