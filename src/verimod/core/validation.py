"""Turn pydantic validation errors into one-line :class:`Problem` reports."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from verimod.core.errors import Problem, did_you_mean, shown

_TYPE_NAMES = {
    "string_type": "a string",
    "dict_type": "an object",
    "list_type": "a list",
    "int_type": "an integer",
    "float_type": "a number",
    "bool_type": "true or false",
}


def _json_type(value: Any) -> str:
    """The JSON name of a decoded value's type."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return {int: "a number", float: "a number", str: "a string", list: "a list", dict: "an object"}.get(
        type(value), type(value).__name__
    )


def _message(error: Any, allowed_fields: list[str]) -> str:
    kind = error["type"]
    value = error.get("input")
    if kind == "missing":
        return "missing required field"
    if kind == "extra_forbidden":
        return f"unknown field{did_you_mean(str(error['loc'][-1]), allowed_fields)}"
    if kind == "literal_error":
        expected = error.get("ctx", {}).get("expected", "")
        choices = [part.strip().strip("'") for part in expected.replace(" or ", ", ").split(",")]
        hint = did_you_mean(str(value), choices) if isinstance(value, str) else ""
        return f"value {shown(value)} is not one of {', '.join(choices)}{hint}"
    if kind in _TYPE_NAMES:
        return f"must be {_TYPE_NAMES[kind]}, got {_json_type(value)}"
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "value_error":
        return str(error["msg"]).removeprefix("Value error, ")
    return f"{error['msg']} (got {shown(value)})"


def validation_problems(exc: ValidationError, model: type[BaseModel], path: str, line: int) -> list[Problem]:
    """One :class:`Problem` per pydantic error, naming the field (dotted location)."""
    allowed = list(model.model_fields)
    problems = []
    for error in exc.errors():
        loc = error["loc"]
        # union members add their type name to the location (e.g. ('context', 'str')): drop it
        names = [str(part) for part in loc if not (isinstance(part, str) and part in ("str", "list[str]"))]
        field = ".".join(names) or None
        problems.append(Problem(path, line, field, _message(error, allowed)))
    return problems
