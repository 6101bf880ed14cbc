"""Write the varm-open data card (step 5): ``python datasets/varm-open/make_card.py``.

Every number in the card is computed here from the release files — ``sample_report.json``,
``annotation/agreement.json`` and the assembled ``varm_open.jsonl`` — so the card cannot drift
from the data. The prose parts (sources, process, limitations, intended use) are in this file.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

from verimod.tasks.varm.codebook import HARD_NEGATIVE_TAGS

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RELEASE = ROOT / "src" / "verimod" / "resources" / "varm_open"
SHARED = ROOT.parent / "shared" / "data"
SPLITS = ("train", "dev", "test")
SOURCES = (
    (
        "cold",
        "COLD — Deng et al., *COLD: A Benchmark for Chinese Offensive Language Detection*, EMNLP 2022",
        "Apache-2.0 (`LICENSE-COLD`)",
        "train / dev / test CSV: comments from Zhihu and Weibo on race, region, gender, with offensive labels "
        "(test: fine-grained)",
    ),
    (
        "swsr",
        "SWSR — Jiang et al., *SWSR: A Chinese dataset and lexicon for online sexism detection*, "
        "Online Social Networks and Media 2022",
        "MIT (`LICENSE-SWSR`, © 2022 Aiqi Jiang)",
        "`SexComment.csv` comments (label, category, target) with the parent post of `SexWeibo.csv` as "
        "`context`; commenter gender, location, likes and dates dropped (personal data)",
    ),
)


def pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def ci(entry: dict[str, Any] | None, key_value: str = "value") -> str:
    if not entry or entry.get(key_value) is None:
        return "n/a"
    low, high = entry.get("low"), entry.get("high")
    interval = "" if low is None or high is None else f" [{low:.3f}, {high:.3f}]"
    return f"{entry[key_value]:.3f}{interval}"


def distribution_table(rows: list[dict[str, Any]], field: str) -> str:
    values = sorted({str(r.get(field)) for r in rows})
    lines = [f"| {field} | " + " | ".join(SPLITS) + " | all |", "|---|" + "---:|" * (len(SPLITS) + 1)]
    for value in values:
        cells = []
        for split in (*SPLITS, None):
            part = [r for r in rows if split is None or r["split"] == split]
            n = sum(str(r.get(field)) == value for r in part)
            cells.append(f"{n} ({pct(n / len(part))})" if part else "0")
        lines.append(f"| {value} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def agreement_table(report: dict[str, Any]) -> str:
    names = {
        "target_type": "Target type",
        "target_explicitness": "Explicitness",
        "stance": "Stance",
        "category": "Category",
    }
    lines = [
        "| field | items (both passes free) | Krippendorff's α [95 % CI] | raw agreement [95 % CI] |",
        "|---|---:|---:|---:|",
    ]
    for field in report["fields"]:
        if field["n_items"] == 0:
            continue
        lines.append(
            f"| {names.get(field['field'], field['field'])} | {field['n_items']} | "
            f"{ci(field['alpha'])} | {ci(field['raw_agreement'])} |"
        )
    target = report["target"]
    lines.append(
        f"| Target (mean pairwise character F1) | {target['n_items']} | {ci(target['mean_pairwise_char_f1'])} | |"
    )
    labels = report["label_readings"]
    alpha = labels["alpha_A_B"]
    lines.append(
        f"| Label reading (gold or the pass's disputed label) | {labels['items']} | "
        f"{alpha['estimate']:.3f} [{alpha['low']:.3f}, {alpha['high']:.3f}] | |"
    )
    return "\n".join(lines)


def main() -> None:
    rows = [json.loads(x) for x in (RELEASE / "varm_open.jsonl").read_text(encoding="utf-8").splitlines() if x]
    sample = json.loads((HERE / "sample_report.json").read_text(encoding="utf-8"))
    agreement = json.loads((HERE / "annotation" / "agreement.json").read_text(encoding="utf-8"))
    sizes = Counter(r["split"] for r in rows)
    resolution = Counter(r["meta"]["annotation"]["resolution"] for r in rows)
    cot_from = Counter(r["meta"]["annotation"]["cot_from"] for r in rows)
    disputed = [r for r in rows if r["meta"].get("disputed")]
    disputed_fields = Counter(f for r in disputed for f in r["meta"]["disputed"]["reading"])
    non_harmful = [r for r in rows if r["label"] == "non_harmful"]
    hard = [r for r in non_harmful if set(r["tags"]) & HARD_NEGATIVE_TAGS]
    test = [r for r in rows if r["split"] == "test"]
    normalised = Counter(rule for r in rows for rule in r["meta"]["normalisation"])
    labels = agreement["label_readings"]
    leaked = {k: v["excluded"].get("near-duplicate of an earlier-trained text", 0) for k, v in sample["splits"].items()}
    shares = ", ".join(f"{k.upper()} {pct(v)}" for k, v in sample["source_share"].items())
    harmful = ", ".join(f"{k.upper()} {pct(v)}" for k, v in sample["harmful_share_by_source"].items())
    source_rows = "\n".join(
        " | ".join(["", name, licence, what, f"{sum(r['meta']['source'] == key for r in rows):,}", ""]).strip()
        for key, name, licence, what in SOURCES
    )
    card = f"""# varm-open — data card

**varm-open** is verimod's open VARM reference set: {len(rows):,} real Chinese social-media
comments from two public data sets, each with a complete six-field VARM record and an anchored
rationale (`cot`), the source's human labels kept as gold. Splits: train {sizes["train"]:,},
dev {sizes["dev"]:,}, test {sizes["test"]:,}. File: `varm_open.jsonl` (one `VarmReference` per line;
`verimod eval --data varm-open --split test`, or `verimod.tasks.varm.bundled.load_bundled("varm-open")`).

## Sources and licences
| source | licence | what was used | items |
|---|---|---|---:|
{source_rows}

Both licences allow redistribution of the texts and derived annotations with the licence and
attribution, which this folder carries. Every record names its source file and row
(`meta.source_file`, `meta.source_row`: the `cold` / `swsr` adapters' ids) and keeps the
source's own labels (`meta.original`). The set is derived work of verimod (Apache-2.0); the texts
remain under their sources' licences.

## Sampling (`datasets/varm-open/build_sample.py`, seed {sample["seed"]})
- Pools: test = COLD `test.csv` + SWSR test, dev = COLD `dev.csv` + SWSR dev, train = COLD
  `train.csv` + SWSR train. SWSR has no split; verimod's split (`resources/splits/swsr.json`:
  70/10/20, stratified by label and target, every near-duplicate component and every parent post
  in one split) is used.
- Leakage: an item was eligible only if it near-duplicates (RapidFuzz `fuzz.ratio` ≥ {sample["threshold"]:.0f},
  after normalisation) no text of an earlier-trained pool — test items nothing in COLD train/dev
  or SWSR train/dev ({leaked["test"]} excluded), dev items nothing in COLD train or SWSR train
  ({leaked["dev"]} excluded) — and one item per near-duplicate component within a pool.
- Quotas: sources in proportion to their pooled sizes ({shares}); within a source, the harmful
  share of the whole source ({harmful}; pooled {pct(sample["pooled_harmful_share"])}); within
  (source, label) the source's strata (COLD topic × fine-grained label, SWSR target × category)
  in proportion. Categories fall as the annotation finds them.
- Harmful share of the test split: {pct(sum(r["label"] == "harmful" for r in test) / len(test))}
  (pooled sources: {pct(sample["pooled_harmful_share"])}).

## Normalisation
NFKC (Chinese full-width punctuation kept), URLs removed, @-mentions → `@用户`, contact
identifiers → placeholders, whitespace collapsed — nothing else: emoji, Weibo emoticon codes
(`[doge]`), slang, homophones, missing punctuation and long comments stay as written. Rules
that changed at least one text: {", ".join(f"{k} ({v})" for k, v in sorted(normalised.items())) or "none"}.
Every record lists the rules applied to it in `meta.normalisation`.

## Annotation
- **Codebook**: `resources/varm_codebook.md` (`varm-codebook/2`), with the conventions settled
  for verimod: quoting to denounce vs reporting, behaviour vs identity criticism,
  self-deprecation, identities outside the six categories, sources with other conventions.
- **Gold fields** come from the sources' human annotators and are never changed: `label`
  always; COLD test's fine-grained label gives `target_type` (attack individual → single,
  attack group → group) and `stance` (anti-bias → oppose_attack); SWSR gives `target_type`
  (I / G) and `category = gender` for sexist comments. `meta.gold_fields` lists them per record.
- **Two independent passes (A, B)** annotated every other field — target span, target type,
  explicitness, stance, category where the source has none, phenomenon tags — and wrote an
  anchored rationale for every item, each pass blind to the other. **Both passes were made by an
  LLM agent (Anthropic Claude, run as two separate annotator instances with the same codebook and
  guide, `annotation/ANNOTATOR_GUIDE.md`), not by people**: this is model annotation, checked by
  deterministic validators (`annotation/check_pass.py`: gold fields, codebook constraints,
  explicit targets occurring in the text, rationales that parse to the record and quote the
  comment), not human-verified like VARM-Bench.
- **Adjudication**: {resolution["adjudicated"]:,} items on which the passes differed (a free field,
  the target after normalisation, or the disputed reading) were decided by a third LLM agent
  instance that saw both annotations (`annotation/ADJUDICATOR_GUIDE.md`); {resolution["agreed"]:,}
  items were resolved by agreement. Rationales: pass A {cot_from.get("A", 0):,}, pass B
  {cot_from.get("B", 0):,}, written at adjudication {cot_from.get("new", 0):,}.
- **Provenance**: each record keeps both passes' fields, tags and disputes, the adjudicated
  value with its note, and how it was resolved (`meta.annotation`); the complete pass files
  (rationales included) are in `datasets/varm-open/annotation/`.
- **Disputes**: where the annotation disagrees with a source label, the record keeps the
  source value and `meta.disputed` holds the annotators' reading and reason —
  {len(disputed):,} records ({pct(len(disputed) / len(rows))}); fields disputed:
  {", ".join(f"{k} {v}" for k, v in disputed_fields.most_common())}. Leave them out, or score
  against either reading.

## Agreement between the passes
Over the items where both passes were free to choose the field (gold fields excluded), 95 %
percentile bootstrap intervals over items (1,000 resamples, seed 0), computed with
`verimod data agree` on `annotation/passes_long.jsonl`:

{agreement_table(agreement)}

Label readings: Cohen's κ of pass A with the source gold {labels["kappa_A_gold"]["estimate"]:.3f},
of pass B {labels["kappa_B_gold"]["estimate"]:.3f}; share of items whose label a pass disputed:
A {pct(labels["disputed_label_share"]["A"])}, B {pct(labels["disputed_label_share"]["B"])}.
Two instances of one model agree more than two people would; these figures bound annotation
noise from below, they do not measure human agreement.

## What the set looks like
{distribution_table(rows, "label")}

{distribution_table(rows, "category")}

{distribution_table(rows, "stance")}

{distribution_table(rows, "target_type")}

{distribution_table(rows, "target_explicitness")}

Hard non-harmful cases (tags {", ".join(sorted(HARD_NEGATIVE_TAGS))}): {len(hard):,} of
{len(non_harmful):,} non-harmful items ({pct(len(hard) / len(non_harmful))}), all found in the
sources, none constructed. `verimod data profile` compares the set with its sources and with the
starter set.

## Known limitations and biases
- **Model annotation.** Targets, types, explicitness, stances, non-gold categories and all
  rationales are an LLM's reading, adjudicated by the same model family; systematic errors of
  that model are not averaged out by the second pass. Treat non-gold fields as silver.
- **Sources.** COLD was collected by keyword queries on race, region and gender topics; SWSR
  covers sexism only (its label 0 means "not sexist", not "not abusive"). So sogi,
  status/occupation and body/health attacks are rare, gender and region/ethnicity frequent, and
  general insults under-represented; platforms are Zhihu and Weibo only.
- **Source conventions.** COLD's offensive label and SWSR's sexist label follow their own
  guidelines, which differ from VARM's in places (quotation and counter-speech, meta-discussion
  of sexism); the disputes above mark where.
- **Context.** COLD comments carry no context; SWSR comments carry their parent post. Items
  whose reading needs missing context are tagged `context_needed` and kept.
- **Time and domain.** Comments are from before 2022; slang and targets drift.

## Intended use
Evaluating Chinese abusive-speech moderation models on real comments with verimod's VARM
protocol (the test split), development and few-shot examples (dev, train), and small-scale
training. Not for profiling people or platforms, and not a substitute for a human-verified
benchmark in high-stakes decisions. Report results on the test split with the set's name and
version, and say whether disputed items were included.
"""
    (RELEASE / "DATA_CARD.md").write_text(card, encoding="utf-8")
    for source in ("cold", "swsr"):
        licence = SHARED / source / "LICENSE"
        if licence.exists():
            shutil.copy(licence, RELEASE / f"LICENSE-{source.upper()}")
    print(f"data card: {RELEASE / 'DATA_CARD.md'}")


if __name__ == "__main__":
    main()
