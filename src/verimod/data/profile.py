"""What a data set looks like: ``verimod data profile`` — text character, annotations, templates.

Every statistic is defined here (per-text features in :mod:`verimod.data.profile_text`, frames
in :mod:`verimod.data.profile_frames`, reading in :mod:`verimod.data.profile_input`). n is
always reported with a share, and a share over n = 0 is None (shown as "–"), never 0 or 100 %.

- ``length``: :func:`~verimod.data.profile_text.char_length` of every text (NFKC; whitespace does
  not count, an emoticon code such as ``[酷]`` counts one); p10, p50, p90 are nearest-rank
  percentiles (:func:`nearest_rank`: the smallest length that at least q % of texts do not
  exceed), max and mean.
- ``emoji`` / ``emoticon`` / ``emoji_or_emoticon``: share of texts with ≥ 1 Unicode emoji, ≥ 1
  bracket emoticon, either. ``no_punctuation``: share of texts without any P* character
  (emoticon brackets excluded). ``latin``: share with a Latin letter. ``traditional``: share with
  a Traditional-only character (OpenCC when installed, else the bundled table; ``method`` says).
- ``opens_with_target``: over the records whose ``target`` is present and not
  ``no_clear_target``, the share whose text starts with that target (leading whitespace,
  punctuation, symbols, emoticon codes skipped; NFKC, case-folded); ``opens_with_target_harmful``:
  the same over those labelled harmful.
- ``frames``: the ``top`` most repeated sentence frames, with the number and share of texts
  containing each (method in :mod:`verimod.data.profile_frames`); a frame with the target slot
  ``Ⓣ`` is measured over the texts that have a target (a file without targets: n = 0, None);
  ``target_frames``: the ``top`` most repeated frames that hold ``Ⓣ`` (how texts go on from
  their target: the templates of a hand-written set).
- ``distributions``: counts of each value of label, category, stance, target_type,
  target_explicitness, split and ``meta.source`` over all records (``missing``: records without
  the field), and ``category_harmful``: category over the harmful records.
- ``tags``: records carrying each tag; ``hard_negatives``: among non-harmful records, the share
  with a tag in :data:`~verimod.tasks.varm.codebook.HARD_NEGATIVE_TAGS` — None when no record of
  the file carries any tag (untagged is not "no hard cases").
- ``near_duplicates``: verimod's exact join (:func:`verimod.data.neardup.deduplicate`) over the
  texts as written, as ``verimod data dedup`` runs it: pairs with ``fuzz.ratio`` ≥ threshold,
  single-linkage components, the texts in them (``members``) and the texts a dedup would drop
  (``redundant`` = members − components).
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from verimod.data.neardup import deduplicate
from verimod.data.profile_frames import frame_share, repeated_frames
from verimod.data.profile_input import ANNOTATION_FIELDS, ProfileInput, ProfileItem
from verimod.data.profile_text import (
    TARGET_MARK,
    TraditionalScript,
    char_length,
    emoji_count,
    has_emoticon,
    has_latin,
    has_punctuation,
    opens_with_target,
    skeleton,
)
from verimod.tasks.varm.codebook import HARD_NEGATIVE_TAGS, NO_CLEAR_TARGET

#: Lengths of the character n-grams that frames are made of.
FRAME_MIN_N, FRAME_MAX_N = 3, 6
#: Distribution fields in display order (``source`` is ``meta.source``).
DISTRIBUTION_FIELDS: tuple[str, ...] = (*ANNOTATION_FIELDS, "source")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Share(_Model):
    """``count`` of ``n``; ``share`` = count / n, None when n = 0."""

    count: int
    n: int
    share: float | None

    @classmethod
    def of(cls, count: int, n: int) -> Share:
        """The share of ``count`` in ``n`` (None when n = 0)."""
        return cls(count=count, n=n, share=count / n if n else None)


class LengthProfile(_Model):
    """Nearest-rank percentiles, maximum and mean of the text lengths (characters)."""

    p10: int
    p50: int
    p90: int
    max: int
    mean: float


class Distribution(_Model):
    """Counts per value over ``n`` records; ``missing`` records lack the field."""

    n: int
    counts: dict[str, int]
    missing: int


class FrameCount(_Model):
    """One repeated frame of a file and the share of texts containing it (a frame with the
    target slot ``Ⓣ`` over the texts that have a target, any other frame over all texts)."""

    frame: str
    share: Share


class NearDuplicates(_Model):
    """Near-duplicate pairs at ``threshold``, their components, members and redundant texts."""

    threshold: float
    pairs: int
    components: int
    members: int
    redundant: int


class FileProfile(_Model):
    """The profile of one file (definitions in the module docstring)."""

    path: str
    encoding: str | None
    records: int
    skipped: int
    length: LengthProfile
    emoji: Share
    emoticon: Share
    emoji_or_emoticon: Share
    no_punctuation: Share
    latin: Share
    traditional: Share
    opens_with_target: Share
    opens_with_target_harmful: Share
    distributions: dict[str, Distribution]
    tags: dict[str, int]
    hard_negatives: Share | None
    near_duplicates: NearDuplicates
    frames: list[FrameCount]
    target_frames: list[FrameCount]


class FrameRow(_Model):
    """A frame from some file's top list, with its share in every file (in file order)."""

    frame: str
    top_in: list[str]
    shares: list[Share]


class ProfileReport(_Model):
    """Files side by side: each profile, the union of their top frames across all files, and how
    the script and lengths were judged."""

    files: list[FileProfile]
    frames: list[FrameRow]
    target_frames: list[FrameRow]
    method: dict[str, str]


def nearest_rank(sorted_values: Sequence[int], q: float) -> int:
    """The nearest-rank q-th percentile of ascending ``sorted_values``: the value at rank
    ⌈q/100 · n⌉ (1-based; rank 1 for q = 0) — a length that occurs, at least q % of the values
    are ≤ it. ``numpy.percentile(..., method="inverted_cdf")`` gives the same."""
    if not sorted_values:
        raise ValueError("no values")
    if not 0 <= q <= 100:
        raise ValueError(f"q must be in [0, 100], got {q}")
    rank = max(1, math.ceil(q / 100 * len(sorted_values) - 1e-9))
    return sorted_values[rank - 1]


def length_profile(texts: Sequence[str]) -> LengthProfile:
    """:class:`LengthProfile` of the :func:`~verimod.data.profile_text.char_length` of ``texts``."""
    lengths = sorted(char_length(t) for t in texts)
    return LengthProfile(
        p10=nearest_rank(lengths, 10),
        p50=nearest_rank(lengths, 50),
        p90=nearest_rank(lengths, 90),
        max=lengths[-1],
        mean=statistics.fmean(lengths),
    )


def share_of(items: Sequence[ProfileItem], test: Callable[[ProfileItem], bool]) -> Share:
    """The share of ``items`` for which ``test`` holds."""
    return Share.of(sum(1 for item in items if test(item)), len(items))


def _has_target(item: ProfileItem) -> bool:
    return item.target is not None and item.target != NO_CLEAR_TARGET


def distribution(items: Sequence[ProfileItem], name: str) -> Distribution:
    """Counts of the values of field ``name`` over ``items`` (most frequent first, then by value)."""
    counts = Counter(item.fields.get(name) for item in items)
    missing = counts.pop(None, 0)
    ordered = dict(sorted(((str(k), v) for k, v in counts.items()), key=lambda kv: (-kv[1], kv[0])))
    return Distribution(n=len(items), counts=ordered, missing=missing)


def hard_negative_share(items: Sequence[ProfileItem]) -> Share | None:
    """Among non-harmful items, the share tagged with a hard-negative tag; None when untagged."""
    if not any(item.tags for item in items):
        return None
    negatives = [item for item in items if item.fields.get("label") == "non_harmful"]
    return share_of(negatives, lambda item: not HARD_NEGATIVE_TAGS.isdisjoint(item.tags))


def near_duplicates(texts: Sequence[str], threshold: float, workers: int = 1) -> NearDuplicates:
    """Pairs, components, members and redundant texts of the exact near-duplicate join."""
    result = deduplicate(texts, threshold, workers=workers)
    members = sum(len(c) for c in result.components)
    return NearDuplicates(
        threshold=threshold,
        pairs=len(result.pairs),
        components=len(result.components),
        members=members,
        redundant=members - len(result.components),
    )


@dataclass(frozen=True)
class Skeletons:
    """The :func:`~verimod.data.profile_text.skeleton` of every item (its own target masked),
    and those of the items that have a target (where a frame with ``Ⓣ`` can occur at all)."""

    all: list[str]
    targeted: list[str]

    @classmethod
    def of(cls, items: Sequence[ProfileItem]) -> Skeletons:
        """The skeletons of ``items``."""
        pairs = [(skeleton(i.text, [i.target] if i.target and _has_target(i) else ()), _has_target(i)) for i in items]
        return cls(all=[s for s, _ in pairs], targeted=[s for s, targeted in pairs if targeted])

    def share(self, frame: str) -> Share:
        """Share of skeletons containing ``frame``: over the targeted ones when it holds ``Ⓣ``."""
        return Share.of(*frame_share(frame, self.targeted if TARGET_MARK in frame else self.all))


def profile_file(
    data: ProfileInput,
    *,
    threshold: float = 95.0,
    top_frames: int = 10,
    script: TraditionalScript | None = None,
    workers: int = 1,
) -> tuple[FileProfile, Skeletons]:
    """The :class:`FileProfile` of one read file, and its skeletons (for cross-file frame shares)."""
    items, texts = data.items, [item.text for item in data.items]
    script = script or TraditionalScript()
    emoji = [emoji_count(t) > 0 for t in texts]
    emoticon = [has_emoticon(t) for t in texts]
    targeted = [item for item in items if _has_target(item)]
    harmful_targeted = [item for item in targeted if item.fields.get("label") == "harmful"]
    harmful = [item for item in items if item.fields.get("label") == "harmful"]
    skeletons = Skeletons.of(items)
    n = len(items)
    distributions = {name: distribution(items, name) for name in DISTRIBUTION_FIELDS}
    distributions["category_harmful"] = distribution(harmful, "category")
    profile = FileProfile(
        path=data.path,
        encoding=data.encoding,
        records=n,
        skipped=len(data.skipped),
        length=length_profile(texts),
        emoji=Share.of(sum(emoji), n),
        emoticon=Share.of(sum(emoticon), n),
        emoji_or_emoticon=Share.of(sum(a or b for a, b in zip(emoji, emoticon, strict=True)), n),
        no_punctuation=Share.of(sum(not has_punctuation(t) for t in texts), n),
        latin=Share.of(sum(has_latin(t) for t in texts), n),
        traditional=Share.of(sum(script.has_traditional(t) for t in texts), n),
        opens_with_target=share_of(targeted, lambda item: opens_with_target(item.text, item.target or "")),
        opens_with_target_harmful=share_of(
            harmful_targeted, lambda item: opens_with_target(item.text, item.target or "")
        ),
        distributions=distributions,
        tags=dict(sorted(Counter(tag for item in items for tag in item.tags).items(), key=lambda kv: (-kv[1], kv[0]))),
        hard_negatives=hard_negative_share(items),
        near_duplicates=near_duplicates(texts, threshold, workers),
        frames=[
            FrameCount(frame=f.frame, share=skeletons.share(f.frame))
            for f in repeated_frames(skeletons.all, top_frames, FRAME_MIN_N, FRAME_MAX_N)
        ],
        target_frames=[
            FrameCount(frame=f.frame, share=skeletons.share(f.frame))
            for f in repeated_frames(skeletons.targeted, top_frames, FRAME_MIN_N, FRAME_MAX_N, containing=TARGET_MARK)
        ],
    )
    return profile, skeletons


def _frame_rows(
    profiles: Sequence[FileProfile],
    skeletons: Sequence[Skeletons],
    frames_of: Callable[[FileProfile], list[FrameCount]],
) -> list[FrameRow]:
    """The union of the files' top frames (first file's first), each measured in every file."""
    union: dict[str, list[str]] = {}
    for profile in profiles:
        for frame in frames_of(profile):
            union.setdefault(frame.frame, []).append(profile.path)
    return [FrameRow(frame=f, top_in=top_in, shares=[s.share(f) for s in skeletons]) for f, top_in in union.items()]


def profile_report(
    inputs: Sequence[ProfileInput],
    *,
    threshold: float = 95.0,
    top_frames: int = 10,
    script: TraditionalScript | None = None,
    workers: int = 1,
) -> ProfileReport:
    """Profiles of ``inputs`` side by side; every file's top frames measured in every file."""
    if not inputs:
        raise ValueError("nothing to profile")
    script = script or TraditionalScript()
    profiles: list[FileProfile] = []
    skeletons: list[Skeletons] = []
    for data in inputs:
        profile, skeleton_list = profile_file(
            data, threshold=threshold, top_frames=top_frames, script=script, workers=workers
        )
        profiles.append(profile)
        skeletons.append(skeleton_list)
    method = {
        "length": "characters of the NFKC text; whitespace not counted; an emoticon code such as [酷] counts 1",
        "traditional": script.description,
        "frames": (
            f"closed character {FRAME_MIN_N}–{FRAME_MAX_N}-grams of skeletons (target Ⓣ, digits Ⓝ, Latin Ⓛ) "
            "in ≥ 2 texts; a frame with Ⓣ measured over the texts that have a target"
        ),
        "near_duplicates": f"fuzz.ratio ≥ {threshold:g}, exact join, single-linkage components",
    }
    return ProfileReport(
        files=profiles,
        frames=_frame_rows(profiles, skeletons, lambda p: p.frames),
        target_frames=_frame_rows(profiles, skeletons, lambda p: p.target_frames),
        method=method,
    )
