import json

import pytest

from tests.conftest import rationale
from verimod.resources import resource_path
from verimod.tasks.varm.aliases import alias_key, alias_table, canonical_value
from verimod.tasks.varm.codebook import NO_CLEAR_TARGET, VOCABULARY
from verimod.tasks.varm.parser import parse_rationale

ALIASES = json.loads(resource_path("varm_aliases.json").read_text(encoding="utf-8"))
FIELD_POSITION = {"target_type": 1, "target_explicitness": 2, "stance": 3, "label": 4, "category": 5}


def test_alias_key_normalisation():
    assert alias_key(" Non-Harmful ") == "non_harmful"
    assert alias_key("status / occupation") == "status_occupation"
    assert alias_key("ＳＯＧＩ") == "sogi"
    assert alias_key("attack  or\tendorse") == "attack_or_endorse"


def test_table_loads_without_conflicts_and_covers_canonical_values():
    table = alias_table()
    for field, values in VOCABULARY.items():
        for value in values:
            assert table[field][value] == value


ISSUE_ALIASES = [
    ("stance", "attack or endorse", "attack_or_endorse"),
    ("label", "non-harmful", "non_harmful"),
    ("category", "status/occupation", "status_occupation"),
    ("category", "region/ethnicity", "region_ethnicity"),
    ("category", "body/health", "body_health"),
    ("category", "general abuse", "general_abuse"),
    ("category", "non-attack", "non_attack"),
    ("stance", "oppose attack", "oppose_attack"),
    ("stance", "quote or report", "quote_or_report"),
    ("stance", "neutral mention", "neutral_mention"),
    ("target_type", "no clear target", "no_clear_target"),
    ("category", "SOGI", "sogi"),
    ("target_type", "individual", "single"),
    ("target_type", "single object", "single"),
    ("target_type", "person", "single"),
    ("target_type", "group object", "group"),
    ("target_explicitness", "none", "no_clear_target"),
    ("category", "origin/culture", "region_ethnicity"),
    ("target_type", "个体", "single"),
    ("target_type", "个人", "single"),
    ("target_type", "群体", "group"),
    ("target_explicitness", "显式", "explicit"),
    ("target_explicitness", "明确", "explicit"),
    ("target_explicitness", "隐式", "implicit"),
    ("target_explicitness", "隐含", "implicit"),
    ("label", "有害", "harmful"),
    ("label", "无害", "non_harmful"),
    ("target", "无明确目标", "no_clear_target"),
    ("target", "无", "no_clear_target"),
    ("target_type", "无明确目标", "no_clear_target"),
]


@pytest.mark.parametrize(("field", "written", "canonical"), ISSUE_ALIASES)
def test_aliases_named_in_the_contract(field, written, canonical):
    assert canonical_value(field, written) == canonical


def _resource_aliases():
    for field, groups in ALIASES.items():
        if field in FIELD_POSITION:
            for canonical, aliases in groups.items():
                for alias in aliases:
                    yield field, alias, canonical
    for alias in ALIASES["no_clear_target"]:
        for field in ("target", "target_type", "target_explicitness"):
            yield field, alias, NO_CLEAR_TARGET


@pytest.mark.parametrize(("field", "written", "canonical"), list(_resource_aliases()))
def test_every_resource_alias_parses_through_an_anchor(field, written, canonical):
    values = ["小县城公务员", "group", "explicit", "attack_or_endorse", "harmful", "status_occupation"]
    position = 0 if field == "target" else FIELD_POSITION[field]
    values[position] = written
    result = parse_rationale(rationale(*values))
    assert result.ok, result.detail
    assert result.values[position] == canonical
    assert not result.format_ok  # an alias never passes Format


def test_aliases_are_field_specific():
    assert canonical_value("category", "无") == "non_attack"
    assert canonical_value("target", "无") == NO_CLEAR_TARGET
    assert canonical_value("label", "group") is None
    assert canonical_value("target", "河南人") == "河南人"
