"""The figures of one or more runs, built from scored runs (used by ``verimod diagnose plots``
and ``verimod report``): field mismatch bars, Shapley stacked bars, per-category F1 with
bootstrap CIs, and a confusion matrix per discrete field of each run; the cue-family JREM
figure (VARM-Bench Fig. 4) when cue reports are given. Series are named by
:func:`~verimod.report.labels.run_labels`, and every bar carries the number of items it rests
on: the items whose reference carries the field (mismatch), the run's items (Shapley), the
reference items of the category (F1), the harmful / non-harmful cue-bearing items (cues)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass

from matplotlib.figure import Figure

from verimod.report.labels import run_labels
from verimod.report.plots import confusion_heatmap, cue_family_bars, mismatch_bars, per_category_f1, shapley_bars
from verimod.tasks.varm.errors import confusion_matrices
from verimod.tasks.varm.evaluate import ScoredRun
from verimod.tasks.varm.uncertainty import per_class_intervals, scorer_of

__all__ = ["CueJrem", "cue_jrem", "run_figures", "run_labels"]

#: ``VarmScores.mismatch`` keys → ``fields_scored`` keys.
_SCORED_FIELD = {"explicitness": "target_explicitness"}


@dataclass(frozen=True)
class CueJrem:
    """Per run label and cue family: (JREM harmful, JREM non-harmful) and their item counts."""

    jrem: dict[str, dict[str, tuple[float | None, float | None]]]
    counts: dict[str, dict[str, tuple[int, int]]]


def cue_jrem(runs: Sequence[ScoredRun], subset_ids: Mapping[str, Set[str]] | None = None) -> CueJrem:
    """JREM on harmful and on non-harmful cue-bearing items per bundled cue family, per run;
    ``subset_ids`` (family → ids, from a ``diagnose cue-subset`` file) restricts each family to
    its challenge subset, as in the paper's Fig. 4."""
    from verimod.tasks.varm.cues import CueMatcher, cue_report, default_lexicons

    matcher = CueMatcher(default_lexicons())
    jrem: dict[str, dict[str, tuple[float | None, float | None]]] = {}
    counts: dict[str, dict[str, tuple[int, int]]] = {}
    for label, run in zip(run_labels(runs), runs, strict=True):
        report = cue_report(run, matcher, subset_ids)
        jrem[label] = {f.family: (f.jrem_harmful, f.jrem_non_harmful) for f in report.families}
        counts[label] = {f.family: (f.n_harmful, f.n_non_harmful) for f in report.families}
    return CueJrem(jrem, counts)


def run_figures(
    runs: Sequence[ScoredRun],
    n_resamples: int = 1000,
    seed: int = 0,
    cues: CueJrem | None = None,
    note: str | None = None,
) -> dict[str, Figure]:
    """``{file stem: figure}`` for the given runs; ``note`` (e.g. that the runs cover different
    items) is added to the title of every figure that compares runs."""
    names = run_labels(runs)
    suffix = f"\n({note})" if note else ""
    mismatch_counts = {
        name: {key: run.scores.fields_scored.get(_SCORED_FIELD.get(key, key), 0) for key in run.scores.mismatch}
        for name, run in zip(names, runs, strict=True)
    }
    figures: dict[str, Figure] = {
        "mismatch": mismatch_bars(
            {name: run.scores.mismatch for name, run in zip(names, runs, strict=True)},
            title=f"Field mismatch rates{suffix}",
            counts=mismatch_counts,
        ),
        "shapley": shapley_bars(
            {name: run.scores.shapley for name, run in zip(names, runs, strict=True)},
            title=f"Shapley decomposition of Parse − JREM{suffix}",
            counts={name: run.scores.n for name, run in zip(names, runs, strict=True)},
        ),
    }
    category_f1 = {}
    category_counts = {}
    for number, (name, run) in enumerate(zip(names, runs, strict=True), 1):
        scorer = scorer_of(run.references, run.items)
        intervals = per_class_intervals(scorer, "category", n_resamples, seed)
        category_f1[name] = {c: (i.estimate or 0.0, i.low, i.high) for c, i in intervals.items()}
        support: Counter[str | None] = Counter(r.category for r in run.references)
        category_counts[name] = {c: support[c] for c in intervals}
        for matrix in confusion_matrices(scorer):
            rows = [(label, row) for label, row in zip(matrix.labels, matrix.counts, strict=True) if any(row)]
            if rows:
                figures[f"confusion-run{number}-{matrix.field}"] = confusion_heatmap(
                    [row for _, row in rows], [label for label, _ in rows], matrix.predicted,
                    title=f"{name}: {matrix.field}",
                )  # fmt: skip
    if any(category_f1.values()):
        figures["category-f1"] = per_category_f1(
            category_f1, title=f"F1 per category (95% CI){suffix}", counts=category_counts
        )
    if cues is not None and cues.jrem:
        figures["cue-families"] = cue_family_bars(cues.jrem, title=f"JREM by cue family{suffix}", counts=cues.counts)
    return figures
