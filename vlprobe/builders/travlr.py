"""``vlprobe build travlr``: TraVLR's four tasks, generated and rendered offline, as a Hub dataset
folder (``travlr/``: 4 configs x 4 splits of parquet with embedded PNGs, card, ``vlprobe.yaml`` and
``true_false.yaml``, the two framings).

The generators and split rules are in :mod:`vlprobe.scenes.travlr`; this module only renders the
scenes, writes the rows and the card. Same seed and size give byte-identical parquet with the same
Pillow/zlib/pyarrow (pixels are identical with any version).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import datasets

from ..dataset_folder import ConfigDecl, card_metadata, write_card
from ..scenes import travlr as gen
from .synthetic import RateMeter, parse_names, parse_split_sizes, write_rows

NAME = "travlr"
HELP = "TraVLR's 4 tasks (spatiality, cardinality, quantifiers, numerical_comparison) rendered offline"
DEFAULT_OUT = Path("travlr")

FEATURES = datasets.Features({
    "id": datasets.Value("string"),
    "image": datasets.Image(),
    "caption": datasets.Value("string"),
    "query": datasets.Value("string"),
    "foil_query": datasets.Value("string"),
    "label": datasets.Value("bool"),
    "subtype": datasets.Value("string"),
    "objects": datasets.List({
        "shape": datasets.Value("string"),
        "colour": datasets.Value("string"),
        "row": datasets.Value("int8"),
        "column": datasets.Value("int8"),
        "queried": datasets.Value("bool"),
    }),
    "query_form": datasets.Value("string"),
    "foil_form": datasets.Value("string"),
    "case": datasets.Value("string"),
})

SPEC_YAML = """\
# How rows of this folder become vlprobe items (see vlprobe/spec.py): vlprobe's zero-shot adaptation,
# 1 image x 2 texts, the query and its minimal truth-flipping edit; the gold cell is the one whose
# statement is true (pairwise accuracy). The paper's own framing is true_false.yaml.
description: TraVLR (Chow, Tan, Kan, EACL 2023) tasks rendered by vlprobe; query vs its minimal foil.
id: id
images: [image]
texts: [query, foil_query]
gold: {column: label, map: {true: [[1, 0]], false: [[0, 1]]}}
tags: [subtype, label]
context: caption
"""

# The paper's framing, selected with `vlprobe evaluate --spec travlr/true_false.yaml`.
TRUE_FALSE_SPEC = "true_false.yaml"
TRUE_FALSE_YAML = """\
# TraVLR's own framing (see vlprobe/spec.py): 1 image x 1 text, the query, judged true or false of the
# scene; gold [[1]] when it is true, [[0]] when it is false. The paper scores it by macro-F1 (the mean
# of the F1 of the true and of the false class), which needs a match probability (ITM heads, VQAScore
# VLMs, or a probe on frozen features). Use it with:
#   vlprobe evaluate --dataset travlr --spec travlr/true_false.yaml --model ...
description: TraVLR (Chow, Tan, Kan, EACL 2023) tasks rendered by vlprobe; the paper's true/false framing.
id: id
images: [image]
texts: [query]
gold: {column: label, map: {true: [[1]], false: [[0]]}}
tags: [subtype, label]
context: caption
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    from .synthetic import add_out_argument  # ./NAME in a clone, else the user's folder (vlprobe.locations)

    add_out_argument(p, NAME)
    p.add_argument("--size", choices=sorted(gen.SIZES), default="default",
                   help="rows per split (train/validation/test_ind/test_ood): tiny 8/4/4/4, default 2000/200/200/200, "
                        "paper as the paper's Table 3 (spatiality 32000, the others 8000 training rows; "
                        "10000/10000/20000), paper32k 32000/10000/10000/20000 for every task")
    p.add_argument("--split-sizes", default=None, metavar="SPLIT=N,...",
                   help="override some split sizes, e.g. train=1000,test_ood=500")
    p.add_argument("--configs", default="all", help=f"comma-separated subset of {', '.join(gen.TASKS)} (default: all)")
    p.add_argument("--seed", type=int, default=0, help="generation seed (default 0)")
    p.add_argument("--workers", type=int, default=1, help="rendering processes (default 1; 2+ for --size paper)")


def config_decls() -> list[ConfigDecl]:
    return [ConfigDecl(task, FEATURES, splits=gen.SPLITS, default=(task == "spatiality")) for task in gen.TASKS]


def card_text() -> tuple[dict, str]:
    meta = card_metadata(
        config_decls(),
        license="cc-by-4.0",
        pretty_name="TraVLR (vlprobe rendering)",
        language=["en"],
        task_categories=["visual-question-answering"],
        tags=["synthetic", "vision-and-language", "foils", "travlr", "vlprobe"],
    )
    return meta, CARD_BODY


def write_metadata(out: Path) -> None:
    """The card (README.md), vlprobe.yaml and true_false.yaml; identical for every size and seed."""
    meta, body = card_text()
    write_card(out, meta, body)
    (out / "vlprobe.yaml").write_text(SPEC_YAML, encoding="utf-8")
    (out / TRUE_FALSE_SPEC).write_text(TRUE_FALSE_YAML, encoding="utf-8")


def build(args: argparse.Namespace) -> Path:
    out = Path(args.out)
    overrides = parse_split_sizes(args.split_sizes, gen.SPLITS)
    tasks = parse_names(args.configs, gen.TASKS, "config(s)")
    start = time.perf_counter()
    meter = RateMeter()
    write_metadata(out)
    for task in tasks:
        examples = gen.generate_task(task, {**gen.sizes_for(args.size, task), **overrides}, seed=args.seed)
        for split in gen.SPLITS:
            exs = examples[split]
            pngs = meter.render([e.scene for e in exs], workers=args.workers, **gen.RENDER_OPTIONS)
            rows = []
            for i, (ex, png) in enumerate(zip(exs, pngs)):
                row = gen.to_row(ex, i)
                row["image"] = {"bytes": png, "path": None}
                rows.append(row)
            write_rows(out, task, split, rows, FEATURES)
    meter.report(f"travlr ({args.size}, seed {args.seed})", time.perf_counter() - start)
    return out


CARD_BODY = """\
# TraVLR, rendered by vlprobe

Synthetic visio-linguistic reasoning tasks after **TraVLR** (Chow, Tan and Kan, *TraVLR: Now You See
It, Now You Don't! A Bimodal Dataset for Evaluating Visio-Linguistic Reasoning*, EACL 2023,
https://aclanthology.org/2023.eacl-main.242), regenerated from a written specification of the original
generator (`kengjichow/TraVLR`) by vlprobe's own code. **This is not the released TraVLR data**
(that is on Zenodo, record 6563623): scenes, captions and queries follow the same templates and
split rules, but the rows are different draws. Please cite TraVLR when you use it.

Each row is a scene of 2 to 27 coloured shapes on an implicit 6x6 grid, given both as an image
(500x500 PNG) and as a caption that names every object and its cell, plus a yes/no query about it.
Every row also carries `foil_query`, the query's minimal edit with the opposite truth, so each
row is a VALSE-style pair too: one image, one true and one false statement.

## Two framings: the paper's, and vlprobe's zero-shot adaptation

| framing | spec | item | metric | models |
|---|---|---|---|---|
| **TraVLR's own** (matches the paper) | `true_false.yaml` | 1 image x 1 text: the `query`, gold `[[1]]` if `label` else `[[0]]` | macro-F1 of true/false (the mean of the F1 of the true and of the false class, the paper's Appendix B.1), with F1 per class and accuracy | a match probability: ITM heads, VQAScore VLMs, or a probe trained on frozen features |
| **vlprobe's zero-shot adaptation** (the default) | `vlprobe.yaml` | 1 image x 2 texts: `query` and `foil_query`, the true one is gold | pairwise accuracy (is the true statement scored above its minimal false edit) | any scorer, dual encoders included |

```bash
vlprobe evaluate --dataset travlr --spec travlr/true_false.yaml --model Salesforce/blip-itm-base-coco   # the paper's framing
vlprobe evaluate --dataset travlr --model openai/clip-vit-base-patch32                                   # query vs foil
```

Only the true/false framing is comparable to the paper's numbers (which come from models
*trained* on each task, not zero-shot). A dual encoder (CLIP, SigLIP) has
no calibrated probability of "true", so `vlprobe evaluate` refuses it on 1 x 1 items rather than
invent a threshold; score it in the query-vs-foil framing, or train a probe on its frozen features
as the paper's frozen-representation setting does (`vlprobe probe`).

## Configs

| config | the query tests | example query / foil_query | split rule: `test_ood` holds out |
|---|---|---|---|
| `spatiality` (default) | left/right, above/below between two named objects | "The red circle is to the left of the blue square." / "... to the right of ..." | 119 of the 595 object-type pairs (the original's seed-6 shuffle, reproduced) together with column pairs {A,E} {B,D} {C,F} or row pairs {1,3} {2,6} {4,5} |
| `cardinality` | exact counts of a shape | "There are 2 circle objects." / "There are 3 circle objects." | two counts per shape, for the true and the queried count and for every other shape in the scene (the paper splits on the pairs occurring in the scene): square {4,6}, circle {1,5}, triangle {2,6}, star {1,3}, hexagon {2,4}, octagon {3,5}, pentagon {4,6} |
| `quantifiers` | All / Not all / Some of / None of / Only / Not only | "Not all the circle objects are red objects." / "All the circle objects are red objects." | the 7 diagonal (shape, colour) pairs (square-red, circle-blue, triangle-green, star-yellow, hexagon-orange, octagon-purple, pentagon-brown) together with the Table-1 pairs <a, b> in {<1,3>, <1,4>, <1,5>, <2,4>, <4,4>} (the original's seed-1 shuffle, reproduced), see below |
| `numerical_comparison` | more / fewer between two shapes | "There are more circles than squares." / "There are fewer circles than squares." | count pairs with abs(a - b) >= 4 together with 4 of the 21 shape pairs: circle-hexagon, hexagon-octagon, square-star, star-hexagon (ours: `random.Random(6).sample`, since the original drew them unseeded) |

Splits: `train`, `validation` and `test_ind` (in-distribution test) come from the in-distribution
cases, `test_ood` (out-of-distribution test) only from the held-out ones; the original names are
`train`, `val`, `val_test` and `test`. No (scene, query) pair repeats across the splits of a config.
Labels are balanced per split, exactly for an even size, and the true and false rows come in a
seeded random order.

## A fair label distribution

Here fair means that no text alone tells the label: the query's words carry no information about
its truth without the scene, and the scene carries none without the query. Concretely:

- `quantifiers`: the six quantifiers are equally frequent and each is true in exactly half of its
  rows (each of the 12 (quantifier, label) pairs is 1/12 of every split), as in the paper's
  Figures 10 and 11. The (quantifier, label) pair is drawn first, then a scene for the quantifier
  it makes true (the query's own, or its negation when the label is false), see "Quantifier
  pairs" below. (Earlier vlprobe builds drew a scene template first, uniformly, so "None of" was
  true in about 3 of 4 queries and "Some of" in 1 of 4, and the query's words alone predicted the
  label two times in three.)
- `spatiality`: left/right and above/below are half of each split each, and true and false queries
  are drawn from the same scenes' four possible statements.
- `cardinality`: the queried number is the true count or another count of the same split's set,
  so every number is as likely in true as in false queries.
- `numerical_comparison`: "more" and "fewer" are each true half of the time (the counts are drawn
  before the relation).

`tests/test_travlr_shortcuts.py` checks this on every config: a bag-of-words logistic regression
trained on 2,000 training rows' query words alone (true/false, and query vs foil), and one on the
caption alone (ignoring the query), stay at chance (accuracy <= 0.56) on 1,000 rows of `test_ind`
and of `test_ood`. Measured at seed 0:

| config | query only, true/false (InD / OOD) | query vs foil (InD / OOD) | caption only (InD / OOD) |
|---|---|---|---|
| `spatiality` | 0.493 / 0.512 | 0.478 / 0.473 | 0.501 / 0.501 |
| `cardinality` | 0.498 / 0.508 | 0.492 / 0.499 | 0.487 / 0.500 |
| `quantifiers` | 0.483 / 0.475 | 0.500 / 0.500 | 0.507 / 0.496 |
| `numerical_comparison` | 0.498 / 0.510 | 0.505 / 0.489 | 0.500 / 0.498 |

Before the change, the quantifiers' query-only classifier scored 0.667 / 0.649 (true/false and
query vs foil alike).

## Quantifier pairs (the paper's Table 1)

Each row is an instance *for* one quantifier, the one its scene makes true (the paper's Figure 6:
"instance for *not all* quantifier with pair <2, 3>"), and counts three regions of the scene: X n Y
(objects of the queried shape and colour), X \\ Y and Y \\ X. Table 1 names two of them per
quantifier: All <X n Y, Y \\ X>, Not all <X n Y, X \\ Y>, No <X \\ Y, Y \\ X>, Some <X \\ Y, X n Y>,
Only <X n Y, X \\ Y>, Not only <X n Y, Y \\ X>. A row's pair is one of its split's pairs (both numbers
in 1..5, the paper's range): the 20 in-distribution pairs for `train`, `validation` and
`test_ind`, the 5 held-out pairs for `test_ood`. The third region is empty, except that a "Not all"
scene may hold Y \\ X objects (irrelevant to "(Not) all X are Y"): as many as the second number of a
pair of the split starting with the same first number, so the pair of "All" on that scene is also
one of the split's pairs. So the pair of the query's own quantifier is one of its split's pairs
too wherever it has no zero; where the quantifier is false a zero is forced by its definition
("Some X are Y" is false exactly when X n Y is empty), and no pair with a zero is in either set.
Then 2 to 8 further objects (the paper's range; a "Not all" scene's Y \\ X objects count among them)
of any shape but X and any colour but Y. `case` records the quantifier, the pair, the regions and
the companion colour (of X \\ Y) and shape (of Y \\ X).

How this differs from the paper: the original code drew one of three scene templates
((n1, X, Y), (n2, X, Z)), ((n1, X, Y), (n2, Z, Y)) or ((n1, X, Z), (n2, W, Y)) with (n1, n2) from the
split, so the pair of the query's own quantifier was often another one (with the earlier vlprobe
templates 47-79% of `test_ood` rows reused a pair seen in training, and 50-75% of training rows had
a 0 in it); and its distractors avoided the companion colour and shapes. vlprobe also draws each
quantifier row as one of a matched pair of scenes, one true and one false, with the same number of
objects, of distinct colours and of objects of colour Y (see "Cheap cues" below); for "Only" and
"Not only" the number of Y objects is p1 on an "Only" scene and p1 + p2 on a "Not only" one, so
matching it keeps only the pairs where both can give the same number: in-distribution, "Only"
scenes use the 15 pairs with a >= 2 and "Not only" scenes the 8 with a + b <= 5; in `test_ood`,
"Only" scenes use only <4,4> and "Not only" scenes only <1,3> (every such row has 4 Y objects).

## Cheap cues

A second check in `tests/test_travlr_shortcuts.py` trains a logistic regression on statistics a
model can read without relating any two objects, together with the query's words (one-hot, and
every statistic crossed with the query's operator: relation, asked number, quantifier or
more/fewer, plus the statistic the query singles out: the pixels or mentions of the queried colour,
the ink divided or weighted by the queried shapes' areas):

- image: ink pixels, pixels of each colour, distinct colours, objects (occupied cells) and objects
  per row and column, computed from the scene and each shape's pixels as rendered (checked equal to
  the statistics of the rendered images);
- caption: how often each shape, colour, column and row is named, distinct colours, objects, length.

Trained on 2,000 rows and tested on 1,000 rows of each test split at seed 0 (at chance, macro-F1
has sd about 0.016 at this size), it must stay at macro-F1 <= 0.58 on every split. Measured:

| config | image statistics + query (InD / OOD) | caption statistics + query (InD / OOD) |
|---|---|---|
| `spatiality` | 0.523 / 0.523 | 0.525 / 0.523 |
| `cardinality` | 0.508 / 0.472 | 0.529 / 0.434 |
| `quantifiers` | 0.499 / 0.506 | 0.533 / 0.554 |
| `numerical_comparison` | 0.498 / 0.508 | 0.498 / 0.514 |

Before this change the same baselines scored (image / caption statistics, InD; OOD):
`cardinality` 0.617 / 0.603; 0.638 / 0.617, the scene's size following the queried count;
`quantifiers` 0.663 / 0.723; 0.588 / 0.611, the template deciding the label and the distractors'
colours avoiding the companion colours; `numerical_comparison` 0.602 / 0.509; 0.656 / 0.507, from
the image only (shape areas 742 to 1,581 px: the ink told which shape is the more numerous);
`spatiality` was and is at chance. What changed:

- `cardinality`: the scene's number of objects is drawn first, uniformly from the sizes every count
  of the queried shape can reach with 1 to 10 distractors (for square in-distribution, counts
  {1, 2, 3, 5}: 6 to 11 objects), and then the distractors that make it up (each other shape absent or
  present with one of its counts of the split). The number of objects no longer tells the count;
  the number of distractors, the objects minus the count, still does, as it must.
- `quantifiers`: matched scenes, see above.
- `numerical_comparison` and all images: every shape covers the same number of pixels, 1,200 (see
  "How it was generated"), so the ink counts the objects and tells nothing about which shapes.

What remains: in `quantifiers`, the number of objects of the queried shape X follows the case by
the paper's own definitions (p1 on an "All", "None" or "Not only" scene, p1 + p2 on a "Not all",
"Some" or "Only" one): the caption baseline given how often the queried shape is named scores
about 0.90 / 0.91. Matching it too, as for the colour, would leave one pair per quantifier in
`test_ood` and cannot be done for "All" / "Not all" there; it needs recognising and counting shapes
(the cardinality task), not pixels of a colour. In `cardinality`, counting the queried shape is the
task. The check does not measure features beyond those listed.

## Columns

| column | type | content |
|---|---|---|
| `id` | string | `<config>-<split>-<row>` |
| `image` | image | 500x500 RGB PNG, white background, filled shapes |
| `caption` | string | the text modality: `Columns, left to right, are ordered A to F. Rows, top to bottom, are ordered 1 to 6. There is a red circle at A 1, a blue square at C 4 and an orange star at F 2.` (every object, in a random order) |
| `query` | string | the statement to verify |
| `foil_query` | string | its minimal edit with the opposite truth (left/right, above/below, another number, the negated quantifier, more/fewer) |
| `label` | bool | whether `query` is true of the scene (`foil_query` is true exactly when `label` is false) |
| `subtype` | string | spatiality: `left/right` or `above/below`; cardinality: the shape; quantifiers: the query's quantifier; numerical_comparison: `more` or `fewer` |
| `objects` | list of {shape, colour, row, column, queried} | the scene (row 0 = top, column 0 = left); `queried` marks the objects the query is about |
| `query_form`, `foil_form` | string (JSON) | the statements' structured forms (`vlprobe.scenes.statement_from_dict`) |
| `case` | string (JSON) | the generation case: object pair and index pair; shape and counts; the quantifier the scene is for, its Table-1 pair and the regions' counts; ... |

Every `label` is computed by vlprobe's truth function (`vlprobe.scenes.truth`) on the row's scene
and re-checked for the foil when the folder is built.

## Modality settings

The paper evaluates image only, caption only and image + caption. Both specs name `caption` as the
row's `context`, so each setting is one switch when rows become items (with either framing):

```bash
vlprobe evaluate --dataset travlr --config spatiality --modality image    # image + query (default)
vlprobe evaluate --dataset travlr --config spatiality --modality caption  # blank white image, "caption query"
vlprobe evaluate --dataset travlr --config spatiality --modality both     # image, "caption query"
```

```python
from datasets import load_dataset
from vlprobe.spec import find_spec

rows = load_dataset("travlr", "spatiality", split="test_ood")
items = list(find_spec("travlr").iter_items(rows, config="spatiality", modality="caption"))
# each item: 1 image x 2 texts [query, foil_query], gold [[1, 0]] if label else [[0, 1]]
items = list(find_spec("travlr", "travlr/true_false.yaml").iter_items(rows, config="spatiality"))
# each item: 1 image x 1 text [query], gold [[1]] if label else [[0]]
```

For training a classifier on the binary task use `image`, `caption`, `query` and `label` directly.

## How it was generated

`vlprobe build travlr` (see `vlprobe/scenes/`), seed 0 by default:

```bash
vlprobe build travlr                    # default size: 2,000 / 200 / 200 / 200 rows per split and config
vlprobe build travlr --size paper       # the paper's sizes (add --workers 2), see below
vlprobe build travlr --size paper32k    # 32,000 training rows for every task
vlprobe build travlr --size tiny        # 8 / 4 / 4 / 4, for tests
vlprobe build travlr --split-sizes train=1000,test_ood=500   # any size per split
```

`--size paper` follows the paper's Table 3: 32,000 training rows for spatiality and 8,000 for the
other tasks, and 10,000 validation, 10,000 InD test and 20,000 OOD test rows for every task.
`--size paper32k` is the original generator README's configuration, 32,000 training rows for every
task. The default size builds in about a minute on 2 cores and is what `make evaluate` scores and
probes: 2,000 training rows let a probe learn (TraVLR's learning curves start near 1,000), and 200
InD and 200 OOD test rows per task give 95% CIs of about +-7 points; build a larger size for
tighter ones.

Rendering follows the original: a white 500x500 canvas, an implicit 6x6 grid (cell centres at
42, 125, 208, 292, 375, 458 px), filled shapes, no outlines, no anti-aliasing, except for the
shapes' sizes: the original draws every object MEDIUM (circle radius 22 px, polygons circumradius
23 px, star radii 22/11), which covers 742 px for a star and 1,581 px for a circle, so the ink told
which shapes a scene holds many of; vlprobe scales each shape about its centre so that every object
covers exactly 1,200 px (about the mean, 1,208 px, of the seven main shapes; the circle drawn as a 64-gon, a few
boundary pixels making the count exact; `vlprobe.scenes.render(..., equal_area=True)`). Colours: red, blue, green, yellow,
orange; the quantifier task adds purple (the original's lavender, RGB 230,230,250, faint on white)
and brown for the queried colour, and its companions and distractors may also be black,
trapeziums or parallelograms, as in the original code. Differences from the original, on purpose:
PNG instead of JPEG (no compression artefacts), every label checked by a truth function, the
caption stored with each row (the original's `caption_abstract` metadata could not reproduce its
object order), a seed
for `numerical_comparison` (the original's held-out shape pairs were drawn unseeded, so ours
differ), and strict comparisons (the original's "more" also covered equal counts, which never
occur). The cardinality split keeps the original's table, including the off-by-one that gives
square and pentagon the same held-out counts, and applies it to the distractor shapes' counts too,
as the paper describes (the original code left them free).

Seeds: each task draws from its own stream, `random.Random(f"vlprobe-travlr:{task}:{seed}")` (seed 0
by default), and its splits are drawn in the order train, validation, test_ind, test_ood; the fixed
split tables use the original's seeds (6 for the spatial object pairs, 1 for the quantifier count
pairs) and ours (6, for the comparison shape pairs).

Determinism: the same seed and size give the same rows and pixels on any machine (rows depend only
on Python's `random` module, never on hash order; pixels on Pillow's polygon filling, pinned by a
test), and byte-identical parquet with the same Pillow, zlib and pyarrow versions (PNG bytes depend
on the zlib build).

## Licence and credit

The generated data is released under CC BY 4.0; vlprobe's code is MIT. The task design, templates
and split rules are TraVLR's (Chow, Tan and Kan, 2023); the original generator repository has no
licence file, and no code or data was copied from it.
"""
