"""Posts and comments with parent ids, read into one comment tree per post.

Input is the ``id`` / ``parent_id`` / ``link_id`` shape of Reddit dumps, in JSON or JSON Lines
(any format :func:`verimod.data.records.read_records` reads):

- **comment**: ``id``, ``parent_id`` (``"t1_<id>"`` for a reply to a comment, ``"t3_<id>"`` for a
  top-level comment on the post, or a plain id), ``link_id`` (``"t3_<post id>"`` or plain; optional
  when the parent chain reaches the post), ``body`` (or ``text``), ``author`` (optional),
  ``created_utc`` (or ``created``: seconds since the epoch, a numeric string or ISO 8601; optional).
- **post**: ``id``, ``title``, ``selftext`` (or ``text``), ``author``, ``created_utc`` — all but
  ``id`` optional. In a single file a record without ``parent_id`` is a post (unless it has a
  ``body`` or ``link_id`` and no ``title``: then it is a comment missing its ``parent_id``,
  reported as invalid); posts may also come from a separate file.

Ids may be strings or integers and may carry their Reddit prefix (``t1_``/``t3_``), which is
stripped. A plain ``parent_id`` is resolved in this order: the comment's own ``link_id`` (a
top-level comment), a known comment, a known post.

Posts: when the input holds no post record at all (a comments-only dump), every post that
comments refer to is created without text (:attr:`Forest.implicit_posts` counts them; rendering
shows ``EMPTY``). When any post record is present, a comment whose post is missing is an orphan.

Problems are never dropped silently. With ``on_error="fail"`` (the default) the first one raises
:class:`~verimod.core.errors.InputError` naming file, line and field; with ``on_error="skip"`` the
record is left out and recorded in :attr:`Forest.problems` with its kind:

``malformed`` (a line that is not a JSON object), ``invalid`` (a missing or mistyped field),
``duplicate`` (an id seen before: the first record is kept), ``orphan`` (the parent comment or
post is not in the input), ``cycle`` (the comment's parent chain loops), ``inconsistent``
(``link_id`` names another post than the parent chain reaches), ``detached`` (a reply below a
comment skipped for any of these reasons — it cannot be placed in a tree either).

Within a tree, replies are ordered by ``created`` (missing last), then by id in natural order
(shorter first, then lexicographic — numeric order for unpadded decimal and base-36 Reddit ids).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from verimod.core.errors import InputError, Problem, shown
from verimod.data.records import Format, OnError, read_records

ProblemKind = Literal["malformed", "invalid", "duplicate", "orphan", "cycle", "inconsistent", "detached"]
SortKey = tuple[bool, float, int, str]
_Item = tuple[str, int | None, Mapping[str, Any]]  # (source, line, record)


@dataclass(frozen=True, slots=True)
class Post:
    """A post: the root of a comment tree. ``title`` and ``text`` are ``""`` when absent."""

    id: str
    title: str = ""
    text: str = ""
    author: str | None = None
    created: float | None = None
    source: str | None = None
    line: int | None = None


@dataclass(frozen=True, slots=True)
class Comment:
    """A comment placed in its tree: ``parent_id`` is the parent comment (``None`` for a top-level
    comment) and ``post_id`` the post it belongs to."""

    id: str
    post_id: str
    parent_id: str | None
    text: str
    author: str | None = None
    created: float | None = None
    source: str | None = None
    line: int | None = None

    @property
    def sort_key(self) -> SortKey:
        """Creation time (missing last), then the id in natural order: the reply order and the
        extraction's tie-break."""
        return sort_key(self.id, self.created)


def sort_key(item_id: str, created: float | None) -> SortKey:
    """``(created is None, created, len(id), id)`` — see :attr:`Comment.sort_key`."""
    return (created is None, 0.0 if created is None else created, len(item_id), item_id)


@dataclass(slots=True)
class Tree:
    """One post and its comments: ``roots`` are the top-level comment ids and ``children`` maps
    every comment id to its replies' ids (both in reply order)."""

    post: Post
    comments: dict[str, Comment]
    children: dict[str, tuple[str, ...]]
    roots: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.comments)


@dataclass(frozen=True, slots=True)
class ThreadProblem:
    """A record left out of the trees (``on_error="skip"``): its kind, id and the one-line problem."""

    kind: ProblemKind
    id: str | None
    problem: Problem

    def __str__(self) -> str:
        return str(self.problem)


@dataclass(slots=True)
class Forest:
    """The trees, in post order (posts as read, then implicit posts as first referred to)."""

    trees: list[Tree]
    problems: list[ThreadProblem] = field(default_factory=list)
    implicit_posts: int = 0

    def counts(self) -> dict[str, int]:
        """How many records were left out, per problem kind."""
        return dict(Counter(p.kind for p in self.problems))

    @property
    def n_comments(self) -> int:
        return sum(len(tree) for tree in self.trees)


@dataclass(slots=True)
class _Raw:
    """A comment as parsed, before its parent is resolved (``parent`` is the raw reference)."""

    id: str
    parent: str
    parent_kind: Literal["post", "comment"] | None
    link: str | None
    text: str
    author: str | None
    created: float | None
    source: str
    line: int | None


class _Sink:
    """Raises the first problem (``fail``) or records it (``skip``)."""

    def __init__(self, on_error: OnError) -> None:
        if on_error not in ("fail", "skip"):
            raise InputError.at("<threads>", None, None, f"on_error must be fail or skip, got {on_error!r}")
        self.on_error = on_error
        self.problems: list[ThreadProblem] = []

    def report(self, kind: ProblemKind, item_id: str | None, problem: Problem) -> None:
        if self.on_error == "fail":
            raise InputError(problem)
        self.problems.append(ThreadProblem(kind, item_id, problem))


# --- reading ------------------------------------------------------------------------------------


def read_threads(
    path: str | Path,
    posts_path: str | Path | None = None,
    *,
    fmt: Format | None = None,
    encoding: str | None = None,
    on_error: OnError = "fail",
) -> Forest:
    """Read comments (and posts: records without ``parent_id``) from ``path``, more posts from
    ``posts_path``, and build the trees (see the module docstring)."""
    sink = _Sink(on_error)
    posts: list[_Item] = []
    comments: list[_Item] = []
    for source, is_posts in ((posts_path, True), (path, False)):
        if source is None:
            continue
        stream = read_records(source, fmt, encoding, on_error)
        for line, record in stream:
            if is_posts or _is_post(record):
                posts.append((stream.path, line, record))
            else:
                comments.append((stream.path, line, record))
        for problem in stream.skipped:
            sink.report("malformed", None, problem)
    return _build(posts, comments, sink)


def forest_from_records(
    comments: Iterable[Mapping[str, Any]],
    posts: Iterable[Mapping[str, Any]] = (),
    *,
    source: str = "<records>",
    on_error: OnError = "fail",
) -> Forest:
    """Build the trees from in-memory records (positions are 1-based item numbers; records of
    ``comments`` without ``parent_id`` are posts, as in :func:`read_threads`)."""
    sink = _Sink(on_error)
    post_items: list[_Item] = [(source, i, r) for i, r in enumerate(posts, 1)]
    comment_items: list[_Item] = []
    for i, record in enumerate(comments, 1):
        (post_items if _is_post(record) else comment_items).append((source, i, record))
    return _build(post_items, comment_items, sink)


def _loose_id(record: Mapping[str, Any]) -> str | None:
    """The id of a record that failed to parse, when it has a usable one (for the problem list)."""
    value = record.get("id")
    return str(value) if isinstance(value, str | int) and not isinstance(value, bool) else None


def _is_post(record: Mapping[str, Any]) -> bool:
    """No ``parent_id`` and not shaped like a comment (a ``body`` or ``link_id`` without a
    ``title``): a comment that lost its ``parent_id`` is reported, not taken for a post."""
    if not _blank(record.get("parent_id")):
        return False
    return "title" in record or not ("body" in record or "link_id" in record)


def _blank(value: object) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


# --- field parsing ------------------------------------------------------------------------------


def _ident(value: object, path: str, line: int | None, name: str) -> tuple[str, str | None]:
    """``(id, prefix)``: an id as a string, its ``t1_``/``t3_`` prefix split off."""
    if type(value) is str:
        text = value.strip()
    elif isinstance(value, int) and not isinstance(value, bool):
        text = str(value)
    else:
        got = "missing" if value is None else f"not a string or integer: {shown(value)}"
        raise InputError.at(path, line, name, got)
    prefix = text[:3] if text[:3] in ("t1_", "t3_") else None
    ident = text[3:] if prefix else text
    if not ident:
        raise InputError.at(path, line, name, f"empty id {shown(value)}")
    return ident, prefix


def _text(record: Mapping[str, Any], names: tuple[str, ...], path: str, line: int | None, required: bool) -> str:
    for name in names:
        if name in record:
            value = record[name]
            if value is None:
                return ""
            if not isinstance(value, str):
                raise InputError.at(path, line, name, f"expected a string, got {shown(value)}")
            return value
    if required:
        raise InputError.at(path, line, names[0], f"missing (give {' or '.join(repr(n) for n in names)})")
    return ""


def _author(record: Mapping[str, Any], path: str, line: int | None) -> str | None:
    value = record.get("author")
    if value is None or isinstance(value, str):
        return value or None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise InputError.at(path, line, "author", f"expected a string, got {shown(value)}")


def _created(record: Mapping[str, Any], path: str, line: int | None) -> float | None:
    name = "created_utc" if "created_utc" in record else "created"
    value = record.get(name)
    if value is None or value == "":
        return None
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            try:
                moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
            except ValueError:
                raise InputError.at(path, line, name, f"not a time: {shown(value)}") from None
            number = (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
    if number is None or not math.isfinite(number):
        raise InputError.at(path, line, name, f"not a time: {shown(value)}")
    return number


def _parse_post(path: str, line: int | None, record: Mapping[str, Any]) -> Post:
    ident, prefix = _ident(record.get("id"), path, line, "id")
    if prefix == "t1_":
        raise InputError.at(path, line, "id", f"a post id cannot be a comment id ({shown(record.get('id'))})")
    return Post(
        id=ident,
        title=_text(record, ("title",), path, line, required=False),
        text=_text(record, ("selftext", "text"), path, line, required=False),
        author=_author(record, path, line),
        created=_created(record, path, line),
        source=path,
        line=line,
    )


def _parse_comment(path: str, line: int | None, record: Mapping[str, Any]) -> _Raw:
    ident, prefix = _ident(record.get("id"), path, line, "id")
    if prefix == "t3_":
        raise InputError.at(path, line, "id", f"a comment id cannot be a post id ({shown(record.get('id'))})")
    parent, parent_prefix = _ident(record.get("parent_id"), path, line, "parent_id")
    link: str | None = None
    if not _blank(record.get("link_id")):
        link, link_prefix = _ident(record.get("link_id"), path, line, "link_id")
        if link_prefix == "t1_":
            raise InputError.at(path, line, "link_id", f"names a comment, not a post: {shown(record['link_id'])}")
    kind: Literal["post", "comment"] | None = None
    if parent_prefix is not None:
        kind = "comment" if parent_prefix == "t1_" else "post"
    text = _text(record, ("body", "text"), path, line, required=True)
    return _Raw(ident, parent, kind, link, text, _author(record, path, line), _created(record, path, line), path, line)


# --- building -----------------------------------------------------------------------------------


def _problem(item: _Raw | Post, name: str | None, message: str) -> Problem:
    return Problem(item.source or "<records>", item.line, name, message)


def _build(post_items: list[_Item], comment_items: list[_Item], sink: _Sink) -> Forest:
    posts: dict[str, Post] = {}
    for path, line, record in post_items:
        try:
            post = _parse_post(path, line, record)
        except InputError as exc:
            sink.report("invalid", _loose_id(record), exc.problem)
            continue
        if post.id in posts:
            earlier_post = posts[post.id]
            sink.report(
                "duplicate",
                post.id,
                _problem(post, "id", f"duplicate post id {post.id!r} (first at line {earlier_post.line})"),
            )
            continue
        posts[post.id] = post
    implicit = not post_items  # a comments-only input: posts are created from the comments' references

    raws: dict[str, _Raw] = {}
    for path, line, record in comment_items:
        try:
            raw = _parse_comment(path, line, record)
        except InputError as exc:
            sink.report("invalid", _loose_id(record), exc.problem)
            continue
        ident = raw.id
        if ident in raws:
            earlier = raws[ident]
            sink.report(
                "duplicate",
                ident,
                _problem(raw, "id", f"duplicate comment id {ident!r} (first at line {earlier.line})"),
            )
            continue
        raws[ident] = raw

    # Direct parents: ("post", id) or ("comment", id); orphans are marked bad at once.
    parent_of: dict[str, tuple[str, str]] = {}
    bad: dict[str, tuple[ProblemKind, str]] = {}  # comment id -> (why it is left out, root cause id)
    for ident, raw in raws.items():
        kind = raw.parent_kind
        if kind is None:
            if raw.parent == raw.link:
                kind = "post"
            elif raw.parent in raws:
                kind = "comment"
            elif raw.parent in posts:
                kind = "post"
        found = raw.parent in raws if kind == "comment" else (kind == "post" and (implicit or raw.parent in posts))
        if kind is None or not found:
            what = {"post": "post", "comment": "comment", None: "comment or post"}[kind]
            bad[ident] = ("orphan", ident)
            sink.report("orphan", ident, _problem(raw, "parent_id", f"parent {what} {raw.parent!r} not found"))
            continue
        parent_of[ident] = (kind, raw.parent)

    post_of = _resolve_posts(raws, parent_of, bad, sink)

    top_level: dict[str, list[Comment]] = {}
    replies: dict[str, list[Comment]] = {}
    trees: dict[str, Tree] = {pid: Tree(post, {}, {}, ()) for pid, post in posts.items()}
    implicit_posts = 0
    for ident, raw in raws.items():  # input order
        pid = post_of.get(ident)
        if pid is None:
            continue
        if pid not in trees:
            trees[pid] = Tree(Post(id=pid), {}, {}, ())
            implicit_posts += 1
        parent_kind, parent = parent_of[ident]
        parent_id = None if parent_kind == "post" else parent
        comment = Comment(ident, pid, parent_id, raw.text, raw.author, raw.created, raw.source, raw.line)
        trees[pid].comments[ident] = comment
        (top_level.setdefault(pid, []) if parent_id is None else replies.setdefault(parent_id, [])).append(comment)
    for pid, tree in trees.items():
        tree.roots = _ordered(top_level.get(pid, ()))
        tree.children = {ident: _ordered(replies[ident]) if ident in replies else () for ident in tree.comments}
    return Forest(list(trees.values()), sink.problems, implicit_posts)


def _ordered(comments: Sequence[Comment]) -> tuple[str, ...]:
    if len(comments) == 1:
        return (comments[0].id,)
    return tuple(c.id for c in sorted(comments, key=_key))


def _key(comment: Comment) -> SortKey:
    return sort_key(comment.id, comment.created)


def _resolve_posts(
    raws: dict[str, _Raw],
    parent_of: dict[str, tuple[str, str]],
    bad: dict[str, tuple[ProblemKind, str]],
    sink: _Sink,
) -> dict[str, str]:
    """Walk every comment's parent chain up to its post (iteratively; each comment is walked
    once), marking cycles, inconsistent ``link_id`` values and every reply below a bad comment."""
    post_of: dict[str, str] = {}
    for start in raws:
        if start in post_of or start in bad:
            continue
        path: list[str] = []
        position: dict[str, int] = {}
        node = start
        post: str | None = None
        cause: str | None = None  # the root cause of a detached chain
        while True:
            if node in bad:
                cause = bad[node][1]
                break
            if node in post_of:
                post = post_of[node]
                break
            if node in position:  # a cycle: path[position[node]:] loops
                loop = path[position[node] :]
                for member in loop:
                    bad[member] = ("cycle", member)
                chain = [*loop[:12], "…"] if len(loop) > 12 else [*loop, loop[0]]
                text = " → ".join(chain)
                for member in loop:
                    sink.report("cycle", member, _problem(raws[member], "parent_id", f"parent chain loops: {text}"))
                path = path[: position[node]]
                cause = node
                break
            position[node] = len(path)
            path.append(node)
            kind, parent = parent_of[node]
            if kind == "post":
                post = parent
                break
            node = parent
        for ident in reversed(path):  # top-down
            raw = raws[ident]
            if cause is None and raw.link is not None and raw.link != post:
                bad[ident] = ("inconsistent", ident)
                message = f"link_id says post {raw.link!r} but the parent chain reaches post {post!r}"
                sink.report("inconsistent", ident, _problem(raw, "link_id", message))
                cause = ident
            elif cause is not None:
                bad[ident] = ("detached", cause)
                message = f"reply below skipped comment {cause!r} ({bad[cause][0]})"
                sink.report("detached", ident, _problem(raw, "parent_id", message))
            else:
                assert post is not None
                post_of[ident] = post
    return post_of
