"""The store's putTps is a rate over the last 10 seconds, however often runtime info is asked for."""

from __future__ import annotations

import pytest

from orbitmq.common.clock import FakeClock
from orbitmq.store.stats import StoreStats


def test_put_tps_window_is_ten_seconds_not_ten_samples() -> None:
    clock = FakeClock()
    stats = StoreStats(clock)
    stats.sample()
    for _ in range(30):  # one put a second; the broker samples once a second, a console 4 more times
        clock.advance(0.5)
        stats.put_message_times_total += 1
        for _ in range(4):
            stats.sample()
            clock.advance(0.1)
        clock.advance(0.1)
        stats.sample()
    assert stats.put_tps == pytest.approx(1.0, rel=0.05)
    assert float(stats.as_dict()["putTps"]) == pytest.approx(1.0, rel=0.05)


def test_put_tps_falls_to_zero_ten_seconds_after_the_last_put() -> None:
    clock = FakeClock()
    stats = StoreStats(clock)
    stats.sample()
    stats.put_message_times_total += 20
    for _ in range(11):
        clock.advance(1.0)
        stats.sample()
    assert stats.put_tps == 0.0
