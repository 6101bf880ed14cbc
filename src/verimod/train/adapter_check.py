"""What an adapter from ``verimod train sft`` says about how it must be evaluated.

``train sft`` writes ``verimod_training.json`` into the adapter folder, with ``prompt_sha256``:
the SHA-256 of the prompt template the adapter was trained on (setting or your own file). A
CoT-SFT adapter answers well only to the prompt it learned; evaluated with another one, its
scores say little about it. :func:`prompt_mismatch` compares that hash with the template of an
evaluation and returns a warning naming both hashes; an adapter without the file (trained
elsewhere) gives no warning, since there is nothing to compare.
"""

from __future__ import annotations

import json
from pathlib import Path

TRAINING_INFO = "verimod_training.json"


def trained_prompt_sha256(adapter: str | Path) -> str | None:
    """The prompt hash an adapter was trained with (None when the adapter does not say)."""
    path = Path(adapter) / TRAINING_INFO
    try:
        value = json.loads(path.read_text(encoding="utf-8")).get("prompt_sha256")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def prompt_mismatch(adapter: str | Path | None, eval_prompt_sha256: str) -> str | None:
    """A one-line warning when ``adapter`` was trained on a prompt other than the evaluation's."""
    if adapter is None:
        return None
    trained = trained_prompt_sha256(adapter)
    if trained is None or trained == eval_prompt_sha256:
        return None
    return (
        f"warning: the adapter {adapter} was trained with the prompt template sha256 {trained}, but this "
        f"evaluation's prompt template has sha256 {eval_prompt_sha256}: its scores may not show what it learned "
        "(evaluate with the --setting / --prompt-template it was trained with)"
    )
