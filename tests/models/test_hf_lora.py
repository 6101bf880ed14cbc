"""The ``hf:`` backend with a LoRA adapter, on the real test model (see ``local_model.py``).

Its own module, so that the model of ``test_hf.py``'s module fixture is gone before this test
loads two more copies, one after the other: one full model in memory at a time.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.helpers.memory import release_memory
from tests.models.local_model import hf_dir_or_skip
from tests.models.test_hf import request
from verimod.models import BackendOptions, create_backend
from verimod.models.hf import dtype_keyword


@pytest.mark.slow
def test_a_fresh_lora_adapter_loads_and_generates(tmp_path: Path) -> None:
    peft = pytest.importorskip("peft", reason="peft is not installed; pip install -e '.[hf]'")
    model_dir = hf_dir_or_skip()
    import torch
    from transformers import AutoModelForCausalLM

    short = request(max_tokens=8)
    plain = create_backend(f"hf:{model_dir}", BackendOptions(threads=2))
    try:
        expected = asyncio.run(plain.generate(short)).text
    finally:
        asyncio.run(plain.aclose())
        del plain
        release_memory()

    # bfloat16 is enough to make the adapter (its weights are float32 either way) and takes half the memory
    base = AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True, **{dtype_keyword(): torch.bfloat16})
    config = peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")
    adapter_dir = tmp_path / "lora"
    peft.get_peft_model(base, config).save_pretrained(adapter_dir)
    del base
    release_memory()

    adapted = create_backend(f"hf:{model_dir}", BackendOptions(threads=2, adapter=str(adapter_dir)))
    try:
        response = asyncio.run(adapted.generate(short))
        assert response.text
        # A fresh LoRA adapter starts with B = 0, so it must not change the greedy output.
        assert response.text == expected
        identity = adapted.identity()
        assert identity["adapter"] == str(adapter_dir)
        assert isinstance(identity["adapter_sha256"], str) and len(identity["adapter_sha256"]) == 64
    finally:
        asyncio.run(adapted.aclose())
        del adapted
        release_memory()
