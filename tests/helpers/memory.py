"""Giving memory back between the tests that load real models.

torch, transformers and peft models hold reference cycles (peft's wrapper and the model it
wraps point at each other, schedulers at their optimizers), so dropping the last name of a
model does not free its weights until the cyclic garbage collector runs — which, in a long
test session, can be much later, with several models alive at once. glibc also keeps freed
heap memory mapped. :func:`release_memory` collects the cycles and hands the freed heap back
to the operating system; the model fixtures call it after each model they drop.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import sys


def release_memory() -> None:
    """Collect reference cycles, then return free heap pages to the OS (glibc ``malloc_trim``;
    a no-op elsewhere)."""
    gc.collect()
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):  # not glibc (musl): nothing to trim
            ctypes.CDLL("libc.so.6").malloc_trim(0)
