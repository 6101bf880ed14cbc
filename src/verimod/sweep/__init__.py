"""Sweeps: a grid of ``verimod eval`` runs (models × settings × data × constraints, adapters per
model) described once in a YAML file (:mod:`.spec`), each cell a normal resumable run directory
(:mod:`.cell`; :func:`run_cell` is the unit a distributed runner calls), run on this machine up
to a budget of cells at once (:mod:`.runner`)."""

from verimod.sweep.cell import CellResult, SweepCell, run_cell
from verimod.sweep.spec import SweepPlan, load_sweep

__all__ = ["CellResult", "SweepCell", "SweepPlan", "load_sweep", "run_cell"]
