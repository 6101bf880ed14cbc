"""Bundled data written by the verimod developers: starter set, alias tables, lexicons, prompts."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def resource_path(name: str) -> Path:
    """Filesystem path of a bundled resource file (the package is installed unzipped)."""
    return Path(str(resources.files(__name__).joinpath(name)))
