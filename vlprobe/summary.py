"""The papers' headline metrics and aggregates: the ONE place that decides them.

Every table, plot and comparison with a paper asks this module which metrics a benchmark's paper
reports, which metrics mean something for an item shape, and how the paper aggregates its configs:

* :func:`benchmark_of`: a dataset name (folder, path or Hub id) -> its benchmark
  (``valse``, ``winoground``, ``winoground_style``, ``bla``, ``travlr``, or the folder/Hub name);
* :func:`headline_metrics`: the metrics the benchmark's paper reports, in the paper's order;
* :func:`display_metrics`: what a printed table shows for one config (only metrics that mean
  something for its benchmark and item shape; ``results.json`` keeps everything);
* :func:`summarize`: the papers' aggregates from ``results.json``-style entries.

The papers' rules (their tables and sections, cited; the published numbers are in ``vlprobe/data/``):

========================  ===================================================================
VALSE (ACL 2022)          Table 2: per instrument acc_r; with a matching head's probabilities
                          also acc, min(p_c, p_f) and AUROC; "Avg." = the unweighted mean of the
                          11 instruments, FOIL-it included (CLIP's 64.0 = mean of its 11 acc_r).
Winoground (CVPR 2022)    Table 3: text, image and group scores over the 400 items.
BLA (MSc thesis 2022)     Table 6.3: per task sentence accuracy, set accuracy, set error.
TraVLR (EACL 2023)        App. B.1: macro-F1 (mean of the F1 of the true and of the false class)
                          per task, on the in-distribution and out-of-distribution test sets.
                          vlprobe's zero-shot 1 x 2 framing (query vs its minimal foil) has no
                          classification: its headline is acc_r.
SugarCREPE (NeurIPS 2023) main_eval.py: accuracy per subset, right when pos > neg (a tie is
                          wrong: acc_r, strict); ADD / REPLACE / SWAP = the unweighted mean of
                          their subsets (vlprobe's choice: not checked against the paper's own
                          averaging).
SugarCREPE++ (NeurIPS     VLMs/test_*.py: ITT per subset, right when both true captions score
2024)                     strictly above the negative (set_acc on [[1, 1, 0]], strict); acc_r =
                          the mean of its Image-P1-Neg and Image-P2-Neg accuracies. With
                          --modality text: TOT per subset, right when cos(P1, P2) is strictly
                          above cos(P1, neg) and cos(P2, neg): the text score (named TOT).
COLA (NeurIPS 2023)       scripts/eval.py ColaMultiObjAcc: each caption scores its own image
                          strictly above the other = Winoground's image score.
CREPE (2023)              crepe_eval_utils.get_one2many_metrics: R@1 per config, the caption ranked
                          above its k negatives = the text score on 1 x (1 + k) items (named R@1).
VL-CheckList (2022)       vl_checklist/evaluate.py, itc: accuracy, right when POS[0] > NEG[0]
                          (acc_r, strict), per leaf (per corpus in the per-tag results).
========================  ===================================================================

A text-only run (``--modality text``, recorded in each entry's ``data.modality``) has one headline for
any benchmark, ``text`` (each true text closer to the item's other true texts than to its false ones; see
:mod:`vlprobe.evaluation.text_only`).

Values are fractions in [0, 1], as the metric returns them (the report prints percentages).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable, Sequence

__all__ = [
    "BENCHMARKS", "VALSE_INSTRUMENTS", "VALSE_PIECES", "BLA_TASKS", "TRAVLR_TASKS", "PROBABILITY_METRICS",
    "benchmark_of", "headline_metrics", "headline_present", "primary_metric", "display_metrics", "infer_shape",
    "summarize",
]

BENCHMARKS = ("valse", "winoground", "winoground_style", "bla", "travlr", "sugar_crepe", "sugar_crepe_pp", "cola", "crepe",
              "vl_checklist")

# VALSE Table 2's columns, in order, with the piece each instrument belongs to.
VALSE_PIECES: dict[str, tuple[str, ...]] = {
    "existence": ("existence",),
    "plurality": ("plurality",),
    "counting": ("counting_balanced", "counting_small_numbers", "counting_adversarial"),
    "relations": ("relations",),
    "actions": ("action_replacement", "actant_swap"),
    "coreference": ("coreference_standard", "coreference_clean"),
    "foil_it": ("foil_it",),
}
VALSE_INSTRUMENTS = tuple(i for members in VALSE_PIECES.values() for i in members)
BLA_TASKS = ("active_passive", "coordination", "relative_clause")
TRAVLR_TASKS = ("spatiality", "cardinality", "quantifiers", "numerical_comparison")
TRAVLR_TEST_SPLITS = ("test_ind", "test_ood")
# SugarCREPE's subsets by the paper's grouping (ADD / REPLACE / SWAP), and SugarCREPE++'s five.
SUGAR_CREPE_GROUPS: dict[str, tuple[str, ...]] = {
    "add": ("add_obj", "add_att"),
    "replace": ("replace_obj", "replace_att", "replace_rel"),
    "swap": ("swap_obj", "swap_att"),
}
SUGAR_CREPE_SUBSETS = tuple(c for members in SUGAR_CREPE_GROUPS.values() for c in members)
SUGAR_CREPE_PP_SUBSETS = ("replace_obj", "replace_att", "replace_rel", "swap_obj", "swap_att")
# Each benchmark's own tie rule, stated in the summary block (results.json) beside the run's policy
# (provenance.settings.ties); ties are counted in every result's n_ties whatever the rule.
TIE_RULES = {
    "sugar_crepe": ("strict", "a tie is wrong: the authors' main_eval.py counts pos > neg"),
    "sugar_crepe_pp": ("strict", "a tie is wrong: the authors' ITT needs both true captions strictly above the negative"),
    "cola": ("strict", "a tie is wrong: the authors' ColaMultiObjAcc needs preds[0,0] > preds[1,0] and preds[1,1] > preds[0,1]"),
    "crepe": ("strict", "the authors' get_one2many_rank sorts with torch.argsort, which leaves the order of tied scores "
                        "undefined; vlprobe counts a negative tied with the caption against it (--ties half: random tie-breaks)"),
    "vl_checklist": ("strict", "a tie is wrong: the authors' evaluate.py (itc) counts pos > neg"),
}
# A paper's own name for a metric, shown beside vlprobe's (CREPE's recall@1 is the text score).
METRIC_NAMES = {"crepe": {"text": "R@1"}}
TEXT_ONLY = "text"  # the text-only modality (vlprobe.evaluation.settings.TEXT)
# SugarCREPE++ scored text-only: the paper's TOT, its name and tie rule.
SUGAR_CREPE_PP_TOT = {
    "source": "SugarCREPE++ (Dumpala et al., NeurIPS 2024), TOT per subset as VLMs/test_*.py",
    "names": {"text": "TOT"},
    "tie_rule": ("strict", "a tie is wrong: the authors' TOT needs cos(P1, P2) strictly above cos(P1, neg) and "
                           "cos(P2, neg)"),
}

# Metrics that exist only where the model gives a match probability (or, for 1 x 1 items, a
# thresholded score): VALSE shows AUROC only then too, as the paper does (CLIP: acc_r only).
PROBABILITY_METRICS = frozenset({"acc", "p_c", "p_f", "min_p", "macro_f1", "f1_true", "f1_false"})

# Display order of every metric (mirrors vlprobe.results.METRIC_ORDER; kept here so this module
# imports nothing of the package).
_ORDER = ("acc_r", "text", "image", "group", "sentence_acc", "set_acc", "set_error", "auroc",
          "acc", "macro_f1", "f1_true", "f1_false", "p_c", "p_f", "min_p")

SOURCES = {
    "valse": "VALSE (Parcalabescu et al., ACL 2022), Table 2",
    "winoground": "Winoground (Thrush et al., CVPR 2022), Table 3",
    "bla": "BLA (Chen, MSc thesis 2022), Table 6.3",
    "travlr": "TraVLR (Chow, Tan, Kan, EACL 2023), macro-F1 (App. B.1)",
    "sugar_crepe": "SugarCREPE (Hsieh et al., NeurIPS 2023), accuracy per subset as main_eval.py",
    "sugar_crepe_pp": "SugarCREPE++ (Dumpala et al., NeurIPS 2024), ITT per subset as VLMs/test_*.py",
    "cola": "COLA (Ray et al., NeurIPS 2023), multi-object accuracy as scripts/eval.py",
    "crepe": "CREPE (Ma et al., 2023), recall@1 per config as crepe_eval_utils.get_one2many_metrics (R@1 = text)",
    "vl_checklist": "VL-CheckList (Zhao et al., 2022), itc accuracy per leaf as vl_checklist/evaluate.py",
}
# The tag whose values name a benchmark's configs, so a pooled config (VALSE ``all``, a piece)
# still yields the per-config values through its per-tag results.
_CONFIG_TAG = {"valse": "instrument", "bla": "task", "winoground_style": "instrument", "sugar_crepe": "subset",
               "sugar_crepe_pp": "subset", "crepe": "leaf", "vl_checklist": "leaf"}
# The paper tables' config names, where a dataset's differ (Winoground's one set of 400).
PAPER_CONFIG = {("winoground", "default"): "winoground", ("winoground", "test"): "winoground"}


def benchmark_of(dataset: str) -> str:
    """``facebook/winoground`` -> ``winoground``; ``./travlr/`` -> ``travlr``; ``org/winoground-style``
    -> ``winoground_style``; any other dataset -> its folder or Hub name, lower-cased."""
    name = Path(str(dataset).rstrip("/\\")).name.lower() or str(dataset)
    alias = name.replace("-", "_")
    return alias if alias in BENCHMARKS else name


def _shape(shape: Any) -> tuple[int, int] | None:
    if shape is None:
        return None
    m, n = (int(x) for x in shape)
    return m, n


def headline_metrics(benchmark: str, shape: tuple[int, int] | None = None, modality: str | None = None) -> list[str]:
    """The metrics the benchmark's paper reports, in the paper's order (the first is the one a
    plot shows). Probability metrics (:data:`PROBABILITY_METRICS`, and VALSE's AUROC) apply only
    where a run has probabilities: :func:`headline_present` applies that rule to a result.

    ``shape`` (m, n) is the items' shape where the benchmark has several framings (TraVLR:
    1 x 1 true/false statements -> macro-F1; 1 x 2 query vs foil -> acc_r) and decides for a
    benchmark without a paper: m >= 2 -> text / image / group; 1 x 1 -> macro-F1; else acc_r.
    ``modality="text"`` (a text-only run): ``text`` for every benchmark (SugarCREPE++'s TOT).
    """
    b = benchmark_of(benchmark)
    s = _shape(shape)
    if modality == TEXT_ONLY:
        return ["text"]
    if b == "valse":
        return ["acc_r", "acc", "min_p", "auroc"]
    if b in ("winoground", "winoground_style"):
        return ["text", "image", "group"]
    if b == "bla":
        return ["sentence_acc", "set_acc", "set_error"]
    if b == "sugar_crepe":
        return ["acc_r"]
    if b == "sugar_crepe_pp":
        return ["set_acc", "acc_r"]
    if b == "cola":
        return ["image", "text", "group"]
    if b == "crepe":
        return ["text", "acc_r"]
    if b == "vl_checklist":
        return ["acc_r"]
    if b == "travlr":
        if s == (1, 1):
            return ["macro_f1"]
        if s is None:
            return ["macro_f1", "acc_r"]
        return ["acc_r"]
    if s is None:
        return ["group", "text", "image", "acc_r", "macro_f1"]
    m, n = s
    if m >= 2:
        return ["text", "image", "group"]
    if n == 1:
        return ["macro_f1"]
    return ["acc_r"]


def headline_present(benchmark: str, shape: tuple[int, int] | None, available: Iterable[str],
                     modality: str | None = None) -> list[str]:
    """The headline metrics a result actually has, under the papers' rules: VALSE's acc, min_p
    and AUROC only with probabilities (the paper reports only acc_r for CLIP-like models)."""
    avail = set(available)
    b = benchmark_of(benchmark)
    keys = [k for k in headline_metrics(b, shape, modality) if k in avail]
    if b == "valse" and "acc" not in avail:
        keys = [k for k in keys if k == "acc_r"]
    return keys


def primary_metric(benchmark: str, shape: tuple[int, int] | None, available: Iterable[str],
                   modality: str | None = None) -> str | None:
    """The one metric a plot shows for a config: Winoground's group, VALSE's acc_r, BLA's
    sentence accuracy, TraVLR's macro-F1 (1 x 1) or acc_r (1 x 2)."""
    avail = list(available)
    b = benchmark_of(benchmark)
    order = headline_present(b, shape, avail, modality)
    if modality != TEXT_ONLY and (b in ("winoground", "winoground_style") or (b not in BENCHMARKS and "group" in order)):
        order = ["group"] + [k for k in order if k != "group"]
    if order:
        return order[0]
    rest = [k for k in _ORDER if k in avail] + [k for k in avail if k not in _ORDER]
    return rest[0] if rest else None


def display_metrics(benchmark: str, shape: tuple[int, int] | None, available: Sequence[str],
                    modality: str | None = None) -> list[str]:
    """The metrics a printed table shows for one config: its headline metrics first, then the
    others that carry information for this item shape. For 1 x n items text = set_acc (one row),
    and for 1 x 2 items acc_r = text = set_acc = sentence_acc = 1 - set_error (one pair), so
    only acc_r is shown; for m >= 2 items the row-pooled set metrics are left out. Mixed shapes
    (``shape=None``) show everything available. AUROC pools scores across images: VALSE shows it
    only with probabilities, as its paper does."""
    avail = [k for k in available]
    b = benchmark_of(benchmark)
    s = _shape(shape)
    head = headline_present(b, s, avail, modality) if (b in BENCHMARKS or s is not None) else []
    drop: set[str] = set()
    if s is not None:
        m, n = s
        if m == 1:
            drop |= {"text", "image", "group"}
            if n <= 2:
                drop |= {"set_acc", "set_error", "sentence_acc"}
        else:
            drop |= {"set_acc", "set_error", "sentence_acc"}
    if b == "valse" and "acc" not in avail:
        drop.add("auroc")
    ordered = [k for k in _ORDER if k in avail] + [k for k in avail if k not in _ORDER]
    return head + [k for k in ordered if k not in head and k not in drop]


# ---- aggregates ------------------------------------------------------------------------------------

def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))


def _present(metrics: dict[str, Any]) -> list[str]:
    """The metrics of a result: its finite numbers and, where its metrics are not available (every
    item tied: ``na_reason``), the metrics it would have had."""
    na = bool(metrics.get("na_reason"))
    skip = {"n_items", "n_ties", "chance", "support", "ci", "per_tag", "na_reason"}
    return [k for k, v in metrics.items() if _finite(v) or (na and v is None and k not in skip)]


def _entry_benchmark(entry: dict[str, Any]) -> str:
    return benchmark_of(entry.get("dataset") or entry.get("benchmark") or "")


def _pick_split(splits: Sequence[str]) -> str:
    return "test" if "test" in splits else splits[0]


def _row(config: str, split: str, metrics: dict[str, Any], keys: Sequence[str], source: str,
         paper_config: str | None = None) -> dict[str, Any]:
    ci = metrics.get("ci") or {}
    row: dict[str, Any] = {
        "config": config, "split": split, "paper_config": paper_config or config,
        "values": {k: float(metrics[k]) for k in keys if _finite(metrics.get(k))},
        "n_items": metrics.get("n_items"), "from": source,
    }
    if metrics.get("na_reason"):  # not available: shown as "N/A (reason)", never as a number
        row["na_reason"] = metrics["na_reason"]
        row["na"] = [k for k in keys if not _finite(metrics.get(k))]
    cis = {k: [float(ci[k][0]), float(ci[k][1])] for k in row["values"] if k in ci and ci[k] is not None
           and len(ci[k]) == 2 and all(_finite(x) for x in ci[k])}
    if cis:
        row["ci"] = cis
    return row


def _per_config(entries: list[dict[str, Any]], bench: str) -> dict[str, list[tuple[str, dict, str]]]:
    """config -> [(split, metrics, where from)], from the config's own entries, else from another
    entry's per-tag results (VALSE ``all`` -> ``instrument=existence``)."""
    own: dict[str, list[tuple[str, dict, str]]] = {}
    for e in entries:
        own.setdefault(e["config"], []).append((e["split"], e["metrics"], e["config"]))
    tag = _CONFIG_TAG.get(bench)
    if tag:
        derived: dict[str, list[tuple[str, dict, str]]] = {}
        for e in entries:
            for name, m in (e["metrics"].get("per_tag") or {}).items():
                key, _, value = str(name).partition("=")
                if key == tag and value and value != e["config"] and value not in own:
                    derived.setdefault(value, []).append((e["split"], m, f"{e['config']} (per tag {name})"))
        for config, found in derived.items():
            # The most specific source: a piece config before `all` (fewer items, same values).
            found.sort(key=lambda t: 0 if not t[2].startswith("all ") else 1)
            own[config] = found
    return own


def _pools(found: list[tuple[str, dict, str]], tag: str | None, config: str) -> bool:
    """Whether a config's results pool other configs (per-tag values ``tag=<another config>``)."""
    if not tag:
        return False
    return any(str(name).partition("=")[0] == tag and str(name).partition("=")[2] != config
               for _, m, _ in found for name in (m.get("per_tag") or {}))


def _has(row: dict[str, Any], key: str) -> bool:
    """Whether a summary row shows ``key``: as a number, or as N/A with its reason."""
    return key in row["values"] or key in (row.get("na") or [])


def _mean_row(name: str, label: str, rows: list[dict[str, Any]], members: Sequence[str], keys: Sequence[str],
              split: str) -> dict[str, Any]:
    """The unweighted mean of the members' values; a metric that is N/A for a present member is N/A
    for the mean too (a mean over the others would be another aggregate), with that member named."""
    have = {r["config"]: r for r in rows}
    present = [c for c in members if c in have]
    values, na, reasons = {}, [], []
    for k in keys:
        unavailable = [c for c in present if k in (have[c].get("na") or [])]
        if unavailable:
            na.append(k)
            for c in unavailable:
                reason = f"{c}: {have[c]['na_reason']}"
                if reason not in reasons:
                    reasons.append(reason)
            continue
        vals = [have[c]["values"][k] for c in present if k in have[c]["values"]]
        if vals and len(vals) == len(present):
            values[k] = sum(vals) / len(vals)
    missing = [c for c in members if c not in have]
    row = {"config": name, "split": split, "paper_config": name, "label": label, "aggregate": True,
           "values": values, "over": present, "missing": missing, "complete": not missing,
           "from": f"unweighted mean of {len(present)} of {len(members)}"}
    if na:
        row["na"], row["na_reason"] = na, "not available for " + "; ".join(reasons)
    return row


def _summarize_valse(entries: list[dict[str, Any]]) -> dict[str, Any]:
    per = _per_config(entries, "valse")
    rows, notes = [], []
    for piece, members in VALSE_PIECES.items():
        for inst in members:
            if inst not in per:
                continue
            found = per[inst]
            split = _pick_split([f[0] for f in found])
            _, metrics, source = next(f for f in found if f[0] == split)
            keys = headline_present("valse", (1, 2), _present(metrics))
            row = _row(inst, split, metrics, keys, source)
            row["piece"] = piece
            rows.append(row)
            tags = metrics.get("per_tag") or {}
            if any(str(t).lower() in ("valid=false", "valid=0") for t in tags):
                notes.append(f"{inst}: includes items the annotators did not validate (--include-invalid); "
                             "the paper scores the valid items only")
    keys = [k for k in headline_metrics("valse") if rows and all(_has(r, k) for r in rows)]
    out: dict[str, Any] = {"source": SOURCES["valse"], "headline": keys, "rows": rows}
    if rows:
        split = _pick_split([r["split"] for r in rows])
        avg = _mean_row("avg", "Avg.", rows, VALSE_INSTRUMENTS, keys, split)
        out["rows"].append(avg)
        if not avg["complete"]:
            notes.append(f"Avg. over {len(avg['over'])} of 11 instruments (missing: {', '.join(avg['missing'])}): "
                         "not the paper's Avg.")
        out["complete"] = avg["complete"]
    else:
        out["complete"] = False
        notes.append("no VALSE instrument scored (configs or per-tag instrument results)")
    out["notes"] = notes
    return out


def _modality(entries: Sequence[dict[str, Any]]) -> str | None:
    """``"text"`` when every entry was scored text-only (``data.modality``), else None."""
    found = {(e.get("data") or {}).get("modality") for e in entries}
    return TEXT_ONLY if entries and found == {TEXT_ONLY} else None


def _summarize_by_config(entries: list[dict[str, Any]], bench: str, expected: Sequence[str] | None) -> dict[str, Any]:
    modality = _modality(entries)
    per = _per_config(entries, bench)
    order = list(expected or [])
    order += [c for c in per if c not in order]
    rows, notes = [], []
    for config in order:
        if config not in per:
            continue
        found = per[config]
        if expected and config not in expected and _pools(found, _CONFIG_TAG.get(bench), config):
            continue  # a pooled config (e.g. BLA's `all`): its per-tag values are the tasks'

        split = _pick_split([f[0] for f in found])
        _, metrics, source = next(f for f in found if f[0] == split)
        shape = infer_shape(metrics)
        keys = headline_present(bench, shape, _present(metrics), modality)
        rows.append(_row(config, split, metrics, keys, source, PAPER_CONFIG.get((bench, config))))
    missing = [c for c in (expected or []) if c not in per]
    if missing:
        notes.append(f"{len(rows)} of {len(expected or [])} configs scored (missing: {', '.join(missing)})")
    keys = [k for k in headline_metrics(bench, None, modality) if rows and any(_has(r, k) for r in rows)]
    return {"source": SOURCES.get(bench), "headline": keys, "rows": rows, "complete": bool(rows) and not missing,
            "notes": notes}


def _summarize_sugar_crepe(entries: list[dict[str, Any]]) -> dict[str, Any]:
    out = _summarize_by_config(entries, "sugar_crepe", SUGAR_CREPE_SUBSETS)
    rows = [r for r in out["rows"] if r["config"] in SUGAR_CREPE_SUBSETS]
    if rows:
        split = _pick_split([r["split"] for r in rows])
        for group, members in SUGAR_CREPE_GROUPS.items():
            agg = _mean_row(group, group.upper(), rows, members, ["acc_r"], split)
            if agg["over"]:
                out["rows"].append(agg)
                if not agg["complete"]:
                    out["notes"].append(f"{group.upper()} over {len(agg['over'])} of {len(members)} subsets (missing: "
                                        f"{', '.join(agg['missing'])}): not the paper's {group.upper()}")
    return out


def _with_tie_rule(block: dict[str, Any], bench: str) -> dict[str, Any]:
    policy, rule = TIE_RULES[bench]
    if bench == "sugar_crepe_pp" and block.get("headline") == ["text"]:  # scored text-only: TOT
        policy, rule = SUGAR_CREPE_PP_TOT["tie_rule"]
        block["source"], block["names"] = SUGAR_CREPE_PP_TOT["source"], dict(SUGAR_CREPE_PP_TOT["names"])
    if bench in METRIC_NAMES:  # (a text-only run of these is summarised as any other benchmark)
        block["names"] = dict(METRIC_NAMES[bench])
    block["tie_policy"] = {"authors": policy, "rule": rule}
    return block


def infer_shape(metrics: dict[str, Any]) -> tuple[int, int] | None:
    """The items' shape where a metric result shows it: 1 x 1 (classified, never ranked) or
    1 x n (n = sentence_acc's support / set_acc's support: cells per row); None for m >= 2 or
    mixed shapes."""
    if not metrics:
        return None
    if _finite(metrics.get("macro_f1")) and not _finite(metrics.get("acc_r")) and "text" not in metrics:
        return (1, 1)
    if "image" in metrics or not _finite(metrics.get("acc_r")):
        return None
    support = metrics.get("support") or {}
    rows, cells, items = support.get("set_acc"), support.get("sentence_acc"), metrics.get("n_items")
    if rows and cells and rows == items and cells % rows == 0:
        return (1, cells // rows)
    return None


def _entry_shape(entry: dict[str, Any]) -> tuple[int, int] | None:
    return _shape(entry.get("shape")) if entry.get("shape") else infer_shape(entry.get("metrics") or {})


def _summarize_travlr(entries: list[dict[str, Any]]) -> dict[str, Any]:
    rows, notes = [], []
    tasks = list(TRAVLR_TASKS) + sorted({e["config"] for e in entries} - set(TRAVLR_TASKS))
    scored = set()
    for task in tasks:
        mine = [e for e in entries if e["config"] == task]
        tests = [e for e in mine if str(e["split"]).startswith("test")] or mine
        for e in sorted(tests, key=lambda e: str(e["split"])):
            m = e["metrics"]
            shape = _entry_shape(e) or (1, 2)
            keys = headline_present("travlr", shape, _present(m))
            row = _row(task, e["split"], m, keys, task)
            row["framing"] = "true/false (1 x 1, macro-F1)" if shape == (1, 1) else "query vs foil (1 x 2, acc_r)"
            rows.append(row)
            scored.add((task, e["split"]))
    missing = [f"{t}/{s}" for t in TRAVLR_TASKS for s in TRAVLR_TEST_SPLITS if (t, s) not in scored]
    if missing:
        notes.append(f"{8 - len(missing)} of 8 task/test-split pairs scored (missing: {', '.join(missing)})")
    if any(r["framing"].startswith("query") for r in rows):
        notes.append("the 1 x 2 query-vs-foil framing is vlprobe's zero-shot adaptation: acc_r, not the paper's "
                     "macro-F1")
    keys = [k for k in ("macro_f1", "acc_r") if any(_has(r, k) for r in rows)]
    return {"source": SOURCES["travlr"], "headline": keys, "rows": rows, "complete": not missing, "notes": notes}


def summary_title(benchmark: str, block: dict[str, Any], *, with_source: bool = True) -> str:
    """The heading of a benchmark's summary: "the paper's aggregates (source)" only where a paper
    defines them (:data:`SOURCES`); any other dataset, a user's own or the synthetic
    winoground_style, gets "headline metrics per config"."""
    if block.get("source"):
        return f"{benchmark}: the paper's aggregates" + (f" ({block['source']})" if with_source else "")
    return f"{benchmark}: headline metrics per config"


def summarize(entries: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The papers' aggregates per benchmark, from ``results.json``-style entries (each with
    ``dataset`` (or ``benchmark``), ``config``, ``split``, ``metrics``).

    Returns ``{benchmark: {"source", "headline", "rows", "complete", "notes"}}``. Each row is
    ``{"config", "split", "paper_config", "values": {metric: fraction}, "ci", "n_items", "from"}``;
    aggregate rows (VALSE's ``avg``) add ``"aggregate": True``, ``"over"``, ``"missing"`` and
    ``"complete"``. ``complete`` is False (and ``notes`` says why) when the paper's aggregate
    needs configs the entries do not have, e.g. 3 of VALSE's 11 instruments.

    - VALSE: per instrument (with its piece) acc_r, and acc / min_p / AUROC with probabilities;
      ``avg`` = their unweighted mean over the 11 instruments. Instruments come from their own
      configs, else from a pooled config's per-tag results (``all`` -> ``instrument=...``).
    - Winoground(-style): text / image / group per config.
    - BLA: per task sentence_acc, set_acc, set_error.
    - TraVLR: per task and test split, macro-F1 (1 x 1 items) or acc_r (1 x 2).
    - SugarCREPE: per subset acc_r; ``add`` / ``replace`` / ``swap`` = unweighted means of their subsets.
    - SugarCREPE++: per subset set_acc (the authors' ITT) and acc_r; scored text-only, text (the authors'
      TOT; ``names`` maps ``text`` to ``"TOT"``). COLA: image (the authors' multi-object accuracy), text,
      group. CREPE: per config text (the authors' R@1; ``names`` maps ``text`` to ``"R@1"``) and acc_r.
      VL-CheckList: per config acc_r. These five blocks add ``tie_policy``: the authors' rule.
    - A text-only run of any benchmark: ``text`` per config.
    - Any other benchmark: the shape-based headline per config and split.
    """
    by: dict[str, list[dict[str, Any]]] = {}
    for e in entries:
        by.setdefault(_entry_benchmark(e), []).append(e)
    out: dict[str, Any] = {}
    for bench, es in by.items():
        if bench == "valse":
            out[bench] = _summarize_valse(es)
        elif bench == "travlr":
            out[bench] = _summarize_travlr(es)
        elif bench == "bla":
            out[bench] = _summarize_by_config(es, bench, BLA_TASKS)
        elif bench == "sugar_crepe":
            out[bench] = _with_tie_rule(_summarize_sugar_crepe(es), bench)
        elif bench == "sugar_crepe_pp":
            out[bench] = _with_tie_rule(_summarize_by_config(es, bench, SUGAR_CREPE_PP_SUBSETS), bench)
        elif bench == "cola":
            out[bench] = _with_tie_rule(_summarize_by_config(es, bench, ("multi_object",)), bench)
        elif bench in ("crepe", "vl_checklist") and _modality(es) != TEXT_ONLY:
            out[bench] = _with_tie_rule(_summarize_by_config(es, bench, None), bench)
        elif bench in ("winoground", "winoground_style"):
            out[bench] = _summarize_by_config(es, bench, None)
        else:
            rows = []
            for e in es:
                m = e["metrics"]
                keys = headline_present(bench, _entry_shape(e), _present(m), (e.get("data") or {}).get("modality"))
                rows.append(_row(e["config"], e["split"], m, keys, e["config"]))
            shown = {k for r in rows for k in list(r["values"]) + list(r.get("na") or [])}
            out[bench] = {"source": None, "headline": sorted(shown, key=lambda k: _ORDER.index(k) if k in _ORDER else 99),
                          "rows": rows, "complete": True, "notes": []}
    return out
