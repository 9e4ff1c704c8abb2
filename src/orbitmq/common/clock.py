"""Injectable time, so expiry, fault windows, rebalance and long polling are testable without sleeps.

`SystemClock` reads the real clocks; `FakeClock` is advanced by tests. Code that needs "now" takes a
`Clock` and never calls `time.time()` itself.
"""

from __future__ import annotations

import time
from typing import Final, Protocol

# Held as statics: compiled, a call through a module attribute is a lookup per call.
_TIME_NS: Final = time.time_ns
_MONOTONIC: Final = time.monotonic


class Clock(Protocol):
    def now_ms(self) -> int:
        """Wall-clock milliseconds since the epoch (store timestamps, message born time)."""
        ...

    def monotonic(self) -> float:
        """Monotonic seconds (timeouts, expiry windows, latency measurement)."""
        ...


class SystemClock:
    def now_ms(self) -> int:
        return _TIME_NS() // 1_000_000

    def monotonic(self) -> float:
        return _MONOTONIC()


class FakeClock:
    """A clock that only moves when told to."""

    def __init__(self, now_ms: int = 1_700_000_000_000, monotonic: float = 1000.0) -> None:
        self._now_ms = now_ms
        self._monotonic = monotonic

    def now_ms(self) -> int:
        return self._now_ms

    def monotonic(self) -> float:
        return self._monotonic

    def advance(self, seconds: float) -> None:
        self._now_ms += int(seconds * 1000)
        self._monotonic += seconds


SYSTEM_CLOCK: Final = SystemClock()
