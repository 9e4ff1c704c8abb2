"""ConsumerStats: the ConsumeStatus a push consumer reports in its running info (fake clock)."""

from __future__ import annotations

import pytest

from orbitmq.client.consumer_stats import ConsumerStats
from orbitmq.common.clock import FakeClock


def test_minute_rates_and_hour_failures() -> None:
    clock = FakeClock()
    stats = ConsumerStats(clock)
    stats.consumed("T", ok=0, failed=5, rt_ms=1.0)  # an old failure: out of the minute, in the hour
    for _ in range(600):  # ten quiet minutes, sampled by a record every 10 s
        clock.advance(1.0)
        if int(clock.monotonic()) % 10 == 0:
            stats.pulled("T", 0, 2.0)
    for _ in range(60):  # then a minute of 10 pulled and 8 consumed + 2 failed per second
        clock.advance(1.0)
        stats.pulled("T", 10, 4.0)
        stats.consumed("T", ok=8, failed=2, rt_ms=3.0)
    status = stats.status("T")
    assert status["pullTPS"] == pytest.approx(10.0, rel=0.2)
    assert status["consumeOKTPS"] == pytest.approx(8.0, rel=0.2)
    assert status["consumeFailedTPS"] == pytest.approx(2.0, rel=0.2)
    assert status["pullRT"] == pytest.approx(4.0, rel=0.05)  # plus one 2 ms idle pull
    assert status["consumeRT"] == pytest.approx(3.0)
    assert status["consumeFailedMsgs"] == 5 + 120
    assert stats.status("Other") == {
        "consumeFailedMsgs": 0,
        "consumeFailedTPS": 0.0,
        "consumeOKTPS": 0.0,
        "consumeRT": 0.0,
        "pullRT": 0.0,
        "pullTPS": 0.0,
    }
