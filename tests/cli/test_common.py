"""Shared CLI helpers: bad input and missing optional packages end as one line and exit code 2."""

from __future__ import annotations

import pytest
import typer

from verimod.cli.common import bad_input_exits
from verimod.core.errors import InputError, MissingExtraError


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (InputError.at("f.jsonl", 3, "label", "bad value"), "error: f.jsonl:3: field 'label': bad value"),
        (MissingExtraError("pinyin needs pypinyin:\npip install 'verimod[safeqa]'"), "error: pinyin needs pypinyin:"),
    ],
)
def test_one_line_and_exit_2(error: Exception, expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(typer.Exit) as exit_info, bad_input_exits():
        raise error
    assert exit_info.value.exit_code == 2
    err = capsys.readouterr().err
    assert err.startswith(expected) and err.count("\n") == 1
