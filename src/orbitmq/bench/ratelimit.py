"""Pacing for fixed-rate workloads (W4): when the next message is due (sans-IO: the caller passes the
time and sleeps for what `delay` returns).
"""

from __future__ import annotations


class RateLimiter:
    """The schedule is absolute (message k is due at start + k / rate), so a late wake-up is caught up by
    sending the overdue messages at once instead of silently lowering the rate; `max_burst` bounds that
    catch-up so a long stall does not turn into a burst that distorts the latencies after it.
    """

    def __init__(self, rate_per_second: float, start: float, *, max_burst: int = 64) -> None:
        if rate_per_second <= 0:
            raise ValueError("rate must be positive")
        if max_burst < 1:
            raise ValueError("max_burst must be at least 1")
        self.interval = 1.0 / rate_per_second
        self.start = start
        self.max_burst = max_burst
        self.sent = 0
        self.skipped = 0

    def due_at(self, index: int) -> float:
        return self.start + index * self.interval

    def due(self, now: float) -> int:
        """How many messages should be sent right now (0 if the next one is not due yet).

        Advances the schedule by the returned count. If more than `max_burst` are overdue, the excess
        is dropped from the schedule (counted in `skipped`) rather than sent late.
        """
        # The epsilon keeps a message due exactly "now" from being lost to float rounding.
        overdue = int((now - self.start) / self.interval + 1e-9) + 1 - self.sent - self.skipped
        if overdue <= 0:
            return 0
        if overdue > self.max_burst:
            self.skipped += overdue - self.max_burst
            overdue = self.max_burst
        self.sent += overdue
        return overdue

    def delay(self, now: float) -> float:
        """Seconds until the next message is due (0 when one is due already)."""
        return max(0.0, self.due_at(self.sent + self.skipped) - now)
