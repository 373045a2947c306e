"""mini-clip: a small ``transformers`` CLIPModel trained offline, on CPU, on the synthetic scenes.

It is the offline default model of vlprobe (``models/mini-clip``) and a test subject with real,
non-random behaviour; it is not a research model. ``python -m vlprobe_train`` is the entry point.

What happens (every random choice comes from a seeded stream, so a seed gives the same model on
the same software):

1. **Scenes.** :func:`training_scenes` draws scenes from its own seed stream
   (``"vlprobe-mini-clip:train:<seed>"``): 1-24 objects, TraVLR's 5 colours x 7 shapes, a quarter
   of them from the full 8 x 9 palette of TraVLR's quantifier task, often with several objects of
   one shape so that counts up to 7 occur. Any scene whose :meth:`~vlprobe.scenes.Scene.key`
   (equal keys <=> identical renderings) is also a scene of an evaluation instrument is dropped
   and redrawn (:func:`evaluation_scene_keys`: the TraVLR and Winoground-style generators at their
   default seed and sizes, plus any built dataset folder found on disk).
2. **Images.** Each scene is rendered once (500 x 500, :func:`vlprobe.scenes.render`) and resized
   exactly as the saved ``CLIPImageProcessor`` does (bicubic to 96 x 96, no crop needed), kept in
   memory as uint8; :func:`pixel_values` normalises them (white -> 0, see ``IMAGE_MEAN``). The
   same values come out of the saved processor at evaluation time (a test checks it).
3. **Texts.** Every epoch each scene gets a fresh true statement from the scene model
   (:func:`sample_caption`): the inventory ("two red circles and a blue square"), existence,
   TraVLR's counting template ("There are 2 circle objects.") and count phrases ("two circles and
   three squares"), conjunctions of objects ("a red circle and a blue square"), spatial relations,
   quantifiers and comparisons, as full sentences or lower-case phrases (the Winoground-style
   captions are phrases). A share (``foil_fraction``) of them bring a hard negative: the
   statement's minimal false edit
   (another colour or number, the opposite relation, the swapped colours or counts, the negated
   quantifier).
4. **Held out** (:func:`holdout_violation`), so that the evaluation instruments' out-of-distribution
   splits stay unseen as statements: count statements never pair a shape with a count TraVLR's
   cardinality OOD split holds out for it; spatial statements never relate one of the 119 OOD
   object pairs (at any position, stricter than TraVLR); quantifier statements never use the 7
   OOD (shape, colour) pairs; comparisons never use the 4 OOD shape pairs. Foils obey the same
   rules. Inventories are not filtered (they name (colour, shape) types, not shape counts).
5. **Loss.** Symmetric InfoNCE with a learnable logit scale, with the targets taken from the truth
   function: in a batch, text *j* is a positive for image *i* whenever it is true of scene *i*
   (short statements like "There is a red circle." are often true of several images; treating them
   as negatives would teach the model falsehoods). Image-to-text rows spread the target over their
   true texts (the foils included as extra columns); text-to-image columns do the same over the
   images they are true of, for every text true of at least one image in the batch.
6. **Fine distinctions** (``TrainConfig``'s fields; the shipped model uses all but the pair term): a share of scenes with
   only 2-4 objects (``small_scene_fraction``); mirrored pairs (``mirror_fraction``,
   :func:`training_set`): a draw and the scene of its minimal edit, kept in one batch and captioned
   by their two distinguishing statements; a hinge on the cosine of embeddings that must differ
   (``separation_weight``); a 2-way caption-vs-foil term (``pair_weight``); a 2-D sine/cosine start for
   the image tower's position embeddings (``vision_position_std``, :func:`grid_position_code`).
7. **Held-out check.** :func:`heldout_items` builds 1-image x 2-text items (a true statement and
   its minimal false edit) on fresh scenes from another seed stream, disjoint from the training
   scenes and the instruments, in mirrored pairs (so an image-blind scorer gets exactly 0.5),
   scored with :func:`vlprobe.metric.compute` (pairwise ``acc_r``).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import os
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Iterable, Sequence

import numpy as np

from vlprobe.scenes import travlr as travlr_gen
from vlprobe.scenes.captions import join_list, noun_phrase
from vlprobe.scenes.model import ALL_COLOURS, ALL_SHAPES, COLOURS, SHAPES, Scene, place
from vlprobe.scenes.render import render
from vlprobe.scenes.statements import (
    OPPOSITE,
    And,
    Compare,
    Count,
    Exists,
    Quantifier,
    Spatial,
    Statement,
    StatementError,
    foil,
    sample_statement,
    truth,
)

NAMESPACE = "vlprobe-mini-clip"
SPECIAL_TOKENS = ("<|pad|>", "<|unk|>", "<|startoftext|>", "<|endoftext|>")
# The processor's normalisation centres the white canvas on 0 (not OpenAI CLIP's mean/std): blank
# cells then embed to nothing but their position, and only objects move the image embedding. With
# CLIP's values every image starts as almost the same vector (cosine 0.999 at initialisation, most of
# the canvas being identical white patches) and training collapses to a constant embedding.
IMAGE_MEAN = (1.0, 1.0, 1.0)
IMAGE_STD = (0.5, 0.5, 0.5)
BICUBIC = 3  # PIL.Image.BICUBIC, the CLIPImageProcessor default


@dataclass(frozen=True)
class TrainConfig:
    """Everything that determines the model. Defaults are the shipped model's."""

    seed: int = 0
    scenes: int = 30000
    epochs: int = 20
    batch_size: int = 64
    lr: float = 2e-3
    min_lr: float = 2e-5
    weight_decay: float = 0.05
    warmup_steps: int = 100
    foil_fraction: float = 0.75  # share of captions that bring their hard negative into the batch
    # weight of the pairwise term: for every image whose caption brought its hard negative, a 2-way
    # softmax over (caption, hard negative), the choice every held-out and instrument item asks for
    pair_weight: float = 0.0
    # share of training scenes with only 2-4 objects (:func:`sample_small_scene`), where a relation
    # between two named objects or a count is learnable from one image vector
    small_scene_fraction: float = 0.4
    # share of draws that come with the scene of their minimal edit (a mirrored pair, kept in one
    # batch), and the chance that such a pair is captioned, each epoch, by its two distinguishing statements
    mirror_fraction: float = 0.5
    mirror_caption: float = 0.5
    # the image tower's position embeddings start as a 2-D sine/cosine code of (row, column) with this
    # standard deviation (0: transformers' random init, std 0.02, which the object patches drown out:
    # two objects that swap cells give almost the same image vector)
    vision_position_std: float = 0.5
    # a hinge on the cosine of two embeddings that must differ: a caption and its hard negative (text
    # tower), a scene and its mirrored partner in the batch (image tower), penalised above
    # ``separation_margin``; it breaks the symmetry that keeps both towers blind to a word (left/right)
    # or a position that the other tower does not yet see
    separation_weight: float = 1.0
    separation_margin: float = 0.8
    # share of training scenes rendered with equal_area=True (every shape the same ink, as `vlprobe build
    # travlr` renders); the rest as the Winoground-style folder and the Space render (natural sizes)
    equal_area_fraction: float = 0.5
    image_size: int = 96
    patch_size: int = 16  # 96 / 16 = 6: one patch per cell of TraVLR's 6 x 6 grid
    vision_hidden: int = 96
    vision_layers: int = 3
    text_hidden: int = 64
    text_layers: int = 2
    heads: int = 4
    projection_dim: int = 64
    # every text fits whole: the longest of the default builds is TraVLR's caption + query (what
    # --modality caption/both scores) of a 27-object numerical_comparison scene, 224 tokens with
    # <|startoftext|> and <|endoftext|>; a full 6 x 6 grid's caption + the longest query is ~292
    max_length: int = 320
    heldout_per_kind: int = 200
    threads: int = 1  # the shipped model was trained with 1 (float sums depend on it)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# ---- the held-out rules ----------------------------------------------------------------------------
# unordered, whatever container the generator returns its pairs in
_SPATIAL_OOD_PAIRS = frozenset(frozenset(p) for p in travlr_gen.spatial_object_pairs()[1])
_COMPARE_OOD_PAIRS = frozenset(frozenset(p) for p in travlr_gen.compare_shape_pairs()[1])


def holdout_violation(stmt: Statement) -> str | None:
    """Why ``stmt`` expresses a case that an evaluation instrument's OOD split holds out, or None."""
    if isinstance(stmt, And):
        for part in stmt.parts:
            why = holdout_violation(part)
            if why:
                return why
        return None
    if isinstance(stmt, Count) and stmt.shape in travlr_gen.CARDINALITY_OOD_COUNTS:
        if stmt.n in travlr_gen.CARDINALITY_OOD_COUNTS[stmt.shape]:
            return f"cardinality OOD: {stmt.shape} x {stmt.n}"
    if isinstance(stmt, Spatial) and frozenset((tuple(stmt.subject), tuple(stmt.object))) in _SPATIAL_OOD_PAIRS:
        return f"spatiality OOD object pair: {stmt.subject} / {stmt.object}"
    if isinstance(stmt, Quantifier) and (stmt.shape, stmt.colour) in travlr_gen.QUANTIFIER_OOD_TYPES:
        return f"quantifiers OOD (shape, colour): {stmt.shape} / {stmt.colour}"
    if isinstance(stmt, Compare) and frozenset((stmt.x, stmt.y)) in _COMPARE_OOD_PAIRS:
        return f"numerical_comparison OOD shape pair: {stmt.x} / {stmt.y}"
    return None


def ind_counts(shape: str | None) -> tuple[int, ...]:
    """Counts a training count statement about ``shape`` may use (1..9 minus TraVLR's OOD ones)."""
    held = travlr_gen.CARDINALITY_OOD_COUNTS.get(shape or "", ())
    return tuple(n for n in range(1, 10) if n not in held)


# ---- an exhaustive description -------------------------------------------------------------------
@dataclass(frozen=True)
class Inventory(Statement):
    """Exactly these objects, no others: ``groups`` of ``(n, colour, shape)``, in the order named.
    Phrase: "two red circles, a blue square and an orange star"."""

    groups: tuple[tuple[int, str, str], ...]
    kind: ClassVar[str] = "inventory"

    def __post_init__(self) -> None:
        object.__setattr__(self, "groups", tuple(tuple(g) for g in self.groups))

    def holds(self, scene: Scene) -> bool:
        return Counter(o.type for o in scene.objects) == {(c, s): n for n, c, s in self.groups}

    def phrase(self) -> str:
        return join_list([noun_phrase(n, c, s) for n, c, s in self.groups])

    def text(self) -> str:
        return self.phrase()[:1].upper() + self.phrase()[1:] + "."


def inventory_of(scene: Scene, rng: random.Random) -> Inventory:
    counts = Counter(o.type for o in scene.objects)
    groups = [(n, c, s) for (c, s), n in sorted(counts.items())]
    rng.shuffle(groups)
    return Inventory(tuple(groups))


# ---- scenes ----------------------------------------------------------------------------------------
def sample_training_scene(rng: random.Random) -> Scene:
    """One training scene (see the module docstring)."""
    full = rng.random() < 0.25
    shapes = ALL_SHAPES if full else SHAPES
    colours = ALL_COLOURS if full else COLOURS
    types: list[tuple[str, str]] = []
    if rng.random() < 0.45:
        types = [(rng.choice(colours), rng.choice(shapes)) for _ in range(rng.randint(1, 8))]
    else:
        for shape in rng.sample(list(shapes), rng.randint(1, 3)):
            one_colour = rng.choice(colours) if rng.random() < 0.4 else None
            types += [(one_colour or rng.choice(colours), shape) for _ in range(rng.randint(1, 7))]
        types += [(rng.choice(colours), rng.choice(shapes)) for _ in range(rng.randint(0, 6))]
    return Scene(tuple(place(types, rng)))


def sample_small_scene(rng: random.Random) -> Scene:
    """A training scene of 2-4 objects (a quarter from the full 8 x 9 palette)."""
    full = rng.random() < 0.25
    shapes = ALL_SHAPES if full else SHAPES
    colours = ALL_COLOURS if full else COLOURS
    types = [(rng.choice(colours), rng.choice(shapes)) for _ in range(rng.randint(2, 4))]
    return Scene(tuple(place(types, rng)))


def training_scenes(cfg: TrainConfig, exclude: set | frozenset = frozenset()) -> tuple[list[Scene], dict[str, int]]:
    """``cfg.scenes`` distinct scenes from the training seed stream, none whose key is in ``exclude``;
    and how many draws were rejected: ``{"duplicate": ..., "excluded": ...}``. Mirrored partners
    (see :func:`training_set`) are among them."""
    scenes, rejected, _ = training_set(cfg, exclude)
    return scenes, rejected


# the minimal edits a mirrored training pair may come from (the held-out kinds, on other scenes)
MIRROR_TRAIN_KINDS = ("colour", "attribute_swap", "count", "spatial", "compare")


def training_set(cfg: TrainConfig, exclude: set | frozenset = frozenset()
                 ) -> tuple[list[Scene], dict[str, int], dict[int, tuple[int, Statement, Statement]]]:
    """The training scenes, the rejected draws, and the mirrored pairs: a share
    (``cfg.mirror_fraction``) of the draws come with the scene of their minimal edit (:func:`_mirror`:
    an object recoloured, two objects' colours or cells swapped, an object added or removed, two
    shapes swapped), stored right after it; ``pairs[i] = (j, A, B)``: scene ``i``'s partner is
    scene ``j``, A is true of ``i`` and false of ``j``, B the reverse. Both statements obey the
    held-out rules, and the partner is checked against ``exclude`` and earlier draws like any scene."""
    rng = random.Random(f"{NAMESPACE}:train:{cfg.seed}")
    seen: set = set()
    out: list[Scene] = []
    pairs: dict[int, tuple[int, Statement, Statement]] = {}
    rejected = {"duplicate": 0, "excluded": 0}
    while len(out) < cfg.scenes:
        small = cfg.small_scene_fraction > 0 and rng.random() < cfg.small_scene_fraction
        scene = sample_small_scene(rng) if small else sample_training_scene(rng)
        key = scene.key()
        if key in seen:
            rejected["duplicate"] += 1
            continue
        if key in exclude:
            rejected["excluded"] += 1
            continue
        mirror = None
        if cfg.mirror_fraction > 0 and len(out) + 2 <= cfg.scenes and rng.random() < cfg.mirror_fraction:
            mirror = _mirror(scene, rng.choice(MIRROR_TRAIN_KINDS), rng)
            if mirror is not None:
                a, b, edited = mirror
                ekey = edited.key()
                if holdout_violation(a) or holdout_violation(b) or ekey == key:
                    mirror = None
                elif ekey in seen or ekey in exclude:
                    rejected["duplicate" if ekey in seen else "excluded"] += 1
                    mirror = None
        seen.add(key)
        out.append(scene)
        if mirror is not None:
            a, b, edited = mirror
            seen.add(edited.key())
            pairs[len(out) - 1] = (len(out), a, b)
            pairs[len(out)] = (len(out) - 1, b, a)
            out.append(edited)
    return out, rejected, pairs


def evaluation_scene_keys(root: str | Path | None = None) -> set:
    """Keys of every scene of the synthetic evaluation instruments: the TraVLR (4 tasks, all 4
    splits) and Winoground-style (3 configs) generators at their default seed and sizes, plus the
    scenes of built dataset folders under ``root`` (``travlr/data``, ``winoground_style/data``),
    whatever seed and size they were built with."""
    keys: set = set()
    for task in travlr_gen.TASKS:
        for rows in travlr_gen.generate_task(task, travlr_gen.SIZES["default"], seed=0).values():
            keys.update(ex.scene.key() for ex in rows)
    try:
        from vlprobe.scenes import winoground as wino_gen
    except ImportError:  # the Winoground-style generator is not there yet
        wino_gen = None
    if wino_gen is not None:
        for config in wino_gen.CONFIGS:
            for item in wino_gen.generate(config, wino_gen.SIZES["default"], seed=0):
                keys.update((item.scene_0.key(), item.scene_1.key()))
    if root is not None:
        keys.update(_folder_scene_keys(Path(root)))
    return keys


def _folder_scene_keys(root: Path) -> set:
    import pyarrow.parquet as pq

    keys: set = set()
    for folder in ("travlr", "winoground_style"):
        for path in sorted((root / folder / "data").glob("**/*.parquet")):
            names = pq.read_schema(path).names
            cols = [c for c in ("objects", "objects_0", "objects_1") if c in names]
            if not cols:
                continue
            table = pq.read_table(path, columns=cols)
            for col in cols:
                for records in table.column(col).to_pylist():
                    if records:
                        keys.add(Scene.from_records(records).key())
    return keys


# ---- captions --------------------------------------------------------------------------------------
CAPTION_KINDS: dict[str, float] = {  # kind -> sampling weight
    # TraVLR's four query kinds (count, spatial, quantifier, compare) get half the captions
    "inventory": 0.15, "exists": 0.10, "and_exists": 0.15, "count": 0.20, "and_count": 0.06,
    "spatial": 0.14, "quantifier": 0.10, "compare": 0.10,
}


def _swap_colours(stmt: And) -> And:
    (a, b) = stmt.parts
    return And((Exists(b.colour, a.shape), Exists(a.colour, b.shape)))


def _swap_counts(stmt: And) -> And:
    (a, b) = stmt.parts
    return And((Count(b.n, a.shape, a.colour), Count(a.n, b.shape, b.colour)))


def _caption_of_kind(scene: Scene, kind: str, rng: random.Random) -> tuple[Statement, Statement | None, bool] | None:
    """(true statement, its false edit or None, use the phrase form?) or None if ``kind`` does not fit."""
    types = sorted({o.type for o in scene.objects})
    if kind == "inventory":
        if len(types) > 6:
            return None
        inv = inventory_of(scene, rng)
        bad = None
        if len(inv.groups) >= 2:  # swap the colours of two groups with different colours and shapes
            i, j = rng.sample(range(len(inv.groups)), 2)
            (ni, ci, si), (nj, cj, sj) = inv.groups[i], inv.groups[j]
            groups = list(inv.groups)
            groups[i], groups[j] = (ni, cj, si), (nj, ci, sj)
            bad = Inventory(tuple(groups))
        return inv, bad, rng.random() < 0.5
    if kind == "exists":
        stmt, _ = sample_statement(scene, rng, kinds=("exists",), label=True)
        if stmt.colour is None:
            return None
        return stmt, foil(scene, stmt, rng, colours=ALL_COLOURS), rng.random() < 0.3
    if kind == "and_exists":
        if len(types) < 2:
            return None
        (c1, s1), (c2, s2) = rng.sample(types, 2)
        stmt = And((Exists(c1, s1), Exists(c2, s2)))
        bad = _swap_colours(stmt) if c1 != c2 and s1 != s2 else None
        if bad is not None and truth(scene, bad):
            bad = None
        return stmt, bad, rng.random() < 0.6
    if kind == "count":
        shape = rng.choice([o.shape for o in scene.objects])
        colour = rng.choice([o.colour for o in scene.objects if o.shape == shape]) if rng.random() < 0.3 else None
        n = scene.count(colour, shape)
        stmt = Count(n, shape, colour)
        phrase = n >= 2 and rng.random() < 0.3  # "a circle" would read as "there is a circle"
        allowed = [k for k in ind_counts(shape) if k != n and (k >= 2 or not phrase)]
        bad = Count(rng.choice(allowed), shape, colour) if allowed else None
        return stmt, bad, phrase
    if kind == "and_count":
        shape_counts = Counter(o.shape for o in scene.objects)
        shapes = sorted(s for s, n in shape_counts.items() if n >= 2)
        if len(shapes) < 2:
            return None
        s1, s2 = rng.sample(shapes, 2)
        stmt = And((Count(shape_counts[s1], s1), Count(shape_counts[s2], s2)))
        bad = _swap_counts(stmt) if shape_counts[s1] != shape_counts[s2] else None
        return stmt, bad, rng.random() < 0.7
    if kind in ("spatial", "quantifier", "compare"):
        try:
            stmt, _ = sample_statement(scene, rng, kinds=(kind,), label=True, max_tries=30,
                                       shapes=SHAPES, colours=COLOURS)
        except StatementError:
            return None
        if kind == "spatial" and rng.random() < 0.5:
            swapped = Spatial(stmt.object, stmt.relation, stmt.subject)  # the word-order foil
            bad = swapped if not truth(scene, swapped) else foil(scene, stmt)
        else:
            try:
                bad = foil(scene, stmt)
            except StatementError:
                bad = None
        return stmt, bad, kind == "spatial" and rng.random() < 0.5
    raise ValueError(f"unknown caption kind {kind!r}; known: {list(CAPTION_KINDS)}")


def sample_caption(scene: Scene, rng: random.Random, max_tries: int = 50) -> tuple[Statement, Statement | None, str, str | None]:
    """A true statement about ``scene`` that breaks no held-out rule, its hard negative (false on
    ``scene`` and within the rules, or None), and their texts."""
    kinds, weights = zip(*CAPTION_KINDS.items())
    for _ in range(max_tries):
        kind = rng.choices(kinds, weights)[0]
        got = _caption_of_kind(scene, kind, rng)
        if got is None:
            continue
        stmt, bad, phrase = got
        if holdout_violation(stmt):
            continue
        if bad is not None and (holdout_violation(bad) or truth(scene, bad)):
            bad = None
        render_text = (lambda s: s.phrase()) if phrase else (lambda s: s.text())
        return stmt, bad, render_text(stmt), (render_text(bad) if bad is not None else None)
    inv = inventory_of(scene, rng)  # always true and never held out
    return inv, None, inv.text(), None


def safe_truth(scene: Scene, stmt: Statement) -> bool:
    """The truth value, with "no truth value" (a referent missing or ambiguous) counted as false."""
    try:
        return truth(scene, stmt)
    except StatementError:
        return False


# ---- tokenizer -------------------------------------------------------------------------------------
def _vocabulary_corpus(seed: int) -> list[str]:
    """Texts covering every word the generators use: training captions, TraVLR captions and queries,
    the Winoground-style phrases."""
    from vlprobe.scenes.captions import NUMBER_WORDS, PREFIX, travlr_caption
    from vlprobe.scenes.statements import QUANTIFIERS, RELATIONS

    rng = random.Random(f"{NAMESPACE}:vocab:{seed}")
    texts = [PREFIX, " ".join(NUMBER_WORDS), " ".join(str(i) for i in range(0, 31)), "a b c d e f"]
    texts += [" ".join(ALL_COLOURS), " ".join(ALL_SHAPES), " ".join(s + "s" for s in ALL_SHAPES)]
    texts += ["there is are an the object objects of to left right above below more fewer than and at"]
    texts += [" ".join(f"{q[0]} {q[1]}" for q in QUANTIFIERS.values()), " ".join(RELATIONS.values())]
    for _ in range(3000):
        scene = sample_training_scene(rng)
        stmt, bad, text, bad_text = sample_caption(scene, rng)
        texts += [text] + ([bad_text] if bad_text else [])
        if rng.random() < 0.05:
            texts.append(travlr_caption(scene, rng))
    return texts


def build_tokenizer(cfg: TrainConfig):
    """A word-level tokenizer (lower-cased, punctuation split off) trained on the caption vocabulary,
    with CLIP's start/end tokens, as a ``PreTrainedTokenizerFast``."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    pad, unk, bos, eos = SPECIAL_TOKENS
    tok = Tokenizer(models.WordLevel(unk_token=unk))
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    trainer = trainers.WordLevelTrainer(special_tokens=list(SPECIAL_TOKENS), min_frequency=1, show_progress=False)
    tok.train_from_iterator(_vocabulary_corpus(cfg.seed), trainer)
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}", special_tokens=[(bos, tok.token_to_id(bos)), (eos, tok.token_to_id(eos))],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=bos, eos_token=eos, pad_token=pad, unk_token=unk,
        model_max_length=cfg.max_length,
    )


# ---- model -----------------------------------------------------------------------------------------
def build_model(cfg: TrainConfig, tokenizer):
    """A randomly initialised CLIPModel (seeded) sized by ``cfg``."""
    import torch
    from transformers import CLIPConfig, CLIPModel

    if tokenizer.eos_token_id == 2:
        # transformers' CLIP pools at argmax(input_ids) when eos_token_id == 2 (legacy configs)
        raise ValueError("the end-of-text token must not have id 2")
    config = CLIPConfig(
        text_config=dict(
            vocab_size=len(tokenizer), hidden_size=cfg.text_hidden, intermediate_size=4 * cfg.text_hidden,
            num_hidden_layers=cfg.text_layers, num_attention_heads=cfg.heads,
            max_position_embeddings=cfg.max_length, projection_dim=cfg.projection_dim,
            bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
        ),
        vision_config=dict(
            hidden_size=cfg.vision_hidden, intermediate_size=4 * cfg.vision_hidden,
            num_hidden_layers=cfg.vision_layers, num_attention_heads=cfg.heads,
            image_size=cfg.image_size, patch_size=cfg.patch_size, projection_dim=cfg.projection_dim,
        ),
        projection_dim=cfg.projection_dim,
    )
    torch.manual_seed(cfg.seed)
    model = CLIPModel(config)
    if cfg.vision_position_std > 0:
        with torch.no_grad():
            weight = model.vision_model.embeddings.position_embedding.weight
            weight.copy_(grid_position_code(cfg.image_size // cfg.patch_size, cfg.vision_hidden, cfg.vision_position_std))
    return model


def grid_position_code(side: int, dim: int, std: float):
    """``(1 + side**2, dim)``: row 0 (the class token) zeros; patch (r, c) gets sines and cosines of r
    in the first half of the dimensions and of c in the second, at geometric frequencies, scaled to ``std``."""
    import torch

    half = dim // 2
    freqs = torch.exp(-math.log(4 * side) * torch.arange(half // 2) / max(1, half // 2))  # 1 .. ~1/(4 side)
    r, c = torch.meshgrid(torch.arange(side, dtype=torch.float32), torch.arange(side, dtype=torch.float32), indexing="ij")

    def code(x):
        angles = x.reshape(-1, 1) * freqs.reshape(1, -1)
        return torch.cat([angles.sin(), angles.cos()], dim=1)

    grid = torch.cat([code(r), code(c)], dim=1)
    grid = torch.nn.functional.pad(grid, (0, dim - grid.shape[1]))
    grid = (grid - grid.mean()) / grid.std() * std
    return torch.cat([torch.zeros(1, dim), grid])


def build_image_processor(cfg: TrainConfig):
    from transformers import CLIPImageProcessor

    return CLIPImageProcessor(
        size={"shortest_edge": cfg.image_size}, crop_size={"height": cfg.image_size, "width": cfg.image_size},
        resample=BICUBIC, image_mean=list(IMAGE_MEAN), image_std=list(IMAGE_STD),
    )


# ---- images ----------------------------------------------------------------------------------------
def render_small(scenes: Sequence[Scene], size: int, equal_area: Sequence[bool] | None = None) -> np.ndarray:
    """uint8 ``(N, size, size, 3)``: each scene rendered at 500 x 500 (``equal_area[i]``: with every
    shape covering the same pixels, as TraVLR's folders are rendered) then resized as the saved
    processor resizes (bicubic; the canvas is square, so its centre crop is the whole image)."""
    out = np.empty((len(scenes), size, size, 3), dtype=np.uint8)
    for i, scene in enumerate(scenes):
        equal = bool(equal_area[i]) if equal_area is not None else False
        out[i] = np.asarray(render(scene, equal_area=equal).resize((size, size), BICUBIC))
    return out


def equal_area_flags(cfg: TrainConfig, n: int) -> list[bool]:
    """Which of the ``n`` training scenes are rendered with ``equal_area`` (a seeded draw)."""
    rng = random.Random(f"{NAMESPACE}:equal_area:{cfg.seed}")
    return [rng.random() < cfg.equal_area_fraction for _ in range(n)]


def pixel_values(images: np.ndarray):
    """uint8 ``(N, H, W, 3)`` -> the processor's normalised float ``(N, 3, H, W)`` tensor."""
    import torch

    x = torch.from_numpy(np.ascontiguousarray(images)).permute(0, 3, 1, 2).float().div_(255.0)
    mean = torch.tensor(IMAGE_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(IMAGE_STD).view(1, 3, 1, 1)
    return (x - mean) / std


# ---- the loss --------------------------------------------------------------------------------------
def multi_positive_clip_loss(logits, gold):
    """Symmetric InfoNCE where ``gold[i, j]`` marks every text *j* true of image *i*: each row's
    (image-to-text) and each non-empty column's (text-to-image) target is uniform over its positives."""
    import torch

    gold = gold.to(logits.dtype)
    row_pos = gold.sum(1)
    if bool((row_pos == 0).any()):
        raise ValueError("every image needs at least one true text in its batch")
    i2t = -(gold / row_pos[:, None] * torch.log_softmax(logits, dim=1)).sum(1).mean()
    col_pos = gold.sum(0)
    cols = col_pos > 0
    t2i = -(gold[:, cols] / col_pos[cols] * torch.log_softmax(logits[:, cols], dim=0)).sum(0).mean()
    return (i2t + t2i) / 2


# ---- held-out instruments --------------------------------------------------------------------------
HELDOUT_KINDS = ("colour", "attribute_swap", "count", "spatial", "compare", "spatial_3")


Mirror = tuple[Statement, Statement, Scene]


def _unique_pairs(scene: Scene, objs: list, accept) -> list[tuple[int, int, Any]]:
    """(i, j, extra) for every pair of objects whose (colour, shape) type occurs once in ``scene``,
    with ``extra`` from ``accept(a, b)`` (an iterable of values; empty for a rejected pair)."""
    types = Counter(o.type for o in objs)
    unique = [i for i, o in enumerate(objs) if types[o.type] == 1]
    return [(i, j, extra) for i, j in itertools.combinations(unique, 2) for extra in accept(objs[i], objs[j])]


def _mirror_colour(scene: Scene, objs: list, rng: random.Random) -> Mirror | None:
    types = Counter(o.type for o in objs)
    options = [(i, c) for i, o in enumerate(objs) if types[o.type] == 1
               for c in COLOURS if c != o.colour and scene.count(c, o.shape) == 0]
    if not options:
        return None
    i, colour = rng.choice(options)
    o = objs[i]
    objs[i] = dataclasses.replace(o, colour=colour)
    return Exists(o.colour, o.shape), Exists(colour, o.shape), Scene(tuple(objs))


def _mirror_attribute_swap(scene: Scene, objs: list, rng: random.Random) -> Mirror | None:
    def swappable(a, b):
        ok = a.colour != b.colour and a.shape != b.shape \
            and not scene.count(b.colour, a.shape) and not scene.count(a.colour, b.shape)
        return [None] if ok else []

    pairs = _unique_pairs(scene, objs, swappable)
    if not pairs:
        return None
    i, j, _ = rng.choice(pairs)
    a, b = objs[i], objs[j]
    objs[i], objs[j] = dataclasses.replace(a, colour=b.colour), dataclasses.replace(b, colour=a.colour)
    stmt = And((Exists(a.colour, a.shape), Exists(b.colour, b.shape)))
    return stmt, _swap_colours(stmt), Scene(tuple(objs))


def _mirror_spatial(scene: Scene, objs: list, rng: random.Random) -> Mirror | None:
    def relations(a, b):
        return [rel for rel, ok in (("left", a.column != b.column), ("above", a.row != b.row)) if ok]

    pairs = _unique_pairs(scene, objs, relations)
    if not pairs:
        return None
    i, j, rel = rng.choice(pairs)
    a, b = objs[i], objs[j]
    objs[i], objs[j] = dataclasses.replace(a, row=b.row, column=b.column), dataclasses.replace(b, row=a.row, column=a.column)
    stmt = Spatial(a.type, rel, b.type)
    if not truth(scene, stmt):
        stmt = Spatial(a.type, OPPOSITE[rel], b.type)
    return stmt, Spatial(a.type, OPPOSITE[stmt.relation], b.type), Scene(tuple(objs))


def _mirror_count(scene: Scene, objs: list, rng: random.Random) -> Mirror | None:
    shape = rng.choice(sorted({o.shape for o in objs}))
    n = scene.count(shape=shape)
    if n >= 2 and (rng.random() < 0.5 or not scene.free_cells()):
        drop = rng.choice([k for k, o in enumerate(objs) if o.shape == shape])
        edited, m = objs[:drop] + objs[drop + 1:], n - 1
    elif scene.free_cells():
        edited, m = objs + place([(rng.choice(COLOURS), shape)], rng, taken=[o.cell for o in objs]), n + 1
    else:
        return None
    return Count(n, shape), Count(m, shape), Scene(tuple(edited))


def _mirror_compare(scene: Scene, objs: list, rng: random.Random) -> Mirror | None:
    counts = Counter(o.shape for o in objs)
    pairs = [(x, y) for x, y in itertools.permutations(SHAPES, 2) if counts[x] != counts[y] and counts[x]]
    if not pairs:
        return None
    x, y = rng.choice(pairs)
    swap = {x: y, y: x}
    edited = Scene(tuple(dataclasses.replace(o, shape=swap.get(o.shape, o.shape)) for o in objs))
    rel = "more" if counts[x] > counts[y] else "fewer"
    return Compare(rel, x, y), Compare("fewer" if rel == "more" else "more", x, y), edited


_MIRRORS = {
    "colour": _mirror_colour,
    "attribute_swap": _mirror_attribute_swap,
    "count": _mirror_count,
    "spatial": _mirror_spatial,
    "compare": _mirror_compare,
    "spatial_3": _mirror_spatial,  # on 3-object scenes, as TraVLR's spatiality task draws them
}


def _mirror(scene: Scene, kind: str, rng: random.Random) -> Mirror | None:
    """A minimal pair of statements (A, B) and an edit of ``scene`` that flips both: A is true and B
    false on ``scene``, B true and A false on the returned scene. None if ``scene`` does not fit.

    * colour: "There is a red circle." / "There is a blue circle." (one object recoloured);
    * attribute_swap: "There is a red circle and a blue square." / "... a blue circle and a red
      square." (the two objects swap colours);
    * count: "There are 2 circle objects." / "There are 3 ..." (a circle added or removed);
    * spatial: "The red circle is to the left of the blue square." / "... to the right of ..." (the
      two objects swap cells);
    * compare: "There are more circles than squares." / "There are fewer ..." (the two shapes swap).
    """
    if kind not in _MIRRORS:
        raise ValueError(f"unknown held-out kind {kind!r}; choose from {HELDOUT_KINDS}")
    return _MIRRORS[kind](scene, list(scene.objects), rng)


def heldout_examples(kind: str, n: int, seed: int = 0, exclude: set | frozenset = frozenset()):
    """``n`` (scene, true statement, false statement) triples of ``kind`` on scenes from the held-out
    seed stream (``"vlprobe-mini-clip:heldout:<kind>:<seed>"``), none with a key in ``exclude``.

    They come in mirrored pairs (:func:`_mirror`): (scene, A, B) then (edited scene, B, A), so the
    same two texts appear once as the true one and once as the foil. A scorer that ignores the image
    gets exactly half of every pair right: chance is 0.5, whatever its preference between texts."""
    if kind not in HELDOUT_KINDS:
        raise ValueError(f"unknown held-out kind {kind!r}; choose from {HELDOUT_KINDS}")
    if n % 2:
        raise ValueError(f"held-out items come in mirrored pairs: n must be even, got {n}")
    rng = random.Random(f"{NAMESPACE}:heldout:{kind}:{seed}")
    out = []
    seen: set = set()
    while len(out) < n:
        if kind == "spatial_3":
            scene = Scene(tuple(place([(rng.choice(COLOURS), rng.choice(SHAPES)) for _ in range(3)], rng)))
        else:
            scene = sample_training_scene(rng)
        got = _mirror(scene, kind, rng)
        if got is None:
            continue
        a, b, edited = got
        keys = (scene.key(), edited.key())
        if any(k in exclude or k in seen for k in keys) or holdout_violation(a) or holdout_violation(b):
            continue
        if not (truth(scene, a) and not truth(scene, b) and truth(edited, b) and not truth(edited, a)):
            raise AssertionError(f"held-out {kind}: a mirrored pair that does not flip: {a.text()} / {b.text()}")
        seen.update(keys)
        out += [(scene, a, b), (edited, b, a)]
    return out


def heldout_items(kind: str, n: int, seed: int = 0, exclude: set | frozenset = frozenset()):
    """Items (1 image x [true text, false text], gold [[1, 0]]) of :func:`heldout_examples`; images
    are 500 x 500 PIL renderings, as the dataset folders hold them."""
    from vlprobe.dataset.items import Item

    items = []
    for i, (scene, stmt, bad) in enumerate(heldout_examples(kind, n, seed, exclude)):
        items.append(Item(id=f"{kind}-{i:04d}", images=(render(scene),), texts=(stmt.text(), bad.text()),
                          gold=[[1, 0]], tags=(f"kind={kind}",), config=kind))
    return items


def pairwise_accuracy(scores: Sequence[np.ndarray], items: Sequence[Any]) -> dict:
    """``vlprobe.metric.compute`` on the items' matrices: its full result."""
    from vlprobe import metric

    return metric.compute(predictions=[np.asarray(s) for s in scores], references=[it.gold for it in items])


def _direct_heldout(model, tokenizer, size: int, examples_by_kind: dict, batch: int = 256) -> dict[str, float]:
    """acc_r per kind with the in-training model (images resized as the processor does)."""
    import torch

    out = {}
    model.eval()
    with torch.inference_mode():
        for kind, (small, examples) in examples_by_kind.items():
            img = torch.cat([_image_embeds(model, pixel_values(small[i:i + batch])) for i in range(0, len(small), batch)])
            texts = [t for _, s, b in examples for t in (s.text(), b.text())]
            txt = _text_embeds(model, tokenizer, texts)
            scale = model.logit_scale.exp().item()
            scores = [(scale * img[k:k + 1] @ txt[2 * k:2 * k + 2].T).numpy() for k in range(len(examples))]
            gold = [np.array([[True, False]])] * len(examples)
            from vlprobe import metric

            out[kind] = float(metric.compute(predictions=scores, references=gold)["acc_r"])
    model.train()
    return out


def _image_embeds(model, pixels):
    import torch

    out = model.get_image_features(pixel_values=pixels)
    emb = out if isinstance(out, torch.Tensor) else out.pooler_output
    return torch.nn.functional.normalize(emb, dim=-1)


def _text_embeds(model, tokenizer, texts: list[str]):
    import torch

    enc = tokenizer(texts, padding=True, truncation=True, max_length=tokenizer.model_max_length, return_tensors="pt")
    out = model.get_text_features(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"])
    emb = out if isinstance(out, torch.Tensor) else out.pooler_output
    return torch.nn.functional.normalize(emb, dim=-1)


# ---- training --------------------------------------------------------------------------------------
def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def cap_rng_draw(cfg: TrainConfig, epoch: int, i: int) -> bool:
    """Whether mirrored pair ``i`` is captioned by its two statements in ``epoch`` (a seeded draw)."""
    return random.Random(f"{NAMESPACE}:mirror:{cfg.seed}:{epoch}:{i}").random() < cfg.mirror_caption


def train(cfg: TrainConfig, out: str | Path | None, root: str | Path | None = ".", log_every: int = 20) -> dict:
    """Train mini-clip with ``cfg``; save it (model, tokenizer, processor, ``training_log.json``) to
    ``out`` unless None. Returns the training record (settings, timings, losses, held-out scores)."""
    import torch
    from transformers import CLIPProcessor

    t0 = time.perf_counter()
    load_start = os.getloadavg()[0]
    torch.set_num_threads(cfg.threads)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(cfg.seed)

    eval_keys = evaluation_scene_keys(root)
    scenes, rejected, mirror_pairs = training_set(cfg, exclude=eval_keys)
    train_keys = {s.key() for s in scenes}
    _log(f"mini-clip: {len(scenes)} training scenes (draws rejected: {rejected}), "
         f"{len(eval_keys)} evaluation scenes excluded")
    tokenizer = build_tokenizer(cfg)
    model = build_model(cfg, tokenizer)
    n_params = sum(p.numel() for p in model.parameters())
    _log(f"mini-clip: vocabulary {len(tokenizer)}, {n_params / 1e6:.2f} M parameters")

    t_render = time.perf_counter()
    images = render_small(scenes, cfg.image_size, equal_area_flags(cfg, len(scenes)))
    heldout = {}
    for kind in HELDOUT_KINDS:
        ex = heldout_examples(kind, cfg.heldout_per_kind, cfg.seed, exclude=eval_keys | train_keys)
        heldout[kind] = (render_small([e[0] for e in ex], cfg.image_size), ex)
    render_s = time.perf_counter() - t_render
    _log(f"mini-clip: rendered {len(images)} training + {sum(len(v[1]) for v in heldout.values())} held-out "
         f"images in {render_s:.1f}s")

    decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and "embedding" not in n]
    no_decay = [p for n, p in model.named_parameters() if not (p.ndim >= 2 and "embedding" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr, betas=(0.9, 0.98), eps=1e-6)
    steps_per_epoch = len(scenes) // cfg.batch_size
    total = steps_per_epoch * cfg.epochs

    def lr_at(step: int) -> float:
        if step < cfg.warmup_steps:
            return cfg.lr * (step + 1) / cfg.warmup_steps
        progress = (step - cfg.warmup_steps) / max(1, total - cfg.warmup_steps)
        return cfg.min_lr + 0.5 * (cfg.lr - cfg.min_lr) * (1 + math.cos(math.pi * progress))

    token_cache: dict[str, list[int]] = {}
    history: list[dict] = []
    epochs_log: list[dict] = []
    step = 0
    t_train = time.perf_counter()
    model.train()
    for epoch in range(cfg.epochs):
        if mirror_pairs:  # a mirrored pair stays together (it may straddle two batches)
            units = [(i, mirror_pairs[i][0]) if i in mirror_pairs else (i,) for i in range(len(scenes))
                     if i not in mirror_pairs or mirror_pairs[i][0] > i]
            units = random.Random(f"{NAMESPACE}:order:{cfg.seed}:{epoch}").sample(units, len(units))
            order = [i for unit in units for i in unit]
        else:
            order = random.Random(f"{NAMESPACE}:order:{cfg.seed}:{epoch}").sample(range(len(scenes)), len(scenes))
        mirrored = {i for i in mirror_pairs if i < mirror_pairs[i][0] and cap_rng_draw(cfg, epoch, i)}
        cap_rng = random.Random(f"{NAMESPACE}:captions:{cfg.seed}:{epoch}")
        running = []
        for b in range(steps_per_epoch):
            idx = sorted(order[b * cfg.batch_size:(b + 1) * cfg.batch_size])
            batch_scenes = [scenes[i] for i in idx]
            texts: dict[str, Statement] = {}
            pairs: list[tuple[int, str, str]] = []  # (image, its caption, its hard negative)
            for k, scene in enumerate(batch_scenes):
                i = idx[k]
                if i in mirror_pairs and min(i, mirror_pairs[i][0]) in mirrored:
                    _, stmt, bad = mirror_pairs[i]
                    text, bad_text = stmt.text(), bad.text()
                    texts.setdefault(text, stmt)
                    texts.setdefault(bad_text, bad)
                    pairs.append((k, text, bad_text))
                    continue
                stmt, bad, text, bad_text = sample_caption(scene, cap_rng)
                texts.setdefault(text, stmt)
                if bad_text is not None and cap_rng.random() < cfg.foil_fraction:
                    texts.setdefault(bad_text, bad)
                    pairs.append((k, text, bad_text))
            text_list = list(texts)
            gold = torch.tensor([[safe_truth(sc, texts[t]) for t in text_list] for sc in batch_scenes])
            missing = [t for t in text_list if t not in token_cache]
            if missing:
                for t, ids in zip(missing, tokenizer(missing, truncation=True, max_length=cfg.max_length)["input_ids"]):
                    token_cache[t] = ids
            width = max(len(token_cache[t]) for t in text_list)
            input_ids = torch.full((len(text_list), width), tokenizer.pad_token_id, dtype=torch.long)
            mask = torch.zeros((len(text_list), width), dtype=torch.long)
            for j, t in enumerate(text_list):
                ids = token_cache[t]
                input_ids[j, :len(ids)] = torch.tensor(ids)
                mask[j, :len(ids)] = 1

            for group in opt.param_groups:
                group["lr"] = lr_at(step)
            img = _image_embeds(model, pixel_values(images[idx]))
            text_out = model.get_text_features(input_ids=input_ids, attention_mask=mask)
            txt = torch.nn.functional.normalize(
                text_out if isinstance(text_out, torch.Tensor) else text_out.pooler_output, dim=-1)
            logits = model.logit_scale.exp() * img @ txt.T
            loss = multi_positive_clip_loss(logits, gold)
            if cfg.separation_weight and pairs:
                column = {t: j for j, t in enumerate(text_list)}
                ta = txt[torch.tensor([column[t] for _, t, _ in pairs])]
                tb = txt[torch.tensor([column[f] for _, _, f in pairs])]
                hinge = torch.relu((ta * tb).sum(1) - cfg.separation_margin).mean()
                where = {i: k for k, i in enumerate(idx)}
                partners = [(k, where[mirror_pairs[i][0]]) for k, i in enumerate(idx)
                            if i in mirror_pairs and mirror_pairs[i][0] in where and mirror_pairs[i][0] > i]
                if partners:
                    ia = img[torch.tensor([a for a, _ in partners])]
                    ib = img[torch.tensor([b for _, b in partners])]
                    hinge = hinge + torch.relu((ia * ib).sum(1) - cfg.separation_margin).mean()
                loss = loss + cfg.separation_weight * hinge
            if cfg.pair_weight and pairs:
                column = {t: j for j, t in enumerate(text_list)}
                rows = torch.tensor([k for k, _, _ in pairs])
                two = torch.stack([logits[rows, torch.tensor([column[t] for _, t, _ in pairs])],
                                   logits[rows, torch.tensor([column[f] for _, _, f in pairs])]], dim=1)
                loss = loss + cfg.pair_weight * torch.nn.functional.cross_entropy(two, torch.zeros(len(pairs), dtype=torch.long))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            with torch.no_grad():
                model.logit_scale.clamp_(0, math.log(100))
            running.append(loss.item())
            step += 1
            if step % log_every == 0:
                mean = sum(running[-log_every:]) / len(running[-log_every:])
                history.append({"step": step, "loss": round(mean, 4), "logit_scale": round(model.logit_scale.exp().item(), 3)})
                _log(f"step {step}/{total} epoch {epoch} loss {mean:.4f} scale {model.logit_scale.exp().item():.1f} "
                     f"texts/batch {len(text_list)} {time.perf_counter() - t_train:.0f}s")
        acc = _direct_heldout(model, tokenizer, cfg.image_size, heldout)
        epochs_log.append({"epoch": epoch, "loss": round(sum(running) / len(running), 4),
                           "last_loss": round(sum(running[-log_every:]) / len(running[-log_every:]), 4),
                           "heldout_acc_r": {k: round(v, 4) for k, v in acc.items()},
                           "seconds": round(time.perf_counter() - t_train, 1)})
        _log(f"epoch {epoch}: {json.dumps(epochs_log[-1])}")

    train_s = time.perf_counter() - t_train
    model.eval()
    record = {
        "config": cfg.to_dict(),
        "parameters": n_params,
        "vocabulary": len(tokenizer),
        "training_scenes": len(scenes),
        "rejected_draws": rejected,
        "evaluation_scenes_excluded": len(eval_keys),
        "steps": total,
        "render_seconds": round(render_s, 1),
        "train_seconds": round(train_s, 1),
        "total_seconds": round(time.perf_counter() - t0, 1),
        "final_loss": epochs_log[-1]["last_loss"] if epochs_log else None,
        "final_logit_scale": round(model.logit_scale.exp().item(), 3),
        "epochs": epochs_log,
        "history": history,
        "torch": torch.__version__,
        "load_average": {"start": round(load_start, 2), "end": round(os.getloadavg()[0], 2)},
    }
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(out)
        CLIPProcessor(image_processor=build_image_processor(cfg), tokenizer=tokenizer).save_pretrained(out)
        (out / "training_log.json").write_text(json.dumps(record, indent=1) + "\n")
        _log(f"mini-clip: saved to {out} ({folder_megabytes(out):.2f} MB)")
    return record


def folder_megabytes(folder: str | Path) -> float:
    return sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file()) / 1e6


def heldout_exclusion(folder: str | Path, root: str | Path | None = ".") -> set:
    """Keys no held-out scene may have: the evaluation instruments' scenes and the training scenes
    of the model in ``folder`` (regenerated from the settings in its ``training_log.json``)."""
    log = Path(folder) / "training_log.json"
    if not log.is_file():
        raise FileNotFoundError(f"{log} is missing: cannot tell which scenes {folder} was trained on")
    cfg = TrainConfig(**json.loads(log.read_text())["config"])
    eval_keys = evaluation_scene_keys(root)
    return eval_keys | {s.key() for s in training_scenes(cfg, eval_keys)[0]}


def disjointness_check(folder: str | Path, root: str | Path = ".") -> dict[str, Any]:
    """Check, independently of the exclusion done in training, that no training scene of the model in
    ``folder`` (regenerated from its ``training_log.json``) is a scene of a built dataset folder under
    ``root`` (``travlr/data``, ``winoground_style/data``, every config and split, as they are now) or
    of the generators at their default seed and sizes. Returns the counts and the overlap."""
    log = Path(folder) / "training_log.json"
    cfg = TrainConfig(**json.loads(log.read_text())["config"])
    generator_keys = evaluation_scene_keys(None)
    folder_keys = _folder_scene_keys(Path(root))
    train_keys = {s.key() for s in training_scenes(cfg, generator_keys | folder_keys)[0]}
    # the training stream with no exclusion at all: had any draw been dropped, it would show here
    unfiltered = {s.key() for s in training_scenes(cfg)[0]}
    folders = sorted(str(p.relative_to(root)) for f in ("travlr", "winoground_style")
                     for p in (Path(root) / f / "data").glob("*") if p.is_dir())
    return {
        "training_scenes": len(train_keys),
        "same_as_unfiltered_stream": train_keys == unfiltered,
        "folder_scenes": len(folder_keys),
        "folders": folders,
        "generator_scenes": len(generator_keys),
        "overlap_with_folders": len(train_keys & folder_keys),
        "overlap_with_generators": len(train_keys & generator_keys),
    }


def text_lengths(folder: str | Path, root: str | Path = ".") -> dict[str, Any]:
    """The longest tokenized text of the built folders under ``root`` with the tokenizer in ``folder``
    (no truncation): TraVLR's query, foil and caption + query / caption + foil (what ``--modality
    caption`` and ``both`` score), and the Winoground-style captions; and how many texts hold
    ``<|unk|>``."""
    import pyarrow.parquet as pq
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(folder))
    longest: dict[str, Any] = {"tokens": 0, "where": None}
    n_texts = unknown = 0

    def measure(texts: list[str], where: str) -> None:
        nonlocal n_texts, unknown
        for ids in tok(texts, truncation=False, verbose=False)["input_ids"]:
            n_texts += 1
            unknown += tok.unk_token_id in ids
            if len(ids) > longest["tokens"]:
                longest.update(tokens=len(ids), where=where)

    for path in sorted((Path(root) / "travlr" / "data").glob("*/*.parquet")):
        rows = pq.read_table(path, columns=["caption", "query", "foil_query"]).to_pylist()
        where = f"travlr {path.parent.name} {path.name.split('-')[0]}"
        measure([r[c] for r in rows for c in ("query", "foil_query")], where + " (query)")
        measure([f"{r['caption']} {r[c]}" for r in rows for c in ("query", "foil_query")], where + " (caption + query)")
    for path in sorted((Path(root) / "winoground_style" / "data").glob("**/*.parquet")):
        cols = [c for c in pq.read_schema(path).names if c.startswith("caption")]
        rows = pq.read_table(path, columns=cols).to_pylist()
        measure([r[c] for r in rows for c in cols], f"winoground_style {path.parent.name} (caption)")
    return {"max_length": int(tok.model_max_length), "longest": longest, "texts": n_texts, "with_unknown": unknown}


def evaluate_saved(folder: str | Path, n: int = 200, seed: int = 0, kinds: Iterable[str] = HELDOUT_KINDS,
                   root: str | Path | None = ".") -> dict[str, dict]:
    """Held-out results of a saved model through the real path (``load_scorer`` + the engine +
    ``vlprobe.metric.compute``): per kind, acc_r and the number of items."""
    from vlprobe.scorers import load_scorer
    from vlprobe.scoring.engine import score_items

    exclude = heldout_exclusion(folder, root)
    scorer = load_scorer(str(folder), device="cpu")
    results = {}
    for kind in kinds:
        items = heldout_items(kind, n, seed, exclude=exclude)
        res = score_items(scorer, items, batch_size=64, progress=False)
        m = pairwise_accuracy(res.scores, items)
        results[kind] = {"acc_r": round(float(m["acc_r"]), 4), "n_items": int(m["n_items"]), "n_ties": m.get("n_ties")}
    return results


# ---- the model card ----------------------------------------------------------------------------------
# the prose is a Jinja template rendered with huggingface_hub's card API; here only its values are computed
CARD_TEMPLATE = Path(__file__).resolve().parent / "templates" / "mini_clip_card.md"
KIND_TEXT = {
    "colour": '"There is a red circle." vs "There is a blue circle." (one object recoloured)',
    "attribute_swap": '"There is a red circle and a blue square." vs the colours swapped',
    "count": '"There are 2 circle objects." vs "There are 3 circle objects." (one object added or removed)',
    "spatial": '"The red circle is to the left of the blue square." vs "to the right of" (the two swap cells)',
    "compare": '"There are more circles than squares." vs "fewer" (the two shapes swap)',
    "spatial_3": 'as spatial, on scenes of 3 objects (the size of TraVLR\'s spatiality scenes)',
}


def retrain_command(cfg: TrainConfig) -> str:
    """The command line that reproduces ``cfg`` (only the settings that differ from the defaults)."""
    defaults = TrainConfig()
    flags = [f"--{k.replace('_', '-')} {v}" for k, v in cfg.to_dict().items() if getattr(defaults, k) != v]
    return " ".join([".venv/bin/python -m vlprobe_train", *flags])


def model_card(record: dict, instruments_table: str | None = None) -> str:
    """``README.md`` of the saved model, from its training record (``training_log.json``) and, when
    given, the markdown table of its ``vlprobe evaluate`` scores on the synthetic instruments."""
    cfg = TrainConfig(**record["config"])
    heldout = record.get("heldout_via_load_scorer") or {}
    rows = "\n".join(
        f"| {kind} | {KIND_TEXT.get(kind, '')} | {v['n_items']} | {v['acc_r']:.3f} |" for kind, v in heldout.items()
    )
    load = record.get("load_average") or {}
    load_text = (f" The 1-minute load average was {load.get('start', float('nan')):.1f} at the start and "
                 f"{load.get('end', float('nan')):.1f} at the end (other people's jobs share these two cores)."
                 if load else "")
    epochs = "\n".join(
        f"| {e['epoch']} | {e['loss']:.3f} | {e['last_loss']:.3f} | "
        + " | ".join(f"{e['heldout_acc_r'].get(k, float('nan')):.2f}" for k in HELDOUT_KINDS) + f" | {e['seconds']:.0f} |"
        for e in record.get("epochs", [])
    )
    above = ", ".join(k for k, v in heldout.items() if v["acc_r"] >= 0.6) or "none"
    near = ", ".join(k for k, v in heldout.items() if v["acc_r"] < 0.6) or "none"
    instruments = instruments_table or (
        "Not measured yet: run `vlprobe evaluate` (no arguments) and regenerate this card with "
        "`.venv/bin/python -m vlprobe_train --card-only --results runs/default/results.json`."
    )
    checks = record.get("checks") or {}
    dis, lengths = checks.get("disjointness"), checks.get("text_lengths")
    if dis:
        ok = dis["overlap_with_folders"] == 0 and dis["overlap_with_generators"] == 0
        disjointness = (
            f"Checked when this card was written (`disjointness_check`): the {dis['training_scenes']:,} training "
            f"scenes, regenerated from the seed, against the {dis['folder_scenes']:,} distinct scenes of the built "
            f"folders ({', '.join(dis['folders']) or 'none found'}) and the {dis['generator_scenes']:,} of the "
            f"generators: {dis['overlap_with_folders']} and {dis['overlap_with_generators']} in common"
            + (" (none)." if ok else " (NOT DISJOINT).")
            + (" The training scenes are the first distinct draws of their stream: no draw was dropped."
               if dis["same_as_unfiltered_stream"] else "")
        )
    else:
        disjointness = "Not checked against built folders (none were given)."
    if lengths and lengths["longest"]["where"]:
        fits = lengths["longest"]["tokens"] <= cfg.max_length
        verdict = (f"every one of their {lengths['texts']:,} texts is read whole" if fits
                   else "SOME ARE TRUNCATED")
        length_text = (f"the longest text of the built folders, measured when this card was written, is "
                       f"{lengths['longest']['tokens']} tokens ({lengths['longest']['where']}, with the start and end "
                       f"tokens), so {verdict}"
                       f"; {lengths['with_unknown']} of them hold an unknown word")
    else:
        length_text = "no built folder was measured"
    recipe = []
    if cfg.small_scene_fraction:
        recipe.append(f"{cfg.small_scene_fraction:.0%} of the training scenes hold only 2-4 objects")
    if cfg.mirror_fraction:
        recipe.append(f"{cfg.mirror_fraction:.0%} of the draws come with the scene of their minimal edit (an object "
                      "recoloured, two objects' colours or cells swapped, an object added or removed, two shapes "
                      "swapped; a mirrored pair, kept in one batch, its partner checked for disjointness like any "
                      f"scene), and each epoch {cfg.mirror_caption:.0%} of the pairs are captioned by their two "
                      "distinguishing statements (each true of one image and false of the other)")
    if cfg.separation_weight:
        recipe.append(f"a hinge (weight {cfg.separation_weight}) on the cosine, above {cfg.separation_margin}, of a "
                      "caption and its hard negative (text tower) and of the two scenes of a mirrored pair in the "
                      "batch (image tower)")
    if cfg.pair_weight:
        recipe.append(f"a 2-way softmax over (caption, hard negative) per image, weight {cfg.pair_weight}")
    if cfg.vision_position_std:
        recipe.append("the image tower's position embeddings start as a 2-D sine/cosine code of (row, column) "
                      f"with std {cfg.vision_position_std} (not transformers' random std 0.02)")
    recipe_text = ("\n\nAlso: " + "; ".join(recipe) + ".") if recipe else ""
    note = f" {record['note']}" if record.get("note") else ""
    values = {
        "recipe_text": recipe_text,
        "note": note,
        "cfg": cfg,
        "disjointness": disjointness,
        "length_text": length_text,
        "equal_area": f"{cfg.equal_area_fraction:.0%}",
        "vocabulary": record["vocabulary"],
        "logit_scale": f"{record['final_logit_scale']:.2f}",
        "parameters": f"{record['parameters']:,}",
        "megabytes": f"{record.get('megabytes', float('nan')):.2f}",
        "training_scenes": f"{record['training_scenes']:,}",
        "foil_fraction": f"{cfg.foil_fraction:.0%}",
        "evaluation_scenes_excluded": f"{record['evaluation_scenes_excluded']:,}",
        "rejected_excluded": record["rejected_draws"].get("excluded", 0),
        "rejected_duplicate": record["rejected_draws"].get("duplicate", 0),
        "retrain_command": retrain_command(cfg),
        "steps": record["steps"],
        "total_minutes": f"{record['total_seconds'] / 60:.1f}",
        "train_minutes": f"{record['train_seconds'] / 60:.1f}",
        "render_seconds": f"{record['render_seconds']:.0f}",
        "torch_version": record["torch"],
        "load_text": load_text,
        "final_loss": f"{record['final_loss']:.3f}",
        "heldout_kinds": list(HELDOUT_KINDS),
        "epochs": epochs,
        "rows": rows,
        "instruments": instruments,
        "above": above,
        "near": near,
    }
    from huggingface_hub import ModelCard, ModelCardData

    card_data = ModelCardData(license="mit", library_name="transformers", pipeline_tag="zero-shot-image-classification",
                              language=["en"], tags=["clip", "vlprobe", "synthetic", "travlr", "test-model"])
    card = ModelCard.from_template(card_data, template_path=str(CARD_TEMPLATE), **values)
    return str(card).rstrip() + "\n"


def instruments_table(results_json: str | Path) -> str:
    """A markdown table of a ``vlprobe evaluate`` run (its ``results.json``): per dataset, config
    and split, the items and the pairwise / Winoground metrics, each with its chance level."""
    doc = json.loads(Path(results_json).read_text())
    shown = ("acc_r", "text", "image", "group")
    lines = ["| dataset | config | split | items | " + " | ".join(f"{m} (chance)" for m in shown) + " |",
             "|---|---|---|---|" + "---|" * len(shown)]
    for res in doc.get("results", []):
        metrics = res.get("metrics", {})
        chance = metrics.get("chance") or {}
        ci = metrics.get("ci") or {}
        cells = []
        grid = metrics.get("image") is not None  # text/group mean something beyond acc_r only for m x n items
        for m in shown:
            value = metrics.get(m)
            if value is None or (m in ("text", "group") and not grid):
                cells.append("")
                continue
            text = f"{value:.3f}"
            if m in ci and ci[m]:
                low, high = (ci[m].get("low"), ci[m].get("high")) if isinstance(ci[m], dict) else tuple(ci[m])[:2]
                text += f" [{low:.2f}, {high:.2f}]"
            if chance.get(m) is not None:
                text += f" ({chance[m]:.2f})"
            cells.append(text)
        lines.append(f"| {Path(str(res.get('dataset'))).name} | {res.get('config')} | {res.get('split')} | "
                     f"{metrics.get('n_items', '')} | " + " | ".join(cells) + " |")
    has_ci = any((r.get("metrics") or {}).get("ci") for r in doc.get("results", []))
    return ("From `vlprobe evaluate` with no arguments (the offline default: the built `travlr` and "
            "`winoground_style` folders, their test splits, this model). Pairwise accuracy `acc_r` for "
            "every item; Winoground's text, image and group scores for the 2 x 2 items; the chance level "
            f"of each metric in parentheses{', its 95% bootstrap interval in brackets' if has_ci else ''}. "
            "TraVLR's items are not mirrored like the held-out ones above, so a preference between the two "
            "texts that ignores the image can move `acc_r` away from 0.5 in either direction. A text (image) "
            "score far below its chance level means the same caption (image) wins in both rows (columns) of "
            "most 2 x 2 items: a preference that does not follow the small difference between the two images.\n\n"
            + "\n".join(lines))
