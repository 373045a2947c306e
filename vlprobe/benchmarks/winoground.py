"""Winoground (Thrush et al., CVPR 2022): 400 items of 2 images x 2 captions with the same words, read
from the Hub (facebook/winoground, gated) or a private local copy (``vlprobe build winoground_style
--winoground PATH``)."""

from .base import Benchmark, PaperTable, TieRule

CITATION = """\
@inproceedings{thrush2022winoground,
  title = {Winoground: Probing Vision and Language Models for Visio-Linguistic Compositionality},
  author = {Thrush, Tristan and Jiang, Ryan and Bartolo, Max and Singh, Amanpreet and Williams, Adina and Kiela, Douwe and Ross, Candace},
  booktitle = {Proceedings of the IEEE/CVF Conference on Computer Vision and Pattern Recognition (CVPR)},
  year = {2022},
  pages = {5238--5248}
}
"""  # noqa: E501  (a BibTeX entry, as its authors give it)

BENCHMARK = Benchmark(
    name="winoground", title="Winoground (Thrush et al., CVPR 2022)", short="Winoground",
    source="Winoground (Thrush et al., CVPR 2022), Table 3",
    headline=("text", "image", "group"), primary="group",
    # the Hub dataset has one config (default) and one split (test); the paper's table calls the set "winoground"
    paper_configs={"default": "winoground", "test": "winoground"},
    tie_rule=TieRule("strict", "a tie is wrong: the reference code's text score needs S(c0, i0) > S(c1, i0) and "
                               "S(c1, i1) > S(c0, i1), strictly (image score likewise)"),
    paper_tables=(PaperTable("Table 3"),), paper_note="Winoground (Thrush et al., CVPR 2022), Table 3, all 400 items.",
    hub_id="facebook/winoground", counts={"default": 400}, citation=CITATION,
    data_version="facebook/winoground",  # the Hub release, 400 items
)
