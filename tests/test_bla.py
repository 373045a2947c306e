"""The BLA builder, on the released annotations (../shared/data/bla/released_2023) with stand-in
Visual Genome images: part in a VG_100K/ folder, part in VG's second zip (images2.zip)."""

from __future__ import annotations

import argparse
import collections
import functools
import json
import zipfile
from pathlib import Path

import datasets
import pytest
from helpers import jpeg
from helpers_data import build_from, load

from vlprobe.benchmarks import get as get_benchmark
from vlprobe.builders import bla
from vlprobe.dataset import image_sources as imgs
from vlprobe.dataset.spec import find_spec

BLA_UP = get_benchmark("bla").upstream  # its pinned annotation files

pytestmark = [pytest.mark.shared_data, pytest.mark.slow]  # builds BLA from the real annotations

COUNTS = {"active_passive": 613, "coordination": 654, "relative_clause": 672}
FINETUNE_CONFIGS = [f"{t}_{s}" for t in COUNTS for s in ("finetune_random", "finetune_test_golden", "finetune_train_golden")]
GOLDEN = {"active_passive": 41, "coordination": 36, "relative_clause": 25}  # the release's golden set


def referenced_image_ids(annotations: Path) -> list[str]:
    ids = []
    for file in bla.FILES.values():
        ids += [str(r["image_id"]) for r in json.loads((annotations / file).read_text())]
    return sorted(set(ids))


def make_vg_standins(root: Path, annotations: Path, skip=frozenset(), corrupt: str | None = None) -> Path:
    data = jpeg(size=(8, 6), color=(10, 200, 90))
    (root / "VG_100K").mkdir(parents=True)
    with zipfile.ZipFile(root / "images2.zip", "w") as zf:
        for i in referenced_image_ids(annotations):
            if i in skip:
                continue
            payload = b"garbage" if i == corrupt else data
            if int(i) < 2_000_000:
                (root / "VG_100K" / f"{i}.jpg").write_bytes(payload)
            else:
                zf.writestr(f"VG_100K_2/{i}.jpg", payload)
    return root


run_build = functools.partial(build_from, bla.Bla())  # run_build(annotations, images, out, *extra)


@pytest.fixture(scope="module")
def annotations(shared_data: Path) -> Path:
    return shared_data / "bla" / "released_2023" / "annotations"


@pytest.fixture(scope="module")
def built(annotations: Path, tmp_path_factory) -> Path:
    root = make_vg_standins(tmp_path_factory.mktemp("vg"), annotations)
    assert any(int(i) >= 2_000_000 for i in referenced_image_ids(annotations))  # the zip part is not empty
    return run_build(annotations, root, tmp_path_factory.mktemp("bla_folder") / "bla")


def test_counts_schema_and_ids(built: Path) -> None:
    assert sorted(datasets.get_dataset_config_names(str(built))) == sorted(["all", *COUNTS, *FINETUNE_CONFIGS])
    assert datasets.get_dataset_default_config_name(str(built)) == "active_passive"
    for config, n in COUNTS.items():
        ds = load(built, config)
        assert len(ds) == n
        assert ds.features == bla.FEATURES[config]
        assert len(set(ds["id"])) == n and all(i.startswith(f"{config}/") for i in ds["id"])
        assert all(isinstance(i, str) for i in ds["image_id"])
        assert all(len(t) == 2 for t in ds["true_captions"]) and all(len(f) == 2 for f in ds["false_captions"])
        assert set(ds["task"]) == {config}
    ap = load(built, "active_passive").remove_columns("image")
    first = ap[0]
    assert first["image_id"] == "411" and first["predicate"] == "watches"
    assert first["true_captions"] == ["the woman watches the man", "the man is watched by the woman"]
    assert first["false_captions"] == ["the man watches the woman", "the woman is watched by the man"]
    assert first["caption_voices"] == ["active", "passive", "active", "passive"]
    assert set(ap["voice_order"]) == {"TA,TP,FA,FP"}
    co = load(built, "coordination").remove_columns("image")
    row = co.filter(lambda r: r["image_id"] == "115")[0]
    assert row["quality_scores"] == pytest.approx(
        [0.8732048571109772, 0.8786000314295292, 0.8234764337539673, 0.9027334749811408])
    assert "TA vs FA is score column 0 vs 2" in (built / "README.md").read_text()


def test_items_are_1x4_with_tags(built: Path) -> None:
    spec = find_spec(str(built))
    for config in COUNTS:
        ds = load(built, config).select(range(4))
        for item, row in zip(spec.iter_items(ds, config=config), ds):
            assert item.shape == (1, 4) and item.gold.tolist() == [[True, True, False, False]]
            assert item.texts == tuple(row["true_captions"] + row["false_captions"])
            assert f"task={config}" in item.tags and item.images[0].size == (8, 6)
            if config == "active_passive":
                assert f"predicate={row['predicate']}" in item.tags and "voice_order=TA,TP,FA,FP" in item.tags


def test_all_pools_the_three_tasks_once(built: Path) -> None:
    """`all`: every benchmark row once (613 + 654 + 672), ids unique, tagged task=<config>; it is
    what `vlprobe evaluate --dataset bla` scores by default (not the fine-tuning configs), and the
    summary reads the three tasks from its per-tag values."""
    from vlprobe.dataset.splits import select_configs
    from vlprobe.results.summary import summarize

    assert datasets.get_dataset_default_config_name(str(built)) == "active_passive"  # unchanged
    assert select_configs(str(built), "all", None) == ["all"]
    assert select_configs(str(built), None, None) == datasets.get_dataset_config_names(str(built))  # '*': every one
    ds = load(built, "all")
    assert len(ds) == 613 + 654 + 672 == sum(COUNTS.values())
    assert ds.features == bla.FEATURES["all"]
    assert len(set(ds["id"])) == len(ds)
    rows = ds.remove_columns("image")
    assert dict(sorted(collections.Counter(rows["task"]).items())) == COUNTS
    for config in COUNTS:  # the same rows as the task's own config
        own = load(built, config).remove_columns("image")
        assert sorted(own["id"]) == sorted(i for i, t in zip(rows["id"], rows["task"]) if t == config)
    # image 115 is in coordination and relative_clause: two rows, two ids
    assert sorted(i for i in rows["id"] if i.endswith("/115")) == ["coordination/115", "relative_clause/115"]
    co = rows.filter(lambda r: r["id"] == "coordination/115")[0]
    assert co["predicate"] is None and co["quality_scores"][0] == pytest.approx(0.8732048571109772)

    spec = find_spec(str(built))
    picked = ds.select([0, ds["task"].index("coordination"), ds["task"].index("relative_clause")])
    tags = [item.tags for item in spec.iter_items(picked, config="all")]
    assert [sorted(t for t in tg if t.startswith("task=")) for tg in tags] == [[f"task={c}"] for c in COUNTS]
    for item in spec.iter_items(picked, config="all"):
        assert item.shape == (1, 4) and item.gold.tolist() == [[True, True, False, False]]

    # the summary: a results entry for `all` with per-tag values (hand-made) gives the three task rows
    per_tag = {f"task={c}": {"sentence_acc": v, "set_acc": v - 0.1, "set_error": 0.05, "n_items": n}
               for (c, n), v in zip(COUNTS.items(), (0.8, 0.7, 0.6))}
    assert spec.benchmark == "bla"  # the built folder records its benchmark; the entry carries it
    entry = {"benchmark": spec.benchmark, "dataset": str(built), "config": "all", "split": "test",
             "metrics": {"sentence_acc": 0.7, "set_acc": 0.6, "set_error": 0.05, "n_items": len(ds), "per_tag": per_tag}}
    out = summarize([entry])["bla"]
    assert [r.config for r in out.rows] == list(COUNTS)
    assert [r.values["sentence_acc"] for r in out.rows] == pytest.approx([0.8, 0.7, 0.6])
    assert [r.values["set_acc"] for r in out.rows] == pytest.approx([0.7, 0.6, 0.5])
    assert all(r.source.startswith("all (per tag task=") for r in out.rows) and out.complete


def test_committed_card_and_spec_are_what_a_build_writes(built: Path, repo_root: Path) -> None:
    assert (repo_root / "bla" / "README.md").read_text() == (built / "README.md").read_text()
    assert (repo_root / "bla" / "vlprobe.yaml").read_text() == (built / "vlprobe.yaml").read_text()


def test_missing_and_corrupt_images(annotations: Path, tmp_path: Path) -> None:
    root = make_vg_standins(tmp_path / "vg", annotations, skip={"411", "115"})
    with pytest.raises(imgs.MissingImagesError, match=r"visual_genome: 2 of 1275 files missing: 115\.jpg, 411\.jpg"):
        run_build(annotations, root, tmp_path / "out")
    out = run_build(annotations, root, tmp_path / "out", "--skip-missing-images")
    assert len(load(out, "active_passive")) == 612
    assert len(load(out, "coordination")) == 653  # image 115 is in coordination and relative_clause
    report = (out / "data" / "BUILD.md").read_text()  # what this build left out goes with its data
    assert "## Rows left out" in report and "411.jpg" in report
    assert (out / "README.md").read_text() == (Path(__file__).parents[1] / "bla" / "README.md").read_text()

    # a corrupt image stops the build with its name, and leaves the folder built before as it was
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    bad = make_vg_standins(tmp_path / "vg2", annotations, corrupt="73")
    with pytest.raises(imgs.CorruptImageError, match=r"visual_genome: image file 73\.jpg is corrupt"):
        run_build(annotations, bad, out)
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert not (out / "data" / ".staging").exists()


def test_download_fills_the_gaps_through_the_cache(annotations: Path, tmp_path: Path, monkeypatch, stand_in_server) -> None:
    """`--download`: images missing locally come from the source's URLs (here a local server
    standing in for cs.stanford.edu, first VG_100K then VG_100K_2) into `--cache-dir`."""
    root = make_vg_standins(tmp_path / "vg", annotations, skip={"411", "2315865"})
    jpeg = (root / "VG_100K" / "73.jpg").read_bytes()
    stand_in_server.files = {"/VG_100K/411.jpg": jpeg, "/VG_100K_2/2315865.jpg": jpeg}
    base = stand_in_server.url
    vg = imgs.SOURCES["visual_genome"]
    monkeypatch.setitem(imgs.SOURCES, "visual_genome", imgs.SourceSpec(
        vg.name, vg.title, vg.pattern, vg.subdirs, vg.zips, (f"{base}/VG_100K/{{name}}", f"{base}/VG_100K_2/{{name}}")))
    out = run_build(annotations, root, tmp_path / "out", "--download", "--cache-dir", str(tmp_path / "cache"))
    assert len(load(out, "active_passive")) == 613
    assert sorted(p.name for p in (tmp_path / "cache" / "visual_genome").iterdir()) == ["2315865.jpg", "411.jpg"]
    assert sorted(stand_in_server.hits) == ["/VG_100K/2315865.jpg", "/VG_100K/411.jpg", "/VG_100K_2/2315865.jpg"]


def test_finetune_configs_have_train_validation_test(built: Path) -> None:
    """BLA's fine-tuning data: one config per task and setting, splits train / validation / test,
    disjoint, every item a benchmark item with its captions; train rows are [true, false]."""
    spec = find_spec(str(built))
    for task, golden in GOLDEN.items():
        bench = {r["id"]: r for r in load(built, task).remove_columns("image")}
        seen_golden = {}
        for setting in ("finetune_random", "finetune_test_golden", "finetune_train_golden"):
            config = f"{task}_{setting}"
            assert datasets.get_dataset_split_names(str(built), config) == ["train", "validation", "test"]
            parts = {sp: datasets.load_dataset(str(built), config, split=sp, cache_dir=str(built.parent / ".hf_cache"))
                     for sp in ("train", "validation", "test")}
            sizes = {sp: len(ds) for sp, ds in parts.items()}
            expected = {"finetune_random": {"train": 100, "validation": 200, "test": 200},
                        "finetune_test_golden": {"train": 100, "validation": 200, "test": golden},
                        "finetune_train_golden": {"train": golden, "validation": 200, "test": 200}}[setting]
            assert sizes == expected, (config, sizes)
            ids = {sp: set(ds["id"]) for sp, ds in parts.items()}
            assert not (ids["train"] & ids["validation"]) and not (ids["train"] & ids["test"])
            assert not (ids["validation"] & ids["test"])
            for sp, ds in parts.items():
                assert ds.features == bla.FINETUNE_FEATURES
                for row in ds.remove_columns("image"):
                    main = bench[row["id"]]
                    assert set(row["true_captions"]) <= set(main["true_captions"])
                    assert set(row["false_captions"]) <= set(main["false_captions"])
                    assert row["gold"] == ([[1, 0]] if sp == "train" else [[1, 1, 0, 0]])
                item = next(spec.iter_items(ds.select(range(1)), config=config))
                assert item.shape == ((1, 2) if sp == "train" else (1, 4))
                assert f"setting={setting}" in item.tags and f"task={task}" in item.tags
            seen_golden[setting] = ids["test"] if setting == "finetune_test_golden" else ids["train"]
        # the golden set is the same items in both golden settings
        assert seen_golden["finetune_test_golden"] == seen_golden["finetune_train_golden"]


def test_a_build_left_with_no_rows_is_refused(annotations: Path, tmp_path: Path) -> None:
    (tmp_path / "vg").mkdir()
    with pytest.raises(imgs.MissingImagesError, match="nothing to build"):
        run_build(annotations, tmp_path / "vg", tmp_path / "out", "--skip-missing-images")
    assert not (tmp_path / "out").exists()


def test_skip_finetune_builds_only_the_benchmark(annotations: Path, tmp_path: Path) -> None:
    root = make_vg_standins(tmp_path / "vg", annotations)
    out = run_build(annotations, root, tmp_path / "bla", "--skip-finetune")
    assert sorted(datasets.get_dataset_config_names(str(out))) == sorted(["all", *COUNTS])
    assert sorted(p.name for p in (out / "data").iterdir() if p.is_dir()) == sorted(COUNTS)  # `all` reads the tasks' files
    assert len(load(out, "all")) == sum(COUNTS.values())
    # the committed card, whatever the build: the fine-tuning configs are declared, without files here
    assert (out / "README.md").read_text() == (Path(__file__).parents[1] / "bla" / "README.md").read_text()
    assert "--skip-finetune" in (out / "data" / "BUILD.md").read_text()


# ---- annotations fetched from their source (a stand-in for raw.githubusercontent.com), verified ---------
ANNOTATIONS_PATH = "/BLA_Benchmark/annotations/"


def _build_fetched(images: Path, out: Path, cache: Path, *extra: str) -> Path:
    parser = argparse.ArgumentParser()
    bla.Bla().add_arguments(parser)
    return bla.Bla().build(parser.parse_args(["--images", str(images), "--out", str(out), "--cache-dir", str(cache), *extra]))


def test_annotations_fetched_verified_and_cached(annotations: Path, tmp_path: Path, monkeypatch, stand_in_server) -> None:
    from vlprobe.builders import upstream

    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    root = make_vg_standins(tmp_path / "vg", annotations)
    stand_in_server.serve_folder(annotations, ANNOTATIONS_PATH)
    monkeypatch.setenv("VLPROBE_BLA_ANNOTATIONS_URL", stand_in_server.url + ANNOTATIONS_PATH)
    out = _build_fetched(root, tmp_path / "bla", tmp_path / "cache")
    assert len(stand_in_server.hits) == len(BLA_UP.files) == 30
    cached = upstream.cache_folder(BLA_UP, tmp_path / "cache")
    assert (cached / "coordination_captions.json").read_bytes() == (annotations / "coordination_captions.json").read_bytes()
    # a second build reads the verified cache: no request
    _build_fetched(root, tmp_path / "bla2", tmp_path / "cache")
    assert len(stand_in_server.hits) == 30
    assert len(load(out, "coordination")) == 654


def test_tampered_annotation_is_refused(annotations: Path, tmp_path: Path, monkeypatch, stand_in_server) -> None:
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    from vlprobe.builders import upstream

    root = make_vg_standins(tmp_path / "vg", annotations)
    good = (annotations / "relative_clause_captions.json").read_bytes()
    stand_in_server.serve_folder(annotations, ANNOTATIONS_PATH)
    stand_in_server.files[ANNOTATIONS_PATH + "relative_clause_captions.json"] = good.replace(b"wears", b"wearz", 1)
    with pytest.raises(upstream.AnnotationChecksumError,
                       match=r"BLA annotation file relative_clause_captions.json from http://127\.0\.0\.1.* is not the "
                             r"pinned one: git blob [0-9a-f]{40} .* expected b025eed99193d65aa6f444d6853dfbdb24129364"):
        _build_fetched(root, tmp_path / "bla", tmp_path / "cache", "--annotations-url", stand_in_server.url + ANNOTATIONS_PATH)
    assert not (tmp_path / "bla" / "data").exists()
    assert not (upstream.cache_folder(BLA_UP, tmp_path / "cache") / "relative_clause_captions.json").exists()
    # a local copy is verified the same way
    local = tmp_path / "local"
    for f in BLA_UP.files:
        (local / f.path).parent.mkdir(parents=True, exist_ok=True)
        (local / f.path).write_bytes((annotations / f.path).read_bytes())
    (local / "finetune/finetune_random/rc/train.json").write_bytes(b"{}")
    with pytest.raises(upstream.AnnotationChecksumError, match=r"finetune/finetune_random/rc/train\.json from .*local"):
        run_build(local, root, tmp_path / "bla")


def test_offline_error_lists_every_file_and_its_url(tmp_path: Path, monkeypatch, capsys) -> None:
    from vlprobe.builders import upstream
    from vlprobe.cli import main

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    assert main(["build", "bla", "--out", str(tmp_path / "o"), "--cache-dir", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert "30 annotation file(s) are not in the cache" in err and "offline mode is on" in err
    for f in BLA_UP.files:
        assert f"{BLA_UP.default_url}{f.path}" in err and f.blob in err
    assert "--annotations DIR" in err
    # online but the host unreachable: the same list, with the error
    monkeypatch.delenv("HF_DATASETS_OFFLINE")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(upstream.time, "sleep", lambda s: None)
    assert main(["build", "bla", "--out", str(tmp_path / "o"), "--cache-dir", str(tmp_path / "c"),
                 "--annotations-url", "http://127.0.0.1:9/nowhere/", "--skip-finetune"]) == 2
    err = capsys.readouterr().err
    assert "3 annotation file(s) are not in the cache" in err and "http://127.0.0.1:9/nowhere/active_passive_captions.json" in err
