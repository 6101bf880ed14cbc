"""ToxiREX sub-thread extraction: split a post's comment tree into reply chains to annotate.

The procedure (ToxiREX §4.2), applied to each post's tree independently:

1. every comment has its *ancestry*: the chain top-level comment → … → the comment;
2. the candidates are the ancestries of the leaf comments (comments without replies);
3. candidates shorter than ``min_length`` = 3 comments are dropped;
4. the candidate ``C`` minimising ``|L_C − ideal_length| + B_C`` is confirmed as a sub-thread
   (``ideal_length`` = 5; ``L_C`` its length; ``B_C`` its branching points, "the number of
   comments that have more than one reply");
5. its comments are removed from further consideration and from the ancestries of the remaining
   candidates; back to step 2, until no candidate remains.

Choices where the paper is silent, and why:

- **Cut candidates.** Removing a confirmed chain always removes a *prefix* of every other
  ancestry it touches (proof below), so what remains of a cut candidate is the contiguous reply
  chain below the divergence point. It stays a candidate when it still has ``min_length``
  comments — the paper returns "to step 2" after each confirmation, and step 3 is the only
  filter — and is dropped otherwise.
- **Branching points** count a comment's replies in the original tree. This is also the count
  in the remaining forest and, for the sub-threads produced, the same as counting only replies
  that lie on remaining candidates (proof below): the choice changes no sub-thread, only the
  reported ``B`` and the order in which independent sub-threads are confirmed.
- **Ties** in the score go to the candidate whose leaf was created first (a missing time counts
  as latest), then to the smaller leaf id in natural order (shorter first, then lexicographic).
  Scores and keys depend only on the tree, so the result is the same for any input order.
- **Targets.** Every comment of a sub-thread is annotated, one at a time, with the whole
  sub-thread as context: annotators saw "one sub-thread … one of the comments … highlighted" and
  "the annotation proceeds with the next comment" (§5, §5.1); the English pre-selection has 499
  comments in 102 sub-threads (§5.4), i.e. about five — the ideal length — per sub-thread; the
  fine-tuned baseline classifies every comment of the input sub-thread (§7.1). Each comment is
  in at most one sub-thread; comments in no sub-thread are returned as ``uncovered``.

Why removal only cuts prefixes. Invariant: the removed comments are closed under taking the
parent (every removed comment's parent is removed or is the post), equivalently the remaining
comments are closed under taking replies. Initially nothing is removed. If it holds, every
remaining ancestry is a contiguous suffix of the original one, starting at a *current root* (a
remaining comment whose parent is removed or is the post), and every current root still has its
whole original subtree. A confirmed candidate is a chain from a current root down to a leaf, so
removing it keeps the invariant. Consequently: (a) a remaining comment keeps all its original
replies (so original-tree and remaining-forest reply counts agree); (b) a remaining comment's
reply can fail to lie on any candidate only when the comment is a current root (the reply's
chain is then shorter than 3); a root is in every candidate of its subtree, so counting or not
counting it shifts all of them equally, and candidates under different roots are disjoint and
never compete for comments.

Algorithm (linear after sorting, ``O(n log n)`` with the heap). Because every current root keeps
its whole original subtree, the best candidate starting at a comment ``c`` — over the leaves
``l`` below ``c``, with ``L = d(l) − d(c) + 1`` and ``B = pb(l) − pb(parent(c))`` (``d`` the depth,
``pb`` the number of branching comments on the path from the top) — is a fixed property of the
tree, ``best(c)``, computed once for every comment:

- chains with ``min_length ≤ L < ideal_length``: each leaf updates its ancestors
  ``min_length − 1`` to ``ideal_length − 2`` levels up (2 and 3 by default): ``O(n)``;
- chains with ``L ≥ max(ideal_length, min_length)``: the score is ``d(l) + pb(l)`` minus a
  constant of ``c``, so it is the minimum of ``d + pb`` over the leaves below the descendants
  ``g`` of ``c`` at that relative depth; a bottom-up minimum per comment, each ``g`` then
  updating one ancestor: ``O(n)``.

The greedy then keeps the current roots in a heap keyed by ``best``: pop the minimum, confirm its
chain, push the replies of the chain's comments that are not on it (the new roots). A root's
subtree is untouched until the root itself is popped, so no entry ever goes stale. Every comment
is pushed at most once. A brute-force rendering of the paper's loop (quadratic) is checked
against this on random trees in the tests.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from verimod.tasks.toxirex.threads import Comment, Forest, Post, SortKey, Tree

IDEAL_LENGTH = 5
MIN_LENGTH = 3

#: ``(score, tie-break key of the leaf, leaf id)`` — the order in which candidates are confirmed.
Rank = tuple[int, SortKey, str]


@dataclass(frozen=True, slots=True)
class SubThread:
    """A confirmed sub-thread: a reply chain (top comment first) below ``post``.

    ``branching`` is ``B`` (comments of the chain with more than one reply in the tree) and
    ``score`` is ``|L − ideal| + B`` at confirmation. Every comment is a target (module docstring).
    """

    post: Post
    comments: tuple[Comment, ...]
    branching: int
    score: int

    @property
    def post_id(self) -> str:
        return self.post.id

    @property
    def thread_id(self) -> str:
        """``"<post id>/<first comment id>"``: unique, as every comment is in one sub-thread at most."""
        return f"{self.post.id}/{self.comments[0].id}"

    @property
    def comment_ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.comments)

    @property
    def targets(self) -> tuple[str, ...]:
        """The comments to annotate: all of them, each with the whole sub-thread as context."""
        return self.comment_ids

    def __len__(self) -> int:
        return len(self.comments)

    def to_record(self) -> dict[str, Any]:
        """A JSON-ready record: the thread id, ids, targets, length, branching and score."""
        return {
            "thread_id": self.thread_id,
            "post_id": self.post.id,
            "comment_ids": list(self.comment_ids),
            "targets": list(self.targets),
            "length": len(self.comments),
            "branching": self.branching,
            "score": self.score,
        }


@dataclass(slots=True)
class Extraction:
    """The sub-threads (per post in post order, each post's in confirmation order) and the ids
    of the comments that are in none (``uncovered``, per post in tree order: depth first, replies
    in reply order)."""

    subthreads: list[SubThread] = field(default_factory=list)
    uncovered: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """``subthreads``, ``comments`` (in sub-threads) and ``uncovered`` counts."""
        return {
            "subthreads": len(self.subthreads),
            "comments": sum(len(s) for s in self.subthreads),
            "uncovered": len(self.uncovered),
        }


def extract_subthreads(
    forest: Forest | Iterable[Tree], *, ideal_length: int = IDEAL_LENGTH, min_length: int = MIN_LENGTH
) -> Extraction:
    """The sub-threads of every tree of ``forest`` (see the module docstring)."""
    trees = forest.trees if isinstance(forest, Forest) else forest
    result = Extraction()
    for tree in trees:
        part = extract_tree(tree, ideal_length=ideal_length, min_length=min_length)
        result.subthreads.extend(part.subthreads)
        result.uncovered.extend(part.uncovered)
    return result


def _check(ideal_length: int, min_length: int) -> None:
    if isinstance(min_length, bool) or not isinstance(min_length, int) or min_length < 1:
        raise ValueError(f"min_length must be a positive integer, got {min_length!r}")
    if isinstance(ideal_length, bool) or not isinstance(ideal_length, int) or ideal_length < 1:
        raise ValueError(f"ideal_length must be a positive integer, got {ideal_length!r}")


def extract_tree(tree: Tree, *, ideal_length: int = IDEAL_LENGTH, min_length: int = MIN_LENGTH) -> Extraction:
    """The sub-threads of one post's tree (see the module docstring for the algorithm)."""
    _check(ideal_length, min_length)
    comments, children = tree.comments, tree.children
    # Preorder with parents, depths (top-level = 1) and branching prefix counts.
    order: list[str] = []
    parent: dict[str, str | None] = {}
    depth: dict[str, int] = {}
    pb: dict[str, int] = {}  # branching comments on the path top → comment, inclusive
    stack: list[tuple[str, str | None]] = [(root, None) for root in reversed(tree.roots)]
    while stack:
        node, up = stack.pop()
        order.append(node)
        parent[node] = up
        depth[node] = 1 if up is None else depth[up] + 1
        pb[node] = (0 if up is None else pb[up]) + (len(children[node]) > 1)
        stack.extend((child, node) for child in reversed(children[node]))

    best = _best_candidates(tree, order, parent, depth, pb, ideal_length, min_length)

    heap: list[tuple[Rank, str]] = [(best[root], root) for root in tree.roots if root in best]
    heapq.heapify(heap)
    taken: set[str] = set()
    result = Extraction()
    while heap:
        (score, _, leaf), top = heapq.heappop(heap)
        chain = [leaf]
        while chain[-1] != top:
            up = parent[chain[-1]]
            assert up is not None
            chain.append(up)
        chain.reverse()
        taken.update(chain)
        for node in chain:
            for child in children[node]:
                if child not in taken and child in best:
                    heapq.heappush(heap, (best[child], child))
        top_parent = parent[top]
        branching = pb[leaf] - (0 if top_parent is None else pb[top_parent])
        result.subthreads.append(SubThread(tree.post, tuple(comments[c] for c in chain), branching, score))
    result.uncovered = [c for c in order if c not in taken]
    return result


def _best_candidates(
    tree: Tree,
    order: list[str],
    parent: dict[str, str | None],
    depth: dict[str, int],
    pb: dict[str, int],
    ideal_length: int,
    min_length: int,
) -> dict[str, Rank]:
    """``best(c)`` for every comment ``c`` that starts at least one candidate (module docstring)."""
    children, comments = tree.children, tree.comments
    best: dict[str, Rank] = {}

    def offer(top: str, rank: Rank) -> None:
        if top not in best or rank < best[top]:
            best[top] = rank

    def pb_above(node: str) -> int:
        up = parent[node]
        return 0 if up is None else pb[up]

    long_from = max(ideal_length, min_length)  # L ≥ long_from: the score is d + pb − const
    # Short candidates: min_length ≤ L < long_from, walking up from each leaf.
    if min_length < long_from:
        for leaf in order:
            if children[leaf]:
                continue
            key = comments[leaf].sort_key
            node: str | None = leaf
            for length in range(1, long_from):
                if node is None:
                    break
                if length >= min_length:
                    offer(node, (ideal_length - length + pb[leaf] - pb_above(node), key, leaf))
                node = parent[node]
    # Long candidates: min over the leaves below each comment of (d + pb), bottom-up ...
    low: dict[str, tuple[int, SortKey, str]] = {}
    for node in reversed(order):
        if children[node]:
            low[node] = min(low[child] for child in children[node])
        else:
            low[node] = (depth[node] + pb[node], comments[node].sort_key, node)
    # ... handed to the ancestor long_from − 1 levels up (the tops of chains of length ≥ long_from).
    for node in order:
        top: str | None = node
        for _ in range(long_from - 1):
            if top is None:
                break
            top = parent[top]
        if top is None:
            continue
        value, key, leaf = low[node]
        offer(top, (value - depth[top] + 1 - ideal_length - pb_above(top), key, leaf))
    return best
