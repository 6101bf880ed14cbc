"""AMT records: vocabularies, validation, tier rules, JSON round trips, bundled prompts."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from verimod.tasks.softhate.prompts import (
    decompose_messages,
    nli_messages,
    premise_messages,
    softhate_prompts,
    variant_messages,
)
from verimod.tasks.softhate.schema import (
    LEVEL1_LABELS,
    AmtInstance,
    GeneratedItem,
    Level1Domain,
    Locus,
    SearchConfig,
    SearchTrace,
    Standpoint,
    TargetGroup,
    Tier,
    VariantConfig,
    VariantTrace,
    join_texts,
)

GROUP = TargetGroup(
    name="Velorians",
    level1=Level1Domain.NATIONALITY_REGION,
    level2="Velorian",
    aliases=("Veloria folk",),
    names={"zh": "维罗人"},
)
STANDPOINT = Standpoint(id="sp1", text="Velorians should not run for office.", target=GROUP)


def amt(**changes: object) -> AmtInstance:
    values: dict[str, object] = {
        "endoxon": "Public office demands loyalty to the community.",
        "datum": "Velorians keep close ties abroad.",
        "premise": "Velorians are not loyal to the community.",
        "locus": Locus.MORAL_VALUE,
        "maxim": "Who is not loyal should not hold office.",
        "standpoint": STANDPOINT.text,
        "target": GROUP,
    }
    values.update(changes)
    return AmtInstance.model_validate(values)


def search_trace(instance: AmtInstance | None = None) -> SearchTrace:
    return SearchTrace(
        standpoint=STANDPOINT,
        locus=Locus.MORAL_VALUE,
        config=SearchConfig(),
        prompt_version="v",
        generator="scripted:x",
        nli_scorer="n",
        lm_scorers=[],
        steps=[],
        outcome="winner" if instance else "no_admissible_chain",
        amt=instance,
    )


def test_vocabularies() -> None:
    assert len(Locus) == 8
    assert {locus.value for locus in Locus} == {
        "cause_effect",
        "definition_classification",
        "analogy",
        "authority",
        "quantity_popularity",
        "opposition",
        "purpose_means",
        "moral_value",
    }
    assert all(locus.description and locus.label for locus in Locus)
    assert Locus.CAUSE_EFFECT.label == "Cause–Effect"
    # the paper's seven, plus disability and occupation for the Chinese taxonomy
    assert len(Level1Domain) == 9 and set(LEVEL1_LABELS) == set(Level1Domain)
    assert {"disability", "occupation"} <= {d.value for d in Level1Domain}
    assert [t.value for t in Tier] == ["hard", "softbase", "softgv", "softhv"]


def test_records_forbid_extra_fields_and_check_values() -> None:
    with pytest.raises(ValidationError):
        AmtInstance.model_validate({**amt().model_dump(), "extra": 1})
    with pytest.raises(ValidationError):
        amt(locus="slippery_slope")
    with pytest.raises(ValidationError):
        amt(endoxon="")
    with pytest.raises(ValidationError):
        TargetGroup(name="x", level1="astrology", level2="x")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="pattern"):
        Standpoint(id="a/b", text="t", target=GROUP)  # "/" separates sample-id parts
    with pytest.raises(ValidationError):
        Standpoint(id="a b", text="t", target=GROUP)


def test_visible_text_and_surface_forms() -> None:
    assert amt().visible_text == "Public office demands loyalty to the community. Velorians keep close ties abroad."
    assert join_texts("公职需要忠诚。", "某地人在海外联系紧密。") == "公职需要忠诚。某地人在海外联系紧密。"
    assert join_texts("甲乙", "丙丁") == "甲乙丙丁"
    assert join_texts(" a ", "") == "a"
    assert GROUP.surface_forms() == ("Velorians", "Veloria folk", "维罗人")


def test_search_config_defaults_follow_the_paper() -> None:
    config = SearchConfig()
    assert (config.beam_size, config.t_max, config.premise_candidates) == (3, 2, 5)
    assert (config.temperature, config.max_tokens) == (0.0, 200)
    assert config.scoring.tau_ent == 0.6 and config.scoring.tau_contr == 0.4 and config.scoring.gamma_var == 0.2
    assert config.weights() == (0.5, 0.5)  # 1/T
    assert SearchConfig(chain_weights=(0.3, 0.7)).weights() == (0.3, 0.7)
    with pytest.raises(ValidationError):
        SearchConfig(t_max=3)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        SearchConfig(chain_weights=(-0.5, 1.5))
    with pytest.raises(ValidationError):
        SearchConfig(beam_size=0)


def test_generated_item_tier_rules() -> None:
    GeneratedItem(id="h1", tier=Tier.HARD, text="a source comment")
    base = GeneratedItem(
        id="sp1/moral_value", tier=Tier.SOFTBASE, text=amt().visible_text, amt=amt(), search=search_trace(amt())
    )
    with pytest.raises(ValidationError, match="softbase item needs"):
        GeneratedItem(id="x", tier=Tier.SOFTBASE, text="t", amt=amt())
    variant = VariantTrace(
        base_id=base.id,
        base_text=base.text,
        kind="softhv",
        config=VariantConfig(),
        prompt_version="v",
        generator="g",
        nli_scorer="n",
        similarity="s",
        candidates=[],
        outcome="no_admissible_candidate",
    )
    GeneratedItem(id="x/softhv", tier=Tier.SOFTHV, text="post", amt=amt(), variant=variant)
    with pytest.raises(ValidationError, match="does not match"):
        GeneratedItem(id="x/softgv", tier=Tier.SOFTGV, text="post", amt=amt(), variant=variant)
    with pytest.raises(ValidationError, match="needs its amt and variant"):
        GeneratedItem(id="x/softgv", tier=Tier.SOFTGV, text="post", amt=amt())
    assert GeneratedItem.model_validate_json(base.model_dump_json()) == base


def test_bundled_prompts_cover_every_locus_and_language() -> None:
    prompts = softhate_prompts()
    assert prompts.version.startswith("softhate-prompts/")
    for language in ("en", "zh"):
        assert set(prompts.languages[language].loci) == set(Locus)
    zh_standpoint = Standpoint(id="sp1", text="维罗人不应竞选公职。", target=GROUP)
    for language, name, other in (("en", "Velorians", "维罗人"), ("zh", "维罗人", "Velorians")):
        standpoint = STANDPOINT if language == "en" else zh_standpoint
        messages = premise_messages(standpoint, Locus.ANALOGY, 2, 5, language)
        user = messages[-1].content
        assert standpoint.text in user and name in user and "$" not in user
        assert other not in user  # a Chinese prompt names the group in Chinese, never "关于Velorians"
        assert prompts.languages[language].loci[Locus.ANALOGY].name in user
        assert messages[0].role == "system"
        user = decompose_messages(standpoint, "PREMISE-TEXT", "MAXIM-TEXT", 1, 3, language)[-1].content
        assert "PREMISE-TEXT" in user and "MAXIM-TEXT" in user and name in user and other not in user
        for kind in ("softgv", "softhv"):
            user = variant_messages(kind, "BASE-TEXT", GROUP, 1, 4, language)[-1].content  # type: ignore[arg-type]
            assert "BASE-TEXT" in user and name in user and other not in user and "$" not in user
        user = nli_messages("P-TEXT", "H-TEXT", language)[-1].content
        assert "P-TEXT" in user and "H-TEXT" in user and "entailment" in user
    assert (
        variant_messages("softgv", "b", GROUP, 1, 1)[-1].content
        != variant_messages("softhv", "b", GROUP, 1, 1)[-1].content
    )


def test_group_display_names_and_control_prompts() -> None:
    plain = TargetGroup(name="Velorians", level1=Level1Domain.NATIONALITY_REGION, level2="V")
    assert plain.display_name("en") == "Velorians" and plain.display_name("zh") is None
    with pytest.raises(ValueError, match="has no zh name"):
        premise_messages(Standpoint(id="s", text="t", target=plain), Locus.ANALOGY, 1, 1, "zh")
    aliased = TargetGroup(
        name="Black people", level1=Level1Domain.RACE_ETHNICITY, level2="B", aliases=("blacks", "黑人")
    )
    assert aliased.display_name("zh") == "黑人" and aliased.display_name("en") == "Black people"
    assert "维罗人" in GROUP.surface_forms()  # a display name is an explicit mention too
    control = Standpoint(id="c", text="Velorians deserve fair hearings.", target=GROUP, gold="non_hate")
    hate_system = premise_messages(STANDPOINT, Locus.ANALOGY, 1, 1)[0].content
    control_system = premise_messages(control, Locus.ANALOGY, 1, 1)[0].content
    assert "non-hateful control" in control_system and "non-hateful control" not in hate_system
    assert "对照" in variant_messages("softhv", "b", GROUP, 1, 1, "zh", "non_hate")[0].content


def test_template_values_are_not_reinterpreted() -> None:
    standpoint = Standpoint(id="s", text="costs $5 and ${x}", target=GROUP)
    assert "costs $5 and ${x}" in premise_messages(standpoint, Locus.AUTHORITY, 1, 1)[-1].content
