"""Warning lines a peer can trigger are rate limited, and the suppressed ones are counted."""

from __future__ import annotations

from orbitmq.transport.log_limit import LogLimiter


def test_burst_then_counted_suppression() -> None:
    limiter = LogLimiter(per_second=0.0001, burst=3)
    assert [limiter.allow() for _ in range(5)] == [True, True, True, False, False]
    assert limiter.take_suppressed() == " (2 similar lines suppressed)"
    assert limiter.take_suppressed() == ""
