"""Giving memory back between (and during) the tests that load real models.

torch, transformers and peft models hold reference cycles (peft's wrapper and the model it
wraps point at each other, schedulers at their optimizers), so dropping the last name of a
model does not free its weights until the cyclic garbage collector runs — which, in a long
test session, can be much later, with several models alive at once. :func:`release_memory`
collects the cycles and hands the freed heap back to the operating system; the model fixtures
call it after each model they drop.

glibc also keeps freed memory: after a large block is freed, it raises its mmap threshold (up
to 32 MB), so that later blocks of that size come from the heap and stay mapped when freed.
Training steps allocate and free many such blocks. :func:`keep_heap_small` fixes the mmap and
trim thresholds at 1 MiB, which turns that adjustment off. Measured on the 0.5B test model (a
two-step LoRA run, batch 1): peak 4.9–5.1 GB with glibc's defaults, 4.3 GB with 1 MiB; 128 KiB
gives 4.0 GB, but makes numpy-heavy code slower (the baseline's training: about 40% more CPU
time, spent in the kernel mapping pages), where 1 MiB costs about 4%. The test session calls
it once, first thing (``tests/conftest.py``).
"""

from __future__ import annotations

import ctypes
import gc
import sys

#: ``mallopt`` parameters (glibc's malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_THRESHOLD = 1 << 20


def _glibc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return None
    return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None


def keep_heap_small() -> None:
    """Fix glibc's mmap and trim thresholds at 1 MiB (module docstring); a no-op without glibc."""
    libc = _glibc()
    if libc is not None:
        libc.mallopt(_M_MMAP_THRESHOLD, _THRESHOLD)
        libc.mallopt(_M_TRIM_THRESHOLD, _THRESHOLD)


def release_memory() -> None:
    """Collect reference cycles, then return free heap pages to the OS (glibc ``malloc_trim``;
    a no-op elsewhere)."""
    gc.collect()
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)
