"""Rendering a sub-thread as annotators saw it: snapshots in English and Chinese, EMPTY posts,
anonymised authors, newline normalisation, chat messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from verimod.models.base import ChatMessage
from verimod.tasks.toxirex.render import (
    letters,
    normalise_newlines,
    post_text,
    render_subthread,
    subthread_messages,
    user_labels,
)
from verimod.tasks.toxirex.subthreads import SubThread, extract_subthreads
from verimod.tasks.toxirex.threads import Post, read_threads

FIXTURES = Path(__file__).parent / "fixtures"


def threads(name: str, posts: str | None = None) -> list[SubThread]:
    forest = read_threads(FIXTURES / name, FIXTURES / posts if posts else None)
    return extract_subthreads(forest).subthreads


EN_TARGET_C3 = """\
Post:
Ukrainians were among tens of thousands of LGBTQ activists at the Pride parade in Warsaw

Comments (each replies to the one before):

[1] User A:
Should refugees really join a protest in a country that isn't theirs?

[2] User B:
Why not? They live there now.

[3] User A (TARGET):
Guests should behave like guests.
That's all I'm saying.

[4] User B:
So they should stay quiet forever?

[5] User A:
You're twisting my words.

Target comment: [3] by User A"""

EN_DELETED_AND_EMPTY = """\
Post:
Ukrainians were among tens of thousands of LGBTQ activists at the Pride parade in Warsaw

Comments (each replies to the one before):

[1] User A:
That's a pretty homophobic take.

[2] User B:
[deleted]

[3] User A (TARGET):
EMPTY

[4] User C:
Can we all calm down?

Target comment: [3] by User A"""

EN_EMPTY_POST_NO_TARGET = """\
Post:
EMPTY

Comments (each replies to the one before):

[1] User A:
First.

[2] User B:
Nobody cares.

[3] User A:
You cared enough to reply.

[4] User B:
People like you ruin this site.

[5] User A:
Ok."""

ZH_TARGET_105 = """\
帖子：
外地人来我们城市抢工作？

看到新闻说今年外来务工人员又增加了，大家怎么看？

评论（每条回复上一条）：

[1] 用户A：
本地人都找不到工作了，还来？

[2] 用户B（目标评论）：
那些外地人素质就是低。

不服来辩。

[3] 用户C：
一竿子打翻一船人。

[4] 用户B：
事实如此。

[5] 用户C：
懒得理你。

目标评论：[2]，用户B"""


def test_english_snapshot_with_target():
    first = threads("threads_en.jsonl")[0]
    assert render_subthread(first, "c3") == EN_TARGET_C3  # \r\n in c3 became \n


def test_deleted_authors_get_their_own_letter_and_empty_comments_read_empty():
    second = threads("threads_en.jsonl")[1]
    assert second.comment_ids == ("c6", "c7", "c8", "c9")
    assert render_subthread(second, "c8", language="en") == EN_DELETED_AND_EMPTY


def test_empty_post_and_no_target():
    third = threads("threads_en.jsonl")[2]
    assert third.post.id == "abc2"
    assert render_subthread(third) == EN_EMPTY_POST_NO_TARGET


def test_chinese_snapshot():
    first = threads("threads_zh.jsonl")[0]
    assert render_subthread(first, "105", language="zh") == ZH_TARGET_105


def test_every_target_renders_and_marks_exactly_one_comment():
    for thread in threads("threads_de_comments.jsonl", "threads_de_posts.jsonl"):
        for number, target in enumerate(thread.targets, 1):
            text = render_subthread(thread, target)
            assert text.count("(TARGET)") == 1 and f"[{number}] User" in text
            assert text.endswith(f"Target comment: [{number}] by {user_labels(thread)[target]}")
            assert text.startswith("Post:\nErdbeben in der Türkei: Spendenaufruf\n\nWo kann man am besten spenden?\n")


def test_post_text():
    assert post_text(Post(id="p")) == "EMPTY"
    assert post_text(Post(id="p", title="  \r\n ", text="")) == "EMPTY"
    assert post_text(Post(id="p", title="", text="Body only")) == "Body only"
    assert post_text(Post(id="p", title="Title", text="Line 1\r\nLine 2")) == "Title\n\nLine 1\nLine 2"


def test_normalise_newlines():
    assert normalise_newlines("a\r\nb\rc\u2028d\u2029e\x85f") == "a\nb\nc\nd\ne\nf"
    assert normalise_newlines("\n\n  a  \n\n\n\n\nb \t\n") == "a\n\nb"
    assert normalise_newlines("<b>&amp;</b> *md*") == "<b>&amp;</b> *md*"  # nothing escaped or unescaped


def test_letters_and_many_users():
    assert [letters(i) for i in (0, 1, 25, 26, 27, 51, 52, 701, 702)] == [
        "A",
        "B",
        "Z",
        "AA",
        "AB",
        "AZ",
        "BA",
        "ZZ",
        "AAA",
    ]
    with pytest.raises(ValueError):
        letters(-1)


def test_messages_with_a_system_slot():
    thread = threads("threads_zh.jsonl")[0]
    messages = subthread_messages(thread, "105", system="SYSTEM PROMPT", language="zh")
    assert messages == [
        ChatMessage(role="system", content="SYSTEM PROMPT"),
        ChatMessage(role="user", content=ZH_TARGET_105),
    ]
    assert subthread_messages(thread) == [ChatMessage(role="user", content=render_subthread(thread))]


def test_bad_arguments():
    thread = threads("threads_zh.jsonl")[0]
    with pytest.raises(ValueError, match="not a comment of this sub-thread"):
        render_subthread(thread, "999")
    with pytest.raises(ValueError, match="language must be one of en, zh"):
        render_subthread(thread, "105", language="fr")  # type: ignore[arg-type]


def test_rendering_is_deterministic():
    first = threads("threads_en.jsonl")[0]
    again = threads("threads_en.jsonl")[0]
    assert [render_subthread(first, t) for t in first.targets] == [render_subthread(again, t) for t in again.targets]
