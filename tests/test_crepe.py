"""CREPE. On its real files (../shared/data/crepe: the 27 productivity CSVs of the third-party copy;
skipped with the reason where ../shared is absent): every config's rows counted here the way the
authors' code reads the files (pandas, ``ast.literal_eval``, ``list``), set-literal rows included and
kept in the order written; a dry run and a build of the configs at hand (stand-in images), the
systematicity configs named as missing with where to get them, a tampered copy refused. On synthetic
zips in the upstream layout (upstream's could not be had; the test pins them as upstream's), built
through `vlprobe build crepe` from a stand-in for raw.githubusercontent.com: every config loads, the
caption is the true text, the image is the authors' crop, recall@1 is the metric's `text` under the
authors' tie rule (lenient, as their torch.argsort ranks: evaluate's default), offline and bad records name what
is wrong."""

from __future__ import annotations

import ast
import csv
import dataclasses
import hashlib
import io
import json
import zipfile
from pathlib import Path

import datasets
import numpy as np
import pyarrow.parquet as pq
import pytest
from helpers import encode, solid
from helpers_data import dry_run, load, refused_dry_run, tampered_copy
from PIL import Image

from vlprobe.benchmarks import crepe as facts
from vlprobe.benchmarks import get as get_benchmark
from vlprobe.builders import AnnotationError, crepe, upstream
from vlprobe.dataset.spec import find_spec

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
    im = solid((h[0], h[1], h[2]), IMAGE_SIZE)
    im.paste((255 - h[0], 255 - h[1], 255 - h[2]), (20, 0, 40, 30))
    return encode(im, "JPEG", quality=95)


def _csv_bytes(columns: list[str], rows: list[dict]) -> bytes:
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
        return ast.literal_eval(rec["valid_hard_negs_atom"]) + ast.literal_eval(rec["valid_hard_negs_comp"])
    return ast.literal_eval(rec[part.negatives])


def prod_rows(kind: str, n: int) -> list[dict]:
    rows = [{"image_id": 2000 + 20 * n + i, "caption": f"{kind} {n} caption {i}", "x": 30 if n == 12 else 15, "y": 5,
             "width": 20, "height": 20, "hard_negs": repr([f"{kind} {n} negative {i}.{j}" for j in range(5)])}
            for i in range(2)]
    if kind == "negate":  # as 3,768 real rows: a set literal, read in the order written
        rows[1]["hard_negs"] = "{" + ", ".join(repr(f"{kind} {n} negative 1.{j}") for j in (4, 0, 3, 1, 2)) + "}"
    return rows


def written_negatives(cell: str) -> list[str]:
    """A negatives cell's strings in the order the literal writes them (the test's own reading)."""
    return [e.value for e in ast.parse(cell, mode="eval").body.elts]


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
                zf.writestr(f"syst_hard_negatives/{name}", _csv_bytes(columns, edit(name, syst_rows(p, c))))
    with zipfile.ZipFile(folder / crepe.PROD_ZIP, "w") as zf:
        for t in crepe.PROD_TYPES:
            for n in crepe.COMPLEXITIES:
                name = f"prod_vg_hard_negs_{t}_complexity_{n}.csv"
                zf.writestr(f"prod_hard_negatives/{t}/{name}", _csv_bytes(PROD_COLUMNS, edit(name, prod_rows(t, n))))
    return folder


def pinned_to(zips: Path):
    """The benchmark with its zips pinned to these (the synthetic zips standing in for upstream's)."""
    up = dataclasses.replace(UP, files=tuple(upstream.UpstreamFile(f.path, upstream.git_blob_sha1((zips / f.path).read_bytes()))
                                             for f in UP.files))
    return dataclasses.replace(facts.BENCHMARK, upstream=up)


def image_ids() -> set[int]:
    ids = {r["image_id"] for p in crepe.PRETRAINING for c in crepe.COMPOUNDS for r in syst_rows(p, c)}
    return ids | {r["image_id"] for t in crepe.PROD_TYPES for n in crepe.COMPLEXITIES for r in prod_rows(t, n)}



def write_vg(root: Path, ids) -> Path:
    for n, image_id in enumerate(sorted(ids)):
        sub = root / ("VG_100K" if n % 2 else "VG_100K_2")
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"{image_id}.jpg").write_bytes(_image(int(image_id)))
    return root


# ---- the negatives literal -------------------------------------------------------------------------------

def test_negatives_are_read_from_the_literal_in_the_order_written() -> None:
    read = crepe.negatives_literal
    assert read("['b', 'a', 'b']", "w", "c") == (["b", "a", "b"], False)  # a list as it is, repeats kept
    assert read("{'c', 'a', 'b'}", "w", "c") == (["c", "a", "b"], True)  # a set in the order written ...
    assert read("{'b', 'a', 'b'}", "w", "c") == (["b", "a"], True)  # ... each once, as literal_eval's set holds it
    assert set(read("{'b', 'a', 'b'}", "w", "c")[0]) == ast.literal_eval("{'b', 'a', 'b'}")
    assert read("  ('x', 'y' 'z')", "w", "c") == (["x", "yz"], False)  # a tuple; implicit concatenation; leading blanks
    assert read("[]", "w", "c") == ([], False)
    for bad in ("['a', 3]", "{'a': 'b'}", "__import__('os').getcwd()", "[x]", "[['a']]", "'a'", "[", "{'a', f'{1}'}"):
        with pytest.raises(AnnotationError, match=r"w: c .* is not a Python list \(or set\) of strings"):
            read(bad, "w", "c")
    with pytest.raises(AnnotationError, match="w: c holds an empty string"):
        read("['a', ' ']", "w", "c")
    with pytest.raises(AnnotationError, match=r"w: c is 65,537 characters long"):
        read("['" + "a" * (crepe.MAX_FIELD - 3) + "']", "w", "c")
    assert read("['" + "a" * (crepe.MAX_FIELD - 4) + "']", "w", "c")[0][0] == "a" * (crepe.MAX_FIELD - 4)


# ---- the real files --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def real(shared_data: Path) -> Path:
    folder = shared_data / "crepe"
    if not (folder / "prod_hard_negatives").is_dir():
        pytest.skip(f"the CREPE productivity CSVs are not here: {folder / 'prod_hard_negatives'}")
    return folder


def authors_rows(real: Path, config: str) -> list[tuple[str, list[str], int]]:
    """A productivity CSV as the authors' BaseCsvDataset reads it: pandas.read_csv, then per row
    ``ast.literal_eval`` of hard_negs and ``list(...)`` of that (a set's order is Python's)."""
    import pandas as pd

    part = crepe.BY_CONFIG[config]
    df = pd.read_csv(real / part.loose)
    return [(str(c), list(ast.literal_eval(h)), int(i)) for c, h, i in zip(df["caption"], df["hard_negs"], df["image_id"])]


@pytest.mark.slow
def test_every_productivity_configs_rows_as_the_authors_read_them(real: Path) -> None:
    read = crepe.read_all(real, facts.PROD_CONFIGS)  # from the loose copy (no zip here)
    assert set(read.rows) == set(facts.PROD_CONFIGS) and not read.empty
    totals = {"rows": 0, "sets": 0}
    for config in facts.PROD_CONFIGS:
        theirs, mine = authors_rows(real, config), [r.record for r in read.rows[config]]
        raw = list(csv.DictReader(io.StringIO((real / crepe.BY_CONFIG[config].loose).read_text(encoding="utf-8"))))
        assert len(mine) == len(theirs) == facts.COUNTS[config] == read.in_file[config], config
        sets = 0
        for row, (caption, negatives, image_id), rec in zip(mine, theirs, raw):
            assert (row.caption, row.image_id) == (caption, image_id)
            assert sorted(row.negatives) == sorted(negatives) and len(row.negatives) == 5  # the same texts ...
            assert row.negatives == written_negatives(rec["hard_negs"])  # ... in the order the literal writes them
            sets += rec["hard_negs"].lstrip().startswith("{")
        assert read.quirks[config] == facts.PROD_FACTS[config] and sets == facts.PROD_FACTS[config].set_literals
        assert read.read_from[config] == crepe.BY_CONFIG[config].loose
        totals["rows"] += len(mine)
        totals["sets"] += sets
    # what the issue found: 3,768 of 39,715 rows written as sets, 1,181 of negate complexity 4's 1,262
    assert totals == {"rows": 39_715, "sets": 3_768}
    assert (facts.PROD_FACTS["prod_negate_4"].rows, facts.PROD_FACTS["prod_negate_4"].set_literals) == (1262, 1181)
    negate = [facts.PROD_FACTS[f"prod_negate_{n}"] for n in crepe.COMPLEXITIES]
    assert (sum(f.rows for f in negate), sum(f.lower_case_rule for f in negate)) == (16_336, 15_716)


def test_the_third_party_copy_is_pinned_to_source_md(real: Path) -> None:
    table = {}
    for line in (real / "SOURCE.md").read_text().splitlines():
        parts = [p.strip() for p in line.strip("|").split("|")]
        if len(parts) == 5 and parts[0].startswith("prod_hard_negatives/"):
            table[parts[0]] = (parts[1], int(parts[2]))
    assert table == {f.path: (f.blob, f.size) for f in facts.PROD_CSVS.files} and len(table) == 27
    assert facts.PROD_CSVS.third_party and not facts.PROD_CSVS.fetched
    # upstream's two zips pinned by their blobs at the full commit (their sizes are not known here)
    assert {f.path: f.blob for f in UP.files} == {"syst_hard_negatives.zip": "54eebe3a52eaacd978a08f2a5c1aaa7e53b82b4b",
                                                  "prod_hard_negatives.zip": "e73068643923319ab8bd38a43404a34221d41b41"}
    assert len(UP.commit) == 40 and UP.commit in (real / "SOURCE.md").read_text()


@pytest.mark.slow
def test_dry_run_on_the_real_files(real: Path, tmp_path: Path, cli) -> None:
    out, err, listing = dry_run(cli, "crepe", real, tmp_path)
    ids = set()
    for config in facts.PROD_CONFIGS:
        theirs = authors_rows(real, config)
        n = len(theirs)
        sets = facts.PROD_FACTS[config].set_literals
        assert f"| `{config}` | {n:,} | {n:,} | 0 | 0 | 5: {n:,} | {sets:,} | `{crepe.BY_CONFIG[config].loose}` |" in out
        ids |= {i for _, _, i in theirs}
    assert "Rows in this build: **39,715** over 27 of 45 leaf configs" in out
    # the systematicity configs are not built, and the zip is named with where to get it
    assert "18 config(s) not built, none of their annotation files at hand" in err
    assert f"{UP.default_url}syst_hard_negatives.zip (git blob 54eebe3a52eaacd978a08f2a5c1aaa7e53b82b4b)" in err
    assert "## Configs not built, or built in part" in out and "`syst_laion_unseen_combined`" in out
    assert f"From the third-party copy github.com/{facts.PROD_CSVS.repo}" in out
    lines = listing.read_text().splitlines()
    assert lines[0] == "source\tfile\trows\tfound" and len(lines) - 1 == len(ids)
    assert {line.split("\t")[1] for line in lines[1:]} == {f"{i}.jpg" for i in ids}


def test_asking_for_a_config_whose_file_is_missing_is_refused(real: Path, tmp_path: Path, cli) -> None:
    err = refused_dry_run(cli, "crepe", real, tmp_path, "--configs", "prod_swap_4,syst_laion_seen_atom")
    assert "cannot build syst_laion_seen_atom: none of its annotation files is at hand" in err
    assert f"{UP.default_url}syst_hard_negatives.zip (git blob 54eebe3a" in err
    err = refused_dry_run(cli, "crepe", real, tmp_path, "--configs", "prod_nothing")
    assert "--configs: unknown config(s) ['prod_nothing']" in err


def test_a_tampered_copy_is_refused(real: Path, tmp_path: Path, cli) -> None:
    path = crepe.BY_CONFIG["prod_swap_4"].loose
    err = refused_dry_run(cli, "crepe", tampered_copy(real, path, b"floor", b"flour", tmp_path), tmp_path)
    assert f"annotation file {path} from" in err and "not the pinned one" in err
    assert facts.PROD_CSVS.repo in err


@pytest.fixture(scope="module")
def real_built(real: Path, tmp_path_factory) -> tuple[Path, set[int]]:
    """prod_swap_4 and prod_negate_4 from the loose copy, images for every swap_4 row and negate_4's first 12."""
    from vlprobe.cli import main

    base = tmp_path_factory.mktemp("crepe_real")
    given = {i for _, _, i in authors_rows(real, "prod_swap_4")} | {i for _, _, i in authors_rows(real, "prod_negate_4")[:12]}
    images = write_vg(base / "vg", given)
    err = io.StringIO()
    mp = pytest.MonkeyPatch()
    mp.setattr("sys.stderr", err)
    try:
        code = main(["build", "crepe", "--annotations", str(real), "--images", str(images), "--configs",
                     "prod_swap_4,prod_negate_4", "--skip-missing-images", "--out", str(base / "crepe")])
    finally:
        mp.undo()
    assert code == 0, err.getvalue()
    return base / "crepe", given


@pytest.mark.slow
def test_the_real_build_holds_the_configs_at_hand(real_built, real: Path) -> None:
    out, given = real_built
    swap = load(out, "prod_swap_4")
    assert len(swap) == 27 == facts.COUNTS["prod_swap_4"]
    negate = load(out, "prod_negate_4")
    raw = list(csv.DictReader(io.StringIO((real / crepe.BY_CONFIG["prod_negate_4"].loose).read_text(encoding="utf-8"))))
    kept = [n for n, r in enumerate(raw) if int(r["image_id"]) in given]
    assert negate["index"] == kept and any(raw[n]["hard_negs"].startswith("{") for n in kept)
    for row in negate:
        assert row["negatives"] == written_negatives(raw[row["index"]]["hard_negs"])
        assert row["image"].format == "PNG"
    # the configs that read several load what was built
    assert len(load(out, "productivity")) == len(load(out, "all")) == 27 + len(kept)
    assert sorted(p.name for p in (out / "data").iterdir() if p.is_dir()) == ["prod_negate_4", "prod_swap_4"]
    report = (out / "data" / "BUILD.md").read_text()
    assert f"| `prod_negate_4` | {len(kept):,} | 1,262 | 0 | {1262 - len(kept):,} | 5: {len(kept):,} | 1,181 |" in report
    assert f"From the third-party copy github.com/{facts.PROD_CSVS.repo}" in report
    assert "| `prod_hard_negatives/swap/prod_vg_hard_negs_swap_complexity_4.csv` | `990ce477" in report
    assert "## What the texts give away" in report


# ---- synthetic zips, pinned as upstream's -----------------------------------------------------------------

@pytest.fixture(scope="module")
def vg_root(tmp_path_factory) -> Path:
    return write_vg(tmp_path_factory.mktemp("vg"), image_ids())


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
        mp.setattr(crepe.Crepe, "benchmark", pinned_to(zips))
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


@pytest.mark.slow
def test_the_zips_are_verified_and_recorded(built) -> None:
    out, zips, err = built
    assert "could not be checked against a pinned git blob hash" not in err
    report = (out / "data" / "BUILD.md").read_text()
    for z in (crepe.SYST_ZIP, crepe.PROD_ZIP):
        data = (zips / z).read_bytes()
        assert f"| `{z}` | `{upstream.git_blob_sha1(data)}` | {len(data):,} | pinned hash |" in report
        assert (upstream.cache_folder(UP, out.parent / "cache") / z).read_bytes() == data
    assert "## Configs not built" not in report
    # the zips are not upstream's: the real pins refuse them
    with pytest.raises(upstream.AnnotationChecksumError, match="syst_hard_negatives.zip .*not the pinned one: .* expected "
                                                               "54eebe3a52eaacd978a08f2a5c1aaa7e53b82b4b as in RAIVNLab/CREPE"):
        upstream.locate([UP], zips)


@pytest.mark.slow
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
            want = written_negatives(rec[part.negatives]) if part.family == "productivity" else expected_negatives(rec, part)
            assert row["caption"] == rec["caption"] and row["negatives"] == want
            assert row["gold"] == [[1] + [0] * len(row["negatives"])]
            assert (row["family"], row["negative_type"], row["complexity"]) == (
                part.family, part.negative_type, part.complexity)
    assert load(out, "prod_negate_7")[1]["negatives"] == [f"negate 7 negative 1.{j}" for j in (4, 0, 3, 1, 2)]
    assert len(load(out, "productivity")) == 54 and len(load(out, "prod_negate")) == 18 and len(load(out, "all")) == 102
    report = (out / "data" / "BUILD.md").read_text()
    assert "| `syst_cc12m_seen_comp` | 2 | 3 | 1 | 0 | 2: 1, 3: 1 | 0 | `syst_hard_negatives.zip:" in report
    assert "| `prod_negate_4` | 2 | 2 | 0 | 0 | 5: 2 | 1 | `prod_hard_negatives.zip:" in report
    assert "- `syst_laion_unseen_comp`: 1 row(s): 2" in report
    # combined: the file with its own column is read as is; the other five are atom + comp, and said so
    assert load(out, "syst_laion_seen_combined")[0]["negatives"] == [f"combined neg 0.{j}" for j in range(4)]
    assert load(out, "syst_cc12m_seen_combined")[2]["negatives"] == [f"atom neg 2.{j}" for j in range(3)]
    derived = report.split("## `combined` negatives built as atom + comp")[1].split("##")[0]
    assert "`syst_cc12m_seen_combined`" in derived and "syst_laion_seen_combined" not in derived


@pytest.mark.slow
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


def authors_rank(scores) -> np.ndarray:
    """The caption's rank in each row as the authors' get_one2many_rank (crepe_eval_utils.py) takes it:
    torch.argsort(logits, descending=True) on the CPU, then where index 0 (the caption) landed."""
    torch = pytest.importorskip("torch")
    ranking = torch.argsort(torch.as_tensor(np.asarray(scores, dtype=np.float32)), descending=True)
    return torch.where(ranking == 0)[1].numpy()


def test_torch_argsort_keeps_the_caption_ahead_of_negatives_tied_with_it() -> None:
    # what CREPE's tie rule (lenient) rests on: on the CPU, in rows of up to 16 texts (a productivity row has
    # 6), torch.argsort(descending=True) puts index 0 before every value tied with it, so the caption's rank is
    # the number of negatives strictly above it
    rng = np.random.default_rng(0)
    for n in range(2, 17):
        rows = rng.normal(size=(400, n)).astype(np.float32)
        for row in rows:
            tied = rng.choice(np.arange(1, n), size=rng.integers(1, n), replace=False)
            row[tied] = row[0]
            if rng.random() < 0.3:  # sometimes a negative above them all
                row[rng.integers(1, n)] = row.max() + 1
        assert (authors_rank(rows) == (rows > rows[:, :1]).sum(1)).all(), n


def test_recall_at_1_under_crepe_s_tie_rule_is_the_authors_code() -> None:
    """The metric's `text` under CREPE's declared tie rule equals recall@1 from the authors' ranking (torch's
    argsort) on rows of 6 texts with many ties; under the default strict policy a tie for first is wrong."""
    from vlprobe.metric import compute

    assert get_benchmark("crepe").tie_rule.policy == "lenient"
    rng = np.random.default_rng(1)
    scores = rng.integers(0, 4, size=(2000, 1, 6)).astype(np.float32)  # four values: ties everywhere
    gold = np.zeros(scores.shape, dtype=bool)
    gold[:, :, 0] = True
    authors = float(np.mean(authors_rank(scores[:, 0]) == 0))
    tied_first = np.mean((scores[:, 0, 1:] == scores[:, 0, :1]).any(1) & (scores[:, 0] <= scores[:, 0, :1]).all(1))
    assert tied_first > 0.1  # the case that decides
    r = compute(scores, gold, ties=get_benchmark("crepe").tie_rule.policy)
    assert r["text"] == pytest.approx(authors)
    assert compute(scores, gold, ties="strict")["text"] == pytest.approx(authors - tied_first)


@pytest.mark.slow
def test_evaluate_s_default_counts_ties_as_the_authors_code(built, tiny_clip_path: Path) -> None:
    """`vlprobe.evaluate`'s default (ties="authors") scores CREPE as the authors' get_one2many_rank ranks: recall@1
    equals the caption's rank 0 under torch.argsort on the run's own scores, where rows whose negatives repeat the
    caption (one input to the model: exact ties) count right; the entry records lenient and no departure is shown.
    `ties="strict"` counts those rows wrong, records strict, and shows the authors' figure beside it."""
    import vlprobe

    spec = find_spec(str(built[0]))
    ds = load(built[0], "prod_atom_4")
    ds = ds.map(lambda row, i: {"negatives": [row["caption"]] * len(row["negatives"]) if i % 2 == 0 else
                                ([row["caption"], *row["negatives"][1:]] if i % 3 == 0 else row["negatives"])},
                with_indices=True)
    kw = dict(configs=["prod_atom_4"], bootstrap=0, progress=False, cache_dir="none", num_workers=0)
    run = vlprobe.evaluate(str(tiny_clip_path), {"crepe": ds}, spec=spec, **kw)
    (split,), (entry,) = run.splits, run.entries
    rank = authors_rank(np.stack([np.asarray(s)[0] for s in split.scores]))
    assert len(rank) == len(ds) >= 2 and entry.metrics.n_ties
    assert entry.ties == "lenient" and entry.metrics.value("text") == pytest.approx(np.mean(rank == 0))
    block = run.summary["crepe"]
    assert entry.authors_rule is None and block.tie_policy.run == "lenient" and not block.departures
    assert "(lenient)" in run.table() and "NOT the authors' setting" not in run.table()
    strict = vlprobe.evaluate(str(tiny_clip_path), {"crepe": ds}, spec=spec, ties="strict", **kw)
    (theirs,) = strict.entries
    assert theirs.ties == "strict" and theirs.metrics.value("text") < entry.metrics.value("text")
    assert theirs.authors_rule.ties == "lenient"
    assert theirs.authors_rule.metrics.value("text") == pytest.approx(np.mean(rank == 0))
    assert [d.setting for d in strict.summary["crepe"].departures] == ["ties"]
    assert [e["ties"] for e in run.results["results"] + strict.results["results"]] == ["lenient", "strict"]


@pytest.mark.slow
def test_items_and_recall_at_1_with_the_authors_tie_rule(built) -> None:
    """Rows become 1 x (1 + k) items with the caption gold; the metric's `text` is CREPE's R@1 (the
    caption ranked first by the authors' torch.argsort: above every negative, or tied with those at the
    top), a tie for first right under lenient (the authors' rule), wrong under strict, 1/(1+t) under half;
    the order of the negatives does not change it."""
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
    r = compute(predictions=scores, references=gold, bootstrap=0, ties="lenient")
    assert r["text"] == pytest.approx(3 / 4) and r["set_acc"] == r["text"] and r["n_ties"] == 1
    assert compute(predictions=scores, references=gold, bootstrap=0)["text"] == pytest.approx(2 / 4)  # strict
    assert compute(predictions=scores, references=gold, bootstrap=0, ties="half")["text"] == pytest.approx(2.5 / 4)
    reversed_negatives = [[[s[0][0], *s[0][:0:-1]]] for s in scores]
    assert compute(predictions=reversed_negatives, references=gold, bootstrap=0, ties="lenient")["text"] == r["text"]
    assert r["text"] == np.mean([authors_rank([s[0]])[0] == 0 for s in scores])


@pytest.mark.slow
def test_evaluate_on_the_built_folder(built, tiny_clip_path: Path, tmp_path: Path, cli) -> None:
    code, out, err = cli("evaluate", "--dataset", str(built[0]), "--model", str(tiny_clip_path), "--config",
                         "prod_atom_4,syst_cc12m_seen_comp", "--limit", "2", "--bootstrap", "0", "--no-progress",
                         "--cache-dir", "none", "--out", str(tmp_path / "run"))
    assert code == 0, err
    doc = json.loads((tmp_path / "run" / "results.json").read_text())
    table = pq.read_table(tmp_path / "run" / "scores.parquet").to_pylist()
    assert {e["config"] for e in doc["results"]} == {"prod_atom_4", "syst_cc12m_seen_comp"}
    for entry in doc["results"]:
        rows = [r for r in table if r["config"] == entry["config"]]
        assert len(rows) == 2
        r1 = np.mean([authors_rank([r["scores"][0]])[0] == 0 for r in rows])  # the authors' ranking
        assert entry["metrics"]["text"] == pytest.approx(r1) and entry["ties"] == "lenient"
    assert doc["provenance"]["settings"]["ties"] == "authors"
    block = doc["summary"]["crepe"]  # the headline is the authors' recall@1, named as they name it
    assert block["headline"] == ["text", "acc_r"] and block["names"] == {"text": "R@1"}
    assert block["tie_policy"]["authors"] == "lenient" and "torch.argsort" in block["tie_policy"]["rule"]
    assert block["tie_policy"]["run"] == "lenient"  # counted by the authors' rule: no tie departure
    assert [d["setting"] for d in block["departures"]] == ["limit"]
    assert "2 of 45 configs scored" in block["notes"][0]
    assert "R@1" in out


@pytest.mark.slow
def test_a_plain_run_summarises_each_config(built, tiny_clip_path: Path, tmp_path: Path, cli) -> None:
    # `evaluate --dataset crepe` scores the `all` config once; the summary gives each leaf config's R@1
    # (from the `leaf=` tag), as the authors report per config, ties counted as their code counts them.
    code, _, err = cli("evaluate", "--dataset", str(built[0]), "--model", str(tiny_clip_path), "--bootstrap", "0",
                       "--no-progress", "--cache-dir", "none", "--out", str(tmp_path / "run"))
    assert code == 0, err
    doc = json.loads((tmp_path / "run" / "results.json").read_text())
    assert [e["config"] for e in doc["results"]] == ["all"]
    table = pq.read_table(tmp_path / "run" / "scores.parquet").to_pylist()
    block = doc["summary"]["crepe"]
    rows = {r["config"]: r for r in block["rows"]}
    assert [r["config"] for r in block["rows"]] == list(facts.BENCHMARK.configs) and block["complete"]
    for config in ("prod_atom_4", "syst_laion_seen_combined", "syst_cc12m_seen_comp"):
        mine = [r for r in table if r["id"].startswith(f"{config}/")]
        # the default is the authors' rule: their torch.argsort ranks the caption (index 0) first among ties
        r1 = np.mean([all(r["scores"][0][0] >= v for v in r["scores"][0][1:]) for r in mine])
        assert rows[config]["values"]["text"] == pytest.approx(r1), config


@pytest.mark.slow
def test_committed_card_spec_and_the_space_listing(built, repo_root: Path) -> None:
    from vlprobe.demo.settings import Settings
    from vlprobe.publish import check_dataset_folder

    out, zips, _ = built
    assert check_dataset_folder(out, rows=2, load=False)[0] == []
    # The card names the zips it was built from by git blob: here the stand-ins this test pinned, in the committed
    # card the upstream ones; the rest byte for byte.
    card = (out / "README.md").read_text()
    for f in UP.files:
        standin = upstream.git_blob_sha1((zips / f.path).read_bytes())
        assert f"`{standin}`" in card
        card = card.replace(standin, f.blob)
    assert (repo_root / "crepe" / "README.md").read_text() == card
    assert (repo_root / "crepe" / "vlprobe.yaml").read_text() == (out / "vlprobe.yaml").read_text()
    card = (out / "README.md").read_text()
    assert "only meaningful for models pretrained on CC12M, YFCC15M or LAION-400M" in card
    assert "CREPE's recall@1 is\n`text`" in card or "CREPE's recall@1 is `text`" in card
    assert "not pinned" not in card and UP.commit in card and "## What is not verified" in card
    assert "| `prod_negate_4` | 1,262 | 1,181 | 0 | 0.0 | 98.9 |" in card
    assert str(out) in Settings(root=out.parent).dataset_folders()


def test_offline_with_nothing_cached_names_both_zips_and_their_urls(tmp_path: Path, monkeypatch, cli) -> None:
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.delenv(UP.url_env, raising=False)
    code, _, err = cli("build", "crepe", "--out", str(tmp_path / "o"), "--cache-dir", str(tmp_path / "c"))
    assert code == 2 and "Traceback" not in err and "CREPE: cannot build" in err
    for f in UP.files:
        assert (f"https://raw.githubusercontent.com/RAIVNLab/CREPE/{UP.commit}/data/{f.path} (git blob {f.blob})" in err)
    assert "a third-party copy, read only from --annotations DIR" in err
    assert not (tmp_path / "o").exists()


def test_bad_records_name_the_file_and_row(tmp_path: Path) -> None:
    def bad_negatives(name, rows):
        if name == "prod_vg_hard_negs_swap_complexity_7.csv":
            rows[1]["hard_negs"] = "['a', 3]"
        return rows

    zips = make_zips(tmp_path / "a", edit=bad_negatives)
    with pytest.raises(AnnotationError, match=r"prod_hard_negatives\.zip:prod_vg_hard_negs_swap_complexity_7\.csv "
                                              r"row 1: hard_negs .* not a Python list \(or set\) of strings"):
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
    loose = tmp_path / "d" / crepe.BY_CONFIG["prod_atom_5"].loose
    loose.parent.mkdir(parents=True)
    loose.write_bytes(b"image_id,caption\n\xff\xfe,x\n")
    with pytest.raises(AnnotationError, match=r"prod_vg_hard_negs_atom_complexity_5\.csv: not UTF-8 text"):
        crepe.read_all(tmp_path / "d", ["prod_atom_5"])
