"""Standpoint extraction through real ``scripted:`` backend files, the JSONL round trip, the
group taxonomy (bundled and on real data), and per-group medoid standpoints with a fake NLI."""

from __future__ import annotations

import asyncio
import csv
import hashlib
import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import write_lines
from tests.helpers.recording import Recording
from verimod.core.errors import InputError
from verimod.models.base import BackendOptions, GenerationParams
from verimod.models.registry import create_backend
from verimod.resources import resource_path
from verimod.tasks.softhate.groups import GroupTaxonomy, load_group_taxonomy
from verimod.tasks.softhate.schema import Level1Domain, TargetGroup
from verimod.tasks.softhate.scorers import BackendNliScorer, ScoringError
from verimod.tasks.softhate.seed_similarity import tfidf_embedder, unit_rows
from verimod.tasks.softhate.seeds import SeedItem
from verimod.tasks.softhate.standpoints import (
    Extraction,
    entailment_from_nli,
    extract_standpoints,
    extraction_from_record,
    extraction_to_record,
    select_group_standpoints,
    standpoint_prompt,
)

# --- extraction ----------------------------------------------------------------------------------

ANSWERS = {
    "s-good": '{"standpoint": "Velorians  ruin\\nevery town.", "target": "Velorians"}',
    "s-fenced": '```json\n{"standpoint": "Ostrans should leave.", "target": "the Ostrans"}\n```',
    "s-plain-fence": '```\n{"target": "Kethi", "standpoint": "Kethi are lazy.", "note": "extra keys are ignored"}\n```',
    "s-prose": "The standpoint is that Velorians are bad.",
    "s-missing": '{"standpoint": "Kethi are lazy."}',
    "s-empty": '{"standpoint": "", "target": ""}',
    "s-number": '{"standpoint": "Kethi are lazy.", "target": 7}',
    "s-bad-json": '{"standpoint": "x", "target": }',
    "s-wrapped": 'Here it is:\n```json\n{"standpoint": "a", "target": "b"}\n```',
}
ERRORS = {"s-failed": "overloaded"}
IDS = [*ANSWERS, "s-failed", "s-absent"]
ITEMS = [SeedItem(i, f"source text of {i}", "hate", "ishate", None) for i in IDS]


def scripted_file(tmp_path: Path) -> Path:
    rows = [{"id": k, "output": v} for k, v in ANSWERS.items()] + [{"id": k, "error": v} for k, v in ERRORS.items()]
    return write_lines(tmp_path / "extract.jsonl", rows)  # type: ignore[arg-type]


def extract(tmp_path: Path) -> list[Extraction]:
    backend = create_backend(f"scripted:{scripted_file(tmp_path)}", BackendOptions())
    return asyncio.run(extract_standpoints(ITEMS, backend))


def test_extraction_reads_json_and_keeps_every_failure(tmp_path):
    got = extract(tmp_path)
    assert [e.item_id for e in got] == IDS  # one per item, input order
    by_id = {e.item_id: e for e in got}
    assert (by_id["s-good"].standpoint, by_id["s-good"].target) == ("Velorians ruin every town.", "Velorians")
    assert (by_id["s-fenced"].standpoint, by_id["s-fenced"].target) == ("Ostrans should leave.", "the Ostrans")
    assert by_id["s-plain-fence"].target == "Kethi"
    for item_id in ("s-good", "s-fenced", "s-plain-fence"):
        e = by_id[item_id]
        assert e.error is None and e.ok and e.raw == ANSWERS[item_id]
        assert e.source_text == f"source text of {item_id}"
    expected_errors = {
        "s-prose": "no JSON object",
        "s-missing": "missing field 'target'",
        "s-empty": "field 'standpoint' is empty",
        "s-number": "field 'target' is not a string: 7",
        "s-bad-json": "invalid JSON (Expecting value at character 30)",
        "s-wrapped": "no JSON object",
        "s-failed": "request failed: model: overloaded",
        "s-absent": "request failed: client: no scripted output for id 's-absent'",
    }
    for item_id, message in expected_errors.items():
        e = by_id[item_id]
        assert e.error is not None and e.error.startswith(message), (item_id, e.error)
        assert e.standpoint is None and e.target is None and not e.ok
    assert by_id["s-prose"].raw == ANSWERS["s-prose"]  # the raw output is kept
    assert by_id["s-failed"].raw == "" and by_id["s-absent"].raw == ""


def test_extraction_requests_carry_ids_prompt_and_schema(tmp_path):
    backend = Recording(scripted_file(tmp_path))
    items = [SeedItem("s-good", "这些人 $text 都该滚", "hate", "x")]
    asyncio.run(extract_standpoints(items, backend, language="zh"))
    (request,) = backend.requests
    assert request.sample_id == "s-good"
    assert request.params.temperature == 0.0
    schema = request.params.structured.json_schema  # type: ignore[union-attr]
    assert schema["required"] == ["standpoint", "target"] and schema["additionalProperties"] is False
    user = request.messages[-1].content
    assert "这些人 $text 都该滚" in user and "请给出" in user  # the Chinese prompt, the text verbatim
    assert request.messages[0].role == "system" and "标注" in request.messages[0].content
    # caller params are kept, the schema is added
    backend = Recording(scripted_file(tmp_path))
    asyncio.run(extract_standpoints(items, backend, params=GenerationParams(max_tokens=99, seed=5)))
    params = backend.requests[0].params
    assert (params.max_tokens, params.seed, params.structured.json_schema) == (99, 5, schema)  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="duplicate item id"):
        asyncio.run(extract_standpoints(items * 2, backend))


def test_bundled_prompt_has_both_languages_and_a_version():
    prompt = standpoint_prompt()
    assert prompt.version.startswith("softhate-standpoint-prompt/")
    for language in ("en", "zh"):
        messages = prompt.messages("TEXT-UNDER-TEST", language)  # type: ignore[arg-type]
        assert "TEXT-UNDER-TEST" in messages[-1].content
        assert '{"standpoint": "...", "target": "..."}' in messages[-1].content


# --- JSONL round trip --------------------------------------------------------------------------------


def test_record_round_trip(tmp_path):
    for e in extract(tmp_path):
        record = extraction_to_record(e)
        assert set(record) == {"item_id", "source_text", "standpoint", "target", "raw", "error"}
        assert extraction_from_record(json.loads(json.dumps(record, ensure_ascii=False)), "x.jsonl", 1) == e


GOOD = {"item_id": "a", "source_text": "t", "standpoint": "s", "target": "g", "raw": "{}", "error": None}


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"colour": "red"}, "colour", "unknown field"),
        ({"item_id": ""}, "item_id", "must be a non-empty string"),
        ({"item_id": None}, "item_id", "missing value"),
        ({"raw": 3}, "raw", "expected a string, got 3"),
        ({"standpoint": None}, "standpoint", "must be a non-empty string when 'error' is null"),
        ({"target": " "}, "target", "must be a non-empty string when 'error' is null"),
        ({"error": "failed"}, "standpoint", "must be null when 'error' is set"),
    ],
)
def test_record_errors_name_file_line_and_field(change, field, message):
    with pytest.raises(InputError) as caught:
        extraction_from_record({**GOOD, **change}, "ex.jsonl", 7)
    text = str(caught.value)
    assert text.startswith(f"ex.jsonl:7: field '{field}': {message}") and "\n" not in text


def test_record_missing_field_and_non_object():
    row = {k: v for k, v in GOOD.items() if k != "source_text"}
    with pytest.raises(InputError, match=r"^ex\.jsonl:2: field 'source_text': missing field$"):
        extraction_from_record(row, "ex.jsonl", 2)
    with pytest.raises(InputError, match=r"^ex\.jsonl:3: expected a JSON object, got list$"):
        extraction_from_record([1], "ex.jsonl", 3)
    failed = {**GOOD, "standpoint": None, "target": None, "error": "no JSON object"}
    assert extraction_from_record(failed, "ex.jsonl", 4).error == "no JSON object"


# --- taxonomy ------------------------------------------------------------------------------------


def test_bundled_taxonomy_resolves_names_aliases_chinese_and_full_width():
    taxonomy = load_group_taxonomy()
    # the paper's seven domains (disability and occupation serve the Chinese taxonomy)
    assert {g.level1 for g in taxonomy.groups} == set(Level1Domain) - {Level1Domain.DISABILITY, Level1Domain.OCCUPATION}
    cases = {
        "Muslims": "Muslims",
        "muslims": "Muslims",
        "ＭＵＳＬＩＭＳ": "Muslims",  # full-width letters (NFKC)
        "\u3000穆斯林\u3000": "Muslims",  # ideographic spaces around a Chinese alias
        "the Working  Class": "The working class",
        "THE ELITE": "The elite",
        "女性": "Women",
        "移民": "Immigrants",
        "黑人": "Black people",
        "同性恋者": "Gay people",
        "Immigrants and Refugees": "Immigrants",
        "trans people": "Transgender people",
    }
    for phrase, name in cases.items():
        group = taxonomy.resolve(phrase)
        assert group is not None and group.name == name, phrase
    for phrase in (None, "", "Martians", "themuslims"):
        assert taxonomy.resolve(phrase) is None, phrase
    assert taxonomy.match("Muslims.").method == "fuzzy"  # ratio 93.3
    exact_only = load_group_taxonomy(fuzzy_cutoff=None)
    assert exact_only.resolve("Muslims.") is None
    for group in taxonomy.groups:  # every surface form resolves to its own group
        assert all(taxonomy.resolve(form) == group for form in group.surface_forms())


def test_taxonomy_refuses_clashing_names():
    a = TargetGroup(name="Velorians", level1=Level1Domain.NATIONALITY_REGION, level2="Velorian")
    b = TargetGroup(name="Ostrans", level1=Level1Domain.NATIONALITY_REGION, level2="Ostran", aliases=("velorians",))
    with pytest.raises(ValueError, match="already names group 'Velorians'"):
        GroupTaxonomy((a, b))
    c = TargetGroup(name="Kethi", level1=Level1Domain.NATIONALITY_REGION, level2="VELORIAN")
    with pytest.raises(ValueError, match="standpoint id 'sp-velorian'"):
        GroupTaxonomy((a, c))


def group_entry(name: str, level2: str, *aliases: str, level1: str = "nationality_region") -> dict:
    return {"name": name, "level1": level1, "level2": level2, "aliases": list(aliases)}


@pytest.mark.parametrize(
    ("doc", "field", "message"),
    [
        ({"groups": [group_entry("V", "V", level1="nationalty_region")]}, "groups[0].level1", "did you mean"),
        ({"groups": [group_entry("V", "V"), group_entry("O", "O", "o2", "v")]}, "groups[1].aliases[1]", "'v'"),
        ({"groups": [group_entry("V", "V", "")]}, "groups[0].aliases[0]", "non-empty string"),
        ({"groups": [{**group_entry("V", "V"), "level3": "x"}]}, "groups[0].level3", "unknown field"),
        ({"groups": [group_entry("V", "V+"), group_entry("O", "v")]}, "groups[1].level2", "sp-v"),
        ({"groups": []}, "groups", "non-empty list"),
        ({"grups": []}, "grups", "did you mean 'groups'"),
        ({"groups": [group_entry("V", "V")], "unmapped": {"v": "no"}}, "unmapped.v", "also names group 'V'"),
    ],
)
def test_taxonomy_file_errors_name_file_and_json_path(tmp_path, doc, field, message):
    path = tmp_path / "groups.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_group_taxonomy(path)
    text = str(caught.value)
    assert text.startswith(f"{path}: field '{field}': ") and message in text and "\n" not in text


def test_taxonomy_file_not_json_or_missing(tmp_path):
    path = tmp_path / "groups.json"
    path.write_text('{"groups": [\n  oops]}', encoding="utf-8")
    with pytest.raises(InputError, match=r"groups\.json:2: invalid JSON"):
        load_group_taxonomy(path)
    with pytest.raises(InputError, match="cannot read the file"):
        load_group_taxonomy(tmp_path / "absent.json")


def test_bundled_groups_resolve_every_target_of_the_real_data(shared_data):
    """Every distinct non-empty ISHate ``target`` and HateCheck ``target_ident`` resolves, or is
    listed under ``unmapped`` with a reason (and then does not resolve)."""
    pq = pytest.importorskip("pyarrow.parquet")
    values: set[str] = set()
    for split in ("train", "dev", "test"):
        table = pq.read_table(shared_data / "ishate" / f"ishate_{split}.parquet.gzip", columns=["target"])
        values.update(str(v).strip() for v in table.column("target").to_pylist() if v and str(v).strip())
    with open(shared_data / "hatecheck-en" / "test_suite_cases.csv", encoding="utf-8", newline="") as handle:
        values.update(row["target_ident"].strip() for row in csv.DictReader(handle) if row["target_ident"].strip())
    assert len(values) >= 19  # 12 ISHate categories, 7 HateCheck identities
    unmapped = json.loads(resource_path("softhate/groups.json").read_text(encoding="utf-8"))["unmapped"]
    taxonomy = load_group_taxonomy()
    unresolved = {v for v in values if taxonomy.resolve(v) is None}
    assert unresolved == set(unmapped) & values, unresolved - set(unmapped)


# --- per-group medoid standpoints --------------------------------------------------------------------

VELORIANS = TargetGroup(name="Velorians", level1="nationality_region", level2="Velorian", aliases=("维洛人",))
OSTRANS = TargetGroup(name="Ostrans", level1="nationality_region", level2="Ostran")
KETHI = TargetGroup(name="Kethi", level1="religion_belief", level2="Kethi faith")
TAXONOMY = GroupTaxonomy((VELORIANS, OSTRANS, KETHI))
ANGLES = {"a0": 0.0, "a1": 10.0, "a2": 25.0, "a3": 200.0, "b0": 0.0, "b1": 0.0, "c0": 0.0, "c1": 40.0, "c2": 90.0}


def angle_embedder(texts: Sequence[str]) -> np.ndarray:
    radians = np.radians([ANGLES[t] for t in texts])
    return np.column_stack([np.cos(radians), np.sin(radians)])


def ok(item_id: str, standpoint: str, target: str) -> Extraction:
    return Extraction(item_id, f"src-{standpoint}", standpoint, target, "{}", None)


EXTRACTIONS = [
    ok("i0", "a0", "Velorians"),
    ok("i1", "a1", "the velorians"),
    ok("i2", "a2", "ＶＥＬＯＲＩＡＮＳ"),
    ok("i3", "a3", "维洛人"),
    ok("j0", "b0", "Ostrans"),
    ok("j1", "b1", "Ostrans"),
    ok("k0", "c0", "Kethi"),
    ok("k1", "c1", "Kethi"),
    ok("k2", "c2", "Kethi"),
    ok("u0", "a0", "Martians"),
    ok("u1", "a1", "people"),
    Extraction("f0", "src", None, None, "prose", "no JSON object"),
]


class FakeEntailment:
    """P(premise ⊨ hypothesis) from a table (default 0.9); ScoringError for listed pairs; records calls."""

    def __init__(self, table: dict[tuple[str, str], float], failing: frozenset = frozenset()) -> None:
        self.table = table
        self.failing = failing
        self.calls: list[tuple[str, str]] = []

    async def __call__(self, premise: str, hypothesis: str) -> float:
        self.calls.append((premise, hypothesis))
        if (premise, hypothesis) in self.failing:
            raise ScoringError("NLI call failed: model: down")
        return self.table.get((premise, hypothesis), 0.9)


def test_medoid_ranking_of_the_fixture_by_hand():
    # m_i = Σ_{j≠i} cos(θ_i − θ_j) / 3 over angles 0°, 10°, 25°, 200°
    cos = lambda d: math.cos(math.radians(d))  # noqa: E731
    mean = {
        "a0": (cos(10) + cos(25) + cos(200)) / 3,  # 0.3171
        "a1": (cos(10) + cos(15) + cos(190)) / 3,  # 0.3220
        "a2": (cos(25) + cos(15) + cos(175)) / 3,  # 0.2920
        "a3": (cos(200) + cos(190) + cos(175)) / 3,
    }
    assert sorted(mean, key=lambda k: -mean[k]) == ["a1", "a0", "a2", "a3"]


def test_selection_drops_small_groups_falls_back_and_counts_unresolved():
    # a1 (the best-ranked Velorian) fails backward; a0 (next) passes. Kethi: nobody passes.
    fake = FakeEntailment(
        {("src-a1", "a1"): 0.5, ("c0", "src-c0"): 0.2, ("src-c2", "c2"): 0.59},
        failing=frozenset({("c1", "src-c1")}),
    )
    result = asyncio.run(
        select_group_standpoints(EXTRACTIONS, TAXONOMY, entailment=fake, min_group=3, embedder=angle_embedder)
    )
    assert result.members == {
        "Velorians": ["i0", "i1", "i2", "i3"],
        "Ostrans": ["j0", "j1"],
        "Kethi": ["k0", "k1", "k2"],
    }
    assert result.dropped == {
        "Ostrans": "fewer than 3 items",
        "Kethi": "no member passed the bidirectional entailment check",
        "<unresolved>": "target phrase not in the taxonomy: 2 items",
    }
    (standpoint,) = result.standpoints
    assert (standpoint.id, standpoint.text, standpoint.source_id, standpoint.target) == (
        "sp-velorian",
        "a0",
        "i0",
        VELORIANS,
    )
    rows = [(c["group"], c["item_id"], c["forward"], c["backward"], c["passed"], c["error"]) for c in result.checks]
    assert rows[:2] == [("Velorians", "i1", 0.9, 0.5, False, None), ("Velorians", "i0", 0.9, 0.9, True, None)]
    kethi = rows[2:]
    assert [r[1] for r in kethi] == ["k1", "k0", "k2"]  # ranked by hand: m = 0.704 (40°), 0.383 (0°), 0.321 (90°)
    assert kethi[0] == ("Kethi", "k1", None, 0.9, False, "NLI call failed: model: down")
    assert kethi[1] == ("Kethi", "k0", 0.2, 0.9, False, None)
    assert kethi[2] == ("Kethi", "k2", 0.9, 0.59, False, None)
    assert fake.calls[0] == ("a1", "src-a1")  # forward: P(standpoint ⊨ source) first
    assert not any(call[0].startswith(("b", "src-b")) for call in fake.calls)  # small groups are not checked


def test_selection_defaults_threshold_and_no_entailment():
    result = asyncio.run(select_group_standpoints(EXTRACTIONS, TAXONOMY, entailment=None, embedder=angle_embedder))
    assert result.standpoints == [] and result.dropped["Velorians"] == "fewer than 20 items"
    unchecked = asyncio.run(
        select_group_standpoints(EXTRACTIONS, TAXONOMY, entailment=None, min_group=2, embedder=angle_embedder)
    )
    assert [(s.id, s.source_id) for s in unchecked.standpoints] == [
        ("sp-velorian", "i1"),
        ("sp-ostran", "j0"),  # two identical vectors: a tie goes to the first
        ("sp-kethi-faith", "k1"),
    ]
    assert unchecked.checks[0] == {
        "group": "Velorians",
        "item_id": "i1",
        "forward": None,
        "backward": None,
        "passed": None,
        "error": None,
    }
    strict = FakeEntailment({})
    high = asyncio.run(
        select_group_standpoints(
            EXTRACTIONS, TAXONOMY, entailment=strict, min_group=3, threshold=0.95, embedder=angle_embedder
        )
    )
    assert high.standpoints == [] and len(high.checks) == 7  # 0.9 < 0.95: every member is tried
    with pytest.raises(ValueError, match="duplicate item id"):
        asyncio.run(select_group_standpoints(EXTRACTIONS * 2, TAXONOMY, entailment=None))
    with pytest.raises(ValueError, match="threshold"):
        asyncio.run(select_group_standpoints(EXTRACTIONS, TAXONOMY, entailment=None, threshold=1.5))


def test_medoid_with_the_default_embedder_equals_brute_force_mean_cosine():
    texts = [
        "Velorians should not be allowed to vote",
        "Velorians must not be allowed to vote here",
        "Velorians should never vote in our elections",
        "Velorians are taking over every school board",
        "no Velorian should be allowed near a ballot box",
    ]
    extractions = [ok(f"v{i}", t, "Velorians") for i, t in enumerate(texts)]
    result = asyncio.run(select_group_standpoints(extractions, TAXONOMY, entailment=FakeEntailment({}), min_group=5))
    unit = unit_rows(tfidf_embedder()(texts)).toarray()
    sims = unit @ unit.T
    mean = [(sims[i].sum() - sims[i, i]) / (len(texts) - 1) for i in range(len(texts))]
    best = min(range(len(texts)), key=lambda i: (-mean[i], i))
    assert result.standpoints[0].source_id == f"v{best}" and result.standpoints[0].text == texts[best]


def test_entailment_from_a_backend_nli_scorer(tmp_path):
    def key(premise: str, hypothesis: str) -> str:
        return "nli/" + hashlib.sha256(f"{premise}\0{hypothesis}".encode()).hexdigest()[:16]

    rows = [
        {"id": key("s", "o"), "output": '{"entailment": 0.7, "neutral": 0.2, "contradiction": 0.1}'},
        {"id": key("o", "s"), "output": "Entailment."},
        {"id": key("x", "y"), "error": "down"},
    ]
    backend = create_backend(f"scripted:{write_lines(tmp_path / 'nli.jsonl', rows)}", BackendOptions())
    entail = entailment_from_nli(BackendNliScorer(backend))
    assert asyncio.run(entail("s", "o")) == pytest.approx(0.7)
    assert asyncio.run(entail("o", "s")) == 1.0
    with pytest.raises(ScoringError):
        asyncio.run(entail("x", "y"))
