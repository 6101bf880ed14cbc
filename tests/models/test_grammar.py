"""The backend-neutral grammar: validation, its two renderings (hand-written expected text for a
small grammar), and that both renderings accept and reject the same strings in the engines that
enforce them: Python ``re`` and llguidance on the regex, llama.cpp on the GBNF. (llguidance's own
GBNF reader is not used: it turns rules into greedy lexemes, which changes the language.)"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tests.helpers.grammar import llama_cpp_accepts, llguidance_accepts, vocab_model
from tests.models.local_model import gguf_or_skip
from verimod.models.base import StructuredOutput
from verimod.models.grammar import Alt, Chars, Literal, OneOf, Ref, Repeat, Rule, Seq, TextGrammar

#: A small grammar using every node kind: 'say' then one to three words (a word: one to four
#: characters that are neither brackets nor spaces, or a bracketed aside), then '!' or '?'.
SMALL = TextGrammar(
    name="small/1",
    rules=(
        Rule(
            name="root",
            body=Seq(
                items=(
                    Literal(text="say "),
                    Repeat(item=Ref(name="word"), min_count=1, max_count=3),
                    OneOf(options=("!", "?")),
                )
            ),
        ),
        Rule(
            name="word",
            body=Alt(
                items=(
                    Chars(excluded="[] -\n", min_count=1, max_count=4),
                    Seq(items=(Literal(text="[a-b]"), Chars(excluded="]", min_count=0, max_count=2))),
                )
            ),
        ),
    ),
)
ACCEPTED = ("say 你好!", "say ab你好cd?", "say a[a-b]xyb!", "say [a-b]!", "say 一二三四五六七八九十二!")
REJECTED = (
    "say !",
    "say a b!",
    "say a",
    "say [a-c]!",
    "say a\nb!",
    "say ab-c!",
    "Say a!",
    "say [a-b]]!",
    "say 一二三四五六七八九十二十三!",
)


def test_renderings_of_a_small_grammar() -> None:
    assert SMALL.regex() == r"say (?:[^\n \-\[\]]{1,4}|\[a-b\][^\]]{0,2}){1,3}(?:!|\?)"
    assert SMALL.gbnf() == (
        'root ::= "say " word{1,3} ("!" | "?")\nword ::= ([^\\n \\x2D\\[\\]]{1,4} | "[a-b]" [^\\]]{0,2})\n'
    )


@pytest.mark.parametrize("text", ACCEPTED)
def test_accepted_texts_match(text: str) -> None:
    assert SMALL.matches(text)


@pytest.mark.parametrize("text", REJECTED)
def test_rejected_texts_do_not_match(text: str) -> None:
    assert not SMALL.matches(text)


def test_the_regex_agrees_in_llguidance() -> None:
    llguidance = pytest.importorskip("llguidance", reason="llguidance is not installed; pip install -e '.[hf]'")
    compiled = llguidance.LLMatcher.grammar_from_regex(SMALL.regex())
    for text in ACCEPTED:
        assert llguidance_accepts(compiled, text), text
    for text in REJECTED:
        assert not llguidance_accepts(compiled, text), text


def test_the_gbnf_agrees_in_llama_cpp() -> None:
    llm = vocab_model(str(gguf_or_skip()))
    for text in ACCEPTED:
        assert llama_cpp_accepts(llm, SMALL.gbnf(), text), text
    for text in REJECTED:
        assert not llama_cpp_accepts(llm, SMALL.gbnf(), text), text


def test_escapes_round_trip_through_both_renderings() -> None:
    tricky = '\\.^$|?*+()[]{}-"\t'
    grammar = TextGrammar(
        name="escapes/1",
        rules=(Rule(name="root", body=Seq(items=(Literal(text=tricky), Chars(excluded=tricky, max_count=2)))),),
    )
    assert grammar.matches(tricky + "ab") and grammar.matches(tricky + "中")
    assert not grammar.matches(tricky + "a-") and not grammar.matches(tricky)
    llguidance = pytest.importorskip("llguidance")
    compiled = llguidance.LLMatcher.grammar_from_regex(grammar.regex())
    assert llguidance_accepts(compiled, tricky + "ab") and not llguidance_accepts(compiled, tricky + "a-")
    llm = vocab_model(str(gguf_or_skip()))
    assert llama_cpp_accepts(llm, grammar.gbnf(), tricky + "ab")
    assert not llama_cpp_accepts(llm, grammar.gbnf(), tricky + "a-")


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        ((Rule(name="start", body=Literal(text="a")),), "rule named root"),
        ((Rule(name="root", body=Ref(name="missing")),), "unknown rule"),
        ((Rule(name="root", body=Seq(items=(Literal(text="a"), Ref(name="root")))),), "refers to itself"),
        (
            (Rule(name="root", body=Ref(name="a")), Rule(name="a", body=Alt(items=(Ref(name="root"),)))),
            "refers to itself",
        ),
        ((Rule(name="root", body=Literal(text="a")), Rule(name="root", body=Literal(text="b"))), "unique"),
        ((Rule(name="root_rule", body=Literal(text="a")),), "rule names"),
    ],
)
def test_ill_formed_grammars_are_refused(rules: tuple[Rule, ...], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        TextGrammar(name="bad", rules=rules)


def test_bounds_are_checked() -> None:
    with pytest.raises(ValidationError, match="max_count"):
        Chars(excluded="a", min_count=3, max_count=2)
    with pytest.raises(ValidationError, match="max_count"):
        Repeat(item=Literal(text="a"), min_count=2, max_count=1)


def test_a_grammar_is_data_round_trip_and_hashable() -> None:
    again = TextGrammar.model_validate_json(SMALL.model_dump_json())
    assert again == SMALL and hash(again) == hash(SMALL)
    assert {again: 1}[SMALL] == 1


def test_a_grammar_excludes_the_other_constraints() -> None:
    with pytest.raises(ValidationError, match="cannot be combined"):
        StructuredOutput(grammar=SMALL, regex="a")
    assert StructuredOutput(grammar=SMALL).grammar == SMALL
