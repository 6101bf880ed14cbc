"""Quality of the embedded baseline on real held-out Chinese data (the README's figures).

Needs the public data in ``../shared/data`` (``--data-root``). Prints Markdown tables:

1. per test set (COLD test; SWSR test of verimod's split; varm-open test): the model's field metrics with
   percentile bootstrap 95% intervals (``verimod.tasks.varm.uncertainty.metric_intervals``:
   1,000 resamples of the items, seed 0), beside two lexicon rules — "harmful if any cue word of
   the bundled lexicons appears" (all four families) and "… of the general_abuse family" — and
   the majority class (non_harmful), each measured on the same resamples (label macro-F1);
2. counter-speech: COLD test's fine-grained label 3 (anti-bias: real counter-speech) and the open
   set's non-harmful oppose_attack / quote_or_report test items — the share the model calls
   non_harmful and the share it gives stance oppose_attack; HateCheck-en's
   counter_quote_nh / counter_ref_nh (English: out of the model's language) likewise;
3. robustness: verimod's SafeQA character transformations applied to COLD test (seed 0) —
   label macro-F1 and harmful recall on the clean and the perturbed texts of the items the
   transformation applies to, in two modes: ``content`` (SafeQA's default: half of the content
   characters of the comment) and ``cues`` (the transformation's key words are the bundled
   lexicon's cue words in the comment: the obfuscation of abusive words; items with no cue word
   are left out).

    python benchmarks/quality_baseline.py --data-root ../shared/data [--model DIR] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from verimod.data.adapters import convert
from verimod.models.baseline import BaselineModel
from verimod.models.baseline.default import default_model
from verimod.stats.classification import macro_f1
from verimod.tasks.safeqa.schema import SafeQuery
from verimod.tasks.safeqa.transforms.api import transform
from verimod.tasks.safeqa.transforms.base import NotApplicableError
from verimod.tasks.varm.bundled import load_bundled
from verimod.tasks.varm.cue_lexicons import CueMatcher, default_lexicons
from verimod.tasks.varm.schema import VarmReference
from verimod.tasks.varm.scorer import VarmScorer
from verimod.tasks.varm.uncertainty import metric_intervals

METHODS = (
    "homophone",
    "similar_shape",
    "traditional",
    "pinyin",
    "mixed_script",
    "emoji",
    "separator_insertion",
    "char_split",
    "pinyin_initials",
)
FIELDS = (
    ("label_macro_f1", "Label"),
    ("category_macro_f1", "Category"),
    ("target_type_macro_f1", "Type"),
    ("stance_macro_f1", "Stance"),
    ("parse_rate", "Parse"),
    ("format_rate", "Format"),
)
RESAMPLES = 1000


def _resamples(n: int) -> np.ndarray:
    return np.random.default_rng(0).integers(0, n, size=(RESAMPLES, n))


def label_interval(gold: Sequence[str], predicted: Sequence[str]) -> tuple[float, float, float]:
    """Label macro-F1 and its percentile bootstrap 95% interval (the resamples of metric_intervals)."""
    g, p = np.asarray(gold), np.asarray(predicted)
    values = [macro_f1(g[i], p[i], labels=["harmful", "non_harmful"]) for i in _resamples(len(g))]
    return macro_f1(g, p, labels=["harmful", "non_harmful"]), *np.quantile(values, [0.025, 0.975])


def pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}"


def interval(estimate: float | None, low: float | None, high: float | None) -> str:
    if estimate is None:
        return "—"
    return f"{pct(estimate)} [{pct(low)}, {pct(high)}]"


def load_sets(root: Path, split: str = "test") -> dict[str, list[VarmReference]]:
    """COLD's file of ``split``, SWSR's ``split`` of verimod's split and the open set's ``split``."""
    swsr = convert("swsr", root / "swsr" / "SexComment.csv", split="verimod").references
    return {
        f"COLD {split}": convert("cold", root / "cold" / f"{split}.csv").references,
        f"SWSR {split} (verimod split)": [r for r in swsr if r.split == split],
        f"varm-open {split}": load_bundled("varm-open", split),
    }


def lexicon_rule(families: set[str] | None) -> Callable[[str], str]:
    matcher = CueMatcher([lx for lx in default_lexicons() if families is None or lx.family in families])
    return lambda text: "harmful" if matcher.find(text) else "non_harmful"


def quality_tables(model: BaselineModel, sets: dict[str, list[VarmReference]]) -> dict[str, object]:
    rules = {
        "lexicon rule: any cue word (4 families)": lexicon_rule(None),
        "lexicon rule: general_abuse cue word": lexicon_rule({"general_abuse"}),
        "majority class (non_harmful)": lambda _text: "non_harmful",
    }
    out: dict[str, object] = {}
    for name, references in sets.items():
        started = time.perf_counter()
        predictions = model.predict([r.text for r in references])
        seconds = time.perf_counter() - started
        scorer = VarmScorer()
        for reference, prediction in zip(references, predictions, strict=True):
            scorer.add(reference.id, reference, prediction.rationale)
        intervals = metric_intervals(scorer, RESAMPLES, seed=0)
        gold = [str(r.label) for r in references]
        rows = {"model": {key: intervals[key].model_dump() for key, _ in FIELDS}}
        rows["model"]["label_check"] = label_interval(gold, [p.record.label for p in predictions])
        for rule, predict in rules.items():
            rows[rule] = {"label_macro_f1": label_interval(gold, [predict(r.text) for r in references])}
        out[name] = {"n": len(references), "predict_seconds": round(seconds, 2), "rows": rows}
    return out


def counter_speech(model: BaselineModel, root: Path) -> dict[str, object]:
    cold = convert("cold", root / "cold" / "test.csv").references
    anti = [r for r in cold if (r.meta or {}).get("original", {}).get("fine-grained-label") == "3"]
    out: dict[str, object] = {}
    predictions = model.predict([r.text for r in anti])
    out["COLD test anti-bias (fine-grained 3)"] = {
        "n": len(anti),
        "non_harmful": float(np.mean([p.record.label == "non_harmful" for p in predictions])),
        "oppose_attack": float(np.mean([p.record.stance == "oppose_attack" for p in predictions])),
    }
    for stance in ("oppose_attack", "quote_or_report"):
        chosen = [r for r in load_bundled("varm-open", "test") if r.stance == stance and r.label == "non_harmful"]
        preds = model.predict([r.text for r in chosen])
        out[f"varm-open test, non-harmful {stance}"] = {
            "n": len(chosen),
            "non_harmful": float(np.mean([p.record.label == "non_harmful" for p in preds])),
            "oppose_attack": float(np.mean([p.record.stance == "oppose_attack" for p in preds])),
        }
    path = root / "hatecheck-en" / "test_suite_cases.csv"
    if path.is_file():
        cases = convert("hatecheck", path).references
        for functionality in ("counter_quote_nh", "counter_ref_nh"):
            chosen = [r for r in cases if functionality in r.tags]
            preds = model.predict([r.text for r in chosen])
            out[f"HateCheck-en {functionality} (English)"] = {
                "n": len(chosen),
                "non_harmful": float(np.mean([p.record.label == "non_harmful" for p in preds])),
                "oppose_attack": float(np.mean([p.record.stance == "oppose_attack" for p in preds])),
            }
    return out


def _perturbed(references: Sequence[VarmReference], method: str, keywords: bool) -> list[tuple[int, str]]:
    matcher = CueMatcher(default_lexicons())
    out = []
    for k, reference in enumerate(references):
        meta = None
        if keywords:
            terms = sorted({reference.text[h.start : h.end] for h in matcher.find(reference.text)}, key=len)
            if not terms:
                continue
            meta = {"keywords": terms}
        query = SafeQuery(id=reference.id, text=reference.text, form="declarative", meta=meta)
        try:
            out.append((k, transform(method, query).text))
        except NotApplicableError:
            continue
    return out


def robustness(model: BaselineModel, references: list[VarmReference]) -> dict[str, object]:
    clean = [p.record.label for p in model.predict([r.text for r in references])]
    gold = np.asarray([r.label for r in references])
    out: dict[str, object] = {}
    for mode in ("content", "cues"):
        for method in METHODS:
            pairs = _perturbed(references, method, keywords=mode == "cues")
            if not pairs:
                continue
            index = np.array([k for k, _ in pairs])
            perturbed = np.asarray([p.record.label for p in model.predict([t for _, t in pairs])])
            before = np.asarray(clean)[index]
            g = gold[index]
            harmful = g == "harmful"
            out[f"{mode}/{method}"] = {
                "n": int(index.size),
                "f1_clean": macro_f1(g, before, labels=["harmful", "non_harmful"]),
                "f1_perturbed": macro_f1(g, perturbed, labels=["harmful", "non_harmful"]),
                "recall_clean": float(np.mean(before[harmful] == "harmful")),
                "recall_perturbed": float(np.mean(perturbed[harmful] == "harmful")),
            }
    return out


def print_markdown(report: dict[str, object]) -> None:
    for name, data in report["quality"].items():  # type: ignore[union-attr]
        print(f"\n### {name} (n = {data['n']:,}; prediction {data['predict_seconds']} s)\n")
        print("| row | " + " | ".join(label for _, label in FIELDS) + " |")
        print("|---|" + "---:|" * len(FIELDS))
        for row, values in data["rows"].items():
            cells = []
            for key, _ in FIELDS:
                value = values.get(key)
                if value is None:
                    cells.append("—")
                elif isinstance(value, dict):
                    cells.append(interval(value["estimate"], value["low"], value["high"]))
                else:
                    cells.append(interval(*value))
            print(f"| {row} | " + " | ".join(cells) + " |")
    print("\n### Counter-speech\n\n| items | n | non_harmful | stance oppose_attack |\n|---|---:|---:|---:|")
    for name, data in report["counter_speech"].items():  # type: ignore[union-attr]
        print(f"| {name} | {data['n']} | {pct(data['non_harmful'])} | {pct(data['oppose_attack'])} |")
    print(
        "\n### Robustness on COLD test\n\n| mode / transformation | n | macro-F1 clean → perturbed (Δ) "
        "| harmful recall clean → perturbed (Δ) |\n|---|---:|---:|---:|"
    )
    for name, d in report["robustness"].items():  # type: ignore[union-attr]
        f1 = f"{pct(d['f1_clean'])} → {pct(d['f1_perturbed'])} ({100 * (d['f1_perturbed'] - d['f1_clean']):+.1f})"
        rec = (
            f"{pct(d['recall_clean'])} → {pct(d['recall_perturbed'])} "
            f"({100 * (d['recall_perturbed'] - d['recall_clean']):+.1f})"
        )
        print(f"| {name} | {d['n']:,} | {f1} | {rec} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-root", type=Path, default=Path("../shared/data"))
    parser.add_argument("--model", type=Path, default=None, help="A saved model folder (default: the shipped one).")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--skip-robustness", action="store_true")
    parser.add_argument("--dev", action="store_true", help="Label figures on the dev splits only (for tuning).")
    args = parser.parse_args()
    model = BaselineModel.load(args.model) if args.model else default_model()
    if args.dev:
        report = {"quality": quality_tables(model, load_sets(args.data_root, "dev")), "counter_speech": {}}
        print_markdown({**report, "robustness": {}})
        return
    sets = load_sets(args.data_root)
    report: dict[str, object] = {
        "model": {"data_sha256": model.data_sha256, "fingerprint": model.fingerprint},
        "quality": quality_tables(model, sets),
        "counter_speech": counter_speech(model, args.data_root),
        "robustness": {} if args.skip_robustness else robustness(model, sets["COLD test"]),
    }
    print_markdown(report)
    if args.json:
        args.json.write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
