"""Blinded judge passes of the rationale audit.

Each rationale is judged ``passes`` times (default 3) on the three dimensions with the rubric
and output contract of ``resources/prompts/audit_judge.json``: the comment (and context), the
rationale fenced as data, and the record the parser recovered from it. The judge never sees
which system wrote the rationale (:class:`~verimod.tasks.varm.audit_checks.AuditItem.system`
is not rendered; sample ids are item ids, which the HTTP backends do not send).

**Passes.** Pass p uses judge ``judges[p mod len(judges)]`` — one judge asked three times, or
three judges once each — with generation seed ``seed + p`` (temperature default 0.7, so one
judge's passes are not copies of one another). The items of a pass are requested in their own
seeded order (``numpy.random.default_rng([seed, p]).permutation``) so no item is always judged
first or last. Sample ids: ``<item id>#p<p>``.

**Output contract.** One JSON object ``{dimension: {"verdict": "pass"|"fail", "reason": str}}``
for the three dimensions, read from the answer's first ``{`` to its last ``}`` (a code fence
around it is fine). A dimension whose verdict is missing or not pass/fail (case-insensitive;
是/否 and 合格/不合格 accepted) is ``invalid``; an answer without a JSON object makes all three
``invalid``; a failed request is ``invalid`` with its error. Nothing is dropped.

**Majority** (:func:`majority`): per dimension, over the valid votes: ``pass`` or ``fail`` when
it has more than half of *all* passes, otherwise ``undecided``; ``unanimous`` when every pass
gave a valid vote and they agree. **Agreement** (:func:`pass_agreement`): Fleiss' κ per
dimension over the items whose passes are all valid, with the share of unanimous items.

Judgement files are JSONL, one line per (item, pass), appended as answers arrive; a second run
asks only the (item, pass) pairs without an answer.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from string import Template
from typing import Any, Final, Literal

from verimod.core.cache import ResponseCache
from verimod.core.engine import EngineConfig, EngineStats, Outcome, run_requests
from verimod.core.errors import InputError
from verimod.core.resumable import AppendLog, finished_keys
from verimod.data.jsonl import read_jsonl
from verimod.models.base import ChatMessage, GenerationParams, ModelBackend, ModelRequest
from verimod.resources import resource_path
from verimod.stats import RatingTable, fleiss_kappa
from verimod.tasks.varm.audit_checks import DIMENSIONS, AuditItem
from verimod.tasks.varm.codebook import FIELDS
from verimod.tasks.varm.parser import parse_rationale

Vote = Literal["pass", "fail", "invalid"]
_PASS_WORDS: Final = {"pass", "是", "合格", "通过", "yes"}
_FAIL_WORDS: Final = {"fail", "否", "不合格", "不通过", "no"}


@cache
def judge_prompt() -> dict[str, str]:
    """The bundled rubric and output contract."""
    data: dict[str, str] = json.loads(resource_path("prompts/audit_judge.json").read_text(encoding="utf-8"))
    return data


def judge_messages(item: AuditItem) -> tuple[ChatMessage, ...]:
    """The blinded judge prompt of one item (never names ``item.system``)."""
    prompt = judge_prompt()
    parsed = parse_rationale(item.rationale or "")
    record = (
        json.dumps(dict(zip(FIELDS, parsed.values, strict=True)), ensure_ascii=False)
        if parsed.values is not None
        else prompt["no_record"]
    )
    context = Template(prompt["context"]).safe_substitute(context=item.context) if item.context else ""
    user = Template(prompt["user"]).safe_substitute(
        text=item.text, context=context, rationale=item.rationale or "", record=record
    )
    return (ChatMessage(role="system", content=prompt["system"]), ChatMessage(role="user", content=user))


def parse_judgement(text: str | None) -> tuple[dict[str, Vote], dict[str, str]]:
    """Votes and reasons per dimension of one judge answer (module docstring)."""
    invalid: dict[str, Vote] = dict.fromkeys(DIMENSIONS, "invalid")
    if not text:
        return invalid, {}
    start, end = text.find("{"), text.rfind("}")
    try:
        obj = json.loads(text[start : end + 1]) if 0 <= start < end else None
    except json.JSONDecodeError:
        obj = None
    if not isinstance(obj, dict):
        return invalid, {}
    votes: dict[str, Vote] = {}
    reasons: dict[str, str] = {}
    for dimension in DIMENSIONS:
        entry = obj.get(dimension)
        verdict = entry.get("verdict") if isinstance(entry, dict) else entry
        word = verdict.strip().casefold() if isinstance(verdict, str) else None
        votes[dimension] = "pass" if word in _PASS_WORDS else "fail" if word in _FAIL_WORDS else "invalid"
        if isinstance(entry, dict) and isinstance(entry.get("reason"), str):
            reasons[dimension] = entry["reason"]
    return votes, reasons


def _key(row: Mapping[str, Any]) -> str:
    return f"{row.get('item_id')}#p{row.get('pass')}"


async def run_judge_passes(
    items: Sequence[AuditItem],
    judges: Sequence[ModelBackend],
    out: str | Path,
    *,
    passes: int = 3,
    seed: int = 0,
    temperature: float = 0.7,
    max_tokens: int = 400,
    engine: EngineConfig | None = None,
    cache: ResponseCache | None = None,
) -> list[EngineStats]:
    """Ask for every (item, pass) not yet answered in ``out`` (module docstring); one
    :class:`EngineStats` per pass."""
    import numpy as np

    if passes < 1 or not judges:
        raise ValueError("need at least one pass and one judge")
    done = finished_keys(out, _key)
    version = judge_prompt()["version"]
    results = []
    with AppendLog(out) as log:
        for index in range(passes):
            judge = judges[index % len(judges)]
            params = GenerationParams(temperature=temperature, max_tokens=max_tokens, seed=seed + index)
            order = np.random.default_rng([seed, index]).permutation(len(items)).tolist()
            requests = [
                ModelRequest(sample_id=f"{items[k].id}#p{index}", messages=judge_messages(items[k]), params=params)
                for k in order
                if f"{items[k].id}#p{index}" not in done
            ]

            def record(outcome: Outcome, index: int = index, judge: ModelBackend = judge) -> None:
                item_id = outcome.request.sample_id.rsplit("#p", 1)[0]
                row: dict[str, Any] = {"item_id": item_id, "pass": index, "judge": judge.spec}
                if outcome.response is None:
                    row |= {"votes": dict.fromkeys(DIMENSIONS, "invalid"), "error": str(outcome.error)}
                else:
                    votes, reasons = parse_judgement(outcome.response.text)
                    row |= {"votes": votes, "reasons": reasons, "raw": outcome.response.text}
                log.write(row)

            results.append(await run_requests(judge, requests, record, engine, cache, version))
    return results


@dataclass(frozen=True)
class JudgeLine:
    """One (item, pass) judgement read back."""

    item_id: str
    index: int
    judge: str
    votes: dict[str, Vote]
    reasons: dict[str, str]
    error: str | None = None


def load_judge_passes(path: str | Path) -> list[JudgeLine]:
    """The judgement lines of ``path`` (the last line of an (item, pass) wins); bad lines are
    input errors naming file, line and field."""
    name = str(path)
    latest: dict[tuple[str, int], JudgeLine] = {}
    for line, row in read_jsonl(path):
        item_id, index = row.get("item_id"), row.get("pass")
        if not isinstance(item_id, str) or not item_id:
            raise InputError.at(name, line, "item_id", "must be a non-empty string")
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            raise InputError.at(name, line, "pass", "must be a non-negative integer")
        votes = row.get("votes")
        if not isinstance(votes, dict) or any(votes.get(d) not in ("pass", "fail", "invalid") for d in DIMENSIONS):
            raise InputError.at(name, line, "votes", "must give pass, fail or invalid for each dimension")
        reasons = row.get("reasons") if isinstance(row.get("reasons"), dict) else {}
        error = row.get("error")
        latest[(item_id, index)] = JudgeLine(
            item_id, index, str(row.get("judge", "")), {d: votes[d] for d in DIMENSIONS}, dict(reasons or {}),
            None if error is None else str(error),
        )  # fmt: skip
    return list(latest.values())


@dataclass(frozen=True)
class MajorityVerdict:
    """The passes' verdict on one dimension of one item."""

    verdict: Literal["pass", "fail", "undecided"]
    votes: tuple[Vote, ...]
    unanimous: bool


def majority(lines: Sequence[JudgeLine], passes: int) -> dict[str, dict[str, MajorityVerdict]]:
    """Item id → dimension → :class:`MajorityVerdict` (module docstring); a pass without a line
    counts as ``invalid``."""
    by_item: dict[str, dict[int, JudgeLine]] = {}
    for line in lines:
        by_item.setdefault(line.item_id, {})[line.index] = line
    out: dict[str, dict[str, MajorityVerdict]] = {}
    for item_id, own in by_item.items():
        verdicts: dict[str, MajorityVerdict] = {}
        for dimension in DIMENSIONS:
            votes: tuple[Vote, ...] = tuple(own[p].votes[dimension] if p in own else "invalid" for p in range(passes))
            yes, no = votes.count("pass"), votes.count("fail")
            verdict: Literal["pass", "fail", "undecided"] = (
                "pass" if yes > passes / 2 else "fail" if no > passes / 2 else "undecided"
            )
            unanimous = "invalid" not in votes and len(set(votes)) == 1
            verdicts[dimension] = MajorityVerdict(verdict, votes, unanimous)
        out[item_id] = verdicts
    return out


def pass_agreement(verdicts: Mapping[str, Mapping[str, MajorityVerdict]]) -> dict[str, dict[str, float]]:
    """Per dimension: Fleiss' κ over items whose passes are all valid, their number, and the
    share of them that are unanimous."""
    out: dict[str, dict[str, float]] = {}
    for dimension in DIMENSIONS:
        complete = [v[dimension].votes for v in verdicts.values() if "invalid" not in v[dimension].votes]
        counts = [[votes.count("pass"), votes.count("fail")] for votes in complete]
        kappa = fleiss_kappa(RatingTable.from_counts(counts)) if counts and len(complete[0]) > 1 else math.nan
        unanimous = sum(1 for votes in complete if len(set(votes)) == 1)
        out[dimension] = {
            "fleiss_kappa": kappa,
            "items": float(len(complete)),
            "unanimous_share": unanimous / len(complete) if complete else math.nan,
        }
    return out
