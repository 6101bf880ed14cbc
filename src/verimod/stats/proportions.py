"""Proportions: the Wilson score interval.

For k successes in n trials, p̂ = k/n, z = Φ⁻¹(1 − α/2):

    centre = (p̂ + z²/(2n)) / (1 + z²/n),
    half   = z / (1 + z²/n) · sqrt(p̂(1 − p̂)/n + z²/(4n²)),
    [centre − half, centre + half]  (NaN, NaN for n = 0);

equal to ``statsmodels.stats.proportion.proportion_confint(k, n, method="wilson")``.

>>> [round(x, 3) for x in wilson_interval(425, 500)]
[0.816, 0.879]
"""

from __future__ import annotations

import math
from statistics import NormalDist


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of ``successes`` out of ``n`` (formula in the module docstring)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n < 0 or not 0 <= successes <= max(n, 0):
        raise ValueError(f"need 0 ≤ successes ≤ n, got {successes} of {n}")
    if n == 0:
        return math.nan, math.nan
    z = NormalDist().inv_cdf(1.0 - (1.0 - confidence) / 2.0)
    p = successes / n
    z2 = z * z
    denominator = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return centre - half, centre + half
