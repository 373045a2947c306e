"""TraVLR (Chow, Tan, Kan, EACL 2023): four visio-linguistic reasoning tasks on synthetic 6 x 6-grid
scenes, rendered by vlprobe's own generator (``vlprobe build travlr``); a scene's image or its caption
(or both), a query, true or false."""

from .base import Benchmark, Framing, TieRule

TASKS = ("spatiality", "cardinality", "quantifiers", "numerical_comparison")
TEST_SPLITS = ("test_ind", "test_ood")

CITATION = """\
@inproceedings{chow-etal-2023-travlr,
  title = {{TraVLR}: Now You See It, Now You Don't! A Bimodal Dataset for Evaluating Visio-Linguistic Reasoning},
  author = {Chow, Keng Ji and Tan, Samson and Kan, Min-Yen},
  booktitle = {Proceedings of the 17th Conference of the European Chapter of the Association for Computational Linguistics (EACL)},
  year = {2023},
  url = {https://aclanthology.org/2023.eacl-main.242}
}
"""  # noqa: E501  (a BibTeX entry, as its authors give it)

BENCHMARK = Benchmark(
    name="travlr", title="TraVLR (Chow, Tan, Kan, EACL 2023)", short="TraVLR",
    source="TraVLR (Chow, Tan, Kan, EACL 2023), App. B.1",  # the metric: each row's framing, in the heading
    # App. B.1: macro-F1 per task on the InD and OOD test sets; the zero-shot 1 x 2 framing has no classes: acc_r
    framings=(Framing((1, 1), ("macro_f1",), "true/false (1 x 1, macro-F1)"),
              Framing((1, 2), ("acc_r",), "query vs foil (1 x 2, acc_r)",
                      note="the 1 x 2 query-vs-foil framing is vlprobe's zero-shot adaptation: acc_r, not the "
                           "paper's macro-F1")),
    configs=TASKS, config_noun="task", splits=TEST_SPLITS,
    tie_rule=TieRule("strict", "the paper's macro-F1 classifies each statement by a thresholded probability, where "
                               "no tie arises; vlprobe's zero-shot query-vs-foil framing counts a tie as wrong"),
    modalities=("image", "caption", "both"),  # the paper's three settings
    probe_table="Table 2",  # of probes and fine-tuned models: set beside `vlprobe probe` runs only
    probe_note=(
        "TraVLR (Chow et al., EACL 2023), Table 2: mean macro-F1 on the OOD test sets of VisualBERT, UNITER, LXMERT and "
        "ALBEF, each fine-tuned for 80 epochs without early stopping in one modality and tested in each, with the change "
        "from InD in parentheses; the mean is over the converged runs of three seeds (#sd) when any converged, else over "
        "all three; trained on TraVLR's own data (32k spatiality / 8k other training rows, 20k OOD test rows). "
        "vlprobe's figures are the mean over all of the run's seeds, on the dataset and training size the run names: "
        "a frozen-feature probe is the paper's App. B frozen setting, not its fine-tuning, and only the fine-tuned rows "
        "(--finetune) are the same kind of experiment. Differences are vlprobe minus the paper, in points."),
    builder="travlr", citation=CITATION,
    data_version="vlprobe",  # rendered by vlprobe's generator (reference/travlr.md), not the authors' release
)
