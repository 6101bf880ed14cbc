"""verimod for lm-evaluation-harness users: ``verimod export lm-eval DIR`` writes VARM task YAML
files and a hook module whose metrics are verimod's scorer (:mod:`.export`, :mod:`.hooks`).
Running the exported tasks needs ``pip install ".[lm-eval]"``; exporting them does not."""
