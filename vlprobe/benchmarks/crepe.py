"""CREPE (Ma, Hong, Gul, Gandhi, Gao, Krishna; 2023): systematicity and productivity, 1 Visual Genome
region x [caption, k hard negatives]."""

from .base import Benchmark, TieRule, Upstream, UpstreamFile

# Not pinned yet (blob None): vlprobe has had no copy of these files to take the hashes from. A build
# uses them unchecked, records each file's hash in data/BUILD.md and warns once.
UPSTREAM = Upstream(
    "CREPE", "RAIVNLab/CREPE", "1fa81c425f442396fe304f170c8eb6dc0747c814", "data/",
    (UpstreamFile("syst_hard_negatives.zip", None), UpstreamFile("prod_hard_negatives.zip", None)),
    "VLPROBE_CREPE_ANNOTATIONS_URL",
)

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
    # crepe_eval_utils.get_one2many_metrics: R@1 per config, the caption ranked above its k negatives = the
    # text score on 1 x (1 + k) items
    headline=("text", "acc_r"), metric_names={"text": "R@1"},
    config_tag="leaf",  # a plain run scores `all` once; its leaf= per-tag results are each config's R@1
    tie_rule=TieRule("strict", "the authors' get_one2many_rank sorts with torch.argsort, which leaves the order of "
                               "tied scores undefined; vlprobe counts a negative tied with the caption against it "
                               "(--ties half: random tie-breaks)"),
    builder="crepe", upstream=UPSTREAM, citation=CITATION,
)
