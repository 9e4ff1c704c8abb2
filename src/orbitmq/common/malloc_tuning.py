"""Keep large buffers in the C heap (glibc's mallopt): a broker receives frames of up to 16 MiB.

glibc maps an allocation of 128 KiB or more with its own mmap and trims the heap's free top back to the
kernel, so a broker taking ~1 MiB batch frames would fault in fresh zeroed pages for nearly every frame.
An mmap threshold above the largest frame and a trim threshold of a few frames keep reusing the same
memory. Process-wide and glibc only: elsewhere `tune_malloc` does nothing and says so.
"""

from __future__ import annotations

import ctypes
import logging
from collections.abc import Callable
from typing import Final

log = logging.getLogger("orbitmq.malloc")

M_TRIM_THRESHOLD: Final = -1
M_MMAP_THRESHOLD: Final = -3
# glibc refuses an mmap threshold above HEAP_MAX_SIZE / 2 (32 MiB on 64-bit systems).
MMAP_THRESHOLD_MAX: Final = 32 * 1024 * 1024


def tune_malloc(mmap_threshold: int, trim_threshold: int) -> bool:
    """Set glibc's M_MMAP_THRESHOLD (capped at 32 MiB) and M_TRIM_THRESHOLD, each unless 0 (left as the
    C library has it). True when every value asked for was taken."""
    if mmap_threshold < 0 or trim_threshold < 0:
        raise ValueError("malloc thresholds are byte counts: 0 (the C library's default) or more")
    if not mmap_threshold and not trim_threshold:
        return True
    mallopt = _mallopt()
    if mallopt is None:
        log.info("malloc tuning skipped: this C library has no mallopt (not glibc)")
        return False
    ok = True
    for option, value in (
        (M_MMAP_THRESHOLD, min(mmap_threshold, MMAP_THRESHOLD_MAX)),
        (M_TRIM_THRESHOLD, trim_threshold),
    ):
        if value and mallopt(option, value) != 1:
            log.warning("mallopt(%d, %d) was refused", option, value)
            ok = False
    return ok


def _mallopt() -> Callable[[int, int], int] | None:
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the process's own symbols: the C library it runs on
    except (OSError, AttributeError):
        return None
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return mallopt
