"""verimod: verifiable evaluation of content-moderation models.

The public API is small; everything else lives in private-by-convention modules.

>>> from verimod import parse_rationale
>>> parse_rationale("指向[T: 河南人]，群体[TY: group]，点名[T: explicit]，[S: attack_or_endorse]，"
...                 "[L: harmful]，[C: region_ethnicity]").record.label
'harmful'
"""

from verimod.core.errors import InputError
from verimod.tasks.varm.parser import PARSER_VERSION, ParseResult, parse_rationale
from verimod.tasks.varm.schema import VarmRecord, VarmReference
from verimod.tasks.varm.scorer import VarmScorer, VarmScores, score_predictions

__version__ = "0.1.0"

__all__ = [
    "PARSER_VERSION",
    "InputError",
    "ParseResult",
    "VarmRecord",
    "VarmReference",
    "VarmScorer",
    "VarmScores",
    "__version__",
    "parse_rationale",
    "score_predictions",
]
