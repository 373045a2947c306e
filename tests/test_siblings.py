"""SugarCREPE, SugarCREPE++ and COLA (multi-object): built from the real annotation files
(../shared/data/{sugar_crepe,sugar_crepe_pp,cola}, through VLPROBE_SHARED_DATA) with stand-in images,
fetched from stand-in servers, refused when tampered with, scored by `vlprobe evaluate` as the authors'
code scores them, and summarised with the papers' aggregates."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import datasets
import numpy as np
import pyarrow.parquet as pq
import pytest
from helpers import jpeg
from helpers_data import load, run_build

from vlprobe.benchmarks import get as get_benchmark
from vlprobe.builders import AnnotationError, cola, sugar_crepe, sugar_crepe_pp, upstream
from vlprobe.dataset import image_sources as imgs
from vlprobe.dataset.spec import find_spec

COLA_UP = get_benchmark("cola").upstream  # its pinned annotation files
SUGAR_CREPE_UP = get_benchmark("sugar_crepe").upstream  # its pinned annotation files
SUGAR_CREPE_PP_UP = get_benchmark("sugar_crepe_pp").upstream  # its pinned annotation files

pytestmark = [pytest.mark.shared_data, pytest.mark.slow]  # builds SugarCREPE, SugarCREPE++ and COLA from the real annotations

BUILDERS = {"sugar_crepe": sugar_crepe.SugarCrepe(), "sugar_crepe_pp": sugar_crepe_pp.SugarCrepePP(), "cola": cola.Cola()}
UPSTREAMS = {"sugar_crepe": SUGAR_CREPE_UP, "sugar_crepe_pp": SUGAR_CREPE_PP_UP, "cola": COLA_UP}


def upstream_counts(shared: Path) -> dict[str, dict[str, int]]:
    """Records per file, read straight from the mirrored upstream files."""
    out: dict[str, dict[str, int]] = {"sugar_crepe": {}, "sugar_crepe_pp": {}}
    for name in out:
        for f in UPSTREAMS[name].files:
            out[name][f.path[: -len(".json")]] = len(json.loads((shared / name / f.path).read_text()))
    out["cola"] = {"multi_object": len(json.loads((shared / "cola" / cola.FILE).read_text()))}
    return out


def coco_names(shared: Path) -> set[str]:
    names: set[str] = set()
    for f in SUGAR_CREPE_UP.files:
        names |= {r["filename"] for r in json.loads((shared / "sugar_crepe" / f.path).read_text()).values()}
    for f in SUGAR_CREPE_PP_UP.files:
        names |= {r["filename"] for r in json.loads((shared / "sugar_crepe_pp" / f.path).read_text())}
    return names


def vg_names(shared: Path) -> set[str]:
    recs = json.loads((shared / "cola" / cola.FILE).read_text())
    return {u.rsplit("/", 1)[1] for r in recs for u in (r[0], r[2])}


@pytest.fixture(scope="module")
def images_root(shared_data: Path, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sibling_images")
    (root / "val2017").mkdir()
    (root / "VG_100K").mkdir()
    for name in coco_names(shared_data):
        (root / "val2017" / name).write_bytes(jpeg(name))
    for name in vg_names(shared_data):
        (root / "VG_100K" / name).write_bytes(jpeg(name))
    return root


@pytest.fixture(scope="module")
def built(shared_data: Path, images_root: Path, tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("sibling_folders")
    return {name: run_build(BUILDERS[name], "--annotations", str(shared_data / name), "--images", str(images_root),
                            "--out", str(base / name)) for name in BUILDERS}


def test_pinned_blob_hashes_match_the_mirrored_files(shared_data: Path) -> None:
    for name, up in UPSTREAMS.items():
        located = upstream.locate([up], shared_data / name)  # verified, else raises
        upstream.require_all(located, up, shared_data / name, None)
        assert located.folder == shared_data / name
        for f in up.files:
            assert (shared_data / name / f.path).stat().st_size == f.size
    counts = upstream_counts(shared_data)
    assert get_benchmark("sugar_crepe").counts == counts["sugar_crepe"]
    assert get_benchmark("sugar_crepe_pp").counts == counts["sugar_crepe_pp"]
    assert counts["cola"] == {"multi_object": cola.COUNT} and sum(get_benchmark("sugar_crepe").counts.values()) == 7511


def test_the_cards_claims_hold_on_the_files(shared_data: Path) -> None:
    """What the cards say about the data: 574 SugarCREPE negatives are the caption's words reordered;
    SugarCREPE++ follows SugarCREPE record by record (same images, same order) with edited texts."""
    import re

    def bag(text: str) -> list[str]:
        return sorted(re.findall(r"\w+", text.lower()))

    reordered = {}
    for f in SUGAR_CREPE_UP.files:
        recs = json.loads((shared_data / "sugar_crepe" / f.path).read_text()).values()
        reordered[f.path] = sum(bag(r["caption"]) == bag(r["negative_caption"]) for r in recs)
    assert reordered["swap_att.json"] == 408 and reordered["swap_obj.json"] == 166 and sum(reordered.values()) == 574
    either = captions = negatives = 0
    for f in SUGAR_CREPE_PP_UP.files:
        sc = list(json.loads((shared_data / "sugar_crepe" / f.path).read_text()).values())
        pp = json.loads((shared_data / "sugar_crepe_pp" / f.path).read_text())
        assert [r["filename"] for r in sc] == [r["filename"] for r in pp], f.path
        assert [r["id"] for r in pp] == list(range(len(pp)))
        captions += sum(a["caption"] != b["caption"] for a, b in zip(sc, pp))
        negatives += sum(a["negative_caption"] != b["negative_caption"] for a, b in zip(sc, pp))
        either += sum((a["caption"], a["negative_caption"]) != (b["caption"], b["negative_caption"]) for a, b in zip(sc, pp))
    assert (either, captions, negatives) == (1278, 1203, 878)


def test_counts_fields_and_true_captions_per_config(built: dict[str, Path], shared_data: Path) -> None:
    counts = upstream_counts(shared_data)
    for name, folder in built.items():
        configs = set(datasets.get_dataset_config_names(str(folder)))
        expected = dict(counts[name])
        if name != "cola":
            expected["all"] = sum(counts[name].values())
        assert configs == set(expected), name
        for config, n in expected.items():
            ds = load(folder, config)
            assert len(ds) == n, (name, config)
            assert len(set(ds["id"])) == n
    # SugarCREPE: the file's key 108 of swap_obj is absent, its fields kept, the caption first (true)
    sc = load(built["sugar_crepe"], "swap_obj")
    assert "swap_obj/108" not in sc["id"] and "swap_obj/245" in sc["id"]
    raw = json.loads((shared_data / "sugar_crepe" / "swap_obj.json").read_text())
    row = sc[0]
    assert (row["caption"], row["negative_caption"], row["filename"]) == (
        raw["0"]["caption"], raw["0"]["negative_caption"], raw["0"]["filename"])
    assert row["image"].size == (8, 8)
    # SugarCREPE++: caption, caption2 (both true), negative_caption
    pp = load(built["sugar_crepe_pp"], "replace_att")
    raw = json.loads((shared_data / "sugar_crepe_pp" / "replace_att.json").read_text())
    assert [pp[5][k] for k in ("key", "caption", "caption2", "negative_caption")] == [
        str(raw[5]["id"]), raw[5]["caption"], raw[5]["caption2"], raw[5]["negative_caption"]]
    # COLA: caption 1 goes with image 1, caption 2 with image 2
    cl = load(built["cola"], "multi_object")
    raw = json.loads((shared_data / "cola" / cola.FILE).read_text())
    assert [cl[3][k] for k in ("image_0_url", "caption_0", "image_1_url", "caption_1")] == raw[3]
    assert cl[3]["image_0_file"] == raw[3][0].rsplit("/", 1)[1]


def test_items_have_the_papers_shapes(built: dict[str, Path]) -> None:
    shapes = {"sugar_crepe": ("add_att", [[True, False]]), "sugar_crepe_pp": ("swap_att", [[True, True, False]]),
              "cola": ("multi_object", [[True, False], [False, True]])}
    for name, (config, gold) in shapes.items():
        spec = find_spec(str(built[name]))
        ds = load(built[name], config).select(range(3))
        for item, row in zip(spec.iter_items(ds, config=config), ds):
            assert item.gold.tolist() == gold and item.id == row["id"]
    pp = load(built["sugar_crepe_pp"], "swap_att")[0]
    item = next(iter(find_spec(str(built["sugar_crepe_pp"])).iter_items([pp], config="swap_att")))
    assert item.texts == (pp["caption"], pp["caption2"], pp["negative_caption"])
    assert "subset=swap_att" in item.tags and "category=swap" in item.tags


def test_committed_cards_and_specs_are_what_a_build_writes(built: dict[str, Path], repo_root: Path) -> None:
    from vlprobe.publish import check_dataset_folder

    for name, folder in built.items():
        assert check_dataset_folder(folder, rows=2, load=False)[0] == [], name  # ready for `vlprobe publish dataset`
        assert (repo_root / name / "README.md").read_text() == (folder / "README.md").read_text(), name
        assert (repo_root / name / "vlprobe.yaml").read_text() == (folder / "vlprobe.yaml").read_text(), name
    card = (built["sugar_crepe"] / "README.md").read_text()
    assert "7,511" in card and "pos_score > neg_score" in card and SUGAR_CREPE_UP.commit in card
    assert "574 negatives" in card and "item 108" in card.lower()
    card = (built["sugar_crepe_pp"] / "README.md").read_text()
    assert "4,757" in card and "1,278 of the 4,757" in card and "TOT" in card


def _authors_rule(name: str, s: np.ndarray) -> bool:
    """Each paper's own criterion on one item's score matrix (image x text), ties wrong."""
    if name == "sugar_crepe":  # main_eval.py: pos_score > neg_score
        return bool(s[0, 0] > s[0, 1])
    if name == "sugar_crepe_pp":  # ITT: cos_p1 > cos_neg and cos_p2 > cos_neg
        return bool(s[0, 0] > s[0, 2] and s[0, 1] > s[0, 2])
    return bool(s[0, 0] > s[1, 0] and s[1, 1] > s[0, 1])  # COLA ColaMultiObjAcc


def test_evaluate_scores_as_the_authors_do(built: dict[str, Path], tiny_clip_path: Path, tmp_path: Path, capsys) -> None:
    """`vlprobe evaluate --dataset <folder>` on a few rows with a tiny CLIP: the headline metric of each
    config equals the authors' criterion recomputed from the stored score matrices; the summary holds
    per-subset rows (from a subset's own config, or from `all`'s per-subset results, which is what a
    plain `--dataset sugar_crepe_pp` scores), the paper's groups and each benchmark's tie rule."""
    from vlprobe.cli import main

    headline = {"sugar_crepe": "acc_r", "sugar_crepe_pp": "set_acc", "cola": "image"}
    configs = {"sugar_crepe": ["--config", "all,add_att,swap_obj"], "sugar_crepe_pp": [], "cola": []}
    for name, folder in built.items():
        out = tmp_path / name
        code = main(["evaluate", "--dataset", str(folder), "--model", str(tiny_clip_path), *configs[name],
                     "--limit", "4", "--bootstrap", "0", "--no-progress", "--cache-dir", "none", "--out", str(out)])
        assert code == 0, capsys.readouterr().err
        doc = json.loads((out / "results.json").read_text())
        table = pq.read_table(out / "scores.parquet").to_pylist()
        for entry in doc["results"]:
            rows = [r for r in table if r["config"] == entry["config"]]
            assert len(rows) == 4
            expected = np.mean([_authors_rule(name, np.array(r["scores"], dtype=np.float64)) for r in rows])
            assert entry["metrics"][headline[name]] == pytest.approx(expected), (name, entry["config"])
        block = doc["summary"][name]
        assert block["tie_policy"]["authors"] == "strict" and doc["provenance"]["settings"]["ties"] == "authors"
        assert {e["ties"] for e in doc["results"]} == {"strict"}
        rows = {r["config"]: r for r in block["rows"]}
        if name == "sugar_crepe":
            # the first 4 rows of `all` are add_obj's: add_obj comes from all's per-subset results
            assert list(rows) == ["add_obj", "add_att", "swap_obj", "add", "swap"]
            assert rows["add_obj"]["from"] == "all (per tag subset=add_obj)"
            assert rows["add"]["complete"] and not rows["swap"]["complete"]
            # ADD: the mean over the two subsets' items (SugarCREPE's micro-average), not over the subsets
            add = [rows[c] for c in ("add_obj", "add_att")]
            assert rows["add"]["values"]["acc_r"] == pytest.approx(
                sum(r["values"]["acc_r"] * r["n_items"] for r in add) / sum(r["n_items"] for r in add))
        elif name == "sugar_crepe_pp":
            assert list(rows) == ["replace_obj"] and set(rows["replace_obj"]["values"]) == {"set_acc", "acc_r"}
            assert any("1 of 5 subsets scored" in n for n in block["notes"])
        else:
            assert list(rows) == ["multi_object"] and list(rows["multi_object"]["values"])[0] == "image"


def test_blind_baselines_run_by_the_same_command(built: dict[str, Path], tiny_clip_path: Path, tiny_gpt2_path: Path,
                                                tmp_path: Path, capsys) -> None:
    """SugarCREPE exists because blind models solved earlier benchmarks: a V&L model with every image
    blank (`--control blank`) and a text-only LM (family causal_lm) score it by the same command."""
    from vlprobe.cli import main

    folder = str(built["sugar_crepe"])
    common = ["--dataset", folder, "--config", "swap_att", "--limit", "4", "--bootstrap", "0", "--no-progress",
              "--cache-dir", "none"]
    assert main(["evaluate", *common, "--model", str(tiny_clip_path), "--control", "blank", "--out", str(tmp_path / "b")]) == 0
    assert main(["evaluate", *common, "--model", str(tiny_gpt2_path), "--out", str(tmp_path / "t")]) == 0
    capsys.readouterr()
    blank = json.loads((tmp_path / "b" / "results.json").read_text())
    text = json.loads((tmp_path / "t" / "results.json").read_text())
    assert blank["provenance"]["settings"]["control"] == "blank" and text["provenance"]["model"]["family"] == "causal_lm"
    for doc in (blank, text):
        (entry,) = doc["results"]
        assert entry["config"] == "swap_att" and 0.0 <= entry["metrics"]["acc_r"] <= 1.0
        assert doc["summary"]["sugar_crepe"]["rows"][0]["config"] == "swap_att"


def test_summary_aggregates_by_hand() -> None:
    from vlprobe.results.summary import summarize

    acc = {"add_obj": 0.9, "add_att": 0.7, "replace_obj": 0.9, "replace_att": 0.8, "replace_rel": 0.7,
           "swap_obj": 0.5, "swap_att": 0.6}
    entries = [{"benchmark": "sugar_crepe", "dataset": "./sugar_crepe", "config": c, "split": "test",
                "metrics": {"acc_r": v, "n_items": 10}}
               for c, v in acc.items() if c != "swap_att"]
    block = summarize(entries)["sugar_crepe"]
    by = {r.config: r for r in block.rows}
    assert by["add"].values["acc_r"] == pytest.approx(0.8)
    assert by["replace"].values["acc_r"] == pytest.approx(0.8)
    # as VALSE's Avg.: the mean of what is there, marked incomplete, with a note naming what is missing
    assert by["swap"].values["acc_r"] == pytest.approx(0.5) and by["swap"].missing == ("swap_att",)
    assert not by["swap"].complete and by["add"].complete
    assert not block.complete and any("SWAP over 1 of 2" in n and "swap_att" in n for n in block.notes)
    assert block.tie_policy.authors == "strict" and "pos > neg" in block.tie_policy.rule


def _serve_cola(server, shared: Path, vg: set[str], cola_only: set[str]) -> None:
    """COLA's file at the pinned commit's path; VG images on Visual Genome's stand-in host, except
    ``cola_only``, which only the COLA authors' stand-in server has."""
    server.files[f"/{COLA_UP.repo}/{COLA_UP.commit}/data/{cola.FILE}"] = (shared / "cola" / cola.FILE).read_bytes()
    for name in vg:
        where = "/cola_server/" if name in cola_only else "/vg/VG_100K/"
        server.files[where + name] = jpeg(name)


def test_download_fetches_annotations_and_images(shared_data: Path, tmp_path: Path, monkeypatch, stand_in_server) -> None:
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    vg = vg_names(shared_data)
    cola_only = set(sorted(vg)[:3])
    _serve_cola(stand_in_server, shared_data, vg, cola_only)
    base = stand_in_server.url
    spec = cola.IMAGES  # the builder's own source: Visual Genome as COLA links it
    monkeypatch.setattr(BUILDERS["cola"], "sources", (imgs.SourceSpec(
        spec.name, spec.title, spec.pattern, spec.subdirs, spec.zips,
        (f"{base}/vg/VG_100K/{{name}}", f"{base}/vg/VG_100K_2/{{name}}", f"{base}/cola_server/{{name}}")),))
    monkeypatch.setenv(COLA_UP.url_env, f"{base}/{COLA_UP.repo}/{COLA_UP.commit}/data/")
    out = run_build(BUILDERS["cola"], "--download", "--cache-dir", str(tmp_path / "cache"), "--workers", "4",
                    "--out", str(tmp_path / "cola"))
    ds = load(out, "multi_object")
    assert len(ds) == 210
    hits = stand_in_server.hits
    assert hits.count(f"/{COLA_UP.repo}/{COLA_UP.commit}/data/{cola.FILE}") == 1
    # the authors' server only for what Visual Genome's hosts do not have (after both 404s)
    assert sorted(h.rsplit("/", 1)[1] for h in hits if h.startswith("/cola_server/")) == sorted(cola_only)
    assert (upstream.cache_folder(COLA_UP, tmp_path / "cache") / cola.FILE).read_bytes() == (
        shared_data / "cola" / cola.FILE).read_bytes()


def test_a_rebuild_from_the_same_files_and_images_does_nothing(shared_data: Path, images_root: Path, tmp_path: Path,
                                                                monkeypatch, capsys) -> None:
    """Issue 47.5 for a paper benchmark: the same annotation files (wherever they are) and images, nothing read or
    written; an image touched, or another option, builds again."""
    from vlprobe.cli import main

    read = []
    real = imgs.read_checked_many
    monkeypatch.setattr(imgs, "read_checked_many", lambda requests, **kw: read.append(1) or real(requests, **kw))
    out, copy = tmp_path / "cola", tmp_path / "elsewhere"
    shutil.copytree(shared_data / "cola", copy)
    argv = ["build", "cola", "--images", str(images_root), "--out", str(out)]
    assert main([*argv, "--annotations", str(shared_data / "cola")]) == 0 and read
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*")}
    read.clear()
    capsys.readouterr()
    assert main([*argv, "--annotations", str(copy)]) == 0 and not read
    said = capsys.readouterr().out
    assert said.startswith(f"{out} is up to date (built from the same inputs: annotations (1 files), images "
                           f"({len(vg_names(shared_data))} files); generator ") and "nothing built" in said
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*")} == before
    image = next((images_root / "VG_100K").iterdir())
    image.write_bytes(image.read_bytes())  # the same bytes, written again: its stamp says it may have changed
    assert main([*argv, "--annotations", str(copy)]) == 0 and read and f"built {out}" in capsys.readouterr().out
    read.clear()
    assert main([*argv, "--annotations", str(copy), "--skip-missing-images"]) == 0 and read


def test_download_of_sugar_crepe_pp_from_the_pinned_commit(shared_data: Path, tmp_path: Path, monkeypatch,
                                                         stand_in_server) -> None:
    """The 5 files fetched from the pinned commit's URLs (a stand-in for raw.githubusercontent.com),
    verified; with --skip-missing-images and two COCO files only, a build of the rows that have them."""
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    up = SUGAR_CREPE_PP_UP
    prefix = f"/{up.repo}/{up.commit}/{up.folder}"
    stand_in_server.files.update({prefix + f.path: (shared_data / "sugar_crepe_pp" / f.path).read_bytes()
                                  for f in up.files})
    first = json.loads((shared_data / "sugar_crepe_pp" / "swap_obj.json").read_text())[0]["filename"]
    stand_in_server.files[f"/coco/val2017/{first}"] = jpeg(first)
    spec = imgs.SOURCES["coco2017_val"]
    monkeypatch.setitem(imgs.SOURCES, "coco2017_val", imgs.SourceSpec(
        spec.name, spec.title, spec.pattern, spec.subdirs, spec.zips, (f"{stand_in_server.url}/coco/val2017/{{name}}",)))
    out = run_build(BUILDERS["sugar_crepe_pp"], "--download", "--skip-missing-images", "--retries", "1", "--workers", "8",
                    "--cache-dir", str(tmp_path / "cache"), "--annotations-url", stand_in_server.url + prefix,
                    "--out", str(tmp_path / "pp"))
    assert sum(h.startswith(prefix) for h in stand_in_server.hits) == 5
    swap_obj = load(out, "swap_obj")
    assert 1 <= len(swap_obj) < 245 and set(swap_obj["filename"]) == {first}
    assert "## Rows left out" in (out / "data" / "BUILD.md").read_text()


def test_tampered_annotations_are_refused(shared_data: Path, tmp_path: Path, monkeypatch, stand_in_server) -> None:
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    up = SUGAR_CREPE_UP
    prefix = f"/{up.repo}/{up.commit}/{up.folder}"
    for f in up.files:
        data = (shared_data / "sugar_crepe" / f.path).read_bytes()
        stand_in_server.files[prefix + f.path] = data.replace(b"cat", b"dog", 1) if f.path == "swap_att.json" else data
    with pytest.raises(upstream.AnnotationChecksumError, match=r"swap_att\.json .*not the pinned one"):
        run_build(BUILDERS["sugar_crepe"], "--cache-dir", str(tmp_path / "cache"), "--annotations-url",
                  stand_in_server.url + prefix, "--out", str(tmp_path / "sc"))
    assert not (tmp_path / "sc").exists()
    # a local copy is checked the same way
    local = tmp_path / "local"
    local.mkdir()
    for f in COLA_UP.files:
        (local / f.path).write_bytes((shared_data / "cola" / f.path).read_bytes() + b"\n")
    with pytest.raises(upstream.AnnotationChecksumError, match="COLA annotation file"):
        run_build(BUILDERS["cola"], "--annotations", str(local), "--out", str(tmp_path / "cola"))


def test_offline_and_missing_images_name_what_is_needed(shared_data: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    from vlprobe.cli import main

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    assert main(["build", "sugar_crepe", "--out", str(tmp_path / "o"), "--cache-dir", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert "SugarCREPE: 7 annotation file(s) are not in the cache" in err and "Traceback" not in err
    for f in SUGAR_CREPE_UP.files:
        assert f"https://raw.githubusercontent.com/RAIVNLab/sugar-crepe/{SUGAR_CREPE_UP.commit}/data/{f.path}" in err
    assert not (tmp_path / "o").exists()
    # annotations present, no images: one report naming the source and files, nothing written
    (tmp_path / "img").mkdir()
    assert main(["build", "cola", "--annotations", str(shared_data / "cola"), "--images", str(tmp_path / "img"),
                 "--out", str(tmp_path / "cola")]) == 2
    err = capsys.readouterr().err
    assert "visual_genome_cola" in err and "image file(s) are missing" in err and "--download" in err
    assert not (tmp_path / "cola").exists()


def test_malformed_records_name_file_and_record(tmp_path: Path) -> None:
    rec = {"filename": "000000000001.jpg", "caption": "a", "negative_caption": "b", "extra": 1}
    (tmp_path / "add_obj.json").write_text(json.dumps({"7": rec}))
    with pytest.raises(AnnotationError, match=r"add_obj\.json record '7': unknown field\(s\) \['extra'\]"):
        sugar_crepe.SugarCrepe().read_leaf(tmp_path, "add_obj")
    (tmp_path / "add_obj.json").write_text(json.dumps({"7": {k: v for k, v in rec.items() if k != "extra"}
                                                        | {"filename": "cat.png"}}))
    with pytest.raises(AnnotationError, match=r"add_obj\.json record '7': filename 'cat.png' is not a MS COCO 2017 val"):
        sugar_crepe.SugarCrepe().read_leaf(tmp_path, "add_obj")
    pp = get_benchmark("sugar_crepe_pp").configs[0]
    (tmp_path / f"{pp}.json").write_text(json.dumps([{"id": 0, "filename": "1.jpg", "caption": "a",
                                                               "caption2": "b", "negative_caption": "c"}]))
    with pytest.raises(AnnotationError, match=r"record 0: filename '1.jpg' is not a MS COCO 2017 val file name"):
        sugar_crepe_pp.SugarCrepePP().read_leaf(tmp_path, pp)
    (tmp_path / cola.FILE).write_text(json.dumps([["http://x/1.jpg", "a", "not a link", "b"]]))
    with pytest.raises(AnnotationError, match=r"record 0: image 2 'not a link'"):
        cola.Cola().read_leaf(tmp_path, cola.CONFIG)


def test_the_metric_scores_the_authors_criteria_by_hand() -> None:
    """Hand-worked items: the metric's strict set_acc is SugarCREPE++'s ITT, its image score COLA's
    multi-object accuracy, its strict acc_r SugarCREPE's pos > neg, ties wrong in all three."""
    from vlprobe.metric import compute

    # SugarCREPE++ [P1, P2, neg]: both above (right); P2 ties neg (wrong); P1 below neg (wrong)
    itt = [[[0.9, 0.8, 0.7]], [[0.9, 0.7, 0.7]], [[0.6, 0.9, 0.7]]]
    r = compute(predictions=itt, references=[[[1, 1, 0]]] * 3, bootstrap=0)
    assert r["set_acc"] == pytest.approx(1 / 3)
    assert r["acc_r"] == pytest.approx((1 + 0.5 + 0.5) / 3)  # mean of Image-P1-Neg and Image-P2-Neg
    assert r["n_ties"] == 1
    # COLA preds[image, caption]: right; caption 1 ties across images (wrong); caption 0 prefers image 1
    # (wrong). Each image prefers its own caption in all three (text right every time)
    preds = [[[0.9, 0.1], [0.2, 0.8]], [[0.9, 0.5], [0.2, 0.5]], [[0.5, 0.4], [0.6, 0.9]]]
    r = compute(predictions=preds, references=[[[1, 0], [0, 1]]] * 3, bootstrap=0)
    assert r["image"] == pytest.approx(1 / 3) and r["text"] == 1.0 and r["group"] == pytest.approx(1 / 3)
    # SugarCREPE: a tie is wrong under the default (strict) policy, right under lenient
    sc = [[[0.5, 0.5]], [[0.6, 0.4]]]
    assert compute(predictions=sc, references=[[[1, 0]]] * 2, bootstrap=0)["acc_r"] == pytest.approx(0.5)
    assert compute(predictions=sc, references=[[[1, 0]]] * 2, bootstrap=0, ties="lenient")["acc_r"] == pytest.approx(1.0)
