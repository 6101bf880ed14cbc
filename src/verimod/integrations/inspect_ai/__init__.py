"""verimod for inspect_ai users (``pip install ".[inspect]"``).

- ``inspect eval verimod/varm_zero_shot --model …`` (also ``varm_taxonomy``, ``varm_k_shot``, and
  ``verimod/varm -T setting=…``): VARM tasks whose prompts, parser and metrics are verimod's
  (:mod:`.tasks`, :mod:`.scorer`);
- ``--model verimod-scripted/NAME -M outputs=FILE``: answers from a ``{"id", "output"}`` file
  (:mod:`.scripted`);
- ``verimod import inspect LOG``: an inspect log as a verimod run directory (:mod:`.log_import`).

inspect finds these through the package's ``inspect_ai`` entry point (:mod:`._registry`).
Importing this package needs inspect_ai; :mod:`.log_import` is imported on its own.
"""
