"""SugarCREPE (Hsieh et al., NeurIPS 2023 Datasets and Benchmarks): 7 hard-negative subsets on COCO
val2017, 1 image x [caption, negative_caption]."""

from .base import Benchmark, Group, PaperTable, TieRule, Upstream, UpstreamFile, table

# Per subset (file <subset>.json): the paper's group, the file's git blob and bytes, its records (7,511, as Table 1).
_ROWS = table("""
add_obj     add     289b22a04690f6f542bb048346021d768ec9b24d 484593 2062
add_att     add     71c463725f3f9bae0a9227a01ae5d431db235396 158863  692
replace_obj replace 1585a4a6998d785c043fb923d8e0248436d9da51 361126 1652
replace_att replace 6393e04971c06cb62a8fed62ef2805ff6c7c5666 176843  788
replace_rel replace 8716359e17fa36d37e75c6eff5e94826cdb047e5 312629 1406
swap_obj    swap    db5abe6b488fa38c4b67d1d3da87b6b5c2e1e626  57569  245
swap_att    swap    375fdd6d372e22e43c0dfbe898c1ec1494016b8c 154665  666
""", {5})
SUBSETS = tuple(row[0] for row in _ROWS)
GROUPS: dict[str, tuple[str, ...]] = {g: tuple(r[0] for r in _ROWS if r[1] == g) for g in dict.fromkeys(r[1] for r in _ROWS)}
COUNTS = {row[0]: int(row[4]) for row in _ROWS}

UPSTREAM = Upstream(
    "SugarCREPE", "RAIVNLab/sugar-crepe", "0047054b243992f0fad63d6f64f7544862daf846", "data/",
    tuple(UpstreamFile(f"{subset}.json", blob, int(size)) for subset, _, blob, size, _ in _ROWS),
    "VLPROBE_SUGAR_CREPE_ANNOTATIONS_URL", "MIT",
)

# The only figures upstream gives as text (the paper's and the README's model tables are images).
GPT4V_TABLE = "gpt-4v-results/readme.md"

CITATION = """\
@inproceedings{hsieh2023sugarcrepe,
  title={SugarCrepe: Fixing Hackable Benchmarks for Vision-Language Compositionality},
  author={Hsieh, Cheng-Yu and Zhang, Jieyu and Ma, Zixian and Kembhavi, Aniruddha and Krishna, Ranjay},
  booktitle={Thirty-Seventh Conference on Neural Information Processing Systems Datasets and Benchmarks Track},
  year={2023}
}
"""

BENCHMARK = Benchmark(
    name="sugar_crepe", title="SugarCREPE (Hsieh et al., NeurIPS 2023)", short="SugarCREPE",
    source="SugarCREPE (Hsieh et al., NeurIPS 2023), accuracy per subset as main_eval.py",
    headline=("acc_r",),  # main_eval.py: accuracy per subset, right when pos > neg
    configs=SUBSETS, config_tag="subset", config_noun="subset",
    # ADD / REPLACE / SWAP = the micro-average over their subsets' items (the pooled accuracy), as the authors
    # answer for the paper's category figures: https://github.com/RAIVNLab/sugar-crepe/issues/3 ("Table 5 values
    # but broken down into obj, attr, and rel": "yes it is micro-average", JieyuZ2, 2023-10-03)
    groups=tuple(Group(name, name.upper(), members, ("acc_r",), average="micro") for name, members in GROUPS.items()),
    tie_rule=TieRule("strict", "a tie is wrong: the authors' main_eval.py counts pos > neg"),
    paper_tables=(PaperTable(GPT4V_TABLE, "upstream README, gpt-4v-results/readme.md"),),
    paper_note=(
        "SugarCREPE (Hsieh et al., NeurIPS 2023): the paper's and the upstream README's model tables are images; the "
        "only figures upstream gives as text are GPT-4V's, in RAIVNLab/sugar-crepe's gpt-4v-results/readme.md: a "
        "prompted choice ('Which caption best describes the image? (1) ... (2) ... Output (1) or (2).'), the positive "
        "caption first or the negative first, not a similarity score. Its swap_obj counts 246 items; the pinned file "
        "vlprobe builds from has 245 (item 108 removed upstream)."),
    builder="sugar_crepe", upstream=UPSTREAM, counts=COUNTS, citation=CITATION,
    # 546eb51 removed swap_obj item 108 (246 -> 245; 6e45274 before it); the pinned 0047054 holds its files
    data_version="546eb51",
)
