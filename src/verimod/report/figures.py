"""The figures of one or more runs, built from scored runs (used by ``verimod diagnose plots``
and ``verimod report``): field mismatch bars, Shapley stacked bars, per-category F1 with
bootstrap CIs, and a confusion matrix per discrete field of each run; the cue-family JREM
figure when cue reports are given."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from matplotlib.figure import Figure

from verimod.report.plots import confusion_heatmap, cue_family_bars, mismatch_bars, per_category_f1, shapley_bars
from verimod.tasks.varm.errors import confusion_matrices
from verimod.tasks.varm.evaluate import ScoredRun
from verimod.tasks.varm.uncertainty import per_class_intervals, scorer_of


def run_labels(runs: Sequence[ScoredRun]) -> list[str]:
    """Short, distinct series names: the model (its file or last path part) and the setting;
    a number is appended when two runs would share a name."""
    labels = []
    for run in runs:
        manifest = run.store.manifest
        model = manifest.model.rstrip("/").split("/")[-1]
        lora = " + LoRA" if manifest.model_label != manifest.model else ""
        labels.append(f"{model}{lora} · {manifest.setting}")
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if labels.count(label) == 1 else f"{label} ({seen[label]})")
    return out


def cue_jrem(runs: Sequence[ScoredRun]) -> dict[str, dict[str, tuple[float | None, float | None]]]:
    """JREM on harmful and on non-harmful cue-bearing items per bundled cue family, per run."""
    from verimod.tasks.varm.cues import CueMatcher, cue_report, default_lexicons

    matcher = CueMatcher(default_lexicons())
    out = {}
    for label, run in zip(run_labels(runs), runs, strict=True):
        report = cue_report(run, matcher)
        out[label] = {f.family: (f.jrem_harmful, f.jrem_non_harmful) for f in report.families}
    return out


def run_figures(
    runs: Sequence[ScoredRun],
    n_resamples: int = 1000,
    seed: int = 0,
    cue_jrem: Mapping[str, Mapping[str, tuple[float | None, float | None]]] | None = None,
) -> dict[str, Figure]:
    """``{file stem: figure}`` for the given runs (run ids label the series)."""
    names = run_labels(runs)
    figures: dict[str, Figure] = {
        "mismatch": mismatch_bars({name: run.scores.mismatch for name, run in zip(names, runs, strict=True)}),
        "shapley": shapley_bars({name: run.scores.shapley for name, run in zip(names, runs, strict=True)}),
    }
    category_f1 = {}
    for number, (name, run) in enumerate(zip(names, runs, strict=True), 1):
        scorer = scorer_of(run.references, run.items)
        intervals = per_class_intervals(scorer, "category", n_resamples, seed)
        category_f1[name] = {c: (i.estimate or 0.0, i.low, i.high) for c, i in intervals.items()}
        for matrix in confusion_matrices(scorer):
            rows = [(label, row) for label, row in zip(matrix.labels, matrix.counts, strict=True) if any(row)]
            if rows:
                figures[f"confusion-run{number}-{matrix.field}"] = confusion_heatmap(
                    [row for _, row in rows], [label for label, _ in rows], matrix.predicted,
                    title=f"{name}: {matrix.field}",
                )  # fmt: skip
    if any(category_f1.values()):
        figures["category-f1"] = per_category_f1(category_f1)
    if cue_jrem:
        figures["cue-families"] = cue_family_bars(cue_jrem)
    return figures
