"""Do the texts under evaluation near-duplicate a model's training texts? Without shipping them.

A model carries a :class:`LeakageIndex` of its training texts, each reduced to its *key*: the
canonical text (:func:`~verimod.models.baseline.charmap.canonical_text`) without whitespace.

- **Stored texts** (``texts``): a model trained with ``store_texts`` (what ``verimod train
  baseline`` does: your own data) keeps the keys themselves; the check against them is exact:
  RapidFuzz ``fuzz.ratio ≥`` :data:`THRESHOLD` with verimod's exact near-duplicate join
  (:func:`verimod.data.neardup.cross_pairs`).
- **Bundled texts** (``bundled``): records shipped with verimod (the starter set, the open VARM
  set) are named by source and split and read back from the package; checked exactly too.
- **Other texts** (the default model's COLD and SWSR training texts, which verimod may not
  redistribute): a 64-bit hash of the key (exact duplicates, exact up to hash collisions) and a
  MinHash signature of its character 3-gram set — :data:`PERMUTATIONS` universal hash
  functions ``(a·(crc32(g) mod p) + b) mod p``, p = 2³¹ − 1, with a and b drawn once from
  ``numpy.random.default_rng(SEED)`` (the products stay below 2⁶⁴), each minimum kept as its low
  8 bits (two unrelated values agree by chance once in 256: far below the agreement needed).
  A text is an *approximate* near-duplicate when it shares an LSH band (
  :data:`BANDS` bands of :data:`ROWS` values) with a training text and at least
  :data:`MIN_AGREEMENT` of their signature values agree (an estimate of the 3-gram Jaccard
  similarity; texts with ``fuzz.ratio ≥ 95`` have a Jaccard of about 0.8 or more). Neither the
  hashes nor the signatures let anyone read the texts back.

:meth:`LeakageIndex.check` reports which evaluated texts match, and how (exact, near, approximate).
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from verimod.models.baseline.charmap import canonical_text

THRESHOLD: Final = 95.0
PERMUTATIONS: Final = 16
BANDS: Final = 8
ROWS: Final = 2
MIN_AGREEMENT: Final = 0.75
SEED: Final = 20261201
_PRIME: Final = (1 << 31) - 1
_COEFFICIENTS: Final = np.random.default_rng(SEED).integers(1, _PRIME, size=(2, PERMUTATIONS), dtype=np.uint64)


def text_key(text: str) -> str:
    """The comparison key of a text: its canonical form without whitespace."""
    return "".join(canonical_text(text).split())


def key_hash(key: str) -> int:
    """A signed 64-bit hash of a key (blake2b)."""
    digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def minhash(key: str) -> np.ndarray:
    """The :data:`PERMUTATIONS` 8-bit MinHash values of a key's character 3-grams (the key
    itself when it is shorter)."""
    grams = {key[i : i + 3] for i in range(len(key) - 2)} or {key}
    hashes = np.fromiter(
        (zlib.crc32(g.encode("utf-8", "surrogatepass")) % _PRIME for g in grams), dtype=np.uint64, count=len(grams)
    )
    a, b = _COEFFICIENTS
    values = (a[:, None] * hashes[None, :] + b[:, None]) % np.uint64(_PRIME)
    return (values.min(axis=1) & np.uint64(0xFF)).astype(np.uint8)


@dataclass(frozen=True)
class BundledSource:
    """Training records shipped with verimod: ``source`` (``starter`` or ``varm-open``), ``split``,
    their number and the sha256 of their keys (one per line), to check they are still the same."""

    source: str
    split: str
    count: int
    sha256: str


@dataclass(frozen=True)
class LeakageMatch:
    """One evaluated text that matches training texts: ``kind`` is ``exact`` (identical key),
    ``near`` (``fuzz.ratio ≥ 95`` with a stored or bundled text) or ``approximate`` (MinHash);
    ``score`` is the ratio, or the share of agreeing signature values."""

    index: int
    kind: str
    score: float


@dataclass
class LeakageIndex:
    """The training texts of a model, as far as the model may keep them (module docstring)."""

    texts: list[str] = field(default_factory=list)
    bundled: list[BundledSource] = field(default_factory=list)
    hashes: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    signatures: np.ndarray = field(default_factory=lambda: np.empty((0, PERMUTATIONS), dtype=np.uint8))

    @classmethod
    def build(cls, stored: Sequence[str], hashed: Sequence[str], bundled: Sequence[BundledSource] = ()) -> LeakageIndex:
        """An index that keeps the keys of ``stored`` texts and only hashes and signatures of
        ``hashed`` ones (duplicates kept once, in first-seen order)."""
        keys = list(dict.fromkeys(text_key(t) for t in stored))
        others = list(dict.fromkeys(text_key(t) for t in hashed))
        signatures = np.stack([minhash(k) for k in others]) if others else np.empty((0, PERMUTATIONS), np.uint8)
        return cls(
            texts=keys,
            bundled=list(bundled),
            hashes=np.array([key_hash(k) for k in others], dtype=np.int64),
            signatures=signatures.astype(np.uint8),
        )

    @property
    def size(self) -> int:
        """Number of training texts the index describes (stored, bundled and hashed)."""
        return len(self.texts) + sum(b.count for b in self.bundled) + int(self.hashes.size)

    def metadata(self) -> dict[str, Any]:
        """What ``model.json`` says about the index."""
        return {
            "stored": len(self.texts),
            "bundled": [b.__dict__ for b in self.bundled],
            "hashed": int(self.hashes.size),
            "method": {
                "threshold": THRESHOLD,
                "permutations": PERMUTATIONS,
                "bands": BANDS,
                "rows": ROWS,
                "min_agreement": MIN_AGREEMENT,
                "seed": SEED,
            },
        }

    def check(self, texts: Sequence[str], bundled_keys: Sequence[str] = ()) -> list[LeakageMatch]:
        """The evaluated texts that match training texts (at most one match per text: exact
        before near before approximate). ``bundled_keys`` are the keys of the bundled sources,
        read by the caller (:func:`verimod.models.baseline.bundled.bundled_keys`)."""
        from verimod.data.neardup import cross_pairs

        keys = [text_key(t) for t in texts]
        found: dict[int, LeakageMatch] = {}
        exact_keys = set(self.texts) | set(bundled_keys)
        hashes = set(self.hashes.tolist())
        for i, key in enumerate(keys):
            if key in exact_keys or key_hash(key) in hashes:
                found[i] = LeakageMatch(i, "exact", 100.0)
        reference = [*self.texts, *bundled_keys]
        if reference:
            for _, j, score in cross_pairs(reference, keys, THRESHOLD):
                if int(j) not in found:
                    found[int(j)] = LeakageMatch(int(j), "near", float(score))
        if self.hashes.size:
            self._approximate(keys, found)
        return [found[i] for i in sorted(found)]

    def _approximate(self, keys: Sequence[str], found: dict[int, LeakageMatch]) -> None:
        bands: dict[tuple[int, bytes], list[int]] = {}
        signatures = self.signatures
        for row in range(signatures.shape[0]):
            for band in range(BANDS):
                bands.setdefault((band, signatures[row, band * ROWS : (band + 1) * ROWS].tobytes()), []).append(row)
        for i, key in enumerate(keys):
            if i in found:
                continue
            signature = minhash(key)
            candidates: set[int] = set()
            for band in range(BANDS):
                candidates.update(bands.get((band, signature[band * ROWS : (band + 1) * ROWS].tobytes()), ()))
            if not candidates:
                continue
            rows = np.fromiter(candidates, dtype=np.int64, count=len(candidates))
            agreement = (signatures[rows] == signature).mean(axis=1)
            best = float(agreement.max())
            if best >= MIN_AGREEMENT:
                found[i] = LeakageMatch(i, "approximate", best)


#: Bundled sources a model can name, and where their records are.
BUNDLED_FILES: Final = {"starter": "varm_starter.jsonl", "varm-open": "varm_open/varm_open.jsonl"}


def bundled_texts(source: str, split: str) -> list[str] | None:
    """The texts of a bundled source's split (None when this verimod does not ship it)."""
    from verimod.resources import resource_path
    from verimod.tasks.varm.io import load_references

    if source not in BUNDLED_FILES:
        return None
    path = resource_path(BUNDLED_FILES[source])
    if not path.is_file():
        return None
    return [r.text for r in load_references(path) if r.split == split]


def describe_bundled(source: str, split: str, texts: Sequence[str]) -> BundledSource:
    """The :class:`BundledSource` of ``texts`` (their keys' sha256, one per line)."""
    digest = hashlib.sha256("\n".join(text_key(t) for t in texts).encode("utf-8", "surrogatepass")).hexdigest()
    return BundledSource(source, split, len(texts), digest)


def bundled_keys(sources: Sequence[BundledSource]) -> tuple[list[str], list[str]]:
    """The keys of the bundled sources this verimod still ships unchanged, and a note for each
    one it does not (missing, or changed since the model was trained: not checked)."""
    keys: list[str] = []
    notes: list[str] = []
    for source in sources:
        texts = bundled_texts(source.source, source.split)
        if texts is None or describe_bundled(source.source, source.split, texts).sha256 != source.sha256:
            notes.append(f"{source.source}:{source.split} ({source.count} texts) is not shipped unchanged: not checked")
            continue
        keys.extend(text_key(t) for t in texts)
    return keys, notes


def leakage_message(index: LeakageIndex, ids: Sequence[str], texts: Sequence[str], examples: int = 3) -> str | None:
    """One warning line when evaluated texts near-duplicate the training texts (None when none
    does): the count by kind, a few example ids, and the bundled sources that could not be checked."""
    keys, notes = bundled_keys(index.bundled)
    matches = index.check(texts, keys)
    if not matches:
        return None
    kinds = {kind: sum(m.kind == kind for m in matches) for kind in ("exact", "near", "approximate")}
    parts = []
    if kinds["exact"]:
        parts.append(f"{kinds['exact']} identical")
    if kinds["near"]:
        parts.append(f"{kinds['near']} near-duplicates (fuzz.ratio ≥ {THRESHOLD:g})")
    if kinds["approximate"]:
        parts.append(f"{kinds['approximate']} approximate (MinHash) matches of texts the model does not ship")
    shown = ", ".join(ids[m.index] for m in matches[:examples])
    extra = f"; {'; '.join(notes)}" if notes else ""
    return (
        f"leakage: {len(matches):,} of {len(texts):,} evaluated texts near-duplicate the model's training texts "
        f"({', '.join(parts)}); e.g. {shown}. Their scores may be inflated{extra}"
    )
