"""CoT-SFT: LoRA fine-tuning of a causal LM on reference rationales (``verimod train sft``).

- :mod:`.sft_config` — the training configuration and LoRA target defaults per architecture;
- :mod:`.sft_data` — chat-template encoding with the loss masked on the prompt, batching;
- :mod:`.sft_loop` — the training loop: accumulation, cosine schedule, dev loss, early stopping;
- :mod:`.sft_checkpoint` — crash-safe checkpoints and exact resumption;
- :mod:`.merge` — merging an adapter into its base model for serving.

Heavy dependencies (torch, transformers, peft) are imported inside functions: install them with
``pip install ".[train]"`` after a torch build that suits the machine.
"""
