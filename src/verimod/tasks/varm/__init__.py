"""VARM: verifiable abusive-reasoning moderation (the VARM-Bench protocol).

A model writes one rationale embedding six anchored decisions, in this order::

    [T: target] [TY: target type] [T: target explicitness] [S: stance] [L: label] [C: category]

:func:`~verimod.tasks.varm.parser.parse_rationale` recovers the record deterministically and
:class:`~verimod.tasks.varm.scorer.VarmScorer` scores records against references.
"""
