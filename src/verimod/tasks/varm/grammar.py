"""The VARM anchor grammar: what ``--constrain anchors`` lets a model write.

One definition (:func:`anchor_grammar`, a :class:`~verimod.models.grammar.TextGrammar`) that
every backend renders its own way (llama.cpp GBNF for ``gguf:``, a precompiled token mask for
``hf:``, the server's structured-output field for ``openai:``). A text is in the language when
it is:

    free text, [T: target], free text, [TY: v], free text, [T: v], free text, [S: v],
    free text, [L: v], free text, [C: v], free text

- the six anchors in the fixed order, each exactly once, written canonically (``[TAG: value]``:
  ASCII brackets and colon, one space);
- the five closed fields restricted to their admissible canonical values
  (:data:`~verimod.tasks.varm.codebook.VOCABULARY`);
- the target 1–:data:`TARGET_CHARS` characters without brackets or line breaks, not starting or
  ending with whitespace (``no_clear_target`` is one such text; so are its aliases such as
  ``无``, which parse as ``no_clear_target`` but fail Format);
- free text: at most :data:`SEGMENT_CHARS` units per stretch between anchors, a unit being one
  character other than a bracket (``[ ] ［ ］ 【 】``) or a line break, or one bracketed aside
  ``【…】`` of at most :data:`ASIDE_CHARS` characters without brackets, colons or line breaks (as
  in quotes of the commented text: ``八嘎【笨蛋】``); so no anchor can appear outside its slot, and
  the length is bounded (7 × 120 units of text plus the anchors).

Every reference rationale of the bundled sets (starter, varm-open) is in the language (tested).
The codebook's cross-field constraints (``non_harmful ⇔ non_attack`` …) are deliberately *not*
enforced: the grammar fixes the form, the model still makes every decision, so Format keeps
measuring record consistency. The scorer is unchanged: the record is still parsed from the text.
"""

from __future__ import annotations

from functools import cache
from typing import Final, Literal

from verimod.models.base import StructuredOutput
from verimod.models.grammar import Alt, Chars, OneOf, Ref, Repeat, Rule, Seq, TextGrammar
from verimod.models.grammar import Literal as Text
from verimod.tasks.varm.codebook import CANONICAL_TAGS, FIELDS, VOCABULARY

GRAMMAR_NAME: Final = "varm-anchors/1"
#: ``--constrain`` values: no constraint (the default), or the anchor grammar.
CONSTRAIN_MODES: Final = ("none", "anchors")
ConstrainMode = Literal["none", "anchors"]

#: free-text units between two anchors (and before the first, after the last) at most
SEGMENT_CHARS: Final = 120
#: characters of the target at most
TARGET_CHARS: Final = 24
#: characters inside one bracketed aside ``【…】`` at most
ASIDE_CHARS: Final = 30

_BRACKETS: Final = "[]［］【】"
#: what ``str.splitlines`` breaks at
_LINE_BREAKS: Final = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
#: what ``str.strip`` removes (the parser strips anchor values)
_WHITESPACE: Final = "".join(chr(c) for c in range(0x3001) if chr(c).isspace())


def _anchor(field: str) -> Seq:
    tag = CANONICAL_TAGS[field]
    value = Ref(name="target") if field == "target" else OneOf(options=VOCABULARY[field])
    return Seq(items=(Text(text=f"[{tag}: "), value, Text(text="]")))


@cache
def anchor_grammar() -> TextGrammar:
    """The anchor grammar (see the module docstring); built once."""
    plain = _BRACKETS + _LINE_BREAKS
    edge = plain + _WHITESPACE
    items: list[Ref | Seq] = [Ref(name="text")]
    for field in FIELDS:
        items += [_anchor(field), Ref(name="text")]
    return TextGrammar(
        name=GRAMMAR_NAME,
        rules=(
            Rule(name="root", body=Seq(items=tuple(items))),
            Rule(name="text", body=Repeat(item=Ref(name="unit"), min_count=0, max_count=SEGMENT_CHARS)),
            Rule(
                name="unit",
                body=_alt(
                    Chars(excluded=plain),
                    Seq(
                        items=(
                            Text(text="【"),
                            Chars(excluded=plain + ":：", min_count=0, max_count=ASIDE_CHARS),
                            Text(text="】"),
                        )
                    ),
                ),
            ),
            Rule(
                name="target",
                body=Seq(
                    items=(
                        Chars(excluded=edge),
                        Repeat(
                            item=Seq(
                                items=(
                                    Chars(excluded=plain, min_count=0, max_count=TARGET_CHARS - 2),
                                    Chars(excluded=edge),
                                )
                            ),
                            min_count=0,
                            max_count=1,
                        ),
                    )
                ),
            ),
        ),
    )


def _alt(*items: Chars | Seq) -> Alt:
    return Alt(items=items)


def structured_output(mode: str) -> StructuredOutput | None:
    """The structured-output request of a ``--constrain`` mode (None for ``none``); ValueError
    for an unknown mode."""
    if mode == "none":
        return None
    if mode == "anchors":
        return StructuredOutput(grammar=anchor_grammar())
    raise ValueError(f"unknown --constrain mode {mode!r}: choose one of {', '.join(CONSTRAIN_MODES)}")


def constrain_mode(structured: StructuredOutput | None) -> ConstrainMode:
    """The ``--constrain`` mode a structured-output request stands for (``none`` for anything
    that is not the anchor grammar)."""
    grammar = None if structured is None else structured.grammar
    return "anchors" if grammar is not None and grammar.name == GRAMMAR_NAME else "none"
