"""SoftHateBench: reasoning-driven, surface-polite hostility ("soft hate").

A hostile standpoint S about a target group [TG] is turned, by reverse Argumentum-Model-of-
Topics (AMT) generation, into a visible argument (Endoxon E + Datum D) whose implicit
Premise P and Maxim M lead back to S; GroupVague and HostilityVague variants hide the group
name and the hostility further. Moderation models are then measured by how much of each tier
(hard | softbase | softgv | softhv) they still flag.

Modules:

- records and prompts: :mod:`.schema`, :mod:`.prompts`;
- stage 1, seeds: :mod:`.seeds` (label mapping, reading, cleaning of Davidson, ISHate,
  HateCheck), :mod:`.seed_sources` (COLD, SWSR and any tabular file through the data adapters),
  :mod:`.seed_similarity` (exact near-duplicate removal), :mod:`.seed_selection` (detector vote,
  medoids), :mod:`.groups` (English and Chinese taxonomies, target-phrase resolution),
  :mod:`.standpoints` (LLM standpoint extraction, per-group medoid standpoints),
  :mod:`.seed_standpoints` (one verified standpoint per seed);
- stage 2, generation: :mod:`.scoring` (the relevance reward, pure), :mod:`.scorers` (NLI / LM /
  similarity interfaces and implementations, the :data:`SafetyCheck` type), :mod:`.http_scorer`
  (scorer LMs over OpenAI-compatible servers' token log-probabilities), :mod:`.filters` (the
  :class:`SafetyFilter` classifier ensemble), :mod:`.generate` (beam search), :mod:`.searches`
  (one search per standpoint, parallel, resumable), :mod:`.variants` (Best-of-N variants);
- stage 3: :mod:`.selection` (top min(300, N_c) per group by Ψ, the annotator check);
- detection and evaluation: :mod:`.detect` (detector prompts and normaliser),
  :mod:`.evaluation` (HSR by tier, domain, group; Δ; paired tiers; scaffold ablation;
  specificity), :mod:`.verification` (human verification sheets, Wilson intervals, Fleiss' κ,
  agreement with gold), :mod:`.sheets` (sampling verification sheets).
"""

from verimod.tasks.softhate.filters import FilterModel, SafetyFilter, backend_scorer
from verimod.tasks.softhate.generate import base_item, choose_locus, generate_amt
from verimod.tasks.softhate.groups import GroupTaxonomy, load_group_taxonomy
from verimod.tasks.softhate.schema import (
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
)
from verimod.tasks.softhate.scorers import (
    BackendNliScorer,
    CharNgramTfidfSimilarity,
    LanguageScorer,
    LlamaCppNliScorer,
    LlamaCppScorer,
    NliScorer,
    SafetyCheck,
    TextSimilarity,
)
from verimod.tasks.softhate.scoring import ScoringConfig
from verimod.tasks.softhate.seed_selection import select_medoids_async, strict_majority
from verimod.tasks.softhate.seed_similarity import dedupe
from verimod.tasks.softhate.seeds import SeedItem, clean_items, read_seeds
from verimod.tasks.softhate.standpoints import Extraction, extract_standpoints, select_group_standpoints
from verimod.tasks.softhate.variants import explicit_mention, generate_variant, variant_item

__all__ = [
    "AmtInstance",
    "BackendNliScorer",
    "CharNgramTfidfSimilarity",
    "Extraction",
    "FilterModel",
    "GeneratedItem",
    "GroupTaxonomy",
    "LanguageScorer",
    "Level1Domain",
    "LlamaCppNliScorer",
    "LlamaCppScorer",
    "Locus",
    "NliScorer",
    "SafetyCheck",
    "SafetyFilter",
    "ScoringConfig",
    "SearchConfig",
    "SearchTrace",
    "SeedItem",
    "Standpoint",
    "TargetGroup",
    "TextSimilarity",
    "Tier",
    "VariantConfig",
    "VariantTrace",
    "backend_scorer",
    "base_item",
    "choose_locus",
    "clean_items",
    "dedupe",
    "explicit_mention",
    "extract_standpoints",
    "generate_amt",
    "generate_variant",
    "load_group_taxonomy",
    "read_seeds",
    "select_group_standpoints",
    "select_medoids_async",
    "strict_majority",
    "variant_item",
]
