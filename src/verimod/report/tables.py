"""Terminal tables of VARM scores (Rich). Percentages for reading; JSON keeps fractions."""

from __future__ import annotations

import math

from rich.table import Table

from verimod.tasks.varm.scorer import VarmScores

#: (label, attribute) in the order of the VARM-Bench results table.
MAIN_METRICS = (
    ("Label macro-F1", "label_macro_f1"),
    ("Category macro-F1", "category_macro_f1"),
    ("Target char-F1 (T-F1)", "target_char_f1"),
    ("Target type macro-F1", "target_type_macro_f1"),
    ("Explicitness macro-F1", "explicitness_macro_f1"),
    ("Stance macro-F1", "stance_macro_f1"),
    ("Parse", "parse_rate"),
    ("Format", "format_rate"),
    ("JREM", "jrem"),
    ("HER-C", "her_c"),
    ("HER-L", "her_l"),
)


def percent(value: float | None, digits: int = 2) -> str:
    """``0.1234`` → ``"12.34"`` (``digits`` decimals); None or NaN → ``"n/a"`` (an undefined ratio)."""
    return "n/a" if value is None or math.isnan(value) else f"{100 * value:.{digits}f}"


def varm_scores_table(scores: VarmScores, title: str = "VARM scores") -> Table:
    """The main metrics, field mismatch rates, Shapley terms and parse-error counts."""
    table = Table(title=f"{title} (n = {scores.n}, %)", show_header=True, header_style="bold")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for label, attribute in MAIN_METRICS:
        table.add_row(label, percent(getattr(scores, attribute)))
    table.add_section()
    for field, rate in scores.mismatch.items():
        table.add_row(f"mismatch: {field}", percent(rate))
    table.add_section()
    for group, phi in scores.shapley.items():
        table.add_row(f"Shapley (Parse − JREM): {group}", percent(phi))
    if any(count < scores.n for count in scores.fields_scored.values()):
        table.add_section()
        for field, count in scores.fields_scored.items():
            table.add_row(f"partial references: {field} scored on", f"{count} / {scores.n}")
        table.add_row("partial references: JREM over", f"{scores.n_jrem} / {scores.n}")
    if scores.error_classes:
        table.add_section()
        for error, count in scores.error_classes.items():
            table.add_row(f"unparsed: {error}", str(count))
    if scores.n_truncated:
        table.add_row("cut at --max-tokens (parsed or not)", str(scores.n_truncated))
    return table
