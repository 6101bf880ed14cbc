"""Checking texts against a grammar in the engines that enforce it, not only in Python ``re``.

- :func:`llguidance_accepts` feeds a text byte by byte to llguidance (the token-mask engine of
  the ``hf`` backend) through a byte-level tokenizer (one token per byte): accepted when every
  byte is allowed in turn and the end-of-sequence token is allowed at the end.
- :func:`llama_cpp_accepts` feeds a text, tokenised by a real model's vocabulary, through
  llama.cpp's own grammar sampler (the ``gguf`` backend's): each token is offered alone and must
  keep a finite logit, then end-of-sequence must too.

Both skip the calling test when their package is missing.
"""

from __future__ import annotations

import ctypes
from functools import cache
from typing import Any, ClassVar

import pytest

EOS = 256  # the byte tokenizer's end-of-sequence token


class _ByteTokens:
    """The minimal tokenizer llguidance's ``TokenizerWrapper`` reads: 256 byte tokens and EOS."""

    eos_token_id = EOS
    bos_token_id = None
    tokens: ClassVar[list[bytes]] = [*(bytes([b]) for b in range(256)), b"\xff<eos>"]
    special_token_ids: ClassVar[list[int]] = [EOS]

    def __call__(self, text: bytes | str) -> list[int]:
        return list(text.encode("utf-8") if isinstance(text, str) else text)


@cache
def byte_tokenizer() -> Any:
    """An llguidance tokenizer with one token per byte (skips without llguidance)."""
    llguidance = pytest.importorskip("llguidance", reason="llguidance is not installed; pip install -e '.[hf]'")
    return llguidance.LLTokenizer(llguidance.TokenizerWrapper(_ByteTokens()))


def llguidance_accepts(grammar: str, text: str) -> bool:
    """True when llguidance's matcher for ``grammar`` (llguidance grammar text) takes ``text``
    whole and may end there."""
    llguidance = pytest.importorskip("llguidance")
    matcher = llguidance.LLMatcher(byte_tokenizer(), grammar, log_level=0)
    for byte in text.encode("utf-8"):
        if not matcher.consume_token(byte):
            return False
    return bool(matcher.is_accepting()) and bool(matcher.consume_token(EOS))


def llama_cpp_accepts(llm: Any, gbnf: str, text: str) -> bool:
    """True when llama.cpp's grammar sampler for ``gbnf`` allows ``text`` (tokenised by ``llm``,
    a ``llama_cpp.Llama``) token by token and then end-of-sequence. Fails the test when llama.cpp
    cannot parse the grammar."""
    llama_cpp = pytest.importorskip("llama_cpp")
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    sampler = llama_cpp.llama_sampler_init_grammar(vocab, gbnf.encode("utf-8"), b"root")
    assert sampler, "llama.cpp cannot parse the GBNF"
    try:
        tokens = [*llm.tokenize(text.encode("utf-8"), add_bos=False, special=False), llm.token_eos()]
        for token in tokens:
            data = (llama_cpp.llama_token_data * 1)(llama_cpp.llama_token_data(token, 0.0, 0.0))
            array = llama_cpp.llama_token_data_array(data, 1, -1, False)
            llama_cpp.llama_sampler_apply(sampler, ctypes.byref(array))
            if data[0].logit == float("-inf"):
                return False
            llama_cpp.llama_sampler_accept(sampler, token)
        return True
    finally:
        llama_cpp.llama_sampler_free(sampler)


@cache
def vocab_model(path: str) -> Any:
    """A ``llama_cpp.Llama`` holding only the vocabulary of the GGUF file at ``path`` (fast)."""
    llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed; pip install -e '.[local]'")
    return llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
