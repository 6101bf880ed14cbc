"""Every command's ``--help`` and every numeric option's bad values, across the whole CLI.

The command tree is walked (:func:`verimod.cli.command_tree.walk`), so a command added later is
covered without editing this file: its help must render (exit 0, no traceback), show the
default of every option that has one, and give an example; every int/float parameter must
refuse values of the wrong type, NaN and infinities and values outside its declared range with
one line on stderr and exit code 2.
"""

from __future__ import annotations

import inspect
import re

import pytest
from typer.testing import CliRunner

from verimod.cli.app import app, build_command
from verimod.cli.command_tree import NAMED_MINIMUMS, safe_markup, walk

ROOT = build_command()
TREE = list(walk(ROOT))
COMMANDS = [(path, command) for path, command in TREE if path]
LEAVES = [(path, command) for path, command in COMMANDS if not hasattr(command, "commands")]


@pytest.fixture(autouse=True)
def _one_command_tree(monkeypatch):
    """Invoke the one prepared tree instead of building a new one per call (as main() does,
    only once)."""
    monkeypatch.setattr("typer.testing._get_command", lambda _app: ROOT)


def _run(*args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200", "TERMINAL_WIDTH": "200"})


def test_the_tree_is_walked_whole():
    names = {" ".join(path) for path, _ in COMMANDS}
    assert {"eval", "data dedup", "data split", "safeqa judge", "train sft", "runs compare"} <= names
    assert len(LEAVES) > 40


def test_every_listed_command_has_a_joined_first_paragraph() -> None:
    seen = 0
    for path, command in TREE:
        if not path or not command.help:
            continue
        seen += 1
        first = inspect.cleandoc(command.help).split("\n\n")[0]
        assert "\n" not in command.short_help, path
        assert command.short_help.split() == first.split(), path
    assert seen > 30  # every protocol group is walked, not only the root


def _option_blocks(output: str) -> dict[str, str]:
    """The help text of each option row of a rendered Rich help, by its first name."""
    blocks: dict[str, str] = {}
    current = None
    for line in output.splitlines():
        # an option row starts at the panel's edge ("│ --name"; "│    --name" and "│ *  --name" in
        # a panel with a required option); a wrapped help line that happens to begin with an
        # option name is indented much further
        row = re.match(r"^│ {1,4}(?:\* +)?(--?[\w-]+)", line)
        if row:
            current = row.group(1)
            blocks[current] = ""
        if current is not None:
            blocks[current] += " " + line.strip("│ ")
        if line.startswith("╰"):
            current = None
    return blocks


def _shows_a_default(param) -> bool:
    """Whether Typer must show ``[default: …]`` for this option: it has a default other than
    None / an empty list, and is not a plain on/off flag that is off unless given."""
    if getattr(param, "param_type_name", "") != "option" or param.show_default is False or param.hidden:
        return False
    if param.default is None or param.default in ((), []):
        return False
    plain_flag = param.is_flag and not param.secondary_opts
    return not (plain_flag and param.default is False)


@pytest.mark.parametrize("path", [path for path, _ in COMMANDS], ids=lambda p: " ".join(p))
def test_every_help_renders_with_defaults_and_an_example(path):
    command = dict(COMMANDS)[path]
    result = _run(*path, "--help")
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output and "MarkupError" not in result.output
    output = result.output
    if not hasattr(command, "commands"):
        assert "Example" in output, f"{' '.join(path)}: no example in --help"
    blocks = _option_blocks(output)
    for param in command.params:
        if getattr(param, "param_type_name", "") != "option" or param.hidden:
            continue
        name = param.opts[0]
        block = " ".join(blocks.get(name, "").split())
        assert name in blocks, f"{' '.join(path)}: {name} is not listed"
        if _shows_a_default(param):
            assert "[default: " in block, f"{' '.join(path)} {name}: no [default: …] in {block!r}"
        if param.help and "[default" in inspect.cleandoc(param.help):
            assert "[default" in block, f"{' '.join(path)} {name}: its written [default …] was lost"


def test_help_markup_escaping_keeps_styles_and_shows_everything_else():
    assert safe_markup("Remove emoji [default: keep].") == "Remove emoji \\[default: keep]."
    assert safe_markup("pip install verimod[data]") == "pip install verimod\\[data]"
    assert safe_markup("[bold]x[/bold] and [/bold]") == "[bold]x[/bold] and \\[/bold]"
    assert safe_markup("[哈哈] stays, \\[escaped] stays") == "[哈哈] stays, \\[escaped] stays"
    for text in ("a [default: 1]", "[bold]x[/bold] [/bold] [data]", "[i]a[/i] [哈哈]"):
        assert safe_markup(safe_markup(text)) == safe_markup(text)  # preparing twice changes nothing


# ---------------------------------------------------------------- numeric options: bad values


def _numeric_params():
    for path, command in LEAVES:
        for param in command.params:
            descriptor = getattr(param, "type_descriptor", None)
            annotation = getattr(descriptor, "annotation", None)
            if annotation in (int, float) and getattr(param, "param_type_name", "") == "option":
                yield path, param, annotation


def _bad_values(param, annotation) -> list[str]:
    """Values every int/float parameter must refuse: the wrong type, NaN and infinities for
    floats, and one step past each bound its declaration gives."""
    values = ["abc", ""]
    values += ["nan", "inf", "-inf", "1e999"] if annotation is float else ["1.5", "1e3", "9" * 30 + "x"]
    info = param.type_descriptor.parameter_info
    step = 1 if annotation is int else 1e-6
    if info.min is not None:
        values.append(repr(annotation(info.min - step)))
    elif annotation is int and param.name in NAMED_MINIMUMS:  # the CLI-wide convention
        values.append(repr(NAMED_MINIMUMS[param.name] - 1))
    if info.max is not None:
        values.append(repr(annotation(info.max + step)))
    return values


BAD_NUMBERS = [
    (path, param.opts[0], value)
    for path, param, annotation in _numeric_params()
    for value in _bad_values(param, annotation)
]


def test_the_table_covers_every_numeric_option():
    options = {(path, name) for path, name, _ in BAD_NUMBERS}
    assert len(options) > 90
    assert (("data", "dedup"), "--threshold") in options and (("eval",), "--temperature") in options
    assert (("data", "dedup"), "--threshold", "100.000001") in BAD_NUMBERS  # from the declared range
    assert (("data", "dedup"), "--threshold", "-1e-06") in BAD_NUMBERS
    assert (("data", "agree"), "--bootstrap", "-1") in BAD_NUMBERS
    for convention in ((("report",), "--seed", "-1"), (("diagnose", "intervals"), "--bootstrap", "-1")):
        assert convention in BAD_NUMBERS  # these ended in a numpy traceback


@pytest.mark.parametrize(
    ("path", "option", "value"), BAD_NUMBERS, ids=lambda x: " ".join(x) if isinstance(x, tuple) else str(x)
)
def test_every_numeric_option_refuses_bad_values_in_one_line(path, option, value):
    result = _run(*path, f"{option}={value}")
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and option in lines[0], result.stderr
