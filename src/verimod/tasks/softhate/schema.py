"""Typed SoftHateBench records (pydantic v2, ``extra="forbid"``).

- The Argumentum Model of Topics (AMT) instance ``A = (E, D, P, L, M, S)``
  (:class:`AmtInstance`): the Endoxon E (a shared belief or value) and the Datum D (a
  situational claim tying that value to the target group [TG]) are what the audience sees;
  the Premise P, Locus L, Maxim M and the hostile Standpoint S stay implicit. The two
  defeasible steps are ``(E, D) ⊢ P`` and ``(P, M) ⊢ S``.
- The eight Walton loci (:class:`Locus`) and the seven Level-1 domains (:class:`Level1Domain`).
- Search and variant traces: every candidate with its raw output, scores and rejection reasons
  (:class:`Candidate`, :class:`StepTrace`, :class:`SearchTrace`, :class:`VariantCandidate`,
  :class:`VariantTrace`).
- :class:`GeneratedItem`: one benchmark text with its tier (hard | softbase | softgv | softhv),
  its AMT and the trace that produced it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from verimod.tasks.softhate.scoring import EdgeScore, NliProbs, NormRange, Rejection, ScoringConfig

Language = Literal["en", "zh"]
VariantKind = Literal["softgv", "softhv"]
Gold = Literal["hate", "non_hate"]


class Level1Domain(StrEnum):
    """The Level-1 socio-cultural domains: SoftHateBench's seven, plus ``disability`` and
    ``occupation`` (groups the Chinese taxonomy needs: 残疾人, 外卖员 …; the paper's English
    groups use none of them)."""

    RACE_ETHNICITY = "race_ethnicity"
    POLITICS_IDEOLOGY = "politics_ideology"
    NATIONALITY_REGION = "nationality_region"
    RELIGION_BELIEF = "religion_belief"
    GENDER = "gender"
    SEXUAL_ORIENTATION = "sexual_orientation"
    SOCIO_ECONOMIC_CLASS = "socio_economic_class"
    DISABILITY = "disability"
    OCCUPATION = "occupation"


class Locus(StrEnum):
    """The eight Walton argumentation schemes used as loci (SoftHateBench Appendix G)."""

    CAUSE_EFFECT = "cause_effect"
    DEFINITION_CLASSIFICATION = "definition_classification"
    ANALOGY = "analogy"
    AUTHORITY = "authority"
    QUANTITY_POPULARITY = "quantity_popularity"
    OPPOSITION = "opposition"
    PURPOSE_MEANS = "purpose_means"
    MORAL_VALUE = "moral_value"

    @property
    def label(self) -> str:
        """Display name, e.g. ``Cause–Effect``."""
        return LOCUS_LABELS[self]

    @property
    def description(self) -> str:
        """What the inference pattern licenses."""
        return LOCUS_DESCRIPTIONS[self]


LOCUS_LABELS: dict[Locus, str] = {
    Locus.CAUSE_EFFECT: "Cause–Effect",
    Locus.DEFINITION_CLASSIFICATION: "Definition/Classification",
    Locus.ANALOGY: "Analogy",
    Locus.AUTHORITY: "Authority",
    Locus.QUANTITY_POPULARITY: "Quantity/Popularity",
    Locus.OPPOSITION: "Opposition",
    Locus.PURPOSE_MEANS: "Purpose/Means",
    Locus.MORAL_VALUE: "Moral Value",
}

LOCUS_DESCRIPTIONS: dict[Locus, str] = {
    Locus.CAUSE_EFFECT: "if something causes or risks an (un)desirable effect, act on the cause",
    Locus.DEFINITION_CLASSIFICATION: "what falls under a category shares the properties and treatment of that category",
    Locus.ANALOGY: "cases that are alike in the relevant respects should be judged alike",
    Locus.AUTHORITY: "what a credible expert or institution asserts is plausibly true",
    Locus.QUANTITY_POPULARITY: "what most people believe or do is plausibly right or acceptable",
    Locus.OPPOSITION: "what is opposed to a value we hold is to be rejected",
    Locus.PURPOSE_MEANS: "if a goal is worth pursuing, the means that serve it are justified",
    Locus.MORAL_VALUE: "what violates a shared moral value deserves disapproval or restriction",
}

LEVEL1_LABELS: dict[Level1Domain, str] = {
    Level1Domain.RACE_ETHNICITY: "Race/Ethnicity",
    Level1Domain.POLITICS_IDEOLOGY: "Politics/Ideology",
    Level1Domain.NATIONALITY_REGION: "Nationality/Region",
    Level1Domain.RELIGION_BELIEF: "Religion/Belief",
    Level1Domain.GENDER: "Gender",
    Level1Domain.SEXUAL_ORIENTATION: "Sexual Orientation",
    Level1Domain.SOCIO_ECONOMIC_CLASS: "Socio-Economic Class",
    Level1Domain.DISABILITY: "Disability",
    Level1Domain.OCCUPATION: "Occupation",
}


class Tier(StrEnum):
    """Benchmark tiers: the hard source comment, the base AMT text and its two vague variants."""

    HARD = "hard"
    SOFTBASE = "softbase"
    SOFTGV = "softgv"
    SOFTHV = "softhv"


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TargetGroup(_Record):
    """The target group [TG]: its surface name, Level-1 domain and Level-2 group.

    ``aliases`` are further explicit names of the group (a HostilityVague text must name none
    of them, nor ``name``); ``names`` are the group's display names per prompt language
    (``{"zh": "黑人"}``), see :meth:`display_name`.
    """

    name: str = Field(min_length=1)
    level1: Level1Domain
    level2: str = Field(min_length=1)
    aliases: tuple[str, ...] = ()
    names: dict[Language, str] = Field(default_factory=dict)

    def surface_forms(self) -> tuple[str, ...]:
        """``name`` followed by the non-empty aliases and the display names not among them."""
        forms = (self.name, *(a for a in self.aliases if a.strip()))
        return forms + tuple(n for n in self.names.values() if n.strip() and n not in forms)

    def display_name(self, language: Language) -> str | None:
        """The name prompts of ``language`` use: ``names[language]``; else, for ``zh``, the first
        of name and aliases written with a Han character (None when there is none: a Chinese
        prompt never shows an English name) and, for ``en``, the first without one, else
        ``name``."""
        if language in self.names:
            return self.names[language]
        for form in (self.name, *self.aliases):
            if has_han(form) == (language == "zh"):
                return form
        return None if language == "zh" else self.name


def has_han(text: str) -> bool:
    """True when ``text`` contains a CJK unified ideograph."""
    return any(
        "\u3400" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff" or "\U00020000" <= ch <= "\U0003134f" for ch in text
    )


class Standpoint(_Record):
    """A verified hostile standpoint S about a target group (the search's input).

    ``id`` enters sample ids (``<id>/<locus>/step1/cand1``), so it may not contain ``/`` or
    whitespace; it is also the pairing key of every item made from it (the hard source
    comment and its softbase, softgv and softhv items). ``gold`` is ``non_hate`` for the
    standpoint of a non-hate control (a non-hateful claim argued through the same pipeline).
    """

    id: str = Field(min_length=1, pattern=r"^[^/\s]+$")
    text: str = Field(min_length=1)
    target: TargetGroup
    source_id: str | None = None  # the hard comment it was extracted from
    gold: Gold = "hate"


class AmtInstance(_Record):
    """``A = (E, D, P, L, M, S)`` with its target group."""

    endoxon: str = Field(min_length=1)
    datum: str = Field(min_length=1)
    premise: str = Field(min_length=1)
    locus: Locus
    maxim: str = Field(min_length=1)
    standpoint: str = Field(min_length=1)
    target: TargetGroup

    @property
    def visible_text(self) -> str:
        """What the audience reads: E then D (:func:`join_texts`)."""
        return join_texts(self.endoxon, self.datum)


def join_texts(first: str, second: str) -> str:
    """Join two sentences: directly after a CJK character or full-width punctuation, with one
    space otherwise."""
    left, right = first.strip(), second.strip()
    if not left or not right:
        return left or right
    last = left[-1]
    cjk = "\u3000" <= last <= "\u9fff" or "\uff00" <= last <= "\uffef"
    return left + right if cjk else f"{left} {right}"


class SearchConfig(_Record):
    """Settings of the reverse-AMT beam search (defaults: SoftHateBench Appendix B).

    The AMT chain has exactly ``T = 2`` edges (``S ← (P, M)`` then ``P ← (E, D)``), so
    ``t_max`` is fixed at 2; ``chain_weights`` are ``λ_t`` (default ``1/T`` each).
    """

    beam_size: int = Field(3, ge=1)
    t_max: Literal[2] = 2
    premise_candidates: int = Field(5, ge=1)
    decomposition_candidates: int = Field(5, ge=1)
    temperature: float = Field(0.0, ge=0.0)
    max_tokens: int = Field(200, ge=1)
    seed: int = 0
    structured_output: bool = False  # ask the generator for JSON-schema-constrained output
    language: Language = "en"
    chain_weights: tuple[float, float] | None = None
    scoring: ScoringConfig = ScoringConfig()

    @model_validator(mode="after")
    def _check_weights(self) -> SearchConfig:
        if self.chain_weights is not None and min(self.chain_weights) < 0:
            raise ValueError("chain_weights must be non-negative")
        return self

    def weights(self) -> tuple[float, ...]:
        """``λ_1 … λ_T``."""
        return self.chain_weights or tuple(1.0 / self.t_max for _ in range(self.t_max))


class Candidate(_Record):
    """One generated candidate of one search step, with everything that decided its fate.

    ``id`` is its generator sample id; ``text`` is the step text (``P M`` at step 1, ``E D`` at
    step 2) and ``context`` the parent text it was scored against (S, then P). ``score`` is
    None when it was never scored (generation, parse or scorer failure, duplicate).
    ``cumulative`` is ``Σ λ_t edge_t`` of the chain ending here; ``kept`` tells whether it
    survived pruning to the beam (step 1) or is in the final top-B chains (step 2).
    """

    id: str
    step: Literal[1, 2]
    parent_id: str | None = None
    raw_output: str | None = None
    fields: dict[str, str] = Field(default_factory=dict)
    text: str | None = None
    context: str
    safe: bool | None = None
    score: EdgeScore | None = None
    cumulative: float | None = None
    rejections: list[Rejection] = Field(default_factory=list)
    admissible: bool = False
    kept: bool = False


class StepTrace(_Record):
    """One search step: its candidate pool, the normalisation ranges and the beam kept."""

    step: Literal[1, 2]
    candidates: list[Candidate]
    ranges: list[NormRange] = Field(default_factory=list)
    beam: list[str] = Field(default_factory=list)  # ids kept, best first


class ChainRecord(_Record):
    """A complete admissible chain: its two candidate ids, edge scores and Ψ."""

    candidate_ids: tuple[str, str]
    edge_scores: tuple[float, float]
    psi: float


class SearchTrace(_Record):
    """The full audit trail of one search for ``(S, [TG], L)`` and its outcome.

    ``outcome`` is ``winner`` (``amt`` and ``winner`` set) or ``no_admissible_chain``
    (``reason`` says at which step the beam ran dry).
    """

    standpoint: Standpoint
    locus: Locus
    config: SearchConfig
    prompt_version: str
    generator: str
    nli_scorer: str
    lm_scorers: list[str]
    steps: list[StepTrace]
    chains: list[ChainRecord] = Field(default_factory=list)  # best first
    outcome: Literal["winner", "no_admissible_chain"]
    reason: str | None = None
    winner: ChainRecord | None = None
    amt: AmtInstance | None = None

    def candidates(self) -> list[Candidate]:
        """Every candidate of every step, in generation order."""
        return [c for step in self.steps for c in step.candidates]


class VariantConfig(_Record):
    """Settings of GroupVague / HostilityVague generation and Best-of-N selection.

    The paper does not give N; 5 is our default. ``score = w_sim · similarity +
    w_ent · P(entail)``.
    """

    n_candidates: int = Field(5, ge=1)
    temperature: float = Field(0.0, ge=0.0)
    max_tokens: int = Field(200, ge=1)
    seed: int = 0
    language: Language = "en"
    similarity_weight: float = Field(0.5, ge=0.0)
    entailment_weight: float = Field(0.5, ge=0.0)
    reject_explicit_target: bool = True


class VariantCandidate(_Record):
    """One variant candidate with its scores and rejection reasons."""

    id: str
    raw_output: str | None = None
    text: str | None = None
    similarity: float | None = None
    nli: NliProbs | None = None
    selection_score: float | None = None
    safe: bool | None = None
    rejections: list[Rejection] = Field(default_factory=list)
    admissible: bool = False


class VariantTrace(_Record):
    """Best-of-N selection of one variant of one base item."""

    base_id: str
    base_text: str
    kind: VariantKind
    config: VariantConfig
    prompt_version: str
    generator: str
    nli_scorer: str
    similarity: str
    candidates: list[VariantCandidate]
    ranking: list[str] = Field(default_factory=list)  # admissible ids, best first
    outcome: Literal["winner", "no_admissible_candidate"]
    reason: str | None = None
    winner_id: str | None = None
    text: str | None = None


class GeneratedItem(_Record):
    """One benchmark text: tier, text, AMT and the trace that produced it.

    ``softbase`` needs ``amt`` and ``search``; ``softgv``/``softhv`` need ``amt`` and
    ``variant``; ``hard`` (the source comment) needs neither. ``standpoint_id`` pairs the item
    with the other tiers made from the same standpoint (and so from the same seed);
    ``gold`` is ``non_hate`` for non-hate controls.
    """

    id: str = Field(min_length=1)
    tier: Tier
    text: str = Field(min_length=1)
    amt: AmtInstance | None = None
    search: SearchTrace | None = None
    variant: VariantTrace | None = None
    standpoint_id: str | None = None
    gold: Gold = "hate"

    @model_validator(mode="after")
    def _check_tier(self) -> GeneratedItem:
        if self.tier is Tier.SOFTBASE and (self.amt is None or self.search is None):
            raise ValueError("a softbase item needs its amt and search trace")
        if self.tier in (Tier.SOFTGV, Tier.SOFTHV):
            if self.amt is None or self.variant is None:
                raise ValueError(f"a {self.tier.value} item needs its amt and variant trace")
            if self.variant.kind != self.tier.value:
                raise ValueError(f"tier {self.tier.value} does not match the variant kind {self.variant.kind}")
        return self
