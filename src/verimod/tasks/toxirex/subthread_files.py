"""Sub-thread files: what ``verimod toxirex subthreads`` writes and ``toxirex predict`` reads.

One JSON line per sub-thread, self-contained (a model can be asked without the original dump)::

    {"thread_id": "p1/c1", "post_id": "p1", "comment_ids": ["c1", …],
     "post": {"id": "p1", "title": "…", "text": "…", "author": "…"},
     "comments": [{"id": "c1", "parent_id": null, "author": "…", "text": "…", "created": 1.0}, …],
     "targets": ["c1", …], "length": 5, "branching": 0, "score": 0}

``comments`` are the reply chain, top comment first: each comment after the first must reply
to the one before it (the first may reply to a comment of another sub-thread, or be a
top-level comment with ``parent_id`` null), and no comment may appear in two sub-threads of
a file. Every problem is a one-line :class:`~verimod.core.errors.InputError`
naming file, line and field.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from verimod.core.errors import InputError, shown
from verimod.core.validation import validation_problems
from verimod.data.jsonl import read_jsonl, write_jsonl
from verimod.tasks.toxirex.subthreads import SubThread
from verimod.tasks.toxirex.threads import Comment, Post


class _PostLine(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    title: str = ""
    text: str = ""
    author: str | None = None
    created: float | None = None


class _CommentLine(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    parent_id: str | None = None
    author: str | None = None
    text: str = ""
    created: float | None = None


class SubThreadLine(BaseModel):
    """One line of a sub-thread file (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    thread_id: str = Field(min_length=1)
    post_id: str | None = None
    comment_ids: list[str] | None = None
    post: _PostLine
    comments: list[_CommentLine] = Field(min_length=1)
    targets: list[str] | None = None
    length: int | None = None
    branching: int = Field(0, ge=0)
    score: int = 0


def subthread_record(thread: SubThread) -> dict[str, Any]:
    """The JSON line of ``thread`` (:meth:`SubThread.to_record` plus the post and comment texts)."""
    post = thread.post
    return {
        **thread.to_record(),
        "post": {"id": post.id, "title": post.title, "text": post.text, "author": post.author, "created": post.created},
        "comments": [
            {"id": c.id, "parent_id": c.parent_id, "author": c.author, "text": c.text, "created": c.created}
            for c in thread.comments
        ],
    }


def write_subthreads(path: str | Path, threads: Iterable[SubThread]) -> int:
    """Write one line per sub-thread (atomically); returns the count."""
    return write_jsonl(path, (subthread_record(t) for t in threads))


def _subthread(line_obj: SubThreadLine, path: str, line: int) -> SubThread:
    post = Post(line_obj.post.id, line_obj.post.title, line_obj.post.text, line_obj.post.author, line_obj.post.created)
    comments = []
    previous: str | None = None
    for k, c in enumerate(line_obj.comments):
        if k > 0 and c.parent_id != previous:
            message = f"comment {shown(c.id)} replies to {shown(c.parent_id)}, expected {shown(previous)}"
            raise InputError.at(path, line, f"comments.{k}.parent_id", message)
        comments.append(Comment(c.id, post.id, c.parent_id, c.text, c.author, c.created, path, line))
        previous = c.id
    thread = SubThread(post, tuple(comments), line_obj.branching, line_obj.score)
    if thread.thread_id != line_obj.thread_id:
        message = f"is {shown(line_obj.thread_id)}, but post and first comment give {shown(thread.thread_id)}"
        raise InputError.at(path, line, "thread_id", message)
    if line_obj.post_id is not None and line_obj.post_id != post.id:
        raise InputError.at(path, line, "post_id", f"is {shown(line_obj.post_id)}, but post.id is {shown(post.id)}")
    for name, ids in (("comment_ids", line_obj.comment_ids), ("targets", line_obj.targets)):
        if ids is not None and list(ids) != list(thread.comment_ids):
            raise InputError.at(path, line, name, "must list the sub-thread's comment ids in order")
    if line_obj.length is not None and line_obj.length != len(comments):
        raise InputError.at(path, line, "length", f"is {line_obj.length}, but there are {len(comments)} comments")
    return thread


def load_subthreads(path: str | Path, encoding: str | None = None) -> list[SubThread]:
    """Every sub-thread of a file, checked (see the module docstring)."""
    name = str(path)
    threads = []
    where: dict[str, tuple[int, str]] = {}
    for line, obj in read_jsonl(path, encoding):
        try:
            parsed = SubThreadLine.model_validate(obj)
        except ValidationError as exc:
            raise InputError(validation_problems(exc, SubThreadLine, name, line)[0]) from None
        thread = _subthread(parsed, name, line)
        for k, comment_id in enumerate(thread.comment_ids):
            if comment_id in where:
                first_line, first_thread = where[comment_id]
                message = f"comment {shown(comment_id)} is already in {shown(first_thread)} (line {first_line})"
                raise InputError.at(name, line, f"comments.{k}.id", message)
            where[comment_id] = (line, thread.thread_id)
        threads.append(thread)
    if not threads:
        raise InputError.at(name, None, None, "no sub-threads (the file is empty)")
    return threads
