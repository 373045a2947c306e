"""VL-CheckList (Zhao et al., 2022, arXiv:2207.00221): Object / Attribute / Relation, 1 image x [POS[0],
NEG[0]] from the JSON files of its taxonomy's leaves, on Visual Genome (and VAW's), SWiG and HAKE images."""

from .base import Benchmark, TieRule, Upstream, UpstreamFile


def _files() -> tuple[UpstreamFile, ...]:
    """The files the corpus yamls (``corpus/<type>/<corpus>.yaml``, ``ANNO_PATH``) point at, under data/."""
    paths = []
    for kind, leaves in (("Location", ("center", "margin", "mid")), ("Size", ("large", "medium", "small"))):
        low = kind.lower()
        paths += [f"Object/{kind}/hake_{low}/hake_obj_{leaf}.json" for leaf in leaves]
        paths += [f"Object/{kind}/swig_{low}/swig_{role}/swig_{role}_{leaf}.json"
                  for role in ("agent", "destination", "item", "tool") for leaf in leaves]
        paths += [f"Object/{kind}/vg_{low}/vg_{role}_{leaf}.json" for role in ("obj", "subj") for leaf in leaves]
    paths += [f"Attribute/{corpus}/{leaf}.json" for corpus in ("vaw", "vg")
              for leaf in ("action", "color", "material", "size", "state")]
    paths += ["Relation/hake_action.json", "Relation/swig_action.json", "Relation/vg/action.json",
              "Relation/vg/spatial.json"]
    return tuple(UpstreamFile(p, None) for p in paths)


# The issue pins the abbreviated commit 6f8d6a32; its full id was not available here.
UPSTREAM = Upstream(
    "VL-CheckList", "om-ai-lab/VL-CheckList", "6f8d6a32", "data/", _files(),
    "VLPROBE_VL_CHECKLIST_ANNOTATIONS_URL",
)


CITATION = """\
@misc{zhao2022vlchecklist,
  title={VL-CheckList: Evaluating Pre-trained Vision-Language Models with Objects, Attributes and Relations},
  author={Zhao, Tiancheng and Zhang, Tianqi and Zhu, Mingwei and Shen, Haozhan and Lee, Kyusong and Lu, Xiaopeng and Yin, Jianwei},
  doi={10.48550/ARXIV.2207.00221},
  url={https://arxiv.org/abs/2207.00221},
  publisher={arXiv},
  year={2022}
}
"""  # noqa: E501  (a BibTeX entry, as its authors give it)

BENCHMARK = Benchmark(
    name="vl_checklist", title="VL-CheckList (Zhao et al., 2022)", short="VL-CheckList",
    source="VL-CheckList (Zhao et al., 2022), itc accuracy per leaf as vl_checklist/evaluate.py",
    headline=("acc_r",),  # vl_checklist/evaluate.py, itc: accuracy, right when POS[0] > NEG[0]
    config_tag="leaf",  # per leaf (per corpus in the per-tag results)
    tie_rule=TieRule("strict", "a tie is wrong: the authors' evaluate.py (itc) counts pos > neg"),
    builder="vl_checklist", upstream=UPSTREAM, citation=CITATION,
)
