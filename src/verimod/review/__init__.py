"""The review web app (``verimod review serve``): reviewers go through an audit's routed items,
mark groundedness, adequacy and coherence, correct reference fields and move on by keyboard.

- :mod:`.store` — decisions in SQLite (WAL), one row per save, reviewer and time kept;
- :mod:`.queue` — the audit folder as a review queue, with anchor and evidence highlighting;
- :mod:`.app` — the Starlette application (server-rendered, escaped, CSRF-checked forms).

Install with ``pip install ".[review]"``.
"""
