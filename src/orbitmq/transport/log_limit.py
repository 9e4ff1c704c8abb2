"""A token bucket for warning lines a remote peer can trigger at will (protocol errors, failing
requests): past `burst` lines, at most `per_second` are written and the rest are counted, so a hostile
client cannot turn the server's log (and the disk writes behind it, on the event loop) into its weapon.
"""

from __future__ import annotations

import time


class LogLimiter:
    __slots__ = ("_last", "_tokens", "burst", "per_second", "suppressed")

    def __init__(self, per_second: float = 10.0, burst: int = 50) -> None:
        self.per_second = per_second
        self.burst = burst
        self._tokens = float(burst)
        self._last = time.monotonic()
        self.suppressed = 0

    def allow(self) -> bool:
        """True if a line may be written now; otherwise the line is counted as suppressed."""
        now = time.monotonic()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.per_second)
        self._last = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        self.suppressed += 1
        return False

    def take_suppressed(self) -> str:
        """ " (N similar lines suppressed)" for the next line written, or ""."""
        count, self.suppressed = self.suppressed, 0
        return f" ({count} similar lines suppressed)" if count else ""
