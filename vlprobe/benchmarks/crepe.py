"""CREPE (Ma, Hong, Gul, Gandhi, Gao, Krishna; 2023): systematicity and productivity, 1 Visual Genome
region x [caption, k hard negatives]."""

from __future__ import annotations

from typing import NamedTuple

from .base import Benchmark, TieRule, Upstream, UpstreamFile, table

# Configs as the authors' scripts name the files (crepe_compo_eval_open_clip.gather_params): systematicity
# per pretraining set, compound split and negative type; productivity per type and complexity.
PRETRAINING = {"cc12m": "CC12M", "yfcc": "YFCC15M", "laion": "LAION-400M"}
COMPOUNDS = ("seen", "unseen")
SYST_TYPES = ("atom", "comp", "combined")  # combined: atom + comp (the README)
PROD_TYPES = ("atom", "swap", "negate")
COMPLEXITIES = tuple(range(4, 13))
SYST_CONFIGS = tuple(f"syst_{p}_{c}_{t}" for p in PRETRAINING for c in COMPOUNDS for t in SYST_TYPES)
PROD_CONFIGS = tuple(f"prod_{t}_{n}" for t in PROD_TYPES for n in COMPLEXITIES)

SYST_ZIP, PROD_ZIP = "syst_hard_negatives.zip", "prod_hard_negatives.zip"
# The two zips at the pinned commit (ordinary blobs, not Git LFS pointers; sizes not known here).
UPSTREAM = Upstream(
    "CREPE", "RAIVNLab/CREPE", "1fa81c425f442396fe304f170c8eb6dc0747c814", "data/",
    (UpstreamFile(SYST_ZIP, "54eebe3a52eaacd978a08f2a5c1aaa7e53b82b4b"),
     UpstreamFile(PROD_ZIP, "e73068643923319ab8bd38a43404a34221d41b41")),
    "VLPROBE_CREPE_ANNOTATIONS_URL",
)


def prod_csv(negative_type: str, complexity: int) -> str:
    """A productivity CSV's path in the third-party copy (and under the authors' --input-dir)."""
    return f"prod_hard_negatives/{negative_type}/prod_vg_hard_negs_{negative_type}_complexity_{complexity}.csv"


class ProdFacts(NamedTuple):
    """What one productivity CSV holds, counted from the pinned files (tests/test_crepe.py recounts them)."""

    rows: int
    set_literals: int  # rows whose hard_negs is a Python set literal {...}, not a list
    caption_is_negative: int  # rows whose caption is also one of their negatives: always a tie
    upper_case_rule: int  # rows a text-only rule "the text with upper case" gets right: the caption alone has it
    lower_case_rule: int  # rows "the text without upper case" gets right: the caption alone lacks it


# The 27 productivity CSVs: (type, complexity, the git blob and bytes of the third-party copy's file, its ProdFacts).
_PROD = table("""
atom    4  910576d61e74df082926df5a752ff54639620202   364619  1258   44 0 0    0
atom    5  368ab33c2ec355f178f78af48fd5225eb370c21e   411445  1454   54 0 0    0
atom    6  91c0f0582d42deab15159fa3036dbd23e1b6713f   621219  1805   44 0 0    0
atom    7  b0515d934350d6614111f04e790013f9d0c1f836   821450  2082   30 0 0    0
atom    8  98c840e49bd06c7bc0e52790be18ff2b59c2a163  1082853  2241   29 0 0    0
atom    9  52aeed133433a6c395366de45817b377881ffe7f   884152  1897   14 0 0    0
atom   10  e95198a2773f38ecb36f9181c704ea2754bf464b  1131103  2265   13 0 0    0
atom   11  15b27647c3deb4f6c1e16d6bd8dc4a01287ee22e   944454  1724    6 0 0    0
atom   12  9b795ba90c721c05b59b9ddab1daeada30c896b4  1363298  2001    6 0 0    0
swap    4  990ce477bbb7ef5131e4d6be484b0acbe2fc9d6e     8258    27    0 1 0    0
swap    5  fe784464ad3795d4bae367e7572a2fb416b6c50f    12209    36    0 1 0    0
swap    6  1926b714920127409f8ffa05ac6d5dc735bc7f99    99602   262    0 6 0    0
swap    7  ab09a62ee4e5286c693c9b5f7cc179b66fe14c25   224707   505    0 7 0    0
swap    8  125030a4a278020287d35429626565dd9a74b5f8   503478   991    0 4 0    0
swap    9  ad8bfc19afba377d9cbc7e5630519a51c725431f   452692   884    0 3 0    0
swap   10  ab303aad99701b1db54dc27738a5287cc693aae1   689057  1293    0 3 0    0
swap   11  5096241a617d65cb06091a93c0314ecddda9c494   653081  1076    0 7 0    0
swap   12  65fd41762f6945d1956d00a274cc562c106a1d89  1121460  1578    0 2 0    0
negate  4  bb382293df4690ebc0e311c6127570cc84b3d8fa   441731  1262 1181 0 0 1248
negate  5  721388998ed2e6349aa2358294d1fb7c98370d4d   487598  1312  807 0 0 1211
negate  6  87d01396ecacf085e5c15dd4ddab58964e44824c   768522  1798  511 0 0 1699
negate  7  169784a5f5c2533846aa3631f079cd1133fd57f4   967478  2009  406 0 0 1916
negate  8  07c8ed72f1efad24ed46f20662a80d8e4a352a91  1260202  2244  194 0 0 2160
negate  9  e9aae5dd58f897c5d9e95db2f96bd6bec0a42c0f  1012269  1824  146 0 0 1751
negate 10  60d856c15fc62906ca8ac0efbd9e3f2f60eba321  1303593  2237  116 0 0 2134
negate 11  336c2cc93b18337e48e789744e83a55deab425b4  1062109  1660  104 0 0 1626
negate 12  089c35aefdaf822bec4fc455d45e1ce122fc7e03  1509093  1990   63 0 0 1971
""", {9})
PROD_FACTS = {f"prod_{t}_{n}": ProdFacts(*map(int, counts)) for t, n, _, _, *counts in _PROD}
# The CSVs loose, in a third-party repository: read from --annotations DIR in place of the zip, never downloaded.
PROD_CSVS = Upstream(
    "CREPE (productivity CSVs, third-party copy)", "wuyinjun-1993/concept_based_retrieval",
    "0e03b05655790619c70ebb4702e030642df9e4a0", "",
    tuple(UpstreamFile(prod_csv(t, int(n)), blob, int(size)) for t, n, blob, size, *_ in _PROD),
    "", third_party="byte copies, by git blob, of the 27 CSVs of upstream's prod_hard_negatives.zip as that repository "
                    "added them in 2024; not checked against the zip, which could not be opened",
)
# Rows per config in the pinned files: productivity's; systematicity's are not known here (its zip could not be had).
COUNTS = {config: facts.rows for config, facts in PROD_FACTS.items()}

CITATION = """\
@article{ma2023crepe,
  title={CREPE: Can Vision-Language Foundation Models Reason Compositionally?},
  author={Zixian Ma and Jerry Hong and Mustafa Omer Gul and Mona Gandhi and Irena Gao and Ranjay Krishna},
  year={2023},
  journal={arXiv preprint arXiv:2212.07796}
}
"""

BENCHMARK = Benchmark(
    name="crepe", title="CREPE (Ma et al., 2023)", short="CREPE",
    source="CREPE (Ma et al., 2023), recall@1 per config as crepe_eval_utils.get_one2many_metrics (R@1 = text)",
    # R@1, the caption ranked above its k negatives, is the text score on 1 x (1 + k) items
    headline=("text", "acc_r"), metric_names={"text": "R@1"},
    configs=SYST_CONFIGS + PROD_CONFIGS,
    config_tag="leaf",  # a plain run scores `all` once; its leaf= per-tag results are each config's R@1
    # (tests/test_crepe.py shows torch's order on tied rows; in longer rows their result on a tie is torch's)
    tie_rule=TieRule("lenient", "the authors' get_one2many_rank ranks with torch.argsort(descending=True) on the "
                                "CPU, which keeps tied scores in index order in rows of up to 16 texts (every "
                                "productivity row has 6): the caption, first, stays ahead of a negative tied with it, "
                                "so a tie for first place counts right"),
    builder="crepe", upstream=UPSTREAM, copies=(PROD_CSVS,), counts=COUNTS, citation=CITATION,
    data_version="1fa81c4",  # (its productivity CSVs: the third-party copy pinned above)
)
