"""Evaluation protocols. Each protocol is a package that plugs into :mod:`verimod.core`."""
