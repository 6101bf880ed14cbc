"""verimod inside the tools evaluation teams already run: inspect_ai (tasks, scorer, metrics and
log import), lm-evaluation-harness (task export). Each needs its own optional extra."""
