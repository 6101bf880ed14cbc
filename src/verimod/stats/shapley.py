"""Exact Shapley values of a cooperative game with a handful of players.

For players G and a characteristic function v over coalitions (frozensets of players):
    φ_g = Σ_{S ⊆ G∖{g}} |S|!·(|G|−|S|−1)! / |G|! · (v(S ∪ {g}) − v(S))
The values are *efficient*: Σ_g φ_g = v(G) − v(∅). Enumeration is exponential in |G| and
meant for small games (the VARM decomposition has three players). With ``exact=True`` the
weights are :class:`fractions.Fraction`, so rational v gives exactly rational φ.

>>> shapley_values(["a", "b"], lambda s: float(len(s) ** 2))
{'a': 2.0, 'b': 2.0}
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from itertools import combinations
from math import factorial
from typing import TypeVar, cast

Value = TypeVar("Value", float, Fraction)


def shapley_values(
    players: Sequence[str], value: Callable[[frozenset[str]], Value], exact: bool = False
) -> dict[str, Value]:
    """Shapley value of every player (see the module docstring)."""
    if len(set(players)) != len(players):
        raise ValueError("players must be distinct")
    n = len(players)
    cache: dict[frozenset[str], Value] = {}

    def v(coalition: frozenset[str]) -> Value:
        if coalition not in cache:
            cache[coalition] = value(coalition)
        return cache[coalition]

    exact_weights = [Fraction(factorial(size) * factorial(n - size - 1), factorial(n)) for size in range(n)]
    weights = [cast(Value, w if exact else float(w)) for w in exact_weights]
    result: dict[str, Value] = {}
    for player in players:
        others = [p for p in players if p != player]
        total = cast(Value, Fraction(0) if exact else 0.0)
        for size in range(n):
            for members in combinations(others, size):
                coalition = frozenset(members)
                total = total + weights[size] * (v(coalition | {player}) - v(coalition))
        result[player] = total
    return result
