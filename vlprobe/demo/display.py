"""The page's tables and charts: HTML tables (Gradio's Dataframe cuts values and breaks numbers mid-word on a phone)
and matplotlib charts as SVG with their text kept as text, which the browser draws with its own font fallback."""

from __future__ import annotations

import html
import io
import math
import re
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator, Sequence

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

CHART_FONT_SIZE = 13.0  # in the figure's points; drawn at >= 85% of that, so never under 11 px
MIN_SCALE = 0.85
# fonts the layout measures with, where installed (space/packages.txt); the browser draws the glyphs either way
LAYOUT_FONTS = ("DejaVu Sans", "Noto Sans CJK JP", "Noto Sans CJK SC", "Noto Sans", "Symbola")

CSS = """
.vt-wrap { overflow-x: auto; max-width: 100%; -webkit-overflow-scrolling: touch; }
.vt-wrap.vt-tall { max-height: 340px; overflow-y: auto; }
.vt-label { font-size: 0.9em; font-weight: 600; margin: 4px 0 2px; color: #374151; }
.vt-note { font-size: 0.85em; margin: 3px 0 0; color: #374151; }
table.vt { border-collapse: collapse; font-size: 0.9em; width: auto; min-width: 100%; margin: 0;
  border: 1px solid #d1d5db; }
table.vt th, table.vt td { padding: 3px 8px; border: none; border-bottom: 1px solid #e5e7eb; text-align: left;
  vertical-align: top; white-space: nowrap; word-break: normal; overflow-wrap: normal; hyphens: none; }
table.vt th { background: #f3f4f6; font-weight: 600; position: sticky; top: 0; }
table.vt td.num, table.vt th.num { text-align: right; font-variant-numeric: tabular-nums; }
table.vt td.prose { white-space: normal; min-width: 9em; max-width: 28em; }
table.vt td.prose span.word { white-space: nowrap; }
table.vt td.list { white-space: normal; min-width: 5em; }
table.vt td.list span { white-space: nowrap; }
table.vt th.wrap { white-space: normal; min-width: 4.5em; }
table.vt th.mark { background: #e0e7ff; }
table.vt td.mark { background: #eef2ff; font-weight: 600; }
table.vt th.wrap span.word { white-space: nowrap; }
table.vt .phone { display: none; }  /* a ranged table's range column: a phone's (below) */
/* on a phone: narrower padding and text column, so a 4-column scores table fits 390 px unscrolled; a
   table of cards shows each row as a card, each cell on its own line led by its column's name */
@media (max-width: 640px) {
  table.vt th, table.vt td { padding: 3px 5px; }
  table.vt td.prose { min-width: 7em; }
  table.vt.cards, table.vt.cards tbody, table.vt.cards td { display: block; min-width: 0; }
  table.vt.cards { border: none; }
  table.vt.cards td.mark { background: none; }
  table.vt.cards thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
  table.vt.cards tr { display: flex; flex-wrap: wrap; gap: 0 10px; border: 1px solid #d1d5db; border-radius: 6px;
    margin: 0 0 4px; padding: 2px 7px; }
  table.vt.cards td { border: none; padding: 0 !important; text-align: left; white-space: normal; max-width: none;
    overflow-wrap: anywhere; font-size: 13px !important; line-height: 1.3 !important; }
  table.vt.cards td:first-child, table.vt.cards td.prose, table.vt.cards td.list { flex-basis: 100%; }
  table.vt.cards td::before { content: attr(data-label) ": "; font-weight: 600; color: #374151; }
  table.vt.cards td:first-child { font-weight: 600; }
  table.vt.cards td:empty { display: none; }
  table.vt.cards td.wrap span.word { white-space: nowrap; }  /* a name breaks at its spaces, never at a hyphen */
  table.vt.cards td.num { white-space: nowrap; }  /* a value stays whole; its column's name may wrap before it */
  table.vt.cards td.num::before { white-space: normal; }
  table.vt.cards td:not(:first-child):not(.num) { order: 1; }  /* the numbers first, then the other cells */
  .vt-wrap.vt-tall { max-height: none; }  /* one scroll: the page's (a long list is folded instead) */
  /* a ranged table: the columns summed up by their range leave, the range column comes; a value's CI under it */
  table.vt .wide { display: none; }
  table.vt .phone { display: table-cell; }
  table.vt td.ci, table.vt td.wrap { white-space: normal; }
  table.vt td.wrap { min-width: 6em; }
  table.vt td.wrap span.word { white-space: nowrap; }
  table.vt td.ci span { white-space: nowrap; }
  table.vt td.ci span.ci { display: block; font-size: 0.85em; }
}
.chart-svg { overflow-x: auto; max-width: 100%; }
.chart-svg svg { display: block; height: auto; }
.chart-svg svg text { font-family: "DejaVu Sans", "Noto Sans", "Noto Sans CJK JP", "Noto Sans CJK SC",
  "PingFang SC", "Hiragino Sans", "Microsoft YaHei", system-ui, sans-serif, "Noto Color Emoji",
  "Apple Color Emoji", "Segoe UI Emoji", "Symbola" !important; }
"""


@dataclass
class Table:
    """A table as the page shows it (:func:`html_table`), its HTML id ``<key>-table``; label "": the page names it."""

    key: str
    label: str
    headers: list[str]
    rows: list[list[Any]]
    notes: list[str] = field(default_factory=list)
    wrap: tuple[str, ...] = ()
    marked: tuple[str, ...] = ()  # the columns of the visitor's runs (shaded)
    marked_rows: tuple[int, ...] = ()  # the rows of the visitor's runs
    ranged: tuple[str, ...] = ()  # the published systems' columns, which a phone shows as their range


def fmt(value: object, decimals: int) -> str:
    """A number with exactly ``decimals`` decimals (thousands separated); anything else as text."""
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:,.{decimals}f}"
    return str(value)


# a number (with its CI), "N/A¹": a number's place; either with a footnote's mark
NUMBER = re.compile(r"^(([−+-]?[\d,]*\.?\d+( \[[^\]]*\])?)|N/A)([¹²³⁴⁵⁶⁷⁸⁹]|\[\d+\])?$")


def _whole_words(text: str) -> str:
    """Running text, escaped, wrapping only at spaces: a word with a hyphen, dash or slash is kept whole."""
    return re.sub(r"\S*[-/–]\S*", lambda m: f'<span class="word">{m.group(0)}</span>', html.escape(text))


def html_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, label: str = "", table_id: str = "",
               decimals: int = 3, prose: Sequence[str] = (), lists: Sequence[str] = (), tall: bool = False,
               prose_rows: Sequence[int] = (), notes: Sequence[str] = (), cards: bool = False,
               wrap: Sequence[str] = (), marked: Sequence[str] = (), marked_rows: Sequence[int] = (),
               fold: bool = False, ranged: tuple[str, Sequence[str]] = ("", ())) -> str:
    """An HTML table whose numbers (``decimals`` decimals) never break. Columns in ``prose`` (rows in ``prose_rows``)
    wrap at spaces, hyphenated words kept whole; in ``lists`` each comma-separated value stays whole; headers in
    ``wrap`` (runs' and systems' names) wrap at spaces; ``marked`` columns and ``marked_rows`` (the visitor's runs)
    are shaded; ``notes`` go under it. ``cards``: on a phone each row is a card, its first cell, then its numbers,
    then the rest, each led by its column's name. ``fold``: in a ``<details class="vt-fold">`` opened by its label.
    ``ranged`` (a label, columns): on a phone those columns show as one lowest–highest column of that label."""
    esc = html.escape
    cells = []
    label_range, in_range = ranged
    for r, row in enumerate(rows):
        out = []
        for h, v in zip(headers, row, strict=False):
            text = fmt(v, decimals)
            named = f' data-label="{esc(str(h))}"' if cards else ""
            mark = (" mark" if h in marked or r in marked_rows else "") + (" wide" if h in in_range else "")
            if h in prose or (r in prose_rows and text and not NUMBER.match(text)):
                out.append(f'<td class="prose{mark}"{named}>{_whole_words(text)}</td>')
            elif h in wrap and text and not NUMBER.match(text):  # a run's or system's name: in a card, wraps at spaces
                out.append(f'<td class="wrap{mark}"{named}>{_whole_words(text)}</td>')
            elif h in lists:
                parts = [p for p in text.split(", ") if p]
                out.append(f'<td class="list{mark}"{named}>' + ", ".join(f"<span>{esc(p)}</span>" for p in parts)
                           + "</td>")
            elif " [" in text and NUMBER.match(text):  # a value and its CI, each kept whole
                value, ci = text.split(" ", 1)
                out.append(f'<td class="num ci{mark}"{named}><span>{esc(value)}</span> <span class="ci">{esc(ci)}</span></td>')
            elif isinstance(v, (int, float)) and not isinstance(v, bool) or NUMBER.match(text):
                out.append(f'<td class="num{mark}"{named}>{esc(text)}</td>')
            else:
                out.append(f'<td{f" class={mark.strip()}" if mark else ""}{named}>{esc(text)}</td>')
        if in_range:
            found = [float(t.replace(",", "")) for h, v in zip(headers, row, strict=False) if h in in_range
                     and (t := fmt(v, decimals)) and re.fullmatch(r"[+-]?[\d,]*\.?\d+", t)]
            span = f"{min(found):.{decimals}f}–{max(found):.{decimals}f}" if found else ""
            out.append(f'<td class="num phone"{named}>{span}</td>')
        cells.append("<tr>" + "".join(out) + "</tr>")
    numeric = [bool(rows) and all(isinstance(r[k], (int, float)) or NUMBER.match(fmt(r[k], decimals)) or r[k] in ("", None)
                                  for r in rows) for k in range(len(headers))]

    def th(k: int, h: str) -> str:
        kinds = " ".join(c for c, on in (("wrap", h in wrap), ("num", numeric[k]), ("mark", h in marked),
                                         ("wide", h in in_range)) if on)
        kind = f' class="{kinds}"' if kinds else ""
        return f'<th scope="col"{kind}>' + (_whole_words(str(h)) if h in wrap else esc(str(h))) + "</th>"

    head = "".join(th(k, h) for k, h in enumerate(headers))
    if in_range:
        head += f'<th scope="col" class="num phone wrap">{_whole_words(label_range)}</th>'
    name = esc(label or "table")
    ident = f' id="{esc(table_id)}"' if table_id else ""
    body = (f'<div class="vt-wrap{" vt-tall" if tall else ""}" role="region" aria-label="{name}" tabindex="0">'
            f'<table class="vt{" cards" if cards else ""}"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(cells)}</tbody></table></div>'
            + "".join(f'<p class="vt-note">{esc(n)}</p>' for n in notes))
    if fold:
        return (f'<div class="vt-outer"{ident}><details class="vt-fold" open><summary class="vt-label">{esc(label)} '
                f'<span class="vt-count">({len(rows)} row{"s" if len(rows) != 1 else ""})</span></summary>'
                f'{body}</details></div>')
    return (f'<div class="vt-outer"{ident}>' + (f'<div class="vt-label">{esc(label)}</div>' if label else "")
            + body + "</div>")


def message_table(label: str, text: str, table_id: str = "") -> str:
    """An empty table's place: its label and what will fill it."""
    ident = f' id="{html.escape(table_id)}"' if table_id else ""
    return (f'<div class="vt-outer"{ident}><div class="vt-label">{html.escape(label)}</div>'
            f'<p class="vt-empty">{html.escape(text)}</p></div>')


@contextmanager
def figure(width: float, height: float, ratios: Sequence[int] = (1,),
           layout: str | None = "constrained") -> Iterator[tuple[Figure, list[Axes]]]:
    """A figure of stacked axes (``ratios`` their heights) in the page's chart fonts, closed after the block."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import font_manager

    installed = {f.name for f in font_manager.fontManager.ttflist}
    sizes = ("font.size", "axes.titlesize", "axes.labelsize", "xtick.labelsize", "ytick.labelsize", "legend.fontsize")
    rc: dict = {"font.family": [f for f in LAYOUT_FONTS if f in installed] or ["DejaVu Sans"],
            **dict.fromkeys(sizes, CHART_FONT_SIZE)}
    with matplotlib.rc_context(rc):
        fig, axes = plt.subplots(len(ratios), 1, figsize=(width, height), dpi=100, layout=layout, sharex=True,
                                 squeeze=False, gridspec_kw={"height_ratios": list(ratios)})
        yield fig, [a for (a,) in axes]
    plt.close(fig)


def svg(fig: Figure, description: str, chart_id: str = "") -> str:
    """The figure as inline SVG, its text kept as text; ``description`` is what a screen reader says."""
    import matplotlib

    buf = io.StringIO()
    with warnings.catch_warnings(), matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "vlprobe"}):
        warnings.simplefilter("ignore", UserWarning)  # glyphs DejaVu lacks: the browser draws them
        fig.savefig(buf, format="svg", bbox_inches="tight", pad_inches=0.08, metadata={"Date": None})
    text = buf.getvalue()
    text = text[text.find("<svg"):]
    width_pt = float(re.search(r'<svg[^>]*\bwidth="([\d.]+)pt"', text).group(1))
    # the page's CSS px equal the figure's points at scale 1; keep >= MIN_SCALE, grow to 1.4
    style = f"width:100%;min-width:{MIN_SCALE * width_pt:.0f}px;max-width:{1.4 * width_pt:.0f}px"
    text = re.sub(r'<svg([^>]*?)\swidth="[\d.]+pt"\s+height="[\d.]+pt"',
                  lambda m: f'<svg{m.group(1)} style="{style}" role="img" aria-label="{html.escape(description)}"',
                  text, count=1)
    text = re.sub(r"(<svg[^>]*>)", lambda m: m.group(1) + f"<title>{html.escape(description)}</title>", text, count=1)
    text = re.sub(r'<g id="(point|plot):([^"]+)"', r'<g data-\1="\2"', text)  # a chart's points and plot areas
    ident = f' id="{html.escape(chart_id)}"' if chart_id else ""
    return f'<div class="chart-svg"{ident}>{text}</div>'
