"""Compare passes A and B (step 3): agreement, and the queue of items to adjudicate.

``python compare_passes.py [--annot /work/annot] [--batches b001,b002,…]`` reads
``batches/bNNN.jsonl`` and ``<annot>/pass_A|pass_B/bNNN.jsonl`` (each already clean under
``check_pass.py``) and writes

- ``<annot>/passes_long.jsonl``: one line per (item, pass) with the fields that pass was free to
  choose (gold fields left out, so agreement is measured only where the passes decided), in
  the long layout of ``verimod data agree``;
- ``<annot>/agreement.json``: ``verimod data agree``'s report on that file (Krippendorff's α,
  Fleiss' κ, raw agreement per field, target character F1, 95 % bootstrap intervals over items,
  1,000 resamples, seed 0), plus the agreement of the passes' *label readings* (the gold label,
  or the label of the pass's ``disputed`` reading) with each other and with the source gold;
- ``<annot>/adjudication/queue/bNNN.jsonl``: the items on which the passes differ — a free
  closed field, the target (compared after NFKC, lower case and trimming), or the disputed
  reading — with both annotations, for the adjudicator.
"""

from __future__ import annotations

import argparse
import json
import unicodedata
from pathlib import Path
from typing import Any

import numpy as np

from verimod.stats.agreement import bootstrap_cis, cohen_kappa_statistic, krippendorff_alpha_statistic
from verimod.tasks.varm.agreement import agreement_report

HERE = Path(__file__).resolve().parent
BATCHES = HERE / "batches"
FREE = ("target", "target_type", "target_explicitness", "stance", "category")
PASSES = ("A", "B")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def same_target(a: str, b: str) -> bool:
    """Targets equal after NFKC, lower case and trimming."""
    return unicodedata.normalize("NFKC", a).strip().lower() == unicodedata.normalize("NFKC", b).strip().lower()


def label_reading(item: dict[str, Any], note: dict[str, Any]) -> str:
    """The pass's own reading of the label: its disputed reading's label, else the gold label."""
    disputed = note.get("disputed") or {}
    return (disputed.get("reading") or {}).get("label", item["gold"]["label"])


def differences(item: dict[str, Any], a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """The fields on which two clean annotations of ``item`` differ (``disputed`` included)."""
    diff = [f for f in FREE[1:] if a[f] != b[f]]
    if not same_target(a["target"], b["target"]):
        diff.insert(0, "target")
    reading_a = (a.get("disputed") or {}).get("reading") or {}
    reading_b = (b.get("disputed") or {}).get("reading") or {}
    if reading_a != reading_b:
        diff.append("disputed")
    return diff


def load(annot: Path, names: list[str]) -> list[tuple[str, dict[str, Any], dict[str, dict[str, Any]]]]:
    """(batch, item, {pass: annotation}) for every item of the named batches."""
    rows = []
    for name in names:
        notes = {p: {n["id"]: n for n in read_jsonl(annot / f"pass_{p}" / f"{name}.jsonl")} for p in PASSES}
        for item in read_jsonl(BATCHES / f"{name}.jsonl"):
            rows.append((name, item, {p: notes[p][item["id"]] for p in PASSES}))
    return rows


def label_agreement(rows: list[tuple[str, dict[str, Any], dict[str, dict[str, Any]]]]) -> dict[str, Any]:
    """α and Cohen's κ between the passes' label readings, and each pass's κ with the gold label."""
    readings = np.array([[label_reading(item, notes[p]) for p in PASSES] for _, item, notes in rows], dtype=object)
    gold = [item["gold"]["label"] for _, item, _ in rows]
    out: dict[str, Any] = {"items": len(rows)}
    statistics = {
        "alpha_A_B": krippendorff_alpha_statistic(readings.tolist()),
        "kappa_A_B": cohen_kappa_statistic(readings[:, 0].tolist(), readings[:, 1].tolist()),
        "kappa_A_gold": cohen_kappa_statistic(readings[:, 0].tolist(), gold),
        "kappa_B_gold": cohen_kappa_statistic(readings[:, 1].tolist(), gold),
    }
    intervals = bootstrap_cis(list(statistics.values()), n_resamples=1000, seed=0)
    for name, interval in zip(statistics, intervals, strict=True):
        out[name] = {"estimate": interval.estimate, "low": interval.low, "high": interval.high}
    out["disputed_label_share"] = {
        p: float(np.mean([label_reading(item, notes[p]) != item["gold"]["label"] for _, item, notes in rows]))
        for p in PASSES
    }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--annot", type=Path, default=Path("/work/annot"))
    parser.add_argument(
        "--batches", default="", help="comma-separated batch names (default: every batch both passes did)"
    )
    args = parser.parse_args()
    done = [
        p.stem
        for p in sorted(BATCHES.glob("b*.jsonl"))
        if all((args.annot / f"pass_{x}" / p.name).exists() for x in PASSES)
    ]
    names = [n for n in args.batches.split(",") if n] or done
    rows = load(args.annot, names)
    long_path = args.annot / "passes_long.jsonl"
    with long_path.open("w", encoding="utf-8") as handle:
        for _, item, notes in rows:
            for p in PASSES:
                fields = {f: notes[p][f] for f in FREE if f not in item["gold"]}
                handle.write(json.dumps({"id": item["id"], "annotator": p, **fields}, ensure_ascii=False) + "\n")
    report = agreement_report(long_path, bootstrap=1000, seed=0).model_dump(mode="json")
    report["label_readings"] = label_agreement(rows)
    report["batches"] = names
    queue_dir = args.annot / "adjudication" / "queue"
    queue_dir.mkdir(parents=True, exist_ok=True)
    queued = 0
    by_batch: dict[str, list[dict[str, Any]]] = {}
    for name, item, notes in rows:
        diff = differences(item, notes["A"], notes["B"])
        if diff:
            by_batch.setdefault(name, []).append({**item, "differ_on": diff, "A": notes["A"], "B": notes["B"]})
            queued += 1
    for name in names:
        path = queue_dir / f"{name}.jsonl"
        with path.open("w", encoding="utf-8") as handle:
            for line in by_batch.get(name, []):
                handle.write(json.dumps(line, ensure_ascii=False) + "\n")
    report["queued_for_adjudication"] = queued
    (args.annot / "agreement.json").write_text(
        json.dumps(report, ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
    )
    print(f"{len(rows)} items in {len(names)} batches; {queued} queued for adjudication")
    for field in report.get("fields", []):
        print(field)
    print(json.dumps(report["label_readings"], indent=1))


if __name__ == "__main__":
    main()
