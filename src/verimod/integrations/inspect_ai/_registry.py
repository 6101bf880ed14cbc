"""inspect_ai's entry point into verimod (``[project.entry-points.inspect_ai]``): importing it
registers the VARM tasks, scorer, metrics, epoch reducer and the ``verimod-scripted`` model."""

from verimod.integrations.inspect_ai.scorer import (  # noqa: F401
    category_macro_f1,
    explicitness_macro_f1,
    first_epoch,
    format_rate,
    her_c,
    her_l,
    jrem,
    label_macro_f1,
    parse_rate,
    stance_macro_f1,
    target_char_f1,
    target_type_macro_f1,
    varm_scorer,
)
from verimod.integrations.inspect_ai.scripted import ScriptedModel  # noqa: F401
from verimod.integrations.inspect_ai.tasks import varm, varm_k_shot, varm_taxonomy, varm_zero_shot  # noqa: F401
