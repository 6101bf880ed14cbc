"""Pure metric functions. Each docstring states its formula and edge cases; each is tested
against an independent implementation (scikit-learn) or hand-computed golden cases."""

from verimod.stats.classification import macro_f1, per_class_f1
from verimod.stats.shapley import shapley_values
from verimod.stats.text_overlap import char_f1, normalize_for_char_f1

__all__ = ["char_f1", "macro_f1", "normalize_for_char_f1", "per_class_f1", "shapley_values"]
