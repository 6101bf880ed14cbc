"""A seeded synthetic corpus of Chinese-like comments with a known share of near-duplicates.

For checking the distributed commands against the single-machine ones and for benchmarking them
(``benchmarks/bench_ray.py``) without real data. Texts are drawn from 3,000 CJK characters with
Zipf-like frequencies (weight ∝ rank^-1.1) plus a few marks, lengths log-normal (median 28, 2 to
200 characters). A share ``near`` of the texts (default 0.3) are *variants* of an earlier text:
an exact copy with probability 1/6, else one or two character edits (substitution, insertion or
deletion) — a near-duplicate at t = 95 whenever the text has about 20 characters or more.
Every record also gets a label and a category (seeded), so ``split`` can stratify.

>>> texts = synthetic_texts(1000, seed=1)
>>> len(texts), texts == synthetic_texts(1000, seed=1), texts == synthetic_texts(1000, seed=2)
(1000, True, False)
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from verimod.data.jsonl import write_jsonl

_ALPHABET = np.array([0x4E00 + k for k in range(3000)] + [ord(c) for c in "，。！？、的了吗啊哈"], dtype=np.uint32)
_LABELS = ("harmful", "harmless")
_CATEGORIES = ("gender", "region", "race", "other")


def _weights(size: int) -> np.ndarray:
    weight = 1.0 / np.arange(1, size + 1) ** 1.1
    return weight / weight.sum()


def _sources(count: int, rng: np.random.Generator) -> list[str]:
    """``count`` fresh texts (vectorised)."""
    lengths = np.clip(np.round(rng.lognormal(np.log(28), 0.7, count)), 2, 200).astype(np.int64)
    codes = rng.choice(_ALPHABET, size=int(lengths.sum()), p=_weights(len(_ALPHABET)))
    text = codes.astype("<u4").tobytes().decode("utf-32-le")
    ends = np.cumsum(lengths).tolist()
    return [text[end - length : end] for end, length in zip(ends, lengths.tolist(), strict=True)]


def _variant(source: str, rng: random.Random) -> str:
    if rng.random() < 1 / 6:
        return source
    chars = list(source)
    for _ in range(rng.randint(1, 2)):
        kind = rng.random()
        new = chr(0x4E00 + min(int(rng.paretovariate(1.1)) - 1, 2999))
        if kind < 0.5 and chars:
            chars[rng.randrange(len(chars))] = new
        elif kind < 0.75 or not chars:
            chars.insert(rng.randint(0, len(chars)), new)
        else:
            del chars[rng.randrange(len(chars))]
    return "".join(chars)


def synthetic_texts(n: int, seed: int = 0, near: float = 0.3) -> list[str]:
    """``n`` texts (module docstring); the same ``seed`` gives the same texts."""
    rng = random.Random(seed)
    is_variant = [rng.random() < near for _ in range(n)]
    fresh = iter(_sources(n - sum(is_variant[1:]), np.random.default_rng(seed)))
    texts: list[str] = []
    for k in range(n):
        if k and is_variant[k]:
            texts.append(_variant(texts[rng.randrange(max(0, k - 50_000), k)], rng))
        else:
            texts.append(next(fresh))
    return texts


def synthetic_records(n: int, seed: int = 0, near: float = 0.3) -> Iterator[dict[str, Any]]:
    """The texts as records with an id, a label and a category."""
    rng = random.Random(seed + 1)
    for k, text in enumerate(synthetic_texts(n, seed, near)):
        yield {"id": f"s{k}", "text": text, "label": rng.choice(_LABELS), "category": rng.choice(_CATEGORIES)}


def write_synthetic(path: str | Path, n: int, seed: int = 0, near: float = 0.3) -> int:
    """Write :func:`synthetic_records` as JSON Lines; return the number written."""
    return write_jsonl(path, synthetic_records(n, seed, near))
