"""``python -m verimod`` runs the command line."""

from verimod.cli.app import main

main()
