"""Pure metric functions. Each docstring states its formula and edge cases; each is tested
against an independent implementation (scikit-learn) or hand-computed golden cases."""

from verimod.stats.agreement import (
    ConfidenceInterval,
    RatingTable,
    bootstrap_ci,
    cohen_kappa,
    fleiss_kappa,
    krippendorff_alpha,
    mean_pairwise_similarity,
    raw_agreement,
)
from verimod.stats.classification import macro_f1, per_class_f1
from verimod.stats.proportions import wilson_interval
from verimod.stats.shapley import shapley_values
from verimod.stats.text_overlap import char_f1, normalize_for_char_f1

__all__ = [
    "ConfidenceInterval",
    "RatingTable",
    "bootstrap_ci",
    "char_f1",
    "cohen_kappa",
    "fleiss_kappa",
    "krippendorff_alpha",
    "macro_f1",
    "mean_pairwise_similarity",
    "normalize_for_char_f1",
    "per_class_f1",
    "raw_agreement",
    "shapley_values",
    "wilson_interval",
]
