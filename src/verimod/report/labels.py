"""What reports call runs, and whether runs can be compared.

- :func:`run_labels`: short, distinct names for series and table columns — the model (its file
  or last path part, with ``+ LoRA`` when an adapter was used) and the setting, at most
  :data:`MAX_LABEL` characters (longer ones keep their start and end around "…"); a number is
  appended when two runs would share a name. Reports show the full run id beside or over
  them (a tooltip), never instead of them.
- :func:`item_set_difference`: runs over different items (by id and input text) make numbers
  that do not compare; it says how they differ, or None when every run covers the same items.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from verimod.tasks.varm.evaluate import ScoredRun

MAX_LABEL: Final = 32


def _shorten(text: str, limit: int = MAX_LABEL) -> str:
    if len(text) <= limit:
        return text
    head = (limit - 1) * 2 // 3
    return f"{text[:head]}…{text[len(text) - (limit - 1 - head) :]}"


def run_labels(runs: Sequence[ScoredRun]) -> list[str]:
    """Short, distinct names of the runs, in order (module docstring)."""
    labels = []
    for run in runs:
        manifest = run.store.manifest
        model = manifest.model.rstrip("/").split("/")[-1]
        lora = " + LoRA" if manifest.model_label != manifest.model else ""
        setting = f" · {manifest.setting_label}"
        labels.append(_shorten(model, MAX_LABEL - len(lora) - len(setting)) + lora + setting)
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if labels.count(label) == 1 else f"{label} ({seen[label]})")
    return out


def item_set_difference(runs: Sequence[ScoredRun]) -> str | None:
    """How the runs' item sets differ (one line), or None when they are the same: each run's
    item count, the number common to all, and the first run that differs from the first."""
    keys = [{(r.id, r.text) for r in run.references} for run in runs]
    if all(k == keys[0] for k in keys[1:]):
        return None
    common = set.intersection(*keys)
    sizes = ", ".join(f"{run.store.manifest.run_id}: {len(k)}" for run, k in zip(runs, keys, strict=True))
    return f"the runs cover different items ({sizes}; {len(common)} in all of them)"
