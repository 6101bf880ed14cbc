"""YAML configuration files read into pydantic models, with one-line errors naming file, line
and field.

:func:`load_yaml_model` parses with PyYAML's safe loader (no tags that build objects: YAML stays
data), keeps the line of every key and list item, refuses duplicate keys (PyYAML would silently
keep the last), validates with the model and reports the first problem as
``FILE:LINE: field 'models[1].base_url': must be a list, got a number`` — the line of the
offending value, or of its nearest parent present in the file (a missing field is reported at its
parent mapping); an unknown key is reported before a missing one (it is usually its typo). YAML
syntax errors name their line too.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from verimod.core.errors import InputError, Problem, shown
from verimod.core.validation import validation_problems

Model = TypeVar("Model", bound=BaseModel)
_FIELD = re.compile(r"^[a-z_][a-z0-9_]*$")
_TYPE_TAGS = frozenset({"str", "int", "float", "bool", "none", "list", "dict"})


def _check_duplicates(node: yaml.Node, path: str) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key, value in node.value:
            name = key.value if isinstance(key, yaml.ScalarNode) else None
            if name is not None and name in seen:
                line = key.start_mark.line + 1
                raise InputError.at(path, line, str(name), f"duplicate key (first on line {seen[name]})")
            if name is not None:
                seen[name] = key.start_mark.line + 1
            _check_duplicates(value, path)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _check_duplicates(item, path)


def _line_of(node: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """The line of the value at ``loc`` (or of its deepest ancestor present in the file)."""
    if node is None:
        return None
    line = node.start_mark.line + 1
    for part in loc:
        child: yaml.Node | None = None
        if isinstance(node, yaml.MappingNode) and isinstance(part, str):
            child = next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == part), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            child = node.value[part]
        if child is None:
            continue  # a union member's name or a missing key: stay on the parent
        node = child
        line = node.start_mark.line + 1
    return line


def _field_name(loc: tuple[Any, ...]) -> str:
    """``models[1].base_url`` from ``('models', 1, 'base_url')``, leaving out the names pydantic
    gives union members (``str``, ``list[str]``, ``function-after[…]``, class names)."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif _FIELD.match(str(part)) and str(part) not in _TYPE_TAGS:
            text += f".{part}" if text else str(part)
    return text


def load_yaml_model(path: str | Path, model: type[Model]) -> Model:
    """Read and validate a YAML file (see the module docstring); raises :class:`InputError`."""
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError.at(name, None, None, "file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError.at(name, None, None, f"cannot read the file: {exc}") from None
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        if root is not None:
            _check_duplicates(root, name)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = None if mark is None else mark.line + 1
        raise InputError.at(name, line, None, f"not valid YAML: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise InputError.at(name, None, None, f"not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise InputError.at(name, 1, None, f"must be a YAML mapping of settings, got {shown(data)}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        # an unknown key usually explains a missing one beside it (a typo): report it first
        index = next((i for i, e in enumerate(errors) if e["type"] == "extra_forbidden"), 0)
        loc = tuple(errors[index]["loc"])
        problem = validation_problems(exc, model, name, 1)[index]
        raise InputError(Problem(name, _line_of(root, loc), _field_name(loc) or None, problem.message)) from None
