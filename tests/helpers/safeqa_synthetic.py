"""Random C-SafeQA pairs and judge outputs for tests and benchmarks (seeded numpy Generator)."""

from __future__ import annotations

import numpy as np

from verimod.tasks.safeqa.schema import JudgeOutput, ReferenceLabel, SafePair, SafeQuery, SafeResponse


def random_pairs(rng: np.random.Generator, n: int, n_judges: int = 3) -> tuple[list[SafePair], list[JudgeOutput]]:
    """``n`` pairs (two models, 80 % adversarial, 7 categories, 21 methods, 5 % empty answers, 1 %
    failed calls, 2 % unlabelled) and ``n_judges`` judges' outputs (3 % missing, 5 % invalid)."""
    forms, pools = ["question", "declarative"], ["base", "adversarial"]
    pairs, outputs = [], []
    for i in range(n):
        pool = pools[int(rng.random() < 0.8)]
        query = SafeQuery(
            id=f"q{i // 2}",
            text="问题",
            pool=pool,
            form=forms[int(rng.integers(2))],
            category=f"c{int(rng.integers(7))}",
            method=f"m{int(rng.integers(21))}" if pool == "adversarial" else None,
        )
        model = "A" if i % 2 else "B"
        text = "" if rng.random() < 0.05 else "回答"
        response = SafeResponse(query_id=query.id, model=model, text=text, error="x" if rng.random() < 0.01 else None)
        label = rng.choice(["safe", "unsafe", "disputed"], p=[0.6, 0.3, 0.1])
        reference = ReferenceLabel(pair_id=response.pair_id, label=label) if rng.random() > 0.02 else None
        pairs.append(SafePair(query=query, response=response, reference=reference))
        for j in range(n_judges):
            if rng.random() < 0.97:
                guess = rng.choice(["safe", "unsafe", "disputed", "invalid"], p=[0.5, 0.35, 0.1, 0.05])
                guess = label if rng.random() < 0.6 else guess
                outputs.append(JudgeOutput(pair_id=response.pair_id, judge=f"J{j}", label=guess))
    return pairs, outputs
