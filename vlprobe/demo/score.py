"""The Score tab: one item typed or uploaded by a visitor, scored by vlprobe's engine and judged by its metric."""

from __future__ import annotations

import difflib
import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..benchmarks import AUTHORS
from ..dataset.items import Item
from ..results import pct
from ..results.schema import Metrics, dump, parse
from .display import figure
from .models import MODELS, ModelCache
from .settings import MAX_PIXELS, MAX_TEXT_CHARS, MAX_TEXTS, Settings, SpaceError, max_upload_bytes
from .uploads import upload_path

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from PIL.Image import Image

    from ..results import ScoredItem

SCORE_NOTE = ("Scores are the model's image-text logits (higher: a better match); margin: the lowest true "
              "caption's score minus this foil's (above 0: the model prefers the caption).")


# ---- inputs -------------------------------------------------------------------------------------

def load_upload(path: object, label: str = "image") -> Image | None:
    """Open an uploaded file as an RGB PIL image, refusing files that are too large or not images."""
    from PIL import Image, UnidentifiedImageError

    if path is None or path == "":
        return None
    if isinstance(path, Image.Image):
        image = path
    else:
        p = upload_path(path, label)  # gradio FileData-like, or a path
        if not p.is_file():
            raise SpaceError(f"{label}: the uploaded file is missing on the server; upload it again")
        size, limit = p.stat().st_size, max_upload_bytes()
        if size > limit:
            raise SpaceError(f"{label}: the file is {size / 1e6:.1f} MB; this Space accepts images up to "
                             f"{limit // (1024 * 1024)} MB")
        try:
            with Image.open(p) as im:
                if im.size[0] * im.size[1] > MAX_PIXELS:
                    raise SpaceError(f"{label}: {im.size[0]}x{im.size[1]} pixels is too large for this Space")
                im.load()
                image = im.copy()
        except SpaceError:
            raise
        except (UnidentifiedImageError, OSError, SyntaxError, ValueError, Image.DecompressionBombError):
            raise SpaceError(f"{label}: {p.name!r} is not an image (use PNG, JPEG or WebP)") from None
    return image if image.mode == "RGB" else image.convert("RGB")


@dataclass
class ScoreRequest:
    images: list[Any]
    captions: list[str]
    foils: list[str]

    def item(self) -> Item:
        """The item: the captions, then the foils; with one image every caption is gold, with two caption ``k``
        describes image ``k`` (Winoground's 2 x 2) and a foil neither."""
        m, texts = len(self.images), self.captions + self.foils
        gold = np.zeros((m, len(texts)), dtype=bool)
        if m == 1:
            gold[0, : len(self.captions)] = True
        else:
            for k in range(m):
                gold[k, k] = True
        return Item(id="space", images=tuple(self.images), texts=tuple(texts), gold=gold)


def make_request(image_1: object, image_2: object, captions: str, foils: str) -> ScoreRequest:
    """Check the inputs of the Score tab and build the request; errors say what to change."""
    images = [im for im in (load_upload(image_1, "Image 1"), load_upload(image_2, "Image 2")) if im is not None]
    if not images:
        raise SpaceError("upload an image first (or two, for a Winoground-style item), or pick an example")
    caps, fls = ([line.strip() for line in (box or "").splitlines() if line.strip()] for box in (captions, foils))
    texts = caps + fls
    for line in texts:
        if len(line) > MAX_TEXT_CHARS:
            raise SpaceError(f"the text {line[:40]!r}... is longer than {MAX_TEXT_CHARS} characters")
    if len(texts) > MAX_TEXTS:
        raise SpaceError(f"{len(texts)} texts is more than this Space scores at once ({MAX_TEXTS})")
    if not caps:
        raise SpaceError("type the true caption (one per line)")
    if len(images) == 1 and not fls:
        raise SpaceError("type at least one foil (one per line): a verdict compares the caption with foils")
    if len(images) == 2 and len(caps) != 2:
        raise SpaceError("with two images, type exactly two captions, one per line: the first describes image 1, "
                         f"the second image 2 (got {len(caps)})")
    dupes = sorted({t for t in texts if texts.count(t) > 1})
    if dupes:
        raise SpaceError(f"the same text appears twice: {dupes[0]!r}; every caption and foil must differ")
    return ScoreRequest(images=images, captions=caps, foils=fls)


# ---- verdicts -----------------------------------------------------------------------------------

def item_shape(m: int, n_gold: int, n: int) -> str:
    """'pairwise' (1 image, caption vs foil), 'group' (2 images) or 'set' (1 image, more texts)."""
    if m >= 2:
        return "group"
    return "pairwise" if n == 2 and n_gold == 1 else "set"


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{pct(x, 0)}%"


TIE_POLICY_WORDS = {"strict": "counted as wrong", "half": "counted as half right", "lenient": "counted as right"}
TIE_POLICY_NOTE = {"strict": ", as the papers count it", "half": " (a coin toss, on average)",
                   "lenient": "; the papers count a tie as wrong"}


def tie_words(ties: str) -> str:
    """How the tie policy counts a tie: "counted as wrong under the strict policy, as the papers count it"."""
    return f"{TIE_POLICY_WORDS[ties]} under the {ties} policy{TIE_POLICY_NOTE[ties]}"


def check_ties(ties: str | None, authors: bool = False) -> str:
    """The tie policy box, checked; ``authors``: "authors" (the benchmark's authors' rule) is a choice and the default."""
    ties = (ties or (AUTHORS if authors else "strict")).strip()
    if ties not in TIE_POLICY_WORDS and not (authors and ties == AUTHORS):
        raise SpaceError(f"A tie counts as: {ties!r} is not a tie policy; choose {'authors, ' if authors else ''}"
                         f"strict, half or lenient")
    return ties


def metrics_of(result: Metrics | dict[str, Any]) -> Metrics:
    """The metric module's result on an item as its record (:class:`vlprobe.results.schema.Metrics`)."""
    return result if isinstance(result, Metrics) else parse(Metrics, dump(result), "metrics")


def verdict_kind(shape: str, result: Metrics | dict[str, Any], tied: bool = False) -> str:
    """'right', 'wrong', 'mixed' or 'tie' (every comparison tied): the colour of the verdict."""
    m = metrics_of(result)
    if tied:
        return "tie"
    if shape == "pairwise":
        return "right" if m.value("acc_r") == 1 else "wrong"
    if shape == "group":
        if m.value("group") == 1:
            return "right"
        return "mixed" if m.value("text") == 1 or m.value("image") == 1 else "wrong"
    if m.value("set_acc") == 1:
        return "right"
    return "wrong" if m.value("set_error") == 1 else "mixed"


def verdict_text(shape: str, result: Metrics | dict[str, Any], item: Item | None = None, S: np.ndarray | None = None,
                 ties: str = "strict") -> str:
    """The verdict from the metric's result on the item: TIE when every comparison tied, saying how ``ties`` counts
    it; for a group item with its scores, which comparisons failed; the number of ties."""
    result = metrics_of(result)
    points = comparisons(item, np.asarray(S, dtype=np.float64)) if item is not None and S is not None else []
    n_tied = sum(1 for _, v in points if v == 0) if points else int(result.n_ties or 0)
    if points and n_tied == len(points):
        return _tie_verdict(shape, result, S, ties)
    line = _verdict(shape, result)
    if shape == "group" and points and verdict_kind(shape, result) != "right":
        failed = failed_comparisons(item, np.asarray(S, dtype=np.float64))
        right = sum(1 for _, v in points if v > 0)
        line += (f". Failed: {'; '.join(failed)}" if failed else "") + f" ({right} of {len(points)} comparisons right)"
    if n_tied:
        line += (f"; {n_tied} tied comparison{'s' if n_tied > 1 else ''} (exactly equal scores), "
                 f"{'each ' if n_tied > 1 else ''}{tie_words(ties)}")
    return line


def _tie_verdict(shape: str, result: Metrics, S: np.ndarray | None, ties: str) -> str:
    score = float(np.asarray(S, dtype=np.float64).flat[0])
    if shape == "pairwise":
        what = f"the caption and the foil score exactly the same ({score:.3f} each)"
        value = f"pairwise, VALSE acc_r = {_pct(result.value('acc_r'))}"
    elif shape == "group":
        what = f"all four image-caption scores are exactly equal ({score:.3f})"
        value = f"group, Winoground: text {_pct(result.value('text'))}, image {_pct(result.value('image'))}, " \
                f"group {_pct(result.value('group'))}"
    else:
        what = f"every caption and every foil score exactly the same ({score:.3f} each)"
        value = f"set, BLA: pairwise acc_r {_pct(result.value('acc_r'))}"
    return f"TIE: {what}; a tie is {tie_words(ties)} ({value})"


def _verdict(shape: str, result: Metrics) -> str:
    if shape == "pairwise":
        return ("CORRECT: the caption scores higher than the foil (pairwise, VALSE acc_r = 100%)"
                if result.value("acc_r") == 1 else
                "WRONG: the foil scores at least as high as the caption (pairwise, VALSE acc_r = 0%)")
    if shape == "group":
        parts = {k: result.value(k) for k in ("text", "image", "group")}
        head = {"right": "CORRECT: each image prefers its own caption and each caption its own image",
                "mixed": ("PARTLY RIGHT: each image prefers its own caption, but not each caption its own image"
                          if result.value("text") == 1 else
                          "PARTLY RIGHT: each caption prefers its own image, but not each image its own caption"),
                "wrong": ("WRONG: not every image prefers its own caption (text), and not every caption "
                          "its own image (image)")}[verdict_kind(shape, result)]
        marks = ", ".join(f"{k} {'✓' if v == 1 else '✗'}" for k, v in parts.items() if v is not None)
        return f"{head} (group, Winoground: {marks})"
    kind = verdict_kind(shape, result)
    if kind == "right":
        return "CORRECT: every caption scores higher than every foil (set, BLA set accuracy = 100%)"
    if kind == "wrong":
        return "WRONG: every foil scores at least as high as every caption (set, BLA set error = 100%)"
    return (f"MIXED: some foils outscore a caption (set, BLA: pairwise acc_r {_pct(result.value('acc_r'))}, "
            f"sentence accuracy {_pct(result.value('sentence_acc'))})")


# ---- where the texts differ ---------------------------------------------------------------------

def word_diff(caption: str, foil: str, labels: tuple[str, str] = ("caption", "foil")
              ) -> tuple[list[tuple[str, str | None]], list[tuple[str, str | None]]]:
    """(caption words, foil words), each labelled ``labels[0]`` / ``labels[1]`` where the other text lacks it."""
    a, b = caption.split(), foil.split()
    left: list[tuple[str, str | None]] = []
    right: list[tuple[str, str | None]] = []
    matcher = difflib.SequenceMatcher(a=[w.lower() for w in a], b=[w.lower() for w in b], autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        label_a, label_b = (None, None) if op == "equal" else labels
        left.extend((w, label_a) for w in a[i1:i2])
        right.extend((w, label_b) for w in b[j1:j2])
    return left, right


def _diff_pairs(request: ScoreRequest) -> list[tuple[str, str, str, str, tuple[str, str]]]:
    if len(request.images) >= 2:
        c1, c2 = request.captions[:2]
        return [("caption 1", c1, "caption 2", c2, ("caption 1", "caption 2"))] + [
            ("caption 1", c1, f"foil {k}", foil, ("caption", "foil")) for k, foil in enumerate(request.foils, 1)]
    pairs = []
    for k, foil in enumerate(request.foils, 1):
        for c, cap in enumerate(request.captions, 1):
            name = "caption" if len(request.captions) == 1 else f"caption {c}"
            pairs.append((name, cap, "foil" if len(request.foils) == 1 else f"foil {k}", foil, ("caption", "foil")))
    return pairs


def highlight(request: ScoreRequest) -> list[tuple[str, str | None]]:
    """HighlightedText value: each caption and foil with their differing words marked."""
    out: list[tuple[str, str | None]] = []
    for name_a, a, name_b, b, labels in _diff_pairs(request):
        left, right = word_diff(a, b, labels)
        for name, tokens in ((name_a, left), (name_b, right)):
            out.append((f"{name}: ", None))
            out.extend((w + " ", lab) for w, lab in tokens)
            out.append(("\n", None))
    return out


# dark enough for the chips' white text (WCAG AA, 4.5:1 or more): green-800, red-700, blue-700
DIFF_COLORS = {"caption": "#1a7f37", "foil": "#b91c1c", "caption 1": "#1a7f37", "caption 2": "#1d4ed8"}


# ---- the table and the chart --------------------------------------------------------------------

def gaps(S: np.ndarray, G: np.ndarray) -> list[tuple[int, int, bool, float]]:
    """Each comparison the metric makes as (image, text, by caption column, true score minus wrong score): per image
    row its lowest caption against each other text; with several images, per caption column too."""
    S, G = np.asarray(S, dtype=np.float64), np.asarray(G, dtype=bool)
    out = []
    for i in range(G.shape[0]):
        if G[i].any():
            low = S[i, G[i]].min()
            out += [(i, int(j), False, float(low - S[i, j])) for j in np.flatnonzero(~G[i])]
    if G.shape[0] > 1:
        for j in range(G.shape[1]):
            if G[:, j].any():
                low = S[G[:, j], j].min()
                out += [(int(i), j, True, float(low - S[i, j])) for i in np.flatnonzero(~G[:, j])]
    return out


def comparisons(item: Item, S: np.ndarray) -> list[tuple[str, float]]:
    """(label, true score minus wrong score) for each comparison the metric makes (:func:`gaps`)."""
    many = len(item.gold) > 1
    return [(f"caption {j + 1}: its image − image {i + 1}" if column else
             f"image {i + 1}: its caption − “{item.texts[j]}”" if many else f"caption − “{item.texts[j]}”", v)
            for i, j, column, v in gaps(S, item.gold)]


def failed_comparisons(item: Item, S: np.ndarray) -> list[str]:
    """A group item's wrong comparisons in words ("image 1 prefers caption 2"); ties are not listed."""
    G = np.asarray(item.gold, dtype=bool)
    own = {int(np.flatnonzero(G[:, j])[0]): j for j in range(item.n) if G[:, j].any()}  # image -> its caption
    name = {j: f"caption {j + 1}" if G[:, j].any() else f"foil “{item.texts[j]}”" for j in range(item.n)}
    out = []
    for i in range(item.m):
        if G[i].any():
            low = S[i, G[i]].min()
            out += [f"image {i + 1} prefers {name[j]}" for j in np.flatnonzero(~G[i]) if S[i, j] > low]
    for i, j in own.items():
        out += [f"caption {j + 1} prefers image {k + 1}" for k in range(item.m) if k != i and S[k, j] > S[i, j]]
    return out


def table(item: Item | ScoredItem, S: np.ndarray, probs: np.ndarray | None) -> tuple[list[str], list[list[Any]]]:
    """(headers, rows): text, role, score, a foil's margin, and the probability when the model gives one."""
    G = np.asarray(item.gold, dtype=bool)
    m = G.shape[0]
    headers = ["text", "role", "score", "margin"] + (["probability"] if probs is not None else [])
    rows = []
    for i in range(m):
        low = S[i, G[i]].min() if G[i].any() else None
        for j, text in enumerate(item.texts):
            role = ("caption" if G[i, j] else "foil") + (f", image {i + 1}" if m > 1 else "")
            margin = "" if G[i, j] or low is None else round(float(low - S[i, j]), 3)
            row = [text, role, round(float(S[i, j]), 3), margin]
            rows.append(row + ([round(float(probs[i, j]), 3)] if probs is not None else []))
    return headers, rows


CHART_BARS = 8  # the margin chart shows at most this many comparisons: the lowest margins
LABEL_CHARS = 36  # a label's line, in characters; a label has at most two lines (one when bars are many)


def bounded_label(label: str, lines: int) -> list[str]:
    """A chart label wrapped to LABEL_CHARS a line, at most ``lines`` lines, the rest cut to "…" (its quote kept)."""
    wrapped = textwrap.wrap(label, LABEL_CHARS) or [""]
    if len(wrapped) <= lines:
        return wrapped
    close = "”" if label.endswith("”") else ""
    return wrapped[: lines - 1] + [wrapped[lines - 1][: LABEL_CHARS - 1 - len(close)].rstrip() + "…" + close]


def margin_chart(points: Sequence[tuple[str, float]]) -> Figure:
    """Horizontal bars of the margins, each under its own label of at most two lines (a long text never squeezes the
    bars); at most CHART_BARS, the lowest, said in the title when some are left out."""
    from matplotlib.ticker import MaxNLocator
    from matplotlib.transforms import blended_transform_factory

    shown = list(points)
    if len(shown) > CHART_BARS:  # the lowest margins, in their own order
        keep = set(sorted(range(len(shown)), key=lambda k: (shown[k][1], k))[:CHART_BARS])
        shown = [p for k, p in enumerate(shown) if k in keep]
    values = np.array([v for _, v in shown], dtype=float)
    compact = len(shown) > 3
    wrapped = [bounded_label(label, 1 if compact else 2) for label, _ in shown]
    line = 1.0  # one text line, in data units; a bar is 1 unit high
    gap = 0.95 if compact else 1.1  # from a label to its bar, and from a bar to the next label
    total = sum(len(w) * line + 2 * gap - 0.05 for w in wrapped)
    span = float(np.abs(values).max()) if len(values) and np.abs(values).max() > 0 else 1.0
    height = 0.9 + (0.2 if compact else 0.24) * total + (0.3 if len(shown) < len(points) else 0)
    with figure(4.5, height, layout=None) as (fig, (ax,)):
        where = blended_transform_factory(ax.transAxes, ax.transData)
        y = y_bar = 0.0
        for lines, v in zip(wrapped, values):
            ax.text(0.0, y, "\n".join(lines), va="top", ha="left", transform=where, linespacing=1.15,
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.0})  # the zero line stays behind
            y_bar = y - len(lines) * line - gap  # the bar (and its value) a clear line below its label
            if v == 0:
                ax.plot([0], [y_bar], marker="D", color="#6b7280", markersize=7)
                ax.annotate("0 (tie)", (0, y_bar), xytext=(9, 0), textcoords="offset points", va="center", ha="left",
                            gid="tie-label")  # its left edge 9 pt right of the zero line, never on it
            else:
                ax.barh([y_bar], [v], height=0.8, color="#2ca02c" if v > 0 else "#d62728")
                ax.text(v, y_bar, f" {v:+.3f} ", va="center", ha="left" if v >= 0 else "right")
            y = y_bar - gap + 0.05
        ax.axvline(0, color="black", linewidth=1, gid="zero-line")
        ax.set_ylim(y_bar - 0.45, 0.15)  # the last bar (0.8 high) whole
        ax.set_xlim(-1.8 * span, 1.8 * span)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=4, symmetric=True))  # few ticks: their labels never touch
        ax.ticklabel_format(axis="x", style="plain", useOffset=False)
        ax.set_yticks([])
        for side in ("left", "right", "top"):
            ax.spines[side].set_visible(False)
        ax.set_xlabel("margin: true score − wrong score\n(above 0: right; 0: a tie)")
        if len(shown) < len(points):
            ax.set_title(f"the {len(shown)} lowest of {len(points)} margins\n(the table has every text)", loc="left")
        fig.tight_layout()
    return fig


def unknown_words(scorer: object, texts: Sequence[str]) -> list[str]:
    """The words of ``texts`` the scorer's tokenizer reads only as its unknown token (a word-level vocabulary's)."""
    tok = getattr(scorer, "tokenizer", None)
    unk = getattr(tok, "unk_token_id", None)
    if tok is None or unk is None:
        return []
    words = list(dict.fromkeys(w.strip(".,;:!?\"'()").lower() for t in texts for w in t.split()))
    out = []
    for w in (w for w in words if w):
        try:
            ids = tok(w, add_special_tokens=False).input_ids
        except Exception:  # noqa: BLE001  (a tokenizer that cannot say: no note)
            return []
        if unk in ids:
            out.append(w)
    return out


def unknown_note(words: Sequence[str]) -> str:
    if not words:
        return ""
    shown = ", ".join(f"“{w}”" for w in words[:8]) + (f" and {len(words) - 8} more" if len(words) > 8 else "")
    return (f"Note: this model does not know {shown}: it reads each as the same unknown word, so texts that "
            "differ only there get the same score.")


@dataclass
class ScoreOutcome:
    shape: str
    kind: str  # right / wrong / mixed
    verdict: str
    headers: list[str]
    table: list[list[Any]]
    chart: Any  # a matplotlib Figure of the margins
    highlights: list[tuple[str, str | None]]
    metrics: dict
    scores: np.ndarray
    note: str
    item: Item | None = None


def score(settings: Settings, image_1: object, image_2: object, captions: str, foils: str, model: str | None,
          cache: ModelCache | None = None, ties: str | None = "strict") -> ScoreOutcome:
    """The Score tab: one item, scored by the engine, judged by the metric with the tie policy ``ties``."""
    from ..dataset.images import ImageError
    from ..metric import compute
    from ..scoring.engine import EngineOutOfMemory, score_items

    ties = check_ties(ties)
    request = make_request(image_1, image_2, captions, foils)
    item = request.item()
    scorer = (cache or MODELS).get(settings.resolve_model(model))
    try:
        result = score_items(scorer, [item], num_workers=0, cache=None, progress=False)
    except ImageError as err:
        raise SpaceError(str(err)) from None
    except EngineOutOfMemory as err:
        raise SpaceError(f"the model ran out of memory: {err}") from None
    S = np.asarray(result.scores[0], dtype=np.float64)
    probs = np.asarray(result.probabilities[0]) if result.probabilities else None
    metrics = compute([S], [item.gold.astype(int)], ties=ties, **({} if probs is None else {"probabilities": [probs]}))
    shape = item_shape(item.m, int(item.gold.sum()), item.n)
    headers, rows = table(item, S, probs)
    note = SCORE_NOTE + (" Probability: the model's own probability that the text matches." if probs is not None else "")
    points = comparisons(item, S)
    tied = bool(points) and all(v == 0 for _, v in points)
    verdict = verdict_text(shape, metrics, item, S, ties)
    note_unknown = unknown_note(unknown_words(scorer, item.texts))
    if note_unknown:
        verdict += "\n\n" + note_unknown
    return ScoreOutcome(shape=shape, kind=verdict_kind(shape, metrics, tied), verdict=verdict,
                        headers=headers, table=rows, chart=margin_chart(points),
                        highlights=highlight(request), metrics=dump(metrics), scores=S, note=note,
                        item=item)
