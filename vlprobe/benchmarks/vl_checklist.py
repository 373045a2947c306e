"""VL-CheckList (Zhao et al., 2022, arXiv:2207.00221): Object / Attribute / Relation, 1 image x [POS[0], NEG[0]]
from the JSON files of its taxonomy's leaves, scored and averaged as its authors' code does (the pinned commit):
``data_loader.py`` keeps a corpus file's records in file order whose image exists; ``evaluate.py`` (task ``itc``)
scores the first ``MAX_NUM/2`` of them (1,000), right when ``POS[0]`` scores strictly above ``NEG[0]``, one accuracy
per corpus file; ``radar.py`` with ``corpus.json`` takes per type the mean over its sources (vg / swig / hake / vaw) of
the mean over each source's files.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from .base import Benchmark, Group, TieRule, Upstream, UpstreamFile, table

MAX_NUM = 2000  # configs/sample.yaml, and the README's example config
FIRST = MAX_NUM // 2  # evaluate.py, itc: d.data[name][:int(max_number/2)]


@dataclass(frozen=True)
class CorpusFile:
    """One corpus yaml of the authors' (``corpus/v1/<type>/<corpus>.yaml``): one annotation file, reported alone."""

    type: str  # the authors' TYPES entry: "Object/Size/large"
    corpus: str  # the yaml's name: "vg_obj"
    blob: str  # the annotation file's git blob at the pinned commit
    size: int | None  # its bytes (None: not known here)

    @property
    def name(self) -> str:
        """The authors' name for its result (evaluate.py's ``<type with _>_<corpus>.json``, corpus.json's entry)."""
        return f"{self.type.replace('/', '_')}_{self.corpus}"

    @property
    def source(self) -> str:
        """corpus.json's grouping of the files: vg, swig, hake or vaw."""
        return self.corpus.split("_")[0]

    @property
    def path(self) -> str:
        """The yaml's ANNO_PATH, under data/."""
        aspect, *rest = self.type.split("/")
        if aspect == "Object":
            kind, leaf = rest
            folder = f"Object/{kind}/{self.source}_{kind.lower()}"
            if self.source == "hake":
                return f"{folder}/hake_obj_{leaf}.json"
            if self.source == "swig":
                return f"{folder}/{self.corpus}/{self.corpus}_{leaf}.json"
            return f"{folder}/{self.corpus}_{leaf}.json"
        if aspect == "Attribute":
            return f"Attribute/{self.corpus}/{rest[0]}.json"
        return f"Relation/vg/{rest[0]}.json" if self.corpus == "vg" else f"Relation/{self.corpus}_{rest[0]}.json"


class FileFacts(NamedTuple):
    """What one corpus file's records hold, counted from the pinned files (tests/test_vl_checklist.py recounts them)."""

    records: int
    same_text: int  # POS[0] == NEG[0]: always a tie, counted wrong
    duplicates: int  # records equal to an earlier record of the file (image and texts)
    upper_case_rule: int  # upper case in POS[0] and none in NEG[0]: a text-only rule "the text with upper case" wins
    lower_case_rule: int  # upper case in NEG[0] only: "the text without upper case" wins


# corpus.json's order: per type, per source, its files: type, corpus, git blob, bytes (-: not known here); for the 46 at
# hand here, their FileFacts of all records, then of the first FIRST where the file has more records than that.
_ROWS = table("""
Object/Size/large      vg_obj           c55b5993c4c12f80bc72552a96642ba86cd1c250       -
Object/Size/large      vg_subj          5eb9355e8cc37b078c732854bb792840da40bc2c 2439019 26167  0    2     0  17 1000 0   0   0  1
Object/Size/large      swig_agent       c93fbc0808a205731a503a6ca20428bca4b5f7e2       -
Object/Size/large      swig_destination 45ad8d549ed7d659cba989d64f7aad6ccb93c87b  714790  1520  2    0    75  70 1000 1   0  46 42
Object/Size/large      swig_item        18ba7cec4ad9d5c5463e1804a5bda5e0d58ce535 2042889  5070  1    0   160 196 1000 0   0  39 39
Object/Size/large      swig_tool        e2febc328906f236cb1292fbd0f2134cadd13b1d 2051134  4643  0    0    98 133 1000 0   0  22 23
Object/Size/large      hake             c813f99ba14f156fc607de3411fc01bfecc3ab08       -
Object/Size/medium     vg_obj           0e6f492db9761e2705a586e92213d089795f6c13 2663221 30725  0    1  6046   0 1000 0   0 222  0
Object/Size/medium     vg_subj          3eacdbfa7b4731badd7fcbb8cc475952f07ffa8e 1930274 20930  0    0     0   9 1000 0   0   0  0
Object/Size/medium     swig_agent       54401aed14dab7149977b899496e9dd6dd750018  170189   442  1    0    15  51
Object/Size/medium     swig_destination b1682991230d6e6ca837f868daac65e64d668564   52002   109  0    0     1   2
Object/Size/medium     swig_item        6ee829d2c4fcfc8c6cfcdd12efa2e69ccbf7eb4c  304476   742  0    0    23  26
Object/Size/medium     swig_tool        06b6c6dd0fe38bbc01fbab913077cf598f32e658  652610  1452  0    0    23  55 1000 0   0  10 33
Object/Size/medium     hake             5e0a805f32464c9fe88110bc977de85bf7758bc9 3513509 30910  0  127     0   0 1000 0   1   0  0
Object/Size/small      vg_obj           4a6655ad40192093d612c7463311036e8048cbd1 1183599 13702  0    2  2052   0 1000 0   0 155  0
Object/Size/small      vg_subj          fa2eeed930d0d1dbf26a8466b1ccec1d776cc3f2  961368 10554  0    1     0   3 1000 0   0   0  0
Object/Size/small      swig_agent       e9ca7e6682581508d209da8011b412332a6cd1e9   17663    48  0    0     1   5
Object/Size/small      swig_destination a63793e3c8b360dd2ac8070d933691ed8aadf3ff    4260     9  0    0     1   0
Object/Size/small      swig_item        a7fd62be5c3d57ab57ed558132c1ad824556189c   64373   154  0    0     5   9
Object/Size/small      swig_tool        dc498b9f7487252449b251b35738e0236f6eb856  135478   308  0    0     3  14
Object/Size/small      hake             a32e588693ace2190d8d5624ec918e2f2b7ad595  673993  6210  0   19     0   0 1000 0   3   0  0
Object/Location/center vg_obj           a45db2ae476a1e3890dfbb337b766c3cc3b70cf4       -
Object/Location/center vg_subj          71bc4b0552894e71504ad97392bcd4fa75f6d7ad 2352051 25383  0    3     0  17 1000 0   0   0  1
Object/Location/center swig_agent       e44b1e90734695757beb3f1db7c0e12f0a369ac4       -
Object/Location/center swig_destination df4fcf9c75e1d86ea8c630486227d9cdb2fd77e9  493077  1063  1    0    51  49 1000 1   0  49 44
Object/Location/center swig_item        38fbbac6ad1e934123c3fbe47fddc8d5da4eb4f7 1679033  4163  1    0   124 162 1000 0   0  28 45
Object/Location/center swig_tool        adc897ace5764c3460edfc5f800dbe44d02b2767 1782184  4056  0    0    88 124 1000 0   0  24 18
Object/Location/center hake             aedb3d24eb43513b51303f4559d444f38b87f9d7       -
Object/Location/mid    vg_obj           244f9122d31c1483c9e325fd368b6478ec71e705       -
Object/Location/mid    vg_subj          ef5db2b6e374e12c2c9f4c40c8568830f38c5974 2427035 26294  0    1     0   9 1000 0   0   0  0
Object/Location/mid    swig_agent       62dd23aff4e19c7e062a0ae66a0b4d999e44ff45 2017390  5074  3    0   126 429 1000 1   0  27 79
Object/Location/mid    swig_destination 171b33f5ea79f7e10d382fe2e063326cf1e50993  254279   530  1    0    25  21
Object/Location/mid    swig_item        f7b48c643f3a8f9385f9b536a0d9af21c5ecacdb  695242  1715  0    0    63  64 1000 0   0  41 32
Object/Location/mid    swig_tool        8d28471e5801cd1115b735a4fcb302947b389fb6 1000268  2226  0    0    35  71 1000 0   0  13 32
Object/Location/mid    hake             f422c754030488be06878359fdf21114afcf444f       -
Object/Location/margin vg_obj           95f5ffb9f95fc59c7bf656b1f875c76422d04ce3  719657  8291  0    2  1742   0 1000 0   0 220  0
Object/Location/margin vg_subj          db2bd405584dd677892dbb45bf1d2b3b177d917d  551575  5974  0    0     0   3 1000 0   0   0  0
Object/Location/margin swig_agent       1a44a7104c592e33bec17871d22691081bc82032  104006   260  1    0     1  22
Object/Location/margin swig_destination 9c5de39a2cb2a1de2a904eaf26aff29eea73c4b4   23696    45  0    0     1   2
Object/Location/margin swig_item        1b3ce211fe67e8b98fad856b03df72b680e70349   37463    88  0    0     1   5
Object/Location/margin swig_tool        7b1067fb779094b2fccfb14000d2fc47310745d6   56770   121  0    0     1   7
Object/Location/margin hake             f094711bcbf554ee8a32e3a45f801a128500cfd1 1150392 10062  0 2455     0   0 1000 0  95   0  0
Attribute/color        vg               eef27e4193d4c2027b8f03e7c830f8eedbabfd15 1040049 11569 66   66    40   0 1000 8   8   4  0
Attribute/color        vaw              d25a8cc816ac4c309eb91a963053bbf9edb82946       -
Attribute/material     vg               4c935bb58f88bd76303bf446728dfa84bf944efd  226906  2470  0   10    10   0 1000 0   2   5  0
Attribute/material     vaw              f6555258db9849b93ce560c0a88f24515ed7e7bc  941482 11835  0   83     0   0 1000 0   2   0  0
Attribute/action       vg               fe320cad35d6bb48d9f5570e64727215a565e4ad  175956  1892  3   41     7   0 1000 2  22   6  0
Attribute/action       vaw              d51bcb1480727c71d2db0297e493bb5aa5bb4855  247229  3039  0   33     0   0 1000 0   9   0  0
Attribute/size         vg               daa254a300c5e03a886a99b460cc4ee55af1896f  239074  2695  7  208     6   0 1000 3  92   0  0
Attribute/size         vaw              d1345b9d2815295b3154e5bde936651623fe27dc 1177705 15321  0 1867     0   0 1000 0 108   0  0
Attribute/state        vg               0aea966461e3adeef17d431034ae6f288b74b29d   84899   941  4   39     3   0
Attribute/state        vaw              b8d580607988bc1996f871b7eb046662a7f4c774  381152  4939  0  444     0   0 1000 0  76   0  0
Relation/action        vg               0e4c40fbb8fdc737c4f4535dbb059efb691ca078 1216888 12733 28   22  3263   0 1000 2   3 261  0
Relation/action        swig             27f41d28e61a03e738df75d92c50bc5928a78ee4 3882658 25150  3    0     0   0 1000 0   0   0  0
Relation/action        hake             9c9488a53ed732338ca65fb2d934cb6d0889755a       -
Relation/spatial       vg               b5358a330599ee9ecbbce0f6ec267bfea8efbb84 2753305 30650  0 4448 21452   0 1000 0 155 708  0
""", {4, 9, 14})
FILES = tuple(CorpusFile(t, corpus, blob, None if size == "-" else int(size)) for t, corpus, blob, size, *_ in _ROWS)
BY_NAME = {f.name: f for f in FILES}
_FACTS = {f.name: [FileFacts(*map(int, row[i:i + 5])) for i in (4, len(row) - 5)]
          for f, row in zip(FILES, _ROWS, strict=True) if len(row) > 4}
FULL_FACTS = {name: facts[0] for name, facts in _FACTS.items()}
FIRST_FACTS = {name: facts[1] for name, facts in _FACTS.items()}
COUNTS = {name: facts.records for name, facts in FULL_FACTS.items()}  # records per corpus file


@dataclass(frozen=True)
class Leaf:
    """One leaf of the taxonomy (a spoke of radar.py's chart, a key of corpus.json): a vlprobe config."""

    config: str
    aspect: str  # Object / Attribute / Relation
    type: str  # the authors' TYPES entry
    label: str  # radar.py's spoke label, by meaning (its chart names three attribute spokes after their neighbours)

    @property
    def files(self) -> tuple[CorpusFile, ...]:
        return tuple(f for f in FILES if f.type == self.type)

    @property
    def sources(self) -> dict[str, tuple[CorpusFile, ...]]:
        return {s: tuple(f for f in self.files if f.source == s) for s in dict.fromkeys(f.source for f in self.files)}


LEAVES: tuple[Leaf, ...] = (
    *(Leaf(f"object_location_{x}", "Object", f"Object/Location/{x}", f"O-{x.title()}") for x in ("center", "margin", "mid")),
    *(Leaf(f"object_size_{x}", "Object", f"Object/Size/{x}", f"O-{x.title()}") for x in ("large", "medium", "small")),
    *(Leaf(f"attribute_{x}", "Attribute", f"Attribute/{x}", f"A-{x.title()}")
      for x in ("action", "color", "material", "size", "state")),
    Leaf("relation_action", "Relation", "Relation/action", "R-Action"),
    Leaf("relation_spatial", "Relation", "Relation/spatial", "R-Spatial"),
)
BY_CONFIG = {leaf.config: leaf for leaf in LEAVES}
ASPECTS = ("Object", "Attribute", "Relation")


def _groups() -> tuple[Group, ...]:
    """radar.py's aggregation (module doc); then vlprobe's means over types per aspect and over aspects."""
    out: list[Group] = []
    order = {t: i for i, t in enumerate(dict.fromkeys(f.type for f in FILES))}  # corpus.json's
    for leaf in sorted(LEAVES, key=lambda x: order[x.type]):
        members = []
        for source, files in leaf.sources.items():
            if len(files) == 1:
                members.append(files[0].name)
            else:
                out.append(Group(f"{leaf.config}/{source}", f"{leaf.label} {source}", tuple(f.name for f in files), ("acc_r",)))
                members.append(f"{leaf.config}/{source}")
        out.append(Group(leaf.config, leaf.label, tuple(members), ("acc_r",)))
    for aspect in ASPECTS:
        out.append(Group(aspect.lower(), aspect, tuple(x.config for x in LEAVES if x.aspect == aspect), ("acc_r",)))
    out.append(Group("overall", "Overall", tuple(a.lower() for a in ASPECTS), ("acc_r",)))
    return tuple(out)


GROUPS = _groups()

UPSTREAM = Upstream(
    "VL-CheckList", "om-ai-lab/VL-CheckList", "6f8d6a3281c401b89e4e154f46c6974ec2df3a82", "data/",
    tuple(UpstreamFile(f.path, f.blob, f.size) for f in FILES), "VLPROBE_VL_CHECKLIST_ANNOTATIONS_URL",
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
    source=f"VL-CheckList (Zhao et al., 2022), itc accuracy per corpus file over its first MAX_NUM/2 = {FIRST:,} "
           "records as vl_checklist/evaluate.py, averaged per source and per type as radar.py with corpus.json",
    headline=("acc_r",),  # evaluate.py, itc: accuracy, right when POS[0] > NEG[0]
    configs=tuple(f.name for f in FILES), config_noun="corpus file",
    config_tag="type_corpus",  # a run of a pooled config (all, a leaf): its type_corpus= results are the files'
    groups=GROUPS,
    tie_rule=TieRule("strict", "a tie is wrong: the authors' evaluate.py (itc) counts pos > neg"),
    caveat_tags=((("records=all",), f"every record of each corpus file (built with --all-records), not the first "
                                    f"MAX_NUM/2 = {FIRST:,} the authors' evaluate.py scores: not the authors' figures"),),
    builder="vl_checklist", upstream=UPSTREAM, counts=COUNTS, citation=CITATION,
    data_version="6f8d6a3",
)
