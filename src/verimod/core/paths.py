"""Where verimod keeps files it creates outside a run directory.

The cache directory is the platform's user cache directory (``platformdirs``), overridable
with the ``VERIMOD_CACHE_DIR`` environment variable (tests and CI point it at a temporary
folder, so nothing touches a user's real cache).
"""

from __future__ import annotations

import os
from pathlib import Path

from platformdirs import user_cache_dir


def cache_dir() -> Path:
    """The verimod cache directory (created on first use)."""
    override = os.environ.get("VERIMOD_CACHE_DIR")
    path = Path(override) if override else Path(user_cache_dir("verimod", appauthor=False))
    path.mkdir(parents=True, exist_ok=True)
    return path
