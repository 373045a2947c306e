"""The Space's display pieces without a browser: run names, uploaded file names, the group verdict's
words, the unknown-word note, HTML tables and SVG charts (see test_browser_space.py for the page)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from vlprobe.dataset.items import Item
from vlprobe.demo import display, results, settings, uploads
from vlprobe.demo import score as scoring
from vlprobe.demo.settings import SpaceError

HASH = re.compile(r"[0-9a-f]{16,}")


def _results_doc(model="models/mini-clip", dataset="travlr", created="2026-11-20T10:00:00"):
    return {"format": "vlprobe-results/1",
            "provenance": {"model": {"model_id": model}, "settings": {}, "created": created},
            "results": [{"benchmark": dataset, "dataset": dataset, "config": "spatiality", "split": "test_ind",
                         "metrics": {"acc_r": 0.5, "n_items": 10, "n_ties": 2, "chance": {"acc_r": 0.5}}}]}


VALSE = ("existence", "plurality", "counting_balanced", "counting_small_numbers", "counting_adversarial", "relations",
         "action_replacement", "actant_swap", "coreference_standard", "coreference_clean", "foil_it")


def valse_all_doc(model="models/mini-clip", na=(), missing=()):
    """A run of VALSE's pooled `all` config (every instrument's items together) as the Benchmark tab writes it: its
    per-tag results name the instruments (acc_r 0.50, 0.52, ... in VALSE's order; those in ``na`` every item tied),
    bar those ``missing``."""
    def result(value, n=20):
        if value is None:
            return {"acc_r": None, "n_items": n, "n_ties": n, "chance": {"acc_r": 0.5},
                    "na_reason": f"{n}/{n} items tied: texts the model reads as the same token ids"}
        return {"acc_r": value, "n_items": n, "n_ties": 1, "chance": {"acc_r": 0.5},
                "ci": {"acc_r": [value - 0.1, min(1.0, value + 0.1)]}}

    tags = {f"instrument={k}": result(None if k in na else 0.5 + 0.02 * i)
            for i, k in enumerate(VALSE) if k not in missing}
    doc = {"format": "vlprobe-results/1",
           "provenance": {"model": {"model_id": model}, "settings": {"ties": "strict"}},
           "results": [{"benchmark": "valse", "dataset": "valse", "config": "all", "split": "test", "shape": [1, 2],
                        "metrics": {**result(0.6, 20 * len(tags)), "per_tag": tags}}]}
    return doc


def _upload(tmp_path, folder, doc, name="results.json"):
    """A file as Gradio stores an upload: <upload folder>/<64 hex digits>/<the visitor's name>."""
    path = tmp_path / folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc), encoding="utf-8")
    return str(path)


def test_two_uploaded_results_json_get_short_distinct_names_not_hashes(tmp_path):
    a = _upload(tmp_path, "a" * 64, _results_doc("models/mini-clip"))
    b = _upload(tmp_path, "b" * 64, _results_doc("openai/clip-vit-base-patch32"))
    out = results.compare_results([a, b], include_papers=False)
    names = out.labels
    assert names == ["mini-clip · travlr", "clip-vit-base-patch32 · travlr"], names
    # one row per run and config, each with its items and tied comparisons: no pair of columns per run
    (table,) = out.runs
    assert table.headers == ["run", "config", "acc_r (chance 50.0)", "items", "ties"]
    assert table.rows == [[names[0], "spatiality", "50.0", 10, 2], [names[1], "spatiality", "50.0", 10, 2]]
    # beside the papers too: a note on a run names its file as uploaded, never the upload folder's path
    doc = _results_doc(dataset="winoground")
    doc["results"][0].update(config="winoground", metrics={"text": 0.3, "image": 0.2, "group": 0.1, "n_items": 400})
    wino = results.compare_results([_upload(tmp_path, "f" * 64, doc)])
    assert any("results.json" in n for n in wino.papers.notes) and not any(HASH.search(n) for n in wino.papers.notes)
    for text in [out.note, *table.headers, *(r[0] for r in table.rows), *(p.source for p in out.points)]:
        assert not HASH.search(text), text


def test_same_model_and_dataset_runs_are_told_apart_and_typed_names_win(tmp_path):
    a = _upload(tmp_path, "c" * 64, _results_doc(created="2026-11-20T10:00:00"))
    b = _upload(tmp_path, "d" * 64, _results_doc(created="2026-11-21T09:30:00"))
    names = results.compare_results([a, b], include_papers=False).labels
    assert len(set(names)) == 2 and all(len(n) <= results.MAX_LABEL for n in names), names
    assert all("mini-clip" in n for n in names) and not any(HASH.search(n) for n in names)
    typed = results.compare_results([a, b], include_papers=False, names="baseline\nfine-tuned").labels
    assert typed == ["baseline", "fine-tuned"]
    same = results.compare_results([a, a], include_papers=False, names="x\nx").labels
    assert same == ["x (1)", "x (2)"]
    # a folder with a meaning names its results.json; a file's own name wins
    c = _upload(tmp_path, "runs/clip-b32-valse", _results_doc())
    d = _upload(tmp_path, "e" * 64, _results_doc(), name="my_run.json")
    assert results.compare_results([c, d], include_papers=False).labels == ["clip-b32-valse", "my_run"]
    (long,) = results.compare_results([a], include_papers=False, names="a" * 80).labels
    assert len(long) == results.MAX_LABEL and "…" in long


@pytest.mark.parametrize("name, shown", [
    ("../../etc/passwd", "passwd"), ("/etc/passwd", "passwd"), ("a\\b\\c.json", "c.json"),
    ("..", "upload"), (".", "upload"), ("", "upload"), ("re\x00sults.json", "results.json"),
    ("dir/../..", "upload"), ("results.json", "results.json"), ("a\nb.json", "ab.json"),
])
def test_uploaded_names_never_become_paths(name, shown, tmp_path):
    got = uploads.safe_name(name)
    assert got == shown
    assert "/" not in got and "\\" not in got and "\x00" not in got and got not in (".", "..")
    assert (tmp_path / got).resolve().parent == tmp_path.resolve()  # always a file directly in its folder


def test_upload_paths_outside_the_upload_folders_are_refused(tmp_path):
    root = tmp_path / "gradio"
    inside = root / ("f" * 64) / "results.json"
    inside.parent.mkdir(parents=True)
    inside.write_text("{}")
    outside = tmp_path / "secret.json"
    outside.write_text("{}")
    assert uploads.upload_path({"path": str(inside)}, "results file", [root]) == inside
    for bad in (str(outside), str(root / ".." / "secret.json"), str(root / ("f" * 64) / ".." / ".." / "secret.json")):
        with pytest.raises(SpaceError, match="was not uploaded to this page"):
            uploads.upload_path({"path": bad}, "results file", [root])
    link = root / "link.json"
    link.symlink_to(outside)
    with pytest.raises(SpaceError, match="was not uploaded to this page"):
        uploads.upload_path(str(link), "image 1", [root])
    with pytest.raises(SpaceError, match="not a valid file name"):
        uploads.upload_path(str(inside) + "\x00.png", "image 1", [root])


def test_the_app_refuses_uploads_outside_its_folders(repo_root, tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("vlprobe_space_app_uploads", repo_root / "space" / "app.py")
    app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app)
    elsewhere = _upload(tmp_path, "x", _results_doc())
    note, *_ = app.compare_results([{"path": elsewhere}], False, "auto", "")
    assert note.startswith("⚠️ **Cannot compare:** Results files: 'results.json' was not uploaded to this page")
    said = set()
    for path in ("/etc/passwd", "/etc/passwd2", "/root/.cache", "/root/nonexistent"):  # alike, existing or not
        for sent in ({"path": path}, path):
            verdict, *_ = app.score(sent, None, "a cat", "a dog", None)
            said.add(verdict.replace(repr(Path(path).name), "NAME"))
    assert said == {"Cannot score: Image 1: NAME was not uploaded to this page; upload the file itself (from a script: "
                    "gradio_client.handle_file(path))"}


def test_a_file_a_box_cannot_take_is_said_naming_the_box(repo_root):
    """The browser keeps a non-image (or a non-.json results file) from Gradio's toast and sends its name: one
    sentence naming the box, in the verdict or the results note; a forged report names no path and says nothing."""
    import importlib.util
    import json

    spec = importlib.util.spec_from_file_location("vlprobe_space_app_refused", repo_root / "space" / "app.py")
    app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app)
    verdict, note = app.refused_upload(json.dumps({"box": "Image 2", "names": ["../../notes.txt"], "at": 1}))
    assert verdict == "Cannot score: Image 2: 'notes.txt' is not an image (use PNG, JPEG or WebP)"
    verdict, note = app.refused_upload(json.dumps({"box": "Results files", "names": ["a.txt", "b.csv"]}))
    assert note == ("⚠️ **Cannot compare:** Results files: 'a.txt' and 'b.csv' are not results files (the results.json "
                    "that vlprobe evaluate or the Benchmark tab writes)")
    for forged in ("", "not json", json.dumps({"box": "/etc/passwd", "names": ["x"]}), json.dumps({"box": "Image 1"})):
        assert all(isinstance(out, type(app.gr.skip())) for out in app.refused_upload(forged)), forged


def _group_item():
    return Item(id="g", images=(None, None), texts=("c1", "c2"), gold=np.eye(2, dtype=bool))


def test_the_group_verdict_names_the_comparisons_that_failed():
    from vlprobe.metric import compute

    item = _group_item()
    # rows: image 1 prefers c1 (right), image 2 prefers c1 (wrong); columns: c1 prefers image 2 (wrong)
    S = np.array([[3.0, 1.0], [4.0, 2.0]])
    result = compute([S], [item.gold.astype(int)], ties="strict")
    line = scoring.verdict_text("group", result, item, S)
    assert line.startswith("WRONG: not every image prefers its own caption (text), and not every caption its own image")
    assert "Failed: image 2 prefers caption 1; caption 1 prefers image 2 (2 of 4 comparisons right)" in line
    assert "neither" not in line
    S = np.array([[3.0, 1.0], [4.0, 5.0]])  # text right; caption 1 prefers image 2
    result = compute([S], [item.gold.astype(int)], ties="strict")
    line = scoring.verdict_text("group", result, item, S)
    assert line.startswith("PARTLY RIGHT: each image prefers its own caption, but not each caption its own image")
    assert line.endswith("Failed: caption 1 prefers image 2 (3 of 4 comparisons right)")


def test_words_outside_the_shipped_models_vocabulary_are_named_next_to_the_verdict(repo_root):
    from transformers import AutoTokenizer

    shipped = repo_root / settings.DEFAULT_MODEL
    if not (shipped / "tokenizer.json").is_file():
        pytest.skip("the shipped model is not in this checkout")

    class Scorer:
        tokenizer = AutoTokenizer.from_pretrained(shipped)

    words = scoring.unknown_words(Scorer(), ["a red circle and a zebra", "a red circle and a giraffe."])
    assert words == ["zebra", "giraffe"]
    note = scoring.unknown_note(words)
    assert "“zebra”, “giraffe”" in note and "same score" in note
    assert scoring.unknown_words(Scorer(), ["a red circle left of a blue square"]) == []
    assert scoring.unknown_words(object(), ["anything"]) == []  # no tokenizer: no note


def test_html_tables_format_numbers_alike_and_escape_text():
    html = display.html_table(["text", "score", "items", "tags"], [["<b>x</b>", 3.64, 1000, "a=1, b=2"],
                                                                  ["y", 0.3391, 2, ""]],
                              label="Scores", table_id="t", prose=("text",), lists=("tags",))
    assert "&lt;b&gt;x&lt;/b&gt;" in html and "<b>x" not in html
    assert '<td class="num">3.640</td>' in html and '<td class="num">0.339</td>' in html
    assert '<td class="num">1,000</td>' in html
    assert '<td class="list"><span>a=1</span>, <span>b=2</span></td>' in html
    assert 'aria-label="Scores"' in html and 'id="t"' in html
    assert "1,000 items" in settings.limits_text()
    # running text wraps only at spaces: a browser may also break at a hyphen or slash, so such a word is kept whole
    html = display.html_table(["source"], [["upstream README, gpt-4v-results/readme.md"], ["2.0"]], prose_rows=[0, 1])
    assert '<td class="prose">upstream README, <span class="word">gpt-4v-results/readme.md</span></td>' in html
    assert '<td class="num">2.0</td>' in html  # a number in a wrapping row stays a number
    # a value that is not available: a short cell in the number's place, its reason a note under the table
    html = display.html_table(["tag", "acc_r"], [["a", 50.0], ["b", "N/A¹"]], notes=["¹ every item of the tag tied"])
    assert '<th scope="col" class="num">acc_r</th>' in html and '<td class="num">N/A¹</td>' in html
    assert html.endswith('</table></div><p class="vt-note">¹ every item of the tag tied</p></div>')
    # a run's column shaded, its name a header that wraps at spaces; a number with a footnote's mark is a number;
    # as cards (a phone), each cell carries its column's name
    html = display.html_table(["config", "this run: mini-clip · valse", "CLIP"], [["Avg.", "27.1²", "64.0"]],
                              wrap=("this run: mini-clip · valse",), marked=("this run: mini-clip · valse",), cards=True)
    assert '<th scope="col" class="wrap num mark">this run: <span class="word">mini-clip</span> · valse</th>' in html
    assert '<td class="num mark" data-label="this run: mini-clip · valse">27.1²</td>' in html
    assert '<table class="vt cards">' in html and '<td data-label="config">Avg.</td>' in html


def test_svg_charts_keep_text_as_text_at_a_readable_size():
    fig = scoring.margin_chart([("caption − “一只猫 🐱 on a very long caption that wraps onto lines”", 0.5),
                                ("image 2: its caption − “b”", -0.25)])
    svg = display.svg(fig, "the margins", chart_id="c")
    assert '<svg' in svg and 'role="img"' in svg and 'aria-label="the margins"' in svg and "<title>the margins</title>" in svg
    assert "一只猫 🐱" in svg  # drawn by the browser's fonts, not boxes baked into paths
    sizes = [float(s) for s in re.findall(r"font-size: ([\d.]+)px", svg)]
    assert sizes and min(sizes) >= display.CHART_FONT_SIZE
    width = float(re.search(r"min-width:(\d+)px", svg).group(1))
    view = float(re.search(r'viewBox="0 0 ([\d.]+)', svg).group(1))
    assert min(sizes) * width / view >= 11.0  # never drawn smaller than 11 px


def text_overlaps(fig):
    """Pairs of texts of a matplotlib figure (drawn by its own renderer) whose boxes intersect by
    more than half a pixel both ways."""
    import itertools

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in fig.findobj(Text)
             if t.get_visible() and t.get_text().strip()]
    return [(a, b) for (a, x), (b, y) in itertools.combinations(boxes, 2)
            if min(x.x1, y.x1) - max(x.x0, y.x0) > 0.5 and min(x.y1, y.y1) - max(x.y0, y.y0) > 0.5]


def svg_width(fig) -> float:
    """The figure's width as the page's SVG draws it at scale 1, in CSS px (its points)."""
    import re

    return float(re.search(r'min-width:(\d+)px', display.svg(fig, "chart")).group(1)) / display.MIN_SCALE


def test_results_chart_points_sit_on_their_rows_and_labels_are_one_line(tmp_path):
    """Two runs of winoground and one TraVLR run with two splits, beside the papers: a dot plot, one
    row per config (or, with more sources than configs, per source), each point on its own row,
    every row label on one line, no two texts overlapping."""
    def doc(benchmark, config, splits, metric):
        return {"format": "vlprobe-results/1", "provenance": {"model": {"model_id": "m"}, "settings": {}},
                "results": [{"benchmark": benchmark, "dataset": benchmark, "config": config, "split": s,
                             "metrics": {metric: 0.5, "n_items": 10, "chance": {metric: 0.25},
                                         "ci": {metric: [0.4, 0.6]}}} for s in splits]}

    paths = []
    for name, d in (("a.json", doc("winoground", "winoground", ["test"], "group")),
                    ("b.json", doc("winoground", "winoground", ["test"], "group")),
                    ("travlr_run.json", doc("travlr", "spatiality", ["test_ind", "test_ood"], "acc_r"))):
        paths.append(tmp_path / name)
        paths[-1].write_text(json.dumps(d), encoding="utf-8")
    for papers in (False, True):
        out = results.compare_results([str(p) for p in paths], include_papers=papers)
        ax = out.chart.axes[0]
        labels = [t.get_text() for t in ax.get_yticklabels()]
        assert all("\n" not in label for label in labels), labels
        # more sources (runs' splits, systems) than configs: a row per source, its points its configs
        assert labels[:4] == ["a", "b", "travlr_run · test_ind", "travlr_run · test_ood"], labels
        assert len(labels) == 4 + (19 if papers else 0)  # Winoground Table 3's systems beside the runs
        points = [line for line in ax.get_lines() if (line.get_gid() or "").startswith("point:")]
        assert len(points) == len(labels)
        for line in points:
            source = line.get_gid().removeprefix("point:").rsplit(":", 2)[0].removeprefix("paper: ")
            y = float(line.get_ydata()[0])
            assert abs(y - round(y)) < 0.45 and labels[int(round(y))].startswith(source), (line.get_gid(), y)
        assert text_overlaps(out.chart) == []
        svg = results.chart_svg(out.chart)
        assert svg.count('data-point="travlr_run:travlr/spatiality/') == 2
    # one run on three configs: a row per config, the metric named once on the axis
    three = tmp_path / "three.json"
    three.write_text(json.dumps({**doc("travlr", "spatiality", ["test_ind"], "acc_r"), "results": [
        r for c in ("spatiality", "cardinality", "quantifiers")
        for r in doc("travlr", c, ["test_ind"], "acc_r")["results"]]}), encoding="utf-8")
    out = results.compare_results([str(three)], include_papers=False)
    ax = out.chart.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["spatiality", "cardinality", "quantifiers"]
    assert ax.get_xlabel() == "acc_r (%)" and text_overlaps(out.chart) == []


@pytest.mark.parametrize("benchmark", ["valse", "winoground", "bla", "sugar_crepe"])
def test_the_papers_charts_have_no_overlapping_text(benchmark):
    """Compare with no file shows a paper's table and chart: its labels never collide (the bar chart
    had 97 overlapping pairs for VALSE)."""
    out = results.compare_results([], include_papers=True, benchmark=benchmark)
    for chart in (out.chart, out.chart_narrow):
        assert chart is not None and text_overlaps(chart) == []
    # the phone's chart fits a 370 px column with its text at 11 px or more (it was 415 px for Winoground)
    assert svg_width(out.chart_narrow) * display.MIN_SCALE <= 370, svg_width(out.chart_narrow)
    # the long side down: a row per (config, metric) and a column per system, or (Winoground's 19 systems on
    # one config) a row per system; the sources said under the table, not in a row of it
    first = {"valse": ["config", "metric", "GPT1"], "winoground": ["system", "text", "image", "group"],
             "bla": ["config", "metric", "CLIP"], "sugar_crepe": ["config", "GPT-4V (positive-first)"]}[benchmark]
    table = out.papers
    assert table.headers[:len(first)] == first and len(table.headers) <= len(table.rows) + 2, table.headers
    assert table.label.startswith("The published numbers: ") and "source" not in [r[0] for r in table.rows]
    assert any(results.PAPER_NOTES[benchmark] in n for n in table.notes), table.notes


@pytest.mark.parametrize("margins", [[0.0], [0.0, 0.0, 0.0, 0.0], [1e-7, -2e-7], [3.2, -0.4, 0.0], [250.0, -0.01]])
def test_margin_charts_have_no_overlapping_text_and_no_offset(margins):
    """Ties draw a '0 (tie)' mark on an axis of -1..1, not a '1e-6' offset; tick labels never touch."""
    points = [(f"caption − “a text number {k} that is long enough to wrap onto two lines”", v)
              for k, v in enumerate(margins)]
    fig = scoring.margin_chart(points)
    assert text_overlaps(fig) == []
    ax = fig.axes[0]
    assert not ax.xaxis.get_offset_text().get_text()
    if not any(margins):
        assert ax.get_xlim() == (-1.8, 1.8)
        assert sum(t.get_text().strip() == "0 (tie)" for t in ax.texts) == len(margins)


def test_margin_chart_labels_and_height_are_bounded_and_the_tie_label_is_off_the_zero_line():
    """A 480-character foil is a two-line label (cut with "…"), a 16-text item's chart shows its 8 lowest margins
    in a bounded height (it was 1,423 px), and "0 (tie)" starts right of the zero line."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    long = scoring.margin_chart([("caption − “" + "a very long foil " * 28 + "”", 0.3)])
    label = next(t.get_text() for t in long.axes[0].texts if t.get_text().startswith("caption"))
    assert label.count("\n") == 1 and label.endswith("…”"), label
    many = scoring.margin_chart([(f"caption − “foil {k}”", (k - 7) / 10) for k in range(15)])
    shown = [t.get_text() for t in many.axes[0].texts if t.get_text().startswith("caption")]
    assert shown == [f"caption − “foil {k}”" for k in range(8)]  # the lowest margins, in order
    assert "8 lowest of 15 margins" in many.axes[0].get_title(loc="left") and text_overlaps(many) == []
    assert many.get_size_inches()[1] * 100 <= 600
    tie = scoring.margin_chart([("caption − “a”", 0.0)])
    renderer = FigureCanvasAgg(tie).get_renderer()
    tie.canvas.draw()
    ax = tie.axes[0]
    zero_x = ax.transData.transform((0, 0))[0]
    tie_box = next(t for t in ax.texts if t.get_text() == "0 (tie)").get_window_extent(renderer)
    assert tie_box.x0 > zero_x + 3, (tie_box, zero_x)


def test_every_built_dataset_folder_is_offered_default_ones_first(tmp_path, monkeypatch):
    """A new benchmark's folder appears in the Benchmark tab once built: no list to extend."""
    from vlprobe.demo.settings import ENV_DATASETS, Settings

    monkeypatch.delenv(ENV_DATASETS, raising=False)
    monkeypatch.setenv("VLPROBE_ROOT", str(tmp_path / "nothing built here"))
    for name, spec, built in [("sugar_crepe", True, True), ("travlr", True, True), ("cola", True, False),
                              ("notes", False, True), ("winoground_style", True, True)]:
        folder = tmp_path / name
        (folder / "data" / "c").mkdir(parents=True)
        (folder / "README.md").write_text("---\n---\n")
        if spec:
            (folder / "vlprobe.yaml").write_text("id: id\n")
        if built:
            (folder / "data" / "c" / "test-00000-of-00001.parquet").write_bytes(b"")
    names = [Path(f).name for f in Settings(root=tmp_path).dataset_folders()]
    assert names == ["travlr", "winoground_style", "sugar_crepe"]


# ---- a run beside the papers (issue 46.3) and tables of one row per run and config (46.5) ---------------------------

def test_a_valse_all_run_sits_beside_the_papers_config_by_config_and_its_avg_beside_theirs(tmp_path):
    """valse/all, sent to the Results tab: the chart has a row per instrument and one for the Avg., each with the
    run's point (its per-tag figure) beside the paper's systems; the papers table the same rows, the run's column
    first; a Winoground run loaded too gets no empty column there, and its own runs table."""
    from vlprobe import report

    valse = _upload(tmp_path, "a" * 64, valse_all_doc(), name="valse_run.json")
    wino = _upload(tmp_path, "b" * 64, _results_doc(dataset="winoground"), name="wino_run.json")
    out = results.compare_results([valse, wino], include_papers=True, benchmark="valse")
    avg = float(np.mean([50 + 2 * i for i in range(11)]))
    mine = {p.config: p for p in out.points if p.source == "valse_run"}
    assert list(mine) == [*VALSE, "avg"] and mine["avg"].value == pytest.approx(avg) and mine["avg"].label == "Avg."
    assert [round(mine[k].value, 6) for k in VALSE] == [50 + 2 * i for i in range(11)]
    papers = [p for p in report.paper_results() if p.benchmark == "valse" and p.table == "Table 2" and p.metric == "acc_r"]
    for chart, narrow in ((out.chart, False), (out.chart_narrow, True)):
        ax = chart.axes[0]
        gids = {line.get_gid() for line in ax.get_lines() if (line.get_gid() or "").startswith("point:")}
        for p in papers:  # every published system's point, on the run's rows: the Avg. beside the Avg.
            assert f"point:paper: {p.model}:valse/{p.config}/paper:acc_r" in gids, p
        assert {f"point:valse_run:valse/{k}/test:acc_r" for k in [*VALSE, "avg"]} <= gids
        rows = [t.get_text() for t in (ax.texts if narrow else ax.get_yticklabels())]  # a phone's: above its row
        assert rows == [*VALSE, "Avg."], rows
        assert text_overlaps(chart) == []
    assert svg_width(out.chart_narrow) * display.MIN_SCALE <= 370
    svg = results.chart_svg(out.chart, out.chart_narrow)
    assert svg.count('data-point="valse_run:valse/avg/test:acc_r"') == 2  # the wide chart and the phone's
    # the papers table: a row per instrument and the Avg., the run's column first (shaded); no column for the
    # Winoground run
    table = out.papers
    assert table.headers[:3] == ["config", "this run: valse_run", "GPT1"] and table.marked == ("this run: valse_run",)
    assert not any("wino_run" in h for h in table.headers)
    assert [r[0] for r in table.rows] == [*VALSE, "Avg."]
    assert table.rows[-1][1] == f"{avg:.1f}" and table.rows[0][1] == "50.0 [40.0, 60.0]"  # a mean has no CI
    assert table.rows[-1][2] == f"{next(p.value for p in papers if p.model == 'GPT1' and p.config == 'avg'):.1f}"
    # the runs: a table each, one row per run and config, no empty row
    assert [t.label for t in out.runs] == ["valse: valse_run (%)", "winoground: wino_run (%)"]
    assert out.runs[0].rows == [["all (pooled)", "60.0 [50.0, 70.0]", 220, 1]]
    assert all(any(str(c).strip() for c in r[1:]) for t in out.runs for r in t.rows)
    assert {r[0] for r in out.rows} == {"valse_run", "wino_run"} and out.headers == results.RUN_HEADERS


def test_a_runs_na_and_incomplete_aggregate_are_said_in_the_table_and_on_the_chart(tmp_path):
    """Instruments whose every item tied: "N/A¹" cells (the reason once, under the table) and "N/A" in words on
    their chart rows, never a point at 0; the Avg. over them is N/A, naming them. A missing instrument: the Avg.
    over the other 10, marked, with the note that it is not the paper's Avg."""
    path = _upload(tmp_path, "c" * 64, valse_all_doc(na=("relations", "foil_it")), name="tied.json")
    out = results.compare_results([path], include_papers=True)
    cells = {r[0]: r[1] for r in out.papers.rows}
    assert cells["relations"] == cells["foil_it"] == "N/A¹" and cells["Avg."] == "N/A²"
    assert out.papers.notes[-2:] == ["¹ N/A: every item tied: texts the model reads as the same token ids",
                                     "² Avg.: N/A, as relations, foil_it are"]
    na = [t for t in out.chart.axes[0].texts if t.get_text() == "N/A"]
    assert len(na) == 3  # relations, foil_it, Avg.
    drawn = {line.get_gid() for line in out.chart.axes[0].get_lines()}
    assert "point:tied:valse/relations/test:acc_r" not in drawn and "point:tied:valse/avg/test:acc_r" not in drawn
    path = _upload(tmp_path, "d" * 64, valse_all_doc(missing=("coreference_clean",)), name="ten.json")
    out = results.compare_results([path], include_papers=True)
    avg = next(r for r in out.papers.rows if r[0] == "Avg.")[1]
    assert avg.endswith("¹") and display.NUMBER.match(avg), avg
    assert "¹ Avg. over 10 of 11 instruments (missing: coreference_clean): not the paper's Avg." in out.papers.notes


def test_figures_published_for_the_runs_checkpoint_are_a_row_each_with_the_difference(tmp_path):
    """A run of a checkpoint with published figures (openai/clip-vit-base-patch32: ViT-B-32/openai, which the
    vl_compo study scored on VALSE): its summary's published rows (SummaryBlock.published), one table row each: the
    source, the config or Avg., the metric, the published figure, the run's, the difference (N/A where every item
    tied), the known causes; checked against the figures read straight from vlprobe/data/published.csv, the Avg.
    their unweighted mean; and a point beside the run's on the chart on each row."""
    from vlprobe.results.published import published_for

    path = _upload(tmp_path, "e" * 64, valse_all_doc(model="openai/clip-vit-base-patch32", na=("relations",)),
                   name="checkpoint.json")
    out = results.compare_results([path], include_papers=True)
    table = out.published
    assert table.headers == ["source", "config", "metric", "published", "this run", "difference", "known causes"]
    figures = {f.config: f.value for f in published_for("openai/clip-vit-base-patch32", "valse") if f.metric == "acc_r"}
    assert set(figures) == set(VALSE)
    mine = {k: 50 + 2 * i for i, k in enumerate(VALSE)}  # valse_all_doc's per-tag acc_r, in %
    expected = [["the study (Oh et al. 2024)", k, "acc_r", f"{figures[k]:.1f}"]
                + (["N/A", ""] if k == "relations" else [f"{mine[k]:.1f}", f"{mine[k] - figures[k]:+.1f}"])
                for k in VALSE]
    expected.append(["the study (Oh et al. 2024)", "Avg.", "acc_r", f"{sum(figures.values()) / 11:.1f}", "N/A", ""])
    assert [r[:6] for r in table.rows] == expected
    assert table.rows[0][6].startswith("measured on 505 items against 20")  # the known causes, the summary's words
    gids = {line.get_gid() for line in out.chart.axes[0].get_lines()}
    assert {f"point:published: the study (Oh et al. 2024):valse/{k}/published:acc_r" for k in VALSE} <= gids
    assert "point:published: the study (Oh et al. 2024):valse/avg/published:acc_r" in gids
    plain = results.compare_results([_upload(tmp_path, "f" * 64, valse_all_doc(), name="mini.json")])
    assert plain.published is None  # mini-clip: no checkpoint with published figures
