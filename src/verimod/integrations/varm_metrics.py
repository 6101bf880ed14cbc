"""What the inspect_ai and lm-eval integrations share: the VARM metric keys and how a metric's
value is reported to a tool that wants a number.

Both tools ask for each metric separately, over the same samples; :class:`ScoresMemo` scores
those samples once with verimod's scorer and serves every metric from that one result.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Final

from verimod.report.run_table import METRIC_COLUMNS
from verimod.tasks.varm.scorer import VarmScores

#: The Table-1 metrics (keys of :class:`VarmScores`, as ``verimod score --json`` writes them).
METRIC_KEYS: Final = tuple(key for _, key in METRIC_COLUMNS)


def metric_value(scores: VarmScores, key: str) -> float:
    """A metric as a float; an undefined one (None: no item to take it over) is NaN, never 0 or 1."""
    value = getattr(scores, key)
    return math.nan if value is None else float(value)


class ScoresMemo:
    """The scores of the last input seen: ``get(key, score)`` calls ``score()`` only when ``key``
    differs from the previous call's (compared by equality)."""

    def __init__(self) -> None:
        self._key: object = None
        self._scores: VarmScores | None = None

    def get(self, key: object, score: Callable[[], VarmScores]) -> VarmScores:
        """The scores of the input identified by ``key``."""
        if self._scores is None or key != self._key:
            self._key, self._scores = key, score()
        return self._scores
