"""The n-gram views computed per batch in numpy equal a plain per-text string implementation."""

from __future__ import annotations

import itertools
from collections import Counter

from verimod.models.baseline.charmap import canonical_text, default_charmap, initial, is_han, syllables
from verimod.models.baseline.features import char_ngrams
from verimod.models.baseline.grams import GLYPH_LAYERS, batch_keys, key_name, make_views
from verimod.tasks.varm.starter import load_starter

TEXTS = [
    "河南人就是偷井盖的，没素质",
    "你是sb吧 nmsl，沙比 sha bi",
    "他说“你就是个傻逼”，这种话太过分了🐷",
    "",
    "a",
    "黑心商人，垩心",
    "Ｈｅｌｌｏ蓋噁心",
]


def _expected(view_name: str, canonical: str, n_min: int, n_max: int) -> list[str]:
    """The features of one view written out by hand from the charmap (no numpy, no keys)."""
    if view_name == "chars":
        return char_ngrams(canonical, n_min, n_max, True)
    if view_name in ("pinyin", "initials"):
        out = []
        for run in syllables(canonical):
            if view_name == "pinyin":
                tokens = [s for s in run]
                # an unsplittable Latin run breaks the pinyin view
                pieces = [list(g) for bad, g in itertools.groupby(tokens, lambda s: s.startswith("~")) if not bad]
                for piece in pieces:
                    for n in range(n_min, n_max + 1):
                        out.extend("p:" + " ".join(piece[i : i + n]) for i in range(len(piece) - n + 1))
            else:
                letters = "".join(initial(s) for s in run)
                for n in range(n_min, n_max + 1):
                    out.extend("i:" + letters[i : i + n] for i in range(len(letters) - n + 1))
        return out
    glyph = default_charmap().glyph
    out = []
    previous: list[str] = []
    for ch in canonical:
        if not is_han(ch):
            previous = []
            continue
        groups = sorted(glyph.get(ch, ()))[:GLYPH_LAYERS]
        current = [f"#{g}" for g in groups] or [ch]
        out.extend(f"g:{a}{b}" for a in dict.fromkeys(previous) for b in dict.fromkeys(current) if "#" in a + b)
        previous = current
    return out


def test_batch_keys_equal_the_per_text_features():
    texts = TEXTS + [r.text for r in load_starter("dev")[:60]]
    canonicals = [canonical_text(t) for t in texts]
    for view in make_views((1, 3), (1, 3), (2, 4)):
        rows, keys = batch_keys(view, canonicals)
        assert rows.shape == keys.shape
        for row, canonical in enumerate(canonicals):
            got = Counter(key_name(view, int(k)) for k in keys[rows == row].tolist())
            assert got == Counter(_expected(view.name, canonical, view.n_min, view.n_max)), (view.name, canonical)


def test_keys_of_different_lengths_never_collide():
    view = make_views((1, 3), (1, 3), (2, 4))[0]
    _, keys = batch_keys(view, ["\x02一\x03", "一"])
    names = {key_name(view, int(k)) for k in keys.tolist()}
    assert len(names) == len(set(keys.tolist()))
