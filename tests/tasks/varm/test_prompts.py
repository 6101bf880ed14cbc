import json

import pytest

from verimod.core.errors import InputError
from verimod.tasks.varm.prompts import SETTINGS, load_prompt, select_examples
from verimod.tasks.varm.schema import VarmReference
from verimod.tasks.varm.starter import load_starter

TRAIN = load_starter("train")
TEST = load_starter("test")


@pytest.mark.parametrize("setting", SETTINGS)
def test_builtin_settings_state_the_anchor_contract(setting):
    template = load_prompt(setting)
    messages = template.render(TEST[0], select_examples(TRAIN, 2) if setting == "k-shot" else [])
    assert [m.role for m in messages] == ["system", "user"]
    user = messages[1].content
    assert TEST[0].text in user and "[T: 目标] → [TY: 目标类型]" in user and "[L: harmful]" in user
    assert ("判定规则" in user) == (setting != "zero-shot")
    assert "$" not in user.replace(TEST[0].text, "")


def test_versions_and_hashes_differ_per_setting():
    hashes = {load_prompt(s).sha256 for s in SETTINGS}
    assert len(hashes) == 3 and {load_prompt(s).version for s in SETTINGS} == {"varm-prompts/2"}


def test_text_with_placeholders_stays_literal():
    tricky = TEST[0].model_copy(update={"text": "看看 $codebook 和 {text} 还有 ${examples} 这种写法"})
    user = load_prompt("taxonomy").render(tricky)[1].content
    assert "看看 $codebook 和 {text} 还有 ${examples} 这种写法" in user


def test_context_is_rendered_when_present():
    with_context = TEST[0].model_copy(update={"context": ["上一条：楼主说了什么", "回复：同意"]})
    user = load_prompt("zero-shot").render(with_context)[1].content
    assert "上下文：上一条：楼主说了什么\n回复：同意" in user
    assert "上下文" not in load_prompt("zero-shot").render(TEST[0])[1].content


def test_k_shot_examples_are_deterministic_balanced_and_leak_free():
    first = select_examples(TRAIN, 6, seed=0, exclude=TEST)
    assert [e.id for e in first] == [e.id for e in select_examples(TRAIN, 6, seed=0, exclude=TEST)]
    assert [e.id for e in first] != [e.id for e in select_examples(TRAIN, 6, seed=1, exclude=TEST)]
    labels = [e.label for e in first]
    assert labels.count("harmful") == 3 and labels.count("non_harmful") == 3
    assert len({e.category for e in first if e.label == "harmful"}) == 3
    leaky = select_examples(TRAIN, 4, exclude=TRAIN[:400])
    assert not {e.id for e in leaky} & {r.id for r in TRAIN[:400]}
    assert select_examples(TRAIN, 0) == []
    no_cot = [VarmReference.model_validate({**r.model_dump(), "cot": None}) for r in TRAIN[:10]]
    assert select_examples(no_cot, 3) == []


def test_user_template_file(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"version": "mine/2", "system": "", "user": "审核：$text\n$contract"}), encoding="utf-8")
    template = load_prompt("zero-shot", path)
    messages = template.render(TEST[0])
    assert [m.role for m in messages] == ["user"] and messages[0].content.startswith(f"审核：{TEST[0].text}")
    assert template.version == "mine/2"
    path.write_text(json.dumps({"version": "x", "user": "$text", "sytem": ""}), encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_prompt("zero-shot", path)
    assert "sytem" in str(err.value) or "system" in str(err.value)
    path.write_text("{broken", encoding="utf-8")
    with pytest.raises(InputError, match="JSON"):
        load_prompt("zero-shot", path)


def test_unknown_setting_suggests_the_closest():
    with pytest.raises(InputError, match="did you mean 'taxonomy'"):
        load_prompt("taxonomi")
