"""Reading VARM reference and prediction files, with one-line errors naming file, line, field.

- :func:`load_references` stops at the first problem (raises :class:`InputError`): required
  fields, admissible values, duplicate ids. Codebook consistency and reference rationales are
  checked by :func:`reference_problems` (``verimod validate``), which reports every problem.
- :func:`load_outputs` reads ``{"id", "output"}`` lines: an id that is not a reference id, or an
  id seen twice, is an error naming its line. References without a prediction are the scorer's
  business (scored as missing), not an error.

A reference *source* is a bundled set's name (``varm-open``, ``starter``), a JSONL file, or any
table :mod:`verimod.data.hf` reads — ``hf:NAME[:SPLIT]``
(a Hugging Face data set, hub or local), a local ``datasets`` folder, a Parquet file — resolved
here, once, for every command that reads references. Problems in a table name its source and
row (``hf:org/name:test:12: field 'label': …``) as they name a file and line.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from verimod.core.errors import InputError, MissingExtraError, Problem, shown
from verimod.core.validation import validation_problems
from verimod.data.hf import is_table_source, table_rows
from verimod.data.jsonl import read_jsonl, scan_jsonl
from verimod.tasks.varm.bundled import resolve_source
from verimod.tasks.varm.codebook import CONSTRAINTS, FIELDS, codebook_violations
from verimod.tasks.varm.dataset_checks import SplitChecks, split_problems
from verimod.tasks.varm.parser import parse_rationale
from verimod.tasks.varm.schema import VarmPrediction, VarmReference

_CONSTRAINT_FIELD = {"label_category": "category", "no_clear_target": "target", "harmful_stance": "stance"}


def _reference_at(
    obj: dict[str, Any], name: str, line: int, first_line: dict[str, int]
) -> tuple[VarmReference | None, list[Problem]]:
    """Validate one reference object (fields, values, duplicate id); records its id's line.

    Returns the reference (None when its fields are invalid) and the problems found; a
    duplicate id is a problem but still returns the reference, so its other checks can run.
    """
    try:
        reference = VarmReference.model_validate(obj)
    except ValidationError as exc:
        ref_id = obj.get("id")
        if isinstance(ref_id, str | int) and not isinstance(ref_id, bool):
            first_line.setdefault(str(ref_id), line)
        return None, validation_problems(exc, VarmReference, name, line)
    if reference.id in first_line:
        message = f"duplicate id {shown(reference.id)} (first on line {first_line[reference.id]})"
        return reference, [Problem(name, line, "id", message)]
    first_line[reference.id] = line
    return reference, []


def reference_objects(
    source: str | Path, encoding: str | None = None
) -> Iterator[tuple[str, int, dict[str, Any] | InputError]]:
    """``(source name, line or row, object)`` for every item of a reference source (see the
    module docstring); a JSONL line that is not a JSON object is yielded as its
    :class:`InputError`. An unreadable source raises. A bundled set's name (``varm-open``,
    ``starter``: :mod:`verimod.tasks.varm.bundled`) reads the bundled file."""
    source = resolve_source(source)
    if is_table_source(source):
        yield from table_rows(source)
        return
    name = str(source)
    for line, obj in scan_jsonl(source, encoding):
        yield name, line, obj


def load_references(path: str | Path, encoding: str | None = None) -> list[VarmReference]:
    """All reference items of a source (JSONL file, ``hf:`` data set, folder, Parquet file);
    raises :class:`InputError` at the first bad item."""
    return list(iter_references(path, encoding))


def iter_references(path: str | Path, encoding: str | None = None) -> Iterator[VarmReference]:
    """The reference items of a source one at a time, checked as :func:`load_references`
    checks them (only the ids seen are kept, to find duplicates)."""
    first_line: dict[str, int] = {}
    for name, line, obj in reference_objects(path, encoding):
        if isinstance(obj, InputError):
            raise obj
        reference, problems = _reference_at(obj, name, line, first_line)
        if problems:
            raise InputError(problems[0])
        assert reference is not None
        yield reference
    if not first_line:
        raise InputError.at(str(path), None, None, "no reference items (the file is empty)")


def _rationale_problems(reference: VarmReference, path: str, line: int) -> list[Problem]:
    assert reference.cot is not None
    result = parse_rationale(reference.cot)
    if result.values is None:
        return [
            Problem(
                path,
                line,
                "cot",
                f"reference rationale does not parse: {result.error_class}: {result.detail}",
            )
        ]
    problems = []
    if not result.format_ok:
        reasons = list(result.flags) + [f"codebook:{v}" for v in result.violations]
        problems.append(Problem(path, line, "cot", f"reference rationale fails Format ({', '.join(reasons)})"))
    for field, value in zip(FIELDS, result.values, strict=True):
        expected = getattr(reference, field)
        if value != expected:
            problems.append(
                Problem(
                    path,
                    line,
                    "cot",
                    f"anchor {field} = {shown(value)} but the record says {shown(expected)}",
                )
            )
    return problems


def _item_problems(
    obj: dict[str, Any], name: str, line: int, first_line: dict[str, int], require_complete: bool
) -> tuple[VarmReference | None, list[Problem]]:
    """The reference (None if its fields are invalid) and every problem of one reference
    object: fields, values, duplicate id, completeness, codebook, rationale."""
    reference, problems = _reference_at(obj, name, line, first_line)
    if reference is None:
        return None, problems
    problems = list(problems)
    if require_complete:
        for field in FIELDS:
            if getattr(reference, field) is None:
                problems.append(
                    Problem(name, line, field, "missing required field (--partial accepts partial references)")
                )
    for constraint in codebook_violations(reference):
        problems.append(
            Problem(name, line, _CONSTRAINT_FIELD[constraint], f"breaks the codebook: {CONSTRAINTS[constraint]}")
        )
    if reference.cot is not None:
        problems.extend(_rationale_problems(reference, name, line))
    return reference, problems


def record_problems(obj: dict[str, Any], require_complete: bool = True) -> list[Problem]:
    """Every problem ``verimod validate`` reports for one reference object on its own (fields,
    values, completeness, codebook constraints, the rationale's anchors), by field and message
    (path and line are placeholders)."""
    return _item_problems(obj, "record", 1, {}, require_complete)[1]


def reference_problems(
    path: str | Path,
    encoding: str | None = None,
    require_complete: bool = True,
    splits: SplitChecks | None = None,
) -> tuple[int, list[Problem]]:
    """Check a reference file completely: ``(number of items read, every problem found)``.

    Checks: JSON, required fields (all six record fields unless ``require_complete`` is False),
    admissible values, duplicate ids, codebook constraints (between the fields present) and,
    when ``cot`` is present, that it passes Format and its anchors equal the record's fields.
    With ``splits``, the data-set checks of :func:`split_problems` run too (split leakage and
    label/category drift). Bad encoding or an unreadable file is reported as the last problem.
    """
    name = str(path)
    valid: list[tuple[int, VarmReference]] = []
    problems: list[Problem] = []
    count = 0
    first_line: dict[str, int] = {}
    try:
        for source, line, obj in reference_objects(path, encoding):
            if isinstance(obj, InputError):
                problems.append(obj.problem)
                continue
            count += 1
            reference, found = _item_problems(obj, source, line, first_line, require_complete)
            problems.extend(found)
            if reference is not None:
                valid.append((line, reference))
    except InputError as exc:  # unreadable file or encoding: nothing further can be checked
        problems.append(exc.problem)
        return count, problems
    except MissingExtraError as exc:  # a table source whose reader is not installed
        problems.append(Problem(name, None, None, str(exc)))
        return count, problems
    if splits is not None and valid:
        problems.extend(split_problems(name, valid, splits))
    if count == 0 and not problems:
        problems.append(Problem(name, None, None, "no reference items (the file is empty)"))
    return count, problems


def prediction_at(obj: dict[str, Any], name: str, line: int) -> VarmPrediction:
    """One validated prediction object; raises :class:`InputError` naming the field."""
    try:
        return VarmPrediction.model_validate(obj)
    except ValidationError as exc:
        raise InputError(validation_problems(exc, VarmPrediction, name, line)[0]) from None


def load_outputs(
    path: str | Path,
    reference_ids: Collection[str],
    encoding: str | None = None,
    reference_path: str = "the references",
) -> dict[str, str]:
    """``{id: output}`` from a prediction JSONL file; unknown or duplicate ids are errors."""
    name = str(path)
    known = set(reference_ids)
    outputs: dict[str, str] = {}
    first_line: dict[str, int] = {}
    for line, obj in read_jsonl(path, encoding):
        prediction = prediction_at(obj, name, line)
        if prediction.id in first_line:
            message = f"duplicate id {shown(prediction.id)} (first on line {first_line[prediction.id]})"
            raise InputError.at(name, line, "id", message)
        if prediction.id not in known:
            raise InputError.at(name, line, "id", f"unknown id {shown(prediction.id)}: not in {reference_path}")
        first_line[prediction.id] = line
        outputs[prediction.id] = prediction.output
    return outputs
