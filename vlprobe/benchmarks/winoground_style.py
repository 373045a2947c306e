"""vlprobe's Winoground-style instruments: 2 rendered scenes x 2 captions with the same words swapped
(``vlprobe build winoground_style``). Synthetic: no paper, so no paper's aggregates or tie rule; it is
*not* Winoground and is never set beside Winoground's numbers."""

from .base import Benchmark

BENCHMARK = Benchmark(
    name="winoground_style", title="Winoground-style instruments (vlprobe, synthetic)", short="winoground_style",
    headline=("text", "image", "group"), primary="group", config_tag="instrument", config_noun="instrument",
    builder="winoground_style", aliases=("winoground-style",),
)
