"""CREPE: built through `vlprobe build crepe` from synthetic zips in the upstream layout (the real zips
are not available here), served by a stand-in for raw.githubusercontent.com; every config loads, the
caption is the true text, the image is the authors' crop, recall@1 is the metric's `text` with the
strict tie rule, the unpinned zips are hashed into data/BUILD.md with one warning, offline and bad
records name what is wrong."""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import zipfile
from pathlib import Path

import datasets
import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

from vlprobe.benchmarks import get as get_benchmark
from vlprobe.builders import AnnotationError, crepe, upstream
from vlprobe.spec import find_spec

UP = get_benchmark("crepe").upstream  # its pinned annotation files
PREFIX = f"/{UP.repo}/{UP.commit}/{UP.folder}"
IMAGE_SIZE = (40, 30)
SYST_COLUMNS = ["image_id", "caption", "x", "y", "width", "height", "valid_hard_negs_atom", "valid_hard_negs_comp"]
# One file carries its own combined column (as the authors' later script reads it); the others derive it.
COMBINED_FILE = "syst_vg_hard_negs_seen_compounds_in_laion.csv"
PROD_COLUMNS = ["image_id", "caption", "x", "y", "width", "height", "hard_negs"]


def _image(image_id: int) -> bytes:
    """A JPEG whose left and right halves differ, so that a crop is recognisable."""
    h = hashlib.sha1(str(image_id).encode()).digest()
    im = Image.new("RGB", IMAGE_SIZE, (h[0], h[1], h[2]))
    im.paste((255 - h[0], 255 - h[1], 255 - h[2]), (20, 0, 40, 30))
    buf = io.BytesIO()
    im.save(buf, "JPEG", quality=95)
    return buf.getvalue()


def _csv(columns: list[str], rows: list[dict]) -> bytes:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, columns)
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue().encode()


def syst_rows(pretraining: str, compounds: str) -> list[dict]:
    base = 1000 + 10 * list(crepe.PRETRAINING).index(pretraining) + (5 if compounds == "unseen" else 0)
    rows = [{"image_id": base + i, "caption": f"{compounds} {pretraining} caption {i}", "x": 2 * i, "y": i,
             "width": 12 + i, "height": 10, "valid_hard_negs_atom": repr([f"atom neg {i}.{j}" for j in range(3)]),
             "valid_hard_negs_comp": repr([f"comp neg {i}.{j}" for j in range(2 + i)])} for i in range(3)]
    rows[2]["valid_hard_negs_comp"] = "[]"  # no comp negative: left out of the comp config only
    if f"syst_vg_hard_negs_{compounds}_compounds_in_{pretraining}.csv" == COMBINED_FILE:
        for i, r in enumerate(rows):
            r["valid_hard_negs_combined"] = repr([f"combined neg {i}.{j}" for j in range(4)])
    return rows


def expected_negatives(rec: dict, part) -> list[str]:
    if part.negatives == crepe.COMBINED and crepe.COMBINED not in rec:
        return eval(rec["valid_hard_negs_atom"]) + eval(rec["valid_hard_negs_comp"])
    return eval(rec[part.negatives])


def prod_rows(kind: str, n: int) -> list[dict]:
    return [{"image_id": 2000 + 20 * n + i, "caption": f"{kind} {n} caption {i}", "x": 30 if n == 12 else 15, "y": 5, "width": 20,
             "height": 20, "hard_negs": repr([f"{kind} {n} negative {i}.{j}" for j in range(5)])} for i in range(2)]


def make_zips(folder: Path, *, edit=None) -> Path:
    """The two zips in the layout the authors' scripts read (files under a top folder and, for
    productivity, one sub-folder per type); ``edit(name, rows)`` may change a file's rows."""
    folder.mkdir(parents=True, exist_ok=True)
    edit = edit or (lambda name, rows: rows)
    with zipfile.ZipFile(folder / crepe.SYST_ZIP, "w") as zf:
        zf.writestr("syst_hard_negatives/", "")
        for p in crepe.PRETRAINING:
            for c in crepe.COMPOUNDS:
                name = f"syst_vg_hard_negs_{c}_compounds_in_{p}.csv"
                columns = SYST_COLUMNS + (["valid_hard_negs_combined"] if name == COMBINED_FILE else [])
                zf.writestr(f"syst_hard_negatives/{name}", _csv(columns, edit(name, syst_rows(p, c))))
    with zipfile.ZipFile(folder / crepe.PROD_ZIP, "w") as zf:
        for t in crepe.PROD_TYPES:
            for n in crepe.COMPLEXITIES:
                name = f"prod_vg_hard_negs_{t}_complexity_{n}.csv"
                zf.writestr(f"prod_hard_negatives/{t}/{name}", _csv(PROD_COLUMNS, edit(name, prod_rows(t, n))))
    return folder


def image_ids() -> set[int]:
    ids = {r["image_id"] for p in crepe.PRETRAINING for c in crepe.COMPOUNDS for r in syst_rows(p, c)}
    return ids | {r["image_id"] for t in crepe.PROD_TYPES for n in crepe.COMPLEXITIES for r in prod_rows(t, n)}


def run_build(*argv: str) -> Path:
    parser = argparse.ArgumentParser()
    crepe.add_arguments(parser)
    return crepe.build(parser.parse_args(list(argv)))


def load(folder: Path, config: str) -> datasets.Dataset:
    return datasets.load_dataset(str(folder), config, split="test", cache_dir=str(folder.parent / ".hf_cache"))


@pytest.fixture(scope="module")
def vg_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("vg")
    for sub in ("VG_100K", "VG_100K_2"):
        (root / sub).mkdir()
    for n, image_id in enumerate(sorted(image_ids())):
        (root / ("VG_100K" if n % 2 else "VG_100K_2") / f"{image_id}.jpg").write_bytes(_image(image_id))
    return root


@pytest.fixture(scope="module")
def built(tmp_path_factory, vg_root: Path) -> tuple[Path, Path, str]:
    """Built through the CLI, the zips fetched from a stand-in server at the pinned commit's URLs."""
    from stand_in_server import StandInServer

    from vlprobe.cli import main

    base = tmp_path_factory.mktemp("crepe")
    zips = make_zips(base / "upstream")
    server = StandInServer()
    mp = pytest.MonkeyPatch()
    try:
        server.serve_folder(zips, PREFIX)
        mp.delenv("HF_DATASETS_OFFLINE", raising=False)
        mp.delenv("HF_HUB_OFFLINE", raising=False)
        mp.setenv(UP.url_env, server.url + PREFIX)
        err = io.StringIO()
        mp.setattr("sys.stderr", err)
        code = main(["build", "crepe", "--images", str(vg_root), "--cache-dir", str(base / "cache"),
                     "--out", str(base / "crepe")])
        assert code == 0, err.getvalue()
        assert sorted(server.hits) == sorted(PREFIX + z for z in (crepe.SYST_ZIP, crepe.PROD_ZIP))
    finally:
        mp.undo()
        server.close()
    return base / "crepe", zips, err.getvalue()


def test_unpinned_zips_are_hashed_into_the_build_report_with_one_warning(built) -> None:
    out, zips, err = built
    warnings = [line for line in err.splitlines() if "could not be checked against a pinned git blob hash" in line]
    assert len(warnings) == 1 and warnings[0].startswith("CREPE: warning: 2 annotation file(s)")
    assert f"git ls-tree {UP.commit[:8]} data/<file>" in warnings[0] and "data/BUILD.md" in warnings[0]
    report = (out / "data" / "BUILD.md").read_text()
    for z in (crepe.SYST_ZIP, crepe.PROD_ZIP):
        data = (zips / z).read_bytes()
        blob = upstream.git_blob_sha1(data)
        assert f"| `{z}` | `{blob}` | {len(data):,} | **unverified** |" in report
        assert (upstream.cache_folder(UP, out.parent / "cache") / z).read_bytes() == data
    # a pinned file is still refused when it differs, and a matching one passes silently
    pinned = upstream.Upstream(UP.benchmark, UP.repo, UP.commit, UP.folder, (upstream.UpstreamFile(
        crepe.SYST_ZIP, upstream.git_blob_sha1((zips / crepe.SYST_ZIP).read_bytes())),), UP.url_env)
    logged: list[str] = []
    assert upstream.annotation_folder(pinned, zips, log=logged.append) == zips and logged == []
    wrong = upstream.Upstream(UP.benchmark, UP.repo, UP.commit, UP.folder,
                              (upstream.UpstreamFile(crepe.SYST_ZIP, "0" * 40, 1),), UP.url_env)
    with pytest.raises(upstream.AnnotationChecksumError, match="syst_hard_negatives.zip .*not the pinned one"):
        upstream.annotation_folder(wrong, zips)


def test_every_config_loads_with_the_caption_true(built) -> None:
    out = built[0]
    configs = set(datasets.get_dataset_config_names(str(out)))
    assert configs == set(crepe.BY_CONFIG) | set(crepe.AGGREGATES) and len(crepe.PARTS) == 45
    for part in crepe.PARTS:
        ds = load(out, part.config)
        if part.family == "productivity":
            raw = prod_rows(part.negative_type, part.complexity)
            assert len(ds) == 2 and set(ds["n_negatives"]) == {5}
        else:
            raw = syst_rows(part.pretraining, part.compounds)
            assert len(ds) == (2 if part.negative_type == "comp" else 3), part.config
        for row in ds:
            rec = raw[row["index"]]
            assert row["id"] == f"{part.config}/{row['index']}"
            assert row["caption"] == rec["caption"] and row["negatives"] == expected_negatives(rec, part)
            assert row["gold"] == [[1] + [0] * len(row["negatives"])]
            assert (row["family"], row["negative_type"], row["complexity"]) == (
                part.family, part.negative_type, part.complexity)
    assert len(load(out, "productivity")) == 54 and len(load(out, "prod_negate")) == 18 and len(load(out, "all")) == 102
    report = (out / "data" / "BUILD.md").read_text()
    assert "| `syst_cc12m_seen_comp` | 2 | 3 | 1 | 0 | 2: 1, 3: 1 |" in report
    assert "- `syst_laion_unseen_comp`: 1 row(s): 2" in report
    # combined: the file with its own column is read as is; the other five are atom + comp, and said so
    assert load(out, "syst_laion_seen_combined")[0]["negatives"] == [f"combined neg 0.{j}" for j in range(4)]
    assert load(out, "syst_cc12m_seen_combined")[2]["negatives"] == [f"atom neg 2.{j}" for j in range(3)]
    derived = report.split("## `combined` negatives built as atom + comp")[1].split("##")[0]
    assert "`syst_cc12m_seen_combined`" in derived and "syst_laion_seen_combined" not in derived


def test_the_image_is_the_authors_crop(built) -> None:
    row = load(built[0], "syst_yfcc_seen_atom")[1]  # x=2, y=1, 13 x 10
    assert row["image"].size == (13, 10) and row["image"].format == "PNG"
    with Image.open(io.BytesIO(_image(int(row["image_id"])))) as im:
        expected = im.convert("RGB").crop((2, 1, 15, 11))
    assert np.array_equal(np.asarray(row["image"].convert("RGB")), np.asarray(expected))
    # a region reaching past the image's edge comes out black there, as torchvision's crop of a PIL image
    row = load(built[0], "prod_swap_12")[0]  # x = 30..50 of a 40-pixel-wide image
    pixels = np.asarray(row["image"].convert("RGB"))
    assert row["image"].size == (20, 20) and not pixels[:, 10:].any() and pixels[:, :10].any()


def test_items_and_recall_at_1_with_the_authors_tie_rule(built) -> None:
    """Rows become 1 x (1 + k) items with the caption gold; the metric's `text` is CREPE's R@1 (the
    caption strictly above every negative), ties wrong under strict, 1/(1+t) under half."""
    from vlprobe.metric import compute

    out = built[0]
    spec = find_spec(str(out))
    ds = load(out, "syst_cc12m_seen_comp")
    items = list(spec.iter_items(ds, config="syst_cc12m_seen_comp"))
    assert [it.gold.tolist() for it in items] == [[[True, False, False]], [[True, False, False, False]]]
    assert items[0].texts == (ds[0]["caption"], *ds[0]["negatives"])
    assert "family=systematicity" in items[0].tags and "pretraining=cc12m" in items[0].tags
    assert not any(t.startswith("complexity=") for t in items[0].tags)
    # hand-made scores, k = 2, 3, 5 in one call: right; caption tied with one negative at the top; a
    # negative above the caption; right
    scores = [[[0.9, 0.2, 0.3]], [[0.8, 0.8, 0.1, 0.0]], [[0.5, 0.1, 0.6, 0.2, 0.3, 0.0]], [[0.3, 0.2, 0.1]]]
    gold = [[[1] + [0] * (len(s[0]) - 1)] for s in scores]
    r = compute(predictions=scores, references=gold, bootstrap=0)
    assert r["text"] == pytest.approx(2 / 4) and r["set_acc"] == r["text"] and r["n_ties"] == 1
    assert compute(predictions=scores, references=gold, bootstrap=0, ties="half")["text"] == pytest.approx(2.5 / 4)

    def authors_r1(s: list[float]) -> bool:  # rank 0 of the caption, every tie against it
        return all(s[0] > v for v in s[1:])

    assert r["text"] == np.mean([authors_r1(s[0]) for s in scores])


def test_evaluate_on_the_built_folder(built, tiny_clip_path: Path, tmp_path: Path, capsys) -> None:
    from vlprobe.cli import main

    code = main(["evaluate", "--dataset", str(built[0]), "--model", str(tiny_clip_path), "--config",
                 "prod_atom_4,syst_cc12m_seen_comp", "--limit", "2", "--bootstrap", "0", "--no-progress",
                 "--cache-dir", "none", "--out", str(tmp_path / "run")])
    assert code == 0, capsys.readouterr().err
    doc = json.loads((tmp_path / "run" / "results.json").read_text())
    table = pq.read_table(tmp_path / "run" / "scores.parquet").to_pylist()
    assert {e["config"] for e in doc["results"]} == {"prod_atom_4", "syst_cc12m_seen_comp"}
    for entry in doc["results"]:
        rows = [r for r in table if r["config"] == entry["config"]]
        assert len(rows) == 2
        r1 = np.mean([all(r["scores"][0][0] > v for v in r["scores"][0][1:]) for r in rows])
        assert entry["metrics"]["text"] == pytest.approx(r1)
    assert doc["provenance"]["settings"]["ties"] == "strict"
    block = doc["summary"]["crepe"]  # the headline is the authors' recall@1, named as they name it
    assert block["headline"] == ["text", "acc_r"] and block["names"] == {"text": "R@1"}
    assert block["tie_policy"]["authors"] == "strict" and "torch.argsort" in block["tie_policy"]["rule"]
    assert "R@1" in capsys.readouterr().out


def test_a_plain_run_summarises_each_config(built, tiny_clip_path: Path, tmp_path: Path, capsys) -> None:
    # `evaluate --dataset crepe` scores the `all` config once; the summary gives each leaf config's R@1
    # (from the `leaf=` tag), as the authors report per config, beside the pooled `all`.
    from vlprobe.cli import main

    code = main(["evaluate", "--dataset", str(built[0]), "--model", str(tiny_clip_path), "--bootstrap", "0",
                 "--no-progress", "--cache-dir", "none", "--out", str(tmp_path / "run")])
    assert code == 0, capsys.readouterr().err
    doc = json.loads((tmp_path / "run" / "results.json").read_text())
    assert [e["config"] for e in doc["results"]] == ["all"]
    table = pq.read_table(tmp_path / "run" / "scores.parquet").to_pylist()
    rows = {r["config"]: r for r in doc["summary"]["crepe"]["rows"]}
    assert set(crepe.BY_CONFIG) <= set(rows)
    for config in ("prod_atom_4", "syst_laion_seen_combined", "syst_cc12m_seen_comp"):
        mine = [r for r in table if r["id"].startswith(f"{config}/")]
        r1 = np.mean([all(r["scores"][0][0] > v for v in r["scores"][0][1:]) for r in mine])
        assert rows[config]["values"]["text"] == pytest.approx(r1), config


def test_committed_card_spec_and_the_space_listing(built, repo_root: Path, tmp_path: Path) -> None:
    from vlprobe.demo.settings import Settings
    from vlprobe.publish import check_dataset_folder

    out = built[0]
    assert check_dataset_folder(out, rows=2, load=False)[0] == []
    assert (repo_root / "crepe" / "README.md").read_text() == (out / "README.md").read_text()
    assert (repo_root / "crepe" / "vlprobe.yaml").read_text() == (out / "vlprobe.yaml").read_text()
    card = (out / "README.md").read_text()
    assert "only meaningful for models pretrained on CC12M, YFCC15M or LAION-400M" in card
    assert "CREPE's recall@1 is\n`text`" in card or "CREPE's recall@1 is `text`" in card
    assert "not pinned yet" in card and UP.commit in card
    assert str(out) in Settings(root=out.parent).dataset_folders()


def test_offline_names_both_zips_and_their_urls(tmp_path: Path, monkeypatch, capsys) -> None:
    from vlprobe.cli import main

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.delenv(UP.url_env, raising=False)
    assert main(["build", "crepe", "--out", str(tmp_path / "o"), "--cache-dir", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert "CREPE: 2 annotation file(s) are not in the cache" in err and "Traceback" not in err
    for z in (crepe.SYST_ZIP, crepe.PROD_ZIP):
        assert f"https://raw.githubusercontent.com/RAIVNLab/CREPE/{UP.commit}/data/{z}  (no pinned git blob hash yet)" in err
    assert not (tmp_path / "o").exists()


def test_bad_records_name_the_file_and_row(tmp_path: Path) -> None:
    def bad_negatives(name, rows):
        if name == "prod_vg_hard_negs_swap_complexity_7.csv":
            rows[1]["hard_negs"] = "['a', 3]"
        return rows

    zips = make_zips(tmp_path / "a", edit=bad_negatives)
    with pytest.raises(AnnotationError, match=r"prod_hard_negatives\.zip:prod_vg_hard_negs_swap_complexity_7\.csv "
                                              r"row 1: hard_negs .* not a Python list of non-empty strings"):
        crepe.read_all(zips)

    def bad_region(name, rows):
        if name == "syst_vg_hard_negs_unseen_compounds_in_yfcc.csv":
            rows[0]["width"] = "wide"
        return rows

    with pytest.raises(AnnotationError, match=r"syst_vg_hard_negs_unseen_compounds_in_yfcc\.csv row 0: width 'wide' is "
                                              r"not a number"):
        crepe.read_all(make_zips(tmp_path / "b", edit=bad_region))
    zips = make_zips(tmp_path / "c")
    with zipfile.ZipFile(zips / crepe.PROD_ZIP, "w") as zf:
        zf.writestr("prod_hard_negatives/atom/other.csv", "a,b\n")
    with pytest.raises(AnnotationError, match=r"prod_hard_negatives\.zip: no file prod_vg_hard_negs_atom_complexity_4\.csv "
                                              r"\(the zip's CSV files: other\.csv\)"):
        crepe.read_all(zips)
    (zips / crepe.SYST_ZIP).write_bytes(b"version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 1\n")
    with pytest.raises(AnnotationError, match=r"syst_hard_negatives\.zip: a Git LFS pointer, not the zip itself"):
        crepe.read_all(zips)
