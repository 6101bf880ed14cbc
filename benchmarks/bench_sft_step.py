"""CoT-SFT step time on this machine: one LoRA optimizer step of Qwen2.5-Coder-0.5B-Instruct
(float32, CPU) at several batch sizes and sequence lengths, through verimod's own loss and
batching code. Side by side in one run: the ratio of each setting to the smallest one, and the
tokens per second, so load on a shared machine shows as a common factor.

Needs the test-models extra (the model comes from its GGUF pieces, see tests/models/local_model.py).

    python benchmarks/bench_sft_step.py [--steps 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3, help="timed steps per setting (after one warm-up)")
    args = parser.parse_args()

    import peft
    import torch
    from tests.models.local_model import hf_dir_or_skip
    from transformers import AutoModelForCausalLM

    from verimod.train.sft_config import lora_targets
    from verimod.train.sft_data import SftExample, collate
    from verimod.train.sft_loop import token_loss_sum

    base_dir = hf_dir_or_skip()
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32)
    lora = peft.LoraConfig(r=16, lora_alpha=32, lora_dropout=0.05, target_modules=lora_targets("qwen2"),
                           task_type="CAUSAL_LM")  # fmt: skip
    model = peft.get_peft_model(model, lora)
    model.train()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}; Qwen2.5-Coder-0.5B fp32, LoRA r=16")
    rows = []
    for batch, length in ((1, 128), (2, 128), (2, 256), (1, 600), (2, 600)):
        ids = tuple(range(1000, 1000 + length))
        example = SftExample("x", ids, (-100,) * (length // 3) + ids[length // 3 :])
        tensors = collate([example] * batch, pad_id=0)
        tokens = sum(e.n_supervised for e in [example] * batch)
        times = []
        for k in range(args.steps + 1):
            started = time.perf_counter()
            loss = token_loss_sum(model, tensors, torch) / tokens
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            if k:
                times.append(time.perf_counter() - started)
        median = statistics.median(times)
        rows.append((batch, length, median))
    smallest = rows[0][2]
    print(f"{'batch':>5} {'tokens':>6} {'s/step':>8} {'ratio':>6} {'tokens/s':>9}")
    for batch, length, median in rows:
        print(f"{batch:>5} {length:>6} {median:>8.2f} {median / smallest:>6.2f} {batch * length / median:>9.0f}")


if __name__ == "__main__":
    main()
