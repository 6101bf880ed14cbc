"""A sub-thread as the annotators saw it, as plain text for a model.

ToxiREX showed annotators "the post text, if available", then one sub-thread with "one of the
comments … highlighted, indicating the comment that is to be annotated" (§5); models got the
sub-thread the same way, and "if a sub-thread has no post text, it is instantiated with the
value 'EMPTY'" (§6). :func:`render_subthread` produces that view:

- the post: its title, a blank line, its body (either may be missing); ``EMPTY`` when both are;
- the comments in reply order, numbered ``[1]``, ``[2]``, …, each under its author anonymised
  by order of first appearance in the sub-thread (``User A``, ``User B``, …, ``User Z``,
  ``User AA``; ``用户A`` in Chinese). A comment without an author (missing, ``[deleted]``,
  ``[removed]``) gets a letter of its own: two deleted authors are not known to be one person.
  An empty comment reads ``EMPTY`` like an empty post;
- the target comment marked in its header and named again on the last line. With
  ``target_id=None`` no comment is marked (the whole sub-thread as one input, as in §6).

Text is plain: nothing is escaped or unescaped. Newlines are normalised — ``\\r\\n``, ``\\r``,
U+0085, U+2028 and U+2029 become ``\\n``, trailing spaces at line ends are removed, runs of
blank lines become one blank line, and the text is stripped — so a layout cannot depend on the
platform a dump was written on. :func:`subthread_messages` wraps the text in
:class:`~verimod.models.base.ChatMessage` objects behind an optional system prompt, which the
caller supplies (the prompt text lives with the task's schema, not here).
"""

from __future__ import annotations

import re
from typing import Literal

from verimod.models.base import ChatMessage
from verimod.tasks.toxirex.subthreads import SubThread
from verimod.tasks.toxirex.threads import Post

Language = Literal["en", "zh"]
EMPTY = "EMPTY"
ANONYMOUS = frozenset({"", "[deleted]", "[removed]"})

_LABELS: dict[str, dict[str, str]] = {
    "en": {
        "post": "Post:",
        "comments": "Comments (each replies to the one before):",
        "user": "User {}",
        "header": "[{}] {}:",
        "target_header": "[{}] {} (TARGET):",
        "target_line": "Target comment: [{}] by {}",
    },
    "zh": {
        "post": "帖子：",
        "comments": "评论（每条回复上一条）：",
        "user": "用户{}",
        "header": "[{}] {}：",
        "target_header": "[{}] {}（目标评论）：",
        "target_line": "目标评论：[{}]，{}",
    },
}
_NEWLINES = re.compile(r"\r\n|[\r\x85\u2028\u2029]")
_TRAILING = re.compile(r"[ \t]+\n")
_BLANKS = re.compile(r"\n{3,}")


def normalise_newlines(text: str) -> str:
    """Line breaks as ``\\n``, no trailing spaces, at most one blank line in a row, stripped."""
    text = _NEWLINES.sub("\n", text)
    text = _TRAILING.sub("\n", text)
    return _BLANKS.sub("\n\n", text).strip()


def post_text(post: Post) -> str:
    """Title and body separated by a blank line, or ``EMPTY`` when the post has neither."""
    parts = [part for part in (normalise_newlines(post.title), normalise_newlines(post.text)) if part]
    return "\n\n".join(parts) or EMPTY


def letters(index: int) -> str:
    """``0 → A``, ``25 → Z``, ``26 → AA``, ``27 → AB`` … (spreadsheet column names)."""
    if index < 0:
        raise ValueError(f"index must be non-negative, got {index}")
    name = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        name = chr(ord("A") + rest) + name
    return name


def user_labels(thread: SubThread, language: Language = "en") -> dict[str, str]:
    """Comment id → anonymised author (``User A``, …) by order of first appearance."""
    template = _labels(language)["user"]
    by_author: dict[str, str] = {}
    result: dict[str, str] = {}
    count = 0
    for comment in thread.comments:
        author = (comment.author or "").strip()
        if author in ANONYMOUS:
            label = template.format(letters(count))
            count += 1
        else:
            if author not in by_author:
                by_author[author] = template.format(letters(count))
                count += 1
            label = by_author[author]
        result[comment.id] = label
    return result


def render_subthread(thread: SubThread, target_id: str | None = None, language: Language = "en") -> str:
    """The post and the sub-thread's comments as plain text, ``target_id`` marked (see module)."""
    labels = _labels(language)
    ids = thread.comment_ids
    if target_id is not None and target_id not in ids:
        raise ValueError(f"target {target_id!r} is not a comment of this sub-thread ({', '.join(ids)})")
    users = user_labels(thread, language)
    blocks = [f"{labels['post']}\n{post_text(thread.post)}", labels["comments"]]
    for number, comment in enumerate(thread.comments, 1):
        header = labels["target_header" if comment.id == target_id else "header"].format(number, users[comment.id])
        blocks.append(f"{header}\n{normalise_newlines(comment.text) or EMPTY}")
    if target_id is not None:
        blocks.append(labels["target_line"].format(ids.index(target_id) + 1, users[target_id]))
    return "\n\n".join(blocks)


def subthread_messages(
    thread: SubThread, target_id: str | None = None, *, system: str | None = None, language: Language = "en"
) -> list[ChatMessage]:
    """``[system?, user]`` chat messages: the caller's system prompt, then the rendered sub-thread."""
    messages = [ChatMessage(role="system", content=system)] if system else []
    messages.append(ChatMessage(role="user", content=render_subthread(thread, target_id, language)))
    return messages


def _labels(language: str) -> dict[str, str]:
    try:
        return _LABELS[language]
    except KeyError:
        raise ValueError(f"language must be one of {', '.join(_LABELS)}, got {language!r}") from None
