from fractions import Fraction
from itertools import permutations

import pytest

from verimod.stats import shapley_values


def permutation_shapley(players, value):
    """Independent definition: average marginal contribution over all orderings."""
    totals = dict.fromkeys(players, Fraction(0))
    orders = list(permutations(players))
    for order in orders:
        coalition = frozenset()
        for player in order:
            totals[player] += value(coalition | {player}) - value(coalition)
            coalition = coalition | {player}
    return {p: t / len(orders) for p, t in totals.items()}


def test_glove_game():
    # classic: one left glove (a), two right gloves (b, c): phi_a = 2/3, phi_b = phi_c = 1/6
    def v(s):
        return Fraction(1) if "a" in s and ({"b", "c"} & s) else Fraction(0)

    assert shapley_values(["a", "b", "c"], v, exact=True) == {
        "a": Fraction(2, 3),
        "b": Fraction(1, 6),
        "c": Fraction(1, 6),
    }


@pytest.mark.parametrize("seed", range(10))
def test_matches_permutation_definition_and_is_efficient(seed):
    import random

    rng = random.Random(seed)
    players = ["referent", "stance", "decision", "extra"][: rng.randint(1, 4)]
    table = {}

    def v(s):
        if s not in table:
            table[s] = Fraction(rng.randint(0, 100), 100)
        return table[s]

    phi = shapley_values(players, v, exact=True)
    assert phi == permutation_shapley(players, v)
    assert sum(phi.values()) == v(frozenset(players)) - v(frozenset())
    floats = shapley_values(players, lambda s: float(v(s)))
    assert floats == pytest.approx({p: float(x) for p, x in phi.items()})


def test_duplicate_players_rejected():
    with pytest.raises(ValueError):
        shapley_values(["a", "a"], lambda s: 0.0)
