"""The absolute pacing schedule of orbitmq.bench.ratelimit (fed with made-up times: no sleeping)."""

from __future__ import annotations

import pytest

from orbitmq.bench.ratelimit import RateLimiter


def test_one_message_due_at_start_then_one_per_interval() -> None:
    r = RateLimiter(1000.0, start=10.0)
    assert r.due(10.0) == 1
    assert r.due(10.0) == 0
    assert r.delay(10.0) == pytest.approx(0.001)
    assert r.due(10.0005) == 0
    assert r.due(10.001) == 1
    assert r.due(10.0035) == 2  # messages 2 and 3 were due by then
    assert r.sent == 4


def test_late_wakeup_catches_up_but_bursts_are_bounded() -> None:
    r = RateLimiter(1000.0, start=0.0, max_burst=10)
    assert r.due(0.0) == 1
    assert r.due(1.0) == 10  # 1000 overdue: send 10, drop the rest from the schedule
    assert r.skipped == 990
    assert r.due(1.0) == 0
    assert r.due(1.001) == 1  # back on schedule
    assert r.sent + r.skipped == 1002


def test_average_rate_is_kept_over_many_ticks() -> None:
    r = RateLimiter(2000.0, start=0.0)
    now = 0.0
    while now < 1.0:
        r.due(now)
        now += 0.0013  # an irregular wake-up period
    assert 1990 <= r.sent <= 2001
    assert r.skipped == 0


def test_invalid_parameters() -> None:
    with pytest.raises(ValueError):
        RateLimiter(0.0, start=0.0)
    with pytest.raises(ValueError):
        RateLimiter(1.0, start=0.0, max_burst=0)
