"""VALSE (Parcalabescu et al., ACL 2022): 11 instruments in 6 pieces + FOIL-it!, 1 image x [caption, foil]."""

from .base import Benchmark, Group, PaperTable, TieRule, Upstream, UpstreamFile, table

# Table 2's columns, in order: each instrument's piece, upstream file (its git blob and bytes), and the paper's Table 5
# #Valid (what a default build holds) and #Inst. (with --include-invalid).
_ROWS = table("""
existence              existence   existence.json            b3a65479f36ddc60f419c243a14da1fbfcba71db  420403 505  534
plurality              plurality   plurals.json              040fc8c011599574d38ca8ef46376bac5e4204a1 1097122 851 1000
counting_balanced      counting    counting-hard.json        80db438e1c27393a7d90217cfd52d4be96484154  537197 868 1000
counting_small_numbers counting    counting-small-quant.json 8458f64b94d02275d2d270781000b79aab964b6c  534996 900 1000
counting_adversarial   counting    counting-adversarial.json 72f5ac7a2c45a59a58c44f9d80cbc555324c3cb2  407394 691  756
relations              relations   relations.json            b3f0a30d41ecd3eec6e36a253ba4de00621eae41  664587 535  614
action_replacement     actions     action-replacement.json   7ba2fd2c2039b82755eef5c16283161063759124  664129 648  779
actant_swap            actions     actant-swap.json          6ca5b8ea4031c953a8a2de4a5e06377a5a11ba17  503017 949 1042
coreference_standard   coreference coreference-standard.json 3dc00f694e14d52f3534e9180e0e2900e5a4d952  592329 708  916
coreference_clean      coreference coreference-hard.json     7db2ec7b4b2a02723f4dd3c3e14c81f23e456cc8   95649 104  141
foil_it                foil_it     foil-it.json              1f2f1c30631c52b98be3bd2383d40dbe855ba908  538911 943 1000
""", {7})
INSTRUMENTS = tuple(row[0] for row in _ROWS)
PIECES: dict[str, tuple[str, ...]] = {p: tuple(r[0] for r in _ROWS if r[1] == p) for p in dict.fromkeys(r[1] for r in _ROWS)}
FILES = {i: file for i, _, file, *_ in _ROWS}
PAPER_VALID = {row[0]: int(row[5]) for row in _ROWS}
PAPER_ALL = {row[0]: int(row[6]) for row in _ROWS}

UPSTREAM = Upstream(
    "VALSE", "Heidelberg-NLP/VALSE", "2152d90d4aecd11f7f74cf03420abcb63efff9c5", "data/",
    tuple(UpstreamFile(file, blob, int(size)) for _, _, file, blob, size, *_ in _ROWS),
    "VLPROBE_VALSE_ANNOTATIONS_URL", "MIT",
)

CITATION = """\
@inproceedings{parcalabescu-etal-2022-valse,
  title = "{VALSE}: A Task-Independent Benchmark for Vision and Language Models Centered on Linguistic Phenomena",
  author = "Parcalabescu, Letitia and Cafagna, Michele and Muradjan, Lilitta and Frank, Anette and Calixto, Iacer and Gatt, Albert",
  booktitle = "Proceedings of the 60th Annual Meeting of the Association for Computational Linguistics (Volume 1: Long Papers)",
  year = "2022",
  pages = "8253--8280",
  url = "https://aclanthology.org/2022.acl-long.567",
}
"""  # noqa: E501  (a BibTeX entry, as its authors give it)

BENCHMARK = Benchmark(
    name="valse", title="VALSE (Parcalabescu et al., ACL 2022)", short="VALSE",
    source="VALSE (Parcalabescu et al., ACL 2022), Table 2",
    # Table 2: acc_r, and with a matching head's probabilities acc, min(p_c, p_f) and AUROC (CLIP-like models: acc_r)
    headline=("acc_r", "acc", "min_p", "auroc"), probability_only=("acc", "min_p", "auroc"),
    configs=INSTRUMENTS, config_tag="instrument", config_noun="instrument",
    parts={i: piece for piece, members in PIECES.items() for i in members}, part_name="piece",
    # "Avg." = the unweighted mean of the 11 instruments, FOIL-it! included (CLIP's 64.0 = mean of its 11 acc_r).
    groups=(Group("avg", "Avg.", INSTRUMENTS),),
    tie_rule=TieRule("strict", "a tie is wrong: the reference code (LXMERT's p_c, the GPT-2 baseline) counts the "
                               "caption right only when it scores strictly above the foil; the paper's formula "
                               "phi(i, f) <= phi(i, c) reads as --ties lenient"),
    caveat_tags=((("valid=false", "valid=0"), "includes items the annotators did not validate (--include-invalid); "
                                              "the paper scores the valid items only"),),
    paper_tables=(PaperTable("Table 2"),), paper_note="VALSE (Parcalabescu et al., ACL 2022), Table 2.",
    builder="valse", upstream=UPSTREAM, counts=PAPER_VALID, citation=CITATION,
    data_version="2152d90",
)
