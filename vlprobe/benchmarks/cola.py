"""COLA (Ray et al., NeurIPS 2023 Datasets and Benchmarks), the multi-object setting: 210 items of 2
Visual Genome images x 2 captions, caption_i true of image_i only."""

from .base import Benchmark, TieRule, Upstream, UpstreamFile

CONFIG = "multi_object"
FILE = "COLA_multiobjects_matching_benchmark.json"

UPSTREAM = Upstream(
    "COLA", "arijitray1993/COLA", "1fa52fba9cff4e6ffb7bfcf3550838748347273b", "data/",
    (UpstreamFile("COLA_multiobjects_matching_benchmark.json", "77fd828bc38e73f80a8e587e6357d3c2a16405cf", 56746),),
    "VLPROBE_COLA_ANNOTATIONS_URL", "MIT",
)

CITATION = """\
@inproceedings{ray2023cola,
  title={COLA: A Benchmark for Compositional Text-to-image Retrieval},
  author={Ray, Arijit and Radenovic, Filip and Dubey, Abhimanyu and Plummer, Bryan A. and Krishna, Ranjay and Saenko, Kate},
  booktitle={Thirty-seventh Conference on Neural Information Processing Systems Datasets and Benchmarks Track},
  year={2023}
}
"""

BENCHMARK = Benchmark(
    name="cola", title="COLA multi-object (Ray et al., NeurIPS 2023)", short="COLA",
    source="COLA (Ray et al., NeurIPS 2023), multi-object accuracy as scripts/eval.py",
    # ColaMultiObjAcc (each caption scores its own image strictly above the other) is Winoground's image score
    headline=("image", "text", "group"),
    configs=(CONFIG,),
    tie_rule=TieRule("strict", "a tie is wrong: the authors' ColaMultiObjAcc needs preds[0,0] > preds[1,0] and "
                               "preds[1,1] > preds[0,1]"),
    builder="cola", upstream=UPSTREAM, counts={CONFIG: 210}, citation=CITATION,
    data_version="1fa52fb",
)
