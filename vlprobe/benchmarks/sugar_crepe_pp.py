"""SugarCREPE++ (Dumpala et al., NeurIPS 2024 Datasets and Benchmarks): 5 subsets on COCO val2017, 1 image
x [caption, caption2, negative_caption], two true captions (a paraphrase pair) and one negative."""

from .base import Benchmark, TextOnly, TieRule, Upstream, UpstreamFile, table

# Per subset (file <subset>.json, records with ids 0..count-1): its category, the file's git blob and bytes, records.
_ROWS = table("""
replace_obj replace 3b62823c003659737a68c3d78cfe721c57b44f5f 456601 1652
replace_att replace be89e623f6fd54d015f6a437ba9a34ffa39cc465 226275  788
replace_rel replace 69d447e3fcb33817b866bd5688741f42bad7c26a 392738 1406
swap_obj    swap    8e9c3f66a2c2d3369146dec5324b1926b2fc1d40  74611  245
swap_att    swap    61ea987bbac7d8c99e6a88f3c1028609fbea6c73 198206  666
""", {5})
SUBSETS = tuple(row[0] for row in _ROWS)
CATEGORIES = {row[0]: row[1] for row in _ROWS}
COUNTS = {row[0]: int(row[4]) for row in _ROWS}

UPSTREAM = Upstream(
    "SugarCREPE++", "Sri-Harsha/scpp", "c083bbf039a5ca215acaf25e7ee736d2ea6f3864", "data/",
    tuple(UpstreamFile(f"{subset}.json", blob, int(size)) for subset, _, blob, size, _ in _ROWS),
    "VLPROBE_SUGAR_CREPE_PP_ANNOTATIONS_URL", "CC BY 4.0 (README; the repository's LICENSE file is MIT)",
)

CITATION = """\
@inproceedings{dumpala2024sugarcrepepp,
  title={SUGARCREPE++ Dataset: Vision-Language Model Sensitivity to Semantic and Lexical Alterations},
  author={Dumpala, Sri Harsha and Jaiswal, Aman and Sastry, Chandramouli and Milios, Evangelos and Oore, Sageev and Sajjad, Hassan},
  booktitle={The Thirty-eighth Conference on Neural Information Processing Systems Datasets and Benchmarks Track},
  year={2024},
  note={arXiv:2406.11171}
}
"""  # noqa: E501  (a BibTeX entry, as its authors give it)

BENCHMARK = Benchmark(
    name="sugar_crepe_pp", title="SugarCREPE++ (Dumpala et al., NeurIPS 2024)", short="SugarCREPE++",
    source="SugarCREPE++ (Dumpala et al., NeurIPS 2024), ITT per subset as VLMs/test_*.py",
    # ITT is set_acc on [[1, 1, 0]]; acc_r the mean of the authors' Image-P1-Neg and Image-P2-Neg accuracies
    headline=("set_acc", "acc_r"),
    configs=SUBSETS, config_tag="subset", config_noun="subset",
    tie_rule=TieRule("strict", "a tie is wrong: the authors' ITT needs both true captions strictly above the "
                               "negative"),
    # the paper's TOT is vlprobe's text-only text score
    text_only=TextOnly(
        source="SugarCREPE++ (Dumpala et al., NeurIPS 2024), TOT per subset as VLMs/test_*.py",
        names={"text": "TOT"},
        tie_rule=TieRule("strict", "a tie is wrong: the authors' TOT needs cos(P1, P2) strictly above cos(P1, neg) "
                                   "and cos(P2, neg)")),
    builder="sugar_crepe_pp", upstream=UPSTREAM, counts=COUNTS, citation=CITATION,
    data_version="c083bbf",
)
