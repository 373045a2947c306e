"""VL-CheckList on its real files (../shared/data/vl_checklist, the archive unpacked into a temporary
folder; skipped with the reason where ../shared is absent): the pins are the commit's, every corpus
file's counts and quirks are what the benchmark module says, counted here the way the authors' loader
reads the files; a dry run and a build (stand-in images for a few Visual Genome ids) keep per file the
first MAX_NUM/2 records whose image can be had, as data_loader.py + evaluate.py do; a leaf with some of
its files is built from those and the others are named; the summary averages per file -> per source ->
per type as radar.py does, worked by hand; --all-records is labelled as not the authors'. Bad records
name their file and record (synthetic files, read directly)."""

from __future__ import annotations

import io
import json
import re
import tarfile
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from helpers import jpeg
from helpers_data import dry_run, load, refused_dry_run, tampered_copy

from vlprobe.benchmarks import vl_checklist as facts
from vlprobe.builders import AnnotationError, upstream, vl_checklist
from vlprobe.dataset.spec import find_spec
from vlprobe.metric import compute
from vlprobe.results.summary import summarize

UP = facts.UPSTREAM
FIRST = facts.FIRST
MISSING = {f.path for f in facts.FILES if f.name not in facts.FULL_FACTS}  # the 10 files not at hand here


@pytest.fixture(scope="module")
def data(shared_data: Path, tmp_path_factory) -> Path:
    """The archive unpacked: ``DEST/data/...``, what --annotations takes."""
    archive = shared_data / "vl_checklist" / "vl_checklist_data.tar.xz"
    if not archive.is_file():
        pytest.skip(f"the VL-CheckList annotation archive is not here: {archive}")
    dest = tmp_path_factory.mktemp("vlc_files")
    with tarfile.open(archive) as tf:
        tf.extractall(dest, filter="data")
    return dest / "data"


def authors_records(data: Path, f: facts.CorpusFile) -> list:
    """A corpus file's records as the authors' DataLoader.load_itc_samples reads them (json.load, in
    order; every image taken as present)."""
    return json.loads((data / f.path).read_text())


def _upper(text: str) -> bool:
    return any(ch.isupper() for ch in text)


def recount(records: list) -> facts.FileFacts:
    seen, dups = set(), 0
    for r in records:
        key = json.dumps(r, sort_keys=True)
        dups += key in seen
        seen.add(key)
    return facts.FileFacts(len(records), sum(r[1]["POS"][0] == r[1]["NEG"][0] for r in records), dups,
                           sum(_upper(r[1]["POS"][0]) and not _upper(r[1]["NEG"][0]) for r in records),
                           sum(not _upper(r[1]["POS"][0]) and _upper(r[1]["NEG"][0]) for r in records))


# ---- pins and counts ---------------------------------------------------------------------------------

def test_the_pins_are_the_commits_and_match_source_md(shared_data: Path, data: Path) -> None:
    """All 56 files pinned at the full commit; each path, blob and corpus yaml as SOURCE.md lists them (read
    from the repository at that commit); each file at hand matches its pin."""
    assert re.fullmatch(r"[0-9a-f]{40}", UP.commit) and UP.commit.startswith("6f8d6a32")
    assert len(UP.files) == 56 and all(f.pinned for f in UP.files)
    table = {}
    for line in (shared_data / "vl_checklist" / "SOURCE.md").read_text().splitlines():
        m = re.match(r"\| data/(\S+) \| ([0-9a-f]{40}) \| [^|]+ \| [^|]+ \| [^|]+ \| (\S+)\.yaml \|", line)
        if m:
            table[m[1]] = (m[2], m[3])
    assert len(table) == 56
    for f in facts.FILES:
        assert table[f.path] == (f.blob, f"{f.type}/{f.corpus}"), f.path
    at_hand = {f.path for f in UP.files} - MISSING
    assert len(at_hand) == 46 and all((data / p).is_file() for p in at_hand) and not any((data / p).exists() for p in MISSING)
    located = upstream.locate([UP], data)  # verifies every file there against its blob, else raises
    assert set(located.found) == at_hand and set(located.absent) == MISSING
    for path in at_hand:
        f = next(x for x in UP.files if x.path == path)
        assert (data / path).stat().st_size == f.size


@pytest.mark.slow
def test_every_files_counts_and_quirks_as_the_authors_loader_reads_it(data: Path) -> None:
    totals = {"records": 0, "same": 0, "dups_spatial": 0}
    for f in facts.FILES:
        if f.path in MISSING:
            assert f.name not in facts.FULL_FACTS and f.size is None
            continue
        records = authors_records(data, f)
        assert facts.FULL_FACTS[f.name] == recount(records), f.name
        assert facts.FIRST_FACTS[f.name] == recount(records[:int(facts.MAX_NUM / 2)]), f.name  # evaluate.py's slice
        totals["records"] += len(records)
        totals["same"] += facts.FULL_FACTS[f.name].same_text
    # what the issue found in these files
    assert totals["records"] == 372_274 and totals["same"] == 122
    assert facts.FULL_FACTS["Attribute_color_vg"].same_text == 66 and facts.FULL_FACTS["Relation_action_vg"].same_text == 28
    spatial = facts.FULL_FACTS["Relation_spatial_vg"]
    assert (spatial.records, spatial.duplicates, spatial.upper_case_rule) == (30_650, 4_448, 21_452)


def test_the_taxonomy_and_its_aggregation_follow_corpus_json() -> None:
    """corpus.json at the pinned commit (its structure, written out here): per type, per source, its files."""
    corpus_json = {
        "Object/Size/large": {"vg": ["vg_obj", "vg_subj"], "swig": ["swig_agent", "swig_destination", "swig_item",
                                                                     "swig_tool"], "hake": ["hake"]},
        "Attribute/color": {"vg": ["vg"], "vaw": ["vaw"]},
        "Relation/action": {"vg": ["vg"], "swig": ["swig"], "hake": ["hake"]},
        "Relation/spatial": {"vg": ["vg"]},
    }
    for type_, sources in corpus_json.items():
        leaf = next(x for x in facts.LEAVES if x.type == type_)
        assert {s: [f.corpus for f in fs] for s, fs in leaf.sources.items()} == sources
    assert len(facts.LEAVES) == 13 and sum(len(x.files) for x in facts.LEAVES) == 56
    groups = {g.name: g for g in facts.GROUPS}
    assert groups["object_size_large/vg"].members == ("Object_Size_large_vg_obj", "Object_Size_large_vg_subj")
    assert groups["object_size_large"].members == ("object_size_large/vg", "object_size_large/swig", "Object_Size_large_hake")
    assert groups["relation_action"].members == ("Relation_action_vg", "Relation_action_swig", "Relation_action_hake")
    assert groups["overall"].members == ("object", "attribute", "relation")


# ---- dry run and builds on the real files -------------------------------------------------------------

@pytest.mark.slow
def test_dry_run_counts_every_leaf_and_lists_the_images(data: Path, tmp_path: Path, cli) -> None:
    out, err, listing = dry_run(cli, "vl_checklist", data, tmp_path)
    # per file: the first MAX_NUM/2 records of it, counted here from the raw file
    expected_rows, images = 0, set()
    for f in facts.FILES:
        if f.path in MISSING:
            continue
        records = authors_records(data, f)
        first = records[:FIRST]
        expected_rows += len(first)
        leaf = next(x for x in facts.LEAVES if x.type == f.type)
        past = len(records) - len(first)
        assert f"| `{leaf.config}` | `{f.name}` | `{f.path}` | {len(records):,} | {len(first):,} | 0 | {past:,} |" in out
        root = "hake" if f.source == "hake" else "swig" if f.source == "swig" else "vg"
        images |= {(root, r[0].rsplit("/", 1)[-1] if root != "hake" else r[0]) for r in first}
    assert f"Rows in this build: **{expected_rows:,}** of the 372,274 records in the 46 corpus files read" in out
    assert expected_rows == 36_797
    # the 5 leaves lacking files are built in part, and the 10 files named with where to get them
    assert "5 config(s) built from part of their annotation files" in err
    for path in MISSING:
        assert f"{UP.default_url}{path}" in err and f"| `{path}` |" in out
    lines = listing.read_text().splitlines()
    assert lines[0] == "source\tfile\trows\tfound" and len(lines) - 1 == len(images) == 14_622
    assert "dry run, nothing built" in out


def test_a_leaf_with_none_of_its_files_is_refused_when_asked_for(data: Path, tmp_path: Path, cli) -> None:
    partial = tmp_path / "ann"
    for f in facts.LEAVES[-1].files + facts.BY_CONFIG["attribute_state"].files:  # relation_spatial, attribute_state
        (partial / f.path).parent.mkdir(parents=True, exist_ok=True)
        (partial / f.path).write_bytes((data / f.path).read_bytes())
    err = refused_dry_run(cli, "vl_checklist", partial, tmp_path, "--configs", "relation_spatial,object_size_large")
    assert "cannot build object_size_large: none of its annotation files is at hand" in err
    assert f"{UP.default_url}Object/Size/vg_size/vg_obj_large.json (git blob c55b5993" in err
    code, out, err = cli("build", "vl_checklist", "--annotations", str(partial), "--dry-run", "--image-list", "-",
                         "--out", str(tmp_path / "o"))
    assert code == 0, err
    assert "11 config(s) not built, none of their annotation files at hand" in err
    assert "Rows in this build: **2,941** of the 36,530 records in the 3 corpus files read" in out


@pytest.fixture(scope="module")
def few_images(data: Path, tmp_path_factory) -> tuple[Path, set[str]]:
    """Stand-ins for the images of the first 40 records of Relation/vg/spatial.json and Attribute/vg/state.json,
    but one: a build with --skip-missing-images keeps, per file, the records whose image is here."""
    root = tmp_path_factory.mktemp("vlc_images")
    given = set()
    for path in ("Relation/vg/spatial.json", "Attribute/vg/state.json"):
        for rec in json.loads((data / path).read_text())[:40]:
            given.add(rec[0])
    given.discard("VG_100K/2350257.jpg")  # spatial.json's records 2-4: left out, the file's next records taken
    for name in given:
        (root / "vg" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "vg" / name).write_bytes(jpeg(name))
    return root, given


def _expected(data: Path, config: str, given: set[str], first: int | None) -> list[str]:
    """The ids of a leaf's rows as the authors' loader keeps them: per file, the records whose image exists
    (load_itc_samples), then the first MAX_NUM/2 of those (evaluate.py)."""
    out = []
    leaf = facts.BY_CONFIG[config]
    for f in leaf.files:
        kept = [f"{config}/{f.corpus}/{n}" for n, rec in enumerate(authors_records(data, f)) if rec[0] in given]
        out += kept[:first] if first else kept
    return out


@pytest.fixture(scope="module")
def built(data: Path, few_images, tmp_path_factory) -> Path:
    from vlprobe.cli import main

    out = tmp_path_factory.mktemp("vlc_built") / "vl_checklist"
    err = io.StringIO()
    mp = pytest.MonkeyPatch()
    mp.setattr("sys.stderr", err)
    try:
        code = main(["build", "vl_checklist", "--annotations", str(data), "--images", str(few_images[0]),
                     "--configs", "relation_spatial,attribute_state", "--skip-missing-images", "--out", str(out)])
    finally:
        mp.undo()
    assert code == 0, err.getvalue()
    return out


@pytest.mark.slow
def test_the_build_keeps_the_first_records_whose_image_is_there(built: Path, data: Path, few_images) -> None:
    given = few_images[1]
    for config in ("relation_spatial", "attribute_state"):
        ds = load(built, config)
        assert ds["id"] == _expected(data, config, given, FIRST), config
        assert set(ds["records"]) == {f"first_{FIRST}"}
    row = load(built, "relation_spatial")[0]
    raw = json.loads((data / "Relation/vg/spatial.json").read_text())[0]
    assert (row["image_path"], row["caption"], row["negative_caption"]) == (raw[0], raw[1]["POS"][0], raw[1]["NEG"][0])
    assert row["type_corpus"] == "Relation_spatial_vg" and row["source"] == "vg" and row["image"].size == (8, 8)
    # the configs asked for are the folder's; `all` reads them
    assert len(load(built, "all")) == len(load(built, "relation_spatial")) + len(load(built, "attribute_state"))
    assert sorted(p.name for p in (built / "data").iterdir() if p.is_dir()) == ["attribute_state", "relation_spatial"]
    report = (built / "data" / "BUILD.md").read_text()
    spatial = authors_records(data, facts.BY_NAME["Relation_spatial_vg"])
    kept = len(_expected(data, "relation_spatial", given, FIRST))
    dropped = sum(r[0] not in given for r in spatial)  # every record is looked at: fewer than 1,000 have an image
    assert (f"| `relation_spatial` | `Relation_spatial_vg` | `Relation/vg/spatial.json` | 30,650 | {kept:,} | {dropped:,} | 0 |"
            in report)
    assert "2350257.jpg" in report and "## What the records give away" in report
    item = next(iter(find_spec(str(built)).iter_items(load(built, "attribute_state"), config="attribute_state")))
    assert item.gold.tolist() == [[True, False]] and "type_corpus=Attribute_state_vg" in item.tags
    assert "records=first_1000" in item.tags


def test_every_record_by_an_option_labelled_not_the_authors(data: Path, few_images, tmp_path: Path, cli) -> None:
    code, out, err = cli("build", "vl_checklist", "--annotations", str(data), "--configs", "attribute_state", "--all-records",
                         "--dry-run", "--image-list", "-", "--out", str(tmp_path / "o"))
    assert code == 0, err
    assert "Rows in this build: **5,880** of the 5,880 records" in out and "**not the authors' protocol**" in out
    code, _, err = cli("build", "vl_checklist", "--annotations", str(data), "--images", str(few_images[0]), "--configs",
                       "attribute_state", "--all-records", "--skip-missing-images", "--out", str(tmp_path / "all"))
    assert code == 0, err
    ds = load(tmp_path / "all", "attribute_state")
    assert ds["id"] == _expected(data, "attribute_state", few_images[1], None) and set(ds["records"]) == {"all"}


def test_missing_images_stop_the_build_without_the_flag(data: Path, few_images, tmp_path: Path, cli) -> None:
    code, _, err = cli("build", "vl_checklist", "--annotations", str(data), "--images", str(few_images[0]),
                       "--configs", "relation_spatial", "--out", str(tmp_path / "o"))
    assert code == 2 and "visual_genome_vlc: " in err and "--skip-missing-images" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_committed_card_and_spec_are_what_a_build_writes(built: Path, repo_root: Path) -> None:
    from vlprobe.publish import check_dataset_folder

    # a partial build is not the benchmark: publishing it is refused, naming every config without files
    problems = check_dataset_folder(built, rows=2, load=False)[0]
    unbuilt = [c for c in vl_checklist.BY_CONFIG if c not in ("relation_spatial", "attribute_state")]
    assert problems and all("matches no file" in p for p in problems)
    assert {c for c in unbuilt if any(f"data/{c}/test-*.parquet' matches no file" in p for p in problems)} == set(unbuilt)
    assert (repo_root / "vl_checklist" / "README.md").read_text() == (built / "README.md").read_text()
    assert (repo_root / "vl_checklist" / "vlprobe.yaml").read_text() == (built / "vlprobe.yaml").read_text()
    card = (built / "README.md").read_text()
    assert "not pinned" not in card and UP.commit in card and "d.data[name][:int(max_number/2)]" in card
    assert "| **all** | | | | **46 of 56** | **36,797** | **372,274** |" in card


# ---- the authors' aggregation --------------------------------------------------------------------------

def _radar(per_file: dict[str, float], leaf: facts.Leaf) -> float:
    """radar.py's spoke: per source the mean of its files, then the mean of the sources."""
    means = [np.mean([per_file[f.name] for f in files]) for files in leaf.sources.values()]
    return float(np.mean(means))


def test_the_summary_averages_per_file_source_and_type_as_radar_py() -> None:
    """Hand-made scores for every file, one pooled entry (as a run of `all` gives): the summary's per-file
    rows are each file's accuracy, its type rows radar.py's means, the pooled number another figure."""
    rng = np.random.default_rng(0)
    sizes = {f.name: 3 + (7 * i) % 40 for i, f in enumerate(facts.FILES)}
    tags, scores, per_file = [], [], {}
    for f in facts.FILES:
        s = rng.normal(size=(sizes[f.name], 1, 2))
        s[0, 0, 1] = s[0, 0, 0]  # a tie: wrong, as evaluate.py counts pos > neg
        scores.append(s)
        per_file[f.name] = float(np.mean(s[:, 0, 0] > s[:, 0, 1]))
        tags += [[f"type_corpus={f.name}", f"leaf={next(x.config for x in facts.LEAVES if x.type == f.type)}",
                  f"records=first_{FIRST}"]] * len(s)
    S = np.concatenate(scores)
    m = compute(S, np.broadcast_to(np.array([[True, False]]), S.shape), tags=tags)
    block = summarize([{"benchmark": "vl_checklist", "dataset": "./vl_checklist", "config": "all", "split": "test",
                        "metrics": m}])["vl_checklist"]
    rows = {r.config: r for r in block.rows}
    assert block.complete and block.departures == () and "all" not in rows
    for name, acc in per_file.items():
        assert rows[name].values["acc_r"] == pytest.approx(acc), name
    spokes = {}
    for leaf in facts.LEAVES:
        spokes[leaf.config] = _radar(per_file, leaf)
        assert rows[leaf.config].values["acc_r"] == pytest.approx(spokes[leaf.config]), leaf.config
        assert rows[leaf.config].label == leaf.label and rows[leaf.config].complete
    assert rows["object_size_large/swig"].values["acc_r"] == pytest.approx(
        np.mean([per_file[f"Object_Size_large_{c}"] for c in ("swig_agent", "swig_destination", "swig_item", "swig_tool")]))
    aspects = {a: np.mean([spokes[x.config] for x in facts.LEAVES if x.aspect == a]) for a in facts.ASPECTS}
    for a, v in aspects.items():
        assert rows[a.lower()].values["acc_r"] == pytest.approx(v)
    assert rows["overall"].values["acc_r"] == pytest.approx(np.mean(list(aspects.values())))
    # pooling a type's records is another number: not what the authors report
    pooled = m["per_tag"]["leaf=object_size_large"]["acc_r"]
    assert pooled != pytest.approx(spokes["object_size_large"])


def test_a_mean_over_fewer_files_is_marked_and_every_record_is_not_the_authors() -> None:
    """The 10 files not at hand: their types' means (and the means over those) are marked incomplete and
    noted; a build with --all-records (records=all) departs from the authors' setting, said in the block."""
    rng = np.random.default_rng(1)
    present = [f for f in facts.FILES if f.path not in MISSING]
    S = rng.normal(size=(4 * len(present), 1, 2))
    tags = [[f"type_corpus={f.name}", "records=all"] for f in present for _ in range(4)]
    m = compute(S, np.broadcast_to(np.array([[True, False]]), S.shape), tags=tags)
    block = summarize([{"benchmark": "vl_checklist", "dataset": "./vl_checklist", "config": "all", "split": "test",
                        "metrics": m}])["vl_checklist"]
    rows = {r.config: r for r in block.rows}
    assert not block.complete and "46 of 56 corpus files scored" in block.notes[0]
    assert rows["object_size_large"].missing == ("Object_Size_large_hake",) and not rows["object_size_large"].complete
    assert rows["object_size_large/vg"].missing == ("Object_Size_large_vg_obj",)
    assert rows["relation_spatial"].complete and rows["object_size_medium"].complete
    assert not rows["object"].complete and rows["object"].partial == (
        "object_location_center", "object_location_mid", "object_size_large")
    assert any(n.startswith("Object: some of its members are means over fewer") for n in block.notes)
    from vlprobe.results.schema import Departure
    from vlprobe.results.summary import summary_title

    assert block.departures == (Departure("items", "records=all", facts.BENCHMARK.caveat_tags[0][1]),)

    assert "NOT the authors' setting: items records=all" in summary_title("vl_checklist", block)


@pytest.mark.slow
def test_evaluate_on_the_built_folder_summarises_per_file(built: Path, tiny_clip_path: Path, tmp_path: Path, cli) -> None:
    code, out, err = cli("evaluate", "--dataset", str(built), "--model", str(tiny_clip_path), "--bootstrap", "0",
                         "--no-progress", "--cache-dir", "none", "--out", str(tmp_path / "run"))
    assert code == 0, err
    doc = json.loads((tmp_path / "run" / "results.json").read_text())
    assert [e["config"] for e in doc["results"]] == ["all"]
    table = pq.read_table(tmp_path / "run" / "scores.parquet").to_pylist()
    rows = {r["config"]: r for r in doc["summary"]["vl_checklist"]["rows"]}
    per_file = {}
    for name in ("Relation_spatial_vg", "Attribute_state_vg", "Attribute_state_vaw"):
        corpus = facts.BY_NAME[name].corpus
        leaf = next(x.config for x in facts.LEAVES if x.type == facts.BY_NAME[name].type)
        mine = [r for r in table if r["id"].startswith(f"{leaf}/{corpus}/")]
        per_file[name] = np.mean([r["scores"][0][0] > r["scores"][0][1] for r in mine])
        assert rows[name]["values"]["acc_r"] == pytest.approx(per_file[name])
    assert rows["attribute_state"]["values"]["acc_r"] == pytest.approx(
        (per_file["Attribute_state_vg"] + per_file["Attribute_state_vaw"]) / 2)
    assert rows["relation_spatial"]["values"]["acc_r"] == pytest.approx(per_file["Relation_spatial_vg"])
    assert "departures" not in doc["summary"]["vl_checklist"]


# ---- bad records (synthetic files, read directly) -----------------------------------------------------

def _write(folder: Path, f: facts.CorpusFile, records: list) -> Path:
    (folder / f.path).parent.mkdir(parents=True, exist_ok=True)
    (folder / f.path).write_text(json.dumps(records))
    return folder


def test_bad_records_name_the_file_and_record(tmp_path: Path) -> None:
    leaf = facts.BY_CONFIG["relation_action"]
    hake = facts.BY_NAME["Relation_action_hake"]
    good = [["hcvrd/1246.jpg", {"POS": ["a person rides a horse"], "NEG": ["a person feeds a horse"]}]]
    _write(tmp_path, hake, good + [["elsewhere/1.jpg", {"POS": ["a"], "NEG": ["b"]}]])
    with pytest.raises(AnnotationError, match=r"Relation/hake_action\.json record 1: HAKE image path 'elsewhere/1\.jpg'"):
        vl_checklist.read_file(tmp_path, leaf, hake)
    vg = facts.BY_NAME["Relation_action_vg"]
    _write(tmp_path, vg, [["VG_100K/1.jpg", {"POS": ["a"], "NEG": []}]])
    with pytest.raises(AnnotationError, match=r"Relation/vg/action\.json record 0: NEG should be a non-empty list"):
        vl_checklist.read_file(tmp_path, leaf, vg)
    _write(tmp_path, vg, [["../../etc/passwd", {"POS": ["a"], "NEG": ["b"]}]])
    with pytest.raises(AnnotationError, match=r"record 0: Visual Genome image path '\.\./\.\./etc/passwd'"):
        vl_checklist.read_file(tmp_path, leaf, vg)
    _write(tmp_path, vg, [["VG_100K/1.jpg", {"POS": ["a"], "NEG": ["b"], "EXTRA": []}]])
    with pytest.raises(AnnotationError, match=r"record 0: unknown field\(s\) \['EXTRA'\]"):
        vl_checklist.read_file(tmp_path, leaf, vg)


def test_a_file_that_is_not_the_pinned_one_is_refused(data: Path, tmp_path: Path, cli) -> None:
    f = facts.BY_NAME["Attribute_state_vg"]
    err = refused_dry_run(cli, "vl_checklist", tampered_copy(data, f.path, b"white", b"whits", tmp_path), tmp_path)
    assert f"VL-CheckList annotation file {f.path} from" in err and f"expected {f.blob}" in err


def test_offline_with_nothing_cached_names_every_file_and_its_url(tmp_path: Path, monkeypatch, cli) -> None:
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    code, _, err = cli("build", "vl_checklist", "--out", str(tmp_path / "o"), "--cache-dir", str(tmp_path / "c"))
    assert code == 2 and "Traceback" not in err
    assert "VL-CheckList: cannot build" in err and "offline mode is on" in err
    for f in UP.files:
        assert f"https://raw.githubusercontent.com/om-ai-lab/VL-CheckList/{UP.commit}/data/{f.path} (git blob {f.blob}" in err
