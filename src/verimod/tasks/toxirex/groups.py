"""Annotations in groups (``--by lang``): the paper reports its scores and its agreement per
language (Tables 5 and 10).

:func:`group_annotations` splits annotation records by their ``lang``, in sorted order. Every
annotation of a comment must carry the same language: a comment whose annotators give
different languages, or an annotation without one, is an :class:`InputError` naming the
comment — a comment silently counted in no group, or in two, would change every number.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from verimod.core.errors import InputError, shown
from verimod.tasks.toxirex.schema import AnnotationRecord

GroupBy = Literal["lang"]
GROUP_KEYS: tuple[GroupBy, ...] = ("lang",)


def group_annotations(
    annotations: Sequence[AnnotationRecord], by: GroupBy = "lang", source: str = "annotations"
) -> dict[str, list[AnnotationRecord]]:
    """Group → the annotation records of its comments (module docstring)."""
    if by not in GROUP_KEYS:
        raise ValueError(f"cannot group by {by!r}; choose from {', '.join(GROUP_KEYS)}")
    of_comment: dict[str, str] = {}
    groups: dict[str, list[AnnotationRecord]] = {}
    for record in annotations:
        value = record.lang
        comment = shown(record.comment_id)
        if not value:
            message = f"comment {comment} (annotator {shown(record.annotator)}) has no {by}"
            raise InputError.at(source, None, by, message)
        first = of_comment.setdefault(record.comment_id, value)
        if first != value:
            message = f"comment {comment} is annotated as {shown(first)} and {shown(value)}"
            raise InputError.at(source, None, by, message)
        groups.setdefault(value, []).append(record)
    return {key: groups[key] for key in sorted(groups)}
