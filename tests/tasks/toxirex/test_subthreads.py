"""ToxiREX sub-threads: reading comment trees, and the greedy extraction of §4.2.

Expected sub-threads are computed by hand in the comments next to each case; a literal,
quadratic rendering of the paper's loop (:func:`reference`) is compared with the fast
implementation on random trees.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verimod.core.errors import InputError
from verimod.tasks.toxirex.subthreads import Extraction, extract_subthreads, extract_tree
from verimod.tasks.toxirex.threads import Forest, Tree, forest_from_records, read_threads

FIXTURES = Path(__file__).parent / "fixtures"


def chains(result: Extraction) -> list[list[str]]:
    return [list(s.comment_ids) for s in result.subthreads]


def records(spec: dict[str, str | None], post: str = "p", created: dict[str, int] | None = None) -> list[dict]:
    """Comment records from ``{id: parent id or None (top-level)}``, Reddit-prefixed."""
    out: list[dict[str, Any]] = []
    for ident, parent in spec.items():
        record: dict[str, Any] = {
            "id": ident,
            "parent_id": f"t3_{post}" if parent is None else f"t1_{parent}",
            "link_id": f"t3_{post}",
            "body": f"text of {ident}",
        }
        if created and ident in created:
            record["created_utc"] = created[ident]
        out.append(record)
    return out


def extract(spec: dict[str, str | None], **kwargs: Any) -> Extraction:
    created = kwargs.pop("created", None)
    return extract_subthreads(forest_from_records(records(spec, created=created)), **kwargs)


# --- the reference: the paper's loop, literally (quadratic) --------------------------------------


def reference(tree: Tree, ideal_length: int = 5, min_length: int = 3) -> list[tuple[list[str], int, int]]:
    """Ancestries of the leaves; drop short ones; confirm the minimum of |L − ideal| + B (ties:
    the leaf's (created, natural id) key); remove its comments from every ancestry; repeat."""
    parent = {c.id: c.parent_id for c in tree.comments.values()}
    branching = {ident for ident, kids in tree.children.items() if len(kids) > 1}

    def ancestry(ident: str | None) -> list[str]:
        out = []
        while ident is not None:
            out.append(ident)
            ident = parent[ident]
        return out[::-1]

    def rank(chain: list[str]) -> tuple[int, int]:
        branch_count = sum(c in branching for c in chain)
        return abs(len(chain) - ideal_length) + branch_count, branch_count

    candidates = {leaf: ancestry(leaf) for leaf, kids in tree.children.items() if not kids}
    confirmed = []
    while True:
        candidates = {leaf: chain for leaf, chain in candidates.items() if len(chain) >= min_length}
        if not candidates:
            return confirmed
        leaf = min(candidates, key=lambda leaf: (rank(candidates[leaf])[0], tree.comments[leaf].sort_key))
        chain = candidates.pop(leaf)
        confirmed.append((chain, *rank(chain)))
        removed = set(chain)
        candidates = {other: [c for c in rest if c not in removed] for other, rest in candidates.items()}


# --- hand-computed trees -------------------------------------------------------------------------


def test_branching_points_outweigh_length():
    # a → b → c → d → e, b → f, a → g → h. Branching: a, b.
    # e: L5 B2 → 2;  f: L3 B2 → 4;  h: L3 B1 → 3.  Confirm a..e; f (L1) and g→h (L2) are dropped.
    result = extract({"a": None, "b": "a", "c": "b", "d": "c", "e": "d", "f": "b", "g": "a", "h": "g"})
    assert chains(result) == [["a", "b", "c", "d", "e"]]
    assert [(s.score, s.branching) for s in result.subthreads] == [(2, 2)]
    assert result.uncovered == ["f", "g", "h"]


def test_a_cut_candidate_keeps_its_suffix_when_still_long_enough():
    # a → b → c → {d → e, x → y → z → w}. Branching: c.
    # e: L5 B1 → 1;  w: L7 B1 → 3.  Confirm a..e; w's ancestry is cut to x y z w: L4 B0 → 1.
    result = extract({"a": None, "b": "a", "c": "b", "d": "c", "e": "d", "x": "c", "y": "x", "z": "y", "w": "z"})
    assert chains(result) == [["a", "b", "c", "d", "e"], ["x", "y", "z", "w"]]
    assert [(s.score, s.branching) for s in result.subthreads] == [(1, 1), (1, 0)]
    assert result.uncovered == []


def test_a_cut_suffix_shorter_than_three_is_dropped():
    # a → b → c → d → e → f, c → g → h.  f: L6 B1 → 2;  h: L5 B1 → 1.  Confirm a b c g h;
    # f's ancestry is cut to d e f (L3 B0 → 2) and confirmed; nothing is left.
    result = extract({"a": None, "b": "a", "c": "b", "d": "c", "e": "d", "f": "e", "g": "c", "h": "g"})
    assert chains(result) == [["a", "b", "c", "g", "h"], ["d", "e", "f"]]
    # … and with a shorter branch the cut suffix d e is dropped:
    result = extract({"a": None, "b": "a", "c": "b", "d": "c", "e": "d", "g": "c", "h": "g"})
    # e: L5 B1 → 1;  h: L5 B1 → 1: a tie, e < h; then g h (L2) is dropped.
    assert chains(result) == [["a", "b", "c", "d", "e"]]
    assert result.uncovered == ["g", "h"]


def test_caterpillar():
    # Spine s1..s6, a leaf l_i on every s_i (i ≤ 5): s1..s5 branch.  l_i: L = i + 1, B = i.
    # l2, l3, l4 tie at 4 → l2 first: s1 s2 l2.  Below the new root s3: l4 (L3 B2), l5 (L4 B3),
    # s6 (L4 B3) tie at 4 → l4: s3 s4 l4.  Below s5: only chains of length 2.
    spec: dict[str, str | None] = {"s1": None}
    for i in range(1, 6):
        spec[f"s{i + 1}"] = f"s{i}"
        spec[f"l{i}"] = f"s{i}"
    result = extract(spec)
    assert chains(result) == [["s1", "s2", "l2"], ["s3", "s4", "l4"]]
    assert [s.score for s in result.subthreads] == [4, 4]
    assert result.uncovered == ["l1", "l3", "s5", "l5", "s6"]


def test_ties_go_to_the_earliest_leaf_then_the_smallest_id_in_natural_order():
    # Two chains of 5 from r, both L5 B1 → 1.
    spec = {"r": None, "a1": "r", "a2": "a1", "a3": "a2", "c9": "a3", "b1": "r", "b2": "b1", "b3": "b2", "c10": "b3"}
    # No times: c9 < c10 in natural order (shorter first) although "c10" < "c9" as strings.
    assert chains(extract(spec))[0] == ["r", "a1", "a2", "a3", "c9"]
    # An earlier leaf wins over a smaller id; a leaf without a time comes after any timed one.
    assert chains(extract(spec, created={"c9": 20, "c10": 10}))[0] == ["r", "b1", "b2", "b3", "c10"]
    assert chains(extract(spec, created={"c10": 10}))[0] == ["r", "b1", "b2", "b3", "c10"]


def test_long_chains_and_short_trees():
    chain = {f"k{i}": (f"k{i - 1}" if i else None) for i in range(8)}
    result = extract(chain)  # one chain of 8: L8 B0 → 3, never split
    assert chains(result) == [list(chain)]
    assert result.subthreads[0].score == 3
    short = extract({"a": None, "b": "a", "c": None})
    assert chains(short) == [] and short.uncovered == ["a", "b", "c"]


def test_every_comment_is_a_target_and_records_are_json_ready():
    result = extract({"a": None, "b": "a", "c": "b"})
    (thread,) = result.subthreads
    assert thread.targets == thread.comment_ids == ("a", "b", "c")
    assert thread.to_record() == {
        "thread_id": "p/a",
        "post_id": "p",
        "comment_ids": ["a", "b", "c"],
        "targets": ["a", "b", "c"],
        "length": 3,
        "branching": 0,
        "score": 2,
    }
    assert result.counts() == {"subthreads": 1, "comments": 3, "uncovered": 0}


def test_parameters():
    spec = {"a": None, "b": "a", "c": "b", "d": "a"}
    assert chains(extract(spec, ideal_length=3, min_length=2)) == [["a", "b", "c"]]
    # a d: L2 B1 → 1 beats a b c: L3 B1 → 2; the cut b c (L2 B0 → 0) is still long enough.
    assert chains(extract(spec, ideal_length=2, min_length=2)) == [["a", "d"], ["b", "c"]]
    with pytest.raises(ValueError, match="min_length"):
        extract(spec, min_length=0)


# --- fixtures ------------------------------------------------------------------------------------


def test_reddit_fixture():
    forest = read_threads(FIXTURES / "threads_en.jsonl")
    assert [t.post.id for t in forest.trees] == ["abc1", "abc2"] and not forest.problems
    result = extract_subthreads(forest)
    # abc1: c1..c5 (L5 B1 → 1), then the cut c6..c9 (L4 B0 → 1); c10 → c11 is too short.
    # abc2: d1..d5 (L5 B2 → 2) beats d1 d6 d8 (L3 B1 → 3) and d1 d2 d7 (L3 B2 → 4).
    assert chains(result) == [["c1", "c2", "c3", "c4", "c5"], ["c6", "c7", "c8", "c9"], ["d1", "d2", "d3", "d4", "d5"]]
    assert [s.post_id for s in result.subthreads] == ["abc1", "abc1", "abc2"]
    assert result.uncovered == ["c10", "c11", "d7", "d6", "d8"]


def test_chinese_fixture_plain_ids_and_times_decide_the_tie():
    forest = read_threads(FIXTURES / "threads_zh.jsonl")
    (tree,) = forest.trees
    assert tree.roots == ("100",) and tree.children["100"] == ("101", "105")  # int ids, ordered by time
    assert tree.comments["102"].post_id == "zh1"  # no link_id: found through the parent chain
    # 104 and 108 both L5 B1 → 1; 108 (08:13) was written before 104 (09:30).
    assert chains(extract_subthreads(forest)) == [["100", "105", "106", "107", "108"], ["101", "102", "103", "104"]]
    # Without times the smaller id wins.
    untimed = [{k: v for k, v in r.items() if k != "created"} for r in _lines(FIXTURES / "threads_zh.jsonl")]
    assert chains(extract_subthreads(forest_from_records(untimed))) == [
        ["100", "101", "102", "103", "104"],
        ["105", "106", "107", "108"],
    ]


def test_posts_from_a_separate_file():
    forest = read_threads(FIXTURES / "threads_de_comments.jsonl", FIXTURES / "threads_de_posts.jsonl")
    (tree,) = forest.trees
    assert tree.post.id == "de1" and tree.post.title.startswith("Erdbeben") and tree.roots == ("e8", "e1")
    # e7: L7 B0 → 2 and e10: L3 B0 → 2 tie; e10 is older.
    assert chains(extract_subthreads(forest)) == [["e8", "e9", "e10"], [f"e{i}" for i in range(1, 8)]]


def _lines(path: Path) -> list[dict[str, Any]]:
    import json

    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# --- reading: prefixes, problems -----------------------------------------------------------------


def test_prefixes_plain_ids_and_implicit_posts():
    forest = forest_from_records(
        [
            {"id": "t1_a", "parent_id": "t3_p", "link_id": "t3_p", "body": "x"},
            {"id": "b", "parent_id": "a", "link_id": "p", "body": "y"},  # plain: a known comment
            {"id": 7, "parent_id": "p", "link_id": "p", "text": "z"},  # plain: the link → top-level
            {"id": "c", "parent_id": "t1_b", "body": None},  # no link_id; null body → ""
        ]
    )
    assert forest.implicit_posts == 1 and not forest.problems
    (tree,) = forest.trees
    assert tree.post.id == "p" and tree.post.title == tree.post.text == ""
    assert tree.roots == ("7", "a") and tree.children["a"] == ("b",) and tree.children["b"] == ("c",)
    assert tree.comments["c"].text == "" and tree.comments["c"].parent_id == "b"


def test_bad_fixture_skip_counts_every_problem():
    path = FIXTURES / "threads_bad.jsonl"
    forest = read_threads(path, on_error="skip")
    assert forest.counts() == {
        "malformed": 1,
        "invalid": 2,
        "duplicate": 1,
        "orphan": 2,
        "detached": 2,
        "cycle": 2,
        "inconsistent": 1,
    }
    (tree,) = forest.trees
    assert list(tree.comments) == ["ok1", "ok2", "ok3"] and tree.comments["ok2"].author == "b"  # first kept
    by_id = {p.id: p for p in forest.problems}
    assert str(by_id["or1"]) == f"{path}:6: field 'parent_id': parent comment 'zzz' not found"
    assert str(by_id["or2"]) == f"{path}:7: field 'parent_id': reply below skipped comment 'or1' (orphan)"
    assert "parent chain loops: x1 → x2 → x1" in str(by_id["x1"])
    assert str(by_id["x3"]).endswith("reply below skipped comment 'x1' (cycle)")
    assert str(by_id["in1"]) == (
        f"{path}:11: field 'link_id': link_id says post 'p2' but the parent chain reaches post 'p1'"
    )
    assert str(by_id["pm1"]).endswith("parent post 'p9' not found")
    assert by_id["ok2"].problem.line == 5 and "duplicate comment id 'ok2' (first at line 3)" in str(by_id["ok2"])
    invalid = sorted(str(p) for p in forest.problems if p.kind == "invalid")
    assert invalid == [
        f"{path}:12: field 'body': missing (give 'body' or 'text')",
        f"{path}:13: field 'created_utc': not a time: 'yesterday'",
    ]
    # Nothing disappears: every comment record is in a tree or in a problem.
    placed = set(tree.comments) | {p.id for p in forest.problems if p.id}
    assert placed >= {r["id"] for r in _lines_skipping_bad(path) if "parent_id" in r}
    assert chains(extract_subthreads(forest)) == [["ok1", "ok2", "ok3"]]


def _lines_skipping_bad(path: Path) -> list[dict[str, Any]]:
    import json

    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (
            [{"id": "a", "parent_id": "t3_p", "body": "x"}, {"id": "a", "parent_id": "t3_p", "body": "y"}],
            "<m>:2: field 'id': duplicate comment id 'a' (first at line 1)",
        ),
        ([{"id": "a", "parent_id": "t1_b", "body": "x"}], "<m>:1: field 'parent_id': parent comment 'b' not found"),
        (
            [{"id": "a", "parent_id": "zz", "body": "x"}],
            "<m>:1: field 'parent_id': parent comment or post 'zz' not found",
        ),
        ([{"id": "a", "parent_id": "t1_a", "body": "x"}], "<m>:1: field 'parent_id': parent chain loops: a → a"),
        ([{"id": "a", "parent_id": "t3_p", "body": 3}], "<m>:1: field 'body': expected a string, got 3"),
        ([{"id": True, "parent_id": "t3_p", "body": "x"}], "<m>:1: field 'id': not a string or integer: True"),
        ([{"id": "a", "link_id": "t3_p", "body": "x"}], "<m>:1: field 'parent_id': missing"),  # not a post
        (
            [{"id": "a", "parent_id": "t3_p", "link_id": "t1_q", "body": "x"}],
            "<m>:1: field 'link_id': names a comment, not a post: 't1_q'",
        ),
    ],
)
def test_fail_mode_raises_one_line_naming_file_line_field(rows, message):
    with pytest.raises(InputError) as info:
        forest_from_records(rows, source="<m>")
    assert str(info.value) == message


def test_fail_mode_on_a_file(tmp_path):
    with pytest.raises(InputError, match=r"threads_bad\.jsonl:14: invalid JSON"):
        read_threads(FIXTURES / "threads_bad.jsonl")
    path = tmp_path / "t.json"  # a JSON array works too
    path.write_text(
        '[{"id": "p"}, {"id": "a", "parent_id": "t3_p", "body": "x"}, {"id": "b", "parent_id": "t1_q", "body": "y"}]'
    )
    with pytest.raises(InputError, match=r"t\.json:3: field 'parent_id': parent comment 'q' not found"):
        read_threads(path)
    assert read_threads(path, on_error="skip").counts() == {"orphan": 1}


def test_a_missing_post_is_an_orphan_when_posts_are_given():
    forest = forest_from_records([{"id": "a", "parent_id": "t3_q", "body": "x"}], posts=[{"id": "p"}], on_error="skip")
    assert forest.counts() == {"orphan": 1} and [t.post.id for t in forest.trees] == ["p"]


def test_long_cycles_and_deep_chains_do_not_recurse():
    n = 50_000
    loop = [{"id": f"c{i}", "parent_id": f"t1_c{(i + 1) % n}", "body": "x"} for i in range(n)]
    forest = forest_from_records(loop, posts=[{"id": "p"}], on_error="skip")
    assert forest.counts() == {"cycle": n}
    deep = [{"id": f"c{i}", "parent_id": "t3_p" if i == 0 else f"t1_c{i - 1}", "body": "x"} for i in range(n)]
    result = extract_subthreads(forest_from_records(deep))
    assert [len(s) for s in result.subthreads] == [n]


# --- the reference on random trees ---------------------------------------------------------------


@st.composite
def random_forests(draw: st.DrawFn) -> tuple[list[dict[str, Any]], int, int]:
    rows: list[dict[str, Any]] = []
    for post in range(draw(st.integers(1, 3))):
        n = draw(st.integers(0, 40))
        bias = draw(st.sampled_from([0.0, 0.5, 0.9]))  # how often a reply goes to the latest comment
        for i in range(n):
            if i == 0 or draw(st.integers(0, 9)) == 0:
                parent = f"t3_p{post}"
            elif draw(st.floats(0, 1)) < bias:
                parent = f"t1_p{post}c{i - 1}"
            else:
                parent = f"t1_p{post}c{draw(st.integers(0, i - 1))}"
            row: dict[str, Any] = {"id": f"p{post}c{i}", "parent_id": parent, "link_id": f"t3_p{post}", "body": "."}
            if draw(st.booleans()):
                row["created_utc"] = draw(st.integers(0, 4))  # few distinct times: many ties
            rows.append(row)
    ideal = draw(st.sampled_from([5, 5, 5, 1, 2, 3, 4, 7]))
    minimum = draw(st.sampled_from([3, 3, 3, 1, 2, 4, 6]))
    return rows, ideal, minimum


@settings(max_examples=400, deadline=None)
@given(random_forests())
def test_matches_the_brute_force_reference(case):
    rows, ideal, minimum = case
    forest = forest_from_records(rows)
    result = extract_subthreads(forest, ideal_length=ideal, min_length=minimum)
    expected = [item for tree in forest.trees for item in reference(tree, ideal, minimum)]
    assert [(list(s.comment_ids), s.score, s.branching) for s in result.subthreads] == expected
    covered = {c for s in result.subthreads for c in s.comment_ids}
    assert len(covered) == sum(len(s) for s in result.subthreads)  # disjoint
    assert covered.isdisjoint(result.uncovered)
    assert len(covered) + len(result.uncovered) == forest.n_comments
    for thread in result.subthreads:  # each is a reply chain
        ids = thread.comment_ids
        assert all(thread.comments[i + 1].parent_id == ids[i] for i in range(len(ids) - 1))


@settings(max_examples=100, deadline=None)
@given(random_forests(), st.randoms(use_true_random=False))
def test_input_order_does_not_matter(case, rng):
    rows, ideal, minimum = case
    shuffled = rows[:]
    rng.shuffle(shuffled)
    a = extract_subthreads(forest_from_records(rows), ideal_length=ideal, min_length=minimum)
    b = extract_subthreads(forest_from_records(shuffled), ideal_length=ideal, min_length=minimum)
    assert _per_post(a) == _per_post(b)
    assert sorted(a.uncovered) == sorted(b.uncovered)


def _per_post(result: Extraction) -> list[tuple[str, tuple[str, ...]]]:
    return sorted((s.post_id, s.comment_ids) for s in result.subthreads)


def test_deterministic_on_a_large_random_forest():
    rng = random.Random(7)
    rows = [
        {"id": f"c{i}", "parent_id": "t3_p" if i < 30 else f"t1_c{rng.randrange(i)}", "link_id": "t3_p", "body": "."}
        for i in range(3_000)
    ]
    first = extract_subthreads(forest_from_records(rows))
    again = extract_subthreads(forest_from_records(rows))
    assert [s.to_record() for s in first.subthreads] == [s.to_record() for s in again.subthreads]
    (tree,) = forest_from_records(rows).trees
    expected = reference(tree)
    assert [(list(s.comment_ids), s.score, s.branching) for s in first.subthreads] == expected


def test_extract_tree_and_forest_agree():
    forest: Forest = read_threads(FIXTURES / "threads_en.jsonl")
    parts = [extract_tree(tree) for tree in forest.trees]
    assert [s for p in parts for s in p.subthreads] == extract_subthreads(forest).subthreads
